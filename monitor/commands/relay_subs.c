/* What viewers send the relay, and what the relay asks of its publishers.
 *
 * Subscriptions stop here. A viewer's subscription is never passed on: the
 * relay subscribes to its publishers (and upstream relays) itself, to
 * everything, when its first viewer comes, and unsubscribes once it has had
 * no connection for IDLE_UNSUB_S (publishers with nobody watching encode
 * nothing). A publisher answers a subscription with its full state (hello,
 * communicators, topology, snapshot), so for each new viewer (its
 * subscription, which XPUB_VERBOSE shows us, repeats included) the relay
 * subscribes again, at most once per RESUB_MIN_S for all the viewers that
 * came meanwhile: a publisher takes a repeated subscription as a new one.
 * Anything else a viewer sends (other subscriptions, unsubscriptions, data)
 * is dropped here. libzmq keeps a connection's subscriptions until it goes,
 * so the guard (relay_guard.h) ends a connection that sends much, and the
 * relay bounds what all of them together made libzmq keep: beyond
 * FOREIGN_MAX subscriptions or FOREIGN_BYTES_MAX bytes of them, the
 * connection that sent the most is ended.
 *
 * Relay loops. Each relay has a random id and subscribes to each upstream
 * relay with a mark, 0xff 'R' id k (k: which --connect), a topic no message
 * has; a relay passes the marks its viewers sent to its own upstreams, and
 * to nobody else. A mark of ours coming back from a viewer means --connect
 * k leads back to us: a loop, which would forward every message around
 * forever. From then on what comes through k is dropped, and k is refused
 * (its socket closed, one line) unless the mark has gone within a grace
 * period taken from our id (the other relay of the loop found it too, and
 * one refusal is enough). */
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "relay_internal.h"

#define RESUB_MIN_S       1.0
#define IDLE_UNSUB_S      5.0
#define DRAIN_MAX         4096 /* viewers' messages read per turn */
#define FOREIGN_MAX       20000
#define FOREIGN_BYTES_MAX (256u << 10)

/* A subscription (op 1) or unsubscription (op 0) to topic, on an XSUB. */
static void xsub_send(void *s, uint8_t op, const uint8_t *topic, size_t len) {
  static bool noted;
  uint8_t buf[1 + MARKER_LEN];
  buf[0] = op;
  if (len) memcpy(buf + 1, topic, len);
  if (zmq_send(s, buf, 1 + len, ZMQ_DONTWAIT) >= 0 || noted) return;
  fprintf(stderr, "nccltop relay: cannot send a subscription: %s\n", zmq_strerror(zmq_errno()));
  noted = true;
}

static void mark_of(const relay *r, int k, uint8_t m[MARKER_LEN]) {
  m[0] = 0xff;
  m[1] = 'R';
  memcpy(m + 2, r->id, sizeof r->id);
  m[10] = (uint8_t)k;
}

void nt_relay_subscribe_new(relay *r, void *xsub, unsigned long *subs) {
  *subs = 0;
  if (r->down) {
    xsub_send(xsub, 1, NULL, 0);
    *subs = 1;
  }
}

/* Our mark and our viewers' marks, on upstream k (its socket new). */
void nt_relay_upstream_marks(relay *r, int k) {
  uint8_t m[MARKER_LEN];
  mark_of(r, k, m);
  xsub_send(r->ups[k].sock, 1, m, sizeof m);
  for (int i = 0; i < r->nmarkers; i++) xsub_send(r->ups[k].sock, 1, r->markers[i], MARKER_LEN);
  nt_relay_subscribe_new(r, r->ups[k].sock, &r->ups[k].subs);
}

/* Every socket towards publishers: fn on each with its count. */
static void each_xsub(relay *r, void (*fn)(void *s, unsigned long *subs)) {
  if (r->local) fn(r->local, &r->local_subs);
  if (r->legacy) fn(r->legacy, &r->legacy_subs);
  for (int k = 0; k < r->nups; k++)
    if (r->ups[k].sock) fn(r->ups[k].sock, &r->ups[k].subs);
}

static void subscribe(void *s, unsigned long *subs) {
  xsub_send(s, 1, NULL, 0);
  ++*subs;
}

/* libzmq's XSUB counts subscriptions to a topic and sends the
 * unsubscription when the count is back to 0. */
static void unsubscribe(void *s, unsigned long *subs) {
  for (; *subs; --*subs) xsub_send(s, 0, NULL, 0);
}

static void viewer_subscribed(relay *r) {
  if (!r->down) {
    r->down = true;
    each_xsub(r, subscribe);
    r->resub_last_s = 0; /* the next viewer is answered at once too */
    r->resub_wanted = false;
  } else {
    r->resub_wanted = true;
  }
}

static int find_marker(const relay *r, const uint8_t *m) {
  for (int i = 0; i < r->nmarkers; i++)
    if (!memcmp(r->markers[i], m, MARKER_LEN)) return i;
  return -1;
}

static void upstream_send(relay *r, uint8_t op, const uint8_t *m) {
  for (int k = 0; k < r->nups; k++)
    if (r->ups[k].sock) xsub_send(r->ups[k].sock, op, m, MARKER_LEN);
}

/* A viewer's mark (a downstream relay's, or ours come back). False when it
 * was not kept (counted as any other subscription then). */
static bool marker(relay *r, uint8_t op, const uint8_t *m) {
  if (!memcmp(m + 2, r->id, sizeof r->id)) {
    int k = m[10];
    if (k >= r->nups || !r->ups[k].sock) return true;
    upstream *u = &r->ups[k];
    if (op == 1 && !u->looped) {
      u->looped = true;
      /* 0.2 to 1.2 s, from our id: the two ends of a loop wait differently. */
      u->refuse_at = nt_relay_now() + 0.2 + (double)(r->id[0] | r->id[1] << 8) / 65536.0;
    } else if (op == 0) {
      u->looped = false;
    }
    return true;
  }
  int i = find_marker(r, m);
  if (op == 1 && i < 0) {
    if (r->nmarkers >= MAX_MARKERS) {
      if (!r->markers_full_noted)
        fprintf(stderr,
                "nccltop relay: more than %d relays feed from this one; loops through "
                "the others are not detected\n",
                MAX_MARKERS);
      r->markers_full_noted = true;
      return false;
    }
    memcpy(r->markers[r->nmarkers++], m, MARKER_LEN);
    upstream_send(r, 1, m);
  } else if (op == 0 && i >= 0) {
    memcpy(r->markers[i], r->markers[--r->nmarkers], MARKER_LEN);
    upstream_send(r, 0, m);
  }
  return true;
}

/* One message a viewer sent: with XPUB_VERBOSE, libzmq gives us every
 * subscription (byte 1 and the topic) and, when a topic's last subscriber
 * has gone, its unsubscription (byte 0 and the topic); anything else is
 * data a viewer sent, dropped. */
static void from_viewer(relay *r, const uint8_t *d, size_t len) {
  if (len == 0 || d[0] > 1) {
    r->foreign_seen = true; /* data: a viewer sends none */
    return;
  }
  if (len == 1) {
    /* The last subscriber to everything has gone (or a viewer unsubscribed
     * what it never subscribed): nothing to do here; the relay unsubscribes
     * when it has had no connection for a while. */
    if (d[0] == 1) viewer_subscribed(r);
    return;
  }
  if (len == 1 + MARKER_LEN && d[1] == 0xff && d[2] == 'R' && marker(r, d[0], d + 1)) return;
  r->foreign_seen = true;
  if (d[0] == 1) {
    r->foreign_subs++;
    r->foreign_bytes += len - 1;
  } else {
    r->foreign_subs -= r->foreign_subs ? 1 : 0;
    r->foreign_bytes -= r->foreign_bytes >= len - 1 ? len - 1 : r->foreign_bytes;
  }
}

void nt_relay_drain_viewers(relay *r) {
  r->foreign_seen = false;
  for (int i = 0; i < DRAIN_MAX; i++) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, r->xpub, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      break;
    }
    if (!r->xpub_more) from_viewer(r, zmq_msg_data(&m), zmq_msg_size(&m));
    r->xpub_more = zmq_msg_more(&m);
    zmq_msg_close(&m);
  }
  if (r->foreign_seen) nt_guard_poke(r->guard);
  double now = nt_relay_now();
  if ((r->foreign_subs > FOREIGN_MAX || r->foreign_bytes > FOREIGN_BYTES_MAX) &&
      now >= r->cut_asked_s + 1.0) {
    nt_guard_cut_top(r->guard);
    r->cut_asked_s = now;
  }
}

void nt_relay_tick_subs(relay *r) {
  double now = nt_relay_now();
  if (r->down && r->resub_wanted && now >= r->resub_last_s + RESUB_MIN_S) {
    each_xsub(r, subscribe);
    r->resub_last_s = now;
    r->resub_wanted = false;
  }
  /* Nobody connected (-1: cannot tell, taken as someone) for a while. */
  if (r->down && nt_guard_connections(r->guard) == 0) {
    if (!r->idle_since_s) r->idle_since_s = now;
    if (now >= r->idle_since_s + IDLE_UNSUB_S) {
      each_xsub(r, unsubscribe);
      r->down = false;
      r->resub_wanted = false;
    }
  } else {
    r->idle_since_s = 0;
  }
  for (int k = 0; k < r->nups; k++) {
    upstream *u = &r->ups[k];
    if (!u->sock || !u->looped || now < u->refuse_at) continue;
    fprintf(stderr,
            "nccltop relay: --connect %s leads back to this relay (it is fed by this relay, "
            "directly or through others: a relay loop); refusing it\n",
            u->ep);
    zmq_close(u->sock);
    u->sock = NULL;
  }
}

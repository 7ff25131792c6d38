/* See relay_guard.h. */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "relay_conns.h"
#include "relay_guard.h"

#define MAX_CONNS      16384
#define POKED_SWEEP_MS 20
#define LOG_EVERY_S    10.0

typedef struct {
  uint64_t ino;
  double first_s;
  bool verified; /* same-user mode: its peer is ours */
  bool cut;
} tracked;

/* One kind of line, said at most every LOG_EVERY_S with the count of those
 * held back. */
typedef struct {
  double next_s;
  unsigned long held;
} rate_log;

struct nt_guard {
  void *zctx, *zap;
  char monitor_ep[128], own_pub[NT_CURVE_KEY_LEN + 1], auth_file[600];
  unsigned port;
  bool same_user, curve;
  pthread_t thread;
  atomic_bool stop;
  atomic_int cut_requests, nconns;
  atomic_uint keys_req, keys_done;
  atomic_bool poked;
  double keys_asked_s;
  bool keys_ask_failed;
  pthread_mutex_t keys_lock;
  nt_authkeys keys;
  /* The thread's own. */
  nt_conn *conns;
  tracked *track, *track_next;
  int ntrack;
  rate_log cut_log, user_log;
  char last_key[NT_CURVE_KEY_LEN + 1];
  double last_key_s;
  unsigned long key_repeats;
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether to say it now; *held gets the number of lines held back since the
 * last one said. */
static bool rate_ok(rate_log *r, unsigned long *held) {
  double now = mono_s();
  if (now < r->next_s) {
    r->held++;
    return false;
  }
  *held = r->held;
  r->held = 0;
  r->next_s = now + LOG_EVERY_S;
  return true;
}

static int by_ino(const void *a, const void *b) {
  uint64_t x = ((const tracked *)a)->ino, y = ((const tracked *)b)->ino;
  return x < y ? -1 : x > y;
}

static tracked *find(nt_guard *g, uint64_t ino) {
  tracked key = {.ino = ino};
  return g->ntrack ? bsearch(&key, g->track, (size_t)g->ntrack, sizeof key, by_ino) : NULL;
}

/* Ends c and says why (unless it had gone meanwhile). */
static void cut(const nt_conn *c, tracked *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static double last_cut_s; /* guard thread only */

static void cut(const nt_conn *c, tracked *t, const char *fmt, ...) {
  if (t) t->cut = true;
  if (!nt_conn_cut(c)) return;
  last_cut_s = mono_s();
  if (!fmt) return;
  char why[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccltop relay: %s\n", why);
}

/* Without a key: every connection whose far end is not our user's is ended
 * (before its handshake completes when called for its ZAP request). */
static void check_users(nt_guard *g, int n) {
  for (int i = 0; i < n; i++) {
    nt_conn *c = &g->conns[i];
    tracked *t = find(g, c->ino);
    if (t && (t->verified || t->cut)) continue;
    long uid = nt_conn_peer_uid(c);
    if (uid == (long)geteuid()) {
      if (t) t->verified = true;
      continue;
    }
    char peer[80], more[64] = "";
    nt_conn_peer_name(c, peer, sizeof peer);
    if (t) t->cut = true;
    if (!nt_conn_cut(c)) continue; /* gone meanwhile */
    unsigned long held = 0;
    if (!rate_ok(&g->user_log, &held)) continue;
    if (held) snprintf(more, sizeof more, " (%lu more since the last line)", held);
    if (uid >= 0)
      fprintf(stderr,
              "nccltop relay: refused a viewer at %s: it runs as uid %ld, not as us (without a "
              "key this relay serves its own user only; 'nccltop keygen' for CURVE)%s\n",
              peer, uid, more);
    else
      fprintf(stderr,
              "nccltop relay: refused a viewer at %s: cannot tell which user it is (without a "
              "key this relay serves its own user's local processes only)%s\n",
              peer, more);
  }
}

/* The connections now; what is known of each carried over by inode. */
static int list_conns(nt_guard *g, double now) {
  int n = nt_conns_list(g->port, g->conns, MAX_CONNS);
  if (n < 0) {
    atomic_store(&g->nconns, -1); /* cannot tell */
    return 0;
  }
  for (int i = 0; i < n; i++) {
    tracked *old = find(g, g->conns[i].ino);
    g->track_next[i] = old ? *old : (tracked){.ino = g->conns[i].ino, .first_s = now};
  }
  tracked *t = g->track;
  g->track = g->track_next;
  g->track_next = t;
  g->ntrack = n;
  qsort(g->track, (size_t)n, sizeof *g->track, by_ino);
  atomic_store(&g->nconns, n);
  return n;
}

static void sweep(nt_guard *g) {
  double now = mono_s();
  int n = list_conns(g, now);
  if (g->same_user) check_users(g, n);
  int top = -1;
  uint64_t top_bytes = 0;
  for (int i = 0; i < n; i++) {
    nt_conn *c = &g->conns[i];
    tracked *t = find(g, c->ino);
    uint64_t bytes;
    if (!t || t->cut || !nt_conn_bytes_in(c, &bytes)) continue;
    double age = now - t->first_s;
    if ((double)bytes > GUARD_BYTES_BASE + GUARD_BYTES_PER_S * age) {
      char peer[80], more[64] = "";
      nt_conn_peer_name(c, peer, sizeof peer);
      unsigned long held = 0;
      t->cut = true;
      if (!nt_conn_cut(c)) continue; /* gone meanwhile */
      last_cut_s = now;
      if (!rate_ok(&g->cut_log, &held)) continue;
      if (held) snprintf(more, sizeof more, " (%lu more since the last line)", held);
      fprintf(stderr,
              "nccltop relay: a viewer at %s sent %llu bytes in %.1f s (a viewer sends one "
              "subscription): disconnected%s\n",
              peer, (unsigned long long)bytes, age, more);
      continue;
    }
    if (bytes >= top_bytes) {
      top = i;
      top_bytes = bytes;
    }
  }
  /* What a connection just cut had libzmq keep goes with it (the relay
   * sees its unsubscriptions): a request right after a cut is stale. */
  if (atomic_load(&g->cut_requests) > 0) {
    atomic_store(&g->cut_requests, 0);
    if (top >= 0 && now >= last_cut_s + 1.0) {
      char peer[80];
      nt_conn_peer_name(&g->conns[top], peer, sizeof peer);
      cut(&g->conns[top], find(g, g->conns[top].ino),
          "the viewers' subscriptions other than nccltop's reached the relay's bound; "
          "disconnected the one that sent the most, %s (%llu bytes)",
          peer, (unsigned long long)top_bytes);
    }
  }
}

static bool key_known(nt_guard *g, const char *key) {
  if (!strcmp(key, g->own_pub)) return true;
  pthread_mutex_lock(&g->keys_lock);
  bool ok = nt_authkeys_has(&g->keys, key);
  pthread_mutex_unlock(&g->keys_lock);
  return ok;
}

/* Whether the file now differs from what the keys we hold came from (a
 * stat; the file is never opened here). */
static bool keys_stale(nt_guard *g) {
  pthread_mutex_lock(&g->keys_lock);
  nt_authkeys meta = g->keys; /* the description only */
  pthread_mutex_unlock(&g->keys_lock);
  return g->auth_file[0] && nt_authkeys_stale(&meta, g->auth_file);
}

/* An unknown key, and the file changed since it was read: the relay's
 * thread is asked to read it again (it, not this thread, reads it; it
 * answers within its turn, 0.1 s), and we wait for that at most a second.
 * Unknown keys cost no wait while the file stays as it was; a file that
 * cannot be read (it keeps looking changed) is asked about at most 4 times
 * a second. */
static bool key_ok(nt_guard *g, const char *key) {
  if (key_known(g, key)) return true;
  double now = mono_s();
  if (!keys_stale(g) || (g->keys_ask_failed && now < g->keys_asked_s + 0.25)) return false;
  g->keys_asked_s = now;
  unsigned want = atomic_fetch_add(&g->keys_req, 1) + 1;
  while (atomic_load(&g->keys_done) - want > (1u << 31) && mono_s() < now + 1.0 &&
         !atomic_load(&g->stop))
    usleep(5000);
  g->keys_ask_failed = keys_stale(g);
  return key_known(g, key);
}

unsigned nt_guard_keys_wanted(nt_guard *g) {
  unsigned req = atomic_load(&g->keys_req);
  return req != atomic_load(&g->keys_done) ? req : 0;
}

void nt_guard_keys_checked(nt_guard *g, unsigned wanted) {
  atomic_store(&g->keys_done, wanted);
}

static void refused_key(nt_guard *g, const nt_zap_request *rq) {
  /* A refused viewer retries twice a second: the same key is logged again
   * only after ten seconds, with the count of the attempts between. */
  double now = mono_s();
  if (strcmp(rq->key, g->last_key) != 0 || now >= g->last_key_s + LOG_EVERY_S) {
    char again[64] = "";
    if (!strcmp(rq->key, g->last_key) && g->key_repeats)
      snprintf(again, sizeof again, " (%lu attempts since the last line)", g->key_repeats);
    fprintf(stderr, "nccltop relay: refused viewer key %s from %s: not in %s%s\n",
            rq->key[0] ? rq->key : "(none: not CURVE)", rq->addr,
            g->auth_file[0] ? g->auth_file : "the authorized keys", again);
    snprintf(g->last_key, sizeof g->last_key, "%s", rq->key);
    g->last_key_s = now;
    g->key_repeats = 0;
  } else {
    g->key_repeats++;
  }
}

/* The requests waiting, ZAP_BATCH at most, answered together: without a
 * key, one look at the connections serves them all (another user's are
 * ended here, before we answer: their handshakes wait for this answer, so
 * they never get a message). */
#define ZAP_BATCH 256

static void answer(nt_guard *g) {
  static nt_zap_request rq[ZAP_BATCH]; /* guard thread only */
  int n = 0;
  for (int tries = 0; n < ZAP_BATCH && tries < 2 * ZAP_BATCH; tries++) {
    int rc = nt_zap_recv(g->zap, &rq[n]);
    if (rc == 0) break;
    if (rc > 0) n++; /* a malformed one is dropped */
  }
  if (!n) return;
  if (!g->curve && g->same_user) check_users(g, list_conns(g, mono_s()));
  for (int i = 0; i < n; i++) {
    bool ok = !g->curve || (rq[i].key[0] && key_ok(g, rq[i].key));
    if (!ok) refused_key(g, &rq[i]);
    if (nt_zap_reply(g->zap, &rq[i], ok) != 0)
      fprintf(stderr, "nccltop relay: cannot answer an authentication request: %s\n",
              zmq_strerror(zmq_errno()));
  }
}

/* The handshakes that failed on the listening socket (a refused key is
 * logged by answer(), with the key). */
typedef struct {
  double next_log;
  unsigned long skipped;
  uint16_t last_event;
  uint32_t last_value;
} monitor_log;

/* curve: this relay speaks CURVE, so a mechanism mismatch is a viewer
 * without it (--insecure), and the other way round. Each line is one
 * viewer's attempt: a wrong server key and an --insecure viewer are two
 * viewers (libzmq names the listening endpoint, not the viewer). */
static void monitor_event(void *mon, monitor_log *ml, bool curve) {
  uint8_t ev[6];
  char addr[256];
  int n = zmq_recv(mon, ev, sizeof ev, ZMQ_DONTWAIT);
  if (n < 0) return;
  int more = 0;
  size_t len = sizeof more;
  int an = 0;
  if (zmq_getsockopt(mon, ZMQ_RCVMORE, &more, &len) == 0 && more)
    an = zmq_recv(mon, addr, sizeof addr - 1, 0);
  addr[an > 0 ? (an < (int)sizeof addr ? an : (int)sizeof addr - 1) : 0] = '\0';
  if (n < 6) return;
  uint16_t event;
  uint32_t value;
  memcpy(&event, ev, 2);
  memcpy(&value, ev + 2, 4);
  double now = mono_s();
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL &&
      (value == EPIPE || value == ECONNRESET || value == ECONNABORTED))
    return; /* a peer that went away (or that we ended) mid-handshake */
  /* A refused viewer retries every half second: one line per kind and ten
   * seconds, with the count of the others. */
  if (event == ml->last_event && value == ml->last_value && now < ml->next_log) {
    ml->skipped++;
    return;
  }
  char more_text[64] = "";
  if (ml->skipped && event == ml->last_event && value == ml->last_value)
    snprintf(more_text, sizeof more_text, " (%lu more since the last line)", ml->skipped);
  ml->next_log = now + LOG_EVERY_S;
  ml->last_event = event;
  ml->last_value = value;
  ml->skipped = 0;
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
    fprintf(stderr, "nccltop relay: a viewer's handshake on %s failed (protocol error 0x%x%s)%s\n",
            addr, value,
            value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
                ? ": it does not have this relay's public key as --server-key"
            : value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                ? (curve ? ": that viewer runs --insecure, this relay requires CURVE"
                         : ": that viewer uses CURVE, this relay runs --insecure")
                : "",
            more_text);
  else
    fprintf(stderr, "nccltop relay: a viewer's handshake on %s failed (%s)%s\n", addr,
            zmq_strerror((int)value), more_text);
}

static void *guard_thread(void *arg) {
  nt_guard *g = arg;
  int zero = 0, tmo = 0;
  void *mon = g->monitor_ep[0] ? zmq_socket(g->zctx, ZMQ_PAIR) : NULL;
  if (mon && (zmq_setsockopt(mon, ZMQ_LINGER, &zero, sizeof zero) ||
              zmq_setsockopt(mon, ZMQ_RCVTIMEO, &tmo, sizeof tmo) ||
              zmq_connect(mon, g->monitor_ep) != 0)) {
    zmq_close(mon);
    mon = NULL;
  }
  monitor_log ml = {0};
  double next_sweep = 0;
  while (!atomic_load(&g->stop)) {
    zmq_pollitem_t it[2];
    int n = 0, zap_at = -1, mon_at = -1;
    if (g->zap) {
      zap_at = n;
      it[n++] = (zmq_pollitem_t){.socket = g->zap, .events = ZMQ_POLLIN};
    }
    if (mon) {
      mon_at = n;
      it[n++] = (zmq_pollitem_t){.socket = mon, .events = ZMQ_POLLIN};
    }
    double now = mono_s();
    /* Poked: a flood may be under way; look every POKED_SWEEP_MS. */
    if (atomic_exchange(&g->poked, false) && next_sweep > now + POKED_SWEEP_MS / 1000.0)
      next_sweep = now + POKED_SWEEP_MS / 1000.0;
    int wait_ms = next_sweep > now ? (int)((next_sweep - now) * 1000) + 1 : 0;
    if (wait_ms > POKED_SWEEP_MS) wait_ms = POKED_SWEEP_MS;
    int rc = n ? zmq_poll(it, n, wait_ms) : 0;
    if (!n && wait_ms) usleep((useconds_t)wait_ms * 1000);
    if (rc < 0 && zmq_errno() != EINTR) break;
    if (rc > 0 && zap_at >= 0 && (it[zap_at].revents & ZMQ_POLLIN)) answer(g);
    for (int i = 0; rc > 0 && mon_at >= 0 && (it[mon_at].revents & ZMQ_POLLIN) && i < 64; i++)
      monitor_event(mon, &ml, g->curve);
    if (mono_s() >= next_sweep) {
      sweep(g);
      next_sweep = mono_s() + GUARD_SWEEP_MS / 1000.0;
    }
  }
  if (mon) zmq_close(mon);
  if (g->zap) zmq_close(g->zap);
  return NULL;
}

nt_guard *nt_guard_start(const nt_guard_config *cfg, nt_authkeys *keys, char *err, size_t errlen) {
  nt_guard *g = calloc(1, sizeof *g);
  if (g) {
    g->conns = calloc(MAX_CONNS, sizeof *g->conns);
    g->track = calloc(MAX_CONNS, sizeof *g->track);
    g->track_next = calloc(MAX_CONNS, sizeof *g->track_next);
  }
  if (!g || !g->conns || !g->track || !g->track_next) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  g->zctx = cfg->zctx;
  g->port = cfg->port;
  g->same_user = cfg->same_user;
  g->curve = cfg->own_pub != NULL;
  snprintf(g->monitor_ep, sizeof g->monitor_ep, "%s", cfg->monitor_ep ? cfg->monitor_ep : "");
  snprintf(g->own_pub, sizeof g->own_pub, "%s", cfg->own_pub ? cfg->own_pub : "");
  snprintf(g->auth_file, sizeof g->auth_file, "%s", cfg->auth_file ? cfg->auth_file : "");
  if (keys) {
    g->keys = *keys;
    memset(keys, 0, sizeof *keys);
  }
  if (pthread_mutex_init(&g->keys_lock, NULL) != 0) {
    snprintf(err, errlen, "cannot start the authentication handler");
    goto fail;
  }
  g->zap = cfg->zap;
  if (pthread_create(&g->thread, NULL, guard_thread, g) != 0) {
    snprintf(err, errlen, "cannot start the authentication thread");
    goto fail_mutex; /* zap stays the caller's */
  }
  return g;
fail_mutex:
  pthread_mutex_destroy(&g->keys_lock);
fail:
  if (g) {
    nt_authkeys_free(&g->keys);
    free(g->conns);
    free(g->track);
    free(g->track_next);
  }
  free(g);
  return NULL;
}

void nt_guard_set_keys(nt_guard *g, nt_authkeys *keys) {
  pthread_mutex_lock(&g->keys_lock);
  nt_authkeys old = g->keys;
  g->keys = *keys;
  pthread_mutex_unlock(&g->keys_lock);
  memset(keys, 0, sizeof *keys);
  nt_authkeys_free(&old);
}

void nt_guard_poke(nt_guard *g) {
  atomic_store(&g->poked, true);
}

void nt_guard_cut_top(nt_guard *g) {
  atomic_fetch_add(&g->cut_requests, 1);
}

int nt_guard_connections(const nt_guard *g) {
  return atomic_load(&((nt_guard *)g)->nconns);
}

void nt_guard_stop(nt_guard *g) {
  if (!g) return;
  atomic_store(&g->stop, true);
  pthread_join(g->thread, NULL);
  pthread_mutex_destroy(&g->keys_lock);
  nt_authkeys_free(&g->keys);
  free(g->conns);
  free(g->track);
  free(g->track_next);
  free(g);
}

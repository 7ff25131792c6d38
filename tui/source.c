/* The live source: one SUB socket per local publisher found in the endpoint
 * directory (so a dead one can be dropped alone), plus one per --connect
 * endpoint. Every message is decoded and applied to the model; whatever
 * fails becomes a model error with its reason and never disturbs the other
 * publishers. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "viewer.h"

#define MAX_ENDPOINTS         2048
#define MAX_MESSAGES_PER_POLL 20000
#define RCVHWM                1000

typedef struct {
  void *sock;
  uint32_t pid; /* 0 for --connect endpoints */
  char endpoint[160];
  bool seen; /* still in the directory at the last scan */
} endpoint;

struct nt_source {
  void *zctx;
  char dir[200];
  endpoint eps[MAX_ENDPOINTS];
  uint32_t neps;
  double next_scan_s;
  bool dir_error_noted;
  bool topo_from_publishers; /* the topology shown came from a topology message */
  nt_snapshot *scratch;
  nt_hello *hello;
  uint8_t *buf;
};

double nt_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int set_int(void *s, int opt, int v) {
  return zmq_setsockopt(s, opt, &v, sizeof v);
}

static endpoint *add_endpoint(nt_source *s, const char *addr, uint32_t pid, nt_model *m) {
  if (s->neps >= MAX_ENDPOINTS) return NULL;
  void *sock = zmq_socket(s->zctx, ZMQ_SUB);
  int64_t maxmsg = NT_MAX_MESSAGE_BYTES + 1024;
  if (!sock || set_int(sock, ZMQ_LINGER, 0) || set_int(sock, ZMQ_RCVHWM, RCVHWM) ||
      zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
      zmq_setsockopt(sock, ZMQ_SUBSCRIBE, "", 0) || zmq_connect(sock, addr)) {
    char text[256];
    snprintf(text, sizeof text, "cannot connect: %s", zmq_strerror(errno));
    nt_model_note_error(m, addr, text, nt_now_s());
    if (sock) zmq_close(sock);
    return NULL;
  }
  endpoint *e = &s->eps[s->neps++];
  memset(e, 0, sizeof *e);
  e->sock = sock;
  e->pid = pid;
  e->seen = true;
  snprintf(e->endpoint, sizeof e->endpoint, "%s", addr);
  return e;
}

nt_source *nt_source_open(const nt_options *o, char *err, size_t errlen) {
  nt_source *s = calloc(1, sizeof *s);
  if (!s) return snprintf(err, errlen, "out of memory"), NULL;
  s->scratch = nt_snapshot_new();
  s->hello = calloc(1, sizeof *s->hello);
  s->buf = malloc(NT_MAX_MESSAGE_BYTES + 1);
  s->zctx = zmq_ctx_new();
  if (!s->scratch || !s->hello || !s->buf || !s->zctx) {
    snprintf(err, errlen, "cannot start: out of memory or no ZeroMQ context");
    nt_source_close(s);
    return NULL;
  }
  if (o->dir)
    snprintf(s->dir, sizeof s->dir, "%s", o->dir);
  else if (nt_endpoint_dir(s->dir, sizeof s->dir) != 0) {
    snprintf(err, errlen, "endpoint directory name too long");
    nt_source_close(s);
    return NULL;
  }
  return s;
}

void nt_source_close(nt_source *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->neps; i++) zmq_close(s->eps[i].sock);
  if (s->zctx) zmq_ctx_term(s->zctx);
  nt_snapshot_free(s->scratch);
  free(s->hello);
  free(s->buf);
  free(s);
}

uint32_t nt_source_nendpoints(const nt_source *s) {
  return s->neps;
}

static bool pid_alive(uint32_t pid) {
  return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* Lists <pid>.sock files: connects to new live ones, drops dead ones. */
static void scan(nt_source *s, nt_model *m, double now) {
  char err[256];
  if (nt_endpoint_dir_check(s->dir, err, sizeof err) != 0) {
    if (!s->dir_error_noted) nt_model_note_error(m, "endpoints", err, now);
    s->dir_error_noted = true;
    return;
  }
  s->dir_error_noted = false;
  DIR *d = opendir(s->dir);
  if (!d) return;
  for (uint32_t i = 0; i < s->neps; i++) s->eps[i].seen = s->eps[i].pid == 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    uint32_t pid = nt_endpoint_parse_name(de->d_name);
    if (!pid || !pid_alive(pid)) continue; /* a stale socket of a killed process */
    uint32_t i = 0;
    while (i < s->neps && s->eps[i].pid != pid) i++;
    if (i < s->neps) {
      s->eps[i].seen = true;
      continue;
    }
    char addr[256];
    if (nt_endpoint_for_pid(s->dir, pid, addr, sizeof addr) == 0) add_endpoint(s, addr, pid, m);
  }
  closedir(d);
  for (uint32_t i = 0; i < s->neps;) {
    if (s->eps[i].seen) {
      i++;
      continue;
    }
    nt_model_process_gone(m, s->eps[i].pid, NULL);
    zmq_close(s->eps[i].sock);
    s->eps[i] = s->eps[--s->neps];
  }
}

static void note(nt_model *m, const endpoint *e, const char *fmt, const char *detail) {
  char text[512];
  snprintf(text, sizeof text, fmt, detail);
  nt_model_note_error(m, e->endpoint, text, nt_now_s());
}

/* Receives one whole message; returns false when the socket has none. */
static bool receive(nt_source *s, endpoint *e, nt_model *m) {
  char topic[64], err[256];
  int tn = zmq_recv(e->sock, topic, sizeof topic - 1, ZMQ_DONTWAIT);
  if (tn < 0) return false;
  int more = 0;
  size_t sz = sizeof more;
  zmq_getsockopt(e->sock, ZMQ_RCVMORE, &more, &sz);
  topic[tn < (int)sizeof topic - 1 ? tn : (int)sizeof topic - 1] = '\0';
  if (!more) {
    note(m, e, "message with 1 frame, expected 2 (topic %s)", topic);
    return true;
  }
  int len = zmq_recv(e->sock, s->buf, NT_MAX_MESSAGE_BYTES + 1, 0);
  zmq_getsockopt(e->sock, ZMQ_RCVMORE, &more, &sz);
  int frames = 2;
  while (more) { /* drain extra frames so the next message starts clean */
    char junk[64];
    if (zmq_recv(e->sock, junk, sizeof junk, 0) < 0) break;
    frames++;
    zmq_getsockopt(e->sock, ZMQ_RCVMORE, &more, &sz);
  }
  if (frames != 2) {
    char n[16];
    snprintf(n, sizeof n, "%d", frames);
    note(m, e, "message with %s frames, expected 2", n);
    return true;
  }
  if (len < 0) return true;
  if (len > (int)NT_MAX_MESSAGE_BYTES) {
    note(m, e, "%s: message larger than the protocol limit", topic);
    return true;
  }
  double now = nt_now_s();
  if (tn >= (int)sizeof topic - 1) {
    note(m, e, "unknown topic %s...", topic);
  } else if (!strcmp(topic, NT_TOPIC_SNAPSHOT)) {
    if (nt_snapshot_decode(s->buf, (size_t)len, s->scratch, err, sizeof err) == 0)
      nt_model_apply_snapshot(m, e->endpoint, s->scratch, now);
    else
      note(m, e, "bad snapshot: %s", err);
  } else if (!strcmp(topic, NT_TOPIC_HELLO)) {
    if (nt_hello_decode((const char *)s->buf, (size_t)len, s->hello, err, sizeof err) == 0)
      nt_model_apply_hello(m, e->endpoint, s->hello, now);
    else
      note(m, e, "bad hello: %s", err);
  } else if (!strcmp(topic, NT_TOPIC_COMM)) {
    nt_comm_info c;
    if (nt_comm_decode((const char *)s->buf, (size_t)len, &c, err, sizeof err) == 0)
      nt_model_apply_comm(m, e->endpoint, &c, now);
    else
      note(m, e, "bad communicator message: %s", err);
  } else if (!strcmp(topic, NT_TOPIC_TOPOLOGY)) {
    /* The first topology wins unless the user gave --topology; the model
     * skips a re-sent identical file. */
    nt_topo *have = nt_model_topology(m, NULL);
    if (!have || s->topo_from_publishers)
      s->topo_from_publishers =
          nt_model_set_topology(m, (const char *)s->buf, (size_t)len, e->endpoint, now) == 0 ||
          s->topo_from_publishers;
  } else {
    char clean[80];
    note(m, e, "unknown topic '%s'", nt_sanitize(topic, (size_t)tn, clean, sizeof clean));
  }
  return true;
}

int nt_source_poll(nt_source *s, nt_model *m, int timeout_ms) {
  double now = nt_now_s();
  if (now >= s->next_scan_s) {
    scan(s, m, now);
    s->next_scan_s = now + 1.0;
  }
  if (s->neps == 0) {
    if (timeout_ms > 0) {
      struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
    }
    return 0;
  }
  zmq_pollitem_t items[MAX_ENDPOINTS];
  for (uint32_t i = 0; i < s->neps; i++)
    items[i] = (zmq_pollitem_t){.socket = s->eps[i].sock, .events = ZMQ_POLLIN};
  if (zmq_poll(items, (int)s->neps, timeout_ms) <= 0) return 0;
  int n = 0;
  /* Round-robin over ready sockets so one chatty publisher cannot starve others. */
  for (bool any = true; any && n < MAX_MESSAGES_PER_POLL;) {
    any = false;
    for (uint32_t i = 0; i < s->neps && n < MAX_MESSAGES_PER_POLL; i++) {
      if (receive(s, &s->eps[i], m)) {
        any = true;
        n++;
      }
    }
  }
  return n;
}

/* Used by --connect: called once after open. */
int nt_source_connect(nt_source *s, nt_model *m, const char *addr) {
  return add_endpoint(s, addr, 0, m) ? 0 : -1;
}

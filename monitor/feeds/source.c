/* The live source: one SUB socket, the inbox, bound in the endpoint
 * directory, which every local publisher connects to (from 0.2 a plugin
 * never listens: a process that accepts connections can be killed by them,
 * see plugin/local.c); each message names its sender through the kernel's
 * credentials, so every publisher still has an endpoint of its own here.
 * Then one SUB socket per --connect endpoint, and one per publisher older
 * than 0.2 found listening in the directory. Every message is decoded and
 * applied to the model; whatever fails becomes a model error with its
 * reason and never disturbs the other publishers. Nothing here blocks
 * longer than the caller's timeout.
 *
 * A tcp:// --connect endpoint (a relay) speaks CURVE with the user's keypair
 * and must prove the --server-key (curve.h), unless --insecure; without a
 * key only a loopback address is connected, in plain TCP. A socket monitor
 * on each --connect socket turns a refused handshake (our key not
 * authorized, the wrong server key, CURVE on one side only) into one model
 * error, never a silent empty screen. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "discover.h"
#include "hostlist.h"
#include "source_internal.h"

/* Local publishers connected at most; the table also has room for every
 * --connect endpoint and --hosts relay (nt_source's cap). */
#define MAX_ENDPOINTS 2048
/* Messages queued per publisher before ZeroMQ drops (the viewer sees the
 * gap in sequence numbers): ten seconds at the default interval, which
 * bounds the memory a stalled viewer holds. */
#define RCVHWM 100
/* A remote endpoint (--connect, --hosts) that refuses is tried again after
 * 500 ms, doubling up to this, or up to 4 ms per remote endpoint when there
 * are more (at most 30 s): thousands of hosts whose relays are down would
 * otherwise cost the viewer a core in reconnects (about 250 tries a second
 * in all, whatever their number). */
#define RECONNECT_MAX_MS      4000
#define RECONNECT_PER_HOST_MS 4
#define RECONNECT_CAP_MS      30000
/* After the endpoint directory was removed or replaced, a publisher binds
 * again within its check period (2 s); until then its endpoint is kept. */
#define REBIND_GRACE_S 5.0
/* How often ZeroMQ tries a tcp:// --connect endpoint again (a relay that
 * restarts is seen again within this). */
#define TCP_RECONNECT_MS 500

static int set_int(void *s, int opt, int v) {
  return zmq_setsockopt(s, opt, &v, sizeof v);
}

void nt_source_note(nt_model *m, const char *source, bool bad, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (bad)
    nt_model_note_error(m, source, text, nt_now_s());
  else
    nt_model_note_problem(m, source, text, nt_now_s());
}

/* The name people read (and the model and recordings key by, 159 bytes at
 * most): `shown` itself, or, when longer, its head and a hash of all of it,
 * so two long names never become one. */
static void shorten(const char *shown, char *out, size_t cap) {
  size_t n = strlen(shown);
  if (n < cap) {
    memcpy(out, shown, n + 1);
    return;
  }
  uint64_t h = 1469598103934665603ull;
  for (const char *p = shown; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  snprintf(out, cap, "%.*s...#%016llx", (int)(cap - 21), shown, (unsigned long long)h);
}

/* Connects a SUB socket to addr; `shown` names it in the model. */
endpoint *nt_source_add_endpoint(nt_source *s, nt_model *m, const char *addr, const char *shown,
                                 uint32_t pid) {
  if (s->neps >= s->cap) {
    if (!s->full_noted)
      nt_source_note(m, shown, false, "more than %u endpoints; not connected", s->cap);
    s->full_noted = true;
    return NULL;
  }
  if (strlen(addr) >= sizeof s->eps[0].addr) {
    nt_source_note(m, "connect", false, "endpoint name longer than %zu bytes",
                   sizeof s->eps[0].addr - 1);
    return NULL;
  }
  char name[sizeof s->eps[0].endpoint];
  shorten(shown, name, sizeof name);
  shown = name;
  bool tcp = !pid && !strncmp(addr, "tcp://", 6);
  bool secure = tcp && !s->insecure && s->keys_rc == 0;
  if (tcp && !s->insecure && s->keys_rc < 0)
    nt_source_note(m, shown, false, "no CURVE: %s", s->keys_err); /* a key we cannot use: say why */
  if (tcp && !s->insecure && s->keys_rc != 0 && !nt_endpoint_is_loopback(addr)) {
    /* Once, not once per host of a --hosts list. */
    if (!s->nokey_noted)
      nt_source_note(
          m, shown, false,
          "not connected (nor any other non-loopback tcp:// endpoint): %s; CURVE needs a key "
          "(or --insecure for plain TCP)",
          s->keys_err);
    s->nokey_noted = true;
    return NULL;
  }
  void *sock = zmq_socket(s->zctx, ZMQ_SUB), *mon = NULL;
  /* A publisher that sends more than the protocol allows is disconnected by
   * ZeroMQ before the message is ever buffered. */
  int64_t maxmsg = (int64_t)NT_MAX_MESSAGE_BYTES + 4096;
  bool ok = sock && !set_int(sock, ZMQ_LINGER, 0) && !set_int(sock, ZMQ_RCVHWM, RCVHWM) &&
            !zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) &&
            !zmq_setsockopt(sock, ZMQ_SUBSCRIBE, "", 0) &&
            (pid != 0 || !set_int(sock, ZMQ_RECONNECT_IVL_MAX, (int)s->reconnect_max_ms)) &&
            (!secure || !nt_curve_set_client(sock, &s->keys, s->server_key));
  if (ok && tcp) /* a relay that refuses us is tried twice a second, not ten times */
    ok = !set_int(sock, ZMQ_RECONNECT_IVL, TCP_RECONNECT_MS);
  if (ok && tcp && s->monitors < NT_SOURCE_MAX_MONITORS) {
    char mep[64];
    snprintf(mep, sizeof mep, "inproc://nccltop-monitor-%u", s->monitors++);
    ok = ok &&
         !zmq_socket_monitor(sock, mep,
                             ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                                 ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) &&
         (mon = zmq_socket(s->zctx, ZMQ_PAIR)) && !set_int(mon, ZMQ_LINGER, 0) &&
         !zmq_connect(mon, mep);
  }
  if (!ok || zmq_connect(sock, addr)) {
    nt_source_note(m, shown, false, "cannot connect: %s", zmq_strerror(zmq_errno()));
    if (mon) zmq_close(mon);
    if (sock) zmq_close(sock);
    return NULL;
  }
  endpoint *e = &s->eps[s->neps++];
  memset(e, 0, sizeof *e);
  e->sock = sock;
  e->mon = mon;
  e->secure = secure;
  e->pid = pid;
  e->seen = true;
  e->since_s = nt_now_s();
  snprintf(e->addr, sizeof e->addr, "%s", addr);
  snprintf(e->endpoint, sizeof e->endpoint, "%s", shown);
  return e;
}

static void remove_endpoint(nt_source *s, uint32_t i) {
  if (s->eps[i].mon) zmq_close(s->eps[i].mon);
  if (s->eps[i].sock) zmq_close(s->eps[i].sock);
  s->eps[i] = s->eps[--s->neps];
}

/* Loads the user's keypair and the server key the relays must prove. A
 * missing key is not an error here (loopback relays are reachable without
 * one; the others are refused one by one); a bad --server-key is. */
static int curve_setup(nt_source *s, const nt_options *o, char *err, size_t errlen) {
  s->keys_rc = nt_curve_load(&s->keys, s->keys_err, sizeof s->keys_err);
  if (s->keys_rc == 0 && !nt_curve_available()) {
    s->keys_rc = -1;
    snprintf(s->keys_err, sizeof s->keys_err, "this libzmq has no CURVE (libsodium)");
  }
  if (s->keys_rc != 0) return 0;
  if (!o->server_key) {
    memcpy(s->server_key, s->keys.pub, sizeof s->server_key);
    return 0;
  }
  char why[400];
  if (nt_curve_key_arg(o->server_key, s->server_key, why, sizeof why) != 0) {
    snprintf(err, errlen, "--server-key: %s", why);
    return -1;
  }
  return 0;
}

nt_source *nt_source_open(const nt_options *o, char *err, size_t errlen) {
  nt_source *s = calloc(1, sizeof *s);
  if (!s) return snprintf(err, errlen, "out of memory"), NULL;
  nt_hostlist *hosts = nt_options_hosts(o, err, errlen);
  if (!hosts && err[0]) {
    free(s);
    return NULL;
  }
  uint32_t nhosts = hosts ? nt_hostlist_count(hosts) : 0;
  s->cap = MAX_ENDPOINTS + 8 + nhosts;
  s->connect = calloc(8 + nhosts, sizeof *s->connect);
  s->eps = calloc(s->cap, sizeof *s->eps);
  s->items = calloc(s->cap + 1, sizeof *s->items);
  s->item_ep = calloc(s->cap + 1, sizeof *s->item_ep);
  s->ingest = nt_ingest_new();
  if (!s->connect || !s->eps || !s->items || !s->item_ep || !s->ingest) {
    snprintf(err, errlen, "out of memory");
    nt_hostlist_free(hosts);
    nt_source_close(s);
    return NULL;
  }
  s->dirfd = -1;
  s->pidns = nt_endpoint_pidns();
  int n = o->dir ? snprintf(s->dir, sizeof s->dir, "%s", o->dir)
          : nt_endpoint_dir(s->dir, sizeof s->dir) == 0 ? 0
                                                        : -1;
  if (n < 0 || (size_t)n >= sizeof s->dir) {
    snprintf(err, errlen, "endpoint directory name too long");
    nt_hostlist_free(hosts);
    nt_source_close(s);
    return NULL;
  }
  for (int i = 0; i < o->nconnect && i < 8; i++) {
    if (!o->connect[i]) continue;
    if (strlen(o->connect[i]) >= sizeof s->connect[0]) {
      snprintf(err, errlen, "--connect endpoint longer than %zu bytes", sizeof s->connect[0] - 1);
      nt_hostlist_free(hosts);
      nt_source_close(s);
      return NULL;
    }
    snprintf(s->connect[s->nconnect++], sizeof s->connect[0], "%s", o->connect[i]);
  }
  /* Each host's relay (nt_options_hosts checked that the names fit). */
  for (uint32_t i = 0; i < nhosts; i++) {
    uint16_t port = nt_hostlist_port(hosts, i);
    snprintf(s->connect[s->nconnect++], sizeof s->connect[0], "tcp://%s:%u",
             nt_hostlist_host(hosts, i), port ? (unsigned)port : NT_HOSTS_DEFAULT_PORT);
  }
  s->nhosts = nhosts;
  uint64_t spread = (uint64_t)s->nconnect * RECONNECT_PER_HOST_MS;
  s->reconnect_max_ms = spread < RECONNECT_MAX_MS   ? RECONNECT_MAX_MS
                        : spread > RECONNECT_CAP_MS ? RECONNECT_CAP_MS
                                                    : (uint32_t)spread;
  if (hosts) nt_hostlist_ranged(hosts, s->hosts, sizeof s->hosts);
  nt_hostlist_free(hosts);
  s->insecure = o->insecure;
  s->keys_rc = 1;
  bool any_tcp = false;
  for (int i = 0; i < s->nconnect; i++) any_tcp |= !strncmp(s->connect[i], "tcp://", 6);
  if (any_tcp && !s->insecure && curve_setup(s, o, err, errlen) != 0) {
    nt_source_close(s);
    return NULL;
  }
  /* Last: ZeroMQ starts its threads with the first socket, and nothing can
   * fail after this point. */
  if (!(s->zctx = zmq_ctx_new())) {
    snprintf(err, errlen, "cannot create a ZeroMQ context: %s", zmq_strerror(zmq_errno()));
    nt_source_close(s);
    return NULL;
  }
  /* ZeroMQ's default is 1023; a tcp:// endpoint's socket monitor takes two
   * more (its PAIR and ZeroMQ's own end). */
  zmq_ctx_set(s->zctx, ZMQ_MAX_SOCKETS, 3 * (int)s->cap + 16);
  return s;
}

/* A tcp:// connect address as libzmq takes it: [SOURCE;]HOST:PORT, HOST
 * a name, an IPv4 address or [an IPv6 one], PORT 1..65535. */
static bool tcp_endpoint_ok(const char *a) {
  const char *semi = strchr(a, ';');
  if (semi) a = semi + 1; /* a source address, which libzmq checks when it connects */
  const char *colon = strrchr(a, ':');
  if (!colon || colon == a || strpbrk(a, " /\t")) return false;
  if (a[0] == '[' && colon[-1] != ']') return false;
  char *end;
  errno = 0;
  long port = strtol(colon + 1, &end, 10);
  return colon[1] && !*end && errno == 0 && port >= 1 && port <= 65535;
}

int nt_source_check(const nt_options *o, char *err, size_t errlen) {
  /* --hosts / --hostfile (record and the exporter take them without the
   * viewer's parser): a mistake is a usage error, with its position. */
  nt_hostlist *hl = nt_options_hosts(o, err, errlen);
  nt_hostlist_free(hl);
  if (!hl && err[0]) return -1;
  char dir[256];
  struct stat st;
  const char *d = o->dir;
  if (!d && nt_endpoint_dir(dir, sizeof dir) == 0) d = dir;
  if (d && stat(d, &st) == 0 && !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s %s is not a directory", o->dir ? "--dir" : "the endpoint directory",
             d);
    return -1;
  }
  /* One the jobs' plugins refuse too (another owner, a symlink, open to
   * other users) would never show a job: said now, not as an empty frame. */
  if (d && stat(d, &st) == 0) {
    int fd = nt_endpoint_dir_open(d, false, err, errlen);
    if (fd < 0) return -1;
    close(fd);
  }
  /* --hosts relays without a key: the source says so once in the error list
   * and connects the loopback ones (a simulated multi-node job's). */
  if (!o->nconnect) return 0;
  nt_curve_keys k;
  char why[320] = "";
  int krc = o->insecure ? 0 : nt_curve_load(&k, why, sizeof why);
  char sk[NT_CURVE_KEY_LEN + 1];
  /* A server key given is checked whether or not we have a key of our own
   * (it was taken silently without one). */
  char skwhy[320];
  if (!o->insecure && o->server_key &&
      nt_curve_key_arg(o->server_key, sk, skwhy, sizeof skwhy) != 0) {
    snprintf(err, errlen, "--server-key: %s", skwhy);
    return -1;
  }
  for (int i = 0; i < o->nconnect && krc != 0; i++) {
    if (strncmp(o->connect[i], "tcp://", 6) || nt_endpoint_is_loopback(o->connect[i])) continue;
    /* `why` says how to make one ('nccltop keygen') when it is missing */
    snprintf(err, errlen, "--connect %s: %s; CURVE needs a key, or --insecure for plain TCP",
             o->connect[i], why);
    return -1;
  }
  /* ZeroMQ itself says what it takes for an endpoint (a name it cannot
   * resolve is another matter: it keeps trying, as the source does); but
   * not for tcp://, which it would connect for real, without CURVE: a
   * relay logged that viewer as one running --insecure. */
  void *z = zmq_ctx_new(), *sock = z ? zmq_socket(z, ZMQ_SUB) : NULL;
  int rc = sock ? 0 : -1;
  if (!sock) snprintf(err, errlen, "cannot create a ZeroMQ socket: %s", zmq_strerror(zmq_errno()));
  if (sock && set_int(sock, ZMQ_LINGER, 0) != 0) rc = -1;
  for (int i = 0; rc == 0 && i < o->nconnect; i++) {
    if (!strncmp(o->connect[i], "tcp://", 6)) {
      if (tcp_endpoint_ok(o->connect[i] + 6)) continue;
      snprintf(err, errlen,
               "--connect %s: not a ZeroMQ endpoint (HOST:PORT after tcp://, port "
               "1..65535); e.g. tcp://node1:5555",
               o->connect[i]);
      rc = -1;
      continue;
    }
    if (zmq_connect(sock, o->connect[i]) == 0) continue;
    snprintf(err, errlen, "--connect %s: not a ZeroMQ endpoint (%s); e.g. tcp://node1:5555",
             o->connect[i], zmq_strerror(zmq_errno()));
    rc = -1;
  }
  if (sock) zmq_close(sock);
  if (z) zmq_ctx_term(z);
  return rc;
}

void nt_source_close(nt_source *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->neps; i++) {
    if (s->eps[i].mon) zmq_close(s->eps[i].mon);
    if (s->eps[i].sock) zmq_close(s->eps[i].sock);
  }
  if (s->inbox) zmq_close(s->inbox);
  if (s->zctx) zmq_ctx_term(s->zctx);
  nt_inbox_unbind(&s->in, NULL, s->dirfd); /* the file: ZeroMQ 4.3 leaves it */
  if (s->dirfd >= 0) close(s->dirfd);      /* only now: ZeroMQ connected through it */
  nt_ingest_free(s->ingest);
  free(s->connect);
  free(s->eps);
  free(s->items);
  free(s->item_ep);
  free(s);
}

void nt_source_watching(const nt_source *s, char *buf, size_t cap) {
  int nconnect = s->nconnect - (int)s->nhosts; /* --connect's come first */
  char hosts[sizeof s->hosts + 32] = "";
  if (s->nhosts)
    snprintf(hosts, sizeof hosts, " + %u host%s %s", s->nhosts, s->nhosts == 1 ? "" : "s",
             s->hosts);
  if (nconnect == 1)
    snprintf(buf, cap, "%s%s + %s", s->dir, hosts, s->connect[0]);
  else if (nconnect > 1)
    snprintf(buf, cap, "%s%s + %d --connect endpoints", s->dir, hosts, nconnect);
  else
    snprintf(buf, cap, "%s%s", s->dir, hosts);
}

void nt_source_set_tap(nt_source *s, nt_source_tap tap, void *arg) {
  s->tap = tap;
  s->tap_arg = arg;
}

uint32_t nt_source_nendpoints(const nt_source *s) {
  return s->neps;
}

int nt_source_connect(nt_source *s, nt_model *m, const char *addr) {
  return nt_source_add_endpoint(s, m, addr, addr, 0) ? 0 : -1;
}

/* discover.h says why a publisher in another PID namespace counts as alive. */
static bool publisher_alive(const nt_source *s, const endpoint *e) {
  if (e->peer) /* the kernel's pid, ours to ask (0: it has none here) */
    return !e->peer_pid || kill((pid_t)e->peer_pid, 0) == 0 || errno != ESRCH;
  return nt_discover_alive(e->pid, e->pidns, s->pidns);
}

/* Drops directory endpoints not seen (their socket file is gone) or whose
 * process is dead; the model marks their processes ended. */
static void drop_gone(nt_source *s, nt_model *m) {
  double now = nt_now_s();
  for (uint32_t i = 0; i < s->neps;) {
    endpoint *e = &s->eps[i];
    bool file_gone = e->name[0] && !e->seen && now >= e->keep_until_s;
    if ((e->name[0] || e->peer) && (file_gone || !publisher_alive(s, e))) {
      if (s->tap) s->tap(s->tap_arg, e->endpoint, e->pid, NULL, 0, NULL, 0, now);
      nt_model_endpoint_gone(m, e->endpoint);
      remove_endpoint(s, i);
    } else {
      i++;
    }
  }
}

/* The directory endpoints were connected through the old descriptor, to
 * files in a directory that is gone or elsewhere now: each moves to the
 * same name in the new one, where its publisher binds again (ZeroMQ keeps
 * trying until it does), and is kept a grace period while it is absent. */
static void move_endpoints(nt_source *s, int fd) {
  double until = nt_now_s() + REBIND_GRACE_S;
  for (uint32_t i = 0; i < s->neps; i++) {
    endpoint *e = &s->eps[i];
    char addr[sizeof e->addr];
    if (!e->name[0] || nt_endpoint_fd_address(fd, e->name, addr, sizeof addr) != 0) continue;
    (void)zmq_disconnect(e->sock, e->addr);
    if (zmq_connect(e->sock, addr) == 0) snprintf(e->addr, sizeof e->addr, "%s", addr);
    e->keep_until_s = until;
  }
}

/* Holds the endpoint directory open, checked (nt_endpoint_dir_open), and
 * opens it again when its path names another directory now (removed and
 * re-created, or replaced). False while there is none we may use: noted
 * once, and the publishers already connected keep working. */
static bool hold_dir(nt_source *s, nt_model *m) {
  if (s->dirfd >= 0 && nt_endpoint_dir_same(s->dir, s->dirfd)) return true;
  /* None yet: no job has run here, and the first one makes it (the
   * plugin). Nothing is wrong: the screen says it waits for one. */
  struct stat st;
  if (s->dirfd < 0 && lstat(s->dir, &st) != 0 && errno == ENOENT) return false;
  char err[512] = "";
  int fd = nt_endpoint_dir_open(s->dir, false, err, sizeof err);
  if (fd < 0) {
    if (!s->dir_error_noted) nt_source_note(m, "endpoints", false, "%s", err);
    s->dir_error_noted = true;
    return false;
  }
  /* The old descriptor is closed after the new one is open, so the numbers
   * differ and a late reconnect through the old one cannot land here. */
  if (s->dirfd >= 0) {
    move_endpoints(s, fd);
    nt_inbox_unbind(&s->in, s->inbox, s->dirfd);
    close(s->dirfd);
  }
  s->dirfd = fd;
  return true;
}

/* The inbox, bound in the directory we hold; bound again when its file was
 * removed (a cleanup of /tmp): the publishers find the new one at their next
 * scan. A failure is noted once, until a bind works. */
static void hold_inbox(nt_source *s, nt_model *m) {
  struct stat st;
  if (s->in.name[0] && fstatat(s->dirfd, s->in.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISSOCK(st.st_mode))
    return;
  if (!s->inbox) {
    int64_t maxmsg = (int64_t)NT_MAX_MESSAGE_BYTES + 4096;
    s->inbox = zmq_socket(s->zctx, ZMQ_SUB);
    if (s->inbox && (set_int(s->inbox, ZMQ_LINGER, 0) || set_int(s->inbox, ZMQ_RCVHWM, RCVHWM) ||
                     zmq_setsockopt(s->inbox, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
                     zmq_setsockopt(s->inbox, ZMQ_SUBSCRIBE, "", 0))) {
      zmq_close(s->inbox);
      s->inbox = NULL;
    }
  }
  nt_inbox_unbind(&s->in, s->inbox, s->dirfd);
  if (!s->inbox || nt_inbox_bind(&s->in, s->inbox, s->dirfd) != 0) {
    if (!s->inbox_noted)
      nt_source_note(m, "endpoints", false, "cannot listen in %s for publishers: %s", s->dir,
                     zmq_strerror(zmq_errno()));
    s->inbox_noted = true;
    return;
  }
  s->inbox_noted = false;
}

endpoint *nt_source_peer(nt_source *s, nt_model *m, uint32_t peer_pid) {
  for (uint32_t i = 0; i < s->neps; i++)
    if (s->eps[i].peer && s->eps[i].peer_pid == peer_pid) return &s->eps[i];
  if (s->neps >= s->cap) {
    if (!s->full_noted)
      nt_source_note(m, "endpoints", false, "more than %u endpoints; pid %u not read", s->cap,
                     (unsigned)peer_pid);
    s->full_noted = true;
    return NULL;
  }
  endpoint *e = &s->eps[s->neps++];
  memset(e, 0, sizeof *e);
  e->peer = true;
  e->peer_pid = peer_pid;
  /* In our PID namespace the kernel's pid is the one its messages carry;
   * from another (a container) they carry their own, the first one named. */
  e->pid = nt_pid_in_our_ns(peer_pid, s->pidns) ? peer_pid : 0;
  e->seen = true;
  e->since_s = nt_now_s();
  /* A long directory is cut in the name people read; the pid stays in. */
  char dir[96];
  size_t dl = strlen(s->dir);
  if (dl < sizeof dir) {
    memcpy(dir, s->dir, dl + 1);
  } else {
    memcpy(dir, "...", 3);
    memcpy(dir + 3, s->dir + dl - (sizeof dir - 4), sizeof dir - 3);
  }
  if (peer_pid)
    snprintf(e->endpoint, sizeof e->endpoint, "ipc://%s (pid %u)", dir, (unsigned)peer_pid);
  else
    snprintf(e->endpoint, sizeof e->endpoint, "ipc://%s (another PID namespace)", dir);
  return e;
}

/* Connects to the publisher whose socket file is `name`. */
static void add_local(nt_source *s, nt_model *m, const char *name, uint32_t pid, uint64_t pidns) {
  char addr[160], shown[320];
  size_t len = strlen(name); /* a parsed name: at most "<7 digits>.<20 digits>.sock" */
  if (len >= sizeof s->eps[0].name) return;
  int n = snprintf(shown, sizeof shown, "ipc://%s/%s", s->dir, name);
  if (nt_endpoint_fd_address(s->dirfd, name, addr, sizeof addr) != 0 || n < 0 ||
      (size_t)n >= sizeof shown) {
    if (!s->dir_error_noted)
      nt_source_note(m, "endpoints", false, "%s/%s: path too long for an endpoint", s->dir, name);
    return;
  }
  endpoint *e = nt_source_add_endpoint(s, m, addr, shown, pid);
  if (!e) return;
  e->pidns = pidns;
  e->listed = true;
  memcpy(e->name, name, len + 1);
}

struct scan_ctx {
  nt_source *s;
  nt_model *m;
};

/* One socket file of the listing: known (still there), or a new live
 * publisher to connect to (a stale socket of a killed process is not). */
static void found_local(void *ctx, const char *name, uint32_t pid, uint64_t pidns) {
  struct scan_ctx *c = ctx;
  nt_source *s = c->s;
  uint32_t i = 0;
  while (i < s->neps && strcmp(s->eps[i].name, name) != 0) i++;
  if (i < s->neps)
    s->eps[i].listed = true;
  else if (nt_discover_alive(pid, pidns, s->pidns))
    add_local(s, c->m, name, pid, pidns);
}

/* Lists the socket files (<pid>.<pidns>.sock, or <pid>.sock) through the
 * descriptor: connects to new live ones, drops dead ones. */
static void scan(nt_source *s, nt_model *m) {
  for (uint32_t i = 0; i < s->neps; i++) s->eps[i].seen = true;
  for (uint32_t i = 0; i < s->neps; i++) s->eps[i].listed = false;
  bool held = hold_dir(s, m);
  if (held) hold_inbox(s, m);
  struct scan_ctx c = {s, m};
  if (!held || nt_discover_list(s->dirfd, sizeof s->eps[0].name, found_local, &c) != 0) {
    if (held && !s->dir_error_noted)
      nt_source_note(m, "endpoints", false, "cannot list %s: %s", s->dir, strerror(errno));
    s->dir_error_noted = true;
    drop_gone(s, m);
    return;
  }
  s->dir_error_noted = false;
  for (uint32_t i = 0; i < s->neps; i++) s->eps[i].seen = !s->eps[i].name[0] || s->eps[i].listed;
  drop_gone(s, m);
}

static int remaining_ms(double deadline) {
  double left = (deadline - nt_now_s()) * 1000.0;
  return left <= 0 ? 0 : left >= 1e9 ? 1000000000 : (int)left;
}

int nt_source_poll(nt_source *s, nt_model *m, int timeout_ms) {
  double start = nt_now_s(), deadline = start + (timeout_ms > 0 ? timeout_ms : 0) / 1000.0;
  nt_model_note_pass(m, start); /* the viewer reads now: a late pass was a gap (model.h) */
  if (start >= s->next_scan_s) {
    scan(s, m);
    nt_source_wake_quiet(s, m);
    nt_source_poll_monitors(s, m); /* once a second: thousands of relays cost no more */
    nt_source_note_silent_connects(s, m, start);
    s->next_scan_s = start + NT_SOURCE_SCAN_PERIOD_S;
  }
  if (!s->connected) nt_source_connect_remote(s, m); /* after the directory has what it needs */
  int nitems = 0;
  if (s->in.name[0]) {
    s->item_ep[nitems] = -1;
    s->items[nitems++] = (zmq_pollitem_t){.socket = s->inbox, .events = ZMQ_POLLIN};
  }
  for (uint32_t i = 0; i < s->neps; i++) {
    if (!s->eps[i].sock || nt_source_quiet_remote(s, &s->eps[i]))
      continue; /* nt_source_wake_quiet looks at those */
    s->item_ep[nitems] = (int)i;
    s->items[nitems++] = (zmq_pollitem_t){.socket = s->eps[i].sock, .events = ZMQ_POLLIN};
  }
  if (nitems == 0) {
    int ms = remaining_ms(deadline);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    if (ms > 0) nanosleep(&ts, NULL); /* a signal ends it early: fine */
    return 0;
  }
  if (zmq_poll(s->items, nitems, remaining_ms(deadline)) <= 0) return 0;
  /* Round-robin over the ready sockets, a message each per pass, so one
   * chatty publisher cannot starve the others (ZeroMQ queues the inbox's
   * publishers fairly among themselves); bounded so the screen stays
   * responsive. */
  uint32_t peers = 0;
  for (uint32_t i = 0; i < s->neps; i++) peers += s->eps[i].peer;
  int n = 0;
  for (bool any = true; any && n < NT_SOURCE_MAX_PER_POLL;) {
    any = false;
    for (int i = 0; i < nitems && n < NT_SOURCE_MAX_PER_POLL; i++) {
      int k = s->item_ep[i];
      /* The inbox speaks for all its publishers: as many turns as they are. */
      for (uint32_t turn = 0; turn < (k < 0 && peers ? peers : 1); turn++) {
        if (!(s->items[i].revents & ZMQ_POLLIN) || n >= NT_SOURCE_MAX_PER_POLL) break;
        if (k < 0 ? nt_source_receive_inbox(s, m) : nt_source_receive(s, &s->eps[k], m)) {
          any = true;
          n++;
        } else {
          s->items[i].revents = 0;
        }
      }
    }
  }
  return n;
}

/* `nccltop relay`: one per node. It takes the node's publishers the way the
 * viewer does (its socket file in the endpoint directory, which they connect
 * to; and the <pid>[.<pidns>].sock files of publishers older than 0.2, dead
 * processes dropped: discover.h holds the rules both use) and forwards their
 * messages to any number of viewers, and to other relays, over TCP.
 *
 * Design. The forwarding is libzmq's own zmq_proxy_steerable between an
 * XSUB socket, connected to every publisher's ipc endpoint (and to upstream
 * relays, --connect), and an XPUB socket bound on --listen. XPUB_VERBOSE
 * passes every viewer's subscription up to the publishers, each of which
 * answers a new subscription with its full snapshot, hello and
 * communicators: a viewer that joins late is complete at once. ZeroMQ
 * sockets are not thread-safe, so one thread owns both and alternates:
 *   loop { rescan the directory, connect/disconnect the XSUB;
 *          zmq_proxy_steerable(xsub, xpub, NULL, control) }
 * where a timer thread sends TERMINATE on an inproc PAIR (the control
 * socket) about once a second. While the loop rescans, messages wait in the
 * sockets' queues; nothing is lost by the pause.
 *
 * Back-pressure. Every send is ZeroMQ's non-blocking XPUB: a viewer that
 * reads too slowly loses messages (ZeroMQ drops them for that viewer alone;
 * the viewer counts the sequence gaps per publisher as lost_messages), and
 * no publisher ever waits for the relay. The memory the relay may hold is
 * bounded by the high-water marks times the protocol's largest message
 * (NT_MAX_MESSAGE_BYTES, 4 MiB, enforced with ZMQ_MAXMSGSIZE): XSUB_RCVHWM
 * messages per publisher and XPUB_SNDHWM per viewer, each counted once in
 * the socket and once in ZeroMQ's I/O pipe. A usual snapshot is a few KiB,
 * so in practice a slow viewer costs XPUB_SNDHWM small messages.
 *
 * Security: TCP with ZeroMQ CURVE (curve.h). The relay's keypair is the
 * user's (`nccltop keygen`); it accepts the viewers whose public keys are in
 * its authorized-keys file, and its own. Without a key it listens only on
 * loopback addresses, unencrypted, and says so; --insecure is needed to
 * listen elsewhere without CURVE. A relay restart is seen by viewers as a
 * reconnection (ZeroMQ retries every second) followed by fresh snapshots. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "../proto/nccltop_proto.h"
#include "curve.h"
#include "discover.h"
#include "relay.h"

#define MAX_PUBLISHERS 4096
#define MAX_UPSTREAM   8
#define XSUB_RCVHWM    100 /* per publisher (or upstream relay) */
#define XPUB_SNDHWM    256 /* per viewer (or downstream relay) */
#define CONTROL_EP     "inproc://nccltop-relay-control"
#define MONITOR_EP     "inproc://nccltop-relay-monitor"
#define TICK_MS        1000
#define LOG_EVERY_S    10.0
/* After the endpoint directory was removed or replaced, a publisher binds
 * again within its check period (2 s); until then it is kept (as the
 * viewer does, source.c). */
#define REBIND_GRACE_S 5.0

typedef struct {
  char name[48];  /* the socket file's name */
  char addr[160]; /* what the XSUB connected to */
  uint32_t pid;
  uint64_t pidns;
  bool seen;
  double keep_until_s; /* kept this long while absent (the directory was re-opened) */
} publisher;

typedef struct {
  const char *listen, *dir, *auth_file, *server_key;
  const char *upstream[MAX_UPSTREAM];
  int nupstream;
  bool insecure, quiet;
} relay_options;

typedef struct {
  void *zctx, *xsub, *xpub;
  char dir[256];
  int dirfd;
  nt_inbox in; /* the XSUB's socket file in the directory: publishers connect to it */
  bool inbox_noted;
  uint64_t pidns;
  bool dir_error_noted, full_noted;
  publisher *pubs;
  uint32_t npubs;
  bool quiet;
} relay;

/* Set by the signal handler, read by the timer thread too (lock-free). */
static atomic_int quit_sig;
static atomic_bool threads_stop;

static void on_signal(int sig) {
  atomic_store(&quit_sig, sig);
}

static int set_int(void *s, int opt, int v) {
  return zmq_setsockopt(s, opt, &v, sizeof v);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccltop relay [options]   forward this node's publishers to viewers over TCP\n"
          "  --listen EP            where viewers connect (default tcp://0.0.0.0:%d with a key,\n"
          "                         tcp://127.0.0.1:%d without one)\n"
          "  --dir DIR              endpoint directory (default $NCCLTOP_DIR or /tmp/nccltop-UID)\n"
          "  --connect EP           also forward an upstream relay's publishers (repeatable, at\n"
          "                         most %d): a rack relay fed by node relays\n"
          "  --authorized-keys FILE viewers' public keys accepted (default\n"
          "                         ~/.config/nccltop/authorized_keys; our own key always is)\n"
          "  --server-key KEY|FILE  the upstream relays' public key (default our key.pub)\n"
          "  --insecure             no CURVE: plain TCP, any address (trusted networks only)\n"
          "  -q, --quiet            do not log publishers coming and going\n"
          "  -h, --help             this text\n"
          "Keys: 'nccltop keygen' writes ~/.config/nccltop/key and key.pub.\n",
          NT_RELAY_DEFAULT_PORT, NT_RELAY_DEFAULT_PORT, MAX_UPSTREAM);
}

enum { OPT_LISTEN = 256, OPT_DIR, OPT_CONNECT, OPT_AUTH, OPT_SERVER_KEY, OPT_INSECURE };

static int parse(relay_options *o, int argc, char **argv) {
  static const struct option opts[] = {
      {"listen", required_argument, NULL, OPT_LISTEN},
      {"dir", required_argument, NULL, OPT_DIR},
      {"connect", required_argument, NULL, OPT_CONNECT},
      {"authorized-keys", required_argument, NULL, OPT_AUTH},
      {"server-key", required_argument, NULL, OPT_SERVER_KEY},
      {"insecure", no_argument, NULL, OPT_INSECURE},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 0;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
    switch (ch) {
    case OPT_LISTEN: o->listen = optarg; break;
    case OPT_DIR: o->dir = optarg; break;
    case OPT_AUTH: o->auth_file = optarg; break;
    case OPT_SERVER_KEY: o->server_key = optarg; break;
    case OPT_INSECURE: o->insecure = true; break;
    case 'q': o->quiet = true; break;
    case OPT_CONNECT:
      if (o->nupstream >= MAX_UPSTREAM) {
        fprintf(stderr, "nccltop relay: at most %d --connect endpoints\n", MAX_UPSTREAM);
        return 2;
      }
      o->upstream[o->nupstream++] = optarg;
      break;
    case 'h': usage(stdout); return 1;
    case ':':
      fprintf(stderr, "nccltop relay: option '%s' needs a value; try 'nccltop relay --help'\n",
              argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "nccltop relay: unknown option '%s'; try 'nccltop relay --help'\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nccltop relay: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (o->listen && strncmp(o->listen, "tcp://", 6) != 0) {
    fprintf(stderr, "nccltop relay: --listen takes a tcp:// endpoint, e.g. tcp://0.0.0.0:%d\n",
            NT_RELAY_DEFAULT_PORT);
    return 2;
  }
  return 0;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ----- discovery: the viewer's rules (source.c) for the XSUB socket ----- */

static bool publisher_alive(const relay *r, uint32_t pid, uint64_t pidns) {
  return nt_discover_alive(pid, pidns, r->pidns);
}

static void drop(relay *r, uint32_t i, const char *why) {
  publisher *p = &r->pubs[i];
  (void)zmq_disconnect(r->xsub, p->addr);
  if (!r->quiet) fprintf(stderr, "nccltop relay: - %s/%s (%s)\n", r->dir, p->name, why);
  r->pubs[i] = r->pubs[--r->npubs];
}

/* Holds the directory open, checked; when its path names another directory
 * now, every publisher is connected again through the new one (they bind
 * again there within their check period). */
static bool hold_dir(relay *r) {
  if (r->dirfd >= 0 && nt_endpoint_dir_same(r->dir, r->dirfd)) return true;
  char err[512] = "";
  int fd = nt_endpoint_dir_open(r->dir, false, err, sizeof err);
  if (fd < 0) {
    if (!r->dir_error_noted) fprintf(stderr, "nccltop relay: %s (still watching)\n", err);
    r->dir_error_noted = true;
    return false;
  }
  if (r->dirfd >= 0) {
    for (uint32_t i = 0; i < r->npubs; i++) {
      publisher *p = &r->pubs[i];
      char addr[sizeof p->addr];
      if (nt_endpoint_fd_address(fd, p->name, addr, sizeof addr) != 0) continue;
      (void)zmq_disconnect(r->xsub, p->addr);
      if (zmq_connect(r->xsub, addr) == 0) snprintf(p->addr, sizeof p->addr, "%s", addr);
      p->keep_until_s = mono_s() + REBIND_GRACE_S;
    }
    nt_inbox_unbind(&r->in, r->xsub, r->dirfd);
    close(r->dirfd);
  }
  r->dirfd = fd;
  r->dir_error_noted = false;
  return true;
}

/* The XSUB's socket file, where the publishers (0.2 on) connect; bound again
 * when it was removed. */
static void hold_inbox(relay *r) {
  struct stat st;
  if (r->in.name[0] && fstatat(r->dirfd, r->in.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISSOCK(st.st_mode))
    return;
  nt_inbox_unbind(&r->in, r->xsub, r->dirfd);
  if (nt_inbox_bind(&r->in, r->xsub, r->dirfd) != 0) {
    if (!r->inbox_noted)
      fprintf(stderr, "nccltop relay: cannot listen in %s for publishers: %s (still trying)\n",
              r->dir, zmq_strerror(zmq_errno()));
    r->inbox_noted = true;
    return;
  }
  if (r->inbox_noted || !r->quiet)
    fprintf(stderr, "nccltop relay: publishers connect to %s/%s\n", r->dir, r->in.name);
  r->inbox_noted = false;
}

static void add(relay *r, const char *name, uint32_t pid, uint64_t pidns) {
  if (r->npubs >= MAX_PUBLISHERS) {
    if (!r->full_noted)
      fprintf(stderr, "nccltop relay: more than %d publishers; %s not forwarded\n", MAX_PUBLISHERS,
              name);
    r->full_noted = true;
    return;
  }
  publisher *p = &r->pubs[r->npubs];
  memset(p, 0, sizeof *p);
  if (strlen(name) >= sizeof p->name ||
      nt_endpoint_fd_address(r->dirfd, name, p->addr, sizeof p->addr) != 0)
    return;
  if (zmq_connect(r->xsub, p->addr) != 0) {
    fprintf(stderr, "nccltop relay: cannot connect to %s/%s: %s\n", r->dir, name,
            zmq_strerror(zmq_errno()));
    return;
  }
  snprintf(p->name, sizeof p->name, "%s", name);
  p->pid = pid;
  p->pidns = pidns;
  p->seen = true;
  r->npubs++;
  if (!r->quiet) fprintf(stderr, "nccltop relay: + %s/%s\n", r->dir, name);
}

static void found(void *ctx, const char *name, uint32_t pid, uint64_t pidns) {
  relay *r = ctx;
  uint32_t i = 0;
  while (i < r->npubs && strcmp(r->pubs[i].name, name) != 0) i++;
  if (i < r->npubs)
    r->pubs[i].seen = true;
  else if (publisher_alive(r, pid, pidns))
    add(r, name, pid, pidns);
}

/* The viewer's scan (source.c): new live publishers connected, those whose
 * file is gone (after the grace period) or whose process ended dropped.
 * When the directory cannot be listed, what is connected stays. */
static void scan(relay *r) {
  if (hold_dir(r)) {
    hold_inbox(r);
    for (uint32_t i = 0; i < r->npubs; i++) r->pubs[i].seen = false;
    if (nt_discover_list(r->dirfd, sizeof r->pubs[0].name, found, r) != 0) {
      for (uint32_t i = 0; i < r->npubs; i++) r->pubs[i].seen = true;
      if (!r->dir_error_noted)
        fprintf(stderr, "nccltop relay: cannot list %s: %s\n", r->dir, strerror(errno));
      r->dir_error_noted = true;
    }
  }
  for (uint32_t i = 0; i < r->npubs;) {
    publisher *p = &r->pubs[i];
    if (!p->seen && mono_s() >= p->keep_until_s)
      drop(r, i, "socket file gone");
    else if (!publisher_alive(r, p->pid, p->pidns))
      drop(r, i, "process ended");
    else
      i++;
  }
}

/* ----- threads: the timer and the XPUB's monitor ----- */

static void *timer_thread(void *zctx) {
  void *pair = zmq_socket(zctx, ZMQ_PAIR);
  if (!pair || set_int(pair, ZMQ_LINGER, 0) || zmq_connect(pair, CONTROL_EP) != 0) {
    fprintf(stderr, "nccltop relay: the timer cannot start: %s\n", zmq_strerror(zmq_errno()));
    if (pair) zmq_close(pair);
    atomic_store(&quit_sig, SIGTERM);
    return NULL;
  }
  while (!atomic_load(&threads_stop)) {
    for (int i = 0; i < TICK_MS / 50 && !atomic_load(&threads_stop); i++) {
      struct timespec ts = {0, 50 * 1000000L};
      nanosleep(&ts, NULL);
      if (atomic_load(&quit_sig)) break; /* end the proxy at once */
    }
    (void)zmq_send(pair, "TERMINATE", 9, ZMQ_DONTWAIT);
    if (atomic_load(&quit_sig)) {
      struct timespec ts = {0, 50 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  zmq_close(pair);
  return NULL;
}

/* Logs the handshakes that failed on the XPUB (a refused key is logged by
 * the ZAP handler, with the key). */
static void *monitor_thread(void *zctx) {
  void *mon = zmq_socket(zctx, ZMQ_PAIR);
  if (!mon || set_int(mon, ZMQ_LINGER, 0) || zmq_connect(mon, MONITOR_EP) != 0) {
    if (mon) zmq_close(mon);
    return NULL;
  }
  set_int(mon, ZMQ_RCVTIMEO, 200);
  double next_log = 0;
  unsigned long skipped = 0;
  uint16_t last_event = 0;
  uint32_t last_value = 0;
  while (!atomic_load(&threads_stop)) {
    uint8_t ev[6];
    char addr[256];
    int n = zmq_recv(mon, ev, sizeof ev, 0);
    if (n < 0) continue;
    int more = 0;
    size_t ml = sizeof more;
    int an = 0;
    if (zmq_getsockopt(mon, ZMQ_RCVMORE, &more, &ml) == 0 && more)
      an = zmq_recv(mon, addr, sizeof addr - 1, 0);
    addr[an > 0 ? (an < (int)sizeof addr ? an : (int)sizeof addr - 1) : 0] = '\0';
    if (n < 6) continue;
    uint16_t event;
    uint32_t value;
    memcpy(&event, ev, 2);
    memcpy(&value, ev + 2, 4);
    /* A refused viewer retries every half second: one line per kind and
     * ten seconds, with the count of the others. */
    double now = mono_s();
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL &&
        (value == EPIPE || value == ECONNRESET || value == ECONNABORTED))
      continue; /* a peer that went away mid-handshake: the viewer says why */
    if (event == last_event && value == last_value && now < next_log) {
      skipped++;
      continue;
    }
    char more_text[64] = "";
    if (skipped && event == last_event && value == last_value)
      snprintf(more_text, sizeof more_text, " (%lu more since the last line)", skipped);
    next_log = now + LOG_EVERY_S;
    last_event = event;
    last_value = value;
    skipped = 0;
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
      fprintf(stderr,
              "nccltop relay: a viewer's handshake on %s failed (protocol error 0x%x%s)%s\n", addr,
              value,
              value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
                  ? ": it does not have this relay's public key as --server-key"
              : value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                  ? ": one side uses CURVE, the other --insecure"
                  : "",
              more_text);
    else
      fprintf(stderr, "nccltop relay: a viewer's handshake on %s failed (%s)%s\n", addr,
              zmq_strerror((int)value), more_text);
  }
  zmq_close(mon);
  return NULL;
}

static void raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &rl);
}

/* ----- the relay ----- */

static int setup(relay *r, const relay_options *o, const nt_curve_keys *keys,
                 const char *upstream_key) {
  int64_t maxmsg = (int64_t)NT_MAX_MESSAGE_BYTES + 4096;
  r->xpub = zmq_socket(r->zctx, ZMQ_XPUB);
  r->xsub = zmq_socket(r->zctx, ZMQ_XSUB);
  if (!r->xpub || !r->xsub || set_int(r->xpub, ZMQ_LINGER, 0) ||
      set_int(r->xpub, ZMQ_SNDHWM, XPUB_SNDHWM) || set_int(r->xpub, ZMQ_XPUB_VERBOSE, 1) ||
      set_int(r->xsub, ZMQ_LINGER, 0) || set_int(r->xsub, ZMQ_RCVHWM, XSUB_RCVHWM) ||
      zmq_setsockopt(r->xsub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg)) {
    fprintf(stderr, "nccltop relay: cannot create sockets: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  /* Viewers send a subscription each and nothing larger; with libzmq 4.3.4
   * the limit applies to handshake frames too, and CURVE's INITIATE (vouch
   * and metadata) takes a few hundred bytes. */
  int64_t inmax = 4096;
  if (zmq_setsockopt(r->xpub, ZMQ_MAXMSGSIZE, &inmax, sizeof inmax) ||
      (keys && nt_curve_set_server(r->xpub, keys))) {
    fprintf(stderr, "nccltop relay: cannot set up CURVE: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  if (zmq_socket_monitor(r->xpub, MONITOR_EP,
                         ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
    fprintf(stderr, "nccltop relay: no handshake log: %s\n", zmq_strerror(zmq_errno()));
  if (zmq_bind(r->xpub, o->listen) != 0) {
    fprintf(stderr, "nccltop relay: cannot listen on %s: %s\n", o->listen,
            zmq_strerror(zmq_errno()));
    return 1;
  }
  for (int i = 0; i < o->nupstream; i++) {
    const char *ep = o->upstream[i];
    bool tcp = !strncmp(ep, "tcp://", 6);
    int rc = tcp && keys ? nt_curve_set_client(r->xsub, keys, upstream_key) : 0;
    if (rc == 0) rc = zmq_connect(r->xsub, ep);
    if (rc != 0) {
      fprintf(stderr, "nccltop relay: --connect %s: %s\n", ep, zmq_strerror(zmq_errno()));
      return 2;
    }
    if (tcp && keys && nt_curve_set_none(r->xsub) != 0) return 1;
    if (!r->quiet) fprintf(stderr, "nccltop relay: + upstream %s\n", ep);
  }
  return 0;
}

int nt_relay_main(int argc, char **argv) {
  relay_options o = {0};
  int prc = parse(&o, argc, argv);
  if (prc) return prc == 1 ? 0 : 2;

  nt_curve_keys keys;
  char err[700], auth[600] = "", upstream_key[NT_CURVE_KEY_LEN + 1] = "";
  bool have_keys = false;
  if (!o.insecure) {
    int krc = nt_curve_load(&keys, err, sizeof err);
    if (krc < 0) {
      fprintf(stderr, "nccltop relay: %s\n", err);
      return 1;
    }
    have_keys = krc == 0;
    if (have_keys && !nt_curve_available()) {
      fprintf(stderr, "nccltop relay: this libzmq has no CURVE (libsodium); --insecure to go "
                      "without it\n");
      return 1;
    }
  }
  bool listen_default = !o.listen;
  char listen[200];
  if (listen_default) {
    snprintf(listen, sizeof listen, "tcp://%s:%d",
             have_keys || o.insecure ? "0.0.0.0" : "127.0.0.1", NT_RELAY_DEFAULT_PORT);
    o.listen = listen;
  }
  if (!have_keys && !o.insecure) {
    if (!nt_endpoint_is_loopback(o.listen)) {
      fprintf(stderr,
              "nccltop relay: no key, so no CURVE: refusing to listen on %s (not a loopback "
              "address); run 'nccltop keygen', or use --insecure for plain TCP\n",
              o.listen);
      return 2;
    }
    for (int i = 0; i < o.nupstream; i++)
      if (!strncmp(o.upstream[i], "tcp://", 6) && !nt_endpoint_is_loopback(o.upstream[i])) {
        fprintf(stderr,
                "nccltop relay: no key, so no CURVE: refusing --connect %s; run 'nccltop "
                "keygen', or use --insecure\n",
                o.upstream[i]);
        return 2;
      }
    fprintf(stderr, "nccltop relay: %s; listening on loopback only, unencrypted\n", err);
  }
  if (have_keys) {
    if (o.auth_file)
      snprintf(auth, sizeof auth, "%s", o.auth_file);
    else if (nt_curve_config_path(NT_CURVE_AUTH_FILE, auth, sizeof auth) != 0)
      auth[0] = '\0';
    if (o.server_key) {
      if (nt_curve_key_arg(o.server_key, upstream_key, err, sizeof err) != 0) {
        fprintf(stderr, "nccltop relay: --server-key: %s\n", err);
        return 2;
      }
    } else {
      memcpy(upstream_key, keys.pub, sizeof upstream_key);
    }
  }

  relay r = {.dirfd = -1, .quiet = o.quiet, .pidns = nt_endpoint_pidns()};
  int n = o.dir                                       ? snprintf(r.dir, sizeof r.dir, "%s", o.dir)
          : nt_endpoint_dir(r.dir, sizeof r.dir) == 0 ? 0
                                                      : -1;
  if (n < 0 || (size_t)n >= sizeof r.dir) {
    fprintf(stderr, "nccltop relay: endpoint directory name too long\n");
    return 2;
  }
  r.pubs = calloc(MAX_PUBLISHERS, sizeof *r.pubs);
  if (!r.pubs) {
    fprintf(stderr, "nccltop relay: out of memory\n");
    return 1;
  }
  raise_fd_limit();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  int rc = 1;
  nt_zap *zap = NULL;
  void *control = NULL;
  pthread_t timer, monitor;
  bool timer_on = false, monitor_on = false;
  r.zctx = zmq_ctx_new();
  if (!r.zctx) {
    fprintf(stderr, "nccltop relay: cannot create a ZeroMQ context\n");
    goto out;
  }
  if (have_keys && !(zap = nt_zap_start(r.zctx, auth, keys.pub, err, sizeof err))) {
    fprintf(stderr, "nccltop relay: %s\n", err);
    goto out;
  }
  if ((rc = setup(&r, &o, have_keys ? &keys : NULL, upstream_key)) != 0) goto out;
  rc = 1;
  monitor_on = pthread_create(&monitor, NULL, monitor_thread, r.zctx) == 0;
  control = zmq_socket(r.zctx, ZMQ_PAIR);
  if (!control || set_int(control, ZMQ_LINGER, 0) || zmq_bind(control, CONTROL_EP) != 0 ||
      pthread_create(&timer, NULL, timer_thread, r.zctx) != 0) {
    fprintf(stderr, "nccltop relay: cannot start: %s\n", zmq_strerror(zmq_errno()));
    goto out;
  }
  timer_on = true;
  char bound[256] = "";
  size_t bl = sizeof bound;
  if (zmq_getsockopt(r.xpub, ZMQ_LAST_ENDPOINT, bound, &bl) != 0)
    snprintf(bound, sizeof bound, "%s", o.listen);
  if (have_keys)
    fprintf(stderr,
            "nccltop relay: listening on %s (CURVE; public key %s; viewers' keys from %s)\n", bound,
            keys.pub, auth[0] ? auth : "(none: only our own key)");
  else
    fprintf(stderr, "nccltop relay: listening on %s (no CURVE: plain TCP)\n", bound);
  fprintf(stderr, "nccltop relay: forwarding the publishers in %s\n", r.dir);

  while (!atomic_load(&quit_sig)) {
    scan(&r);
    /* A TERMINATE that came while we scanned would end the next proxy at
     * once: take what is waiting first. */
    char cmd[16];
    while (zmq_recv(control, cmd, sizeof cmd, ZMQ_DONTWAIT) >= 0) {
    }
    if (atomic_load(&quit_sig)) break;
    if (zmq_proxy_steerable(r.xsub, r.xpub, NULL, control) != 0 && zmq_errno() != EINTR) {
      fprintf(stderr, "nccltop relay: forwarding stopped: %s\n", zmq_strerror(zmq_errno()));
      goto out;
    }
  }
  rc = 0;
  fprintf(stderr, "nccltop relay: stopped (signal %d)\n", atomic_load(&quit_sig));
out:
  atomic_store(&threads_stop, true);
  if (timer_on) pthread_join(timer, NULL);
  if (r.xpub) (void)zmq_socket_monitor(r.xpub, NULL, 0);
  if (monitor_on) pthread_join(monitor, NULL);
  if (control) zmq_close(control);
  if (r.xsub) zmq_close(r.xsub);
  if (r.xpub) zmq_close(r.xpub);
  nt_zap_stop(zap);
  if (r.zctx) zmq_ctx_term(r.zctx);
  nt_inbox_unbind(&r.in, NULL, r.dirfd); /* the file: ZeroMQ 4.3 leaves it */
  if (r.dirfd >= 0) close(r.dirfd);
  free(r.pubs);
  return rc;
}

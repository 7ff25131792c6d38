/* `nccltop relay`: one per node. It takes the node's publishers the way the
 * viewer does (relay_local.c) and forwards their messages to any number of
 * viewers, and to other relays, over TCP.
 *
 * Design. One thread owns every ZeroMQ socket and runs the forwarding loop
 * itself (no zmq_proxy):
 *   - XSUB sockets towards the publishers: one bound in the endpoint
 *     directory (publishers from 0.2 on connect to it), one connected to
 *     older publishers' files, one per upstream relay (--connect);
 *   - an XPUB socket bound on --listen, towards viewers and downstream
 *     relays.
 * It polls them all, forwards every well-formed message (two frames, a
 * known topic) from an XSUB to the XPUB whole, reads what the viewers sent
 * (relay_subs.c: subscriptions stop here, relay loops are refused), and
 * about every TICK_S rescans the directory and keeps time. A libzmq 4.3
 * XSUB must never have one of its connections ended, by us or by itself
 * processing commands while we send on it, in the middle of a message it
 * has begun to give us (zmq_poll takes a message's first frame already):
 * it then reads the rest from another connection and aborts (`!_more`,
 * fq.cpp:112). That killed the relay when a job ended after a subscription
 * flood: zmq_proxy_steerable returned on its timer's TERMINATE with a
 * message begun (the flood kept every publisher answering, so there always
 * was one), and the scan then disconnected the job's dead publishers. So
 * every message begun is read to its end at once, subscriptions are sent
 * only after the reads of a turn, and a connection is ended only on a
 * socket read to its end in that turn.
 *
 * Back-pressure. Every send is ZeroMQ's non-blocking XPUB: a viewer that
 * reads too slowly loses messages (ZeroMQ drops them for that viewer alone;
 * the viewer counts the sequence gaps per publisher as lost_messages), and
 * no publisher ever waits for the relay. The memory the relay may hold is
 * bounded by the high-water marks times the protocol's largest message
 * (NT_MAX_MESSAGE_BYTES, 4 MiB, enforced with ZMQ_MAXMSGSIZE): 100
 * messages per publisher and XPUB_SNDHWM per viewer, each counted once in
 * the socket and once in ZeroMQ's I/O pipe; plus what viewers send, bounded
 * by the guard (relay_guard.h) and relay_subs.c. A usual snapshot is a few
 * KiB, so in practice a slow viewer costs XPUB_SNDHWM small messages.
 *
 * Security: TCP with ZeroMQ CURVE (curve.h). The relay's keypair is the
 * user's (`nccltop keygen`); it accepts the viewers whose public keys are in
 * its authorized-keys file, and its own. Without a key it listens only on
 * loopback addresses, unencrypted, and lets in only our own user's
 * processes (relay_guard.h); --insecure is needed to listen elsewhere
 * without CURVE (and then checks nobody). A relay restart is seen by
 * viewers as a reconnection (ZeroMQ retries every second) followed by fresh
 * snapshots. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "../../proto/nccltop_proto.h"
#include "../feeds/curve.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../feeds/hostlist.h"
#include "relay_conns.h"
#include "relay_internal.h"

#define XPUB_SNDHWM  256 /* per viewer (or downstream relay) */
#define XPUB_RCVHWM  100 /* what a viewer may have queued towards us */
#define MONITOR_EP   "inproc://nccltop-relay-monitor"
#define TICK_S       0.1
#define SCAN_S       1.0
#define AUTH_CHECK_S 2.0
#define READ_MAX     256 /* messages read from one socket per turn */

typedef struct {
  const char *listen, *dir, *auth_file, *server_key;
  const char *upstream[MAX_UPSTREAM];
  int nupstream;
  bool insecure, quiet;
} relay_options;

static int set_int(void *s, int opt, int v) {
  return zmq_setsockopt(s, opt, &v, sizeof v);
}

double nt_relay_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
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

/* ----- forwarding ----- */

static bool known_topic(const zmq_msg_t *m) {
  static const char *topics[] = {NT_TOPIC_SNAPSHOT, NT_TOPIC_HELLO, NT_TOPIC_COMM,
                                 NT_TOPIC_TOPOLOGY, NT_TOPIC_GRAPHS};
  size_t len = zmq_msg_size((zmq_msg_t *)m);
  for (size_t i = 0; i < sizeof topics / sizeof *topics; i++)
    if (len == strlen(topics[i]) && !memcmp(zmq_msg_data((zmq_msg_t *)m), topics[i], len))
      return true;
  return false;
}

static int send_part(void *s, zmq_msg_t *m, int flags) {
  for (int i = 0; i < 3; i++) {
    if (zmq_msg_send(m, s, flags | ZMQ_DONTWAIT) >= 0) return 0;
    if (zmq_errno() != EINTR) break;
  }
  return -1;
}

/* A message to every viewer. A lossy XPUB takes every message whole (it
 * drops it for a viewer that is behind); should the second frame ever be
 * refused, an empty frame ends the message, which viewers then reject,
 * rather than leave it open to swallow the next one. */
static void forward(relay *r, zmq_msg_t *topic, zmq_msg_t *body) {
  static bool noted;
  if (send_part(r->xpub, topic, ZMQ_SNDMORE) != 0) return;
  if (send_part(r->xpub, body, 0) == 0) return;
  zmq_msg_t end;
  zmq_msg_init(&end);
  (void)send_part(r->xpub, &end, 0);
  zmq_msg_close(&end);
  if (!noted) fprintf(stderr, "nccltop relay: cannot forward: %s\n", zmq_strerror(zmq_errno()));
  noted = true;
}

enum { FROM_LOCAL, FROM_LEGACY, FROM_UPSTREAM };

/* Reads up to READ_MAX messages from s, each to its end at once, and
 * forwards the well-formed ones. True when s was read to its end. */
static bool read_publishers(relay *r, void *s, int from, upstream *u) {
  for (int i = 0; i < READ_MAX; i++) {
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    if (zmq_msg_recv(&topic, s, ZMQ_DONTWAIT) < 0) {
      bool drained = zmq_errno() == EAGAIN;
      zmq_msg_close(&topic);
      zmq_msg_close(&body);
      return drained;
    }
    /* The rest of a message is there as soon as its first frame is. */
    int parts = 1;
    bool more = zmq_msg_more(&topic);
    if (more && zmq_msg_recv(&body, s, ZMQ_DONTWAIT) >= 0) {
      parts++;
      more = zmq_msg_more(&body);
    }
    while (more) {
      zmq_msg_t extra;
      zmq_msg_init(&extra);
      more = zmq_msg_recv(&extra, s, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&extra);
      zmq_msg_close(&extra);
      parts++;
    }
    uint32_t pid = 0;
    bool ok = parts == 2 && known_topic(&topic);
    if (ok && from == FROM_LOCAL) {
      /* Only our own user can reach the 0700 directory; a message without
       * our credentials is not a publisher's. */
      ok = nt_inbox_sender(&topic, &pid);
      if (ok) nt_relay_note_sender(r, pid);
    }
    if (ok && from == FROM_UPSTREAM && u->looped) ok = false; /* our own, come back */
    if (ok) forward(r, &topic, &body);
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
  }
  return false;
}

/* ----- start ----- */

static void raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &rl);
}

static void random_id(uint8_t id[8]) {
  if (getrandom(id, 8, GRND_NONBLOCK) == 8) return;
  uint64_t x = (uint64_t)getpid() << 32 ^ (uint64_t)(nt_relay_now() * 1e9);
  memcpy(id, &x, 8);
}

/* The listening socket: viewers' messages bounded (each sends one
 * subscription; with libzmq 4.3.4 the size limit applies to handshake
 * frames too, and CURVE's INITIATE takes a few hundred bytes), every
 * handshake through the guard's ZAP handler unless --insecure. */
static int setup_xpub(relay *r, const relay_options *o, const nt_curve_keys *keys) {
  int64_t inmax = 4096;
  r->xpub = zmq_socket(r->zctx, ZMQ_XPUB);
  if (!r->xpub || set_int(r->xpub, ZMQ_LINGER, 0) || set_int(r->xpub, ZMQ_SNDHWM, XPUB_SNDHWM) ||
      set_int(r->xpub, ZMQ_RCVHWM, XPUB_RCVHWM) || set_int(r->xpub, ZMQ_XPUB_VERBOSE, 1) ||
      zmq_setsockopt(r->xpub, ZMQ_MAXMSGSIZE, &inmax, sizeof inmax)) {
    fprintf(stderr, "nccltop relay: cannot create sockets: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  if ((keys && nt_curve_set_server(r->xpub, keys)) ||
      (!keys && !o->insecure && nt_zap_require(r->xpub))) {
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
  return 0;
}

static int setup_upstreams(relay *r, const relay_options *o, const nt_curve_keys *keys,
                           const char *upstream_key) {
  for (int k = 0; k < o->nupstream; k++) {
    const char *ep = o->upstream[k];
    upstream *u = &r->ups[r->nups];
    u->ep = ep;
    u->sock = zmq_socket(r->zctx, ZMQ_XSUB);
    bool tcp = !strncmp(ep, "tcp://", 6);
    int rc = !u->sock || nt_relay_set_xsub(u->sock) ? -1 : 0;
    if (rc == 0 && tcp && keys) rc = nt_curve_set_client(u->sock, keys, upstream_key);
    if (rc == 0) {
      r->nups++;
      nt_relay_upstream_marks(r, r->nups - 1);
      rc = zmq_connect(u->sock, ep);
    }
    if (rc != 0) {
      fprintf(stderr, "nccltop relay: --connect %s: %s\n", ep, zmq_strerror(zmq_errno()));
      return 2;
    }
    if (!r->quiet) fprintf(stderr, "nccltop relay: + upstream %s\n", ep);
  }
  return 0;
}

/* The authorized keys, read again when the file changed (held: what was
 * read last, its keys given to the guard); a file that has become unusable
 * keeps the keys we had, said once. */
static void reload_keys(relay *r, const char *auth, nt_authkeys *held, bool *noted) {
  if (!nt_authkeys_stale(held, auth)) return;
  nt_authkeys fresh = {0};
  char err[700];
  if (nt_authkeys_load(&fresh, auth, err, sizeof err) != 0) {
    if (!*noted)
      fprintf(stderr, "nccltop relay: --authorized-keys: %s; keeping the keys read before\n", err);
    *noted = true;
    return;
  }
  *noted = false;
  *held = fresh;
  held->keys = NULL;
  held->n = 0;
  nt_guard_set_keys(r->guard, &fresh);
}

/* ----- the loop ----- */

static int run(relay *r, const char *auth, nt_authkeys held) {
  bool keys_noted = false;
  double next_scan = 0, next_auth = nt_relay_now() + AUTH_CHECK_S;
  while (!nt_quit_requested()) {
    zmq_pollitem_t it[3 + MAX_UPSTREAM];
    int n = 0, up_at[MAX_UPSTREAM];
    it[n++] = (zmq_pollitem_t){.socket = r->xpub, .events = ZMQ_POLLIN};
    it[n++] = (zmq_pollitem_t){.socket = r->local, .events = ZMQ_POLLIN};
    if (r->legacy) it[n++] = (zmq_pollitem_t){.socket = r->legacy, .events = ZMQ_POLLIN};
    for (int k = 0; k < r->nups; k++) {
      up_at[k] = r->ups[k].sock ? n : -1;
      if (r->ups[k].sock)
        it[n++] = (zmq_pollitem_t){.socket = r->ups[k].sock, .events = ZMQ_POLLIN};
    }
    double now = nt_relay_now();
    int wait_ms = next_scan > now ? (int)((next_scan - now) * 1000) + 1 : 0;
    if (wait_ms > TICK_S * 1000) wait_ms = (int)(TICK_S * 1000);
    int rc = zmq_poll(it, n, wait_ms);
    if (rc < 0 && zmq_errno() != EINTR) {
      fprintf(stderr, "nccltop relay: forwarding stopped: %s\n", zmq_strerror(zmq_errno()));
      return 1;
    }
    /* Reads first: every message begun is read whole before anything else
     * touches these sockets (see the top). */
    r->legacy_drained = true;
    if (rc > 0) {
      if (it[1].revents & ZMQ_POLLIN) (void)read_publishers(r, r->local, FROM_LOCAL, NULL);
      if (r->legacy && (it[2].revents & ZMQ_POLLIN))
        r->legacy_drained = read_publishers(r, r->legacy, FROM_LEGACY, NULL);
      for (int k = 0; k < r->nups; k++)
        if (up_at[k] >= 0 && (it[up_at[k]].revents & ZMQ_POLLIN))
          (void)read_publishers(r, r->ups[k].sock, FROM_UPSTREAM, &r->ups[k]);
      if (it[0].revents & ZMQ_POLLIN) nt_relay_drain_viewers(r);
    }
    nt_relay_tick_subs(r); /* may refuse an upstream: it[] is rebuilt next turn */
    now = nt_relay_now();
    if (now >= next_scan) {
      nt_relay_scan(r, r->legacy_drained);
      next_scan = now + SCAN_S;
    }
    unsigned wanted = auth ? nt_guard_keys_wanted(r->guard) : 0;
    if (auth && (now >= next_auth || wanted)) {
      reload_keys(r, auth, &held, &keys_noted);
      if (wanted) nt_guard_keys_checked(r->guard, wanted);
      next_auth = now + AUTH_CHECK_S;
    }
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
    fprintf(stderr,
            "nccltop relay: %s; listening on loopback only, unencrypted, for our own user's "
            "processes only\n",
            err);
  }
  nt_authkeys authkeys = {0};
  if (have_keys) {
    if (o.auth_file)
      snprintf(auth, sizeof auth, "%s", o.auth_file);
    else if (nt_curve_config_path(NT_CURVE_AUTH_FILE, auth, sizeof auth) != 0)
      auth[0] = '\0';
    /* Read now, bounded: a FIFO or a device is refused here, at once. */
    if (auth[0] && nt_authkeys_load(&authkeys, auth, err, sizeof err) != 0) {
      fprintf(stderr, "nccltop relay: --authorized-keys: %s\n", err);
      return 2;
    }
    if (o.server_key) {
      if (nt_curve_key_arg(o.server_key, upstream_key, err, sizeof err) != 0) {
        fprintf(stderr, "nccltop relay: --server-key: %s\n", err);
        nt_authkeys_free(&authkeys);
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
    nt_authkeys_free(&authkeys);
    return 2;
  }
  r.pubs = calloc(MAX_PUBLISHERS, sizeof *r.pubs);
  r.senders = calloc(MAX_PUBLISHERS, sizeof *r.senders);
  if (!r.pubs || !r.senders) {
    fprintf(stderr, "nccltop relay: out of memory\n");
    free(r.pubs);
    free(r.senders);
    nt_authkeys_free(&authkeys);
    return 1;
  }
  random_id(r.id);
  raise_fd_limit();
  if (nt_signals_install(false, NULL) != 0) perror("nccltop relay: signal handlers");

  int rc = 1;
  void *zap = NULL;
  r.zctx = zmq_ctx_new();
  if (!r.zctx) {
    fprintf(stderr, "nccltop relay: cannot create a ZeroMQ context\n");
    goto out;
  }
  /* The ZAP handler exists before the first handshake can ask for it:
   * libzmq 4.3 lets a handshake through when nobody answers. */
  if (!o.insecure && !(zap = nt_zap_bind(r.zctx, err, sizeof err))) {
    fprintf(stderr, "nccltop relay: %s\n", err);
    goto out;
  }
  if ((rc = setup_xpub(&r, &o, have_keys ? &keys : NULL)) != 0) goto out;
  rc = 1;
  char bound[256] = "";
  size_t bl = sizeof bound;
  if (zmq_getsockopt(r.xpub, ZMQ_LAST_ENDPOINT, bound, &bl) != 0)
    snprintf(bound, sizeof bound, "%s", o.listen);
  nt_guard_config gc = {.zctx = r.zctx,
                        .zap = zap,
                        .monitor_ep = MONITOR_EP,
                        .port = nt_endpoint_port(bound),
                        .same_user = !have_keys && !o.insecure,
                        .own_pub = have_keys ? keys.pub : NULL,
                        .auth_file = auth};
  nt_authkeys held = authkeys; /* which file the keys came from, for reload_keys */
  held.keys = NULL;
  held.n = 0;
  if (!(r.guard = nt_guard_start(&gc, &authkeys, err, sizeof err))) {
    fprintf(stderr, "nccltop relay: %s\n", err);
    goto out;
  }
  zap = NULL; /* the guard's now */
  r.local = zmq_socket(r.zctx, ZMQ_XSUB);
  if (!r.local || nt_relay_set_xsub(r.local)) {
    fprintf(stderr, "nccltop relay: cannot create sockets: %s\n", zmq_strerror(zmq_errno()));
    goto out;
  }
  if ((rc = setup_upstreams(&r, &o, have_keys ? &keys : NULL, upstream_key)) != 0) goto out;
  if (have_keys)
    fprintf(stderr,
            "nccltop relay: listening on %s (CURVE; public key %s; viewers' keys from %s)\n", bound,
            keys.pub, auth[0] ? auth : "(none: only our own key)");
  else
    fprintf(stderr, "nccltop relay: listening on %s (no CURVE: plain TCP)\n", bound);
  fprintf(stderr, "nccltop relay: forwarding the publishers in %s\n", r.dir);
  if ((rc = run(&r, have_keys && auth[0] ? auth : NULL, held)) == 0)
    fprintf(stderr, "nccltop relay: stopped (signal %d)\n", nt_quit_requested());
out:
  nt_guard_stop(r.guard);
  if (zap) zmq_close(zap);
  if (r.xpub) (void)zmq_socket_monitor(r.xpub, NULL, 0);
  for (int k = 0; k < r.nups; k++)
    if (r.ups[k].sock) zmq_close(r.ups[k].sock);
  if (r.legacy) zmq_close(r.legacy);
  if (r.local) zmq_close(r.local);
  if (r.xpub) zmq_close(r.xpub);
  if (r.zctx) zmq_ctx_term(r.zctx);
  nt_inbox_unbind(&r.in, NULL, r.dirfd); /* the file: ZeroMQ 4.3 leaves it */
  if (r.dirfd >= 0) close(r.dirfd);
  nt_authkeys_free(&authkeys);
  free(r.pubs);
  free(r.senders);
  return rc;
}

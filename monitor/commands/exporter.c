/* `nccltop exporter`: Prometheus metrics of the NCCL jobs the monitor would
 * show, over HTTP (libmicrohttpd) on --listen ADDR:PORT, path /metrics,
 * and/or as a node_exporter textfile (--textfile DIR).
 *
 * Threads. The main thread owns the source and the model: it polls the
 * source (nt_source_poll) and, once per interval (-d, default 1s), ticks
 * the model, builds a frame of it (nt_frame_build, which also runs the
 * exporter's own diagnosis), renders the whole exposition of that frame
 * into a new buffer (nt_exporter_render) and publishes it: the
 * pointer swap is the only thing done under `lock`. libmicrohttpd's
 * threads (a small pool) never touch the model: a request takes a reference
 * on the latest buffer under the same lock (a counter increment), and the
 * response sends it without copying; the last reference frees it. So a
 * scrape never holds up a model update by more than a pointer swap, any
 * number of scrapes run at once, and all of them see a complete exposition.
 *
 * HTTP: GET and HEAD of /metrics (a query string is ignored) answer 200
 * with text/plain; version=0.0.4; another path is a 404; another method a
 * 405 with Allow: GET, HEAD. Connections are bounded in number and in time
 * by the guard (exporter_guard.c): a request must be in within
 * HTTP_HEADER_S of its start and answered within HTTP_EXCHANGE_S, however
 * it trickles, and a newcomer displaces the oldest unfinished connection of
 * an address (or of all) that holds its share.
 *
 * Textfile: written to DIR/.nccltop.prom.XXXXXX (node_exporter reads only
 * *.prom) and renamed to DIR/nccltop.prom after each render, so the
 * collector never reads half a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../outputs/exporter.h"
#include "cli.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../core/model.h"
#include "../options.h"
#include "../feeds/source.h"
#include "../feeds/drive.h"
#include "exporter_guard.h"

#define HTTP_THREADS         4
#define HTTP_MAX_CONNECTIONS 1024
#define HTTP_PER_ADDRESS     32
#define HTTP_HEADER_S        5 /* the request line and headers, from its start */
/* The whole request, from its start to the response's last byte: a scrape
 * slower than Prometheus' default scrape_timeout (10s) is wasted anyway. */
#define HTTP_EXCHANGE_S 10
#define HTTP_IDLE_S     10 /* the daemon's own: a silence (the guard's are shorter) */
#define CONTENT_TYPE    "text/plain; version=0.0.4; charset=utf-8"

/* One rendered exposition, shared by the responses that send it. */
typedef struct {
  atomic_int refs;
  size_t len;
  char text[];
} expo;

static void expo_unref(void *p) {
  expo *e = p;
  if (e && atomic_fetch_sub(&e->refs, 1) == 1) free(e);
}

typedef struct {
  pthread_mutex_t lock;
  expo *latest; /* NULL before the first render */
} shelf;

static expo *shelf_take(shelf *s) {
  pthread_mutex_lock(&s->lock);
  expo *e = s->latest;
  if (e) atomic_fetch_add(&e->refs, 1);
  pthread_mutex_unlock(&s->lock);
  return e;
}

static void shelf_put(shelf *s, expo *e) {
  pthread_mutex_lock(&s->lock);
  expo *old = s->latest;
  s->latest = e;
  pthread_mutex_unlock(&s->lock);
  expo_unref(old);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *body,
                              const char *allow) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
  if (!r) return MHD_NO;
  enum MHD_Result rc =
      MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  if (rc == MHD_YES && allow) rc = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
  if (rc == MHD_YES) rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req) {
  (void)version;
  (void)upload;
  shelf *s = cls;
  if (!*req) { /* first call: headers only; answer once the body (if any) is in */
    *req = (void *)1;
    nt_http_guard_request_in(c);
    return MHD_YES;
  }
  if (*upload_size) { /* a body we do not want: drop it */
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(url, "/metrics") != 0) return answer(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL);
  bool head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
  if (!head && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
    return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", "GET, HEAD");
  expo *e = shelf_take(s);
  if (!e) return answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no metrics yet\n", NULL);
  struct MHD_Response *r =
      MHD_create_response_from_buffer_with_free_callback_cls(e->len, e->text, expo_unref, e);
  if (!r) {
    expo_unref(e);
    return MHD_NO;
  }
  enum MHD_Result rc = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
  if (rc == MHD_YES) rc = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
}

/* ---- options ---- */

typedef struct {
  nt_options view;      /* --dir, --connect, -d, --stall-ms, --max-memory */
  const char *listen;   /* ADDR:PORT, NULL: the default (or none with --textfile) */
  const char *textfile; /* DIR */
  bool per_channel, inspector;
  int iterations; /* -n: renders, then exit (tests); 0 forever */
} ex_options;

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccltop exporter [options]   Prometheus metrics of this node's NCCL jobs\n"
          "\n"
          "  --listen ADDR:PORT  serve http://ADDR:PORT/metrics (default %s;\n"
          "                      0.0.0.0:PORT for every interface, [::1]:PORT for IPv6)\n"
          "  --textfile DIR      also write DIR/nccltop.prom (atomically) for node_exporter's\n"
          "                      textfile collector; alone, no HTTP server unless --listen\n"
          "  --per-channel       channel families per channel and peer (default: per rank\n"
          "                      and direction, to bound the number of series)\n"
          "  --inspector         also the NCCL Inspector's nccl_* families (its names and\n"
          "                      units, for its Grafana dashboards)\n"
          "  -d, --delay TIME    render interval, 50ms..60s (default 1s)\n"
          "  -n N                render N times, then exit\n"
          "  --stall-ms MS, --dir DIR, --connect EP, --hosts LIST, --hostfile FILE,\n"
          "  --max-memory MIB    as the monitor's\n"
          "  -h, --help          this text\n",
          NT_EXPORTER_DEFAULT_LISTEN);
}

enum {
  X_LISTEN = 256,
  X_TEXTFILE,
  X_PER_CHANNEL,
  X_INSPECTOR,
  X_STALL,
  X_DIR,
  X_CONNECT,
  X_MEM,
  X_HOSTS,
  X_HOSTFILE
};

static int parse_args(ex_options *o, int argc, char **argv) {
  static const struct option longs[] = {
      {"listen", required_argument, NULL, X_LISTEN},
      {"textfile", required_argument, NULL, X_TEXTFILE},
      {"per-channel", no_argument, NULL, X_PER_CHANNEL},
      {"inspector", no_argument, NULL, X_INSPECTOR},
      {"delay", required_argument, NULL, 'd'},
      {"stall-ms", required_argument, NULL, X_STALL},
      {"dir", required_argument, NULL, X_DIR},
      {"connect", required_argument, NULL, X_CONNECT},
      {"hosts", required_argument, NULL, X_HOSTS},
      {"hostfile", required_argument, NULL, X_HOSTFILE},
      {"max-memory", required_argument, NULL, X_MEM},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 0;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":d:n:h", longs, NULL)) != -1) {
    switch (ch) {
    case X_LISTEN: o->listen = optarg; break;
    case X_TEXTFILE: o->textfile = optarg; break;
    case X_PER_CHANNEL: o->per_channel = true; break;
    case X_INSPECTOR: o->inspector = true; break;
    case 'h': usage(stdout); return 1;
    case 'n': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || end == optarg || v < 1 || v > 1000000000) {
        fprintf(stderr, "nccltop exporter: -n must be a whole number from 1, not '%s'\n", optarg);
        return 2;
      }
      o->iterations = (int)v;
      break;
    }
    case 'd':
    case X_STALL:
    case X_DIR:
    case X_CONNECT:
    case X_HOSTS:
    case X_HOSTFILE:
    case X_MEM: {
      /* The viewer's own options: its ranges and messages. */
      const char *name = ch == 'd'          ? "delay"
                         : ch == X_STALL    ? "stall-ms"
                         : ch == X_DIR      ? "dir"
                         : ch == X_MEM      ? "max-memory"
                         : ch == X_HOSTS    ? "hosts"
                         : ch == X_HOSTFILE ? "hostfile"
                                            : "connect";
      if (nt_options_set(&o->view, "nccltop exporter", name, optarg) != 0) return 2;
      break;
    }
    case ':':
      fprintf(stderr, "nccltop exporter: option '%s' needs a value; try 'nccltop exporter -h'\n",
              argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "nccltop exporter: unknown option '%s'; try 'nccltop exporter -h'\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nccltop exporter: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  return 0;
}

/* "ADDR:PORT", "[v6]:PORT" or ":PORT" (every interface) into sa. */
static int parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len) {
  char host[64];
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= sizeof host) return -1;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || end == colon + 1 || port < 0 || port > 65535) return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  memset(sa, 0, sizeof *sa);
  size_t hl = strlen(host);
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = '\0';
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)sa;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) return -1;
    *len = sizeof *a6;
    return 0;
  }
  struct sockaddr_in *a4 = (struct sockaddr_in *)sa;
  a4->sin_family = AF_INET;
  a4->sin_port = htons((uint16_t)port);
  if (!host[0])
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
  else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
    return -1;
  *len = sizeof *a4;
  return 0;
}

/* ---- the loop ---- */

static int write_textfile(const char *dir, const expo *e) {
  char tmp[4096], dst[4096];
  if (snprintf(tmp, sizeof tmp, "%s/.nccltop.prom.XXXXXX", dir) >= (int)sizeof tmp ||
      snprintf(dst, sizeof dst, "%s/nccltop.prom", dir) >= (int)sizeof dst)
    return -1;
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < e->len) {
    ssize_t w = write(fd, e->text + off, e->len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += (size_t)w;
  }
  /* node_exporter runs as another user: the file is world-readable. */
  bool ok = off == e->len && fchmod(fd, 0644) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, dst) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static expo *render(const nt_model *m, nt_diag *d, nt_frame *fr, nt_exporter_opts *xo, double now) {
  double t0 = nt_now_s();
  nt_frame_opts fo = nt_exporter_frame_opts(xo);
  if (nt_frame_build(fr, m, d, &fo, now) != 0) return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int rc = nt_exporter_render(f, fr, xo);
  rc = fclose(f) != 0 ? -1 : rc;
  expo *e = rc == 0 ? malloc(sizeof *e + len + 1) : NULL;
  if (e) {
    atomic_init(&e->refs, 1);
    e->len = len;
    memcpy(e->text, buf, len + 1);
  }
  free(buf);
  xo->renders++;
  xo->render_seconds = nt_now_s() - t0;
  return e;
}

/* Every publisher or --hosts entry costs the source a few descriptors and
 * every HTTP connection one: take what the hard limit allows (at most
 * 65536), as the monitor does. A failure keeps the old limit. */
static void raise_fd_limit(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  rlim_t want = r.rlim_max == RLIM_INFINITY || r.rlim_max > 65536 ? 65536 : r.rlim_max;
  if (want <= r.rlim_cur) return;
  r.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0)
    fprintf(stderr, "nccltop exporter: cannot raise the open-file limit: %s\n", strerror(errno));
}

/* The connections the HTTP side may hold: HTTP_MAX_CONNECTIONS, and no
 * more than an eighth of the descriptors (the daemon's own ceiling is half
 * as much again, for connections being closed), so that the source keeps
 * the rest. */
static unsigned http_connection_budget(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 64;
  rlim_t n = (r.rlim_cur == RLIM_INFINITY || r.rlim_cur > 65536 ? 65536 : r.rlim_cur) / 8;
  return n > HTTP_MAX_CONNECTIONS ? HTTP_MAX_CONNECTIONS : n < 16 ? 16 : (unsigned)n;
}

/* The listening socket, bound here rather than by libmicrohttpd: a busy
 * port is then our one error line (errno kept), where the library also
 * logged its own, naming port 0 for an address given as a sockaddr. Set
 * as the library sets its own: SO_REUSEADDR, IPv6 only on an IPv6
 * address. -1 with errno on failure. */
static int listen_socket(const struct sockaddr_storage *sa) {
  bool v6 = sa->ss_family == AF_INET6;
  socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
      bind(fd, (const struct sockaddr *)sa, len) != 0 || listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static struct MHD_Daemon *start_http(const struct sockaddr_storage *sa, shelf *sh,
                                     nt_http_guard **guard, unsigned *port) {
  int fd = listen_socket(sa);
  if (fd < 0) return NULL;
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  *port = 0;
  if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
  unsigned most = http_connection_budget();
  nt_http_limits lim = {.max_connections = most,
                        .max_per_address =
                            most / 4 < HTTP_PER_ADDRESS ? most / 4 : HTTP_PER_ADDRESS,
                        .header_s = HTTP_HEADER_S,
                        .exchange_s = HTTP_EXCHANGE_S};
  *guard = nt_http_guard_new(&lim);
  if (!*guard) {
    close(fd);
    return NULL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                   (sa->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  /* The daemon's own limits are a backstop above the guard's: it refuses
   * a newcomer outright, where the guard lets it displace someone. */
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, sh, MHD_OPTION_EXTERNAL_LOGGER, nt_http_guard_log, *guard,
      MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS,
      MHD_OPTION_CONNECTION_LIMIT, most + most / 2, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      4 * lim.max_per_address, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
      MHD_OPTION_NOTIFY_CONNECTION, nt_http_guard_on_connection, *guard,
      MHD_OPTION_NOTIFY_COMPLETED, nt_http_guard_on_completed, *guard, MHD_OPTION_END);
  if (!d) { /* the socket stays open: the exporter exits at once */
    int e = errno;
    nt_http_guard_free(*guard);
    *guard = NULL;
    errno = e;
  }
  return d;
}

/* Each tick: the exposition rendered once, written to the textfile and put
 * on the shelf the HTTP threads serve from. */
typedef struct {
  const nt_model *m;
  nt_diag *diag;   /* the exposition's diagnosis of m */
  nt_frame *frame; /* what one exposition shows: built from m each tick */
  nt_exporter_opts xo;
  const char *textfile;
  shelf *sh;
  bool said; /* the textfile's write error, said once: it keeps trying */
} tick_ctx;

static int exposition_tick(void *ctx, double now) {
  tick_ctx *t = ctx;
  expo *e = render(t->m, t->diag, t->frame, &t->xo, now);
  if (!e) return 0;
  if (t->textfile && write_textfile(t->textfile, e) != 0 && !t->said) {
    fprintf(stderr, "nccltop exporter: cannot write %s/nccltop.prom: %s\n", t->textfile,
            strerror(errno));
    t->said = true;
  }
  shelf_put(t->sh, e);
  return 0;
}

int nt_exporter_main(int argc, char **argv) {
  ex_options o;
  memset(&o, 0, sizeof o);
  nt_options_defaults(&o.view);
  o.view.delay_ms = 1000;
  int prc = parse_args(&o, argc, argv);
  if (prc) return prc == 1 ? 0 : 2;
  const char *listen = o.listen ? o.listen : o.textfile ? NULL : NT_EXPORTER_DEFAULT_LISTEN;
  struct sockaddr_storage sa;
  socklen_t salen = 0;
  if (listen && parse_listen(listen, &sa, &salen) != 0) {
    fprintf(stderr, "nccltop exporter: --listen wants ADDR:PORT (127.0.0.1:%d), not '%s'\n",
            NT_EXPORTER_DEFAULT_PORT, listen);
    return 2;
  }
  struct stat st;
  if (o.textfile && (stat(o.textfile, &st) != 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "nccltop exporter: --textfile %s is not a directory\n", o.textfile);
    return 2;
  }
  char err[256];
  if (nt_source_check(&o.view, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop exporter: %s\n", err);
    return 2;
  }
  if (nt_signals_install(false, NULL) != 0) perror("nccltop exporter: signal handlers");

  raise_fd_limit();
  shelf sh = {.latest = NULL};
  if (pthread_mutex_init(&sh.lock, NULL) != 0) return 1;
  struct MHD_Daemon *d = NULL;
  nt_http_guard *guard = NULL;
  if (listen) {
    unsigned port = 0;
    d = start_http(&sa, &sh, &guard, &port);
    if (!d) {
      fprintf(stderr, "nccltop exporter: cannot listen on %s: %s\n", listen, strerror(errno));
      pthread_mutex_destroy(&sh.lock);
      return 1;
    }
    char addr[64];
    snprintf(addr, sizeof addr, "%.*s", (int)(strrchr(listen, ':') - listen), listen);
    printf("nccltop exporter: http://%s:%u/metrics\n", addr[0] ? addr : "0.0.0.0", port);
  }
  if (o.textfile) printf("nccltop exporter: writing %s/nccltop.prom\n", o.textfile);
  fflush(stdout);

  int rc = 1;
  nt_model *m = nt_model_new();
  nt_diag *diag = nt_diag_new();
  nt_frame *frame = nt_frame_new();
  if (m && o.view.max_memory_mib) nt_model_set_budget(m, (size_t)o.view.max_memory_mib << 20);
  nt_source *src = m && diag && frame ? nt_source_open(&o.view, err, sizeof err) : NULL;
  if (!src) {
    fprintf(stderr, "nccltop exporter: %s\n", m && diag && frame ? err : "out of memory");
  } else {
    tick_ctx t = {
        .m = m,
        .diag = diag,
        .frame = frame,
        .xo = {.stall_ms = o.view.stall_ms, .per_channel = o.per_channel, .inspector = o.inspector},
        .textfile = o.textfile,
        .sh = &sh};
    nt_drive dr = {.delay_s = o.view.delay_ms / 1000.0,
                   .tick_at_once = true,
                   .iterations = o.iterations,
                   .on_tick = exposition_tick,
                   .ctx = &t};
    nt_feed *feed = nt_feed_live_new(src, m);
    if (feed)
      rc = nt_drive_run(feed, &dr);
    else
      fprintf(stderr, "nccltop exporter: out of memory\n");
    nt_feed_free(feed);
  }
  if (d) MHD_stop_daemon(d); /* waits for its threads: no response is left */
  nt_http_guard_free(guard); /* after the daemon: it told the guard of every close */
  shelf_put(&sh, NULL);
  pthread_mutex_destroy(&sh.lock);
  if (src) nt_source_close(src);
  nt_frame_free(frame);
  nt_diag_free(diag);
  nt_model_free(m);
  return rc;
}

/* The plugin must never hurt the job, whatever reaches it from outside:
 *  - a hostile ZeroMQ peer, on the job's ipc socket or at NCCLTOP_CONNECT,
 *    that announces a huge frame or sends 400,000 distinct subscriptions:
 *    the job's peak memory stays bounded, its events keep flowing and a
 *    viewer connected at the same time keeps receiving snapshots;
 *  - NCCL_TOPO_DUMP_FILE naming a FIFO: refused with one log line, and
 *    finalize returns at once;
 *  - a publisher really stuck in a system call (a test-only build whose
 *    topology open blocks, as on a stalled network mount): finalize returns
 *    within its bound, and init + finalize work again afterwards;
 *  - a topology file that changes is read and sent again, one that does not
 *    change is not read again;
 *  - NCCLTOP_DIR with a newline and ESC: nothing raw reaches NCCL's log.
 *
 * The job is a forked child that loads the real plugin (dlopen) and produces
 * events; the hostile peers are raw sockets speaking just enough ZMTP 3.0,
 * so the test controls every byte. Everything stays on 127.0.0.1 and in
 * temporary directories, and every wait is bounded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "testlib.h"
#include "plugin_harness.h"

#define ATTACK_SUBS 400000
/* Peak RSS (VmHWM) the job may gain while attacked (without the bounds,
 * 8 s of this attack took it past 12 GiB). ASan keeps freed memory in a
 * quarantine, kept small here, and costs more per thread: every reopen of
 * the socket makes ZeroMQ's threads anew. */
#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif
#ifdef HOSTILE_ASAN
#define HWM_BOUND_KB (96 * 1024)
__attribute__((visibility("default"), used)) const char *__asan_default_options(void) {
  return "quarantine_size_mb=4";
}
#elif defined(__SANITIZE_THREAD__)
#define HWM_BOUND_KB (128 * 1024) /* TSan's per-thread state */
#else
#define HWM_BOUND_KB (16 * 1024)
#endif

static char plugin[PATH_MAX + 64], stuck_plugin[PATH_MAX + 64];
/* The jobs here load the plugin themselves (with a logger, and a test-only
 * build for one case); the harness's loader is not used. */
__attribute__((unused)) static const void *const harness_unused[] = {ph_setup_dir, ph_load, ph_init,
                                                                     ph_simple};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- the job: a child process with the real plugin ---------------------- */

/* What the plugin logs through the logger init gets, all levels. */
static char logged[32768];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static void capture_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                        ...) {
  (void)level;
  (void)flags;
  (void)file;
  (void)line;
  pthread_mutex_lock(&log_mu);
  size_t n = strlen(logged);
  if (n + 2 < sizeof logged) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(logged + n, sizeof logged - n - 1, fmt, ap);
    va_end(ap);
    strcat(logged, "\n");
  }
  pthread_mutex_unlock(&log_mu);
}

static int count_in_log(const char *needle) {
  int n = 0;
  pthread_mutex_lock(&log_mu);
  for (const char *p = logged; (p = strstr(p, needle)); p++) n++;
  pthread_mutex_unlock(&log_mu);
  return n;
}

static void *init_comm(const nt_profiler_v5 *v5, uint64_t hash, int *mask) {
  void *ctx = NULL;
  if (v5->init(&ctx, hash, mask, "hostile-comm", 1, 2, 0, capture_log) != 0) return NULL;
  return ctx;
}

static void events(const nt_profiler_v5 *v5, void *ctx, int n) {
  for (int i = 0; i < n; i++) {
    void *op = NULL, *st = NULL;
    nt_descr_v5 d = ph_op(i % 4, 1, i & 1, NULL);
    v5->startEvent(ctx, &op, &d);
    d = ph_step(op, i % 4);
    v5->startEvent(ctx, &st, &d);
    v5->recordEventState(st, NT_ST_STEP_RECV_WAIT, NULL);
    v5->stopEvent(st);
    v5->stopEvent(op);
  }
}

static volatile sig_atomic_t job_stop;
static void on_term(int sig) {
  (void)sig;
  job_stop = 1;
}

typedef struct {
  pid_t pid;
  int result_fd; /* the job writes "finalize_ms <x>" and its log here at the end */
  char dir[64];
  char ep[160];
} job_t;

/* Loads the plugin, produces events until SIGTERM (or 60 s), finalizes and
 * reports how long finalize took and what was logged. */
static void job_main(int out, const char *connect, const char *topo) {
  setenv("NCCLTOP_INTERVAL_MS", "50", 1);
  if (connect) setenv("NCCLTOP_CONNECT", connect, 1);
  if (topo) setenv("NCCL_TOPO_DUMP_FILE", topo, 1);
  signal(SIGTERM, on_term);
  void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  int mask = 0;
  void *ctx = v5 ? init_comm(v5, 7, &mask) : NULL;
  if (!ctx) _exit(2);
  double end = now_s() + 60;
  while (!job_stop && now_s() < end) {
    events(v5, ctx, 200);
    sleep_s(0.001);
  }
  double t0 = now_s();
  v5->finalize(ctx);
  double ms = (now_s() - t0) * 1e3;
  dprintf(out, "finalize_ms %.1f\n%s", ms, logged);
  _exit(0);
}

static int job_start(job_t *j, const char *connect, const char *topo_name) {
  memset(j, 0, sizeof *j);
  snprintf(j->dir, sizeof j->dir, "/tmp/nccltop-hostile-XXXXXX");
  if (!mkdtemp(j->dir)) return -1;
  char topo[128];
  if (topo_name) snprintf(topo, sizeof topo, "%s/%s", j->dir, topo_name);
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  j->pid = fork();
  if (j->pid < 0) return -1;
  if (j->pid == 0) {
    close(fds[0]);
    setenv("NCCLTOP_DIR", j->dir, 1);
    job_main(fds[1], connect, topo_name ? topo : NULL);
  }
  close(fds[1]);
  j->result_fd = fds[0];
  if (nt_endpoint_for_pid(j->dir, (uint32_t)j->pid, j->ep, sizeof j->ep) != 0) return -1;
  const char *path = j->ep + strlen("ipc://");
  for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) sleep_s(0.01);
  return access(path, F_OK) == 0 ? 0 : -1;
}

/* Stops the job (SIGTERM: it finalizes) and reads its report into buf;
 * returns finalize's duration in ms, or -1 if the job did not end in 5 s. */
static double job_stop_report(job_t *j, char *buf, size_t cap) {
  buf[0] = '\0';
  if (j->pid <= 0) return -1;
  kill(j->pid, SIGTERM);
  size_t n = 0;
  double end = now_s() + 5;
  while (now_s() < end && n + 1 < cap) {
    struct pollfd pf = {.fd = j->result_fd, .events = POLLIN};
    if (poll(&pf, 1, 100) <= 0) continue;
    ssize_t r = read(j->result_fd, buf + n, cap - n - 1);
    if (r <= 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  int st = 0;
  bool ended = false;
  while (now_s() < end && !(ended = waitpid(j->pid, &st, WNOHANG) == j->pid)) sleep_s(0.01);
  if (!ended) {
    kill(j->pid, SIGKILL);
    waitpid(j->pid, NULL, 0);
  }
  close(j->result_fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", j->dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", j->dir);
  double ms = -1;
  if (!ended || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || sscanf(buf, "finalize_ms %lf", &ms) != 1)
    return -1;
  return ms;
}

static long status_kb(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') kb = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return kb;
}

/* ---- a legitimate viewer: a SUB socket, as tui/source.c has ------------- */

typedef struct {
  void *zctx, *sub;
  nt_snapshot *snap;
  uint64_t snapshots, last_events;
  char topo[4096];
  size_t topo_len;
  uint64_t topos;
} viewer_t;

static int viewer_open(viewer_t *v, const char *ep) {
  memset(v, 0, sizeof *v);
  v->snap = nt_snapshot_new();
  v->zctx = zmq_ctx_new();
  v->sub = v->zctx ? zmq_socket(v->zctx, ZMQ_SUB) : NULL;
  int zero = 0;
  if (!v->snap || !v->sub || zmq_setsockopt(v->sub, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
      zmq_setsockopt(v->sub, ZMQ_SUBSCRIBE, "", 0) != 0)
    return -1;
  return zmq_connect(v->sub, ep);
}

static void viewer_close(viewer_t *v) {
  if (v->sub) zmq_close(v->sub);
  if (v->zctx) zmq_ctx_term(v->zctx);
  nt_snapshot_free(v->snap);
}

/* Receives for `seconds`; counts snapshots (keeping the last events
 * counter) and keeps the last topology. */
static void viewer_pump(viewer_t *v, double seconds) {
  static uint8_t buf[NT_MAX_MESSAGE_BYTES];
  char topic[64], err[256];
  double end = now_s() + seconds;
  for (double left; (left = end - now_s()) > 0;) {
    zmq_pollitem_t it = {.socket = v->sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, (long)(left * 1000) + 1) <= 0) continue;
    int n = zmq_recv(v->sub, topic, sizeof topic - 1, 0);
    if (n < 0) continue;
    topic[n < (int)sizeof topic - 1 ? n : (int)sizeof topic - 1] = '\0';
    int more = 0;
    size_t ml = sizeof more;
    if (zmq_getsockopt(v->sub, ZMQ_RCVMORE, &more, &ml) != 0 || !more) continue;
    int len = zmq_recv(v->sub, buf, sizeof buf, 0);
    if (len < 0) continue;
    if (strcmp(topic, NT_TOPIC_TOPOLOGY) == 0) {
      v->topos++;
      v->topo_len = (size_t)len < sizeof v->topo ? (size_t)len : sizeof v->topo;
      memcpy(v->topo, buf, v->topo_len);
    } else if (strcmp(topic, NT_TOPIC_SNAPSHOT) == 0 &&
               nt_snapshot_decode(buf, (size_t)len, v->snap, err, sizeof err) == 0) {
      v->snapshots++;
      v->last_events = v->snap->process.events;
    }
  }
}

/* ---- the hostile peer: raw ZMTP 3.0 ------------------------------------- */

static bool write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len); /* SIGPIPE is ignored (main) */
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

static bool read_exactly(int fd, uint8_t *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += (size_t)n;
  }
  return true;
}

/* Greeting (NULL mechanism) and a READY command saying "XSUB". */
static bool zmtp_hello(int fd) {
  uint8_t g[64] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 0, 'N', 'U', 'L', 'L'};
  uint8_t r[2 + 26] = {0x04, 26, 5, 'R', 'E', 'A', 'D', 'Y', 11};
  memcpy(r + 9, "Socket-Type", 11);
  r[20] = r[21] = r[22] = 0;
  r[23] = 4;
  memcpy(r + 24, "XSUB", 4);
  /* Writes give up after 0.5 s: a job that stops reading ends the flood. */
  struct timeval tv = {0, 500000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  /* In step with the job, as a real peer is (libzmq 4.3.4 can lose a
   * READY that comes before it has sent its whole greeting): its signature,
   * our greeting, the rest of its greeting, our READY. */
  uint8_t peer[64];
  return read_exactly(fd, peer, 10) && write_all(fd, g, sizeof g) &&
         read_exactly(fd, peer + 10, 54) && write_all(fd, r, sizeof r);
}

/* Announces a 1 GiB frame and streams it for up to 2 s; returns the bytes
 * the job accepted before it dropped us. */
static size_t attack_huge(int fd) {
  static uint8_t chunk[1 << 16];
  uint64_t size = 1ull << 30;
  uint8_t h[9] = {0x02};
  for (int i = 0; i < 8; i++) h[1 + i] = (uint8_t)(size >> (56 - 8 * i));
  if (!write_all(fd, h, sizeof h)) return 0;
  size_t sent = 0;
  double end = now_s() + 2;
  while (sent < size && now_s() < end) {
    ssize_t n = write(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    sent += (size_t)n;
  }
  return sent;
}

/* Subscriptions number *next.. until the job drops us or `total` are sent;
 * each a distinct 25-byte topic (the most a 26-byte frame holds), different
 * from its neighbours in its first bytes, so each costs a trie branch. */
static void attack_subs(int fd, uint32_t *next, uint32_t total) {
  enum { BATCH = 512, MSG = 2 + 26 };
  static uint8_t buf[BATCH * MSG];
  while (*next < total) {
    uint32_t k = 0;
    for (; k < BATCH && *next + k < total; k++) {
      uint8_t *m = buf + k * MSG;
      uint32_t id = *next + k;
      m[0] = 0;
      m[1] = 26;
      m[2] = 1; /* subscribe */
      m[3] = 0xFE;
      for (int b = 0; b < 4; b++) m[4 + b] = (uint8_t)(id >> (8 * b));
      memset(m + 8, 'x', MSG - 8);
    }
    if (!write_all(fd, buf, k * MSG)) return;
    *next += k;
  }
}

static int connect_ipc(const char *ep) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", ep + strlen("ipc://"));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

typedef struct {
  const char *ep; /* ipc endpoint to connect to, or NULL: accept on listen_fd */
  int listen_fd;
  double seconds;   /* how long the subscription flood may go on */
  double huge_wait; /* how long to wait for the connection the huge frame goes to */
  bool reconnects;  /* the peer reconnects at will (ipc): it delivers ATTACK_SUBS at least */
  size_t huge_accepted;
  bool huge_done;
  uint32_t subs_sent, connections;
  _Atomic int done;
} attack_t;

static int attacker_connection(attack_t *a, double end) {
  if (a->ep) {
    while (now_s() < end) {
      int fd = connect_ipc(a->ep);
      if (fd >= 0) return fd;
      sleep_s(0.002); /* the job is between two sockets */
    }
    return -1;
  }
  struct pollfd pf = {.fd = a->listen_fd, .events = POLLIN};
  double left = end - now_s();
  if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0) return -1;
  return accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/* Connection after connection for `seconds`, each flooding distinct
 * subscriptions (ATTACK_SUBS at least), then one with the huge frame (last:
 * after that frame ZeroMQ 4.3.4 never reconnects to the peer). */
static void *attacker(void *arg) {
  attack_t *a = arg;
  double end = now_s() + a->seconds;
  int fd;
  while ((fd = attacker_connection(a, end)) >= 0) {
    a->connections++;
    if (zmtp_hello(fd)) attack_subs(fd, &a->subs_sent, UINT32_MAX);
    close(fd);
  }
  fd = attacker_connection(a, now_s() + a->huge_wait);
  if (fd >= 0) {
    a->connections++;
    if (zmtp_hello(fd)) a->huge_accepted = attack_huge(fd);
    a->huge_done = true;
    close(fd);
  }
  atomic_store(&a->done, 1);
  return NULL;
}

/* The attack against a job, with a viewer on the job's ipc socket all the
 * time. Checks the job's peak memory, the events and the snapshots. */
static void attack_job(job_t *j, attack_t *a) {
  viewer_t v;
  CHECK(viewer_open(&v, j->ep) == 0);
  viewer_pump(&v, 1.0);
  uint64_t before_snaps = v.snapshots, before_events = v.last_events;
  long hwm0 = status_kb(j->pid, "VmHWM");
  pthread_t t;
  CHECK(pthread_create(&t, NULL, attacker, a) == 0);
  double t0 = now_s();
  uint64_t s0 = v.snapshots;
  while (!atomic_load(&a->done) && now_s() - t0 < 20) viewer_pump(&v, 0.1);
  pthread_join(t, NULL);
  double attack_s = now_s() - t0;
  uint64_t during = v.snapshots - s0, during_events = v.last_events;
  long hwm1 = status_kb(j->pid, "VmHWM");
  uint64_t s1 = v.snapshots;
  viewer_pump(&v, 1.5);
  uint64_t after = v.snapshots - s1;
  long hwm2 = status_kb(j->pid, "VmHWM");
  viewer_close(&v);
  fprintf(stderr,
          "    %u distinct subscriptions sent over %u connections, then 1 GiB announced: %zu "
          "bytes written before the job dropped it; %.1f s\n"
          "    VmHWM %ld KiB before, %ld KiB after the attack, %ld KiB 1.5 s later "
          "(+%ld KiB, bound %d)\n"
          "    snapshots: %llu before, %llu during, %llu after; events %llu -> %llu -> %llu\n",
          a->subs_sent, a->connections, a->huge_accepted, attack_s, hwm0, hwm1, hwm2, hwm2 - hwm0,
          HWM_BOUND_KB, (unsigned long long)before_snaps, (unsigned long long)during,
          (unsigned long long)after, (unsigned long long)before_events,
          (unsigned long long)during_events, (unsigned long long)v.last_events);
  CHECK(before_snaps > 0 && hwm0 > 0 && hwm2 > 0);
  /* At NCCLTOP_CONNECT the job decides when to connect: the peer floods
   * each connection it gets (3 in 6 s: at 0, 1 and 3 s), then sends the huge
   * frame on the next (7 s). */
  CHECK(a->reconnects ? a->subs_sent >= ATTACK_SUBS : a->connections >= 4);
  CHECK(hwm2 - hwm0 < HWM_BOUND_KB);
  CHECK(a->connections >= 2 && a->huge_done); /* at least one flood, and the huge frame */
  CHECK(a->huge_accepted < (64u << 20));
  CHECK(during >= 1 && after >= 5);
  CHECK(v.last_events > during_events && during_events > before_events);
}

static void hostile_peer_on_the_ipc_socket(void) {
  job_t j;
  CHECK(job_start(&j, NULL, NULL) == 0);
  attack_t a = {.ep = j.ep, .seconds = 5, .huge_wait = 3, .reconnects = true};
  attack_job(&j, &a);
  bool attacked_ok = !tl_case_failed;
  tl_case_failed = 0;
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  CHECK(attacked_ok);
  CHECK(ms >= 0 && ms < 1000);
  CHECK(strstr(report, "not a viewer's subscription") != NULL);
}

/* The plugin connects to the hostile peer (NCCLTOP_CONNECT): the same
 * attack, and the peer sees no reconnection storm. */
static void hostile_peer_at_nccltop_connect(void) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(lfd, 16) == 0 &&
        getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
  char connect[64];
  snprintf(connect, sizeof connect, "tcp://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
  job_t j;
  if (job_start(&j, connect, NULL) != 0) {
    close(lfd);
    CHECK(!"job did not start");
  }
  attack_t a = {.listen_fd = lfd, .seconds = 6, .huge_wait = 10};
  attack_job(&j, &a);
  bool attacked_ok = !tl_case_failed;
  tl_case_failed = 0;
  /* No storm: ZeroMQ reconnects after 1 s, a reopen after 1, 2, 4... s. */
  double t0 = now_s();
  int later = 0;
  while (now_s() - t0 < 3) {
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    if (poll(&pf, 1, 100) <= 0) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    later++;
    if (zmtp_hello(fd)) attack_huge(fd);
    close(fd);
  }
  close(lfd);
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  fprintf(stderr, "    connections from the job: %u during the attack, %d in the 3 s after\n",
          a.connections, later);
  if (getenv("HOSTILE_VERBOSE")) fprintf(stderr, "%s", report);
  CHECK(attacked_ok);
  CHECK(a.connections <= 30 && later <= 4);
  CHECK(ms >= 0 && ms < 1000);
}

/* ---- the topology dump -------------------------------------------------- */

static void topology_on_a_fifo_is_refused(void) {
  job_t j;
  char fifo[128];
  /* The FIFO must exist before the job's first look: make the directory
   * first, as job_start would. */
  CHECK(job_start(&j, NULL, "topo.fifo") == 0);
  snprintf(fifo, sizeof fifo, "%s/topo.fifo", j.dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  viewer_t v;
  CHECK(viewer_open(&v, j.ep) == 0);
  viewer_pump(&v, 2.5); /* one meta period: the FIFO is looked at twice */
  uint64_t snaps = v.snapshots;
  viewer_close(&v);
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  int lines = 0;
  for (const char *p = report; (p = strstr(p, "not a regular file")); p++) lines++;
  fprintf(stderr, "    %llu snapshots in 2.5 s; finalize took %.1f ms; %d refusal line(s)\n",
          (unsigned long long)snaps, ms, lines);
  CHECK(snaps >= 10);
  CHECK(ms >= 0 && ms < 500);
  CHECK(lines == 1);
}

static bool write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write_all(fd, text, strlen(text));
  return close(fd) == 0 && ok;
}

/* inotify events of `mask` on the watch since the last call. */
static int inotify_count(int ifd, uint32_t mask) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  int n = 0;
  for (;;) {
    ssize_t r = read(ifd, buf, sizeof buf);
    if (r <= 0) return n;
    for (char *p = buf; p < buf + r;
         p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
      if (((struct inotify_event *)p)->mask & mask) n++;
  }
}

static void topology_is_read_again_only_when_changed(void) {
  job_t j;
  CHECK(job_start(&j, NULL, "topo.xml") == 0);
  char path[128];
  snprintf(path, sizeof path, "%s/topo.xml", j.dir);
  CHECK(write_file(path, "<system version=\"1\"><cpu numaid=\"0\"/></system>\n"));
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  CHECK(ifd >= 0 && inotify_add_watch(ifd, path, IN_OPEN | IN_ACCESS) >= 0);
  viewer_t v;
  CHECK(viewer_open(&v, j.ep) == 0);
  viewer_pump(&v, 1.0);
  bool first = v.topos > 0 && strstr(v.topo, "numaid=\"0\"") != NULL;
  int first_opens = inotify_count(ifd, IN_OPEN);
  /* Unchanged: sent again from memory every 2 s, never opened again. */
  uint64_t t0 = v.topos;
  viewer_pump(&v, 4.5);
  int idle_opens = inotify_count(ifd, IN_OPEN | IN_ACCESS);
  uint64_t resent = v.topos - t0;
  /* Changed (as NCCL finishing a half-written dump): read and sent. */
  (void)inotify_count(ifd, IN_OPEN | IN_ACCESS);
  CHECK(write_file(path, "<system version=\"1\"><cpu numaid=\"1\"/><gpu/></system>\n"));
  double t1 = now_s(), seen = -1;
  while (seen < 0 && now_s() - t1 < 5) {
    viewer_pump(&v, 0.1);
    if (v.topos && memmem(v.topo, v.topo_len, "numaid=\"1\"", 10)) seen = now_s() - t1;
  }
  /* Reads: our own write opened the file too (and inotify merges repeated
   * opens into one event), but only the job reads it. */
  int change_reads = inotify_count(ifd, IN_ACCESS);
  viewer_close(&v);
  close(ifd);
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  fprintf(stderr,
          "    first read: %d open(s); unchanged for 4.5 s: %d open/read, sent %llu more times; "
          "changed: seen after %.2f s, %d read(s)\n",
          first_opens, idle_opens, (unsigned long long)resent, seen, change_reads);
  CHECK(first && first_opens == 1);
  CHECK(idle_opens == 0 && resent >= 2);
  CHECK(seen >= 0 && seen < 3 && change_reads >= 1);
  CHECK(ms >= 0 && ms < 1000);
}

/* ---- a publisher really stuck ------------------------------------------- */

static int publisher_threads(void) {
  int n = 0;
  char path[300], comm[32];
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(comm, sizeof comm, f) && strncmp(comm, "nccltop-pub", 11) == 0) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static void case_stuck_publisher_is_left_behind(void) {
  char dir[] = "/tmp/nccltop-hostile-XXXXXX", fifo[64], ep[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(fifo, sizeof fifo, "%s/topo", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  setenv("NCCLTOP_DIR", dir, 1);
  setenv("NCCLTOP_INTERVAL_MS", "50", 1);
  setenv("NCCL_TOPO_DUMP_FILE", fifo, 1);
  void *lib = dlopen(stuck_plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  CHECK(dlsym(lib, "nccltop_test_block") == NULL); /* no hook: the open itself blocks */
  int mask = 0;
  void *ctx = init_comm(v5, 1, &mask);
  CHECK(ctx != NULL);
  CHECK(nt_endpoint_for_pid(dir, (uint32_t)getpid(), ep, sizeof ep) == 0);
  viewer_t v;
  CHECK(viewer_open(&v, ep) == 0);
  viewer_pump(&v, 1.0); /* subscribed: the publisher opens the FIFO and blocks */
  CHECK(v.snapshots == 0 && publisher_threads() == 1);
  double t0 = now_s();
  CHECK(v5->finalize(ctx) == 0);
  double stop_ms = (now_s() - t0) * 1e3;
  bool left = count_in_log("left behind") == 1 && publisher_threads() == 1;
  /* While it is stuck, a new communicator is profiled but not published. */
  t0 = now_s();
  ctx = init_comm(v5, 2, &mask);
  events(v5, ctx, 100);
  CHECK(ctx != NULL && v5->finalize(ctx) == 0);
  double again_ms = (now_s() - t0) * 1e3;
  bool refused = count_in_log("still blocked; not publishing") == 1;
  /* The mount comes back (a writer opens the FIFO): the publisher left
   * behind ends by itself, and the dump becomes a regular file. */
  int w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(w >= 0);
  close(w);
  CHECK(unlink(fifo) == 0 && write_file(fifo, "<system version=\"1\"><cpu/></system>\n"));
  t0 = now_s();
  while (publisher_threads() > 0 && now_s() - t0 < 3) sleep_s(0.01);
  double end_ms = (now_s() - t0) * 1e3;
  CHECK(publisher_threads() == 0);
  /* Then the next communicator publishes again. */
  ctx = init_comm(v5, 3, &mask);
  CHECK(ctx != NULL);
  events(v5, ctx, 100);
  uint64_t before = v.snapshots;
  viewer_pump(&v, 2.0); /* the viewer reconnects to the new socket by itself */
  uint64_t snaps = v.snapshots - before;
  bool topo = v.topos > 0 && memmem(v.topo, v.topo_len, "<cpu/>", 6) != NULL;
  viewer_close(&v);
  t0 = now_s();
  CHECK(v5->finalize(ctx) == 0);
  double last_ms = (now_s() - t0) * 1e3;
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  fprintf(stderr,
          "    finalize with a stuck publisher: %.1f ms; init+finalize while stuck: %.1f ms; "
          "unblocked, it ended in %.1f ms; then %llu snapshots in 2 s, finalize %.1f ms\n",
          stop_ms, again_ms, end_ms, (unsigned long long)snaps, last_ms);
  CHECK(stop_ms < 1500 && left);
  CHECK(again_ms < 500 && refused);
  CHECK(snaps >= 5 && topo && last_ms < 1000);
}

static void stuck_publisher_is_left_behind(void) {
  if (access(stuck_plugin, R_OK) != 0) {
    TEST_SKIP(stuck_publisher_is_left_behind, "the test-only stuck plugin is not built");
    return;
  }
  CHECK(ph_in_child(case_stuck_publisher_is_left_behind) == 0);
}

/* What NCCL does after the last finalize (ncclProfilerPluginUnload ->
 * dlclose): the library goes, while the publisher finalize left behind is
 * still blocked inside it. When it wakes up it must find its code mapped
 * (-z nodelete), end cleanly, and a later load must work. */
static bool mapped(const char *path) {
  char real[PATH_MAX], line[PATH_MAX + 128];
  if (!realpath(path, real)) return false;
  FILE *f = fopen("/proc/self/maps", "r");
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, real) != NULL;
  if (f) fclose(f);
  return found;
}

static void case_an_abandoned_publisher_survives_dlclose(void) {
  char dir[] = "/tmp/nccltop-hostile-XXXXXX", fifo[64], ep[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(fifo, sizeof fifo, "%s/topo", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  setenv("NCCLTOP_DIR", dir, 1);
  setenv("NCCLTOP_INTERVAL_MS", "50", 1);
  setenv("NCCL_TOPO_DUMP_FILE", fifo, 1);
  void *lib = dlopen(stuck_plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  int mask = 0;
  void *ctx = init_comm(v5, 1, &mask);
  CHECK(ctx != NULL);
  CHECK(nt_endpoint_for_pid(dir, (uint32_t)getpid(), ep, sizeof ep) == 0);
  viewer_t v;
  CHECK(viewer_open(&v, ep) == 0);
  viewer_pump(&v, 1.0); /* the publisher blocks in the FIFO's open */
  CHECK(publisher_threads() == 1);
  CHECK(v5->finalize(ctx) == 0); /* abandons it after the bound */
  CHECK(dlclose(lib) == 0);      /* NCCL's unload */
  bool still_mapped = mapped(stuck_plugin);
  /* Wake it: it runs plugin code now, after the dlclose. */
  int w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(w >= 0);
  close(w);
  double t0 = now_s();
  while (publisher_threads() > 0 && now_s() - t0 < 3) sleep_s(0.01);
  bool ended = publisher_threads() == 0;
  /* NCCL loads it again for a later communicator. */
  CHECK(unlink(fifo) == 0);
  lib = dlopen(stuck_plugin, RTLD_NOW | RTLD_LOCAL);
  v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  ctx = init_comm(v5, 2, &mask);
  CHECK(ctx != NULL);
  events(v5, ctx, 100);
  uint64_t before = v.snapshots;
  viewer_pump(&v, 1.5);
  uint64_t snaps = v.snapshots - before;
  viewer_close(&v);
  CHECK(v5->finalize(ctx) == 0 && dlclose(lib) == 0);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  fprintf(
      stderr,
      "    after dlclose: still mapped %d, woken publisher ended %d; reloaded: %llu snapshots\n",
      still_mapped, ended, (unsigned long long)snaps);
  CHECK(still_mapped && ended && snaps >= 3);
}

static void an_abandoned_publisher_survives_dlclose(void) {
  if (access(stuck_plugin, R_OK) != 0) {
    TEST_SKIP(an_abandoned_publisher_survives_dlclose, "the test-only stuck plugin is not built");
    return;
  }
  CHECK(ph_in_child(case_an_abandoned_publisher_survives_dlclose) == 0);
}

/* ---- logging ------------------------------------------------------------ */

static void case_log_lines_are_escaped(void) {
  char base[] = "/tmp/nccltop-hostile-XXXXXX", dir[128];
  CHECK(mkdtemp(base) != NULL);
  snprintf(dir, sizeof dir, "%s/a\nforged: b\x1b[31mred", base);
  setenv("NCCLTOP_DIR", dir, 1);
  void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  int mask = 0;
  void *ctx = init_comm(v5, 1, &mask);
  CHECK(ctx != NULL);
  for (int i = 0; i < 200 && !count_in_log("publishing on"); i++) sleep_s(0.01);
  CHECK(v5->finalize(ctx) == 0);
  char cmd[192];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  CHECK(system(cmd) == 0);
  pthread_mutex_lock(&log_mu);
  bool raw = false;
  int lines = 0;
  for (const char *p = logged; *p; p++) {
    if (*p == '\n') lines++;
    if (*p == 0x1b || (*p == '\n' && strncmp(p + 1, "forged", 6) == 0)) raw = true;
  }
  const char *line = strstr(logged, "publishing on");
  bool escaped = line && strstr(line, "a\\x0Aforged: b\\x1B[31mred");
  pthread_mutex_unlock(&log_mu);
  fprintf(stderr, "    %d log lines; the endpoint line: %.*s\n", lines,
          line ? (int)strcspn(line, "\n") : 0, line ? line : "");
  CHECK(!raw && escaped);
}

static void log_lines_are_escaped(void) {
  CHECK(ph_in_child(case_log_lines_are_escaped) == 0);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *bindir = dirname(exe);
  snprintf(plugin, sizeof plugin, "%s/../libnccl-profiler-nccltop.so", bindir);
  snprintf(stuck_plugin, sizeof stuck_plugin, "%s/libnccl-profiler-nccltop-stuck.so", bindir);
  signal(SIGPIPE, SIG_IGN);
  const char *only = getenv("HOSTILE_ONLY");
#define RUN(fn)                                                                                    \
  if (!only || strstr(#fn, only)) TEST_RUN(fn)
  RUN(log_lines_are_escaped);
  RUN(topology_on_a_fifo_is_refused);
  RUN(topology_is_read_again_only_when_changed);
  RUN(stuck_publisher_is_left_behind);
  RUN(an_abandoned_publisher_survives_dlclose);
  RUN(hostile_peer_on_the_ipc_socket);
  RUN(hostile_peer_at_nccltop_connect);
  return TEST_DONE();
}

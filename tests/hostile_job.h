/* What the hostile-plugin tests share: a job (a child process, this binary executed anew, that
 * loads the real plugin with a logger and produces events), the log it captured, and a legitimate
 * viewer (a SUB socket, as monitor/feeds/source.c has). */
#ifndef NCCLTOP_HOSTILE_JOB_H
#define NCCLTOP_HOSTILE_JOB_H

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

static char plugin[PATH_MAX + 64], stuck_plugin[PATH_MAX + 64];
/* The jobs here load the plugin themselves (with a logger, and a test-only
 * build for one case); the harness's loader is not used. */
__attribute__((unused)) static const void *const harness_unused[] = {ph_setup_dir, ph_load, ph_init,
                                                                     ph_simple, ph_in_child};

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
__attribute__((unused)) static void capture_log(int level, unsigned long flags, const char *file,
                                                int line, const char *fmt, ...) {
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

__attribute__((unused)) static int count_in_log(const char *needle) {
  int n = 0;
  pthread_mutex_lock(&log_mu);
  for (const char *p = logged; (p = strstr(p, needle)); p++) n++;
  pthread_mutex_unlock(&log_mu);
  return n;
}

__attribute__((unused)) static void *init_comm(const nt_profiler_v5 *v5, uint64_t hash, int *mask) {
  void *ctx = NULL;
  if (v5->init(&ctx, hash, mask, "hostile-comm", 1, 2, 0, capture_log) != 0) return NULL;
  return ctx;
}

__attribute__((unused)) static void events(const nt_profiler_v5 *v5, void *ctx, int n) {
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
__attribute__((unused)) static void on_term(int sig) {
  (void)sig;
  job_stop = 1;
}

typedef struct {
  pid_t pid;
  int result_fd; /* the job writes "finalize_ms <x>" and its log here at the end */
  char dir[64];
} job_t;

/* Loads the plugin, produces events until SIGTERM (or 60 s), finalizes and
 * reports how long finalize took and what was logged. */
static void job_main(int out, const char *dir, const char *connect, const char *topo) {
  setenv("NCCLTOP_DIR", dir, 1);
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

/* The test binary itself, re-executed as a job (see hostile_init). */
static char self_exe[PATH_MAX];

/* The job is this binary executed anew, never a bare fork: the test
 * process has ZeroMQ threads by then, and a forked child inherits every
 * lock they held at that instant; GCC 12's AddressSanitizer takes no lock
 * around fork(), so a child could block for ever in its allocator (the
 * job's publisher "blocked", or the job never exiting at the leak check).
 * Between fork and exec the child only makes system calls. */
__attribute__((unused)) static int job_start(job_t *j, const char *connect, const char *topo_name) {
  memset(j, 0, sizeof *j);
  snprintf(j->dir, sizeof j->dir, "/tmp/nccltop-hostile-XXXXXX");
  if (!mkdtemp(j->dir)) return -1;
  char topo[128], fd_arg[16];
  snprintf(topo, sizeof topo, "%s/%s", j->dir, topo_name ? topo_name : "");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
  char *argv[] = {self_exe,
                  "--hostile-job",
                  fd_arg,
                  j->dir,
                  (char *)(connect ? connect : ""),
                  topo_name ? topo : "",
                  NULL};
  fflush(NULL);
  j->pid = fork();
  if (j->pid < 0) return -1;
  if (j->pid == 0) {
    if (fcntl(fds[1], F_SETFD, 0) == 0) execv(self_exe, argv);
    _exit(127);
  }
  close(fds[1]);
  j->result_fd = fds[0];
  return 0;
}

/* Stops the job (SIGTERM: it finalizes) and reads its report into buf;
 * returns finalize's duration in ms, or -1 if the job did not end in 5 s. */
__attribute__((unused)) static double job_stop_report(job_t *j, char *buf, size_t cap) {
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

/* ---- a legitimate viewer: a SUB socket, as monitor/feeds/source.c has ------------- */

typedef struct {
  void *zctx, *sub;
  int dirfd;
  nt_inbox in; /* the SUB's file in the job's directory: the job connects to it */
  nt_snapshot *snap;
  uint64_t snapshots, last_events;
  char topo[4096];
  size_t topo_len;
  uint64_t topos;
} viewer_t;

/* Binds in the job's endpoint directory, as the viewer does; the job's
 * publisher connects within a scan. */
__attribute__((unused)) static int viewer_open(viewer_t *v, const char *dir) {
  char err[256];
  memset(v, 0, sizeof *v);
  v->dirfd = -1;
  v->snap = nt_snapshot_new();
  v->zctx = zmq_ctx_new();
  v->sub = v->zctx ? zmq_socket(v->zctx, ZMQ_SUB) : NULL;
  int zero = 0;
  if (!v->snap || !v->sub || zmq_setsockopt(v->sub, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
      zmq_setsockopt(v->sub, ZMQ_SUBSCRIBE, "", 0) != 0)
    return -1;
  if ((v->dirfd = nt_endpoint_dir_open(dir, true, err, sizeof err)) < 0) return -1;
  return nt_inbox_bind(&v->in, v->sub, v->dirfd);
}

__attribute__((unused)) static void viewer_close(viewer_t *v) {
  if (v->sub) zmq_close(v->sub);
  if (v->zctx) zmq_ctx_term(v->zctx);
  nt_inbox_unbind(&v->in, NULL, v->dirfd);
  if (v->dirfd >= 0) close(v->dirfd);
  nt_snapshot_free(v->snap);
}

/* Receives for `seconds`; counts snapshots (keeping the last events
 * counter) and keeps the last topology. */
__attribute__((unused)) static void viewer_pump(viewer_t *v, double seconds) {
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

__attribute__((unused)) static bool write_all(int fd, const void *data, size_t len) {
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

/* Paths of the plugins next to the test binary; SIGPIPE ignored. */
/* Also: runs the job and exits when this process is one (job_start). */
static inline void hostile_init(int argc, char **argv) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(self_exe, sizeof self_exe, "%s", exe);
  char *bindir = dirname(exe);
  snprintf(plugin, sizeof plugin, "%s/../libnccl-profiler-nccltop.so", bindir);
  snprintf(stuck_plugin, sizeof stuck_plugin, "%s/libnccl-profiler-nccltop-stuck.so", bindir);
  signal(SIGPIPE, SIG_IGN);
  if (argc == 6 && strcmp(argv[1], "--hostile-job") == 0)
    job_main(atoi(argv[2]), argv[3], argv[4][0] ? argv[4] : NULL, argv[5][0] ? argv[5] : NULL);
}

#define HOSTILE_RUN(fn)                                                                            \
  do {                                                                                             \
    const char *only_ = getenv("HOSTILE_ONLY");                                                    \
    if (!only_ || strstr(#fn, only_)) TEST_RUN(fn);                                                \
  } while (0)

#endif

/* What the end-to-end scenario tests share: simulated jobs (real rank
 * processes that load the real plugin) spawned into a private endpoint
 * directory, and `nccltop -b --json` read frame by frame. */
#ifndef NCCLTOP_SCENARIO_HARNESS_H
#define NCCLTOP_SCENARIO_HARNESS_H

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"
#include "../sim/schedule.h"
#include "../sim/sim.h"
#include "../monitor/feeds/discover.h"

static char bindir[PATH_MAX], nccltop[PATH_MAX + 16], plugin[PATH_MAX + 64];

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- processes ---- */

/* Waits up to `seconds` for pid; its wait status, or -1 if still running. */
static inline int wait_exit(pid_t pid, double seconds) {
  double end = now_s() + seconds;
  int st;
  do {
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) return st;
    if (got < 0 && errno != EINTR) return -2;
    nap_ms(10);
  } while (now_s() < end);
  return -1;
}

/* Stops a simulated job: its runner leads a process group with the ranks. */
static inline void stop_group(pid_t *pid) {
  if (*pid <= 0) return;
  kill(-*pid, SIGTERM);
  if (wait_exit(*pid, 5) == -1) {
    kill(-*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
  }
  *pid = -1;
}

static inline void remove_dir(const char *dir) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

/* Waits until `n` publishers publish in dir: binds a reader's socket there,
 * as a viewer does, and counts the distinct processes whose messages
 * arrive (the plugins connect to it within a scan, and answer its
 * subscription at once). The socket is gone when this returns. */
static inline bool wait_publishers(const char *dir, int n, double seconds) {
  char err[256];
  int dirfd = nt_endpoint_dir_open(dir, true, err, sizeof err);
  void *z = zmq_ctx_new(), *sub = z ? zmq_socket(z, ZMQ_SUB) : NULL;
  nt_inbox in;
  memset(&in, 0, sizeof in);
  int zero = 0, found = 0;
  uint32_t seen[4096];
  bool ok = dirfd >= 0 && sub && zmq_setsockopt(sub, ZMQ_LINGER, &zero, sizeof zero) == 0 &&
            zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0) == 0 && nt_inbox_bind(&in, sub, dirfd) == 0;
  double end = now_s() + seconds;
  while (ok && found < n && now_s() < end) {
    zmq_pollitem_t it = {.socket = sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 100) <= 0) continue;
    zmq_msg_t m;
    zmq_msg_init(&m);
    uint32_t pid = 0;
    if (zmq_msg_recv(&m, sub, 0) >= 0 && nt_inbox_sender(&m, &pid)) {
      int i = 0;
      while (i < found && seen[i] != pid) i++;
      if (i == found && found < (int)(sizeof seen / sizeof seen[0])) seen[found++] = pid;
    }
    zmq_msg_close(&m);
  }
  if (sub) zmq_close(sub);
  if (z) zmq_ctx_term(z);
  if (dirfd >= 0) {
    nt_inbox_unbind(&in, NULL, dirfd);
    close(dirfd);
  }
  if (found < n) fprintf(stderr, "    %d of %d publishers seen in %s\n", found, n, dir);
  return found >= n;
}

/* A config with the test's plugin, a private endpoint directory, quick
 * snapshots and one communicator. */
static inline void base_config(nt_sim_config *c, const char *dir) {
  nt_sim_defaults(c);
  c->comms = 1;
  c->plugin = plugin;
  c->dir = dir;
  c->interval_ms = 50;
  c->quiet = true;
}

/* ---- the viewer: `nccltop -b --json`, one frame per line ---- */

typedef struct {
  pid_t pid;
  int fd;
  char *buf;
  size_t len, cap;
  int frames;
} viewer;

static inline bool viewer_start(viewer *v, const char *dir, const char *delay_ms,
                                const char *stall_ms) {
  int fds[2];
  memset(v, 0, sizeof *v);
  v->fd = v->pid = -1;
  if (pipe(fds) != 0) return false;
  fflush(NULL);
  pid_t parent = getpid();
  v->pid = fork();
  if (v->pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (v->pid == 0) {
    /* Never outlive the test. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(nccltop, nccltop, "-b", "--json", "-d", delay_ms, "--stall-ms", stall_ms, "--dir", dir,
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  v->fd = fds[0];
  return true;
}

/* The next frame, or NULL at the deadline, at the end of the output or on
 * a line that is not JSON (said on stderr). */
static inline cJSON *viewer_frame(viewer *v, double deadline) {
  for (;;) {
    char *nl = v->len ? memchr(v->buf, '\n', v->len) : NULL;
    if (nl) {
      *nl = '\0';
      cJSON *f = cJSON_Parse(v->buf);
      size_t used = (size_t)(nl - v->buf) + 1;
      memmove(v->buf, nl + 1, v->len - used);
      v->len -= used;
      v->frames++;
      if (!f) fprintf(stderr, "    viewer frame %d is not JSON\n", v->frames);
      return f;
    }
    double left = deadline - now_s();
    if (left <= 0) return NULL;
    struct pollfd p = {.fd = v->fd, .events = POLLIN};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return NULL;
    if (v->cap - v->len < 65536) {
      size_t cap = v->cap ? v->cap * 2 : 1 << 20;
      char *b = realloc(v->buf, cap);
      if (!b) return NULL;
      v->buf = b;
      v->cap = cap;
    }
    ssize_t n = read(v->fd, v->buf + v->len, v->cap - v->len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "    the viewer's output ended after %d frames\n", v->frames);
      return NULL;
    }
    v->len += (size_t)n;
  }
}

static inline void viewer_stop(viewer *v) {
  if (v->pid > 0) {
    kill(v->pid, SIGTERM);
    kill(v->pid, SIGCONT); /* a test may have stopped it */
    if (wait_exit(v->pid, 5) == -1) {
      kill(v->pid, SIGKILL);
      waitpid(v->pid, NULL, 0);
    }
  }
  if (v->fd >= 0) close(v->fd);
  free(v->buf);
  v->buf = NULL;
  v->len = v->cap = 0;
  v->fd = v->pid = -1; /* frames stays: the reports use it */
}

/* ---- JSON ---- */

static inline const cJSON *get(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static inline double num(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsNumber(v) ? cJSON_GetNumberValue(v) : NAN;
}

static inline const char *str(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static inline const char *hex_of(uint64_t hash, char *buf) {
  snprintf(buf, 17, "%016" PRIx64, hash);
  return buf;
}

static inline const cJSON *find_rank(const cJSON *frame, uint64_t hash, int rank) {
  char hex[17];
  hex_of(hash, hex);
  const cJSON *r;
  cJSON_ArrayForEach(r, get(frame, "ranks")) {
    if (!strcmp(str(r, "comm"), hex) && num(r, "rank") == rank) return r;
  }
  return NULL;
}

static inline const cJSON *find_process(const cJSON *frame, double pid) {
  const cJSON *p;
  cJSON_ArrayForEach(p, get(frame, "processes")) {
    if (num(p, "pid") == pid) return p;
  }
  return NULL;
}

static inline bool array_has_string(const cJSON *a, const char *s) {
  const cJSON *x;
  cJSON_ArrayForEach(x, a) {
    if (cJSON_IsString(x) && !strcmp(x->valuestring, s)) return true;
  }
  return false;
}

static inline bool close_to(double got, double want) {
  return fabs(got - want) <= 1e-6 * fabs(want) + 1e-9;
}

#define FAIL_IF(cond, ...)                                                                         \
  do {                                                                                             \
    if (cond) {                                                                                    \
      snprintf(why, cap, __VA_ARGS__);                                                             \
      return why;                                                                                  \
    }                                                                                              \
  } while (0)

/* A check of one frame: NULL when it shows what is expected, else why not. */
typedef const char *(*frame_check)(const nt_sim_config *c, const cJSON *f, char *why, size_t cap);

/* Runs the job c (its dir must exist) under a batch viewer (frames every
 * 100 ms, --stall-ms 2000) until a frame passes `check` or `seconds` pass;
 * cleans up either way. False (with the last reason on stderr) if none did. */
static inline bool run_until(const nt_sim_config *c, const char *dir, frame_check check,
                             double seconds, const char *label) {
  pid_t sim = nt_sim_spawn(c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c->ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false;
  double end = now_s() + seconds;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = check(c, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!started) fprintf(stderr, "    %s: the job or the viewer did not start\n", label);
  if (started && !ok) fprintf(stderr, "    %s, after %d frames: %s\n", label, v.frames, why);
  return ok;
}

/* Paths of the binaries next to the test, and a clean environment. */
static inline void scenario_init(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  /* The scenarios set these themselves; inherited ones would blur them. */
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  unsetenv("NCCLTOP_EVENTS");
}

#endif

/* The plugin never blocks the job: the same simulated job (real processes,
 * real plugin) runs with no viewer, with a live viewer, and with a viewer
 * that is suspended with SIGSTOP while the job runs. A blocked publisher
 * would stall the third run forever; the test allows it a generous deadline
 * and prints the three durations as ratios (information, not a threshold). */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "../sim/sim.h"

static char bindir[PATH_MAX], plugin[PATH_MAX + 64];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void config(nt_sim_config *c, const char *dir) {
  nt_sim_defaults(c);
  c->ranks = 2;
  c->comms = 2;
  c->channels = 4;
  c->steps = 16;
  c->iterations = 6000;
  c->deterministic = true;
  c->plugin = plugin;
  c->dir = dir;
  c->interval_ms = 10; /* many snapshots: a blocked send would show at once */
  c->quiet = true;
}

/* Waits for pid up to deadline_s; kills its group on timeout. Returns the
 * exit status, or -1 on timeout. */
static int wait_deadline(pid_t pid, double deadline_s) {
  double end = now_s() + deadline_s;
  int st = 0;
  while (now_s() < end) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static pid_t start_viewer(const char *dir, int *out_fd) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    char exe[PATH_MAX + 16];
    snprintf(exe, sizeof exe, "%s/nccltop", bindir);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(exe, exe, "-b", "--json", "-d", "50", "--dir", dir, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

/* Reads the viewer's output until a frame lists a rank (it has subscribed
 * to a publisher). */
static bool viewer_sees_ranks(int fd, double timeout_s) {
  static char buf[1 << 20];
  size_t len = 0;
  double end = now_s() + timeout_s;
  while (now_s() < end) {
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(fd, &rd);
    struct timeval tv = {0, 100000};
    if (select(fd + 1, &rd, NULL, NULL, &tv) <= 0) continue;
    ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
    if (n <= 0) return false;
    len += (size_t)n;
    buf[len] = '\0';
    if (strstr(buf, "\"ranks\":[{")) return true;
    if (len > sizeof buf / 2) len = 0; /* keep only recent output */
  }
  return false;
}

/* mode 0: no viewer; 1: a viewer reading; 2: a viewer stopped mid-run. */
static double run_job(int mode, bool *ok) {
  char dir[] = "/tmp/nccltop-nb-XXXXXX";
  *ok = false;
  if (!mkdtemp(dir)) return 0;
  nt_sim_config c;
  config(&c, dir);
  int fd = -1;
  pid_t viewer = -1;
  if (mode > 0) viewer = start_viewer(dir, &fd);
  double t0 = now_s();
  pid_t sim = nt_sim_spawn(&c);
  if (sim > 0 && mode > 0) {
    bool seen = viewer_sees_ranks(fd, 20);
    if (mode == 2 && seen) kill(viewer, SIGSTOP);
    if (!seen) fprintf(stderr, "    viewer never saw the ranks\n");
  }
  int rc = sim > 0 ? wait_deadline(sim, 120) : -1;
  double elapsed = now_s() - t0;
  if (viewer > 0) {
    kill(viewer, SIGKILL);
    kill(viewer, SIGCONT);
    waitpid(viewer, NULL, 0);
    close(fd);
  }
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
  *ok = rc == 0;
  return elapsed;
}

static void a_stopped_viewer_never_blocks_the_job(void) {
  bool ok0, ok1, ok2;
  double t0 = run_job(0, &ok0);
  double t1 = run_job(1, &ok1);
  double t2 = run_job(2, &ok2);
  fprintf(stderr,
          "    job time: no viewer %.2fs, viewer %.2fs (%.2fx), stopped viewer %.2fs (%.2fx)\n", t0,
          t1, t1 / t0, t2, t2 / t0);
  CHECK(ok0);
  CHECK(ok1);
  CHECK(ok2);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  TEST_RUN(a_stopped_viewer_never_blocks_the_job);
  return TEST_DONE();
}

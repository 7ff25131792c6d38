/* Fault injection: viewers killed and restarted, publishers killed (stale
 * socket files), refused endpoint directories, finalize with events in
 * flight, a proxy thread reporting after its communicator is gone, a long
 * run with nobody watching (memory flat), and many publishers at once. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "testlib.h"
#include "plugin_harness.h"
#include "../sim/sim.h"

static char bindir[PATH_MAX], nccltop[PATH_MAX + 16], plugin[PATH_MAX + 64];
static ph_t H;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pid_t spawn_job(const char *dir, int ranks, double linger) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = ranks;
  c.comms = 1;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = linger;
  c.plugin = plugin;
  c.dir = dir;
  c.interval_ms = 100;
  c.quiet = true;
  return nt_sim_spawn(&c);
}

static void stop_group(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 500 && waitpid(pid, NULL, WNOHANG) == 0; i++) usleep(10000);
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, WNOHANG);
}

/* Runs `nccltop -b --json` on dir until a frame lists `ranks` ranks; returns
 * the seconds it took, or -1. The viewer is killed either way. */
static double viewer_sees(const char *dir, int ranks, double timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t v = fork();
  if (v == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(nccltop, nccltop, "-b", "--json", "-d", "200", "--dir", dir, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  static char line[8 << 20];
  char want[64];
  snprintf(want, sizeof want, "\"rank\":%d,", ranks - 1);
  double t0 = now_s(), got = -1;
  while (f && now_s() - t0 < timeout_s && fgets(line, sizeof line, f)) {
    int n = 0;
    for (char *p = line; (p = strstr(p, "\"comm_name\"")); p++) n++;
    if (n >= ranks && strstr(line, want)) {
      got = now_s() - t0;
      break;
    }
  }
  kill(v, SIGKILL);
  waitpid(v, NULL, 0);
  if (f) fclose(f);
  return got;
}

static void viewer_killed_and_restarted_sees_everything_again(void) {
  char dir[] = "/tmp/nccltop-fault-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  pid_t job = spawn_job(dir, 3, 60);
  double first = viewer_sees(dir, 3, 30); /* killed by SIGKILL mid-stream */
  double second = viewer_sees(dir, 3, 30);
  stop_group(job);
  rmdir(dir);
  CHECK(first >= 0 && second >= 0);
}

static void stale_sockets_of_killed_publishers_are_skipped(void) {
  char dir[] = "/tmp/nccltop-fault-XXXXXX", path[128];
  CHECK(mkdtemp(dir) != NULL);
  pid_t job = spawn_job(dir, 2, 60);
  CHECK(viewer_sees(dir, 2, 30) >= 0);
  kill(-job, SIGKILL); /* no finalize: the socket files stay behind */
  waitpid(job, NULL, 0);
  usleep(200000);
  /* A socket file named after a pid that no longer exists, too. */
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, NULL, 0);
  snprintf(path, sizeof path, "%s/%d.sock", dir, (int)dead);
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
  pid_t job2 = spawn_job(dir, 2, 60); /* the job restarts in the same directory */
  double t = viewer_sees(dir, 2, 30);
  stop_group(job2);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  CHECK(t >= 0);
}

/* The plugin refuses an unsafe endpoint directory, publishes nothing, and
 * the job's events still work. Each case runs in a fresh process. */
static const char *bad_dir_kind;
static void case_unsafe_endpoint_dir_is_refused(void) {
  char base[] = "/tmp/nccltop-bad-XXXXXX", dir[128];
  CHECK(mkdtemp(base) != NULL);
  snprintf(dir, sizeof dir, "%s/ep", base);
  if (!strcmp(bad_dir_kind, "symlink"))
    CHECK(symlink(base, dir) == 0);
  else if (!strcmp(bad_dir_kind, "world-writable"))
    CHECK(mkdir(dir, 0777) == 0 && chmod(dir, 0777) == 0);
  else if (!strcmp(bad_dir_kind, "other-owner")) {
    CHECK(mkdir(dir, 0700) == 0);
    if (geteuid() != 0 || chown(dir, 65534, 65534) != 0) return; /* needs root */
  } else if (!strcmp(bad_dir_kind, "not-a-directory")) {
    FILE *f = fopen(dir, "w");
    CHECK(f != NULL);
    fclose(f);
  }
  setenv("NCCLTOP_DIR", dir, 1);
  memset(&H, 0, sizeof H);
  CHECK(ph_load(&H) == 0);
  void *ctx = ph_init(&H, 1, 0, 1);
  CHECK(ctx != NULL); /* the job goes on */
  nt_descr_v5 d = ph_op(0, 1, 1, NULL);
  void *op = NULL;
  H.v5->startEvent(ctx, &op, &d);
  CHECK(op != NULL);
  H.v5->stopEvent(op);
  H.flush();
  char sock[160];
  snprintf(sock, sizeof sock, "%s/%d.sock", dir, (int)getpid());
  struct stat st;
  CHECK(stat(sock, &st) != 0); /* nothing bound there */
  snprintf(sock, sizeof sock, "%s/%d.sock", base, (int)getpid());
  CHECK(stat(sock, &st) != 0); /* not through the symlink either */
  CHECK(H.v5->finalize(ctx) == 0);
}

static void unsafe_endpoint_directories_are_refused(void) {
  static const char *kinds[] = {"symlink", "world-writable", "other-owner", "not-a-directory"};
  for (int i = 0; i < 4; i++) {
    bad_dir_kind = kinds[i];
    if (ph_in_child(case_unsafe_endpoint_dir_is_refused) != 0)
      fprintf(stderr, "    endpoint directory case '%s' failed\n", kinds[i]);
    CHECK(ph_in_child(case_unsafe_endpoint_dir_is_refused) == 0);
  }
}

/* Events keep arriving on another thread while the communicator is
 * finalized, and a shared proxy thread reports with the finalized context. */
static _Atomic int storm_stop;
static void *storm(void *ctx) {
  while (!storm_stop) {
    void *op = NULL, *c = NULL;
    nt_descr_v5 d = ph_op(1, 2, 0, NULL);
    H.v5->startEvent(ctx, &op, &d);
    H.v5->stopEvent(op);
    d = ph_simple(NT_EV_PROXY_CTRL);
    H.v5->startEvent(ctx, &c, &d);
    H.v5->recordEventState(c, NT_ST_CTRL_ACTIVE, NULL);
    H.v5->stopEvent(c);
  }
  return NULL;
}

static void case_finalize_with_events_in_flight(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  void *keep = ph_init(&H, 1, 0, 2), *gone = ph_init(&H, 2, 0, 2);
  CHECK(keep && gone);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, storm, gone) == 0);
  usleep(100000);
  CHECK(H.v5->finalize(gone) == 0); /* while `storm` still reports on it */
  usleep(100000);
  storm_stop = 1;
  pthread_join(t, NULL);
  CHECK(H.v5->finalize(keep) == 0);
}

static void finalize_with_events_in_flight(void) {
  CHECK(ph_in_child(case_finalize_with_events_in_flight) == 0);
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
  if (f) fclose(f);
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Memory stays flat over a long unwatched run (2M events after warm-up). */
static void case_memory_is_flat_with_nobody_watching(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  void *ctx = ph_init(&H, 1, 0, 2);
  CHECK(ctx != NULL);
  long before = 0;
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 20000; i++) {
      void *op = NULL, *st = NULL;
      nt_descr_v5 d = ph_op(i % 32, i % 7, i & 1, NULL);
      H.v5->startEvent(ctx, &op, &d);
      d = ph_step(op, i % 8);
      H.v5->startEvent(ctx, &st, &d);
      H.v5->recordEventState(st, i & 1 ? NT_ST_STEP_SEND_GPU_WAIT : NT_ST_STEP_RECV_WAIT, NULL);
      H.v5->stopEvent(st);
      H.v5->stopEvent(op);
    }
    if (round == 0) before = rss_kb();
  }
  long after = rss_kb();
  fprintf(stderr, "    RSS after warm-up %ld KiB, after 400k more events %ld KiB\n", before, after);
  CHECK(after - before < 1024);
}

static void memory_is_flat_with_nobody_watching(void) {
  CHECK(ph_in_child(case_memory_is_flat_with_nobody_watching) == 0);
}

/* Many publishers: the viewer keeps every one of them. */
static void many_publishers_are_all_kept(void) {
  char dir[] = "/tmp/nccltop-load-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  int ranks = getenv("NCCLTOP_LOAD_RANKS") ? atoi(getenv("NCCLTOP_LOAD_RANKS")) : 64;
  pid_t job = spawn_job(dir, ranks, 120);
  double t = viewer_sees(dir, ranks, 90);
  fprintf(stderr, "    %d publishers all seen after %.1f s\n", ranks, t);
  stop_group(job);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  CHECK(t >= 0);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  snprintf(plugin, sizeof plugin, "%s/libnccl-profiler-nccltop.so", bindir);
  TEST_RUN(viewer_killed_and_restarted_sees_everything_again);
  TEST_RUN(stale_sockets_of_killed_publishers_are_skipped);
  TEST_RUN(unsafe_endpoint_directories_are_refused);
  TEST_RUN(finalize_with_events_in_flight);
  TEST_RUN(memory_is_flat_with_nobody_watching);
  TEST_RUN(many_publishers_are_all_kept);
  return TEST_DONE();
}

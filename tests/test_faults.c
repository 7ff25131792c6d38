/* Fault injection: viewers killed and restarted, publishers killed (stale
 * socket files), refused endpoint directories, finalize with events in
 * flight, a proxy thread reporting after its communicator is gone, a long
 * run with nobody watching (memory flat), and many publishers at once. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* The plugin refuses an unsafe endpoint directory with a clear message
 * (through NCCL's logger), connects nothing, starts no ZeroMQ thread and
 * takes no file descriptor, leaves nothing behind after finalize, and the
 * job's events work as before. Each case runs in
 * a fresh process. Running as root, the cases that need an ordinary user's
 * permissions drop to uid/gid 65534 first (root ignores mode bits), and
 * "other-owner" chowns the directory to 65534; as another user it uses "/",
 * which root owns. */
static const char *bad_dir_kind;
static char logged[8192];
static void capture_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                        ...) {
  (void)flags;
  (void)file;
  (void)line;
  size_t n = strlen(logged);
  if (level != NT_NCCL_LOG_WARN || n + 2 >= sizeof logged) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(logged + n, sizeof logged - n - 1, fmt, ap);
  va_end(ap);
  strcat(logged, "\n");
}

static int count_entries(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* Threads of this process whose name starts with `prefix`. */
static int threads_named(const char *prefix) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
    if (f && fgets(name, sizeof name, f)) n += !strncmp(name, prefix, strlen(prefix));
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* Threads of ours or of ZeroMQ still alive in this process. */
static int publisher_threads(void) {
  return threads_named("nccltop-pub") + threads_named("ZMQbg");
}

static int zeromq_threads(void) {
  return threads_named("ZMQbg");
}

static bool become_nobody(void) {
  return geteuid() != 0 || (setgid(65534) == 0 && setuid(65534) == 0);
}

static void case_unsafe_endpoint_dir_is_refused(void) {
  char base[] = "/tmp/nccltop-bad-XXXXXX", dir[128];
  const char *k = bad_dir_kind, *want = NULL;
  CHECK(mkdtemp(base) != NULL);
  snprintf(dir, sizeof dir, "%s/ep", base);
  bool as_nobody = false;
  if (!strcmp(k, "symlink")) {
    CHECK(symlink(base, dir) == 0);
    want = "is a symlink; refusing it";
  } else if (!strcmp(k, "world-writable") || !strcmp(k, "group-readable")) {
    mode_t mode = k[0] == 'w' ? 0777 : 0750;
    CHECK(mkdir(dir, mode) == 0 && chmod(dir, mode) == 0);
    want = k[0] == 'w' ? "(mode 777); refusing it" : "(mode 750); refusing it";
  } else if (!strcmp(k, "other-owner")) {
    if (geteuid() == 0) {
      CHECK(mkdir(dir, 0700) == 0 && chown(dir, 65534, 65534) == 0);
      want = "is owned by uid 65534, not us; refusing it";
    } else {
      snprintf(dir, sizeof dir, "/");
      want = "is owned by uid 0, not us; refusing it";
    }
  } else if (!strcmp(k, "not-a-directory")) {
    FILE *f = fopen(dir, "w");
    CHECK(f != NULL);
    fclose(f);
    want = "is not a directory; refusing it";
  } else if (!strcmp(k, "missing-uncreatable")) {
    /* The parent exists but we may not write it: mkdir fails. */
    snprintf(dir, sizeof dir, "%s/locked/ep", base);
    char locked[160];
    snprintf(locked, sizeof locked, "%s/locked", base);
    CHECK(mkdir(locked, 0500) == 0 && chmod(locked, 0500) == 0);
    if (geteuid() == 0) CHECK(chown(base, 65534, 65534) == 0 && chown(locked, 65534, 65534) == 0);
    as_nobody = true;
    want = "cannot create endpoint directory";
  }
  const char *also = as_nobody ? "Permission denied" : "not publishing locally";
  setenv("NCCLTOP_DIR", dir, 1);
  memset(&H, 0, sizeof H);
  CHECK(ph_load(&H) == 0);
  if (as_nobody) CHECK(become_nobody());
  int fds = count_entries("/proc/self/fd");
  void *ctx = NULL;
  logged[0] = '\0';
  CHECK(H.v5->init(&ctx, 1, &H.mask, "victim", 1, 1, 0, capture_log) == 0);
  CHECK(ctx != NULL); /* the job goes on, profiled */
  int failures = 0;
  for (int i = 0; i < 2000; i++) { /* and its events work */
    void *op = NULL, *st = NULL;
    nt_descr_v5 d = ph_op(i % 8, 1, i & 1, NULL);
    failures += H.v5->startEvent(ctx, &op, &d) != 0 || op == NULL;
    d = ph_step(op, i % 8);
    failures += H.v5->startEvent(ctx, &st, &d) != 0 || st == NULL;
    failures +=
        H.v5->recordEventState(st, i & 1 ? NT_ST_STEP_SEND_WAIT : NT_ST_STEP_RECV_WAIT, NULL) != 0;
    failures += H.v5->stopEvent(st) != 0 || H.v5->stopEvent(op) != 0;
  }
  CHECK(failures == 0);
  H.flush();
  /* With nobody to publish to, ZeroMQ never started: no thread of its, and
   * no file descriptor more than before init (the publisher thread stays,
   * retiring operations and looking whether the directory gets fixed). */
  CHECK(zeromq_threads() == 0);
  CHECK(count_entries("/proc/self/fd") == fds);
  CHECK(H.v5->finalize(ctx) == 0);
  for (int i = 0; i < 200 && publisher_threads() > 0; i++) usleep(10000);
  CHECK(publisher_threads() == 0);
  if (getenv("NCCLTOP_TEST_VERBOSE") || !strstr(logged, want))
    fprintf(stderr, "    '%s' logged:\n%s", k, logged);
  CHECK(strstr(logged, want) != NULL);
  CHECK(strstr(logged, also) != NULL);
}

static void unsafe_endpoint_directories_are_refused(void) {
  static const char *kinds[] = {"symlink",     "world-writable",  "group-readable",
                                "other-owner", "not-a-directory", "missing-uncreatable"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    bad_dir_kind = kinds[i];
    int rc = ph_in_child(case_unsafe_endpoint_dir_is_refused);
    if (rc != 0) fprintf(stderr, "    endpoint directory case '%s' failed\n", kinds[i]);
    CHECK(rc == 0);
  }
  CHECK(system("rm -rf /tmp/nccltop-bad-??????") == 0);
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

/* One proxy thread serves two communicators (NCCL runs one per device for
 * every communicator on it). Communicator A is finalized while the thread
 * still has A's operations in flight, then the thread finishes them and
 * starts new ones with A's context: no crash, every call counted, A's steps
 * all add up, B is untouched. Then both are finalized (the publisher stops)
 * and the thread still reports; a new communicator restarts the publisher,
 * whose counters include everything. */
#define SHARED_HASH_A 0xa11ce00000000001ull
#define SHARED_HASH_B 0xb0b0000000000002ull
#define SHARED_STEPS  4
static void *shared_ctx[2];
static pthread_barrier_t shared_bar;
static uint64_t shared_calls; /* ABI calls the proxy thread made with a handle */

static void *shared_op(void *ctx, int channel) {
  void *op = NULL;
  nt_descr_v5 d = ph_op(channel, 1, 1, NULL);
  H.v5->startEvent(ctx, &op, &d);
  shared_calls++;
  return op;
}

static void shared_steps(void *op, bool stop_op) {
  for (int s = 0; s < SHARED_STEPS; s++) {
    void *st = NULL;
    nt_descr_v5 d = ph_step(op, s);
    H.v5->startEvent(NULL, &st, &d);
    ph_now += 10;
    nt_state_args_v5 a = {.proxyStep = {.transSize = 100}};
    H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, &a);
    ph_now += 10;
    H.v5->stopEvent(st);
    shared_calls += 3;
  }
  if (stop_op) {
    H.v5->stopEvent(op);
    shared_calls++;
  }
}

static void shared_ctrl(void *ctx) {
  void *c = NULL;
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  H.v5->startEvent(ctx, &c, &d);
  H.v5->recordEventState(c, NT_ST_CTRL_ACTIVE, NULL);
  H.v5->stopEvent(c);
  shared_calls += 3;
}

static void *shared_proxy(void *arg) {
  (void)arg;
  void *in_flight[4];
  for (int i = 0; i < 100; i++) { /* phase 1: both communicators */
    shared_ctrl(shared_ctx[i & 1]);
    shared_steps(shared_op(shared_ctx[0], 0), true);
    shared_steps(shared_op(shared_ctx[1], 0), true);
  }
  for (int i = 0; i < 4; i++) in_flight[i] = shared_op(shared_ctx[0], 1 + i);
  pthread_barrier_wait(&shared_bar); /* main finalizes A */
  pthread_barrier_wait(&shared_bar);
  for (int i = 0; i < 4; i++) shared_steps(in_flight[i], true); /* A's leftovers */
  for (int i = 0; i < 50; i++) { /* phase 2: A's stale context, B live */
    shared_ctrl(shared_ctx[0]);
    shared_steps(shared_op(shared_ctx[0], 0), true);
    shared_steps(shared_op(shared_ctx[1], 0), true);
  }
  pthread_barrier_wait(&shared_bar); /* main reads a snapshot, finalizes B */
  pthread_barrier_wait(&shared_bar);
  for (int i = 0; i < 50; i++) { /* phase 3: nobody live, no publisher */
    shared_ctrl(shared_ctx[i & 1]);
    shared_steps(shared_op(shared_ctx[i & 1], 0), true);
  }
  return NULL;
}

static uint64_t steps_of(const nt_snapshot *s, uint64_t hash) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < s->nchannels; i++)
    if (s->channels[i].comm_index < s->ncomms &&
        s->comms[s->channels[i].comm_index].comm_hash == hash)
      n += s->channels[i].steps;
  return n;
}

static void case_finalized_comm_on_a_shared_proxy_thread(void) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  shared_ctx[0] = ph_init(&H, SHARED_HASH_A, 0, 2);
  shared_ctx[1] = ph_init(&H, SHARED_HASH_B, 0, 2);
  CHECK(shared_ctx[0] && shared_ctx[1]);
  CHECK(ph_subscribe(&H) == 0 && ph_next_snapshot(&H, 5000) == 0);
  pthread_t t;
  CHECK(pthread_barrier_init(&shared_bar, NULL, 2) == 0);
  CHECK(pthread_create(&t, NULL, shared_proxy, NULL) == 0);
  pthread_barrier_wait(&shared_bar);
  int rc_a = H.v5->finalize(shared_ctx[0]); /* A's ops are still in flight */
  pthread_barrier_wait(&shared_bar);
  pthread_barrier_wait(&shared_bar); /* phase 2 done */
  bool ok = ph_latest(&H) == 0;
  uint64_t calls = shared_calls;
  int rc_b = H.v5->finalize(shared_ctx[1]); /* the last one: the publisher stops */
  pthread_barrier_wait(&shared_bar);        /* phase 3 runs with no publisher */
  pthread_join(t, NULL);
  CHECK(rc_a == 0 && rc_b == 0 && ok);
  CHECK_EQ_U64(steps_of(H.snap, SHARED_HASH_A), (100 + 4 + 50) * SHARED_STEPS);
  CHECK_EQ_U64(steps_of(H.snap, SHARED_HASH_B), (100 + 50) * SHARED_STEPS);
  CHECK_EQ_U64(H.snap->process.events, calls);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 0);
  CHECK(H.snap->nproxy == 1);
  void *c = ph_init(&H, 0xc0ffee, 0, 1); /* the publisher starts again */
  CHECK(c != NULL);
  ph_close(&H);
  H.zctx = H.sub = NULL;
  H.snap = NULL;
  CHECK(ph_subscribe(&H) == 0 && ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.events, shared_calls);
  CHECK_EQ_U64(steps_of(H.snap, SHARED_HASH_A) + steps_of(H.snap, SHARED_HASH_B),
               (100 + 4 + 50 + 100 + 50 + 50) * SHARED_STEPS);
  CHECK(H.v5->finalize(c) == 0);
}

static void a_finalized_comm_on_a_shared_proxy_thread_is_counted(void) {
  CHECK(ph_in_child(case_finalized_comm_on_a_shared_proxy_thread) == 0);
}

/* An event storm from 8 threads at once, with the publisher collecting
 * every 10 ms: each thread starts 3000 proxy ops that NCCL has not finished
 * yet, far more than its pool holds. Refused ops get NULL handles (their
 * steps too) and are counted as dropped, exactly; nothing crashes. When the
 * storm ends (the ops are stopped) every new op gets a handle again. Ops
 * never stopped at all (a pool filled with leaks) are reclaimed by age
 * (NCCLTOP_RECLAIM_MS) and counted. */
#define STORM_THREADS 8
#define STORM_OPS     3000
static void *storm_ctx;
static pthread_barrier_t storm_bar;
struct storm_result {
  int idx, got, leaked, after_storm_ok, after_leak_ok;
  uint64_t dropped, calls;
};

static void *storm_op(int ch, struct storm_result *r) {
  void *op = NULL, *st = NULL;
  nt_descr_v5 d = ph_op(ch, 1, 0, NULL);
  H.v5->startEvent(storm_ctx, &op, &d);
  d = ph_step(op, 0);
  H.v5->startEvent(storm_ctx, &st, &d); /* NULL parent when op was dropped */
  H.v5->recordEventState(st, NT_ST_STEP_RECV_WAIT, NULL);
  H.v5->stopEvent(st);
  r->calls += 2 + (st ? 2 : 0);
  r->dropped += op == NULL;
  return op;
}

static void *storm_thread(void *arg) {
  struct storm_result *r = arg;
  static void *ops[STORM_THREADS][STORM_OPS];
  void **mine = ops[r->idx];
  int ch = r->idx;
  pthread_barrier_wait(&storm_bar);
  for (int i = 0; i < STORM_OPS; i++) r->got += (mine[i] = storm_op(ch, r)) != NULL;
  for (int i = 0; i < STORM_OPS; i++) /* the storm ends: NCCL finishes them */
    if (mine[i]) H.v5->stopEvent(mine[i]), r->calls++;
  for (int i = 0; i < 1000; i++) {
    void *op = storm_op(ch, r);
    r->after_storm_ok += op != NULL;
    if (op) H.v5->stopEvent(op), r->calls++;
  }
  /* Leaks: ops never stopped, until the pool refuses one. */
  for (void *op; (op = storm_op(ch, r)) != NULL;) r->leaked++;
  pthread_barrier_wait(&storm_bar); /* main moves the clock past NCCLTOP_RECLAIM_MS */
  pthread_barrier_wait(&storm_bar);
  for (int i = 0; i < 2 * r->leaked; i++) {
    void *op = storm_op(ch, r);
    r->after_leak_ok += op != NULL;
    if (op) H.v5->stopEvent(op), r->calls++;
  }
  return NULL;
}

/* ph_latest waits for a 50 ms pause, which a 10 ms publisher never makes:
 * take the last snapshot that arrives within 400 ms after a flush. */
static int latest_of_a_fast_publisher(void) {
  H.flush();
  int got = -1;
  for (double t0 = now_s(); now_s() - t0 < 0.4;)
    if (ph_next_snapshot(&H, 100) == 0) got = 0;
  return got;
}

static void case_pool_exhaustion_under_a_storm(void) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  setenv("NCCLTOP_RECLAIM_MS", "100", 1);
  setenv("NCCLTOP_INTERVAL_MS", "10", 1);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  storm_ctx = ph_init(&H, 0x5703, 0, 2);
  CHECK(storm_ctx != NULL);
  CHECK(ph_subscribe(&H) == 0 && ph_next_snapshot(&H, 5000) == 0);
  static struct storm_result r[STORM_THREADS];
  pthread_t t[STORM_THREADS];
  CHECK(pthread_barrier_init(&storm_bar, NULL, STORM_THREADS + 1) == 0);
  for (int i = 0; i < STORM_THREADS; i++) {
    r[i].idx = i;
    CHECK(pthread_create(&t[i], NULL, storm_thread, &r[i]) == 0);
  }
  pthread_barrier_wait(&storm_bar); /* go */
  pthread_barrier_wait(&storm_bar); /* every pool is full of leaks */
  ph_now += 200 * 1000000ull;
  pthread_barrier_wait(&storm_bar);
  for (int i = 0; i < STORM_THREADS; i++) pthread_join(t[i], NULL);
  uint64_t dropped = 0, calls = 0, leaked = 0;
  for (int i = 0; i < STORM_THREADS; i++) {
    dropped += r[i].dropped;
    calls += r[i].calls;
    leaked += (uint64_t)r[i].leaked;
  }
  fprintf(stderr, "    storm: %d threads x %d ops, %d got handles (pool), %llu dropped\n",
          STORM_THREADS, STORM_OPS, r[0].got, (unsigned long long)dropped);
  for (int i = 0; i < STORM_THREADS; i++) {
    CHECK(r[i].got > 0 && r[i].got < STORM_OPS); /* the storm did exhaust the pool */
    CHECK(r[i].after_storm_ok == 1000);          /* recovered when the storm ended */
    CHECK(r[i].leaked > 0);
    CHECK(r[i].after_leak_ok == 2 * r[i].leaked); /* leaks reclaimed by age */
  }
  CHECK(latest_of_a_fast_publisher() == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, dropped);
  CHECK_EQ_U64(H.snap->process.reclaimed_ops, leaked);
  CHECK_EQ_U64(H.snap->process.events, calls);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
  uint64_t started = 0, done = 0;
  for (uint32_t i = 0; i < H.snap->nchannels; i++) {
    started += H.snap->channels[i].ops_started;
    done += H.snap->channels[i].ops_done;
  }
  CHECK_EQ_U64(started, done); /* nothing left in flight: stopped or reclaimed */
  CHECK(H.v5->finalize(storm_ctx) == 0);
}

static void pool_exhaustion_under_a_storm_drops_counts_and_recovers(void) {
  CHECK(ph_in_child(case_pool_exhaustion_under_a_storm) == 0);
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
    if (round == 0) {
      H.flush(); /* the publisher thread is up and has allocated what it needs */
      before = rss_kb();
    }
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
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  TEST_RUN(viewer_killed_and_restarted_sees_everything_again);
  TEST_RUN(stale_sockets_of_killed_publishers_are_skipped);
  TEST_RUN(unsafe_endpoint_directories_are_refused);
  TEST_RUN(finalize_with_events_in_flight);
  TEST_RUN(a_finalized_comm_on_a_shared_proxy_thread_is_counted);
  TEST_RUN(pool_exhaustion_under_a_storm_drops_counts_and_recovers);
  TEST_RUN(memory_is_flat_with_nobody_watching);
  TEST_RUN(many_publishers_are_all_kept);
  return TEST_DONE();
}

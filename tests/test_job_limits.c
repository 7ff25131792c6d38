/* The job never dies because of nccltop, whatever its limits (issue 24,
 * attacks B1, B2, B3, B15 of the third attack run). Each job is a forked
 * child (this binary executed anew, see job_start in hostile_job.h) that
 * loads the production plugin as NCCL does, with a logger that
 * captures every line:
 *  - a job that has used up its descriptors while viewers and relays come
 *    and go (before: libzmq's ipc listener asserted on EMFILE, SIGABRT);
 *  - a job that starts with 0 to 8 descriptors free (before: 2 to 4 free
 *    aborted in epoll.cpp, 0 or 1 said nothing);
 *  - a job under a thread limit of 1 to 8 (before: 2 and 3 aborted in
 *    thread.cpp; root only, as uid 65534);
 *  - ZeroMQ failing to give a context or a socket, and a communicator in a
 *    child forked after the plugin started (before: nothing logged).
 * Every job must exit 0, say each refusal in exactly one line, and, where
 * the limit allows, publish: to a viewer that is there before, and once
 * the room comes back. The job never listens: no socket of it accepts. */
#include <sys/resource.h>

#include "hostile_job.h"

static char nccltop_bin[PATH_MAX + 16], preload[PATH_MAX + 32];

/* What the job child does; its log and "ok" come back through a pipe. */
typedef struct {
  const char *dir;
  int free_fds;    /* >= 0: the soft RLIMIT_NOFILE leaves this many free at init */
  int nproc;       /* > 0: RLIMIT_NPROC, as uid 65534 (root only) */
  int fill_fd;     /* >= 0: after init, fill the descriptors until the parent writes here */
  bool fork_child; /* a child forked after init creates a communicator */
  double seconds;  /* events for this long (after the fill, if any) */
  /* then on, up to 20 s more, until the plugin has said it holds back: on a
   * loaded machine its first look at the readers can come late */
  bool until_refused;
  int report; /* where the log goes */
  int ready;  /* "full" is written here once the descriptors are used up */
} job_spec;

/* The soft limit that leaves exactly `k` descriptor numbers free. */
static rlim_t limit_leaving(int k) {
  int unused = 0;
  for (int fd = 0;; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    if (unused++ == k) return (rlim_t)fd;
  }
}

/* Descriptors that accept connections in this process. */
static int listening_sockets(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    int fd = atoi(e->d_name), on = 0;
    socklen_t len = sizeof on;
    if (e->d_name[0] != '.' && fd != dirfd(d) &&
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on)
      n++;
  }
  if (d) closedir(d);
  return n;
}

static void run_events(const nt_profiler_v5 *v5, void *ctx, double seconds) {
  for (double end = now_s() + seconds; now_s() < end;) {
    events(v5, ctx, 50);
    sleep_s(0.005);
  }
}

static int refusals(const char *log);

static bool has_refused(void) {
  pthread_mutex_lock(&log_mu);
  bool said = refusals(logged) > 0;
  pthread_mutex_unlock(&log_mu);
  return said;
}

static int fills[1 << 16];

static void job_child(const job_spec *js) {
  int inherited = listening_sockets(); /* the test's own viewers, forked with us */
  setenv("NCCLTOP_DIR", js->dir, 1);
  setenv("NCCLTOP_INTERVAL_MS", "50", 1);
  if (js->nproc > 0) {
    struct rlimit r = {(rlim_t)js->nproc, (rlim_t)js->nproc};
    if (setrlimit(RLIMIT_NPROC, &r) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(20);
  }
  void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  if (!v5) _exit(21);
  struct rlimit was;
  getrlimit(RLIMIT_NOFILE, &was);
  if (js->fill_fd >= 0) { /* a limit the fill reaches quickly */
    struct rlimit r = {was.rlim_cur < 512 ? was.rlim_cur : 512, was.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(22);
  }
  if (js->free_fds >= 0) {
    struct rlimit r = {limit_leaving(js->free_fds), was.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(22);
  }
  int mask = 0;
  void *ctx = init_comm(v5, 11, &mask);
  if (!ctx) _exit(23);
  int nfill = 0;
  if (js->fill_fd >= 0) {
    /* A viewer there before gets data: events until the parent says it
     * did (a byte on fill_fd; at most 20 s, for a loaded machine). */
    for (double end = now_s() + 20; now_s() < end;) {
      run_events(v5, ctx, 0.1);
      struct pollfd pf = {.fd = js->fill_fd, .events = POLLIN};
      char c;
      if (poll(&pf, 1, 0) == 1 && read(js->fill_fd, &c, 1) == 1) break;
    }
    while (nfill < (int)(sizeof fills / sizeof fills[0]) &&
           (fills[nfill] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
      nfill++;
    if (write(js->ready, "full\n", 5) != 5) _exit(24);
    char c;
    while (read(js->fill_fd, &c, 1) < 0 && errno == EINTR) { /* events go on in NCCL's threads */
    }
  }
  run_events(v5, ctx, js->seconds);
  for (double end = now_s() + 20; js->until_refused && !has_refused() && now_s() < end;)
    run_events(v5, ctx, 0.1);
  for (int i = 0; i < nfill; i++) close(fills[i]);
  if (js->fill_fd >= 0) run_events(v5, ctx, 4.0); /* room again: publishing resumes */
  int listening = listening_sockets() - inherited;
  if (js->fork_child) {
    fflush(NULL);
    pid_t c = fork();
    if (c == 0) {
      void *cctx = NULL;
      v5->init(&cctx, 12, &mask, "forked", 1, 2, 1, capture_log);
      v5->init(&cctx, 13, &mask, "forked-again", 1, 2, 1, capture_log);
      dprintf(js->report, "child:\n%schild end\n", logged);
      _exit(0);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) _exit(25);
  }
  v5->finalize(ctx);
  setrlimit(RLIMIT_NOFILE, &was); /* the sanitizers' exit reports need descriptors */
  dprintf(js->report, "listening %d\n%sok\n", listening, logged);
  _exit(0);
}

typedef struct {
  pid_t pid;
  int report, ready, go;
  char out[sizeof logged + 4096];
} job;

/* The job is this binary executed anew with its spec in argv (see
 * job_start in hostile_job.h for why never a bare fork). */
static bool job_spawn(job *j, job_spec js) {
  int rep[2], rdy[2], go[2];
  memset(j, 0, sizeof *j);
  /* Close-on-exec: the nccltop processes a test starts must not hold them;
   * the job's own ends are kept across its exec alone. */
  if (pipe2(rep, O_CLOEXEC) || pipe2(rdy, O_CLOEXEC) || pipe2(go, O_CLOEXEC)) return false;
  char a[8][32];
  snprintf(a[0], sizeof a[0], "%d", js.free_fds);
  snprintf(a[1], sizeof a[1], "%d", js.nproc);
  snprintf(a[2], sizeof a[2], "%d", js.fill_fd >= 0 ? go[0] : -1);
  snprintf(a[3], sizeof a[3], "%d", js.fork_child);
  snprintf(a[4], sizeof a[4], "%.3f", js.seconds);
  snprintf(a[5], sizeof a[5], "%d", js.until_refused);
  snprintf(a[6], sizeof a[6], "%d", rep[1]);
  snprintf(a[7], sizeof a[7], "%d", rdy[1]);
  char *argv[] = {self_exe, "--job", (char *)js.dir, a[0], a[1], a[2],
                  a[3],     a[4],    a[5],           a[6], a[7], NULL};
  fflush(NULL);
  j->pid = fork();
  if (j->pid == 0) {
    if (fcntl(rep[1], F_SETFD, 0) == 0 && fcntl(rdy[1], F_SETFD, 0) == 0 &&
        fcntl(go[0], F_SETFD, 0) == 0)
      execv(self_exe, argv);
    _exit(127);
  }
  close(rep[1]);
  close(rdy[1]);
  close(go[0]);
  j->report = rep[0];
  j->ready = rdy[0];
  j->go = go[1];
  return j->pid > 0;
}

/* The job process: its spec back from argv (job_spawn). */
static void job_from_argv(char **argv) {
  job_spec js = {.dir = argv[2],
                 .free_fds = atoi(argv[3]),
                 .nproc = atoi(argv[4]),
                 .fill_fd = atoi(argv[5]),
                 .fork_child = atoi(argv[6]) != 0,
                 .seconds = atof(argv[7]),
                 .until_refused = atoi(argv[8]) != 0,
                 .report = atoi(argv[9]),
                 .ready = atoi(argv[10])};
  job_child(&js);
}

static bool job_wait_full(job *j, double seconds) {
  struct pollfd pf = {.fd = j->ready, .events = POLLIN};
  char buf[8];
  return poll(&pf, 1, (int)(seconds * 1000)) == 1 && read(j->ready, buf, sizeof buf) > 0;
}

/* The job's exit status (-1: still running after `seconds`, then killed),
 * its report in j->out. */
static int job_end(job *j, double seconds) {
  if (j->go >= 0) close(j->go);
  j->go = -1;
  size_t n = 0;
  double end = now_s() + seconds;
  int st = 0;
  bool ended = false;
  while (!ended && now_s() < end) {
    struct pollfd pf = {.fd = j->report, .events = POLLIN};
    if (poll(&pf, 1, 50) == 1) {
      ssize_t r = read(j->report, j->out + n, sizeof j->out - n - 1);
      if (r > 0) n += (size_t)r;
    }
    ended = waitpid(j->pid, &st, WNOHANG) == j->pid;
  }
  if (!ended) {
    kill(j->pid, SIGKILL);
    waitpid(j->pid, NULL, 0);
  }
  /* What is left in the pipe (its writer is gone). */
  (void)fcntl(j->report, F_SETFL, O_NONBLOCK);
  for (ssize_t r;
       n + 1 < sizeof j->out && (r = read(j->report, j->out + n, sizeof j->out - n - 1)) > 0;)
    n += (size_t)r;
  j->out[n] = '\0';
  close(j->report);
  close(j->ready);
  if (!ended) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int lines_with(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* What the plugin says when it holds back for want of room or of ZeroMQ. */
static int refusals(const char *log) {
  return lines_with(log, "not publishing") + lines_with(log, "not connected") +
         lines_with(log, "publisher did not start");
}

static bool make_dir(char *dir, size_t cap) {
  snprintf(dir, cap, "/tmp/nccltop-limits-XXXXXX");
  return mkdtemp(dir) != NULL;
}

static void remove_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

static pid_t spawn(char *const argv[], const char *log) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
    execv(nccltop_bin, argv);
    _exit(127);
  }
  return pid;
}

static void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 300 && waitpid(pid, NULL, WNOHANG) == 0; i++) sleep_s(0.01);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* ---- B1: descriptors used up while viewers and relays come ---- */

static void a_job_out_of_descriptors_survives_viewers_and_relays(void) {
  char dir[64], vlog[96], rlog[96], listen[64];
  CHECK(make_dir(dir, sizeof dir));
  snprintf(vlog, sizeof vlog, "%s.viewer", dir);
  snprintf(rlog, sizeof rlog, "%s.relay", dir);
  snprintf(listen, sizeof listen, "tcp://127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
  viewer_t before, after;
  CHECK(viewer_open(&before, dir) == 0); /* attached before: publishing */
  job j;
  CHECK(job_spawn(&j, (job_spec){.dir = dir, .free_fds = -1, .fill_fd = 0, .seconds = 3}));
  /* The job fills its descriptors once the viewer attached before has
   * its first snapshot (a fixed 1 s was too short on a loaded machine). */
  for (double end = now_s() + 20; before.snapshots == 0 && now_s() < end;)
    viewer_pump(&before, 0.1);
  bool primed = write(j.go, "g", 1) == 1;
  bool full = job_wait_full(&j, 20);
  uint64_t before_full = before.snapshots;
  /* Now everyone comes: a viewer of ours, nccltop -b, a relay. */
  CHECK(viewer_open(&after, dir) == 0);
  char *vargs[] = {nccltop_bin, "-b", "-d", "200ms", "--dir", dir, NULL};
  char *rargs[] = {nccltop_bin, "relay", "--dir", dir, "--listen", listen, "--insecure", NULL};
  pid_t vpid = spawn(vargs, vlog), rpid = spawn(rargs, rlog);
  viewer_pump(&after, 1.0);
  uint64_t after_full = after.snapshots, before_during = before.snapshots;
  /* Connected before: served while full (1 s, longer on a loaded machine
   * until the first one; the job stays full until we say). */
  for (double end = now_s() + 10, least = now_s() + 1;
       now_s() < least || (before.snapshots == before_during && now_s() < end);)
    viewer_pump(&before, 0.1);
  before_during = before.snapshots - before_during;
  if (j.go >= 0) close(j.go); /* it stays full 3 s more, then frees its descriptors */
  j.go = -1;
  viewer_pump(&after, 6.0);
  int status = job_end(&j, 30);
  stop(vpid);
  stop(rpid);
  viewer_close(&before);
  viewer_close(&after);
  fprintf(stderr,
          "    job exit %d; viewer attached before: %llu snapshots before the fill, %llu in 1 s or "
          "more while full; one attached after: %llu while full, %llu once the job had room\n",
          status, (unsigned long long)before_full, (unsigned long long)before_during,
          (unsigned long long)after_full, (unsigned long long)(after.snapshots - after_full));
  if (status != 0 || refusals(j.out) != 1 || getenv("NT_VERBOSE")) fprintf(stderr, "%s", j.out);
  remove_dir(dir);
  unlink(vlog);
  unlink(rlog);
  CHECK(primed && full);
  CHECK(status == 0);
  CHECK(strstr(j.out, "listening 0\n") != NULL); /* nothing in the job accepts */
  CHECK(before_full > 0 && before_during > 0);
  CHECK(after.snapshots > after_full); /* served once the job had room again */
  CHECK(refusals(j.out) == 1);         /* said once */
}

/* ---- B2: 0 to 8 descriptors free at the start ---- */

static void a_job_starting_with_few_descriptors_survives(void) {
  static const int ks[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 64};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    char dir[64];
    CHECK(make_dir(dir, sizeof dir));
    viewer_t v;
    CHECK(viewer_open(&v, dir) == 0);
    job j;
    CHECK(job_spawn(&j, (job_spec){.dir = dir,
                                   .free_fds = ks[i],
                                   .fill_fd = -1,
                                   .seconds = ks[i] < 64 ? 1.5 : 4,
                                   .until_refused = ks[i] < 64}));
    /* Publishing: until the first snapshot (a loaded machine may take
     * seconds to connect); holding back: the job's whole life. */
    viewer_pump(&v, 2.0);
    for (double end = now_s() + 3; ks[i] >= 64 && v.snapshots == 0 && now_s() < end;)
      viewer_pump(&v, 0.1);
    int status = job_end(&j, 20);
    viewer_close(&v);
    remove_dir(dir);
    int said = refusals(j.out);
    fprintf(stderr, "    %2d free: exit %d, %llu snapshots, %d refusal line(s)\n", ks[i], status,
            (unsigned long long)v.snapshots, said);
    if (status != 0 || (said != 1 && ks[i] < 64) || getenv("NT_VERBOSE"))
      fprintf(stderr, "%s", j.out);
    CHECK(status == 0);
    if (ks[i] < 64)
      CHECK(said == 1 && v.snapshots == 0);
    else
      CHECK(said == 0 && v.snapshots > 0);
  }
}

/* ---- B3: a thread limit ---- */

/* The directory is uid 65534's, whom the job runs as; our viewer's socket
 * there (bound before, as the directory was still ours) open to it. */
static bool viewer_for_nobody(viewer_t *v, const char *dir) {
  if (viewer_open(v, dir) != 0) return false;
  return fchmodat(v->dirfd, v->in.name, 0666, 0) == 0 && chown(dir, 65534, 65534) == 0;
}

static void a_job_under_a_thread_limit_survives(void) {
  for (int n = 1; n <= 8; n++) {
    char dir[64];
    CHECK(make_dir(dir, sizeof dir));
    viewer_t v;
    CHECK(viewer_for_nobody(&v, dir));
    job j;
    CHECK(job_spawn(&j, (job_spec){.dir = dir,
                                   .free_fds = -1,
                                   .nproc = n,
                                   .fill_fd = -1,
                                   .seconds = 2.5,
                                   .until_refused = n < 8}));
    viewer_pump(&v, 3.0);
    int status = job_end(&j, 20);
    viewer_close(&v);
    remove_dir(dir);
    int said = refusals(j.out);
    fprintf(stderr, "    nproc %d: exit %d, %llu snapshots, %d refusal line(s)\n", n, status,
            (unsigned long long)v.snapshots, said);
    if (status != 0 || said > 1 || getenv("NT_VERBOSE")) fprintf(stderr, "%s", j.out);
    CHECK(status == 0);
    CHECK(said == 1 ? v.snapshots == 0 : said == 0 && v.snapshots > 0);
  }
}

/* ---- B15: ZeroMQ failing, and a forked child ---- */

static void job_with_failing_zeromq(const char *dir) {
  job j;
  if (!job_spawn(&j, (job_spec){.dir = dir, .free_fds = -1, .fill_fd = -1, .seconds = 2})) _exit(2);
  int status = job_end(&j, 20);
  printf("exit %d\n%s", status, j.out);
  fflush(stdout);
  _exit(0);
}

static void zeromq_failing_is_said_once(void) {
  static const char *what[] = {"ctx", "socket"};
  static const char *said[] = {"cannot create a ZeroMQ context", "ZeroMQ cannot start"};
  for (int i = 0; i < 2; i++) {
    char dir[64], out[96], cmd[PATH_MAX * 2 + 400];
    CHECK(make_dir(dir, sizeof dir));
    viewer_t v;
    CHECK(viewer_open(&v, dir) == 0);
    snprintf(out, sizeof out, "%s.out", dir);
    /* The job runs in a process of its own, with the failing calls preloaded. */
    snprintf(cmd, sizeof cmd,
             "NT_ZMQ_FAIL=%s LD_PRELOAD=%s ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 "
             "/proc/%d/exe --failing-zeromq %s > %s 2>&1",
             what[i], preload, (int)getpid(), dir, out);
    int rc = system(cmd);
    viewer_pump(&v, 0.1);
    viewer_close(&v);
    char text[sizeof logged + 256] = "";
    FILE *f = fopen(out, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    unlink(out);
    remove_dir(dir);
    fprintf(stderr, "    %s failing: %d line(s) saying so\n", what[i], lines_with(text, said[i]));
    if (lines_with(text, said[i]) != 1 || getenv("NT_VERBOSE")) fprintf(stderr, "%s", text);
    CHECK(rc == 0 && strstr(text, "exit 0\n") != NULL);
    CHECK(lines_with(text, said[i]) == 1);
  }
}

static void a_forked_child_says_why_it_is_not_profiled(void) {
  char dir[64];
  CHECK(make_dir(dir, sizeof dir));
  job j;
  CHECK(job_spawn(
      &j,
      (job_spec){.dir = dir, .free_fds = -1, .fill_fd = -1, .fork_child = true, .seconds = 0.5}));
  int status = job_end(&j, 20);
  remove_dir(dir);
  const char *child = strstr(j.out, "child:\n"), *end = child ? strstr(child, "child end") : NULL;
  int lines = 0;
  for (const char *p = child; p && end && (p = strstr(p, "was forked from")) && p < end; p++)
    lines++;
  if (lines != 1 || getenv("NT_VERBOSE")) fprintf(stderr, "%s", j.out);
  CHECK(status == 0);
  CHECK(lines == 1); /* two communicators, one line */
}

int main(int argc, char **argv) {
  hostile_init(argc, argv);
  if (argc == 11 && !strcmp(argv[1], "--job")) job_from_argv(argv);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *bindir = dirname(exe);
  snprintf(nccltop_bin, sizeof nccltop_bin, "%s/../nccltop", bindir);
  snprintf(preload, sizeof preload, "%s/libzmq_fail.so", bindir);
  if (argc == 3 && !strcmp(argv[1], "--failing-zeromq")) job_with_failing_zeromq(argv[2]);
  TEST_RUN(a_job_out_of_descriptors_survives_viewers_and_relays);
  TEST_RUN(a_job_starting_with_few_descriptors_survives);
  if (geteuid() == 0)
    TEST_RUN(a_job_under_a_thread_limit_survives);
  else
    TEST_SKIP(a_job_under_a_thread_limit_survives, "needs root to run the job as uid 65534");
  TEST_RUN(zeromq_failing_is_said_once);
  TEST_RUN(a_forked_child_says_why_it_is_not_profiled);
  return TEST_DONE();
}

/* How nccltop ends: Ctrl-C, SIGTERM and SIGHUP quit the monitor on the
 * first try and leave the terminal as it was (no alternate screen, cursor
 * visible, as libvterm sees it); `demo` also stops its simulated ranks and
 * removes its directory; a demo whose job cannot run ends at once with the
 * simulator's reason; command-line mistakes are one line and exit 2. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"
#include "vterm_harness.h"

static char nccltop[PATH_MAX + 16];

/* What the terminal's modes are, as the program left them. */
static bool alt_screen, cursor_visible = true;

static int on_termprop(VTermProp prop, VTermValue *val, void *user) {
  (void)user;
  if (prop == VTERM_PROP_ALTSCREEN) alt_screen = val->boolean;
  if (prop == VTERM_PROP_CURSORVISIBLE) cursor_visible = val->boolean;
  return 1;
}

static const VTermScreenCallbacks props = {.settermprop = on_termprop};

static int start(vt_term *t, char *const argv[], char *const env[]) {
  alt_screen = false;
  cursor_visible = true;
  if (vt_start(t, 24, 100, argv, env) != 0) return -1;
  vterm_screen_enable_altscreen(t->screen, 1);
  vterm_screen_set_callbacks(t->screen, &props, NULL);
  return 0;
}

/* Sends the quit (a key or a signal) once and checks the way out. */
static bool quits_and_restores(vt_term *t, const char *key, int sig) {
  if (!alt_screen || cursor_visible) {
    fprintf(stderr, "    the monitor never took the screen (alt %d, cursor %d)\n", alt_screen,
            cursor_visible);
    return false;
  }
  if (key) vt_send(t, key);
  if (sig) kill(t->pid, sig);
  int st = vt_wait_exit(t, 5);
  vt_pump(t, 50);
  if (st != 0 || alt_screen || !cursor_visible) {
    fprintf(stderr, "    after the quit: status %d, alternate screen %d, cursor visible %d\n", st,
            alt_screen, cursor_visible);
    return false;
  }
  return true;
}

static void monitor_quits_on_the_first_signal(void) {
  static const struct {
    const char *key;
    int sig;
  } ways[] = {{"\003", 0}, {NULL, SIGTERM}, {NULL, SIGHUP}};
  char dir[] = "/tmp/nccltop-quit-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  bool ok = true;
  for (size_t i = 0; ok && i < sizeof ways / sizeof ways[0]; i++) {
    vt_term t;
    char *argv[] = {nccltop, "-d", "100", NULL};
    char *env[] = {env_dir, NULL};
    ok = start(&t, argv, env) == 0 && vt_wait_for(&t, "nccltop", 10) &&
         quits_and_restores(&t, ways[i].key, ways[i].sig);
    if (!ok) fprintf(stderr, "    way %zu (Ctrl-C, SIGTERM, SIGHUP) failed\n", i);
    vt_stop(&t);
  }
  rmdir(dir);
  CHECK(ok);
}

/* Two signals at once: the second ends the process the default way before
 * the loop could quit, and the terminal is given back all the same. */
static void a_second_signal_still_restores_the_terminal(void) {
  char dir[] = "/tmp/nccltop-quit2-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  vt_term t;
  char *argv[] = {nccltop, "-d", "100", NULL};
  char *env[] = {env_dir, NULL};
  bool ok = start(&t, argv, env) == 0 && vt_wait_for(&t, "nccltop", 10);
  if (ok && (!alt_screen || cursor_visible)) ok = false;
  kill(t.pid, SIGTERM); /* two kinds: the same signal twice would be one */
  kill(t.pid, SIGINT);
  int st = vt_wait_exit(&t, 5);
  vt_pump(&t, 50);
  if (!ok || st == -1 || alt_screen || !cursor_visible) {
    fprintf(stderr, "    status %d, alternate screen %d, cursor visible %d\n", st, alt_screen,
            cursor_visible);
    ok = false;
  }
  vt_stop(&t);
  rmdir(dir);
  CHECK(ok);
}

static long parent_of(long pid) {
  char stat[64], buf[512];
  snprintf(stat, sizeof stat, "/proc/%ld/stat", pid);
  FILE *f = fopen(stat, "r");
  int ppid = 0;
  if (f && fgets(buf, sizeof buf, f)) {
    const char *close_paren = strrchr(buf, ')');
    if (close_paren) sscanf(close_paren + 2, "%*c %d", &ppid);
  }
  if (f) fclose(f);
  return ppid;
}

/* The processes of the demo: the simulator (the child of the viewer, whose
 * socket file in the demo's directory under tmp names it) and its ranks. */
static int demo_processes(const char *tmp, pid_t *pids, int cap) {
  char path[PATH_MAX] = "";
  DIR *d = opendir(tmp);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "nccltop-demo-", 13))
      snprintf(path, sizeof path, "%s/%s", tmp, de->d_name);
  if (d) closedir(d);
  uint32_t viewer = 0;
  d = path[0] ? opendir(path) : NULL;
  while (d && (de = readdir(d)) && !viewer)
    viewer = nt_endpoint_parse_viewer_name(de->d_name, NULL);
  if (d) closedir(d);
  long sim = 0;
  int n = 0;
  d = viewer ? opendir("/proc") : NULL;
  while (d && (de = readdir(d)) && !sim) {
    long pid = strtol(de->d_name, NULL, 10);
    if (pid > 0 && parent_of(pid) == (long)viewer) sim = pid;
  }
  if (d) closedir(d);
  if (!sim) return 0;
  pids[n++] = (pid_t)sim;
  d = opendir("/proc");
  while (d && (de = readdir(d)) && n < cap) {
    long pid = strtol(de->d_name, NULL, 10);
    if (pid > 0 && parent_of(pid) == sim) pids[n++] = (pid_t)pid;
  }
  if (d) closedir(d);
  return n;
}

static bool gone(pid_t pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

static void demo_cleans_up_on_a_signal(void) {
  static const struct {
    const char *key;
    int sig;
  } ways[] = {{"\003", 0}, {NULL, SIGTERM}};
  bool ok = true;
  for (size_t w = 0; ok && w < sizeof ways / sizeof ways[0]; w++) {
    char tmp[] = "/tmp/nccltop-qdemo-XXXXXX", env_tmp[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
    vt_term t;
    char *argv[] = {nccltop, "demo", "--ranks", "2", "--comms", "1", "-d", "200", NULL};
    char *env[] = {env_tmp, NULL};
    pid_t pids[8];
    int n = 0;
    ok = start(&t, argv, env) == 0 && vt_wait_for(&t, "sim-comm-0", 20);
    double end = vt_now() + 10;
    while (ok && (n = demo_processes(tmp, pids, 8)) < 3 && vt_now() < end) vt_pump(&t, 100);
    if (ok && n < 3) {
      fprintf(stderr, "    found %d of the demo's 3 processes\n", n);
      ok = false;
    }
    ok = ok && quits_and_restores(&t, ways[w].key, ways[w].sig);
    vt_stop(&t);
    for (int i = 0; ok && i < n; i++)
      if (!gone(pids[i])) {
        fprintf(stderr, "    process %d of the demo outlived it\n", (int)pids[i]);
        ok = false;
      }
    if (rmdir(tmp) != 0) {
      fprintf(stderr, "    the demo left its directory in %s\n", tmp);
      ok = false;
      char cmd[128];
      snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
      if (system(cmd) != 0) fprintf(stderr, "    cannot remove %s\n", tmp);
    }
  }
  CHECK(ok);
}

/* A wrapper that forwards a signal (timeout, srun) makes the demo get two:
 * the second ends it at once, and still its job goes and its directory is
 * removed (it stayed, with its socket files, before). */
static void demo_cleans_up_on_a_second_signal_too(void) {
  char tmp[] = "/tmp/nccltop-qdemo2-XXXXXX", env_tmp[64];
  CHECK(mkdtemp(tmp) != NULL);
  snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
  vt_term t;
  char *argv[] = {nccltop,   "demo", "--ranks", "2",   "--comms", "1",
                  "--nodes", "2",    "-d",      "200", NULL};
  char *env[] = {env_tmp, NULL};
  pid_t pids[8];
  int n = 0;
  bool ok = start(&t, argv, env) == 0 && vt_wait_for(&t, "sim-comm-0", 20);
  for (double end = vt_now() + 10; ok && (n = demo_processes(tmp, pids, 8)) < 1 && vt_now() < end;)
    vt_pump(&t, 100);
  if (ok && n < 1) {
    fprintf(stderr, "    the demo's simulator not found\n");
    ok = false;
  }
  kill(t.pid, SIGTERM); /* two kinds: the same signal twice would be one */
  kill(t.pid, SIGINT);
  int st = vt_wait_exit(&t, 5);
  vt_pump(&t, 50);
  if (ok && (st == -1 || alt_screen || !cursor_visible)) {
    fprintf(stderr, "    status %d, alternate screen %d, cursor visible %d\n", st, alt_screen,
            cursor_visible);
    ok = false;
  }
  vt_stop(&t);
  for (double end = vt_now() + 5; ok && n && !gone(pids[0]) && vt_now() < end;) usleep(50000);
  if (ok && n && !gone(pids[0])) {
    fprintf(stderr, "    the demo's simulator %d outlived it\n", (int)pids[0]);
    ok = false;
  }
  if (rmdir(tmp) != 0) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -lR %s >&2; rm -rf %s", tmp, tmp);
    fprintf(stderr, "    the demo left its directory in %s:\n", tmp);
    if (system(cmd) != 0) fprintf(stderr, "    cannot remove %s\n", tmp);
    ok = false;
  }
  CHECK(ok);
}

/* Runs `nccltop ARGS` (stdout and stderr together) under a 10 s bound; the
 * output in out, the time it took in *secs; returns the exit status. */
static int run(const char *args, char *out, size_t cap, double *secs) {
  char cmd[PATH_MAX + 256];
  snprintf(cmd, sizeof cmd, "timeout -s KILL 10 %s %s 2>&1 </dev/null", nccltop, args);
  double t0 = vt_now();
  FILE *p = popen(cmd, "r");
  size_t n = p ? fread(out, 1, cap - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose(p) : -1;
  if (secs) *secs = vt_now() - t0;
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void demo_with_a_job_that_cannot_run_ends_at_once(void) {
  static const struct {
    const char *args, *says;
  } cases[] = {
      {"demo --ranks 0 -b", "--ranks needs a whole number from 1 to 1024, not '0'\n"},
      {"demo --nccl-version 2.25", "--nccl-version needs 2.26"},
      {"demo --stall-rank 8 -b", "nccltop sim: bad configuration: stall and straggler ranks"},
      /* Refused by its ranks, not by the option parser: batch and screen. */
      {"demo --ranks 2 --plugin /nonexistent.so -b", "nccltop sim: rank"},
      {"demo --ranks 2 --plugin /nonexistent.so", "cannot load /nonexistent.so"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[4096];
    double secs;
    int rc = run(cases[i].args, out, sizeof out, &secs);
    if (rc == 0 || rc == -1 || secs > 5 || !strstr(out, cases[i].says))
      fprintf(stderr, "    nccltop %s: rc %d after %.1fs:\n%s\n", cases[i].args, rc, secs, out);
    CHECK(rc != 0 && rc != -1);
    CHECK(secs <= 5);
    CHECK(strstr(out, cases[i].says) != NULL);
  }
}

static void demo_in_batch_ends_with_its_job(void) {
  static char out[1 << 18]; /* all of it: a reader that stops early is a write error */
  double secs;
  int rc = run("demo --ranks 2 --comms 1 --duration 1 -b -d 200", out, sizeof out, &secs);
  if (rc != 0 || secs > 8) fprintf(stderr, "    rc %d after %.1fs:\n%s\n", rc, secs, out);
  CHECK(rc == 0);
  CHECK(secs <= 8);
}

/* A job that ends before the first frame (every 500 ms) still gets one: the
 * last frame is the job's final state, each process ended, every operation
 * done (3 iterations of 1 communicator on 2 ranks: 6). */
static void demo_in_batch_shows_a_short_jobs_final_state(void) {
  static char out[1 << 18];
  double secs;
  int rc = run("demo --ranks 2 --comms 1 --iterations 3 --deterministic -b --json", out, sizeof out,
               &secs);
  char *last = NULL, *save = NULL;
  for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) last = l;
  cJSON *f = last ? cJSON_Parse(last) : NULL;
  int procs = 0, ended = 0;
  double done = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
    procs++;
    ended += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "ended"));
  }
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(f, "phases")) done +=
      cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "done"));
  if (rc != 0 || procs != 2 || ended != 2 || done != 6)
    fprintf(stderr, "    rc %d after %.1fs; last frame: %d processes, %d ended, %.0f done:\n%s\n",
            rc, secs, procs, ended, done, last ? last : "(none)");
  cJSON_Delete(f);
  CHECK(rc == 0);
  CHECK(procs == 2 && ended == 2);
  CHECK(done == 6);
}

static void command_line_mistakes_are_one_line(void) {
  static const struct {
    const char *args, *says;
    int rc;
  } cases[] = {
      {"--foo", "nccltop: unknown option '--foo'; try 'nccltop --help'\n", 2},
      {"-x", "nccltop: unknown option '-x'; try 'nccltop --help'\n", 2},
      {"-b -d", "nccltop: option '-d' needs a value; try 'nccltop --help'\n", 2},
      {"-b extra", "nccltop: unexpected argument 'extra'; try 'nccltop --help'\n", 2},
      {"nosuchcommand", "nccltop: unknown command 'nosuchcommand'; try 'nccltop --help'\n", 2},
      {"demo --foo", "nccltop demo: unknown option '--foo'; try 'nccltop --help'\n", 2},
      {"-b -n 1 -d 5x", "nccltop: -d/--delay must be", 2},
      {"-b -n 1 -d 10ms", "nccltop: -d/--delay must be", 2},
      {"-b -n 1 -d 61s", "nccltop: -d/--delay must be", 2},
      {"-b -n 1 -d s", "nccltop: -d/--delay must be", 2},
      {"-b -n 1 -d -1", "nccltop: -d/--delay must be", 2},
      {"-b -n 1 --dir /dev/null", "nccltop: --dir /dev/null is not a directory\n", 2},
      {"-b -n 1 --connect garbage", "nccltop: --connect garbage: not a ZeroMQ endpoint", 2},
      {"-b -n 1 --topology /nonexistent", "nccltop: --topology: /nonexistent: No such file", 2},
      /* tcp:// is checked without connecting (a trial connect reached the
       * relay without CURVE: a false "--insecure" line in its log) */
      {"-b -n 1 --insecure --connect tcp://node1",
       "nccltop: --connect tcp://node1: not a ZeroMQ "
       "endpoint",
       2},
      {"-b -n 1 --insecure --connect tcp://node1:0", "not a ZeroMQ endpoint", 2},
      {"-b -n 1 --insecure --connect tcp://node1:99999", "not a ZeroMQ endpoint", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[4096];
    int rc = run(cases[i].args, out, sizeof out, NULL);
    bool one_line = strchr(out, '\n') == out + strlen(out) - 1;
    if (rc != cases[i].rc || !one_line || !strstr(out, cases[i].says))
      fprintf(stderr, "    nccltop %s: rc %d:\n%s\n", cases[i].args, rc, out);
    CHECK(rc == cases[i].rc);
    CHECK(one_line);
    CHECK(strstr(out, cases[i].says) != NULL);
  }
}

/* An endpoint directory the plugins would refuse (open to other users) is
 * refused by batch mode too, at once, saying why: not an empty frame. */
static void an_unsafe_directory_is_refused_in_batch(void) {
  char dir[] = "/tmp/nccltop-open-XXXXXX", args[128], out[4096];
  CHECK(mkdtemp(dir) != NULL);
  CHECK(chmod(dir, 0755) == 0);
  snprintf(args, sizeof args, "-b -n 1 --dir %s", dir);
  int rc = run(args, out, sizeof out, NULL);
  rmdir(dir);
  bool one_line = strchr(out, '\n') == out + strlen(out) - 1;
  if (rc != 2 || !one_line || !strstr(out, "accessible to other users (mode 755); refusing it"))
    fprintf(stderr, "    nccltop %s: rc %d:\n%s\n", args, rc, out);
  CHECK(rc == 2);
  CHECK(one_line);
  CHECK(strstr(out, "accessible to other users (mode 755); refusing it (chmod 700 it)") != NULL);
}

/* -d takes a unit: a bare number is milliseconds. Two frames 0.5 s apart
 * take about half a second, whichever way it is written. */
static void delay_takes_a_unit(void) {
  char dir[] = "/tmp/nccltop-delay-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  static const char *const delays[] = {"500", "500ms", "0.5s", ".5s"};
  for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
    char args[256], out[1 << 14];
    double secs;
    snprintf(args, sizeof args, "-b -n 3 -d %s --dir %s", delays[i], dir);
    int rc = run(args, out, sizeof out, &secs);
    if (rc != 0 || secs < 1.4 || secs > 4)
      fprintf(stderr, "    -d %s: rc %d, 3 frames in %.2fs\n%s\n", delays[i], rc, secs, out);
    CHECK(rc == 0);
    CHECK(secs >= 1.4 && secs <= 4);
  }
  rmdir(dir);
}

static void sim_help_lists_the_simulator_options(void) {
  char out[1 << 14];
  int rc = run("sim --help", out, sizeof out, NULL);
  CHECK(rc == 0);
  CHECK(strstr(out, "usage: nccltop sim") != NULL);
  CHECK(strstr(out, "--stall-rank") != NULL);
  CHECK(strstr(out, "--rank-env") != NULL);
  CHECK(strstr(out, "--batch") == NULL); /* the monitor's options are not the simulator's */
}

int main(void) {
  char dir[PATH_MAX];
  vt_build_dir(dir, sizeof dir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", dir);
  TEST_RUN(monitor_quits_on_the_first_signal);
  TEST_RUN(a_second_signal_still_restores_the_terminal);
  TEST_RUN(demo_cleans_up_on_a_signal);
  TEST_RUN(demo_cleans_up_on_a_second_signal_too);
  TEST_RUN(demo_with_a_job_that_cannot_run_ends_at_once);
  TEST_RUN(demo_in_batch_ends_with_its_job);
  TEST_RUN(demo_in_batch_shows_a_short_jobs_final_state);
  TEST_RUN(command_line_mistakes_are_one_line);
  TEST_RUN(an_unsafe_directory_is_refused_in_batch);
  TEST_RUN(delay_takes_a_unit);
  TEST_RUN(sim_help_lists_the_simulator_options);
  return TEST_DONE();
}

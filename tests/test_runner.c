/* tests/run.sh, the runner `make check` uses, on stand-in test binaries
 * (shell scripts that pass, fail, crash, hang or print no total): totals
 * added up, a hung binary killed at TEST_TIMEOUT and counted as failed
 * while the others still run, each binary's output printed whole (never
 * interleaved with another's when they run side by side), the slowest
 * listed, and the exit status. Run from the repository's root, as
 * `make check` does. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

static char dir[] = "/tmp/nccltop-runner-XXXXXX";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A stand-in test binary: a script with this body. */
static bool script(const char *name, const char *body) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return false;
  bool ok = fprintf(f, "#!/bin/sh\n%s\n", body) > 0;
  ok &= fclose(f) == 0;
  return ok && chmod(path, 0755) == 0;
}

/* run.sh over the named stand-ins; its whole output and exit status. */
static char *run(const char *env, const char *names, int *status, double *took) {
  char cmd[1024], list[512] = "";
  size_t used = 0;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", names);
  for (char *t = strtok(copy, " "); t; t = strtok(NULL, " "))
    used += (size_t)snprintf(list + used, sizeof list - used, " %s/%s", dir, t);
  snprintf(cmd, sizeof cmd, "env %s sh tests/run.sh%s 2>&1", env, list);
  double t0 = now_s();
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while (buf && n < cap - 1 && (got = fread(buf + n, 1, cap - 1 - n, p)) > 0) n += got;
  int st = pclose(p);
  *took = now_s() - t0;
  if (buf) buf[n] = '\0';
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

static bool make_stand_ins(void) {
  return script("pass", "echo 'ok   a' >&2; echo 'ok   b' >&2; echo '2 passed, 0 failed'") &&
         script("fail", "echo 'FAIL c' >&2; echo '1 passed, 1 failed'; exit 1") &&
         script("crash", "echo 'ok   d' >&2; kill -SEGV $$") && script("quiet", "exit 0") &&
         script("hang", "echo 'ok   e' >&2; exec sleep 60") &&
         /* Two that write a line at a time for a while: side by side, the
          * runner must still print each one's lines together. */
         script("slow1", "for i in 1 2 3 4 5; do echo \"one $i\" >&2; sleep 0.1; done; "
                         "echo '5 passed, 0 failed'") &&
         script("slow2", "for i in 1 2 3 4 5; do echo \"two $i\" >&2; sleep 0.1; done; "
                         "echo '5 passed, 0 failed'");
}

static void totals_add_up_and_the_status_says_it(void) {
  int st;
  double took;
  char *out = run("TEST_JOBS=1", "pass slow1", &st, &took);
  CHECK(out && st == 0 && strstr(out, "7 passed, 0 failed"));
  CHECK(strstr(out, "== ") && strstr(out, "   ok   a"));
  free(out);
  out = run("TEST_JOBS=1", "pass fail", &st, &took);
  CHECK(out && st != 0 && strstr(out, "3 passed, 1 failed"));
  free(out);
}

static void a_crash_or_a_missing_total_is_a_failure(void) {
  int st;
  double took;
  char *out = run("TEST_JOBS=2", "pass crash quiet", &st, &took);
  if (!out || !strstr(out, "2 passed, 2 failed")) fprintf(stderr, "%s\n", out ? out : "");
  CHECK(out && st != 0 && strstr(out, "2 passed, 2 failed"));
  CHECK(strstr(out, "crash(rc=") && strstr(out, "quiet(rc=0)"));
  free(out);
}

/* A hung binary is killed at the limit; the others ran meanwhile. */
static void a_hung_binary_is_killed_at_the_limit_and_the_rest_run(void) {
  int st;
  double took;
  char *out = run("TEST_JOBS=2 TEST_TIMEOUT=2", "hang pass slow1", &st, &took);
  if (!out || !strstr(out, "killed after 2 s")) fprintf(stderr, "%s\n", out ? out : "");
  CHECK(out && st != 0 && strstr(out, "killed after 2 s (TEST_TIMEOUT)"));
  CHECK(strstr(out, "7 passed, 1 failed") && strstr(out, "hang(rc=124)"));
  CHECK(took < 30); /* not the script's 60 s */
  free(out);
}

/* Side by side, each binary's lines are one block; the slowest listed. */
static void outputs_side_by_side_stay_whole(void) {
  int st;
  double took;
  char *out = run("TEST_JOBS=2", "slow1 slow2", &st, &took);
  CHECK(out && st == 0 && strstr(out, "10 passed, 0 failed"));
  const char *one = strstr(out, "   one 1"), *two = strstr(out, "   two 1");
  CHECK(one && two);
  /* Whichever came first, its five lines are together. */
  const char *first = one < two ? one : two, *other = one < two ? two : one;
  for (int i = 2; i <= 5; i++) {
    char want[32];
    snprintf(want, sizeof want, "   %s %d", one < two ? "one" : "two", i);
    const char *at = strstr(first, want);
    CHECK(at && at < other);
  }
  CHECK(strstr(out, "slowest:"));
  free(out);
}

static void bad_settings_are_refused(void) {
  int st;
  double took;
  char *out = run("TEST_JOBS=x", "pass", &st, &took);
  CHECK(out && st == 2 && strstr(out, "TEST_JOBS must be a positive number"));
  free(out);
}

int main(void) {
  if (access("tests/run.sh", R_OK) != 0) {
    TEST_SKIP(main, "run from the repository's root (tests/run.sh)");
    return TEST_DONE();
  }
  if (!mkdtemp(dir) || !make_stand_ins()) {
    perror("stand-ins");
    return 1;
  }
  TEST_RUN(totals_add_up_and_the_status_says_it);
  TEST_RUN(a_crash_or_a_missing_total_is_a_failure);
  TEST_RUN(a_hung_binary_is_killed_at_the_limit_and_the_rest_run);
  TEST_RUN(outputs_side_by_side_stay_whole);
  TEST_RUN(bad_settings_are_refused);
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return TEST_DONE();
}

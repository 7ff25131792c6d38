/* A live batch run that hears nothing says so, once, on stderr: where it
 * looks and what a job needs (its frames stay as they are); never in its
 * first 3 s, and never when a job publishes. The real binary, as a user
 * runs it. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "viewer_pipe.h"

#define HINT "nothing received in 3 s from "

/* `nccltop ARGS...` with stdout to /dev/null: its exit status (-1: did
 * not run or was killed) and its stderr, whole, into err. */
static int run(char *const argv[], char *err, size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, 1) < 0 || dup2(fds[1], 2) < 0) _exit(126);
    close(fds[0]);
    close(fds[1]);
    setpgid(0, 0);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  for (ssize_t r; n + 1 < cap && (r = read(fds[0], err + n, cap - 1 - n)) > 0;) n += (size_t)r;
  err[n] = '\0';
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static void an_empty_directory_is_named_once(void) {
  char dir[] = "/tmp/nccltop-wait-XXXXXX", exe[PATH_MAX + 16], err[4096], want[256];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(exe, sizeof exe, "%s/nccltop", bindir);
  char *argv[] = {exe, "-b", "-n", "6", "-d", "1000", "--dir", dir, NULL};
  CHECK_EQ_U64(run(argv, err, sizeof err), 0);
  snprintf(want, sizeof want, HINT "%s: no NCCL process with the nccltop plugin there yet", dir);
  if (count(err, want) != 1) fprintf(stderr, "    stderr:\n%s\n", err);
  CHECK_EQ_U64(count(err, want), 1);
  CHECK_EQ_U64(count(err, "\n"), 1);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* Discovery and a publisher's first interval take a moment: a run over
 * before 3 s says nothing. */
static void not_in_the_first_seconds(void) {
  char dir[] = "/tmp/nccltop-wait-XXXXXX", exe[PATH_MAX + 16], err[4096];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(exe, sizeof exe, "%s/nccltop", bindir);
  char *argv[] = {exe, "-b", "-n", "2", "-d", "1000", "--dir", dir, NULL};
  CHECK_EQ_U64(run(argv, err, sizeof err), 0);
  CHECK_STR(err, "");
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* A job that publishes (the demo's, 2 ranks): frames past 3 s, no line. */
static void never_while_a_job_publishes(void) {
  char exe[PATH_MAX + 16], err[8192];
  snprintf(exe, sizeof exe, "%s/nccltop", bindir);
  char *argv[] = {exe, "demo", "--ranks", "2", "-b", "-n", "5", "-d", "1000", NULL};
  CHECK_EQ_U64(run(argv, err, sizeof err), 0);
  if (count(err, HINT)) fprintf(stderr, "    stderr:\n%s\n", err);
  CHECK_EQ_U64(count(err, HINT), 0);
}

int main(void) {
  find_bindir();
  TEST_RUN(an_empty_directory_is_named_once);
  TEST_RUN(not_in_the_first_seconds);
  TEST_RUN(never_while_a_job_publishes);
  return TEST_DONE();
}

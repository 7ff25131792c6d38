/* What tests that read `nccltop -b --json` through a pipe share: where the
 * build's binaries are, starting the viewer with its stdout on a pipe, and
 * stopping a process group (a simulated job). */
#ifndef NCCLTOP_VIEWER_PIPE_H
#define NCCLTOP_VIEWER_PIPE_H

#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char bindir[PATH_MAX];

/* build/<cfg>/tests/x -> build/<cfg>: where nccltop and the plugins are. */
static inline void find_bindir(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
}

/* SIGTERM to the group, 3 s, then SIGKILL; reaped. */
static inline void stop_group(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 300; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) return;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* `nccltop -b --json -n FRAMES -d 100 --dir DIR`, its stdout on a pipe. */
static inline FILE *start_viewer_frames(const char *dir, const char *frames, pid_t *pid) {
  int fds[2];
  if (pipe(fds) != 0) return NULL;
  *pid = fork();
  if (*pid < 0) return NULL;
  if (*pid == 0) {
    char exe[PATH_MAX + 16];
    snprintf(exe, sizeof exe, "%s/nccltop", bindir);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(exe, exe, "-b", "--json", "-n", frames, "-d", "100", "--dir", dir, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  return fdopen(fds[0], "r");
}

#endif

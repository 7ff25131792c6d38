/* Shared by test_relay.c and test_curve.c: starting `nccltop relay`,
 * `nccltop keygen` and batch JSON viewers as real processes with their own
 * $XDG_CONFIG_HOME, on 127.0.0.1 ports probed free, every wait bounded. */
#ifndef NCCLTOP_RELAY_HARNESS_H
#define NCCLTOP_RELAY_HARNESS_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char rh_bindir[PATH_MAX];

static void rh_find_bindir(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(rh_bindir, sizeof rh_bindir, "%s/..", dirname(exe));
}

static double rh_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void rh_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0). */
static unsigned rh_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  unsigned port = 0;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
    port = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

/* Runs `nccltop ARGS...` with XDG_CONFIG_HOME=xdg (NULL: an empty
 * directory's worth of nothing: unset, HOME=/nonexistent), stdout to out_fd
 * and stderr to err_fd (-1: /dev/null). Returns the pid (its own process
 * group). */
static pid_t rh_spawn(char *const args[], const char *xdg, int out_fd, int err_fd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  int null = open("/dev/null", O_RDWR);
  dup2(out_fd >= 0 ? out_fd : null, 1);
  dup2(err_fd >= 0 ? err_fd : null, 2);
  if (xdg) {
    setenv("XDG_CONFIG_HOME", xdg, 1);
  } else {
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/nonexistent-nccltop-test", 1);
  }
  unsetenv("NCCLTOP_DIR");
  char exe[PATH_MAX + 16], *argv[32];
  snprintf(exe, sizeof exe, "%s/nccltop", rh_bindir);
  argv[0] = exe;
  int n = 1;
  for (; args[n - 1] && n < 31; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  execv(exe, argv);
  _exit(127);
}

/* Waits up to timeout_s for pid; its exit status, or -1 (then killed). */
static int rh_wait(pid_t pid, double timeout_s) {
  double until = rh_now() + timeout_s;
  int st;
  while (rh_now() < until) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    rh_sleep_ms(20);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

/* SIGTERM, then SIGKILL after 3 s; its exit status (-1: killed). */
static int rh_stop(pid_t pid) {
  if (pid <= 0) return -1;
  kill(-pid, SIGTERM);
  int rc = rh_wait(pid, 3);
  if (rc < 0) fprintf(stderr, "    (process %d needed SIGKILL)\n", (int)pid);
  return rc;
}

/* A relay with stderr in log (a file it appends to). */
static pid_t rh_relay(const char *xdg, const char *log, const char *dir, unsigned port,
                      const char *extra1, const char *extra2, const char *extra3) {
  char listen[64];
  snprintf(listen, sizeof listen, "tcp://127.0.0.1:%u", port);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  char *args[] = {"relay",        "--dir",        (char *)dir,    "--listen", listen,
                  (char *)extra1, (char *)extra2, (char *)extra3, NULL};
  pid_t pid = rh_spawn(args, xdg, -1, fd);
  if (fd >= 0) close(fd);
  return pid;
}

/* Whether the file contains s (read whole, up to 1 MiB). */
__attribute__((unused)) static bool rh_file_has(const char *path, const char *s) {
  static char buf[1 << 20];
  FILE *f = fopen(path, "re");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, s) != NULL;
}

/* Waits until the file contains s. */
__attribute__((unused)) static bool rh_wait_file(const char *path, const char *s,
                                                 double timeout_s) {
  for (double until = rh_now() + timeout_s; rh_now() < until; rh_sleep_ms(50))
    if (rh_file_has(path, s)) return true;
  return false;
}

/* A batch JSON viewer: `nccltop -b --json -n N -d MS ARGS...`, its frames
 * read with a deadline. */
typedef struct {
  pid_t pid;
  int fd;
  char buf[4 << 20];
  size_t len;
} rh_viewer;

static bool rh_viewer_start(rh_viewer *v, const char *xdg, int frames, int delay_ms, const char *a1,
                            const char *a2, const char *a3, const char *a4, const char *a5,
                            const char *a6) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  char n[16], d[16];
  snprintf(n, sizeof n, "%d", frames);
  snprintf(d, sizeof d, "%d", delay_ms);
  char *args[] = {"-b",       "--json",   "-n",       n,          "-d",       d,   (char *)a1,
                  (char *)a2, (char *)a3, (char *)a4, (char *)a5, (char *)a6, NULL};
  v->pid = rh_spawn(args, xdg, fds[1], -1);
  close(fds[1]);
  v->fd = fds[0];
  v->len = 0;
  return v->pid > 0;
}

/* The next frame, parsed; NULL at the deadline or the end. */
static cJSON *rh_viewer_frame(rh_viewer *v, double deadline) {
  for (;;) {
    char *nl = memchr(v->buf, '\n', v->len);
    if (nl) {
      *nl = '\0';
      cJSON *j = cJSON_Parse(v->buf);
      size_t used = (size_t)(nl + 1 - v->buf);
      memmove(v->buf, nl + 1, v->len - used);
      v->len -= used;
      if (j) return j;
      continue;
    }
    int ms = (int)((deadline - rh_now()) * 1000);
    if (ms <= 0 || v->len >= sizeof v->buf - 1) return NULL;
    struct pollfd p = {.fd = v->fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0) return NULL;
    ssize_t r = read(v->fd, v->buf + v->len, sizeof v->buf - 1 - v->len);
    if (r <= 0) return NULL;
    v->len += (size_t)r;
  }
}

/* The pipe is closed first: a viewer blocked writing a frame ends on EPIPE. */
static void rh_viewer_stop(rh_viewer *v) {
  close(v->fd);
  rh_stop(v->pid);
}

__attribute__((unused)) static double rh_num(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* The first of the frame's errors containing s, or NULL. */
__attribute__((unused)) static const char *rh_error_with(const cJSON *frame, const char *s) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(frame, "errors")) {
    if (cJSON_IsString(e) && strstr(e->valuestring, s)) return e->valuestring;
  }
  return NULL;
}

/* Removes a directory's files, then itself. */
static void rh_rmdir(const char *dir) {
  char cmd[PATH_MAX + 32];
  if (strncmp(dir, "/tmp/nccltop-", 13) != 0) return; /* ours only */
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    cannot remove %s\n", dir);
}

#endif

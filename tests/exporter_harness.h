/* What the exporter tests share: `nccltop exporter` started on a free
 * loopback port (it prints the port it got), a small HTTP/1.0 client over
 * a socket (no libcurl), and promtool run on a text. */
#ifndef NCCLTOP_EXPORTER_HARNESS_H
#define NCCLTOP_EXPORTER_HARNESS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "scenario_harness.h"

typedef struct {
  pid_t pid;
  int port;
} exporter;

/* Starts `nccltop exporter --listen 127.0.0.1:0 --dir DIR -d DELAY` plus
 * `extra` (NULL-terminated, at most 8) and reads the port it prints. */
static inline bool exporter_start(exporter *e, const char *dir, const char *delay,
                                  const char *const *extra) {
  int fds[2];
  e->pid = -1;
  e->port = 0;
  if (pipe(fds) != 0) return false;
  const char *argv[24] = {nccltop, "exporter", "--listen", "127.0.0.1:0",
                          "--dir", dir,        "-d",       delay};
  int n = 8;
  for (int i = 0; extra && extra[i] && i < 8; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  fflush(NULL);
  pid_t parent = getpid();
  e->pid = fork();
  if (e->pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (e->pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv(nccltop, (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  char line[256];
  size_t len = 0;
  double end = now_s() + 20;
  while (len < sizeof line - 1 && now_s() < end) {
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t r = read(fds[0], line + len, 1);
    if (r <= 0) break;
    if (line[len++] == '\n') break;
  }
  close(fds[0]);
  line[len] = '\0';
  const char *colon = strrchr(line, ':');
  e->port = colon ? atoi(colon + 1) : 0;
  if (e->port <= 0) fprintf(stderr, "    the exporter said: %s\n", line);
  return e->port > 0;
}

static inline void exporter_stop(exporter *e) {
  if (e->pid <= 0) return;
  kill(e->pid, SIGTERM);
  if (wait_exit(e->pid, 10) == -1) {
    kill(e->pid, SIGKILL);
    waitpid(e->pid, NULL, 0);
  }
  e->pid = -1;
}

/* A deterministic 4-rank job that stays up (linger) in dir (24 bytes). */
static inline pid_t exporter_det_job(nt_sim_config *c, char *dir) {
  snprintf(dir, 24, "/tmp/nccltop-exp-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  base_config(c, dir);
  c->ranks = 4;
  c->channels = 2;
  c->deterministic = true;
  c->linger_s = 60;
  pid_t pid = nt_sim_spawn(c);
  if (pid > 0 && !wait_publishers(dir, c->ranks, 30)) stop_group(&pid);
  return pid;
}

/* An HTTP response: status, headers and body (NUL-terminated, heap). */
typedef struct {
  int status;
  char *head; /* the status line and headers */
  char *body;
  size_t body_len;
} http_reply;

static inline void http_free(http_reply *r) {
  free(r->head);
  free(r->body);
  memset(r, 0, sizeof *r);
}

/* One request to 127.0.0.1:port from the loopback address `from` (NULL:
 * the kernel's choice, 127.0.0.1), HTTP/1.0: the server closes after the
 * reply; false on a connection problem or after `seconds`. */
static inline bool http_request_from(const char *from, int port, const char *method,
                                     const char *path, const char *body, double seconds,
                                     http_reply *out) {
  memset(out, 0, sizeof *out);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct sockaddr_in src = {.sin_family = AF_INET};
  struct timeval tv = {(time_t)seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if ((from && (inet_pton(AF_INET, from, &src.sin_addr) != 1 ||
                bind(fd, (struct sockaddr *)&src, sizeof src) != 0)) ||
      connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return false;
  }
  char req[1024];
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n%s", method,
                   path, body ? strlen(body) : 0, body ? body : "");
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return false;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  double end = now_s() + seconds;
  for (;;) {
    if (!buf || now_s() > end) break;
    if (cap - len < 4096) {
      char *b = realloc(buf, cap * 2);
      if (!b) break;
      buf = b;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  if (!buf) return false;
  buf[len] = '\0';
  char *sep = strstr(buf, "\r\n\r\n");
  if (!sep || sscanf(buf, "HTTP/1.%*d %d", &out->status) != 1) {
    free(buf);
    return false;
  }
  *sep = '\0';
  out->head = strdup(buf);
  out->body_len = len - (size_t)(sep + 4 - buf);
  out->body = malloc(out->body_len + 1);
  if (!out->head || !out->body) {
    free(buf);
    http_free(out);
    return false;
  }
  memcpy(out->body, sep + 4, out->body_len);
  out->body[out->body_len] = '\0';
  free(buf);
  return true;
}

static inline bool http_request(int port, const char *method, const char *path, const char *body,
                                double seconds, http_reply *out) {
  return http_request_from(NULL, port, method, path, body, seconds, out);
}

/* The value of header `name` (case-insensitive) in r, copied to buf. */
static inline bool http_header(const http_reply *r, const char *name, char *buf, size_t cap) {
  size_t nl = strlen(name);
  for (const char *p = r->head; p && *p;) {
    const char *eol = strstr(p, "\r\n");
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (*v == ' ') v++;
      snprintf(buf, cap, "%.*s", (int)(len - (size_t)(v - p)), v);
      return true;
    }
    p = eol ? eol + 2 : NULL;
  }
  return false;
}

/* Runs `promtool check metrics` on text; its exit status, its output in
 * out. -1 when promtool could not run. */
static inline int promtool_check(const char *text, char *out, size_t cap) {
  char in[] = "/tmp/nccltop-promtool-XXXXXX";
  int fd = mkstemp(in);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  bool ok = write(fd, text, len) == (ssize_t)len;
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", in);
  FILE *p = ok ? popen(cmd, "r") : NULL;
  size_t n = p ? fread(out, 1, cap - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose(p) : -1;
  unlink(in);
  return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static inline bool have_promtool(void) {
  return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* The value of the first sample of `name` whose labels contain every
 * `must` (a NULL-terminated list of label="value" strings); NAN if none. */
static inline double prom_value(const char *text, const char *name, const char *const *must) {
  size_t nl = strlen(name);
  for (const char *p = text; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len > nl && !strncmp(p, name, nl) && (p[nl] == '{' || p[nl] == ' ')) {
      char line[4096];
      snprintf(line, sizeof line, "%.*s", (int)len, p);
      bool all = true;
      for (int i = 0; must && must[i]; i++) all = all && strstr(line, must[i]);
      const char *sp = strrchr(line, ' ');
      if (all && sp) return strtod(sp + 1, NULL);
    }
    p = eol ? eol + 1 : NULL;
  }
  return NAN;
}

#endif

/* Runs a real program in a pseudo-terminal and reads its screen through
 * libvterm, as a person would see it: text per cell, after the program's
 * own escape sequences. Waiting is by condition with a deadline, never by a
 * fixed sleep. */
#ifndef NCCLTOP_VTERM_HARNESS_H
#define NCCLTOP_VTERM_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vterm.h>

typedef struct {
  int fd;
  pid_t pid;
  int rows, cols;
  VTerm *vt;
  VTermScreen *screen;
  char text[200 * 400]; /* last screen dump: rows joined by '\n' */
  /* Whether the program asked for mouse reports (xterm's mode 1000, as
   * ncurses asks: "CSI ? 1006 ; 1000 h", which libvterm 0.1.4 does not
   * report as a property), seen in its output. */
  bool mouse;
} vt_term;

/* The mouse mode requests in one chunk of output. */
static void vt_scan_mouse(vt_term *t, const char *buf, size_t n) {
  for (size_t i = 0; i + 6 < n; i++) {
    if (buf[i] != '\033' || buf[i + 1] != '[' || buf[i + 2] != '?') continue;
    size_t j = i + 3;
    while (j < n && ((buf[j] >= '0' && buf[j] <= '9') || buf[j] == ';')) j++;
    if (j >= n || (buf[j] != 'h' && buf[j] != 'l')) continue;
    for (size_t k = i + 3; k + 4 <= j; k++)
      if (!memcmp(buf + k, "1000", 4) && (k == i + 3 || buf[k - 1] == ';'))
        t->mouse = buf[j] == 'h';
  }
}

static double vt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts argv (argv[0] a path) in a rows x cols pty with env additions. */
static int vt_start(vt_term *t, int rows, int cols, char *const argv[], char *const env[]) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  memset(t, 0, sizeof *t);
  t->rows = rows;
  t->cols = cols;
  fflush(NULL);
  t->pid = forkpty(&t->fd, NULL, NULL, &ws);
  if (t->pid < 0) return -1;
  if (t->pid == 0) {
    setenv("TERM", "xterm-256color", 1);
    setenv("LANG", "C.UTF-8", 1);
    setenv("LC_ALL", "C.UTF-8", 1);
    /* No settings file: the user's must not change what a test sees, nor
     * a test's keys change the user's (a test names its own in env). */
    setenv("NCCLTOP_CONFIG", "", 1);
    for (int i = 0; env && env[i]; i++) putenv(env[i]);
    execv(argv[0], argv);
    _exit(127);
  }
  fcntl(t->fd, F_SETFL, fcntl(t->fd, F_GETFL) | O_NONBLOCK);
  t->vt = vterm_new(rows, cols);
  vterm_set_utf8(t->vt, 1);
  t->screen = vterm_obtain_screen(t->vt);
  vterm_screen_reset(t->screen, 1);
  return 0;
}

/* Feeds what the program wrote so far (waiting up to ms for output). */
static void vt_pump(vt_term *t, int ms) {
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(t->fd, &rd);
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  if (select(t->fd + 1, &rd, NULL, NULL, &tv) <= 0) return;
  char buf[65536];
  ssize_t n;
  while ((n = read(t->fd, buf, sizeof buf)) > 0) {
    vt_scan_mouse(t, buf, (size_t)n);
    vterm_input_write(t->vt, buf, (size_t)n);
  }
}

static void vt_put_utf8(char **o, uint32_t c) {
  char *p = *o;
  if (c < 0x80)
    *p++ = (char)c;
  else if (c < 0x800)
    *p++ = (char)(0xC0 | c >> 6), *p++ = (char)(0x80 | (c & 0x3F));
  else if (c < 0x10000)
    *p++ = (char)(0xE0 | c >> 12), *p++ = (char)(0x80 | ((c >> 6) & 0x3F)),
    *p++ = (char)(0x80 | (c & 0x3F));
  else
    *p++ = (char)(0xF0 | c >> 18), *p++ = (char)(0x80 | ((c >> 12) & 0x3F)),
    *p++ = (char)(0x80 | ((c >> 6) & 0x3F)), *p++ = (char)(0x80 | (c & 0x3F));
  *o = p;
}

/* Dumps the screen into t->text. */
static const char *vt_text(vt_term *t) {
  char *o = t->text;
  for (int r = 0; r < t->rows; r++) {
    for (int c = 0; c < t->cols; c++) {
      VTermScreenCell cell;
      VTermPos pos = {.row = r, .col = c};
      uint32_t ch = ' ';
      if (vterm_screen_get_cell(t->screen, pos, &cell) && cell.chars[0]) ch = cell.chars[0];
      vt_put_utf8(&o, ch);
    }
    *o++ = '\n';
  }
  *o = '\0';
  return t->text;
}

/* Pumps until the screen contains `what` or the deadline passes. */
static bool vt_wait_for(vt_term *t, const char *what, double seconds) {
  double end = vt_now() + seconds;
  do {
    vt_pump(t, 50);
    if (strstr(vt_text(t), what)) return true;
  } while (vt_now() < end);
  fprintf(stderr, "    screen never showed \"%s\"; it shows:\n%s\n", what, t->text);
  return false;
}

/* Pumps until `ok(t, arg)` holds (read again on every pump: a read may
 * catch a line half redrawn), or the deadline; says what the screen shows
 * when it never did (`what`: the condition in words). */
__attribute__((unused)) static bool vt_wait_until(vt_term *t, double seconds,
                                                  bool (*ok)(vt_term *, const void *),
                                                  const void *arg, const char *what) {
  double end = vt_now() + seconds;
  do {
    vt_pump(t, 50);
    vt_text(t);
    if (ok(t, arg)) return true;
  } while (vt_now() < end);
  fprintf(stderr, "    never: %s; the screen shows:\n%s\n", what, t->text);
  return false;
}

/* The build directory this test binary lives in (build/<cfg>/tests/x ->
 * build/<cfg>), where nccltop and the plugin are. */
__attribute__((unused)) static void vt_build_dir(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(buf, cap, "%s/..", dirname(exe));
}

/* The attributes of the cell at (row, col): reverse video, and its
 * foreground colour's palette index (-1: the default or not indexed). */
__attribute__((unused)) static void vt_cell_attr(vt_term *t, int row, int col, bool *reverse,
                                                 int *fg) {
  VTermScreenCell cell;
  VTermPos pos = {.row = row, .col = col};
  *reverse = false;
  *fg = -1;
  if (!vterm_screen_get_cell(t->screen, pos, &cell)) return;
  *reverse = cell.attrs.reverse;
  if (VTERM_COLOR_IS_INDEXED(&cell.fg) && !VTERM_COLOR_IS_DEFAULT_FG(&cell.fg))
    *fg = cell.fg.indexed.idx;
}

static void vt_send(vt_term *t, const char *keys) {
  if (write(t->fd, keys, strlen(keys)) < 0) perror("write pty");
}

__attribute__((unused)) static void vt_resize(vt_term *t, int rows, int cols) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  ioctl(t->fd, TIOCSWINSZ, &ws);
  vterm_set_size(t->vt, rows, cols);
  t->rows = rows;
  t->cols = cols;
}

/* Waits for the program to exit; returns its status, -1 on timeout. */
static int vt_wait_exit(vt_term *t, double seconds) {
  double end = vt_now() + seconds;
  int st;
  while (vt_now() < end) {
    vt_pump(t, 20);
    if (waitpid(t->pid, &st, WNOHANG) == t->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  }
  return -1;
}

static void vt_stop(vt_term *t) {
  if (t->pid > 0 && waitpid(t->pid, NULL, WNOHANG) == 0) {
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
  }
  if (t->vt) vterm_free(t->vt);
  close(t->fd);
  t->vt = NULL;
}

/* ---- reading the screen by line (t->text, the last dump) ---- */

/* Row `row` of the last dump into buf, trailing blanks cut. */
__attribute__((unused)) static const char *screen_row(const vt_term *t, int row, char *buf,
                                                      size_t cap) {
  const char *p = t->text;
  for (int r = 0; r < row && p; r++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) p = "";
  size_t n = strcspn(p, "\n");
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  while (n && buf[n - 1] == ' ') n--;
  buf[n] = '\0';
  return buf;
}

/* Whether line contains every needle (NULL-terminated), in order. */
__attribute__((unused)) static bool has_in_order(const char *line, const char *const *needles) {
  for (int i = 0; needles[i]; i++) {
    const char *at = strstr(line, needles[i]);
    if (!at) return false;
    line = at + strlen(needles[i]);
  }
  return true;
}

/* The first row of the last dump with the needles, or -1. */
__attribute__((unused)) static int row_with(const vt_term *t, const char *const *needles) {
  char line[2048];
  for (int r = 0; r < t->rows; r++)
    if (has_in_order(screen_row(t, r, line, sizeof line), needles)) return r;
  return -1;
}

__attribute__((unused)) static int count_rows(const vt_term *t, const char *const *needles) {
  char line[2048];
  int n = 0;
  for (int r = 0; r < t->rows; r++) n += has_in_order(screen_row(t, r, line, sizeof line), needles);
  return n;
}

/* Needles for row_with: ROW("COUNT", "AVG TIME"). */
#define ROW(...) ((const char *const[]){__VA_ARGS__, NULL})

/* `nccltop demo` on a terminal, in a private TMPDIR (its endpoint
 * directory). */
typedef struct {
  vt_term t;
  char tmp[64], env_tmp[96];
  bool started;
} vt_demo;

/* Starts `nccltop demo EXTRA...` (extra: NULL-terminated) on a rows x cols
 * terminal; false when it did not start. */
__attribute__((unused)) static bool vt_demo_start(vt_demo *d, char *nccltop, int rows, int cols,
                                                  char *const *extra) {
  snprintf(d->tmp, sizeof d->tmp, "/tmp/nccltop-demo-XXXXXX");
  d->started = false;
  if (!mkdtemp(d->tmp)) return false;
  snprintf(d->env_tmp, sizeof d->env_tmp, "TMPDIR=%s", d->tmp);
  char *argv[32] = {nccltop, "demo"};
  int n = 2;
  for (int i = 0; extra[i] && n < 30; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  char *env[] = {d->env_tmp, NULL};
  d->started = vt_start(&d->t, rows, cols, argv, env) == 0;
  return d->started;
}

/* q quits (exit status 0, checked when ok); the directory goes whatever
 * happened. ok, and false when the demo did not quit cleanly. */
__attribute__((unused)) static bool vt_demo_stop(vt_demo *d, bool ok) {
  if (d->started) {
    vt_send(&d->t, "q");
    if (ok) ok = vt_wait_exit(&d->t, 15) == 0;
    vt_stop(&d->t);
  }
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d->tmp);
  if (system(cmd) != 0) fprintf(stderr, "    cannot remove %s\n", d->tmp);
  return ok;
}

#endif

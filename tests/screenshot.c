/* README screenshots from the real program (`make screenshots`, see
 * scripts/readme-screens.sh): runs a command in a pseudo-terminal of the
 * given size, waits until the screen shows a text, sends keys, waits
 * again, and prints the screen (trailing blanks trimmed, blank lines at
 * the end dropped).
 *
 * usage: screenshot ROWS COLS READY KEYS WAIT SETTLE_MS -- COMMAND [ARG...]
 *   READY: text the screen shows before the keys are sent;
 *   KEYS: \e is Esc, \n Enter; "" none;
 *   WAIT: text the screen must show after them; then SETTLE_MS more. */
#include <limits.h>
#include <stdlib.h>

#include "vterm_harness.h"

static void unescape(const char *in, char *out, size_t cap) {
  size_t n = 0;
  for (; *in && n + 1 < cap; in++) {
    if (in[0] == '\\' && in[1] == 'e') {
      out[n++] = 27;
      in++;
    } else if (in[0] == '\\' && in[1] == 'n') {
      out[n++] = '\r';
      in++;
    } else {
      out[n++] = *in;
    }
  }
  out[n] = '\0';
}

int main(int argc, char **argv) {
  if (argc < 9 || strcmp(argv[7], "--") != 0) {
    fprintf(stderr, "usage: screenshot ROWS COLS READY KEYS WAIT SETTLE_MS -- COMMAND [ARG...]\n");
    return 2;
  }
  int rows = atoi(argv[1]), cols = atoi(argv[2]), settle = atoi(argv[6]);
  if (rows < 5 || rows > 200 || cols < 20 || cols > 400 || settle < 0 || settle > 60000) {
    fprintf(stderr, "screenshot: bad size or settle time\n");
    return 2;
  }
  char keys[256];
  unescape(argv[4], keys, sizeof keys);
  /* A bare command name is the build's own (nccltop beside tests/). */
  static char path[PATH_MAX + 64];
  if (!strchr(argv[8], '/')) {
    char dir[PATH_MAX];
    vt_build_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s", dir, argv[8]);
    argv[8] = path;
  }
  vt_term t;
  if (vt_start(&t, rows, cols, argv + 8, NULL) != 0) return 1;
  bool ok = vt_wait_for(&t, argv[3], 30);
  if (ok && keys[0]) vt_send(&t, keys);
  if (ok) ok = vt_wait_for(&t, argv[5], 10);
  double end = vt_now() + settle / 1000.0;
  while (ok && vt_now() < end) vt_pump(&t, 50);
  const char *text = vt_text(&t);
  char *copy = strdup(text);
  vt_send(&t, "qq"); /* on the help the first q closes it (any key does) */
  vt_wait_exit(&t, 10);
  vt_stop(&t);
  if (!ok || !copy) return free(copy), 1;
  /* Trim each line's trailing blanks and the blank lines at the end. */
  char *lines[256];
  int n = 0;
  for (char *p = copy; *p && n < 256;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    size_t len = strlen(p);
    while (len && p[len - 1] == ' ') p[--len] = '\0';
    lines[n++] = p;
    if (!nl) break;
    p = nl + 1;
  }
  while (n > 0 && !lines[n - 1][0]) n--;
  /* A run of blank lines (the screen's empty middle) prints as one. */
  for (int i = 0; i < n; i++)
    if (lines[i][0] || i == 0 || lines[i - 1][0]) puts(lines[i]);
  free(copy);
  return 0;
}

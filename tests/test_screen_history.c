/* The overview's bus bandwidth history (issue 26, "history you can see"),
 * on the real nccltop in a pseudo-terminal read through libvterm: at 120
 * columns each communicator line ends in a sparkline of its recent bus
 * bandwidth and the largest value shown, under its own column header; at
 * 80 columns that column is dropped first and every other column stays
 * whole; a terminal that is not UTF-8 (--ascii) gets ASCII levels. */
#include <limits.h>

#include "testlib.h"
#include "vterm_harness.h"

static char nccltop[PATH_MAX + 16];

static int row_starting(const vt_term *t, const char *prefix, char *buf, size_t cap) {
  for (int r = 0; r < t->rows; r++)
    if (strncmp(screen_row(t, r, buf, cap), prefix, strlen(prefix)) == 0) return r;
  return -1;
}

/* The screen column (characters, not bytes) of `at` in line. */
static int column_of(const char *line, const char *at) {
  int c = 0;
  for (const char *p = line; p < at; p++) c += ((unsigned char)*p & 0xC0) != 0x80;
  return c;
}

/* The characters of line from screen column `col` on. */
static const char *from_column(const char *line, int col) {
  const char *p = line;
  for (int c = 0; *p && c < col; c++) {
    p++;
    while (((unsigned char)*p & 0xC0) == 0x80) p++;
  }
  return p;
}

/* How many of the sparkline's levels (UTF-8 blocks, or ASCII levels) the
 * text up to its rate holds; -1 when something else is there. */
static int levels_in(const char *spark, bool ascii) {
  static const char *const block[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  int n = 0;
  for (const char *p = spark; *p;) {
    if (*p == ' ') {
      if (n && p[1] != ' ') return n; /* the blank before the rate */
      p++;
      continue;
    }
    if (ascii) {
      if (!strchr(".:-=+*#@", *p)) return -1;
      p++;
      n++;
      continue;
    }
    bool found = false;
    for (int k = 0; k < 8 && !found; k++)
      if (strncmp(p, block[k], strlen(block[k])) == 0) {
        p += strlen(block[k]);
        found = true;
      }
    if (!found) return -1;
    n++;
  }
  return n;
}

typedef struct {
  bool ascii;
  int want; /* samples at least */
} spark_want;

/* The communicator line has at least want->want levels under the history
 * header, then a rate. */
static bool history_shown(vt_term *t, const void *arg) {
  const spark_want *w = arg;
  char head[2048], line[2048];
  int hr = row_starting(t, "COMMUNICATOR", head, sizeof head);
  int lr = row_starting(t, "sim-comm-0", line, sizeof line);
  const char *title = hr >= 0 ? strstr(head, "BUSBW HISTORY, MAX") : NULL;
  if (!title || lr < 0) return false;
  const char *spark = from_column(line, column_of(head, title));
  int n = levels_in(spark, w->ascii);
  size_t len = strlen(line);
  return n >= w->want && len > 4 && strcmp(line + len - 3, "B/s") == 0;
}

/* `nccltop demo` with 4 ranks and one communicator, its first row shown. */
static bool demo_start(vt_demo *d, int rows, int cols, bool ascii) {
  char *extra[] = {"--ranks", "4", "--comms", "1", ascii ? "--ascii" : NULL, NULL};
  return vt_demo_start(d, nccltop, rows, cols, extra) && vt_wait_for(&d->t, "sim-comm-0", 30);
}

static void sparkline_at_120_columns(void) {
  vt_demo d = {0};
  spark_want w = {.ascii = false, .want = 3};
  bool ok = demo_start(&d, 24, 120, false) &&
            vt_wait_until(&d.t, 30, history_shown, &w, "3 samples of bus bandwidth");
  CHECK(vt_demo_stop(&d, ok));
}

static void ascii_levels_when_not_utf8(void) {
  vt_demo d = {0};
  spark_want w = {.ascii = true, .want = 2};
  bool ok = demo_start(&d, 24, 120, true) &&
            vt_wait_until(&d.t, 30, history_shown, &w, "2 ASCII samples of bus bandwidth");
  CHECK(vt_demo_stop(&d, ok));
}

/* At 80 columns the history goes first: the header and the line are those
 * of the other columns, each whole, and no sparkline is left. */
static bool narrow_without_history(vt_term *t, const void *arg) {
  (void)arg;
  char head[2048], line[2048];
  if (row_starting(t, "COMMUNICATOR", head, sizeof head) < 0 ||
      row_starting(t, "sim-comm-0", line, sizeof line) < 0)
    return false;
  return strcmp(head, "COMMUNICATOR                 RANKS    LAUNCHED (min-max)    DONE/s  "
                      "STALLED") == 0 &&
         !strstr(line, "B/s") && strstr(line, "4/4") && line[strlen(line) - 1] == '0';
}

static void history_dropped_first_at_80_columns(void) {
  vt_demo d = {0};
  bool ok = demo_start(&d, 24, 80, false) &&
            vt_wait_until(&d.t, 30, narrow_without_history, NULL, "the 80-column overview");
  CHECK(vt_demo_stop(&d, ok));
}

int main(void) {
  char dir[PATH_MAX];
  vt_build_dir(dir, sizeof dir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", dir);
  TEST_RUN(sparkline_at_120_columns);
  TEST_RUN(ascii_levels_when_not_utf8);
  TEST_RUN(history_dropped_first_at_80_columns);
  return TEST_DONE();
}

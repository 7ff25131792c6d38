/* The screen layout at every size from 40x10 to 300x100, with and without
 * alerts and the detail panel: inside the screen, no overlap, the header on
 * the first line, the key bar on the last, a list of at least one line. */
#include <stdbool.h>

#include "testlib.h"
#include "../monitor/screen/layout.h"

static bool inside(nt_rect r, int rows, int cols) {
  return r.h == 0 || (r.y >= 0 && r.x >= 0 && r.h > 0 && r.y + r.h <= rows && r.x + r.w <= cols);
}

static bool overlap(nt_rect a, nt_rect b) {
  if (!a.h || !b.h) return false;
  return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

static int bad_sizes;

static void one(int rows, int cols, int want, bool detail) {
  nt_layout_rects l;
  nt_layout(rows, cols, want, detail, &l);
  nt_rect r[5] = {l.header, l.alerts, l.list, l.detail, l.keys};
  bool ok = l.header.y == 0 && l.header.h >= 1 && l.keys.h == 1 && l.keys.y == rows - 1 &&
            l.keys.w == cols && l.list.h >= 1;
  int sum = 0;
  for (int i = 0; i < 5; i++) {
    ok = ok && inside(r[i], rows, cols);
    sum += r[i].h;
    for (int j = i + 1; j < 5; j++) ok = ok && !overlap(r[i], r[j]);
  }
  ok = ok && sum == rows; /* nothing left undrawn */
  if (detail && rows >= 20) ok = ok && l.detail.h >= 4;
  if (want && rows >= 20) ok = ok && l.alerts.h >= 1;
  if (!ok && bad_sizes++ < 5)
    fprintf(stderr,
            "    %dx%d alerts %d detail %d: header %d+%d alerts %d+%d list %d+%d detail %d+%d "
            "keys %d+%d\n",
            cols, rows, want, detail, l.header.y, l.header.h, l.alerts.y, l.alerts.h, l.list.y,
            l.list.h, l.detail.y, l.detail.h, l.keys.y, l.keys.h);
}

static void every_size_from_40x10_to_300x100(void) {
  static const int wants[] = {0, 1, 3, 1000};
  bad_sizes = 0;
  for (int rows = 10; rows <= 100; rows++)
    for (int cols = 40; cols <= 300; cols++)
      for (int w = 0; w < 4; w++) {
        one(rows, cols, wants[w], false);
        one(rows, cols, wants[w], true);
      }
  CHECK(bad_sizes == 0);
}

static void tiny_and_negative_sizes_stay_inside(void) {
  for (int rows = -1; rows < 10; rows++)
    for (int cols = -1; cols < 40; cols++) {
      nt_layout_rects l;
      nt_layout(rows, cols, 5, true, &l);
      nt_rect r[5] = {l.header, l.alerts, l.list, l.detail, l.keys};
      for (int i = 0; i < 5; i++) CHECK(inside(r[i], rows < 0 ? 0 : rows, cols < 0 ? 0 : cols));
      if (rows >= 3) CHECK(l.list.h >= 1 && l.keys.y == rows - 1);
    }
}

int main(void) {
  TEST_RUN(every_size_from_40x10_to_300x100);
  TEST_RUN(tiny_and_negative_sizes_stay_inside);
  return TEST_DONE();
}

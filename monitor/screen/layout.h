/* Where each part of the screen goes, htop style: the header on top, an
 * alerts band, the main list, the detail panel (when open) under it and the
 * key bar on the last line. Pure: no curses, so every size is testable. */
#ifndef NCCLTOP_LAYOUT_H
#define NCCLTOP_LAYOUT_H

#include <stdbool.h>

typedef struct {
  int y, x, h, w; /* h == 0: not shown */
} nt_rect;

typedef struct {
  nt_rect header, alerts, list, detail, keys;
} nt_layout_rects;

/* rows x cols: the terminal; want_alerts: lines the alerts band would use;
 * detail: the detail panel is open. The rectangles tile the screen from
 * top to bottom in the order of the struct, never overlap, and stay inside
 * it; the header and the key bar are there from 2 rows, the list keeps at
 * least one line from 3. */
void nt_layout(int rows, int cols, int want_alerts, bool detail, nt_layout_rects *l);

#define NT_DETAIL_MAX_H 14 /* the detail panel's height when there is room */

#endif

/* The screen's rectangles (layout.h). */
#include "layout.h"

static nt_rect band(int y, int h, int cols) {
  return (nt_rect){.y = y, .x = 0, .h = h, .w = h > 0 ? cols : 0};
}

static int clamp(int v, int lo, int hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

void nt_layout(int rows, int cols, int want_alerts, bool detail, nt_layout_rects *l) {
  if (rows < 0) rows = 0;
  if (cols < 0) cols = 0;
  int keys = rows >= 2 ? 1 : 0;
  /* The header: its title line, the error/waiting line, a blank line when
   * the screen is tall enough to spare it. */
  int header = rows >= 12 ? 3 : rows >= 4 ? 2 : rows >= 1 ? 1 : 0;
  int rest = rows - keys - header;
  /* The alerts band takes at most a quarter of what is left; the list keeps
   * at least one line. */
  int alerts = clamp(want_alerts, 0, clamp(rest / 4, 0, rest - 1 > 0 ? rest - 1 : 0));
  rest -= alerts;
  int dh = detail ? clamp(rest / 2, 0, NT_DETAIL_MAX_H) : 0;
  int list = rest - dh;
  if (list < 0) list = 0;
  int y = 0;
  l->header = band(y, header, cols);
  y += header;
  l->alerts = band(y, alerts, cols);
  y += alerts;
  l->list = band(y, list, cols);
  y += list;
  l->detail = band(y, dh, cols);
  y += dh;
  l->keys = band(y, keys, cols);
}

/* The sort menu (F6), as htop's "Sort by" panel: the orders the view can
 * take, the one in force highlighted; arrows move, Enter picks, Esc or F6
 * closes. The rank orders (rank, stalled first, host) sort every view's
 * ranks; the proxy view adds its columns. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "screen_internal.h"

#define MENU_MAX   32
#define MENU_WIDTH 26

typedef struct {
  const char *name;
  int sort;       /* enum nt_sort; -1: a proxy column */
  int proxy_sort; /* the proxy column, for sort -1 */
} entry;

static int entries(const nt_screen *s, entry *out) {
  int n = 0;
  for (int k = 0; k < NT_SORT_COUNT; k++) out[n++] = (entry){nt_sort_name(k), k, 0};
  if (s->view == NT_VIEW_PROXY) {
    int cols[MENU_MAX];
    const char *names[MENU_MAX];
    int nc = nt_proxy_sort_columns(cols, names, MENU_MAX - n);
    for (int i = 0; i < nc; i++) out[n++] = (entry){names[i], -1, cols[i]};
  }
  return n;
}

/* The entry in force. */
static int current(const nt_screen *s, const entry *e, int n) {
  for (int i = 0; i < n; i++) {
    if (s->view == NT_VIEW_PROXY && s->proxy_sort) {
      if (e[i].sort < 0 && e[i].proxy_sort == s->proxy_sort) return i;
    } else if (e[i].sort == s->sort) {
      return i;
    }
  }
  return 0;
}

void nt_sort_menu_open(nt_screen *s) {
  entry e[MENU_MAX];
  int n = entries(s, e);
  s->menu = true;
  s->menu_row = current(s, e, n);
}

bool nt_sort_menu_action(nt_screen *s, int action) {
  if (!s->menu) return false;
  entry e[MENU_MAX];
  int n = entries(s, e);
  switch (action) {
  case NT_ACT_UP: s->menu_row--; break;
  case NT_ACT_DOWN: s->menu_row++; break;
  case NT_ACT_HOME:
  case NT_ACT_PAGE_UP: s->menu_row = 0; break;
  case NT_ACT_END:
  case NT_ACT_PAGE_DOWN: s->menu_row = n - 1; break;
  case NT_ACT_SORT_INVERT: s->sort_invert = !s->sort_invert; break;
  case NT_ACT_ENTER:
    if (s->menu_row >= 0 && s->menu_row < n) {
      const entry *p = &e[s->menu_row];
      if (p->sort >= 0) {
        s->sort = p->sort;
        if (s->view == NT_VIEW_PROXY) s->proxy_sort = 0;
      } else {
        s->proxy_sort = p->proxy_sort;
      }
    }
    s->menu = false;
    break;
  default: s->menu = false; break; /* Esc, F6, q and the rest close it */
  }
  if (s->menu_row >= n) s->menu_row = n - 1;
  if (s->menu_row < 0) s->menu_row = 0;
  return true;
}

void nt_sort_menu_click(nt_screen *s, int y, int x) {
  entry e[MENU_MAX];
  int n = entries(s, e);
  int top = s->lay.list.y, room = s->bottom - top, w = MENU_WIDTH < s->cols ? MENU_WIDTH : s->cols;
  int shown = n < room - 1 ? n : room - 1, first = 0;
  if (s->menu_row >= shown) first = s->menu_row - shown + 1;
  int k = y - top - 1;
  if (x < w && k >= 0 && k < shown) {
    s->menu_row = first + k;
    nt_sort_menu_action(s, NT_ACT_ENTER);
  } else {
    s->menu = false;
  }
}

void nt_sort_menu_draw(nt_screen *s) {
  if (!s->menu) return;
  entry e[MENU_MAX];
  int n = entries(s, e), now = current(s, e, n);
  int top = s->lay.list.y, room = s->bottom - top, w = MENU_WIDTH < s->cols ? MENU_WIDTH : s->cols;
  if (room < 3 || w < 10) return;
  int shown = n < room - 1 ? n : room - 1, first = 0;
  if (s->menu_row >= shown) first = s->menu_row - shown + 1;
  int head = s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE;
  char line[64];
  attron(head);
  mvhline(top, 0, ' ', w);
  mvaddnstr(top, 0, "Sort by (Enter, Esc)", w);
  attroff(head);
  for (int k = 0; k < shown; k++) {
    int i = first + k;
    /* The order in force marked as the column titles mark it. */
    snprintf(line, sizeof line, " %-*.*s %s", w - 4, w - 4, e[i].name,
             i == now ? (s->sort_invert ? "v" : "^") : " ");
    int attr = i == s->menu_row ? A_REVERSE : A_NORMAL;
    attron(attr);
    mvhline(top + 1 + k, 0, ' ', w);
    mvaddnstr(top + 1 + k, 0, line, w);
    attroff(attr);
    mvaddch(top + 1 + k, w < s->cols ? w : w - 1, ACS_VLINE);
  }
}

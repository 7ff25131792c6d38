/* The proxy view: one row per proxy thread of a rank, in a list panel of
 * its own (its scroll and cursor are no other view's). */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/frame.h"
#include "../options.h"
#include "screen_internal.h"

enum {
  C_RANK,
  C_COMM,
  C_WHO,
  C_STATE,
  C_BAR,
  C_IDLE,
  C_ACTV,
  C_SLEP,
  C_WAKE,
  C_APND,
  C_APPENDS,
  C_OPS,
  C_HISTORY,
  C_COUNT
};

/* Least important dropped first at the first horizontal position: at 80
 * columns the rank, its process, its state and how busy it is stay. */
static const nt_list_col cols[C_COUNT] = {
    [C_RANK] = {"RANK", 11, 0, false},         [C_COMM] = {"COMM", 18, 2, false},
    [C_WHO] = {"HOST:PID", 20, 1, false},      [C_STATE] = {"STATE", 7, 0, false},
    [C_BAR] = {"LAST INTERVAL", 22, 3, false}, [C_IDLE] = {"IDLE%", 6, 3, true},
    [C_ACTV] = {"ACTV%", 6, 1, true},          [C_SLEP] = {"SLEP%", 6, 3, true},
    [C_WAKE] = {"WAKE%", 6, 4, true},          [C_APND] = {"APND%", 6, 4, true},
    [C_APPENDS] = {"APPENDS", 8, 5, true},     [C_OPS] = {"OPS", 8, 5, true},
    [C_HISTORY] = {"HISTORY", 24, 4, false},
};

#define MAX_LINES (NT_SCREEN_MAX_RANKS * 2)

typedef struct {
  nt_screen *s;
  uint32_t n;
  struct {
    uint32_t rank, thread; /* shown rank (index into order), frame proxy row */
  } line[MAX_LINES];
} proxy_rows;

static proxy_rows rows;

/* Sorting by any column (F6 > <): the order the columns are offered in;
 * C_RANK is the screen's rank order (rank, stalled first or host: the last
 * is HOST:PID's, so that column is not offered twice). */
static const int sortable[] = {C_RANK, C_STATE, C_IDLE,    C_ACTV, C_SLEP,
                               C_WAKE, C_APND,  C_APPENDS, C_OPS};
enum { NSORTABLE = sizeof sortable / sizeof sortable[0] };

int nt_proxy_sort_columns(int *out, const char **names, int cap) {
  int n = 0;
  for (int k = 1; k < NSORTABLE && n < cap; k++, n++) {
    out[n] = sortable[k];
    names[n] = cols[sortable[k]].title;
  }
  return n;
}

/* A line's value in a numeric column. */
static double value_of(const nt_frame_proxy *x, int col) {
  switch (col) {
  case C_APPENDS: return (double)x->row.appends;
  case C_OPS: return (double)x->row.appended_ops;
  default: return x->share_total[col - C_IDLE];
  }
}

static int cmp_line(const void *a, const void *b) {
  const nt_screen *s = rows.s;
  int col = s->proxy_sort;
  const nt_frame_proxy *x = &s->f->proxy[((const uint32_t *)a)[1]];
  const nt_frame_proxy *y = &s->f->proxy[((const uint32_t *)b)[1]];
  int c = 0;
  if (col == C_WHO) {
    const nt_frame_proc *p = &s->f->procs[x->proc], *q = &s->f->procs[y->proc];
    c = strcmp(p->host, q->host);
    if (!c && p->pid != q->pid) c = p->pid < q->pid ? -1 : 1;
  } else if (col == C_STATE) {
    c = (int)x->row.state - (int)y->row.state;
  } else { /* numbers: the largest first, as htop */
    double u = value_of(x, col), v = value_of(y, col);
    c = u > v ? -1 : u < v;
  }
  if (c) return c;
  /* then the rank order the lines came in */
  uint32_t i = ((const uint32_t *)a)[0], j = ((const uint32_t *)b)[0];
  return i < j ? -1 : i > j;
}

static void collect(nt_screen *s) {
  rows.s = s;
  rows.n = 0;
  for (uint32_t i = 0; i < s->nranks; i++) {
    const nt_frame_rank *r = nt_screen_rank(s, (int)i);
    for (uint32_t t = r->proxy0; t < r->proxy0 + r->nproxy && rows.n < MAX_LINES; t++) {
      rows.line[rows.n].rank = i;
      rows.line[rows.n++].thread = t;
    }
  }
  if (s->proxy_sort == C_RANK) return; /* the ranks' order, inverted or not */
  qsort(rows.line, rows.n, sizeof rows.line[0], cmp_line);
  if (s->sort_invert)
    for (uint32_t i = 0, j = rows.n; i + 1 < j; i++, j--) {
      uint32_t t[2] = {rows.line[i].rank, rows.line[i].thread};
      rows.line[i] = rows.line[j - 1];
      rows.line[j - 1].rank = t[0];
      rows.line[j - 1].thread = t[1];
    }
}

const char *nt_proxy_sort_name(const nt_screen *s) {
  return s->proxy_sort == C_RANK ? nt_sort_name(s->sort) : cols[s->proxy_sort].title;
}

/* A bar of `width` cells split by share per proxy state. */
static void state_bar(nt_screen *s, int y, int x, int width, const double *share) {
  static const char glyph_utf8[NT_PROXY_NSTATES][4] = {"·", "█", "z", "!", "+"};
  static const char glyph_ascii[NT_PROXY_NSTATES] = {'.', '#', 'z', '!', '+'};
  int used = 0;
  for (int st = 0; st < NT_PROXY_NSTATES; st++) {
    int n = (int)(share[st] * width + 0.5);
    if (used + n > width) n = width - used;
    attron(nt_state_attr(s, st));
    for (int i = 0; i < n; i++) {
      if (s->o->ascii)
        mvaddch(y, x + used + i, (chtype)glyph_ascii[st]);
      else
        mvaddstr(y, x + used + i, glyph_utf8[st]);
    }
    attroff(nt_state_attr(s, st));
    used += n;
  }
}

/* The dominant state of each recent update, oldest on the left. */
static void history(nt_screen *s, int y, int x, int w, const nt_proxy_history *h) {
  static const char glyph[NT_PROXY_NSTATES] = {'.', '#', 'z', '!', '+'};
  for (int i = 0; h && i < h->n && i < w; i++) {
    attron(nt_state_attr(s, h->state[i]));
    mvaddch(y, x + i, (chtype)glyph[h->state[i]]);
    attroff(nt_state_attr(s, h->state[i]));
  }
}

static void cell(void *ctx, int row, int col, int y, int xx, int w, bool cursor) {
  proxy_rows *pr = ctx;
  nt_screen *s = pr->s;
  const nt_frame_rank *r = nt_screen_rank(s, (int)pr->line[row].rank);
  const nt_frame_proc *proc = nt_frame_proc_of(s->f, r);
  const nt_frame_proxy *x = &s->f->proxy[pr->line[row].thread];
  const nt_proxy_row *p = &x->row;
  char t[48] = "";
  int attr = cursor ? A_REVERSE : 0;
  switch (col) {
  case C_RANK: nt_fmt_rank(r->rank, r->nranks, t, sizeof t); break;
  case C_COMM:
    nt_comm_label(r->comm_name, r->comm_hash, t, 19); /* cut to 18, as before */
    break;
  case C_WHO: snprintf(t, sizeof t, "%.12s:%u", proc->host, proc->pid); break;
  case C_STATE:
    snprintf(t, sizeof t, "%s", proc->stale ? "stale" : nt_proxy_state_name(p->state));
    attr |= nt_state_attr(s, p->state);
    break;
  case C_BAR: state_bar(s, y, xx, w, x->share_last); return;
  case C_HISTORY: history(s, y, xx, w, nt_history_of(s, proc->pid, p->tid)); return;
  case C_APPENDS: snprintf(t, sizeof t, "%*llu", w, (unsigned long long)p->appends); break;
  case C_OPS: snprintf(t, sizeof t, "%*llu", w, (unsigned long long)p->appended_ops); break;
  default: /* the shares since the thread started */
    snprintf(t, sizeof t, "%*.1f", w, 100 * x->share_total[col - C_IDLE]);
    break;
  }
  if (attr) attron(attr);
  mvaddnstr(y, xx, t, w);
  if (attr) attroff(attr);
}

/* The columns as drawn: RANK's title says "stalled first" (!) when that is
 * the order, the column having no stall of its own. */
static nt_list_col shown_cols[C_COUNT];

static void spec(nt_screen *s, nt_list *l) {
  collect(s);
  memcpy(shown_cols, cols, sizeof cols);
  bool stalled_first = s->proxy_sort == C_RANK && s->sort == NT_SORT_STALLED;
  if (stalled_first) shown_cols[C_RANK].title = "RANK !";
  *l = (nt_list){
      .area = {.y = s->lay.list.y, .x = 0, .h = s->bottom - 1 - s->lay.list.y, .w = s->cols},
      .cols = shown_cols,
      .ncols = C_COUNT,
      .fixed = 1,
      .nrows = (int)rows.n,
      .sort_col = s->proxy_sort != C_RANK                    ? s->proxy_sort
                  : s->sort == NT_SORT_RANK || stalled_first ? C_RANK
                  : s->sort == NT_SORT_HOST                  ? C_WHO
                                                             : -1,
      .sort_mark = nt_sort_mark(s),
      .cell = cell,
      .ctx = &rows};
  if (l->area.h < 0) l->area.h = 0;
}

/* The screen's cursor is a rank (search and the channel grid move it); the
 * list's, a thread line: each follows the other when it moved. */
static int synced_rank = -1;

static void follow_rank(nt_screen *s) {
  nt_list_state *st = &s->lists[NT_VIEW_PROXY];
  if (s->row == synced_rank) return;
  for (uint32_t k = 0; k < rows.n; k++)
    if ((int)rows.line[k].rank == s->row) {
      st->row = (int)k;
      break;
    }
  synced_rank = s->row;
}

void nt_view_proxy(nt_screen *s, int y) {
  (void)y; /* the layout's list */
  nt_list l;
  spec(s, &l);
  follow_rank(s);
  nt_list_draw(&l, &s->lists[NT_VIEW_PROXY], A_BOLD);
  if (!rows.n)
    mvaddnstr(l.area.y + 1, 0,
              "no proxy threads reported (NCCL starts them only for network transports)", s->cols);
  else
    mvaddnstr(s->bottom - 1, 0,
              "STATE now; LAST INTERVAL: the states since the last update; %: since the thread "
              "started; arrows move, Left/Right show more columns",
              s->cols);
}

void nt_proxy_click(nt_screen *s, int y, int x) {
  nt_list l;
  spec(s, &l);
  follow_rank(s);
  nt_list_state *st = &s->lists[NT_VIEW_PROXY];
  int row, col, hit = nt_list_hit(&l, st, y, x, &row, &col);
  if (hit == 1) {
    st->row = row;
    s->row = synced_rank = (int)rows.line[row].rank;
    return;
  }
  if (hit != 0 || col < 0) return;
  if (col == l.sort_col && !(col == C_RANK && s->sort == NT_SORT_STALLED)) {
    s->sort_invert = !s->sort_invert; /* the column in force: inverted, as htop */
    return;
  }
  if (col == C_RANK || col == C_WHO) {
    s->proxy_sort = C_RANK;
    s->sort = col == C_RANK ? NT_SORT_RANK : NT_SORT_HOST;
    return;
  }
  for (int k = 1; k < NSORTABLE; k++)
    if (sortable[k] == col) s->proxy_sort = col;
}

bool nt_proxy_list_action(nt_screen *s, int action) {
  if (action == NT_ACT_SORT_NEXT || action == NT_ACT_SORT_PREV) {
    /* Any column: from the rank order (and its three kinds) on to the
     * others, then back. */
    int k = 0;
    while (k < NSORTABLE && sortable[k] != s->proxy_sort) k++;
    if (k == 0 && action == NT_ACT_SORT_NEXT && s->sort + 1 < NT_SORT_COUNT) {
      s->sort++;
      return true;
    }
    if (k == 1 && action == NT_ACT_SORT_PREV) {
      s->proxy_sort = C_RANK;
      s->sort = NT_SORT_COUNT - 1;
      return true;
    }
    if (k == 0 && action == NT_ACT_SORT_PREV && s->sort > 0) {
      s->sort--;
      return true;
    }
    k = (k + (action == NT_ACT_SORT_NEXT ? 1 : NSORTABLE - 1)) % NSORTABLE;
    s->proxy_sort = sortable[k];
    if (s->proxy_sort == C_RANK) s->sort = action == NT_ACT_SORT_NEXT ? 0 : NT_SORT_COUNT - 1;
    return true;
  }
  nt_list l;
  spec(s, &l);
  follow_rank(s);
  if (!nt_list_action(&l, &s->lists[NT_VIEW_PROXY], action)) return false;
  int k = s->lists[NT_VIEW_PROXY].row;
  if (k >= 0 && (uint32_t)k < rows.n) s->row = synced_rank = (int)rows.line[k].rank;
  return true;
}

/* The list panel (list.h). */
#include "list.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "actions.h"

int nt_list_page(const nt_list *l) {
  return l->area.h > 1 ? l->area.h - 1 : 0;
}

/* Width of the columns that a mask keeps (separators included). */
static int width_of(const nt_list_col *cols, int ncols, const bool *keep) {
  int w = 0;
  for (int i = 0; i < ncols; i++)
    if (keep[i]) w += cols[i].width + 1;
  return w;
}

#define HIDDEN_MAX  16
#define HIDDEN_NAME 32
static char hidden[HIDDEN_MAX][HIDDEN_NAME];
static int nhidden;

/* s[0..n) without blanks around it, into out (cut to fit). */
static void trimmed(const char *s, size_t n, char *out, size_t cap) {
  while (n && *s == ' ') s++, n--;
  while (n && s[n - 1] == ' ') n--;
  snprintf(out, cap, "%.*s", (int)n, s);
}

void nt_list_hide(const char *csv) {
  nhidden = 0;
  for (const char *p = csv; p && *p && nhidden < HIDDEN_MAX;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    trimmed(p, n, hidden[nhidden], HIDDEN_NAME);
    if (hidden[nhidden][0]) nhidden++;
    p = end ? end + 1 : p + n;
  }
}

bool nt_list_hidden(const nt_list_col *c) {
  if (c->priority <= 0 || !nhidden) return false;
  char t[HIDDEN_NAME];
  trimmed(c->title, strlen(c->title), t, sizeof t);
  size_t n = strlen(t);
  /* without the sort mark: "IDLE%^", "HOST !^", "RANKv" (titles are
   * capitals: a lowercase v is the inverted mark) */
  while (n && strchr("^v! ", t[n - 1])) t[--n] = '\0';
  /* "BUSBW HISTORY, MAX" is named by what comes before its comma */
  for (int i = 0; i < nhidden; i++) {
    size_t k = strlen(hidden[i]);
    if (!strncasecmp(t, hidden[i], k) && (t[k] == '\0' || t[k] == ',')) return true;
  }
  return false;
}

void nt_list_fit(const nt_list_col *cols, int ncols, int fixed, int width, bool *keep) {
  for (int i = 0; i < ncols; i++) keep[i] = !nt_list_hidden(&cols[i]);
  /* Drop the least important first, the last of equals first. */
  while (width_of(cols, ncols, keep) > width + 1) {
    int worst = -1;
    for (int i = fixed; i < ncols; i++)
      if (keep[i] && cols[i].priority > 0 &&
          (worst < 0 || cols[i].priority >= cols[worst].priority))
        worst = i;
    if (worst < 0) break;
    keep[worst] = false;
  }
}

size_t nt_cells_prefix(const char *s, int cells, int *shown) {
  size_t n = 0;
  int c = 0;
  while (s[n] && c < cells) {
    n++;
    while (((unsigned char)s[n] & 0xC0) == 0x80) n++;
    c++;
  }
  if (shown) *shown = c;
  return n;
}

const char *nt_list_line(char *out, size_t cap, const nt_list_col *cols, int ncols,
                         const bool *keep, const char *const *cells) {
  size_t used = 0;
  if (cap) out[0] = '\0';
  for (int i = 0; i < ncols && used < cap; i++) {
    if (!keep[i]) continue;
    const char *text = cells ? cells[i] : cols[i].title;
    int shown;
    size_t len = nt_cells_prefix(text, cols[i].width, &shown);
    int pad = cols[i].width - shown;
    int n = snprintf(out + used, cap - used, "%s%*s%.*s%*s", used ? " " : "",
                     cols[i].right ? pad : 0, "", (int)len, text, cols[i].right ? 0 : pad, "");
    if (n < 0) break;
    used += (size_t)n;
  }
  if (used >= cap && cap) { /* cut short: not inside a UTF-8 sequence */
    size_t end = cap - 1, lead = end;
    while (lead && ((unsigned char)out[lead - 1] & 0xC0) == 0x80) lead--;
    unsigned char b = lead ? (unsigned char)out[lead - 1] : 0;
    size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (lead && end - (lead - 1) < need) out[lead - 1] = '\0';
  }
  return out;
}

int nt_list_columns(const nt_list *l, const nt_list_state *st, int *x) {
  bool keep[NT_LIST_MAX_COLS];
  int n = l->ncols < NT_LIST_MAX_COLS ? l->ncols : NT_LIST_MAX_COLS;
  if (st->left == 0) {
    /* The sort column stays, whatever its priority: rows that move with
     * nothing that says why read as noise (IDLE% went at 80 columns). */
    nt_list_col cols[NT_LIST_MAX_COLS];
    memcpy(cols, l->cols, (size_t)n * sizeof *cols);
    if (l->sort_col >= 0 && l->sort_col < n) cols[l->sort_col].priority = 0;
    nt_list_fit(cols, n, l->fixed, l->area.w, keep);
  } else {
    for (int i = 0; i < n; i++)
      keep[i] = (i < l->fixed || i >= l->fixed + st->left) && !nt_list_hidden(&l->cols[i]);
  }
  int pos = l->area.x, shown = 0;
  for (int i = 0; i < n; i++) {
    x[i] = -1;
    if (!keep[i] || pos + l->cols[i].width > l->area.x + l->area.w) continue;
    x[i] = pos;
    pos += l->cols[i].width + 1;
    shown++;
  }
  return shown;
}

int nt_list_hit(const nt_list *l, const nt_list_state *st, int y, int x, int *row, int *col) {
  int xs[NT_LIST_MAX_COLS];
  *row = *col = -1;
  if (l->area.h <= 0 || y < l->area.y || y >= l->area.y + l->area.h || x < l->area.x ||
      x >= l->area.x + l->area.w || l->ncols > NT_LIST_MAX_COLS)
    return -1;
  nt_list_columns(l, st, xs);
  for (int i = 0; i < l->ncols; i++)
    if (xs[i] >= 0 && x >= xs[i] && x < xs[i] + l->cols[i].width) *col = i;
  if (y == l->area.y) return 0;
  int r = st->top + (y - l->area.y - 1);
  if (r >= l->nrows) return -1;
  *row = r;
  return 1;
}

/* Scrolls horizontally so the cursor column is drawn. */
static void keep_col_visible(const nt_list *l, nt_list_state *st) {
  int x[NT_LIST_MAX_COLS];
  if (st->col < l->fixed) return;
  if (st->left > st->col - l->fixed) st->left = st->col - l->fixed;
  for (int guard = 0; guard < l->ncols; guard++) {
    nt_list_columns(l, st, x);
    if (x[st->col] >= 0) return;
    st->left++;
  }
}

static void clamp(const nt_list *l, nt_list_state *st) {
  int page = nt_list_page(l);
  if (st->row >= l->nrows) st->row = l->nrows - 1;
  if (st->row < 0) st->row = 0;
  if (st->col >= l->ncols) st->col = l->ncols - 1;
  if (st->col < 0) st->col = 0;
  int max_left = l->ncols - l->fixed - 1;
  if (st->left > max_left) st->left = max_left;
  if (st->left < 0) st->left = 0;
  if (l->cell_cursor) keep_col_visible(l, st);
  if (st->row < st->top) st->top = st->row;
  if (page > 0 && st->row >= st->top + page) st->top = st->row - page + 1;
  if (st->top > l->nrows - page) st->top = l->nrows - page;
  if (st->top < 0) st->top = 0;
}

bool nt_list_action(const nt_list *l, nt_list_state *st, int action) {
  int page = nt_list_page(l) > 1 ? nt_list_page(l) - 1 : 1;
  switch (action) {
  case NT_ACT_UP: st->row--; break;
  case NT_ACT_DOWN: st->row++; break;
  case NT_ACT_PAGE_UP: st->row -= page; break;
  case NT_ACT_PAGE_DOWN: st->row += page; break;
  case NT_ACT_HOME: st->row = 0; break;
  case NT_ACT_END: st->row = l->nrows - 1; break;
  case NT_ACT_LEFT:
    if (l->cell_cursor)
      st->col--;
    else
      st->left--;
    break;
  case NT_ACT_RIGHT:
    if (l->cell_cursor) {
      st->col++;
    } else {
      /* Only while columns are out of sight. */
      int x[NT_LIST_MAX_COLS], shown = nt_list_columns(l, st, x);
      if (shown + st->left < l->ncols) st->left++;
    }
    break;
  default: return false;
  }
  clamp(l, st);
  return true;
}

void nt_list_draw(const nt_list *l, nt_list_state *st, int header_attr) {
  if (l->area.h <= 0 || l->area.w <= 0 || l->ncols > NT_LIST_MAX_COLS) return;
  clamp(l, st);
  int x[NT_LIST_MAX_COLS];
  nt_list_columns(l, st, x);
  attron(header_attr);
  mvhline(l->area.y, l->area.x, ' ', l->area.w);
  for (int i = 0; i < l->ncols; i++) {
    if (x[i] < 0) continue;
    char t[64];
    bool sorted = i == l->sort_col;
    /* The sort column: marked ^, and in reverse video when the mark does
     * not fit its width (IDLE% in 5 cells). */
    bool fits = (int)strlen(l->cols[i].title) < l->cols[i].width;
    const char *mark = sorted && fits ? (l->sort_mark ? l->sort_mark : "^") : "";
    if (l->cols[i].right)
      snprintf(t, sizeof t, "%*s%s", l->cols[i].width - (mark[0] ? 1 : 0), l->cols[i].title, mark);
    else
      snprintf(t, sizeof t, "%s%s", l->cols[i].title, mark);
    if (sorted && !fits) attron(A_REVERSE);
    mvaddnstr(l->area.y, x[i], t, l->cols[i].width);
    if (sorted && !fits) attroff(A_REVERSE);
  }
  /* At the header's right end: < columns scrolled away, > columns to the
   * right (Right shows them). */
  int shown = 0;
  for (int i = 0; i < l->ncols; i++) shown += x[i] >= 0;
  bool more = shown + st->left < l->ncols;
  if (st->left > 0) mvaddnstr(l->area.y, l->area.x + l->area.w - (more ? 2 : 1), "<", 1);
  if (more) mvaddnstr(l->area.y, l->area.x + l->area.w - 1, ">", 1);
  attroff(header_attr);
  int page = nt_list_page(l);
  for (int k = 0; k < page && st->top + k < l->nrows; k++) {
    int row = st->top + k, y = l->area.y + 1 + k;
    bool on = row == st->row;
    /* htop's cursor: the whole row, gaps between columns included (a cell
     * cursor marks only its cell). */
    if (on && !l->cell_cursor) {
      attron(A_REVERSE);
      mvhline(y, l->area.x, ' ', l->area.w);
      attroff(A_REVERSE);
    }
    for (int i = 0; i < l->ncols; i++) {
      if (x[i] < 0) continue;
      bool cur = on && (!l->cell_cursor || i == st->col || i < l->fixed);
      l->cell(l->ctx, row, i, y, x[i], l->cols[i].width, cur);
    }
  }
}

/* A list panel, htop style: a header line of column titles (the sort column
 * marked), rows drawn through a callback, its own scroll offset and cursor,
 * and horizontal scroll. At the first horizontal position, columns that do
 * not fit drop by priority (least important first); scrolled right, every
 * column is there, from the first one scrolled to. Each view owns its
 * nt_list_state: no offset is shared between views. */
#ifndef NCCLTOP_LIST_H
#define NCCLTOP_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

#define NT_LIST_MAX_COLS 160 /* a rank column and up to 128 channels, with room */

typedef struct {
  const char *title;
  int width;    /* cells, without the blank that separates columns */
  int priority; /* 0: never dropped; higher: dropped first */
  bool right;   /* title aligned right (numbers) */
} nt_list_col;

typedef struct {
  int top;  /* first row shown */
  int row;  /* cursor row */
  int col;  /* cursor column (cell cursors), an index into the columns */
  int left; /* first scrollable column shown; 0: columns dropped to fit */
} nt_list_state;

/* Draws the cell of (row, column col) at (y, x) within w cells; cursor:
 * the cell (or row) under the cursor. */
typedef void (*nt_list_cell_fn)(void *ctx, int row, int col, int y, int x, int w, bool cursor);

typedef struct {
  nt_rect area; /* its first line is the column header */
  const nt_list_col *cols;
  int ncols;
  int fixed; /* leading columns never scrolled away (RANK) */
  int nrows;
  int sort_col;          /* marked in the header; -1: none */
  const char *sort_mark; /* its mark: "^", "v" inverted (NULL: "^") */
  bool cell_cursor;      /* the cursor is on a cell (its column kept visible), not a row */
  nt_list_cell_fn cell;
  void *ctx;
} nt_list;

/* Columns of a table drawn as text lines (the line views): keep[i] says
 * which fit in width once the least important are dropped; nt_list_line
 * joins the cells kept, each padded to its column (cells NULL: the
 * titles, the table's header line). */
/* The columns the user hid (--hide-columns, the settings file's
 * hide-columns): a comma-separated list of titles, compared without case,
 * without a sort mark and without blanks around them. Only optional
 * columns (priority > 0) hide: the ones that say what a row is stay. */
void nt_list_hide(const char *csv);
bool nt_list_hidden(const nt_list_col *c);
void nt_list_fit(const nt_list_col *cols, int ncols, int fixed, int width, bool *keep);
const char *nt_list_line(char *out, size_t cap, const nt_list_col *cols, int ncols,
                         const bool *keep, const char *const *cells);
/* Bytes of the first `cells` characters of UTF-8 text s, and (shown, when
 * not NULL) how many cells they take: a cell is a character, not a byte (a
 * sparkline's blocks are 3 bytes each). */
size_t nt_cells_prefix(const char *s, int cells, int *shown);
/* The columns drawn and where: fills x[] (column i's left edge, -1 when not
 * shown) for a list's width and state; returns how many are shown. */
int nt_list_columns(const nt_list *l, const nt_list_state *st, int *x);
/* Keeps the cursor inside the rows and visible; then draws. */
void nt_list_draw(const nt_list *l, nt_list_state *st, int header_attr);
/* What the screen cell (y, x) is in a list drawn with st: 0 its header,
 * 1 a row (*row), -1 neither; *col the column under x (-1: a gap or
 * none). */
int nt_list_hit(const nt_list *l, const nt_list_state *st, int y, int x, int *row, int *col);
/* Rows shown below the header. */
int nt_list_page(const nt_list *l);
/* Moves for an action (NT_ACT_UP .. NT_ACT_END, LEFT, RIGHT); false if the
 * action is not a move. */
bool nt_list_action(const nt_list *l, nt_list_state *st, int action);

#endif

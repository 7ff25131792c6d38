/* The list panel's arithmetic, without a terminal: columns dropped by
 * priority, horizontal scroll, and a cursor kept in view by every move. */
#include "../monitor/screen/screen_internal.h"
#include "testlib.h"
#include "../monitor/screen/list.h"

static const nt_list_col cols[] = {
    {"RANK", 8, 0, false},  {"COMM", 18, 2, false}, {"WHO", 20, 1, false},
    {"STATE", 7, 0, false}, {"A%", 5, 1, true},     {"HIST", 24, 3, false},
};
enum { NC = sizeof cols / sizeof cols[0] };

static void columns_drop_least_important_first(void) {
  bool keep[NC];
  nt_list_fit(cols, NC, 1, 200, keep);
  for (int i = 0; i < NC; i++) CHECK(keep[i]);
  nt_list_fit(cols, NC, 1, 80, keep); /* 8+18+20+7+5 + 5 separators = 63 */
  CHECK(keep[0] && keep[1] && keep[2] && keep[3] && keep[4] && !keep[5]);
  nt_list_fit(cols, NC, 1, 40, keep); /* then COMM, then the last of priority 1 */
  CHECK(keep[0] && !keep[1] && keep[2] && keep[3] && !keep[4] && !keep[5]);
  nt_list_fit(cols, NC, 1, 5, keep); /* priority 0 stays, even past the width */
  CHECK(keep[0] && keep[3]);
  char line[256];
  nt_list_fit(cols, NC, 1, 40, keep);
  CHECK_STR(nt_list_line(line, sizeof line, cols, NC, keep, NULL),
            "RANK     WHO                  STATE  ");
}

/* --hide-columns: optional columns named by title (any case, blanks and
 * the sort mark aside) are left out even when they fit; a column that
 * says what the row is (priority 0) never. */
static void hidden_columns_are_left_out(void) {
  bool keep[NC];
  nt_list_hide(" a% ,hist, STATE, nothing");
  nt_list_fit(cols, NC, 1, 200, keep);
  CHECK(keep[0] && keep[1] && keep[2] && keep[3] && !keep[4] && !keep[5]);
  static const nt_list_col marked[] = {
      {"IDLE%^", 6, 1, true}, {"HOST !^", 8, 2, false}, {"RANKv", 6, 1, false}};
  nt_list_hide("idle%,host,rank,busbw history");
  CHECK(nt_list_hidden(&marked[0]) && nt_list_hidden(&marked[1]) && nt_list_hidden(&marked[2]));
  static const nt_list_col spark = {"BUSBW HISTORY, MAX", 30, 4, false},
                           busbw = {"BUSBW", 8, 1, true};
  CHECK(nt_list_hidden(&spark) && !nt_list_hidden(&busbw));
  nt_list_hide("");
  nt_list_fit(cols, NC, 1, 200, keep);
  for (int i = 0; i < NC; i++) CHECK(keep[i]);
}

/* A cell is a character: UTF-8 blocks (3 bytes each) pad and cut by
 * characters, and a line cut short never ends inside one. */
static void cells_are_characters_not_bytes(void) {
  static const nt_list_col cols[] = {{"A", 5, 0, false}, {"B", 4, 0, true}};
  const bool keep[] = {true, true};
  const char *cells[] = {"▁▂▃", "█████"};
  char line[64];
  CHECK_STR(nt_list_line(line, sizeof line, cols, 2, keep, cells), "▁▂▃   ████");
  char shortline[9]; /* room for 8 bytes: the third block would be cut */
  nt_list_line(shortline, sizeof shortline, cols, 2, keep, cells);
  CHECK_STR(shortline, "▁▂");
  int shown;
  CHECK_EQ_U64(nt_cells_prefix("a▇b", 2, &shown), 4);
  CHECK_EQ_U64(shown, 2);
}

static void cell(void *ctx, int row, int col, int y, int x, int w, bool cursor) {
  (void)ctx, (void)row, (void)col, (void)y, (void)x, (void)w, (void)cursor;
}

static void the_cursor_stays_in_view(void) {
  nt_list l = {.area = {.y = 3, .x = 0, .h = 11, .w = 80}, /* a header and 10 rows */
               .cols = cols,
               .ncols = NC,
               .fixed = 1,
               .nrows = 30,
               .cell = cell};
  nt_list_state st = {0};
  CHECK(nt_list_action(&l, &st, NT_ACT_END));
  CHECK(st.row == 29 && st.top == 20);
  CHECK(nt_list_action(&l, &st, NT_ACT_HOME));
  CHECK(st.row == 0 && st.top == 0);
  for (int i = 0; i < 12; i++) CHECK(nt_list_action(&l, &st, NT_ACT_DOWN));
  CHECK(st.row == 12 && st.top == 3);
  CHECK(nt_list_action(&l, &st, NT_ACT_PAGE_DOWN));
  CHECK(st.row == 21 && st.top >= 12 && st.row < st.top + 10);
  CHECK(!nt_list_action(&l, &st, NT_ACT_QUIT));
  l.nrows = 5; /* rows went away: the cursor and the scroll follow */
  CHECK(nt_list_action(&l, &st, NT_ACT_DOWN));
  CHECK(st.row == 4 && st.top == 0);
}

static void horizontal_scroll_reaches_the_last_column(void) {
  static nt_list_col grid[33];
  grid[0] = (nt_list_col){"RANK", 15, 0, false};
  for (int c = 1; c < 33; c++) grid[c] = (nt_list_col){"ch", 10, 0, false};
  nt_list l = {.area = {.y = 3, .x = 0, .h = 11, .w = 80},
               .cols = grid,
               .ncols = 33,
               .fixed = 1,
               .nrows = 4,
               .cell_cursor = true,
               .cell = cell};
  nt_list_state st = {.col = 1};
  int x[NT_LIST_MAX_COLS];
  for (int i = 0; i < 40; i++) CHECK(nt_list_action(&l, &st, NT_ACT_RIGHT));
  CHECK(st.col == 32);
  nt_list_columns(&l, &st, x);
  CHECK(x[0] == 0 && x[32] > 0 && x[32] + 10 <= 80); /* RANK stays, the last channel shows */
  for (int i = 0; i < 40; i++) CHECK(nt_list_action(&l, &st, NT_ACT_LEFT));
  CHECK(st.col == 0 && st.left == 0);
  nt_list_columns(&l, &st, x);
  CHECK(x[1] == 16);
}

int main(void) {
  TEST_RUN(columns_drop_least_important_first);
  TEST_RUN(hidden_columns_are_left_out);
  TEST_RUN(cells_are_characters_not_bytes);
  TEST_RUN(the_cursor_stays_in_view);
  TEST_RUN(horizontal_scroll_reaches_the_last_column);
  return TEST_DONE();
}

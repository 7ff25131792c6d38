/* The habits an htop user brings, on the real nccltop in a pseudo-terminal
 * read through libvterm (issue 26): the help fits 80 columns, wraps at
 * words and closes on any key (q too, without quitting); the collectives
 * view names each row's communicator at 80 columns; the filter applies to
 * every table it claims to; the sort column is marked in every view, F6
 * opens a sort menu, I inverts; the channel grid says when channels lie to
 * the right; the channel details name the communicator and scroll. */
#include <libgen.h>
#include <limits.h>

#include "testlib.h"
#include "vterm_harness.h"

static char nccltop[PATH_MAX + 16];

/* ---- reading the screen by line ---- */

static bool has_row(vt_term *t, const void *needles) {
  return row_with(t, needles) >= 0;
}

static bool wait_row(vt_term *t, double seconds, const char *const *needles) {
  return vt_wait_until(t, seconds, has_row, needles, needles[0]);
}

static bool lacks_row(vt_term *t, const void *needles) {
  return row_with(t, needles) < 0;
}

static bool wait_no_row(vt_term *t, double seconds, const char *const *needles) {
  return vt_wait_until(t, seconds, lacks_row, needles, "a row gone");
}

/* ---- help ---- */

/* The help's rows joined into one line, blanks collapsed: a sentence
 * wrapped at words reads whole; a line cut at the edge does not. */
static void joined(vt_term *t, int from, int to, char *out, size_t cap) {
  size_t used = 0;
  char line[2048];
  out[0] = '\0';
  for (int r = from; r < to; r++) {
    screen_row(t, r, line, sizeof line);
    for (const char *p = line; *p && used + 2 < cap; p++) {
      if (*p == ' ' && (used == 0 || out[used - 1] == ' ')) continue;
      out[used++] = *p;
    }
    if (used && out[used - 1] != ' ' && used + 2 < cap) out[used++] = ' ';
    out[used] = '\0';
  }
}

static bool help_is_whole(vt_term *t, const void *arg) {
  (void)arg;
  static char text[200 * 100];
  joined(t, 1, t->rows - 1, text, sizeof text);
  static const char *const sentences[] = {
      "the job can call nccltop_set_mask() to change them live.",
      "netplugin: IB/socket events of net plugins that report them.",
      "views: overview, proxy threads, channels, collectives, topology, environment, help",
      "cancel a search or filter line",
      "Bandwidths: algbw and busbw as nccl-tests computes them, in decimal units (GB/s = 1e9 "
      "B/s).",
  };
  for (size_t i = 0; i < sizeof sentences / sizeof sentences[0]; i++)
    if (!strstr(text, sentences[i])) return false;
  return true;
}

/* Rows with text between the header and the key bar. */
static int text_rows(vt_term *t) {
  char line[2048];
  int n = 0;
  for (int r = 3; r < t->rows - 1; r++) n += screen_row(t, r, line, sizeof line)[0] != '\0';
  return n;
}

static bool help_ends_on_a_full_page(vt_term *t, const void *arg) {
  (void)arg;
  return strstr(t->text, "Bandwidths: algbw") && text_rows(t) >= t->rows - 6;
}

/* At 80 columns every sentence of the help reads whole (it was cut at the
 * edge: "the job can call", "IB/socket events of ne"); End shows a full
 * last page (it left one line); q closes the help without quitting, as
 * any other key does, and the scroll keys scroll it. */
static void help_fits_80_columns_and_any_key_closes_it(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 100, 80,
                          (char *[]){"--ranks", "2", "--comms", "1", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "h");
    ok = vt_wait_for(&d.t, "[help]", 20) &&
         vt_wait_until(&d.t, 10, help_is_whole, NULL, "every help sentence whole at 80 columns");
  }
  if (ok) {
    vt_resize(&d.t, 24, 80);
    vt_send(&d.t, "\033OF"); /* End */
    ok = vt_wait_until(&d.t, 5, help_ends_on_a_full_page, NULL, "End: a full last page");
  }
  if (ok) {
    vt_send(&d.t, "\033OH"); /* Home scrolls, the help stays */
    ok = wait_row(&d.t, 5, ROW("Event classes on:")) && strstr(d.t.text, "[help]");
  }
  if (ok) {
    vt_send(&d.t, "q"); /* closes the help, does not quit */
    ok = wait_row(&d.t, 5, ROW("[overview]"));
    vt_pump(&d.t, 300);
    ok = ok && waitpid(d.t.pid, NULL, WNOHANG) == 0;
    if (!ok) fprintf(stderr, "    q in help quit nccltop or left the help\n");
  }
  if (ok) {
    vt_send(&d.t, "4?"); /* from the collectives view, ? opens it; x closes it */
    ok = wait_row(&d.t, 5, ROW("[help]"));
    vt_send(&d.t, "x");
    ok = ok && wait_row(&d.t, 5, ROW("[collectives]"));
  }
  CHECK(vt_demo_stop(&d, ok));
}

/* ---- the collectives view at 80 columns, and the filter ---- */

static bool both_comms_named(vt_term *t, const void *arg) {
  (void)arg;
  return row_with(t, ROW("COMM ", "FUNCTION", "BUSBW")) >= 0 &&
         row_with(t, ROW("sim-comm-0 ", "AllReduce")) >= 0;
}

typedef struct {
  const char *header;         /* in the header */
  const char *const *kept;    /* a row that must be there */
  const char *const *hidden;  /* rows that must not */
  const char *const *counted; /* rows counted ... */
  int count;                  /* ... this many (-1: not counted) */
} filtered;

static bool shows_filtered(vt_term *t, const void *arg) {
  const filtered *w = arg;
  char head[2048];
  return strstr(screen_row(t, 0, head, sizeof head), w->header) && row_with(t, w->kept) >= 0 &&
         row_with(t, w->hidden) < 0 && (w->count < 0 || count_rows(t, w->counted) == w->count);
}

/* Two communicators of four ranks at 80x24. The collectives view keeps a
 * communicator column (it dropped it: two communicators' rows looked the
 * same); the in-flight table has one too. The filter applies to the
 * collectives, the operations in flight and the overview's communicators
 * and processes (only the proxy and channel views applied it), and the
 * header counts the ranks it keeps. */
static void collectives_name_their_communicator_and_the_filter_applies_everywhere(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 24, 80,
                          (char *[]){"--ranks", "4", "--comms", "2", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "4");
    ok = wait_row(&d.t, 20, ROW("[collectives]")) &&
         vt_wait_until(&d.t, 20, both_comms_named, NULL, "a COMM column at 80 columns");
  }
  if (ok) {
    vt_send(&d.t, "\\comm-1\r");
    filtered w = {"ranks 4/8", ROW("sim-comm-1 ", "AllReduce"), ROW("sim-comm-0"), NULL, -1};
    ok = vt_wait_until(&d.t, 10, shows_filtered, &w, "only sim-comm-1 in the collectives");
  }
  if (ok) {
    /* End: the operations in flight and just done, at the bottom. Sent
     * again until they show: the list grows and shrinks each update, and
     * the scroll stays within what is there. */
    filtered w = {"ranks 4/8", ROW("/4 ", "sim-comm-1 ", "done"), ROW("sim-comm-0"), NULL, -1};
    double end = vt_now() + 10;
    do {
      vt_send(&d.t, "\033OF");
      vt_pump(&d.t, 300);
      vt_text(&d.t);
      ok = shows_filtered(&d.t, &w);
    } while (!ok && vt_now() < end);
    if (!ok) fprintf(stderr, "    never only sim-comm-1 operations:\n%s\n", d.t.text);
  }
  if (ok) {
    /* One rank: one communicator and one process on the overview (100
     * columns: the header has room for this longer filter and the count). */
    vt_resize(&d.t, 24, 100);
    vt_send(&d.t, "\033"); /* clears the filter */
    ok = wait_row(&d.t, 5, ROW("sim-comm-0"));
    vt_send(&d.t, "\\0/4 sim-comm-1\r1");
    filtered w = {"ranks 1/8", ROW("sim-comm-1 ", "4/4"), ROW("sim-comm-0"), ROW(":", " live"), 1};
    ok = ok && vt_wait_until(&d.t, 10, shows_filtered, &w, "one communicator and one process");
  }
  CHECK(vt_demo_stop(&d, ok));
}

/* ---- sort: the mark, the menu, the inverse; the channel grid ---- */

/* Column of `needle` in row r, or -1. */
static int col_in_row(vt_term *t, int r, const char *needle) {
  char line[2048];
  const char *at = strstr(screen_row(t, r, line, sizeof line), needle);
  return at ? (int)(at - line) : -1;
}

static bool reversed_at(vt_term *t, int r, int c) {
  bool rev;
  int fg;
  vt_cell_attr(t, r, c, &rev, &fg);
  return rev;
}

typedef struct {
  const char *header;       /* in the header */
  const char *const *title; /* the column titles' row */
  const char *first;        /* the first row under it starts so (NULL: any) */
} sorted_by;

static bool shows_sorted(vt_term *t, const void *arg) {
  const sorted_by *w = arg;
  char head[2048], first[2048];
  int r = row_with(t, w->title);
  return r >= 0 && strstr(screen_row(t, 0, head, sizeof head), w->header) &&
         (!w->first ||
          !strncmp(screen_row(t, r + 1, first, sizeof first), w->first, strlen(w->first)));
}

static bool wait_sorted(vt_term *t, const char *header, const char *const *title,
                        const char *first) {
  sorted_by w = {header, title, first};
  return vt_wait_until(t, 10, shows_sorted, &w, header);
}

/* The sort menu's entry `name` is drawn reversed (its cursor). */
static bool menu_on(vt_term *t, const void *name) {
  int r = row_with(t, ROW("Sort by (Enter, Esc)"));
  if (r < 0) return false;
  char want[64];
  snprintf(want, sizeof want, " %s ", (const char *)name);
  for (int k = r + 1; k < t->rows - 1; k++) {
    int c = col_in_row(t, k, want);
    if (c == 0) return reversed_at(t, k, 1);
  }
  return false;
}

/* Twelve ranks at 80x24. The channel grid marks the word that sorts
 * (RANK^ for the rank order: the mark was on HOST, the one column that did
 * not sort), "!^" for stalled first; F6 opens the sort menu on the order in
 * force (htop's "Sort by"), arrows and Enter pick, Esc closes; I inverts
 * (v, the last rank first). The proxy view marks its % columns in text
 * (IDLE% was only reversed) and offers HOST:PID once. */
static void sort_is_marked_and_has_a_menu_and_an_inverse(void) {
  vt_demo d;
  bool ok = vt_demo_start(
      &d, nccltop, 24, 80,
      (char *[]){"--ranks", "12", "--comms", "1", "--channels", "8", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "3");
    ok = wait_row(&d.t, 30, ROW("[channels]")) &&
         wait_sorted(&d.t, "sort rank", ROW("RANK^ COMM ", " HOST ", "ch0"), "0/12 ");
  }
  if (ok) {
    vt_send(&d.t, ">");
    ok = wait_sorted(&d.t, "sort stalled first", ROW("RANK  COMM ", " HOST !^", "ch0"), NULL);
  }
  if (ok) {
    vt_send(&d.t, ">");
    ok = wait_sorted(&d.t, "sort host", ROW("RANK  COMM ", " HOST^", "ch0"), NULL);
  }
  if (ok) {
    vt_send(&d.t, "\033[17~"); /* F6: the menu, on host */
    ok = vt_wait_until(&d.t, 5, menu_on, "host", "the sort menu on host");
  }
  if (ok) {
    vt_send(&d.t, "\033OA"); /* Up: stalled first */
    ok = vt_wait_until(&d.t, 5, menu_on, "stalled first", "the menu's cursor on stalled first");
  }
  if (ok) {
    vt_send(&d.t, "\r"); /* Enter picks it and closes the menu */
    ok = wait_sorted(&d.t, "sort stalled first", ROW("RANK  COMM ", " HOST !^", "ch0"), NULL) &&
         wait_no_row(&d.t, 5, ROW("Sort by"));
  }
  if (ok) {
    vt_send(&d.t, "\033[17~"); /* F6, Esc: closed, nothing changed */
    ok = vt_wait_until(&d.t, 5, menu_on, "stalled first", "the menu on stalled first");
    vt_send(&d.t, "\033");
    ok = ok && wait_no_row(&d.t, 5, ROW("Sort by")) &&
         wait_sorted(&d.t, "sort stalled first", ROW("RANK  COMM ", " HOST !^"), NULL);
  }
  if (ok) {
    vt_send(&d.t, "<I"); /* the rank order, inverted: the last rank first */
    ok = wait_sorted(&d.t, "sort rank (inverted)", ROW("RANKv COMM ", " HOST ", "ch0"), "11/12 ");
  }
  if (ok) {
    vt_send(&d.t, "I2>>>>"); /* proxy view: stalled first, host (HOST:PID), STATE, IDLE% */
    ok = wait_sorted(&d.t, "sort IDLE%", ROW("RANK", "IDLE%^"), NULL);
  }
  if (ok) {
    vt_send(&d.t, "<<"); /* STATE, then host: HOST:PID's order, offered once */
    ok = wait_sorted(&d.t, "sort host", ROW("RANK", "HOST:PID^"), NULL);
  }
  CHECK(vt_demo_stop(&d, ok));
}

static bool grid_aligned_with_more_to_the_right(vt_term *t, const void *arg) {
  (void)arg;
  int head = row_with(t, ROW("RANK^ COMM ", " HOST", "ch0")), r9 = row_with(t, ROW("9/12 ")),
      r10 = row_with(t, ROW("10/12 "));
  return head >= 0 && r9 >= 0 && r10 >= 0 && col_in_row(t, head, "COMM") >= 0 &&
         col_in_row(t, r9, "sim-comm-0") == col_in_row(t, head, "COMM") &&
         col_in_row(t, r10, "sim-comm-0") == col_in_row(t, head, "COMM") &&
         col_in_row(t, head, "ch4") >= 0 && col_in_row(t, head, ">") == t->cols - 1;
}

static bool grid_scrolled_both_ways(vt_term *t, const void *arg) {
  (void)arg;
  int head = row_with(t, ROW("RANK^ COMM ", " HOST", "ch2"));
  return head >= 0 && col_in_row(t, head, "ch0") < 0 && col_in_row(t, head, "<>") == t->cols - 2;
}

/* The channel grid at 80 columns: COMM (the communicator's name, as
 * everywhere) under its title on rank 9 and rank 10 alike (RANK was 4 wide: from rank 10 on the
 * columns shifted), a host as wide as its name (18 for "vm"), so five channels fit, and ">" says
 * more lie to the right (nothing said so; "<" came only after scrolling). */
static void channel_grid_aligned_and_says_more_to_the_right(void) {
  vt_demo d;
  bool ok = vt_demo_start(
      &d, nccltop, 24, 80,
      (char *[]){"--ranks", "12", "--comms", "1", "--channels", "8", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "3");
    ok = wait_row(&d.t, 30, ROW("[channels]")) &&
         vt_wait_until(&d.t, 10, grid_aligned_with_more_to_the_right, NULL,
                       "the grid aligned, five channels, > at the right");
  }
  if (ok) {
    vt_send(&d.t, "\033OC\033OC\033OC\033OC\033OC\033OC"); /* Right to channel 6 */
    ok = vt_wait_until(&d.t, 10, grid_scrolled_both_ways, NULL, "< and > once scrolled");
  }
  CHECK(vt_demo_stop(&d, ok));
}

/* ---- the channel details at 80x24 ---- */

static bool details_end_shown(vt_term *t, const void *arg) {
  (void)arg;
  return row_with(t, ROW("recv_gpu_wait ", "%")) >= 0 &&
         row_with(t, ROW("wait times: totals since the channel's first step")) >= 0 &&
         row_with(t, ROW("PgUp/PgDn scroll: lines ", " of ")) >= 0;
}

/* The details of a channel at 80x24 name the rank's communicator (a rank
 * has one per communicator; the panel did not say which), wrap their
 * status lines (the ops in flight and run state were cut at the edge), say
 * what window the wait times cover, and scroll to their last line with
 * PgDn (recv_gpu_wait fell off the bottom). */
static void channel_details_name_the_communicator_and_scroll(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 24, 80,
                          (char *[]){"--ranks", "4", "--comms", "2", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "3");
    ok = wait_row(&d.t, 30, ROW("[channels]")) && wait_row(&d.t, 10, ROW("0/4 ", "/"));
  }
  if (ok) {
    vt_send(&d.t, "\r");
    ok = wait_row(&d.t, 10, ROW("rank 0/4 of sim-comm-", "channel 0")) &&
         wait_row(&d.t, 5, ROW("send to peer 1: ")) && wait_row(&d.t, 5, ROW("ops in flight ("));
  }
  if (ok) {
    double end = vt_now() + 10;
    do {
      vt_send(&d.t, "\033[6~"); /* PgDn: the panel's next page */
      vt_pump(&d.t, 300);
      vt_text(&d.t);
      ok = details_end_shown(&d.t, NULL);
    } while (!ok && vt_now() < end);
    if (!ok) fprintf(stderr, "    the details' end never showed:\n%s\n", d.t.text);
  }
  CHECK(vt_demo_stop(&d, ok));
}

/* ---- the mouse ---- */

/* An xterm SGR mouse report (what ncurses asks the terminal for): button
 * b pressed at screen cell (row, col), then released. */
static void mouse(vt_term *t, int b, int row, int col) {
  char seq[64];
  snprintf(seq, sizeof seq, "\033[<%d;%d;%dM", b, col + 1, row + 1);
  vt_send(t, seq);
  if (b < 64) { /* the wheel has no release */
    snprintf(seq, sizeof seq, "\033[<%d;%d;%dm", b, col + 1, row + 1);
    vt_send(t, seq);
  }
}

/* Clicks on the first row with `needles`, at the last needle; false when
 * no row has them. */
static bool click_on(vt_term *t, const char *const *needles) {
  if (!wait_row(t, 10, needles)) return false;
  int r = row_with(t, needles), k = 0;
  while (needles[k + 1]) k++;
  int c = col_in_row(t, r, needles[k]);
  if (c < 0) return false;
  mouse(t, 0, r, c + 1);
  return true;
}

/* The header has `what`; a sort ("sort ...") is "(inverted)" only when
 * `what` says so. */
static bool header_says(vt_term *t, const void *what) {
  char head[2048];
  screen_row(t, 0, head, sizeof head);
  return strstr(head, what) &&
         (strncmp(what, "sort ", 5) != 0 ||
          (strstr(what, "(inverted)") != NULL) == (strstr(head, "(inverted)") != NULL));
}

static bool wait_header(vt_term *t, const char *what) {
  return vt_wait_until(t, 10, header_says, what, what);
}

static bool proxy_cursor_on(vt_term *t, const void *rank) {
  int r = row_with(t, ROW((const char *)rank, "sim-comm-0"));
  return r >= 0 && col_in_row(t, r, rank) == 0 && reversed_at(t, r, 0);
}

/* htop's mouse: a click on a column title sorts by it, again inverts; on
 * a row moves the cursor there; on the key bar's labels is their key (F6
 * opens the sort menu, whose entries take a click; View goes to the next
 * view; Help opens the help), the wheel scrolls, and in the help any click
 * closes it. */
static void mouse_sorts_selects_scrolls_and_clicks_the_key_bar(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 24, 100,
                          (char *[]){"--ranks", "4", "--comms", "1", "-d", "200", NULL});
  if (ok) {
    vt_send(&d.t, "2");
    ok =
        wait_row(&d.t, 30, ROW("[proxy threads]")) && wait_row(&d.t, 10, ROW("3/4 ", "sim-comm-0"));
  }
  ok = ok && click_on(&d.t, ROW("RANK", "IDLE%")) && wait_header(&d.t, "sort IDLE%");
  ok = ok && click_on(&d.t, ROW("RANK", "IDLE%")) && wait_header(&d.t, "sort IDLE% (inverted)");
  ok = ok && click_on(&d.t, ROW("2/4 ", "sim-comm-0")) &&
       vt_wait_until(&d.t, 10, proxy_cursor_on, "2/4 ", "the cursor on the row clicked");
  ok = ok && click_on(&d.t, ROW("F1Help", "Sort")) &&
       wait_row(&d.t, 10, ROW("Sort by (Enter, Esc)"));
  ok = ok && click_on(&d.t, ROW(" host ")) && wait_header(&d.t, "sort host (inverted)") &&
       wait_no_row(&d.t, 5, ROW("Sort by"));
  ok = ok && click_on(&d.t, ROW("F1Help", "View")) && wait_header(&d.t, "[channels]");
  ok = ok && click_on(&d.t, ROW("RANK COMM ", "HOST")) &&
       wait_header(&d.t, "sort host"); /* the order in force: inverted back */
  if (ok) {                            /* on RANK, the line's start */
    mouse(&d.t, 0, row_with(&d.t, ROW("RANK COMM ")), 1);
    ok = wait_header(&d.t, "sort rank");
  }
  ok = ok && click_on(&d.t, ROW("F1Help")) && wait_row(&d.t, 10, ROW("Event classes on:"));
  if (ok) {
    for (int i = 0; i < 3; i++) mouse(&d.t, 65, 10, 10); /* the wheel, down */
    ok = wait_no_row(&d.t, 10, ROW("Event classes on:")) && wait_header(&d.t, "[help]");
  }
  if (ok) {
    mouse(&d.t, 0, 10, 10);
    ok = wait_header(&d.t, "[channels]");
  }
  CHECK(vt_demo_stop(&d, ok));
}

/* ---- the key bar ---- */

/* Enter opens details only in the channels view: only there does the key
 * bar offer it (newcomer run 3, finding 24). */
static void the_key_bar_offers_enter_only_where_it_opens_details(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 24, 100,
                          (char *[]){"--ranks", "4", "--comms", "1", "-d", "200", NULL});
  ok = ok && wait_header(&d.t, "[overview]") && wait_row(&d.t, 10, ROW("F1Help", "F10Quit")) &&
       wait_no_row(&d.t, 2, ROW("F1Help", "Detail"));
  if (ok) vt_send(&d.t, "3");
  ok = ok && wait_header(&d.t, "[channels]") && wait_row(&d.t, 10, ROW("F1Help", "EnterDetail"));
  if (ok) vt_send(&d.t, "4");
  ok = ok && wait_header(&d.t, "[collectives]") && wait_no_row(&d.t, 10, ROW("F1Help", "Detail"));
  if (ok) vt_send(&d.t, "2");
  ok = ok && wait_header(&d.t, "[proxy threads]") && wait_no_row(&d.t, 10, ROW("F1Help", "Detail"));
  CHECK(vt_demo_stop(&d, ok));
}

/* --hide-columns: the collectives leave out what the user named. */
static void hidden_columns_stay_hidden(void) {
  vt_demo d;
  bool ok = vt_demo_start(&d, nccltop, 24, 120,
                          (char *[]){"--ranks", "2", "--comms", "1", "-d", "200", "--hide-columns",
                                     "done,Model%", NULL});
  if (ok) vt_send(&d.t, "4");
  ok = ok && wait_header(&d.t, "[collectives]") &&
       wait_row(&d.t, 30, ROW("COMMUNICATOR", "COUNT", "AVG TIME", "BUSBW")) &&
       wait_no_row(&d.t, 5, ROW("COMMUNICATOR", "DONE")) &&
       wait_no_row(&d.t, 5, ROW("COMMUNICATOR", "MODEL%"));
  CHECK(vt_demo_stop(&d, ok));
}

int main(void) {
  char dir[PATH_MAX];
  vt_build_dir(dir, sizeof dir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", dir);
  unsetenv("NO_COLOR");
  TEST_RUN(help_fits_80_columns_and_any_key_closes_it);
  TEST_RUN(collectives_name_their_communicator_and_the_filter_applies_everywhere);
  TEST_RUN(sort_is_marked_and_has_a_menu_and_an_inverse);
  TEST_RUN(channel_grid_aligned_and_says_more_to_the_right);
  TEST_RUN(channel_details_name_the_communicator_and_scroll);
  TEST_RUN(mouse_sorts_selects_scrolls_and_clicks_the_key_bar);
  TEST_RUN(the_key_bar_offers_enter_only_where_it_opens_details);
  TEST_RUN(hidden_columns_stay_hidden);
  return TEST_DONE();
}

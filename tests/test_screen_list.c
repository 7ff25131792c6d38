/* The list views in a pseudo-terminal, on a publisher of many ranks (30
 * communicators of one process, 32 channels each): the proxy view scrolls
 * to its last row in a 15-line terminal, the channel grid reaches its last
 * channel at 80 columns, each view keeps its own scroll, and the key bar is
 * on the last line at 80x24 and 200x60. */
#include <libgen.h>
#include <limits.h>

#include "testlib.h"
#include "vterm_harness.h"
#include "../proto/nccltop_proto.h"
#include <zmq.h>

#define RANKS    30
#define CHANNELS 32

static char nccltop[PATH_MAX + 16];
static char dir[] = "/tmp/nccltop-list-XXXXXX";
static char dir_env[sizeof dir + 16];
static pid_t pub = -1;

static pid_t wide_publisher(void) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  char ep[256];
  void *z = zmq_ctx_new(), *s = zmq_socket(z, ZMQ_XPUB);
  if (nt_endpoint_for_pid(dir, (uint32_t)getpid(), ep, sizeof ep) != 0 || zmq_bind(s, ep) != 0)
    _exit(1);
  nt_snapshot *snap = nt_snapshot_new();
  if (!snap) _exit(1);
  snprintf(snap->host, sizeof snap->host, "wide");
  snap->pid = (uint32_t)getpid();
  snap->ncomms = RANKS;
  snap->nproxy = RANKS;
  snap->nchannels = RANKS * CHANNELS;
  for (int i = 0; i < RANKS; i++) {
    snap->comms[i] =
        (nt_comm_row){.comm_hash = 0x1000u + (unsigned)i, .rank = i, .nranks = RANKS, .nnodes = 1};
    snap->proxy[i] = (nt_proxy_row){.comm_index = (uint16_t)i,
                                    .tid = 100u + (unsigned)i,
                                    .state = NT_PROXY_ACTIVE,
                                    .state_ns = {1 + (uint64_t)i, 3, 0, 0, 0}};
    for (int c = 0; c < CHANNELS; c++)
      snap->channels[i * CHANNELS + c] = (nt_channel_row){.comm_index = (uint16_t)i,
                                                          .channel = (uint8_t)c,
                                                          .dir = NT_DIR_SEND,
                                                          .peer = (i + 1) % RANKS,
                                                          .wait_ns = {1, 1, 5},
                                                          .steps = 10,
                                                          .cur_step = -1,
                                                          .cur_wait = NT_WAIT_NONE,
                                                          .progress_age_ns = 1000,
                                                          .relay_rank = -1};
  }
  static uint8_t buf[1 << 20];
  for (uint64_t seq = 1; seq < 1200; seq++) {
    snap->seq = seq;
    snap->mono_ns = seq * 100000000ull;
    size_t n = nt_snapshot_encode(snap, buf, sizeof buf);
    if (!n) _exit(2);
    zmq_send(s, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), ZMQ_SNDMORE);
    zmq_send(s, buf, n, 0);
    usleep(100000);
  }
  _exit(0);
}

/* The last line of the screen as text. */
static const char *last_line(vt_term *t) {
  const char *text = vt_text(t), *p = text;
  for (int r = 0; r < t->rows - 1 && p; r++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  return p ? p : "";
}

static bool start(vt_term *t, int rows, int cols) {
  char *argv[] = {nccltop, "-d", "200", NULL};
  char *env[] = {dir_env, NULL};
  return vt_start(t, rows, cols, argv, env) == 0 && vt_wait_for(t, "ranks 30", 20);
}

static bool quit(vt_term *t) {
  vt_send(t, "q");
  bool ok = vt_wait_exit(t, 10) == 0;
  vt_stop(t);
  return ok;
}

static void proxy_view_scrolls_to_its_last_row(void) {
  vt_term t;
  bool ok = start(&t, 15, 100);
  vt_send(&t, "2");
  ok = ok && vt_wait_for(&t, "[proxy threads]", 5) && vt_wait_for(&t, "0/30", 5);
  vt_send(&t, "\033OF"); /* End: the last rank, 29/30, comes into view */
  ok = ok && vt_wait_for(&t, "29/30", 5);
  vt_send(&t, "\033OH"); /* Home: back up */
  ok = ok && vt_wait_for(&t, "\n0/30 ", 5);
  /* Down past the screen's end, one line at a time. */
  for (int i = 0; i < RANKS - 1; i++) vt_send(&t, "\033OB");
  ok = ok && vt_wait_for(&t, "29/30", 5);
  ok = quit(&t) && ok;
  CHECK(ok);
}

static void channel_grid_reaches_its_last_channel(void) {
  vt_term t;
  bool ok = start(&t, 24, 80);
  vt_send(&t, "3");
  ok = ok && vt_wait_for(&t, "[channels]", 5) && vt_wait_for(&t, "ch0 ", 5);
  for (int i = 0; i < CHANNELS - 1; i++) vt_send(&t, "\033OC"); /* Right to the last channel */
  ok = ok && vt_wait_for(&t, "ch31", 5);
  vt_send(&t, "\033OF"); /* End: the last rank, in the same channel */
  ok = ok && vt_wait_for(&t, "29/30", 5) && vt_wait_for(&t, "ch31", 1);
  /* Each view its own scroll: the proxy view is not scrolled right, and the
   * grid still is when it comes back; the cursor's rank follows. */
  vt_send(&t, "2");
  ok = ok && vt_wait_for(&t, "[proxy threads]", 5) && vt_wait_for(&t, "COMM", 5) &&
       vt_wait_for(&t, "29/30", 5);
  vt_send(&t, "3");
  ok = ok && vt_wait_for(&t, "[channels]", 5) && vt_wait_for(&t, "ch31", 5);
  ok = quit(&t) && ok;
  CHECK(ok);
}

static void proxy_view_at_80x24_keeps_its_key_numbers(void) {
  vt_term t;
  bool ok = start(&t, 24, 80);
  vt_send(&t, "2");
  ok = ok && vt_wait_for(&t, "[proxy threads]", 5) && vt_wait_for(&t, "ACTV%", 5) &&
       vt_wait_for(&t, "STATE", 1) && vt_wait_for(&t, "active", 5) && vt_wait_for(&t, "75.0", 5);
  ok = quit(&t) && ok;
  CHECK(ok);
}

static void overview_at_80x24_keeps_its_key_numbers(void) {
  vt_term t;
  bool ok = start(&t, 24, 80) && vt_wait_for(&t, "[overview]", 5);
  /* Hash, nodes, phase and the process's ABI and unsent count give way. */
  ok = ok && vt_wait_for(&t, "RANKS", 5) && vt_wait_for(&t, "STALLED", 1) &&
       vt_wait_for(&t, "DONE/s", 1);
  vt_send(&t, "\033OF"); /* End: the process table, below the 30 communicators */
  ok = ok && vt_wait_for(&t, "DROPPED", 5) && vt_wait_for(&t, "STATE", 1) &&
       vt_wait_for(&t, "live", 5);
  ok = quit(&t) && ok;
  CHECK(ok);
}

static bool key_bar_shown(vt_term *t) {
  double end = vt_now() + 5;
  while (vt_now() < end && !(strstr(last_line(t), "F1Help") && strstr(last_line(t), "F10Quit")))
    vt_pump(t, 50);
  if (strstr(last_line(t), "F1Help") && strstr(last_line(t), "F10Quit")) return true;
  fprintf(stderr, "    %dx%d: the last line is \"%s\"\n", t->cols, t->rows, last_line(t));
  return false;
}

static void key_bar_on_the_last_line(void) {
  vt_term t;
  bool ok = start(&t, 24, 80) && key_bar_shown(&t);
  if (ok) {
    vt_resize(&t, 60, 200);
    ok = vt_wait_for(&t, "ranks 30", 5) && key_bar_shown(&t);
  }
  ok = quit(&t) && ok;
  CHECK(ok);
}

/* Where `what` is on the screen: row and column (of its first cell), or
 * false. Columns count cells (the text is ASCII here). */
static bool find_on_screen(vt_term *t, const char *what, int *row, int *col) {
  const char *text = vt_text(t), *p = strstr(text, what);
  if (!p) return false;
  *row = 0;
  const char *line = text;
  for (const char *q = text; q < p; q++)
    if (*q == '\n') (*row)++, line = q + 1;
  *col = (int)(p - line);
  return true;
}

/* Colour by meaning, meters, a cursor on the whole row: in the grid a
 * wait on the network is cyan; the channel details draw each wait's share
 * as a meter; the proxy view's cursor covers the gaps between columns. */
static void look_by_meaning(void) {
  vt_term t;
  bool ok = start(&t, 30, 120);
  int row = 0, col = 0;
  bool rev;
  int fg;
  vt_send(&t, "3");
  ok = ok && vt_wait_for(&t, "[channels]", 5) && vt_wait_for(&t, "NET/-", 5) &&
       find_on_screen(&t, "NET/-", &row, &col);
  if (ok) {
    vt_cell_attr(&t, row, col, &rev, &fg);
    if (fg != 6) fprintf(stderr, "    NET drawn in colour %d, not cyan (6)\n", fg);
    ok = fg == 6;
  }
  vt_send(&t, "\r"); /* details of the cell under the cursor */
  ok = ok && vt_wait_for(&t, "send_net_wait", 5);
  if (ok) {
    /* Read again on every pump: one read can catch the panel's line half
     * drawn over the grid (its label written, its meter not yet). */
    char l[256] = "";
    bool meter = false;
    for (double end = vt_now() + 5; !meter && vt_now() < end;) {
      vt_pump(&t, 50);
      if (!find_on_screen(&t, "send_net_wait", &row, &col)) continue;
      const char *line = vt_text(&t);
      for (int r = 0; r < row; r++) line = strchr(line, '\n') + 1;
      snprintf(l, sizeof l, "%.*s", (int)strcspn(line, "\n"), line);
      meter = strstr(l, "71.4% [|||") != NULL;
    }
    if (!meter) fprintf(stderr, "    no meter on \"%s\"\n", l);
    ok = meter;
  }
  vt_send(&t, "\0332"); /* Esc, then the proxy view */
  ok = ok && vt_wait_for(&t, "[proxy threads]", 5) && vt_wait_for(&t, "1/30 ", 5);
  vt_send(&t, "\033OB"); /* down: the cursor on rank 1 */
  bool lit = false;
  for (double end = vt_now() + 5; ok && !lit && vt_now() < end;) {
    vt_pump(&t, 50);
    if (find_on_screen(&t, "\n1/30 ", &row, &col)) {
      vt_cell_attr(&t, row + 1, 11, &rev, &fg); /* the blank after RANK */
      lit = rev;
    }
  }
  if (ok && !lit)
    fprintf(stderr, "    the cursor row's gap is not highlighted:\n%s\n", vt_text(&t));
  ok = ok && lit;
  ok = quit(&t) && ok;
  CHECK(ok);
}

/* Any column sorts: > goes from the rank orders (rank, stalled first,
 * host) to the proxy view's columns; by IDLE% the idlest thread (rank 29's,
 * 30 of 33) comes first, and the header and the column title say so. */
static void proxy_view_sorts_by_any_column(void) {
  vt_term t;
  bool ok = start(&t, 20, 120);
  vt_send(&t, "2");
  ok = ok && vt_wait_for(&t, "[proxy threads]", 5) && vt_wait_for(&t, "sort rank", 5);
  for (int i = 0; ok && i < 4; i++) vt_send(&t, ">");
  ok = ok && vt_wait_for(&t, "sort IDLE%", 5) && vt_wait_for(&t, "\n29/30 ", 5) &&
       vt_wait_for(&t, "90.9", 5);
  if (ok) {
    int row, col, hrow, hcol;
    ok = find_on_screen(&t, "IDLE%^", &hrow, &hcol) && find_on_screen(&t, "\n29/30 ", &row, &col) &&
         row == hrow; /* the first row under the column titles, marked */
    if (!ok) fprintf(stderr, "    29/30 first, IDLE%% marked?\n%s\n", vt_text(&t));
  }
  vt_send(&t, "<"); /* back: by STATE */
  ok = ok && vt_wait_for(&t, "sort STATE", 5);
  ok = quit(&t) && ok;
  CHECK(ok);
}

int main(void) {
  char bindir[PATH_MAX];
  vt_build_dir(bindir, sizeof bindir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  if (!mkdtemp(dir)) return 1;
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s", dir);
  pub = wide_publisher();
  if (pub < 0) return 1;
  TEST_RUN(proxy_view_scrolls_to_its_last_row);
  TEST_RUN(channel_grid_reaches_its_last_channel);
  TEST_RUN(proxy_view_at_80x24_keeps_its_key_numbers);
  TEST_RUN(overview_at_80x24_keeps_its_key_numbers);
  TEST_RUN(key_bar_on_the_last_line);
  TEST_RUN(look_by_meaning);
  TEST_RUN(proxy_view_sorts_by_any_column);
  kill(pub, SIGKILL);
  waitpid(pub, NULL, 0);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return TEST_DONE();
}

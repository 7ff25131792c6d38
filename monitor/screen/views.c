/* The views: header, proxy threads, channel grid (+ details), help. They
 * read the frame (frame.h) and draw; nothing here changes state. Strings from other
 * processes were sanitized when they entered the model. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../core/frame.h"
#include "../core/model.h"
#include "../options.h"
#include "screen_internal.h"

int nt_state_attr(const nt_screen *s, int state) {
  bool color = s->o->color && has_colors();
  switch (state) {
  case NT_PROXY_IDLE: return color ? COLOR_PAIR(NT_C_IDLE) | A_DIM : A_DIM;
  case NT_PROXY_ACTIVE: return color ? COLOR_PAIR(NT_C_ACTIVE) | A_BOLD : A_BOLD;
  case NT_PROXY_SLEEP: return color ? COLOR_PAIR(NT_C_SLEEP) : A_NORMAL;
  case NT_PROXY_WAKEUP: return color ? COLOR_PAIR(NT_C_WAKEUP) : A_UNDERLINE;
  case NT_PROXY_APPEND: return color ? COLOR_PAIR(NT_C_APPEND) : A_UNDERLINE;
  default: return A_NORMAL;
  }
}

int nt_wait_attr(const nt_screen *s, int wait) {
  bool color = s->o->color && has_colors();
  switch (wait) {
  case NT_WAIT_SEND_GPU:
  case NT_WAIT_RECV_GPU:
  case NT_WAIT_RECV_FLUSH: /* its own GPU (or its flush) */
    return color ? COLOR_PAIR(NT_C_WAIT_SELF) : A_BOLD;
  case NT_WAIT_SEND_PEER: /* the peer has not granted credit */
    return color ? COLOR_PAIR(NT_C_WAIT_PEER) | A_BOLD : A_UNDERLINE;
  case NT_WAIT_SEND_NET:
  case NT_WAIT_RECV_NET: /* the data is on the wire */
    return color ? COLOR_PAIR(NT_C_WAIT_NET) : A_NORMAL;
  default: return A_NORMAL;
  }
}

void nt_meter(const nt_screen *s, int y, int x, int w, double share, int attr) {
  if (w < 3) return;
  int inner = w - 2, full = (int)(share * inner + 0.5);
  if (full > inner) full = inner;
  if (full < 0) full = 0;
  mvaddch(y, x, '[');
  attron(attr);
  for (int i = 0; i < full; i++) mvaddch(y, x + 1 + i, s->o->ascii ? '#' : '|');
  attroff(attr);
  for (int i = full; i < inner; i++) mvaddch(y, x + 1 + i, ' ');
  mvaddch(y, x + w - 1, ']');
}

int nt_stall_attr(const nt_screen *s) {
  return s->o->color && has_colors() ? COLOR_PAIR(NT_C_STALL) | A_BOLD : A_REVERSE | A_BOLD;
}

int nt_warn_attr(const nt_screen *s) {
  return s->o->color && has_colors() ? COLOR_PAIR(NT_C_WARN) | A_BOLD : A_BOLD;
}

bool nt_scroll_line(nt_screen *s, int *y, int *n, int attr, const char *text) {
  if (*y >= s->bottom - 1) { /* counted (End scrolls to the last line), not drawn */
    (*n)++;
    return false;
  }
  if ((*n)++ < s->scroll[s->view]) return true;
  if (attr) attron(attr);
  /* s->cols cells, not bytes: a line may hold UTF-8 (sparklines). */
  mvaddnstr((*y)++, 0, text, (int)nt_cells_prefix(text, s->cols, NULL));
  if (attr) attroff(attr);
  return true;
}

bool nt_scroll_wrap(nt_screen *s, int *y, int *n, int attr, int indent, const char *text) {
  int width = s->cols > 2 * indent + 10 ? s->cols : 2 * indent + 10;
  bool shown = true;
  char buf[1024];
  for (bool first = true; first || *text; first = false) {
    int room = width - (first ? 0 : indent);
    size_t len = strlen(text), cut = len;
    if (len > (size_t)room) {
      /* At the last blank that fits; a word longer than the line is cut,
       * never inside a UTF-8 sequence. */
      cut = (size_t)room;
      size_t b = cut;
      while (b > cut / 3 && text[b] != ' ') b--;
      if (b > cut / 3)
        cut = b;
      else
        while (cut > 1 && ((unsigned char)text[cut] & 0xC0) == 0x80) cut--;
    }
    snprintf(buf, sizeof buf, "%*s%.*s", first ? 0 : indent, "", (int)cut, text);
    shown = nt_scroll_line(s, y, n, attr, buf) && shown;
    text += cut;
    while (*text == ' ') text++;
  }
  return shown;
}

void nt_scroll_clamp(nt_screen *s, int n) {
  int page = s->bottom - 1 - s->lay.list.y, max = n - (page > 0 ? page : 1);
  if (s->scroll[s->view] > max) s->scroll[s->view] = max > 0 ? max : 0;
}

void nt_draw_header(nt_screen *s) {
  const nt_frame *f = s->f;
  double last = f->last_data_s;
  bool stale = !last || s->now - last > 3 * 1.0;
  const char *mode = s->paused      ? "PAUSED"
                     : s->feed_mode ? s->feed_mode /* a replay's REPLAY */
                     : stale        ? "STALE"
                                    : "LIVE";
  char age[NT_UNIT_LEN + 16], line[512], t[NT_UNIT_LEN];
  if (last)
    snprintf(age, sizeof age, "data %s ago", nt_fmt_ns((s->now - last) * 1e9, t, sizeof t));
  else
    snprintf(age, sizeof age, "no data yet");
  char mem[32]; /* mem: what the publishers cost, last (--max-memory) */
  /* The fields in the order they are shown, each with its rank: where the
   * terminal is too narrow for all, the least important go whole (never a
   * number cut in half: "alerts 1" for 10), so the alerts, the filter and
   * the sort stay at 80 columns, as htop keeps its meters. Counts of bad,
   * lost and refused messages only when not zero. */
  char fields[11][96];
  int rank[11], nf = 0;
#define FIELD(r, ...) (snprintf(fields[nf], sizeof fields[nf], __VA_ARGS__), rank[nf++] = (r))
  FIELD(0, " nccltop [%s]", nt_views[s->view].name);
  FIELD(0, "%s", mode);
  FIELD(7, "%s", age);
  /* Filtered, the ranks shown of all (every table shows theirs) before
   * the publishers. */
  FIELD(s->filter[0] ? 5 : 4, "publishers %u", f->publishers);
  if (s->filter[0])
    FIELD(4, "ranks %u/%u", s->nranks, f->nranks);
  else
    FIELD(5, "ranks %u", s->nranks);
  FIELD(1, "alerts %u", f->nalerts - f->nfolded);
  if (f->bad_messages) FIELD(6, "bad msgs %llu", (unsigned long long)f->bad_messages);
  if (f->lost_messages) FIELD(6, "lost %llu", (unsigned long long)f->lost_messages);
  if (f->refused) FIELD(6, "refused %llu", (unsigned long long)f->refused);
  if (s->filter[0]) FIELD(2, "filter \"%.40s\"", s->filter);
  FIELD(3, "sort %s%s", s->view == NT_VIEW_PROXY ? nt_proxy_sort_name(s) : nt_sort_name(s->sort),
        s->sort_invert ? " (inverted)" : "");
  FIELD(8, "mem %s", nt_fmt_size((double)f->memory_bytes, mem, sizeof mem));
#undef FIELD
  bool keep[11] = {false};
  int width = 0;
  for (int r = 0; r <= 8; r++)
    for (int i = 0; i < nf; i++) {
      int w = (int)strlen(fields[i]) + (width ? 2 : 0);
      if (rank[i] == r && (r == 0 || width + w <= s->cols)) keep[i] = true, width += w;
    }
  int n = 0;
  line[0] = '\0';
  for (int i = 0; i < nf; i++)
    if (keep[i] && n >= 0 && (size_t)n < sizeof line)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%s", n ? "  " : "", fields[i]);
  attron(s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE);
  mvhline(0, 0, ' ', s->cols);
  mvaddnstr(0, 0, line, s->cols);
  attroff(s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE);
  /* What is watched first: the first thing to check when a job is missing. */
  n = snprintf(line, sizeof line, " watching %s  ", s->watching);
  if (n < 0 || (size_t)n >= sizeof line) n = 0;
  if (f->nerrors) {
    const nt_model_error *e = &f->errors[0];
    snprintf(line + n, sizeof line - (size_t)n, "last error: %s: %s", e->source, e->text);
  } else if (!s->nranks && s->filter[0] && f->publishers) {
    /* The processes are there: the filter hides them all. */
    snprintf(line + n, sizeof line - (size_t)n,
             "no rank matches the filter \"%s\" (%u publishers): \\ to change it, Esc to clear it",
             s->filter, f->publishers);
  } else if (!s->nranks) {
    snprintf(line + n, sizeof line - (size_t)n,
             "waiting for NCCL processes with the nccltop plugin (NCCL_PROFILER_PLUGIN)...");
  }
  mvaddnstr(1, 0, line, s->cols);
}

static const char *wait_tag(int wait) {
  static const char *tags[NT_WAIT_COUNT] = {"GPU", "PEER", "NET", "NET", "FLSH", "GPU"};
  return wait >= 0 && wait < NT_WAIT_COUNT ? tags[wait] : "-";
}

/* The channel grid: a list panel of ranks, one column per channel; the
 * cursor is a cell (s->row, s->col), the scroll the view's own. */
static nt_list_col chan_cols[NT_LIST_MAX_COLS];
static char chan_titles[NT_LIST_MAX_COLS][16];
#define NT_HOST_SHOWN 10    /* a host's first characters in the grid */
static int chan_rank_w = 4; /* the rank's width: the widest "r/n" shown (or its title) */
static int chan_comm_w = 4; /* the communicator's: its label (nt_comm_label), 4 to 10 */

static void chan_cell(void *ctx, int i, int col, int y, int x, int w, bool cursor) {
  nt_screen *s = ctx;
  const nt_frame_rank *r = nt_screen_rank(s, i);
  char line[64];
  if (col == 0) {
    /* rank/nranks, a short communicator id (ranks of several comms
     * alternate) and its host (a job spans nodes), each in its own width
     * (chan_widths), under its title */
    const nt_frame_proc *p = nt_frame_proc_of(s->f, r);
    char rank[24], host[NT_HOST_SHOWN + 2], cl[NT_COMM_LABEL];
    nt_fmt_rank(r->rank, r->nranks, rank, sizeof rank);
    snprintf(host, sizeof host, "%.*s%s", NT_HOST_SHOWN, p->host, p->stale ? "?" : "");
    snprintf(line, sizeof line, "%-*s %-*.*s %s", chan_rank_w, rank, chan_comm_w, chan_comm_w,
             nt_comm_label(r->comm_name, r->comm_hash, cl, sizeof cl), host);
    mvaddnstr(y, x, line, w);
    return;
  }
  int c = col - 1;
  const nt_frame_channel *sr = nt_frame_cell(s->f, r, c, NT_DIR_SEND),
                         *rr = nt_frame_cell(s->f, r, c, NT_DIR_RECV);
  bool stalled = (sr && sr->stalled) || (rr && rr->stalled);
  /* Work in flight the GPU has not reached (run-ahead): shown, not an alarm. */
  bool queued = (sr && sr->queued) || (rr && rr->queued);
  /* "!GPU/NET": each half coloured by what it waits on (its own GPU, a
   * peer's credit, the network), the whole cell red when stalled. */
  const char *mark = stalled ? "!" : queued ? "~" : "";
  int waits[3] = {sr ? nt_frame_channel_wait(sr) : NT_WAIT_NONE, NT_WAIT_NONE,
                  rr ? nt_frame_channel_wait(rr) : NT_WAIT_NONE};
  const char *parts[3] = {sr ? wait_tag(waits[0]) : "-", "/", rr ? wait_tag(waits[2]) : "-"};
  int base = (cursor ? A_REVERSE : 0) | (stalled ? nt_stall_attr(s) : 0);
  attron(base);
  mvaddnstr(y, x, mark, w);
  int used = (int)strlen(mark);
  for (int k = 0; k < 3 && used < w; k++) {
    int attr = stalled ? 0 : nt_wait_attr(s, waits[k]);
    if (attr) attron(attr);
    mvaddnstr(y, x + used, parts[k], w - used);
    if (attr) attroff(attr);
    used += (int)strlen(parts[k]);
  }
  attroff(base);
}

static void chan_spec(nt_screen *s, nt_list *l) {
  int nch = s->nchannels;
  if (nch > NT_LIST_MAX_COLS - 1) nch = NT_LIST_MAX_COLS - 1;
  /* The sort mark on the word that sorts (it was after HOST when the
   * rank sorted): RANK^, HOST^, or "!^" for stalled first. RANK, COMM and
   * HOST as wide as what they show (RANK was 4 wide, so from rank 10 on
   * the columns shifted; HOST 18 wide for "vm"). */
  static char first[64];
  char rank_title[8], host_title[16];
  const char *m = nt_sort_mark(s);
  snprintf(rank_title, sizeof rank_title, "RANK%s", s->sort == NT_SORT_RANK ? m : "");
  snprintf(host_title, sizeof host_title, "HOST%s%s", s->sort == NT_SORT_STALLED ? " !" : "",
           s->sort == NT_SORT_RANK ? "" : m);
  int rank_w = (int)strlen(rank_title), host_w = (int)strlen(host_title);
  int comm_w = 4;
  for (uint32_t i = 0; i < s->nranks; i++) {
    const nt_frame_rank *r = nt_screen_rank(s, (int)i);
    const nt_frame_proc *p = nt_frame_proc_of(s->f, r);
    char t[24], cl[NT_COMM_LABEL];
    int w = (int)strlen(nt_fmt_rank(r->rank, r->nranks, t, sizeof t));
    if (w > rank_w) rank_w = w;
    int cw = (int)strnlen(nt_comm_label(r->comm_name, r->comm_hash, cl, sizeof cl), 10);
    if (cw > comm_w) comm_w = cw;
    int hl = (int)strnlen(p->host, NT_HOST_SHOWN) + (p->stale ? 1 : 0);
    if (hl > host_w) host_w = hl;
  }
  chan_rank_w = rank_w;
  chan_comm_w = comm_w;
  snprintf(first, sizeof first, "%-*s %-*s %s", rank_w, rank_title, comm_w, "COMM", host_title);
  chan_cols[0] = (nt_list_col){first, rank_w + 1 + comm_w + 1 + host_w, 0, false};
  for (int c = 0; c < nch; c++) {
    snprintf(chan_titles[c + 1], sizeof chan_titles[c + 1], "ch%-2u S/R", (unsigned char)c);
    chan_cols[c + 1] = (nt_list_col){chan_titles[c + 1], 10, 0, false};
  }
  int end = s->bottom - (s->detail ? 0 : 1); /* the legend's line when no detail */
  *l = (nt_list){.area = {.y = s->lay.list.y, .x = 0, .h = end - s->lay.list.y, .w = s->cols},
                 .cols = chan_cols,
                 .ncols = nch + 1,
                 .fixed = 1,
                 .nrows = (int)s->nranks,
                 .sort_col = -1, /* marked in its title */
                 .cell_cursor = true,
                 .cell = chan_cell,
                 .ctx = s};
  if (l->area.h < 0) l->area.h = 0;
  nt_list_state *st = &s->lists[NT_VIEW_CHANNELS];
  st->row = s->row;
  st->col = s->col + 1;
}

/* Back from the list's cursor to the screen's (search and details read it). */
static void chan_sync(nt_screen *s) {
  const nt_list_state *st = &s->lists[NT_VIEW_CHANNELS];
  s->row = st->row;
  s->col = st->col > 0 ? st->col - 1 : 0;
}

void nt_view_channels(nt_screen *s, int y) {
  (void)y; /* the layout's list */
  nt_list l;
  chan_spec(s, &l);
  nt_list_draw(&l, &s->lists[NT_VIEW_CHANNELS], A_BOLD);
  chan_sync(s);
  if (!s->nranks) return;
  if (s->detail && s->row < (int)s->nranks) {
    nt_channel_detail(s, nt_screen_rank(s, s->row), s->col, s->lay.detail);
  } else {
    mvaddnstr(
        s->bottom - 1, 0,
        "cell = wait send/recv (stalled: the one it is stuck in; else the one that took most of "
        "the last update): GPU = its own GPU (yellow), PEER = the receiver has not granted "
        "credit (magenta), NET = on the wire (cyan), FLSH = arrived, flush or next pass; ! = "
        "stalled; ~ = queued (the GPU has not reached it yet); Enter = details",
        s->cols);
  }
}

void nt_channels_click(nt_screen *s, int y, int x) {
  nt_list l;
  chan_spec(s, &l);
  nt_list_state *st = &s->lists[NT_VIEW_CHANNELS];
  int row, col, hit = nt_list_hit(&l, st, y, x, &row, &col);
  if (hit == 1) {
    st->row = row;
    if (col >= 1) st->col = col;
    chan_sync(s);
    return;
  }
  if (hit != 0 || col != 0) return;
  /* The first column's title: RANK sorts by rank, HOST by host (COMM
   * between them: nothing); the order in force inverts. */
  int at = x - l.area.x, want = at < chan_rank_w                      ? NT_SORT_RANK
                                : at >= chan_rank_w + chan_comm_w + 2 ? NT_SORT_HOST
                                                                      : -1;
  if (want < 0) return;
  if (want == s->sort)
    s->sort_invert = !s->sort_invert;
  else
    s->sort = want;
}

bool nt_channels_action(nt_screen *s, int action) {
  if (nt_channel_detail_action(s, action)) return true;
  nt_list l;
  chan_spec(s, &l);
  if (action == NT_ACT_LEFT && s->lists[NT_VIEW_CHANNELS].col <= 1) return true; /* not RANK */
  if (!nt_list_action(&l, &s->lists[NT_VIEW_CHANNELS], action)) return false;
  chan_sync(s);
  return true;
}

/* The classes the job reports: the plugin sets NCCL's mask from
 * NCCLTOP_EVENTS; nccltop_set_mask() changes it while the job runs. */
static void event_classes(nt_screen *s, int *y, int *n) {
  char line[512];
  uint32_t any = 0, all = ~0u, procs = 0;
  for (uint32_t i = 0; i < s->f->nprocs; i++) {
    const nt_frame_proc *p = &s->f->procs[i];
    if (p->ended) continue;
    any |= p->counters.event_mask;
    all &= p->counters.event_mask;
    procs++;
  }
  if (!procs) {
    nt_scroll_line(s, y, n, A_BOLD, "Event classes on: no process yet.");
    return;
  }
  size_t used = (size_t)snprintf(line, sizeof line, "Event classes on:");
  for (int b = 0; b < NT_EVENT_CLASSES && used < sizeof line; b++)
    if (any & (1u << b))
      used += (size_t)snprintf(line + used, sizeof line - used, " %s%s", nt_event_class_name(b),
                               all & (1u << b) ? "" : "(some processes)");
  nt_scroll_wrap(s, y, n, A_BOLD, 2, line);
  nt_scroll_wrap(s, y, n, 0, 4,
                 "  chosen at start with NCCLTOP_EVENTS (e.g. default,kernelch); the job can call "
                 "nccltop_set_mask() to change them live.");
  nt_scroll_wrap(s, y, n, 0, 4,
                 "  kernelch: GPU time per operation, at a cost; netplugin: IB/socket events of "
                 "net plugins that report them.");
}

/* The help: wrapped at blanks to the terminal's width (80 columns cut
 * words), the keys from the key table. Any key but a scroll key closes it
 * (screen.c), as htop's. */
void nt_view_help(nt_screen *s, int y) {
  char line[512];
  int n = 0;
  event_classes(s, &y, &n);
  nt_scroll_line(s, &y, &n, 0, "");
  nt_scroll_line(s, &y, &n, A_BOLD,
                 "Keys (arrows, PgUp, PgDn, Home, End scroll; any other key closes this)");
  for (const nt_key_binding *b = nt_keys; b->key; b++) {
    if (!b->keys_text) continue;
    snprintf(line, sizeof line, "  %-12s %s", b->keys_text, b->help);
    nt_scroll_wrap(s, &y, &n, 0, 15, line);
  }
  static const char *const text[] = {
      "",
      "Proxy thread states: idle (its last pass moved nothing), active (a pass moved data), "
      "sleep (blocked until NCCL posts work), wakeup (just woken), append (taking new ops).",
      "Step waits, send: send_gpu_wait (GPU filling the buffer), send_peer_wait (receiver has "
      "not granted credit), send_net_wait (on the wire); recv: recv_net_wait (data not yet "
      "arrived), recv_flush_wait (arrived: a GPUDirect flush if one is needed, else the wait "
      "for the proxy's next pass), recv_gpu_wait (GPU consuming the data).",
      "A channel is stalled (!) when ops are in flight and no step moved for --stall-ms.",
      "Proxy HISTORY, oldest first: . idle  # active  z sleep  ! wakeup  + append.",
      "Alerts: root = where the waits of stalled ranks end; stall = channels stuck in a wait "
      "(and the peer waited on); hung_op = in flight past --stall-ms; straggler = launched "
      "fewer operations than the other ranks; silent = publisher stopped; drops = data lost; "
      "slow = collectives under half of NCCL's prediction on every rank for 10 s (MODEL%, view 4).",
      "Bandwidths: algbw and busbw as nccl-tests computes them, in decimal units (GB/s = 1e9 B/s).",
  };
  for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
    nt_scroll_wrap(s, &y, &n, 0, 2, text[i]);
  nt_scroll_clamp(s, n);
}

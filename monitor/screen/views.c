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
  mvaddnstr((*y)++, 0, text, s->cols);
  if (attr) attroff(attr);
  return true;
}

void nt_scroll_clamp(nt_screen *s, int n) {
  int page = s->bottom - 1 - s->lay.list.y, max = n - (page > 0 ? page : 1);
  if (s->scroll[s->view] > max) s->scroll[s->view] = max > 0 ? max : 0;
}

void nt_draw_header(nt_screen *s) {
  const nt_frame *f = s->f;
  double last = f->last_data_s;
  bool stale = !last || s->now - last > 3 * 1.0;
  const char *mode = s->paused ? "PAUSED" : s->o->replay ? "REPLAY" : stale ? "STALE" : "LIVE";
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
  FIELD(4, "publishers %u", f->publishers);
  FIELD(5, "ranks %u", s->nranks);
  FIELD(1, "alerts %u", f->nalerts - f->nfolded);
  if (f->bad_messages) FIELD(6, "bad msgs %llu", (unsigned long long)f->bad_messages);
  if (f->lost_messages) FIELD(6, "lost %llu", (unsigned long long)f->lost_messages);
  if (f->refused) FIELD(6, "refused %llu", (unsigned long long)f->refused);
  if (s->filter[0]) FIELD(2, "filter \"%.40s\"", s->filter);
  FIELD(3, "sort %s", s->view == NT_VIEW_PROXY ? nt_proxy_sort_name(s) : nt_sort_name(s->sort));
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

/* Network plugin rows of a rank (IB QPs or sockets), when its net plugin
 * reports them. */
static void net_lines(nt_screen *s, const nt_frame_rank *r, int *y, int end, int x) {
  char line[256], bytes[NT_UNIT_LEN], busy[NT_UNIT_LEN];
  for (uint32_t i = r->net0; i < r->net0 + r->nnet && *y < end; i++) {
    const nt_net_row *n = &s->f->net[i];
    if (n->type == NT_NET_IB_QP)
      snprintf(line, sizeof line,
               "net plugin: IB device %d QP %u: %llu requests, %s, busy %s, %llu open", n->device,
               n->id, (unsigned long long)n->count,
               nt_fmt_size((double)n->bytes, bytes, sizeof bytes),
               nt_fmt_ns((double)n->busy_ns, busy, sizeof busy), (unsigned long long)n->in_flight);
    else
      snprintf(line, sizeof line, "net plugin: socket fd %u: %llu tasks, %s, busy %s, %llu open",
               n->id, (unsigned long long)n->count,
               nt_fmt_size((double)n->bytes, bytes, sizeof bytes),
               nt_fmt_ns((double)n->busy_ns, busy, sizeof busy), (unsigned long long)n->in_flight);
    mvaddnstr((*y)++, x, line, s->cols - x);
  }
}

/* PXN: what this process's proxy thread ran on the channel for other ranks
 * of the node, whose own rows show none of it. */
static void relay_lines(nt_screen *s, const nt_frame_rank *r, int channel, int *y, int end, int x) {
  char line[256], bytes[32];
  for (uint32_t c = r->chan0; c < r->chan0 + r->nchan && *y < end; c++) {
    const nt_channel_row *row = &s->f->channels[c].row;
    if (row->channel != channel || row->relay_rank < 0) continue;
    snprintf(line, sizeof line, "relayed for rank %d (PXN): %s %s peer %d: %llu steps, %s, %s",
             row->relay_rank, row->dir ? "recv" : "send", row->dir ? "from" : "to", row->peer,
             (unsigned long long)row->steps, nt_fmt_size((double)row->bytes, bytes, sizeof bytes),
             nt_run_name(row->run_state));
    mvaddnstr((*y)++, x, line, s->cols - x);
  }
}

/* The channel's GPU work (kernelch): operations, busy time and, on NCCL
 * 2.31, its split into kernel phases; time in the sync phases is time the
 * kernel waited for its peers. */
static void kernel_lines(nt_screen *s, const nt_frame_rank *r, int channel, int *y, int end,
                         int x) {
  static const char *const names[NT_KPHASE_COUNT] = {"initial_sync", "compute", "final_sync"};
  char line[384], busy[NT_UNIT_LEN], t[NT_UNIT_LEN];
  for (uint32_t i = r->kern0; i < r->kern0 + r->nkern && *y < end; i++) {
    const nt_kernel_row *k = &s->f->kernels[i];
    if (k->channel != channel) continue;
    uint64_t sum = 0;
    for (int q = 0; q < NT_KPHASE_COUNT; q++) sum += k->phase_ns[q];
    int n =
        snprintf(line, sizeof line, "GPU: %llu kernel channel runs, busy %s",
                 (unsigned long long)k->count, nt_fmt_ns((double)k->busy_ns, busy, sizeof busy));
    for (int q = 0; sum && q < NT_KPHASE_COUNT && n > 0 && (size_t)n < sizeof line; q++)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%s %s (%.1f%%)",
                    q ? ", " : "; kernel phases (NCCL 2.31): ", names[q],
                    nt_fmt_ns((double)k->phase_ns[q], t, sizeof t),
                    100.0 * (double)k->phase_ns[q] / (double)sum);
    mvaddnstr((*y)++, x, line, s->cols - x);
  }
}

static void detail_panel(nt_screen *s, const nt_frame_rank *r, int channel, nt_rect area) {
  char line[256];
  int x = 2, y = area.y, end = area.y + area.h;
  const nt_frame_proc *p = nt_frame_proc_of(s->f, r);
  if (area.h <= 0) return;
  mvhline(y++, 0, ACS_HLINE, s->cols);
  snprintf(line, sizeof line, "rank %d/%d  channel %d  host %s  pid %u   (Esc closes)", r->rank,
           r->nranks, channel, p->host, p->pid);
  attron(A_BOLD);
  if (y < end) mvaddnstr(y++, x, line, s->cols - x);
  attroff(A_BOLD);
  for (int dir = 0; dir < 2 && y < end; dir++) {
    const nt_frame_channel *fc = nt_frame_cell(s->f, r, channel, dir);
    if (!fc) continue;
    const nt_channel_row *row = &fc->row;
    double sps = fc->steps_per_s, bps = fc->bytes_per_s;
    uint64_t sum = row->wait_ns[0] + row->wait_ns[1] + row->wait_ns[2];
    char age[NT_UNIT_LEN + 8], rate[NT_UNIT_LEN];
    if (row->progress_age_ns == UINT64_MAX)
      snprintf(age, sizeof age, "never");
    else
      snprintf(age, sizeof age, "%s ago",
               nt_fmt_ns((double)row->progress_age_ns, rate, sizeof rate));
    bool stalled = fc->stalled;
    char step[48];
    if (row->cur_wait != NT_WAIT_NONE)
      snprintf(step, sizeof step, "step %d in %s", row->cur_step, nt_wait_name(row->cur_wait));
    else
      snprintf(step, sizeof step, "no step in progress");
    snprintf(line, sizeof line,
             "%s %s peer %d: %s, last progress %s, %.0f steps/s, %s, %llu ops in flight "
             "(%s)%s",
             dir ? "recv" : "send", dir ? "from" : "to", row->peer, step, age, sps,
             nt_fmt_rate(bps, rate, sizeof rate),
             (unsigned long long)(row->ops_started - row->ops_done), nt_run_name(row->run_state),
             stalled ? "  STALLED" : "");
    if (stalled) attron(nt_stall_attr(s));
    mvaddnstr(y++, x, line, s->cols - x);
    if (stalled) attroff(nt_stall_attr(s));
    for (int k = 0; k < 3 && y < end; k++) {
      double share = sum ? (double)row->wait_ns[k] / (double)sum : 0;
      int wait = nt_dir_wait(dir, k);
      char t[NT_UNIT_LEN];
      snprintf(line, sizeof line, "    %-16s %8s %5.1f%% ", nt_wait_name(wait),
               nt_fmt_ns((double)row->wait_ns[k], t, sizeof t), 100 * share);
      mvaddnstr(y, x, line, s->cols - x);
      int mx = x + (int)strlen(line), mw = s->cols - mx - 1 < 30 ? s->cols - mx - 1 : 30;
      nt_meter(s, y++, mx, mw, share, nt_wait_attr(s, wait));
    }
  }
  kernel_lines(s, r, channel, &y, end, x);
  relay_lines(s, r, channel, &y, end, x);
  net_lines(s, r, &y, end, x);
}

/* The channel grid: a list panel of ranks, one column per channel; the
 * cursor is a cell (s->row, s->col), the scroll the view's own. */
static nt_list_col chan_cols[NT_LIST_MAX_COLS];
static char chan_titles[NT_LIST_MAX_COLS][16];

static void chan_cell(void *ctx, int i, int col, int y, int x, int w, bool cursor) {
  nt_screen *s = ctx;
  const nt_frame_rank *r = nt_screen_rank(s, i);
  char line[64];
  if (col == 0) {
    /* rank/nranks, a short communicator id (ranks of several comms
     * alternate) and its host (a job spans nodes) */
    const nt_frame_proc *p = nt_frame_proc_of(s->f, r);
    snprintf(line, sizeof line, "%d/%d %04llx %.10s%s", r->rank, r->nranks,
             (unsigned long long)(r->comm_hash & 0xffff), p->host, p->stale ? "?" : "");
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
  chan_cols[0] = (nt_list_col){"RANK COMM HOST", 27, 0, false};
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
                 .sort_col = s->sort == NT_SORT_RANK ? 0 : -1,
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
    detail_panel(s, nt_screen_rank(s, s->row), s->col, s->lay.detail);
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

bool nt_channels_action(nt_screen *s, int action) {
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
  nt_scroll_line(s, y, n, A_BOLD, line);
  nt_scroll_line(s, y, n, 0,
                 "  chosen at start with NCCLTOP_EVENTS (e.g. default,kernelch); the job can call "
                 "nccltop_set_mask() to change them live.");
  nt_scroll_line(
      s, y, n, 0,
      "  kernelch: GPU time per operation, at a cost; netplugin: IB/socket events of net "
      "plugins that report them.");
}

void nt_view_help(nt_screen *s, int y) {
  char line[256];
  int n = 0;
  event_classes(s, &y, &n);
  nt_scroll_line(s, &y, &n, 0, "");
  nt_scroll_line(s, &y, &n, A_BOLD, "Keys");
  for (const nt_key_binding *b = nt_keys; b->key; b++) {
    if (!b->keys_text) continue;
    snprintf(line, sizeof line, "  %-12s %s", b->keys_text, b->help);
    nt_scroll_line(s, &y, &n, 0, line);
  }
  static const char *const text[] = {
      "",
      "Proxy thread states: idle (its last pass moved nothing), active (a pass moved data),",
      "  sleep (blocked until NCCL posts work), wakeup (just woken), append (taking new ops).",
      "Step waits, send: send_gpu_wait (GPU filling the buffer), send_peer_wait (receiver has",
      "  not granted credit), send_net_wait (on the wire); recv: recv_net_wait (data not yet",
      "  arrived), recv_flush_wait (arrived: a GPUDirect flush if one is needed, else the wait",
      "  for the proxy's next pass), recv_gpu_wait (GPU consuming the data).",
      "A channel is stalled (!) when ops are in flight and no step moved for --stall-ms.",
      "Proxy HISTORY, oldest first: . idle  # active  z sleep  ! wakeup  + append.",
      "Alerts: root = where the waits of stalled ranks end; stall = channels stuck in a wait",
      "  (and the peer waited on); hung_op = in flight past --stall-ms; straggler = launched",
      "  fewer operations than the other ranks; silent = publisher stopped; drops = data lost;",
      "  slow = collectives under half of NCCL's prediction on every rank for 10 s (view 4).",
      "Bandwidths: algbw and busbw as nccl-tests computes them, in decimal units (GB/s = 1e9 B/s).",
  };
  for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) nt_scroll_line(s, &y, &n, 0, text[i]);
  if (s->scroll[s->view] > n - 1) s->scroll[s->view] = n > 0 ? n - 1 : 0;
}

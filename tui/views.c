/* The views: header, proxy threads, channel grid (+ details), help. They
 * read the model and draw; nothing here changes state. Strings from other
 * processes were sanitized when they entered the model. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "screen.h"

static const char *view_names[NT_VIEW_COUNT] = {
    "overview", "proxy threads", "channels", "collectives", "topology", "environment", "help"};

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

int nt_stall_attr(const nt_screen *s) {
  return s->o->color && has_colors() ? COLOR_PAIR(NT_C_STALL) | A_BOLD : A_REVERSE | A_BOLD;
}

int nt_warn_attr(const nt_screen *s) {
  return s->o->color && has_colors() ? COLOR_PAIR(NT_C_WARN) | A_BOLD : A_BOLD;
}

bool nt_scroll_line(nt_screen *s, int *y, int *n, int attr, const char *text) {
  if (*y >= s->rows - 1) return false;
  if ((*n)++ < s->scroll[s->view]) return true;
  if (attr) attron(attr);
  mvaddnstr((*y)++, 0, text, s->cols);
  if (attr) attroff(attr);
  return true;
}

void nt_draw_header(nt_screen *s) {
  double last = nt_model_last_data_s(s->m);
  bool stale = !last || s->now - last > 3 * 1.0;
  const char *mode = s->paused ? "PAUSED" : stale ? "STALE" : "LIVE";
  char age[NT_UNIT_LEN + 16], line[512], t[NT_UNIT_LEN];
  if (last)
    snprintf(age, sizeof age, "data %s ago", nt_fmt_ns((s->now - last) * 1e9, t, sizeof t));
  else
    snprintf(age, sizeof age, "no data yet");
  char extra[160] = "", mem[32]; /* mem: what the publishers cost, last (--max-memory) */
  uint64_t lost = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(s->m); i++)
    lost += nt_model_process_at(s->m, i)->lost_messages;
  int n = 0;
  uint64_t bad = nt_model_total_bad(s->m); /* counts shown only when not zero */
  if (bad) n = snprintf(extra, sizeof extra, "  bad msgs %llu", (unsigned long long)bad);
  if (lost)
    n += snprintf(extra + n, sizeof extra - (size_t)n, "  lost %llu", (unsigned long long)lost);
  uint64_t refused = nt_model_total_refused(s->m);
  if (refused)
    n += snprintf(extra + n, sizeof extra - (size_t)n, "  refused %llu",
                  (unsigned long long)refused);
  if (s->filter[0]) snprintf(extra + n, sizeof extra - (size_t)n, "  filter \"%s\"", s->filter);
  snprintf(line, sizeof line,
           " nccltop [%s]  %-6s %s  publishers %u  ranks %u  alerts %u%s  sort %s  mem %s",
           view_names[s->view], mode, age, nt_model_nprocesses(s->m), s->nranks, s->nalerts, extra,
           nt_sort_name(s->sort), nt_fmt_size((double)nt_model_bytes(s->m), mem, sizeof mem));
  attron(s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE);
  mvhline(0, 0, ' ', s->cols);
  mvaddnstr(0, 0, line, s->cols);
  attroff(s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE);
  if (nt_model_nerrors(s->m)) {
    const nt_model_error *e = nt_model_error_at(s->m, 0);
    snprintf(line, sizeof line, " last error: %s: %s", e->source, e->text);
    mvaddnstr(1, 0, line, s->cols);
  } else if (!s->nranks) {
    mvaddnstr(1, 0, " waiting for NCCL processes with the nccltop plugin (NCCL_PROFILER_PLUGIN)...",
              s->cols);
  }
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
static void history(nt_screen *s, int y, int x, const nt_proxy_history *h) {
  static const char glyph[NT_PROXY_NSTATES] = {'.', '#', 'z', '!', '+'};
  for (int i = 0; h && i < h->n && x + i < s->cols; i++) {
    attron(nt_state_attr(s, h->state[i]));
    mvaddch(y, x + i, (chtype)glyph[h->state[i]]);
    attroff(nt_state_attr(s, h->state[i]));
  }
}

void nt_view_proxy(nt_screen *s, int y) {
  char line[256];
  snprintf(line, sizeof line, "%-8s %-18s %-20s %-7s %-22s %5s %5s %5s %5s %5s %8s %8s  %s", "RANK",
           "COMM", "HOST:PID", "STATE", "LAST INTERVAL", "IDLE%", "ACTV%", "SLEP%", "WAKE%",
           "APND%", "APPENDS", "OPS", "HISTORY");
  attron(A_BOLD);
  mvaddnstr(y++, 0, line, s->cols);
  attroff(A_BOLD);
  int lines = 0;
  for (uint32_t i = 0; i < s->nranks; i++) {
    const nt_model_rank *r = &s->ranks[i];
    const nt_snapshot *snap = r->proc->cur;
    for (uint32_t t = 0; t < snap->nproxy; t++) {
      const nt_proxy_row *p = &snap->proxy[t];
      if (p->comm_index != r->comm_index) continue;
      if (lines++ < s->top) continue;
      if (y >= s->rows - 1) return;
      double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
      nt_model_proxy_shares(r->proc, p, last, total);
      char rank[16], comm[24], who[40];
      snprintf(rank, sizeof rank, "%d/%d", r->rank, r->nranks);
      if (r->comm_name[0])
        snprintf(comm, sizeof comm, "%.18s", r->comm_name);
      else
        snprintf(comm, sizeof comm, "%016llx", (unsigned long long)r->comm_hash);
      snprintf(who, sizeof who, "%.12s:%u", r->proc->host, r->proc->pid);
      snprintf(line, sizeof line, "%-8s %-18s %-20s", rank, comm, who);
      if ((int)i == s->row) attron(A_REVERSE);
      mvaddnstr(y, 0, line, s->cols);
      if ((int)i == s->row) attroff(A_REVERSE);
      attron(nt_state_attr(s, p->state));
      mvaddnstr(y, 49, r->proc->stale ? "stale" : nt_proxy_state_name(p->state), s->cols - 49);
      attroff(nt_state_attr(s, p->state));
      if (s->cols > 80) state_bar(s, y, 57, 22, last);
      snprintf(line, sizeof line, "%5.1f %5.1f %5.1f %5.1f %5.1f %8llu %8llu", 100 * total[0],
               100 * total[1], 100 * total[2], 100 * total[3], 100 * total[4],
               (unsigned long long)p->appends, (unsigned long long)p->appended_ops);
      if (s->cols > 81) mvaddnstr(y, 81, line, s->cols - 81);
      history(s, y, 131, nt_history_of(s, r->proc->pid, p->tid));
      y++;
    }
  }
  if (lines == 0)
    mvaddnstr(y, 0, "no proxy threads reported (NCCL starts them only for network transports)",
              s->cols);
}

int nt_channel_count(const nt_screen *s) {
  int n = 0;
  for (uint32_t i = 0; i < s->nranks; i++) {
    const nt_snapshot *snap = s->ranks[i].proc->cur;
    for (uint32_t c = 0; c < snap->nchannels; c++)
      if (snap->channels[c].comm_index == s->ranks[i].comm_index && snap->channels[c].channel >= n)
        n = snap->channels[c].channel + 1;
  }
  return n;
}

/* The busiest (most steps) row of a (rank, channel, dir), if any. */
static const nt_channel_row *cell_row(const nt_model_rank *r, int channel, int dir) {
  const nt_snapshot *snap = r->proc->cur;
  const nt_channel_row *best = NULL;
  for (uint32_t c = 0; c < snap->nchannels; c++) {
    const nt_channel_row *row = &snap->channels[c];
    /* PXN relay rows are another rank's work: listed in the detail panel. */
    if (row->comm_index == r->comm_index && row->channel == channel && row->dir == dir &&
        row->relay_rank < 0 && (!best || row->steps > best->steps))
      best = row;
  }
  return best;
}

static const char *wait_tag(int wait) {
  static const char *tags[NT_WAIT_COUNT] = {"GPU", "PEER", "NET", "NET", "FLSH", "GPU"};
  return wait >= 0 && wait < NT_WAIT_COUNT ? tags[wait] : "-";
}

/* Network plugin rows of a rank (IB QPs or sockets), when its net plugin
 * reports them. */
static void net_lines(nt_screen *s, const nt_model_rank *r, int *y, int x) {
  const nt_snapshot *snap = r->proc->cur;
  char line[256], bytes[NT_UNIT_LEN], busy[NT_UNIT_LEN];
  for (uint32_t i = 0; i < snap->nnet && *y < s->rows - 1; i++) {
    const nt_net_row *n = &snap->net[i];
    if (n->comm_index != r->comm_index) continue;
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
static void relay_lines(nt_screen *s, const nt_model_rank *r, int channel, int *y, int x) {
  const nt_snapshot *snap = r->proc->cur;
  char line[256], bytes[32];
  for (uint32_t c = 0; c < snap->nchannels && *y < s->rows - 1; c++) {
    const nt_channel_row *row = &snap->channels[c];
    if (row->comm_index != r->comm_index || row->channel != channel || row->relay_rank < 0)
      continue;
    snprintf(line, sizeof line, "relayed for rank %d (PXN): %s %s peer %d: %llu steps, %s, %s",
             row->relay_rank, row->dir ? "recv" : "send", row->dir ? "from" : "to", row->peer,
             (unsigned long long)row->steps, nt_fmt_size((double)row->bytes, bytes, sizeof bytes),
             nt_run_name(row->run_state));
    mvaddnstr((*y)++, x, line, s->cols - x);
  }
}

static void detail_panel(nt_screen *s, const nt_model_rank *r, int channel, int y) {
  char line[256];
  int x = 2;
  mvhline(y++, 0, ACS_HLINE, s->cols);
  snprintf(line, sizeof line, "rank %d/%d  channel %d  host %s  pid %u   (Esc closes)", r->rank,
           r->nranks, channel, r->proc->host, r->proc->pid);
  attron(A_BOLD);
  mvaddnstr(y++, x, line, s->cols - x);
  attroff(A_BOLD);
  for (int dir = 0; dir < 2 && y < s->rows - 1; dir++) {
    const nt_channel_row *row = cell_row(r, channel, dir);
    if (!row) continue;
    double sps, bps;
    nt_model_channel_rates(r->proc, row, &sps, &bps);
    uint64_t sum = row->wait_ns[0] + row->wait_ns[1] + row->wait_ns[2];
    char age[NT_UNIT_LEN + 8], rate[NT_UNIT_LEN];
    if (row->progress_age_ns == UINT64_MAX)
      snprintf(age, sizeof age, "never");
    else
      snprintf(age, sizeof age, "%s ago",
               nt_fmt_ns((double)row->progress_age_ns, rate, sizeof rate));
    bool stalled = nt_model_channel_stalled(row, s->o->stall_ms);
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
    for (int k = 0; k < 3 && y < s->rows - 1; k++) {
      double pct = sum ? 100.0 * (double)row->wait_ns[k] / (double)sum : 0;
      char t[NT_UNIT_LEN];
      snprintf(line, sizeof line, "    %-16s %8s  %5.1f%%", nt_wait_name(nt_dir_wait(dir, k)),
               nt_fmt_ns((double)row->wait_ns[k], t, sizeof t), pct);
      mvaddnstr(y++, x, line, s->cols - x);
    }
  }
  relay_lines(s, r, channel, &y, x);
  net_lines(s, r, &y, x);
}

void nt_view_channels(nt_screen *s, int y) {
  int nch = nt_channel_count(s);
  const int cellw = 11, left = 16;
  char line[256];
  attron(A_BOLD);
  mvaddnstr(y, 0, "RANK", s->cols);
  for (int c = 0; c < nch && left + (c + 1) * cellw <= s->cols; c++) {
    snprintf(line, sizeof line, "ch%-2d S/R", c);
    mvaddnstr(y, left + c * cellw, line, cellw - 1);
  }
  attroff(A_BOLD);
  y++;
  int detail_h = s->detail ? 14 : 0;
  int avail = s->rows - 1 - y - detail_h - 1;
  if (s->row < s->top) s->top = s->row;
  if (avail > 0 && s->row >= s->top + avail) s->top = s->row - avail + 1;
  for (int i = s->top; i < (int)s->nranks && y < s->rows - 2 - detail_h; i++, y++) {
    const nt_model_rank *r = &s->ranks[i];
    /* rank/nranks and a short communicator id: ranks of several comms alternate */
    snprintf(line, sizeof line, "%d/%d %04llx%s", r->rank, r->nranks,
             (unsigned long long)(r->comm_hash & 0xffff), r->proc->stale ? "?" : "");
    mvaddnstr(y, 0, line, left - 1);
    for (int c = 0; c < nch && left + (c + 1) * cellw <= s->cols; c++) {
      const nt_channel_row *sr = cell_row(r, c, NT_DIR_SEND), *rr = cell_row(r, c, NT_DIR_RECV);
      bool stalled = (sr && nt_model_channel_stalled(sr, s->o->stall_ms)) ||
                     (rr && nt_model_channel_stalled(rr, s->o->stall_ms));
      /* Work in flight the GPU has not reached (run-ahead): shown, not an alarm. */
      bool queued = (sr && sr->ops_started > sr->ops_done && sr->run_state == NT_RUN_QUEUED) ||
                    (rr && rr->ops_started > rr->ops_done && rr->run_state == NT_RUN_QUEUED);
      snprintf(line, sizeof line, "%s%s/%s",
               stalled  ? "!"
               : queued ? "~"
                        : "",
               sr ? wait_tag(nt_model_channel_dominant_wait(r->proc, sr)) : "-",
               rr ? wait_tag(nt_model_channel_dominant_wait(r->proc, rr)) : "-");
      int attr = (i == s->row && c == s->col) ? A_REVERSE : 0;
      if (stalled) attr |= nt_stall_attr(s);
      attron(attr);
      mvaddnstr(y, left + c * cellw, line, cellw - 1);
      attroff(attr);
    }
  }
  if (!s->nranks) return;
  if (s->detail && s->row < (int)s->nranks) {
    detail_panel(s, &s->ranks[s->row], s->col, s->rows - 1 - detail_h);
  } else {
    mvaddnstr(s->rows - 1, 0,
              "cell = dominant wait send/recv: GPU = waiting for the GPU, PEER = receiver has not "
              "granted credit, NET = on the wire, FLSH = GPUDirect flush; ! = stalled; ~ = "
              "queued (the GPU has not reached it yet); Enter = details",
              s->cols);
  }
}

/* The classes the job reports: the plugin sets NCCL's mask from
 * NCCLTOP_EVENTS; nccltop_set_mask() changes it while the job runs. */
static void event_classes(nt_screen *s, int *y, int *n) {
  char line[512];
  uint32_t any = 0, all = ~0u, procs = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(s->m); i++) {
    const nt_model_process *p = nt_model_process_at(s->m, i);
    if (!p->cur || p->ended) continue;
    any |= p->cur->process.event_mask;
    all &= p->cur->process.event_mask;
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
      "Proxy thread states: idle (nothing to progress), active (progressing network ops),",
      "  sleep (blocked until NCCL posts work), wakeup (just woken), append (taking new ops).",
      "Step waits, send: send_gpu_wait (GPU filling the buffer), send_peer_wait (receiver has",
      "  not granted credit), send_net_wait (on the wire); recv: recv_net_wait (data not yet",
      "  arrived), recv_flush_wait (GPUDirect flush), recv_gpu_wait (GPU consuming the data).",
      "A channel is stalled (!) when ops are in flight and no step moved for --stall-ms.",
      "Proxy HISTORY, oldest first: . idle  # active  z sleep  ! wakeup  + append.",
      "Alerts: root = where the waits of stalled ranks end; stall = channels stuck in a wait",
      "  (and the peer waited on); hung_op = in flight past --stall-ms; straggler = launched",
      "  fewer operations than the other ranks; silent = publisher stopped; drops = data lost.",
      "Bandwidths: algbw and busbw in GB/s, as nccl-tests computes them.",
  };
  for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) nt_scroll_line(s, &y, &n, 0, text[i]);
  if (s->scroll[s->view] > n - 1) s->scroll[s->view] = n > 0 ? n - 1 : 0;
}

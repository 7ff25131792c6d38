/* The channel details under the grid (Enter): who the rank is (its
 * communicator too: a rank has one per communicator), each direction's
 * step state and rates, its waits since the channel started with a meter,
 * the GPU's kernel phases, PXN relays and net plugin rows. Built as lines,
 * wrapped at blanks to the panel's width, then drawn from the panel's
 * scroll (PgUp/PgDn): at 80x24 the lines were cut and the last ones fell
 * off. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../core/frame.h"
#include "../core/model.h"
#include "screen_internal.h"

#define DETAIL_LINES 96
#define DETAIL_TEXT  384
#define INDENT       2 /* the panel's margin */
#define WRAP_INDENT  6 /* a wrapped line's continuation */

typedef struct {
  char text[DETAIL_TEXT];
  int attr;
  bool meter; /* a wait: its share drawn as a meter after the text */
  double share;
  int meter_attr;
} detail_line;

typedef struct {
  detail_line line[DETAIL_LINES];
  int n, width;
} detail_text;

static detail_text dt;

/* Adds text wrapped at blanks to the panel's width (a word longer than
 * the line is cut). */
static void add(int attr, const char *text) {
  int room = dt.width > 2 * WRAP_INDENT + 10 ? dt.width : 2 * WRAP_INDENT + 10;
  for (bool first = true; (first || *text) && dt.n < DETAIL_LINES; first = false) {
    int w = room - (first ? 0 : WRAP_INDENT);
    size_t len = strlen(text), cut = len;
    if (len > (size_t)w) {
      cut = (size_t)w;
      size_t b = cut;
      while (b > cut / 3 && text[b] != ' ') b--;
      if (b > cut / 3) cut = b;
    }
    detail_line *l = &dt.line[dt.n++];
    memset(l, 0, sizeof *l);
    snprintf(l->text, sizeof l->text, "%*s%.*s", first ? 0 : WRAP_INDENT, "", (int)cut, text);
    l->attr = attr;
    text += cut;
    while (*text == ' ') text++;
  }
}

static void add_meter(const char *text, double share, int meter_attr) {
  if (dt.n >= DETAIL_LINES) return;
  detail_line *l = &dt.line[dt.n++];
  snprintf(l->text, sizeof l->text, "%s", text);
  l->attr = 0;
  l->meter = true;
  l->share = share;
  l->meter_attr = meter_attr;
}

/* Network plugin rows of a rank (IB QPs or sockets), when its net plugin
 * reports them. */
static void net_lines(const nt_screen *s, const nt_frame_rank *r) {
  char line[256], bytes[NT_UNIT_LEN], busy[NT_UNIT_LEN];
  for (uint32_t i = r->net0; i < r->net0 + r->nnet; i++) {
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
    add(0, line);
  }
}

/* PXN: what this process's proxy thread ran on the channel for other ranks
 * of the node, whose own rows show none of it. */
static void relay_lines(const nt_screen *s, const nt_frame_rank *r, int channel) {
  char line[256], bytes[32];
  for (uint32_t c = r->chan0; c < r->chan0 + r->nchan; c++) {
    const nt_channel_row *row = &s->f->channels[c].row;
    if (row->channel != channel || row->relay_rank < 0) continue;
    snprintf(line, sizeof line, "relayed for rank %d (PXN): %s %s peer %d: %llu steps, %s, %s",
             row->relay_rank, row->dir ? "recv" : "send", row->dir ? "from" : "to", row->peer,
             (unsigned long long)row->steps, nt_fmt_size((double)row->bytes, bytes, sizeof bytes),
             nt_run_name(row->run_state));
    add(0, line);
  }
}

/* The channel's GPU work (kernelch): operations, busy time and, on NCCL
 * 2.31, its split into kernel phases; time in the sync phases is time the
 * kernel waited for its peers. */
static void kernel_lines(const nt_screen *s, const nt_frame_rank *r, int channel) {
  static const char *const names[NT_KPHASE_COUNT] = {"initial_sync", "compute", "final_sync"};
  char line[384], busy[NT_UNIT_LEN], t[NT_UNIT_LEN];
  for (uint32_t i = r->kern0; i < r->kern0 + r->nkern; i++) {
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
    add(0, line);
  }
}

/* One direction: where its step is, how fast it moved, what is in flight;
 * then its waits since the channel started. */
static void direction_lines(const nt_screen *s, const nt_frame_channel *fc, int dir) {
  const nt_channel_row *row = &fc->row;
  char line[DETAIL_TEXT], age[NT_UNIT_LEN + 8], rate[NT_UNIT_LEN], step[48];
  uint64_t sum = row->wait_ns[0] + row->wait_ns[1] + row->wait_ns[2];
  if (row->progress_age_ns == UINT64_MAX)
    snprintf(age, sizeof age, "never");
  else
    snprintf(age, sizeof age, "%s ago", nt_fmt_ns((double)row->progress_age_ns, rate, sizeof rate));
  if (row->cur_wait != NT_WAIT_NONE)
    snprintf(step, sizeof step, "step %d in %s", row->cur_step, nt_wait_name(row->cur_wait));
  else
    snprintf(step, sizeof step, "no step in progress");
  snprintf(line, sizeof line,
           "%s %s peer %d: %s, last progress %s, %.0f steps/s, %s, %llu ops in flight (%s)%s",
           dir ? "recv" : "send", dir ? "from" : "to", row->peer, step, age, fc->steps_per_s,
           nt_fmt_rate(fc->bytes_per_s, rate, sizeof rate),
           (unsigned long long)(row->ops_started - row->ops_done), nt_run_name(row->run_state),
           fc->stalled ? "  STALLED" : "");
  add(fc->stalled ? nt_stall_attr(s) : 0, line);
  for (int k = 0; k < 3; k++) {
    double share = sum ? (double)row->wait_ns[k] / (double)sum : 0;
    int wait = nt_dir_wait(dir, k);
    char t[NT_UNIT_LEN];
    snprintf(line, sizeof line, "    %-16s %8s %5.1f%% ", nt_wait_name(wait),
             nt_fmt_ns((double)row->wait_ns[k], t, sizeof t), 100 * share);
    add_meter(line, share, nt_wait_attr(s, wait));
  }
}

void nt_channel_detail(nt_screen *s, const nt_frame_rank *r, int channel, nt_rect area) {
  if (area.h <= 0) return;
  const nt_frame_proc *p = nt_frame_proc_of(s->f, r);
  char line[DETAIL_TEXT];
  dt.n = 0;
  dt.width = s->cols - INDENT;
  /* The communicator as everywhere else (nt_comm_label), its hash too when named. */
  char rk[32], cl[NT_COMM_LABEL], hash[24] = "";
  if (r->comm_name[0]) snprintf(hash, sizeof hash, " (%016llx)", (unsigned long long)r->comm_hash);
  snprintf(line, sizeof line, "rank %s of %s%s  channel %d  host %s  pid %u",
           nt_fmt_rank(r->rank, r->nranks, rk, sizeof rk),
           nt_comm_label(r->comm_name, r->comm_hash, cl, sizeof cl), hash, channel, p->host,
           p->pid);
  add(A_BOLD, line);
  bool any = false;
  for (int dir = 0; dir < 2; dir++) {
    const nt_frame_channel *fc = nt_frame_cell(s->f, r, channel, dir);
    if (fc) direction_lines(s, fc, dir), any = true;
  }
  if (any) add(A_DIM, "wait times: totals since the channel's first step, their shares of it");
  kernel_lines(s, r, channel);
  relay_lines(s, r, channel);
  net_lines(s, r);
  /* The rule on top says where the panel is and how to see the rest. */
  int rows = area.h - 1, max_top = dt.n - rows;
  if (s->detail_top > max_top) s->detail_top = max_top;
  if (s->detail_top < 0) s->detail_top = 0;
  mvhline(area.y, 0, ACS_HLINE, s->cols);
  if (dt.n > rows)
    snprintf(line, sizeof line, " (Esc closes)  PgUp/PgDn scroll: lines %d-%d of %d ",
             s->detail_top + 1, s->detail_top + rows, dt.n);
  else
    snprintf(line, sizeof line, " (Esc closes) ");
  mvaddnstr(area.y, 2, line, s->cols - 2);
  for (int k = 0; k < rows && s->detail_top + k < dt.n; k++) {
    const detail_line *l = &dt.line[s->detail_top + k];
    int y = area.y + 1 + k;
    if (l->attr) attron(l->attr);
    mvaddnstr(y, INDENT, l->text, s->cols - INDENT);
    if (l->attr) attroff(l->attr);
    if (l->meter) {
      int mx = INDENT + (int)strlen(l->text), mw = s->cols - mx - 1 < 30 ? s->cols - mx - 1 : 30;
      nt_meter(s, y, mx, mw, l->share, l->meter_attr);
    }
  }
}

bool nt_channel_detail_action(nt_screen *s, int action) {
  if (!s->detail) return false;
  int page = s->lay.detail.h > 2 ? s->lay.detail.h - 2 : 1;
  if (action == NT_ACT_PAGE_DOWN)
    s->detail_top += page; /* clamped when drawn */
  else if (action == NT_ACT_PAGE_UP)
    s->detail_top = s->detail_top > page ? s->detail_top - page : 0;
  else
    return false;
  return true;
}

/* The collectives view: which algorithm and protocol NCCL chose for each
 * function and size (or, NCCL 2.31, which symmetric kernel: "sym:AGxLL_R"), how often and at what
 * bandwidth (nccl-tests' algbw and busbw) and at what share of NCCL's own prediction (MODEL%, the
 * first column dropped when narrow), next to the previous run's when there was one; time and
 * bandwidth per phase; and the operations in flight and just done. */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/frame.h"
#include "screen_internal.h"

/* The width an algorithm column needs for a variant's label, at least
 * `have` and at most 21. */
static int algo_width(int have, const char *variant) {
  char lab[NT_MAX_VARIANT + 8];
  int need = variant[0] ? (int)strlen(nt_algo_label(0, variant, true, lab, sizeof lab)) : 0;
  if (need > 21) need = 21;
  return need > have ? need : have;
}

/* A communicator's name in w cells: whole when it fits, else its start
 * and end around a '~' (names of one job often differ only at the end:
 * "tp-group-3", "tp-group-12"). Unnamed: its hash. */
static const char *comm_short(const char *name, uint64_t hash, int w, char *out, size_t cap) {
  char full[NT_FRAME_NAME + 20];
  if (name[0])
    snprintf(full, sizeof full, "%s", name);
  else
    snprintf(full, sizeof full, "%016llx", (unsigned long long)hash);
  int len = (int)strlen(full);
  if (len <= w || w < 5) {
    snprintf(out, cap, "%.*s", w, full);
    return out;
  }
  int tail = (w - 1) / 2, head = w - 1 - tail;
  snprintf(out, cap, "%.*s~%s", head, full, full + len - tail);
  return out;
}

/* The communicator column of a table: as wide as the longest name (12 to
 * 24) where the columns dropped last (priority 0 and 1) fit with it, else
 * 10 cells under "COMM": at 80 columns the rows of two communicators must
 * not look the same (they did when the column was dropped). */
#define COMM_NARROW 10
static void comm_column(const nt_screen *s, nt_list_col *cols, int ncols, int comm) {
  int longest = 12;
  for (uint32_t i = 0; i < s->f->ncomms; i++) {
    int len = s->f->comms[i].name[0] ? (int)strlen(s->f->comms[i].name) : 16;
    if (len > longest) longest = len;
  }
  cols[comm] = (nt_list_col){"COMMUNICATOR", longest > 24 ? 24 : longest, 0, false};
  int need = 0;
  for (int i = 0; i < ncols; i++)
    if (cols[i].priority <= 1) need += cols[i].width + 1;
  if (need > s->cols + 1) cols[comm] = (nt_list_col){"COMM", COMM_NARROW, 0, false};
}

static void stats_section(nt_screen *s, int *y, int *n) {
  const nt_frame *f = s->f;
  bool prev = f->have_run_prev;
  char line[512], size[32], avg[32];
  uint32_t ns = f->nstats;
  /* At 80 columns: what ran, at what size, with which algorithm and
   * protocol, how often, how long, how fast. */
  nt_list_col cols[] = {
      {"COMMUNICATOR", 14, 0, false}, {"FUNCTION", 13, 0, false}, {"SIZE", 9, 0, false},
      {"ALGORITHM", 9, 0, false},     {"PROTO", 6, 0, false},     {"COUNT", 7, 1, true},
      {"DONE", 7, 3, true},           {"AVG TIME", 10, 0, true},  {"ALGBW", 8, 2, true},
      {"BUSBW", 8, 0, true},          {"MODEL%", 6, 5, true},     {"  PREVIOUS RUN", 26, 4, false},
  };
  /* The algorithm column as wide as the longest shown (COLLNET_DIRECT;
   * NCCL 2.31's symmetric kernels, "sym:RSxLD_AGxST", up to 21). */
  for (uint32_t i = 0; i < ns; i++) {
    const nt_op_stat *r = &f->stats[i].st;
    char lab[NT_MAX_VARIANT + 8];
    int w = (int)strlen(nt_algo_label(r->algo, r->variant, false, lab, sizeof lab));
    if (w > cols[3].width) cols[3].width = w > 21 ? 21 : w;
    cols[3].width = algo_width(cols[3].width, r->variant);
  }
  int nc = prev ? 12 : 11;
  comm_column(s, cols, nc, 0);
  bool keep[12];
  nt_list_fit(cols, nc, 0, s->cols, keep);
  nt_scroll_line(s, y, n, A_BOLD, nt_list_line(line, sizeof line, cols, nc, keep, NULL));
  if (!ns) {
    nt_scroll_line(s, y, n, 0,
                   "  no operations yet (the plugin's coll/p2p event classes report them)");
    return;
  }
  uint32_t shown = 0;
  for (uint32_t i = 0; i < ns; i++) {
    const nt_op_stat *r = &f->stats[i].st;
    if (!nt_screen_comm_kept(s, r->comm_hash)) continue; /* the filter's ranks' communicators */
    shown++;
    char comm[NT_FRAME_NAME + 20], was[64] = "", pb[NT_UNIT_LEN];
    comm_short(r->comm_name, r->comm_hash, cols[0].width, comm, sizeof comm);
    double t = r->done ? r->time_s / (double)r->done : 0;
    nt_fmt_ns(t * 1e9, avg, sizeof avg);
    const nt_run_op *p = nt_frame_previous_choice(f, r->func, r->bucket);
    char lab[NT_MAX_VARIANT + 8], plab[NT_MAX_VARIANT + 8];
    if (p) {
      bool changed = p->algo != r->algo || p->proto != r->proto || strcmp(p->variant, r->variant);
      if (r->kind == NT_OP_P2P)
        snprintf(was, sizeof was, "    %s",
                 nt_fmt_rate(nt_stat_algbw(p->bus_bytes, p->time_s) * 1e9, pb, sizeof pb));
      else
        snprintf(was, sizeof was, "   %s%s/%s %s", changed ? "*" : " ",
                 nt_algo_label(p->algo, p->variant, false, plab, sizeof plab),
                 p->variant[0] ? "-" : nt_proto_name(p->proto),
                 nt_fmt_rate(nt_stat_algbw(p->bus_bytes, p->time_s) * 1e9, pb, sizeof pb));
    }
    /* Rows no Coll reported (a 2.29+ Broadcast's CollApi, a CE CeColl) name
     * their source instead of an algorithm; untimed rows say "?", not 0. */
    const char *src = nt_op_source(r);
    bool plain = !strcmp(src, "coll") || !strcmp(src, "p2p");
    char alg[NT_UNIT_LEN] = "?", bus[NT_UNIT_LEN] = "?";
    if (r->done) {
      nt_fmt_rate(nt_stat_algbw(r->alg_bytes, r->time_s) * 1e9, alg, sizeof alg);
      nt_fmt_rate(nt_stat_algbw(r->bus_bytes, r->time_s) * 1e9, bus, sizeof bus);
    } else {
      snprintf(avg, sizeof avg, "unknown");
    }
    /* the measured share of NCCL's own prediction; "?" when unknown */
    const nt_op_model *mo = &f->stats[i].model;
    char share[16] = "?";
    if (mo->known && mo->ratio >= 0) snprintf(share, sizeof share, "%.0f%%", mo->ratio * 100);
    char count[24], done[24];
    snprintf(count, sizeof count, "%llu", (unsigned long long)r->count);
    snprintf(done, sizeof done, "%llu", (unsigned long long)r->done);
    const char *cells[12] = {
        comm,
        nt_func_name(r->func),
        nt_fmt_bucket(r->bucket, size, sizeof size),
        r->kind == NT_OP_P2P ? "-"
        : plain              ? nt_algo_label(r->algo, r->variant, false, lab, sizeof lab)
                             : src,
        r->kind == NT_OP_P2P || !plain || r->variant[0] ? "-" : nt_proto_name(r->proto),
        count,
        done,
        avg,
        alg,
        bus,
        share,
        was[0] ? was + 1 : was};
    if (!nt_scroll_line(s, y, n, 0, nt_list_line(line, sizeof line, cols, nc, keep, cells))) {
      *n += (int)(ns - i - 1);
      return;
    }
  }
  if (!shown)
    nt_scroll_line(s, y, n, 0, "  no operations of the ranks the filter keeps (Esc clears it)");
}

static void phases_section(nt_screen *s, int *y, int *n) {
  const nt_phase_stat *ph = s->f->phases;
  char line[256];
  uint32_t np = s->f->nphases;
  if (!np) return;
  nt_scroll_line(s, y, n, 0, "");
  snprintf(line, sizeof line, "%-24s %8s %8s %14s %10s %10s%s", "PHASE (nccltop_tag)", "COUNT",
           "DONE", "BUSY/rank", "ALGBW", "BUSBW",
           s->filter[0] ? "  (all ranks: phases are summed over the job)" : "");
  nt_scroll_line(s, y, n, A_BOLD, line);
  for (uint32_t i = 0; i < np; i++) {
    double t = ph[i].ranks ? ph[i].time_s / ph[i].ranks : 0;
    char tm[NT_UNIT_LEN], alg[NT_UNIT_LEN], bus[NT_UNIT_LEN];
    snprintf(line, sizeof line, "%-24.24s %8llu %8llu %14s %10s %10s",
             ph[i].name[0] ? ph[i].name : "(no phase)", (unsigned long long)ph[i].count,
             (unsigned long long)ph[i].done, nt_fmt_ns(t * 1e9, tm, sizeof tm),
             nt_fmt_rate(nt_stat_algbw(ph[i].alg_bytes, ph[i].time_s) * 1e9, alg, sizeof alg),
             nt_fmt_rate(nt_stat_algbw(ph[i].bus_bytes, ph[i].time_s) * 1e9, bus, sizeof bus));
    if (!nt_scroll_line(s, y, n, 0, line)) {
      *n += (int)(np - i - 1);
      return;
    }
  }
  const char *note = nt_phase_busy_note(ph, np, line, sizeof line);
  if (note) nt_scroll_line(s, y, n, A_DIM, note);
}

static void recent_section(nt_screen *s, int *y, int *n) {
  const nt_frame *f = s->f;
  char line[512], size[32], seq[24], dur[24];
  uint32_t nr = f->nrecent;
  nt_scroll_line(s, y, n, 0, "");
  /* At 80 columns: which rank, what, how big, in what state, how old. */
  nt_list_col cols[] = {
      {"RANK", 11, 0, false},       {"COMMUNICATOR", 14, 0, false},
      {"HOST:PID", 22, 2, false},   {"FUNCTION", 13, 0, false},
      {"SEQ", 7, 3, true},          {"SIZE", 10, 1, true},
      {"ALGO/PROTO", 17, 3, false}, {"CH", 4, 4, true},
      {"PHASE", 12, 3, false},      {"STATE", 9, 0, false},
      {"AGE", 9, 0, true},          {"DURATION", 10, 1, true},
  };
  enum { NC = sizeof cols / sizeof cols[0] };
  for (uint32_t i = 0; i < nr; i++) cols[6].width = algo_width(cols[6].width, f->recent[i].variant);
  comm_column(s, cols, NC, 1);
  bool keep[NC];
  nt_list_fit(cols, NC, 1, s->cols, keep);
  nt_scroll_line(s, y, n, A_BOLD, nt_list_line(line, sizeof line, cols, NC, keep, NULL));
  uint32_t shown = 0;
  for (uint32_t i = 0; i < nr; i++) {
    const nt_frame_op *r = &f->recent[i];
    if (!nt_screen_rank_kept(s, r->rank)) continue;
    shown++;
    const nt_oplog_row *op = &r->op;
    const nt_frame_rank *rk = &f->ranks[r->rank];
    const nt_frame_proc *p = nt_frame_proc_of(f, rk);
    char rank[16], who[96], ap[40], t[NT_UNIT_LEN], age[NT_UNIT_LEN], comm[NT_FRAME_NAME + 20];
    comm_short(rk->comm_name, rk->comm_hash, cols[1].width, comm, sizeof comm);
    nt_fmt_rank(rk->rank, rk->nranks, rank, sizeof rank);
    snprintf(who, sizeof who, "%s:%u", p->host, p->pid);
    if (op->kind == NT_OP_COLL)
      snprintf(seq, sizeof seq, "%llu", (unsigned long long)op->seq);
    else
      snprintf(seq, sizeof seq, "peer %d", op->root_peer);
    char lab[NT_MAX_VARIANT + 8];
    if (op->kind == NT_OP_COLL && (r->variant[0] || (op->flags & NT_OPF_SYMMETRIC)))
      snprintf(ap, sizeof ap, "%s", nt_algo_label(op->algo, r->variant, true, lab, sizeof lab));
    else if (op->kind == NT_OP_COLL)
      snprintf(ap, sizeof ap, "%s/%s", nt_algo_name(op->algo), nt_proto_name(op->proto));
    else
      snprintf(ap, sizeof ap, "p2p");
    if (op->state == NT_OPS_DONE && op->timing != NT_TIMING_NONE)
      snprintf(dur, sizeof dur, "%s%s", nt_fmt_ns((double)op->duration_ns, t, sizeof t),
               op->timing == NT_TIMING_GPU ? " gpu" : "");
    else
      snprintf(dur, sizeof dur, "-");
    bool late = op->state == NT_OPS_IN_FLIGHT && r->age_s * 1000 >= s->o->stall_ms;
    char ch[16];
    snprintf(ch, sizeof ch, "%u", op->nchannels);
    const char *cells[NC] = {rank,
                             comm,
                             who,
                             nt_func_name(op->func),
                             seq,
                             nt_fmt_size((double)op->bytes, size, sizeof size),
                             ap,
                             ch,
                             r->phase[0] ? r->phase : "-",
                             nt_op_state_name(op->state),
                             nt_fmt_ns(r->age_s * 1e9, age, sizeof age),
                             dur};
    if (!nt_scroll_line(s, y, n, late ? nt_stall_attr(s) : 0,
                        nt_list_line(line, sizeof line, cols, NC, keep, cells))) {
      *n += (int)(nr - i - 1);
      return;
    }
  }
  if (!shown)
    nt_scroll_line(s, y, n, 0,
                   s->filter[0] ? "  none of the ranks the filter keeps" : "  none yet");
}

void nt_view_ops(nt_screen *s, int y) {
  bool have_prev = s->f->have_run_prev;
  int n = 0;
  stats_section(s, &y, &n);
  phases_section(s, &y, &n);
  recent_section(s, &y, &n);
  nt_scroll_clamp(s, n);
  if (have_prev)
    mvaddnstr(s->bottom - 1, 0,
              "PREVIOUS RUN: its choice and busbw for the same function and size (* changed); "
              "environment differences: view 6",
              s->cols);
  else
    mvaddnstr(s->bottom - 1, 0,
              "ALGBW/BUSBW as nccl-tests computes them; AVG TIME per operation; arrows scroll",
              s->cols);
}

/* Building a frame (frame.h): one pass over the model's processes and
 * ranks, copying each row once with what is derived from it. The job-wide
 * parts (statistics, environment, runs) come from the model's readers and
 * the alerts from the diagnosis (diag.h), copied so that the frame outlives
 * the model's next update. */
#include "frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_history.h"

/* Makes room for `need` elements of `size` bytes; false when out of memory. */
static bool reserve(void **p, uint32_t *cap, uint32_t need, size_t size) {
  if (need <= *cap) return true;
  uint32_t n = *cap ? *cap : 64;
  while (n < need) n = n > UINT32_MAX / 2 ? need : n * 2;
  void *q = realloc(*p, (size_t)n * size);
  if (!q) return false;
  *p = q;
  *cap = n;
  return true;
}
#define RESERVE(f, arr, cnt, extra)                                                                \
  reserve((void **)&(f)->arr, &(f)->cap_##arr, (f)->cnt + (extra), sizeof *(f)->arr)

nt_frame *nt_frame_new(void) {
  nt_frame *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->stats = calloc(NT_FRAME_MAX_STATS, sizeof *f->stats);
  f->recent = calloc(NT_FRAME_MAX_RECENT, sizeof *f->recent);
  f->env = calloc(NT_FRAME_MAX_ENV, sizeof *f->env);
  f->run_cur = calloc(1, sizeof *f->run_cur);
  f->run_prev = calloc(1, sizeof *f->run_prev);
  f->model_ranks = calloc(NT_FRAME_MAX_RANKS, sizeof *f->model_ranks);
  if (!f->model_ranks || !f->stats || !f->recent || !f->env || !f->run_cur || !f->run_prev) {
    nt_frame_free(f);
    return NULL;
  }
  return f;
}

void nt_frame_free(nt_frame *f) {
  if (!f) return;
  free(f->procs);
  free(f->ranks);
  free(f->proxy);
  free(f->channels);
  free(f->kernels);
  free(f->seq);
  free(f->ops);
  free(f->net);
  free(f->vars);
  free(f->comms);
  free(f->stats);
  free(f->recent);
  free(f->env);
  free(f->run_cur);
  free(f->run_prev);
  free(f->model_ranks);
  free(f->op_sums);
  nt_frame_history_free(f->history);
  free(f);
}

/* Bounded, truncating copy (the model's strings fit their fields). */
static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = src ? strnlen(src, cap - 1) : 0;
  memcpy(dst, src ? src : "", n);
  dst[n] = '\0';
}

static const char *phase_name(const nt_snapshot *s, uint8_t id) {
  for (uint32_t i = 0; s && id && i < s->nphases; i++)
    if (s->phases[i].id == id) return s->phases[i].name;
  return "";
}

/* ---- model process -> frame process, by pointer ---- */

typedef struct {
  const nt_model_process **key;
  uint32_t *val;
  uint32_t mask;
} proc_map;

static uint32_t ptr_hash(const void *p) {
  uint64_t v = (uint64_t)(uintptr_t)p;
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  return (uint32_t)v;
}

static bool map_init(proc_map *m, uint32_t n) {
  uint32_t size = 16;
  while (size < 2 * n) size *= 2;
  m->key = calloc(size, sizeof *m->key);
  m->val = calloc(size, sizeof *m->val);
  m->mask = size - 1;
  return m->key && m->val;
}

static void map_free(proc_map *m) {
  free(m->key);
  free(m->val);
}

static void map_put(proc_map *m, const nt_model_process *p, uint32_t v) {
  uint32_t i = ptr_hash(p) & m->mask;
  while (m->key[i] && m->key[i] != p) i = (i + 1) & m->mask;
  m->key[i] = p;
  m->val[i] = v;
}

static bool map_get(const proc_map *m, const nt_model_process *p, uint32_t *v) {
  for (uint32_t i = ptr_hash(p) & m->mask; m->key[i]; i = (i + 1) & m->mask)
    if (m->key[i] == p) {
      *v = m->val[i];
      return true;
    }
  return false;
}

/* ---- processes ---- */

static bool add_proxy(nt_frame *f, const nt_model_process *p, const nt_proxy_row *row, int32_t rank,
                      uint32_t proc) {
  if (!RESERVE(f, proxy, nproxy, 1)) return false;
  nt_frame_proxy *x = &f->proxy[f->nproxy++];
  x->row = *row;
  nt_model_proxy_shares(p, row, x->share_last, x->share_total);
  x->dominant = 0;
  for (int k = 1; k < NT_PROXY_NSTATES; k++)
    if (x->share_last[k] > x->share_last[x->dominant]) x->dominant = k;
  x->rank = rank;
  x->proc = proc;
  return true;
}

/* Each communicator's done operations since the process started, as the
 * collectives rows add them up (ops.c): bus bytes and summed durations, in
 * one pass over its rows (the ranks take theirs, the history their
 * differences). */
static bool add_op_sums(nt_frame *f, const nt_snapshot *s, uint32_t *first) {
  if (!RESERVE(f, op_sums, nop_sums, 2 * s->ncomms)) return false;
  double *sums = &f->op_sums[f->nop_sums];
  *first = f->nop_sums;
  f->nop_sums += 2 * s->ncomms;
  memset(sums, 0, 2 * s->ncomms * sizeof *sums);
  for (uint32_t i = 0; i < s->nops; i++) {
    const nt_op_row *r = &s->ops[i];
    if (r->comm_index >= s->ncomms) continue;
    int nranks = s->comms[r->comm_index].nranks;
    double alg = nt_alg_bytes(r->func, (double)r->done_bytes, nranks);
    sums[2 * r->comm_index] += alg * nt_bus_factor(r->func, nranks);
    sums[2 * r->comm_index + 1] += (double)r->time_ns / 1e9;
  }
  return true;
}

static bool add_proc(nt_frame *f, const nt_model *m, const nt_model_process *p, bool with_env) {
  if (!RESERVE(f, procs, nprocs, 1)) return false;
  uint32_t pi = f->nprocs;
  nt_frame_proc *x = &f->procs[f->nprocs++];
  const nt_snapshot *s = p->cur;
  memset(x, 0, sizeof *x);
  copy_str(x->host, sizeof x->host, p->host);
  x->pid = p->pid;
  x->stale = p->stale;
  x->ended = p->ended;
  x->replaced = nt_model_process_replaced(m, p);
  if (p->have_hello) {
    copy_str(x->nccl_version, sizeof x->nccl_version, p->hello.nccl_version);
    copy_str(x->plugin_version, sizeof x->plugin_version, p->hello.plugin_version);
    copy_str(x->clock, sizeof x->clock, p->hello.clock);
  }
  x->counters = s->process;
  x->seq = s->seq;
  x->lost_messages = p->lost_messages;
  x->lost_unread = p->lost_unread;
  x->restarts = p->restarts;
  x->ncomms = s->ncomms;
  if (!add_op_sums(f, s, &x->opsum0)) return false;
  copy_str(x->phase, sizeof x->phase, phase_name(s, s->process.phase));
  x->proxy0 = f->nproxy;
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].comm_index == NT_NO_COMM && !add_proxy(f, p, &s->proxy[i], -1, pi))
      return false;
  x->nproxy = f->nproxy - x->proxy0;
  x->var0 = f->nvars;
  if (with_env && p->have_hello) {
    if (!RESERVE(f, vars, nvars, p->hello.nenv)) return false;
    for (uint32_t i = 0; i < p->hello.nenv; i++) {
      nt_frame_var *v = &f->vars[f->nvars++];
      copy_str(v->name, sizeof v->name, p->hello.env[i].name);
      copy_str(v->value, sizeof v->value, p->hello.env[i].value);
    }
  }
  f->procs[pi].nvars = f->nvars - f->procs[pi].var0;
  return true;
}

/* ---- ranks ---- */

static uint64_t seq_total(const nt_snapshot *s, uint16_t ci, bool done) {
  uint64_t n = 0;
  for (uint32_t i = 0; s && i < s->nseq; i++)
    if (s->seq_rows[i].comm_index == ci) n += done ? s->seq_rows[i].done : s->seq_rows[i].launched;
  return n;
}

static uint16_t comm_index_in(const nt_snapshot *s, uint64_t hash) {
  for (uint32_t k = 0; s && k < s->ncomms; k++)
    if (s->comms[k].comm_hash == hash) return (uint16_t)k;
  return NT_NO_COMM;
}

/* Who counted a process's sums: another process (host, endpoint, pid) or
 * the same pid started over counts from 0 (FNV-1a). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}
static uint64_t origin_of(const nt_model_process *p) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, p->host, strlen(p->host) + 1);
  h = mix(h, p->endpoint, strlen(p->endpoint) + 1);
  h = mix(h, &p->pid, sizeof p->pid);
  return mix(h, &p->restarts, sizeof p->restarts);
}

static bool add_rank(nt_frame *f, const nt_model_rank *mr, uint32_t proc, double now_s) {
  if (!RESERVE(f, ranks, nranks, 1)) return false;
  uint32_t ri = f->nranks++;
  nt_frame_rank *r = &f->ranks[ri];
  const nt_model_process *p = mr->proc;
  const nt_snapshot *s = p->cur;
  uint16_t ci = mr->comm_index;
  memset(r, 0, sizeof *r);
  r->proc = proc;
  r->comm_hash = mr->comm_hash;
  copy_str(r->comm_name, sizeof r->comm_name, mr->comm_name);
  r->rank = mr->rank;
  r->nranks = mr->nranks;
  r->nnodes = mr->nnodes;
  r->comm = s->comms[ci];
  r->launched = seq_total(s, ci, false);
  const double *sums = &f->op_sums[f->procs[proc].opsum0 + 2 * (uint32_t)ci];
  r->bus_bytes = sums[0];
  r->op_time_s = sums[1];
  r->origin = origin_of(p);
  uint16_t pci = comm_index_in(p->prev, mr->comm_hash);
  /* A silent or ended process has been seen to finish nothing since: its
   * last interval's rate would stand frozen for as long as it stays so. */
  if (p->prev && pci != NT_NO_COMM && s->mono_ns > p->prev->mono_ns && !p->stale && !p->ended) {
    double dt = (double)(s->mono_ns - p->prev->mono_ns) / 1e9;
    uint64_t now = seq_total(s, ci, true), before = seq_total(p->prev, pci, true);
    if (now >= before) r->done_per_s = (double)(now - before) / dt;
  }
  /* Rows are appended to arrays that may move: fill through indices. */
  uint32_t proxy0 = f->nproxy;
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].comm_index == ci && !add_proxy(f, p, &s->proxy[i], (int32_t)ri, proc))
      return false;
  uint32_t chan0 = f->nchannels, stalled = 0;
  int channels = 0;
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *row = &s->channels[i];
    if (row->comm_index != ci) continue;
    if (!RESERVE(f, channels, nchannels, 1)) return false;
    nt_frame_channel *c = &f->channels[f->nchannels++];
    c->row = *row;
    nt_model_channel_derive(p, row, &c->steps_per_s, &c->bytes_per_s, &c->dominant_wait);
    c->stalled = nt_model_channel_stalled(row, f->stall_ms);
    c->queued = row->ops_started > row->ops_done && row->run_state == NT_RUN_QUEUED;
    c->rank = ri;
    stalled += c->stalled;
    if (row->relay_rank < 0 && row->channel >= channels) channels = row->channel + 1;
  }
  uint32_t kern0 = f->nkernels;
  for (uint32_t i = 0; i < s->nkernels; i++) {
    if (s->kernels[i].comm_index != ci) continue;
    if (!RESERVE(f, kernels, nkernels, 1)) return false;
    f->kernels[f->nkernels++] = s->kernels[i];
  }
  /* The snapshot is as old as it is: ages move on with the viewer's clock
   * while the process lives. */
  double since = p->ended || now_s < p->cur_time_s ? 0 : now_s - p->cur_time_s;
  uint32_t seq0 = f->nseq;
  for (uint32_t i = 0; i < s->nseq; i++) {
    if (s->seq_rows[i].comm_index != ci) continue;
    if (!RESERVE(f, seq, nseq, 1)) return false;
    nt_frame_seq *q = &f->seq[f->nseq++];
    q->row = s->seq_rows[i];
    q->last_launch_s = (double)q->row.last_launch_age_ns / 1e9 + since;
  }
  uint32_t op0 = f->nops;
  for (uint32_t i = 0; i < s->noplog; i++) {
    const nt_oplog_row *op = &s->oplog[i];
    if (op->comm_index != ci || op->state != NT_OPS_IN_FLIGHT) continue;
    if (!RESERVE(f, ops, nops, 1)) return false;
    nt_frame_op *o = &f->ops[f->nops++];
    o->op = *op;
    o->age_s = (double)op->age_ns / 1e9 + since;
    copy_str(o->phase, sizeof o->phase, phase_name(s, op->phase));
    copy_str(o->variant, sizeof o->variant, nt_variant_name(s, op->variant));
    o->rank = ri;
  }
  uint32_t net0 = f->nnet;
  for (uint32_t i = 0; i < s->nnet; i++) {
    if (s->net[i].comm_index != ci) continue;
    if (!RESERVE(f, net, nnet, 1)) return false;
    f->net[f->nnet++] = s->net[i];
  }
  r = &f->ranks[ri];
  r->proxy0 = proxy0, r->nproxy = f->nproxy - proxy0;
  r->chan0 = chan0, r->nchan = f->nchannels - chan0;
  r->kern0 = kern0, r->nkern = f->nkernels - kern0;
  r->seq0 = seq0, r->nseq = f->nseq - seq0;
  r->op0 = op0, r->nops = f->nops - op0;
  r->net0 = net0, r->nnet = f->nnet - net0;
  r->stalled = stalled;
  r->channels = channels;
  if (channels > f->channel_count) f->channel_count = channels;
  return true;
}

/* Communicators, in the ranks' order (by hash): the ranks of one are
 * adjacent. */
static bool build_comms(nt_frame *f) {
  for (uint32_t i = 0; i < f->nranks; i++) {
    const nt_frame_rank *r = &f->ranks[i];
    nt_frame_comm *c = f->ncomms ? &f->comms[f->ncomms - 1] : NULL;
    if (!c || c->hash != r->comm_hash) {
      if (!RESERVE(f, comms, ncomms, 1)) return false;
      c = &f->comms[f->ncomms++];
      memset(c, 0, sizeof *c);
      c->hash = r->comm_hash;
      copy_str(c->name, sizeof c->name, r->comm_name);
      c->nranks = r->nranks;
      c->nnodes = r->nnodes;
      c->launched_min = UINT64_MAX;
    }
    c->ranks++;
    c->stalled += r->stalled;
    c->done_per_s += r->done_per_s;
    if (r->launched < c->launched_min) c->launched_min = r->launched;
    if (r->launched > c->launched_max) c->launched_max = r->launched;
    if (!c->phase[0]) copy_str(c->phase, sizeof c->phase, f->procs[r->proc].phase);
  }
  for (uint32_t i = 0; i < f->ncomms; i++)
    if (f->comms[i].ranks) f->comms[i].done_per_s /= f->comms[i].ranks;
  return true;
}

/* ---- the job ---- */

static void build_alerts(nt_frame *f, const nt_model *m, nt_diag *d, bool per_rank) {
  nt_alert *a = calloc(NT_FRAME_MAX_ALERTS, sizeof *a);
  uint32_t n = !a ? 0
               : per_rank
                   ? nt_diag_alerts_per_rank(d, m, f->stall_ms, a, NT_FRAME_MAX_ALERTS, f->now_s)
                   : nt_diag_alerts(d, m, f->stall_ms, a, NT_FRAME_MAX_ALERTS, f->now_s);
  for (uint32_t i = 0; i < n; i++) {
    nt_frame_alert *x = &f->alerts[i];
    memset(x, 0, sizeof *x);
    x->kind = a[i].kind;
    x->has_proc = a[i].proc != NULL;
    x->has_rank = a[i].proc && a[i].comm_hash;
    if (a[i].proc) {
      copy_str(x->host, sizeof x->host, a[i].proc->host);
      x->pid = a[i].proc->pid;
    }
    x->comm_hash = a[i].comm_hash;
    x->rank = a[i].rank;
    x->nranks = a[i].nranks;
    x->peer = a[i].peer;
    x->wait = a[i].wait;
    x->func = a[i].func;
    x->count = a[i].count;
    x->age_s = a[i].age_s;
    x->evidence = a[i].evidence;
    copy_str(x->text, sizeof x->text, a[i].text);
    x->nlisted = x->has_rank && a[i].nlisted <= NT_ALERT_MAX_RANKS ? a[i].nlisted : 0;
    memcpy(x->ranks, a[i].ranks, x->nlisted * sizeof *x->ranks);
    x->under = a[i].under >= 0 && (uint32_t)a[i].under < i ? a[i].under : -1;
    x->folded = 0;
  }
  f->nalerts = n;
  f->nfolded = 0;
  for (uint32_t i = 0; i < n; i++)
    if (f->alerts[i].under >= 0) {
      f->alerts[f->alerts[i].under].folded++;
      f->nfolded++;
    }
  free(a);
}

static void build_stats(nt_frame *f, const nt_model *m) {
  nt_op_stat *st = calloc(NT_FRAME_MAX_STATS, sizeof *st);
  uint32_t n = st ? nt_model_op_stats(m, st, NT_FRAME_MAX_STATS) : 0;
  for (uint32_t i = 0; i < n; i++) {
    nt_frame_stat *x = &f->stats[i];
    x->st = st[i];
    copy_str(x->comm_name, sizeof x->comm_name, st[i].comm_name);
    x->st.comm_name = x->comm_name;
    nt_model_op_model(m, &st[i], &x->model); /* per communicator, cached: cheap */
  }
  f->nstats = n;
  free(st);
  f->nphases = nt_model_phase_stats(m, f->phases, NT_MAX_PHASES + 1);
}

/* The frame rank of (process, communicator); UINT32_MAX none. */
static uint32_t rank_of(const nt_frame *f, const uint32_t *by_proc, const uint32_t *proc_first,
                        uint32_t proc, uint64_t hash) {
  for (uint32_t k = proc_first[proc]; k < proc_first[proc + 1]; k++)
    if (f->ranks[by_proc[k]].comm_hash == hash) return by_proc[k];
  return UINT32_MAX;
}

static bool build_recent(nt_frame *f, const nt_model *m, const proc_map *map, uint32_t per_rank) {
  f->nrecent = 0;
  nt_recent_op *rec = calloc(NT_FRAME_MAX_RECENT, sizeof *rec);
  /* Ranks grouped by process (a counting sort): each op finds its rank. */
  uint32_t *first = calloc((size_t)f->nprocs + 1, sizeof *first);
  uint32_t *by_proc = calloc((size_t)f->nranks + 1, sizeof *by_proc);
  bool ok = rec && first && by_proc;
  if (ok) {
    for (uint32_t i = 0; i < f->nranks; i++) first[f->ranks[i].proc + 1]++;
    for (uint32_t p = 0; p < f->nprocs; p++) first[p + 1] += first[p];
    uint32_t *fill = calloc((size_t)f->nprocs + 1, sizeof *fill);
    ok = fill != NULL;
    for (uint32_t i = 0; ok && i < f->nranks; i++) {
      uint32_t p = f->ranks[i].proc;
      by_proc[first[p] + fill[p]++] = i;
    }
    free(fill);
  }
  uint32_t n = ok ? nt_model_recent_ops(m, rec, NT_FRAME_MAX_RECENT, per_rank, f->now_s) : 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t pi, ri;
    if (!map_get(map, rec[i].proc, &pi)) continue;
    if ((ri = rank_of(f, by_proc, first, pi, rec[i].comm_hash)) == UINT32_MAX) continue;
    nt_frame_op *o = &f->recent[f->nrecent++];
    o->op = *rec[i].op;
    o->age_s = rec[i].age_s;
    copy_str(o->phase, sizeof o->phase, rec[i].phase);
    copy_str(o->variant, sizeof o->variant, rec[i].variant);
    o->rank = ri;
  }
  free(rec);
  free(first);
  free(by_proc);
  return ok;
}

/* "host:pid=value" of up to three processes whose value is not the common
 * one, and how many more. */
static void outliers(const nt_model *m, const nt_env_row *r, char *buf, size_t cap) {
  size_t used = 0;
  int shown = 0, more = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (!p->have_hello || p->ended) continue;
    const char *v = nt_model_env_of(p, r->name);
    if (v ? strcmp(v, r->value) == 0 : !r->value[0]) continue;
    if (shown == 3) {
      more++;
      continue;
    }
    int k = snprintf(buf + used, cap - used, "%s%s:%u=%s", shown ? "  " : "", p->host, p->pid,
                     v ? v : "(unset)");
    if (k < 0 || (size_t)k >= cap - used) break;
    used += (size_t)k;
    shown++;
  }
  if (more && used < cap) snprintf(buf + used, cap - used, "  and %d more", more);
}

static void build_env(nt_frame *f, const nt_model *m) {
  nt_env_row *rows = calloc(NT_FRAME_MAX_ENV, sizeof *rows);
  uint32_t n = rows ? nt_model_env(m, rows, NT_FRAME_MAX_ENV, true) : 0;
  f->env_differ = 0;
  for (uint32_t i = 0; i < n; i++) {
    nt_frame_env *e = &f->env[i];
    copy_str(e->name, sizeof e->name, rows[i].name);
    copy_str(e->value, sizeof e->value, rows[i].value);
    e->have = rows[i].have;
    e->nvalues = rows[i].nvalues;
    e->differs = rows[i].differs;
    e->outliers[0] = '\0';
    if (e->differs) outliers(m, &rows[i], e->outliers, sizeof e->outliers);
    f->env_differ += e->differs;
  }
  f->nenv = n;
  free(rows);
  f->have_run_cur = nt_model_run_summary(m, false, f->run_cur);
  f->have_run_prev = nt_model_run_summary(m, true, f->run_prev);
}

static void build_viewer(nt_frame *f, const nt_model *m) {
  f->publishers = nt_model_nprocesses(m);
  f->publishers_stale = f->publishers_ended = 0;
  f->lost_messages = 0;
  for (uint32_t i = 0; i < f->publishers; i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    f->publishers_ended += p->ended;
    f->publishers_stale += p->stale && !p->ended;
    f->lost_messages += p->lost_messages;
  }
  f->messages = nt_model_total_messages(m);
  f->bad_messages = nt_model_total_bad(m);
  f->errors_total = nt_model_total_errors(m);
  f->refused = nt_model_total_refused(m);
  for (int i = 0; i < NT_REFUSE_COUNT; i++) f->refused_by[i] = nt_model_refused(m, i);
  f->memory_bytes = nt_model_bytes(m);
  f->memory_budget = nt_model_budget(m);
  f->last_data_s = nt_model_last_data_s(m);
  f->nerrors = 0;
  for (uint32_t i = 0; i < nt_model_nerrors(m) && i < NT_FRAME_ERRORS; i++)
    f->errors[f->nerrors++] = *nt_model_error_at(m, i);
  f->nwatch = nt_model_watch_notes(m, f->watch, NT_WATCH_NOTES, f->now_s);
  nt_model_watch_totals(m, &f->watch_totals);
}

static int cmp_proc(const void *a, const void *b) {
  const nt_model_process *p = *(const nt_model_process *const *)a;
  const nt_model_process *q = *(const nt_model_process *const *)b;
  int c = strcmp(p->host, q->host);
  if (c) return c;
  if (p->pid != q->pid) return p->pid < q->pid ? -1 : 1;
  return strcmp(p->endpoint, q->endpoint);
}

static void clear_rows(nt_frame *f) {
  f->nprocs = f->nranks = f->nproxy = f->nchannels = f->nkernels = 0;
  f->nseq = f->nops = f->nnet = f->nvars = f->ncomms = f->nop_sums = 0;
  f->channel_count = 0;
}

int nt_frame_build(nt_frame *f, const nt_model *m, nt_diag *d, const nt_frame_opts *o,
                   double now_s) {
  clear_rows(f);
  if (!f->first_build_s) f->first_build_s = now_s;
  f->now_s = now_s;
  f->time = now_s - (o->start_s > 0 ? o->start_s : f->first_build_s);
  f->stall_ms = o->stall_ms;
  build_viewer(f, m);
  uint32_t np = nt_model_nprocesses(m);
  proc_map map = {0};
  nt_model_rank *mr = f->model_ranks;
  bool ok = map_init(&map, np);
  /* Processes by (host, pid): the order people look for them in. */
  const nt_model_process **order = ok ? malloc(((size_t)np + 1) * sizeof *order) : NULL;
  uint32_t nordered = 0;
  ok = ok && order;
  for (uint32_t i = 0; ok && i < np; i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (p->cur) order[nordered++] = p;
  }
  if (ok) qsort(order, nordered, sizeof *order, cmp_proc);
  for (uint32_t i = 0; ok && i < nordered; i++) {
    map_put(&map, order[i], f->nprocs);
    ok = add_proc(f, m, order[i], o->process_env);
  }
  free(order);
  uint32_t n = ok ? nt_model_ranks(m, mr, NT_FRAME_MAX_RANKS) : 0;
  for (uint32_t i = 0; ok && i < n; i++) {
    uint32_t pi;
    if (map_get(&map, mr[i].proc, &pi)) ok = add_rank(f, &mr[i], pi, now_s);
  }
  ok = ok && build_comms(f);
  ok = ok && nt_frame_history_update(f, o->update_s);
  build_alerts(f, m, d, o->alerts_per_rank);
  build_stats(f, m);
  ok = build_recent(f, m, &map, o->recent_per_rank ? o->recent_per_rank : 8) && ok;
  build_env(f, m);
  map_free(&map);
  if (!ok) {
    clear_rows(f);
    f->nrecent = 0;
    return -1;
  }
  return 0;
}

const nt_frame_channel *nt_frame_cell(const nt_frame *f, const nt_frame_rank *r, int channel,
                                      int dir) {
  const nt_frame_channel *best = NULL;
  for (uint32_t i = r->chan0; i < r->chan0 + r->nchan; i++) {
    const nt_frame_channel *c = &f->channels[i];
    if (c->row.channel == channel && c->row.dir == dir && c->row.relay_rank < 0 &&
        (!best || c->row.steps > best->row.steps))
      best = c;
  }
  return best;
}

int nt_frame_channel_wait(const nt_frame_channel *c) {
  /* Stalled with no step in progress: none ("-"), as its alert says. */
  return c->stalled ? c->row.cur_wait : c->dominant_wait;
}

void nt_frame_rank_text(const nt_frame *f, const nt_frame_rank *r, char *buf, size_t cap) {
  const nt_frame_proc *p = &f->procs[r->proc];
  char rk[32];
  snprintf(buf, cap, "%s %s %016llx %s:%u", nt_fmt_rank(r->rank, r->nranks, rk, sizeof rk),
           r->comm_name, (unsigned long long)r->comm_hash, p->host, p->pid);
}

const nt_run_op *nt_frame_previous_choice(const nt_frame *f, int func, int bucket) {
  const nt_run_op *best = NULL;
  for (uint32_t i = 0; f->have_run_prev && i < f->run_prev->nops; i++) {
    const nt_run_op *o = &f->run_prev->ops[i];
    if (o->func == func && o->bucket == bucket && (!best || o->count > best->count)) best = o;
  }
  return best;
}

/* The slow alert: the commonest production problem is not a hang but a job
 * slower than it should be, and NCCL itself says how fast each collective
 * should be (its tuning model, nt_model_op_model). A communicator is slow
 * when one of its collectives rows, over every interval between two
 * diagnoses in which some of its operations completed, reaches less than
 * NT_SLOW_SHARE of NCCL's predicted speed on every rank timed in the
 * interval, for at least NT_SLOW_SUSTAIN_S: the run-long averages of the
 * rows would hide a slowdown that began late and keep one that ended.
 *
 * Every rank, not the row's average over ranks: an operation's time is its
 * execution, and a rank that arrives early spends it waiting inside the
 * collective for the one that arrives last. Ordinary skew (data loading, a
 * compute imbalance of a few milliseconds) makes the average of a 0.5 ms
 * AllReduce twice NCCL's prediction on a sound network. The rank that
 * arrives last waits for nobody: its time is the communication's own. So
 * each rank's interval is taken from its own sums (nt_slow_rank, per
 * process and rank, kept between diagnoses), and the row's share is its
 * fastest rank's (the highest share, the least time per operation): below
 * NT_SLOW_SHARE only when every rank is. Sums per rank cannot tell one
 * operation from another: ranks last by turns each wait in some of their
 * operations, and those waits stay in every rank's share (a minimum per
 * operation over ranks would need each operation's duration on every
 * rank). An interval is judged only when every process that reports the
 * row is followed and had sums at the last diagnosis; a rank whose
 * counters went back (a restarted process) clears the row. One line per
 * communicator names its worst row, its fastest rank's share, how many
 * more rows are below, and the link the model says limits its ring.
 *
 * Off where the model is unknown (no topology, a communicator the topology
 * cannot stand for, point-to-point, symmetric kernels) and for rows it
 * predicts under NT_SLOW_MIN_PREDICTED_US (latency-bound: launch costs the
 * model leaves out dominate): no judgement. An interval with no operation
 * done keeps the state (no evidence either way); none for
 * NT_SLOW_SUSTAIN_S forgets it. */
#include <stdint.h>

#include "alerts_internal.h"

static int row_cmp(const nt_op_stat *x, const nt_op_stat *y) {
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  if (x->func != y->func) return x->func - y->func;
  if (x->bucket != y->bucket) return x->bucket - y->bucket;
  if (x->algo != y->algo) return x->algo - y->algo;
  if (x->proto != y->proto) return x->proto - y->proto;
  return strcmp(x->variant, y->variant);
}

static const nt_slow_hist *find(const nt_slow_hist *h, uint32_t n, const nt_op_stat *r) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = row_cmp(&h[mid].row, r);
    if (c == 0) return &h[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* ---- each rank's part of the rows ---- */

static int rank_cmp(const void *a, const void *b) {
  const nt_slow_rank *x = a, *y = b;
  if (x->comm_hash != y->comm_hash) return CMP(x->comm_hash, y->comm_hash);
  if (x->order != y->order) return CMP(x->order, y->order); /* the row, then the pid */
  if (x->proc != y->proc) return CMP((uintptr_t)x->proc, (uintptr_t)y->proc);
  return CMP(x->rank, y->rank);
}

/* Where a rank's part stands against a row (row_cmp's order): < 0 before
 * it, 0 one of its ranks. Parts are collectives without a kernel variant,
 * and a variant's row comes after the row without one. */
static int part_of(const nt_slow_rank *x, const nt_op_stat *r) {
  if (x->comm_hash != r->comm_hash) return CMP(x->comm_hash, r->comm_hash);
  if (r->kind != NT_OP_COLL) return CMP(NT_OP_COLL, r->kind);
  if (x->func != r->func) return CMP(x->func, r->func);
  if (x->bucket != r->bucket) return CMP(x->bucket, r->bucket);
  if (x->algo != r->algo) return CMP(x->algo, r->algo);
  if (x->proto != r->proto) return CMP(x->proto, r->proto);
  return r->variant[0] ? -1 : 0;
}

static bool same_process(const nt_slow_rank *x, const nt_slow_rank *y) {
  return x->pid == y->pid && x->proc == y->proc;
}

/* At most this many rank parts are followed (20 MB for each of the two
 * buffers): 4096 ranks with 64 collectives rows each. Beyond, the parts
 * left out make their rows unjudged (a process of the row not followed),
 * never judged on some of their ranks. */
#define MAX_RANK_PARTS (1u << 18)

static bool room(nt_slow_rank **buf, uint32_t *cap, uint32_t need) {
  if (need <= *cap) return true;
  uint32_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  nt_slow_rank *x = realloc(*buf, (size_t)c * sizeof *x);
  if (!x) return false;
  *buf = x;
  *cap = c;
  return true;
}

static bool listed(const uint64_t *v, uint32_t n, uint64_t x) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (v[mid] == x) return true;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

/* Each rank's part of the rows now, into d->slow_ranks_next: sorted, a
 * rank's phases added up. Only of the communicators in judged (sorted):
 * those with a row the model knows; the others cost nothing (a job
 * without a topology, most of all). False when out of memory. */
static bool take_parts(const nt_model *m, nt_diag *d, const uint64_t *judged, uint32_t njudged,
                       uint32_t *count) {
  size_t total = 0;
  *count = 0;
  if (!njudged) return true;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->cur && p->run == m->run) total += p->cur->nops;
  }
  if (total > MAX_RANK_PARTS) total = MAX_RANK_PARTS;
  if (!total) return true;
  if (!room(&d->slow_ranks_next, &d->slow_ranks_next_cap, (uint32_t)total)) return false;
  nt_slow_rank *v = d->slow_ranks_next;
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nprocs && n < total; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    const nt_snapshot *s = p->cur;
    if (!s || p->run != m->run) continue; /* as nt_model_op_stats */
    bool judge[NT_MAX_COMMS], any = false;
    uint32_t ncomms = s->ncomms < NT_MAX_COMMS ? s->ncomms : NT_MAX_COMMS;
    for (uint32_t j = 0; j < ncomms; j++)
      any |= judge[j] = listed(judged, njudged, s->comms[j].comm_hash);
    for (uint32_t k = 0; any && k < s->nops && n < total; k++) {
      const nt_op_row *r = &s->ops[k];
      if (r->kind != NT_OP_COLL || r->variant || r->comm_index >= ncomms || !judge[r->comm_index])
        continue;
      const nt_comm_row *c = &s->comms[r->comm_index];
      v[n++] = (nt_slow_rank){.comm_hash = c->comm_hash,
                              .proc = p,
                              .pid = p->pid,
                              .rank = c->rank,
                              .nranks = c->nranks,
                              .nnodes = c->nnodes,
                              .func = r->func,
                              .bucket = r->bucket,
                              .algo = r->algo,
                              .proto = r->proto,
                              .count = r->count,
                              .bytes = r->bytes,
                              .done = r->done,
                              .done_bytes = r->done_bytes,
                              .time_ns = r->time_ns};
      v[n - 1].order = (uint64_t)r->func << 56 | (uint64_t)r->bucket << 48 |
                       (uint64_t)r->algo << 40 | (uint64_t)r->proto << 32 | p->pid;
    }
  }
  qsort(v, n, sizeof *v, rank_cmp);
  uint32_t k = 0;
  for (uint32_t j = 0; j < n; j++) {
    if (k && rank_cmp(&v[k - 1], &v[j]) == 0) { /* the rank's row of another phase */
      v[k - 1].count += v[j].count;
      v[k - 1].bytes += v[j].bytes;
      v[k - 1].done += v[j].done;
      v[k - 1].done_bytes += v[j].done_bytes;
      v[k - 1].time_ns += v[j].time_ns;
    } else {
      v[k++] = v[j];
    }
  }
  *count = k;
  return true;
}

/* A row's interval, from its ranks' parts. */
typedef struct {
  bool restarted; /* a rank's counters went back */
  bool partial;   /* a rank's operations cannot be told apart by interval */
  bool unjudged;  /* no model, or a latency-bound prediction */
  uint32_t timed; /* ranks with operations done in it */
  double share, predicted_us, measured_us; /* of its fastest rank */
  int32_t rank;
} interval;

/* One rank's operations since the last diagnosis (was: its part then). */
static void judge_rank(const nt_model *m, const nt_slow_rank *now, const nt_slow_rank *was,
                       interval *v) {
  if (!was) { /* a new process or row: its operations may span many intervals */
    if (now->done) v->partial = true;
    return;
  }
  if (now->count < was->count || now->done < was->done || now->time_ns < was->time_ns ||
      now->done_bytes < was->done_bytes) {
    v->restarted = true;
    return;
  }
  if (now->done == was->done) return;
  /* the interval's operations of this rank, as a row of their own */
  nt_op_stat x;
  memset(&x, 0, sizeof x);
  x.comm_hash = now->comm_hash;
  x.nranks = now->nranks;
  x.nnodes = now->nnodes;
  x.kind = NT_OP_COLL;
  x.func = now->func;
  x.algo = now->algo;
  x.proto = now->proto;
  x.bucket = now->bucket;
  x.ranks = 1;
  x.count = x.done = now->done - was->done;
  x.bytes = now->done_bytes - was->done_bytes;
  x.time_s = (double)(now->time_ns - was->time_ns) / 1e9;
  x.alg_bytes = nt_alg_bytes(x.func, (double)x.bytes, x.nranks);
  x.bus_bytes = x.alg_bytes * nt_bus_factor(x.func, x.nranks);
  nt_op_model pm;
  nt_model_op_model(m, &x, &pm);
  v->timed++;
  if (!pm.known || pm.ratio < 0 || pm.time_us < NT_SLOW_MIN_PREDICTED_US) {
    v->unjudged = true;
    return;
  }
  if (pm.ratio > v->share) {
    v->share = pm.ratio;
    v->predicted_us = pm.time_us;
    v->measured_us = x.time_s * 1e6 / (double)x.done;
    v->rank = now->rank;
  }
}

/* The row now, from what it was at the last diagnosis and its interval. */
static void follow(nt_slow_hist *now, const nt_slow_hist *was, const interval *v, double now_s) {
  if (was) {
    now->below_since = was->below_since;
    now->evidence_s = was->evidence_s;
    now->share = was->share;
    now->predicted_us = was->predicted_us;
    now->measured_us = was->measured_us;
    now->fastest_rank = was->fastest_rank;
    now->ranks = was->ranks;
  }
  if (v->restarted) {
    now->below_since = 0;
  } else if (was && !v->partial && v->timed) {
    if (v->unjudged) { /* no model, or too short for it: no judgement */
      now->below_since = 0;
      now->share = -1;
    } else {
      now->share = v->share;
      now->predicted_us = v->predicted_us;
      now->measured_us = v->measured_us;
      now->fastest_rank = v->rank;
      now->ranks = v->timed;
      if (v->share >= NT_SLOW_SHARE)
        now->below_since = 0;
      else if (now->below_since == 0)
        now->below_since = was->sample_s; /* the interval began then */
    }
    now->evidence_s = now_s;
  }
  if (now->below_since && now_s - now->evidence_s > NT_SLOW_SUSTAIN_S) now->below_since = 0;
}

static bool is_slow(const nt_slow_hist *h, double now_s) {
  return h->below_since > 0 && now_s - h->below_since >= NT_SLOW_SUSTAIN_S;
}

/* One alert for the slow rows [first, end) of one communicator. */
static void say(ctx *c, const nt_slow_hist *h, uint32_t first, uint32_t end, const nt_op_stat *st) {
  const nt_slow_hist *worst = NULL;
  uint32_t rows = 0;
  double longest = 0;
  for (uint32_t i = first; i < end; i++) {
    if (!is_slow(&h[i], c->now_s)) continue;
    rows++;
    if (!worst || h[i].share < worst->share) worst = &h[i];
    if (c->now_s - h[i].below_since > longest) longest = c->now_s - h[i].below_since;
  }
  if (!worst) return;
  const nt_op_stat *r = &worst->row;
  nt_alert *a = al_add(c, NT_ALERT_SLOW, P_SLOW, 1 - worst->share, NULL);
  if (!a) return;
  a->comm_hash = r->comm_hash;
  a->nranks = r->nranks;
  a->func = r->func;
  a->count = rows;
  a->age_s = longest;
  /* the model's view of the communicator, for the bottleneck */
  nt_op_model pm;
  nt_model_op_model(c->m, &st[worst - h], &pm);
  char name[48], size[32], lab[NT_MAX_VARIANT + 8], more[48] = "", link[NT_OP_BOTTLENECK + 40] = "";
  const char *cn = st[worst - h].comm_name;
  if (cn && cn[0])
    snprintf(name, sizeof name, "%.24s", cn);
  else
    snprintf(name, sizeof name, "%016llx", (unsigned long long)r->comm_hash);
  if (rows > 1) snprintf(more, sizeof more, "; %u more row%s below", rows - 1, rows > 2 ? "s" : "");
  if (pm.known && pm.bottleneck[0])
    snprintf(link, sizeof link, "; the model's bottleneck: %s", pm.bottleneck);
  /* the fastest rank's numbers, which the user can check the judgement by
   * (the others are slower still); short: the bottleneck must fit */
  al_say(a,
         "communicator %s (%d ranks): %s %s %s/%s for %s: fastest rank %d at %.0f%% of NCCL's "
         "model (%s predicted, %s measured, %u rank%s timed)%s%s",
         name, r->nranks, nt_func_name(r->func), nt_fmt_bucket(r->bucket, size, sizeof size),
         nt_algo_label(r->algo, r->variant, false, lab, sizeof lab), nt_proto_name(r->proto),
         AGE(longest), worst->fastest_rank, worst->share * 100, AGE(worst->predicted_us * 1e-6),
         AGE(worst->measured_us * 1e-6), worst->ranks, worst->ranks == 1 ? "" : "s", more, link);
}

#define MAX_ROWS 4096 /* the frame's statistics rows */

void al_slow(ctx *c) {
  const nt_model *m = c->m;
  nt_diag *d = c->d;
  nt_op_stat *st = calloc(MAX_ROWS, sizeof *st);
  uint32_t n = st ? nt_model_op_stats(m, st, MAX_ROWS) : 0, nparts = 0;
  nt_slow_hist *h = n ? calloc(n, sizeof *h) : NULL;
  uint64_t *judged = n ? malloc(n * sizeof *judged) : NULL;
  uint32_t njudged = 0;
  for (uint32_t i = 0; judged && i < n; i++) { /* st is sorted by communicator */
    if (njudged && judged[njudged - 1] == st[i].comm_hash) continue;
    nt_op_model pm;
    nt_model_op_model(m, &st[i], &pm);
    if (pm.known) judged[njudged++] = st[i].comm_hash;
  }
  bool taken = h && judged && take_parts(m, d, judged, njudged, &nparts);
  free(judged);
  if (!taken) { /* no rows, or out of memory: nothing to follow */
    if (n) c->oom = true;
    free(st);
    free(h);
    free(d->slows);
    d->slows = NULL;
    d->nslows = 0;
    d->nslow_ranks = 0;
    return;
  }
  const nt_slow_rank *was = d->slow_ranks, *now = d->slow_ranks_next;
  uint32_t j = 0, w = 0; /* cursors into now and was: both in the rows' order */
  for (uint32_t i = 0; i < n; i++) {
    h[i].row = st[i];
    h[i].row.comm_name = NULL;
    h[i].sample_s = c->now_s;
    h[i].share = -1;
    h[i].fastest_rank = -1;
    interval v = {.share = -1, .rank = -1};
    uint32_t procs = 0;
    while (j < nparts && part_of(&now[j], &st[i]) < 0) j++;
    for (; j < nparts && part_of(&now[j], &st[i]) == 0; j++) {
      if (!procs || !same_process(&now[j - 1], &now[j])) procs++;
      while (w < d->nslow_ranks && rank_cmp(&was[w], &now[j]) < 0) w++;
      bool known = w < d->nslow_ranks && rank_cmp(&was[w], &now[j]) == 0;
      judge_rank(m, &now[j], known ? &was[w] : NULL, &v);
    }
    if (procs < st[i].ranks) v.partial = true; /* a process of the row not followed */
    follow(&h[i], find(d->slows, d->nslows, &st[i]), &v, c->now_s);
  }
  for (uint32_t i = 0, first = 0; i <= n; i++)
    if (i == n || st[i].comm_hash != st[first].comm_hash) {
      if (i > first) say(c, h, first, i, st);
      first = i;
    }
  free(d->slows);
  d->slows = h;
  d->nslows = n;
  /* this diagnosis' parts are the next one's past; the old buffer is reused */
  nt_slow_rank *old = d->slow_ranks;
  uint32_t old_cap = d->slow_ranks_cap;
  d->slow_ranks = d->slow_ranks_next;
  d->slow_ranks_cap = d->slow_ranks_next_cap;
  d->nslow_ranks = nparts;
  d->slow_ranks_next = old;
  d->slow_ranks_next_cap = old_cap;
  free(st);
}

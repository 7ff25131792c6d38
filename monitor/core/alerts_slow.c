/* The slow alert: the commonest production problem is not a hang but a job
 * slower than it should be, and NCCL itself says how fast each collective
 * should be (its tuning model, nt_model_op_model). A communicator is slow
 * when one of its collectives rows, over every interval between two
 * diagnoses in which some of its operations completed, reaches less than
 * NT_SLOW_SHARE of NCCL's predicted speed, for at least NT_SLOW_SUSTAIN_S:
 * the run-long averages of the rows would hide a slowdown that began late
 * and keep one that ended. One line per communicator names its worst row,
 * how many more are below, and the link the model says limits its ring.
 *
 * Off where the model is unknown (no topology, a communicator the topology
 * cannot stand for, point-to-point, symmetric kernels): no prediction, no
 * judgement. An interval with no operation done keeps the state (no
 * evidence either way); none for NT_SLOW_SUSTAIN_S forgets it. */
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

/* The row now, from what it was at the last diagnosis. */
static void follow(nt_model *m, nt_slow_hist *now, const nt_slow_hist *was, double now_s) {
  if (was) {
    now->below_since = was->below_since;
    now->evidence_s = was->evidence_s;
    now->share = was->share;
    now->predicted_us = was->predicted_us;
    now->measured_us = was->measured_us;
  }
  const nt_op_stat *r = &now->row;
  bool restarted = was && (r->done < was->row.done || r->time_s < was->row.time_s);
  if (was && !restarted && r->done > was->row.done) {
    /* the interval's operations, as a row of their own */
    nt_op_stat x = *r;
    x.done = x.count = r->done - was->row.done;
    x.time_s = r->time_s - was->row.time_s;
    x.alg_bytes = r->alg_bytes - was->row.alg_bytes;
    x.bus_bytes = r->bus_bytes - was->row.bus_bytes;
    x.bytes = (uint64_t)x.alg_bytes;
    nt_op_model pm;
    nt_model_op_model(m, &x, &pm);
    if (!pm.known || pm.ratio < 0) { /* no model: no judgement */
      now->below_since = 0;
      now->share = -1;
    } else {
      now->share = pm.ratio;
      now->predicted_us = pm.time_us;
      now->measured_us = x.time_s * 1e6 / (double)x.done;
      if (pm.ratio >= NT_SLOW_SHARE)
        now->below_since = 0;
      else if (now->below_since == 0)
        now->below_since = was->sample_s; /* the interval began then */
    }
    now->evidence_s = now_s;
  } else if (restarted) {
    now->below_since = 0;
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
  al_say(a,
         "communicator %s (%d ranks): %s %s %s/%s at %.0f%% of NCCL's model for %s (%s predicted, "
         "%s measured)%s%s",
         name, r->nranks, nt_func_name(r->func), nt_fmt_bucket(r->bucket, size, sizeof size),
         nt_algo_label(r->algo, r->variant, false, lab, sizeof lab), nt_proto_name(r->proto),
         worst->share * 100, AGE(longest), AGE(worst->predicted_us * 1e-6),
         AGE(worst->measured_us * 1e-6), more, link);
}

#define MAX_ROWS 4096 /* the frame's statistics rows */

void al_slow(ctx *c) {
  nt_model *m = c->m;
  nt_op_stat *st = calloc(MAX_ROWS, sizeof *st);
  uint32_t n = st ? nt_model_op_stats(m, st, MAX_ROWS) : 0;
  nt_slow_hist *h = n ? calloc(n, sizeof *h) : NULL;
  if (!h) { /* no rows, or out of memory: nothing to follow */
    if (n) c->oom = true;
    free(st);
    free(m->slows);
    m->slows = NULL;
    m->nslows = 0;
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    h[i].row = st[i];
    h[i].row.comm_name = NULL;
    h[i].sample_s = c->now_s;
    h[i].share = -1;
    follow(m, &h[i], find(m->slows, m->nslows, &st[i]), c->now_s);
  }
  for (uint32_t i = 0, first = 0; i <= n; i++)
    if (i == n || st[i].comm_hash != st[first].comm_hash) {
      if (i > first) say(c, h, first, i, st);
      first = i;
    }
  free(m->slows);
  m->slows = h;
  m->nslows = n;
  free(st);
}

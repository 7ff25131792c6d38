/* The slow alert judges each rank, not the row's average (alerts_slow.c):
 * an operation's time is its execution, and a rank that arrives early waits
 * in it for the last one, so ordinary skew makes the average slow on a
 * sound machine; the last rank waits for nobody. A job of 8 ranks, one
 * process each, on one node of our example's 8 H100 (NVSwitch), the
 * topology sent by its endpoint; each process reports every 2 s, 10 more
 * operations of one row each time, at its own share of NCCL's model
 * (test_ops_model.c derives the 64 MiB Ring/Simple AllReduce prediction by
 * hand: 382 us). */
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/core/model.h"

#define HASH    0x51000000000000c0ull
#define RANKS   8
#define EXAMPLE "examples/topologies/nvswitch-8gpu-8nic.xml"

typedef struct {
  uint8_t func, algo, proto, bucket;
  uint64_t bytes;      /* per operation */
  double predicted_us; /* NCCL's model for it (asked of the model first) */
} row_spec;

/* Rank `rank`'s snapshot number `step` (one every 2 s): 10 more operations
 * of the row each time, at `share` of the model. */
static nt_snapshot *rank_snap(const row_spec *row, int rank, int step, double share) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node0");
  s->pid = 100 + (uint32_t)rank;
  s->seq = 1 + (uint64_t)step;
  s->mono_ns = 1000000000ull + (uint64_t)step * 2000000000ull;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->process.abi_version = 7;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = rank, .nranks = RANKS, .nnodes = 1};
  uint64_t n = 10 * (1 + (uint64_t)step);
  uint64_t measured_ns = (uint64_t)(row->predicted_us * 1e3 / share);
  s->nops = 1;
  s->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = row->func,
                          .algo = row->algo,
                          .proto = row->proto,
                          .bucket = row->bucket,
                          .count = n,
                          .bytes = n * row->bytes,
                          .done = n,
                          .done_bytes = n * row->bytes,
                          .time_ns = n * measured_ns,
                          .gpu_done = n};
  return s;
}

static bool apply_all(nt_model *m, const row_spec *row, int step, const double *share, double t) {
  bool ok = true;
  for (int r = 0; r < RANKS; r++) {
    nt_snapshot *s = rank_snap(row, r, step, share[r]);
    ok &= s && nt_model_apply_snapshot(m, "ep1", 0, s, t) == 0;
    nt_snapshot_free(s);
  }
  return ok;
}

/* The job's first snapshots and the topology; row->predicted_us asked of
 * the model (a row's prediction depends only on its size, algorithm and
 * protocol). */
static nt_model *job(row_spec *row) {
  nt_model *m = nt_model_new();
  const double one[RANKS] = {1, 1, 1, 1, 1, 1, 1, 1};
  row->predicted_us = 100; /* any: the first snapshot's times are not judged */
  bool ok = m && apply_all(m, row, 0, one, 1.0);
  FILE *f = fopen(EXAMPLE, "rb");
  char *xml = malloc(1 << 20);
  size_t len = f && xml ? fread(xml, 1, (1 << 20) - 1, f) : 0;
  if (f) fclose(f);
  ok = ok && len && nt_model_set_topology(m, xml, len, "ep1", 1.0) == 0;
  free(xml);
  nt_op_stat st[4];
  nt_op_model pm = {0};
  if (ok && nt_model_op_stats(m, st, 4) == 1) nt_model_op_model(m, &st[0], &pm);
  ok = ok && pm.known;
  row->predicted_us = pm.time_us;
  if (!ok) {
    nt_model_free(m);
    return NULL;
  }
  return m;
}

/* `steps` more snapshots of every rank at share[rank] of the model, the
 * diagnosis after each; the slow alerts of the last. Also the row's
 * average share (MODEL%) then. */
static uint32_t slow_after(nt_model *m, const row_spec *row, int steps, const double *share,
                           nt_alert *out, uint32_t cap, double *average) {
  static nt_alert all[64];
  uint32_t n = 0;
  nt_diag_alerts(test_diag(), m, 2000, all, 64, 1.0);
  for (int k = 1; k <= steps; k++) {
    double t = 1.0 + 2.0 * k;
    if (!apply_all(m, row, k, share, t))
      fprintf(stderr, "    snapshot %d refused\n", k); /* then no alert: the caller fails */
    uint32_t na = nt_diag_alerts(test_diag(), m, 2000, all, 64, t);
    n = 0;
    for (uint32_t i = 0; i < na && n < cap; i++)
      if (all[i].kind == NT_ALERT_SLOW) out[n++] = all[i];
  }
  nt_op_stat st[4];
  nt_op_model pm = {.ratio = -1};
  if (nt_model_op_stats(m, st, 4) == 1) nt_model_op_model(m, &st[0], &pm);
  *average = pm.ratio;
  return n;
}

static const row_spec big = {.func = NT_FUNC_ALLREDUCE,
                             .algo = NT_ALGO_RING,
                             .proto = NT_PR_SIMPLE,
                             .bucket = 26,
                             .bytes = 1ull << 26};

/* One rank arrives last every time: its operations take what the model
 * says, the others wait for it and take 3x. The row's average is below
 * half of the model (the rule before), yet the network is fine. */
static void a_late_rank_does_not_make_the_row_slow(void) {
  row_spec row = big;
  nt_model *m = job(&row);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(fabs(row.predicted_us - 382.2) < 1); /* test_ops_model.c's derivation */
  double share[RANKS];
  for (int r = 0; r < RANKS; r++) share[r] = r == 5 ? 1.0 : 1.0 / 3;
  nt_alert a[4];
  double average;
  CHECK(slow_after(m, &row, 8, share, a, 4, &average) == 0);
  CHECK(average > 0 && average < NT_SLOW_SHARE); /* the average rule would cry wolf */
  nt_model_free(m);
}

/* Every rank below: slow, the line naming the fastest rank and its share
 * (not the average's, 31%). */
static void every_rank_below_is_slow(void) {
  row_spec row = big;
  nt_model *m = job(&row);
  CHECK(m != NULL);
  if (!m) return;
  double share[RANKS];
  for (int r = 0; r < RANKS; r++) share[r] = r == 2 ? 0.4 : 0.3;
  nt_alert a[4];
  double average;
  uint32_t n = slow_after(m, &row, 6, share, a, 4, &average); /* 12 s below */
  CHECK(n == 1);
  if (n == 1) {
    fprintf(stderr, "    %s\n", a[0].text);
    CHECK(a[0].comm_hash == HASH && a[0].nranks == RANKS && a[0].func == NT_FUNC_ALLREDUCE);
    CHECK(strstr(a[0].text, "fastest rank 2 at 40% of NCCL's model") != NULL);
    CHECK(strstr(a[0].text, "8 ranks timed") != NULL);
    CHECK(strstr(a[0].text, "bottleneck: GPU0->GPU1 NVL") != NULL);
  }
  CHECK(average < 0.35);
  nt_model_free(m);
}

/* A latency-bound row (NCCL predicts well under the floor) at 10% of the
 * model on every rank: launch costs the model leaves out, not judged. */
static void a_latency_bound_row_is_not_judged(void) {
  row_spec row = {.func = NT_FUNC_ALLREDUCE,
                  .algo = NT_ALGO_RING,
                  .proto = NT_PR_LL,
                  .bucket = 12,
                  .bytes = 4096};
  nt_model *m = job(&row);
  CHECK(m != NULL);
  if (!m) return;
  fprintf(stderr, "    4 KiB Ring/LL AllReduce: %.1f us predicted\n", row.predicted_us);
  CHECK(row.predicted_us > 0 && row.predicted_us < NT_SLOW_MIN_PREDICTED_US);
  double share[RANKS];
  for (int r = 0; r < RANKS; r++) share[r] = 0.1;
  nt_alert a[4];
  double average;
  CHECK(slow_after(m, &row, 8, share, a, 4, &average) == 0);
  CHECK(fabs(average - 0.1) < 0.01); /* MODEL% still says it */
  nt_model_free(m);
}

/* A process that restarts (its counters go back) clears the row: its
 * earlier slowness is not evidence about the new one. */
static void a_restarted_rank_clears_the_row(void) {
  row_spec row = big;
  nt_model *m = job(&row);
  CHECK(m != NULL);
  if (!m) return;
  double share[RANKS];
  for (int r = 0; r < RANKS; r++) share[r] = 0.4;
  nt_alert a[4];
  double average;
  CHECK(slow_after(m, &row, 6, share, a, 4, &average) == 1);
  /* rank 4 starts over at step 1's counts, still at 40%: no interval of
   * its is known, the row starts again */
  static nt_alert all[64];
  bool ok = true;
  for (int r = 0; r < RANKS; r++) {
    nt_snapshot *s = rank_snap(&row, r, r == 4 ? 1 : 7, 0.4);
    if (s && r == 4) s->seq = 100; /* a new sequence, not a reordered old one */
    ok &= s && nt_model_apply_snapshot(m, "ep1", 0, s, 15.0) == 0;
    nt_snapshot_free(s);
  }
  CHECK(ok);
  uint32_t na = nt_diag_alerts(test_diag(), m, 2000, all, 64, 15.0), slow = 0;
  for (uint32_t i = 0; i < na; i++) slow += all[i].kind == NT_ALERT_SLOW;
  CHECK(slow == 0);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(a_late_rank_does_not_make_the_row_slow);
  TEST_RUN(every_rank_below_is_slow);
  TEST_RUN(a_latency_bound_row_is_not_judged);
  TEST_RUN(a_restarted_rank_clears_the_row);
  return TEST_DONE();
}

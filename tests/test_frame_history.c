/* The bus bandwidth history (monitor/core/frame_history.c): a model fed
 * snapshots whose operation rows carry known bytes and times, built once per
 * second; each sample is the bus bytes over the time of the operations done
 * in its interval, an interval where nothing completed or no build looked
 * is a gap (never 0), a rank first seen and a restarted process add no
 * sample of their past, the ring holds the last NT_FRAME_HISTORY samples,
 * and the JSON frame carries them (null for a gap). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/core/frame.h"
#include "../monitor/core/model.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/outputs/json_out.h"

#define HASH 0x5ba4c0ffee000001ull

/* Process `pid`, rank r of a 4-rank communicator, whose AllReduce row has
 * done `done_bytes` in `time_ns` of operation time so far. A 4-rank
 * AllReduce's bus factor is 2 x 3 / 4 = 1.5. */
static int feed(nt_model *m, uint32_t pid, int32_t r, uint64_t seq, double mono_s,
                uint64_t done_bytes, uint64_t time_ns, double now_s) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return -1;
  snprintf(s->host, sizeof s->host, "node%d", r);
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = (uint64_t)(mono_s * 1e9);
  s->wall_ns = 1700000000000000000ull + s->mono_ns;
  s->interval_ms = 100;
  s->process.abi_version = 6;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = r, .nranks = 4, .nnodes = 1};
  s->nops = 1;
  s->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .count = 100,
                          .done = 100,
                          .bytes = done_bytes,
                          .done_bytes = done_bytes,
                          .time_ns = time_ns};
  int rc = nt_model_apply_snapshot(m, "ep", 0, s, now_s);
  nt_snapshot_free(s);
  return rc;
}

static const nt_frame_comm *comm_of(const nt_frame *f) {
  return f->ncomms == 1 ? &f->comms[0] : NULL;
}

/* Whether the history is `want` (GB/s; < 0 a gap), oldest first. */
static bool history_is(const nt_frame_comm *c, const double *want, uint32_t n) {
  if (!c || c->nhistory != n) {
    fprintf(stderr, "    %u samples, expected %u\n", c ? c->nhistory : 0, n);
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    double got = c->busbw_history[i];
    bool ok = want[i] < 0 ? got == NT_FRAME_GAP : fabs(got - want[i]) < 1e-3 * want[i];
    if (!ok) {
      fprintf(stderr, "    sample %u is %g, expected %g\n", i, got, want[i]);
      return false;
    }
  }
  return true;
}

#define GB 1000000000ull
#define S  1000000000ull

/* Known bytes and times, a gap, a rank joining with a long past, a
 * restart whose new counters are larger than the old ones, and intervals
 * no build saw. */
static void samples_are_bytes_over_time_with_gaps_and_restarts(void) {
  nt_model *m = nt_model_new();
  nt_frame *f = nt_frame_new();
  nt_frame_opts o = {.stall_ms = 5000, .update_s = 1.0};
  CHECK(m && f);
  /* t=0: where rank 0 stands; no sample yet. */
  CHECK(feed(m, 100, 0, 1, 10, 0, 0, 0.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 0.0) == 0);
  CHECK(history_is(comm_of(f), NULL, 0));
  /* t=1: 2 GB in 1.5 s of operations: 2 x 1.5 / 1.5 = 2 GB/s bus. */
  CHECK(feed(m, 100, 0, 2, 11, 2 * GB, 3 * S / 2, 1.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 1.0) == 0);
  CHECK(history_is(comm_of(f), (double[]){2}, 1));
  CHECK(fabs(f->history_s - 1.0) < 1e-9 && fabs(f->history_end_s - 1.0) < 1e-9);
  /* t=2: nothing completed: a gap, not 0 GB/s. */
  CHECK(feed(m, 100, 0, 3, 12, 2 * GB, 3 * S / 2, 2.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 2.0) == 0);
  CHECK(history_is(comm_of(f), (double[]){2, -1}, 2));
  /* t=3: rank 0 did 6 GB in 3 s (3 GB/s bus); rank 1 is seen for the
   * first time with 1000 GB in 1 s behind it: where it stands, not a
   * sample. */
  CHECK(feed(m, 100, 0, 4, 13, 8 * GB, 9 * S / 2, 3.0) == 0);
  CHECK(feed(m, 101, 1, 1, 13, 1000 * GB, S, 3.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 3.0) == 0);
  CHECK(history_is(comm_of(f), (double[]){2, -1, 3}, 3));
  /* t=4: rank 0's pid starts over (sequence 1, its clock went on) with
   * counters larger than before: another process's past, no difference
   * of the old one's: a gap, not 92 GB over 5.5 s. */
  CHECK(feed(m, 100, 0, 1, 14, 100 * GB, 10 * S, 4.0) == 0);
  CHECK(feed(m, 101, 1, 2, 14, 1000 * GB, S, 4.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 4.0) == 0);
  CHECK(nt_model_process_at(m, 0)->restarts + nt_model_process_at(m, 1)->restarts == 1);
  CHECK(history_is(comm_of(f), (double[]){2, -1, 3, -1}, 4));
  /* t=5: the new rank 0 did 4 GB in 1.5 s, rank 1 2 GB in 1.5 s: 6 GB x
   * 1.5 over 3 s = 3 GB/s. */
  CHECK(feed(m, 100, 0, 2, 15, 104 * GB, 23 * S / 2, 5.0) == 0);
  CHECK(feed(m, 101, 1, 3, 15, 1002 * GB, 5 * S / 2, 5.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 5.0) == 0);
  CHECK(history_is(comm_of(f), (double[]){2, -1, 3, -1, 3}, 5));
  /* t=6, 7: no build (the viewer paused); t=8 (a little late): the two
   * intervals nobody looked at are gaps, the next holds what completed
   * since t=5: 5 GB in 1.5 s = 5 GB/s. */
  CHECK(feed(m, 100, 0, 3, 18, 109 * GB, 13 * S, 8.1) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 8.1) == 0);
  CHECK(history_is(comm_of(f), (double[]){2, -1, 3, -1, 3, -1, -1, 5}, 8));
  CHECK(fabs(f->history_end_s - 8.0) < 1e-9);
  /* Counters that went back (rows the plugin dropped) are no sample. */
  CHECK(feed(m, 100, 0, 4, 19, 1 * GB, 13 * S, 9.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 9.0) == 0);
  CHECK(history_is(comm_of(f), (double[]){2, -1, 3, -1, 3, -1, -1, 5, -1}, 9));
  /* The JSON frame: the samples oldest first, null for a gap, and the
   * interval. */
  nt_jo w;
  nt_jo_init(&w);
  const char *text = nt_frame_json(f, &w);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  nt_jo_free(&w);
  CHECK(root);
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "comms"), 0);
  cJSON *h = cJSON_GetObjectItem(c, "busbw_history_gbs");
  cJSON *iv = cJSON_GetObjectItem(c, "busbw_history_interval_s");
  bool json_ok = cJSON_IsArray(h) && cJSON_GetArraySize(h) == 9 &&
                 fabs(cJSON_GetArrayItem(h, 0)->valuedouble - 2) < 1e-3 &&
                 cJSON_IsNull(cJSON_GetArrayItem(h, 1)) &&
                 fabs(cJSON_GetArrayItem(h, 7)->valuedouble - 5) < 1e-3 &&
                 cJSON_IsNull(cJSON_GetArrayItem(h, 8)) && cJSON_IsNumber(iv) &&
                 iv->valuedouble == 1.0;
  cJSON_Delete(root);
  CHECK(json_ok);
  nt_frame_free(f);
  nt_model_free(m);
}

/* The ring keeps the last NT_FRAME_HISTORY samples, oldest first; a slower
 * update makes the interval longer; a clock that goes back (a replay
 * started over) starts the history over. */
static void ring_is_bounded_and_the_interval_follows_the_update(void) {
  nt_model *m = nt_model_new();
  nt_frame *f = nt_frame_new();
  nt_frame_opts o = {.stall_ms = 5000, .update_s = 0.5};
  CHECK(m && f);
  uint32_t builds = NT_FRAME_HISTORY + 30;
  uint64_t bytes = 0, ns = 0;
  for (uint32_t k = 0; k <= builds; k++) {
    /* Interval k: k GB in 1 s, 1.5 k GB/s bus. */
    bytes += (uint64_t)k * GB;
    ns += S;
    CHECK(feed(m, 100, 0, k + 1, 10 + k, bytes, ns, k) == 0);
    CHECK(nt_frame_build(f, m, test_diag(), &o, k) == 0);
  }
  const nt_frame_comm *c = comm_of(f);
  CHECK(c && c->nhistory == NT_FRAME_HISTORY);
  CHECK(f->history_s == NT_FRAME_HISTORY_MIN_S); /* a 0.5 s update: 1 s samples */
  for (uint32_t i = 0; i < NT_FRAME_HISTORY; i++) {
    double want = 1.5 * (builds - NT_FRAME_HISTORY + 1 + i);
    CHECK(fabs(c->busbw_history[i] - want) < 1e-3 * want);
  }
  /* Back in time: nothing lines up with what was. */
  CHECK(feed(m, 100, 0, builds + 2, 10 + builds + 1, bytes + GB, ns + S, 3.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 3.0) == 0);
  CHECK(comm_of(f) && comm_of(f)->nhistory == 0);
  /* A 2 s update: 2 s samples. */
  o.update_s = 2.0;
  CHECK(nt_frame_build(f, m, test_diag(), &o, 5.0) == 0);
  CHECK(feed(m, 100, 0, builds + 3, 10 + builds + 3, bytes + 4 * GB, ns + 3 * S, 7.0) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &o, 7.0) == 0);
  CHECK(f->history_s == 2.0);
  CHECK(history_is(comm_of(f), (double[]){2.25}, 1)); /* 3 GB x 1.5 over 2 s */
  nt_frame_free(f);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(samples_are_bytes_over_time_with_gaps_and_restarts);
  TEST_RUN(ring_is_bounded_and_the_interval_follows_the_update);
  return TEST_DONE();
}

/* What the viewer derives from snapshots, driven with hand-built ones:
 * nccl-tests' bandwidth formulas, operation and phase statistics, the
 * stall / straggler diagnosis, the environment across ranks, and runs kept
 * across a job restart. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/core/model.h"

#define HASH 0xc0ffee0000000001ull

static bool near(double a, double b) {
  return fabs(a - b) <= 1e-9 * (fabs(b) + 1);
}

/* A rank of a 4-rank ring: process pid, rank r, one channel each way, its
 * rows stuck (ops in flight, no progress for `age_s`) in the given waits. */
static nt_snapshot *ring_rank(uint32_t pid, int r, uint64_t seq, int send_wait, int recv_wait,
                              double age_s) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node%d", r);
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = seq * 100000000ull;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = r, .nranks = 4, .nnodes = 4};
  s->nchannels = 2;
  uint64_t age = (uint64_t)(age_s * 1e9);
  s->channels[0] = (nt_channel_row){.channel = 0,
                                    .dir = NT_DIR_SEND,
                                    .peer = (r + 1) % 4,
                                    .ops_started = 2,
                                    .ops_done = 1,
                                    .cur_step = 3,
                                    .cur_wait = (uint8_t)send_wait,
                                    .progress_age_ns = age,
                                    .relay_rank = -1};
  s->channels[1] = (nt_channel_row){.channel = 0,
                                    .dir = NT_DIR_RECV,
                                    .peer = (r + 3) % 4,
                                    .ops_started = 2,
                                    .ops_done = 1,
                                    .cur_step = 3,
                                    .cur_wait = (uint8_t)recv_wait,
                                    .progress_age_ns = age,
                                    .relay_rank = -1};
  return s;
}

static bool apply(nt_model *m, nt_snapshot *s, double now) {
  bool ok = s && nt_model_apply_snapshot(m, "ep", 0, s, now) == 0;
  nt_snapshot_free(s);
  return ok;
}

static const nt_alert *alert_of(const nt_alert *a, uint32_t n, int kind, int rank) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i].kind == kind && a[i].rank == rank) return &a[i];
  return NULL;
}

static uint32_t count_kind(const nt_alert *a, uint32_t n, int kind) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < n; i++) c += a[i].kind == kind;
  return c;
}

/* ---- nccl-tests' formulas, by hand ---- */

static void bus_bandwidth_matches_nccl_tests_for_every_function(void) {
  /* 1 GB moved in 0.5 s by 8 ranks. */
  double S = 1e9;
  /* AllReduce: algbw = S/t = 2 GB/s, busbw = 2 x 2(8-1)/8 = 3.5 GB/s. */
  CHECK(near(nt_alg_bytes(NT_FUNC_ALLREDUCE, S, 8) / 0.5 / 1e9, 2.0));
  CHECK(
      near(nt_alg_bytes(NT_FUNC_ALLREDUCE, S, 8) * nt_bus_factor(NT_FUNC_ALLREDUCE, 8) / 0.5 / 1e9,
           3.5));
  /* AllGather, ReduceScatter, AlltoAll, Gather, Scatter: NCCL's count is
   * per rank, so algbw = S x 8 / t = 16 GB/s, busbw = 16 x 7/8 = 14. */
  const int per_rank[] = {NT_FUNC_ALLGATHER, NT_FUNC_REDUCESCATTER, NT_FUNC_ALLTOALL,
                          NT_FUNC_GATHER, NT_FUNC_SCATTER};
  for (int i = 0; i < 5; i++) {
    double alg = nt_alg_bytes(per_rank[i], S, 8) / 0.5 / 1e9;
    CHECK(near(alg, 16.0));
    CHECK(near(alg * nt_bus_factor(per_rank[i], 8), 14.0));
  }
  /* Broadcast, Reduce, Send, Recv, SendRecv: S, factor 1. */
  const int plain[] = {NT_FUNC_BROADCAST, NT_FUNC_REDUCE, NT_FUNC_SEND, NT_FUNC_RECV,
                       NT_FUNC_SENDRECV};
  for (int i = 0; i < 5; i++) {
    CHECK(near(nt_alg_bytes(plain[i], S, 8), S));
    CHECK(near(nt_bus_factor(plain[i], 8), 1.0));
  }
  /* Two ranks: AllReduce moves (2-1)/2 x 2 = 1x; one rank moves nothing. */
  CHECK(near(nt_bus_factor(NT_FUNC_ALLREDUCE, 2), 1.0));
  CHECK(near(nt_bus_factor(NT_FUNC_ALLREDUCE, 1), 0.0));
  CHECK(near(nt_bus_factor(NT_FUNC_ALLGATHER, 1), 0.0));
  /* An unknown rank count (NCCL 2.26 gives none): what depends on it is
   * unknown (NaN: "?" and null), never 0; the rest stays known. */
  CHECK(isnan(nt_bus_factor(NT_FUNC_ALLREDUCE, 0)));
  CHECK(isnan(nt_bus_factor(NT_FUNC_REDUCESCATTER, 0)));
  CHECK(isnan(nt_alg_bytes(NT_FUNC_ALLGATHER, S, 0)));
  CHECK(near(nt_alg_bytes(NT_FUNC_ALLREDUCE, S, 0), S));
  CHECK(near(nt_bus_factor(NT_FUNC_BROADCAST, 0), 1.0));
  CHECK(near(nt_bus_factor(NT_FUNC_SEND, 0), 1.0));
  CHECK(near(nt_stat_algbw(3e9, 1.5), 2.0));
  CHECK(nt_stat_algbw(1e9, 0) == 0);
}

static void sizes_and_buckets_read_like_people_write_them(void) {
  char b[32];
  CHECK_STR(nt_fmt_bucket(15, b, sizeof b), "32K-64K");
  CHECK_STR(nt_fmt_bucket(0, b, sizeof b), "1-2");
  CHECK_STR(nt_fmt_bucket(9, b, sizeof b), "512-1K");
  CHECK_STR(nt_fmt_bucket(29, b, sizeof b), "512M-1G");
  CHECK_STR(nt_fmt_bucket(63, b, sizeof b), "8E-16E");
  CHECK_STR(nt_fmt_size(512, b, sizeof b), "512B");
  CHECK_STR(nt_fmt_size(4 << 20, b, sizeof b), "4.00MiB");
  CHECK_STR(nt_fmt_size(1536, b, sizeof b), "1.50KiB");
}

/* ---- statistics over ranks ---- */

static nt_snapshot *with_ops(uint32_t pid, int rank, uint64_t count, uint64_t time_ns) {
  nt_snapshot *s = ring_rank(pid, rank, 1, NT_WAIT_NONE, NT_WAIT_NONE, 0);
  if (!s) return NULL;
  s->channels[0].ops_done = s->channels[1].ops_done = 2;
  s->nphases = 1;
  s->phases[0] = (nt_phase_row){.id = 1, .name = "backward"};
  s->nops = 1;
  s->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .bucket = 30,
                          .phase = 1,
                          .count = count,
                          .bytes = count << 30,
                          .done = count,
                          .done_bytes = count << 30,
                          .time_ns = time_ns};
  return s;
}

static void statistics_add_up_over_ranks_and_phases(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  /* Two of the four ranks: each did 10 x 1 GiB AllReduces in 4 s. */
  CHECK(apply(m, with_ops(1, 0, 10, 4000000000ull), 1.0));
  CHECK(apply(m, with_ops(2, 1, 10, 4000000000ull), 1.0));
  nt_op_stat st[8];
  CHECK(nt_model_op_stats(m, st, 8) == 1);
  CHECK(st[0].ranks == 2 && st[0].count == 20 && st[0].done == 20 && st[0].nranks == 4);
  CHECK(near(st[0].time_s, 8.0));
  double gib = 1073741824.0;
  /* algbw = 10 GiB / 4 s per rank; busbw = x 2(4-1)/4 = 1.5 */
  CHECK(near(nt_stat_algbw(st[0].alg_bytes, st[0].time_s), 10 * gib / 4 / 1e9));
  CHECK(near(nt_stat_algbw(st[0].bus_bytes, st[0].time_s), 1.5 * 10 * gib / 4 / 1e9));
  nt_phase_stat ph[4];
  CHECK(nt_model_phase_stats(m, ph, 4) == 1);
  CHECK_STR(ph[0].name, "backward");
  CHECK(ph[0].ranks == 2 && ph[0].count == 20 && near(ph[0].time_s, 8.0));
  nt_model_free(m);
}

/* A rank whose phase spans two communicators: the operations of both run
 * at the same time, so its busy time can exceed the time the job ran
 * (newcomer run 3, finding 17). The table says so, and with one
 * communicator it says nothing. */
static void phase_busy_time_says_when_communicators_overlap(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  CHECK(apply(m, with_ops(1, 0, 10, 4000000000ull), 1.0));
  nt_phase_stat ph[NT_MAX_PHASES + 1];
  char note[128];
  CHECK(nt_model_phase_stats(m, ph, NT_MAX_PHASES + 1) == 1);
  CHECK(ph[0].comms == 1);
  CHECK(nt_phase_busy_note(ph, 1, note, sizeof note) == NULL);
  /* Same process, a second communicator in the same phase: 4 s + 3 s of
   * busy time in a job that may have run 4 s. */
  nt_snapshot *s = with_ops(1, 0, 10, 4000000000ull);
  CHECK(s != NULL);
  s->seq = 2;
  s->mono_ns = 200000000ull;
  s->ncomms = 2;
  s->comms[1] = (nt_comm_row){.comm_hash = HASH + 1, .rank = 0, .nranks = 4, .nnodes = 4};
  s->nops = 2;
  s->ops[1] = s->ops[0];
  s->ops[1].comm_index = 1;
  s->ops[1].time_ns = 3000000000ull;
  CHECK(apply(m, s, 1.1));
  CHECK(nt_model_phase_stats(m, ph, NT_MAX_PHASES + 1) == 1);
  CHECK(ph[0].comms == 2 && ph[0].ranks == 1 && near(ph[0].time_s, 7.0));
  const char *n = nt_phase_busy_note(ph, 1, note, sizeof note);
  CHECK(n != NULL && strstr(n, "2 communicators") != NULL && strlen(n) <= 80);
  nt_model_free(m);
}

/* NCCL 2.26: the communicator's rank count is unknown (0). AllReduce's
 * algbw needs no count, its busbw does; AllGather needs it for both; a
 * Send needs none. A phase that mixes them is unknown as a whole. */
static void bandwidths_without_a_rank_count_are_unknown_not_zero(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  nt_snapshot *s = with_ops(1, 0, 10, 4000000000ull);
  CHECK(s);
  s->comms[0].nranks = s->comms[0].nnodes = 0;
  s->nops = 3;
  s->ops[1] = s->ops[0];
  s->ops[1].func = NT_FUNC_ALLGATHER;
  s->ops[2] = s->ops[0];
  s->ops[2].kind = NT_OP_P2P;
  s->ops[2].func = NT_FUNC_SEND;
  s->ops[2].algo = NT_ALGO_NONE;
  s->ops[2].phase = 0;
  CHECK(apply(m, s, 1.0));
  nt_op_stat st[8];
  CHECK(nt_model_op_stats(m, st, 8) == 3);
  double gib = 1073741824.0;
  for (int i = 0; i < 3; i++) {
    double alg = nt_stat_algbw(st[i].alg_bytes, st[i].time_s),
           bus = nt_stat_algbw(st[i].bus_bytes, st[i].time_s);
    if (st[i].func == NT_FUNC_ALLREDUCE) CHECK(near(alg, 10 * gib / 4 / 1e9) && isnan(bus));
    if (st[i].func == NT_FUNC_ALLGATHER) CHECK(isnan(alg) && isnan(bus));
    if (st[i].func == NT_FUNC_SEND) CHECK(near(alg, 10 * gib / 4 / 1e9) && near(bus, alg));
  }
  nt_phase_stat ph[4];
  CHECK(nt_model_phase_stats(m, ph, 4) == 2);
  CHECK_STR(ph[0].name, ""); /* the Send, outside any phase */
  CHECK(near(nt_stat_algbw(ph[0].bus_bytes, ph[0].time_s), 10 * gib / 4 / 1e9));
  CHECK_STR(ph[1].name, "backward");
  CHECK(isnan(nt_stat_algbw(ph[1].alg_bytes, ph[1].time_s)));
  CHECK(isnan(nt_stat_algbw(ph[1].bus_bytes, ph[1].time_s)));
  nt_model_free(m);
}

/* ---- diagnosis ---- */

/* Rank 2's GPU stopped: it waits on nobody. Rank 1 (sends to 2) waits for
 * credit from 2; rank 3 (receives from 2) waits for its data; rank 0 waits
 * for rank 3's data. Every chain ends at rank 2. */
static void a_stalled_ring_names_the_rank_its_waits_end_at(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  CHECK(apply(m, ring_rank(10, 0, 1, NT_WAIT_SEND_GPU, NT_WAIT_RECV_NET, 5), 1.0));
  CHECK(apply(m, ring_rank(11, 1, 1, NT_WAIT_SEND_PEER, NT_WAIT_RECV_NET, 5), 1.0));
  CHECK(apply(m, ring_rank(12, 2, 1, NT_WAIT_SEND_GPU, NT_WAIT_RECV_GPU, 5), 1.0));
  CHECK(apply(m, ring_rank(13, 3, 1, NT_WAIT_SEND_GPU, NT_WAIT_RECV_NET, 5), 1.0));
  nt_alert a[64];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 64, 1.0);
  CHECK(count_kind(a, n, NT_ALERT_ROOT) == 1);
  CHECK(a[0].kind == NT_ALERT_ROOT && a[0].rank == 2); /* first */
  CHECK_EQ_U64(a[0].count, 3);                         /* 0, 1 and 3 wait on it */
  CHECK(strstr(a[0].text, "rank 2/4 node2:12") != NULL);
  const nt_alert *s1 = NULL;
  for (uint32_t i = 0; i < n; i++)
    if (a[i].kind == NT_ALERT_STALL && a[i].rank == 1 && a[i].wait == NT_WAIT_SEND_PEER) s1 = &a[i];
  CHECK(s1 && s1->peer == 2 && s1->count == 1 && s1->age_s >= 5);
  CHECK(strstr(s1->text, "waiting on rank 2 (node2:12)") != NULL);
  /* Under the stall time, nothing is stalled. */
  CHECK(nt_diag_alerts(test_diag(), m, 6000, a, 64, 1.0) == 0);
  nt_model_free(m);
}

/* A rank the others wait on that stopped publishing is where to look. */
static void a_silent_rank_that_others_wait_on_is_the_root(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  CHECK(apply(m, ring_rank(10, 0, 1, NT_WAIT_SEND_PEER, NT_WAIT_RECV_NET, 0), 1.0));
  CHECK(apply(m, ring_rank(11, 1, 1, NT_WAIT_NONE, NT_WAIT_NONE, 0), 1.0));
  /* Rank 1 goes silent; rank 0 keeps reporting its waits on rank 1. */
  CHECK(apply(m, ring_rank(10, 0, 2, NT_WAIT_SEND_PEER, NT_WAIT_RECV_NET, 9), 10.0));
  nt_model_tick(m, 10.0);
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.0);
  const nt_alert *root = alert_of(a, n, NT_ALERT_ROOT, 1);
  CHECK(root != NULL);
  CHECK(strstr(root->text, "stopped publishing") != NULL);
  CHECK(count_kind(a, n, NT_ALERT_SILENT) == 0); /* said once, as the root */
  nt_model_free(m);
}

static nt_snapshot *with_launches(uint32_t pid, int rank, uint64_t seq, uint64_t launched,
                                  uint64_t ar_launched) {
  nt_snapshot *s = ring_rank(pid, rank, seq, NT_WAIT_NONE, NT_WAIT_NONE, 0);
  if (!s) return NULL;
  s->channels[0].ops_done = s->channels[1].ops_done = 2;
  s->nseq = 3;
  s->seq_rows[0] = (nt_seq_row){.func = NT_FUNC_ALLGATHER, .launched = launched};
  s->seq_rows[1] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = ar_launched};
  s->seq_rows[2] = (nt_seq_row){.func = NT_FUNC_SEND, .launched = 1}; /* p2p: not compared */
  return s;
}

/* A rank late by more than the stall time (the others launched its next
 * operation that long ago) is a straggler; one that keeps pace a few
 * operations behind is not, and one that catches up starts over. */
static void a_rank_that_stays_behind_is_a_straggler(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  nt_alert a[16];
  double t = 1.0;
  /* Rank 1 stops launching at 50 AllGather and 7 AllReduce; the others go
   * on; rank 2 keeps pace, always 2 AllGather behind. */
  for (int k = 0; k < 4; k++, t += 1.0) {
    CHECK(apply(m, with_launches(20, 0, (uint64_t)k + 1, 50 + (uint64_t)k, 9), t));
    CHECK(apply(m, with_launches(21, 1, (uint64_t)k + 1, 50, 7), t));
    CHECK(apply(m, with_launches(22, 2, (uint64_t)k + 1, 48 + (uint64_t)k, 9), t));
    uint32_t n = nt_diag_alerts(test_diag(), m, 1500, a, 16, t);
    const nt_alert *s = alert_of(a, n, NT_ALERT_STRAGGLER, 1);
    if (k < 2) {
      CHECK(s == NULL); /* late 0 or 1 s: not yet */
    } else {
      CHECK(s != NULL); /* AllReduce: the others launched #8 at t = 1 */
    }
    if (k == 3) {
      CHECK_EQ_U64(s->count, 5); /* 3 AllGather + 2 AllReduce */
      CHECK(s->func == NT_FUNC_ALLREDUCE && s->age_s > 2.9 && s->age_s < 3.1);
      CHECK(strstr(s->text, "3 AllGather (50 of 53, 2.00s late)") != NULL);
      CHECK(strstr(s->text, "2 AllReduce (7 of 9, 3.00s late)") != NULL);
    }
    CHECK(alert_of(a, n, NT_ALERT_STRAGGLER, 2) == NULL); /* it keeps pace */
  }
  /* It catches up, then falls behind again: the clock starts over. */
  CHECK(apply(m, with_launches(21, 1, 5, 53, 9), t));
  CHECK(nt_diag_alerts(test_diag(), m, 1500, a, 16, t) == 0 ||
        alert_of(a, 16, NT_ALERT_STRAGGLER, 1) == NULL);
  CHECK(apply(m, with_launches(21, 1, 6, 53, 9), t + 1));
  CHECK(apply(m, with_launches(20, 0, 5, 53, 10), t + 1));
  uint32_t n = nt_diag_alerts(test_diag(), m, 1500, a, 16, t + 1);
  CHECK(alert_of(a, n, NT_ALERT_STRAGGLER, 1) == NULL);
  nt_model_free(m);
}

/* The diagnosis keeps its history itself (diag.h), never in the model: a
 * second nt_diag on the same model starts its own clock, and a diag given
 * another model forgets the first's. */
static void each_diagnosis_keeps_its_own_history(void) {
  nt_model *m = nt_model_new(), *other = nt_model_new();
  nt_diag *a = nt_diag_new(), *b = nt_diag_new();
  nt_alert al[16];
  bool ok = m && other && a && b;
  double t = 1.0;
  for (int k = 0; ok && k < 4; k++, t += 1.0) { /* rank 1 stops at 50 AllGather */
    ok = apply(m, with_launches(20, 0, (uint64_t)k + 1, 50 + (uint64_t)k, 9), t) &&
         apply(m, with_launches(21, 1, (uint64_t)k + 1, 50, 9), t);
    if (ok) (void)nt_diag_alerts(a, m, 1500, al, 16, t);
  }
  t -= 1.0;
  size_t bytes = ok ? nt_model_bytes(m) : 0;
  uint32_t gen = ok ? nt_model_generation(m) : 0;
  uint32_t na = ok ? nt_diag_alerts(a, m, 1500, al, 16, t) : 0;
  bool a_named = alert_of(al, na, NT_ALERT_STRAGGLER, 1) != NULL;
  uint32_t nb = ok ? nt_diag_alerts(b, m, 1500, al, 16, t) : 0;
  bool b_named = alert_of(al, nb, NT_ALERT_STRAGGLER, 1) != NULL;
  bool untouched = ok && nt_model_bytes(m) == bytes && nt_model_generation(m) == gen;
  /* the same ranks, first seen now, in another model: a's history is m's */
  ok = ok && apply(other, with_launches(20, 0, 1, 53, 9), t) &&
       apply(other, with_launches(21, 1, 1, 50, 9), t);
  uint32_t no = ok ? nt_diag_alerts(a, other, 1500, al, 16, t) : 0;
  bool other_named = alert_of(al, no, NT_ALERT_STRAGGLER, 1) != NULL;
  nt_diag_free(a);
  nt_diag_free(b);
  nt_model_free(m);
  nt_model_free(other);
  CHECK(ok);
  CHECK(a_named);      /* a watched rank 1 fall 3 s behind */
  CHECK(!b_named);     /* b sees it behind only now: not late yet */
  CHECK(untouched);    /* judging wrote nothing into the model */
  CHECK(!other_named); /* another model: a started over */
}

static void operations_in_flight_too_long_are_reported(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = ring_rank(30, 0, 1, NT_WAIT_NONE, NT_WAIT_NONE, 0);
  CHECK(m && s);
  s->channels[0].ops_done = s->channels[1].ops_done = 2;
  s->noplog = 2;
  s->oplog[0] = (nt_oplog_row){.kind = NT_OP_COLL,
                               .func = NT_FUNC_ALLREDUCE,
                               .seq = 41,
                               .algo = NT_ALGO_RING,
                               .proto = NT_PR_SIMPLE,
                               .bytes = 4 << 20,
                               .state = NT_OPS_IN_FLIGHT,
                               .age_ns = 12000000000ull,
                               .children = 8,
                               .children_open = 8};
  s->oplog[1] = s->oplog[0];
  s->oplog[1].seq = 42;
  s->oplog[1].age_ns = 100000000ull; /* young: not late */
  CHECK(apply(m, s, 1.0));
  nt_alert a[8];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 8, 1.5); /* the snapshot aged 0.5 s since */
  const nt_alert *h = alert_of(a, n, NT_ALERT_HUNG_OP, 0);
  CHECK(h && h->count == 1 && h->func == NT_FUNC_ALLREDUCE);
  CHECK(h->age_s > 12.4 && h->age_s < 12.6);
  CHECK(strstr(h->text, "AllReduce #41 (4.00MiB, RING/SIMPLE) in flight 12.5s, 8 of 8") != NULL);
  nt_model_free(m);
}

/* ---- environment and runs ---- */

/* A hello of process pid on host node<rank> (as ring_rank names it). */
static void hello(nt_model *m, uint32_t pid, int rank, int n, const char *const *kv, double now) {
  nt_hello h;
  memset(&h, 0, sizeof h);
  h.major = 1;
  snprintf(h.host, sizeof h.host, "node%d", rank);
  h.pid = pid;
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(kv[i], '=');
    snprintf(h.env[i].name, sizeof h.env[i].name, "%.*s", (int)(eq - kv[i]), kv[i]);
    snprintf(h.env[i].value, sizeof h.env[i].value, "%s", eq + 1);
  }
  h.nenv = (uint32_t)n;
  nt_model_apply_hello(m, "ep", 0, &h, now);
}

static void variables_that_differ_between_ranks_are_found(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  const char *a[] = {"NCCL_ALGO=Ring", "NCCL_PROTO=Simple"};
  const char *b[] = {"NCCL_ALGO=Ring"};
  const char *c[] = {"NCCL_ALGO=Ring", "NCCL_PROTO=LL", "NCCL_IB_HCA=\x1b[31m"};
  hello(m, 1, 0, 2, a, 1.0);
  hello(m, 2, 1, 1, b, 1.0);
  hello(m, 3, 2, 3, c, 1.0);
  nt_env_row r[8];
  uint32_t n = nt_model_env(m, r, 8, true);
  CHECK_EQ_U64(n, 3);
  /* Differing first: NCCL_IB_HCA (on 1 of 3), NCCL_PROTO (Simple, LL, unset). */
  CHECK(r[0].differs && r[1].differs && !r[2].differs);
  CHECK_STR(r[0].name, "NCCL_IB_HCA");
  CHECK_STR(r[0].value, ""); /* unset on most */
  CHECK_STR(r[1].name, "NCCL_PROTO");
  CHECK_EQ_U64(r[1].nvalues, 3);
  CHECK_EQ_U64(r[1].have, 2);
  CHECK_STR(r[2].name, "NCCL_ALGO");
  CHECK_STR(r[2].value, "Ring");
  CHECK(r[2].have == 3 && r[2].nvalues == 1);
  const nt_model_process *p3 = nt_model_process_at(m, 2);
  CHECK_STR(nt_model_env_of(p3, "NCCL_IB_HCA"), "\\x1B[31m"); /* escaped on arrival */
  CHECK(nt_model_env_of(p3, "NCCL_NOPE") == NULL);
  nt_model_free(m);
}

/* 1024 processes x 20 variables, one of them different on every 100th
 * process: one table, quickly (it compared every process with every other
 * for every variable: about 0.8 s in a release build). */
static void the_environment_table_scales_with_processes(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  static char kv[20][48];
  const char *p[20];
  for (int i = 0; i < 1024; i++) {
    for (int k = 0; k < 20; k++) {
      snprintf(kv[k], sizeof kv[k], "NCCL_VAR_%02d=%s", k, k == 7 && i % 100 == 0 ? "odd" : "v");
      p[k] = kv[k];
    }
    hello(m, 5000 + (uint32_t)i, i, 20, p, 1.0);
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  nt_env_row r[32];
  uint32_t n = nt_model_env(m, r, 32, true);
  nt_run_summary *cur = malloc(sizeof *cur);
  CHECK(cur && nt_model_run_summary(m, false, cur));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK_EQ_U64(n, 20);
  CHECK_STR(r[0].name, "NCCL_VAR_07");
  CHECK(r[0].differs && r[0].nvalues == 2 && r[0].have == 1024 && !strcmp(r[0].value, "v"));
  CHECK(!r[1].differs && r[1].nvalues == 1);
  CHECK(cur->nenv == 20);
  if (took > 0.1) fprintf(stderr, "    environment table: %.3f s\n", took);
  CHECK(took < 0.1); /* ASan, a loaded machine; about a millisecond in a release build */
  free(cur);
  nt_model_free(m);
}

/* Change one variable, restart, compare: the first run's summary outlives
 * its processes. */
static void a_restarted_job_is_compared_with_the_previous_run(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  const char *v1[] = {"NCCL_PROTO=Simple", "NCCL_ALGO=Ring"};
  hello(m, 100, 0, 2, v1, 1.0);
  nt_snapshot *s = with_ops(100, 0, 10, 4000000000ull);
  CHECK(s);
  s->final = 1; /* the job ends */
  CHECK(apply(m, s, 2.0));
  nt_model_tick(m, 2.0);
  nt_run_summary *cur = malloc(sizeof *cur), *prev = malloc(sizeof *prev);
  CHECK(cur && prev);
  CHECK(nt_model_run_summary(m, false, cur) && cur->id == 1);
  CHECK(!nt_model_run_summary(m, true, prev));
  /* Long after, its processes are dropped; then the next job starts. */
  nt_model_tick(m, 100.0);
  CHECK_EQ_U64(nt_model_nprocesses(m), 0);
  const char *v2[] = {"NCCL_PROTO=LL", "NCCL_ALGO=Ring"};
  hello(m, 200, 0, 2, v2, 101.0);
  CHECK(apply(m, with_ops(200, 0, 3, 1000000000ull), 101.0));
  CHECK(nt_model_run_summary(m, false, cur) && cur->id == 2);
  CHECK(nt_model_run_summary(m, true, prev) && prev->id == 1);
  CHECK(prev->nops == 1 && prev->ops[0].count == 10 && near(prev->ops[0].time_s, 4.0));
  bool saw = false;
  for (uint32_t i = 0; i < prev->nenv; i++)
    if (!strcmp(prev->env[i].name, "NCCL_PROTO")) saw = !strcmp(prev->env[i].value, "Simple");
  CHECK(saw);
  CHECK(cur->nops == 1 && cur->ops[0].count == 3);
  /* A process that joins while the run is alive belongs to it. */
  CHECK(apply(m, with_ops(201, 1, 1, 1), 102.0));
  CHECK(nt_model_run_summary(m, false, cur) && cur->id == 2 && cur->processes == 2);
  free(cur);
  free(prev);
  nt_model_free(m);
}

/* A killed job never sends its last snapshot: its processes go silent. A
 * job started after that is a new run at once, and the old processes'
 * ranks leave the rank list and the alerts (no "silent" line for a job
 * that is gone), while the process list keeps them until they are dropped. */
static void a_killed_job_is_replaced_at_once_by_its_restart(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  CHECK(apply(m, with_ops(100, 0, 10, 4000000000ull), 1.0));
  CHECK(apply(m, with_ops(101, 1, 10, 4000000000ull), 1.0));
  nt_model_tick(m, 10.0); /* both silent: killed */
  CHECK(apply(m, with_ops(200, 0, 3, 1000000000ull), 10.5));
  nt_model_tick(m, 10.5);
  nt_run_summary *cur = malloc(sizeof *cur);
  CHECK(cur && nt_model_run_summary(m, false, cur) && cur->id == 2 && cur->processes == 1);
  free(cur);
  nt_model_rank r[8];
  uint32_t n = nt_model_ranks(m, r, 8);
  CHECK(n == 1 && r[0].proc->pid == 200);
  CHECK_EQ_U64(nt_model_nprocesses(m), 3);
  nt_alert a[16];
  uint32_t na = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.5);
  for (uint32_t i = 0; i < na; i++) CHECK(a[i].kind != NT_ALERT_SILENT);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(bus_bandwidth_matches_nccl_tests_for_every_function);
  TEST_RUN(sizes_and_buckets_read_like_people_write_them);
  TEST_RUN(statistics_add_up_over_ranks_and_phases);
  TEST_RUN(phase_busy_time_says_when_communicators_overlap);
  TEST_RUN(bandwidths_without_a_rank_count_are_unknown_not_zero);
  TEST_RUN(a_stalled_ring_names_the_rank_its_waits_end_at);
  TEST_RUN(a_silent_rank_that_others_wait_on_is_the_root);
  TEST_RUN(a_rank_that_stays_behind_is_a_straggler);
  TEST_RUN(each_diagnosis_keeps_its_own_history);
  TEST_RUN(operations_in_flight_too_long_are_reported);
  TEST_RUN(variables_that_differ_between_ranks_are_found);
  TEST_RUN(the_environment_table_scales_with_processes);
  TEST_RUN(a_restarted_job_is_compared_with_the_previous_run);
  TEST_RUN(a_killed_job_is_replaced_at_once_by_its_restart);
  return TEST_DONE();
}

/* The diagnosis on built models (PROTOCOL 1.2 run states): queued work
 * (CPU run-ahead) never alarms, a stalled rank is the one root at 8, 256 and
 * 8192 ranks, a stopped (silent) rank is the root and no healthy rank is, a
 * cycle of ranks waiting on each other is one root, communicators with hash
 * 0 (NCCL 2.26 before the first operation) are never compared across
 * processes, and the alert cap never drops the root. */
#include <time.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/core/model.h"

#define HASH 0xc0ffee0000000100ull
#define S    1000000000ull /* ns per second */

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One snapshot reused for every process: header and communicators. */
static void head(nt_snapshot *s, uint32_t pid, uint64_t seq) {
  snprintf(s->host, sizeof s->host, "n%u", pid / 8);
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = seq * 100000000ull;
  s->interval_ms = 100;
  s->ncomms = 0;
  s->nchannels = 0;
  s->noplog = 0;
  s->nseq = 0;
}

static uint16_t comm(nt_snapshot *s, uint64_t hash, int rank, int nranks) {
  s->comms[s->ncomms] = (nt_comm_row){.comm_hash = hash, .rank = rank, .nranks = nranks};
  return (uint16_t)s->ncomms++;
}

/* A channel row with one op in flight (run state `run`), its step in
 * `wait`, no progress for age_s. */
static void chan(nt_snapshot *s, uint16_t ci, int dir, int peer, int wait, int run, double age_s) {
  s->channels[s->nchannels++] = (nt_channel_row){.comm_index = ci,
                                                 .channel = 0,
                                                 .dir = (uint8_t)dir,
                                                 .peer = peer,
                                                 .ops_started = 5,
                                                 .ops_done = 4,
                                                 .cur_step = 2,
                                                 .cur_wait = (uint8_t)wait,
                                                 .progress_age_ns = (uint64_t)(age_s * 1e9),
                                                 .run_state = (uint8_t)run,
                                                 .relay_rank = -1};
}

static void op(nt_snapshot *s, uint16_t ci, int run, uint8_t flags, double age_s,
               double progress_s) {
  s->oplog[s->noplog++] = (nt_oplog_row){.comm_index = ci,
                                         .kind = NT_OP_COLL,
                                         .func = NT_FUNC_ALLREDUCE,
                                         .seq = 7,
                                         .state = NT_OPS_IN_FLIGHT,
                                         .age_ns = (uint64_t)(age_s * 1e9),
                                         .children = 2,
                                         .children_open = 2,
                                         .run_state = (uint8_t)run,
                                         .flags = flags,
                                         .progress_age_ns = (uint64_t)(progress_s * 1e9)};
}

static bool put(nt_model *m, const nt_snapshot *s, double now) {
  return nt_model_apply_snapshot(m, "ep", 0, s, now) == 0;
}

/* Through one of several relay endpoints: one introduces at most
 * NT_MODEL_MAX_PER_CONNECT processes. */
static bool put_via(nt_model *m, int relay, const nt_snapshot *s, double now) {
  char ep[32];
  snprintf(ep, sizeof ep, "relay%d", relay);
  return nt_model_apply_snapshot(m, ep, 0, s, now) == 0;
}

static uint32_t count_kind(const nt_alert *a, uint32_t n, int kind) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < n; i++) c += a[i].kind == kind;
  return c;
}

/* Rank r of an n-rank ring in communicator ci, as --stall-rank freezes
 * it: the stalled rank's receives wait for its GPU (running), its sends
 * for its GPU (queued); its predecessor's sends wait for credit from it
 * (running); every other channel is queued, receives waiting on their
 * predecessor. age_s: since the freeze. */
static void ring_frozen(nt_snapshot *s, uint16_t ci, int r, int n, int stalled, double age_s) {
  int pred = (r + n - 1) % n, succ = (r + 1) % n;
  if (r == stalled) {
    chan(s, ci, NT_DIR_SEND, succ, NT_WAIT_SEND_GPU, NT_RUN_QUEUED, age_s);
    chan(s, ci, NT_DIR_RECV, pred, NT_WAIT_RECV_GPU, NT_RUN_RUNNING, age_s);
  } else if (succ == stalled) {
    chan(s, ci, NT_DIR_SEND, succ, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, age_s);
    chan(s, ci, NT_DIR_RECV, pred, NT_WAIT_RECV_NET, NT_RUN_QUEUED, age_s);
  } else {
    chan(s, ci, NT_DIR_SEND, succ, NT_WAIT_SEND_GPU, NT_RUN_QUEUED, age_s);
    chan(s, ci, NT_DIR_RECV, pred, NT_WAIT_RECV_NET, NT_RUN_QUEUED, age_s);
  }
}

/* ---- run-ahead ---- */

/* Every channel and operation queued for 10 s (the GPU computes while the
 * CPU enqueued ahead): nothing alarms. */
static void run_ahead_raises_no_alert(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  for (int r = 0; r < 4; r++) {
    head(s, 100 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, 4);
    chan(s, ci, NT_DIR_SEND, (r + 1) % 4, NT_WAIT_SEND_GPU, NT_RUN_QUEUED, 10);
    chan(s, ci, NT_DIR_RECV, (r + 3) % 4, NT_WAIT_RECV_NET, NT_RUN_QUEUED, 10);
    op(s, ci, NT_RUN_QUEUED, 0, 10, 10);
    CHECK(put(m, s, 1.0));
  }
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 1.0);
  for (uint32_t i = 0; i < n; i++) fprintf(stderr, "    unexpected: %s\n", a[i].text);
  CHECK_EQ_U64(n, 0);
  /* Nor in the channels' own flag. */
  CHECK(!nt_model_channel_stalled(&nt_model_process_at(m, 0)->cur->channels[0], 2000));
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* Operations that never hang: queued, never reported done, relayed; one
 * running whose children progress recently is not hung either. */
static void only_running_operations_without_progress_hang(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 10, 1);
  uint16_t ci = comm(s, HASH, 0, 2);
  op(s, ci, NT_RUN_QUEUED, 0, 30, 30);
  op(s, ci, NT_RUN_RUNNING, NT_OPF_UNREPORTED, 30, 30);
  op(s, ci, NT_RUN_RUNNING, NT_OPF_RELAYED, 30, 30);
  op(s, ci, NT_RUN_RUNNING, 0, 30, 0.1);
  CHECK(put(m, s, 1.0));
  nt_alert a[8];
  CHECK_EQ_U64(nt_diag_alerts(test_diag(), m, 2000, a, 8, 1.0), 0);
  s->seq = 2;
  op(s, ci, NT_RUN_RUNNING, 0, 30, 5); /* this one stopped progressing */
  CHECK(put(m, s, 2.0));
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 8, 2.0);
  CHECK(n == 1 && a[0].kind == NT_ALERT_HUNG_OP && a[0].count == 1);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* ---- a stalled rank ---- */

/* An n-rank ring, `per` consecutive ranks in each process (one process
 * per GPU, or one driving several), frozen at `stalled`. */
static nt_model *frozen_job(int n, int per, int stalled) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  if (!m || !s) {
    nt_snapshot_free(s);
    nt_model_free(m);
    return NULL;
  }
  bool ok = true;
  for (int p = 0; p < n / per && ok; p++) {
    head(s, 1000 + (uint32_t)p, 1);
    for (int k = 0; k < per; k++) {
      int r = p * per + k;
      ring_frozen(s, comm(s, HASH, r, n), r, n, stalled, 6);
    }
    ok = put_via(m, p / 1024, s, 1.0);
  }
  nt_snapshot_free(s);
  if (!ok) {
    nt_model_free(m);
    return NULL;
  }
  return m;
}

static void stalled_rank_is_the_only_root_at(int ranks, int per, int stalled) {
  nt_model *m = frozen_job(ranks, per, stalled);
  CHECK(m != NULL);
  if (!m) return;
  nt_alert a[64];
  double t0 = mono();
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 64, 1.0);
  double took = mono() - t0;
  CHECK(n >= 1 && a[0].kind == NT_ALERT_ROOT && a[0].rank == stalled && a[0].comm_hash == HASH);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 1);
  CHECK_EQ_U64(a[0].count, (uint64_t)ranks - 1); /* everyone waits on it, directly or not */
  CHECK(a[0].wait == NT_WAIT_RECV_GPU);
  /* Stuck: the stalled rank (its GPU) and its predecessor (credit); the
   * queued ranks are not stalls. */
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_STALL), 2);
  if (took > 2.0 || n < 1 || a[0].rank != stalled)
    fprintf(stderr, "    %d ranks: %.3f s, first: %s\n", ranks, took, n ? a[0].text : "none");
  CHECK(took < 2.0); /* under ASan on a loaded machine; ms in a release build */
  nt_model_free(m);
}

static void stalled_rank_is_the_only_root_at_8_256_and_8192_ranks(void) {
  stalled_rank_is_the_only_root_at(8, 1, 3);
  stalled_rank_is_the_only_root_at(256, 1, 200);
  stalled_rank_is_the_only_root_at(8192, 2, 77); /* 4096 processes (the most) x 2 ranks */
}

/* 160 ranks, all stuck, the alert list capped at 8: the root comes first,
 * the stalls in one line. */
static void with_many_stalled_ranks_the_cap_keeps_the_root_first(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  const int n = 160, stalled = 77;
  for (int r = 0; r < n; r++) {
    head(s, 2000 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, n);
    int pred = (r + n - 1) % n, succ = (r + 1) % n;
    if (r == stalled) {
      chan(s, ci, NT_DIR_RECV, pred, NT_WAIT_RECV_GPU, NT_RUN_RUNNING, 6);
    } else {
      chan(s, ci, NT_DIR_RECV, pred, NT_WAIT_RECV_NET, NT_RUN_RUNNING, 6);
      if (succ == stalled) chan(s, ci, NT_DIR_SEND, succ, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, 6);
    }
    op(s, ci, NT_RUN_RUNNING, 0, 6, 6);
    CHECK(put(m, s, 1.0));
  }
  nt_alert a[8];
  uint32_t got = nt_diag_alerts(test_diag(), m, 2000, a, 8, 1.0);
  CHECK(got >= 3);
  CHECK(a[0].kind == NT_ALERT_ROOT && a[0].rank == stalled && a[0].count == (uint32_t)n - 1);
  CHECK_EQ_U64(count_kind(a, got, NT_ALERT_ROOT), 1);
  /* Then what explains it (its own stall), then one line for the 159. */
  const nt_alert *summary = NULL;
  for (uint32_t i = 0; i < got; i++)
    if (a[i].kind == NT_ALERT_STALL && a[i].rank == -1) summary = &a[i];
  CHECK(summary && summary->count == (uint32_t)n - 1 && summary->peer == stalled);
  CHECK(summary && strstr(summary->text, "159 ranks stalled") &&
        strstr(summary->text, "all waiting (directly or not) on rank 77"));
  CHECK(count_kind(a, got, NT_ALERT_HUNG_OP) == 1); /* collapsed too */
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* ---- a stopped (silent) rank ---- */

/* Rank 1 of 4 stops (SIGSTOP): its last snapshot looked fine. The others
 * wait on it; rank 3's receive, with no step in progress, is stuck too: it
 * is no root (it waits on rank 2, which waits on rank 1). */
static void a_stopped_rank_is_the_root_and_no_healthy_rank_is(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 301, 1);
  uint16_t ci = comm(s, HASH, 1, 4);
  chan(s, ci, NT_DIR_SEND, 2, NT_WAIT_SEND_NET, NT_RUN_RUNNING, 0.01);
  CHECK(put(m, s, 1.0));
  head(s, 300, 1);
  ci = comm(s, HASH, 0, 4);
  chan(s, ci, NT_DIR_SEND, 1, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, 8);
  CHECK(put(m, s, 10.0));
  head(s, 302, 1);
  ci = comm(s, HASH, 2, 4);
  chan(s, ci, NT_DIR_RECV, 1, NT_WAIT_RECV_NET, NT_RUN_RUNNING, 8);
  CHECK(put(m, s, 10.0));
  head(s, 303, 1);
  ci = comm(s, HASH, 3, 4);
  chan(s, ci, NT_DIR_RECV, 2, NT_WAIT_NONE, NT_RUN_RUNNING, 8);
  CHECK(put(m, s, 10.0));
  nt_model_tick(m, 10.0);
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.0);
  CHECK(n >= 1 && a[0].kind == NT_ALERT_ROOT && a[0].rank == 1);
  CHECK(n >= 1 && strstr(a[0].text, "stopped publishing"));
  CHECK_EQ_U64(a[0].count, 3);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 1);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_SILENT), 0); /* said once, as the root */
  for (uint32_t i = 0; i < n; i++)
    if (a[i].kind == NT_ALERT_ROOT && a[i].rank != 1) fprintf(stderr, "    %s\n", a[i].text);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* The same stop while the others are merely queued (an operation starts
 * only when every rank has enqueued it): the silent rank is the root, and
 * no queued rank is a stall. */
static void a_stopped_rank_that_others_queue_behind_is_the_root(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 401, 1);
  comm(s, HASH, 1, 4);
  CHECK(put(m, s, 1.0));
  for (int r = 0; r < 4; r++) {
    if (r == 1) continue;
    head(s, 400 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, 4);
    chan(s, ci, NT_DIR_SEND, (r + 1) % 4, NT_WAIT_SEND_GPU, NT_RUN_QUEUED, 8);
    op(s, ci, NT_RUN_QUEUED, 0, 8, 8);
    CHECK(put(m, s, 10.0));
  }
  nt_model_tick(m, 10.0);
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.0);
  CHECK(n == 1 && a[0].kind == NT_ALERT_ROOT && a[0].rank == 1 && a[0].count == 3);
  /* Before the others' work is old, the stop is only a silent publisher. */
  n = nt_diag_alerts(test_diag(), m, 9000, a, 16, 10.0);
  CHECK(n == 1 && a[0].kind == NT_ALERT_SILENT);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* Run-ahead (work queued 10 s) while one publisher is merely late (silent
 * 1.5 s): the work predates its silence, so it is no root, only silent. */
static void a_late_publisher_during_run_ahead_is_no_root(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  for (int r = 0; r < 4; r++) {
    head(s, 450 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, 4);
    chan(s, ci, NT_DIR_SEND, (r + 1) % 4, NT_WAIT_SEND_GPU, NT_RUN_QUEUED, 10);
    op(s, ci, NT_RUN_QUEUED, 0, 10, 10);
    CHECK(put(m, s, r == 1 ? 8.5 : 10.0));
  }
  nt_model_tick(m, 10.0);
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.0);
  CHECK(n == 1 && a[0].kind == NT_ALERT_SILENT);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* ---- a cycle ---- */

/* Ranks 0, 1 and 2 each wait for credit from the next: a cycle nobody else
 * holds up; rank 3 waits on rank 2. One root alert names the cycle. */
static void a_cycle_of_waits_is_one_root(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  for (int r = 0; r < 4; r++) {
    head(s, 500 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, 4);
    if (r < 3)
      chan(s, ci, NT_DIR_SEND, (r + 1) % 3, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, 5);
    else
      chan(s, ci, NT_DIR_RECV, 2, NT_WAIT_RECV_NET, NT_RUN_RUNNING, 5);
    CHECK(put(m, s, 1.0));
  }
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 1.0);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 1);
  CHECK(n && a[0].kind == NT_ALERT_ROOT && a[0].count == 1);
  CHECK(n && strstr(a[0].text, "ranks 0, 1, 2") && strstr(a[0].text, "cycle"));
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* Rank 2 froze a moment ago, just after a late rank 1 arrived: its last
 * report still shows it waiting on rank 3 for a step that had progressed
 * a moment before (not stalled), while ranks 0, 1 and 3 are stalled
 * waiting along the ring. The waits loop through rank 2 only by its old
 * news: no cycle of 4 is named (real NCCL, 2.28.9: one frame said "ranks
 * 0, 1, 2, 3 wait on each other"); rank 2 is the root. */
static void a_cycle_through_a_rank_not_stalled_is_no_cycle(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  for (int r = 0; r < 4; r++) {
    head(s, 600 + (uint32_t)r, 1);
    uint16_t ci = comm(s, HASH, r, 4);
    chan(s, ci, NT_DIR_SEND, (r + 1) % 4, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, r == 2 ? 0.2 : 5);
    CHECK(put(m, s, 1.0));
  }
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 1.0);
  bool cycle = false;
  for (uint32_t i = 0; i < n; i++) cycle |= strstr(a[i].text, "wait on each other") != NULL;
  if (n) fprintf(stderr, "    first alert: %s\n", a[0].text);
  CHECK(!cycle);
  CHECK(n && a[0].kind == NT_ALERT_ROOT && a[0].rank == 2);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* A 4-rank ring's stall ends when the late rank arrives: rank 3's report,
 * newer than the others', already shows its work progressing (a send
 * waiting on its own GPU 10 ms), while ranks 0, 1 and 2 still show their
 * 3 s waits, two of them on rank 3. That is old news, not rank 3 holding
 * them up: no root until they report again (real NCCL 2.28.9 played on a
 * loaded machine named rank 3 "where the waits end" for a frame). If
 * their next reports still wait on rank 3, it is the root; if they
 * progress, nothing is said. */
static void ring_wait_on_rank_3(nt_snapshot *s, int r, uint64_t seq, double age_s) {
  head(s, 700 + (uint32_t)r, seq);
  uint16_t ci = comm(s, HASH, r, 4);
  if (r == 3) {
    chan(s, ci, NT_DIR_SEND, 0, NT_WAIT_SEND_GPU, NT_RUN_RUNNING, 0.01);
    return;
  }
  int peer = r == 0 ? 3 : r == 1 ? 0 : 3;
  chan(s, ci, r == 2 ? NT_DIR_SEND : NT_DIR_RECV, peer,
       r == 2 ? NT_WAIT_SEND_PEER : NT_WAIT_RECV_NET, NT_RUN_RUNNING, age_s);
}

static void a_stall_that_just_ended_names_no_root_until_the_waiters_report(void) {
  for (int still_waiting = 0; still_waiting < 2; still_waiting++) {
    nt_model *m = nt_model_new();
    nt_snapshot *s = nt_snapshot_new();
    CHECK(m && s);
    if (!m || !s) return;
    for (int r = 0; r < 3; r++) {
      ring_wait_on_rank_3(s, r, 1, 3);
      CHECK(put(m, s, 10.0));
    }
    ring_wait_on_rank_3(s, 3, 1, 0);
    CHECK(put(m, s, 10.05));
    nt_alert a[16];
    uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.05);
    for (uint32_t i = 0; i < n; i++)
      if (a[i].kind == NT_ALERT_ROOT) fprintf(stderr, "    too early: %s\n", a[i].text);
    CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 0);
    CHECK(n > 0); /* the waits themselves are still said */
    for (int r = 0; r < 3; r++) {
      if (still_waiting)
        ring_wait_on_rank_3(s, r, 2, 3.1);
      else {
        head(s, 700 + (uint32_t)r, 2);
        comm(s, HASH, r, 4); /* done: nothing in flight */
      }
      CHECK(put(m, s, 10.1));
    }
    n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 10.1);
    if (still_waiting) {
      CHECK(n && a[0].kind == NT_ALERT_ROOT && a[0].rank == 3 && a[0].count == 3);
      CHECK(n && strstr(a[0].text, "its work progresses"));
    } else {
      for (uint32_t i = 0; i < n; i++) fprintf(stderr, "    unexpected: %s\n", a[i].text);
      CHECK_EQ_U64(n, 0);
    }
    nt_snapshot_free(s);
    nt_model_free(m);
  }
}

/* The stalls and stuck operations of the ranks that wait on a root are
 * its consequences: each says which root it follows from (under), after
 * everything else, so the report has one line for the cause (real NCCL,
 * 2.28.9: 10+ lines a frame for one late rank at 4 ranks). Rank 1 stops;
 * ranks 0, 2 and 3 are stalled with an operation running, no progress. */
static void consequences_fold_under_their_root(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 701, 1);
  uint16_t ci = comm(s, HASH, 1, 4);
  chan(s, ci, NT_DIR_SEND, 2, NT_WAIT_SEND_NET, NT_RUN_RUNNING, 0.01);
  CHECK(put(m, s, 1.0));
  for (int r = 0; r < 4; r++) {
    if (r == 1) continue;
    head(s, 700 + (uint32_t)r, 1);
    ci = comm(s, HASH, r, 4);
    if (r == 0) chan(s, ci, NT_DIR_SEND, 1, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, 8);
    if (r == 2) chan(s, ci, NT_DIR_RECV, 1, NT_WAIT_RECV_NET, NT_RUN_RUNNING, 8);
    if (r == 3) chan(s, ci, NT_DIR_RECV, 2, NT_WAIT_NONE, NT_RUN_RUNNING, 8);
    op(s, ci, NT_RUN_RUNNING, 0, 8, 8);
    CHECK(put(m, s, 10.0));
  }
  nt_model_tick(m, 10.0);
  nt_alert a[32];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 32, 10.0);
  CHECK(n >= 1 && a[0].kind == NT_ALERT_ROOT && a[0].rank == 1 && a[0].under == -1);
  uint32_t top = 0, folded = 0, stalls = 0, hung = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (a[i].under < 0) {
      top++;
      fprintf(stderr, "    %s\n", a[i].text);
      continue;
    }
    folded++;
    CHECK(a[i].under == 0); /* the root's place */
    CHECK(a[i].rank != 1);
    stalls += a[i].kind == NT_ALERT_STALL;
    hung += a[i].kind == NT_ALERT_HUNG_OP;
    if (folded > 1) CHECK(a[i - 1].under >= 0); /* together, after the rest */
  }
  CHECK_EQ_U64(top, 1);    /* the root stands for them all */
  CHECK_EQ_U64(stalls, 3); /* ranks 0, 2, 3 */
  CHECK_EQ_U64(hung, 3);   /* and their operations */
  CHECK_EQ_U64(folded, n - 1);
  /* Capped below them: the root stays, its consequences go first. */
  uint32_t n2 = nt_diag_alerts(test_diag(), m, 2000, a, 2, 10.0);
  CHECK(n2 == 2 && a[0].kind == NT_ALERT_ROOT && a[1].under == 0);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* Two roots in two communicators: each consequence points at its own. */
static void each_consequence_points_at_its_own_root(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  for (int k = 0; k < 2; k++) {
    uint64_t hash = HASH + (uint64_t)k;
    for (int r = 0; r < 4; r++) {
      head(s, 800 + 10 * (uint32_t)k + (uint32_t)r, 1);
      uint16_t ci = comm(s, hash, r, 4);
      /* ring_frozen: rank k+1 stalled in its GPU, its predecessor waits
       * on it for credit (k = 1 has a second waiter through rank 3). */
      ring_frozen(s, ci, r, 4, k + 1, 6);
      op(s, ci, NT_RUN_RUNNING, 0, 6, 6);
      CHECK(put(m, s, 1.0));
    }
  }
  nt_alert a[32];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 32, 1.0);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 2);
  uint32_t folded = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (a[i].under < 0) continue;
    folded++;
    const nt_alert *root = &a[a[i].under];
    CHECK(root->kind == NT_ALERT_ROOT && root->comm_hash == a[i].comm_hash);
    if (a[i].kind == NT_ALERT_STALL && a[i].rank >= 0) CHECK(a[i].peer == root->rank);
  }
  CHECK(folded >= 2); /* each predecessor's stall */
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* ---- PXN ---- */

/* Rank 0's GPU stops. Its sends run in rank 1's proxy (PXN, a relay row
 * for rank 0 there), stuck in send_gpu_wait: rank 0's GPU, not rank 1's.
 * The root is rank 0 alone. */
static void a_relay_rows_gpu_wait_is_the_relayed_ranks(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 700, 1);
  uint16_t ci = comm(s, HASH, 0, 2);
  chan(s, ci, NT_DIR_RECV, 1, NT_WAIT_RECV_GPU, NT_RUN_RUNNING, 5);
  CHECK(put(m, s, 1.0));
  head(s, 701, 1);
  ci = comm(s, HASH, 1, 2);
  chan(s, ci, NT_DIR_SEND, 1, NT_WAIT_SEND_GPU, NT_RUN_RUNNING, 5);
  s->channels[0].relay_rank = 0;
  CHECK(put(m, s, 1.0));
  nt_alert a[16];
  uint32_t n = nt_diag_alerts(test_diag(), m, 2000, a, 16, 1.0);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_ROOT), 1);
  CHECK(n && a[0].kind == NT_ALERT_ROOT && a[0].rank == 0 && a[0].count == 1);
  nt_snapshot_free(s);
  nt_model_free(m);
}

/* ---- communicators with hash 0 ---- */

/* NCCL 2.26: hash 0 until the first operation. Two processes' unrelated
 * communicators both read hash 0: rank 0 of one must not be found waiting
 * on rank 1 of the other, and their launch counts are not compared. */
static void hash_zero_communicators_are_never_compared(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  CHECK(m && s);
  head(s, 600, 1);
  uint16_t ci = comm(s, 0, 0, 2);
  chan(s, ci, NT_DIR_SEND, 1, NT_WAIT_SEND_PEER, NT_RUN_RUNNING, 5);
  s->nseq = 1;
  s->seq_rows[0] = (nt_seq_row){.comm_index = ci, .func = NT_FUNC_ALLREDUCE, .launched = 90};
  CHECK(put(m, s, 1.0));
  head(s, 601, 1);
  ci = comm(s, 0, 1, 2);
  chan(s, ci, NT_DIR_RECV, 0, NT_WAIT_RECV_GPU, NT_RUN_RUNNING, 5);
  s->nseq = 1;
  s->seq_rows[0] = (nt_seq_row){.comm_index = ci, .func = NT_FUNC_ALLREDUCE, .launched = 2};
  CHECK(put(m, s, 1.0));
  nt_alert a[16];
  uint32_t n = 0;
  for (double t = 1.0; t < 6.0; t += 1.0) n = nt_diag_alerts(test_diag(), m, 2000, a, 16, t);
  CHECK_EQ_U64(count_kind(a, n, NT_ALERT_STRAGGLER), 0);
  for (uint32_t i = 0; i < n; i++)
    if (a[i].kind == NT_ALERT_ROOT) {
      CHECK_EQ_U64(a[i].count, 0); /* nobody found waiting on either */
      if (a[i].rank == 0) CHECK(strstr(a[i].text, "does not see") != NULL);
    }
  nt_snapshot_free(s);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(run_ahead_raises_no_alert);
  TEST_RUN(only_running_operations_without_progress_hang);
  TEST_RUN(stalled_rank_is_the_only_root_at_8_256_and_8192_ranks);
  TEST_RUN(with_many_stalled_ranks_the_cap_keeps_the_root_first);
  TEST_RUN(a_stopped_rank_is_the_root_and_no_healthy_rank_is);
  TEST_RUN(a_stopped_rank_that_others_queue_behind_is_the_root);
  TEST_RUN(a_late_publisher_during_run_ahead_is_no_root);
  TEST_RUN(a_cycle_of_waits_is_one_root);
  TEST_RUN(a_cycle_through_a_rank_not_stalled_is_no_cycle);
  TEST_RUN(a_stall_that_just_ended_names_no_root_until_the_waiters_report);
  TEST_RUN(consequences_fold_under_their_root);
  TEST_RUN(each_consequence_points_at_its_own_root);
  TEST_RUN(a_relay_rows_gpu_wait_is_the_relayed_ranks);
  TEST_RUN(hash_zero_communicators_are_never_compared);
  return TEST_DONE();
}

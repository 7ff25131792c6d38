/* The real plugin through its ABI: ProxyOps NCCL never stops (CollNet and
 * CE-memcpy ops, docs/NCCL-BEHAVIOUR.md P2), ops of an aborted
 * communicator, and KernelCh done right (K2 batch timestamps, K3 missing
 * children and stale handles). Times come from a virtual clock. */
#include <errno.h>
#include <pthread.h>

#include "testlib.h"
#include "plugin_harness.h"

#define HASH             0xfeedfacecafe0002ull
#define NT_TEST_GRACE_NS 1500000000ull /* past NT_STEPLESS_GRACE_MS */

static ph_t H;

static void *setup(void) {
  return ph_setup(&H, HASH, 0, 8);
}

static void *coll(void *ctx, uint64_t seq, const char *algo, uint8_t nchannels) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.coll.func = "AllReduce";
  d.coll.seqNumber = seq;
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = algo;
  d.coll.proto = "SIMPLE";
  d.coll.nChannels = nchannels;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

/* A net op of `parent` with one step that runs and stops. */
static bool net_op(void *ctx, void *parent, int channel, int is_send) {
  void *op = NULL, *st = NULL;
  nt_descr_v5 d = ph_op(channel, 1, is_send, parent);
  H.v5->startEvent(ctx, &op, &d);
  if (!op) return false;
  d = ph_step(op, 0);
  H.v5->startEvent(ctx, &st, &d);
  nt_state_args_v5 a = {.proxyStep = {.transSize = 100}};
  H.v5->recordEventState(st, is_send ? NT_ST_STEP_SEND_WAIT : NT_ST_STEP_RECV_FLUSH_WAIT, &a);
  H.v5->stopEvent(st);
  H.v5->stopEvent(op);
  return true;
}

static const nt_op_row *op_row(const nt_snapshot *s, int algo) {
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].algo == algo) return &s->ops[i];
  return NULL;
}

static uint32_t in_flight(const nt_snapshot *s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->noplog; i++) n += s->oplog[i].state == NT_OPS_IN_FLIGHT;
  return n;
}

/* The newest snapshot without a flush (a flush retires everything): what the
 * periodic sweeps have done. */
static int unforced_latest(ph_t *h, int wait_ms) {
  struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if (ph_next_snapshot(h, 3000) != 0) return -1;
  while (ph_next_snapshot(h, 2) == 0) { /* the queued ones, not those still to come */
  }
  return 0;
}

/* 600 CollNet AllReduces, two never-stopped ops each (the old pool: 1200
 * slots taken for 60 s), then 300 ring AllReduces whose ops step and stop:
 * every ring op gets a slot, and the CollNet ones end counted, not in
 * flight, without a duration. */
static void case_collnet_ops_take_no_slot(void) {
  setenv("NCCLTOP_INTERVAL_MS", "20", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  enum { NC = 600, NR = 300 };
  for (int i = 0; i < NC; i++) {
    void *k = coll(ctx, (uint64_t)i, i % 2 ? "COLLNET_CHAIN" : "COLLNET_DIRECT", 2);
    CHECK(k != NULL);
    for (int ch = 0; ch < 2; ch++)
      for (int s = 0; s < 2; s++) { /* isSend 0 both ways, peer nRanks */
        void *op = (void *)1;
        nt_descr_v5 d = ph_op(ch, 8, 0, k);
        H.v5->startEvent(ctx, &op, &d);
        CHECK(op == NULL);
      }
    H.v5->stopEvent(k);
  }
  int kept = 0;
  for (int i = 0; i < NR; i++) {
    void *k = coll(ctx, (uint64_t)(NC + i), "RING", 2);
    for (int ch = 0; ch < 2; ch++) kept += net_op(ctx, k, ch, 1) + net_op(ctx, k, ch, 0);
    H.v5->stopEvent(k);
  }
  CHECK_EQ_U64(kept, 4 * NR);
  CHECK(unforced_latest(&H, 400) == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 0);
  CHECK_EQ_U64(in_flight(H.snap), 0);
  const nt_op_row *cn = op_row(H.snap, NT_ALGO_COLLNET_DIRECT);
  const nt_op_row *cc = op_row(H.snap, NT_ALGO_COLLNET_CHAIN);
  const nt_op_row *ring = op_row(H.snap, NT_ALGO_RING);
  CHECK(cn && cc && ring);
  if (!cn || !cc || !ring) return;
  CHECK_EQ_U64(cn->count + cc->count, NC);
  CHECK_EQ_U64(cn->done + cc->done, 0); /* completion not reported: no duration */
  CHECK_EQ_U64(ring->count, NR);
  CHECK_EQ_U64(ring->done, NR);
  uint64_t steps = 0, open = 0;
  for (uint32_t i = 0; i < H.snap->nchannels; i++) {
    const nt_channel_row *r = &H.snap->channels[i];
    CHECK(r->peer != 8); /* no row for the CollNet peer */
    steps += r->steps;
    open += r->ops_started - r->ops_done;
  }
  CHECK_EQ_U64(steps, 4 * NR);
  CHECK_EQ_U64(open, 0);
  /* (The log keeps the newest 256: the ring ones; test_ops_as_called sees
   * flagged ones.) */
  for (uint32_t i = 0; i < H.snap->noplog; i++) {
    const nt_oplog_row *o = &H.snap->oplog[i];
    bool collnet = o->algo == NT_ALGO_COLLNET_DIRECT || o->algo == NT_ALGO_COLLNET_CHAIN;
    if (collnet) {
      CHECK_EQ_U64(o->state, NT_OPS_DONE);
      CHECK_EQ_U64(o->timing, NT_TIMING_NONE);
      CHECK(o->run_state == NT_RUN_IDLE);
    }
    /* Protocol 1.2 says which ones NCCL never reported the end of. */
    CHECK(((o->flags & NT_OPF_UNREPORTED) != 0) == collnet);
  }
}

/* With kernelch, a CollNet AllReduce gets its GPU time from its KernelCh
 * children. */
static void case_collnet_with_kernelch_is_timed(void) {
  setenv("NCCLTOP_EVENTS", "default,kernelch", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *k = coll(ctx, 0, "COLLNET_DIRECT", 2);
  void *op = (void *)1;
  nt_descr_v5 d = ph_op(0, 8, 0, k);
  H.v5->startEvent(ctx, &op, &d);
  CHECK(op == NULL);
  H.v5->stopEvent(k);
  for (int ch = 0; ch < 2; ch++)
    CHECK(ph_kernel_ch(&H, ctx, k, ch, 1000, 1000 + 500 * (uint64_t)(ch + 1)) != NULL);
  CHECK(ph_latest(&H) == 0);
  const nt_op_row *r = op_row(H.snap, NT_ALGO_COLLNET_DIRECT);
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->count, 1);
  CHECK_EQ_U64(r->gpu_done, 1);
  CHECK_EQ_U64(r->time_ns, 1000);
}

/* Ops that never step (CE-memcpy p2p ops: no algorithm tells them) and ops
 * of a communicator that was finalized mid-operation (aborted) fill the
 * pool; new ops still get slots: the stepless ones once their grace is
 * over, the dead communicator's at once. */
static void case_dead_ops_do_not_starve_the_pool(void) {
  setenv("NCCLTOP_INTERVAL_MS", "20", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *dead = ph_init(&H, HASH + 1, 0, 8);
  CHECK(dead != NULL);
  enum { N = 600 };
  int got = 0;
  /* 300 stepping ops of the communicator about to be aborted */
  for (int i = 0; i < N / 2; i++) {
    void *op = NULL, *st = NULL;
    nt_descr_v5 d = ph_op(i % 4, 1, 1, NULL);
    H.v5->startEvent(dead, &op, &d);
    d = ph_step(op, 0);
    H.v5->startEvent(dead, &st, &d);
    got += op != NULL;
  }
  CHECK_EQ_U64(got, N / 2);
  CHECK(H.v5->finalize(dead) == 0);
  /* p2p operations whose ops never step */
  void *p2p[N / 2];
  for (int i = 0; i < N / 2; i++) {
    nt_descr_v5 d = ph_simple(NT_EV_P2P);
    d.p2p.func = "Send";
    d.p2p.count = 8;
    d.p2p.datatype = "ncclInt8";
    d.p2p.peer = 1;
    d.p2p.nChannels = 1;
    H.v5->startEvent(ctx, &p2p[i], &d);
    void *op = NULL;
    nt_descr_v5 o = ph_op(5, 1, 0, p2p[i]);
    H.v5->startEvent(ctx, &op, &o);
    got += op != NULL;
    H.v5->stopEvent(p2p[i]);
  }
  CHECK_EQ_U64(got, N);
  ph_now += (uint64_t)NT_TEST_GRACE_NS;
  int kept = 0;
  for (int i = 0; i < N; i++) kept += net_op(ctx, NULL, 6, 1);
  CHECK_EQ_U64(kept, N);
  CHECK(unforced_latest(&H, 400) == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 0);
  CHECK_EQ_U64(in_flight(H.snap), 0); /* the p2p operations: done, unreported */
  const nt_op_row *r = H.snap->nops ? &H.snap->ops[0] : NULL;
  CHECK(r != NULL);
  if (r) {
    CHECK_EQ_U64(r->count, N / 2);
    CHECK_EQ_U64(r->done, 0);
  }
}

/* Never-stopped ops the plugin cannot recognise at start, coming faster
 * than their grace lets them go (512 within 20 ms): once the pool is full,
 * the oldest of them yields to each new op. */
static void case_young_stepless_ops_yield_when_the_pool_is_full(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  int got = 0;
  for (int i = 0; i < 512; i++) {
    void *op = NULL;
    nt_descr_v5 d = ph_op(5, 1, 0, NULL);
    H.v5->startEvent(ctx, &op, &d);
    got += op != NULL;
  }
  CHECK_EQ_U64(got, 512);
  void *op = NULL;
  nt_descr_v5 d = ph_op(6, 1, 1, NULL);
  H.v5->startEvent(ctx, &op, &d); /* all of them younger than NT_STEPLESS_MIN_MS */
  CHECK(op == NULL);
  ph_now += 20 * 1000000ull;
  int kept = 0;
  for (int i = 0; i < 200; i++) kept += net_op(ctx, NULL, 6, 1);
  CHECK_EQ_U64(kept, 200);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 1);
}

/* Without the proxystep class NCCL starts no ProxyStep, but still records
 * InProgress on each net op's first progress pass (net.cc, 2.27+): a net op
 * that runs for seconds keeps its slot however many ops start after it,
 * and its operation ends timed when NCCL stops it. */
static void case_net_ops_without_proxystep_keep_their_slot(void) {
  setenv("NCCLTOP_EVENTS", "coll,proxyop", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *a = coll(ctx, 0, "TREE", 1), *op = NULL;
  nt_descr_v5 d = ph_op(0, 1, 1, a);
  H.v5->startEvent(ctx, &op, &d);
  CHECK(op != NULL);
  nt_state_args_v5 none = {0};
  H.v5->recordEventState(op, NT_ST_OP_IN_PROGRESS, &none);
  H.v5->stopEvent(a); /* enqueued; its op runs on */
  ph_now += (uint64_t)NT_TEST_GRACE_NS;
  for (int i = 0; i < 600; i++) { /* the pool (512) wraps past its slot */
    void *k = coll(ctx, (uint64_t)i + 1, "RING", 1), *o = NULL;
    d = ph_op(1, 1, 1, k);
    H.v5->startEvent(ctx, &o, &d);
    CHECK(o != NULL);
    H.v5->recordEventState(o, NT_ST_OP_IN_PROGRESS, &none);
    H.v5->stopEvent(o);
    H.v5->stopEvent(k);
  }
  ph_now += 1000000;
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.reclaimed_ops, 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 0);
  const nt_op_row *tree = op_row(H.snap, NT_ALGO_TREE);
  CHECK(tree != NULL);
  if (tree) {
    CHECK_EQ_U64(tree->count, 1);
    CHECK_EQ_U64(tree->done, 1); /* timed by its op's stop, not reclaimed */
  }
}

/* The stale-handle tests' live op, on channel 2, untouched by the stale
 * calls: started and done once, its one step of 777 bytes counted. */
static void new_op_is_whole(void) {
  const nt_channel_row *r = NULL;
  for (uint32_t i = 0; i < H.snap->nchannels; i++)
    if (H.snap->channels[i].channel == 2) r = &H.snap->channels[i];
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->ops_started, 1);
  CHECK_EQ_U64(r->ops_done, 1);
  CHECK_EQ_U64(r->steps, 1);
  CHECK_EQ_U64(r->bytes, 777);
}

/* An op older than NCCLTOP_RECLAIM_MS gives its slot to a new op, and NCCL
 * then stops the old one after all (a long hang that ended): its late state
 * record and stops, on the op and on its step, must leave the new op in
 * that slot alone. */
static void case_a_stale_op_handle_leaves_the_new_op_alone(void) {
  setenv("NCCLTOP_RECLAIM_MS", "100", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *old = NULL, *old_step = NULL;
  nt_descr_v5 d = ph_op(0, 1, 1, NULL);
  H.v5->startEvent(ctx, &old, &d);
  d = ph_step(old, 0);
  H.v5->startEvent(ctx, &old_step, &d);
  CHECK(old && old_step);
  /* The rest of the pool, kept busy and younger than NCCLTOP_RECLAIM_MS:
   * once the old op is older, its slot is the only one a new op can take,
   * whatever order the pool hands slots out in. */
  ph_now += 50 * 1000000ull;
  static void *busy[511];
  for (int i = 0; i < 511; i++) {
    d = ph_op(1, 1, 1, NULL);
    busy[i] = NULL;
    H.v5->startEvent(ctx, &busy[i], &d);
    CHECK(busy[i] != NULL);
  }
  ph_now += 70 * 1000000ull;
  void *op = NULL, *st = NULL;
  d = ph_op(2, 1, 1, NULL);
  H.v5->startEvent(ctx, &op, &d); /* takes the old op's slot */
  CHECK(op != NULL);
  nt_state_args_v5 a = {.proxyStep = {.transSize = 4096}};
  H.v5->recordEventState(old, NT_ST_OP_IN_PROGRESS, &a);
  H.v5->recordEventState(old_step, NT_ST_STEP_SEND_WAIT, &a);
  H.v5->stopEvent(old_step);
  H.v5->stopEvent(old);
  d = ph_step(op, 0);
  H.v5->startEvent(ctx, &st, &d);
  CHECK(st != NULL);
  a.proxyStep.transSize = 777;
  H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, &a);
  H.v5->stopEvent(st);
  H.v5->stopEvent(op);
  for (int i = 0; i < 511; i++) H.v5->stopEvent(busy[i]);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.reclaimed_ops, 1);
  new_op_is_whole();
}

/* A stopped op's slot is handed out again soon (recycle.h: it stays in
 * the cache), but only after other slots freed since: a handle NCCL uses
 * after its stop (K3's pattern) finds its own stale face, not the live op
 * that took its slot, for many more ops than the 4 faces of one slot. */
static void case_a_stopped_op_handle_stays_stale_while_slots_recycle(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *a = NULL;
  nt_descr_v5 d = ph_op(0, 1, 1, NULL);
  H.v5->startEvent(ctx, &a, &d);
  CHECK(a != NULL);
  H.v5->stopEvent(a);
  /* 99 ops since: with each one taking the slot freed last, the next op
   * would be the slot's 100th use, on the very face `a` was. */
  for (int i = 0; i < 99; i++) CHECK(net_op(ctx, NULL, 1, 1));
  void *b = NULL, *st = NULL;
  d = ph_op(2, 1, 1, NULL);
  H.v5->startEvent(ctx, &b, &d);
  d = ph_step(b, 0);
  H.v5->startEvent(ctx, &st, &d);
  CHECK(b && st);
  nt_state_args_v5 args = {.proxyStep = {.transSize = 4096}};
  H.v5->recordEventState(a, NT_ST_OP_IN_PROGRESS, &args);
  H.v5->stopEvent(a); /* stale: must not end b */
  args.proxyStep.transSize = 777;
  H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, &args);
  H.v5->stopEvent(st);
  H.v5->stopEvent(b);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.unknown_events, 2);
  new_op_is_whole();
}

/* NCCL stops its ProxyOps on the proxy thread that started them; a stop on
 * another thread still frees the op's slot in its starter's pool (which
 * the starter's round robin finds; proxyop_pool.c). Two rounds of 300 ops
 * through a pool of 512: the second needs slots the other thread freed. */
struct stopper {
  void **ops;
  int n;
};

static void *stop_ops(void *arg) {
  struct stopper *s = arg;
  for (int i = 0; i < s->n; i++) H.v5->stopEvent(s->ops[i]);
  return NULL;
}

static void case_ops_stopped_on_another_thread_free_their_slots(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  enum { ROUND = 300 };
  void *ops[ROUND];
  uint64_t started = 0;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < ROUND; i++) {
      void *st = NULL;
      nt_descr_v5 d = ph_op(round, 1, 1, NULL);
      ops[i] = NULL;
      H.v5->startEvent(ctx, &ops[i], &d);
      started += ops[i] != NULL;
      d = ph_step(ops[i], 0);
      H.v5->startEvent(ctx, &st, &d);
      nt_state_args_v5 a = {.proxyStep = {.transSize = 64}};
      H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, &a);
      H.v5->stopEvent(st);
    }
    struct stopper s = {ops, ROUND};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, stop_ops, &s) == 0);
    CHECK(pthread_join(th, NULL) == 0);
  }
  CHECK_EQ_U64(started, 2 * ROUND);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, 0);
  CHECK_EQ_U64(H.snap->process.reclaimed_ops, 0); /* freed, not taken back */
  uint64_t done = 0, steps = 0;
  for (uint32_t i = 0; i < H.snap->nchannels; i++) {
    done += H.snap->channels[i].ops_done;
    steps += H.snap->channels[i].steps;
  }
  CHECK_EQ_U64(done, 2 * ROUND);
  CHECK_EQ_U64(steps, 2 * ROUND);
}

/* K2: every work of a batch gets the batch's times; busy time is the union
 * of a channel's intervals, not their sum. */
static void case_kernel_batch_busy_is_a_union(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  const uint64_t iv[][2] = {{1000, 2000}, {1000, 2000}, {1000, 2000}, {1500, 2500}, {3000, 3100}};
  for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
    CHECK(ph_kernel_ch(&H, ctx, NULL, 3, iv[i][0], iv[i][1]) != NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->nkernels == 1);
  CHECK_EQ_U64(H.snap->kernels[0].count, 5);
  CHECK_EQ_U64(H.snap->kernels[0].busy_ns, 1500 + 100);
}

/* K3: NCCL <= 2.30 records KernelChStop on, and stops, a handle it already
 * stopped; by then the event slot serves another channel. The stale calls
 * must not touch it. */
static void case_stale_kernel_handle_is_harmless(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  /* The first event stopped, 255 more kept running: the pool (256 per
   * thread) has no other slot for the next start than the first's. */
  void *first = ph_kernel_ch(&H, ctx, NULL, 0, 1000, 1010);
  CHECK(first != NULL);
  static void *running[255];
  for (int i = 0; i < 255; i++) {
    nt_descr_v5 r = ph_simple(NT_EV_KERNEL_CH);
    r.kernelCh.channelId = 0;
    r.kernelCh.pTimer = 1100 + (uint64_t)i * 100;
    running[i] = NULL;
    H.v5->startEvent(ctx, &running[i], &r);
    CHECK(running[i] != NULL);
  }
  nt_descr_v5 d = ph_simple(NT_EV_KERNEL_CH);
  d.kernelCh.channelId = 1;
  d.kernelCh.pTimer = 1000000;
  void *now = NULL;
  H.v5->startEvent(ctx, &now, &d);
  CHECK(now != NULL);
  /* the stale calls on the first handle */
  nt_state_args_v5 stale = {.kernelCh = {.pTimer = 9000000000ull}};
  H.v5->recordEventState(first, NT_ST_KERNEL_CH_STOP, &stale);
  H.v5->stopEvent(first);
  H.v5->stopEvent(first);
  nt_state_args_v5 a = {.kernelCh = {.pTimer = 1000500}};
  H.v5->recordEventState(now, NT_ST_KERNEL_CH_STOP, &a);
  H.v5->stopEvent(now);
  H.v5->stopEvent(now); /* and its own stale stop */
  for (int i = 0; i < 255; i++) {
    nt_state_args_v5 r = {.kernelCh = {.pTimer = 1110 + (uint64_t)i * 100}};
    H.v5->recordEventState(running[i], NT_ST_KERNEL_CH_STOP, &r);
    H.v5->stopEvent(running[i]);
  }
  CHECK(ph_latest(&H) == 0);
  const nt_kernel_row *k1 = NULL, *k0 = NULL;
  for (uint32_t i = 0; i < H.snap->nkernels; i++) {
    if (H.snap->kernels[i].channel == 1) k1 = &H.snap->kernels[i];
    if (H.snap->kernels[i].channel == 0) k0 = &H.snap->kernels[i];
  }
  CHECK(k0 && k1);
  if (!k0 || !k1) return;
  CHECK_EQ_U64(k0->count, 256);
  CHECK_EQ_U64(k0->busy_ns, 256 * 10);
  CHECK_EQ_U64(k1->count, 1);
  CHECK_EQ_U64(k1->busy_ns, 500);
}

/* K3: an operation that expects KernelCh children (kernelch on) and gets
 * none, or fewer than its channels, leaves flight after a bounded wait. */
static void case_missing_kernel_children_time_out(void) {
  setenv("NCCLTOP_EVENTS", "default,kernelch", 1);
  setenv("NCCLTOP_INTERVAL_MS", "10", 1);
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *none = coll(ctx, 0, "RING", 2);
  H.v5->stopEvent(none);
  void *some = coll(ctx, 1, "RING", 2);
  CHECK(net_op(ctx, some, 0, 1));
  CHECK(ph_kernel_ch(&H, ctx, some, 0, 100, 300) != NULL);
  H.v5->stopEvent(some);
  CHECK(unforced_latest(&H, 300) == 0);
  CHECK_EQ_U64(in_flight(H.snap), 1); /* the one without any waits longer */
  CHECK(unforced_latest(&H, 3500) == 0);
  CHECK_EQ_U64(in_flight(H.snap), 0);
  const nt_op_row *r = op_row(H.snap, NT_ALGO_RING);
  CHECK(r != NULL);
  if (r) {
    CHECK_EQ_U64(r->count, 2);
    CHECK_EQ_U64(r->gpu_done, 1);
  }
}

PH_CHILD(collnet_ops_take_no_slot)
PH_CHILD(collnet_with_kernelch_is_timed)
PH_CHILD(dead_ops_do_not_starve_the_pool)
PH_CHILD(young_stepless_ops_yield_when_the_pool_is_full)
PH_CHILD(net_ops_without_proxystep_keep_their_slot)
PH_CHILD(a_stale_op_handle_leaves_the_new_op_alone)
PH_CHILD(a_stopped_op_handle_stays_stale_while_slots_recycle)
PH_CHILD(ops_stopped_on_another_thread_free_their_slots)
PH_CHILD(kernel_batch_busy_is_a_union)
PH_CHILD(stale_kernel_handle_is_harmless)
PH_CHILD(missing_kernel_children_time_out)

int main(void) {
  unsetenv("NCCLTOP_EVENTS");
  unsetenv("NCCLTOP_INTERVAL_MS");
  TEST_RUN(collnet_ops_take_no_slot);
  TEST_RUN(collnet_with_kernelch_is_timed);
  TEST_RUN(dead_ops_do_not_starve_the_pool);
  TEST_RUN(young_stepless_ops_yield_when_the_pool_is_full);
  TEST_RUN(net_ops_without_proxystep_keep_their_slot);
  TEST_RUN(a_stale_op_handle_leaves_the_new_op_alone);
  TEST_RUN(a_stopped_op_handle_stays_stale_while_slots_recycle);
  TEST_RUN(ops_stopped_on_another_thread_free_their_slots);
  TEST_RUN(kernel_batch_busy_is_a_union);
  TEST_RUN(stale_kernel_handle_is_harmless);
  TEST_RUN(missing_kernel_children_time_out);
  return TEST_DONE();
}

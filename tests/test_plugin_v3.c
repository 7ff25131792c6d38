/* NCCL 2.26 (profiler ABI v3) tells init nothing about the communicator:
 * no name, hash or rank. Its Coll and P2p descriptors carry them
 * (src/plugin/profiler.cc, the task start events, at v2.26.6-1), and the
 * plugin takes them from the first one, so two communicators of a 2.26 job
 * are not both "hash 0, rank -1" (which made the viewer compare ranks of
 * different communicators). The real plugin, through its exported v3 table
 * and its real publisher. */
#include <pthread.h>

#include "testlib.h"
#include "plugin_harness.h"

static ph_t H;

static void *init3(const nt_profiler_v3 *v3, int *mask) {
  void *ctx = NULL;
  return v3->init(&ctx, mask) == 0 ? ctx : NULL;
}

static void coll3(const nt_profiler_v3 *v3, void *ctx, const char *name, uint64_t hash, int rank,
                  uint64_t seq) {
  nt_descr_v3 d = {.type = NT_EV_COLL, .rank = rank};
  d.coll.name = name;
  d.coll.commHash = hash;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 1024;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.nMaxChannels = 2;
  void *h = NULL;
  if (v3->startEvent(ctx, &h, &d) == 0 && h) v3->stopEvent(h);
}

static void p2p3(const nt_profiler_v3 *v3, void *ctx, const char *name, uint64_t hash, int rank) {
  nt_descr_v3 d = {.type = NT_EV_P2P, .rank = rank};
  d.p2p.name = name;
  d.p2p.commHash = hash;
  d.p2p.func = "Send";
  d.p2p.datatype = "ncclInt8";
  d.p2p.count = 64;
  d.p2p.peer = 1;
  void *h = NULL;
  if (v3->startEvent(ctx, &h, &d) == 0 && h) v3->stopEvent(h);
}

static const nt_comm_row *row_with_hash(const nt_snapshot *s, uint64_t hash) {
  for (uint32_t i = 0; i < s->ncomms; i++)
    if (s->comms[i].comm_hash == hash) return &s->comms[i];
  return NULL;
}

static void case_identity_comes_from_the_first_descriptor(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  const nt_profiler_v3 *v3 = dlsym(H.lib, "ncclProfiler_v3");
  CHECK(v3 != NULL);
  int mask_tp = 0, mask_dp = 0;
  void *tp = init3(v3, &mask_tp), *dp = init3(v3, &mask_dp);
  CHECK(tp && dp);
  CHECK(ph_subscribe(&H) == 0);
  CHECK(ph_latest(&H) == 0);
  /* Before any operation: unknown, as init left it. */
  CHECK(H.snap->ncomms == 2 && row_with_hash(H.snap, 0) != NULL);
  coll3(v3, tp, "tp", 0x7777000000000001ull, 3, 0);
  p2p3(v3, dp, "dp", 0x4444000000000002ull, 5);
  /* Later descriptors cannot change it (NCCL never would). */
  coll3(v3, tp, "other", 0x9999, 9, 1);
  CHECK(ph_latest(&H) == 0);
  const nt_comm_row *a = row_with_hash(H.snap, 0x7777000000000001ull);
  const nt_comm_row *b = row_with_hash(H.snap, 0x4444000000000002ull);
  CHECK(a && b);
  CHECK(a->rank == 3 && b->rank == 5);
  CHECK(row_with_hash(H.snap, 0) == NULL && row_with_hash(H.snap, 0x9999) == NULL);
  CHECK(v3->finalize(tp) == 0 && v3->finalize(dp) == 0);
  ph_close(&H);
}

/* The same, from many threads at once while the publisher reads: exactly
 * one descriptor's identity wins, whole (ThreadSanitizer-clean by design:
 * written before a release, read after an acquire). */
typedef struct {
  const nt_profiler_v3 *v3;
  void *ctx;
  int rank;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  for (int i = 0; i < 2000; i++)
    coll3(r->v3, r->ctx, r->rank == 1 ? "one" : "two", (uint64_t)r->rank * 0x1111, r->rank,
          (uint64_t)i);
  return NULL;
}

static void case_threads_racing_learn_one_whole_identity(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  const nt_profiler_v3 *v3 = dlsym(H.lib, "ncclProfiler_v3");
  int mask = 0;
  void *ctx = init3(v3, &mask);
  CHECK(ctx != NULL);
  CHECK(ph_subscribe(&H) == 0);
  racer r1 = {v3, ctx, 1}, r2 = {v3, ctx, 2};
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, race, &r1) == 0);
  CHECK(pthread_create(&t2, NULL, race, &r2) == 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->ncomms == 1);
  const nt_comm_row *c = &H.snap->comms[0];
  CHECK((c->comm_hash == 0x1111 && c->rank == 1) || (c->comm_hash == 0x2222 && c->rank == 2));
  CHECK(v3->finalize(ctx) == 0);
  ph_close(&H);
}

/* 2.26 has no SendPeerWait step state: the op's SendRemFifoWait, recorded
 * before each isend try, starts the next step's wait for the receiver's
 * credit (V3), its SendTransmitted ends it, as SendPeerWait and SendWait do
 * from 2.27 on. Two steps in flight: the lower one goes first. */
static void op_state3(const nt_profiler_v3 *v3, void *op, int state, int steps, uint64_t size) {
  nt_state_args_v3 a;
  memset(&a, 0, sizeof a);
  a.proxyOp.steps = steps;
  a.proxyOp.transSize = size;
  v3->recordEventState(op, state, &a);
}

static void case_rem_fifo_wait_is_the_credit_wait(void) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  CHECK(ph_setup_dir(&H) == 0 && ph_load(&H) == 0);
  const nt_profiler_v3 *v3 = dlsym(H.lib, "ncclProfiler_v3");
  int mask = 0;
  void *ctx = v3 ? init3(v3, &mask) : NULL;
  CHECK(ctx != NULL && ph_subscribe(&H) == 0);
  coll3(v3, ctx, "c", 0x1234, 0, 0);
  nt_descr_v3 d = {.type = NT_EV_PROXY_OP};
  d.proxyOp.pid = getpid();
  d.proxyOp.peer = 1;
  d.proxyOp.nSteps = 2;
  d.proxyOp.chunkSize = 1 << 20;
  d.proxyOp.isSend = 1;
  void *op = NULL, *st[2] = {NULL, NULL};
  CHECK(v3->startEvent(ctx, &op, &d) == 0 && op);
  for (int i = 0; i < 2; i++) {
    nt_descr_v3 sd = {.type = NT_EV_PROXY_STEP, .parentObj = op};
    sd.proxyStep.step = i;
    CHECK(v3->startEvent(ctx, &st[i], &sd) == 0 && st[i]);
    op_state3(v3, op, 0, i + 1, 0); /* SendPosted */
    v3->recordEventState(st[i], NT_ST_STEP_SEND_GPU_WAIT, NULL);
  }
  const uint64_t ms = 1000000;
  ph_now += 1 * ms;
  op_state3(v3, op, NT_ST_V3_OP_SEND_REM_FIFO_WAIT, 1, 0); /* step 0: no credit yet */
  ph_now += 2 * ms;
  op_state3(v3, op, NT_ST_V3_OP_SEND_REM_FIFO_WAIT, 1, 0); /* a second try */
  ph_now += 2 * ms;
  op_state3(v3, op, NT_ST_V3_OP_SEND_TRANSMITTED, 1, 100);
  v3->recordEventState(st[0], NT_ST_STEP_SEND_WAIT, NULL);
  ph_now += 1 * ms;
  op_state3(v3, op, NT_ST_V3_OP_SEND_REM_FIFO_WAIT, 2, 100); /* step 1 */
  ph_now += 1 * ms;
  op_state3(v3, op, NT_ST_V3_OP_SEND_TRANSMITTED, 2, 200);
  v3->recordEventState(st[1], NT_ST_STEP_SEND_WAIT, NULL);
  ph_now += 2 * ms;
  for (int i = 0; i < 2; i++) {
    v3->stopEvent(st[i]);
    op_state3(v3, op, NT_ST_V3_OP_SEND_DONE, i + 1, 200);
  }
  v3->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = NULL;
  for (uint32_t i = 0; i < H.snap->nchannels; i++)
    if (H.snap->channels[i].dir == NT_DIR_SEND) r = &H.snap->channels[i];
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->steps, 2);
  CHECK_EQ_U64(r->bytes, 200);
  CHECK_EQ_U64(r->wait_ns[0], 1 * ms + 6 * ms); /* GPU: step 0 1 ms, step 1 6 ms */
  CHECK_EQ_U64(r->wait_ns[1], 4 * ms + 1 * ms); /* the receiver's credit */
  CHECK_EQ_U64(r->wait_ns[2], 4 * ms + 2 * ms); /* the network */
  ph_close(&H);
}

/* Each case in a fresh child: the plugin keeps process-wide state. */
static void identity_comes_from_the_first_descriptor(void) {
  CHECK(ph_in_child(case_identity_comes_from_the_first_descriptor) == 0);
}
static void threads_racing_learn_one_whole_identity(void) {
  CHECK(ph_in_child(case_threads_racing_learn_one_whole_identity) == 0);
}
static void rem_fifo_wait_is_the_credit_wait(void) {
  CHECK(ph_in_child(case_rem_fifo_wait_is_the_credit_wait) == 0);
}

int main(void) {
  TEST_RUN(identity_comes_from_the_first_descriptor);
  TEST_RUN(threads_racing_learn_one_whole_identity);
  TEST_RUN(rem_fifo_wait_is_the_credit_wait);
  return TEST_DONE();
}

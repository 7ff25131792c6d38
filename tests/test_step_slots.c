/* V4 (docs/NCCL-BEHAVIOUR.md): NCCL 2.26 stops only the first of the recv
 * steps that complete in one proxy pass (NVIDIA/nccl#1658), though it
 * records RecvDone with the op's steps done after each. The plugin ends
 * such a step at the RecvDone that counts it; failing that (any version)
 * when its slot is reused by a later step or its op stops; a step started again in its own slot (an
 * irecv NCCL could not post yet) replaces itself and counts once. Exact
 * times through the real plugin's ABI and its test clock. */
#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0x5ee05ee05ee00004ull

static ph_t H;

static const nt_channel_row *recv_row(void) {
  for (uint32_t i = 0; i < H.snap->nchannels; i++)
    if (H.snap->channels[i].dir == NT_DIR_RECV) return &H.snap->channels[i];
  return NULL;
}

static void *step(void *ctx, void *op, int n, uint64_t at) {
  nt_descr_v5 d = ph_step(op, n);
  void *h = NULL;
  ph_now = at;
  H.v5->startEvent(ctx, &h, &d);
  if (!h) fprintf(stderr, "    no handle for step %d\n", n);
  return h;
}

static void record(void *h, int state, uint64_t at) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = 1000}};
  ph_now = at;
  H.v5->recordEventState(h, state, &a);
}

/* Step 0 reaches RecvGPUWait at 1000 and is never stopped; step 16 takes
 * its slot at 3000: step 0 counts, 2000 ns of recv_gpu_wait. */
static void case_a_reused_slot_closes_its_step(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_op(0, 1, 0, NULL);
  void *op = NULL;
  H.v5->startEvent(ctx, &op, &d);
  CHECK(op != NULL);
  void *s0 = step(ctx, op, 0, 100);
  record(s0, NT_ST_STEP_RECV_GPU_WAIT, 1000);
  void *s16 = step(ctx, op, 16, 3000);
  record(s16, NT_ST_STEP_RECV_GPU_WAIT, 3500);
  ph_now = 3600;
  H.v5->stopEvent(s16);
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = recv_row();
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->steps, 2);
  CHECK_EQ_U64(r->wait_ns[2], 2000 + 100);
}

/* The same step started again replaces itself: one step, timed from its
 * second start. */
static void case_a_restarted_step_counts_once(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_op(0, 1, 0, NULL);
  void *op = NULL;
  H.v5->startEvent(ctx, &op, &d);
  void *s = step(ctx, op, 3, 100);
  s = step(ctx, op, 3, 200);
  record(s, NT_ST_STEP_RECV_WAIT, 200);
  record(s, NT_ST_STEP_RECV_GPU_WAIT, 700);
  ph_now = 900;
  H.v5->stopEvent(s);
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = recv_row();
  CHECK(r && r->steps == 1 && r->wait_ns[0] == 500 && r->wait_ns[2] == 200);
}

/* A step still open when its op stops (NCCL reported it nowhere else) is
 * closed then. */
static void case_the_op_stop_closes_its_open_steps(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_op(0, 1, 0, NULL);
  void *op = NULL;
  H.v5->startEvent(ctx, &op, &d);
  void *a = step(ctx, op, 0, 100), *b = step(ctx, op, 1, 100);
  record(a, NT_ST_STEP_RECV_GPU_WAIT, 1000);
  record(b, NT_ST_STEP_RECV_GPU_WAIT, 1200);
  ph_now = 1500;
  H.v5->stopEvent(a); /* doneStepId: only the first */
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = recv_row();
  CHECK(r && r->steps == 2 && r->wait_ns[2] == 500 + 300 && r->ops_done == 1);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
}

/* NCCL 2.26 itself (ABI v3): after each recv step done it records
 * RecvDone with the op's steps done so far, though it stops only the first
 * step of the pass. The step ends at the RecvDone that counts it, exactly,
 * not at its op's stop. */
static void v3_done(const nt_profiler_v3 *v3, void *op, int state, int steps, uint64_t at) {
  nt_state_args_v3 a = {.proxyOp = {.transSize = 0, .steps = steps}};
  ph_now = at;
  v3->recordEventState(op, state, &a);
}

static void case_v226_recv_done_ends_the_step_it_counts(void) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  CHECK(ph_setup_dir(&H) == 0 && ph_load(&H) == 0);
  const nt_profiler_v3 *v3 = dlsym(H.lib, "ncclProfiler_v3");
  void *ctx = NULL;
  CHECK(v3 && v3->init(&ctx, &H.mask) == 0 && ctx);
  CHECK(ph_subscribe(&H) == 0 && ph_next_snapshot(&H, 5000) == 0);
  if (!v3 || !ctx) return;
  nt_descr_v3 d = {.type = NT_EV_PROXY_OP};
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 0;
  d.proxyOp.peer = 1;
  d.proxyOp.nSteps = 2;
  void *op = NULL, *st[2] = {NULL, NULL};
  v3->startEvent(ctx, &op, &d);
  CHECK(op != NULL);
  for (int i = 0; i < 2; i++) {
    nt_descr_v3 s = {.type = NT_EV_PROXY_STEP, .parentObj = op};
    s.proxyStep.step = i;
    ph_now = 100;
    v3->startEvent(ctx, &st[i], &s);
    CHECK(st[i] != NULL);
    ph_now = 1000 + 200 * (uint64_t)i;
    v3->recordEventState(st[i], NT_ST_STEP_RECV_GPU_WAIT, NULL);
  }
  ph_now = 1500;
  v3->stopEvent(st[0]); /* doneStepId: the first of the pass only */
  v3_done(v3, op, NT_ST_V3_OP_RECV_DONE, 1, 1500);
  v3_done(v3, op, NT_ST_V3_OP_RECV_DONE, 2, 1600);
  ph_now = 5000;
  v3->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = recv_row();
  CHECK(r && r->steps == 2 && r->wait_ns[2] == 500 + 400);
}

PH_CHILD(a_reused_slot_closes_its_step)
PH_CHILD(a_restarted_step_counts_once)
PH_CHILD(the_op_stop_closes_its_open_steps)
PH_CHILD(v226_recv_done_ends_the_step_it_counts)

int main(void) {
  TEST_RUN(a_reused_slot_closes_its_step);
  TEST_RUN(a_restarted_step_counts_once);
  TEST_RUN(the_op_stop_closes_its_open_steps);
  TEST_RUN(v226_recv_done_ends_the_step_it_counts);
  return TEST_DONE();
}

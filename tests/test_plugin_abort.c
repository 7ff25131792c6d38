/* The real plugin through its ABI: a communicator aborted mid-operation
 * (docs/NCCL-BEHAVIOUR.md A1). NCCL's proxy thread leaves its loop at the
 * abort flag with ProxyOps and ProxySteps open, 2.31's profiler thread
 * drops its KernelCh work (started events included) without stopping it,
 * and then the communicator is finalized. Its operations must leave flight
 * (counted, end not reported) instead of running forever, and the slots of
 * its kernel events must come back; a live communicator's open children
 * are left alone. Times come from a virtual clock; sweeps are real (10 ms). */
#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0xfeedfacecafe0003ull
#define DEAD (HASH + 1)

static ph_t H;

static void *setup(void) {
  setenv("NCCLTOP_EVENTS", "default,kernelch", 1);
  setenv("NCCLTOP_INTERVAL_MS", "10", 1);
  return ph_setup(&H, HASH, 0, 8);
}

static void *coll(void *ctx, uint64_t seq, uint8_t nchannels) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.coll.func = "AllReduce";
  d.coll.seqNumber = seq;
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.nChannels = nchannels;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

/* A KernelCh event started (the kernel reached the channel) and never
 * stopped: the abort came first. */
static void *open_kernel_ch(void *ctx, void *parent, int channel) {
  nt_descr_v5 d = ph_simple(NT_EV_KERNEL_CH);
  d.parentObj = parent;
  d.kernelCh.channelId = (uint8_t)channel;
  d.kernelCh.pTimer = 1000;
  void *e = NULL;
  H.v5->startEvent(ctx, &e, &d);
  return e;
}

/* The newest snapshot after wait_ms of real sweeps, without a flush. */
static int settled(int wait_ms) {
  struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if (ph_next_snapshot(&H, 3000) != 0) return -1;
  while (ph_next_snapshot(&H, 2) == 0) {
  }
  return 0;
}

static int comm_of(uint64_t hash) {
  for (uint32_t i = 0; i < H.snap->ncomms; i++)
    if (H.snap->comms[i].comm_hash == hash) return (int)i;
  return -1;
}

/* Operations of communicator `hash` in state `state` (NT_OPS_*), and the
 * flags of the last one. */
static uint32_t ops_in(uint64_t hash, int state, uint8_t *flags) {
  int ci = comm_of(hash);
  uint32_t n = 0;
  for (uint32_t i = 0; i < H.snap->noplog; i++) {
    const nt_oplog_row *r = &H.snap->oplog[i];
    if ((int)r->comm_index != ci || r->state != state) continue;
    n++;
    if (flags) *flags = r->flags;
  }
  return n;
}

/* KernelCh work started on both channels, then the abort: the Coll (stopped
 * when its work was posted) leaves flight, counted once, its end unknown. */
static void case_aborted_kernel_work_leaves_flight(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *dead = ph_init(&H, DEAD, 0, 8);
  CHECK(dead != NULL);
  void *k = coll(dead, 0, 2);
  CHECK(k != NULL);
  H.v5->stopEvent(k);
  CHECK(open_kernel_ch(dead, k, 0) != NULL);
  CHECK(open_kernel_ch(dead, k, 1) != NULL);
  CHECK(settled(100) == 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_IN_FLIGHT, NULL), 1); /* running while the comm lives */
  CHECK(H.v5->finalize(dead) == 0);
  CHECK(settled(600) == 0);
  uint8_t flags = 0;
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_IN_FLIGHT, NULL), 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_DONE, &flags), 1);
  CHECK(flags & NT_OPF_UNREPORTED);
  int ci = comm_of(DEAD);
  uint64_t timed = 0, counted = 0;
  for (uint32_t i = 0; i < H.snap->nops; i++)
    if ((int)H.snap->ops[i].comm_index == ci) {
      counted += H.snap->ops[i].count;
      timed += H.snap->ops[i].done;
    }
  CHECK_EQ_U64(counted, 1);
  CHECK_EQ_U64(timed, 0);
}

/* <= 2.31 proxy thread at the abort flag: a ProxyOp and its step started,
 * never stopped, and that thread starts no op again. */
static void case_aborted_proxy_ops_leave_flight(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *dead = ph_init(&H, DEAD, 0, 8);
  CHECK(dead != NULL);
  void *k = coll(dead, 0, 1);
  CHECK(k != NULL);
  void *op = NULL, *st = NULL;
  nt_descr_v5 d = ph_op(0, 1, 1, k);
  H.v5->startEvent(dead, &op, &d);
  CHECK(op != NULL);
  H.v5->stopEvent(k);
  d = ph_step(op, 0);
  H.v5->startEvent(dead, &st, &d);
  CHECK(st != NULL);
  nt_state_args_v5 a = {.proxyStep = {.transSize = 0}};
  H.v5->recordEventState(st, NT_ST_STEP_SEND_GPU_WAIT, &a);
  CHECK(H.v5->finalize(dead) == 0);
  CHECK(settled(600) == 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_IN_FLIGHT, NULL), 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_DONE, NULL), 1);
}

/* A stop that comes after the operation was retired without it (a proxy
 * thread shared with a live communicator, still finishing): no second
 * count, nothing in flight, the kernel row counts it. */
static void case_a_late_stop_after_abort_is_harmless(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *dead = ph_init(&H, DEAD, 0, 8);
  CHECK(dead != NULL);
  void *k = coll(dead, 0, 1);
  H.v5->stopEvent(k);
  void *e = open_kernel_ch(dead, k, 0);
  CHECK(e != NULL);
  CHECK(H.v5->finalize(dead) == 0);
  CHECK(settled(600) == 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_DONE, NULL), 1);
  nt_state_args_v5 a = {.kernelCh = {.pTimer = 3000}};
  H.v5->recordEventState(e, NT_ST_KERNEL_CH_STOP, &a);
  H.v5->stopEvent(e);
  CHECK(settled(200) == 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_DONE, NULL), 1);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_IN_FLIGHT, NULL), 0);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
}

/* The aborted communicator's open kernel events fill the thread's pool
 * (256): once its operations are retired, the slots come back for the
 * communicator that lives on, and the dead handles are stale. */
static void case_kernel_slots_of_an_aborted_comm_come_back(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *dead = ph_init(&H, DEAD, 0, 8);
  CHECK(dead != NULL);
  void *k = coll(dead, 0, 64);
  H.v5->stopEvent(k);
  void *first = NULL;
  int opened = 0;
  for (int i = 0; i < 256; i++) {
    void *e = open_kernel_ch(dead, k, i % 64);
    opened += e != NULL;
    if (!i) first = e;
  }
  CHECK_EQ_U64(opened, 256);
  CHECK(open_kernel_ch(ctx, NULL, 0) == NULL); /* the pool is full */
  CHECK(H.v5->finalize(dead) == 0);
  CHECK(settled(600) == 0);
  int got = 0;
  for (int i = 0; i < 300; i++)
    got +=
        ph_kernel_ch(&H, ctx, NULL, 1, 1000 + (uint64_t)i * 100, 1010 + (uint64_t)i * 100) != NULL;
  CHECK_EQ_U64(got, 300);
  nt_state_args_v5 a = {.kernelCh = {.pTimer = 5000}};
  H.v5->recordEventState(first, NT_ST_KERNEL_CH_STOP, &a); /* stale now */
  H.v5->stopEvent(first);
  CHECK(settled(100) == 0);
  CHECK_EQ_U64(ops_in(DEAD, NT_OPS_DONE, NULL), 1);
  const nt_kernel_row *row = NULL;
  for (uint32_t i = 0; i < H.snap->nkernels; i++)
    if ((int)H.snap->kernels[i].comm_index == comm_of(HASH) && H.snap->kernels[i].channel == 1)
      row = &H.snap->kernels[i];
  CHECK(row != NULL);
  if (row) CHECK_EQ_U64(row->count, 300);
}

/* The same open children on a communicator that lives: its operation keeps
 * running, however long (a hang is what nccltop is there to show). */
static void case_a_live_comm_keeps_its_open_children(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *k = coll(ctx, 0, 2);
  H.v5->stopEvent(k);
  CHECK(open_kernel_ch(ctx, k, 0) != NULL);
  CHECK(open_kernel_ch(ctx, k, 1) != NULL);
  CHECK(settled(600) == 0);
  CHECK_EQ_U64(ops_in(HASH, NT_OPS_IN_FLIGHT, NULL), 1);
  CHECK_EQ_U64(ops_in(HASH, NT_OPS_DONE, NULL), 0);
}

PH_CHILD(aborted_kernel_work_leaves_flight)
PH_CHILD(aborted_proxy_ops_leave_flight)
PH_CHILD(a_late_stop_after_abort_is_harmless)
PH_CHILD(kernel_slots_of_an_aborted_comm_come_back)
PH_CHILD(a_live_comm_keeps_its_open_children)

int main(void) {
  TEST_RUN(aborted_kernel_work_leaves_flight);
  TEST_RUN(aborted_proxy_ops_leave_flight);
  TEST_RUN(a_late_stop_after_abort_is_harmless);
  TEST_RUN(kernel_slots_of_an_aborted_comm_come_back);
  TEST_RUN(a_live_comm_keeps_its_open_children);
  return TEST_DONE();
}

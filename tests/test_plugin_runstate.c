/* Queued or running (protocol 1.2), in the real plugin through its ABI: an
 * op is queued until one of its steps leaves its first wait (the GPU filled
 * a send step, data arrived for a receive step) or a step stops; then its
 * channel row and its operation are running, and the operation's progress
 * age runs from its children's last change. And PXN: another process's op,
 * run by this process's proxy thread, is counted in a relay row of the
 * thread's own communicator, never touching the foreign pointers. */
#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0xfeedfacecafe0003ull

static ph_t H;

static void *setup(void) {
  void *ctx = ph_setup(&H, HASH, 1, 4);
  ph_now = 1000;
  return ctx;
}

static void *start(void *ctx, nt_descr_v5 d) {
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

static void record(void *h, int state, size_t size) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = size}};
  H.v5->recordEventState(h, state, &a);
}

static const nt_channel_row *row_of(int channel, int dir, int relay) {
  for (uint32_t i = 0; i < H.snap->nchannels; i++) {
    const nt_channel_row *r = &H.snap->channels[i];
    if (r->channel == channel && r->dir == dir && r->relay_rank == relay) return r;
  }
  return NULL;
}

static const nt_oplog_row *op_of(uint64_t seq) {
  for (uint32_t i = 0; i < H.snap->noplog; i++)
    if (H.snap->oplog[i].seq == seq) return &H.snap->oplog[i];
  return NULL;
}

/* CPU run-ahead: everything is posted, nothing has reached the GPU. */
static void case_a_send_is_queued_until_its_gpu_fills_a_step(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *task = ph_coll(&H, ctx, 7);
  CHECK(task != NULL);
  H.v5->stopEvent(task); /* "enqueued", not done (C1) */
  void *op = start(ctx, ph_op(2, 3, 1, task));
  CHECK(op != NULL);
  void *st[2];
  for (int i = 0; i < 2; i++) {
    st[i] = start(ctx, ph_step(op, i));
    record(st[i], NT_ST_STEP_SEND_GPU_WAIT, 0);
  }
  ph_now = 5000000000ull; /* 5 s later: still nothing from the GPU */
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = row_of(2, NT_DIR_SEND, -1);
  CHECK(r && r->run_state == NT_RUN_QUEUED && r->ops_started - r->ops_done == 1);
  const nt_oplog_row *o = op_of(7);
  CHECK(o && o->state == NT_OPS_IN_FLIGHT && o->run_state == NT_RUN_QUEUED);
  CHECK(o->progress_age_ns == UINT64_MAX);
  /* The GPU filled step 0: running, and progress is counted from here. */
  record(st[0], NT_ST_STEP_SEND_PEER_WAIT, 0);
  ph_now += 2000000000ull;
  CHECK(ph_latest(&H) == 0);
  r = row_of(2, NT_DIR_SEND, -1);
  o = op_of(7);
  CHECK(r && r->run_state == NT_RUN_RUNNING);
  CHECK(o && o->run_state == NT_RUN_RUNNING);
  CHECK_EQ_U64(o->progress_age_ns, 2000000000ull);
  for (int i = 0; i < 2; i++) {
    record(st[i], NT_ST_STEP_SEND_WAIT, 4096);
    H.v5->stopEvent(st[i]);
  }
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  r = row_of(2, NT_DIR_SEND, -1);
  CHECK(r && r->run_state == NT_RUN_IDLE && r->steps == 2 && r->bytes == 8192);
}

/* A receive is queued while it waits for data (its sender's GPU has not
 * reached the operation either); the first data makes it running. A step
 * that stops counts as progress even if no state said so. */
static void case_a_receive_runs_once_data_arrives(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *op = start(ctx, ph_op(0, 1, 0, NULL));
  void *st = start(ctx, ph_step(op, 0));
  record(st, NT_ST_STEP_RECV_WAIT, 0);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = row_of(0, NT_DIR_RECV, -1);
  CHECK(r && r->run_state == NT_RUN_QUEUED);
  record(st, NT_ST_STEP_RECV_FLUSH_WAIT, 512);
  CHECK(ph_latest(&H) == 0);
  r = row_of(0, NT_DIR_RECV, -1);
  CHECK(r && r->run_state == NT_RUN_RUNNING);
  H.v5->stopEvent(st);
  H.v5->stopEvent(op);
  void *op2 = start(ctx, ph_op(1, 1, 0, NULL));
  void *st2 = start(ctx, ph_step(op2, 0));
  H.v5->stopEvent(st2); /* no state recorded (NULL state arguments) */
  void *st3 = start(ctx, ph_step(op2, 1));
  record(st3, NT_ST_STEP_RECV_WAIT, 0);
  CHECK(ph_latest(&H) == 0);
  r = row_of(1, NT_DIR_RECV, -1);
  CHECK(r && r->run_state == NT_RUN_RUNNING && r->steps == 1);
  CHECK(row_of(0, NT_DIR_RECV, -1)->run_state == NT_RUN_IDLE);
  H.v5->stopEvent(st3);
  H.v5->stopEvent(op2);
}

/* PXN: the op of rank 3 of another process, appended to this process's
 * proxy thread inside its Append burst: its steps, bytes and waits are
 * counted in a relay row of this thread's communicator. */
static void case_pxn_ops_are_counted_where_they_run(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *ctrl = start(ctx, ph_simple(NT_EV_PROXY_CTRL));
  CHECK(ctrl != NULL);
  nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = 1}};
  H.v5->recordEventState(ctrl, NT_ST_CTRL_APPEND, &a);
  nt_descr_v5 d = ph_op(5, 2, 1, (void *)0xdeadbeef);
  d.proxyOp.pid = getpid() + 1;
  d.rank = 3;
  void *op = start((void *)0xdeadbeef0ull, d); /* the other process's context */
  H.v5->recordEventState(ctrl, NT_ST_CTRL_APPEND_END, &a);
  H.v5->stopEvent(ctrl);
  CHECK(op != NULL);
  /* And an op of this process's own on the same channel and peer. */
  void *own = start(ctx, ph_op(5, 2, 1, NULL));
  CHECK(own != NULL);
  for (int i = 0; i < 3; i++) {
    void *st = start(ctx, ph_step(op, i));
    CHECK(st != NULL);
    ph_now += 100;
    record(st, NT_ST_STEP_SEND_GPU_WAIT, 0);
    ph_now += 100;
    record(st, NT_ST_STEP_SEND_PEER_WAIT, 0);
    ph_now += 100;
    record(st, NT_ST_STEP_SEND_WAIT, 1000);
    ph_now += 100;
    H.v5->stopEvent(st);
  }
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *relay = row_of(5, NT_DIR_SEND, 3), *mine = row_of(5, NT_DIR_SEND, -1);
  CHECK(relay && mine && relay != mine);
  CHECK(relay->steps == 3 && relay->bytes == 3000 && relay->run_state == NT_RUN_RUNNING);
  CHECK_EQ_U64(relay->wait_ns[0], 300);
  CHECK_EQ_U64(relay->wait_ns[1], 300);
  CHECK_EQ_U64(relay->wait_ns[2], 300);
  CHECK(H.snap->comms[relay->comm_index].comm_hash == HASH);
  CHECK(mine->steps == 0 && mine->run_state == NT_RUN_QUEUED);
  CHECK_EQ_U64(H.snap->process.foreign_ops, 1);
  H.v5->stopEvent(op);
  H.v5->stopEvent(own);
  CHECK(ph_latest(&H) == 0);
  relay = row_of(5, NT_DIR_SEND, 3);
  CHECK(relay && relay->run_state == NT_RUN_IDLE && relay->ops_done == 1);
  CHECK(H.snap->process.unknown_events == 0);
}

/* Without a ProxyCtrl event first, a proxy thread has no communicator of
 * its own to count a foreign op under: it is counted only, as before. */
static void case_a_foreign_op_without_a_proxy_context_is_only_counted(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_op(0, 1, 1, (void *)0xdeadbeef);
  d.proxyOp.pid = getpid() + 1;
  void *h = (void *)0x1;
  H.v5->startEvent((void *)0xdeadbeef0ull, &h, &d);
  CHECK(h == NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.foreign_ops, 1);
  CHECK(H.snap->nchannels == 0);
}

PH_CHILD(a_send_is_queued_until_its_gpu_fills_a_step)
PH_CHILD(a_receive_runs_once_data_arrives)
PH_CHILD(pxn_ops_are_counted_where_they_run)
PH_CHILD(a_foreign_op_without_a_proxy_context_is_only_counted)

int main(void) {
  TEST_RUN(a_send_is_queued_until_its_gpu_fills_a_step);
  TEST_RUN(a_receive_runs_once_data_arrives);
  TEST_RUN(pxn_ops_are_counted_where_they_run);
  TEST_RUN(a_foreign_op_without_a_proxy_context_is_only_counted);
  return TEST_DONE();
}

/* The calls a simulated proxy thread makes into the profiler, as NCCL's
 * proxy makes them (see proxy.c for the shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/nccltop_proto.h"
#include "kthread.h"
#include "rank.h"
#include "runahead.h"
#include "schedule.h"
#include "version.h"
#include "proxy_calls.h"

/* What this proxy thread plays: the NCCL release, NCCL's `lastIdle` of
 * ncclProxyProgress, whether the current pass already produced its ctrl
 * event, and 2.31's profiler thread (NULL before 2.31). */
_Thread_local int px_ver;
_Thread_local bool px_idle, px_pass_ctrl;
_Thread_local sim_kthread *px_kt;

void px_setup(sim_comm *c) {
  px_ver = sim_version_of(c->r->cfg);
  px_idle = false; /* NCCL starts with lastIdle = 0 */
  px_pass_ctrl = false;
  px_kt = sim_v_kernel_thread(px_ver) ? sim_kthread_new(c) : NULL;
}

void *px_ctrl_start(sim_comm *c) {
  sim_ctx *x = &c->px;
  if (!x->on || !sim_mask_wants(x->d->abi, sim_mask_now(x), NT_EV_PROXY_CTRL)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_PROXY_CTRL, NULL, 0);
  return sim_start(x, &e);
}

void px_ctrl_record(sim_comm *c, void *h, int state, int appended) {
  sim_ctx *x = &c->px;
  if (!h || !(sim_mask_now(x) & NT_EV_PROXY_CTRL)) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.proxyCtrl.appendedProxyOps = appended;
  sim_record(x, h, state, &a);
}

void px_ctrl_edge(sim_comm *c, int state) {
  void *h = px_ctrl_start(c);
  px_ctrl_record(c, h, state, 0);
  sim_stop(&c->px, h);
  px_idle = state == NT_ST_CTRL_IDLE;
  px_pass_ctrl = true;
}

/* The end of one pass of ncclProxyProgress: `idle` when it progressed
 * nothing. An Idle or Active edge when that differs from the last pass;
 * in 2.26 a ProxyCtrl start/stop on every pass, empty without an edge. */
void px_pass_end(sim_comm *c, bool idle) {
  if (idle != px_idle)
    px_ctrl_edge(c, idle ? NT_ST_CTRL_IDLE : NT_ST_CTRL_ACTIVE);
  else if (sim_v_ctrl_every_pass(px_ver) && !px_pass_ctrl)
    sim_stop(&c->px, px_ctrl_start(c));
  px_pass_ctrl = false;
}

/* The thread is shutting down (ncclProxyProgressDestroy): it was asleep
 * with nothing to do (`slept`), or found the stop flag first; either way
 * ncclProxyGetPostedOps then takes the pool and appends nothing. */
void px_ctrl_shutdown(sim_comm *c, bool slept) {
  void *h;
  if (slept) {
    h = px_ctrl_start(c);
    px_ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
    px_ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
    sim_stop(&c->px, h);
  }
  h = px_ctrl_start(c);
  px_ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
  px_ctrl_record(c, h, NT_ST_CTRL_APPEND_END, 0);
  sim_stop(&c->px, h);
}

void px_op_event(sim_comm *c, sim_op *op);

/* NCCL 2.27+ starts the ProxyOp when the op is appended (ncclProxyOpToArgs,
 * inside the Append burst); 2.26 at its first progress pass (net.cc
 * {send,recv}ProxyProgress, state ncclProxyOpReady): op_first_pass. */
void px_op_start(sim_comm *c, const sim_work *w, sim_op *op, int ch, int send) {
  /* NCCL reuses the proxy's args without clearing them (ncclProxyOpToArgs
   * leaves sub->transSize alone): until this op's first SendWait or
   * RecvFlushWait its step records carry what the slot's previous op left
   * (S2; so in every op of the real 2.28.9 recordings). 2.26 never resets
   * its running total either (V3), but the plugin counts 2.26's bytes from
   * 0 per op, so that is not played. */
  uint64_t stale = sim_v_native_v3(px_ver) ? 0 : op->trans;
  memset(op, 0, sizeof *op);
  op->trans = stale;
  op->ch = ch;
  op->send = send;
  op->mask = w->mask;
  op->w = w;
  op->x = c->px;
  op->rank = c->r->rank;
  op->skip = w->scn.skip & (send ? SIM_SCN_SKIP_SEND : SIM_SCN_SKIP_RECV);
  op->mute = w->scn.collnet;
  if (!sim_v_native_v3(px_ver)) px_op_event(c, op);
}

void px_op_first_pass(sim_comm *c, sim_op *op) {
  if (!op->started) px_op_event(c, op);
}

void px_op_event(sim_comm *c, sim_op *op) {
  const sim_work *w = op->w;
  int rank = op->rank, n = c->r->cfg->ranks, ch = op->ch, send = op->send;
  op->started = true;
  if (op->skip || !sim_mask_wants(op->x.d->abi, w->mask, NT_EV_PROXY_OP)) return;
  void *parent = !send && w->recv_parent ? w->recv_parent : w->coll;
  pid_t pid = getpid();
  if (w->scn.origin_pid) { /* --pxn: the op NCCL copied from the pair's pool */
    rank = op->rank = w->scn.origin_rank;
    op->x.ctx = w->scn.origin_ctx;
    pid = w->scn.origin_pid;
  }
  nt_descr_v5 e = sim_descr(NT_EV_PROXY_OP, parent, rank);
  e.proxyOp.pid = pid;
  e.proxyOp.channelId = (uint8_t)ch;
  e.proxyOp.peer = send ? (rank + 1) % n : (rank - 1 + n) % n;
  e.proxyOp.nSteps = w->steps;
  e.proxyOp.chunkSize = (int)w->step_size;
  e.proxyOp.isSend = send;
  if (op->mute) { /* the CollNet transport: its peer is nRanks, its progress not net's */
    e.proxyOp.peer = n;
    e.proxyOp.isSend = 0;
  }
  op->h = sim_start(&op->x, &e);
}

void px_op_in_progress(sim_comm *c, const sim_op *op) {
  if (op->mute) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  sim_record(&c->px, op->h, NT_ST_OP_IN_PROGRESS, &a);
}

/* 2.26's op states (SendPosted .. RecvDone): `steps` is the counter the
 * state follows (posted, transmitted, received or done), transSize the
 * op's running total. Nothing on other releases. */
void px_op_state_v3(sim_comm *c, const sim_op *op, int state, int steps) {
  if (sim_v_native_v3(px_ver)) sim_record_op_v3(&c->px, op->h, state, (size_t)op->trans, steps);
}

/* Only net.cc stops a ProxyOp. */
void px_op_stop(sim_comm *c, const sim_op *op) {
  if (!op->mute) sim_stop(&c->px, op->h);
}

void *px_step_start(sim_comm *c, const sim_work *w, const sim_op *op, int step) {
  sim_ctx x = op->x; /* the op's context, foreign for a PXN op */
  (void)c;
  if (op->mute || op->skip || !sim_mask_wants(x.d->abi, w->mask, NT_EV_PROXY_STEP)) return NULL;
  /* 2.26 and 2.27 start no step for an op the plugin dropped. */
  if (!op->h && sim_v_steps_need_op(px_ver)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_PROXY_STEP, op->h, op->rank);
  e.proxyStep.step = step;
  return sim_start(&x, &e);
}

void px_step_record(sim_comm *c, const sim_op *op, void *h, int state) {
  if (!op->h || !h) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = (size_t)op->trans;
  sim_record(&c->px, h, state, &a);
}

/* A net plugin's event for the transfer of step handle h (NULL when the
 * mask or the config asks for none). */
void *px_net_start(sim_comm *c, const sim_op *op, void *step, uint64_t bytes) {
  sim_ctx x = op->x; /* the op's context, foreign for a PXN op */
  int net = c->r->cfg->net;
  if (!net || !step || !sim_mask_wants(x.d->abi, op->mask, NT_EV_NET_PLUGIN)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_NET_PLUGIN, step, op->rank);
  nt_net_ib_v1 ib;
  nt_net_sock_v1 so;
  memset(&ib, 0, sizeof ib);
  memset(&so, 0, sizeof so);
  if (net == NT_NET_IB_QP) {
    ib.type = NT_NET_EV_QP;
    ib.qp.device = SIM_NET_DEVICE(op->ch);
    ib.qp.qpNum = (int)SIM_NET_ID(op->ch, op->send ? 0 : 1);
    ib.qp.opcode = op->send ? 3 : 0; /* IBV_WR_RDMA_WRITE_WITH_IMM, or a receive */
    ib.qp.length = bytes;
    e.netPlugin.id = NT_NET_TYPE_IB | 1;
    e.netPlugin.data = &ib;
  } else {
    so.type = NT_NET_EV_SOCKET;
    so.sock.fd = (int)SIM_NET_ID(op->ch, op->send ? 0 : 1);
    so.sock.op = op->send ? 0 : 1;
    so.sock.length = bytes;
    e.netPlugin.id = NT_NET_TYPE_SOCK | 1;
    e.netPlugin.data = &so;
  }
  return sim_start(&x, &e); /* the plugin copies what it keeps */
}

/* KernelCh `key` (2.31: started on the profiler thread, which keeps the
 * handle; the return value is then NULL). */
void *px_kernel_start(sim_comm *c, const sim_work *w, int ch, uint64_t ptimer, uint64_t synced,
                      uint64_t key) {
  sim_ctx *x = &c->px;
  /* A PXN op's kernel runs in the originating process, which reports it. */
  if (w->scn.origin_pid || !sim_mask_wants(x->d->abi, w->mask, NT_EV_KERNEL_CH)) return NULL;
  if (px_kt) {
    sim_kthread_start(px_kt, key, w->coll, ch, ptimer, synced);
    return NULL;
  }
  nt_descr_v5 e = sim_descr(NT_EV_KERNEL_CH, w->coll, 0); /* NCCL sets no rank here */
  e.kernelCh.channelId = (uint8_t)ch;
  e.kernelCh.pTimer = ptimer;
  return sim_start(x, &e);
}

void px_kernel_stop(sim_comm *c, const sim_work *w, void *h, uint64_t ptimer, uint64_t key) {
  if (px_kt && sim_mask_wants(c->px.d->abi, w->mask, NT_EV_KERNEL_CH)) {
    sim_kthread_stop(px_kt, key, ptimer);
    return;
  }
  if (!h) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = ptimer;
  sim_record(&c->px, h, NT_ST_KERNEL_CH_STOP, &a);
  sim_stop(&c->px, h);
}

/* Up to 2.30 a task whose mask has KernelCh gets a profiler proxy op per
 * channel (enqueue.cc addProfilerProxyOpIfNeeded, proxy.cc
 * SaveProxyProfiler), appended to its own rank's proxy with the network
 * ops and counted in AppendEnd, but started as no ProxyOp (ncclProxyOpToArgs
 * skips ncclPatternProfiler); 2.31 posts the kernel's work to its profiler
 * thread instead (R3). */
int px_profiler_ops(const sim_comm *c, const sim_work *w) {
  bool kernel =
      !w->scn.origin_pid && !w->sym && sim_mask_wants(c->px.d->abi, w->mask, NT_EV_KERNEL_CH);
  return kernel && !sim_v_kernel_thread(px_ver) ? c->r->cfg->channels : 0;
}

uint64_t px_kernel_key(const sim_work *w, int ch) {
  return w->seq << 7 | (uint64_t)ch;
}

/* The proxy progress thread of one communicator, shaped like NCCL 2.28's
 * (src/proxy.c ncclProxyProgress / ncclProxyGetPostedOps and
 * src/transport/net.cc):
 *
 * - ProxyCtrl bursts: an Idle or Active edge (start, record, stop) when the
 *   thread stops or starts making progress; Sleep .. Wakeup while it blocks
 *   with nothing to do; Append .. AppendEnd(appendedProxyOps) when it takes
 *   posted ops, starting their ProxyOps inside the burst (NCCL 2.27+).
 * - per op: InProgress when progress first reaches it; per step:
 *   send: start, SendGPUWait, SendPeerWait once per isend try (usually
 *   one; NCCL repeats it while the receiver gives no credit, and such a
 *   pass is idle), SendWait, stop; recv: start, RecvWait,
 *   RecvFlushWait, RecvGPUWait, stop. Every step record carries the op's
 *   transSize, which is current only from SendWait / RecvFlushWait on and
 *   holds the previous step's size before, as in NCCL.
 * - KernelCh per channel: start with the GPU start time, KernelChStop with
 *   the GPU stop time, stop.
 * - Gating as NCCL: ProxyOp/ProxyStep/KernelCh by the collective's mask
 *   snapshot; ProxyCtrl by the live mask at each start and record. Steps
 *   are started even when their op was dropped (parent NULL) but get no
 *   state records then; nothing is recorded or stopped with a NULL handle.
 *
 * - The release played (--nccl-version, version.h) changes this: 2.26
 *   starts ops at their first pass, records its own op states and NULL
 *   step arguments, a ctrl event on every pass, and leaves the last recv
 *   step of an op unstopped; 2.26/2.27 start no step of a dropped op; 2.31
 *   starts and stops KernelCh on a profiler thread (kthread.c).
 * - At shutdown the thread wakes and appends nothing: AppendEnd(0).
 *
 * - NetPlugin (--net): one IB QP or socket event per network transfer,
 *   parented to its step, as a net plugin reports them through NCCL's
 *   profiler callback.
 * - Scenarios (scenario.h): a --pxn op is started with the originating
 *   process's pid, context and parent, a direction another process runs is
 *   skipped, and a --collnet op is only started (op_event, op_stop).
 *
 * Deterministic mode runs the fixed serial schedule of schedule.h on the
 * virtual clock. Real-time mode runs an event loop: several steps of every
 * op in flight, the network of each op busy with one transfer at a time,
 * per-rank bottlenecks, sleeping until the next step is due; an operation
 * starts progressing only once every rank has enqueued it (sim_sh). With
 * --stall-rank, every proxy freezes mid-operation at the stall time, each in
 * the state its role in the ring puts it in (see rt_freeze).
 */
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

/* ---- the calls ---- */

/* What this proxy thread plays: the NCCL release, NCCL's `lastIdle` of
 * ncclProxyProgress, whether the current pass already produced its ctrl
 * event, and 2.31's profiler thread (NULL before 2.31). */
static _Thread_local int px_ver;
static _Thread_local bool px_idle, px_pass_ctrl;
static _Thread_local sim_kthread *px_kt;

static void px_setup(sim_comm *c) {
  px_ver = sim_version_of(c->r->cfg);
  px_idle = false; /* NCCL starts with lastIdle = 0 */
  px_pass_ctrl = false;
  px_kt = sim_v_kernel_thread(px_ver) ? sim_kthread_new(c) : NULL;
}

static void *ctrl_start(sim_comm *c) {
  sim_ctx *x = &c->px;
  if (!x->on || !sim_mask_wants(x->d->abi, sim_mask_now(x), NT_EV_PROXY_CTRL)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_PROXY_CTRL, NULL, 0);
  return sim_start(x, &e);
}

static void ctrl_record(sim_comm *c, void *h, int state, int appended) {
  sim_ctx *x = &c->px;
  if (!h || !(sim_mask_now(x) & NT_EV_PROXY_CTRL)) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.proxyCtrl.appendedProxyOps = appended;
  sim_record(x, h, state, &a);
}

static void ctrl_edge(sim_comm *c, int state) {
  void *h = ctrl_start(c);
  ctrl_record(c, h, state, 0);
  sim_stop(&c->px, h);
  px_idle = state == NT_ST_CTRL_IDLE;
  px_pass_ctrl = true;
}

/* The end of one pass of ncclProxyProgress: `idle` when it progressed
 * nothing. An Idle or Active edge when that differs from the last pass;
 * in 2.26 a ProxyCtrl start/stop on every pass, empty without an edge. */
static void pass_end(sim_comm *c, bool idle) {
  if (idle != px_idle)
    ctrl_edge(c, idle ? NT_ST_CTRL_IDLE : NT_ST_CTRL_ACTIVE);
  else if (sim_v_ctrl_every_pass(px_ver) && !px_pass_ctrl)
    sim_stop(&c->px, ctrl_start(c));
  px_pass_ctrl = false;
}

/* The thread is shutting down (ncclProxyProgressDestroy): it was asleep
 * with nothing to do (`slept`), or found the stop flag first; either way
 * ncclProxyGetPostedOps then takes the pool and appends nothing. */
static void ctrl_shutdown(sim_comm *c, bool slept) {
  void *h;
  if (slept) {
    h = ctrl_start(c);
    ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
    ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
    sim_stop(&c->px, h);
  }
  h = ctrl_start(c);
  ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
  ctrl_record(c, h, NT_ST_CTRL_APPEND_END, 0);
  sim_stop(&c->px, h);
}

typedef struct {
  void *h;        /* ProxyOp handle */
  uint64_t trans; /* NCCL's sub->transSize (2.26: the op's running total) */
  int ch, send;
  int mask; /* the operation's mask snapshot */
  const sim_work *w;
  bool started; /* its ProxyOp start was made (or gated off) */
  bool skip;    /* --pxn: this direction runs in another process */
  bool mute;    /* --collnet: started, then no InProgress, steps or stop */
  int rank;     /* sub->rank: the rank the op belongs to */
  sim_ctx x;    /* sub->profilerContext: ours, or (--pxn) the originating one */
} sim_op;

static void op_event(sim_comm *c, sim_op *op);

/* NCCL 2.27+ starts the ProxyOp when the op is appended (ncclProxyOpToArgs,
 * inside the Append burst); 2.26 at its first progress pass (net.cc
 * {send,recv}ProxyProgress, state ncclProxyOpReady): op_first_pass. */
static void op_start(sim_comm *c, const sim_work *w, sim_op *op, int ch, int send) {
  memset(op, 0, sizeof *op);
  op->ch = ch;
  op->send = send;
  op->mask = w->mask;
  op->w = w;
  op->x = c->px;
  op->rank = c->r->rank;
  op->skip = w->scn.skip & (send ? SIM_SCN_SKIP_SEND : SIM_SCN_SKIP_RECV);
  op->mute = w->scn.collnet;
  if (!sim_v_native_v3(px_ver)) op_event(c, op);
}

static void op_first_pass(sim_comm *c, sim_op *op) {
  if (!op->started) op_event(c, op);
}

static void op_event(sim_comm *c, sim_op *op) {
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

static void op_in_progress(sim_comm *c, const sim_op *op) {
  if (op->mute) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  sim_record(&c->px, op->h, NT_ST_OP_IN_PROGRESS, &a);
}

/* 2.26's op states (SendPosted .. RecvDone): `steps` is the counter the
 * state follows (posted, transmitted, received or done), transSize the
 * op's running total. Nothing on other releases. */
static void op_state_v3(sim_comm *c, const sim_op *op, int state, int steps) {
  if (sim_v_native_v3(px_ver)) sim_record_op_v3(&c->px, op->h, state, (size_t)op->trans, steps);
}

enum {
  V3_SEND_POSTED,
  V3_SEND_REM_FIFO_WAIT,
  V3_SEND_TRANSMITTED,
  V3_SEND_DONE,
  V3_RECV_POSTED,
  V3_RECV_RECEIVED,
  V3_RECV_TRANSMITTED,
  V3_RECV_DONE
};

/* Only net.cc stops a ProxyOp. */
static void op_stop(sim_comm *c, const sim_op *op) {
  if (!op->mute) sim_stop(&c->px, op->h);
}

static void *step_start(sim_comm *c, const sim_work *w, const sim_op *op, int step) {
  sim_ctx x = op->x; /* the op's context, foreign for a PXN op */
  (void)c;
  if (op->mute || op->skip || !sim_mask_wants(x.d->abi, w->mask, NT_EV_PROXY_STEP)) return NULL;
  /* 2.26 and 2.27 start no step for an op the plugin dropped. */
  if (!op->h && sim_v_steps_need_op(px_ver)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_PROXY_STEP, op->h, op->rank);
  e.proxyStep.step = step;
  return sim_start(&x, &e);
}

static void step_record(sim_comm *c, const sim_op *op, void *h, int state) {
  if (!op->h || !h) return;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = (size_t)op->trans;
  sim_record(&c->px, h, state, &a);
}

/* A net plugin's event for the transfer of step handle h (NULL when the
 * mask or the config asks for none). */
static void *net_start(sim_comm *c, const sim_op *op, void *step, uint64_t bytes) {
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
static void *kernel_start(sim_comm *c, const sim_work *w, int ch, uint64_t ptimer, uint64_t key) {
  sim_ctx *x = &c->px;
  /* A PXN op's kernel runs in the originating process, which reports it. */
  if (w->scn.origin_pid || !sim_mask_wants(x->d->abi, w->mask, NT_EV_KERNEL_CH)) return NULL;
  if (px_kt) {
    sim_kthread_start(px_kt, key, w->coll, ch, ptimer);
    return NULL;
  }
  nt_descr_v5 e = sim_descr(NT_EV_KERNEL_CH, w->coll, 0); /* NCCL sets no rank here */
  e.kernelCh.channelId = (uint8_t)ch;
  e.kernelCh.pTimer = ptimer;
  return sim_start(x, &e);
}

static void kernel_stop(sim_comm *c, const sim_work *w, void *h, uint64_t ptimer, uint64_t key) {
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

/* ---- deterministic: the serial schedule of schedule.h ---- */

/* Step s of a send op: NCCL's passes over it (net.cc sendProxyProgress).
 * The isend is tried sim_det_peer_waits times (the credit model); each
 * failed try is a pass that progressed nothing, so the thread goes Idle at
 * the first and Active again at the one that sends. The peer wait lasts
 * SIM_SEND_PEER_NS however many tries it takes, so the totals stay those
 * of schedule.h. 2.26 has no SendPeerWait: it records SendRemFifoWait on
 * the op per try, and the step waits in SendGPUWait until SendWait. */
static void det_send_step(sim_comm *c, const sim_work *w, sim_op *op, int s) {
  void *h = step_start(c, w, op, s);
  int tries = sim_det_peer_waits(op->ch, s);
  op_state_v3(c, op, V3_SEND_POSTED, s + 1);
  step_record(c, op, h, NT_ST_STEP_SEND_GPU_WAIT);
  pass_end(c, false);
  sim_vclock_pass(SIM_SEND_GPU_NS + sim_runahead_det_ns(c->r->cfg, w->seq, op->ch, s));
  for (int i = 0; i < tries; i++) {
    op_state_v3(c, op, V3_SEND_REM_FIFO_WAIT, s + 1);
    step_record(c, op, h, NT_ST_STEP_SEND_PEER_WAIT); /* dropped for v3 */
    if (i == tries - 1) break;
    pass_end(c, true); /* no credit: this pass progressed nothing */
    sim_vclock_pass(SIM_SEND_PEER_NS / (uint64_t)tries);
  }
  sim_vclock_pass(SIM_SEND_PEER_NS - (uint64_t)(tries - 1) * (SIM_SEND_PEER_NS / (uint64_t)tries));
  if (sim_v_native_v3(px_ver))
    op->trans += sim_det_step_bytes(s); /* 2.26: transSize += size */
  else
    op->trans = sim_det_step_bytes(s);
  op_state_v3(c, op, V3_SEND_TRANSMITTED, s + 1);
  step_record(c, op, h, NT_ST_STEP_SEND_WAIT);
  pass_end(c, false);
  void *net = op->h ? net_start(c, op, h, sim_det_step_bytes(s)) : NULL;
  sim_vclock_pass(SIM_SEND_NET_NS);
  sim_stop(&c->px, net);
  sim_stop(&c->px, h);
  op_state_v3(c, op, V3_SEND_DONE, s + 1);
  pass_end(c, false);
}

/* Step s of a recv op (net.cc recvProxyProgress). In 2.26 the GPU
 * acknowledges the last two steps of an op together (when it has two or
 * more), and the done loop stops only the first of them: doneStepId is
 * read once per pass (#1658), so the last step is never stopped. `held`
 * carries the step waiting for that pass. */
static void det_recv_step(sim_comm *c, const sim_work *w, sim_op *op, int s, void **held) {
  void *h = step_start(c, w, op, s);
  op_state_v3(c, op, V3_RECV_POSTED, s + 1);
  step_record(c, op, h, NT_ST_STEP_RECV_WAIT);
  pass_end(c, false);
  void *net = op->h ? net_start(c, op, h, sim_det_step_bytes(s)) : NULL;
  sim_vclock_pass(SIM_RECV_NET_NS);
  sim_stop(&c->px, net);
  if (sim_v_native_v3(px_ver))
    op->trans += sim_det_step_bytes(s);
  else
    op->trans = sim_det_step_bytes(s);
  op_state_v3(c, op, V3_RECV_RECEIVED, s + 1);
  step_record(c, op, h, NT_ST_STEP_RECV_FLUSH_WAIT);
  pass_end(c, false);
  sim_vclock_pass(SIM_RECV_FLUSH_NS);
  op_state_v3(c, op, V3_RECV_TRANSMITTED, s + 1);
  step_record(c, op, h, NT_ST_STEP_RECV_GPU_WAIT);
  pass_end(c, false);
  sim_vclock_pass(SIM_RECV_GPU_NS);
  bool bug = sim_v_recv_stop_bug(px_ver) && w->steps >= 2;
  if (bug && s == w->steps - 2) {
    *held = h; /* not acknowledged yet */
    return;
  }
  if (bug && s == w->steps - 1) {
    sim_stop(&c->px, *held); /* the first of the two: doneStepId */
    *held = NULL;
    op_state_v3(c, op, V3_RECV_DONE, s);
    op_state_v3(c, op, V3_RECV_DONE, s + 1); /* its step is never stopped */
  } else {
    sim_stop(&c->px, h);
    op_state_v3(c, op, V3_RECV_DONE, s + 1);
  }
  pass_end(c, false);
}

static uint64_t det_kernel_key(const sim_work *w, int ch) {
  return w->seq << 7 | (uint64_t)ch;
}

/* The first pass over freshly appended ops: 2.26 starts their ProxyOps
 * here, 2.27+ record InProgress; the kernels' first work is seen. */
static void det_first_pass(sim_comm *c, const sim_work *w, sim_op (*ops)[2], void **kch,
                           uint64_t *kstart) {
  int nch = c->r->cfg->channels;
  for (int ch = 0; ch < nch && sim_v_native_v3(px_ver); ch++) {
    op_first_pass(c, &ops[ch][0]);
    op_first_pass(c, &ops[ch][1]);
  }
  pass_end(c, false); /* Active */
  for (int ch = 0; ch < nch; ch++) {
    op_in_progress(c, &ops[ch][0]);
    op_in_progress(c, &ops[ch][1]);
    kstart[ch] = SIM_PTIMER_BASE + sim_vclock();
    kch[ch] = kernel_start(c, w, ch, kstart[ch], det_kernel_key(w, ch));
  }
}

static void det_main(sim_comm *c) {
  int nch = c->r->cfg->channels;
  sim_op ops[SIM_MAX_CHANNELS][2];
  void *kch[SIM_MAX_CHANNELS], *held[SIM_MAX_CHANNELS];
  uint64_t kstart[SIM_MAX_CHANNELS];
  sim_work w;
  sim_vclock_own();
  pass_end(c, true); /* t = 0, an Idle edge: the state is known from here on */
  /* Waiting for work takes no virtual time; the bursts below do. */
  while (sim_queue_pop(c, &w, true) == 1) {
    sim_vclock_pass(SIM_IDLE_NS);
    void *h = ctrl_start(c);
    ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
    sim_vclock_pass(SIM_SLEEP_NS);
    ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
    sim_vclock_pass(SIM_WAKEUP_NS);
    sim_stop(&c->px, h);
    h = ctrl_start(c);
    ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
    int appended = 0;
    for (int ch = 0; ch < nch; ch++) {
      op_start(c, &w, &ops[ch][0], ch, 1);
      op_start(c, &w, &ops[ch][1], ch, 0);
      appended += !ops[ch][0].skip + !ops[ch][1].skip;
      held[ch] = NULL;
    }
    sim_vclock_pass(SIM_APPEND_NS);
    ctrl_record(c, h, NT_ST_CTRL_APPEND_END, appended);
    sim_stop(&c->px, h);
    det_first_pass(c, &w, ops, kch, kstart);
    for (int s = 0; s < w.steps; s++) {
      for (int ch = 0; ch < nch; ch++) {
        if (!ops[ch][0].skip) det_send_step(c, &w, &ops[ch][0], s);
        if (!ops[ch][1].skip) det_recv_step(c, &w, &ops[ch][1], s, &held[ch]);
      }
    }
    for (int dir = 0; dir < 2; dir++)
      for (int ch = 0; ch < nch; ch++) op_stop(c, &ops[ch][dir]);
    for (int ch = 0; ch < nch; ch++)
      kernel_stop(c, &w, kch[ch], kstart[ch] + SIM_KERNEL_NS, det_kernel_key(&w, ch));
    pass_end(c, true); /* Idle */
  }
  ctrl_shutdown(c, true);
}

/* ---- real time ---- */

#define RT_WINDOW    4             /* steps of one op in flight (NCCL_STEPS is 8) */
#define RT_MAX_COLLS SIM_QUEUE_CAP /* operations appended at once (NCCL appends what is posted) */
#define RT_SLACK_NS  500000ull     /* events due this close are handled in one wake-up */
/* NCCL's loop spins while it waits, and a pass that progresses nothing is
 * idle: a wait longer than this is an Idle edge (and the next progress an
 * Active one). Edges then come at most once per wake-up, which bounds
 * their cost while keeping them at progress-loop frequency. */
#define RT_IDLE_GAP_NS  100000ull
#define RT_MAX_SLEEP_NS 20000000ull

enum { W_SEND_GPU, W_SEND_PEER, W_SEND_NET, W_RECV_NET, W_RECV_FLUSH, W_RECV_GPU };

/* Microseconds per step in each state, by rank profile. A rank's send peer
 * wait also grows with its receiver's GPU wait, and its recv network wait
 * with its sender's GPU wait, so a slow rank shows on its neighbours. */
static const uint16_t rt_profiles_us[4][6] = {
    {700, 250, 1400, 1300, 120, 500}, /* balanced */
    {400, 300, 4200, 3600, 100, 400}, /* slow network: send_net_wait */
    {3600, 200, 900, 900, 100, 2800}, /* slow GPU: send_gpu_wait */
    {500, 3000, 700, 2600, 100, 400}, /* a peer slow to give credit */
};

static int rt_profile(int rank, int ranks) {
  if (ranks < 3) return rank == 1 ? 1 : 0;
  switch (rank % 8) {
  case 1: return 1;
  case 2: return 2;
  case 5: return 3;
  default: return 0;
  }
}

typedef struct {
  bool used;
  void *h, *net;
  int step, stage;
  int tries; /* isend attempts left before one finds credit */
  uint64_t due, rest;
} rt_step;

typedef struct {
  sim_op op;
  int posted, done, inflight;
  bool begun, finished;
  double scale;      /* step durations shrink with the step size */
  uint64_t post_at;  /* when the next step may be posted; UINT64_MAX: not yet */
  uint64_t net_free; /* the op's transfers go one at a time */
  rt_step fl[RT_WINDOW];
} rt_op;

typedef struct {
  bool used;
  uint64_t seq;
  sim_work w;
  int dir_left[2]; /* ops of each direction not finished */
  int ch_left[SIM_MAX_CHANNELS];
  bool kch_started[SIM_MAX_CHANNELS];
  void *kch[SIM_MAX_CHANNELS];
  rt_op ops[SIM_MAX_CHANNELS][2];
} rt_coll;

typedef struct {
  sim_comm *c;
  int nch, prof, prof_next, prof_prev;
  rt_coll colls[RT_MAX_COLLS];
  int ncolls;
  uint64_t seq;
  bool active;
  uint64_t rng; /* the proxy's own: the application thread draws from c->rng */
} rt_proxy;

static uint64_t rt_dur(rt_proxy *p, const rt_op *o, int what) {
  uint64_t us = rt_profiles_us[p->prof][what];
  if (what == W_SEND_PEER) us += rt_profiles_us[p->prof_next][W_RECV_GPU] * 2 / 5;
  if (what == W_RECV_NET) us += rt_profiles_us[p->prof_prev][W_SEND_GPU] * 2 / 5;
  uint64_t ns =
      (uint64_t)((double)us * 1000 * o->scale) * (uint64_t)(100 + 12 * (o->op.ch % 4)) / 100;
  return ns * (75 + sim_rand(&p->rng) % 51) / 100; /* +-25% */
}

static uint64_t rt_step_size(const sim_work *w, int s) {
  if (s < w->steps - 1) return w->step_size;
  return w->bytes - (uint64_t)(w->steps - 1) * w->step_size;
}

static void rt_active(rt_proxy *p) {
  if (!p->active && px_idle) ctrl_edge(p->c, NT_ST_CTRL_ACTIVE);
  p->active = true;
}

static void rt_idle(rt_proxy *p) {
  if (p->active && !px_idle) ctrl_edge(p->c, NT_ST_CTRL_IDLE);
  p->active = false;
}

/* Takes posted collectives (as many as fit) inside an Append burst. */
static void rt_append(rt_proxy *p) {
  sim_comm *c = p->c;
  void *h = ctrl_start(c);
  ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
  int added = 0;
  for (int i = 0; i < RT_MAX_COLLS && p->ncolls < RT_MAX_COLLS; i++) {
    rt_coll *k = &p->colls[i];
    if (k->used) continue;
    sim_work w;
    if (sim_queue_pop(c, &w, false) != 1) break;
    memset(k, 0, sizeof *k);
    k->used = true;
    k->seq = p->seq++;
    k->w = w;
    for (int ch = 0; ch < p->nch; ch++) {
      for (int dir = 0; dir < 2; dir++) {
        rt_op *o = &k->ops[ch][dir];
        op_start(c, &k->w, &o->op, ch, dir == 0);
        o->post_at = UINT64_MAX;
        o->finished = o->op.skip; /* --pxn: the other process runs it */
        k->ch_left[ch] += !o->finished;
        k->dir_left[dir] += !o->finished;
        added += !o->finished;
      }
    }
    p->ncolls++;
  }
  ctrl_record(c, h, NT_ST_CTRL_APPEND_END, added);
  sim_stop(&c->px, h);
}

/* Sleeps inside a Sleep/Wakeup burst until work arrives; false when the
 * application is done and nothing is left. */
static bool rt_sleep(rt_proxy *p, bool *slept) {
  sim_comm *c = p->c;
  pthread_mutex_lock(&c->mu);
  bool finished = c->closed && c->count == 0;
  pthread_mutex_unlock(&c->mu);
  *slept = !finished;
  if (finished) return false;
  void *h = ctrl_start(c);
  ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
  bool got = sim_queue_wait(c);
  ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
  sim_stop(&c->px, h);
  return got;
}

static void rt_op_finished(rt_proxy *p, rt_coll *k, rt_op *o) {
  sim_comm *c = p->c;
  int ch = o->op.ch, dir = o->op.send ? 0 : 1;
  o->finished = true;
  if (--k->ch_left[ch] == 0) {
    kernel_stop(c, &k->w, k->kch[ch], sim_wall_ns(), det_kernel_key(&k->w, ch));
    k->kch[ch] = NULL;
  }
  /* NCCL stops the ops of one proxy args (one direction) together. */
  if (--k->dir_left[dir] == 0)
    for (int i = 0; i < p->nch; i++) op_stop(c, &k->ops[i][dir].op);
  if (k->dir_left[0] == 0 && k->dir_left[1] == 0) {
    k->used = false;
    p->ncolls--;
  }
}

/* An op starts progressing once the same connection is done with the
 * previous collective. */
static bool rt_begin(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t now) {
  int ch = o->op.ch, dir = o->op.send ? 0 : 1;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    rt_coll *j = &p->colls[i];
    if (j->used && j->seq < k->seq && !j->ops[ch][dir].finished) return false;
  }
  /* Data flows only once every rank has enqueued the operation. */
  if (!sim_stopping() && !sim_all_launched(p->c->r->cfg->ranks, p->c->index, k->w.seq))
    return false;
  double frac = (double)k->w.step_size / (double)SIM_RT_STEP_BYTES;
  o->scale = 0.15 + 0.85 * (frac < 1 ? frac : 1);
  rt_active(p);
  o->begun = true;
  o->post_at = now;
  op_in_progress(p->c, &o->op);
  if (!k->kch_started[ch]) {
    k->kch_started[ch] = true;
    k->kch[ch] = kernel_start(p->c, &k->w, ch, sim_wall_ns() - 20000, det_kernel_key(&k->w, ch));
  }
  return true;
}

static void rt_post(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t t) {
  int s = o->posted++;
  /* Steps can leave out of order here (their durations are random), so the
   * slot of step s - RT_WINDOW may still be busy: take any free one. */
  rt_step *st = &o->fl[0];
  for (int i = 0; i < RT_WINDOW; i++)
    if (!o->fl[i].used) {
      st = &o->fl[i];
      break;
    }
  memset(st, 0, sizeof *st);
  st->used = true;
  st->step = s;
  st->h = step_start(p->c, &k->w, &o->op, s);
  o->inflight++;
  o->post_at = UINT64_MAX; /* the next one follows when this one leaves its first state */
  if (t < k->w.gpu_at) t = k->w.gpu_at; /* --run-ahead: the GPU is still computing */
  if (o->op.send) {
    op_state_v3(p->c, &o->op, V3_SEND_POSTED, o->posted);
    step_record(p->c, &o->op, st->h, NT_ST_STEP_SEND_GPU_WAIT);
    st->due = t + rt_dur(p, o, W_SEND_GPU);
  } else {
    op_state_v3(p->c, &o->op, V3_RECV_POSTED, o->posted);
    step_record(p->c, &o->op, st->h, NT_ST_STEP_RECV_WAIT);
    st->net = o->op.h ? net_start(p->c, &o->op, st->h, rt_step_size(&k->w, s)) : NULL;
    st->due = (t > o->net_free ? t : o->net_free) + rt_dur(p, o, W_RECV_NET);
    o->net_free = st->due;
  }
}

/* Moves a step to its next state at its due time. */
static void rt_advance(rt_proxy *p, rt_coll *k, rt_op *o, rt_step *st) {
  sim_comm *c = p->c;
  uint64_t t = st->due;
  if (st->stage == 0) o->post_at = t;
  bool done = false;
  if (o->op.send) {
    switch (st->stage) {
    case 0: {
      /* The credit model: mostly the first isend finds credit, sometimes
       * one or two more tries are needed (a SendPeerWait each). */
      uint64_t peer = rt_dur(p, o, W_SEND_PEER), r = sim_rand(&p->rng) % 16;
      int tries = r < 12 ? 1 : r < 15 ? 2 : 3;
      op_state_v3(c, &o->op, V3_SEND_REM_FIFO_WAIT, st->step + 1);
      step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      st->tries = tries - 1; /* tries still to record */
      st->rest = peer / (uint64_t)tries;
      st->due = t + st->rest;
      if (st->tries == 0) st->stage = 1; /* straight on to SendWait */
      break;
    }
    case 1: /* no credit yet: NCCL records SendPeerWait again per try */
      op_state_v3(c, &o->op, V3_SEND_REM_FIFO_WAIT, st->step + 1);
      step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      st->tries--;
      st->due = t + st->rest;
      break;
    case 2:
      if (sim_v_native_v3(px_ver))
        o->op.trans += rt_step_size(&k->w, st->step);
      else
        o->op.trans = rt_step_size(&k->w, st->step);
      op_state_v3(c, &o->op, V3_SEND_TRANSMITTED, st->step + 1);
      step_record(c, &o->op, st->h, NT_ST_STEP_SEND_WAIT);
      st->net = o->op.h ? net_start(c, &o->op, st->h, o->op.trans) : NULL;
      st->due = (t > o->net_free ? t : o->net_free) + rt_dur(p, o, W_SEND_NET);
      o->net_free = st->due;
      break;
    default: done = true; break;
    }
  } else {
    switch (st->stage) {
    case 0:
      sim_stop(&c->px, st->net); /* the data arrived */
      st->net = NULL;
      if (sim_v_native_v3(px_ver))
        o->op.trans += rt_step_size(&k->w, st->step);
      else
        o->op.trans = rt_step_size(&k->w, st->step);
      op_state_v3(c, &o->op, V3_RECV_RECEIVED, st->step + 1);
      step_record(c, &o->op, st->h, NT_ST_STEP_RECV_FLUSH_WAIT);
      st->due = t + rt_dur(p, o, W_RECV_FLUSH);
      break;
    case 1:
      op_state_v3(c, &o->op, V3_RECV_TRANSMITTED, st->step + 1);
      step_record(c, &o->op, st->h, NT_ST_STEP_RECV_GPU_WAIT);
      st->due = t + rt_dur(p, o, W_RECV_GPU);
      break;
    default: done = true; break;
    }
  }
  /* A send stays at stage 1 while tries are left (one per pass). */
  if (!(o->op.send && st->stage == 1 && st->tries > 0)) st->stage++;
  if (!done) return;
  sim_stop(&c->px, st->net);
  st->net = NULL;
  sim_stop(&c->px, st->h);
  st->used = false;
  o->inflight--;
  ++o->done;
  op_state_v3(c, &o->op, o->op.send ? V3_SEND_DONE : V3_RECV_DONE, o->done);
  if (o->done == k->w.steps) rt_op_finished(p, k, o);
}

/* Runs one op's events due by `limit`; returns when its next one is due. */
static uint64_t rt_op_run(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t now, uint64_t limit) {
  op_first_pass(p->c, &o->op); /* 2.26: the ProxyOp starts at the first pass */
  if (!o->begun && !rt_begin(p, k, o, now)) return UINT64_MAX;
  while (!o->finished) {
    rt_step *st = NULL;
    for (int i = 0; i < RT_WINDOW; i++)
      if (o->fl[i].used && (!st || o->fl[i].due < st->due)) st = &o->fl[i];
    bool can_post = o->posted < k->w.steps && o->inflight < RT_WINDOW;
    uint64_t post = can_post ? o->post_at : UINT64_MAX;
    uint64_t due = st ? st->due : UINT64_MAX;
    uint64_t next = post < due ? post : due;
    if (next == UINT64_MAX || next > limit) return next;
    rt_active(p);
    if (post <= due)
      rt_post(p, k, o, post);
    else
      rt_advance(p, k, o, st);
  }
  return UINT64_MAX;
}

static uint64_t rt_progress(rt_proxy *p, uint64_t now, uint64_t limit) {
  rt_coll *order[RT_MAX_COLLS];
  int n = 0;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    if (!p->colls[i].used) continue;
    int j = n++;
    for (; j > 0 && order[j - 1]->seq > p->colls[i].seq; j--) order[j] = order[j - 1];
    order[j] = &p->colls[i];
  }
  uint64_t next = UINT64_MAX;
  for (int i = 0; i < n; i++) {
    rt_coll *k = order[i];
    for (int ch = 0; ch < p->nch && k->used; ch++) {
      for (int dir = 0; dir < 2 && k->used; dir++) {
        if (k->ops[ch][dir].finished) continue;
        uint64_t t = rt_op_run(p, k, &k->ops[ch][dir], now, limit);
        if (t < next) next = t;
      }
    }
  }
  return next;
}

/* --stall-rank: at the stall time every proxy stops in the middle of an
 * operation, each in the state its place in the ring gives it. The stalled
 * rank's GPU stopped: its sends wait for the GPU to fill them, its receives
 * for the GPU to drain them. Its ring predecessor's sends wait for credit
 * from it; everyone else's receives wait for data from their predecessor,
 * and their sends for a GPU that waits for that data. So every waits-on
 * chain ends at the stalled rank, which waits on no one.
 *
 * The operation that freezes is one appended but not begun, so that every
 * connection posts a fresh step in that state: it is then the last change
 * each channel reports, whatever the steps before it were doing. */
static rt_coll *unbegun_coll(rt_proxy *p) {
  rt_coll *k = NULL;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    rt_coll *j = &p->colls[i];
    bool fresh = j->used;
    for (int ch = 0; ch < p->nch && fresh; ch++)
      fresh = !j->ops[ch][0].begun && !j->ops[ch][1].begun;
    if (fresh && (!k || j->seq < k->seq)) k = j;
  }
  return k;
}

static void rt_freeze(rt_proxy *p, rt_coll *k) {
  sim_comm *c = p->c;
  const nt_sim_config *cfg = c->r->cfg;
  int rank = c->r->rank, stalled = cfg->stall_rank, n = cfg->ranks;
  uint64_t now = sim_real_ns();
  rt_active(p);
  for (int ch = 0; ch < p->nch; ch++) {
    for (int dir = 0; dir < 2; dir++) {
      rt_op *o = &k->ops[ch][dir];
      if (o->finished) continue; /* --pxn: not this process's */
      o->begun = true;
      o->scale = 1;
      o->post_at = now;
      op_in_progress(c, &o->op);
      rt_post(p, k, o, now); /* records SendGPUWait or RecvWait */
      rt_step *st = NULL;
      for (int i = 0; i < RT_WINDOW; i++)
        if (o->fl[i].used) st = &o->fl[i];
      if (!st) continue;
      if (rank == stalled && dir == 1) {
        step_record(c, &o->op, st->h, NT_ST_STEP_RECV_FLUSH_WAIT);
        step_record(c, &o->op, st->h, NT_ST_STEP_RECV_GPU_WAIT);
      } else if (rank != stalled && dir == 0 && (rank + 1) % n == stalled) {
        step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      }
    }
  }
  rt_idle(p); /* nothing progresses: NCCL's loop goes idle with ops in flight */
}

static void rt_main(sim_comm *c) {
  rt_proxy *p = calloc(1, sizeof *p);
  if (!p) {
    fprintf(stderr, "nccltop sim: rank %d: out of memory\n", c->r->rank);
    sim_work w;
    while (sim_queue_pop(c, &w, true) == 1) {
    }
    return;
  }
  const nt_sim_config *cfg = c->r->cfg;
  int rank = c->r->rank, n = cfg->ranks;
  p->c = c;
  p->rng = 0x7072000000000000ull ^ ((uint64_t)c->r->rank << 20) ^ ((uint64_t)c->index << 8) ^ 0x2b;
  p->nch = cfg->channels;
  p->prof = rt_profile(rank, n);
  p->prof_next = rt_profile((rank + 1) % n, n);
  p->prof_prev = rt_profile((rank - 1 + n) % n, n);
  uint64_t stall_at = UINT64_MAX;
  if (cfg->stall_rank >= 0 && sim_sh)
    stall_at = sim_sh->start_wall_ns + (uint64_t)(cfg->stall_after_s * 1e9);
  bool frozen = false;
  uint64_t end =
      cfg->duration_s > 0 ? c->r->t_start_ns + (uint64_t)(cfg->duration_s * 1e9) : UINT64_MAX;
  bool slept = false;
  pass_end(c, true);
  for (;; pass_end(c, !p->active)) {
    if (frozen) {
      if (!sim_stopping() && sim_real_ns() < end) {
        sim_sleep_ns(RT_MAX_SLEEP_NS);
        continue;
      }
      frozen = false; /* stopping, or --duration is over: finish as usual */
    }
    if (!sim_stopping() && sim_wall_ns() >= stall_at) {
      if (p->ncolls < RT_MAX_COLLS && !sim_queue_empty(c)) rt_append(p);
      rt_coll *k = unbegun_coll(p);
      if (k) {
        rt_freeze(p, k);
        frozen = true;
        stall_at = UINT64_MAX;
        continue;
      }
    }
    if (p->ncolls < RT_MAX_COLLS && !sim_queue_empty(c)) rt_append(p);
    if (p->ncolls == 0) {
      rt_idle(p);
      if (!rt_sleep(p, &slept)) break;
      continue;
    }
    /* Stopping: drain what is in flight without waiting for it. */
    bool fast = sim_stopping();
    uint64_t now = sim_real_ns();
    uint64_t next = rt_progress(p, now, fast ? UINT64_MAX : now + RT_SLACK_NS);
    if (p->ncolls == 0 || fast) continue;
    now = sim_real_ns();
    if (next <= now) continue;
    uint64_t wait = next - now;
    if (wait > RT_IDLE_GAP_NS) rt_idle(p);
    sim_sleep_ns(wait < RT_MAX_SLEEP_NS ? wait : RT_MAX_SLEEP_NS);
  }
  ctrl_shutdown(c, slept);
  free(p);
}

void *sim_proxy_main(void *arg) {
  sim_comm *c = arg;
  px_setup(c);
  if (c->r->cfg->deterministic)
    det_main(c);
  else
    rt_main(c);
  sim_kthread_free(px_kt); /* the profiler thread ends with the communicator */
  px_kt = NULL;
  return NULL;
}

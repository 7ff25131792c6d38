/* The deterministic schedule of a simulated proxy thread (schedule.h), on
 * the virtual clock. */
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

/* ---- deterministic: the serial schedule of schedule.h ---- */

/* Step s of a send op: NCCL's passes over it (net.cc sendProxyProgress).
 * The isend is tried sim_det_peer_waits times (the credit model); each
 * failed try is a pass that progressed nothing, so the thread goes Idle at
 * the first and Active again at the one that sends. The peer wait lasts
 * SIM_SEND_PEER_NS however many tries it takes, so the totals stay those
 * of schedule.h. 2.26 has no SendPeerWait: it records SendRemFifoWait on
 * the op per try, and the step waits in SendGPUWait until SendWait. */
static void det_send_step(sim_comm *c, const sim_work *w, sim_op *op, int s) {
  void *h = px_step_start(c, w, op, s);
  int tries = sim_det_peer_waits(op->ch, s);
  px_op_state_v3(c, op, V3_SEND_POSTED, s + 1);
  px_step_record(c, op, h, NT_ST_STEP_SEND_GPU_WAIT);
  px_pass_end(c, false);
  sim_vclock_pass(SIM_SEND_GPU_NS + sim_runahead_det_ns(c->r->cfg, w->seq, op->ch, s));
  for (int i = 0; i < tries; i++) {
    px_op_state_v3(c, op, V3_SEND_REM_FIFO_WAIT, s + 1);
    px_step_record(c, op, h, NT_ST_STEP_SEND_PEER_WAIT); /* dropped for v3 */
    if (i == tries - 1) break;
    px_pass_end(c, true); /* no credit: this pass progressed nothing */
    sim_vclock_pass(SIM_SEND_PEER_NS / (uint64_t)tries);
  }
  sim_vclock_pass(SIM_SEND_PEER_NS - (uint64_t)(tries - 1) * (SIM_SEND_PEER_NS / (uint64_t)tries));
  if (sim_v_native_v3(px_ver))
    op->trans += sim_det_step_bytes(s); /* 2.26: transSize += size */
  else
    op->trans = sim_det_step_bytes(s);
  px_op_state_v3(c, op, V3_SEND_TRANSMITTED, s + 1);
  px_step_record(c, op, h, NT_ST_STEP_SEND_WAIT);
  px_pass_end(c, false);
  void *net = op->h ? px_net_start(c, op, h, sim_det_step_bytes(s)) : NULL;
  sim_vclock_pass(SIM_SEND_NET_NS);
  sim_stop(&c->px, net);
  sim_stop(&c->px, h);
  px_op_state_v3(c, op, V3_SEND_DONE, s + 1);
  px_pass_end(c, false);
}

/* Step s of a recv op (net.cc recvProxyProgress). In 2.26 the GPU
 * acknowledges the last two steps of an op together (when it has two or
 * more), and the done loop stops only the first of them: doneStepId is
 * read once per pass (#1658), so the last step is never stopped. `held`
 * carries the step waiting for that pass. */
static void det_recv_step(sim_comm *c, const sim_work *w, sim_op *op, int s, void **held) {
  void *h = px_step_start(c, w, op, s);
  px_op_state_v3(c, op, V3_RECV_POSTED, s + 1);
  px_step_record(c, op, h, NT_ST_STEP_RECV_WAIT);
  px_pass_end(c, false);
  void *net = op->h ? px_net_start(c, op, h, sim_det_step_bytes(s)) : NULL;
  sim_vclock_pass(SIM_RECV_NET_NS);
  sim_stop(&c->px, net);
  if (sim_v_native_v3(px_ver))
    op->trans += sim_det_step_bytes(s);
  else
    op->trans = sim_det_step_bytes(s);
  px_op_state_v3(c, op, V3_RECV_RECEIVED, s + 1);
  px_step_record(c, op, h, NT_ST_STEP_RECV_FLUSH_WAIT);
  px_pass_end(c, false);
  sim_vclock_pass(SIM_RECV_FLUSH_NS);
  px_op_state_v3(c, op, V3_RECV_TRANSMITTED, s + 1);
  px_step_record(c, op, h, NT_ST_STEP_RECV_GPU_WAIT);
  px_pass_end(c, false);
  sim_vclock_pass(SIM_RECV_GPU_NS);
  bool bug = sim_v_recv_stop_bug(px_ver) && w->steps >= 2;
  if (bug && s == w->steps - 2) {
    *held = h; /* not acknowledged yet */
    return;
  }
  if (bug && s == w->steps - 1) {
    sim_stop(&c->px, *held); /* the first of the two: doneStepId */
    *held = NULL;
    px_op_state_v3(c, op, V3_RECV_DONE, s);
    px_op_state_v3(c, op, V3_RECV_DONE, s + 1); /* its step is never stopped */
  } else {
    sim_stop(&c->px, h);
    px_op_state_v3(c, op, V3_RECV_DONE, s + 1);
  }
  px_pass_end(c, false);
}

/* The first pass over freshly appended ops: 2.26 starts their ProxyOps
 * here, 2.27+ record InProgress; the kernels' first work is seen. */
static void det_first_pass(sim_comm *c, const sim_work *w, sim_op (*ops)[2], void **kch,
                           uint64_t *kstart) {
  int nch = c->r->cfg->channels;
  for (int ch = 0; ch < nch && sim_v_native_v3(px_ver); ch++) {
    px_op_first_pass(c, &ops[ch][0]);
    px_op_first_pass(c, &ops[ch][1]);
  }
  px_pass_end(c, false); /* Active */
  for (int ch = 0; ch < nch; ch++) {
    px_op_in_progress(c, &ops[ch][0]);
    px_op_in_progress(c, &ops[ch][1]);
    kstart[ch] = SIM_PTIMER_BASE + sim_vclock();
    kch[ch] = px_kernel_start(c, w, ch, kstart[ch], 0, px_kernel_key(w, ch));
  }
}

void sim_proxy_det_main(sim_comm *c) {
  int nch = c->r->cfg->channels;
  sim_op ops[SIM_MAX_CHANNELS][2];
  void *kch[SIM_MAX_CHANNELS], *held[SIM_MAX_CHANNELS];
  uint64_t kstart[SIM_MAX_CHANNELS];
  sim_work w;
  sim_vclock_own();
  px_pass_end(c, true); /* t = 0, an Idle edge: the state is known from here on */
  /* Waiting for work takes no virtual time; the bursts below do. */
  while (sim_queue_pop(c, &w, true) == 1) {
    sim_vclock_pass(SIM_IDLE_NS);
    void *h = px_ctrl_start(c);
    px_ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
    sim_vclock_pass(SIM_SLEEP_NS);
    px_ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
    sim_vclock_pass(SIM_WAKEUP_NS);
    sim_stop(&c->px, h);
    h = px_ctrl_start(c);
    px_ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
    int appended = 0;
    for (int ch = 0; ch < nch; ch++) {
      px_op_start(c, &w, &ops[ch][0], ch, 1);
      px_op_start(c, &w, &ops[ch][1], ch, 0);
      appended += !ops[ch][0].skip + !ops[ch][1].skip;
      held[ch] = NULL;
    }
    appended += px_profiler_ops(c, &w);
    sim_vclock_pass(SIM_APPEND_NS);
    px_ctrl_record(c, h, NT_ST_CTRL_APPEND_END, appended);
    sim_stop(&c->px, h);
    det_first_pass(c, &w, ops, kch, kstart);
    for (int s = 0; s < w.steps; s++) {
      for (int ch = 0; ch < nch; ch++) {
        if (!ops[ch][0].skip) det_send_step(c, &w, &ops[ch][0], s);
        if (!ops[ch][1].skip) det_recv_step(c, &w, &ops[ch][1], s, &held[ch]);
      }
    }
    for (int dir = 0; dir < 2; dir++)
      for (int ch = 0; ch < nch; ch++) px_op_stop(c, &ops[ch][dir]);
    for (int ch = 0; ch < nch; ch++)
      px_kernel_stop(c, &w, kch[ch], kstart[ch] + SIM_KERNEL_NS, px_kernel_key(&w, ch));
    px_pass_end(c, true); /* Idle */
  }
  px_ctrl_shutdown(c, true);
}

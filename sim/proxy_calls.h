/* The calls a simulated proxy thread makes into the profiler, shared by
 * its two schedules (proxy_det.c, the deterministic one; proxy_rt.c, real
 * time) and set up by sim_proxy_main (proxy.c). Internal to sim/proxy*.c. */
#ifndef NCCLTOP_SIM_PROXY_CALLS_H
#define NCCLTOP_SIM_PROXY_CALLS_H

#include "kthread.h"
#include "rank.h"

/* What this proxy thread plays: the NCCL release, NCCL's `lastIdle` of
 * ncclProxyProgress, whether the current pass already produced its ctrl
 * event, and 2.31's profiler thread (NULL before 2.31). */
extern _Thread_local int px_ver;
extern _Thread_local bool px_idle, px_pass_ctrl;
extern _Thread_local sim_kthread *px_kt;

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

/* proxy_calls.c. px_setup: the thread-locals above, at the thread's start.
 * ProxyCtrl: a burst's start and records, an Idle/Active edge, the end of a
 * progress pass (2.26: its own empty ctrl event), the shutdown's bursts.
 * ProxyOp: filled at append (px_op_start), its start event then (2.27+) or
 * at the first pass (2.26), InProgress, 2.26's op states, the stop (never
 * for CollNet). Steps, net plugin events and KernelCh (2.31: through the
 * profiler thread, keyed by px_kernel_key). */
void px_setup(sim_comm *c);
void px_ctrl_record(sim_comm *c, void *h, int state, int appended);
void px_ctrl_edge(sim_comm *c, int state);
void px_pass_end(sim_comm *c, bool idle);
void px_ctrl_shutdown(sim_comm *c, bool slept);
void px_op_start(sim_comm *c, const sim_work *w, sim_op *op, int ch, int send);
void px_op_first_pass(sim_comm *c, sim_op *op);
void px_op_event(sim_comm *c, sim_op *op);
void px_op_in_progress(sim_comm *c, const sim_op *op);
void px_op_state_v3(sim_comm *c, const sim_op *op, int state, int steps);
void px_op_stop(sim_comm *c, const sim_op *op);
void px_step_record(sim_comm *c, const sim_op *op, void *h, int state);
void px_kernel_stop(sim_comm *c, const sim_work *w, void *h, uint64_t ptimer, uint64_t key);
uint64_t px_kernel_key(const sim_work *w, int ch);
/* The profiler proxy ops NCCL appends with an operation's own (AppendEnd
 * counts them; no ProxyOp event): one per channel its kernel reports. */
int px_profiler_ops(const sim_comm *c, const sim_work *w);

void *px_ctrl_start(sim_comm *c);
void *px_step_start(sim_comm *c, const sim_work *w, const sim_op *op, int step);
void *px_net_start(sim_comm *c, const sim_op *op, void *step, uint64_t bytes);
/* `synced`: 2.31, when the kernel's opening barrier ends (0: at once). */
void *px_kernel_start(sim_comm *c, const sim_work *w, int ch, uint64_t ptimer, uint64_t synced,
                      uint64_t key);

/* The two schedules. */
void sim_proxy_det_main(sim_comm *c);
void sim_proxy_rt_main(sim_comm *c);

#endif

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
#include "proxy_calls.h"
#include "version.h"

void *sim_proxy_main(void *arg) {
  sim_comm *c = arg;
  px_setup(c);
  if (c->r->cfg->deterministic)
    sim_proxy_det_main(c);
  else
    sim_proxy_rt_main(c);
  sim_kthread_free(px_kt); /* the profiler thread ends with the communicator */
  px_kt = NULL;
  return NULL;
}

/* --symmetric: communicator 0's AllReduce, AllGather and ReduceScatter run
 * as NCCL's symmetric kernels (registered symmetric windows, all ranks in
 * one NVLink domain), reported per release as NCCL reports them
 * (docs/NCCL-BEHAVIOUR.md O4):
 *
 * - 2.26: no symmetric kernels (the option is refused).
 * - 2.27 (enqueue.cc ncclPrepareTasks/ncclLaunchPrepare@v2.27.7-1): the
 *   task stays in the planner's queue, never the plan's, so
 *   ncclProfilerStartGroupEvent and ncclProfilerStartTaskEvents find no
 *   task: no Group, no Coll, no KernelCh, no proxy op, and the function's
 *   seqNumber does not advance (ABI v4 has no API events).
 * - 2.28 .. 2.30 (scheduler/symmetric_sched.cc ncclSymmetricTaskScheduler):
 *   the task is freed, the plan has no task: GroupApi and CollApi (the API
 *   side) only; no KernelLaunch (ncclProfilerStartKernelLaunchEvent walks
 *   the plan's task queues), Group, Coll, KernelCh or proxy op; the
 *   seqNumber does not advance.
 * - 2.31 (symmetric_sched.cc keeps the task in plan->collTaskQueue;
 *   plugin/profiler.cc ncclProfilerStartTaskEvents, profilerPostPlanWorkSym):
 *   GroupApi, CollApi, KernelLaunch, Group and a Coll with isSymColl,
 *   kernelVariant the kernel's name, algo the part after its first '_',
 *   proto "", nChannels the plan's channel count on the plan's first task
 *   when the mask has KernelCh (else 0); KernelCh on channels 0 .. n-1
 *   against that Coll from the profiler thread (KernelPhase as any
 *   kernel's); plan->hasProxyOps is false: no proxy op or step.
 *
 * The proxy thread (proxy_rt.c) only times the kernel and hands its
 * KernelCh to the profiler thread: taking it is no Append burst and wakes
 * no sleeping proxy, as NCCL posts nothing to the proxy for it.
 *
 * The simulator issues every collective in its own group but for the two
 * backward ReduceScatters of each training step (SIM_SYM_GROUP_AT), which
 * go in one group from 2.28 on (2.27 makes only a lone collective
 * symmetric: there they are issued one at a time): one plan, one kernel, its variant never an LL
 * one (ncclSymkPickKernel groups no LL kernel), the first Coll advertising the plan's channels and
 * carrying its KernelCh, the second nChannels 0. The variant follows the size roughly as NCCL's
 * ncclSymkPickKernel does on one NVLink domain without multicast: below 64 KiB the LL kernels
 * (AllReduce_AGxLL_R, AllGather_LL, ReduceScatter_LL), from 64 KiB on the load/store ones
 * (AllReduce_RSxLD_AGxST, AllGather_ST, ReduceScatter_LD). */
#ifndef NCCLTOP_SIM_SYMMETRIC_H
#define NCCLTOP_SIM_SYMMETRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

#define SIM_SYM_LL_BELOW (64ull << 10) /* LL variants below this many bytes */
/* Real time: operation SIM_SYM_GROUP_AT of each training step and the next
 * (the two backward ReduceScatters) are issued in one group (app.c). */
#define SIM_SYM_GROUP_AT 4

/* Whether communicator `comm`'s call of `func` runs as a symmetric kernel
 * (--symmetric, NCCL 2.27+, communicator 0, AllReduce/AllGather/
 * ReduceScatter). */
bool sim_sym_op(const nt_sim_config *c, int comm, const char *func);
/* The kernel variant NCCL would pick (ncclSymkKernelIdToString's name). */
const char *sim_sym_variant(const char *func, uint64_t bytes);
/* What 2.31 reports as coll.algo: the variant after its first '_'. */
const char *sim_sym_algo(const char *variant);
/* The release reports symmetric collectives as Coll events (2.31). */
static inline bool sim_sym_reported(int v) {
  return v >= 231;
}
/* Real time: the GPU time of one symmetric kernel moving `bytes` per
 * channel over NVLink; `slow_gpu` for the simulated slow-GPU rank. */
uint64_t sim_sym_kernel_ns(uint64_t bytes, bool slow_gpu);
/* One line on stderr and -1 when --symmetric is asked for with what it
 * cannot run with (see the function). */
int sim_sym_check(const nt_sim_config *c);

#endif

/* The deterministic schedule, in one place: the simulated proxy thread
 * (proxy.c) runs it and the expectations (expect.c) add it up, so they
 * cannot drift. All durations differ, so a state counted in the wrong place
 * shows in the totals.
 *
 * Each proxy thread, on its own virtual clock starting at 0:
 *   Idle edge (t = 0)
 *   per collective:
 *     SIM_IDLE_NS of idle
 *     ProxyCtrl: Sleep, SIM_SLEEP_NS, Wakeup, SIM_WAKEUP_NS, stop
 *     ProxyCtrl: Append, start the 2 x channels ProxyOps, SIM_APPEND_NS,
 *                AppendEnd(2 x channels), stop
 *     Active edge; InProgress on every op; KernelCh start per channel
 *     for step s, for channel ch:
 *       send step s: SendGPUWait, SIM_SEND_GPU_NS, SendPeerWait per isend
 *         try (sim_det_peer_waits in version.h: mostly 1; the failed tries
 *         are idle passes) over SIM_SEND_PEER_NS, SendWait(size),
 *         SIM_SEND_NET_NS, stop
 *       recv step s: RecvWait, SIM_RECV_NET_NS, RecvFlushWait(size),
 *         SIM_RECV_FLUSH_NS, RecvGPUWait(size), SIM_RECV_GPU_NS, stop
 *     stop every op; KernelChStop(start + SIM_KERNEL_NS) and stop per channel
 *     Idle edge
 *   at shutdown: Sleep, Wakeup, Append, AppendEnd(0), in no time
 * so every proxy thread ends at the same virtual time, with an Idle edge.
 * NCCL 2.26 differs (version.h, expect.c).
 */
#ifndef NCCLTOP_SIM_SCHEDULE_H
#define NCCLTOP_SIM_SCHEDULE_H

#include <stdint.h>

#include "sim.h"

#define SIM_IDLE_NS       11000ull /* idle before each collective */
#define SIM_SLEEP_NS      5000ull  /* Sleep .. Wakeup */
#define SIM_WAKEUP_NS     300ull   /* Wakeup .. stop */
#define SIM_APPEND_NS     700ull   /* Append .. AppendEnd */
#define SIM_SEND_GPU_NS   1000ull  /* per send step */
#define SIM_SEND_PEER_NS  2000ull  /* from the first SendPeerWait to SendWait */
#define SIM_SEND_NET_NS   3000ull
#define SIM_RECV_NET_NS   4000ull /* per recv step */
#define SIM_RECV_FLUSH_NS 500ull
#define SIM_RECV_GPU_NS   1500ull
#define SIM_KERNEL_NS     9000ull                /* GPU time of every KernelCh event */
#define SIM_PTIMER_BASE   1700000000000000000ull /* GPU globaltimer at virtual 0 */

/* Step s of every op carries a different size, so counting transSize at the
 * wrong state (where NCCL still holds the previous step's size) shows. */
#define SIM_STEP_BYTES     131072ull
#define SIM_STEP_BYTES_INC 4096ull
#define SIM_DET_ITERATIONS 10           /* when the config leaves iterations at 0 */
#define SIM_RT_STEP_BYTES  (4ull << 20) /* a full network step in real-time mode */
/* Net plugin events (--net): IB device and QP, or socket fd, of a channel's
 * send (dir 0) or recv (dir 1) connection. */
#define SIM_NET_DEVICE(ch)  ((ch) % 2)
#define SIM_NET_ID(ch, dir) (1000u + 2u * (unsigned)(ch) + (unsigned)(dir))

static inline uint64_t sim_det_step_bytes(int step) {
  return SIM_STEP_BYTES + (uint64_t)step * SIM_STEP_BYTES_INC;
}

/* Bytes of one proxy op: the sum of its steps' sizes. */
static inline uint64_t sim_det_op_bytes(int steps) {
  uint64_t n = (uint64_t)steps;
  return n * SIM_STEP_BYTES + SIM_STEP_BYTES_INC * (n * (n - 1) / 2);
}

static inline int sim_det_iterations(const nt_sim_config *c) {
  return c->iterations > 0 ? c->iterations : SIM_DET_ITERATIONS;
}

/* The collectives of the schedule, also in real-time mode: a training
 * step's three phases, each with its own function, and a ladder of sizes
 * over which NCCL's tuner would switch algorithm and protocol (small
 * messages TREE/LL, middle RING/LL128, large RING/SIMPLE; the thresholds are
 * ours, the shape is NCCL's). Collective i of a communicator: */
typedef struct {
  const char *phase; /* nccltop_tag */
  const char *func, *algo, *proto;
  uint64_t bytes; /* count x 4 (ncclFloat32) */
} sim_op_desc;

static inline sim_op_desc sim_det_op(uint64_t i) {
  static const char *const phases[3] = {"forward", "backward", "optimizer"};
  static const char *const funcs[3] = {"AllGather", "ReduceScatter", "AllReduce"};
  static const uint64_t sizes[4] = {32ull << 10, 256ull << 10, 4ull << 20, 64ull << 20};
  sim_op_desc d;
  d.phase = phases[i % 3];
  d.func = funcs[i % 3];
  d.bytes = sizes[i % 4];
  d.algo = d.bytes < (64ull << 10) ? "TREE" : "RING";
  d.proto = d.bytes < (64ull << 10) ? "LL" : d.bytes < (1ull << 20) ? "LL128" : "SIMPLE";
  return d;
}

/* Active time of one collective on one proxy thread: steps run one at a
 * time. */
static inline uint64_t sim_det_work_ns(int channels, int steps) {
  return (uint64_t)channels * (uint64_t)steps *
         (SIM_SEND_GPU_NS + SIM_SEND_PEER_NS + SIM_SEND_NET_NS + SIM_RECV_NET_NS +
          SIM_RECV_FLUSH_NS + SIM_RECV_GPU_NS);
}

#endif

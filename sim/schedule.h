/* The deterministic schedule's constants, shared by the simulated proxy
 * thread (rank.c) and the expectations (expect.c) so they cannot drift.
 * All different, so a state counted in the wrong place shows. */
#ifndef NCCLTOP_SIM_SCHEDULE_H
#define NCCLTOP_SIM_SCHEDULE_H

#include <stdint.h>

#define SIM_IDLE_NS       11000ull /* idle before each collective */
#define SIM_SLEEP_NS      5000ull  /* Sleep .. Wakeup */
#define SIM_WAKEUP_NS     300ull   /* Wakeup .. stop */
#define SIM_APPEND_NS     700ull   /* Append .. AppendEnd */
#define SIM_SEND_GPU_NS   1000ull  /* per send step */
#define SIM_SEND_PEER_NS  2000ull  /* split over two SendPeerWait records */
#define SIM_SEND_NET_NS   3000ull
#define SIM_RECV_NET_NS   4000ull /* per recv step */
#define SIM_RECV_FLUSH_NS 500ull
#define SIM_RECV_GPU_NS   1500ull
#define SIM_STEP_BYTES    131072ull /* transSize of every step */
#define SIM_KERNEL_NS     9000ull   /* GPU time per kernel channel event */

/* Active time of one collective on one proxy thread. */
static inline uint64_t sim_work_ns(int channels, int steps) {
  return (uint64_t)channels * (uint64_t)steps *
         (SIM_SEND_GPU_NS + SIM_SEND_PEER_NS + SIM_SEND_NET_NS + SIM_RECV_NET_NS +
          SIM_RECV_FLUSH_NS + SIM_RECV_GPU_NS);
}

#endif

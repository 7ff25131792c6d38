/* --run-ahead MS, as in every PyTorch job: the CPU enqueues collectives as
 * fast as NCCL takes them (ncclGroupEnd returns once the work is posted),
 * while the GPU still computes the previous step's MS of kernels. NCCL has
 * then started the Coll (hostStreamPlanTask at enqueue) and the proxy has
 * appended the ops (ncclProxyStart), so their steps wait: sends in
 * SendGPUWait until the kernel fills the buffer, receives in RecvWait until
 * the peer's kernel sends (src/transport/net.cc sendProxyProgress,
 * recvProxyProgress). How far ahead the CPU gets is bounded by the queue
 * from the application to the proxy (SIM_QUEUE_CAP) and what the proxy
 * holds appended.
 *
 * Real time: each operation carries the time its GPU reaches it; the proxy
 * posts the first state of each step no earlier (proxy.c rt_post).
 * Deterministic: the schedule is serial, so the whole MS shows once per
 * training step, in the SendGPUWait of step 0 of channel 0's send op, and
 * in the proxy's Active time; nothing else changes (expect.c). */
#include "runahead.h"

#include "rank.h"

/* The GPU timeline of the calling application thread (one per
 * communicator): when its last enqueued operation can start at the
 * earliest. */
static _Thread_local uint64_t gpu_free_at;

uint64_t sim_runahead_gpu_at(const nt_sim_config *c, bool step_start) {
  if (!c->run_ahead_ms) return 0;
  uint64_t now = sim_real_ns();
  uint64_t at = gpu_free_at > now ? gpu_free_at : now;
  if (step_start) at += (uint64_t)c->run_ahead_ms * 1000000ull;
  gpu_free_at = at;
  return at;
}

uint64_t sim_runahead_det_ns(const nt_sim_config *c, uint64_t seq, int ch, int step) {
  if (!c->run_ahead_ms || seq % SIM_DET_STEP_OPS || ch || step) return 0;
  return (uint64_t)c->run_ahead_ms * 1000000ull;
}

uint64_t sim_runahead_det_steps(uint64_t n) {
  return (n + SIM_DET_STEP_OPS - 1) / SIM_DET_STEP_OPS;
}

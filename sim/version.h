/* The NCCL release the simulator plays (--nccl-version): which profiler
 * ABI that release would load from the plugin, and the version-specific
 * behaviours of its core, each read in NCCL's source of that release
 * (docs/NCCL-BEHAVIOUR.md, /work/shared/notes/nccl-behaviour-audit.md).
 *
 * Versions are written 226 .. 231 (NCCL 2.26 .. 2.31). */
#ifndef NCCLTOP_SIM_VERSION_H
#define NCCLTOP_SIM_VERSION_H

#include <stdbool.h>
#include <stdint.h>

#include "../plugin/nccl_profiler_abi.h"
#include "sim.h"

#define SIM_NCCL_MIN     226
#define SIM_NCCL_MAX     231
#define SIM_NCCL_DEFAULT 228

/* "2.26" (or "2.26.6", "2.26.6-1") -> 226; -1 when not a release we play. */
int sim_version_parse(const char *s);

/* The newest profiler ABI release v looks for (2.26: v3, 2.27: v4, 2.28: v5,
 * 2.29 and 2.30: v6; 2.31: v7, then v6 through its v6 shim when the plugin
 * has no v7). */
int sim_version_max_abi(int v);

/* The release a configuration plays: c->nccl_version, except that --abi N
 * with the default release (2.28) plays the release that loads vN natively
 * (3: 2.26, 4: 2.27, 5: 2.28, 6: 2.30, 7: 2.31). With both set, an older ABI than the
 * release's newest is that release loading the older table (its shim). */
int sim_version_of(const nt_sim_config *c);

/* NCCL's version code (major x 10000 + minor x 100 + patch, NCCL_VERSION_CODE
 * from 2.9 on) of the release whose source the simulator follows for v:
 * 2.26.6, 2.27.7, 2.28.9, 2.29.7, 2.30.7, 2.31.2; 0 when not played. */
int sim_version_code(int v);
/* What this process's ncclGetVersion answers from now on (a rank calls it
 * before it loads the plugin). The simulator exports ncclGetVersion, as
 * libnccl does, so the plugin's question (dlsym of ncclGetVersion, the
 * publisher's hello) gets the release played instead of nothing. */
void sim_version_answer(int v);

/* NULL when c->nccl_version and c->abi fit together, else why not. */
const char *sim_version_check(const nt_sim_config *c);

/* 2.31 loads ncclProfiler_v7 when a plugin exports it, else falls back to
 * v6 through its shim (no userTag, no KernelPhase). Says so once, from
 * rank 0, when 2.31 found no v7 table (abi: the table loaded). */
void sim_version_note_v7(int abi, int v, int rank, bool quiet);

/* ---- behaviours (v is what sim_version_of returns) ---- */

/* 2.26 (net.cc sendProxyProgress/recvProxyProgress): ProxyOps start at the
 * first progress pass, get the op states SendPosted..RecvDone with a
 * cumulative transSize, and their steps get states with NULL arguments. */
static inline bool sim_v_native_v3(int v) {
  return v < 227;
}
/* 2.26 (proxy.c ncclProxyProgress): an empty ProxyCtrl start/stop on every
 * progress-loop iteration, the Idle/Active edge recorded inside it; 2.27+
 * only start one on a transition. */
static inline bool sim_v_ctrl_every_pass(int v) {
  return v < 227;
}
/* 2.26 (recvProxyProgress): doneStepId is read once before the loop that
 * retires recv steps, so of several steps done in one pass only the first
 * is stopped (NVIDIA/nccl#1658, fixed in 2.27). */
static inline bool sim_v_recv_stop_bug(int v) {
  return v < 227;
}
/* 2.26 and 2.27 (profiler.cc Start{Send,Recv}ProxyStepEvent) start a step
 * only when its op has a handle; 2.28+ start it with a NULL parent. */
static inline bool sim_v_steps_need_op(int v) {
  return v < 228;
}
/* 2.31 (profiler.cc ncclProfilerThreadFunc): KernelCh events are started
 * and stopped on a per-communicator profiler thread, not the proxy. */
static inline bool sim_v_kernel_thread(int v) {
  return v >= 231;
}
/* 2.31 (profiler.cc ncclProfilerPluginInit, ncclProfilerEnforceMaskDeps):
 * after init, a mask with KernelPhase gets KernelCh too; the v6 shim
 * (profiler_v6.cc) clears KernelPhase, which a v6 plugin never gets. */
static inline int sim_v_mask_after_init(int v, int abi, int mask) {
  if (v < 231) return mask;
  if (abi < 7) return mask & ~NT_EV_KERNEL_PHASE;
  return mask & NT_EV_KERNEL_PHASE ? mask | NT_EV_KERNEL_CH : mask;
}

/* ---- the credit model: how often a send finds no receiver credit ----
 *
 * NCCL records SendPeerWait (2.27+; SendRemFifoWait on the op in 2.26)
 * before every isend attempt, and an attempt fails while the receiver has
 * given no credit; so a step gets 1..N records, usually 1. Deterministic:
 * step s of channel ch makes sim_det_peer_waits attempts. */
static inline int sim_det_peer_waits(int ch, int step) {
  int k = (ch + step) % 8;
  return k == 7 ? 3 : k == 3 ? 2 : 1;
}

/* Steps of one collective (one direction, all channels) with more than one
 * attempt: each of them spends its peer wait in idle progress passes. */
static inline uint64_t sim_det_credit_misses(int channels, int steps) {
  uint64_t n = 0;
  for (int ch = 0; ch < channels; ch++)
    for (int s = 0; s < steps; s++) n += sim_det_peer_waits(ch, s) > 1;
  return n;
}

#endif

/* The simulator's side of the profiler ABI: one loaded plugin, called the
 * way NCCL 2.28's core calls it, through the shim NCCL puts in front of an
 * older plugin (init argument order, descriptor layout, which events and
 * states each version gets). */
#ifndef NCCLTOP_SIM_ABI_DRIVER_H
#define NCCLTOP_SIM_ABI_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../plugin/nccl_profiler_abi.h"

/* A zeroed v5 descriptor of `type` (the driver translates it to the ABI
 * loaded), as NCCL zero-initializes eDescr before filling it. */
static inline nt_descr_v5 sim_descr(int type, void *parent, int rank) {
  nt_descr_v5 e = {0};
  e.type = (uint64_t)type;
  e.parentObj = parent;
  e.rank = rank;
  return e;
}

/* The descriptor of an API event (GroupApi, CollApi, P2pApi, KernelLaunch):
 * NCCL never sets their rank, so every rank reports 0 (profiler.cc
 * ncclProfilerStart{GroupApi,CollApi,P2pApi,KernelLaunch}Event, 2.28 ..
 * 2.31; so in the real 2.28.9 recordings: docs/NCCL-BEHAVIOUR.md M5). */
static inline nt_descr_v5 sim_api_descr(int type, void *parent) {
  return sim_descr(type, parent, 0);
}

typedef struct {
  void *lib;
  int abi; /* 3..7 */
  const nt_profiler_v3 *v3;
  const nt_profiler_v4 *v4;
  const nt_profiler_v5 *v5; /* v6 has the same shape */
  const nt_profiler_v7 *v7;
  int mask;         /* NCCL's one process-wide activation mask */
  int nccl_version; /* the release played (sim_version_of), 0 unknown */
  int rank;         /* for log lines */
} sim_driver;

/* One communicator's profiler context. `on` is false when init failed (the
 * plugin declined): NCCL then makes no further calls for it. */
typedef struct {
  sim_driver *d;
  void *ctx;
  bool on;
  char name[32]; /* the communicator's, for 2.26's Coll/P2p descriptors */
  uint64_t hash;
  uint64_t user_tag; /* v7: the userTag of this communicator's calls, 0 none */
} sim_ctx;

/* dlopens `path` (RTLD_NOW | RTLD_LOCAL) and picks ncclProfiler_v<abi>, or
 * the newest of v<max_abi>..v3 when abi is 0 (as NCCL tries the newest
 * table it knows first, 2.31 v7 then v6; max_abi 0 = 7). */
int sim_driver_open(sim_driver *d, const char *path, int abi, int max_abi, int rank, char *err,
                    size_t errlen);
/* dlcloses the plugin (NCCL does after the last finalize). */
void sim_driver_close(sim_driver *d);
/* Looks up an optional extra export (nccltop_flush, ...); NULL if absent. */
void *sim_driver_sym(sim_driver *d, const char *name);
int sim_driver_init(sim_driver *d, sim_ctx *c, uint64_t hash, const char *name, int nnodes,
                    int nranks, int rank);
/* As NCCL: only for a context whose init succeeded and is not NULL. */
void sim_driver_finalize(sim_ctx *c);

/* The mask now (NCCL reads it with a relaxed atomic load). */
int sim_mask_now(const sim_ctx *c);
/* NCCL's gating: whether an event of `type` is started for an operation
 * whose mask snapshot is `mask` (asking for a child event also produces
 * its ancestors). Pure, for tests too. */
bool sim_mask_wants(int abi, int mask, int type);

/* Starts an event described in the v5 layout (translated for v3/v4 as
 * NCCL's shims do: no API events, Coll's parent is coll.parentGroup).
 * Returns what the plugin wrote into the handle (NULL: dropped). */
void *sim_start(sim_ctx *c, nt_descr_v5 *e);
/* NCCL 2.31's Coll of a symmetric-kernel plan (profiler.cc
 * ncclProfilerStartTaskEvents): as sim_start, and on ABI v7 with
 * coll.isSymColl true and coll.kernelVariant `variant` (the caller puts the
 * variant's suffix in coll.algo and "" in coll.proto, which every ABI
 * carries; v6's shim drops the two v7 members). */
void *sim_start_sym(sim_ctx *c, nt_descr_v5 *e, const char *variant);
/* Record and stop are never called with a NULL handle (NCCL checks).
 * `args` NULL passes NULL (GroupApi states do). */
void sim_record(sim_ctx *c, void *h, int state, const nt_state_args_v5 *args);
void sim_stop(sim_ctx *c, void *h);
/* NCCL 2.31's KernelPhase (v7 only; nothing on other ABIs): one phase of
 * the KernelCh event `parent`, from GPU time `start` to `stop`: started,
 * KernelPhaseStop recorded with the stop, stopped, as
 * profilerFireKernelPhaseEvents does before the KernelCh stop. */
void sim_kernel_phase(sim_ctx *c, void *parent, int ch, int phase, uint64_t start, uint64_t stop);

/* NCCL 2.26's ProxyOp states (v3 only: SendPosted .. RecvDone, 0..7) with
 * the op's cumulative transSize and step count; nothing on other ABIs. */
void sim_record_op_v3(sim_ctx *c, void *h, int state, size_t trans, int steps);

#endif

/* The simulator's side of the profiler ABI: one loaded plugin, called the
 * way NCCL calls it for the ABI version in use (init argument order,
 * descriptor layout, which events and states that version knows). */
#ifndef NCCLTOP_SIM_ABI_DRIVER_H
#define NCCLTOP_SIM_ABI_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "../plugin/nccl_profiler_abi.h"

typedef struct {
  void *lib;
  int abi; /* 3..6 */
  const nt_profiler_v3 *v3;
  const nt_profiler_v4 *v4;
  const nt_profiler_v5 *v5; /* v6 has the same shape */
  int mask;                 /* NCCL's process-wide activation mask */
  bool enabled;             /* false when the plugin declined (init failed) */
} sim_driver;

/* dlopens `path` and picks ncclProfiler_v<abi> (0 = newest exported). */
int sim_driver_open(sim_driver *d, const char *path, int abi, char *err, size_t errlen);
int sim_driver_init(sim_driver *d, void **ctx, uint64_t hash, const char *name, int nnodes,
                    int nranks, int rank);
void sim_driver_finalize(sim_driver *d, void *ctx);
/* Whether NCCL would emit an event of this type now, given the mask. */
bool sim_driver_wants(sim_driver *d, int type);

/* Start an event; `d5` is filled in the v5 layout and translated for older
 * versions. Returns the handle (NULL when the plugin dropped it or the
 * version has no such event). */
void *sim_driver_start(sim_driver *d, void *ctx, nt_descr_v5 *d5);
void sim_driver_record(sim_driver *d, void *handle, int state, const nt_state_args_v5 *args);
void sim_driver_stop(sim_driver *d, void *handle);

#endif

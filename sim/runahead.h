/* --run-ahead MS: the CPU enqueues ahead of a GPU that computes MS before
 * every training step (runahead.c). */
#ifndef NCCLTOP_SIM_RUNAHEAD_H
#define NCCLTOP_SIM_RUNAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

/* Deterministic schedule: a training step is 3 collectives (forward,
 * backward, optimizer); collective i starts one when i % 3 == 0. */
#define SIM_DET_STEP_OPS 3

/* Real time, on the application thread: when the simulated GPU of this
 * communicator reaches an operation enqueued now (CLOCK_MONOTONIC ns), 0
 * without --run-ahead. `step_start`: the operation opens a training step,
 * so the GPU computes run_ahead_ms before it. Per application thread. */
uint64_t sim_runahead_gpu_at(const nt_sim_config *c, bool step_start);

/* Deterministic schedule: the extra virtual time step `step` of channel
 * `ch`'s send op of collective `seq` spends in SendGPUWait. */
uint64_t sim_runahead_det_ns(const nt_sim_config *c, uint64_t seq, int ch, int step);

/* Training steps (collectives i with i % 3 == 0) among the first n. */
uint64_t sim_runahead_det_steps(uint64_t n);

#endif

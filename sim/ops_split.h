/* Operations NCCL reports differently from what the application called
 * (--alltoall, --broadcast), and the descriptors of the deterministic
 * schedule once the scenario switches have changed it. See ops_split.c. */
#ifndef NCCLTOP_SIM_OPS_SPLIT_H
#define NCCLTOP_SIM_OPS_SPLIT_H

#include <stdbool.h>
#include <string.h>

#include "schedule.h"
#include "sim.h"

/* Graph ops (--graph): the application captures one training step, one
 * collective per phase, and replays it; collective i of the run is replay
 * i / SIM_GRAPH_OPS of captured op i % SIM_GRAPH_OPS. */
#define SIM_GRAPH_OPS 3

/* The scenario switches replace functions of the schedule: --broadcast the
 * forward AllGathers (a parameter broadcast from one rank), --alltoall the
 * backward ReduceScatters (a mixture-of-experts token exchange). Sizes,
 * phases, algorithms and protocols stay. */
static inline void sim_app_substitute(const nt_sim_config *c, sim_op_desc *d) {
  if (c->broadcast && !strcmp(d->func, "AllGather")) d->func = "Broadcast";
  if (c->alltoall && !strcmp(d->func, "ReduceScatter")) d->func = "AlltoAll";
}

/* Collective i of the deterministic schedule as the application calls it. */
static inline sim_op_desc sim_app_det_op(const nt_sim_config *c, uint64_t i) {
  sim_op_desc d = sim_det_op(c->graph ? i % SIM_GRAPH_OPS : i);
  sim_app_substitute(c, &d);
  return d;
}

/* NCCL 2.29+ runs a Broadcast as an AllGatherV task that no profiler event
 * but its CollApi describes (enqueue.cc collTaskAppend, NCCL_ALLGATHERV_ENABLE
 * on by default; StartTaskEvents never walks the broadcast queue). */
static inline bool sim_bcast_hidden(const nt_sim_config *c, const char *func) {
  return c->nccl_version >= 229 && !strcmp(func, "Broadcast");
}

/* AllGather and Broadcast Coll events count bytes, as ncclInt8, in every
 * release (collTaskAppend multiplies the count by the element size). */
static inline bool sim_counts_bytes(const char *func) {
  return !strcmp(func, "AllGather") || !strcmp(func, "Broadcast");
}

/* The root of the Broadcast that is collective `seq`: rotates over ranks. */
static inline int sim_bcast_root(const nt_sim_config *c, uint64_t seq) {
  return (int)((seq / 3) % (uint64_t)c->ranks);
}

#endif

/* --graph: CUDA graph capture and replay (graph.c). */
#ifndef NCCLTOP_SIM_GRAPH_H
#define NCCLTOP_SIM_GRAPH_H

#include <stdbool.h>

#include "sim.h"

/* Which communicators are intra-node under --graph: communicator 1 (when
 * there are two or more) stands for a tensor-parallel group inside one node
 * (NVLink): it is initialized with nNodes = 1 and its operations have no
 * network proxy ops. Every other communicator keeps the simulation's one
 * GPU per node, every ring hop on the network. Without --graph every
 * communicator is inter-node, as before. */
static inline bool sim_graph_intra(const nt_sim_config *c, int comm) {
  return c->graph && c->comms >= 2 && comm == 1;
}

#endif

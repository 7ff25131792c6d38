/* --ce (scenario.h): copy-engine collectives of NCCL 2.29+ and the profiler
 * v6 descriptors of their events: the plugin's nt_descr_v6, whose CE
 * members are written from NCCL's profiler_v6.h and pinned there. The test
 * recorder reads the descriptor (NT_SIM_CE_DESCR_ONLY). */
#ifndef NCCLTOP_SIM_CE_H
#define NCCLTOP_SIM_CE_H

#include "../plugin/nccl_profiler_abi.h"

typedef nt_descr_v6 sim_ce_descr;

#ifndef NT_SIM_CE_DESCR_ONLY /* the recorder wants only the descriptor */
#include "rank.h"
/* Issues copy-engine collective d (an AllGather) from the application
 * thread as NCCL 2.29+ does (see ce.c); nothing reaches the proxy. */
void sim_ce_issue(sim_comm *c, const sim_op_desc *d, sim_work *w);
#endif

#endif

/* One simulated rank process (rank.c). */
#ifndef NCCLTOP_SIM_RANK_H
#define NCCLTOP_SIM_RANK_H

#include "sim.h"

/* Runs rank `rank` of the job in this process; returns its exit status. */
int sim_rank_main(const nt_sim_config *cfg, int rank);

#endif

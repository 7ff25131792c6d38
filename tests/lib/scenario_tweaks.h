/* The simulator's proxy scenarios as tweaks of a job's configuration
 * (--pxn, --collnet, --ce), for the tests that run each scenario under the
 * recorder and end to end (test_sim_proxy, test_sim_proxy_e2e). */
#ifndef NCCLTOP_TESTS_SCENARIO_TWEAKS_H
#define NCCLTOP_TESTS_SCENARIO_TWEAKS_H

#include "../../sim/sim.h"

typedef void (*tweak_fn)(nt_sim_config *c);

/* Ranks relay other GPUs' network traffic (PXN). */
void tw_pxn(nt_sim_config *c);

/* CollNet operations, which NCCL starts and never stops. */
void tw_collnet(nt_sim_config *c);

/* Copy-engine collectives (2.29's CE events). */
void tw_ce(nt_sim_config *c);

#endif

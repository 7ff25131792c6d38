/* --pxn (scenario.h): a rank's sends copied into its pair's proxy pool, as
 * NCCL's ncclLocalOpAppend copies a PXN op into the proxy of the local rank
 * that owns the NIC. The pair's process learns the originating pid,
 * profilerContext and Coll/P2p handle through a MAP_SHARED ring set up
 * before the ranks fork (sim_pxn_setup). */
#ifndef NCCLTOP_SIM_PXN_H
#define NCCLTOP_SIM_PXN_H

#include "rank.h"

/* Application thread of communicator c, at its start and before it closes
 * its queue: an executor starts (and at the end joins) the thread that
 * feeds its pair's sends into this communicator's proxy queue; an
 * originating rank says it will post no more. */
int sim_pxn_app_begin(sim_comm *c);
void sim_pxn_app_end(sim_comm *c);
/* Before w is queued: an originating rank hands its sends to its pair
 * (they leave w: scn.skip) and keeps the receives. */
void sim_pxn_post(sim_comm *c, sim_work *w);

#endif

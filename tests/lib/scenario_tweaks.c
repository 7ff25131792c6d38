/* See scenario_tweaks.h. */
#include "scenario_tweaks.h"

void tw_pxn(nt_sim_config *c) {
  c->pxn = true;
}

void tw_collnet(nt_sim_config *c) {
  c->collnet = true;
}

void tw_ce(nt_sim_config *c) {
  c->ce = true;
  c->nccl_version = 229;
}

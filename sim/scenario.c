/* The rules of the proxy-side scenarios (scenario.h), the check of the
 * config against the NCCL release played, and what the scenarios change in
 * the deterministic totals (expect.c calls the hooks). */
#include "scenario.h"

#include <stdio.h>
#include <string.h>

#include "../proto/nccltop_proto.h"
#include "version.h"

int sim_scn_check(const nt_sim_config *c) {
  if (c->ce && c->nccl_version < 229) {
    fprintf(stderr,
            "nccltop sim: --ce needs NCCL 2.29 or later (copy-engine collectives and profiler "
            "ABI v6), not %d.%d: add --nccl-version 2.29\n",
            c->nccl_version / 100, c->nccl_version % 100);
    return -1;
  }
  return 0;
}

void sim_scn_plan(const nt_sim_config *c, uint64_t seq, sim_op_desc *d, sim_scn *s) {
  if (sim_collnet_op(c, seq, d->func)) {
    d->algo = sim_collnet_algo(seq);
    d->proto = "SIMPLE"; /* the only protocol CollNet runs */
    s->collnet = true;
  }
  if (sim_ce_op(c, d->func)) s->ce = true;
}

/* ---- expectations ---- */

typedef struct {
  uint64_t it, ce, collnet;
} det_counts;

/* Whether a proxy-side scenario is on: the hooks below change the plain
 * ring's expectations only then. */
static bool any(const nt_sim_config *c) {
  return c->pxn || c->collnet || c->ce;
}

static det_counts counts(const nt_sim_config *c) {
  det_counts n = {(uint64_t)sim_det_iterations(c), 0, 0};
  for (uint64_t i = 0; i < n.it; i++) {
    sim_op_desc d = sim_det_op(i);
    n.ce += sim_ce_op(c, d.func);
    n.collnet += sim_collnet_op(c, i, d.func);
  }
  return n;
}

void nt_sim_expect_scenario(const nt_sim_config *c, int rank, nt_sim_scn_expect *o) {
  det_counts n = counts(c);
  uint64_t ring = n.it - n.ce - n.collnet, ch = (uint64_t)c->channels;
  memset(o, 0, sizeof *o);
  o->ring_colls = ring;
  if (sim_pxn_executor(c, rank)) {
    o->foreign_ops = ring * ch;
    o->foreign_steps = o->foreign_ops * (uint64_t)c->steps;
    o->foreign_bytes = o->foreign_ops * sim_det_op_bytes(c->steps);
  }
  if (sim_pxn_proxied(c, rank)) o->proxied_ops = ring * ch;
  o->never_stopped_ops = n.collnet * 2 * ch;
  o->collnet_colls = n.collnet;
  o->ce_colls = c->abi == 0 || c->abi >= 6 ? n.ce : 0;
  o->ce_syncs = 2 * o->ce_colls;
  o->ce_batches = o->ce_colls;
  for (uint64_t i = 0; i < n.it && o->ce_colls; i++) {
    sim_op_desc d = sim_det_op(i);
    if (sim_ce_op(c, d.func)) o->ce_bytes += d.bytes * (uint64_t)c->ranks;
  }
}

/* Channel totals count the ring's ops only: CE collectives have none,
 * CollNet ops no steps (nt_sim_scn_expect counts them), and a proxied
 * rank's sends are in its pair's process. */
void sim_scn_expect_channel(const nt_sim_config *c, int rank, int dir, nt_sim_channel_expect *o) {
  if (!any(c)) return;
  det_counts n = counts(c);
  uint64_t it = n.it, ring = it - n.ce - n.collnet;
  if (it == 0) return;
  if (dir == NT_DIR_SEND && sim_pxn_proxied(c, rank)) ring = 0;
  o->steps = o->steps / it * ring;
  o->bytes = o->bytes / it * ring;
  o->ops = ring;
  for (int k = 0; k < 3; k++) o->wait_ns[k] = o->wait_ns[k] / it * ring;
  if (!ring) o->peer = -1;
}

/* Each item the proxy takes costs one Idle, Sleep, Wakeup and Append
 * burst; an executor takes its pair's sends as items of their own. */
void sim_scn_expect_proxy(const nt_sim_config *c, int rank, nt_sim_proxy_expect *o) {
  if (!any(c)) return;
  det_counts n = counts(c);
  uint64_t own = n.it - n.ce, ch = (uint64_t)c->channels, st = (uint64_t)c->steps;
  uint64_t send_ns = ch * st * (SIM_SEND_GPU_NS + SIM_SEND_PEER_NS + SIM_SEND_NET_NS);
  uint64_t work = sim_det_work_ns(c->channels, c->steps);
  uint64_t foreign = sim_pxn_executor(c, rank) ? n.it - n.ce - n.collnet : 0;
  uint64_t proxied = sim_pxn_proxied(c, rank) ? n.it - n.ce - n.collnet : 0;
  uint64_t items = own + foreign;
  /* Send ops this thread runs (CollNet ones too: they take the time, with no
   * step events): its own (the ring ones not when its pair
   * runs them) and its pair's; each failed credit try is an idle pass. */
  uint64_t sends = (proxied ? n.collnet : n.it - n.ce) + foreign;
  uint64_t missed = sends * sim_det_credit_misses(c->channels, c->steps) * SIM_SEND_PEER_NS;
  o->state_ns[NT_PROXY_IDLE] = items * SIM_IDLE_NS + missed;
  o->state_ns[NT_PROXY_ACTIVE] = own * work + foreign * send_ns - proxied * send_ns - missed;
  o->state_ns[NT_PROXY_SLEEP] = items * SIM_SLEEP_NS;
  o->state_ns[NT_PROXY_WAKEUP] = items * SIM_WAKEUP_NS;
  o->state_ns[NT_PROXY_APPEND] = items * SIM_APPEND_NS;
  o->appends = items + 1; /* + the shutdown's, of no ops */
  o->appended_ops = own * 2 * ch + foreign * ch - proxied * ch;
  /* its own operations' kernels, CollNet ones too; a CE one has none */
  o->profiler_ops = sim_v_kernel_thread(sim_version_of(c)) ? 0 : own * ch;
  o->wakeups = items + 1;
}

/* CE collectives have no Coll and no kernel channels; CollNet ones keep
 * their KernelCh events (NCCL's profiler proxy op is per channel) but
 * their network steps get no net plugin events. */
void sim_scn_expect_comm(const nt_sim_config *c, nt_sim_comm_expect *o) {
  if (!any(c)) return;
  det_counts n = counts(c);
  if (!n.it) return;
  uint64_t keep = n.it - n.ce, ring = n.it - n.ce - n.collnet;
  o->kernel_busy_ns = o->kernel_busy_ns / o->kernel_count * keep;
  o->colls = keep;
  o->kernel_count = keep;
  o->net_events = o->net_events / n.it * ring;
}

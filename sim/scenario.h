/* The proxy-side scenarios of NCCL (issue 9), which change where and how an
 * operation's proxy work is reported:
 *
 * --pxn (pxn.c): ranks sit on "nodes" of two, ranks 2k and 2k+1. Rank
 *   2k+1's network sends (ring and p2p) go out through the NIC of its pair
 *   2k, as NCCL's PXN does when the NIC nearest the destination belongs to
 *   another local GPU (src/transport/net.cc sendConnect: proxyRank from
 *   ncclTopoGetNetDev; p2p uses it by default, NCCL_P2P_PXN_LEVEL=2). The
 *   op is copied into rank 2k's proxy pool (ncclLocalOpAppend), so rank
 *   2k's proxy thread starts, records and stops it with rank 2k+1's pid,
 *   profilerContext and Coll/P2p handle. Rank 2k+1's proxy thread runs only
 *   its receives; with an odd number of ranks the last one has no pair. The
 *   simulator keeps every ring hop a network hop (nNodes = ranks).
 * --collnet (scenario.c): every AllReduce whose index in its communicator's
 *   sequence is odd runs on CollNet (CollNetDirect when index / 2 is even,
 *   else CollNetChain; protocol SIMPLE). Per channel NCCL posts a send and a
 *   receive op to the CollNet peer (nRanks: channel->collnetDirect.out, and
 *   collnetChain.up with one GPU per node); ncclProxyOpToArgs starts them
 *   with isSend 0 (profiler.cc compares the progress function with the net
 *   transport's), and coll_net.cc's progress functions call no profiler
 *   hook: no InProgress, no steps, no stop.
 * --ce (ce.c, NCCL 2.29+): every AllGather runs on the copy engines
 *   (CTAPolicy ZERO, registered buffers, all ranks in one NVLink domain):
 *   only GroupApi, CollApi and CeColl / CeSync / CeBatch events, no Group,
 *   Coll, KernelLaunch or proxy op.
 */
#ifndef NCCLTOP_SIM_SCENARIO_H
#define NCCLTOP_SIM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "schedule.h"
#include "ops_split.h"
#include "sim.h"

/* How one operation's proxy work departs from the plain ring (sim_work.scn;
 * all zero = the plain ring). */
typedef struct {
  uint8_t skip;     /* directions this process's proxy does not run: bit 0 send, bit 1 recv */
  bool collnet;     /* CollNet ops: started only */
  bool ce;          /* a copy-engine collective: nothing for the proxy */
  int origin_rank;  /* PXN: the rank the op belongs to, when foreign */
  pid_t origin_pid; /* 0: ours */
  void *origin_ctx; /* its profilerContext */
} sim_scn;

#define SIM_SCN_SKIP_SEND 1
#define SIM_SCN_SKIP_RECV 2

/* ---- the placement and the rules, shared with the expectations ---- */

/* --pxn: rank's sends run in its pair's proxy. */
static inline bool sim_pxn_proxied(const nt_sim_config *c, int rank) {
  return c->pxn && rank % 2 == 1;
}
/* --pxn: rank's proxy runs its pair's sends too. */
static inline bool sim_pxn_executor(const nt_sim_config *c, int rank) {
  return c->pxn && rank % 2 == 0 && rank + 1 < c->ranks;
}
static inline bool sim_collnet_op(const nt_sim_config *c, uint64_t seq, const char *func) {
  return c->collnet && seq % 2 == 1 && func[0] == 'A' && func[3] == 'R'; /* AllReduce */
}
static inline bool sim_ce_op(const nt_sim_config *c, const char *func) {
  return c->ce && func[0] == 'A' && func[3] == 'G'; /* AllGather */
}
/* The algorithm a collnet AllReduce reports. */
static inline const char *sim_collnet_algo(uint64_t seq) {
  return (seq / 2) % 2 == 0 ? "COLLNET_DIRECT" : "COLLNET_CHAIN"; /* ncclAlgoToString */
}

/* Collective i of the deterministic schedule under the scenarios (after the
 * application's own substitutions: --graph, --alltoall, --broadcast). */
static inline sim_op_desc sim_scn_det_op(const nt_sim_config *c, uint64_t i) {
  sim_op_desc d = sim_app_det_op(c, i);
  if (sim_collnet_op(c, i, d.func)) d.algo = sim_collnet_algo(i), d.proto = "SIMPLE";
  return d;
}

/* One line on stderr and -1 when the config asks for a scenario the NCCL
 * release played cannot have (--ce before 2.29). */
int sim_scn_check(const nt_sim_config *c);

/* ---- hooks (the application thread, the rank, the job) ---- */

/* After plan(): the scenario of operation `seq` (collnet algorithm, CE). */
void sim_scn_plan(const nt_sim_config *c, uint64_t seq, sim_op_desc *d, sim_scn *s);
/* pxn.c: the job's shared region (before the ranks fork; after they exit). */
int sim_pxn_setup(const nt_sim_config *c);
void sim_pxn_teardown(void);

/* ---- deterministic expectations of the scenarios ---- */

typedef struct {
  uint64_t ring_colls;    /* collectives with ring proxy work (not CE, not CollNet) */
  uint64_t foreign_ops;   /* PXN: ops this process's proxy runs for its pair */
  uint64_t foreign_steps; /* their steps and bytes (transSize at SendWait) */
  uint64_t foreign_bytes;
  uint64_t proxied_ops;       /* PXN: this rank's send ops run by its pair */
  uint64_t never_stopped_ops; /* CollNet ops (started, never stopped) */
  uint64_t collnet_colls;     /* Coll events on CollNetDirect / CollNetChain */
  uint64_t ce_colls, ce_syncs, ce_batches;
  uint64_t ce_bytes; /* sum of CeBatch totalBytes */
} nt_sim_scn_expect;

/* Per rank and communicator (every communicator runs the same schedule). */
void nt_sim_expect_scenario(const nt_sim_config *c, int rank, nt_sim_scn_expect *out);
/* expect.c's hooks: what the scenarios change in its totals. */
void sim_scn_expect_channel(const nt_sim_config *c, int rank, int dir, nt_sim_channel_expect *o);
void sim_scn_expect_proxy(const nt_sim_config *c, int rank, nt_sim_proxy_expect *o);
void sim_scn_expect_comm(const nt_sim_config *c, nt_sim_comm_expect *o);

#endif

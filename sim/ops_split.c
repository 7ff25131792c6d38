/* Operations NCCL reports differently from the call the application made.
 *
 * AlltoAll (--alltoall). From 2.28, ncclAlltoAll is split at enqueue into
 * one Send and one Recv task per peer, self included (enqueue.cc
 * taskAppend -> p2pTaskAppend, which sets info->coll to Send or Recv
 * before the P2pApi event starts), all in the call's implicit group: one
 * GroupApi, 2 x nranks P2pApi events named "Send"/"Recv", no CollApi, then
 * one Group with 2 x nranks P2p events. 2.26 and 2.27 have no ncclAlltoAll;
 * the application groups ncclSend/ncclRecv itself and gets the same Group
 * and P2p events, and those releases' ABIs (v3, v4) have no API events.
 *
 * Only the ring neighbours' Send and Recv get network work here: the
 * simulated proxy serves one send and one receive connection per channel,
 * so the proxy ops of the Send to rank+1 and the Recv from rank-1 are the
 * ring's, and the other peers' P2p events have no proxy-op children (with
 * 2 ranks that is exact: the other peers are the rank itself, a copy in
 * the kernel with no proxy op).
 *
 * Broadcast (--broadcast) on 2.29+: see sim_bcast_hidden. Its proxy ops
 * run with an empty activation mask: ProxyCtrl shows them appended, and
 * nothing else. On 2.28 and before it is an ordinary Coll (app.c). */
#include <string.h>
#include <unistd.h>

#include "app_ops.h"
#include "ops_split.h"

/* API events exist from 2.28 (profiler v5) only. */
static bool wants_api(const sim_ctx *x, const nt_sim_config *cfg, int m, int type) {
  return cfg->nccl_version >= 228 && sim_mask_wants(x->d->abi, m, type);
}

static void *p2p_event(sim_ctx *x, int type, void *parent, int rank, const char *func, size_t count,
                       int peer, void *group) {
  nt_descr_v5 e =
      type == NT_EV_P2P_API ? sim_api_descr(type, parent) : sim_descr(type, parent, rank);
  if (type == NT_EV_P2P_API) {
    e.p2pApi.func = func;
    e.p2pApi.count = count;
    e.p2pApi.datatype = "ncclFloat32";
  } else {
    e.p2p.func = func;
    e.p2p.count = count;
    e.p2p.datatype = "ncclFloat32";
    e.p2p.peer = peer;
    e.p2p.nChannels = 1;
    e.p2p.parentGroup = group;
  }
  return sim_start(x, &e);
}

/* The GroupApi around the call, with its first state; NULL when none. */
static void *group_api(sim_ctx *x, const nt_sim_config *cfg, int m) {
  void *g = NULL;
  if (wants_api(x, cfg, m, NT_EV_GROUP_API)) {
    nt_descr_v5 e = sim_api_descr(NT_EV_GROUP_API, NULL);
    e.groupApi.groupDepth = 1;
    g = sim_start(x, &e);
  }
  sim_record(x, g, NT_ST_GROUP_START_API_STOP, NULL);
  return g;
}

void sim_issue_alltoall(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  sim_ctx *x = &c->px;
  const nt_sim_config *cfg = c->r->cfg;
  int rank = c->r->rank, n = cfg->ranks, m = x->on ? sim_mask_now(x) : 0, abi = x->d->abi;
  size_t count = (size_t)(d->bytes / 4 / (uint64_t)n); /* ncclAlltoAll's count is per peer */
  if (!count) count = 1;
  void *api[2][SIM_MAX_RANKS] = {{NULL}}, *p2p[2][SIM_MAX_RANKS] = {{NULL}};
  w->mask = m;
  w->p2p = true;
  void *gapi = group_api(x, cfg, m);
  for (int r = 0; r < n && r < SIM_MAX_RANKS; r++)
    for (int dir = 0; dir < 2 && wants_api(x, cfg, m, NT_EV_P2P_API); dir++) {
      api[dir][r] = p2p_event(x, NT_EV_P2P_API, gapi, rank, dir ? "Recv" : "Send", count, r, NULL);
      sim_stop(x, api[dir][r]);
    }
  sim_record(x, gapi, NT_ST_GROUP_END_API_START, NULL);
  if (wants_api(x, cfg, m, NT_EV_KERNEL_LAUNCH)) {
    nt_descr_v5 e = sim_api_descr(NT_EV_KERNEL_LAUNCH, gapi);
    sim_stop(x, sim_start(x, &e));
  }
  void *group = NULL;
  if (sim_mask_wants(abi, m, NT_EV_GROUP)) {
    nt_descr_v5 e = sim_descr(NT_EV_GROUP, NULL, 0);
    group = sim_start(x, &e);
  }
  for (int r = 0; r < n && r < SIM_MAX_RANKS; r++)
    for (int dir = 0; dir < 2 && sim_mask_wants(abi, m, NT_EV_P2P); dir++)
      p2p[dir][r] =
          p2p_event(x, NT_EV_P2P, api[dir][r], rank, dir ? "Recv" : "Send", count, r, group);
  int next = (rank + 1) % n, prev = (rank - 1 + n) % n;
  w->coll = next < SIM_MAX_RANKS ? p2p[0][next] : NULL;
  w->recv_parent = prev < SIM_MAX_RANKS ? p2p[1][prev] : NULL;
  sim_queue_push(c, w);
  for (int r = 0; r < n && r < SIM_MAX_RANKS; r++)
    for (int dir = 0; dir < 2; dir++) sim_stop(x, p2p[dir][r]);
  sim_stop(x, group);
  sim_stop(x, gapi);
}

void sim_issue_hidden_bcast(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  sim_api_ev a;
  sim_op_api(c, d, w, false, &a);
  /* No Group (no task in the plan's Coll or P2p queues carries a mask), no
   * Coll; the proxy ops carry an empty mask. */
  w->mask = 0;
  w->coll = w->recv_parent = NULL;
  sim_queue_push(c, w);
  sim_op_api_end(c, &a);
}

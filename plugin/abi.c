/* The exported ncclProfiler_v3 ... _v7 tables. NCCL takes the newest it
 * knows (2.26: v3, 2.27: v4, 2.28: v5, 2.29 and 2.30: v6, 2.31: v7). Each version has its own
 * init (the argument order differs) and its own descriptor layout; the
 * wrappers read the fields we use into a version-neutral nt_ev. */
#include "chain.h"
#include "internal.h"

static nt_nccl_result init_v3(void **ctx, int *mask) {
  /* v3 gives no communicator details and no logger at init: the identity
   * comes with the first Coll/P2p (start_v3). */
  return nt_init(ctx, mask, NULL, 0, 0, 0, -1, NULL, 3);
}

static nt_nccl_result init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                              int nranks, int rank, nt_nccl_logger logfn) {
  return nt_init(ctx, mask, name, hash, nnodes, nranks, rank, logfn, 4);
}

static nt_nccl_result init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nt_nccl_logger logfn) {
  return nt_init(ctx, mask, name, id, nnodes, nranks, rank, logfn, 5);
}

static nt_nccl_result init_v6(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nt_nccl_logger logfn) {
  return nt_init(ctx, mask, name, id, nnodes, nranks, rank, logfn, 6);
}

static nt_nccl_result init_v7(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nt_nccl_logger logfn) {
  return nt_init(ctx, mask, name, id, nnodes, nranks, rank, logfn, 7);
}

/* The union members for proxy ops, steps, kernel channels and net plugin
 * events sit at the same offsets in every version (pinned in
 * nccl_profiler_abi.h), so one macro reads them from any descriptor. */
#define NT_READ_COMMON(ev, d)                                                                      \
  do {                                                                                             \
    (ev).parent = (d)->parentObj;                                                                  \
    (ev).rank = (d)->rank;                                                                         \
    if ((ev).type == NT_EV_PROXY_OP) {                                                             \
      (ev).pid = (d)->proxyOp.pid;                                                                 \
      (ev).channel = (d)->proxyOp.channelId;                                                       \
      (ev).peer = (d)->proxyOp.peer;                                                               \
      (ev).is_send = (d)->proxyOp.isSend;                                                          \
    } else if ((ev).type == NT_EV_PROXY_STEP) {                                                    \
      (ev).step = (d)->proxyStep.step;                                                             \
    } else if ((ev).type == NT_EV_NET_PLUGIN) {                                                    \
      (ev).net_id = (d)->netPlugin.id;                                                             \
      (ev).net_data = (d)->netPlugin.data;                                                         \
    }                                                                                              \
  } while (0)

/* Coll and P2p: v4 and later share one layout up to what we read; v3 has
 * name and commHash in front and no p2p channel count. */
#define NT_READ_OP(ev, d, p2p_channels)                                                            \
  do {                                                                                             \
    if ((ev).type == NT_EV_COLL) {                                                                 \
      (ev).op.func = (d)->coll.func;                                                               \
      (ev).op.datatype = (d)->coll.datatype;                                                       \
      (ev).op.algo = (d)->coll.algo;                                                               \
      (ev).op.proto = (d)->coll.proto;                                                             \
      (ev).op.seq = (d)->coll.seqNumber;                                                           \
      (ev).op.count = (d)->coll.count;                                                             \
      (ev).op.root_peer = (d)->coll.root;                                                          \
      (ev).op.nwarps = (d)->coll.nWarps;                                                           \
    } else if ((ev).type == NT_EV_P2P) {                                                           \
      (ev).op.func = (d)->p2p.func;                                                                \
      (ev).op.datatype = (d)->p2p.datatype;                                                        \
      (ev).op.count = (d)->p2p.count;                                                              \
      (ev).op.root_peer = (d)->p2p.peer;                                                           \
      (ev).op.nchannels = p2p_channels;                                                            \
    }                                                                                              \
  } while (0)

static inline nt_nccl_result own_start_v3(void *ctx, void **h, void *dv) {
  nt_descr_v3 *d = dv;
  if (!d) {
    if (h) *h = NULL;
    return NT_NCCL_SUCCESS;
  }
  if (d->type == NT_EV_PROXY_STEP) return nt_start_step(h, d->parentObj, d->proxyStep.step);
  if (d->type == NT_EV_PROXY_CTRL) return nt_start_ctrl(ctx, h);
  struct nt_ev ev = {.type = d->type};
  NT_READ_COMMON(ev, d);
  NT_READ_OP(ev, d, 0);
  if (ev.type == NT_EV_COLL) ev.op.nchannels = d->coll.nMaxChannels; /* v3: the maximum */
  /* NCCL 2.26 told init nothing about the communicator; its descriptors do. */
  if (ev.type == NT_EV_COLL) nt_context_learn(ctx, d->coll.name, d->coll.commHash, d->rank);
  if (ev.type == NT_EV_P2P) nt_context_learn(ctx, d->p2p.name, d->p2p.commHash, d->rank);
  if (ev.type == NT_EV_KERNEL_CH) ev.channel = d->kernelCh.channelId;
  return nt_start(ctx, h, &ev);
}

static inline nt_nccl_result own_start_v4(void *ctx, void **h, void *dv) {
  nt_descr_v4 *d = dv;
  if (!d) {
    if (h) *h = NULL;
    return NT_NCCL_SUCCESS;
  }
  if (d->type == NT_EV_PROXY_STEP) return nt_start_step(h, d->parentObj, d->proxyStep.step);
  if (d->type == NT_EV_PROXY_CTRL) return nt_start_ctrl(ctx, h);
  struct nt_ev ev = {.type = d->type};
  NT_READ_COMMON(ev, d);
  /* NCCL 2.28+'s v4 shim leaves p2p.nChannels uninitialised: not read. */
  NT_READ_OP(ev, d, 0);
  if (ev.type == NT_EV_COLL) ev.op.nchannels = d->coll.nChannels;
  if (ev.type == NT_EV_KERNEL_CH) {
    ev.channel = d->kernelCh.channelId;
    ev.ptimer = d->kernelCh.pTimer;
  }
  return nt_start(ctx, h, &ev);
}

/* v5, v6 and v7 share the offsets of everything v5 and v6 have (pinned in
 * nccl_profiler_abi.h): one reader for the three layouts. */

/* The starts with few fields return here with their fields only: no
 * nt_ev to zero. The most frequent on the network path (ProxyStep, a third
 * of NCCL's calls, and the proxy thread's control bursts) first, then
 * ProxyOp, KernelCh, and Group, GroupApi and KernelLaunch, which carry none
 * we read. A NULL descriptor gets no handle. The other types go on. */
#define NT_START_FEW_V5(ctx, h, d)                                                                 \
  do {                                                                                             \
    if (!(d)) {                                                                                    \
      if (h) *(h) = NULL;                                                                          \
      return NT_NCCL_SUCCESS;                                                                      \
    }                                                                                              \
    /* Tested before the switch: its jump table cost these two 7% per call. */                     \
    if ((d)->type == NT_EV_PROXY_STEP)                                                             \
      return nt_start_step(h, (d)->parentObj, (d)->proxyStep.step);                                \
    if ((d)->type == NT_EV_PROXY_CTRL) return nt_start_ctrl(ctx, h);                               \
    switch ((d)->type) {                                                                           \
    case NT_EV_PROXY_OP: {                                                                         \
      struct nt_proxy_op_ev op_ = {.parent = (d)->parentObj,                                       \
                                   .rank = (d)->rank,                                              \
                                   .pid = (d)->proxyOp.pid,                                        \
                                   .channel = (d)->proxyOp.channelId,                              \
                                   .peer = (d)->proxyOp.peer,                                      \
                                   .is_send = (d)->proxyOp.isSend};                                \
      return nt_start_proxy_op(ctx, h, &op_);                                                      \
    }                                                                                              \
    case NT_EV_KERNEL_CH:                                                                          \
      return nt_start_kernel_ch(ctx, h, (d)->parentObj, (d)->kernelCh.channelId,                   \
                                (d)->kernelCh.pTimer);                                             \
    case NT_EV_GROUP:                                                                              \
    case NT_EV_GROUP_API:                                                                          \
    case NT_EV_KERNEL_LAUNCH: return nt_start_bare(ctx, h, (uint32_t)(d)->type);                   \
    default: break;                                                                                \
    }                                                                                              \
  } while (0)

#define NT_READ_V5(ev, d)                                                                          \
  do {                                                                                             \
    NT_READ_COMMON(ev, d);                                                                         \
    NT_READ_OP(ev, d, (d)->p2p.nChannels);                                                         \
    if ((ev).type == NT_EV_COLL) (ev).op.nchannels = (d)->coll.nChannels;                          \
    if ((ev).type == NT_EV_KERNEL_CH) {                                                            \
      (ev).channel = (d)->kernelCh.channelId;                                                      \
      (ev).ptimer = (d)->kernelCh.pTimer;                                                          \
    } else if ((ev).type == NT_EV_COLL_API) {                                                      \
      /* Read as a byte: a bool holding anything but 0 or 1 would be UB. */                        \
      (ev).graph_captured = *(const uint8_t *)&(d)->collApi.graphCaptured != 0;                    \
      /* The call as the user made it (a Broadcast on 2.29+ is only this). */                      \
      (ev).op.func = (d)->collApi.func;                                                            \
      (ev).op.count = (d)->collApi.count;                                                          \
      (ev).op.datatype = (d)->collApi.datatype;                                                    \
      (ev).op.root_peer = (d)->collApi.root;                                                       \
    } else if ((ev).type == NT_EV_CE_COLL) {                                                       \
      /* v6+ only: NCCL's v5 shim drops the CE types. */                                           \
      (ev).op.func = (d)->ceColl.func;                                                             \
      (ev).op.count = (d)->ceColl.count;                                                           \
      (ev).op.datatype = (d)->ceColl.datatype;                                                     \
      (ev).op.root_peer = (d)->ceColl.root;                                                        \
    } else if ((ev).type == NT_EV_P2P_API) {                                                       \
      (ev).graph_captured = *(const uint8_t *)&(d)->p2pApi.graphCaptured != 0;                     \
    }                                                                                              \
  } while (0)

static inline nt_nccl_result own_start_v5(void *ctx, void **h, void *dv) {
  nt_descr_v5 *d = dv;
  NT_START_FEW_V5(ctx, h, d);
  /* v5 widened type to 64 bits; anything above our bits is unknown. A v6
   * plugin never gets KernelPhase (2.31's v6 shim drops it). */
  struct nt_ev ev = {.type = d->type > UINT32_MAX ? 0 : (uint32_t)d->type};
  if (ev.type == NT_EV_KERNEL_PHASE) ev.type = 0;
  NT_READ_V5(ev, d);
  return nt_start(ctx, h, &ev);
}

/* v7 (NCCL 2.31): v6's reader plus the user's tag on operations, the
 * symmetric-kernel collectives and the kernel phases. */
static inline nt_nccl_result own_start_v7(void *ctx, void **h, void *dv) {
  nt_descr_v7 *d = dv;
  NT_START_FEW_V5(ctx, h, d);
  struct nt_ev ev = {.type = d->type > UINT32_MAX ? 0 : (uint32_t)d->type};
  NT_READ_V5(ev, d);
  switch (ev.type) {
  case NT_EV_COLL:
    ev.user_tag = d->coll.userTag;
    /* Read as a byte, like graphCaptured. */
    ev.op.sym = *(const uint8_t *)&d->coll.isSymColl != 0;
    if (ev.op.sym) ev.op.variant = d->coll.kernelVariant;
    break;
  case NT_EV_P2P: ev.user_tag = d->p2p.userTag; break;
  case NT_EV_COLL_API: ev.user_tag = d->collApi.userTag; break;
  case NT_EV_P2P_API: ev.user_tag = d->p2pApi.userTag; break;
  case NT_EV_CE_COLL: ev.user_tag = d->ceColl.userTag; break;
  case NT_EV_KERNEL_PHASE:
    ev.channel = d->kernelPhase.channelId;
    ev.phase_id = d->kernelPhase.phaseId;
    ev.ptimer = d->kernelPhase.pTimer;
    break;
  default: break;
  }
  return nt_start(ctx, h, &ev);
}

/* Chained (NCCLTOP_CHAIN, chain.c): both plugins; else one predictable branch. */
#define NT_CHAINED_START(V, D)                                                                     \
  static nt_nccl_result start_v##V(void *ctx, void **h, D *d) {                                    \
    if (nt_chain_active()) return nt_chain_start(V, ctx, h, d, own_start_v##V);                    \
    return own_start_v##V(ctx, h, d);                                                              \
  }
NT_CHAINED_START(3, nt_descr_v3)
NT_CHAINED_START(4, nt_descr_v4)
NT_CHAINED_START(5, nt_descr_v5)
NT_CHAINED_START(7, nt_descr_v7)

static nt_nccl_result stop_any(void *h) {
  if (nt_chain_active()) return nt_chain_stop(h, nt_stop);
  return nt_stop(h);
}

static inline nt_nccl_result own_record_v3(void *h, int state, void *av) {
  nt_state_args_v3 *a = av;
  /* v3's ProxyStep records carry no size we can trust (NCCL 2.26 passed
   * NULL; 2.27+'s v3 shim zeroes them); its ProxyOp records do, as the op's
   * running total when data went out or came in. The union's members
   * overlap: each is read only for its own states. */
  bool op = a && (state == NT_ST_V3_OP_SEND_TRANSMITTED || state == NT_ST_V3_OP_RECV_RECEIVED);
  bool done = a && (state == NT_ST_V3_OP_SEND_DONE || state == NT_ST_V3_OP_RECV_DONE);
  bool ctrl = a && state == NT_ST_CTRL_APPEND_END;
  return nt_record(h, state, op ? a->proxyOp.transSize : 0, op,
                   ctrl   ? a->proxyCtrl.appendedProxyOps
                   : done ? a->proxyOp.steps
                          : 0,
                   0);
}

static inline nt_nccl_result own_record_v4(void *h, int state, void *av) {
  nt_state_args_v4 *a = av;
  /* The union's members overlap: read each one only for its own states
   * (a step's transSize only where the step path uses it). */
  if ((state >= NT_ST_STEP_SEND_GPU_WAIT && state <= NT_ST_STEP_RECV_GPU_WAIT) ||
      state == NT_ST_STEP_SEND_PEER_WAIT)
    return nt_record_step(h, state, a ? &a->proxyStep.transSize : NULL);
  if (!a) return nt_record(h, state, 0, false, 0, 0);
  bool ctrl = state == NT_ST_CTRL_APPEND_END;
  /* v7's KernelPhaseStop carries its stop time where KernelChStop does. */
  bool kernel = state == NT_ST_KERNEL_CH_STOP || state == NT_ST_KERNEL_PHASE_STOP;
  return nt_record(h, state, 0, false, ctrl ? a->proxyCtrl.appendedProxyOps : 0,
                   kernel ? a->kernelCh.pTimer : 0);
}

static nt_nccl_result record_v3(void *h, int state, nt_state_args_v3 *a) {
  if (nt_chain_active()) return nt_chain_record(3, h, state, a, own_record_v3);
  return own_record_v3(h, state, a);
}

/* v4 to v7 share it: the version NCCL speaks is the one it initialised. */
static nt_nccl_result record_v4(void *h, int state, nt_state_args_v4 *a) {
  if (nt_chain_active())
    return nt_chain_record(atomic_load_explicit(&nt_g.abi, memory_order_relaxed), h, state, a,
                           own_record_v4);
  return own_record_v4(h, state, a);
}

static nt_nccl_result finalize_any(void *ctx) {
  if (nt_chain_active()) nt_chain_finalize_ctx(ctx);
  return nt_finalize(ctx);
}

NT_EXPORT const nt_profiler_v3 ncclProfiler_v3 = {
    "nccltop", init_v3, start_v3, stop_any, record_v3, finalize_any,
};
NT_EXPORT const nt_profiler_v4 ncclProfiler_v4 = {
    "nccltop", init_v4, start_v4, stop_any, record_v4, finalize_any,
};
NT_EXPORT const nt_profiler_v5 ncclProfiler_v5 = {
    "nccltop", init_v5, start_v5, stop_any, record_v4, finalize_any,
};
NT_EXPORT const nt_profiler_v6 ncclProfiler_v6 = {
    "nccltop", init_v6, start_v5, stop_any, record_v4, finalize_any,
};
NT_EXPORT const nt_profiler_v7 ncclProfiler_v7 = {
    "nccltop", init_v7, start_v7, stop_any, record_v4, finalize_any,
};

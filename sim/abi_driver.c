/* See abi_driver.h. Descriptors are built in the v5 layout and translated:
 * v4 shares v5's union layout for everything it has (NCCL 2.27 natively,
 * or 2.28+'s src/plugin/profiler/profiler_v4.cc shim); v3 is NCCL 2.26
 * natively (src/plugin/profiler.cc@v2.26.6-1): name and commHash in front
 * of the coll and p2p members, no pTimer, ProxyStep states with NULL
 * arguments, ProxyOp states 0..7 with their own arguments. */
#include "abi_driver.h"
#include "version.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool log_debug;
static int log_rank;

/* NCCL's logger stand-in: silent unless NCCLTOP_SIM_DEBUG is set. */
__attribute__((format(printf, 5, 6))) static void
sim_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags;
  if (!log_debug || !fmt) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccltop sim: rank %d: plugin log %d %s:%d: %s\n", log_rank, level,
          file ? file : "?", line, msg);
}

int sim_driver_open(sim_driver *d, const char *path, int abi, int max_abi, int rank, char *err,
                    size_t errlen) {
  memset(d, 0, sizeof *d);
  d->rank = rank;
  log_rank = rank;
  const char *dbg = getenv("NCCLTOP_SIM_DEBUG");
  log_debug = dbg && *dbg && strcmp(dbg, "0") != 0;
  d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *why = dlerror();
    snprintf(err, errlen, "cannot load %s: %s", path, why ? why : "unknown error");
    return -1;
  }
  for (int v = max_abi >= 3 && max_abi <= 7 ? max_abi : 7; v >= 3; v--) {
    if (abi && v != abi) continue;
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
    void *t = dlsym(d->lib, sym);
    if (!t) continue;
    d->abi = v;
    if (v == 3)
      d->v3 = t;
    else if (v == 4)
      d->v4 = t;
    else if (v == 7)
      d->v7 = t;
    else
      d->v5 = t;
    return 0;
  }
  if (abi)
    snprintf(err, errlen, "%s does not export ncclProfiler_v%d", path, abi);
  else
    snprintf(err, errlen, "%s exports none of ncclProfiler_v%d .. _v3", path,
             max_abi >= 3 && max_abi <= 7 ? max_abi : 7);
  dlclose(d->lib);
  d->lib = NULL;
  return -1;
}

void sim_driver_close(sim_driver *d) {
  if (d->lib && dlclose(d->lib) != 0) {
    const char *why = dlerror();
    fprintf(stderr, "nccltop sim: rank %d: cannot unload the plugin: %s\n", d->rank,
            why ? why : "unknown error");
  }
  d->lib = NULL;
}

void *sim_driver_sym(sim_driver *d, const char *name) {
  return d->lib ? dlsym(d->lib, name) : NULL;
}

int sim_driver_init(sim_driver *d, sim_ctx *c, uint64_t hash, const char *name, int nnodes,
                    int nranks, int rank) {
  int rc;
  c->d = d;
  c->ctx = NULL;
  snprintf(c->name, sizeof c->name, "%s", name ? name : "");
  c->hash = hash;
  if (d->abi == 3)
    rc = d->v3->init(&c->ctx, &d->mask);
  else if (d->abi == 4)
    rc = d->v4->init(&c->ctx, &d->mask, name, hash, nnodes, nranks, rank, sim_logger);
  else if (d->abi == 7)
    rc = d->v7->init(&c->ctx, hash, &d->mask, name, nnodes, nranks, rank, sim_logger);
  else
    rc = d->v5->init(&c->ctx, hash, &d->mask, name, nnodes, nranks, rank, sim_logger);
  c->on = rc == 0;
  c->user_tag = 0;
  /* 2.31 fixes the mask up after every init (KernelPhase needs KernelCh;
   * its v6 shim clears KernelPhase). */
  __atomic_store_n(&d->mask, sim_v_mask_after_init(d->nccl_version, d->abi, d->mask),
                   __ATOMIC_RELAXED);
  return rc;
}

void sim_driver_finalize(sim_ctx *c) {
  if (!c->on || !c->ctx) return;
  sim_driver *d = c->d;
  if (d->abi == 3)
    d->v3->finalize(c->ctx);
  else if (d->abi == 4)
    d->v4->finalize(c->ctx);
  else if (d->abi == 7)
    d->v7->finalize(c->ctx);
  else
    d->v5->finalize(c->ctx);
  c->on = false;
}

int sim_mask_now(const sim_ctx *c) {
  return __atomic_load_n(&c->d->mask, __ATOMIC_RELAXED);
}

/* src/plugin/profiler.cc (2.28.9): the bits that make NCCL start each type. */
bool sim_mask_wants(int abi, int m, int type) {
  const int net = NT_EV_NET_PLUGIN;
  const int ce = NT_EV_CE_COLL | NT_EV_CE_SYNC | NT_EV_CE_BATCH;
  switch (type) {
  case NT_EV_GROUP_API:
    return abi >= 5 && (m & (NT_EV_GROUP_API | NT_EV_P2P_API | NT_EV_COLL_API |
                             NT_EV_KERNEL_LAUNCH | NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P |
                             NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | net | ce));
  case NT_EV_COLL_API:
    return abi >= 5 && (m & (NT_EV_COLL_API | NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_PROXY_STEP |
                             NT_EV_KERNEL_CH | net | ce));
  case NT_EV_P2P_API:
    return abi >= 5 && (m & (NT_EV_P2P_API | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP |
                             NT_EV_KERNEL_CH | net));
  case NT_EV_KERNEL_LAUNCH: return abi >= 5 && (m & NT_EV_KERNEL_LAUNCH);
  case NT_EV_GROUP:
    return m & (NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP |
                NT_EV_KERNEL_CH | net);
  case NT_EV_COLL:
    return m & (NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | net);
  case NT_EV_P2P:
    return m & (NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | net);
  case NT_EV_PROXY_OP: return m & (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_STEP: return m & (NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_CTRL: return m & NT_EV_PROXY_CTRL;
  case NT_EV_KERNEL_CH: return m & NT_EV_KERNEL_CH;
  case NT_EV_KERNEL_PHASE: return abi >= 7 && (m & NT_EV_KERNEL_PHASE);
  case NT_EV_NET_PLUGIN: return m & net;
  default: return false;
  }
}

static void start_v4(sim_ctx *c, void **h, const nt_descr_v5 *e) {
  if (e->type >= NT_EV_GROUP_API) return; /* the shim drops API events */
  nt_descr_v4 v4;
  memset(&v4, 0, sizeof v4);
  v4.type = (uint8_t)e->type;
  /* Without API events a Coll's or P2p's parent is its Group. */
  v4.parentObj = e->type == NT_EV_COLL  ? e->coll.parentGroup
                 : e->type == NT_EV_P2P ? e->p2p.parentGroup
                                        : e->parentObj;
  v4.rank = e->rank;
  /* Same union layout up to v4's end (v5 adds coll.parentGroup after it). */
  memcpy((char *)&v4 + offsetof(nt_descr_v4, coll), (const char *)e + offsetof(nt_descr_v5, coll),
         sizeof v4 - offsetof(nt_descr_v4, coll));
  c->d->v4->startEvent(c->ctx, h, &v4);
}

static void start_v3(sim_ctx *c, void **h, const nt_descr_v5 *e) {
  if (e->type >= NT_EV_GROUP_API) return;
  nt_descr_v3 v3;
  memset(&v3, 0, sizeof v3);
  v3.type = (uint8_t)e->type;
  v3.parentObj = e->parentObj;
  v3.rank = e->rank;
  switch (e->type) {
  case NT_EV_COLL:
    v3.parentObj = e->coll.parentGroup;
    /* StartTaskEvents: the comm's name (NULL when it has none) and hash */
    v3.coll.name = c->name[0] ? c->name : NULL;
    v3.coll.commHash = c->hash;
    v3.coll.seqNumber = e->coll.seqNumber;
    v3.coll.func = e->coll.func;
    v3.coll.sendBuff = e->coll.sendBuff;
    v3.coll.recvBuff = e->coll.recvBuff;
    v3.coll.count = e->coll.count;
    v3.coll.root = e->coll.root;
    v3.coll.datatype = e->coll.datatype;
    v3.coll.nMaxChannels = e->coll.nChannels;
    v3.coll.nWarps = e->coll.nWarps;
    v3.coll.algo = e->coll.algo;
    v3.coll.proto = e->coll.proto;
    break;
  case NT_EV_P2P:
    v3.parentObj = e->p2p.parentGroup;
    v3.p2p.name = c->name[0] ? c->name : NULL;
    v3.p2p.commHash = c->hash;
    v3.p2p.func = e->p2p.func;
    v3.p2p.buff = e->p2p.buff;
    v3.p2p.datatype = e->p2p.datatype;
    v3.p2p.count = e->p2p.count;
    v3.p2p.peer = e->p2p.peer;
    break;
  case NT_EV_PROXY_OP: v3.proxyOp = e->proxyOp; break;
  case NT_EV_PROXY_STEP: v3.proxyStep = e->proxyStep; break;
  case NT_EV_KERNEL_CH: v3.kernelCh.channelId = e->kernelCh.channelId; break;
  case NT_EV_NET_PLUGIN: v3.netPlugin = e->netPlugin; break;
  default: break;
  }
  c->d->v3->startEvent(c->ctx, h, &v3);
}

/* v7 (NCCL 2.31): v6's members at v6's offsets, then the userTag of the
 * communicator's calls on CollApi, P2pApi, Coll, P2p and CeColl. */
static void start_v7(sim_ctx *c, void **h, const nt_descr_v5 *e, const char *variant) {
  nt_descr_v7 v7;
  memset(&v7, 0, sizeof v7);
  memcpy(&v7, e, sizeof *e);
  switch (e->type) {
  case NT_EV_COLL_API: v7.collApi.userTag = c->user_tag; break;
  case NT_EV_P2P_API: v7.p2pApi.userTag = c->user_tag; break;
  case NT_EV_COLL:
    v7.coll.kernelVariant = variant; /* NULL: not a symmetric kernel */
    v7.coll.isSymColl = variant != NULL;
    v7.coll.userTag = c->user_tag;
    break;
  case NT_EV_P2P: v7.p2p.userTag = c->user_tag; break;
  case NT_EV_CE_COLL: v7.ceColl.userTag = c->user_tag; break;
  default: break;
  }
  c->d->v7->startEvent(c->ctx, h, &v7);
}

void sim_kernel_phase(sim_ctx *c, void *parent, int ch, int phase, uint64_t start, uint64_t stop) {
  static const char *const names[] = {"initial_sync", "compute", "final_sync"};
  if (!c->on || c->d->abi != 7 || phase < 0 || phase > 2) return;
  nt_descr_v7 e;
  memset(&e, 0, sizeof e);
  e.type = NT_EV_KERNEL_PHASE;
  e.parentObj = parent;
  e.kernelPhase.channelId = (uint8_t)ch;
  e.kernelPhase.phaseId = (uint8_t)phase;
  e.kernelPhase.phaseName = names[phase];
  e.kernelPhase.pTimer = start;
  void *h = NULL;
  c->d->v7->startEvent(c->ctx, &h, &e);
  if (!h) return;
  nt_state_args_v7 a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = stop;
  c->d->v7->recordEventState(h, NT_ST_KERNEL_PHASE_STOP, &a);
  c->d->v7->stopEvent(h);
}

static void *start_any(sim_ctx *c, nt_descr_v5 *e, const char *variant) {
  void *h = NULL;
  if (!c->on) return NULL;
  if (c->d->abi == 7)
    start_v7(c, &h, e, variant);
  else if (c->d->abi >= 5)
    c->d->v5->startEvent(c->ctx, &h, e);
  else if (c->d->abi == 4)
    start_v4(c, &h, e);
  else
    start_v3(c, &h, e);
  return h;
}

void *sim_start(sim_ctx *c, nt_descr_v5 *e) {
  return start_any(c, e, NULL);
}

void *sim_start_sym(sim_ctx *c, nt_descr_v5 *e, const char *variant) {
  return start_any(c, e, e->type == NT_EV_COLL ? variant : NULL);
}

void sim_record(sim_ctx *c, void *h, int state, const nt_state_args_v5 *args) {
  if (!c->on || !h) return;
  sim_driver *d = c->d;
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  if (args) a = *args;
  if (d->abi == 7) {
    d->v7->recordEventState(h, state, args ? &a : NULL);
  } else if (d->abi >= 5) {
    d->v5->recordEventState(h, state, args ? &a : NULL);
  } else if (d->abi == 4) {
    if (state >= NT_ST_GROUP_START_API_STOP) return;
    d->v4->recordEventState(h, state, args ? &a : NULL);
  } else if (state >= NT_ST_CTRL_IDLE && state <= NT_ST_CTRL_APPEND_END) {
    nt_state_args_v3 v3;
    memset(&v3, 0, sizeof v3);
    v3.proxyCtrl.appendedProxyOps = args ? a.proxyCtrl.appendedProxyOps : 0;
    d->v3->recordEventState(h, state, &v3);
  } else if (state >= NT_ST_STEP_SEND_GPU_WAIT && state <= NT_ST_STEP_RECV_GPU_WAIT) {
    /* 2.26's RecordProxyStepEventState passes no arguments at all. */
    d->v3->recordEventState(h, state, NULL);
  }
  /* InProgress, SendPeerWait, KernelChStop, API states: 2.26 has none;
   * its op states go through sim_record_op_v3. */
}

void sim_record_op_v3(sim_ctx *c, void *h, int state, size_t trans, int steps) {
  if (!c->on || !h || c->d->abi != 3 || state < 0 || state > 7) return;
  nt_state_args_v3 a;
  memset(&a, 0, sizeof a);
  a.proxyOp.transSize = trans;
  a.proxyOp.steps = steps;
  c->d->v3->recordEventState(h, state, &a);
}

void sim_stop(sim_ctx *c, void *h) {
  if (!c->on || !h) return;
  sim_driver *d = c->d;
  if (d->abi == 3)
    d->v3->stopEvent(h);
  else if (d->abi == 4)
    d->v4->stopEvent(h);
  else if (d->abi == 7)
    d->v7->stopEvent(h);
  else
    d->v5->stopEvent(h);
}

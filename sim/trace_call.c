/* One recorded call into the plugin, in the ABI version the recording
 * names: the descriptor rebuilt from the recorded fields (what the recorder
 * does not write, buffers and streams, is NULL), handles and contexts
 * mapped to what the plugin returned, the state arguments in the member
 * the event's type reads. NCCL's own rules stay: no call for a
 * communicator whose init the plugin declined, none for an event type the
 * plugin's mask leaves out, no record or stop of a NULL handle. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_model.h"
#include "version.h"

/* src/plugin/profiler.cc (2.26 to 2.31): the bits that make NCCL start each
 * type; asking for a child event starts its ancestors too. */
bool tr_mask_wants(int abi, int m, uint32_t type) {
  const int net = NT_EV_NET_PLUGIN, ce = NT_EV_CE_COLL | NT_EV_CE_SYNC | NT_EV_CE_BATCH;
  const int task = NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | net;
  switch (type) {
  case NT_EV_GROUP_API:
    return abi >= 5 &&
           (m & (NT_EV_GROUP_API | NT_EV_P2P_API | NT_EV_COLL_API | NT_EV_KERNEL_LAUNCH |
                 NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | task | ce));
  case NT_EV_COLL_API: return abi >= 5 && (m & (NT_EV_COLL_API | NT_EV_COLL | task | ce));
  case NT_EV_P2P_API: return abi >= 5 && (m & (NT_EV_P2P_API | NT_EV_P2P | task));
  case NT_EV_KERNEL_LAUNCH: return abi >= 5 && (m & NT_EV_KERNEL_LAUNCH);
  case NT_EV_GROUP: return m & (NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | task);
  case NT_EV_COLL: return m & (NT_EV_COLL | task);
  case NT_EV_P2P: return m & (NT_EV_P2P | task);
  case NT_EV_PROXY_OP: return m & (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_STEP: return m & (NT_EV_PROXY_STEP | net);
  case NT_EV_PROXY_CTRL: return m & NT_EV_PROXY_CTRL;
  case NT_EV_KERNEL_CH: return m & NT_EV_KERNEL_CH;
  case NT_EV_NET_PLUGIN: return m & net;
  case NT_EV_CE_COLL: return abi >= 6 && (m & ce);
  case NT_EV_CE_SYNC: return abi >= 6 && (m & NT_EV_CE_SYNC);
  case NT_EV_CE_BATCH: return abi >= 6 && (m & NT_EV_CE_BATCH);
  case NT_EV_KERNEL_PHASE: return abi >= 7 && (m & NT_EV_KERNEL_PHASE);
  default: return false;
  }
}

/* NCCL's logger stand-in: silent unless NCCLTOP_SIM_DEBUG is set. */
__attribute__((format(printf, 5, 6))) static void
trace_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags;
  const char *dbg = getenv("NCCLTOP_SIM_DEBUG");
  if (!dbg || !*dbg || !strcmp(dbg, "0") || !fmt) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccltop sim: plugin log %d %s:%d: %s\n", level, file ? file : "?", line, msg);
}

/* A CE collective's stream is recorded as "there was one": this stands for it. */
static char recorded_stream;

static void *handle_of(const tr_player *pl, const tr_ref *r) {
  if (r->idx >= 0) return pl->handles[r->idx];
  return r->idx == TR_REF_FOREIGN ? (void *)(uintptr_t)r->raw : NULL;
}

/* The plugin's context for an event; false when NCCL would make no call
 * (the plugin declined that communicator). */
static bool context_of(const tr_player *pl, const tr_ref *r, void **ctx) {
  if (r->idx == TR_REF_FOREIGN) {
    *ctx = (void *)(uintptr_t)r->raw;
    return true;
  }
  if (r->idx < 0 || !pl->on[r->idx]) return false;
  *ctx = pl->contexts[r->idx];
  return true;
}

static void play_init(tr_player *pl, const tr_call *c) {
  const tr_ctx *x = &pl->p->ctx[c->ref];
  sim_driver *d = &pl->drv;
  void *ctx = NULL;
  int rc;
  /* The recorder declined it: the recording has none of its calls. */
  if (x->fail) return;
  nt_nccl_logger log = x->log ? trace_logger : NULL;
  if (d->abi == 3)
    rc = d->v3->init(&ctx, &d->mask);
  else if (d->abi == 4)
    rc = d->v4->init(&ctx, &d->mask, x->name, x->hash, x->nnodes, x->nranks, x->rank, log);
  else if (d->abi == 7)
    rc = d->v7->init(&ctx, x->hash, &d->mask, x->name, x->nnodes, x->nranks, x->rank, log);
  else
    rc = d->v5->init(&ctx, x->hash, &d->mask, x->name, x->nnodes, x->nranks, x->rank, log);
  pl->contexts[c->ref] = ctx;
  pl->on[c->ref] = rc == 0 && ctx != NULL;
  /* 2.31 (ABI v7) fixes the mask up after every init. */
  if (d->abi == 7)
    __atomic_store_n(&d->mask, sim_v_mask_after_init(231, 7, d->mask), __ATOMIC_RELAXED);
}

/* The descriptor in v5/v6's layout (v4 and v7 are built from it). */
void tr_descr_v5(const tr_player *pl, const tr_event *e, void *parent, nt_descr_v5 *d) {
  memset(d, 0, sizeof *d);
  d->type = e->type;
  d->parentObj = parent;
  d->rank = e->rank;
  switch (e->type) {
  case NT_EV_GROUP_API:
    d->groupApi.groupDepth = e->depth;
    d->groupApi.graphCaptured = e->cap != 0;
    break;
  case NT_EV_COLL_API:
    d->collApi.func = e->func;
    d->collApi.count = (size_t)e->count;
    d->collApi.datatype = e->dtype;
    d->collApi.root = e->root;
    d->collApi.graphCaptured = e->cap != 0;
    break;
  case NT_EV_P2P_API:
    d->p2pApi.func = e->func;
    d->p2pApi.count = (size_t)e->count;
    d->p2pApi.datatype = e->dtype;
    d->p2pApi.graphCaptured = e->cap != 0;
    break;
  case NT_EV_COLL:
    d->coll.seqNumber = e->seq;
    d->coll.func = e->func;
    d->coll.count = (size_t)e->count;
    d->coll.root = e->root;
    d->coll.datatype = e->dtype;
    d->coll.nChannels = (uint8_t)e->nch;
    d->coll.algo = e->algo;
    d->coll.proto = e->proto;
    d->coll.parentGroup = handle_of(pl, &e->pgroup);
    break;
  case NT_EV_P2P:
    d->p2p.func = e->func;
    d->p2p.datatype = e->dtype;
    d->p2p.count = (size_t)e->count;
    d->p2p.peer = e->peer;
    d->p2p.parentGroup = handle_of(pl, &e->pgroup);
    break;
  case NT_EV_PROXY_OP:
    /* The recorded pid is the recording process's: the player's own pid
     * for it (a PXN op names another process of the job). */
    d->proxyOp.pid = e->pid_proc >= 0 ? pl->pids[e->pid_proc] : e->pid;
    d->proxyOp.channelId = (uint8_t)e->ch;
    d->proxyOp.peer = e->peer;
    d->proxyOp.nSteps = e->steps;
    d->proxyOp.chunkSize = e->chunk;
    d->proxyOp.isSend = e->send;
    break;
  case NT_EV_PROXY_STEP: d->proxyStep.step = e->step; break;
  case NT_EV_KERNEL_CH:
    d->kernelCh.channelId = (uint8_t)e->ch;
    d->kernelCh.pTimer = e->ptimer; /* GPU globaltimer ns, as recorded */
    break;
  case NT_EV_CE_COLL:
    d->ceColl.seqNumber = e->seq;
    d->ceColl.func = e->func;
    d->ceColl.count = (size_t)e->count;
    d->ceColl.datatype = e->dtype;
    d->ceColl.syncStrategy = e->label;
    d->ceColl.intraBatchSync = e->intra != 0;
    d->ceColl.ceSeqNum = (uint32_t)e->ceseq;
    d->ceColl.stream = e->stream ? &recorded_stream : NULL;
    break;
  case NT_EV_CE_SYNC:
    d->ceCollSync.isComplete = e->complete != 0;
    d->ceCollSync.nRanks = e->ceranks;
    break;
  case NT_EV_CE_BATCH:
    d->ceCollBatch.numOps = e->numops;
    d->ceCollBatch.totalBytes = (size_t)e->bytes;
    d->ceCollBatch.useIntraSync = e->intra != 0;
    break;
  default: break; /* Group, ProxyCtrl, KernelLaunch, NetPlugin (no data recorded) */
  }
}

static void start_v3(const tr_player *pl, const tr_event *e, void *ctx, void *parent, void **h) {
  nt_descr_v3 d;
  memset(&d, 0, sizeof d);
  d.type = (uint8_t)e->type;
  d.parentObj = parent;
  d.rank = e->rank;
  nt_descr_v5 v5;
  tr_descr_v5(pl, e, parent, &v5);
  switch (e->type) {
  case NT_EV_COLL:
    d.coll.name = e->label;
    d.coll.commHash = e->chash;
    d.coll.seqNumber = e->seq;
    d.coll.func = e->func;
    d.coll.count = (size_t)e->count;
    d.coll.root = e->root;
    d.coll.datatype = e->dtype;
    d.coll.nMaxChannels = (uint8_t)e->nch;
    d.coll.algo = e->algo;
    d.coll.proto = e->proto;
    break;
  case NT_EV_P2P:
    d.p2p.name = e->label;
    d.p2p.commHash = e->chash;
    d.p2p.func = e->func;
    d.p2p.datatype = e->dtype;
    d.p2p.count = (size_t)e->count;
    d.p2p.peer = e->peer;
    break;
  case NT_EV_PROXY_OP: d.proxyOp = v5.proxyOp; break;
  case NT_EV_PROXY_STEP: d.proxyStep = v5.proxyStep; break;
  case NT_EV_KERNEL_CH: d.kernelCh.channelId = (uint8_t)e->ch; break;
  default: break;
  }
  pl->drv.v3->startEvent(ctx, h, &d);
}

static void start_v4(const tr_player *pl, const tr_event *e, void *ctx, void *parent, void **h) {
  nt_descr_v5 v5;
  tr_descr_v5(pl, e, parent, &v5);
  nt_descr_v4 d;
  memset(&d, 0, sizeof d);
  d.type = (uint8_t)e->type;
  d.parentObj = parent;
  d.rank = e->rank;
  /* v4's union is v5's up to v4's end (v5 adds coll.parentGroup after it). */
  memcpy((char *)&d + offsetof(nt_descr_v4, coll), (const char *)&v5 + offsetof(nt_descr_v5, coll),
         sizeof d - offsetof(nt_descr_v4, coll));
  pl->drv.v4->startEvent(ctx, h, &d);
}

static void start_v7(const tr_player *pl, const tr_event *e, void *ctx, void *parent, void **h) {
  nt_descr_v5 v5;
  tr_descr_v5(pl, e, parent, &v5);
  nt_descr_v7 d;
  memset(&d, 0, sizeof d);
  memcpy(&d, &v5, sizeof v5); /* v6's members at v6's offsets */
  switch (e->type) {
  case NT_EV_COLL_API: d.collApi.userTag = e->utag; break;
  case NT_EV_P2P_API: d.p2pApi.userTag = e->utag; break;
  case NT_EV_COLL:
    d.coll.kernelVariant = e->label;
    d.coll.isSymColl = e->sym != 0;
    d.coll.userTag = e->utag;
    break;
  case NT_EV_P2P: d.p2p.userTag = e->utag; break;
  case NT_EV_CE_COLL: d.ceColl.userTag = e->utag; break;
  case NT_EV_KERNEL_PHASE:
    memset(&d.kernelPhase, 0, sizeof d.kernelPhase);
    d.kernelPhase.channelId = (uint8_t)e->ch;
    d.kernelPhase.phaseId = (uint8_t)e->phase;
    d.kernelPhase.phaseName = e->label;
    d.kernelPhase.pTimer = e->ptimer;
    break;
  default: break;
  }
  pl->drv.v7->startEvent(ctx, h, &d);
}

static void play_start(tr_player *pl, const tr_call *c) {
  const tr_event *e = &pl->p->ev[c->ref];
  sim_driver *d = &pl->drv;
  void *ctx = NULL, *h = NULL;
  pl->handles[c->ref] = NULL;
  if (!context_of(pl, &e->ctx, &ctx)) return;
  if (!tr_mask_wants(d->abi, __atomic_load_n(&d->mask, __ATOMIC_RELAXED), e->type)) return;
  void *parent = handle_of(pl, &e->parent);
  if (d->abi == 3)
    start_v3(pl, e, ctx, parent, &h);
  else if (d->abi == 4)
    start_v4(pl, e, ctx, parent, &h);
  else if (d->abi == 7)
    start_v7(pl, e, ctx, parent, &h);
  else {
    nt_descr_v5 v5;
    tr_descr_v5(pl, e, parent, &v5);
    d->v5->startEvent(ctx, &h, &v5);
  }
  pl->handles[c->ref] = h;
}

static void play_record(tr_player *pl, const tr_call *c) {
  void *h = pl->handles[c->ref];
  if (!h) return;
  const tr_event *e = &pl->p->ev[c->ref];
  sim_driver *d = &pl->drv;
  if (d->abi == 3) {
    nt_state_args_v3 a;
    memset(&a, 0, sizeof a);
    if (e->type == NT_EV_PROXY_CTRL) {
      a.proxyCtrl.appendedProxyOps = c->appended;
    } else {
      a.proxyOp.transSize = (size_t)c->size;
      a.proxyOp.steps = c->opsteps;
    }
    d->v3->recordEventState(h, c->state, c->args ? &a : NULL);
    return;
  }
  nt_state_args_v4 a;
  memset(&a, 0, sizeof a);
  switch (e->type) {
  case NT_EV_PROXY_CTRL: a.proxyCtrl.appendedProxyOps = c->appended; break;
  case NT_EV_KERNEL_CH:
  case NT_EV_KERNEL_PHASE: a.kernelCh.pTimer = c->ptimer; break;
  case NT_EV_NET_PLUGIN: a.netPlugin.data = NULL; break; /* not recorded */
  default:
    /* ProxyStep's transSize; for other types the whole 8-byte union, which
     * the recorder writes through transSize too. */
    a.proxyStep.transSize = (size_t)c->size;
    break;
  }
  if (d->abi == 4)
    d->v4->recordEventState(h, c->state, c->args ? &a : NULL);
  else if (d->abi == 7)
    d->v7->recordEventState(h, c->state, c->args ? &a : NULL);
  else
    d->v5->recordEventState(h, c->state, c->args ? &a : NULL);
}

static void play_stop(tr_player *pl, const tr_call *c) {
  void *h = pl->handles[c->ref];
  sim_driver *d = &pl->drv;
  if (!h) return;
  if (d->abi == 3)
    d->v3->stopEvent(h);
  else if (d->abi == 4)
    d->v4->stopEvent(h);
  else if (d->abi == 7)
    d->v7->stopEvent(h);
  else
    d->v5->stopEvent(h);
}

static void finalize_ctx(tr_player *pl, int32_t x) {
  sim_driver *d = &pl->drv;
  if (x < 0 || !pl->on[x]) return;
  pl->on[x] = false;
  void *ctx = pl->contexts[x];
  if (d->abi == 3)
    d->v3->finalize(ctx);
  else if (d->abi == 4)
    d->v4->finalize(ctx);
  else if (d->abi == 7)
    d->v7->finalize(ctx);
  else
    d->v5->finalize(ctx);
}

void tr_call_play(tr_player *pl, uint32_t k) {
  const tr_call *c = &pl->p->calls[k];
  switch (c->verb) {
  case TR_INIT: play_init(pl, c); break;
  case TR_START: play_start(pl, c); break;
  case TR_RECORD: play_record(pl, c); break;
  case TR_STOP: play_stop(pl, c); break;
  default: finalize_ctx(pl, c->ref); break;
  }
}

void tr_call_finalize_open(tr_player *pl) {
  for (uint32_t x = 0; x < pl->p->nctx; x++) finalize_ctx(pl, (int32_t)x);
}

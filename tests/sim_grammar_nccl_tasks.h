/* NCCL's rules, part 1 (sim_grammar_nccl.h puts them together): what the
 * job is beyond its trace, and the rules of the events NCCL emits for the
 * application's calls: API events, Group, Coll and P2p, copy-engine and
 * kernel channel and phase events, symmetric kernels, user tags, ranks.
 * The proxy side's rules: sim_grammar_nccl_proxy.h. */
#ifndef NCCLTOP_SIM_GRAMMAR_NCCL_TASKS_H
#define NCCLTOP_SIM_GRAMMAR_NCCL_TASKS_H

#include "sim_trace.h"

/* What the rules need to know about the job beyond its trace. */
typedef struct {
  int version;       /* the NCCL release, 226 .. 232 (2.26 .. 2.32) */
  bool graphs;       /* ABIs without API events (v3, v4) cannot tell a graph
                        replay's Coll: whether the job may replay graphs */
  bool mask_changes; /* the activation mask may change while the job runs
                        (nccltop_set_mask, 2.31's RAS CONTROL PROFILER_MASK):
                        ProxyCtrl records read the live mask (M2), so a
                        burst may lose its later records */
} nccl_job;

#define NCCL_MAXCHANNELS 64 /* src/include/device.h MAXCHANNELS, 2.26 .. 2.32 */

static char why[512];
#define BAD(...) (snprintf(why, sizeof why, __VA_ARGS__), why)

static inline bool seq_is(const ev_t *e, const int *want, int n) {
  if (e->nrec != n) return false;
  for (int i = 0; i < n; i++)
    if (e->states[i] != want[i]) return false;
  return true;
}

/* The process whose context an event carries: a PXN op's (and its steps'
 * and net events') is the originating one, named by proxyOp.pid. */
static inline int origin_pid(const ev_t *e) {
  const ev_t *x = e;
  for (int i = 0; i < 3 && x; i++) {
    if (x->type == NT_EV_PROXY_OP) return x->oppid > 0 ? x->oppid : x->pid;
    if (x->type != NT_EV_PROXY_STEP && x->type != NT_EV_NET_PLUGIN) break;
    x = x->parent ? find(x->pid, x->parent) : NULL;
  }
  return e->pid;
}

static inline bool ctx_known(const ev_t *e) {
  if (ctx_of(origin_pid(e), e->ctx)) return true;
  /* the step of a dropped op cannot be traced to its op: any job context */
  bool orphan = (e->type == NT_EV_PROXY_STEP || e->type == NT_EV_NET_PLUGIN) && !parent_of(e);
  for (int i = 0; orphan && i < tr.nctx; i++)
    if (tr.ctx[i].ctx == e->ctx) return true;
  return false;
}

/* Copy-engine events (NCCL 2.29+, ce_coll.cc): v6 only, no states;
 * CeColl under a finished CollApi, CeSync and CeBatch inside their CeColl
 * on its thread. */
static inline const char *ce_problem(const ev_t *e, const ev_t *p, int abi) {
  if (abi < 6) return BAD("v%d got CE event %d", abi, e->type);
  if (e->nrec) return BAD("CE event with records (line %d)", e->line);
  if (e->type == NT_EV_CE_COLL) {
    if (e->parent && (!p || p->type != NT_EV_COLL_API || p->stop_line > e->line))
      return BAD("CeColl parent is not a finished CollApi (line %d)", e->line);
    return NULL;
  }
  if (!p || p->type != NT_EV_CE_COLL || p->line > e->line || p->stop_line < e->stop_line ||
      p->tid != e->tid)
    return BAD("CE event %d outside its CeColl (line %d)", e->type, e->line);
  return NULL;
}

/* AlltoAll, Gather and Scatter reach the profiler as Send/Recv (2.28+:
 * enqueue.cc splits them into p2p tasks; 2.26/2.27 have no such call). */
static inline bool never_a_coll(const char *func) {
  return !strcmp(func, "AlltoAll") || !strcmp(func, "Gather") || !strcmp(func, "Scatter");
}

/* A graph replay's Coll/P2p: its API parent was captured (v5+), or, for
 * the ABIs without API events, the job may replay graphs at all. */
static inline bool replayed(const nccl_job *j, const ev_t *p, int abi) {
  return abi >= 5 ? p && p->captured == 1 : j->graphs;
}

/* The NCCL rules shared by Coll and P2p: the function against the API
 * parent's, and for a Coll its seqNumber and count convention. (Which
 * thread: any but the proxy's; a Coll runs on its API thread, a CUDA
 * host-callback thread (a graph, CUDA_LAUNCH_BLOCKING, pending graph work)
 * or a thread of its own (non-blocking communicators), C2.) */
static inline const char *op_problem(const nccl_job *j, const ev_t *e, const ev_t *p, int abi) {
  if (abi >= 5 && p && (p->type == NT_EV_COLL_API || p->type == NT_EV_P2P_API) &&
      strcmp(p->func, e->func))
    return BAD("%s under an API event for %s (line %d)", e->func, p->func, e->line);
  if (e->type != NT_EV_COLL) return NULL;
  if (never_a_coll(e->func)) return BAD("Coll %s (line %d)", e->func, e->line);
  if (j->version >= 229 && !strcmp(e->func, "Broadcast"))
    return BAD("Coll Broadcast on 2.%d (line %d)", j->version % 100, e->line);
  bool bytes = !strcmp(e->func, "AllGather") || !strcmp(e->func, "Broadcast");
  if (bytes && abi >= 4 && strcmp(e->dtype, "ncclInt8"))
    return BAD("%s counted in %s, not bytes (line %d)", e->func, e->dtype, e->line);
  /* seqNumber (C4): one counter per function, never going back; a replay
   * without KernelCh reports the counter without advancing it, so it and
   * the operation next to it may share a number. */
  for (int k = (int)(e - tr.ev) - 1; k >= 0; k--) {
    const ev_t *q = &tr.ev[k];
    if (q->type != NT_EV_COLL || q->pid != e->pid || q->ctx != e->ctx || strcmp(q->func, e->func))
      continue;
    if (q->seq > e->seq ||
        (q->seq == e->seq && !replayed(j, p, abi) && !replayed(j, parent_of(q), abi)))
      return BAD("%s seqNumber %d after %d (line %d)", e->func, e->seq, q->seq, e->line);
    break;
  }
  return NULL;
}

/* More than one stop, or records after the stop, on the one handle: the
 * stale KernelCh handle of 2.27 .. 2.30 (K3: NCCL does not clear
 * sub->kernelEventHandle and can record KernelChStop on it and stop it
 * again), a CollApi stopped again by a thread's next call that skipped its
 * start (M4), a NetPlugin send stopped twice by IB (N2). */
static inline bool may_stop_again(const ev_t *e, int ver) {
  return (e->type == NT_EV_KERNEL_CH && ver >= 227 && ver <= 230) ||
         (e->type == NT_EV_COLL_API && ver >= 228) || e->type == NT_EV_NET_PLUGIN;
}

/* 2.31's KernelPhase (v7 only, profilerFireKernelPhaseEvents): a child of
 * a live KernelCh, on its thread, started, given one KernelPhaseStop with
 * a later pTimer and stopped before the KernelCh's own KernelChStop, inside
 * the KernelCh's [start, stop] GPU interval; phases 0..2 in order. */
static inline const char *kernel_phase_problem(const ev_t *e, const ev_t *p, int abi) {
  if (abi < 7) return BAD("v%d got KernelPhase (line %d)", abi, e->line);
  if (!p || p->type != NT_EV_KERNEL_CH || p->line > e->line)
    return BAD("KernelPhase line %d: parent not an earlier KernelCh", e->line);
  if (e->tid != p->tid) return BAD("KernelPhase line %d: not on its KernelCh's thread", e->line);
  if (e->phase < 0 || e->phase > 2) return BAD("KernelPhase line %d: phase %d", e->line, e->phase);
  if (!(e->nrec == 1 && e->states[0] == NT_ST_KERNEL_PHASE_STOP && e->args[0] &&
        e->ptimer_stop > e->ptimer && e->ptimer))
    return BAD("KernelPhase line %d: no KernelPhaseStop with a later pTimer", e->line);
  if (!e->stops || (p->nrec && e->stop_line > p->rec_line[0]) ||
      (p->stops && e->stop_line > p->stop_line))
    return BAD("KernelPhase line %d: not ended before its KernelCh's stop", e->line);
  if (e->ptimer < p->ptimer || (p->nrec && e->ptimer_stop > p->ptimer_stop))
    return BAD("KernelPhase line %d: outside its KernelCh's GPU time", e->line);
  for (int k = (int)(e - tr.ev) - 1; k >= 0 && tr.ev[k].line > p->line; k--) {
    const ev_t *q = &tr.ev[k];
    if (q->type == NT_EV_KERNEL_PHASE && q->pid == e->pid && q->parent == e->parent &&
        (q->phase >= e->phase || q->ptimer_stop > e->ptimer))
      return BAD("KernelPhase line %d: phase %d after phase %d", e->line, e->phase, q->phase);
  }
  return NULL;
}

/* The calls that carry a userTag from v7 on (CollApi, P2pApi, Coll, P2p,
 * CeColl); none before. */
static inline bool user_call(const ev_t *e) {
  return e->type == NT_EV_COLL || e->type == NT_EV_P2P || e->type == NT_EV_COLL_API ||
         e->type == NT_EV_P2P_API || e->type == NT_EV_CE_COLL;
}

static inline const char *user_tag_presence_problem(const ev_t *e, int abi) {
  if (!user_call(e)) return NULL;
  if (abi < 7 && e->has_utag) return BAD("v%d event with a userTag (line %d)", abi, e->line);
  if (abi >= 7 && !e->has_utag) return BAD("v7 call without a userTag (line %d)", e->line);
  return NULL;
}

/* eDescr.rank (every release read, 2.26 .. 2.31 profiler.cc): NCCL sets it
 * on Coll and P2p (the communicator's rank), ProxyOp, ProxyStep and
 * NetPlugin (sub->rank: the originating rank of a PXN op) and the CE
 * classes; every other descriptor is zeroed and keeps rank 0 on every rank
 * (Group, GroupApi, CollApi, P2pApi, KernelLaunch, ProxyCtrl, KernelCh).
 * 2.26's init names no rank: its descriptors then only have to agree. */
static inline const char *rank_problem(const ev_t *e) {
  switch (e->type) {
  case NT_EV_GROUP:
  case NT_EV_GROUP_API:
  case NT_EV_COLL_API:
  case NT_EV_P2P_API:
  case NT_EV_KERNEL_LAUNCH:
  case NT_EV_PROXY_CTRL:
  case NT_EV_KERNEL_CH:
    return e->rank == 0 ? NULL
                        : BAD("event type %d with rank %d (line %d)", e->type, e->rank, e->line);
  case NT_EV_COLL:
  case NT_EV_P2P:
  case NT_EV_PROXY_OP:
  case NT_EV_PROXY_STEP:
  case NT_EV_CE_COLL:
  case NT_EV_CE_SYNC:
  case NT_EV_CE_BATCH: break;
  default: return NULL;
  }
  const ctx_t *x = ctx_of(origin_pid(e), e->ctx);
  if (!x) return NULL; /* a dropped op's step: no context to compare */
  int want = x->rank;
  for (int k = 0; want < 0 && k < tr.nev; k++) /* 2.26: the first Coll or P2p's */
    if ((tr.ev[k].type == NT_EV_COLL || tr.ev[k].type == NT_EV_P2P) && tr.ev[k].pid == x->pid &&
        tr.ev[k].ctx == x->ctx)
      want = tr.ev[k].rank;
  if (e->rank != want)
    return BAD("event type %d rank %d, its communicator's %d (line %d)", e->type, e->rank, want,
               e->line);
  return NULL;
}

/* A symmetric-kernel Coll (O4): v7 says so (isSymColl); through 2.31's v6
 * shim only the empty proto shows it (no other Coll has one). */
static inline bool sym_coll(const ev_t *e) {
  return e && e->type == NT_EV_COLL && (e->sym == 1 || !e->proto[0]);
}

static inline bool sym_func(const char *func) {
  return !strcmp(func, "AllReduce") || !strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter");
}

/* What NCCL says of a symmetric Coll (O4): none up to 2.30; from 2.31
 * (profiler.cc ncclProfilerStartTaskEvents) isSymColl with a kernelVariant
 * (v7) named after its function, algo the variant after its first '_',
 * proto "", only for AllReduce, AllGather and ReduceScatter; one plan per
 * Group, whose Colls share the kernel and only the first of which may
 * advertise channels. */
static inline const char *symmetric_nccl_problem(const ev_t *e, int abi, int ver) {
  bool sym = sym_coll(e);
  if (abi >= 7 && e->sym != (sym ? 1 : 0))
    return BAD("v7 Coll line %d: isSymColl %d", e->line, e->sym);
  if (!sym) {
    if (abi >= 7 && strcmp(e->variant, "-"))
      return BAD("Coll line %d: kernelVariant %s without isSymColl", e->line, e->variant);
    return NULL;
  }
  if (ver < 231)
    return BAD("2.%d reported a symmetric %s as a Coll (line %d)", ver - 200, e->func, e->line);
  if (!sym_func(e->func)) return BAD("symmetric %s Coll (line %d)", e->func, e->line);
  if (e->proto[0]) return BAD("symmetric Coll line %d: proto %s", e->line, e->proto);
  const char *variant = e->variant, *u = NULL;
  if (abi >= 7) {
    size_t n = strlen(e->func);
    u = strchr(variant, '_');
    if (!strcmp(variant, "-") || strncmp(variant, e->func, n) || variant[n] != '_')
      return BAD("%s Coll line %d: kernelVariant %s", e->func, e->line, variant);
    if (strcmp(e->algo, u + 1))
      return BAD("symmetric Coll line %d: algo %s, variant %s", e->line, e->algo, variant);
  }
  if (!e->algo[0]) return BAD("symmetric Coll line %d: no algo", e->line);
  for (int k = (int)(e - tr.ev) - 1; k >= 0 && e->pgroup; k--) {
    const ev_t *q = &tr.ev[k];
    if (q->type != NT_EV_COLL || q->pid != e->pid || q->pgroup != e->pgroup) continue;
    if (e->nch > 0)
      return BAD("symmetric Coll line %d: nChannels %d but not its plan's first task", e->line,
                 e->nch);
    if (strcmp(q->algo, e->algo) || strcmp(q->variant, e->variant))
      return BAD("symmetric Coll line %d: variant %s in a plan of %s", e->line, e->variant,
                 q->variant);
    break;
  }
  return NULL;
}

/* A child of a symmetric Coll: never a ProxyOp (plan->hasProxyOps is
 * false); KernelCh only under the plan's first task, the one that
 * advertises nChannels, on channels 0 .. nChannels-1
 * (profilerPostPlanWorkSym). */
static inline const char *sym_child_problem(const ev_t *e, const ev_t *p) {
  if (!sym_coll(p)) return NULL;
  if (e->type == NT_EV_PROXY_OP)
    return BAD("ProxyOp line %d under a symmetric Coll (line %d)", e->line, p->line);
  if (e->type == NT_EV_KERNEL_CH && (p->nch <= 0 || e->ch < 0 || e->ch >= p->nch))
    return BAD("KernelCh line %d: channel %d under a symmetric Coll with nChannels %d", e->line,
               e->ch, p->nch);
  return NULL;
}

static inline const char *coll_problem(const nccl_job *j, const ev_t *e, const ev_t *p, int abi) {
  /* collTaskAppend (C3): AllGather and Broadcast in bytes of ncclInt8. */
  if ((!strcmp(e->func, "AllGather") || !strcmp(e->func, "Broadcast")) && !e->int8)
    return BAD("%s Coll line %d: int8 %d", e->func, e->line, e->int8);
  if (abi == 3 && !e->chash) return BAD("2.26 Coll line %d carries no communicator hash", e->line);
  if (abi >= 5) {
    if (e->parent && (!p || p->type != NT_EV_COLL_API || p->stop_line > e->line))
      return BAD("v5 Coll parent is not a finished CollApi (line %d)", e->line);
    const ev_t *g = e->pgroup ? find(e->pid, e->pgroup) : NULL;
    if (e->pgroup && (!g || g->type != NT_EV_GROUP)) return BAD("coll.parentGroup is not a Group");
  } else if (e->parent && (!p || p->type != NT_EV_GROUP)) {
    return BAD("v%d Coll parent is not a Group (line %d)", abi, e->line);
  }
  if (op_problem(j, e, p, abi)) return why;
  if (symmetric_nccl_problem(e, abi, j->version)) return why;
  return NULL;
}

static inline const char *p2p_problem(const nccl_job *j, const ev_t *e, const ev_t *p, int abi) {
  if (abi >= 5 && e->parent && (!p || p->type != NT_EV_P2P_API || p->stop_line > e->line))
    return BAD("v5 P2p parent is not a finished P2pApi (line %d)", e->line);
  if (strcmp(e->func, "Send") && strcmp(e->func, "Recv"))
    return BAD("P2p func %s (line %d)", e->func, e->line);
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  if (x && x->nranks > 0 && (e->peer < 0 || e->peer >= x->nranks))
    return BAD("P2p peer %d of %d ranks (line %d)", e->peer, x->nranks, e->line);
  return op_problem(j, e, p, abi);
}

static inline const char *api_problem(const ev_t *e, const ev_t *p) {
  static const int gapi[] = {NT_ST_GROUP_START_API_STOP, NT_ST_GROUP_END_API_START};
  switch (e->type) {
  case NT_EV_GROUP_API:
    /* groupDepth: ncclGroupDepth when the outermost group's first task is
     * appended: 1 for a lone call, more under the application's own
     * ncclGroupStart (PyTorch's batches: 3). */
    if (!seq_is(e, gapi, 2) || e->args[0] || e->args[1] || e->depth < 1)
      return BAD("GroupApi line %d: states or args wrong", e->line);
    if (e->parent) return BAD("GroupApi line %d with a parent", e->line);
    return NULL;
  case NT_EV_COLL_API:
    if (never_a_coll(e->func)) return BAD("CollApi %s (line %d)", e->func, e->line);
    /* fall through */
  case NT_EV_P2P_API:
  case NT_EV_KERNEL_LAUNCH:
    if (e->nrec) return BAD("API event line %d with records", e->line);
    if (e->parent && (!p || p->type != NT_EV_GROUP_API))
      return BAD("API event line %d: parent is not a GroupApi", e->line);
    return NULL;
  default: return NULL;
  }
}

static inline const char *kernel_ch_problem(const ev_t *e, const ev_t *p, int abi) {
  if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P) || p->line > e->line))
    return BAD("KernelCh parent not an earlier Coll or P2p (line %d)", e->line);
  if (sym_child_problem(e, p)) return why;
  if (e->ch < 0 || e->ch >= NCCL_MAXCHANNELS) return BAD("KernelCh channel %d", e->ch);
  if (abi >= 4 && !(e->nrec == 1 && e->states[0] == NT_ST_KERNEL_CH_STOP &&
                    e->ptimer_stop > e->ptimer && e->ptimer))
    return BAD("KernelCh line %d: no KernelChStop with a later pTimer", e->line);
  if (abi == 3 && e->nrec) return BAD("v3 KernelCh has records");
  return NULL;
}

#endif

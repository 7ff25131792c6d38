/* The rules NCCL itself keeps when it calls a profiler plugin, checked on a
 * parsed trace (sim_trace.h): every real recording (tests/traces/,
 * tests/test_trace_grammar.c) and every simulator run (sim_grammar.h adds
 * the simulator's own bookkeeping on top). Each rule is one NCCL
 * guarantees in every job of the release named, read in its source and
 * checked against the real 2.28.9 recordings (docs/NCCL-BEHAVIOUR.md names
 * the row); what holds only for the jobs the simulator plays (ring peers,
 * its channel count, its sizes, exactly as many ops appended as started)
 * is not here. */
#ifndef NCCLTOP_SIM_GRAMMAR_NCCL_H
#define NCCLTOP_SIM_GRAMMAR_NCCL_H

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

/* A ProxyOp of a CollNet collective (coll_net.cc): never stopped. */
static inline bool collnet_op(const ev_t *e) {
  const ev_t *p = e->type == NT_EV_PROXY_OP ? parent_of(e) : NULL;
  return p && p->type == NT_EV_COLL && !strncmp(p->algo, "COLLNET_", 8);
}

/* Two contexts of one communicator (in two processes): the simulator names
 * its communicators; real ones may have no name (PyTorch's), but every
 * rank has the communicator's hash (v4+). */
static inline bool same_comm(const ctx_t *x, const ctx_t *y) {
  if (x->comm >= 0 || y->comm >= 0) return x->comm == y->comm;
  return x->hash && x->hash == y->hash;
}

/* The thread that runs the proxy side of (pid, the communicator of ctx x). */
static inline long proxy_tid(int pid, const ctx_t *x) {
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *y = &tr.ctx[i];
    if (y->pid != pid || !same_comm(x, y)) continue;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *f = &tr.ev[j];
      if (f->pid == pid && f->ctx == y->ctx &&
          (f->type == NT_EV_PROXY_CTRL || f->type == NT_EV_PROXY_OP))
        return f->tid;
    }
  }
  return 0;
}

/* PXN: NCCL copies a send into the proxy pool of another local process
 * (ncclLocalOpAppend), whose proxy thread then runs it with the
 * originating pid, context and parent. Only sends, and only there. */
static inline const char *foreign_problem(void) {
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    int o = origin_pid(e);
    if (o == e->pid) continue;
    const ctx_t *x = ctx_of(o, e->ctx);
    if (!x) return BAD("foreign event with a context not of pid %d (line %d)", o, e->line);
    if (e->type == NT_EV_PROXY_OP && !e->send)
      return BAD("a receive op run by another process (line %d)", e->line);
    long tid = proxy_tid(e->pid, x);
    if (!tid || e->tid != tid || (e->h && e->stop_tid != tid))
      return BAD("foreign event off its executor's proxy thread (line %d)", e->line);
  }
  return NULL;
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

/* The ctrl event (same thread) whose Append .. AppendEnd encloses `op`. */
static inline const ev_t *append_burst_around(const ev_t *op) {
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *c = &tr.ev[i];
    if (c->type != NT_EV_PROXY_CTRL || c->pid != op->pid || c->tid != op->tid || c->nrec != 2 ||
        c->states[0] != NT_ST_CTRL_APPEND)
      continue;
    if (c->rec_line[0] < op->line && op->line < c->rec_line[1]) return c;
  }
  return NULL;
}

/* A ctrl event of the op's thread open when the op started that is no
 * Append burst: a sleeping thread, or one recording an Idle/Active edge,
 * appends nothing (proxy.cc ncclProxyGetPostedOps, ncclProxyProgress). */
static inline const ev_t *other_ctrl_around(const ev_t *op) {
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *c = &tr.ev[i];
    if (c->type != NT_EV_PROXY_CTRL || c->pid != op->pid || c->tid != op->tid ||
        c->line > op->line || !c->stops || c->stop_line < op->line)
      continue;
    if (!(c->nrec >= 1 && c->states[0] == NT_ST_CTRL_APPEND)) return c;
  }
  return NULL;
}

static inline int ops_inside(const ev_t *burst) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_OP && e->pid == burst->pid && e->tid == burst->tid &&
        burst->rec_line[0] < e->line && e->line < burst->rec_line[1])
      n++;
  }
  return n;
}

/* transSize as NCCL passes it (S2): the op's sub->transSize with every
 * step record, set just before SendWait and RecvFlushWait (any value, 0
 * included: a step can carry no bytes). Between those the value is stale:
 * after the op's first SendWait/RecvFlushWait it is the last one set;
 * before it, whatever the previous op of that sub slot left (the proxy
 * reuses its args without clearing them), so anything. Checks every
 * record of op `op` in line order; on the simulator's runs (`sim`) also
 * that it never sets 0, and (`det`) the deterministic sizes. */
static inline const char *check_sizes(const ev_t *op, bool sim, bool det) {
  static int steps[4096];
  int n = 0;
  for (int i = 0; i < tr.nev && n < 4096; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type == NT_EV_PROXY_STEP && s->pid == op->pid && s->parent == op->h) steps[n++] = i;
  }
  unsigned long long cur = 0;
  bool set = false;
  for (int line = op->line;;) {
    /* the next record (by line) of any step of this op */
    const ev_t *best = NULL;
    int bi = 0, bl = INT32_MAX;
    for (int k = 0; k < n; k++) {
      const ev_t *s = &tr.ev[steps[k]];
      for (int r = 0; r < s->nrec; r++)
        if (s->rec_line[r] > line && s->rec_line[r] < bl) best = s, bi = r, bl = s->rec_line[r];
    }
    if (!best) return NULL;
    line = bl;
    int st = best->states[bi];
    unsigned long long sz = best->size[bi];
    if (st == NT_ST_STEP_SEND_WAIT || st == NT_ST_STEP_RECV_FLUSH_WAIT) {
      if (det && sz != 131072ull + 4096ull * (unsigned long long)best->step)
        return BAD("step %d of op line %d: size %llu at state %d", best->step, op->line, sz, st);
      if (sim && !sz) return BAD("zero transSize at state %d", st);
      cur = sz, set = true;
    } else if (set && sz != cur) {
      return BAD("op line %d step %d state %d: size %llu, NCCL would pass %llu", op->line,
                 best->step, st, sz, cur);
    }
  }
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

/* 2.27+: SendGPUWait, then SendPeerWait before every isend try (1..N: a
 * try fails while the receiver gives no credit), then SendWait. */
static inline bool send_states_ok(const ev_t *e) {
  if (e->nrec < 3 || e->states[0] != NT_ST_STEP_SEND_GPU_WAIT ||
      e->states[e->nrec - 1] != NT_ST_STEP_SEND_WAIT)
    return false;
  for (int r = 1; r < e->nrec - 1; r++)
    if (e->states[r] != NT_ST_STEP_SEND_PEER_WAIT) return false;
  return true;
}

/* A recv step slot NCCL started again (S3, 2.27+): the first start could
 * not post its irecv, so it has no record and is never stopped; a later
 * step of the same op takes the same step number. */
static inline bool restarted_slot(const ev_t *e, const ev_t *op, int ver) {
  if (ver < 227 || !op || op->send || e->nrec || e->stops) return false;
  for (int i = (int)(e - tr.ev) + 1; i < tr.nev; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type == NT_EV_PROXY_STEP && s->pid == e->pid && s->parent == e->parent &&
        s->step == e->step)
      return true;
  }
  return false;
}

/* An event NCCL started and never stopped, in a job that ran to its end
 * (an aborted communicator leaves many open: A1, outside these rules):
 * the recv step of 2.26's done loop (#1658: the later of two steps retired
 * in one pass, whose predecessor is stopped after its last record); a
 * restarted recv step slot (S3); a ProxyOp no net transport progresses
 * (CollNet, the p2p transport's CE memcpy, P2: no record, no step). */
static inline const char *unstopped_problem(const ev_t *e, int ver) {
  const ev_t *p = parent_of(e);
  if (e->type == NT_EV_PROXY_STEP && sim_v_recv_stop_bug(ver) && p && !p->send && e->nrec == 3) {
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *s = &tr.ev[i];
      if (s->type == NT_EV_PROXY_STEP && s->pid == e->pid && s->parent == e->parent &&
          s->step == e->step - 1 && s->stops == 1 && s->stop_line > e->rec_line[2])
        return NULL;
    }
  }
  if (e->type == NT_EV_PROXY_STEP && restarted_slot(e, p, ver)) return NULL;
  if (e->type == NT_EV_PROXY_OP && ver >= 227 && !e->nrec) {
    bool steps = false;
    for (int i = (int)(e - tr.ev) + 1; i < tr.nev && !steps; i++)
      steps =
          tr.ev[i].type == NT_EV_PROXY_STEP && tr.ev[i].pid == e->pid && tr.ev[i].parent == e->h;
    if (!steps) return NULL;
  }
  return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
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

/* 2.26's ProxyOp states (net.cc@v2.26.6-1): per step Posted, then (send)
 * SendRemFifoWait per isend try and SendTransmitted, or (recv)
 * RecvReceived and RecvTransmitted, then Done; arguments always, with a
 * transSize that only grows; nSteps Done records, the last one at nSteps. */
static inline const char *v3_op_problem(const ev_t *e) {
  int lo = e->send ? 0 : 4, done = 0, posted = 0;
  unsigned long long last = 0;
  for (int r = 0; r < e->nrec; r++) {
    int st = e->states[r];
    if (st < lo || st > lo + 3 || !e->args[r] || e->size[r] < last)
      return BAD("2.26 op line %d record %d: state %d args %d size %llu", e->line, r, st,
                 e->args[r], e->size[r]);
    last = e->size[r];
    posted += st == lo;
    done += st == lo + 3;
  }
  if (e->h &&
      (posted != e->steps || done != e->steps || (e->nrec && e->opsteps[e->nrec - 1] != e->steps)))
    return BAD("2.26 op line %d: %d posted, %d done of %d steps", e->line, posted, done, e->steps);
  return NULL;
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

static inline const char *step_problem(const nccl_job *j, const ev_t *e, const ev_t *p, int abi) {
  static const int send3[] = {NT_ST_STEP_SEND_GPU_WAIT, NT_ST_STEP_SEND_WAIT};
  static const int recv[] = {NT_ST_STEP_RECV_WAIT, NT_ST_STEP_RECV_FLUSH_WAIT,
                             NT_ST_STEP_RECV_GPU_WAIT};
  int ver = j->version;
  if (!p) {
    if (e->nrec) return BAD("step of a dropped op has records (line %d)", e->line);
    if (!e->parent && sim_v_steps_need_op(ver))
      return BAD("NCCL 2.%d starts no step of a dropped op (line %d)", ver - 200, e->line);
    return NULL;
  }
  if (p->type != NT_EV_PROXY_OP || p->line > e->line)
    return BAD("step parent is not an earlier op (line %d)", e->line);
  if (collnet_op(p)) return BAD("a CollNet op has a step (line %d)", e->line);
  if (p->stop_line < e->stop_line ||
      (!e->stops && e->nrec && p->stop_line < e->rec_line[e->nrec - 1]))
    return BAD("op stopped before its step (line %d)", e->line);
  if (e->step < 0 || e->step >= p->steps) return BAD("step %d of %d", e->step, p->steps);
  if (e->tid != p->tid) return BAD("step and op on different threads");
  if (abi >= 4 && p->nrec && p->rec_line[0] > e->line) return BAD("step before InProgress");
  if (restarted_slot(e, p, ver)) return NULL;
  bool ok = p->send ? (abi >= 4 ? send_states_ok(e) : seq_is(e, send3, 2)) : seq_is(e, recv, 3);
  if (!ok)
    return BAD("%s step line %d has %d states, first %d", p->send ? "send" : "recv", e->line,
               e->nrec, e->nrec ? e->states[0] : -1);
  for (int r = 0; r < e->nrec && abi == 3; r++)
    if (e->args[r]) return BAD("2.26 passes step states no arguments (line %d)", e->line);
  return NULL;
}

static inline const char *proxy_op_problem(const nccl_job *j, const ev_t *e, const ev_t *p,
                                           int abi) {
  int ver = j->version;
  bool cn = collnet_op(e);
  if (cn && (e->nrec || e->stops || e->send))
    return BAD("CollNet op line %d: %d records, %d stops, isSend %d", e->line, e->nrec, e->stops,
               e->send);
  if (!cn && abi == 3 && v3_op_problem(e)) return why;
  /* 2.27+: one InProgress at the op's first progress pass (net.cc); an op
   * no net transport progresses gets none and is never stopped (P2). */
  if (!cn && abi >= 4 && e->stops && !(e->nrec == 1 && e->states[0] == NT_ST_OP_IN_PROGRESS))
    return BAD("op line %d: %d records", e->line, e->nrec);
  if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P) || p->line > e->line))
    return BAD("op parent is not an earlier Coll or P2p (line %d)", e->line);
  if (sym_child_problem(e, p)) return why;
  /* 2.27+ start ops in ncclProxyOpToArgs, inside the Append burst when
   * ProxyCtrl is on; 2.26 at the first progress pass (P1). */
  const ev_t *c = other_ctrl_around(e);
  if (!sim_v_native_v3(ver) && c && !j->mask_changes)
    return BAD("op started inside a ctrl event that is no Append burst (line %d, ctrl line %d)",
               e->line, c->line);
  if (sim_v_native_v3(ver) && append_burst_around(e))
    return BAD("2.26 op started inside an Append burst (line %d)", e->line);
  const ctx_t *x = ctx_of(origin_pid(e), e->ctx);
  if (!cn && x && x->nranks > 0 && (e->peer < 0 || e->peer >= x->nranks))
    return BAD("op peer %d of %d ranks (line %d)", e->peer, x->nranks, e->line);
  if (e->oppid != e->pid && !(e->send && x && x->pid == e->oppid))
    return BAD("op pid %d in process %d", e->oppid, e->pid);
  if (e->ch < 0 || e->ch >= NCCL_MAXCHANNELS) return BAD("op channel %d", e->ch);
  if (abi >= 4 && check_sizes(e, false, false)) return why;
  return NULL;
}

static inline const char *ctrl_problem(const nccl_job *j, const ev_t *e) {
  int ver = j->version;
  bool edge =
      e->nrec == 1 && (e->states[0] == NT_ST_CTRL_IDLE || e->states[0] == NT_ST_CTRL_ACTIVE);
  bool sleep =
      e->nrec == 2 && e->states[0] == NT_ST_CTRL_SLEEP && e->states[1] == NT_ST_CTRL_WAKEUP;
  bool append =
      e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND && e->states[1] == NT_ST_CTRL_APPEND_END;
  /* 2.26 starts and stops one on every progress-loop pass (V5). */
  bool empty = e->nrec == 0 && sim_v_ctrl_every_pass(ver);
  /* A mask change between the start and a record drops the record
   * (ncclProfilerRecordProxyCtrlEventState reads the live mask): a burst
   * cut short. */
  bool cut =
      j->mask_changes && (e->nrec == 0 || (e->nrec == 1 && (e->states[0] == NT_ST_CTRL_SLEEP ||
                                                            e->states[0] == NT_ST_CTRL_APPEND)));
  if (!edge && !sleep && !append && !empty && !cut) return BAD("ctrl line %d: bad burst", e->line);
  if (e->parent) return BAD("ctrl with a parent");
  /* appendedProxyOps counts every op taken (ncclProxyGetPostedOps), those
   * NCCL starts no ProxyOp for too: KernelCh's profiler ops up to 2.30, a
   * 2.29+ Broadcast's (empty mask), ops whose task's mask has no proxy
   * class; so at least the ops started inside, 0 when woken with nothing
   * new (R3). */
  if (append && (int)e->size[1] < ops_inside(e))
    return BAD("AppendEnd says %llu ops, %d started inside", e->size[1], ops_inside(e));
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

/* Threads, per (process, context): the proxy side (ProxyOp, ProxyStep,
 * ProxyCtrl, and up to 2.30 KernelCh) on one thread; 2.31+'s KernelCh and
 * KernelPhase on another, the profiler thread; the application side (API
 * events, Group, Coll, P2p, CE) on neither; every stop on its start's
 * thread; Idle and Active edges alternate on the proxy thread (R1). */
static inline const char *nccl_threads_problem(const nccl_job *j) {
  int ver = j->version;
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    long proxy = 0, prof = 0;
    int last_edge = -1;
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *f = &tr.ev[k];
      if (f->pid != x->pid || f->ctx != x->ctx) continue;
      if (f->h && f->stops && f->stop_tid != f->tid && f->type != NT_EV_NET_PLUGIN)
        return BAD("event type %d stopped on another thread (line %d)", f->type, f->line);
      bool kernel = f->type == NT_EV_KERNEL_CH || f->type == NT_EV_KERNEL_PHASE;
      bool side = f->type == NT_EV_PROXY_OP || f->type == NT_EV_PROXY_STEP ||
                  f->type == NT_EV_PROXY_CTRL || (kernel && !sim_v_kernel_thread(ver));
      long *tid = side ? &proxy : kernel ? &prof : NULL;
      if (!tid) continue;
      if (!*tid) *tid = f->tid;
      if (*tid != f->tid)
        return BAD("%s events on two threads (line %d)", side ? "proxy" : "profiler-thread",
                   f->line);
      if (f->type == NT_EV_PROXY_CTRL && f->nrec == 1 && !j->mask_changes &&
          (f->states[0] == NT_ST_CTRL_IDLE || f->states[0] == NT_ST_CTRL_ACTIVE)) {
        if (f->states[0] == last_edge)
          return BAD("two edges %d in a row (line %d)", last_edge, f->line);
        last_edge = f->states[0];
      }
    }
    if (proxy && proxy == prof) return BAD("proxy and profiler-thread events on one thread");
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *f = &tr.ev[k];
      bool app = f->type == NT_EV_GROUP || f->type == NT_EV_COLL || f->type == NT_EV_P2P ||
                 f->type >= NT_EV_GROUP_API;
      if (f->pid != x->pid || f->ctx != x->ctx || !app || f->type == NT_EV_KERNEL_PHASE) continue;
      if ((proxy && f->tid == proxy) || (prof && f->tid == prof))
        return BAD("application-side event type %d on the %s thread (line %d)", f->type,
                   f->tid == proxy ? "proxy" : "profiler", f->line);
    }
  }
  return NULL;
}

/* Everything NCCL guarantees about the calls of one job that ran to its
 * end. */
static inline const char *nccl_problem(const nccl_job *j) {
  int abi = tr.nctx ? tr.ctx[0].version : 0, ver = j->version;
  if (tr.bad_lines || tr.overflow) return BAD("unreadable trace (%d bad lines)", tr.bad_lines);
  if (!tr.nctx) return BAD("no init in the trace");
  if (tr.null_calls) return BAD("%d record/stop calls with a NULL handle", tr.null_calls);
  if (tr.unknown_handles) return BAD("%d calls with a handle never returned", tr.unknown_handles);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *p = parent_of(e);
    if (e->h && e->stops == 0 && unstopped_problem(e, ver)) return why;
    if (e->h && e->stops && e->stop_line < e->line)
      return BAD("event type %d (line %d) stopped before it started", e->type, e->line);
    if (e->h && e->stops > 1 && !may_stop_again(e, ver))
      return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
    if (e->extra_records && !may_stop_again(e, ver))
      return BAD("record after stop (line %d)", e->line);
    if (!ctx_known(e)) return BAD("start with an unknown context (line %d)", e->line);
    if (abi < 5 && e->type >= NT_EV_GROUP_API) return BAD("v%d got API event %d", abi, e->type);
    if (rank_problem(e)) return why;
    switch (e->type) {
    case NT_EV_GROUP:
      if (e->parent || e->nrec) return BAD("Group line %d with a parent or records", e->line);
      break;
    case NT_EV_PROXY_STEP:
      if (step_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_PROXY_OP:
      if (proxy_op_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_PROXY_CTRL:
      if (ctrl_problem(j, e)) return why;
      break;
    case NT_EV_COLL:
      if (coll_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_P2P:
      if (p2p_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_GROUP_API:
    case NT_EV_COLL_API:
    case NT_EV_P2P_API:
    case NT_EV_KERNEL_LAUNCH:
      if (api_problem(e, p)) return why;
      break;
    case NT_EV_KERNEL_CH:
      if (kernel_ch_problem(e, p, abi)) return why;
      break;
    case NT_EV_CE_COLL:
    case NT_EV_CE_SYNC:
    case NT_EV_CE_BATCH:
      if (ce_problem(e, p, abi)) return why;
      break;
    case NT_EV_KERNEL_PHASE:
      if (kernel_phase_problem(e, p, abi)) return why;
      break;
    default: break;
    }
    if (user_tag_presence_problem(e, abi)) return why;
  }
  if (foreign_problem()) return why;
  if (nccl_threads_problem(j)) return why;
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].finalizes != 1) return BAD("context finalized %d times", tr.ctx[i].finalizes);
  return NULL;
}

#endif

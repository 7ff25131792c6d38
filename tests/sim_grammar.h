/* The calls NCCL makes to a profiler, as rules a recorded trace must
 * follow (for the release the configuration plays, 2.26 .. 2.31), and the
 * deterministic schedule's totals re-added from the recorded virtual clock
 * (independently of the simulator's own sums). */
#ifndef NCCLTOP_SIM_GRAMMAR_H
#define NCCLTOP_SIM_GRAMMAR_H

#include "sim_trace.h"

/* ---- the grammar NCCL follows ---- */

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

/* The thread that runs the proxy side of (pid, the communicator of ctx x). */
static inline long proxy_tid(int pid, const ctx_t *x) {
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *y = &tr.ctx[i];
    if (y->pid != pid || y->comm != x->comm) continue;
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

/* The ctrl event (same thread) whose Append .. AppendEnd encloses `line`. */
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

/* transSize as NCCL passes it: one value per op, set at SendWait or
 * RecvFlushWait, stale in between. Checks every record of op `op`, in
 * line order, against that; `det` also checks the deterministic sizes. */
static inline const char *check_sizes(const ev_t *op, bool det) {
  static int steps[4096];
  int n = 0;
  for (int i = 0; i < tr.nev && n < 4096; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type == NT_EV_PROXY_STEP && s->pid == op->pid && s->parent == op->h) steps[n++] = i;
  }
  unsigned long long cur = 0;
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
      if (!sz) return BAD("zero transSize at state %d", st);
      cur = sz;
    } else if (sz != cur) {
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
 * the ABIs without API events, the run replays graphs at all. */
static inline bool replayed(const nt_sim_config *c, const ev_t *p, int abi) {
  return abi >= 5 ? p && p->captured == 1 : c->graph;
}

/* Rules shared by Coll and P2p: the thread (the API parent's, or a CUDA
 * host-callback thread for a replay), the function against the API
 * parent's, and for a Coll its seqNumber and count convention. */
static inline const char *op_problem(const nt_sim_config *c, const ev_t *e, const ev_t *p,
                                     int abi) {
  if (p && p->tid != e->tid && !replayed(c, p, abi))
    return BAD("%s and its parent on different threads (line %d)",
               e->type == NT_EV_COLL ? "Coll" : "P2p", e->line);
  if (abi >= 5 && p && (p->type == NT_EV_COLL_API || p->type == NT_EV_P2P_API) &&
      strcmp(p->func, e->func))
    return BAD("%s under an API event for %s (line %d)", e->func, p->func, e->line);
  if (e->type != NT_EV_COLL) return NULL;
  if (never_a_coll(e->func)) return BAD("Coll %s (line %d)", e->func, e->line);
  if (c->nccl_version >= 229 && !strcmp(e->func, "Broadcast"))
    return BAD("Coll Broadcast on 2.%d (line %d)", c->nccl_version % 100, e->line);
  bool bytes = !strcmp(e->func, "AllGather") || !strcmp(e->func, "Broadcast");
  if (bytes && abi >= 4 && strcmp(e->dtype, "ncclInt8"))
    return BAD("%s counted in %s, not bytes (line %d)", e->func, e->dtype, e->line);
  /* seqNumber: one counter per function; a replay repeats it. */
  for (int j = (int)(e - tr.ev) - 1; j >= 0; j--) {
    const ev_t *q = &tr.ev[j];
    if (q->type != NT_EV_COLL || q->pid != e->pid || q->ctx != e->ctx || strcmp(q->func, e->func))
      continue;
    if (q->seq > e->seq || (q->seq == e->seq && !replayed(c, p, abi)))
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

/* A step NCCL started and never stopped: only 2.26's recv done loop does
 * that (#1658), to the later of two steps retired in one pass, so the step
 * before it is stopped after this one's last record. */
static inline const char *unstopped_step_problem(const ev_t *e, int ver) {
  const ev_t *p = parent_of(e);
  if (e->type == NT_EV_PROXY_STEP && sim_v_recv_stop_bug(ver) && p && !p->send && e->nrec == 3) {
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *s = &tr.ev[i];
      if (s->type == NT_EV_PROXY_STEP && s->pid == e->pid && s->parent == e->parent &&
          s->step == e->step - 1 && s->stops == 1 && s->stop_line > e->rec_line[2])
        return NULL;
    }
  }
  return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
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
  for (int j = (int)(e - tr.ev) - 1; j >= 0 && tr.ev[j].line > p->line; j--) {
    const ev_t *q = &tr.ev[j];
    if (q->type == NT_EV_KERNEL_PHASE && q->pid == e->pid && q->parent == e->parent &&
        (q->phase >= e->phase || q->ptimer_stop > e->ptimer))
      return BAD("KernelPhase line %d: phase %d after phase %d", e->line, e->phase, q->phase);
  }
  return NULL;
}

/* v7: every CollApi, P2pApi, Coll, P2p and CeColl carries the userTag of
 * its call: --user-tag's on communicator 0, none (0) elsewhere; older ABIs
 * have no userTag. */
static inline const char *user_tag_problem(const nt_sim_config *c, const ev_t *e, int abi) {
  bool call = e->type == NT_EV_COLL || e->type == NT_EV_P2P || e->type == NT_EV_COLL_API ||
              e->type == NT_EV_P2P_API || e->type == NT_EV_CE_COLL;
  if (!call) return NULL;
  if (abi < 7) return e->has_utag ? BAD("v%d event with a userTag (line %d)", abi, e->line) : NULL;
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  unsigned long long want = x && x->comm == 0 ? c->user_tag : 0;
  if (!e->has_utag || e->utag != want)
    return BAD("line %d: userTag %llu, expected %llu", e->line, e->utag, want);
  return NULL;
}

#include "sim_grammar_sym.h" /* the rules of --symmetric (O4) */

/* Everything NCCL guarantees about the calls of one run. */
static inline const char *grammar_problem(const nt_sim_config *c) {
  static const int send3[] = {NT_ST_STEP_SEND_GPU_WAIT, NT_ST_STEP_SEND_WAIT};
  static const int recv[] = {NT_ST_STEP_RECV_WAIT, NT_ST_STEP_RECV_FLUSH_WAIT,
                             NT_ST_STEP_RECV_GPU_WAIT};
  static const int gapi[] = {NT_ST_GROUP_START_API_STOP, NT_ST_GROUP_END_API_START};
  int abi = tr.nctx ? tr.ctx[0].version : 0, ver = sim_version_of(c);
  if (tr.bad_lines || tr.overflow) return BAD("unreadable trace (%d bad lines)", tr.bad_lines);
  if (tr.null_calls) return BAD("%d record/stop calls with a NULL handle", tr.null_calls);
  if (tr.unknown_handles) return BAD("%d calls with a handle never returned", tr.unknown_handles);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *p = parent_of(e);
    bool never = collnet_op(e) && e->stops == 0; /* CollNet: only net.cc stops ops */
    if (e->h && !never && e->stops == 0 && unstopped_step_problem(e, ver)) return why;
    if (e->h && (e->stops > 1 || (e->stops && e->stop_line < e->line)))
      return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
    if (e->extra_records) return BAD("record after stop (line %d)", e->line);
    if (!ctx_known(e)) return BAD("start with an unknown context (line %d)", e->line);
    if (abi < 5 && e->type >= NT_EV_GROUP_API) return BAD("v%d got API event %d", abi, e->type);
    switch (e->type) {
    case NT_EV_PROXY_STEP: {
      if (!p) {
        if (e->nrec) return BAD("step of a dropped op has records (line %d)", e->line);
        if (!e->parent && sim_v_steps_need_op(ver))
          return BAD("NCCL 2.%d starts no step of a dropped op (line %d)", ver - 200, e->line);
        break;
      }
      if (p->type != NT_EV_PROXY_OP || p->line > e->line)
        return BAD("step parent is not an earlier op (line %d)", e->line);
      if (collnet_op(p)) return BAD("a CollNet op has a step (line %d)", e->line);
      if (p->stop_line < e->stop_line || (!e->stops && p->stop_line < e->rec_line[e->nrec - 1]))
        return BAD("op stopped before its step (line %d)", e->line);
      if (e->step < 0 || e->step >= p->steps) return BAD("step %d of %d", e->step, p->steps);
      if (e->tid != p->tid) return BAD("step and op on different threads");
      if (abi >= 4 && p->nrec && p->rec_line[0] > e->line) return BAD("step before InProgress");
      bool ok = p->send ? (abi >= 4 ? send_states_ok(e) : seq_is(e, send3, 2)) : seq_is(e, recv, 3);
      if (!ok)
        return BAD("%s step line %d has %d states, first %d", p->send ? "send" : "recv", e->line,
                   e->nrec, e->nrec ? e->states[0] : -1);
      for (int r = 0; r < e->nrec && abi == 3; r++)
        if (e->args[r]) return BAD("2.26 passes step states no arguments (line %d)", e->line);
      break;
    }
    case NT_EV_PROXY_OP: {
      bool cn = collnet_op(e);
      if (cn && (e->nrec || e->stops || e->send || e->peer != c->ranks))
        return BAD("CollNet op line %d: %d records, %d stops, isSend %d, peer %d", e->line, e->nrec,
                   e->stops, e->send, e->peer);
      if (!cn && abi == 3 && v3_op_problem(e)) return why;
      if (!cn && abi >= 4 &&
          (e->h ? !(e->nrec == 1 && e->states[0] == NT_ST_OP_IN_PROGRESS) : e->nrec))
        return BAD("op line %d: %d records", e->line, e->nrec);
      if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P) || p->line > e->line))
        return BAD("op parent is not an earlier Coll or P2p (line %d)", e->line);
      if (sym_child_problem(e, p)) return why;
      /* 2.27+ start ops in ncclProxyOpToArgs, 2.26 at the first pass. */
      if (!sim_v_native_v3(ver) && !append_burst_around(e))
        return BAD("op started outside an Append burst (line %d)", e->line);
      if (sim_v_native_v3(ver) && append_burst_around(e))
        return BAD("2.26 op started inside an Append burst (line %d)", e->line);
      const ctx_t *x = ctx_of(origin_pid(e), e->ctx);
      int n = c->ranks, r = x->version == 3 ? -1 : x->rank;
      if (r >= 0 && !cn && e->peer != (e->send ? (r + 1) % n : (r - 1 + n) % n))
        return BAD("rank %d %s peer %d", r, e->send ? "send" : "recv", e->peer);
      if (e->oppid != e->pid && !(e->send && x->pid == e->oppid))
        return BAD("op pid %d in process %d", e->oppid, e->pid);
      if (e->ch < 0 || e->ch >= c->channels) return BAD("op channel %d", e->ch);
      if (abi >= 4 && c->deterministic && check_sizes(e, true)) return why;
      if (abi >= 4 && !c->deterministic && check_sizes(e, false)) return why;
      break;
    }
    case NT_EV_PROXY_CTRL: {
      bool edge =
          e->nrec == 1 && (e->states[0] == NT_ST_CTRL_IDLE || e->states[0] == NT_ST_CTRL_ACTIVE);
      bool sleep =
          e->nrec == 2 && e->states[0] == NT_ST_CTRL_SLEEP && e->states[1] == NT_ST_CTRL_WAKEUP;
      bool append = e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND &&
                    e->states[1] == NT_ST_CTRL_APPEND_END;
      /* 2.26 starts and stops one on every progress-loop pass. */
      bool empty = e->nrec == 0 && sim_v_ctrl_every_pass(ver);
      if (!edge && !sleep && !append && !empty) return BAD("ctrl line %d: bad burst", e->line);
      if (e->parent) return BAD("ctrl with a parent");
      /* appendedProxyOps counts every op taken, profiled or not (a 2.29+
       * Broadcast's carry an empty mask), so at least those started; under
       * --pxn a proxied rank appends only its receives, its pair the sends;
       * 0 when woken with nothing new (at shutdown, say). */
      unsigned per = (c->pxn ? 1u : 2u) * (unsigned)c->channels;
      if (append && (e->size[1] % per || (int)e->size[1] < ops_inside(e) ||
                     (!c->broadcast && ops_inside(e) && (int)e->size[1] != ops_inside(e))))
        return BAD("AppendEnd says %llu ops, %d started inside", e->size[1], ops_inside(e));
      break;
    }
    case NT_EV_COLL:
      /* collTaskAppend: AllGather and Broadcast in bytes of ncclInt8. */
      if (e->int8 != (!strcmp(e->func, "AllGather") || !strcmp(e->func, "Broadcast")))
        return BAD("%s Coll line %d: int8 %d", e->func, e->line, e->int8);
      if (abi == 3 && (!e->named || !e->chash))
        return BAD("2.26 Coll line %d carries no communicator name and hash", e->line);
      if (abi >= 5) {
        if (e->parent && (!p || p->type != NT_EV_COLL_API || p->stop_line > e->line))
          return BAD("v5 Coll parent is not a finished CollApi (line %d)", e->line);
        const ev_t *g = e->pgroup ? find(e->pid, e->pgroup) : NULL;
        if (e->pgroup && (!g || g->type != NT_EV_GROUP))
          return BAD("coll.parentGroup is not a Group");
      } else if (e->parent && (!p || p->type != NT_EV_GROUP)) {
        return BAD("v%d Coll parent is not a Group (line %d)", abi, e->line);
      }
      if (op_problem(c, e, p, abi)) return why;
      if (symmetric_problem(c, e, abi, ver)) return why;
      break;
    case NT_EV_P2P:
      if (abi >= 5 && e->parent && (!p || p->type != NT_EV_P2P_API || p->stop_line > e->line))
        return BAD("v5 P2p parent is not a finished P2pApi (line %d)", e->line);
      if (strcmp(e->func, "Send") && strcmp(e->func, "Recv"))
        return BAD("P2p func %s (line %d)", e->func, e->line);
      if (op_problem(c, e, p, abi)) return why;
      break;
    case NT_EV_COLL_API:
      if (never_a_coll(e->func)) return BAD("CollApi %s (line %d)", e->func, e->line);
      break;
    case NT_EV_GROUP_API:
      if (!seq_is(e, gapi, 2) || e->args[0] || e->args[1] || e->depth != 1)
        return BAD("GroupApi line %d: states or args wrong", e->line);
      break;
    case NT_EV_KERNEL_CH:
      if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P)))
        return BAD("KernelCh parent not a Coll or P2p");
      if (sym_child_problem(e, p)) return why;
      if (abi >= 4 && !(e->nrec == 1 && e->states[0] == NT_ST_KERNEL_CH_STOP &&
                        e->ptimer_stop > e->ptimer && e->ptimer))
        return BAD("KernelCh line %d: no KernelChStop with a later pTimer", e->line);
      if (abi == 3 && e->nrec) return BAD("v3 KernelCh has records");
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
    if (user_tag_problem(c, e, abi)) return why;
  }
  if (foreign_problem()) return why;
  /* Threads: the API events on the application thread; Group, Coll and P2p
   * there too, or on one CUDA host-callback thread (graph replays, checked
   * per event above); the proxy side on another, and from 2.31 KernelCh on
   * a third, the profiler thread; Idle and Active edges alternate on the
   * proxy thread. */
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    static const char *const role_name[4] = {"app", "proxy", "profiler-thread", "callback"};
    long tids[4] = {0, 0, 0, 0};
    int last_edge = -1;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *f = &tr.ev[j];
      if (f->pid != x->pid || f->ctx != x->ctx) continue;
      bool plan = f->type == NT_EV_GROUP || f->type == NT_EV_COLL || f->type == NT_EV_P2P;
      int role =
          f->type == NT_EV_KERNEL_CH || f->type == NT_EV_KERNEL_PHASE
              ? (sim_v_kernel_thread(ver) ? 2 : 1)
          : f->type == NT_EV_PROXY_OP || f->type == NT_EV_PROXY_STEP || f->type == NT_EV_PROXY_CTRL
              ? 1
              : 0;
      if (role == 0 && plan && tids[0] && f->tid != tids[0]) role = 3;
      long *tid = &tids[role];
      if (!*tid) *tid = f->tid;
      if (*tid != f->tid || (f->h && f->stops && f->stop_tid != f->tid))
        return BAD("%s events on two threads (line %d)", role_name[role], f->line);
      if (f->type == NT_EV_PROXY_CTRL && f->nrec == 1) {
        if (f->states[0] == last_edge)
          return BAD("two edges %d in a row (line %d)", last_edge, f->line);
        last_edge = f->states[0];
      }
    }
    for (int a = 0; a < 4; a++)
      for (int b = a + 1; b < 4; b++)
        if (tids[a] && tids[a] == tids[b])
          return BAD("%s and %s events on one thread", role_name[a], role_name[b]);
  }
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    if (x->finalizes != 1) return BAD("context finalized %d times", x->finalizes);
    int ps = pid_slot(x->pid);
    if (x->finalize_line < tr.flush_line[ps]) return BAD("finalize before flush");
  }
  return "none";
}

/* ---- the deterministic totals, re-added from the recorded clock ---- */

static inline int wait_index(int state) {
  switch (state) {
  case NT_ST_STEP_SEND_GPU_WAIT:
  case NT_ST_STEP_RECV_WAIT: return 0;
  case NT_ST_STEP_SEND_PEER_WAIT:
  case NT_ST_STEP_RECV_FLUSH_WAIT: return 1;
  case NT_ST_STEP_SEND_WAIT:
  case NT_ST_STEP_RECV_GPU_WAIT: return 2;
  default: return -1;
  }
}

static inline const char *channel_totals(const nt_sim_config *c, const ctx_t *x, int ch, int dir) {
  nt_sim_channel_expect want, got;
  memset(&got, 0, sizeof got);
  nt_sim_expect_channel(c, x->rank, x->comm, ch, dir, &want);
  got.peer = -1;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *op = &tr.ev[i];
    if (op->type != NT_EV_PROXY_OP || op->pid != x->pid || op->ctx != x->ctx || op->ch != ch ||
        op->send != (dir == NT_DIR_SEND) || collnet_op(op)) /* the ring's ops only */
      continue;
    got.ops++;
    got.peer = op->peer;
    /* 2.26: the op's own records carry its running transSize (V3). */
    unsigned long long run = 0;
    for (int r = 0; r < op->nrec; r++)
      if ((op->states[r] == NT_ST_V3_OP_SEND_TRANSMITTED ||
           op->states[r] == NT_ST_V3_OP_RECV_RECEIVED) &&
          op->size[r] > run) {
        got.bytes += op->size[r] - run;
        run = op->size[r];
      }
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *s = &tr.ev[j];
      if (s->type != NT_EV_PROXY_STEP || s->pid != op->pid || s->parent != op->h) continue;
      /* The plugin counts a step at its stop; a step never stopped (2.26's
       * recv bug, V4) it closes at its op's first Send/RecvDone record
       * that counts it done, else when its op stops. */
      bool closed = s->stops > 0 || op->stops > 0;
      unsigned long long t_close = s->stops ? s->t_stop : op->t_stop;
      for (int r = 0; !s->stops && r < op->nrec; r++)
        if ((op->states[r] == 3 || op->states[r] == 7) && op->opsteps[r] > s->step) {
          closed = true, t_close = op->rec_t[r];
          break;
        }
      got.steps += closed;
      int cur = -1;
      unsigned long long since = 0;
      /* 2.26 (V3): the op's SendRemFifoWait before an isend try of this
       * step (the simulator's count: step + 1) starts its credit wait, as
       * SendPeerWait does from 2.27 on; merged with the step's own
       * records in time order. */
      int k = 0;
      for (int r = 0; r <= s->nrec; r++) {
        bool end = r == s->nrec;
        unsigned long long t = end ? t_close : s->rec_t[r];
        for (; k < op->nrec && op->rec_t[k] <= t && (!end || closed); k++)
          if (op->states[k] == NT_ST_V3_OP_SEND_REM_FIFO_WAIT && op->opsteps[k] == s->step + 1 &&
              cur == NT_ST_STEP_SEND_GPU_WAIT && op->rec_t[k] >= since) {
            got.wait_ns[wait_index(cur)] += op->rec_t[k] - since;
            cur = NT_ST_STEP_SEND_PEER_WAIT, since = op->rec_t[k];
          }
        if (end && !closed) break;
        int st = end ? -1 : s->states[r];
        if (!end && st == cur) continue; /* a repeated SendPeerWait changes nothing */
        if (cur >= 0) got.wait_ns[wait_index(cur)] += t - since;
        cur = st, since = t;
        if (st == NT_ST_STEP_SEND_WAIT || st == NT_ST_STEP_RECV_FLUSH_WAIT) got.bytes += s->size[r];
      }
    }
  }
  uint64_t g[6] = {got.steps, got.bytes, got.ops, got.wait_ns[0], got.wait_ns[1], got.wait_ns[2]};
  uint64_t w[6] = {want.steps,      want.bytes,      want.ops,
                   want.wait_ns[0], want.wait_ns[1], want.wait_ns[2]};
  for (int i = 0; i < 6; i++)
    if (g[i] != w[i])
      return BAD("rank %d comm %d ch %d dir %d field %d: trace %llu, expected %llu", x->rank,
                 x->comm, ch, dir, i, (unsigned long long)g[i], (unsigned long long)w[i]);
  if (got.peer != want.peer) return BAD("peer %d, expected %d", got.peer, want.peer);
  return NULL;
}

/* The proxy thread's control states, as the brief defines them: Sleep ..
 * Wakeup is sleep, Wakeup .. stop wakeup, Append .. AppendEnd append, and
 * otherwise the last Idle/Active edge; counted from the first ctrl event to
 * the end of the schedule. */
static inline const char *proxy_totals(const nt_sim_config *c, const ctx_t *x,
                                       unsigned long long t_end) {
  nt_sim_proxy_expect want, got;
  memset(&got, 0, sizeof got);
  nt_sim_expect_proxy(c, x->rank, x->comm, &want);
  int base = -1, over = -1, cur = -1;
  unsigned long long since = 0;
  bool first = true;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_PROXY_CTRL || e->pid != x->pid || e->ctx != x->ctx) continue;
    if (first && (e->t != 0 || e->nrec != 1 || e->states[0] != NT_ST_CTRL_IDLE))
      return BAD("the first ctrl event is not an Idle edge at t=0");
    first = false;
    for (int r = 0; r <= e->nrec; r++) {
      unsigned long long t = r < e->nrec ? e->rec_t[r] : e->t_stop;
      int st = r < e->nrec ? e->states[r] : -1;
      if (st == NT_ST_CTRL_IDLE) base = NT_PROXY_IDLE;
      if (st == NT_ST_CTRL_ACTIVE) base = NT_PROXY_ACTIVE;
      if (st == NT_ST_CTRL_SLEEP) over = NT_PROXY_SLEEP;
      if (st == NT_ST_CTRL_WAKEUP) over = NT_PROXY_WAKEUP, got.wakeups++;
      if (st == NT_ST_CTRL_APPEND) over = NT_PROXY_APPEND;
      if (st == NT_ST_CTRL_APPEND_END) over = -1, got.appends++, got.appended_ops += e->size[r];
      if (st == -1) over = -1;
      int next = over >= 0 ? over : base;
      if (cur >= 0) got.state_ns[cur] += t - since;
      cur = next, since = t;
    }
  }
  if (cur >= 0) got.state_ns[cur] += t_end - since;
  got.final_state = cur;
  for (int s = 0; s < 5; s++)
    if (got.state_ns[s] != want.state_ns[s])
      return BAD("rank %d comm %d proxy state %d: trace %llu, expected %llu", x->rank, x->comm, s,
                 (unsigned long long)got.state_ns[s], (unsigned long long)want.state_ns[s]);
  if (got.appends != want.appends || got.appended_ops != want.appended_ops ||
      got.wakeups != want.wakeups || got.final_state != want.final_state)
    return BAD("proxy counts: appends %llu/%llu ops %llu/%llu wakeups %llu/%llu final %d/%d",
               (unsigned long long)got.appends, (unsigned long long)want.appends,
               (unsigned long long)got.appended_ops, (unsigned long long)want.appended_ops,
               (unsigned long long)got.wakeups, (unsigned long long)want.wakeups, got.final_state,
               want.final_state);
  return NULL;
}

static inline const char *comm_totals(const nt_sim_config *c, const ctx_t *x) {
  nt_sim_comm_expect want;
  nt_sim_expect_comm(c, x->rank, x->comm, &want);
  uint64_t colls = 0, count[64] = {0}, busy[64] = {0};
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->pid != x->pid || e->ctx != x->ctx) continue;
    colls += e->type == NT_EV_COLL;
    if (e->type == NT_EV_KERNEL_CH && e->ch >= 0 && e->ch < 64) {
      count[e->ch]++;
      if (e->ptimer_stop > e->ptimer) busy[e->ch] += e->ptimer_stop - e->ptimer;
    }
  }
  if (colls != want.colls)
    return BAD("colls %llu, expected %llu", (unsigned long long)colls,
               (unsigned long long)want.colls);
  for (int ch = 0; ch < c->channels; ch++)
    if (count[ch] != want.kernel_count || busy[ch] != want.kernel_busy_ns)
      return BAD("kernel ch %d: %llu events %llu ns, expected %llu, %llu", ch,
                 (unsigned long long)count[ch], (unsigned long long)busy[ch],
                 (unsigned long long)want.kernel_count, (unsigned long long)want.kernel_busy_ns);
  return NULL;
}

static inline const char *totals_problem(const nt_sim_config *c) {
  /* Every proxy thread ends at the same virtual time, with its last event. */
  unsigned long long t_end = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_CTRL && e->t_stop > t_end) t_end = e->t_stop;
  }
  for (int i = 0; i < tr.nctx; i++) {
    ctx_t y = tr.ctx[i];
    const ctx_t *x = &y;
    /* 2.26's init names no rank: its Coll descriptors do. */
    for (int j = 0; j < tr.nev && y.rank < 0; j++)
      if (tr.ev[j].pid == y.pid && tr.ev[j].type == NT_EV_COLL) y.rank = tr.ev[j].rank;
    unsigned long long last = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *e = &tr.ev[j];
      if (e->pid != x->pid || e->ctx != x->ctx || e->type == NT_EV_COLL || e->type == NT_EV_GROUP ||
          e->type >= NT_EV_GROUP_API)
        continue;
      if (e->t_stop > last) last = e->t_stop;
    }
    if (last != t_end) return BAD("a proxy thread ends at %llu, another at %llu", last, t_end);
    for (int ch = 0; ch < c->channels; ch++)
      for (int dir = 0; dir < 2; dir++)
        if (channel_totals(c, x, ch, dir)) return why;
    if (proxy_totals(c, x, t_end) || comm_totals(c, x)) return why;
  }
  return "none";
}

#endif

/* NCCL's rules, part 2 (sim_grammar_nccl.h puts them together): the proxy
 * side's events: ProxyOp, ProxyStep and ProxyCtrl (their states, the
 * transSize NCCL passes, steps NCCL starts again or never stops, 2.26's
 * op states), PXN ops run by another process, and which thread runs what. */
#ifndef NCCLTOP_SIM_GRAMMAR_NCCL_PROXY_H
#define NCCLTOP_SIM_GRAMMAR_NCCL_PROXY_H

#include "sim_grammar_nccl_tasks.h"

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

#endif

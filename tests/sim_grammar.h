/* The calls the simulator makes to a profiler, checked on a recorded trace:
 * first the rules NCCL itself keeps (sim_grammar_nccl.h, checked on real
 * recordings too), then the simulator's own bookkeeping, which holds only
 * for the jobs it plays (ring peers, its channel count and sizes, exactly
 * the ops it started appended, one application thread); and the
 * deterministic schedule's totals re-added from the recorded virtual clock
 * (independently of the simulator's own sums). */
#ifndef NCCLTOP_SIM_GRAMMAR_H
#define NCCLTOP_SIM_GRAMMAR_H

#include "sim_grammar_nccl.h"

/* The job a configuration plays, as the NCCL rules see it. */
static inline nccl_job sim_job(const nt_sim_config *c) {
  nccl_job j = {.version = sim_version_of(c), .graphs = c->graph, .mask_changes = false};
  return j;
}

/* ---- the simulator's own bookkeeping ---- */

/* The simulator leaves open only what NCCL must: CollNet ops (P2) and
 * 2.26's recv step (V4); it restarts no step slot (S3) and has no CE
 * memcpy transport. */
static inline const char *sim_unstopped_problem(const ev_t *e, int ver) {
  if (e->type == NT_EV_PROXY_OP && collnet_op(e)) return NULL;
  if (e->type == NT_EV_PROXY_STEP && !restarted_slot(e, parent_of(e), ver) &&
      !unstopped_problem(e, ver))
    return NULL;
  return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
}

/* The simulator's ops: ring neighbours on its channels (CollNet's peer is
 * the rank count), started inside an Append burst from 2.27 on, with its
 * own transSize convention. */
static inline const char *sim_op_problem(const nt_sim_config *c, const ev_t *e, int abi, int ver) {
  bool cn = collnet_op(e);
  if (cn && e->peer != c->ranks) return BAD("CollNet op line %d: peer %d", e->line, e->peer);
  if (!sim_v_native_v3(ver) && !append_burst_around(e))
    return BAD("op started outside an Append burst (line %d)", e->line);
  const ctx_t *x = ctx_of(origin_pid(e), e->ctx);
  int n = c->ranks, r = !x || x->version == 3 ? -1 : x->rank;
  if (r >= 0 && !cn && e->peer != (e->send ? (r + 1) % n : (r - 1 + n) % n))
    return BAD("rank %d %s peer %d", r, e->send ? "send" : "recv", e->peer);
  if (e->ch < 0 || e->ch >= c->channels) return BAD("op channel %d", e->ch);
  if (abi >= 4 && check_sizes(e, true, c->deterministic)) return why;
  return NULL;
}

/* AppendEnd: the simulator appends the ops it starts (2 per channel and
 * operation; under --pxn a proxied rank its receives, its pair the sends)
 * and, up to 2.30, a profiler op per channel of an operation whose mask
 * has KernelCh (no ProxyOp event: at most as many as the ops started); a
 * 2.29+ Broadcast's ops (empty mask) start no event either. */
static inline const char *sim_ctrl_problem(const nt_sim_config *c, const ev_t *e, int ver) {
  bool append =
      e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND && e->states[1] == NT_ST_CTRL_APPEND_END;
  if (!append) return NULL;
  int inside = ops_inside(e), extra = (int)e->size[1] - inside, ch = c->channels;
  bool profiler = !sim_v_kernel_thread(ver);
  if (e->size[1] % (unsigned)ch || extra < 0 ||
      (!c->broadcast && inside && (profiler ? extra > inside : extra != 0)))
    return BAD("AppendEnd says %llu ops, %d started inside", e->size[1], inside);
  return NULL;
}

/* --symmetric: communicator 0's AllReduce, AllGather and ReduceScatter are
 * symmetric (reported from 2.31 on), no other Coll is. */
static inline const char *sim_symmetric_problem(const nt_sim_config *c, const ev_t *e, int ver) {
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  bool want = c->symmetric && ver >= 227 && x && x->comm == 0 && sym_func(e->func);
  bool sym = sym_coll(e);
  if (want && ver < 231)
    return BAD("2.%d reported a symmetric %s as a Coll (line %d)", ver - 200, e->func, e->line);
  if (want != sym)
    return BAD("%s Coll line %d: symmetric %d, expected %d", e->func, e->line, sym, want);
  return NULL;
}

/* v7: every call carries --user-tag's userTag on communicator 0, none (0)
 * elsewhere. */
static inline const char *sim_user_tag_problem(const nt_sim_config *c, const ev_t *e, int abi) {
  if (abi < 7 || !user_call(e)) return NULL;
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  unsigned long long want = x && x->comm == 0 ? c->user_tag : 0;
  if (!e->has_utag || e->utag != want)
    return BAD("line %d: userTag %llu, expected %llu", e->line, e->utag, want);
  return NULL;
}

/* The simulated application: one thread calls NCCL; a Coll or P2p runs on
 * its API parent's thread unless it is a graph replay, on one
 * host-callback thread; the proxy side on another, and from 2.31 KernelCh
 * on a third, the profiler thread. */
static inline const char *sim_threads_problem(int ver) {
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    static const char *const role_name[4] = {"app", "proxy", "profiler-thread", "callback"};
    long tids[4] = {0, 0, 0, 0};
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *f = &tr.ev[k];
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
      if (*tid != f->tid)
        return BAD("%s events on two threads (line %d)", role_name[role], f->line);
    }
    for (int a = 0; a < 4; a++)
      for (int b = a + 1; b < 4; b++)
        if (tids[a] && tids[a] == tids[b])
          return BAD("%s and %s events on one thread", role_name[a], role_name[b]);
  }
  return NULL;
}

/* What holds for the simulator's runs only, beyond NCCL's rules. */
static inline const char *sim_problem(const nt_sim_config *c) {
  int abi = tr.nctx ? tr.ctx[0].version : 0, ver = sim_version_of(c);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *p = parent_of(e);
    if (e->h && e->stops == 0 && sim_unstopped_problem(e, ver)) return why;
    if (e->h && e->stops > 1)
      return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
    if (e->extra_records) return BAD("record after stop (line %d)", e->line);
    bool plan = e->type == NT_EV_COLL || e->type == NT_EV_P2P;
    if (plan && p && p->tid != e->tid && !replayed(&(nccl_job){.graphs = c->graph}, p, abi))
      return BAD("%s and its parent on different threads (line %d)",
                 e->type == NT_EV_COLL ? "Coll" : "P2p", e->line);
    switch (e->type) {
    case NT_EV_PROXY_OP:
      if (sim_op_problem(c, e, abi, ver)) return why;
      break;
    case NT_EV_PROXY_CTRL:
      if (sim_ctrl_problem(c, e, ver)) return why;
      break;
    case NT_EV_COLL:
      /* the simulator's other functions count float32 */
      if (e->int8 != (!strcmp(e->func, "AllGather") || !strcmp(e->func, "Broadcast")))
        return BAD("%s Coll line %d: int8 %d", e->func, e->line, e->int8);
      if (abi == 3 && e->named == c->unnamed)
        return BAD("2.26 Coll line %d: named %d, --unnamed %d", e->line, e->named, c->unnamed);
      if (sim_symmetric_problem(c, e, ver)) return why;
      break;
    case NT_EV_GROUP_API:
      if (e->depth != 1) return BAD("GroupApi line %d: depth %d", e->line, e->depth);
      break;
    case NT_EV_KERNEL_CH:
      if (!sym_coll(p) && (e->ch < 0 || e->ch >= c->channels))
        return BAD("KernelCh channel %d", e->ch);
      break;
    default: break;
    }
    if (sim_user_tag_problem(c, e, abi)) return why;
  }
  if (sim_threads_problem(ver)) return why;
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    int ps = pid_slot(x->pid);
    if (x->finalize_line < tr.flush_line[ps]) return BAD("finalize before flush");
  }
  return NULL;
}

/* Everything a simulator run must follow: NCCL's rules, then the
 * simulator's own. */
static inline const char *grammar_problem(const nt_sim_config *c) {
  nccl_job j = sim_job(c);
  if (nccl_problem(&j)) return why;
  if (sim_problem(c)) return why;
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
  /* with KernelCh in the mask (its events are there: comm_totals counts
   * them) AppendEnd also counts its profiler ops, up to 2.30 */
  bool kernel = false;
  for (int i = 0; i < tr.nev && !kernel; i++)
    kernel = tr.ev[i].type == NT_EV_KERNEL_CH && tr.ev[i].pid == x->pid && tr.ev[i].ctx == x->ctx;
  if (kernel) want.appended_ops += want.profiler_ops;
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

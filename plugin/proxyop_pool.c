/* The ProxyOp pool, and the ops NCCL never stops (docs/NCCL-BEHAVIOUR.md
 * P2).
 *
 * From 2.27 only the net transport stops its ProxyOps: ops of the CollNet
 * transport and of the p2p transport's CE-memcpy mode are started at append
 * and never stopped, and get no ProxyStep. A CollNet operation's ops all go
 * to the CollNet transport, so they are recognised at start by their
 * operation's algorithm: they take no slot and hold no reference on the
 * operation, which is marked `unreported` (it completes without a reported
 * completion). Other never-stopped ops cannot be told at start. A net op
 * gets an op state on the proxy's first progress pass after the append,
 * whatever the mask (InProgress from 2.27, a posted state per step on
 * 2.26), and its first steps when the mask asks for them; an op with
 * neither NT_STEPLESS_GRACE_MS after its start gives its slot up at once
 * (its operation is marked unreported too). So do the ops of a finalized
 * communicator (aborted: never progressed again) and any op older than
 * NCCLTOP_RECLAIM_MS. A new op takes a slot freed a while ago (recycle.h),
 * while the round robin that finds these ops goes on by one slot per op;
 * when no freed slot waits, the short probe takes the next free one. When it
 * finds no slot, the whole pool is searched, and failing that the oldest
 * op that is not known to be a net op gives its slot up once
 * NT_STEPLESS_MIN_MS old, so net ops are never starved by ones that are
 * not, however fast the never-stopped ones come. A reclaimed op's handle
 * goes stale (internal.h, nt_oface).
 */
#include "internal.h"

static bool never_stops_children(const struct nt_task *k) {
  return k->algo == NT_ALGO_COLLNET_DIRECT || k->algo == NT_ALGO_COLLNET_CHAIN;
}

struct nt_task *nt_proxyop_parent(struct nt_thread *t, void *parent, bool *never) {
  *never = false;
  struct nt_task *k = nt_task_attach(t, parent, false);
  if (!k || !never_stops_children(k)) return k;
  /* A child without a stop: counted, never open. */
  atomic_store_explicit(&k->unreported, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&k->st, 1, memory_order_release);
  NT_ADD(t->never_stopped_ops, 1);
  *never = true;
  return NULL;
}

/* An op whose slot a new op may take. */
static bool reclaimable(const struct nt_op *op, uint64_t now, uint64_t reclaim_ns) {
  uint64_t age = now > op->start_ns ? now - op->start_ns : 0;
  if (!op->is_net && age > (uint64_t)NT_STEPLESS_GRACE_MS * 1000000ull) return true;
  if (op->row && !atomic_load_explicit(&op->row->ctx->live, memory_order_relaxed)) return true;
  return age > reclaim_ns;
}

static struct nt_op *take(struct nt_thread *t, struct nt_op *op, uint64_t now) {
  /* NCCL may still hold its handles (an op older than NCCLTOP_RECLAIM_MS
   * can be stopped yet): they go stale, and reach neither this slot's next
   * op nor, until that op starts a step in the same place, its steps. */
  op->faces[op->cur_face].self = NULL;
  for (int i = 0; i < NT_STEPS_PER_OP; i++) {
    op->steps[i].self = NULL;
    op->steps[i].active = 0;
  }
  op->live_steps = 0;
  if (op->row) NT_ADD(op->row->ops_done, 1);
  if (op->row && op->begun) NT_ADD(op->row->begun_done, 1);
  if (op->task) {
    if (!op->is_net) {
      /* Never stopped (P2): its completion is not reported. */
      atomic_store_explicit(&op->task->unreported, 1, memory_order_relaxed);
      atomic_fetch_sub_explicit(&op->task->st, 1, memory_order_release);
    } else {
      nt_task_detach(op->task, now, true, false, 0);
    }
  }
  op->task = NULL;
  NT_ADD(t->reclaimed_ops, 1);
  return op;
}

struct nt_op *nt_proxyop_alloc(struct nt_thread *t, uint64_t now) {
  uint64_t reclaim_ns = (uint64_t)nt_g.cfg.reclaim_ms * 1000000ull;
  /* The round robin goes on by one slot at every op, whichever slot the op
   * then takes: an op NCCL never stops is reclaimed as soon as it would be
   * if every op were handed out round robin. It reads op_since, whose
   * line holds 8 ops, and an op's own line only while the op is in use: it
   * was one cold line per op (callgrind on the recordings: a fifth of the
   * plugin's last-level misses per call). */
  uint32_t swept_slot = t->op_cursor++ % NT_OPS_PER_THREAD;
  struct nt_op *swept = &t->ops[swept_slot];
  if (atomic_load_explicit(&t->op_since[swept_slot], memory_order_relaxed) &&
      atomic_load_explicit(&swept->in_use, memory_order_acquire) &&
      reclaimable(swept, now, reclaim_ns))
    return take(t, swept, now);
  /* A slot freed a while ago, still in the cache (recycle.h). */
  for (const struct nt_recycled *e; (e = nt_recycle_take(&t->op_free, NT_OP_QUARANTINE));) {
    struct nt_op *op = &t->ops[e->slot];
    if (!atomic_load_explicit(&op->in_use, memory_order_acquire) && op->cur_face == e->face) {
      /* The slot the next op will take, asked for while NCCL gets there
       * (its line was lost since it was freed: a ProxyOp start 25 to 45
       * ticks less, bench_replay --by-kind). */
      int next = nt_recycle_peek(&t->op_free, NT_OP_QUARANTINE);
      if (next >= 0) __builtin_prefetch(&t->ops[next].in_use, 1);
      return op;
    }
  }
  for (uint32_t i = 0; i < NT_POOL_PROBES; i++) {
    struct nt_op *op = &t->ops[t->op_cursor++ % NT_OPS_PER_THREAD];
    if (!atomic_load_explicit(&op->in_use, memory_order_acquire)) return op;
    if (reclaimable(op, now, reclaim_ns)) return take(t, op, now);
  }
  /* Rare: the probed window is busy. One pass over the pool; failing a
   * free or reclaimable slot, the oldest op without a step yields, unless
   * it is younger than NT_STEPLESS_MIN_MS (a net op appended in the same
   * burst, before the proxy's progress pass). */
  struct nt_op *oldest = NULL;
  for (uint32_t i = 0; i < NT_OPS_PER_THREAD; i++) {
    struct nt_op *op = &t->ops[t->op_cursor++ % NT_OPS_PER_THREAD];
    if (!atomic_load_explicit(&op->in_use, memory_order_acquire)) return op;
    if (reclaimable(op, now, reclaim_ns)) return take(t, op, now);
    if (!op->is_net && (!oldest || op->start_ns < oldest->start_ns)) oldest = op;
  }
  if (oldest && now - oldest->start_ns > (uint64_t)NT_STEPLESS_MIN_MS * 1000000ull)
    return take(t, oldest, now);
  return NULL;
}

void nt_proxyop_free(struct nt_thread *t, struct nt_op *op) {
  /* NCCL stops an op on the thread that started it (P1): its own pool. A
   * stop elsewhere finds the pool that holds it from the slot region. */
  bool own = op >= t->ops && op < t->ops + NT_OPS_PER_THREAD;
  struct nt_thread *owner =
      own ? t : nt_g.threads + ((uintptr_t)op - (uintptr_t)nt_g.threads) / sizeof(struct nt_thread);
  /* Its start time goes before the slot does: whoever sees the slot free
   * (acquire) and takes it stores its own time after this. */
  atomic_store_explicit(&owner->op_since[op - owner->ops], 0, memory_order_relaxed);
  atomic_store_explicit(&op->in_use, 0, memory_order_release);
  /* Only the pool's owner recycles: a stop on another thread leaves the
   * slot to the round-robin probe. */
  if (own) nt_recycle_put(&t->op_free, (uint32_t)(op - t->ops), op->cur_face);
}

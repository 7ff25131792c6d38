/* Operations as the user called them, where NCCL's Coll events do not say
 * so: Broadcast on NCCL 2.29+ (only a CollApi), graph replays (the same
 * seqNumber again), and the launch count both feed (the sequence view and
 * the straggler comparison read `launched`). CE collectives: ce.c.
 *
 * Everything here runs on the event path of the calling thread: a few
 * stores into its own slot and the communicator's counters, no lock. */
#include "internal.h"

void nt_launch_note(struct nt_context *c, int func, bool has_seq, uint64_t seq, uint64_t now) {
  uint64_t add = 1;
  if (has_seq) {
    /* NCCL's seqNumber + 1 (the counter RAS compares); but a graph-captured
     * plan does not advance it without KernelCh (C4), so a replay reports a
     * number already seen: one more launch, as `done` will count one more. */
    uint64_t top = atomic_load_explicit(&c->seq_top[func], memory_order_relaxed);
    while (seq + 1 > top &&
           !atomic_compare_exchange_weak_explicit(&c->seq_top[func], &top, seq + 1,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
    if (seq + 1 > top) add = seq + 1 - top; /* top: the value the CAS replaced */
  }
  atomic_fetch_add_explicit(&c->launched[func], add, memory_order_relaxed);
  atomic_store_explicit(&c->last_launch_ns[func], now, memory_order_relaxed);
}

/* Broadcast on NCCL 2.29+ (ABI v6) becomes an AllGatherV task on a queue
 * the profiler never walks: the call yields a GroupApi and a CollApi and
 * nothing else (docs/NCCL-BEHAVIOUR.md O1). So on v6 the CollApi's
 * function, count, datatype and root are counted as the operation, with no
 * time (nothing reports its end).
 *
 * Not on ABI v3-v5 (NCCL 2.26-2.28): there a Broadcast is always a Coll (C3)
 * and its CollApi (2.28) must not count too. Deciding by ABI needs no wait,
 * and the ABI is the release: NCCL takes the newest table it knows.
 *
 * On v6 NCCL still makes it a Coll when AllGatherV is off
 * (NCCL_ALLGATHERV_ENABLE=0, confidential computing). That Coll starts in
 * the same ncclGroupEnd, on this thread, before the GroupApi stops, with
 * this thread's CollApi handle as its parent: it withdraws the oldest
 * Broadcast still pending here (nt_bcast_claim). Until the GroupApi stops
 * the pending ones are not stopped, so the publisher cannot retire them
 * before a Coll could come. */
void nt_bcast_api(struct nt_thread *t, struct nt_context *c, const struct nt_ev *ev) {
  if (c->abi < 6 || nt_name_index(t, NT_NAME_FUNC, ev->op.func) != NT_FUNC_BROADCAST) return;
  uint64_t now = nt_now();
  nt_launch_note(c, NT_FUNC_BROADCAST, false, 0, now);
  struct nt_ev e = *ev;
  e.type = NT_EV_COLL;
  e.op.algo = e.op.proto = NULL; /* NCCL chose none we can see */
  struct nt_task *k = nt_task_open(t, c, &e, NT_FUNC_BROADCAST, now, 0);
  if (!k) {
    NT_ADD(t->dropped_ops, 1);
    return;
  }
  /* Nothing of it but this call ever reaches the plugin (O1). */
  atomic_store_explicit(&k->unreported, 1, memory_order_relaxed);
  if (t->nbcast_pending == NT_BCAST_PENDING) {
    /* A group of many Broadcasts: the oldest can no longer be withdrawn. */
    nt_op_stop(t->bcast_pending[0]);
    for (uint32_t i = 1; i < NT_BCAST_PENDING; i++) t->bcast_pending[i - 1] = t->bcast_pending[i];
    t->nbcast_pending--;
  }
  t->bcast_pending[t->nbcast_pending++] = k;
}

void nt_bcast_claim(struct nt_thread *t, struct nt_context *c, const void *parent) {
  if (parent != &t->api) return;
  for (uint32_t i = 0; i < t->nbcast_pending; i++) {
    struct nt_task *k = t->bcast_pending[i];
    if (k->ctx != c) continue;
    for (uint32_t j = i + 1; j < t->nbcast_pending; j++)
      t->bcast_pending[j - 1] = t->bcast_pending[j];
    t->nbcast_pending--;
    /* The Coll counts the launch by its seqNumber instead. */
    atomic_fetch_sub_explicit(&c->launched[NT_FUNC_BROADCAST], 1, memory_order_relaxed);
    atomic_store_explicit(&k->superseded, 1, memory_order_relaxed);
    nt_op_stop(k); /* release: the publisher sees `superseded` */
    return;
  }
}

void nt_bcast_close(struct nt_thread *t) {
  for (uint32_t i = 0; i < t->nbcast_pending; i++) nt_op_stop(t->bcast_pending[i]);
  t->nbcast_pending = 0;
}

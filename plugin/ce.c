/* Copy-engine collectives (NCCL 2.29+, ABI v6): no Group, Coll or proxy
 * op; a CeColl (parent the CollApi) with CeSync and CeBatch children.
 * A CeColl is counted as an operation of its function (AllGather, and with
 * CTAPolicy ZERO also AlltoAll, Gather, Scatter), its bytes count x the
 * datatype's size (AllGather: NCCL already converted the count to bytes, as
 * for a Coll, so the rows and the bandwidth formulas agree with Coll ones).
 *
 * No time: the CeColl stops when the host has enqueued the copies and the
 * syncs on the stream (ce_coll.cc), not when they are done; the children
 * time the same enqueueing. So the operation retires as "enqueued" with an
 * unknown duration, like intra-node work without kernelch. Its ceSeqNum
 * counts syncs, not operations: each CeColl is one launch of its function. */
#include "event_entry.h"
#include "internal.h"

void *nt_ce_start(struct nt_thread *t, void *context, const struct nt_ev *ev) {
  struct nt_context *c = nt_context_of(t, context);
  if (!c) {
    NT_ADD(t->unknown_events, 1);
    return &nt_ignored_handle;
  }
  if (ev->type != NT_EV_CE_COLL) return &nt_ignored_handle; /* CeSync, CeBatch: counted */
  uint64_t now = nt_now();
  int func = nt_name_index(t, NT_NAME_FUNC, ev->op.func);
  nt_launch_note(c, func, false, 0, now);
  struct nt_task *k = nt_task_open(t, c, ev, func, now, 0);
  if (!k) {
    NT_ADD(t->dropped_ops, 1);
    return &nt_ignored_handle;
  }
  /* Its stop means "copies enqueued": their end is never reported (O3). */
  atomic_store_explicit(&k->unreported, 1, memory_order_relaxed);
  return k;
}

/* What the event path's files (events.c, kernel_events.c, proxy_ctrl.c,
 * ops.c, ce.c) share: how a call of NCCL's enters it (the calling
 * thread's slot, its call counted, the handle's kind), the communicator a
 * thread checked last, the key of a thread's aggregate rows, and each
 * other's entries. The hot entries (a step's start, state and stop) read
 * nt_self themselves and come here only for what is rare: a thread
 * without its slot yet, or no handle. */
#ifndef NCCLTOP_PLUGIN_EVENT_ENTRY_H
#define NCCLTOP_PLUGIN_EVENT_ENTRY_H

#include "internal.h"

/* The calling thread's state, its call counted; NULL (counted apart,
 * never tracked) for a thread beyond the slots. */
static inline __attribute__((always_inline)) struct nt_thread *call_thread(void) {
  struct nt_thread *t = nt_thread_self();
  if (NT_UNLIKELY(!t)) {
    /* Inert, no thread has a slot: nothing to count (nor a shared counter
     * for every thread to contend on). */
    if (!atomic_load_explicit(&nt_g.inert, memory_order_relaxed))
      atomic_fetch_add_explicit(&nt_g.slotless_events, 1, memory_order_relaxed);
    return NULL;
  }
  NT_ADD(t->events, 1);
  return t;
}

/* nt_context_check on the calling thread's start path: NCCL names the same
 * communicator start after start, so the one last checked is taken as it
 * is (one compare instead of a range, a division and an acquire load). */
static inline struct nt_context *nt_context_of(struct nt_thread *t, void *context) {
  if (context && context == (void *)t->ctx_memo) return t->ctx_memo;
  struct nt_context *c = nt_context_check(context);
  if (c) t->ctx_memo = c;
  return c;
}

/* The start of a call that has a handle to give: the calling thread's
 * state, counted, or NULL (inert, no handle, or no slot). */
static inline __attribute__((always_inline)) struct nt_thread *start_begin(void **handle) {
  if (handle) *handle = NULL;
  if (!handle) return NULL;
  return call_thread(); /* NULL while inert: no thread has a slot then */
}

/* The start of a call on a handle NCCL got from us (a record or a stop):
 * the calling thread's state, counted, and the handle's kind; NULL (inert,
 * no handle, or no slot) for nothing to do. */
static inline __attribute__((always_inline)) struct nt_thread *handle_begin(void *handle,
                                                                            int *kind) {
  if (!handle) return NULL;
  struct nt_thread *t = call_thread(); /* NULL while inert: no thread has a slot */
  if (t) *kind = nt_handle_kind(handle);
  return t;
}

/* Relay rows (PXN) mix the relayed rank into the key and are told apart
 * from ordinary ones by their relay_rank as well (chan_row compares it). */
static inline uint64_t nt_row_key(const struct nt_context *c, int channel, int dir, int peer,
                                  int relay) {
  return 1 +
         (((uint64_t)(unsigned)c->index << 48) | ((uint64_t)(channel & 0xFF) << 40) |
          ((uint64_t)(dir & 1) << 32) | (uint32_t)peer) +
         ((uint64_t)(uint32_t)(relay + 1) << 33);
}

static inline uint32_t nt_row_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (uint32_t)k;
}

/* kernel_events.c: KernelCh and KernelPhase (v7) events. */
void *nt_kernel_ch_start(struct nt_thread *t, void *context, void *parent, int channel,
                         uint64_t ptimer);
void *nt_kernel_phase_start(struct nt_thread *t, const struct nt_ev *ev);
void nt_kernel_ch_stop(struct nt_thread *t, struct nt_kface *f);
void nt_kernel_phase_stop(struct nt_thread *t, struct nt_kphase_ev *p);

/* proxy_ctrl.c: the proxy thread's control bursts (ProxyCtrl), a small
 * state machine per thread under its seqlock. nt_start_ctrl (internal.h)
 * is the ABI's way in; these are the event path's. */
void *nt_ctrl_start(struct nt_thread *t, void *context);
/* A state of the thread's own burst handle. */
nt_nccl_result nt_ctrl_record(struct nt_thread *t, int state, int appended);
nt_nccl_result nt_ctrl_stop(struct nt_thread *t);

#endif

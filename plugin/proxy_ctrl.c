/* The proxy thread's control bursts (ProxyCtrl events): what the thread
 * is doing, Idle or Active, with Sleep, Wakeup and Append laid over it,
 * and the time it spends in each (the proxy view's states). One burst
 * handle per thread (bursts never nest), a small state machine under the
 * thread's seqlock, which the publisher reads. */
#include "event_entry.h"
#include "internal.h"

void *nt_ctrl_start(struct nt_thread *t, void *context) {
  /* A proxy thread passes its communicator at every burst: checked when it
   * is not the one already kept (a kept one is ours: it passed the check). */
  if (context != (void *)atomic_load_explicit(&t->ctrl_ctx, memory_order_relaxed)) {
    struct nt_context *c = nt_context_check(context);
    if (c) atomic_store_explicit(&t->ctrl_ctx, c, memory_order_relaxed);
  }
  if (!atomic_load_explicit(&t->is_proxy, memory_order_relaxed))
    atomic_store_explicit(&t->is_proxy, 1, memory_order_relaxed);
  return &t->ctrl;
}

nt_nccl_result nt_start_ctrl(void *context, void **handle) {
  struct nt_thread *t = start_begin(handle);
  if (t) *handle = nt_ctrl_start(t, context);
  return NT_NCCL_SUCCESS;
}

/* The thread enters `state` at `now`: the state it leaves gets its time.
 * Inline: a call's register saves would cost as much as what it does. */
static inline __attribute__((always_inline)) void ctrl_enter(struct nt_thread *t, int state,
                                                             uint64_t now) {
  uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
  NT_SEQ_WRITE_BEGIN(t->seq, seq);
  int cur = atomic_load_explicit(&t->cur_state, memory_order_relaxed);
  uint64_t since = NT_GET(t->since_ns);
  if (cur < NT_PROXY_NSTATES && now > since) NT_ADD(t->state_ns[cur], now - since);
  atomic_store_explicit(&t->cur_state, (uint8_t)state, memory_order_relaxed);
  NT_SET(t->since_ns, now);
  atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
}

static NT_COLD nt_nccl_result ctrl_enter_slow_clock(struct nt_thread *t, int state,
                                                    uint64_t ticks) {
  ctrl_enter(t, state, nt_clock_ns_slow(&t->clk, ticks));
  return NT_NCCL_SUCCESS;
}

/* ctrl_enter now; an out-of-date clock copy leaves by a tail call, so the
 * common path saves no register. */
static inline __attribute__((always_inline)) nt_nccl_result ctrl_enter_now(struct nt_thread *t,
                                                                           int state) {
  uint64_t now;
  if (NT_UNLIKELY(!nt_clock_copy_try(&t->clk, &now))) return ctrl_enter_slow_clock(t, state, now);
  ctrl_enter(t, state, now);
  return NT_NCCL_SUCCESS;
}

/* Idle and Active are edges that set the thread's base state; Sleep,
 * Wakeup and Append are bursts laid over it until AppendEnd or the stop.
 * Tested in the order NCCL sends them most (edges, then appends). */
nt_nccl_result nt_ctrl_record(struct nt_thread *t, int state, int appended) {
  int overlay;
  if (state == NT_ST_CTRL_IDLE || state == NT_ST_CTRL_ACTIVE) {
    int base = state == NT_ST_CTRL_IDLE ? NT_PROXY_IDLE : NT_PROXY_ACTIVE;
    atomic_store_explicit(&t->base_state, (uint8_t)base, memory_order_relaxed);
    /* Under a burst the edge only changes what the burst's end returns to. */
    if (atomic_load_explicit(&t->overlay, memory_order_relaxed) != NT_PROXY_UNKNOWN)
      return NT_NCCL_SUCCESS;
    return ctrl_enter_now(t, base);
  }
  switch (state) {
  case NT_ST_CTRL_APPEND: overlay = NT_PROXY_APPEND; break;
  case NT_ST_CTRL_APPEND_END:
    NT_ADD(t->appends, 1);
    if (appended > 0) NT_ADD(t->appended_ops, (uint64_t)appended);
    atomic_store_explicit(&t->overlay, NT_PROXY_UNKNOWN, memory_order_relaxed);
    return ctrl_enter_now(t, atomic_load_explicit(&t->base_state, memory_order_relaxed));
  case NT_ST_CTRL_SLEEP: overlay = NT_PROXY_SLEEP; break;
  case NT_ST_CTRL_WAKEUP:
    overlay = NT_PROXY_WAKEUP;
    NT_ADD(t->wakeups, 1);
    /* Sleep happens only when the thread has nothing to do. */
    atomic_store_explicit(&t->base_state, NT_PROXY_IDLE, memory_order_relaxed);
    break;
  default: NT_ADD(t->unknown_events, 1); return NT_NCCL_SUCCESS;
  }
  atomic_store_explicit(&t->overlay, (uint8_t)overlay, memory_order_relaxed);
  return ctrl_enter_now(t, overlay);
}

nt_nccl_result nt_ctrl_stop(struct nt_thread *t) {
  if (atomic_load_explicit(&t->overlay, memory_order_relaxed) == NT_PROXY_UNKNOWN)
    return NT_NCCL_SUCCESS;
  atomic_store_explicit(&t->overlay, NT_PROXY_UNKNOWN, memory_order_relaxed);
  return ctrl_enter_now(t, atomic_load_explicit(&t->base_state, memory_order_relaxed));
}

/* KernelCh and KernelPhase events: a channel's GPU work as the kernel
 * timed it (its start and stop ptimers), summed per channel into the
 * thread's kernel rows, and the operation it belongs to told that it runs.
 * NCCL uses a stale handle again after its stop (K3): every use gets a new
 * face of its event, so an old one fails the handle check. */
#include <stddef.h>

#include "event_entry.h"
#include "internal.h"

static struct nt_kernel_row *kernel_row(struct nt_thread *t, struct nt_context *c, int channel) {
  uint64_t key = nt_row_key(c, channel, 0, 0, -1);
  uint32_t h = nt_row_hash(key);
  for (uint32_t i = 0; i < 32; i++) {
    struct nt_kernel_row *r = &t->kernel[(h + i) % NT_KERNEL_ROWS_PER_THREAD];
    uint64_t k = atomic_load_explicit(&r->key, memory_order_relaxed);
    if (k == key) return r;
    if (k != 0) continue;
    r->ctx = c;
    r->channel = (uint8_t)channel;
    atomic_store_explicit(&r->key, key, memory_order_release);
    return r;
  }
  NT_ADD(t->dropped_rows, 1);
  return NULL;
}

/* A kernel event NCCL will never stop: its communicator was finalized
 * mid-kernel (an abort: 2.31's profiler thread drops its KernelCh work,
 * older proxy threads leave their loop) and its operation has been retired
 * without it (retire.c `orphaned`), or it has none. Its slot is taken back
 * and its handle goes stale (K3). */
static bool kevent_dead(const struct nt_kernel_event *e) {
  if (atomic_load_explicit(&e->ctx->live, memory_order_relaxed)) return false;
  return !e->task || (atomic_load_explicit(&e->task->st, memory_order_relaxed) & NT_TS_RETIRING);
}

static struct nt_kernel_event *kevent_alloc(struct nt_thread *t) {
  /* A slot freed a while ago, still in the cache (recycle.h). */
  for (const struct nt_recycled *r; (r = nt_recycle_take(&t->event_free, NT_EVENT_QUARANTINE));) {
    struct nt_kernel_event *e = &t->kevents[r->slot];
    if (!atomic_load_explicit(&e->in_use, memory_order_acquire) && e->cur_face == r->face) {
      /* The next one's line, as for ProxyOps (proxyop_pool.c). */
      int next = nt_recycle_peek(&t->event_free, NT_EVENT_QUARANTINE);
      if (next >= 0) __builtin_prefetch(&t->kevents[next].in_use, 1);
      return e;
    }
  }
  for (uint32_t i = 0; i < NT_POOL_PROBES; i++) {
    struct nt_kernel_event *e = &t->kevents[t->event_cursor++ % NT_EVENTS_PER_THREAD];
    if (!atomic_load_explicit(&e->in_use, memory_order_acquire)) return e;
    if (kevent_dead(e)) {
      e->faces[e->cur_face].self = NULL;
      e->ph.self = NULL;
      if (e->task) nt_task_detach(e->task, nt_now(), true, true, 0);
      e->task = NULL;
      return e;
    }
  }
  return NULL;
}

void *nt_kernel_ch_start(struct nt_thread *t, void *context, void *parent, int channel,
                         uint64_t ptimer) {
  struct nt_context *c = nt_context_of(t, context);
  struct nt_kernel_event *e = c ? kevent_alloc(t) : NULL;
  if (!e) {
    NT_ADD(t->dropped_events, 1);
    return NULL;
  }
  /* A new face for each use: a stale handle of an earlier one stays
   * invalid (K3). */
  struct nt_kface *f = &e->faces[(e->cur_face + 1u) % NT_KERNEL_FACES];
  e->cur_face = f->face = (uint8_t)(f - e->faces);
  f->kind = NT_K_KERNEL;
  f->self = f;
  e->ctx = c;
  e->task = nt_task_attach(t, parent, true);
  if (e->task) {
    /* The kernel reached this channel's work: running. */
    atomic_store_explicit(&e->task->begun, 1, memory_order_relaxed);
    atomic_store_explicit(&e->task->last_progress_ns, nt_now(), memory_order_relaxed);
  }
  e->channel = (uint8_t)channel;
  e->start_ptimer = ptimer;
  e->stop_ptimer = 0;
  atomic_store_explicit(&e->in_use, 1, memory_order_relaxed);
  return f;
}

/* A KernelPhase (v7): a phase of the work of its parent, a live KernelCh
 * event of ours. */
void *nt_kernel_phase_start(struct nt_thread *t, const struct nt_ev *ev) {
  struct nt_kface *f = nt_handle_kind(ev->parent) == NT_K_KERNEL ? ev->parent : NULL;
  struct nt_kernel_event *e = f ? nt_kface_event(f) : NULL;
  if (!e || !atomic_load_explicit(&e->in_use, memory_order_relaxed) ||
      ev->phase_id >= NT_KPHASE_COUNT) {
    NT_ADD(t->unknown_events, 1);
    return NULL;
  }
  struct nt_kphase_ev *p = &e->ph;
  p->kind = NT_K_PHASE;
  p->self = p;
  p->phase = ev->phase_id;
  p->start_ptimer = ev->ptimer;
  p->stop_ptimer = 0;
  return p;
}

/* Busy time is the union of a channel's intervals: every work of a batch
 * gets the batch's times (K2), so an interval inside the last one counted
 * adds nothing and one that overlaps it adds only what lies beyond. */
static uint64_t busy_add(struct nt_kernel_row *row, uint64_t start, uint64_t stop) {
  if (stop <= row->span_stop && start >= row->span_start) return 0;
  uint64_t from = start < row->span_stop && start >= row->span_start ? row->span_stop : start;
  if (start < row->span_start || start >= row->span_stop) row->span_start = start;
  row->span_stop = stop;
  return stop - from;
}

void nt_kernel_ch_stop(struct nt_thread *t, struct nt_kface *f) {
  struct nt_kernel_event *e = nt_kface_event(f);
  f->self = NULL;    /* any later use of this handle is stale (K3) */
  e->ph.self = NULL; /* and so is its phase handle */
  if (!atomic_load_explicit(&e->in_use, memory_order_relaxed)) return;
  struct nt_kernel_row *row = kernel_row(t, e->ctx, e->channel);
  uint64_t d =
      e->stop_ptimer > e->start_ptimer && e->start_ptimer ? e->stop_ptimer - e->start_ptimer : 0;
  if (row) {
    NT_ADD(row->count, 1);
    if (d) {
      uint64_t add = busy_add(row, e->start_ptimer, e->stop_ptimer);
      if (add) NT_ADD(row->busy_ns, add);
      NT_SET(row->last_ns, d);
    }
  }
  if (e->task) nt_task_detach(e->task, nt_now(), false, true, d);
  e->task = NULL;
  atomic_store_explicit(&e->in_use, 0, memory_order_release);
  /* Only the pool's owner recycles (recycle.h). */
  if (e >= t->kevents && e < t->kevents + NT_EVENTS_PER_THREAD)
    nt_recycle_put(&t->event_free, (uint32_t)(e - t->kevents), e->cur_face);
}

/* A phase's GPU time goes to its channel's kernel row and to the
 * operation the channel's work belongs to. */
void nt_kernel_phase_stop(struct nt_thread *t, struct nt_kphase_ev *p) {
  p->self = NULL; /* stale from now on */
  struct nt_kernel_event *e =
      (struct nt_kernel_event *)(void *)((char *)p - offsetof(struct nt_kernel_event, ph));
  if (!atomic_load_explicit(&e->in_use, memory_order_relaxed)) return;
  if (!p->start_ptimer || p->stop_ptimer <= p->start_ptimer) return;
  uint64_t d = p->stop_ptimer - p->start_ptimer;
  struct nt_kernel_row *row = kernel_row(t, e->ctx, e->channel);
  if (row) NT_ADD(row->phase_ns[p->phase], d);
  if (e->task)
    atomic_fetch_add_explicit(p->phase == NT_KPHASE_COMPUTE ? &e->task->compute_ns
                                                            : &e->task->sync_ns,
                              d, memory_order_relaxed);
}

/* Coll and P2p operations, from enqueue to completion, and the API events
 * of profiler v5+.
 *
 * NCCL starts and stops a Coll or P2p when it enqueues the work (the stop
 * means "enqueued", not "done"); the work is done when its last proxy-op or
 * kernel-channel child stops. The enqueuing thread takes a task slot from
 * its own pool and hands NCCL a pointer to it; children on proxy threads
 * hold references in the task's state word; the publisher thread retires a
 * finished task into the statistics (retire.c) and frees the slot. Cost:
 * a few string compares and stores per operation, one atomic per child
 * start and stop; nothing per step.
 */
#include "event_entry.h"
#include "internal.h"

static struct nt_task *task_alloc(struct nt_thread *t) {
  for (uint32_t i = 0; i < NT_POOL_PROBES; i++) {
    struct nt_task *k = &t->tasks[t->task_cursor++ % NT_TASKS_PER_THREAD];
    if (atomic_load_explicit(&k->st, memory_order_acquire) != 0) continue;
    return k;
  }
  return NULL;
}

int nt_name_index(struct nt_thread *t, int kind, const char *name) {
  static int (*const lookup[NT_NAME_KINDS])(const char *) = {
      nt_func_from_name, nt_algo_from_name, nt_proto_from_name, nt_dtype_from_name};
  static const char *(*const spell[NT_NAME_KINDS])(int) = {nt_func_name, nt_algo_name,
                                                           nt_proto_name, nt_dtype_name};
  struct nt_name_memo *m = &t->name_memo[kind];
  /* A pointer seen before, still spelling what it did (a caller's buffer
   * may have changed since): one strcmp. */
  if (name)
    for (int i = 0; i < NT_NAME_WAYS; i++)
      if (m->name[i] == name && strcmp(name, m->spelled[i]) == 0) return m->index[i];
  int index = lookup[kind](name);
  if (!name) return index;
  /* A buffer that now spells another name keeps its one entry. */
  int way = -1;
  for (int i = 0; i < NT_NAME_WAYS; i++)
    if (m->name[i] == name) way = i;
  if (way < 0) way = m->next++ % NT_NAME_WAYS;
  m->name[way] = name;
  m->spelled[way] = spell[kind](index);
  m->index[way] = (uint8_t)index;
  return index;
}

/* The earliest of what its children report, into a field only the
 * calling thread writes: an operation's ProxyOps and ProxySteps all start
 * on its communicator's proxy thread (P1), so a store, not an atomic
 * minimum. */
static void store_earlier(_Atomic uint64_t *p, uint64_t v) {
  uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
  if (!cur || v < cur) atomic_store_explicit(p, v, memory_order_relaxed);
}

void nt_task_began(struct nt_task *k, uint64_t now, bool step) {
  store_earlier(step ? &k->first_step_ns : &k->first_op_ns, now);
}

struct nt_task *nt_task_open(struct nt_thread *t, struct nt_context *c, const struct nt_ev *ev,
                             int func, uint64_t now, int mask) {
  struct nt_task *k = task_alloc(t);
  if (!k) return NULL;
  bool coll = ev->type != NT_EV_P2P;
  k->kind = NT_K_TASK;
  k->self = k;
  k->op_kind = coll ? NT_OP_COLL : NT_OP_P2P;
  k->func = (uint8_t)func;
  k->algo = (uint8_t)(coll ? nt_name_index(t, NT_NAME_ALGO, ev->op.algo) : NT_ALGO_NONE);
  k->proto = (uint8_t)(coll ? nt_name_index(t, NT_NAME_PROTO, ev->op.proto) : NT_PR_NONE);
  k->dtype = (uint8_t)nt_name_index(t, NT_NAME_DTYPE, ev->op.datatype);
  /* NCCL 2.31's userTag (the user's own name for the call) wins. */
  k->phase = ev->user_tag ? nt_phase_of_tag(ev->user_tag) : nt_phase_now();
  if (!k->phase) k->phase = nt_phase_now();
  k->nchannels = ev->op.nchannels;
  k->nwarps = ev->op.nwarps;
  k->expect_kernel = (mask & NT_EV_KERNEL_CH) != 0;
  k->expect_proxy = (mask & (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_NET_PLUGIN)) != 0;
  k->sym = coll && ev->op.sym;
  k->variant = k->sym ? nt_variant_of(ev->op.variant) : 0;
  if (k->sym) {
    /* NCCL 2.31 (O4): a symmetric plan has no proxy ops, and posts its
     * kernel channels against its first task only, the one whose
     * nChannels it sets; the others say 0 and get nothing, so their end
     * is not reported. NCCL names no protocol (""). */
    k->proto = NT_PR_NONE;
    k->expect_proxy = 0;
    if (!k->nchannels) k->expect_kernel = 0;
  }
  /* A Send or Recv with itself: a copy inside its group's kernel, which
   * NCCL gives no child (no ProxyOp, no KernelCh: seen in every 2.28.9
   * recording): it completes with its group (retire.c). */
  int rank = ev->rank >= 0 ? ev->rank : c->rank;
  k->group = t->group_serial;
  k->thread = (uint16_t)(t - nt_g.threads);
  k->self_p2p = !coll && rank >= 0 && ev->op.root_peer == rank;
  if (k->self_p2p) k->expect_proxy = k->expect_kernel = 0;
  k->quiet = 0;
  k->ctx = c;
  k->root_peer = ev->op.root_peer;
  k->seq = coll ? ev->op.seq : 0;
  k->count = ev->op.count;
  k->bytes = ev->op.count * (uint64_t)nt_dtype_size(k->dtype);
  k->enqueue_ns = now;
  k->seen_stop_ns = 0;
  atomic_store_explicit(&k->untimed, 0, memory_order_relaxed);
  atomic_store_explicit(&k->superseded, 0, memory_order_relaxed);
  atomic_store_explicit(&k->unreported, k->sym && !k->expect_kernel, memory_order_relaxed);
  k->kwait = k->seen_kch = 0;
  atomic_store_explicit(&k->last_op_stop_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->last_kernel_stop_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->first_step_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->first_op_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->gpu_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->sync_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->compute_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->begun, 0, memory_order_relaxed);
  atomic_store_explicit(&k->last_progress_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&k->st, NT_TS_LIVE, memory_order_release);
  /* After LIVE: a slot the publisher finds free inside its window is one
   * it may leave behind for good. */
  atomic_store_explicit(&t->tasks_opened, t->task_cursor, memory_order_release);
  /* The next task's slot, asked for now for writing: it was last written
   * 4096 operations ago, by this thread or the publisher that retired it,
   * and its lines arrive while NCCL makes the calls between two operations
   * (bench_replay --by-kind: a Coll start 25 to 80 ticks less). */
  {
    const char *next = (const char *)&t->tasks[t->task_cursor % NT_TASKS_PER_THREAD];
    __builtin_prefetch(next, 1);
    __builtin_prefetch(next + 64, 1);
    __builtin_prefetch(next + 128, 1);
  }
  return k;
}

void *nt_op_start(struct nt_thread *t, void *context, const struct nt_ev *ev) {
  struct nt_context *c = nt_context_of(t, context);
  if (!c) {
    NT_ADD(t->unknown_events, 1);
    return &nt_ignored_handle; /* non-NULL: NCCL keeps producing the children */
  }
  bool coll = ev->type == NT_EV_COLL;
  atomic_fetch_add_explicit(coll ? &c->colls : &c->p2ps, 1, memory_order_relaxed);
  uint64_t now = nt_now();
  int func = nt_name_index(t, NT_NAME_FUNC, ev->op.func);
  if (coll && func == NT_FUNC_BROADCAST) nt_bcast_claim(t, c, ev->parent);
  /* Collectives carry NCCL's per-function sequence number (the counter RAS
   * compares); p2p operations are counted. */
  nt_launch_note(c, func, coll, ev->op.seq, now);
  /* The mask NCCL copied for this task (M2): on 2.28+ the Coll's parent
   * is the call's CollApi/P2pApi, which kept the mask of its moment; before
   * that (no API events) the task copied it when appended, moments ago. */
  int mask = nt_handle_kind(ev->parent) == NT_K_API
                 ? atomic_load_explicit(&((struct nt_api *)ev->parent)->mask, memory_order_relaxed)
                 : nt_live_mask();
  struct nt_task *k = nt_task_open(t, c, ev, func, now, mask);
  if (!k) {
    NT_ADD(t->dropped_ops, 1);
    return &nt_ignored_handle;
  }
  return k;
}

void nt_op_stop(struct nt_task *k) {
  atomic_fetch_or_explicit(&k->st, NT_TS_STOPPED, memory_order_release);
}

struct nt_task *nt_task_attach(struct nt_thread *t, void *parent, bool kernel) {
  if (nt_handle_kind(parent) != NT_K_TASK) return NULL;
  struct nt_task *k = parent;
  uint64_t st = atomic_load_explicit(&k->st, memory_order_acquire), to;
  do {
    if (!(st & NT_TS_LIVE) || (st & NT_TS_RETIRING) || (st & NT_TS_REFS) == NT_TS_REFS) {
      NT_ADD(t->late_children, 1); /* its operation was already retired */
      return NULL;
    }
    /* A reference and a child counted, in one operation; each count stops
     * at its top rather than spill into the next. */
    to = st + 1;
    if (nt_ts_children(st) != NT_TS_COUNT) to += NT_TS_CHILD;
    if (kernel && nt_ts_kernel_children(st) != NT_TS_COUNT) to += NT_TS_KCHILD;
  } while (!atomic_compare_exchange_weak_explicit(&k->st, &st, to, memory_order_acq_rel,
                                                  memory_order_acquire));
  if (!atomic_load_explicit(&k->ctx->has_children, memory_order_relaxed))
    atomic_store_explicit(&k->ctx->has_children, 1, memory_order_relaxed);
  return k;
}

/* A later time into a field only this thread writes (internal.h). */
static void store_later(_Atomic uint64_t *p, uint64_t v) {
  if (v > atomic_load_explicit(p, memory_order_relaxed))
    atomic_store_explicit(p, v, memory_order_relaxed);
}

void nt_task_detach(struct nt_task *k, uint64_t now, bool untimed, bool kernel, uint64_t gpu_ns) {
  if (untimed) atomic_store_explicit(&k->untimed, 1, memory_order_relaxed);
  if (gpu_ns) store_later(&k->gpu_ns, gpu_ns);
  store_later(kernel ? &k->last_kernel_stop_ns : &k->last_op_stop_ns, now);
  /* Release: whoever sees the count drop sees the stop time. */
  atomic_fetch_sub_explicit(&k->st, 1, memory_order_release);
}

/* API events: counted per communicator; CollApi and P2pApi also timed. */
void *nt_api_start_bare(struct nt_thread *t, void *context, uint32_t type) {
  struct nt_context *c = nt_context_of(t, context);
  if (!c) return &nt_ignored_handle;
  switch (type) {
  case NT_EV_GROUP_API:
    atomic_fetch_add_explicit(&c->group_api, 1, memory_order_relaxed);
    nt_bcast_close(t); /* a new call: the last one's group is over */
    t->gapi.ctx = c;
    return &t->gapi;
  case NT_EV_KERNEL_LAUNCH:
    atomic_fetch_add_explicit(&c->kernel_launches, 1, memory_order_relaxed);
    return &nt_ignored_handle;
  default: return &nt_ignored_handle;
  }
}

void *nt_api_start(struct nt_thread *t, void *context, const struct nt_ev *ev) {
  struct nt_context *c = nt_context_of(t, context);
  if (!c) return &nt_ignored_handle;
  switch (ev->type) {
  case NT_EV_COLL_API:
  case NT_EV_P2P_API:
    atomic_fetch_add_explicit(ev->type == NT_EV_COLL_API ? &c->coll_api : &c->p2p_api, 1,
                              memory_order_relaxed);
    if (ev->graph_captured) atomic_fetch_add_explicit(&c->graph_captured, 1, memory_order_relaxed);
    if (ev->type == NT_EV_COLL_API) nt_bcast_api(t, c, ev);
    t->api.ctx = c;
    t->api.start_ns = nt_now();
    atomic_store_explicit(&t->api.mask, nt_live_mask(), memory_order_relaxed);
    return &t->api;
  default: return &nt_ignored_handle;
  }
}

void nt_api_stop(struct nt_api *a) {
  if (a->group) {
    /* Only the owner touches its pending list (a GroupApi stops on the
     * thread that started it). */
    if (a == &nt_self->gapi) nt_bcast_close(nt_self);
    return;
  }
  /* NCCL can stop a stale CollApi handle again: only the first stop counts. */
  struct nt_context *c = a->ctx;
  if (!c) return;
  a->ctx = NULL;
  uint64_t now = nt_now();
  if (now > a->start_ns)
    atomic_fetch_add_explicit(&c->api_ns, now - a->start_ns, memory_order_relaxed);
}

/* The event path: startEvent, stopEvent and recordEventState after the ABI
 * wrappers have read the version-specific descriptor.
 *
 * Cost per call: one TLS load, one clock read, a few relaxed stores into the
 * calling thread's own slot. No lock, no allocation, no syscall. Every handle
 * NCCL hands back is range-checked before use; anything unexpected is
 * counted and ignored.
 */
#include <stddef.h>
#include <string.h>

#include "event_entry.h"
#include "internal.h"

/* Handle for events we count but do not track (Group, GroupApi,
 * KernelLaunch, operations we could not track): non-NULL so NCCL keeps
 * generating their children. */
unsigned char nt_ignored_handle = NT_K_IGNORED;

/* Find or insert the aggregate row of (context, channel, dir, peer) in this
 * thread's table. Only the owner inserts, so no CAS is needed: the key is
 * stored last, with release, for the publisher. */
static struct nt_chan_row *chan_row(struct nt_thread *t, struct nt_context *c, int channel, int dir,
                                    int peer, int relay) {
  uint64_t key = nt_row_key(c, channel, dir, peer, relay);
  if (!key) key = 1; /* 0 marks an empty slot */
  uint32_t h = nt_row_hash(key);
  for (uint32_t i = 0; i < 32; i++) {
    struct nt_chan_row *r = &t->chan[(h + i) % NT_CHAN_ROWS_PER_THREAD];
    uint64_t k = atomic_load_explicit(&r->key, memory_order_relaxed);
    if (k == key && r->ctx == c && r->channel == (uint8_t)channel && r->dir == (uint8_t)dir &&
        r->peer == peer && r->relay_rank == relay)
      return r;
    if (k != 0) continue;
    r->ctx = c;
    r->channel = (uint8_t)channel;
    r->dir = (uint8_t)dir;
    r->peer = peer;
    r->relay_rank = relay;
    atomic_store_explicit(&r->cur_step, -1, memory_order_relaxed);
    atomic_store_explicit(&r->cur_wait, NT_WAIT_NONE, memory_order_relaxed);
    atomic_store_explicit(&r->key, key, memory_order_release);
    return r;
  }
  NT_ADD(t->dropped_rows, 1);
  return NULL;
}

static void *start_proxy_op(struct nt_thread *t, void *context, const struct nt_proxy_op_ev *ev) {
  /* PXN: another process's op, run by our proxy thread. Its context and
   * parent are pointers into that process: never dereference them. Its
   * steps, bytes and waits are this thread's work: they go to a row of the
   * thread's own communicator (the one its ProxyCtrl events carry, R4),
   * marked with the rank the op belongs to. */
  bool foreign = ev->pid != nt_g.pid;
  struct nt_context *c = foreign ? atomic_load_explicit(&t->ctrl_ctx, memory_order_relaxed)
                                 : nt_context_of(t, context);
  if (foreign) NT_ADD(t->foreign_ops, 1);
  if (!c) {
    if (!foreign) NT_ADD(t->unknown_events, 1);
    return NULL;
  }
  bool never = false;
  struct nt_task *task = foreign ? NULL : nt_proxyop_parent(t, ev->parent, &never);
  if (never) return NULL; /* NCCL never stops it (P2, proxyop_pool.c) */
  uint64_t now = nt_clock_ns_copy(&t->clk);
  struct nt_op *op = nt_proxyop_alloc(t, now);
  int dir = ev->is_send ? NT_DIR_SEND : NT_DIR_RECV;
  int relay = foreign ? (ev->rank >= 0 ? ev->rank : INT32_MAX) : -1;
  struct nt_chan_row *row = op ? chan_row(t, c, ev->channel, dir, ev->peer, relay) : NULL;
  if (!row) {
    if (task) nt_task_detach(task, now, true, false, 0);
    NT_ADD(t->dropped_events, 1);
    return NULL;
  }
  /* A new face for each use: a handle of an earlier use stays stale. */
  struct nt_oface *f = &op->faces[(op->cur_face + 1u) % NT_OP_FACES];
  op->cur_face = f->face = (uint8_t)(f - op->faces);
  f->kind = NT_K_OP;
  f->self = f;
  op->dir = (uint8_t)dir;
  op->begun = 0;
  op->stepped = 0;
  op->v3_bytes = 0;
  op->progress_told_ns = 0;
  op->start_ns = now;
  if (task) nt_task_began(task, now, false);
  op->row = row;
  op->is_net = 0;
  op->task = task;
  /* No step of an earlier use is active: stop_op and the pool's take()
   * ended them all (so the steps' lines are not touched here). */
  op->live_steps = 0;
  atomic_store_explicit(&op->in_use, 1, memory_order_relaxed);
  atomic_store_explicit(&t->op_since[op - t->ops], now | 1, memory_order_relaxed);
  NT_ADD(row->ops_started, 1);
  return f;
}

/* The op a handle of ours is the live face of, or NULL. */
static inline __attribute__((always_inline)) struct nt_op *op_of(void *h) {
  if (nt_handle_kind(h) != NT_K_OP) return NULL;
  struct nt_op *op = nt_oface_op(h);
  return atomic_load_explicit(&op->in_use, memory_order_relaxed) ? op : NULL;
}

/* Steps live inside their op, in slot step % NT_STEPS_PER_OP, as NCCL keeps
 * them. NCCL may start a step slot again without stopping it (a recv step
 * whose irecv could not be posted yet): the restart simply replaces it. */
static void stop_step(struct nt_step *s, uint64_t now);

/* The rare end of a step NCCL never stopped: out of the start's line. */
static NT_COLD void stop_step_unstopped(struct nt_step *s) {
  stop_step(s, nt_now());
}

static NT_COLD void op_first_step(struct nt_op *op) {
  op->stepped = 1;
  if (op->task) nt_task_began(op->task, nt_now(), true);
}

/* A step takes its slot (start_proxy_step's checks done). */
static inline __attribute__((always_inline)) void *step_fill(struct nt_op *op, struct nt_step *s,
                                                             int step) {
  op->is_net = 1;
  s->kind = NT_K_STEP;
  s->self = s;
  s->op = op;
  s->step = step;
  s->wait = NT_WAIT_NONE;
  s->bytes_counted = 0;
  /* A step's time starts at its first wait (record_step sets since_ns): no
   * clock read here, except for the op's first step, which starts its
   * operation. Nor is the row's current step set: the first wait, which
   * NCCL records in the same pass, sets it with its wait. */
  s->active = 1;
  op->live_steps |= (uint16_t)(1u << ((unsigned)step % NT_STEPS_PER_OP));
  return s;
}

/* Its slot still holds an earlier step NCCL never stopped (V4: 2.26 stops
 * only the first of the recv steps done in one pass). NCCL keeps at most 8
 * steps of an op in flight, so that step is done: counted, its wait ending
 * now, in the pass that reuses its slot. The same step started again (its
 * irecv could not be posted) just replaces itself. */
static inline bool step_slot_busy(const struct nt_step *s, int step) {
  return s->active && s->step != step;
}

/* The rare starts: a slot NCCL never freed, or the op's first step (its
 * operation's execution begins). */
static NT_COLD void *start_step_cold(struct nt_op *op, struct nt_step *s, int step) {
  if (step_slot_busy(s, step)) stop_step_unstopped(s);
  if (!op->stepped) op_first_step(op);
  return step_fill(op, s, step);
}

static void *start_proxy_step(struct nt_thread *t, void *parent, int step) {
  struct nt_op *op = op_of(parent);
  if (!op) {
    if (parent) NT_ADD(t->unknown_events, 1);
    return NULL;
  }
  struct nt_step *s = &op->steps[(unsigned)step % NT_STEPS_PER_OP];
  if (NT_UNLIKELY(step_slot_busy(s, step) || !op->stepped)) return start_step_cold(op, s, step);
  return step_fill(op, s, step);
}

nt_nccl_result nt_start(void *context, void **handle, const struct nt_ev *ev) {
  struct nt_thread *t = start_begin(handle);
  if (!t) return NT_NCCL_SUCCESS;
  switch (ev->type) {
  case NT_EV_PROXY_STEP: *handle = start_proxy_step(t, ev->parent, ev->step); break;
  case NT_EV_PROXY_OP: {
    struct nt_proxy_op_ev op = {.parent = ev->parent,
                                .rank = ev->rank,
                                .pid = ev->pid,
                                .channel = ev->channel,
                                .peer = ev->peer,
                                .is_send = ev->is_send};
    *handle = start_proxy_op(t, context, &op);
    break;
  }
  case NT_EV_PROXY_CTRL: *handle = nt_ctrl_start(t, context); break;
  case NT_EV_KERNEL_CH:
    *handle = nt_kernel_ch_start(t, context, ev->parent, ev->channel, ev->ptimer);
    break;
  case NT_EV_KERNEL_PHASE: *handle = nt_kernel_phase_start(t, ev); break;
  case NT_EV_COLL:
  case NT_EV_P2P: *handle = nt_op_start(t, context, ev); break;
  case NT_EV_GROUP: /* ours to count the groups by, no handle */
    t->group_serial++;
    *handle = &nt_ignored_handle;
    break;
  case NT_EV_GROUP_API:
  case NT_EV_KERNEL_LAUNCH: *handle = nt_api_start_bare(t, context, ev->type); break;
  case NT_EV_COLL_API:
  case NT_EV_P2P_API: *handle = nt_api_start(t, context, ev); break;
  case NT_EV_NET_PLUGIN: *handle = nt_net_start(t, context, ev); break;
  case NT_EV_CE_COLL:
  case NT_EV_CE_SYNC:
  case NT_EV_CE_BATCH: *handle = nt_ce_start(t, context, ev); break;
  default: NT_ADD(t->unknown_events, 1); break;
  }
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_start_proxy_op(void *context, void **handle, const struct nt_proxy_op_ev *op) {
  struct nt_thread *t = start_begin(handle);
  if (t) *handle = start_proxy_op(t, context, op);
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_start_kernel_ch(void *context, void **handle, void *parent, int channel,
                                  uint64_t ptimer) {
  struct nt_thread *t = start_begin(handle);
  if (t) *handle = nt_kernel_ch_start(t, context, parent, channel, ptimer);
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_start_bare(void *context, void **handle, uint32_t type) {
  struct nt_thread *t = start_begin(handle);
  if (!t) return NT_NCCL_SUCCESS;
  if (type == NT_EV_GROUP) {
    t->group_serial++;
    *handle = &nt_ignored_handle;
  } else {
    *handle = nt_api_start_bare(t, context, type);
  }
  return NT_NCCL_SUCCESS;
}

static NT_COLD nt_nccl_result start_step_entry_slow(void **handle, void *parent, int step) {
  struct nt_thread *t = start_begin(handle);
  if (t) *handle = start_proxy_step(t, parent, step);
  return NT_NCCL_SUCCESS;
}

static NT_COLD nt_nccl_result start_step_slow(struct nt_thread *t, void **handle, void *parent,
                                              int step) {
  *handle = start_proxy_step(t, parent, step);
  return NT_NCCL_SUCCESS;
}

/* start_proxy_step, its rare cases (and anything but a live op's step) a
 * tail call. */
nt_nccl_result nt_start_step(void **handle, void *parent, int step) {
  struct nt_thread *t = nt_self;
  if (NT_UNLIKELY(!t || !handle)) return start_step_entry_slow(handle, parent, step);
  NT_ADD(t->events, 1);
  struct nt_op *op = op_of(parent);
  struct nt_step *s = op ? &op->steps[(unsigned)step % NT_STEPS_PER_OP] : NULL;
  if (NT_UNLIKELY(!op || step_slot_busy(s, step) || !op->stepped))
    return start_step_slow(t, handle, parent, step);
  *handle = step_fill(op, s, step);
  return NT_NCCL_SUCCESS;
}

/* --- proxy steps --- */

static int step_wait_of(int state) {
  switch (state) {
  case NT_ST_STEP_SEND_GPU_WAIT: return NT_WAIT_SEND_GPU;
  case NT_ST_STEP_SEND_PEER_WAIT: return NT_WAIT_SEND_PEER;
  case NT_ST_STEP_SEND_WAIT: return NT_WAIT_SEND_NET;
  case NT_ST_STEP_RECV_WAIT: return NT_WAIT_RECV_NET;
  case NT_ST_STEP_RECV_FLUSH_WAIT: return NT_WAIT_RECV_FLUSH;
  case NT_ST_STEP_RECV_GPU_WAIT: return NT_WAIT_RECV_GPU;
  default: return NT_WAIT_NONE;
  }
}

/* A wait's index among its direction's three (a row's wait_ns), as
 * nt_dir_wait numbers them; above 2 for no wait or one of the other
 * direction. One subtraction for what two tests would ask. */
_Static_assert(NT_DIR_SEND == 0 && NT_DIR_RECV == 1 && NT_WAIT_RECV_NET == 3, "wait numbering");
static inline unsigned wait_index(int wait, int dir) {
  return (unsigned)wait - NT_WAIT_RECV_NET * (unsigned)dir;
}

/* The direction is the op's (its row's is the same, in the row's second
 * line, which a step then need not touch). */
static inline void step_close_wait(struct nt_step *s, struct nt_chan_row *row, uint64_t now) {
  if (s->wait != NT_WAIT_NONE && now > s->since_ns)
    NT_ADD(row->wait_ns[wait_index(s->wait, s->op->dir)], now - s->since_ns);
}

/* The op's first sign that the GPU reached it (a send step the GPU filled,
 * a receive step that got data, or any step done): from then on its
 * channel and its operation are running, no longer queued. */
static inline void op_progress(struct nt_op *op, uint64_t now) {
  if (!op->begun) {
    op->begun = 1;
    NT_ADD(op->row->ops_begun, 1);
    if (op->task && !atomic_load_explicit(&op->task->begun, memory_order_relaxed))
      atomic_store_explicit(&op->task->begun, 1, memory_order_relaxed);
  }
  /* The task is shared with the enqueuing thread and the publisher: its
   * line is written at most once per NT_PROGRESS_GRAIN_NS per op, far
   * finer than any age the viewer shows, instead of at every step. */
  if (op->task && now - op->progress_told_ns >= NT_PROGRESS_GRAIN_NS) {
    op->progress_told_ns = now;
    atomic_store_explicit(&op->task->last_progress_ns, now, memory_order_relaxed);
  }
}

static bool past_first_wait(int wait) {
  return wait != NT_WAIT_SEND_GPU && wait != NT_WAIT_RECV_NET;
}

/* A step enters `wait` (from `state`) at `now`. */
static inline __attribute__((always_inline)) void
record_step_at(struct nt_step *s, int wait, int state, const size_t *size, uint64_t now) {
  struct nt_chan_row *row = s->op->row;
  step_close_wait(s, row, now);
  s->wait = (uint8_t)wait;
  s->since_ns = now;
  /* transSize is current only at these states; elsewhere it still holds the
   * previous step's size. */
  if (size && !s->bytes_counted &&
      (state == NT_ST_STEP_SEND_WAIT || state == NT_ST_STEP_RECV_FLUSH_WAIT)) {
    NT_ADD(row->bytes, *size);
    s->bytes_counted = 1;
  }
  atomic_store_explicit(&row->cur_step, s->step, memory_order_relaxed);
  atomic_store_explicit(&row->cur_wait, (uint8_t)wait, memory_order_relaxed);
  NT_SET(row->cur_since_ns, now); /* progress too: collect.c takes the later of the two */
  /* Begun first: true for all but an op's first steps, so the branch is
   * predictable, where the wait's kind is not (callgrind --branch-sim on
   * the recordings: 13% fewer mispredicted branches per call). */
  if (s->op->begun || past_first_wait(wait)) op_progress(s->op, now);
}

/* record_step when the thread's clock copy is out of date: its reading
 * made through the shared record, out of the hot path. */
static NT_COLD nt_nccl_result record_step_slow_clock(struct nt_thread *t, struct nt_step *s,
                                                     int state, const size_t *size,
                                                     uint64_t ticks) {
  record_step_at(s, step_wait_of(state), state, size, nt_clock_ns_slow(&t->clk, ticks));
  return NT_NCCL_SUCCESS;
}

/* A state of a live step of ours. Every rare case leaves by a tail call, so
 * the path that NCCL takes at most calls makes no call of its own (and
 * saves no register to make one). */
static inline __attribute__((always_inline)) nt_nccl_result
record_step(struct nt_thread *t, struct nt_step *s, int state, const size_t *size) {
  int wait = step_wait_of(state);
  /* No wait, or one of the other direction, means a confused caller:
   * ignore it. */
  if (wait_index(wait, s->op->dir) > 2) {
    NT_ADD(t->unknown_events, 1);
    return NT_NCCL_SUCCESS;
  }
  /* NCCL records SendPeerWait again each time the receiver has not given
   * credit yet: the first one starts the wait, repeats change nothing. */
  if (wait == s->wait) return NT_NCCL_SUCCESS;
  uint64_t now;
  if (NT_UNLIKELY(!nt_clock_copy_try(&t->clk, &now)))
    return record_step_slow_clock(t, s, state, size, now);
  record_step_at(s, wait, state, size, now);
  return NT_NCCL_SUCCESS;
}

static inline __attribute__((always_inline)) void stop_step(struct nt_step *s, uint64_t now) {
  if (!s->active) return;
  struct nt_chan_row *row = s->op->row;
  step_close_wait(s, row, now);
  s->active = 0;
  s->op->live_steps &= (uint16_t) ~(1u << ((unsigned)s->step % NT_STEPS_PER_OP));
  NT_ADD(row->steps, 1);
  NT_SET(row->last_progress_ns, now);
  op_progress(s->op, now);
  if (atomic_load_explicit(&row->cur_step, memory_order_relaxed) == s->step)
    atomic_store_explicit(&row->cur_wait, NT_WAIT_NONE, memory_order_relaxed);
}

static NT_COLD void stop_op(struct nt_thread *t, struct nt_op *op) {
  op->faces[op->cur_face].self = NULL; /* its handle is stale from now on */
  /* An op stops when all its steps are done, in the same proxy pass: a
   * step still open here is one NCCL did not stop (V4), done by now. */
  uint64_t now = nt_now(); /* one read for the op and the steps it ends */
  for (unsigned live = op->live_steps; live; live &= live - 1)
    stop_step(&op->steps[__builtin_ctz(live)], now);
  NT_ADD(op->row->ops_done, 1);
  if (op->begun) NT_ADD(op->row->begun_done, 1);
  NT_SET(op->row->last_progress_ns, now);
  if (op->task) nt_task_detach(op->task, now, false, false, 0);
  op->task = NULL;
  nt_proxyop_free(t, op);
}

/* The stops of everything but steps and proxy-control bursts: out of the
 * hot path's line. */
static NT_COLD void stop_other(struct nt_thread *t, void *handle, int kind) {
  switch (kind) {
  case NT_K_OP: {
    struct nt_op *op = op_of(handle);
    if (op) stop_op(t, op);
    break;
  }
  case NT_K_KERNEL: nt_kernel_ch_stop(t, handle); break;
  case NT_K_PHASE: nt_kernel_phase_stop(t, handle); break;
  case NT_K_TASK: nt_op_stop(handle); break;
  case NT_K_API: nt_api_stop(handle); break;
  case NT_K_NET: nt_net_stop(handle); break;
  case NT_K_IGNORED: break;
  default: NT_ADD(t->unknown_events, 1); break;
  }
}

/* The stops of all but a live step's: out of nt_stop's path, a tail call. */
static NT_COLD nt_nccl_result stop_not_step(struct nt_thread *t, void *handle, int kind) {
  if (kind == NT_K_CTRL) {
    if (handle == &t->ctrl) return nt_ctrl_stop(t);
    NT_ADD(t->unknown_events, 1); /* another thread's burst: not ours to end */
    return NT_NCCL_SUCCESS;
  }
  if (kind != NT_K_STEP)
    stop_other(t, handle, kind);
  else if (((struct nt_step *)handle)->active)
    stop_step(handle, nt_clock_ns_copy(&t->clk));
  return NT_NCCL_SUCCESS;
}

static NT_COLD nt_nccl_result stop_step_slow_clock(struct nt_thread *t, struct nt_step *s,
                                                   uint64_t ticks) {
  stop_step(s, nt_clock_ns_slow(&t->clk, ticks));
  return NT_NCCL_SUCCESS;
}

/* A call from a thread without its slot yet (or with no handle): the
 * general way in. */
static NT_COLD nt_nccl_result stop_entry_slow(void *handle) {
  int kind;
  struct nt_thread *t = handle_begin(handle, &kind);
  return t ? stop_not_step(t, handle, kind) : NT_NCCL_SUCCESS;
}

nt_nccl_result nt_stop(void *handle) {
  struct nt_thread *t = nt_self;
  if (NT_UNLIKELY(!t || !handle)) return stop_entry_slow(handle);
  NT_ADD(t->events, 1);
  /* The thread's own burst handle: no handle check needed. */
  if (handle == &t->ctrl) return nt_ctrl_stop(t);
  int kind = nt_handle_kind(handle);
  /* A live step's stop is most of the stops NCCL makes: its path alone is
   * inline, one predictable branch; the rest (control bursts included) is a
   * tail call. The clock only for a live step. */
  struct nt_step *s = handle;
  if (NT_UNLIKELY(kind != NT_K_STEP || !s->active)) return stop_not_step(t, handle, kind);
  uint64_t now;
  if (NT_UNLIKELY(!nt_clock_copy_try(&t->clk, &now))) return stop_step_slow_clock(t, s, now);
  stop_step(s, now);
  return NT_NCCL_SUCCESS;
}

/* An op's own states (net.cc only; 2.26's step bookkeeping): off the
 * step path, which is most of the calls. */
static __attribute__((noinline)) void record_op(struct nt_thread *t, void *handle, int state,
                                                uint64_t trans_size, bool has_size, int count) {
  /* 2.26: bytes come only as the op's running total (its steps carry no
   * size); InProgress (2.27+) and the other op states carry nothing we use. */
  struct nt_op *op = op_of(handle);
  if (!op) return;
  op->is_net = 1; /* only net.cc records op states (proxyop_pool.c) */
  if (has_size && trans_size > op->v3_bytes) {
    NT_ADD(op->row->bytes, trans_size - op->v3_bytes);
    op->v3_bytes = trans_size;
  }
  /* 2.26 has no SendPeerWait step state: it records RemFifoWait on the
   * op before each isend try of the next step to go, whose data the GPU
   * has put there; until SendTransmitted that step waits for the
   * receiver's credit (V3). Steps go out in order: while one waits so,
   * a RemFifoWait is its next try; else it is the lowest step still
   * waiting for its GPU. */
  if (state == NT_ST_V3_OP_SEND_REM_FIFO_WAIT && op->dir == NT_DIR_SEND) {
    struct nt_step *next = NULL;
    for (int i = 0; i < NT_STEPS_PER_OP; i++) {
      struct nt_step *s = &op->steps[i];
      if (!s->active) continue;
      if (s->wait == NT_WAIT_SEND_PEER) {
        next = NULL;
        break;
      }
      if (s->wait == NT_WAIT_SEND_GPU && (!next || s->step < next->step)) next = s;
    }
    if (next) record_step(t, next, NT_ST_STEP_SEND_PEER_WAIT, NULL);
  }
  /* 2.26 says after each step done how many are; it stops only the first
   * of those done in one pass (V4): the others end here, exactly. */
  if ((state == NT_ST_V3_OP_SEND_DONE || state == NT_ST_V3_OP_RECV_DONE) && count > 0)
    for (int i = 0; i < NT_STEPS_PER_OP; i++)
      if (op->steps[i].active && op->steps[i].step < count) stop_step(&op->steps[i], nt_now());
}

/* The state records of everything but steps and this thread's control
 * bursts: out of the hot path's line. */
static NT_COLD void record_other(struct nt_thread *t, void *handle, int kind, int state,
                                 uint64_t trans_size, bool has_size, int count, uint64_t ptimer) {
  switch (kind) {
  case NT_K_CTRL: NT_ADD(t->unknown_events, 1); break; /* another thread's burst: not ours */
  case NT_K_KERNEL:
    if (state == NT_ST_KERNEL_CH_STOP) nt_kface_event(handle)->stop_ptimer = ptimer;
    break;
  case NT_K_PHASE:
    if (state == NT_ST_KERNEL_PHASE_STOP) ((struct nt_kphase_ev *)handle)->stop_ptimer = ptimer;
    break;
  case NT_K_OP: record_op(t, handle, state, trans_size, has_size, count); break;
  case NT_K_NET: break; /* NetPluginUpdate: the plugin's data, nothing we aggregate */
  case NT_K_TASK:
  case NT_K_API:
  case NT_K_IGNORED: break; /* group API states */
  default: NT_ADD(t->unknown_events, 1); break;
  }
}

/* nt_record's records on a handle of `kind`: a step's (v3: NCCL 2.26's
 * step states come this way), the thread's own burst's, or the rest. */
static nt_nccl_result record_kind(struct nt_thread *t, void *handle, int kind, int state,
                                  uint64_t trans_size, bool has_size, int count, uint64_t ptimer) {
  if (kind == NT_K_STEP) {
    struct nt_step *s = handle;
    size_t size = (size_t)trans_size;
    if (s->active) record_step(t, s, state, has_size ? &size : NULL);
  } else if (kind == NT_K_CTRL && handle == &t->ctrl) {
    return nt_ctrl_record(t, state, count);
  } else {
    record_other(t, handle, kind, state, trans_size, has_size, count, ptimer);
  }
  return NT_NCCL_SUCCESS;
}

static NT_COLD nt_nccl_result record_entry_slow(void *handle, int state, uint64_t trans_size,
                                                bool has_size, int count, uint64_t ptimer) {
  int kind;
  struct nt_thread *t = handle_begin(handle, &kind);
  if (!t) return NT_NCCL_SUCCESS;
  return record_kind(t, handle, kind, state, trans_size, has_size, count, ptimer);
}

/* The records that are not a step's state (v4+): the proxy thread's
 * bursts most, then ops' and kernel channels'. */
nt_nccl_result nt_record(void *handle, int state, uint64_t trans_size, bool has_size, int count,
                         uint64_t ptimer) {
  struct nt_thread *t = nt_self;
  if (NT_UNLIKELY(!t || !handle))
    return record_entry_slow(handle, state, trans_size, has_size, count, ptimer);
  NT_ADD(t->events, 1);
  if (handle == &t->ctrl) return nt_ctrl_record(t, state, count);
  return record_kind(t, handle, nt_handle_kind(handle), state, trans_size, has_size, count, ptimer);
}

/* A step state on a handle that is not a live step: what nt_record does. */
static NT_COLD nt_nccl_result record_step_not_step(struct nt_thread *t, void *handle, int kind,
                                                   int state, const size_t *trans_size) {
  if (kind != NT_K_STEP)
    record_other(t, handle, kind, state, trans_size ? *trans_size : 0, trans_size != NULL, 0, 0);
  return NT_NCCL_SUCCESS;
}

static NT_COLD nt_nccl_result record_step_entry_slow(void *handle, int state,
                                                     const size_t *trans_size) {
  int kind;
  struct nt_thread *t = handle_begin(handle, &kind);
  if (!t) return NT_NCCL_SUCCESS;
  struct nt_step *s = handle;
  if (kind != NT_K_STEP || !s->active)
    return record_step_not_step(t, handle, kind, state, trans_size);
  return record_step(t, s, state, trans_size);
}

nt_nccl_result nt_record_step(void *handle, int state, const size_t *trans_size) {
  struct nt_thread *t = nt_self;
  if (NT_UNLIKELY(!t || !handle)) return record_step_entry_slow(handle, state, trans_size);
  NT_ADD(t->events, 1);
  int kind = nt_handle_kind(handle);
  struct nt_step *s = handle;
  if (NT_UNLIKELY(kind != NT_K_STEP || !s->active))
    return record_step_not_step(t, handle, kind, state, trans_size);
  return record_step(t, s, state, trans_size);
}

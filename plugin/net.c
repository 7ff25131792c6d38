/* Network plugin events: what a net plugin (IB, socket, or an external one)
 * reports through NCCL's profiler callback, one event per work request or
 * socket task. Aggregated per (communicator, device, QP or socket) in the
 * starting thread's table. Stock NCCL builds emit none (NCCL's NET_PROFILER
 * build option); external net plugins may.
 *
 * The plugin's descriptor lives in this process (the net plugin's own
 * memory); it is read only for the version we know. The parent is a proxy
 * step handle, checked before use. */
#include "internal.h"

static uint64_t net_key(const struct nt_context *c, int type, int32_t device, uint32_t id) {
  uint64_t ci = c ? (uint64_t)(unsigned)c->index + 1 : 0;
  return 1 + ((ci << 56) | ((uint64_t)(type & 0xF) << 52) |
              ((uint64_t)((uint32_t)device & 0xFFFFF) << 32) | id);
}

static struct nt_net_row *net_row(struct nt_thread *t, struct nt_context *c, int type,
                                  int32_t device, uint32_t id) {
  uint64_t key = net_key(c, type, device, id);
  uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40);
  for (uint32_t i = 0; i < 16; i++) {
    struct nt_net_row *r = &t->net[(h + i) % NT_NET_ROWS_PER_THREAD];
    uint64_t k = atomic_load_explicit(&r->key, memory_order_relaxed);
    if (k == key) return r;
    if (k != 0) continue;
    r->ctx = c;
    r->type = (uint8_t)type;
    r->device = device;
    r->id = id;
    atomic_store_explicit(&r->key, key, memory_order_release);
    return r;
  }
  NT_ADD(t->dropped_rows, 1);
  return NULL;
}

static struct nt_net_event *net_alloc(struct nt_thread *t) {
  for (uint32_t i = 0; i < NT_POOL_PROBES; i++) {
    struct nt_net_event *e = &t->nevents[t->net_cursor++ % NT_NET_EVENTS_PER_THREAD];
    if (!atomic_load_explicit(&e->in_use, memory_order_acquire)) return e;
  }
  return NULL;
}

/* The communicator: through the parent step when it is ours, else the
 * context when it is ours (under PXN it may be another process's). */
static struct nt_context *net_context(void *context, void *parent) {
  if (nt_handle_kind(parent) == NT_K_STEP) {
    const struct nt_step *s = parent;
    if (s->op && s->op->row) return s->op->row->ctx;
  }
  return nt_context_check(context);
}

void *nt_net_start(struct nt_thread *t, void *context, const struct nt_ev *ev) {
  NT_ADD(t->net_events, 1);
  int64_t id = ev->net_id;
  const void *d = ev->net_data;
  if (!d || (id & NT_NET_VER_MASK) != 1) {
    NT_ADD(t->unknown_events, 1);
    return NULL;
  }
  int type;
  int32_t device;
  uint32_t key_id;
  uint64_t bytes;
  if ((id & NT_NET_TYPE_MASK) == NT_NET_TYPE_IB) {
    const nt_net_ib_v1 *q = d;
    if (q->type != NT_NET_EV_QP) goto unknown;
    type = NT_NET_IB_QP;
    device = q->qp.device;
    key_id = (uint32_t)q->qp.qpNum;
    bytes = q->qp.length;
  } else if ((id & NT_NET_TYPE_MASK) == NT_NET_TYPE_SOCK) {
    const nt_net_sock_v1 *q = d;
    if (q->type != NT_NET_EV_SOCKET) goto unknown;
    type = NT_NET_SOCKET;
    device = -1;
    key_id = (uint32_t)q->sock.fd;
    bytes = q->sock.length;
  } else {
    goto unknown;
  }
  struct nt_net_event *e = net_alloc(t);
  struct nt_net_row *row =
      e ? net_row(t, net_context(context, ev->parent), type, device, key_id) : NULL;
  if (!row) {
    NT_ADD(t->dropped_events, 1);
    return NULL;
  }
  e->kind = NT_K_NET;
  e->self = e;
  e->row = row;
  e->bytes = bytes;
  e->start_ns = nt_now();
  atomic_fetch_add_explicit(&row->started, 1, memory_order_relaxed);
  atomic_store_explicit(&e->in_use, 1, memory_order_release);
  return e;
unknown:
  NT_ADD(t->unknown_events, 1);
  return NULL;
}

void nt_net_stop(struct nt_net_event *e) {
  /* Read the event while it is still ours, then claim the stop: it may come
   * twice (NCCL calls it without checking), and from another thread. */
  if (!atomic_load_explicit(&e->in_use, memory_order_acquire)) return;
  struct nt_net_row *r = e->row;
  uint64_t bytes = e->bytes, start = e->start_ns;
  uint8_t one = 1;
  if (!atomic_compare_exchange_strong(&e->in_use, &one, 0)) return;
  uint64_t now = nt_now();
  atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->bytes, bytes, memory_order_relaxed);
  if (now > start) atomic_fetch_add_explicit(&r->busy_ns, now - start, memory_order_relaxed);
}

/* Reads every thread slot into a snapshot (publisher thread only).
 *
 * Rows of the same (communicator, channel, direction, peer) may sit in
 * several slots (a proxy thread replaced by another, a slot adopted after a
 * thread exited): they are merged here, so the snapshot has one row per key.
 */
#include <string.h>

#include "internal.h"

static uint16_t comm_index_of(const struct nt_context *c, const uint16_t *map) {
  return c ? map[c->index] : NT_NO_COMM;
}

/* Current state and its open time, read consistently under the seqlock. */
static void read_proxy(struct nt_thread *t, nt_proxy_row *row, uint64_t now) {
  for (int tries = 0; tries < 100; tries++) {
    uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (s1 & 1) continue;
    int cur = atomic_load_explicit(&t->cur_state, memory_order_relaxed);
    uint64_t since = NT_GET(t->since_ns);
    for (int i = 0; i < NT_PROXY_NSTATES; i++) row->state_ns[i] = NT_GET(t->state_ns[i]);
    if (NT_SEQ_READ_RECHECK(t->seq) != s1) continue;
    row->state = cur < NT_PROXY_NSTATES ? (uint8_t)cur : NT_PROXY_UNKNOWN;
    row->state_age_ns = now > since ? now - since : 0;
    if (cur < NT_PROXY_NSTATES) row->state_ns[cur] += row->state_age_ns;
    return;
  }
  row->state = NT_PROXY_UNKNOWN; /* a writer kept us out: report nothing new */
}

/* Rows of one thread have distinct keys, so only rows collected from earlier
 * threads (the first `limit`) can share a key with this one. */
static nt_channel_row *find_channel(nt_snapshot *s, uint32_t limit, uint16_t ci,
                                    const struct nt_chan_row *r) {
  for (uint32_t i = 0; i < limit; i++) {
    nt_channel_row *o = &s->channels[i];
    if (o->comm_index == ci && o->channel == r->channel && o->dir == r->dir && o->peer == r->peer &&
        o->relay_rank == r->relay_rank)
      return o;
  }
  return NULL;
}

static void add_channel(nt_snapshot *s, uint32_t limit, uint16_t ci, const struct nt_chan_row *r,
                        uint64_t now) {
  nt_channel_row *o = find_channel(s, limit, ci, r);
  if (!o) {
    if (s->nchannels >= NT_MAX_CHANNEL_ROWS) {
      s->process.dropped_rows++;
      return;
    }
    o = &s->channels[s->nchannels++];
    memset(o, 0, sizeof *o);
    o->comm_index = ci;
    o->channel = r->channel;
    o->dir = r->dir;
    o->peer = r->peer;
    o->cur_step = -1;
    o->cur_wait = NT_WAIT_NONE;
    o->progress_age_ns = UINT64_MAX;
    o->relay_rank = r->relay_rank;
  }
  for (int i = 0; i < 3; i++) o->wait_ns[i] += NT_GET(r->wait_ns[i]);
  o->steps += NT_GET(r->steps);
  o->bytes += NT_GET(r->bytes);
  o->ops_started += NT_GET(r->ops_started);
  o->ops_done += NT_GET(r->ops_done);
  /* Running when an op in flight has begun (begun read before its done
   * count: a race can only show work as just finished). */
  uint64_t begun = NT_GET(r->ops_begun), begun_done = NT_GET(r->begun_done);
  if (begun > begun_done) o->run_state = NT_RUN_RUNNING;
  /* A step's state records set only cur_since_ns (one store fewer on the
   * event path); stops and op events set last_progress_ns. */
  uint64_t last = NT_GET(r->last_progress_ns), since_state = NT_GET(r->cur_since_ns);
  if (since_state > last) last = since_state;
  if (last) {
    uint64_t age = now > last ? now - last : 0;
    /* The freshest of merged rows speaks for the key. */
    if (age <= o->progress_age_ns) {
      o->progress_age_ns = age;
      o->cur_step = atomic_load_explicit(&r->cur_step, memory_order_relaxed);
      o->cur_wait = atomic_load_explicit(&r->cur_wait, memory_order_relaxed);
      if (o->cur_wait >= NT_WAIT_COUNT) o->cur_wait = NT_WAIT_NONE;
      uint64_t since = NT_GET(r->cur_since_ns);
      o->cur_wait_age_ns = o->cur_wait != NT_WAIT_NONE && now > since ? now - since : 0;
    }
  }
  if (o->ops_done > o->ops_started) o->ops_done = o->ops_started;
  if (o->ops_done == o->ops_started)
    o->run_state = NT_RUN_IDLE;
  else if (o->run_state != NT_RUN_RUNNING)
    o->run_state = NT_RUN_QUEUED;
}

static void add_kernel(nt_snapshot *s, uint16_t ci, const struct nt_kernel_row *r) {
  nt_kernel_row *o = NULL;
  for (uint32_t i = 0; i < s->nkernels && !o; i++)
    if (s->kernels[i].comm_index == ci && s->kernels[i].channel == r->channel) o = &s->kernels[i];
  if (!o) {
    if (s->nkernels >= NT_MAX_KERNEL_ROWS) {
      s->process.dropped_rows++;
      return;
    }
    o = &s->kernels[s->nkernels++];
    memset(o, 0, sizeof *o);
    o->comm_index = ci;
    o->channel = r->channel;
  }
  o->count += NT_GET(r->count);
  o->busy_ns += NT_GET(r->busy_ns);
  for (int k = 0; k < NT_KPHASE_COUNT; k++) o->phase_ns[k] += NT_GET(r->phase_ns[k]);
  uint64_t last = NT_GET(r->last_ns);
  if (last) o->last_ns = last;
}

void nt_collect(nt_snapshot *s, uint64_t now) {
  uint16_t map[NT_MAX_CONTEXTS];
  s->ncomms = s->nproxy = s->nchannels = s->nkernels = 0;
  memset(&s->process, 0, sizeof s->process);
  pthread_mutex_lock(&nt_g.contexts_lock);
  for (int i = 0; i < NT_MAX_CONTEXTS; i++) {
    struct nt_context *c = &nt_g.contexts[i];
    map[i] = NT_NO_COMM;
    if (atomic_load(&c->magic) != NT_CONTEXT_MAGIC || s->ncomms >= NT_MAX_COMMS) continue;
    nt_comm_row *row = &s->comms[s->ncomms];
    struct nt_identity id = nt_context_identity(c);
    row->comm_hash = id.hash;
    row->rank = id.rank;
    row->nranks = c->nranks;
    row->nnodes = c->nnodes;
    row->colls_enqueued = atomic_load_explicit(&c->colls, memory_order_relaxed);
    row->p2ps_enqueued = atomic_load_explicit(&c->p2ps, memory_order_relaxed);
    row->group_api = atomic_load_explicit(&c->group_api, memory_order_relaxed);
    row->coll_api = atomic_load_explicit(&c->coll_api, memory_order_relaxed);
    row->p2p_api = atomic_load_explicit(&c->p2p_api, memory_order_relaxed);
    row->kernel_launches = atomic_load_explicit(&c->kernel_launches, memory_order_relaxed);
    row->graph_captured = atomic_load_explicit(&c->graph_captured, memory_order_relaxed);
    row->api_ns = atomic_load_explicit(&c->api_ns, memory_order_relaxed);
    map[i] = (uint16_t)s->ncomms++;
  }
  pthread_mutex_unlock(&nt_g.contexts_lock);
  uint32_t used = atomic_load(&nt_g.nthreads_used);
  for (uint32_t i = 0; i < used && nt_g.threads; i++) {
    struct nt_thread *t = &nt_g.threads[i];
    if (atomic_load_explicit(&t->state, memory_order_acquire) == NT_SLOT_FREE) continue;
    nt_process_counters *p = &s->process;
    p->events += NT_GET(t->events);
    p->dropped_events += NT_GET(t->dropped_events);
    p->unknown_events += NT_GET(t->unknown_events);
    p->foreign_ops += NT_GET(t->foreign_ops);
    p->reclaimed_ops += NT_GET(t->reclaimed_ops);
    p->dropped_rows += NT_GET(t->dropped_rows);
    p->dropped_ops += NT_GET(t->dropped_ops);
    p->late_children += NT_GET(t->late_children);
    p->net_events += NT_GET(t->net_events);
    if (atomic_load_explicit(&t->is_proxy, memory_order_relaxed) &&
        s->nproxy < NT_MAX_PROXY_THREADS) {
      nt_proxy_row *row = &s->proxy[s->nproxy++];
      memset(row, 0, sizeof *row);
      row->comm_index = comm_index_of(atomic_load(&t->ctrl_ctx), map);
      row->tid = atomic_load_explicit(&t->tid, memory_order_relaxed);
      read_proxy(t, row, now);
      row->appends = NT_GET(t->appends);
      row->appended_ops = NT_GET(t->appended_ops);
      row->wakeups = NT_GET(t->wakeups);
    }
    uint32_t limit = s->nchannels;
    for (int j = 0; j < NT_CHAN_ROWS_PER_THREAD; j++) {
      struct nt_chan_row *r = &t->chan[j];
      if (!atomic_load_explicit(&r->key, memory_order_acquire)) continue;
      uint16_t ci = comm_index_of(r->ctx, map);
      if (ci != NT_NO_COMM) add_channel(s, limit, ci, r, now);
    }
    for (int j = 0; j < NT_KERNEL_ROWS_PER_THREAD; j++) {
      struct nt_kernel_row *r = &t->kernel[j];
      if (!atomic_load_explicit(&r->key, memory_order_acquire)) continue;
      uint16_t ci = comm_index_of(r->ctx, map);
      if (ci != NT_NO_COMM) add_kernel(s, ci, r);
    }
  }
  nt_retire_collect(s, map, now);
  s->process.phase = nt_phase_process();
  s->process.unsent_messages = atomic_load(&nt_g.unsent_messages);
  s->process.dropped_events += atomic_load(&nt_g.slotless_events);
  _Atomic int *mask = atomic_load(&nt_g.mask_ptr);
  s->process.event_mask = mask ? (uint32_t)atomic_load(mask) : 0;
  s->process.abi_version = (uint8_t)atomic_load(&nt_g.abi);
}

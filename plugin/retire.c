/* The publisher thread's side of operations: it retires finished tasks
 * into per-(communicator, function, algorithm, protocol, size, phase,
 * kernel variant) statistics and a log of recent operations, frees their slots, and fills
 * the 1.1 snapshot tables. Everything here runs on the publisher thread
 * only (every tick, watched or not, so the totals are complete for a viewer
 * that joins late); the event path never waits for it.
 *
 * Durations: with kernelch, the longest kernel channel's GPU time (as NCCL's
 * Inspector and nccl-tests' per-kernel view do); otherwise its execution on
 * the network: from its first ProxyStep's start (the proxy posts the first
 * buffer; its first ProxyOp's start when proxystep is off) to its last
 * child's stop. Not from its enqueue: a job whose CPU runs ahead enqueues
 * operations long before the GPU reaches them (real NCCL under PyTorch:
 * 282 ms shown for 1 MiB sends that took 0.4-1.4 ms), and p2p operations of
 * one group run together, so neither the enqueue nor the previous
 * operation's end says when one began. An operation whose children never
 * said when they began (none came) keeps the old bound: enqueued, and the
 * communicator's previous operation done.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STATS_HASH   8192 /* power of two, more than twice NT_MAX_OP_ROWS */
#define RING         NT_MAX_OPLOG
#define SWEEP_MAX    16384 /* tasks retired per sweep; the rest wait for the next */
#define INFLIGHT_MAX 128   /* in-flight operations per snapshot (the oldest) */
/* Sweeps an operation without children waits before it is retired as
 * "enqueued": a communicator that never had children (intra-node work
 * without kernelch) gets none; one that had them gets them when the proxy
 * appends the operation, which a busy proxy or a first connection can
 * delay. */
#define NO_CHILD_SWEEPS       2
#define NO_CHILD_SWEEPS_PROXY 50
/* Sweeps an operation that expects KernelCh children (one per channel)
 * waits for the missing ones (K3: NCCL <= 2.30 can lose a start; 2.31 drops
 * them at abort): while none came (the kernel may queue behind others on
 * its stream), and after the last one came. */
#define NO_KERNEL_SWEEPS  250
#define KERNEL_LAG_SWEEPS 10
/* Sweeps a stopped operation of a finalized communicator waits for the
 * children still open before it is retired without them (`orphaned`). */
#define ORPHAN_SWEEPS 10

struct stat_row {
  uint64_t key;
  uint8_t ctx;
  uint32_t gen;
  nt_op_row row; /* comm_index filled at collect */
};

/* A group's p2p operations that completed (not its self copies): when the
 * first of them began and the last stopped, its thread and serial. */
#define GROUPS   256
#define LIVE_MAX 4096
struct group_span {
  uint32_t thread, group;
  uint64_t first, last;
};
struct group_ref {
  uint32_t thread, group;
};

struct log_entry {
  uint8_t ctx;
  uint32_t gen;
  uint64_t enqueue_ns;
  nt_oplog_row row;
};

static struct {
  struct stat_row *rows;
  uint32_t nrows;
  uint16_t *index; /* hash slot -> row + 1, 0 empty */
  struct log_entry *ring;
  uint32_t ring_next, ring_n;
  struct nt_task **cand;
  uint64_t last_done_ns[NT_MAX_CONTEXTS];
  uint32_t last_done_gen[NT_MAX_CONTEXTS];
  uint64_t dropped_stats;           /* keys that found the table full */
  struct group_span groups[GROUPS]; /* the newest completed groups, a ring */
  uint32_t groups_next;
  struct group_ref *live; /* this sweep: groups with p2p operations still going */
  uint32_t nlive;
  bool live_full;            /* more than LIVE_MAX: every self copy waits */
  struct nt_task **selfcand; /* this sweep: self copies that may complete */
  uint32_t nself;
} R;

int nt_retire_init(void) {
  R.rows = calloc(NT_MAX_OP_ROWS, sizeof *R.rows);
  R.index = calloc(STATS_HASH, sizeof *R.index);
  R.ring = calloc(RING, sizeof *R.ring);
  R.cand = calloc(SWEEP_MAX, sizeof *R.cand);
  R.live = calloc(LIVE_MAX, sizeof *R.live);
  R.selfcand = calloc(SWEEP_MAX, sizeof *R.selfcand);
  if (R.rows && R.index && R.ring && R.cand && R.live && R.selfcand) return 0;
  nt_retire_free();
  return -1;
}

void nt_retire_free(void) {
  free(R.rows);
  free(R.index);
  free(R.ring);
  free(R.cand);
  free(R.live);
  free(R.selfcand);
  memset(&R, 0, sizeof R);
}

static uint32_t gen_of(const struct nt_context *c) {
  return atomic_load_explicit(&c->generation, memory_order_relaxed);
}

static uint64_t stat_key(const struct nt_task *k, uint32_t gen) {
  return ((uint64_t)k->ctx->index << 58) | ((uint64_t)(gen & 0xFFFF) << 42) |
         ((uint64_t)k->op_kind << 41) | ((uint64_t)k->func << 36) | ((uint64_t)k->algo << 32) |
         ((uint64_t)k->proto << 28) | ((uint64_t)nt_size_bucket(k->bytes) << 20) |
         ((uint64_t)k->phase << 12) | ((uint64_t)k->variant << 4) | 1;
}

/* Rows of communicators whose slot was reused are dropped to make room. */
static void compact(void) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < R.nrows; i++)
    if (R.rows[i].gen == gen_of(&nt_g.contexts[R.rows[i].ctx])) R.rows[n++] = R.rows[i];
  R.nrows = n;
  memset(R.index, 0, STATS_HASH * sizeof *R.index);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t h = (uint32_t)(R.rows[i].key * 0x9E3779B97F4A7C15ull >> 40) & (STATS_HASH - 1);
    while (R.index[h]) h = (h + 1) & (STATS_HASH - 1);
    R.index[h] = (uint16_t)(i + 1);
  }
}

static nt_op_row *stat_row(const struct nt_task *k, uint32_t gen) {
  uint64_t key = stat_key(k, gen);
  for (int attempt = 0; attempt < 2; attempt++) {
    uint32_t h = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 40) & (STATS_HASH - 1);
    for (;;) {
      uint16_t i = R.index[h];
      if (!i) break;
      if (R.rows[i - 1].key == key) return &R.rows[i - 1].row;
      h = (h + 1) & (STATS_HASH - 1);
    }
    if (R.nrows < NT_MAX_OP_ROWS) {
      struct stat_row *r = &R.rows[R.nrows];
      memset(r, 0, sizeof *r);
      r->key = key;
      r->ctx = (uint8_t)k->ctx->index;
      r->gen = gen;
      r->row.kind = k->op_kind;
      r->row.func = k->func;
      r->row.algo = k->algo;
      r->row.proto = k->proto;
      r->row.bucket = nt_size_bucket(k->bytes);
      r->row.phase = k->phase;
      r->row.variant = k->variant;
      R.index[h] = (uint16_t)(++R.nrows);
      return &r->row;
    }
    compact();
  }
  R.dropped_stats++;
  return NULL;
}

static void fill_log(nt_oplog_row *r, const struct nt_task *k) {
  memset(r, 0, sizeof *r);
  r->kind = k->op_kind;
  r->func = k->func;
  r->algo = k->algo;
  r->proto = k->proto;
  r->dtype = k->dtype;
  r->phase = k->phase;
  r->variant = k->variant;
  r->flags = k->sym ? NT_OPF_SYMMETRIC : 0;
  r->nchannels = k->nchannels;
  r->nwarps = k->nwarps;
  r->root_peer = k->root_peer;
  r->seq = k->seq;
  r->count = k->count;
  r->bytes = k->bytes;
}

/* An orphan (`orphaned`) keeps its children's references: it becomes
 * RETIRING with them, so no child attaches any more and its slot is not
 * reused while one still points at it. False if it is not to be retired. */
static bool retiring(struct nt_task *k) {
  uint64_t st = atomic_load_explicit(&k->st, memory_order_acquire);
  do {
    /* A child that attached since the sweep looked keeps it alive. */
    if ((st & NT_TS_STATE & ~NT_TS_REFS) != (NT_TS_LIVE | NT_TS_STOPPED) ||
        (!k->orphan && (st & NT_TS_REFS))) {
      k->orphan = 0;
      return false;
    }
    /* The counts stay: the retiring sweep reads them. */
  } while (!atomic_compare_exchange_weak_explicit(
      &k->st, &st, (st & ~(NT_TS_LIVE | NT_TS_STOPPED)) | NT_TS_RETIRING, memory_order_acq_rel,
      memory_order_acquire));
  return true;
}

/* The slot of a retired task is free again; an orphan's only once its last
 * child let go (nt_retire_sweep). */
static void release(struct nt_task *k) {
  bool orphan = k->orphan;
  k->orphan_wait = 0;
  if (!orphan) atomic_store_explicit(&k->st, 0, memory_order_release);
}

static struct group_span *group_of(uint32_t thread, uint32_t group) {
  for (uint32_t i = 0; i < GROUPS; i++)
    if (R.groups[i].group == group && R.groups[i].thread == thread && group) return &R.groups[i];
  return NULL;
}

/* A p2p operation of a group (not a self copy) completed: its group's span. */
static void note_group(const struct nt_task *k) {
  uint32_t thread = k->thread;
  if (k->op_kind != NT_OP_P2P || k->self_p2p || !k->group ||
      !nt_ts_children(atomic_load_explicit(&k->st, memory_order_relaxed)))
    return;
  uint64_t first = atomic_load_explicit(&k->first_step_ns, memory_order_relaxed);
  if (!first) first = atomic_load_explicit(&k->first_op_ns, memory_order_relaxed);
  if (!first) first = k->enqueue_ns;
  uint64_t last = nt_task_last_stop(k);
  struct group_span *g = group_of(thread, k->group);
  if (!g) {
    g = &R.groups[R.groups_next];
    R.groups_next = (R.groups_next + 1) % GROUPS;
    *g = (struct group_span){thread, k->group, first, last};
    return;
  }
  if (first < g->first) g->first = first;
  if (last > g->last) g->last = last;
}

/* One entry of k's group fewer: the group's others keep theirs. */
static void unlist_live(const struct nt_task *k) {
  if (k->op_kind != NT_OP_P2P || k->self_p2p || !k->group) return;
  for (uint32_t i = 0; i < R.nlive; i++)
    if (R.live[i].group == k->group && R.live[i].thread == k->thread) {
      R.live[i] = R.live[--R.nlive];
      return;
    }
}

/* Retires k; g, for a self copy, is its group's span: done with it. */
static void retire_as(struct nt_task *k, const struct group_span *g) {
  if (!retiring(k)) return;
  if (atomic_load_explicit(&k->superseded, memory_order_relaxed)) {
    /* A Broadcast counted from its CollApi whose Coll came (api_ops.c). */
    release(k);
    return;
  }
  struct nt_context *c = k->ctx;
  int ci = c->index;
  uint32_t gen = gen_of(c);
  uint32_t children = nt_ts_children(atomic_load_explicit(&k->st, memory_order_relaxed));
  uint64_t last = nt_task_last_stop(k);
  uint64_t gpu = atomic_load_explicit(&k->gpu_ns, memory_order_relaxed);
  bool untimed = atomic_load_explicit(&k->untimed, memory_order_relaxed) || k->orphan;
  /* Only children NCCL never stops (P2): done, but when is not known,
   * unless kernelch timed it. An orphan's end is not known at all. */
  bool unreported =
      (atomic_load_explicit(&k->unreported, memory_order_relaxed) && !gpu) || k->orphan;
  if (R.last_done_gen[ci] != gen) {
    R.last_done_gen[ci] = gen;
    R.last_done_ns[ci] = 0;
  }
  int state = children || g ? NT_OPS_DONE : NT_OPS_ENQUEUED;
  int timing = NT_TIMING_NONE;
  uint64_t duration = 0;
  if (g) { /* a self copy: it ran in its group's kernel, as long as the group */
    timing = NT_TIMING_HOST;
    duration = g->last > g->first ? g->last - g->first : 0;
  } else if (children && !untimed && !unreported) {
    if (gpu) {
      timing = NT_TIMING_GPU;
      duration = gpu;
    } else {
      uint64_t began = atomic_load_explicit(&k->first_step_ns, memory_order_relaxed);
      if (!began) began = atomic_load_explicit(&k->first_op_ns, memory_order_relaxed);
      uint64_t start = began                                ? began
                       : k->enqueue_ns > R.last_done_ns[ci] ? k->enqueue_ns
                                                            : R.last_done_ns[ci];
      timing = NT_TIMING_HOST;
      duration = last > start ? last - start : 0;
    }
  }
  if (children && last > R.last_done_ns[ci]) R.last_done_ns[ci] = last;
  nt_op_row *row = stat_row(k, gen);
  if (row) {
    row->count++;
    row->bytes += k->bytes;
    if (timing != NT_TIMING_NONE) {
      row->done++;
      row->done_bytes += k->bytes;
      row->time_ns += duration;
      if (timing == NT_TIMING_GPU) row->gpu_done++;
      row->sync_ns += atomic_load_explicit(&k->sync_ns, memory_order_relaxed);
      row->compute_ns += atomic_load_explicit(&k->compute_ns, memory_order_relaxed);
    }
  }
  if (state == NT_OPS_DONE) atomic_fetch_add_explicit(&c->done[k->func], 1, memory_order_relaxed);
  struct log_entry *e = &R.ring[R.ring_next];
  R.ring_next = (R.ring_next + 1) % RING;
  if (R.ring_n < RING) R.ring_n++;
  e->ctx = (uint8_t)ci;
  e->gen = gen;
  e->enqueue_ns = k->enqueue_ns;
  fill_log(&e->row, k);
  e->row.state = (uint8_t)state;
  e->row.run_state = NT_RUN_IDLE;
  if (unreported) e->row.flags |= NT_OPF_UNREPORTED;
  e->row.timing = (uint8_t)timing;
  e->row.duration_ns = duration;
  e->row.children = children;
  if (!g && state == NT_OPS_DONE) note_group(k);
  unlist_live(k); /* retired: no longer going (before its slot is free again) */
  release(k);
}

static void retire(struct nt_task *k) {
  retire_as(k, NULL);
}

static bool group_live(uint32_t thread, uint32_t group) {
  if (R.live_full) return true;
  for (uint32_t i = 0; i < R.nlive; i++)
    if (R.live[i].group == group && R.live[i].thread == thread) return true;
  return false;
}

/* Self copies: done once no p2p operation of their group is still going
 * and one of them completed (as long as the group took); a group with
 * none (a job of one rank) leaves them enqueued, as a childless operation. */
static void retire_selves(enum nt_sweep how) {
  for (uint32_t i = 0; i < R.nself; i++) {
    struct nt_task *k = R.selfcand[i];
    uint32_t thread = k->thread;
    if (group_live(thread, k->group) && how != NT_SWEEP_FINAL) continue;
    const struct group_span *g = group_of(thread, k->group);
    if (g) {
      retire_as(k, g);
    } else if (how != NT_SWEEP_TICK || k->quiet >= NO_CHILD_SWEEPS_PROXY) {
      retire(k);
    } else {
      k->quiet++;
    }
  }
}

static uint64_t order_of(const struct nt_task *k) {
  uint64_t last = nt_task_last_stop(k);
  return last ? last : k->enqueue_ns;
}

static int by_end(const void *a, const void *b) {
  uint64_t x = order_of(*(struct nt_task *const *)a), y = order_of(*(struct nt_task *const *)b);
  return x < y ? -1 : x > y;
}

/* A finished task waits one quiet sweep (its last stop unchanged) before it
 * is retired: the proxy appends a collective's ops in batches, so a child
 * may still come after the others stopped. With kernelch on it first waits
 * for its KernelCh children, boundedly (kernel_wait). A task that never got
 * a child is retired as "enqueued" after NO_CHILD_SWEEPS(_PROXY). */

/* Whether k still waits for KernelCh children (one per channel), counting
 * the sweeps it has waited since the last one came. */
static bool kernel_wait(struct nt_task *k, bool force) {
  if (!k->expect_kernel || force) return false;
  uint32_t kch = nt_ts_kernel_children(atomic_load_explicit(&k->st, memory_order_relaxed));
  if (kch >= (k->nchannels ? k->nchannels : 1u)) return false;
  if (kch != k->seen_kch) {
    k->seen_kch = (uint8_t)kch;
    k->kwait = 0;
  }
  if (k->kwait >= (kch ? KERNEL_LAG_SWEEPS : NO_KERNEL_SWEEPS)) {
    /* Given up: NCCL did not report all of it (K3). */
    atomic_store_explicit(&k->unreported, 1, memory_order_relaxed);
    return false;
  }
  k->kwait++;
  return true;
}

/* A stopped operation of a finalized communicator with children NCCL will
 * never stop: the communicator was aborted mid-operation (ncclCommAbort,
 * ncclCommRevoke, ncclCommShrink with NCCL_SHRINK_ABORT: the proxy thread
 * leaves its loop with ProxyOps and ProxySteps open, and 2.31's profiler
 * thread drops its KernelCh work, docs/NCCL-BEHAVIOUR.md A1). After
 * ORPHAN_SWEEPS (a proxy thread that a live communicator shares may still
 * stop them late), and at the last sweep, it is retired without them:
 * done, its end not reported. */
static bool orphaned(struct nt_task *k, enum nt_sweep how) {
  if (atomic_load_explicit(&k->ctx->live, memory_order_relaxed)) {
    k->orphan_wait = 0;
    return false;
  }
  if (how != NT_SWEEP_FINAL && k->orphan_wait < ORPHAN_SWEEPS) {
    k->orphan_wait++;
    return false;
  }
  k->orphan = 1;
  return true;
}

/* The count of t's first task slot taken that is not free again (every
 * one before it is: the publisher's mark moves on) and how many were taken
 * from there on: the only slots a sweep reads. Slots go round robin, and
 * operations mostly end in the order they began, so that is about as many
 * as are waiting to be retired, not the whole pool, which was a quarter of
 * a megabyte per enqueuing thread at every sweep through the publisher's
 * core (callgrind on the recordings: three times the last-level misses of
 * all the ABI calls together). */
static uint32_t task_window(struct nt_thread *t, uint32_t *from) {
  uint32_t end = atomic_load_explicit(&t->tasks_opened, memory_order_acquire);
  uint32_t n = t->task_swept;
  if (end - n > NT_TASKS_PER_THREAD) n = end - NT_TASKS_PER_THREAD;
  while (n != end &&
         !atomic_load_explicit(&t->tasks[n % NT_TASKS_PER_THREAD].st, memory_order_acquire))
    n++;
  t->task_swept = n;
  *from = n;
  return end - n;
}

void nt_retire_sweep(uint64_t now, enum nt_sweep how) {
  (void)now;
  bool force = how != NT_SWEEP_TICK;
  if (!R.rows || !nt_g.threads) return;
  uint32_t ncand = 0, used = atomic_load(&nt_g.nthreads_used);
  R.nlive = R.nself = 0;
  R.live_full = false;
  for (uint32_t i = 0; i < used && i < NT_MAX_THREADS; i++) {
    struct nt_thread *t = &nt_g.threads[i];
    uint32_t from, count = task_window(t, &from);
    for (uint32_t j = 0; j < count && ncand < SWEEP_MAX; j++) {
      struct nt_task *k = &t->tasks[(from + j) % NT_TASKS_PER_THREAD];
      uint64_t st = atomic_load_explicit(&k->st, memory_order_acquire);
      if ((st & NT_TS_STATE) == NT_TS_RETIRING && k->orphan) {
        /* An orphan whose last child let go: its slot is free. */
        k->orphan = 0;
        atomic_store_explicit(&k->st, 0, memory_order_release);
        continue;
      }
      bool going = (st & NT_TS_LIVE) && !(st & NT_TS_RETIRING);
      /* A group's other p2p operations, still going, hold its self copies. */
      if (going && k->op_kind == NT_OP_P2P && !k->self_p2p && k->group) {
        if (R.nlive < LIVE_MAX)
          R.live[R.nlive++] = (struct group_ref){k->thread, k->group};
        else
          R.live_full = true;
      }
      if ((st & NT_TS_STATE & ~NT_TS_REFS) != (NT_TS_LIVE | NT_TS_STOPPED)) continue;
      if (st & NT_TS_REFS) {
        if (orphaned(k, how)) R.cand[ncand++] = k;
        continue;
      }
      if (k->self_p2p && !nt_ts_children(st)) {
        R.selfcand[R.nself++] = k;
        continue;
      }
      /* A flush does not give up on KernelCh children; the last sweep does. */
      if (kernel_wait(k, how == NT_SWEEP_FINAL)) continue;
      if (nt_ts_children(st)) {
        uint64_t last = nt_task_last_stop(k);
        if (force || (k->quiet && k->seen_stop_ns == last)) {
          R.cand[ncand++] = k;
        } else {
          k->seen_stop_ns = last;
          k->quiet = 1;
        }
      } else if ((!k->expect_proxy || force ||
                  k->quiet >= (atomic_load_explicit(&k->ctx->has_children, memory_order_relaxed)
                                   ? NO_CHILD_SWEEPS_PROXY
                                   : NO_CHILD_SWEEPS))) {
        R.cand[ncand++] = k;
      } else if (k->quiet < 255) {
        k->quiet++;
      }
    }
  }
  /* In completion order, so each one's start is its predecessor's end. */
  qsort(R.cand, ncand, sizeof *R.cand, by_end);
  for (uint32_t i = 0; i < ncand; i++) retire(R.cand[i]);
  retire_selves(how);
}

/* ---- the snapshot's 1.1 tables ---- */

static bool ctx_current(int ci, uint32_t gen, const uint16_t *map) {
  return map[ci] != NT_NO_COMM && gen == gen_of(&nt_g.contexts[ci]);
}

/* Operations not retired yet, oldest first, at most INFLIGHT_MAX. */
static uint32_t collect_inflight(nt_snapshot *s, const uint16_t *map, uint64_t now) {
  uint32_t n = 0;
  uint32_t used = atomic_load(&nt_g.nthreads_used);
  for (uint32_t i = 0; i < used && i < NT_MAX_THREADS && n < SWEEP_MAX; i++) {
    struct nt_thread *t = &nt_g.threads[i];
    uint32_t from, count = task_window(t, &from);
    for (uint32_t j = 0; j < count && n < SWEEP_MAX; j++) {
      struct nt_task *k = &t->tasks[(from + j) % NT_TASKS_PER_THREAD];
      uint64_t st = atomic_load_explicit(&k->st, memory_order_acquire);
      if (!(st & NT_TS_LIVE) || (st & NT_TS_RETIRING) || map[k->ctx->index] == NT_NO_COMM) continue;
      /* Finished ones wait for their sweep and show up retired; the rest
       * wait for children that will come, or have not all stopped. */
      uint32_t children = nt_ts_children(st);
      bool pending = (st & NT_TS_REFS) || !(st & NT_TS_STOPPED) ||
                     (children == 0 && (k->expect_kernel || k->expect_proxy));
      if (pending) R.cand[n++] = k;
    }
  }
  /* Oldest first: the ones a hang view is about. */
  uint32_t keep = n < INFLIGHT_MAX ? n : INFLIGHT_MAX;
  for (uint32_t a = 0; a < keep; a++) {
    uint32_t best = a;
    for (uint32_t b = a + 1; b < n; b++)
      if (R.cand[b]->enqueue_ns < R.cand[best]->enqueue_ns) best = b;
    struct nt_task *tmp = R.cand[a];
    R.cand[a] = R.cand[best];
    R.cand[best] = tmp;
    struct nt_task *k = R.cand[a];
    nt_oplog_row *r = &s->oplog[s->noplog++];
    fill_log(r, k);
    uint64_t st = atomic_load_explicit(&k->st, memory_order_relaxed);
    r->comm_index = map[k->ctx->index];
    r->children = nt_ts_children(st);
    r->children_open = (uint32_t)(st & NT_TS_REFS);
    if (r->children_open > r->children) r->children = r->children_open;
    r->state = NT_OPS_IN_FLIGHT;
    r->age_ns = now > k->enqueue_ns ? now - k->enqueue_ns : 0;
    if (atomic_load_explicit(&k->unreported, memory_order_relaxed)) r->flags |= NT_OPF_UNREPORTED;
    r->run_state =
        atomic_load_explicit(&k->begun, memory_order_relaxed) ? NT_RUN_RUNNING : NT_RUN_QUEUED;
    uint64_t last = atomic_load_explicit(&k->last_progress_ns, memory_order_relaxed);
    r->progress_age_ns = !last ? UINT64_MAX : now > last ? now - last : 0;
  }
  return keep;
}

static void collect_oplog(nt_snapshot *s, const uint16_t *map, uint64_t now) {
  s->noplog = 0;
  if (R.cand) collect_inflight(s, map, now);
  /* Then the most recently retired, newest first. */
  for (uint32_t i = 0; i < R.ring_n && s->noplog < NT_MAX_OPLOG; i++) {
    const struct log_entry *e = &R.ring[(R.ring_next + RING - 1 - i) % RING];
    if (!ctx_current(e->ctx, e->gen, map)) continue;
    nt_oplog_row *r = &s->oplog[s->noplog++];
    *r = e->row;
    r->comm_index = map[e->ctx];
    r->age_ns = now > e->enqueue_ns ? now - e->enqueue_ns : 0;
  }
}

static void merge_net(nt_snapshot *s, const struct nt_net_row *r, uint16_t ci) {
  uint32_t id = r->id;
  nt_net_row *o = NULL;
  for (uint32_t i = 0; i < s->nnet && !o; i++)
    if (s->net[i].comm_index == ci && s->net[i].type == r->type && s->net[i].device == r->device &&
        s->net[i].id == id)
      o = &s->net[i];
  if (!o) {
    if (s->nnet >= NT_MAX_NET_ROWS) {
      s->process.dropped_rows++;
      return;
    }
    o = &s->net[s->nnet++];
    memset(o, 0, sizeof *o);
    o->comm_index = ci;
    o->type = r->type;
    o->device = r->device;
    o->id = id;
  }
  uint64_t started = atomic_load_explicit(&r->started, memory_order_relaxed);
  uint64_t count = atomic_load_explicit(&r->count, memory_order_relaxed);
  o->count += count;
  o->bytes += atomic_load_explicit(&r->bytes, memory_order_relaxed);
  o->busy_ns += atomic_load_explicit(&r->busy_ns, memory_order_relaxed);
  o->in_flight += started > count ? started - count : 0;
}

void nt_retire_collect(nt_snapshot *s, const uint16_t *map, uint64_t now) {
  s->nops = s->nphases = s->nseq = s->nnet = s->nvariants = 0;
  for (uint32_t i = 0; R.rows && i < R.nrows; i++) {
    const struct stat_row *r = &R.rows[i];
    if (!ctx_current(r->ctx, r->gen, map)) continue;
    s->ops[s->nops] = r->row;
    s->ops[s->nops++].comm_index = map[r->ctx];
  }
  s->nphases = nt_phase_rows(s->phases, NT_MAX_PHASES);
  s->nvariants = nt_variant_rows(s->variants, NT_MAX_VARIANTS);
  collect_oplog(s, map, now);
  for (int ci = 0; ci < NT_MAX_CONTEXTS; ci++) {
    if (map[ci] == NT_NO_COMM) continue;
    struct nt_context *c = &nt_g.contexts[ci];
    for (int f = 0; f < NT_FUNC_COUNT && s->nseq < NT_MAX_SEQ_ROWS; f++) {
      uint64_t launched = atomic_load_explicit(&c->launched[f], memory_order_relaxed);
      if (!launched) continue;
      uint64_t last = atomic_load_explicit(&c->last_launch_ns[f], memory_order_relaxed);
      nt_seq_row *r = &s->seq_rows[s->nseq++];
      r->comm_index = map[ci];
      r->func = (uint8_t)f;
      r->launched = launched;
      r->done = atomic_load_explicit(&c->done[f], memory_order_relaxed);
      r->last_launch_age_ns = now > last ? now - last : 0;
    }
  }
  uint32_t used = atomic_load(&nt_g.nthreads_used);
  for (uint32_t i = 0; i < used && nt_g.threads && i < NT_MAX_THREADS; i++) {
    struct nt_thread *t = &nt_g.threads[i];
    for (int j = 0; j < NT_NET_ROWS_PER_THREAD; j++) {
      const struct nt_net_row *r = &t->net[j];
      if (!atomic_load_explicit(&r->key, memory_order_acquire)) continue;
      uint16_t ci = r->ctx ? map[r->ctx->index] : NT_NO_COMM;
      merge_net(s, r, ci);
    }
  }
  s->process.dropped_rows += R.dropped_stats;
}

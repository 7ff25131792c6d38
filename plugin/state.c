/* Process-wide state: init and finalize, the context registry, thread slots,
 * and fork safety. Only init and finalize take the mutex; the event path
 * never does. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chain.h"
#include "internal.h"

/* Aligned: every call reads `threads`, which must not share a line with
 * whatever the linker puts before it (the publisher's own state). */
struct nt_global nt_g __attribute__((aligned(64))) = {.contexts_lock = PTHREAD_MUTEX_INITIALIZER};
__thread struct nt_thread *nt_self NT_TLS_FAST;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int live_contexts;
static bool once_done;
static pthread_key_t thread_key;
static bool thread_key_ok;

/* A forked child (e.g. a PyTorch DataLoader worker) inherits our memory but
 * not our threads: it must never touch the parent's ZeroMQ context (libzmq
 * is not fork-safe), nor count into the parent's aggregates as if they were
 * its own. It stays inert; if it creates a communicator, its first init
 * says so in NCCL's log. What it inherited of our descriptors (the
 * parent's connections to viewers) it never uses: viewers tell processes
 * apart by pid, and the parent's end is the parent's. */
static _Atomic uint32_t forked_from; /* the parent's pid, in a forked child */
static _Atomic bool fork_noted;
static void after_fork_child(void) {
  atomic_store(&forked_from, (uint32_t)nt_g.pid);
  atomic_store(&nt_g.inert, 1);
  /* The only thread of the child: it claims no slot again (nt_thread_claim
   * refuses while inert), so every call it makes ends at its first test. */
  nt_self = NULL;
}

/* One line, the first time a forked child creates a communicator. */
static void note_forked(nt_nccl_logger logfn) {
  uint32_t parent = atomic_load(&forked_from);
  if (!parent || atomic_exchange(&fork_noted, true)) return;
  if (logfn) atomic_store(&nt_g.logfn, logfn);
  nt_log(NT_NCCL_LOG_WARN,
         "process %d was forked from %u after nccltop started there: its communicators are not "
         "profiled (a process started afresh is: e.g. Python multiprocessing's 'spawn')",
         (int)getpid(), (unsigned)parent);
}

/* A thread that exits leaves its slot (and the aggregates in it) for another
 * thread to adopt; nothing already counted is lost. */
/* The key's destructor, on the exiting thread: its slot may be adopted by
 * another thread from here on, so a late call of this one (from another
 * library's TLS destructor) claims a slot anew instead of writing into it. */
static void release_slot(void *p) {
  struct nt_thread *t = p;
  if (nt_self == t) nt_self = NULL;
  if (t) atomic_store(&t->state, NT_SLOT_ORPHAN);
}

static bool map_region(void) {
  size_t bytes = sizeof(struct nt_thread) * NT_MAX_THREADS;
  void *p =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  nt_g.threads = p;
  return true;
}

__attribute__((destructor)) static void unload(void) {
  /* Linked with -z nodelete, we are never unmapped by NCCL's dlclose (a
   * publisher left behind by finalize would run unmapped code): this runs at
   * exit. */
  if (atomic_load(&nt_g.inert)) return; /* a forked child owns no thread */
  /* At exit with communicators never destroyed, still send the last
   * snapshot and remove the socket file. Under the init lock: another
   * thread may be finalizing the last communicator right now (a watchdog's
   * abort), and the publisher is joined once. A holder that does not let
   * go within two seconds is stuck; the publisher is then left as it is.
   * The region stays mapped: NCCL's threads may still call in until the
   * process is gone. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  if (pthread_mutex_timedlock(&init_lock, &deadline) != 0) return;
  nt_publisher_stop();
  pthread_mutex_unlock(&init_lock);
  if (thread_key_ok) pthread_key_delete(thread_key);
}

/* Takes slot t for the calling thread if it is in state `want`. */
static bool take(struct nt_thread *t, int want) {
  int expect = want;
  if (atomic_load_explicit(&t->state, memory_order_relaxed) != want) return false;
  return atomic_compare_exchange_strong(&t->state, &expect, NT_SLOT_OWNED);
}

struct nt_thread *nt_thread_claim(void) {
  /* Inert (a forked child, or no region): no slot, so the event path
   * stops at its thread lookup without a test of its own. */
  if (!nt_g.threads || atomic_load_explicit(&nt_g.inert, memory_order_relaxed)) return NULL;
  /* Threads come and go (CUDA callback threads, NCCL's group threads), so
   * an orphaned slot is adopted before a free one is used; its counters
   * stay. A dead proxy thread's slot is kept as long as possible: its final
   * state is what a hang view must show. */
  for (int pass = 0; pass < 3; pass++) {
    for (uint32_t i = 0; i < NT_MAX_THREADS; i++) {
      struct nt_thread *t = &nt_g.threads[i];
      bool proxy = atomic_load_explicit(&t->is_proxy, memory_order_relaxed);
      if (pass == 0 && (proxy || !take(t, NT_SLOT_ORPHAN))) continue;
      if (pass == 1 && !take(t, NT_SLOT_FREE)) continue;
      if (pass == 2 && !take(t, NT_SLOT_ORPHAN)) continue;
      if (proxy) {
        /* Last resort: the old proxy's times must not become the new one's. */
        uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
        NT_SEQ_WRITE_BEGIN(t->seq, seq);
        for (int k = 0; k < NT_PROXY_NSTATES; k++) NT_SET(t->state_ns[k], 0);
        NT_SET(t->appends, 0);
        NT_SET(t->appended_ops, 0);
        NT_SET(t->wakeups, 0);
        atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
      }
      /* A new owner starts with no proxy identity. */
      atomic_store(&t->is_proxy, 0);
      atomic_store(&t->cur_state, NT_PROXY_UNKNOWN);
      atomic_store(&t->base_state, NT_PROXY_UNKNOWN);
      atomic_store(&t->overlay, NT_PROXY_UNKNOWN);
      atomic_store(&t->tid, (uint32_t)syscall(SYS_gettid));
      t->ctrl.kind = NT_K_CTRL;
      t->ctrl.self = &t->ctrl;
      t->api.kind = NT_K_API;
      t->api.self = &t->api;
      t->api.ctx = NULL;
      t->api.group = false;
      t->gapi = t->api;
      t->gapi.self = &t->gapi;
      t->gapi.group = true;
      nt_bcast_close(t); /* an adopted slot's open group ended with its thread */
      uint32_t used = atomic_load(&nt_g.nthreads_used);
      while (used < i + 1 && !atomic_compare_exchange_weak(&nt_g.nthreads_used, &used, i + 1)) {
      }
      if (thread_key_ok) (void)pthread_setspecific(thread_key, t);
      nt_self = t;
      return t;
    }
  }
  return NULL;
}

struct nt_context *nt_context_check(void *p) {
  uintptr_t base = (uintptr_t)&nt_g.contexts[0], q = (uintptr_t)p;
  if (q < base || q >= base + sizeof nt_g.contexts) return NULL;
  if ((q - base) % sizeof(struct nt_context) != 0) return NULL;
  struct nt_context *c = p;
  return atomic_load_explicit(&c->magic, memory_order_acquire) == NT_CONTEXT_MAGIC ? c : NULL;
}

void nt_context_learn(void *context, const char *name, uint64_t hash, int rank) {
  struct nt_context *c = nt_context_check(context);
  if (!c || c->abi != 3) return;
  if (atomic_load_explicit(&c->learned, memory_order_acquire) != 0) return; /* the usual case */
  int idle = 0;
  if (!atomic_compare_exchange_strong(&c->learned, &idle, NT_LEARNING)) return;
  c->learned_hash = hash;
  c->learned_rank = rank;
  size_t n = name ? strnlen(name, NT_MAX_NAME) : 0;
  memcpy(c->learned_name, name ? name : "", n);
  c->learned_name[n] = '\0';
  atomic_store_explicit(&c->learned, NT_LEARNED, memory_order_release);
}

struct nt_identity nt_context_identity(const struct nt_context *c) {
  if (atomic_load_explicit(&c->learned, memory_order_acquire) == NT_LEARNED)
    return (struct nt_identity){c->learned_hash, c->learned_rank, c->learned_name};
  return (struct nt_identity){c->comm_hash, c->rank, c->name};
}

/* Slots are reused only when every one has been used once, oldest first,
 * so a shared proxy thread still reporting with a finalized context keeps
 * attributing to the right communicator for as long as possible. */
static struct nt_context *context_alloc(void) {
  static int next;
  for (int n = 0; n < NT_MAX_CONTEXTS; n++) {
    struct nt_context *c = &nt_g.contexts[(next + n) % NT_MAX_CONTEXTS];
    if (atomic_load(&c->magic) == NT_CONTEXT_MAGIC && atomic_load(&c->live)) continue;
    next = (c->index + 1) % NT_MAX_CONTEXTS;
    return c;
  }
  return NULL;
}

static bool first_init(int abi) {
  nt_config_load(&nt_g.cfg);
  if (nt_g.cfg.disabled) return true;
  nt_g.pid = getpid();
  nt_clock_init(nt_g.cfg.clock);
  for (int i = 0; i < NT_MAX_CONTEXTS; i++) nt_g.contexts[i].index = i;
  if (!map_region()) {
    nt_log(NT_NCCL_LOG_WARN, "cannot reserve memory for event pools; plugin inert");
    return false;
  }
  thread_key_ok = pthread_key_create(&thread_key, release_slot) == 0;
  nt_chain_open(nt_g.cfg.chain, abi); /* NCCLTOP_CHAIN: a second plugin (chain.c) */
  if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
    nt_log(NT_NCCL_LOG_WARN, "pthread_atfork failed; forked children must not use NCCL");
  return true;
}

nt_nccl_result nt_init(void **context, int *mask, const char *name, uint64_t hash, int nnodes,
                       int nranks, int rank, nt_nccl_logger logfn, int abi) {
  if (context) *context = NULL;
  if (context && atomic_load(&nt_g.inert)) note_forked(logfn);
  if (!context || atomic_load(&nt_g.inert)) return NT_NCCL_SUCCESS;
  if (logfn) atomic_store(&nt_g.logfn, logfn);
  if (pthread_mutex_lock(&init_lock) != 0) return NT_NCCL_SUCCESS;
  if (!once_done) {
    once_done = true;
    if (!first_init(abi)) atomic_store(&nt_g.inert, 1);
  }
  if (nt_g.cfg.disabled) {
    pthread_mutex_unlock(&init_lock);
    nt_log(NT_NCCL_LOG_INFO, "disabled by NCCLTOP_DISABLE");
    return NT_NCCL_INVALID_USAGE; /* NCCL drops (2.30: unloads) the plugin */
  }
  struct nt_context *c = atomic_load(&nt_g.inert) ? NULL : context_alloc();
  if (c) {
    pthread_mutex_lock(&nt_g.contexts_lock);
    c->abi = abi;
    c->comm_hash = hash;
    c->rank = rank;
    c->nranks = nranks;
    c->nnodes = nnodes;
    atomic_fetch_add(&c->generation, 1);
    atomic_store(&c->colls, 0);
    atomic_store(&c->p2ps, 0);
    for (int f = 0; f < NT_FUNC_COUNT; f++) {
      atomic_store(&c->launched[f], 0);
      atomic_store(&c->last_launch_ns[f], 0);
      atomic_store(&c->done[f], 0);
      atomic_store(&c->seq_top[f], 0);
    }
    atomic_store(&c->group_api, 0);
    atomic_store(&c->coll_api, 0);
    atomic_store(&c->p2p_api, 0);
    atomic_store(&c->kernel_launches, 0);
    atomic_store(&c->graph_captured, 0);
    atomic_store(&c->api_ns, 0);
    atomic_store(&c->has_children, 0);
    atomic_store(&c->learned, 0);
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    atomic_store(&c->magic, NT_CONTEXT_MAGIC);
    atomic_store(&c->live, 1);
    pthread_mutex_unlock(&nt_g.contexts_lock);
    atomic_store(&nt_g.abi, abi);
    /* NCCL 2.31 (v7) splits a kernel channel's work into phases: with
     * kernelch on, ask for them too (they ride on the same KernelCh work). */
    int want = nt_g.cfg.event_mask;
    if (abi >= 7 && (want & NT_EV_KERNEL_CH)) want |= NT_EV_KERNEL_PHASE;
    if (mask) {
      /* Chained: our own mask; NCCL gets the union (chain.c). */
      _Atomic int *m = nt_chain_mask_target((_Atomic int *)mask);
      atomic_store(&nt_g.mask_ptr, m);
      atomic_store(m, want);
    }
    nt_chain_comm_init(c->index, mask, name, hash, nnodes, nranks, rank, logfn);
    if (live_contexts++ == 0 && nt_publisher_start() != 0)
      nt_log(NT_NCCL_LOG_WARN, "publisher did not start; events are counted, not published");
    *context = c;
    nt_log(NT_NCCL_LOG_INFO, "comm %016llx rank %d/%d profiled (ABI v%d, mask 0x%x)",
           (unsigned long long)hash, rank, nranks, abi, want);
  } else if (!atomic_load(&nt_g.inert)) {
    nt_log(NT_NCCL_LOG_WARN, "more than %d communicators; comm %016llx not profiled",
           NT_MAX_CONTEXTS, (unsigned long long)hash);
  }
  pthread_mutex_unlock(&init_lock);
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_finalize(void *context) {
  struct nt_context *c = nt_context_check(context);
  if (!c || atomic_load(&nt_g.inert)) return NT_NCCL_SUCCESS;
  if (pthread_mutex_lock(&init_lock) != 0) return NT_NCCL_SUCCESS;
  int was_live = 1;
  /* The slot stays readable (and its rows published) until it is reused. */
  if (atomic_compare_exchange_strong(&c->live, &was_live, 0) && --live_contexts == 0)
    nt_publisher_stop();
  pthread_mutex_unlock(&init_lock);
  return NT_NCCL_SUCCESS;
}

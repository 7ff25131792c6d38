/* Chaining another profiler plugin (NCCLTOP_CHAIN): see chain.h.
 *
 * Written for nccltop. How NCCL finds a plugin (src/plugin/plugin_open.cc),
 * which event classes it starts for a mask (src/plugin/profiler.cc) and how
 * it talks to an older plugin (src/plugin/profiler/profiler_v*.cc) were read
 * in NCCL 2.26 to 2.31 and are restated here in our own code; see
 * docs/NCCL-BEHAVIOUR.md.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "chain.h"
#include "internal.h"

_Atomic bool nt_chain_on;

/* The chained plugin: its table of the version we drive it with. */
static struct {
  int k;   /* its ABI version */
  int abi; /* ours, as NCCL initialised us */
  const char *name;
  const nt_profiler_v3 *t3;
  const nt_profiler_v4 *t4;
  const nt_profiler_v5 *t5; /* v5 and v6 share the shape */
  const nt_profiler_v6 *t6;
  const nt_profiler_v7 *t7;
  char spec[256];
} ch;

/* Its context per nccltop context slot (NULL: not chained for that comm;
 * &null_ctx: it accepted the comm with a NULL context, which NCCL would
 * pass it as it is). */
static _Atomic(void *) chain_ctx[NT_MAX_CONTEXTS];
static char null_ctx;
static int chain_live; /* communicators it accepted, under init_lock */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* The masks: nccltop's own (what nt_g.mask_ptr points at when chained), the
 * one the chained plugin writes, and NCCL's (their union). */
static _Atomic int own_mask;
static int their_mask; /* the chained plugin writes it as it likes: __atomic */
static _Atomic(_Atomic int *) nccl_mask;
static _Atomic uint64_t dropped;

/* Handle pairs: per thread slot, a ring. A pair stays valid after its stop
 * until its slot is reused (NCCL <= 2.30 uses a KernelCh handle again after
 * its stop, K3; children name a Coll that was stopped at enqueue), so a late
 * use reaches both plugins as it would alone. Each use of a slot gets a new
 * handle, one of the pair's faces: a handle of an earlier use is nobody's
 * (its children reach the chained plugin with a NULL parent, as NCCL gives
 * a plugin a parent it never got, and never with another event's handle).
 * An open pair is never taken for a new event, except a ProxyOp's (NCCL
 * never stops some, P2) after the ring went round four times. */
#define NT_CHAIN_PAIRS 4096
#define NT_CHAIN_FACES 8
struct nt_pair {
  /* face[i] holds its own address while use i is the pair's current one,
   * NULL otherwise: what makes &face[i] a live handle. */
  _Atomic(const void *) face[NT_CHAIN_FACES];
  _Atomic uint32_t in_use;
  uint32_t seq;        /* owner only: the allocation number */
  uint8_t cur;         /* owner only: the current face */
  uint8_t never_stops; /* a ProxyOp: may be taken back while open */
  /* Written by the owner between the faces' stores, read by any thread
   * (a seqlock whose sequence is the face). */
  _Atomic(void *) ours, theirs;
  /* The chained plugin's mask as NCCL would have copied it for this event's
   * operation (M2): what its task-driven children are gated by. */
  _Atomic int their_mask;
};
_Static_assert(sizeof(struct nt_pair) <= 128, "pair size");
#define PAIR_STRIDE 128                      /* two cache lines */
static char *pairs;                          /* NT_MAX_THREADS * NT_CHAIN_PAIRS pairs */
static uint32_t cursors[NT_MAX_THREADS][16]; /* [i][0], padded against false sharing */
#define PAIRS_BYTES ((size_t)NT_MAX_THREADS * NT_CHAIN_PAIRS * PAIR_STRIDE)

uint64_t nt_chain_dropped(void) {
  return atomic_load_explicit(&dropped, memory_order_relaxed);
}

/* ---- which events NCCL starts for a mask (profiler.cc, 2.26 to 2.31) ---- */

#define NT_NET  NT_EV_NET_PLUGIN
#define NT_CE   (NT_EV_CE_COLL | NT_EV_CE_SYNC | NT_EV_CE_BATCH)
#define NT_TASK (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | NT_NET)
static bool nccl_starts(int abi, int m, uint64_t type) {
  switch (type) {
  case NT_EV_GROUP_API:
    return abi >= 5 &&
           (m & (NT_EV_GROUP_API | NT_EV_P2P_API | NT_EV_COLL_API | NT_EV_KERNEL_LAUNCH |
                 NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | NT_TASK | NT_CE));
  case NT_EV_COLL_API: return abi >= 5 && (m & (NT_EV_COLL_API | NT_EV_COLL | NT_TASK | NT_CE));
  case NT_EV_P2P_API: return abi >= 5 && (m & (NT_EV_P2P_API | NT_EV_P2P | NT_TASK));
  case NT_EV_KERNEL_LAUNCH: return abi >= 5 && (m & NT_EV_KERNEL_LAUNCH);
  case NT_EV_GROUP: return m & (NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | NT_TASK);
  case NT_EV_COLL: return m & (NT_EV_COLL | NT_TASK);
  case NT_EV_P2P: return m & (NT_EV_P2P | NT_TASK);
  case NT_EV_PROXY_OP: return m & (NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_NET);
  case NT_EV_PROXY_STEP: return m & (NT_EV_PROXY_STEP | NT_NET);
  case NT_EV_PROXY_CTRL: return m & NT_EV_PROXY_CTRL;
  case NT_EV_KERNEL_CH: return m & NT_EV_KERNEL_CH;
  case NT_EV_NET_PLUGIN: return m & NT_NET;
  case NT_EV_CE_COLL: return abi >= 6 && (m & NT_CE);
  case NT_EV_CE_SYNC: return abi >= 6 && (m & NT_EV_CE_SYNC);
  case NT_EV_CE_BATCH: return abi >= 6 && (m & NT_EV_CE_BATCH);
  case NT_EV_KERNEL_PHASE: return abi >= 7 && (m & NT_EV_KERNEL_PHASE);
  default: return false;
  }
}

/* The classes a version-k plugin knows (NCCL's shims drop the others). */
static int known_mask(int k) {
  if (k >= 7) return (NT_EV_KERNEL_PHASE << 1) - 1;
  if (k == 6) return (NT_EV_CE_BATCH << 1) - 1;
  if (k == 5) return (NT_EV_KERNEL_LAUNCH << 1) - 1;
  return (NT_EV_NET_PLUGIN << 1) - 1;
}

/* The classes NCCL would serve the chained plugin alone: its mask less what
 * its version cannot get, plus KernelCh when it asks for KernelPhase (2.31's
 * ncclProfilerEnforceMaskDeps adds it after every init). */
static int their_mask_now(void) {
  int m = __atomic_load_n(&their_mask, __ATOMIC_RELAXED) & known_mask(ch.k);
  return m & NT_EV_KERNEL_PHASE ? m | NT_EV_KERNEL_CH : m;
}

/* NCCL's mask is written only when ours or its changed since the last
 * write: an override NCCL makes itself (2.31's RAS mask) stays until then. */
static _Atomic int last_union = -1;
static void mask_write(bool force) {
  _Atomic int *n = atomic_load_explicit(&nccl_mask, memory_order_relaxed);
  if (!n) return;
  int u = atomic_load_explicit(&own_mask, memory_order_relaxed) | their_mask_now();
  if (!force && atomic_load_explicit(&last_union, memory_order_relaxed) == u) return;
  atomic_store_explicit(&last_union, u, memory_order_relaxed);
  atomic_store_explicit(n, u, memory_order_relaxed);
}

void nt_chain_mask_sync(void) {
  mask_write(false);
}

_Atomic int *nt_chain_mask_target(_Atomic int *nccl) {
  if (!nt_chain_active() || !nccl) return nccl;
  atomic_store(&nccl_mask, nccl);
  return &own_mask;
}

/* ---- loading ---- */

static bool ends_with_so(const char *s) {
  size_t n = strlen(s);
  return n >= 3 && strcmp(s + n - 3, ".so") == 0;
}

void nt_chain_open(const char *spec, int abi) {
  if (!spec || !*spec || strcasecmp(spec, "none") == 0) return;
  snprintf(ch.spec, sizeof ch.spec, "%s", spec);
  /* As NCCL opens NCCL_PROFILER_PLUGIN: the value itself, then, for a bare
   * name (no '/', not lib*.so), libnccl-profiler-<name>.so. */
  void *lib = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
  char first_err[200] = "", alt[300];
  if (!lib) snprintf(first_err, sizeof first_err, "%s", dlerror());
  if (!lib && !strchr(spec, '/') && !(strncmp(spec, "lib", 3) == 0 && ends_with_so(spec))) {
    snprintf(alt, sizeof alt, "libnccl-profiler-%s.so", spec);
    lib = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
    if (!lib) snprintf(first_err, sizeof first_err, "%s", dlerror());
  }
  if (!lib) {
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CHAIN=%s: cannot load it (%s); nccltop runs alone", ch.spec,
           first_err);
    return;
  }
  /* Never ourselves (the same file, or another copy of nccltop): every
   * event would come back to us without end. */
  if (dlsym(lib, "nccltop_set_mask")) {
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CHAIN=%s is nccltop itself; not chained", ch.spec);
    dlclose(lib);
    return;
  }
  /* The newest version both sides have. */
  ch.abi = abi;
  for (int k = abi < 7 ? abi : 7; k >= 3 && !ch.k; k--) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", k);
    const void *t = dlsym(lib, sym);
    if (!t) continue;
    ch.k = k;
    switch (k) {
    case 3: ch.t3 = t; break;
    case 4: ch.t4 = t; break;
    case 5: ch.t5 = t; break;
    case 6: ch.t6 = t; break;
    default: ch.t7 = t; break;
    }
    ch.name = *(const char *const *)t;
  }
  if (!ch.k) {
    nt_log(NT_NCCL_LOG_WARN,
           "NCCLTOP_CHAIN=%s has no ncclProfiler_v3..v%d table NCCL's v%d can drive; not chained",
           ch.spec, abi < 7 ? abi : 7, abi);
    dlclose(lib);
    return;
  }
  void *p = mmap(NULL, PAIRS_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CHAIN=%s: no memory for its handles; not chained", ch.spec);
    ch.k = 0;
    return; /* the library stays loaded: its constructors ran */
  }
  pairs = p;
  /* Never unloaded: NCCL may hold its handles until the process ends. */
  atomic_store(&nt_chain_on, true);
  nt_log(NT_NCCL_LOG_INFO, "chained profiler plugin %.64s (%s), driven as v%d",
         ch.name ? ch.name : "?", ch.spec, ch.k);
}

void nt_chain_comm_init(int ctx_index, int *nccl, const char *name, uint64_t hash, int nnodes,
                        int nranks, int rank, nt_nccl_logger logfn) {
  static bool failed_noted, empty_noted;
  if (!nt_chain_active() || ctx_index < 0 || ctx_index >= NT_MAX_CONTEXTS) return;
  if (pthread_mutex_lock(&init_lock) != 0) return;
  if (nccl) atomic_store(&nccl_mask, (_Atomic int *)nccl);
  void *cctx = NULL;
  int *m = &their_mask;
  nt_nccl_result rc;
  switch (ch.k) {
  case 3: rc = ch.t3->init(&cctx, m); break;
  case 4: rc = ch.t4->init(&cctx, m, name, hash, nnodes, nranks, rank, logfn); break;
  case 5: rc = ch.t5->init(&cctx, hash, m, name, nnodes, nranks, rank, logfn); break;
  case 6: rc = ch.t6->init(&cctx, hash, m, name, nnodes, nranks, rank, logfn); break;
  default: rc = ch.t7->init(&cctx, hash, m, name, nnodes, nranks, rank, logfn); break;
  }
  if (rc != NT_NCCL_SUCCESS) {
    cctx = NULL;
    if (!chain_live) __atomic_store_n(&their_mask, 0, __ATOMIC_RELAXED);
    if (!failed_noted) {
      failed_noted = true;
      nt_log(NT_NCCL_LOG_WARN,
             "chained plugin %s declined comm %016llx (init returned %d); nccltop goes on without "
             "it there",
             ch.spec, (unsigned long long)hash, rc);
    }
  } else {
    if (!__atomic_load_n(&their_mask, __ATOMIC_RELAXED) && !empty_noted) {
      empty_noted = true;
      nt_log(NT_NCCL_LOG_INFO, "chained plugin %s asked for no events", ch.spec);
    }
    void *old = atomic_exchange(&chain_ctx[ctx_index], cctx ? cctx : &null_ctx);
    if (!old) chain_live++;
  }
  mask_write(true); /* init wrote NCCL's mask: the union again */
  pthread_mutex_unlock(&init_lock);
}

void nt_chain_finalize_ctx(void *ctx) {
  struct nt_context *c = nt_context_check(ctx);
  if (!c || pthread_mutex_lock(&init_lock) != 0) return;
  void *cctx = atomic_exchange(&chain_ctx[c->index], NULL);
  if (cctx) chain_live--;
  /* NCCL finalizes a plugin's context only when it is not NULL. */
  if (cctx && cctx != &null_ctx) {
    switch (ch.k) {
    case 3: (void)ch.t3->finalize(cctx); break;
    case 4: (void)ch.t4->finalize(cctx); break;
    case 5: (void)ch.t5->finalize(cctx); break;
    case 6: (void)ch.t6->finalize(cctx); break;
    default: (void)ch.t7->finalize(cctx); break;
    }
  }
  pthread_mutex_unlock(&init_lock);
}

/* ---- handles ---- */

/* What a live handle of a pair says, read consistently. */
struct pair_view {
  struct nt_pair *w;
  void *ours, *theirs;
  int their_mask;
};

static bool in_pairs(const void *h) {
  return (uintptr_t)h - (uintptr_t)pairs < PAIRS_BYTES;
}

/* True when h is a pair's current face; *v then holds what it maps to. */
static bool pair_view(const void *h, struct pair_view *v) {
  if (!h || !in_pairs(h)) return false;
  size_t off = (uintptr_t)h - (uintptr_t)pairs, in = off % PAIR_STRIDE;
  if (in % sizeof(void *) || in >= sizeof(((struct nt_pair *)0)->face)) return false;
  struct nt_pair *w = (struct nt_pair *)(void *)(pairs + (off - in));
  _Atomic(const void *) *f = &w->face[in / sizeof(void *)];
  if (atomic_load_explicit(f, memory_order_acquire) != h) return false;
  v->w = w;
  /* The owner clears the face before it rewrites the pair (with release
   * stores): a value of a newer use read here (acquire) means the face reads
   * NULL below; unchanged, what was read is this use's. */
  v->ours = atomic_load_explicit(&w->ours, memory_order_acquire);
  v->theirs = atomic_load_explicit(&w->theirs, memory_order_acquire);
  v->their_mask = atomic_load_explicit(&w->their_mask, memory_order_acquire);
  return atomic_load_explicit(f, memory_order_relaxed) == h;
}

/* A pair of the calling thread's ring for an event of `type`, mapped to
 * ours and theirs; its new handle, or NULL. */
static void *pair_alloc(uint64_t type, void *ours, void *theirs, int their_mask) {
  struct nt_thread *t = nt_thread_self();
  if (!t) return NULL;
  uint32_t ti = (uint32_t)(t - nt_g.threads);
  char *pool = pairs + (size_t)ti * NT_CHAIN_PAIRS * PAIR_STRIDE;
  uint32_t *cur = &cursors[ti][0];
  for (int i = 0; i < NT_POOL_PROBES; i++) {
    uint32_t s = (*cur)++;
    struct nt_pair *w =
        (struct nt_pair *)(void *)(pool + (size_t)(s % NT_CHAIN_PAIRS) * PAIR_STRIDE);
    if (atomic_load_explicit(&w->in_use, memory_order_acquire) &&
        !(w->never_stops && s - w->seq >= 4u * NT_CHAIN_PAIRS))
      continue;
    /* The old handle goes first, then the pair is rewritten (readers
     * that saw the old handle see it gone), then the new one appears. */
    atomic_store_explicit(&w->face[w->cur], NULL, memory_order_relaxed);
    w->seq = s;
    w->cur = (uint8_t)((w->cur + 1u) % NT_CHAIN_FACES);
    w->never_stops = type == NT_EV_PROXY_OP;
    atomic_store_explicit(&w->ours, ours, memory_order_release);
    atomic_store_explicit(&w->theirs, theirs, memory_order_release);
    atomic_store_explicit(&w->their_mask, their_mask, memory_order_release);
    atomic_store_explicit(&w->in_use, 1, memory_order_relaxed);
    _Atomic(const void *) *f = &w->face[w->cur];
    atomic_store_explicit(f, (const void *)f, memory_order_release);
    return (void *)f;
  }
  return NULL;
}

/* The pair h is (true), or not: h is then ours, or nobody's (a handle of a
 * pair's earlier use). */
static bool split(void *h, void **ours, void **theirs, struct pair_view *v) {
  if (pair_view(h, v)) {
    *ours = v->ours;
    *theirs = v->theirs;
    return true;
  }
  *ours = in_pairs(h) ? NULL : h;
  *theirs = NULL;
  return false;
}

/* Classes NCCL gates by the mask it copied for the operation (at its
 * GroupApi from 2.28, at the task's append before), not by the live one:
 * for these the parent's copy decides. ProxyCtrl, the CE classes and
 * KernelPhase read the live mask. */
#define NT_TASK_GATED                                                                              \
  (NT_EV_GROUP | NT_EV_COLL | NT_EV_P2P | NT_EV_COLL_API | NT_EV_P2P_API | NT_EV_KERNEL_LAUNCH |   \
   NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | NT_EV_NET_PLUGIN)

/* ---- descriptors: NCCL's version down to the chained plugin's ---- */

union nt_any_descr {
  nt_descr_v3 v3;
  nt_descr_v4 v4;
  nt_descr_v5 v5;
  nt_descr_v7 v7;
};

static size_t descr_size(int v) {
  return v == 3   ? sizeof(nt_descr_v3)
         : v == 4 ? sizeof(nt_descr_v4)
         : v >= 7 ? sizeof(nt_descr_v7)
                  : sizeof(nt_descr_v5);
}

/* v3 from a v4 descriptor, as NCCL's v3 shim fills it: the communicator's
 * name and hash are gone (NULL, 0), a Coll's nChannels is its nMaxChannels. */
static void v3_from_v4(nt_descr_v3 *o, const nt_descr_v4 *s) {
  memset(o, 0, sizeof *o);
  o->type = s->type;
  o->parentObj = s->parentObj;
  o->rank = s->rank;
  switch (s->type) {
  case NT_EV_COLL:
    o->coll.seqNumber = s->coll.seqNumber;
    o->coll.func = s->coll.func;
    o->coll.sendBuff = s->coll.sendBuff;
    o->coll.recvBuff = s->coll.recvBuff;
    o->coll.count = s->coll.count;
    o->coll.root = s->coll.root;
    o->coll.datatype = s->coll.datatype;
    o->coll.nMaxChannels = s->coll.nChannels;
    o->coll.nWarps = s->coll.nWarps;
    o->coll.algo = s->coll.algo;
    o->coll.proto = s->coll.proto;
    break;
  case NT_EV_P2P:
    o->p2p.func = s->p2p.func;
    o->p2p.buff = s->p2p.buff;
    o->p2p.datatype = s->p2p.datatype;
    o->p2p.count = s->p2p.count;
    o->p2p.peer = s->p2p.peer;
    break;
  case NT_EV_PROXY_OP: o->proxyOp = s->proxyOp; break;
  case NT_EV_PROXY_STEP: o->proxyStep = s->proxyStep; break;
  case NT_EV_KERNEL_CH: o->kernelCh.channelId = s->kernelCh.channelId; break;
  case NT_EV_NET_PLUGIN: o->netPlugin = s->netPlugin; break;
  default: break; /* Group, ProxyCtrl: nothing but the header */
  }
}

/* The chained plugin's descriptor of `src` (NCCL's version abi), with its
 * own parent handles pt (parentObj) and gt (a Coll's or P2p's parentGroup). */
static void their_descr(int abi, const void *src, uint64_t type, void *pt, void *gt,
                        union nt_any_descr *o) {
  bool op = type == NT_EV_COLL || type == NT_EV_P2P;
  nt_descr_v4 v4;
  if (abi >= 5) {
    if (ch.k >= 5) {
      memcpy(o, src, descr_size(ch.k < abi ? ch.k : abi));
      o->v5.parentObj = pt;
      if (type == NT_EV_COLL) o->v5.coll.parentGroup = gt;
      if (type == NT_EV_P2P) o->v5.p2p.parentGroup = gt;
      return;
    }
    /* v4 (and v3) have no API events: a Coll's or P2p's parent is its Group. */
    const nt_descr_v5 *s = src;
    memset(&v4, 0, sizeof v4);
    v4.type = (uint8_t)s->type;
    v4.parentObj = op ? gt : pt;
    v4.rank = s->rank;
    memcpy((char *)&v4 + offsetof(nt_descr_v4, coll), (const char *)s + offsetof(nt_descr_v5, coll),
           sizeof v4 - offsetof(nt_descr_v4, coll));
  } else if (abi == 4) {
    memcpy(&v4, src, sizeof v4);
    v4.parentObj = pt;
  } else {
    memcpy(&o->v3, src, sizeof o->v3);
    o->v3.parentObj = pt;
    return;
  }
  if (ch.k == 4)
    o->v4 = v4;
  else
    v3_from_v4(&o->v3, &v4);
}

static nt_nccl_result their_start(void *cctx, void **h, union nt_any_descr *d) {
  switch (ch.k) {
  case 3: return ch.t3->startEvent(cctx, h, &d->v3);
  case 4: return ch.t4->startEvent(cctx, h, &d->v4);
  case 5: return ch.t5->startEvent(cctx, h, &d->v5);
  case 6: return ch.t6->startEvent(cctx, h, &d->v5);
  default: return ch.t7->startEvent(cctx, h, &d->v7);
  }
}

static void their_stop(void *h) {
  switch (ch.k) {
  case 3: (void)ch.t3->stopEvent(h); break;
  case 4: (void)ch.t4->stopEvent(h); break;
  case 5: (void)ch.t5->stopEvent(h); break;
  case 6: (void)ch.t6->stopEvent(h); break;
  default: (void)ch.t7->stopEvent(h); break;
  }
}

/* ---- the event path when chained ---- */

nt_nccl_result nt_chain_start(int abi, void *ctx, void **h, void *descr, nt_start_fn ours_start) {
  if (!h || !descr) return ours_start(ctx, h, descr);
  *h = NULL;
  /* type is a byte in v3 and v4, 64 bits from v5 on; parentObj is at 8. */
  uint64_t type =
      abi >= 5 ? ((const nt_descr_v5 *)descr)->type : ((const nt_descr_v4 *)descr)->type;
  nt_chain_mask_sync();
  int om = atomic_load_explicit(&own_mask, memory_order_relaxed);
  struct nt_context *c = nt_context_check(ctx);
  void *cctx = c ? atomic_load_explicit(&chain_ctx[c->index], memory_order_acquire) : NULL;
  /* PXN: a proxy op of another process comes with that process's context
   * and parent, pointers into it that may even look like ours (forked
   * ranks share a layout): passed as they are, never looked into, as NCCL
   * passes them. */
  bool foreign = type == NT_EV_PROXY_OP && ((const nt_descr_v4 *)descr)->proxyOp.pid != nt_g.pid;
  if (foreign || (!c && ctx)) cctx = ctx;
  void *parent = ((nt_descr_v4 *)descr)->parentObj, *po, *pt, *go = NULL, *gt = NULL;
  struct pair_view pv, gv;
  bool pp = false;
  if (foreign) {
    po = pt = parent;
  } else {
    pp = split(parent, &po, &pt, &pv);
  }
  int tm = pp && pt && (type & NT_TASK_GATED) ? pv.their_mask : their_mask_now();
  bool to_theirs = cctx && nccl_starts(abi, tm, type);
  if (cctx == &null_ctx) cctx = NULL;
  bool to_ours = nccl_starts(abi, om, type);
  bool op = abi >= 5 && (type == NT_EV_COLL || type == NT_EV_P2P);
  if (op) {
    nt_descr_v5 *d5 = descr;
    split(type == NT_EV_COLL ? d5->coll.parentGroup : d5->p2p.parentGroup, &go, &gt, &gv);
  }
  void *ours = NULL, *theirs = NULL;
  union nt_any_descr d;
  if (to_theirs) {
    their_descr(abi, descr, type, pt, gt, &d);
    (void)their_start(cctx, &theirs, &d);
    /* It may have changed its mask (a plugin that narrows after its first
     * operations): NCCL's at once, before another thread copies it. */
    nt_chain_mask_sync();
  }
  if (to_ours) {
    memcpy(&d, descr, descr_size(abi));
    d.v4.parentObj = po;
    if (op && type == NT_EV_COLL) d.v5.coll.parentGroup = go;
    if (op && type == NT_EV_P2P) d.v5.p2p.parentGroup = go;
    (void)ours_start(ctx, &ours, &d);
  }
  if (!theirs) {
    *h = ours;
    return NT_NCCL_SUCCESS;
  }
  void *w = pair_alloc(type, ours, theirs, tm);
  if (!w) {
    /* No pair (every probe busy, or no thread slot): its event ends here. */
    atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
    their_stop(theirs);
    *h = ours;
    return NT_NCCL_SUCCESS;
  }
  *h = w;
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_chain_stop(void *h, nt_nccl_result (*ours_stop)(void *)) {
  struct pair_view v;
  if (!pair_view(h, &v)) return in_pairs(h) ? NT_NCCL_SUCCESS : ours_stop(h);
  void *ours = v.ours, *theirs = v.theirs;
  atomic_store_explicit(&v.w->in_use, 0, memory_order_release);
  if (ours) (void)ours_stop(ours);
  if (theirs) {
    their_stop(theirs);
    nt_chain_mask_sync();
  }
  return NT_NCCL_SUCCESS;
}

nt_nccl_result nt_chain_record(int abi, void *h, int state, void *args, nt_record_fn ours_record) {
  struct pair_view pv, *w = &pv;
  if (!pair_view(h, &pv)) return in_pairs(h) ? NT_NCCL_SUCCESS : ours_record(h, state, args);
  if (w->ours) (void)ours_record(w->ours, state, args);
  if (!w->theirs) return NT_NCCL_SUCCESS;
  if (ch.k >= 4 || abi == 3) {
    /* v4 to v7 share the arguments' layout; the states a version lacks come
     * only on handles of classes it never gets. */
    switch (ch.k) {
    case 3: (void)ch.t3->recordEventState(w->theirs, state, args); break;
    case 4: (void)ch.t4->recordEventState(w->theirs, state, args); break;
    case 5: (void)ch.t5->recordEventState(w->theirs, state, args); break;
    case 6: (void)ch.t6->recordEventState(w->theirs, state, args); break;
    default: (void)ch.t7->recordEventState(w->theirs, state, args); break;
    }
    nt_chain_mask_sync();
    return NT_NCCL_SUCCESS;
  }
  /* A v3 plugin under a v4+ NCCL, as NCCL's v3 shim: proxy-control states
   * with their appended count, step waits with no size, nothing else. */
  nt_state_args_v3 a3;
  memset(&a3, 0, sizeof a3);
  if (state >= NT_ST_CTRL_IDLE && state <= NT_ST_CTRL_APPEND_END) {
    if (args)
      a3.proxyCtrl.appendedProxyOps = ((nt_state_args_v4 *)args)->proxyCtrl.appendedProxyOps;
  } else if (state < NT_ST_STEP_SEND_GPU_WAIT || state > NT_ST_STEP_RECV_GPU_WAIT) {
    return NT_NCCL_SUCCESS;
  }
  (void)ch.t3->recordEventState(w->theirs, state, &a3);
  nt_chain_mask_sync();
  return NT_NCCL_SUCCESS;
}

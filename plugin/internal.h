/* The plugin's internal contract between its files.
 *
 * Memory: one region reserved at the first init (mmap, untouched pages cost
 * nothing) holds NT_MAX_THREADS thread slots. A thread that calls into the
 * plugin claims a slot at its first event and from then on writes only to
 * that slot: its handle pools, its aggregate tables, its proxy-control state.
 * No lock and no allocation on the event path; the publisher thread reads the
 * slots with relaxed atomic loads (counters are cumulative, so a read that
 * races a write is at worst one event old) and a seqlock for the proxy state,
 * whose fields must be read together.
 *
 * Every handle NCCL gets from us points into the region (or at the static
 * ignored-event handle), so a handle can be validated with a range check
 * before it is dereferenced: NCCL passes some handles back unchecked (the net
 * plugin callback path) and PXN can hand us another process's pointers.
 */
#ifndef NCCLTOP_PLUGIN_INTERNAL_H
#define NCCLTOP_PLUGIN_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../proto/nccltop_proto.h"
#include "nccl_profiler_abi.h"
#include "atomics.h"
#include "clock.h"
#include "recycle.h"

#define NT_PLUGIN_VERSION         "0.2.0"
#define NT_MAX_THREADS            256
#define NT_MAX_CONTEXTS           64
#define NT_OPS_PER_THREAD         512
#define NT_STEPS_PER_OP           16 /* NCCL keeps at most NCCL_STEPS (8) steps of an op in flight */
#define NT_EVENTS_PER_THREAD      256
#define NT_CHAN_ROWS_PER_THREAD   512
#define NT_KERNEL_ROWS_PER_THREAD 256
#define NT_TASKS_PER_THREAD       4096 /* Coll/P2p operations not yet retired */
#define NT_NET_EVENTS_PER_THREAD  256
#define NT_NET_ROWS_PER_THREAD    64
#define NT_POOL_PROBES            8
/* Frees a slot waits out before recycle.h hands it out again: with its
 * faces, how many stops a stale handle stays stale for (4 x 32, 8 x 64). */
#define NT_OP_QUARANTINE    32
#define NT_EVENT_QUARANTINE 64
#define NT_EXPORT           __attribute__((visibility("default")))

/* The names a Coll or P2p carries (nt_name_index). */
enum { NT_NAME_FUNC, NT_NAME_ALGO, NT_NAME_PROTO, NT_NAME_DTYPE, NT_NAME_KINDS };
#define NT_NAME_WAYS 8 /* names remembered per kind (nt_thread.name_memo) */

/* Handle kinds: the first byte of every handle. */
enum nt_kind {
  NT_K_NONE = 0,
  NT_K_IGNORED = 0x5a, /* the static handle for events we only count */
  NT_K_OP,
  NT_K_STEP,
  NT_K_CTRL,
  NT_K_KERNEL,
  NT_K_TASK,  /* a Coll or P2p operation */
  NT_K_API,   /* a CollApi / P2pApi call */
  NT_K_NET,   /* a network plugin event */
  NT_K_PHASE, /* a KernelPhase of a kernel channel event (v7) */
};

/* Identity fields are written under nt_g.contexts_lock by init and read
 * under it by the publisher; the event path reads only `magic` and `index`. */
struct nt_context {
  _Atomic uint64_t magic; /* NT_CONTEXT_MAGIC once the slot has been used */
  int index;              /* fixed at the first init */
  _Atomic int live;       /* between init and finalize */
  /* Its operations have had children: the rest will too (retire.c waits
   * for them instead of calling an operation without any "enqueued").
   * Every child start reads it: here in the line written only at init and
   * finalize, not beside the API counters every call writes (a line moving
   * between the enqueuing and the proxy thread at each child). */
  _Atomic int has_children;
  int abi;
  uint64_t comm_hash;
  int32_t rank, nranks, nnodes;
  char name[NT_MAX_NAME + 1];
  _Atomic uint32_t generation;  /* bumped when init (re)uses the slot */
  _Atomic uint64_t colls, p2ps; /* several app threads may enqueue: true atomics */
  /* Progress per function: NCCL's seqNumber + 1 (p2p: a count), when the
   * last one was enqueued, and how many were done (the publisher's). */
  _Atomic uint64_t launched[NT_FUNC_COUNT], last_launch_ns[NT_FUNC_COUNT], done[NT_FUNC_COUNT];
  /* The highest seqNumber + 1 seen per function (api_ops.c nt_launch_note:
   * a Coll at or below it is a graph replay, counted in `launched` too). */
  _Atomic uint64_t seq_top[NT_FUNC_COUNT];
  /* API events (profiler v5+). */
  _Atomic uint64_t group_api, coll_api, p2p_api, kernel_launches, graph_captured, api_ns;
  /* ABI v3 (NCCL 2.26) gives no identity at init but puts the
   * communicator's name, hash and rank on every Coll and P2p descriptor:
   * the first one fills these, once, on the event path (no lock: written
   * before `learned` turns NT_LEARNED with release, read after it). */
  _Atomic int learned;
  uint64_t learned_hash;
  int32_t learned_rank;
  char learned_name[NT_MAX_NAME + 1];
};
enum { NT_LEARNING = 1, NT_LEARNED = 2 };
#define NT_CONTEXT_MAGIC 0x6e63636c746f7063ull

/* Aggregates per (context, channel, direction, peer, relay rank), owned by
 * one thread. relay_rank is -1, or for PXN the rank of the other process
 * whose ops this thread runs (ctx is then the proxy thread's own).
 * What every step state and step stop writes comes first, in one cache
 * line (61 bytes); the identity and per-op counts follow. */
struct nt_chan_row {
  nt_counter wait_ns[3];
  nt_counter steps, bytes;
  nt_counter last_progress_ns; /* 0 = never; a state record sets only cur_since_ns (collect.c) */
  nt_counter cur_since_ns;
  _Atomic int32_t cur_step;
  _Atomic uint8_t cur_wait;
  _Atomic uint64_t key __attribute__((aligned(8))); /* 0 = empty; written last (release) */
  struct nt_context *ctx;
  uint8_t channel, dir;
  int32_t peer, relay_rank;
  nt_counter ops_started, ops_done;
  /* Ops that began (a step past its first wait, or a step done), and how
   * many of those are done: in flight and none begun is "queued". */
  nt_counter ops_begun, begun_done;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct nt_chan_row, cur_wait) < 64, "a step's writes share one line");

struct nt_kernel_row {
  _Atomic uint64_t key;
  struct nt_context *ctx;
  uint8_t channel;
  nt_counter count, busy_ns, last_ns;
  nt_counter phase_ns[NT_KPHASE_COUNT]; /* KernelPhase GPU time (v7) */
  /* Owner only: the last interval counted into busy_ns. NCCL gives every
   * work of a batch the batch's times (K2): busy time is the union. */
  uint64_t span_start, span_stop;
};

#include "task.h"

struct nt_net_row {
  _Atomic uint64_t key;
  struct nt_context *ctx;
  uint8_t type;
  int32_t device;
  uint32_t id;
  /* Net events may stop on another thread than the one that started them
   * (socket helper threads): true atomics. */
  _Atomic uint64_t started, count, bytes, busy_ns;
};

struct nt_net_event {
  uint8_t kind; /* NT_K_NET */
  _Atomic uint8_t in_use;
  const void *self;
  uint64_t start_ns, bytes;
  struct nt_net_row *row;
};

/* How stale a task's last_progress_ns may be (about 1 ms): ages are shown
 * in seconds, stalls are judged over seconds. */
#define NT_PROGRESS_GRAIN_NS (UINT64_C(1) << 20)

#include "child.h"

/* Proxy-control bursts on one thread never nest, so one inline handle does;
 * so do API calls (a CollApi never contains another). */
struct nt_ctrl {
  uint8_t kind; /* NT_K_CTRL */
  const void *self;
};
struct nt_api {
  uint8_t kind; /* NT_K_API */
  const void *self;
  struct nt_context *ctx;
  uint64_t start_ns;
  bool group; /* the thread's GroupApi handle (its stop closes the call) */
  /* The activation mask when the call began: NCCL 2.28+ copies the mask at
   * each call and its tasks keep the copy (M2), so this, not the mask when
   * the Coll starts, says which children they will get. Read by whichever
   * thread starts the Coll. */
  _Atomic int mask;
};
/* Broadcasts a thread counted from their CollApi in the group now open
 * (api_ops.c): at most this many wait for the group's end. */
#define NT_BCAST_PENDING 16

/* Every handle NCCL gets from us begins with its kind byte and, at offset
 * 8, its own address: nt_handle_kind trusts a pointer only if it is in our
 * region, 8-byte aligned and points at its own address there. No stray or
 * stale-foreign pointer passes that by accident, and the check costs two
 * loads, no division. */
#define NT_HANDLE_PIN(T)                                                                           \
  _Static_assert(offsetof(T, kind) == 0 && offsetof(T, self) == 8 && _Alignof(T) >= 8,             \
                 #T " handle layout")
NT_HANDLE_PIN(struct nt_task);
NT_HANDLE_PIN(struct nt_net_event);
NT_HANDLE_PIN(struct nt_step);
NT_HANDLE_PIN(struct nt_oface);
NT_HANDLE_PIN(struct nt_kface);
NT_HANDLE_PIN(struct nt_kphase_ev);
NT_HANDLE_PIN(struct nt_ctrl);
NT_HANDLE_PIN(struct nt_api);

enum nt_slot_state { NT_SLOT_FREE = 0, NT_SLOT_OWNED, NT_SLOT_ORPHAN };

struct nt_thread {
  _Atomic int state; /* enum nt_slot_state */
  _Atomic uint32_t tid;
  /* Proxy-control state, under the seqlock. */
  _Atomic uint32_t seq;
  _Atomic int is_proxy;
  _Atomic(struct nt_context *) ctrl_ctx;
  _Atomic uint8_t base_state, overlay, cur_state; /* enum nt_proxy_state */
  nt_counter since_ns;
  nt_counter state_ns[NT_PROXY_NSTATES];
  nt_counter appends, appended_ops, wakeups;
  /* Process counters, summed by the publisher. */
  nt_counter dropped_events, unknown_events, foreign_ops, reclaimed_ops, dropped_rows;
  struct nt_clock_copy clk; /* owner only: the clock's calibration (clock.h) */
  /* Counted at every call: in the line of the clock copy, which nearly
   * every call reads, so that a step's call touches one line of its slot. */
  nt_counter events;
  nt_counter dropped_ops, net_events;
  nt_counter never_stopped_ops;   /* ProxyOps of CollNet operations: not tracked (P2) */
  _Atomic uint64_t late_children; /* counted by any thread a late child arrives on */
  uint32_t op_cursor, event_cursor, task_cursor, net_cursor;
  /* Owner only: op and kernel-event slots as they were freed (recycle.h). */
  struct nt_recycle op_free, event_free;
  /* ops[i]'s start time while it is in use, 0 once freed (by any thread):
   * the pool's round robin reads 8 ops per line here, not one op's line. */
  _Atomic uint64_t op_since[NT_OPS_PER_THREAD];
  /* Owner only: the communicator this thread's last start named, once it
   * passed nt_context_check (a context slot is never unmapped and stays
   * ours once initialised, so a pointer that passed always passes). */
  struct nt_context *ctx_memo;
  /* Task slots are taken round robin: the n-th taken (task_cursor, owner
   * only) is tasks[n % NT_TASKS_PER_THREAD]. tasks_opened is the cursor
   * as of the last task that turned LIVE (stored after it, release); the
   * publisher reads only the window from task_swept (its own: every slot
   * taken before it is free again) to tasks_opened (retire.c). */
  _Atomic uint32_t tasks_opened;
  uint32_t task_swept;
  struct nt_ctrl ctrl;
  struct nt_api api, gapi;
  /* Owner only: the group the thread is in (each Group event starts one);
   * p2p operations of one group run in one kernel. */
  uint32_t group_serial;
  /* Owner only: the last few names NCCL passed for each of a Coll's
   * function, algorithm, protocol and datatype, what each meant and how
   * that is spelled (nt_name_index). A job alternates between a few
   * functions and types (AllReduce, AllGather, Send, Recv...): one entry
   * per kind missed a third of the lookups of the recordings. */
  struct nt_name_memo {
    const char *name[NT_NAME_WAYS];
    const char *spelled[NT_NAME_WAYS];
    uint8_t index[NT_NAME_WAYS];
    uint8_t next; /* the entry a new name takes */
  } name_memo[NT_NAME_KINDS];
  /* Owner only: the open group's Broadcasts counted from their CollApi. */
  struct nt_task *bcast_pending[NT_BCAST_PENDING];
  uint32_t nbcast_pending;
  /* Publisher only: its task pool has been populated (prefault.c). In the
   * padding before the rows. */
  uint8_t tasks_faulted;
  struct nt_chan_row chan[NT_CHAN_ROWS_PER_THREAD];
  struct nt_kernel_row kernel[NT_KERNEL_ROWS_PER_THREAD];
  struct nt_op ops[NT_OPS_PER_THREAD];
  struct nt_kernel_event kevents[NT_EVENTS_PER_THREAD];
  struct nt_net_event nevents[NT_NET_EVENTS_PER_THREAD];
  struct nt_net_row net[NT_NET_ROWS_PER_THREAD];
  struct nt_task tasks[NT_TASKS_PER_THREAD];
};
/* A step's call reads the clock copy and counts the call: one line. (The
 * slot is 64-aligned: its rows are.) */
_Static_assert(offsetof(struct nt_thread, clk) / 64 == offsetof(struct nt_thread, events) / 64 &&
                   (offsetof(struct nt_thread, clk) + sizeof(struct nt_clock_copy) - 1) / 64 ==
                       offsetof(struct nt_thread, events) / 64,
               "the call counter and the clock copy share a line");

/* Configuration from NCCLTOP_* variables, read at the first init. */
/* Everything the plugin needs from the environment, copied at the first
 * init on NCCL's calling thread: the application may change its environment
 * later (Python's os.environ), and getenv on our own threads would race with
 * its setenv. */
struct nt_config {
  bool disabled;
  bool debug; /* NCCLTOP_DEBUG: log to stderr when NCCL gives no logger */
  int event_mask;
  uint32_t interval_ms;
  uint32_t reclaim_ms;
  char connect[256];
  char chain[256];       /* NCCLTOP_CHAIN: another profiler plugin to load (chain.c) */
  char dir[200];         /* the endpoint directory; empty if NCCLTOP_DIR is too long */
  char topo_path[4096];  /* NCCL_TOPO_DUMP_FILE; empty if unset or too long */
  char graph_path[4096]; /* NCCL_GRAPH_DUMP_FILE; the same */
  uint32_t nenv;         /* NCCL_* and NCCLTOP_* variables, for the hello */
  nt_env_var env[NT_MAX_ENV];
  /* NCCLTOP_HOSTNAME: the host name to report; empty: gethostname()'s */
  char host[NT_MAX_HOST + 1];
  int clock; /* NCCLTOP_CLOCK: NT_CLOCK_CHOICE_* */
};

/* Process-wide state (state.c). */
struct nt_global {
  _Atomic int inert; /* forked child, or the region could not be mapped */
  pid_t pid;
  struct nt_thread *threads;      /* the region: NT_MAX_THREADS slots */
  _Atomic uint32_t nthreads_used; /* high-water mark of claimed slots */
  struct nt_context contexts[NT_MAX_CONTEXTS];
  _Atomic(_Atomic int *) mask_ptr; /* NCCL's process-wide activation mask */
  pthread_mutex_t contexts_lock;   /* context identity: init vs publisher */
  _Atomic int abi;
  struct nt_config cfg;
  _Atomic(nt_nccl_logger) logfn;
  _Atomic uint64_t unsent_messages;
  _Atomic uint64_t slotless_events; /* calls from threads beyond NT_MAX_THREADS: ignored */
};
extern struct nt_global nt_g;

/* log.c: NCCL's logger (subsystem PROFILE) when we have it, else stderr when
 * NCCLTOP_DEBUG is set; never stdout. */
void nt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* dump_file.c: a file NCCL writes (the topology, the channel graphs) that
 * the publisher forwards as it is, read without blocking, at most 1 MiB,
 * again only when it changed. Publisher thread only. */
struct nt_dump_file {
  const char *var, *what; /* "NCCL_TOPO_DUMP_FILE", "topology": for the log */
  const char *path;       /* "" none */
  char *buf;              /* its content, once NCCL has written it */
  size_t len;
  struct stat st; /* the file as last looked at (dev, ino, size, mtime) */
  bool seen, refused_logged;
};
void nt_dump_file_load(struct nt_dump_file *f);
void nt_dump_file_free(struct nt_dump_file *f);

/* config.c */
void nt_config_load(struct nt_config *c);

/* state.c: init/finalize, contexts, thread slots. */
nt_nccl_result nt_init(void **context, int *mask, const char *name, uint64_t hash, int nnodes,
                       int nranks, int rank, nt_nccl_logger logfn, int abi);
nt_nccl_result nt_finalize(void *context);
struct nt_context *nt_context_check(void *p); /* ours and live-or-finalized, else NULL */
/* v3: the identity a Coll/P2p descriptor carries, kept from the first one. */
void nt_context_learn(void *context, const char *name, uint64_t hash, int rank);
/* The identity to publish (under contexts_lock): init's, or what v3 learned. */
struct nt_identity {
  uint64_t hash;
  int32_t rank;
  const char *name;
};
struct nt_identity nt_context_identity(const struct nt_context *c);
struct nt_thread *nt_thread_claim(void); /* NULL when every slot is taken */
/* initial-exec: one %fs-relative load on every call, where the default
 * model of a dlopen'd library calls __tls_get_addr. It takes 8 bytes of
 * the static TLS space glibc keeps for libraries loaded later (and 1 more
 * for phase.c's per-thread phase). */
#define NT_TLS_FAST __attribute__((tls_model("initial-exec")))
extern __thread struct nt_thread *nt_self NT_TLS_FAST;
static inline struct nt_thread *nt_thread_self(void) {
  struct nt_thread *t = nt_self;
  return NT_LIKELY(t != NULL) ? t : nt_thread_claim();
}
/* The time now (CLOCK_MONOTONIC ns) on the calling thread: read through
 * its slot's own copy of the clock's calibration where it has a slot,
 * else through the shared record (the publisher). One way per thread:
 * the two ways take up a new calibration at moments a few microseconds
 * apart, so a thread mixing them could see its time go back. */
static inline uint64_t nt_now(void) {
  struct nt_thread *t = nt_self;
  return NT_LIKELY(t != NULL) ? nt_clock_ns_copy(&t->clk) : nt_clock_ns();
}
/* Whether h points into the slot region with its kind and self (the
 * first 16 bytes a handle check reads) inside it. Asked only by a thread
 * that has a slot, so the region is mapped (nt_g.threads is set before the
 * first slot is claimed, and never unset): no test of the base. Inline:
 * every stop and record asks. */
static inline bool nt_handle_in_region(const void *h) {
  uintptr_t base = (uintptr_t)nt_g.threads, p = (uintptr_t)h;
  /* One compare for both ends: below base, p - base wraps to a huge value. */
  return p - base <= sizeof(struct nt_thread) * NT_MAX_THREADS - 16;
}

/* events.c: the hot path, on a version-neutral view of the descriptor. */
struct nt_ev_op { /* Coll and P2p */
  const char *func, *datatype, *algo, *proto;
  uint64_t seq;
  uint64_t count;
  int root_peer;
  uint8_t nchannels, nwarps;
  bool sym;            /* v7: a symmetric-kernel collective (coll.isSymColl) */
  const char *variant; /* v7: its kernel variant (coll.kernelVariant), else NULL */
};
struct nt_ev {
  uint32_t type;
  void *parent;
  int rank;
  pid_t pid;
  int channel, peer, is_send, step;
  uint64_t ptimer;
  bool graph_captured;  /* CollApi / P2pApi (v5+) */
  uint8_t phase_id;     /* KernelPhase (v7): 0 initial_sync, 1 compute, 2 final_sync */
  uint64_t user_tag;    /* v7: the user's tag of the operation, 0 none */
  int64_t net_id;       /* NetPlugin: plugin type | version */
  const void *net_data; /* NetPlugin: the plugin's own descriptor */
  struct nt_ev_op op;   /* Coll / P2p, CollApi, CeColl */
};
nt_nccl_result nt_start(void *context, void **handle, const struct nt_ev *ev);
/* ProxyStep, the most frequent start: nt_start without building an nt_ev. */
nt_nccl_result nt_start_step(void **handle, void *parent, int step);
/* ProxyCtrl, the proxy thread's bursts: the same, no nt_ev. */
nt_nccl_result nt_start_ctrl(void *context, void **handle);
/* What a ProxyOp start reads of its descriptor. */
struct nt_proxy_op_ev {
  void *parent;
  int rank;
  pid_t pid;
  int channel, peer, is_send;
};
/* ProxyOp, KernelCh, and Group, GroupApi and KernelLaunch (`type`, which
 * carry nothing we read): nt_start without an nt_ev to zero (v5+). */
nt_nccl_result nt_start_proxy_op(void *context, void **handle, const struct nt_proxy_op_ev *op);
nt_nccl_result nt_start_kernel_ch(void *context, void **handle, void *parent, int channel,
                                  uint64_t ptimer);
nt_nccl_result nt_start_bare(void *context, void **handle, uint32_t type);
nt_nccl_result nt_stop(void *handle);
/* count: AppendEnd's appended proxy ops; a v3 (2.26) Send/RecvDone's
 * steps of the op done so far. */
nt_nccl_result nt_record(void *handle, int state, uint64_t trans_size, bool has_size, int count,
                         uint64_t ptimer);
/* A ProxyStep state (v4+), the most frequent record: its transSize is read
 * (through trans_size, NULL none) only at the states that carry one. */
nt_nccl_result nt_record_step(void *handle, int state, const size_t *trans_size);
extern unsigned char nt_ignored_handle;
/* The kind of a handle of ours (in the region, aligned, and holding its own
 * address at offset 8), NT_K_NONE for anything else: NCCL hands some handles
 * back unchecked (net plugin stops), and PXN or a replayed CUDA graph can
 * hand us stale or foreign pointers. Inline: every stop and record asks. */
static inline int nt_handle_kind(const void *h) {
  /* The ignored handle is static, outside the region: asked for only
   * there, off the path of the handles NCCL gives back most. */
  if (!nt_handle_in_region(h) || ((uintptr_t)h & 7))
    return h == &nt_ignored_handle ? NT_K_IGNORED : NT_K_NONE;
  const void *self;
  memcpy(&self, (const char *)h + 8, sizeof self);
  return self == h ? *(const uint8_t *)h : NT_K_NONE;
}
/* nccltop's activation mask now (what NCCL copies for the next call). */
static inline int nt_live_mask(void) {
  _Atomic int *p = atomic_load_explicit(&nt_g.mask_ptr, memory_order_relaxed);
  return p ? atomic_load_explicit(p, memory_order_relaxed) : 0;
}

/* ops.c: Coll/P2p operations and API events (called by events.c). */
/* What NCCL's name for a function, algorithm, protocol or datatype
 * (NT_NAME_*) means, as nt_func_from_name and the others say; NCCL passes
 * the same literal again and again, so the last one a thread saw is
 * confirmed with one compare instead of looked up. */
int nt_name_index(struct nt_thread *t, int kind, const char *name);
void *nt_op_start(struct nt_thread *t, void *context, const struct nt_ev *ev);
void nt_op_stop(struct nt_task *k);
void *nt_api_start(struct nt_thread *t, void *context, const struct nt_ev *ev);
/* GroupApi and KernelLaunch, whose descriptors carry nothing we read. */
void *nt_api_start_bare(struct nt_thread *t, void *context, uint32_t type);
void nt_api_stop(struct nt_api *a);

/* api_ops.c: operations as the user called them (Broadcast on 2.29+, CE
 * collectives, graph replays). */
/* Counts one launch of func: by seqNumber when the event has one (a Coll
 * at or below the highest seen is a graph replay: one more), else one. */
void nt_launch_note(struct nt_context *c, int func, bool has_seq, uint64_t seq, uint64_t now);
/* CollApi of a Broadcast on ABI v6: counted as the operation (see there). */
void nt_bcast_api(struct nt_thread *t, struct nt_context *c, const struct nt_ev *ev);
/* A Broadcast Coll whose parent is t's CollApi handle: the CollApi-born
 * one it reports is withdrawn. */
void nt_bcast_claim(struct nt_thread *t, struct nt_context *c, const void *parent);
/* The group is over: t's pending Broadcasts are stopped (retirable). */
void nt_bcast_close(struct nt_thread *t);
/* CeColl, CeSync, CeBatch (v6). */
void *nt_ce_start(struct nt_thread *t, void *context, const struct nt_ev *ev);

/* proxyop_pool.c: the ProxyOp pool. NCCL never stops some ops (P2): those
 * of CollNet operations are recognised at start and never take a slot; any
 * other op that has had no step nor op state NT_STEPLESS_GRACE_MS after
 * its start (not a net op), an op
 * of a finalized communicator, and one older than NCCLTOP_RECLAIM_MS give
 * their slot up to a new op. */
#define NT_STEPLESS_GRACE_MS 1000
#define NT_STEPLESS_MIN_MS   10 /* when the pool is full */
/* A reference on the op's operation (nt_task_attach), or NULL; *never when
 * the operation's children are never stopped: then it is noted on the
 * operation (unreported) and the op is not tracked. */
struct nt_task *nt_proxyop_parent(struct nt_thread *t, void *parent, bool *never);
struct nt_op *nt_proxyop_alloc(struct nt_thread *t, uint64_t now);
/* An op NCCL stopped gives its slot back. */
void nt_proxyop_free(struct nt_thread *t, struct nt_op *op);
/* The kernel event a face belongs to. */
static inline struct nt_kernel_event *nt_kface_event(struct nt_kface *f) {
  return (struct nt_kernel_event *)(void *)(f - f->face);
}
static inline struct nt_op *nt_oface_op(struct nt_oface *f) {
  return (struct nt_op *)(void *)(f - f->face);
}

/* net.c: network plugin events. */
void *nt_net_start(struct nt_thread *t, void *context, const struct nt_ev *ev);
void nt_net_stop(struct nt_net_event *e);

/* phase.c: the phase table nccltop_tag fills. The phase of an operation
 * the calling thread enqueues now: its own last tag, or the process's when
 * it never tagged (see phase.c for why). */
uint8_t nt_phase_now(void);
/* The phase any thread set last (the process's, for the publisher). */
uint8_t nt_phase_process(void);
/* The phase of an operation the user tagged through NCCL (v7 userTag, not
 * 0): "tag:<tag>", interned on the event path; 0 when the table is full. */
uint8_t nt_phase_of_tag(uint64_t tag);
/* Copies the names into rows (publisher); returns how many. */
uint32_t nt_phase_rows(nt_phase_row *rows, uint32_t cap);

/* variant.c: NCCL 2.31's symmetric kernel variants. The id of a
 * coll.kernelVariant name, interned on the event path; 0 for NULL or "",
 * or when the table is full. */
uint8_t nt_variant_of(const char *name);
/* Copies the names into rows (publisher); returns how many. */
uint32_t nt_variant_rows(nt_variant_row *rows, uint32_t cap);

/* retire.c (publisher thread only): retires finished operations into the
 * statistics; `force` retires every finished one now (flush, last snapshot). */
int nt_retire_init(void);
void nt_retire_free(void);
/* How a sweep retires: TICK waits for quiet sweeps and for children still
 * expected; FLUSH retires what is finished at once (nccltop_flush); FINAL
 * retires everything that was stopped, expected children or not (the last
 * snapshot before the publisher stops). */
enum nt_sweep { NT_SWEEP_TICK, NT_SWEEP_FLUSH, NT_SWEEP_FINAL };
void nt_retire_sweep(uint64_t now, enum nt_sweep how);
/* Fills the 1.1 tables of s; map turns context indices into comm indices. */
void nt_retire_collect(nt_snapshot *s, const uint16_t *map, uint64_t now);

/* outlet.c: one XPUB socket towards one reader (a viewer in the endpoint
 * directory, or NCCLTOP_CONNECT), so each reader's faults are its own. */
struct nt_outlet {
  void *sock;       /* NULL: closed */
  bool subscribed;  /* a reader is subscribed there */
  bool fresh;       /* a new subscription: send it everything at once */
  uint32_t foreign; /* messages other than subscribe/cancel "" since it opened */
  uint64_t opened_ns;
};
bool nt_outlet_open(struct nt_outlet *o, void *zctx, uint64_t now_ns);
void nt_outlet_close(struct nt_outlet *o, int linger_ms);
/* Reads what came in (subscriptions); false when the reader floods us:
 * close the outlet. */
bool nt_outlet_drain(struct nt_outlet *o);
/* Two frames, ZMQ_DONTWAIT; a refusal is counted in unsent_messages. */
bool nt_outlet_send(struct nt_outlet *o, const char *topic, const void *data, size_t len);

/* local.c: the viewers in the endpoint directory, each connected from an
 * outlet of its own (the plugin never listens: see local.c). */
#define NT_MAX_VIEWERS 32
#define NT_MAX_BANS    8
/* Descriptors left to the job after everything we take (a context's six, a
 * viewer's two); threads likewise (a context's two). */
#define NT_FD_HEADROOM     16
#define NT_THREAD_HEADROOM 4
struct nt_viewer {
  char name[64];  /* viewer-<pid>-<serial>-<pidns>.sock */
  char addr[128]; /* what the outlet connected to */
  uint32_t pid;
  uint64_t pidns;
  bool listed; /* in the listing under way */
  struct nt_outlet out;
};
struct nt_ban { /* a viewer that flooded us, kept out until until_ns */
  char name[64];
  uint64_t until_ns;
  uint32_t times;
};
struct nt_local {
  int dirfd;     /* the checked directory; -1 when none is held */
  bool watching; /* opened (or tried): keep scanning */
  bool trouble_noted, full_noted, fds_noted, flood_noted,
      list_noted; /* each said once until it clears */
  uint64_t next_scan_ns, next_check_ns;
  uint64_t pidns; /* ours */
  char dir[256];
  uint32_t nviewers;
  struct nt_viewer viewers[NT_MAX_VIEWERS];
  struct nt_ban bans[NT_MAX_BANS];
};
/* Opens (creating) and checks dir; logs a failure (and keeps trying at
 * each scan). The struct needs no initialization before. */
bool nt_local_open(struct nt_local *l, const char *dir);
/* Call often (cheap until its period is up): connects new live viewers,
 * disconnects the gone ones, re-opens a replaced directory. zctx_of(arg)
 * gives the ZeroMQ context, starting it the first time a viewer is there
 * (NULL: none, it said why). */
void nt_local_scan(struct nt_local *l, void *(*zctx_of)(void *), void *arg, uint64_t now_ns);
/* Viewer i flooded us: its outlet is closed and it is kept out a while. */
void nt_local_flooded(struct nt_local *l, uint32_t i, uint64_t now_ns);
uint32_t nt_local_viewers(const struct nt_local *l);
/* Closes every viewer's outlet (they are connected again at the next scan
 * if the context lives on). */
void nt_local_close_sockets(struct nt_local *l, int linger_ms);
/* After zmq_ctx_term; closes the directory. A struct nt_local_open never
 * saw must have dirfd -1. */
void nt_local_close(struct nt_local *l);

/* limits.c: how many of `want` descriptors (threads) the process could
 * take right now, each taken for a moment and given back. */
unsigned nt_fds_free_up_to(unsigned want);
unsigned nt_threads_free_up_to(unsigned want);

/* prefault.c: a thread's task pool populated by the publisher at its next
 * wake once the thread has opened an operation, instead of faulting in page
 * by page on NCCL's thread. */
void nt_prefault_pass(void); /* publisher thread only */

/* publisher.c */
int nt_publisher_start(void);
void nt_publisher_stop(void);
bool nt_publisher_abandoned(void); /* left behind by finalize and still running */
void nt_publisher_flush(void);

/* collect.c: read every slot into a snapshot (publisher thread only). */
void nt_collect(nt_snapshot *s, uint64_t now_ns);

#endif

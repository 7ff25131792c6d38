/* A Coll or P2p operation (a task) and what its children do to it: a
 * record that the enqueuing thread opens, proxy and profiler threads
 * attach their ProxyOps and KernelCh to, and the publisher retires. ops.c
 * implements it, retire.c ends it. */
#ifndef NCCLTOP_PLUGIN_TASK_H
#define NCCLTOP_PLUGIN_TASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct nt_thread;
struct nt_context;
struct nt_ev;

/* A Coll or P2p operation, from its start (enqueue) until the publisher
 * retires it. Its identity is written by the enqueuing thread before `st`
 * turns LIVE (release); children on proxy threads take and drop references
 * in `st`. It is done when it was stopped (enqueued), had children, and
 * none is open; the publisher then waits one quiet sweep (a late child can
 * reopen it) before it retires it into the statistics and frees the slot.
 *
 * `st` also counts the children that came (and of them the KernelCh), so
 * that a child's start is one atomic operation on a line the enqueuing
 * thread wrote, and its stop one more: each such operation costs a proxy
 * thread tens of nanoseconds (bench_replay on the recordings: with 4 to 6
 * of them per child, a count and an atomic maximum apart, the plugin took
 * 1.025x the time it takes with 2). The lifecycle tests read NT_TS_STATE
 * only. */
#define NT_TS_REFS     0xFFFFull
#define NT_TS_STOPPED  (1ull << 16)
#define NT_TS_LIVE     (1ull << 17)
#define NT_TS_RETIRING (1ull << 18)
#define NT_TS_STATE    (NT_TS_REFS | NT_TS_STOPPED | NT_TS_LIVE | NT_TS_RETIRING)
#define NT_TS_CHILD    (1ull << 20) /* children that came: bits 20..41 */
#define NT_TS_KCHILD   (1ull << 42) /* of them KernelCh: bits 42..63 */
#define NT_TS_COUNT    0x3FFFFFull  /* each count's width, where it stops */
static inline uint32_t nt_ts_children(uint64_t st) {
  return (uint32_t)((st / NT_TS_CHILD) & NT_TS_COUNT);
}
static inline uint32_t nt_ts_kernel_children(uint64_t st) {
  return (uint32_t)(st / NT_TS_KCHILD);
}
struct nt_task {
  uint8_t kind; /* NT_K_TASK */
  uint8_t op_kind, func, algo, proto, dtype, phase, nchannels;
  const void *self; /* see nt_handle_kind */
  uint8_t nwarps;
  uint8_t sym, variant;                /* NCCL 2.31 symmetric kernel, its variant id (0 none) */
  uint8_t expect_kernel, expect_proxy; /* which children the mask lets come */
  uint8_t quiet;                       /* publisher only: sweeps seen unchanged */
  _Atomic uint64_t st;
  _Atomic uint8_t untimed; /* a child was reclaimed, not stopped: no duration */
  /* A Broadcast counted from its CollApi that a Coll turned out to report
   * (api_ops.c): retired without a trace. */
  _Atomic uint8_t superseded;
  /* A child NCCL never stops (P2: CollNet, CE-memcpy ops): its completion
   * is not reported, so neither is a duration (unless kernelch gives one).
   * To be wired to the oplog's NT_OPF_UNREPORTED flag (proto 1.2). */
  _Atomic uint8_t unreported;
  uint8_t kwait, seen_kch; /* publisher only: sweeps waiting for KernelCh */
  /* Publisher only: sweeps its finalized communicator has left it with
   * children NCCL will never stop (an abort), and whether it was retired
   * with them still attached (retire.c `orphaned`). */
  uint8_t orphan_wait, orphan;
  struct nt_context *ctx;
  int32_t root_peer;
  uint64_t seq, count, bytes, enqueue_ns;
  /* The latest stop of its ProxyOps and of its KernelCh. Each has one
   * writer, so a store, not an atomic maximum: a communicator's ProxyOps all
   * start and stop on its proxy thread (P1), its KernelCh on that thread up
   * to 2.30 and on the profiler thread from 2.31 (K1). nt_task_last_stop. */
  _Atomic uint64_t last_op_stop_ns, last_kernel_stop_ns;
  /* When its execution began: its first ProxyStep's start, else its first
   * ProxyOp's (proxystep masked off); 0 until then (nt_task_began). One
   * writer: the proxy thread (P1). */
  _Atomic uint64_t first_step_ns, first_op_ns;
  /* The group it was started in (its thread's group_serial, 0 none), and
   * whether it is a Send or Recv with itself (a local copy in the group's
   * kernel: NCCL gives it no child at all, so it completes with the
   * group's other operations, retire.c). */
  uint32_t group;
  uint16_t thread; /* its thread's slot: the group is that thread's */
  uint8_t self_p2p;
  /* A child began (nt_run: running, else queued) and when a child last
   * progressed: what tells work the GPU has not reached from stuck work. */
  _Atomic uint8_t begun;
  _Atomic uint64_t last_progress_ns;
  _Atomic uint64_t gpu_ns; /* the longest kernel channel (GPU time); one writer too */
  /* KernelPhase GPU time of its channels (v7): sync (initial + final) and
   * compute, summed over channels. */
  _Atomic uint64_t sync_ns, compute_ns;
  uint64_t seen_stop_ns; /* publisher only */
};

/* A task of `ev` (Coll or P2p shaped), of function `func` (the caller has
 * looked its name up already), in t's pool, LIVE, not counted as launched;
 * it waits for the children `mask` lets come (0: none). NULL when the pool
 * is full. */
struct nt_task *nt_task_open(struct nt_thread *t, struct nt_context *c, const struct nt_ev *ev,
                             int func, uint64_t now, int mask);
/* A child of `parent`, a ProxyOp or (kernel) a KernelCh: a reference, or
 * NULL when parent is not a live operation of ours (a late child is
 * counted). */
struct nt_task *nt_task_attach(struct nt_thread *t, void *parent, bool kernel);
/* The child's end at `now`: untimed, it was reclaimed, not stopped;
 * gpu_ns: a kernel channel's GPU time (0 for a ProxyOp). */
void nt_task_detach(struct nt_task *k, uint64_t now, bool untimed, bool kernel, uint64_t gpu_ns);
/* When its last child stopped, of either kind (0: none did). */
static inline uint64_t nt_task_last_stop(const struct nt_task *k) {
  uint64_t op = atomic_load_explicit(&k->last_op_stop_ns, memory_order_relaxed);
  uint64_t kernel = atomic_load_explicit(&k->last_kernel_stop_ns, memory_order_relaxed);
  return op > kernel ? op : kernel;
}
/* A child began at now: its first step (step) or its ProxyOp. Once per
 * child, on the proxy thread. */
void nt_task_began(struct nt_task *k, uint64_t now, bool step);

#endif

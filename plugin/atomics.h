/* The plugin's concurrency primitives, shared by every file of it: branch
 * hints, single-writer counters and the seqlock fences (the publisher reads
 * what NCCL's threads write, never with a lock). */
#ifndef NCCLTOP_PLUGIN_ATOMICS_H
#define NCCLTOP_PLUGIN_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

#define NT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define NT_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Out of line: a rarer path kept from crowding the hot one's registers. */
#define NT_COLD __attribute__((noinline))

/* Single-writer counters: a relaxed load and store (a plain mov on x86),
 * never a locked read-modify-write; readers use NT_GET. */
typedef _Atomic uint64_t nt_counter;
#define NT_GET(x)    atomic_load_explicit(&(x), memory_order_relaxed)
#define NT_SET(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define NT_ADD(x, v) NT_SET(x, NT_GET(x) + (v))

/* Seqlock fences. ThreadSanitizer does not model fences, so under it the
 * same ordering comes from read-modify-writes on the sequence (costlier,
 * test builds only). */
#ifdef __SANITIZE_THREAD__
#define NT_SEQ_WRITE_BEGIN(seq, s) atomic_fetch_add_explicit(&(seq), 1, memory_order_acquire)
#define NT_SEQ_READ_RECHECK(seq)   atomic_fetch_add_explicit(&(seq), 0, memory_order_release)
#else
#define NT_SEQ_WRITE_BEGIN(seq, s)                                                                 \
  (atomic_store_explicit(&(seq), (s) + 1, memory_order_relaxed),                                   \
   atomic_thread_fence(memory_order_release))
#define NT_SEQ_READ_RECHECK(seq)                                                                   \
  (atomic_thread_fence(memory_order_acquire), atomic_load_explicit(&(seq), memory_order_relaxed))
#endif

#endif

/* A thread's task pool, faulted in by the publisher rather than by NCCL's
 * thread.
 *
 * The thread slots are mapped without backing (state.c), and task slots
 * are taken round robin: a thread that enqueues operations writes every
 * page of its task pool (about 170) in its first 4096 operations, and each
 * first write is a page fault on NCCL's thread, 3 to 8 us on a virtual
 * machine, in the middle of a Coll or P2p start (bench_replay on the
 * recordings: about a third of what the plugin cost beyond the clock-only
 * plugin was calls over 1.2 us, most of them these faults).
 *
 * So once a thread has opened an operation (tasks_opened moved), the
 * publisher, at its next wake (within POLL_CAP_MS), has the kernel populate
 * that pool (MADV_POPULATE_WRITE, Linux 5.14). That writes no byte, so the
 * owner may use the pool meanwhile. Only the task pool: the op and
 * kernel-event pools are reused from a short list of freed slots (recycle.h),
 * so most of their pages are never written; their round-robin sweep reads
 * those as the kernel's shared zero page, which stays in the cache, where
 * populated pages would be one cache miss each (bench_replay --by-kind:
 * ProxyOp starts about 30 ticks slower). A thread that never enqueues holds no task pages. Where
 * the kernel refuses, the pool faults in as it is touched, as before, and the log says so once.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static bool refused; /* publisher only: the kernel cannot populate */

/* The pages [p, p + n) cover, populated; false when the kernel cannot. */
static bool populate(const void *p, size_t n) {
  long size = sysconf(_SC_PAGESIZE);
  uintptr_t page = size > 0 ? (uintptr_t)size : 4096;
  uintptr_t from = (uintptr_t)p & ~(page - 1);
  uintptr_t to = ((uintptr_t)p + n + page - 1) & ~(page - 1);
  if (madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0) return true;
  /* ENOMEM and the like: the pages fault in when touched, as they would
   * have; this pool is not tried again. EINVAL: a kernel before 5.14. */
  if (errno != EINVAL) return true;
  nt_log(NT_NCCL_LOG_INFO,
         "the kernel cannot populate pages ahead (MADV_POPULATE_WRITE): NCCL's threads fault in "
         "nccltop's task pools as they first use them");
  return false;
}

void nt_prefault_pass(void) {
  if (refused) return;
  uint32_t used = atomic_load_explicit(&nt_g.nthreads_used, memory_order_acquire);
  for (uint32_t i = 0; i < used && i < NT_MAX_THREADS; i++) {
    struct nt_thread *t = &nt_g.threads[i];
    if (t->tasks_faulted || !atomic_load_explicit(&t->tasks_opened, memory_order_relaxed)) continue;
    t->tasks_faulted = 1;
    if (!populate(t->tasks, sizeof t->tasks)) {
      refused = true;
      return;
    }
  }
}

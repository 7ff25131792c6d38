/* The plugin's clock: CLOCK_MONOTONIC (a vDSO read, no syscall), or the
 * simulator's virtual clock when one is installed. */
#include <time.h>

#include "internal.h"
#include "nccltop_plugin.h"

static uint64_t (*_Atomic sim_clock)(void);

uint64_t nt_clock_ns(void) {
  uint64_t (*fn)(void) = atomic_load_explicit(&sim_clock, memory_order_relaxed);
  if (NT_UNLIKELY(fn != NULL)) return fn();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NT_EXPORT void nccltop_sim_set_clock(uint64_t (*clock_ns)(void)) {
  atomic_store_explicit(&sim_clock, clock_ns, memory_order_relaxed);
}

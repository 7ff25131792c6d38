/* The plugin's clock: CLOCK_MONOTONIC (a vDSO read, no syscall). The
 * test-only build (-DNT_TEST_HOOKS, never installed) also exports
 * nccltop_sim_set_clock, through which the deterministic simulator and the
 * tests install a virtual clock; the production plugin exports no test
 * hook. */
#include <time.h>

#include "internal.h"
#include "nccltop_plugin.h"

#ifdef NT_TEST_HOOKS
static uint64_t (*_Atomic sim_clock)(void);

NT_EXPORT void nccltop_sim_set_clock(uint64_t (*clock_ns)(void)) {
  atomic_store_explicit(&sim_clock, clock_ns, memory_order_relaxed);
}
#endif

uint64_t nt_clock_ns(void) {
#ifdef NT_TEST_HOOKS
  uint64_t (*fn)(void) = atomic_load_explicit(&sim_clock, memory_order_relaxed);
  if (NT_UNLIKELY(fn != NULL)) return fn();
#endif
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

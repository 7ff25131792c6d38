/* Functions applications call (dlsym / ctypes): the live event mask and the
 * simulator's flush. The phase tag is in phase.c. */
#include "chain.h"
#include "internal.h"
#include "nccltop_plugin.h"

NT_EXPORT int nccltop_set_mask(int mask) {
  _Atomic int *p = atomic_load(&nt_g.mask_ptr);
  if (!p || atomic_load(&nt_g.inert)) return -1;
  /* As at init: on NCCL 2.31 (v7), kernelch brings its phases along (NCCL
   * applies its own KernelPhase -> KernelCh rule only after an init). */
  if (atomic_load(&nt_g.abi) >= 7 && (mask & NT_EV_KERNEL_CH)) mask |= NT_EV_KERNEL_PHASE;
  int old = atomic_exchange(p, mask);
  nt_chain_mask_sync(); /* chained: NCCL's mask is the union (chain.c) */
  return old;
}

NT_EXPORT void nccltop_flush(void) {
  nt_publisher_flush();
}

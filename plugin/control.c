/* Functions applications call (dlsym / ctypes): the live event mask and the
 * simulator's flush. The phase tag is in phase.c. */
#include "internal.h"
#include "nccltop_plugin.h"

NT_EXPORT int nccltop_set_mask(int mask) {
  _Atomic int *p = atomic_load(&nt_g.mask_ptr);
  if (!p || atomic_load(&nt_g.inert)) return -1;
  return atomic_exchange(p, mask);
}

NT_EXPORT void nccltop_flush(void) {
  nt_publisher_flush();
}

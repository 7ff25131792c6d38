/* Functions applications call (dlsym / ctypes): phase tags, the live event
 * mask, and the simulator's flush. */
#include <string.h>

#include "internal.h"
#include "nccltop_plugin.h"

/* The phase tag is written by the application and read by the event path;
 * a seqlock keeps a reader from seeing half of a new tag. */
static _Atomic uint32_t tag_seq;
static char tag_buf[32];

NT_EXPORT void nccltop_tag(const char *tag) {
  if (atomic_load(&nt_g.inert)) return;
  uint32_t s = atomic_load(&tag_seq);
  /* Writers are application threads and rare: take the odd sequence by CAS. */
  while ((s & 1) || !atomic_compare_exchange_weak(&tag_seq, &s, s + 1)) s = atomic_load(&tag_seq);
  size_t n = tag ? strnlen(tag, sizeof tag_buf - 1) : 0;
  for (size_t i = 0; i < sizeof tag_buf; i++)
    __atomic_store_n(&tag_buf[i], i < n ? tag[i] : '\0', __ATOMIC_RELAXED);
  atomic_store(&tag_seq, s + 2);
}

NT_EXPORT int nccltop_set_mask(int mask) {
  _Atomic int *p = atomic_load(&nt_g.mask_ptr);
  if (!p || atomic_load(&nt_g.inert)) return -1;
  return atomic_exchange(p, mask);
}

NT_EXPORT void nccltop_flush(void) {
  nt_publisher_flush();
}

/* A per-thread pool's freed slots, in the order they were freed, so that a
 * new event takes a slot that is still in the CPU's cache.
 *
 * A pool handed out round robin walks all of its slots (512 ops, about
 * 300 KiB per thread) before it comes back to one: every ProxyOp and every
 * KernelCh start touched lines the cache had long lost (callgrind on the
 * recordings: most of the plugin's cache misses). Taking the slot freed
 * longest ago, once more than `quarantine` others wait behind it, keeps a
 * pool's working set at what is in flight plus the quarantine, and still
 * keeps a slot idle for `quarantine` frees: a handle NCCL uses after its
 * stop (K3) meets its own stale face, not a new event, until the slot has
 * been reused as many times as it has faces.
 *
 * Owner only: a slot is put back only by the thread whose pool holds it,
 * and only that thread takes one; no atomics. A full ring drops the slot,
 * which the pool's round-robin probe still finds. The probe (while no more
 * than `quarantine` slots wait) may take a slot that is in the ring: each
 * entry keeps the face the slot was freed with, and an entry whose slot
 * has moved on since is passed over, so a slot comes back only through
 * its latest free.
 */
#ifndef NCCLTOP_PLUGIN_RECYCLE_H
#define NCCLTOP_PLUGIN_RECYCLE_H

#include <stdint.h>

#define NT_RECYCLE_SIZE 128 /* a power of two, above every quarantine */

struct nt_recycle {
  uint32_t head, tail; /* put at head, taken at tail */
  struct nt_recycled {
    uint16_t slot;
    uint8_t face; /* the slot's face when it was freed */
  } entry[NT_RECYCLE_SIZE];
};

static inline void nt_recycle_put(struct nt_recycle *r, uint32_t slot, uint8_t face) {
  if (r->head - r->tail < NT_RECYCLE_SIZE)
    r->entry[r->head++ % NT_RECYCLE_SIZE] = (struct nt_recycled){(uint16_t)slot, face};
}

/* The entry freed longest ago, once more than `quarantine` wait; NULL
 * else. The caller takes its slot only if it is free and still on the
 * entry's face (not taken by the probe since). */
static inline const struct nt_recycled *nt_recycle_take(struct nt_recycle *r, uint32_t quarantine) {
  if (r->head - r->tail <= quarantine) return NULL;
  return &r->entry[r->tail++ % NT_RECYCLE_SIZE];
}

/* The slot the next take would return, if one waits (a hint: no state change). */
static inline int nt_recycle_peek(const struct nt_recycle *r, uint32_t quarantine) {
  if (r->head - r->tail <= quarantine) return -1;
  return r->entry[r->tail % NT_RECYCLE_SIZE].slot;
}

#endif

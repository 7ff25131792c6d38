/* Kernel variants: NCCL 2.31 runs a collective on registered symmetric
 * windows with a symmetric kernel and names it in the Coll descriptor
 * (coll.kernelVariant, "AllReduce_AGxLL_R"); nccltop counts such
 * operations per variant.
 *
 * Names are interned on the event path with no lock, no allocation and no
 * system call, the way phase.c interns userTags: an id is reserved with an
 * atomic increment (never beyond NT_MAX_VARIANTS), its slot filled, then
 * marked ready with release; the publisher reads the ready slots. NCCL
 * hands out pointers into its own constant table, so a slot is found by
 * pointer first and by name only when the pointer is new (two threads
 * meeting a new name at once may both intern it: both ids then carry the
 * same name, and the viewer adds them up by name). */
#include <string.h>

#include "internal.h"

static char names[NT_MAX_VARIANTS + 1][NT_MAX_VARIANT + 1];
static const char *_Atomic ptrs[NT_MAX_VARIANTS + 1];
static _Atomic uint8_t ready[NT_MAX_VARIANTS + 1];
static _Atomic uint32_t reserved; /* ids 1..reserved are taken */
static _Atomic int warned_full;

static uint32_t taken(void) {
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  return have < NT_MAX_VARIANTS ? have : NT_MAX_VARIANTS;
}

static uint8_t find(const char *name, size_t n) {
  uint32_t have = taken();
  for (uint32_t i = 1; i <= have; i++)
    if (atomic_load_explicit(&ready[i], memory_order_acquire) &&
        atomic_load_explicit(&ptrs[i], memory_order_relaxed) == name)
      return (uint8_t)i;
  for (uint32_t i = 1; i <= have; i++)
    if (atomic_load_explicit(&ready[i], memory_order_acquire) && strncmp(names[i], name, n) == 0 &&
        names[i][n] == '\0')
      return (uint8_t)i;
  return 0;
}

uint8_t nt_variant_of(const char *name) {
  if (!name) return 0;
  /* NCCL's own string; a longer one is cut (the wire's limit). */
  size_t n = strnlen(name, NT_MAX_VARIANT);
  if (n == 0) return 0;
  uint8_t id = find(name, n);
  if (id) return id;
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  do {
    if (have >= NT_MAX_VARIANTS) {
      /* Logged once by the publisher, not here on the event path. */
      int none = 0;
      atomic_compare_exchange_strong_explicit(&warned_full, &none, 1, memory_order_relaxed,
                                              memory_order_relaxed);
      return 0;
    }
  } while (!atomic_compare_exchange_weak_explicit(&reserved, &have, have + 1, memory_order_relaxed,
                                                  memory_order_relaxed));
  id = (uint8_t)(have + 1);
  memcpy(names[id], name, n);
  names[id][n] = '\0';
  atomic_store_explicit(&ptrs[id], name, memory_order_relaxed);
  atomic_store_explicit(&ready[id], 1, memory_order_release);
  return id;
}

uint32_t nt_variant_rows(nt_variant_row *rows, uint32_t cap) {
  uint32_t have = taken(), n = 0;
  for (uint32_t i = 1; i <= have && n < cap; i++) {
    if (!atomic_load_explicit(&ready[i], memory_order_acquire)) continue; /* next time */
    rows[n].id = (uint8_t)i;
    memcpy(rows[n].name, names[i], sizeof rows[n].name);
    n++;
  }
  int full = 1;
  if (atomic_compare_exchange_strong_explicit(&warned_full, &full, 2, memory_order_relaxed,
                                              memory_order_relaxed))
    nt_log(NT_NCCL_LOG_WARN, "more than %d kernel variants; later ones are not attributed",
           NT_MAX_VARIANTS);
  return n;
}

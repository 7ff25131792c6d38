/* Heap allocations counted per thread, for the plugin benches: malloc and
 * friends are defined here (one bench binary includes this once), so the
 * plugins' calls land in our counters before going on to libc's. Only a
 * thread with `counting` set counts, so a plugin's first call on a thread
 * (TLS, slot) can happen in an uncounted warm-up. */
#ifndef NCCLTOP_BENCH_ALLOC_COUNT_H
#define NCCLTOP_BENCH_ALLOC_COUNT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static _Thread_local volatile bool counting;
static _Atomic uint64_t allocations;

#define EXPORT __attribute__((visibility("default")))
static void counted(void) {
  if (counting) atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}
EXPORT void *malloc(size_t n) {
  counted();
  return __libc_malloc(n);
}
EXPORT void *calloc(size_t a, size_t b) {
  counted();
  return __libc_calloc(a, b);
}
EXPORT void *realloc(void *p, size_t n) {
  counted();
  return __libc_realloc(p, n);
}
EXPORT void *memalign(size_t align, size_t n) {
  counted();
  return __libc_memalign(align, n);
}
EXPORT void *aligned_alloc(size_t align, size_t n) {
  counted();
  return __libc_memalign(align, n);
}
EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  counted();
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
EXPORT void free(void *p) {
  __libc_free(p);
}

/* The counters see allocations made through another library's malloc call
 * (strdup inside libc): the proof that interposition reaches the plugin. */
static bool counting_works(void) {
  atomic_store(&allocations, 0);
  counting = true;
  char *volatile copy = strdup("x");
  counting = false;
  free(copy);
  return copy && atomic_load(&allocations) == 1;
}

#endif

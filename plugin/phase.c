/* Phases: the application names what it is doing (nccltop_tag("forward"))
 * and every operation enqueued from then on is attributed to that phase;
 * from NCCL 2.31 (ABI v7) an operation the user tagged through NCCL
 * (a non-zero userTag) is attributed to that tag instead, as phase
 * "tag:<number>".
 *
 * Names are append-only. An id is reserved with an atomic increment (never
 * beyond NT_MAX_PHASES), its slot filled, then marked ready with release:
 * the publisher reads the ready slots without a lock. nccltop_tag's writers
 * (application threads) serialise on a mutex among themselves; a userTag is
 * interned on the event path with no lock, no allocation and no system
 * call: a scan of at most NT_MAX_PHASES ready slots (two threads meeting a
 * new tag at once may both intern it; both ids then carry the same name).
 *
 * Scope: per thread, with the process as the fallback. An operation is in
 * the phase its enqueuing thread last set; an operation enqueued by a
 * thread that never called nccltop_tag is in the phase last set by any
 * thread. Why both: a training loop that drives several communicators from
 * several threads (one per communicator, as the simulator's demo does) must
 * not have one thread's tag label the other's operations, while NCCL also
 * enqueues from threads the application never tags: PyTorch DDP's and
 * FSDP's gradient collectives run on the autograd engine's thread, a CUDA
 * graph's replayed plan on a CUDA host-callback thread, a non-blocking
 * communicator's group on NCCL's own thread; those follow the loop's tag.
 * Megatron-style TP, DP and PP communicators driven from one thread share
 * that thread's tag, which is what the loop means. Not per communicator:
 * the application (Python) does not hold NCCL's communicator handles, and
 * NCCL 2.31's per-call userTag already names one call. Cost on the event
 * path: one initial-exec TLS byte read, as for nt_self. */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "nccltop_plugin.h"

enum { SLOT_EMPTY = 0, SLOT_NAME, SLOT_USER_TAG };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char names[NT_MAX_PHASES + 1][NT_MAX_PHASE + 1];
static _Atomic uint64_t tags[NT_MAX_PHASES + 1]; /* SLOT_USER_TAG: the tag */
static _Atomic uint8_t ready[NT_MAX_PHASES + 1]; /* SLOT_*, set with release */
static _Atomic uint32_t reserved;                /* ids 1..reserved are taken */
static _Atomic uint8_t current;                  /* the phase any thread set last */
static _Atomic int warned_full;
/* The calling thread's phase + 1; 0 while it has never called nccltop_tag
 * (then `current` applies). Only its own thread reads or writes it. */
static __thread uint8_t thread_phase NT_TLS_FAST;

uint8_t nt_phase_now(void) {
  uint8_t mine = thread_phase;
  return mine ? (uint8_t)(mine - 1) : atomic_load_explicit(&current, memory_order_relaxed);
}

uint8_t nt_phase_process(void) {
  return atomic_load_explicit(&current, memory_order_relaxed);
}

static void set_phase(uint8_t id) {
  thread_phase = (uint8_t)(id + 1);
  atomic_store(&current, id);
}

/* The next free id, 0 when all are taken (logged once). */
static uint8_t reserve(void) {
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  while (have < NT_MAX_PHASES) {
    if (atomic_compare_exchange_weak_explicit(&reserved, &have, have + 1, memory_order_relaxed,
                                              memory_order_relaxed))
      return (uint8_t)(have + 1);
  }
  return 0;
}

static void warn_full(void) {
  if (atomic_exchange_explicit(&warned_full, 1, memory_order_relaxed)) return;
  nt_log(NT_NCCL_LOG_WARN, "more than %d phase names; later ones are not attributed",
         NT_MAX_PHASES);
}

NT_EXPORT void nccltop_tag(const char *tag) {
  if (atomic_load(&nt_g.inert)) return;
  size_t n = tag ? strnlen(tag, NT_MAX_PHASE) : 0; /* longer names are cut */
  if (n == 0) {
    set_phase(0);
    return;
  }
  uint8_t id = 0;
  if (pthread_mutex_lock(&lock) != 0) return;
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  for (uint32_t i = 1; i <= have && !id; i++)
    if (atomic_load_explicit(&ready[i], memory_order_acquire) == SLOT_NAME &&
        strncmp(names[i], tag, n) == 0 && names[i][n] == '\0')
      id = (uint8_t)i;
  if (!id && (id = reserve()) != 0) {
    memcpy(names[id], tag, n);
    names[id][n] = '\0';
    atomic_store_explicit(&ready[id], SLOT_NAME, memory_order_release);
  } else if (!id) {
    warn_full();
  }
  pthread_mutex_unlock(&lock);
  set_phase(id);
}

/* "tag:" and the tag in decimal (at most 24 bytes, within NT_MAX_PHASE). */
static void tag_name(char *out, uint64_t tag) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = (char)('0' + tag % 10);
    tag /= 10;
  } while (tag);
  memcpy(out, "tag:", 4);
  for (int i = 0; i < n; i++) out[4 + i] = digits[n - 1 - i];
  out[4 + n] = '\0';
}
_Static_assert(NT_MAX_PHASE >= 4 + 20, "a tag's name fits a phase name");

uint8_t nt_phase_of_tag(uint64_t tag) {
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  for (uint32_t i = 1; i <= have && i <= NT_MAX_PHASES; i++)
    if (atomic_load_explicit(&ready[i], memory_order_acquire) == SLOT_USER_TAG &&
        atomic_load_explicit(&tags[i], memory_order_relaxed) == tag)
      return (uint8_t)i;
  uint8_t id = reserve();
  if (!id) return 0; /* full: no log here, on the event path (nccltop_tag logs it) */
  tag_name(names[id], tag);
  atomic_store_explicit(&tags[id], tag, memory_order_relaxed);
  atomic_store_explicit(&ready[id], SLOT_USER_TAG, memory_order_release);
  return id;
}

uint32_t nt_phase_rows(nt_phase_row *rows, uint32_t cap) {
  uint32_t have = atomic_load_explicit(&reserved, memory_order_relaxed);
  uint32_t n = 0;
  for (uint32_t i = 1; i <= have && i <= NT_MAX_PHASES && n < cap; i++) {
    uint8_t kind = atomic_load_explicit(&ready[i], memory_order_acquire);
    if (kind == SLOT_EMPTY) continue; /* reserved, not filled yet: next time */
    rows[n].id = (uint8_t)i;
    rows[n].source = kind == SLOT_USER_TAG ? NT_PHASE_USER_TAG : NT_PHASE_NCCLTOP_TAG;
    memcpy(rows[n].name, names[i], sizeof rows[n].name);
    n++;
  }
  return n;
}

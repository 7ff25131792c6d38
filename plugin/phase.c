/* Phases: the application names what it is doing (nccltop_tag("forward"))
 * and every operation enqueued from then on is attributed to that phase.
 *
 * Names are append-only: a writer (an application thread, under the
 * mutex) fills the next slot and then publishes the count with release, so
 * the publisher reads names without ever taking the lock, and the event
 * path reads only the current id. */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "nccltop_plugin.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char names[NT_MAX_PHASES + 1][NT_MAX_PHASE + 1];
static _Atomic uint32_t nnames; /* ids 1..nnames are in use */
static _Atomic uint8_t current;
static bool warned_full;

uint8_t nt_phase_now(void) {
  return atomic_load_explicit(&current, memory_order_relaxed);
}

NT_EXPORT void nccltop_tag(const char *tag) {
  if (atomic_load(&nt_g.inert)) return;
  size_t n = tag ? strnlen(tag, NT_MAX_PHASE) : 0; /* longer names are cut */
  if (n == 0) {
    atomic_store(&current, 0);
    return;
  }
  uint8_t id = 0;
  if (pthread_mutex_lock(&lock) != 0) return;
  uint32_t have = atomic_load_explicit(&nnames, memory_order_relaxed);
  for (uint32_t i = 1; i <= have && !id; i++)
    if (strncmp(names[i], tag, n) == 0 && names[i][n] == '\0') id = (uint8_t)i;
  if (!id && have < NT_MAX_PHASES) {
    id = (uint8_t)(have + 1);
    memcpy(names[id], tag, n);
    names[id][n] = '\0';
    atomic_store_explicit(&nnames, have + 1, memory_order_release);
  } else if (!id && !warned_full) {
    warned_full = true;
    nt_log(NT_NCCL_LOG_WARN, "more than %d phase names; later ones are not attributed",
           NT_MAX_PHASES);
  }
  pthread_mutex_unlock(&lock);
  atomic_store(&current, id);
}

uint32_t nt_phase_rows(nt_phase_row *rows, uint32_t cap) {
  uint32_t have = atomic_load_explicit(&nnames, memory_order_acquire);
  uint32_t n = 0;
  for (uint32_t i = 1; i <= have && n < cap; i++, n++) {
    rows[n].id = (uint8_t)i;
    memcpy(rows[n].name, names[i], sizeof rows[n].name);
  }
  return n;
}

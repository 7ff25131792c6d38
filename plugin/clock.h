/* The event path's clock (clock.c): CLOCK_MONOTONIC nanoseconds, read
 * from the CPU's invariant counter where it can be trusted, converted with
 * a calibration the publisher keeps fresh. Inline: nearly every event
 * reads it. */
#ifndef NCCLTOP_PLUGIN_CLOCK_H
#define NCCLTOP_PLUGIN_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "atomics.h"

enum { NT_CLOCK_MONOTONIC = 0, NT_CLOCK_TICKS = 1 };
/* NCCLTOP_CLOCK (config.c): auto (default), tsc, monotonic. */
enum { NT_CLOCK_CHOICE_AUTO = 0, NT_CLOCK_CHOICE_TSC, NT_CLOCK_CHOICE_MONOTONIC };
/* The counter's time may stray this far from CLOCK_MONOTONIC before the
 * plugin gives it up. */
#define NT_CLOCK_TRUST_NS 5000000ll
/* ns = base_ns + ((ticks - base_ticks) * mult) >> 32 for ticks up to
 * limit, ticks before base_ticks counting as base_ticks; past limit the
 * record has ended and its successor is read. Each calibration starts where
 * the one before it stops (limit), so times never go back. */
struct nt_clock_cal {
  _Atomic uint32_t gen; /* odd while the publisher writes it */
  nt_counter base_ticks, base_ns, mult, limit;
};
struct nt_clock {
  _Atomic int source;   /* NT_CLOCK_*; MONOTONIC until nt_clock_init says otherwise */
  _Atomic uint32_t cur; /* the record readers use */
  /* Bumped (release) after each new calibration and when the source
   * changes: a thread's copy of an older epoch is read anew. Starts at 1:
   * a zeroed copy is never current. */
  _Atomic uint32_t epoch;
  struct nt_clock_cal cal[2];
} __attribute__((aligned(64)));
extern struct nt_clock nt_clk;
/* A thread's own copy of the current calibration (the event path's: in
 * its thread slot, beside what the call writes anyway). Checking one
 * shared word for a new epoch is cheaper than reading the shared record
 * under its seqlock at every call. epoch 0: none. */
struct nt_clock_copy {
  uint32_t epoch;
  uint64_t base_ticks, base_ns, mult;
};
#if defined(__x86_64__)
#define NT_HAVE_TICKS 1
#define NT_TICKS_NAME "tsc"
static inline uint64_t nt_ticks(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}
#elif defined(__aarch64__)
#define NT_HAVE_TICKS 1
#define NT_TICKS_NAME "cntvct"
static inline uint64_t nt_ticks(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
#else
#define NT_HAVE_TICKS 0
#define NT_TICKS_NAME "none"
static inline uint64_t nt_ticks(void) {
  return 0;
}
#endif
uint64_t nt_clock_mono_ns(void); /* clock_gettime(CLOCK_MONOTONIC) */
/* The counter's time through the shared record, starting with record
 * `first` (the one `cur` named when the caller looked); the tries after a
 * failed one look at `cur` again. */
static inline uint64_t nt_clock_ticks_from(uint32_t first) {
  /* A reader never waits on the writer for long: a writer preempted (or
   * stuck) mid-update must not stall NCCL's threads; after a few tries
   * the call reads CLOCK_MONOTONIC instead (the same time scale). */
  for (int tries = 0; tries < 64; tries++) {
    uint32_t cur = tries ? atomic_load_explicit(&nt_clk.cur, memory_order_acquire) : first;
    struct nt_clock_cal *c = &nt_clk.cal[cur & 1]; /* not const: under TSan the recheck is an RMW */
    uint32_t gen = atomic_load_explicit(&c->gen, memory_order_acquire);
    uint64_t ticks = nt_ticks();
    uint64_t bt = NT_GET(c->base_ticks), bn = NT_GET(c->base_ns), m = NT_GET(c->mult);
    uint64_t lim = NT_GET(c->limit);
    if (NT_UNLIKELY((gen & 1) || NT_SEQ_READ_RECHECK(c->gen) != gen)) continue;
    /* Past the end of a record that ended: its successor was made current
     * before the end was set (clock.c publish), so read that one. Never
     * stop at the end: a reader that took the record just before a
     * publisher that stalled mid-publish moved on would read the time the
     * publisher chose as the handover, which can be long past. */
    if (NT_UNLIKELY(ticks > lim)) continue;
    uint64_t d = ticks > bt ? ticks - bt : 0;
    return bn + (uint64_t)(((unsigned __int128)d * m) >> 32);
  }
  return nt_clock_mono_ns();
}
static inline uint64_t nt_clock_ticks_or_mono(void) {
  if (NT_LIKELY(atomic_load_explicit(&nt_clk.source, memory_order_relaxed) == NT_CLOCK_TICKS))
    return nt_clock_ticks_from(atomic_load_explicit(&nt_clk.cur, memory_order_acquire));
  return nt_clock_mono_ns();
}
#ifdef NT_TEST_HOOKS
extern uint64_t (*_Atomic nt_sim_clock)(void); /* nccltop_sim_set_clock's */
#endif
static inline uint64_t nt_clock_ns(void) {
#ifdef NT_TEST_HOOKS
  uint64_t (*fn)(void) = atomic_load_explicit(&nt_sim_clock, memory_order_relaxed);
  if (NT_UNLIKELY(fn != NULL)) return fn();
#endif
  return nt_clock_ticks_or_mono();
}
/* The cold half of nt_clock_ns_copy: copies the current calibration into
 * k (or marks k none while the source is CLOCK_MONOTONIC) and reads the
 * time at `ticks`. */
uint64_t nt_clock_refresh(struct nt_clock_copy *k, uint64_t ticks);
/* The time at `ticks` when nt_clock_copy_try could not tell it: the test
 * build's simulated clock, else nt_clock_refresh. */
uint64_t nt_clock_ns_slow(struct nt_clock_copy *k, uint64_t ticks);
/* The fast half of nt_clock_ns_copy, for the event path's own split: true
 * with *v the time now; false with *v the counter's reading, to be read
 * through nt_clock_ns_slow (in a tail-called cold path, so the hot one
 * makes no call). The counter is read first: a calibration stays right up
 * to where its successor takes over, 20 us after the publisher begins to
 * publish it (clock.c HANDOVER_NS) and long after the new epoch is
 * visible, so a reading taken before the epoch check may use the copy it
 * checks (as a reader of the shared record may, until the record's limit
 * is set). */
static inline bool nt_clock_copy_try(const struct nt_clock_copy *k, uint64_t *v) {
  uint64_t ticks = nt_ticks();
  *v = ticks;
#ifdef NT_TEST_HOOKS
  if (NT_UNLIKELY(atomic_load_explicit(&nt_sim_clock, memory_order_relaxed) != NULL)) return false;
#endif
  if (NT_UNLIKELY(atomic_load_explicit(&nt_clk.epoch, memory_order_acquire) != k->epoch))
    return false;
  uint64_t d = ticks > k->base_ticks ? ticks - k->base_ticks : 0;
  *v = k->base_ns + (uint64_t)(((unsigned __int128)d * k->mult) >> 32);
  return true;
}
/* nt_clock_ns through a thread's own copy of the calibration. */
static inline uint64_t nt_clock_ns_copy(struct nt_clock_copy *k) {
  uint64_t v;
  return nt_clock_copy_try(k, &v) ? v : nt_clock_ns_slow(k, v);
}
/* At the first init (NCCL's thread): picks the source, first calibration,
 * one log line saying which. */
void nt_clock_init(int choice);
/* Publisher: recalibrates when due (force: now). */
void nt_clock_tick(uint64_t mono_now, bool force);
const char *nt_clock_name(void); /* "tsc", "cntvct" or "monotonic" */

#endif

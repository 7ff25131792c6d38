/* The plugin's clock: CLOCK_MONOTONIC nanoseconds, read on the event path
 * from the CPU's invariant counter where it can be trusted (x86-64's TSC
 * when CPUID says it runs at a constant rate through sleep states and the
 * kernel keeps its own time with it; aarch64's virtual counter), else with
 * clock_gettime. Every time the plugin records or publishes keeps its
 * meaning either way: the counter is converted with a calibration against
 * CLOCK_MONOTONIC that the publisher thread keeps fresh (nt_clock_tick).
 *
 * Why: a vDSO clock_gettime is a function call that re-reads the kernel's
 * clock data under its own seqlock and fences the counter read; NCCL's
 * proxy thread makes ~200 profiler calls per small collective on the
 * network path, each on the critical path of a step (issue 28).
 *
 * The calibration: ns = base_ns + ((ticks - base_ticks) * mult) >> 32.
 * The publisher writes a new one into the record readers are not using and
 * then flips `cur`; a reader checks the record's generation around its
 * reads, so it never waits on the writer (it retries only if it stalled
 * across two recalibrations). Each new calibration starts where the old
 * one is at that moment (times never jump back) and takes the measured
 * rate, corrected so the offset against CLOCK_MONOTONIC closes over the
 * next period; a counter that drifts further than NT_CLOCK_TRUST_NS from
 * CLOCK_MONOTONIC is given up for CLOCK_MONOTONIC (one warning).
 *
 * The test-only build (-DNT_TEST_HOOKS, never installed) also exports
 * nccltop_sim_set_clock, through which the deterministic simulator and the
 * tests install a virtual clock, and nccltop_test_clock_* (tests/
 * test_clock.c); the production plugin exports no test hook. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "nccltop_plugin.h"

struct nt_clock nt_clk = {.epoch = 1};

#ifdef NT_TEST_HOOKS
uint64_t (*_Atomic nt_sim_clock)(void);

NT_EXPORT void nccltop_sim_set_clock(uint64_t (*clock_ns)(void)) {
  atomic_store_explicit(&nt_sim_clock, clock_ns, memory_order_relaxed);
}
#endif

uint64_t nt_clock_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* How often the publisher recalibrates, and the offset it closes per
 * period at most (a relative rate change of 1/2000). */
#define RECAL_NS     250000000ull
#define SLEW_MAX     0.0005
#define FIRST_GAP_NS 2000000ull /* the first rate: over 2 ms at init */
#define HANDOVER_NS  20000ull

/* The publisher's side (one writer: calib_lock). */
static pthread_mutex_t calib_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint64_t first_ticks, first_ns; /* the first pair: the rate's baseline */
  /* When to recalibrate: peeked at without the lock (the test hook
   * recalibrates from another thread than the publisher's). */
  _Atomic uint64_t next_ns;
  double ns_per_tick; /* the measured rate */
  uint64_t hz;        /* ticks per second, for the log line */
  const char *why;    /* why CLOCK_MONOTONIC, when it is */
} cal;

/* A (ticks, ns) pair read as close together as we can: the tightest of a
 * few tries (a try the scheduler interrupted is wide). */
static void read_pair(uint64_t *ticks, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = nt_ticks(), n = nt_clock_mono_ns(), b = nt_ticks();
    if (b >= a && b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = n;
    }
  }
  if (best == UINT64_MAX) *ticks = nt_ticks(), *ns = nt_clock_mono_ns();
}

static uint64_t convert(const struct nt_clock_cal *c, uint64_t ticks) {
  uint64_t lim = NT_GET(c->limit);
  if (ticks > lim) ticks = lim;
  uint64_t bt = NT_GET(c->base_ticks);
  uint64_t d = ticks > bt ? ticks - bt : 0;
  return NT_GET(c->base_ns) + (uint64_t)(((unsigned __int128)d * NT_GET(c->mult)) >> 32);
}

/* Writes (base_ticks, base_ns, ns_per_tick) into the record not in use,
 * makes it current, and ends the old one at base_ticks, where the new one
 * starts (a reader of the old one past its end reads the new one). */
static void publish(uint64_t base_ticks, uint64_t base_ns, double ns_per_tick) {
  uint32_t cur = atomic_load_explicit(&nt_clk.cur, memory_order_relaxed);
  struct nt_clock_cal *c = &nt_clk.cal[cur ^ 1], *old = &nt_clk.cal[cur];
  uint32_t gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
  NT_SEQ_WRITE_BEGIN(c->gen, gen);
  NT_SET(c->base_ticks, base_ticks);
  NT_SET(c->base_ns, base_ns);
  NT_SET(c->mult, (uint64_t)(ns_per_tick * 4294967296.0 + 0.5));
  NT_SET(c->limit, UINT64_MAX);
  atomic_store_explicit(&c->gen, gen + 2, memory_order_release);
  atomic_store_explicit(&nt_clk.cur, cur ^ 1, memory_order_release);
  /* The new epoch before the old record's end: a thread still on its copy
   * of the old calibration (which has no end) sees the new epoch by the
   * time a reader of the shared old record is held at that end; else one
   * thread reading both ways could see its time go back. */
  atomic_fetch_add_explicit(&nt_clk.epoch, 1, memory_order_release);
  if (atomic_load_explicit(&nt_clk.source, memory_order_relaxed) == NT_CLOCK_TICKS) {
    gen = atomic_load_explicit(&old->gen, memory_order_relaxed);
    NT_SEQ_WRITE_BEGIN(old->gen, gen);
    NT_SET(old->limit, base_ticks);
    atomic_store_explicit(&old->gen, gen + 2, memory_order_release);
  }
}

static void use_monotonic(const char *why) {
  cal.why = why;
  atomic_store_explicit(&nt_clk.source, NT_CLOCK_MONOTONIC, memory_order_release);
  atomic_fetch_add_explicit(&nt_clk.epoch, 1, memory_order_release); /* no copy is current */
}

uint64_t nt_clock_refresh(struct nt_clock_copy *k, uint64_t ticks) {
  for (int tries = 0; tries < 64; tries++) {
    uint32_t epoch = atomic_load_explicit(&nt_clk.epoch, memory_order_acquire);
    if (atomic_load_explicit(&nt_clk.source, memory_order_acquire) != NT_CLOCK_TICKS) break;
    struct nt_clock_cal *c =
        &nt_clk.cal[atomic_load_explicit(&nt_clk.cur, memory_order_acquire) & 1];
    uint32_t gen = atomic_load_explicit(&c->gen, memory_order_acquire);
    uint64_t bt = NT_GET(c->base_ticks), bn = NT_GET(c->base_ns), m = NT_GET(c->mult);
    if ((gen & 1) || NT_SEQ_READ_RECHECK(c->gen) != gen) continue;
    /* Labelled with the epoch read before it: a copy of a newer record
     * than its label is read anew at the next call, never the reverse. */
    k->base_ticks = bt, k->base_ns = bn, k->mult = m;
    k->epoch = epoch;
    uint64_t d = ticks > bt ? ticks - bt : 0;
    return bn + (uint64_t)(((unsigned __int128)d * m) >> 32);
  }
  k->epoch = 0; /* CLOCK_MONOTONIC (or a writer that would not let go): none */
  return nt_clock_mono_ns();
}

uint64_t nt_clock_ns_slow(struct nt_clock_copy *k, uint64_t ticks) {
#ifdef NT_TEST_HOOKS
  uint64_t (*fn)(void) = atomic_load_explicit(&nt_sim_clock, memory_order_relaxed);
  if (fn != NULL) return fn();
#endif
  return nt_clock_refresh(k, ticks);
}

/* Whether this CPU's counter can stand in for CLOCK_MONOTONIC; if not,
 * *why says so. */
static bool counter_trusted(const char **why) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
  if (a < 0x80000007u) {
    *why = "the CPU does not say whether its TSC is invariant";
    return false;
  }
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
  if (!(d & (1u << 8))) {
    *why = "the TSC is not invariant (no constant_tsc/nonstop_tsc)";
    return false;
  }
  /* The kernel checks the TSC across CPUs and watches it against another
   * clock; while it keeps time with it, so may we. */
  char src[32] = "";
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
  if (f) {
    if (!fgets(src, sizeof src, f)) src[0] = '\0';
    fclose(f);
  }
  src[strcspn(src, "\n")] = '\0';
  if (strcmp(src, "tsc") != 0) {
    *why = "the kernel does not keep time with the TSC";
    return false;
  }
  return true;
#elif defined(__aarch64__)
  (void)why;
  return true; /* the generic timer: constant rate, one count for all CPUs */
#else
  *why = "no CPU counter on this architecture";
  return false;
#endif
}

void nt_clock_init(int choice) {
  pthread_mutex_lock(&calib_lock);
  const char *why = NULL;
  bool counter = false;
  if (choice == NT_CLOCK_CHOICE_MONOTONIC)
    why = "NCCLTOP_CLOCK=monotonic";
  else if (counter_trusted(&why))
    counter = true;
  else if (choice == NT_CLOCK_CHOICE_TSC && NT_HAVE_TICKS)
    counter = true, why = NULL; /* asked for: the drift check still guards it */
  if (counter) {
    uint64_t t0, n0, t1, n1;
    read_pair(&t0, &n0);
    struct timespec nap = {0, (long)FIRST_GAP_NS};
    nanosleep(&nap, NULL);
    read_pair(&t1, &n1);
    double rate = t1 > t0 && n1 > n0 ? (double)(n1 - n0) / (double)(t1 - t0) : 0;
    /* 1 MHz .. 100 GHz: anything else is no clock. */
    if (rate < 0.01 || rate > 1000.0) {
      counter = false;
      why = "the counter's rate is implausible";
    } else {
      cal.first_ticks = t0, cal.first_ns = n0;
      cal.ns_per_tick = rate;
      cal.hz = (uint64_t)(1e9 / rate);
      atomic_store_explicit(&cal.next_ns, n1 + RECAL_NS, memory_order_relaxed);
      publish(t1, n1, rate);
      atomic_store_explicit(&nt_clk.source, NT_CLOCK_TICKS, memory_order_release);
    }
  }
  if (!counter) use_monotonic(why);
  if (counter)
    nt_log(NT_NCCL_LOG_INFO, "clock: %s at %.3f GHz, calibrated against CLOCK_MONOTONIC",
           NT_TICKS_NAME, (double)cal.hz / 1e9);
  else
    nt_log(NT_NCCL_LOG_INFO, "clock: CLOCK_MONOTONIC (%s)", why);
  pthread_mutex_unlock(&calib_lock);
}

/* nt_clock_tick; late_ns: the test build's stand-in for a publisher that
 * stalled that long between choosing the handover and publishing. */
static void tick(uint64_t mono_now, bool force, uint64_t late_ns) {
  if (atomic_load_explicit(&nt_clk.source, memory_order_acquire) != NT_CLOCK_TICKS) return;
  if (!force && mono_now < atomic_load_explicit(&cal.next_ns, memory_order_relaxed)) return;
  pthread_mutex_lock(&calib_lock);
  if (atomic_load_explicit(&nt_clk.source, memory_order_acquire) != NT_CLOCK_TICKS) {
    pthread_mutex_unlock(&calib_lock);
    return;
  }
  uint64_t t, n;
  read_pair(&t, &n);
  const struct nt_clock_cal *c =
      &nt_clk.cal[atomic_load_explicit(&nt_clk.cur, memory_order_relaxed)];
  int64_t off = (int64_t)(n - convert(c, t)); /* > 0: the counter's time is behind */
  if (off > NT_CLOCK_TRUST_NS || off < -NT_CLOCK_TRUST_NS) {
    use_monotonic("it drifted from CLOCK_MONOTONIC");
    nt_log(NT_NCCL_LOG_WARN,
           "clock: %s drifted %.3f ms from CLOCK_MONOTONIC; using CLOCK_MONOTONIC from now on",
           NT_TICKS_NAME, (double)off / 1e6);
    pthread_mutex_unlock(&calib_lock);
    return;
  }
  if (t > cal.first_ticks && n > cal.first_ns)
    cal.ns_per_tick = (double)(n - cal.first_ns) / (double)(t - cal.first_ticks);
  /* Close the offset over the next period, never stepping back. */
  double slew = (double)off / (double)RECAL_NS;
  if (slew > SLEW_MAX) slew = SLEW_MAX;
  if (slew < -SLEW_MAX) slew = -SLEW_MAX;
  /* The new calibration takes over a little ahead (HANDOVER_NS), where
   * the current one will be: no reader is past that point yet. */
  uint64_t from = nt_ticks() + (uint64_t)((double)HANDOVER_NS / cal.ns_per_tick);
  from -= (uint64_t)((double)late_ns / cal.ns_per_tick);
  publish(from, convert(c, from), cal.ns_per_tick * (1.0 + slew));
  atomic_store_explicit(&cal.next_ns, n + RECAL_NS, memory_order_relaxed);
  pthread_mutex_unlock(&calib_lock);
}

void nt_clock_tick(uint64_t mono_now, bool force) {
  tick(mono_now, force, 0);
}

const char *nt_clock_name(void) {
  return atomic_load_explicit(&nt_clk.source, memory_order_acquire) == NT_CLOCK_TICKS
             ? NT_TICKS_NAME
             : "monotonic";
}

#ifdef NT_TEST_HOOKS
/* tests/test_clock.c: the event path's clock (the simulator's hook aside),
 * its source, and a recalibration now. */
NT_EXPORT uint64_t nccltop_test_clock_ns(void) {
  return nt_clock_ticks_or_mono();
}
/* The same through a thread's own copy, as the event path reads it. */
NT_EXPORT uint64_t nccltop_test_clock_copy_ns(void) {
  static __thread struct nt_clock_copy copy;
  return nt_clock_ns_copy(&copy);
}
NT_EXPORT const char *nccltop_test_clock_source(void) {
  return nt_clock_name();
}
NT_EXPORT void nccltop_test_clock_recalibrate(void) {
  nt_clock_tick(nt_clock_mono_ns(), true);
}
/* A recalibration whose publisher stalled late_ns after choosing where the
 * new calibration takes over (the old record then ends late_ns back). */
NT_EXPORT void nccltop_test_clock_recalibrate_late(uint64_t late_ns) {
  tick(nt_clock_mono_ns(), true, late_ns);
}
/* The record a reader takes now, and a reading by a reader that took it. */
NT_EXPORT unsigned nccltop_test_clock_record(void) {
  return atomic_load_explicit(&nt_clk.cur, memory_order_acquire);
}
NT_EXPORT uint64_t nccltop_test_clock_ns_from(unsigned record) {
  return nt_clock_ticks_from(record);
}
#endif

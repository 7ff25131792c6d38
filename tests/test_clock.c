/* The plugin's event-path clock (plugin/clock.c) against CLOCK_MONOTONIC:
 * with the CPU counter (NCCLTOP_CLOCK=tsc) every reading lies between the
 * CLOCK_MONOTONIC readings around it (within a generous bound), never goes
 * back on a thread, also while threads hop between CPUs and the publisher
 * (and this test, harder) recalibrates; NCCLTOP_CLOCK=monotonic and an
 * unknown value choose as documented. The bounds are wide (milliseconds)
 * and nothing is timed: a loaded machine only makes the test slower.
 * Each case runs in a child process: the clock is chosen at the first init. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin_harness.h"
#include "testlib.h"

#define BOUND_NS         2000000ull    /* a reading within 2 ms of CLOCK_MONOTONIC's */
#define RUN_NS           1200000000ull /* past several of the publisher's recalibrations */
#define MAX_TEST_THREADS 8

typedef struct {
  uint64_t (*clock_ns)(void);
  uint64_t (*copy_ns)(void); /* the same through a thread's own copy (the event path's) */
  const char *(*source)(void);
  void (*recalibrate)(void);
  /* A recalibration by a publisher that stalled mid-publish; the record a
   * reader takes now, and a reading by a reader that took a given one. */
  void (*recalibrate_late)(uint64_t late_ns);
  unsigned (*record)(void);
  uint64_t (*ns_from)(unsigned record);
  const nt_profiler_v5 *v5;
  void *ctx;
} clk;

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Loads the test build with `choice` as NCCLTOP_CLOCK (NULL: unset) and
 * inits one communicator (the first init picks the clock). */
static int clk_open(clk *c, const char *choice, char *dir, size_t dirlen) {
  snprintf(dir, dirlen, "/tmp/nccltop-clock-XXXXXX");
  if (!mkdtemp(dir) || setenv("NCCLTOP_DIR", dir, 1) != 0) return -1;
  if (choice)
    setenv("NCCLTOP_CLOCK", choice, 1);
  else
    unsetenv("NCCLTOP_CLOCK");
  char path[PATH_MAX];
  ph_plugin_path(path, sizeof path, "tests/libnccl-profiler-nccltop-test.so");
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  c->v5 = dlsym(lib, "ncclProfiler_v5");
  c->clock_ns = (uint64_t(*)(void))dlsym(lib, "nccltop_test_clock_ns");
  c->copy_ns = (uint64_t(*)(void))dlsym(lib, "nccltop_test_clock_copy_ns");
  c->source = (const char *(*)(void))dlsym(lib, "nccltop_test_clock_source");
  c->recalibrate = (void (*)(void))dlsym(lib, "nccltop_test_clock_recalibrate");
  c->recalibrate_late = (void (*)(uint64_t))dlsym(lib, "nccltop_test_clock_recalibrate_late");
  c->record = (unsigned (*)(void))dlsym(lib, "nccltop_test_clock_record");
  c->ns_from = (uint64_t(*)(unsigned))dlsym(lib, "nccltop_test_clock_ns_from");
  if (!c->v5 || !c->clock_ns || !c->copy_ns || !c->source || !c->recalibrate ||
      !c->recalibrate_late || !c->record || !c->ns_from)
    return -1;
  int mask = 0;
  if (c->v5->init(&c->ctx, 0x1234, &mask, "clock", 1, 1, 0, NULL) != NT_NCCL_SUCCESS || !c->ctx)
    return -1;
  return 0;
}

static void clk_close(clk *c, const char *dir) {
  c->v5->finalize(c->ctx);
  rmdir(dir);
}

/* Runs fn in a child; the child's exit status is its verdict. */
static int in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(fn());
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

/* ---- the counter against CLOCK_MONOTONIC ---- */

typedef struct {
  clk *c;
  int index, ncpus;
  uint64_t readings, backwards, outside, cross_behind;
  uint64_t worst_ns;
} reader;

static _Atomic uint64_t latest; /* the highest reading any thread published */

static void *read_loop(void *arg) {
  reader *r = arg;
  uint64_t last = 0, end = mono() + RUN_NS;
  for (uint64_t i = 0;; i++) {
    /* Hop to another CPU now and then: the counters of all CPUs must agree. */
    if (r->ncpus > 1 && i % 4096 == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET((int)((i / 4096 + (uint64_t)r->index) % (uint64_t)r->ncpus), &set);
      (void)sched_setaffinity(0, sizeof set, &set); /* may be refused: then no hop */
    }
    uint64_t seen = atomic_load_explicit(&latest, memory_order_acquire);
    uint64_t m0 = mono();
    /* Half the threads read the shared record (the publisher's way), half
     * through a thread's own copy of it (an NCCL thread's way): each way
     * never goes back on its thread, and the two agree across threads. */
    uint64_t t = r->index & 1 ? r->c->copy_ns() : r->c->clock_ns();
    uint64_t m1 = mono();
    r->readings++;
    if (t < last) r->backwards++;
    if (t + BOUND_NS < m0 || t > m1 + BOUND_NS) {
      r->outside++;
      uint64_t off = t > m1 ? t - m1 : m0 - t;
      if (off > r->worst_ns) r->worst_ns = off;
    }
    /* A reading made after another thread's was published is not earlier
     * than it (beyond the bound). */
    if (t + BOUND_NS < seen) r->cross_behind++;
    last = t;
    uint64_t cur = atomic_load_explicit(&latest, memory_order_relaxed);
    while (cur < t && !atomic_compare_exchange_weak_explicit(&latest, &cur, t, memory_order_release,
                                                             memory_order_relaxed)) {
    }
    if (m1 >= end) break;
  }
  return NULL;
}

static int counter_tracks_monotonic_child(void) {
  clk c;
  char dir[64];
  if (clk_open(&c, "tsc", dir, sizeof dir) != 0) return 10;
  const char *src = c.source();
  if (strcmp(src, "tsc") != 0 && strcmp(src, "cntvct") != 0) {
    fprintf(stderr, "    clock source is %s with NCCLTOP_CLOCK=tsc\n", src);
    return 11;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  int ncpus = n > 0 ? (int)n : 1;
  int nthreads = ncpus < 2 ? 2 : ncpus > MAX_TEST_THREADS ? MAX_TEST_THREADS : ncpus;
  reader r[MAX_TEST_THREADS];
  pthread_t th[MAX_TEST_THREADS];
  for (int i = 0; i < nthreads; i++) {
    r[i] = (reader){.c = &c, .index = i, .ncpus = ncpus};
    if (pthread_create(&th[i], NULL, read_loop, &r[i]) != 0) return 12;
  }
  /* Recalibrations far more often than the publisher's, meanwhile. */
  uint64_t end = mono() + RUN_NS;
  while (mono() < end) {
    c.recalibrate();
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  int rc = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    if (r[i].backwards || r[i].outside || r[i].cross_behind || r[i].readings == 0) {
      fprintf(stderr,
              "    thread %d: %llu readings, %llu went back, %llu beyond %llu ns of "
              "CLOCK_MONOTONIC (worst %llu ns), %llu behind another thread's\n",
              i, (unsigned long long)r[i].readings, (unsigned long long)r[i].backwards,
              (unsigned long long)r[i].outside, (unsigned long long)BOUND_NS,
              (unsigned long long)r[i].worst_ns, (unsigned long long)r[i].cross_behind);
      rc = 13;
    }
  }
  /* Still the counter: it never strayed far enough to be given up. */
  if (strcmp(c.source(), src) != 0) rc = 14;
  clk_close(&c, dir);
  return rc;
}

/* A reader that took the shared record just before a recalibration whose
 * publisher stalled (3 ms between choosing where the new calibration takes
 * over and publishing it: the old record then ends 3 ms back) reads the new
 * record, not the old one's end: its time is now, and no later reading is
 * behind it. */
#define LATE_NS 3000000ull
static int a_reader_of_an_ended_record_reads_its_successor_child(void) {
  clk c;
  char dir[64];
  if (clk_open(&c, "tsc", dir, sizeof dir) != 0) return 10;
  int rc = 0;
  for (int i = 0; i < 20 && !rc; i++) {
    /* Each handover after the start of the calibration before it, as the
     * publisher's 250 ms apart are. */
    struct timespec gap = {0, 2 * (long)LATE_NS};
    nanosleep(&gap, NULL);
    unsigned took = c.record();
    c.recalibrate_late(LATE_NS);
    uint64_t m0 = mono(), t = c.ns_from(took), m1 = mono(), later = c.clock_ns();
    if (t + LATE_NS / 3 < m0 || t > m1 + LATE_NS / 3) {
      fprintf(stderr, "    try %d: %lld ns from CLOCK_MONOTONIC's\n", i,
              t < m0 ? -(long long)(m0 - t) : (long long)(t - m1));
      rc = 13;
    }
    if (later < t) rc = 14;
  }
  clk_close(&c, dir);
  return rc;
}

static bool have_counter(void) {
#if defined(__x86_64__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

static void counter_tracks_monotonic(void) {
  CHECK_EQ_U64(in_child(counter_tracks_monotonic_child), 0);
}

static void a_reader_of_an_ended_record_reads_its_successor(void) {
  CHECK_EQ_U64(in_child(a_reader_of_an_ended_record_reads_its_successor_child), 0);
}

/* ---- the choice ---- */

static int monotonic_when_asked_child(void) {
  clk c;
  char dir[64];
  if (clk_open(&c, "monotonic", dir, sizeof dir) != 0) return 10;
  if (strcmp(c.source(), "monotonic") != 0) return 11;
  uint64_t m0 = mono(), t = c.clock_ns(), u = c.copy_ns(), m1 = mono();
  if (t < m0 || t > m1 || u < t || u > m1) return 12; /* it is CLOCK_MONOTONIC itself */
  c.recalibrate();                                    /* nothing to recalibrate: still monotonic */
  if (strcmp(c.source(), "monotonic") != 0) return 13;
  clk_close(&c, dir);
  return 0;
}

static void monotonic_when_asked(void) {
  CHECK_EQ_U64(in_child(monotonic_when_asked_child), 0);
}

/* An unknown value is auto: whichever the machine allows, a known name. */
static int unknown_is_auto_child(void) {
  clk c;
  char dir[64];
  if (clk_open(&c, "rdtsc-please", dir, sizeof dir) != 0) return 10;
  const char *src = c.source();
  if (strcmp(src, "monotonic") != 0 && strcmp(src, "tsc") != 0 && strcmp(src, "cntvct") != 0)
    return 11;
  uint64_t m0 = mono(), t = c.clock_ns(), m1 = mono();
  if (t + BOUND_NS < m0 || t > m1 + BOUND_NS) return 12;
  clk_close(&c, dir);
  return 0;
}

static void unknown_is_auto(void) {
  CHECK_EQ_U64(in_child(unknown_is_auto_child), 0);
}

int main(void) {
  if (have_counter()) {
    TEST_RUN(counter_tracks_monotonic);
    TEST_RUN(a_reader_of_an_ended_record_reads_its_successor);
  } else {
    TEST_SKIP(counter_tracks_monotonic, "no CPU counter on this architecture");
    TEST_SKIP(a_reader_of_an_ended_record_reads_its_successor,
              "no CPU counter on this architecture");
  }
  TEST_RUN(monotonic_when_asked);
  TEST_RUN(unknown_is_auto);
  return TEST_DONE();
}

/* `make bench`: the plugin's cost per ABI call on a replayed NCCL event
 * stream, against a plugin that only reads the clock, in the same process,
 * at 1, 2 and 4 threads, repetitions interleaved; and heap allocations per
 * call after init (malloc and friends are defined here, so the plugins'
 * calls land in our counters).
 *
 * usage: bench_plugin PLUGIN BASELINE_PLUGIN [collectives per repetition]
 *
 * Each replaying thread has its own communicator context (v5 ABI) and stays
 * alive for all repetitions, as NCCL's threads do. ns/call is per thread:
 * that thread's wall time over its calls, averaged over the threads; the CPU
 * ratio uses thread CPU time instead, which stays meaningful when threads
 * outnumber cores. The plugin's publisher thread runs meanwhile (nobody
 * subscribes).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../plugin/nccl_profiler_abi.h"

#include "alloc_count.h"

/* ---- the replayed stream ---- */
#define CHANNELS    8
#define STEPS       16
#define MAX_THREADS 4
#define REPS        5
/* Issue 28: no more per call than a plugin that only reads the clock. */
#define BUDGET_RATIO 1.0

typedef struct {
  const char *name;
  const nt_profiler_v5 *p;
  int mask;
  void *ctx[MAX_THREADS];
} plugin;

typedef struct {
  const plugin *pl; /* this repetition's plugin, set by main between barriers */
  int index, collectives;
  bool count_allocations, quit;
  uint64_t calls, errors;
  double wall_s, cpu_s;
  pthread_barrier_t *go, *done;
} worker;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *start(worker *w, nt_descr_v5 *d) {
  void *h = NULL;
  w->errors += w->pl->p->startEvent(w->pl->ctx[w->index], &h, d) != NT_NCCL_SUCCESS;
  w->calls++;
  return h;
}
static void record_args(worker *w, void *h, int state, nt_state_args_v5 *a) {
  if (h) w->errors += w->pl->p->recordEventState(h, state, a) != NT_NCCL_SUCCESS;
  w->calls += h != NULL;
}
static void record(worker *w, void *h, int state, size_t size) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = size}};
  record_args(w, h, state, &a);
}
static void stop(worker *w, void *h) {
  if (h) w->errors += w->pl->p->stopEvent(h) != NT_NCCL_SUCCESS;
  w->calls += h != NULL;
}

/* A ProxyCtrl burst: start, one or two states, stop. */
static void ctrl(worker *w, int s1, int s2, int appended) {
  nt_descr_v5 d = {.type = NT_EV_PROXY_CTRL, .rank = w->index};
  void *h = start(w, &d);
  nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = appended}};
  record_args(w, h, s1, &a);
  if (s2) record_args(w, h, s2, &a);
  stop(w, h);
}

/* One collective as NCCL 2.28 reports it over a network transport: the Coll
 * (stopped at enqueue), the proxy thread appending its ops, a send and a
 * receive op per channel whose steps go through every wait state, the
 * kernel channels, then the proxy thread going idle, sleeping and woken. */
static void collective(worker *w, uint64_t seq) {
  nt_descr_v5 d = {.type = NT_EV_COLL, .rank = w->index};
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = CHANNELS;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *coll = start(w, &d);
  stop(w, coll);
  ctrl(w, NT_ST_CTRL_APPEND, NT_ST_CTRL_APPEND_END, 2 * CHANNELS);
  ctrl(w, NT_ST_CTRL_ACTIVE, 0, 0);
  void *ops[CHANNELS][2];
  pid_t pid = getpid();
  for (int c = 0; c < CHANNELS; c++) {
    for (int dir = 0; dir < 2; dir++) {
      nt_descr_v5 o = {.type = NT_EV_PROXY_OP, .parentObj = coll, .rank = w->index};
      o.proxyOp.pid = pid;
      o.proxyOp.channelId = (uint8_t)c;
      o.proxyOp.peer = (w->index + 1) % MAX_THREADS;
      o.proxyOp.nSteps = STEPS;
      o.proxyOp.chunkSize = 1 << 19;
      o.proxyOp.isSend = dir == 0;
      ops[c][dir] = start(w, &o);
      record(w, ops[c][dir], NT_ST_OP_IN_PROGRESS, 0);
    }
  }
  for (int s = 0; s < STEPS; s++) {
    for (int c = 0; c < CHANNELS; c++) {
      nt_descr_v5 st = {.type = NT_EV_PROXY_STEP, .parentObj = ops[c][0], .rank = w->index};
      st.proxyStep.step = s;
      void *h = start(w, &st);
      record(w, h, NT_ST_STEP_SEND_GPU_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_PEER_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_PEER_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_WAIT, 1 << 19);
      stop(w, h);
      st.parentObj = ops[c][1];
      h = start(w, &st);
      record(w, h, NT_ST_STEP_RECV_WAIT, 0);
      record(w, h, NT_ST_STEP_RECV_FLUSH_WAIT, 1 << 19);
      record(w, h, NT_ST_STEP_RECV_GPU_WAIT, 1 << 19);
      stop(w, h);
    }
  }
  for (int c = 0; c < CHANNELS; c++) stop(w, ops[c][0]), stop(w, ops[c][1]);
  for (int c = 0; c < CHANNELS; c++) {
    nt_descr_v5 k = {.type = NT_EV_KERNEL_CH, .parentObj = coll, .rank = w->index};
    k.kernelCh.channelId = (uint8_t)c;
    k.kernelCh.pTimer = 1000000 + seq * 10000;
    void *h = start(w, &k);
    nt_state_args_v5 a = {.kernelCh = {.pTimer = 1005000 + seq * 10000}};
    record_args(w, h, NT_ST_KERNEL_CH_STOP, &a);
    stop(w, h);
  }
  ctrl(w, NT_ST_CTRL_IDLE, 0, 0);
  ctrl(w, NT_ST_CTRL_SLEEP, NT_ST_CTRL_WAKEUP, 0);
}

/* A long-lived replaying thread: each round, between the two barriers,
 * replays `collectives` collectives into this round's plugin. */
static void *worker_main(void *arg) {
  worker *w = arg;
  for (;;) {
    pthread_barrier_wait(w->go);
    if (w->quit) return NULL;
    collective(w, 0); /* uncounted: the plugin's first call on this thread */
    w->calls = w->errors = 0;
    counting = w->count_allocations;
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 1; i <= w->collectives; i++) collective(w, (uint64_t)i);
    w->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    w->wall_s = clock_s(CLOCK_MONOTONIC) - t0;
    counting = false;
    pthread_barrier_wait(w->done);
  }
}

typedef struct {
  int n;
  worker w[MAX_THREADS];
  pthread_t t[MAX_THREADS];
  pthread_barrier_t go, done;
} crew;

static int crew_start(crew *c, int n) {
  c->n = n;
  if (pthread_barrier_init(&c->go, NULL, (unsigned)n + 1) ||
      pthread_barrier_init(&c->done, NULL, (unsigned)n + 1))
    return -1;
  for (int i = 0; i < n; i++) {
    c->w[i] = (worker){.index = i, .go = &c->go, .done = &c->done};
    if (pthread_create(&c->t[i], NULL, worker_main, &c->w[i]) != 0) {
      fprintf(stderr, "bench: pthread_create failed\n");
      exit(1); /* the threads already started wait on a barrier forever */
    }
  }
  return 0;
}

static void crew_stop(crew *c) {
  for (int i = 0; i < c->n; i++) c->w[i].quit = true;
  pthread_barrier_wait(&c->go);
  for (int i = 0; i < c->n; i++) pthread_join(c->t[i], NULL);
  pthread_barrier_destroy(&c->go);
  pthread_barrier_destroy(&c->done);
}

typedef struct {
  double wall_ns, cpu_ns; /* per call, mean over threads */
  uint64_t calls, errors;
} round_result;

static round_result crew_round(crew *c, const plugin *pl, int collectives, bool count) {
  for (int i = 0; i < c->n; i++) {
    c->w[i].pl = pl;
    c->w[i].collectives = collectives;
    c->w[i].count_allocations = count;
  }
  pthread_barrier_wait(&c->go);
  pthread_barrier_wait(&c->done);
  round_result r = {0};
  for (int i = 0; i < c->n; i++) {
    const worker *w = &c->w[i];
    double calls = w->calls ? (double)w->calls : 1;
    r.wall_ns += w->wall_s * 1e9 / calls / c->n;
    r.cpu_ns += w->cpu_s * 1e9 / calls / c->n;
    r.calls += w->calls;
    r.errors += w->errors;
  }
  return r;
}

static int load(plugin *pl, const char *name, const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench: %s\n", dlerror());
    return -1;
  }
  pl->name = name;
  pl->p = dlsym(lib, "ncclProfiler_v5");
  if (!pl->p) {
    fprintf(stderr, "bench: %s exports no ncclProfiler_v5\n", path);
    return -1;
  }
  for (int i = 0; i < MAX_THREADS; i++) {
    pl->mask = 0;
    if (pl->p->init(&pl->ctx[i], 0xbe0c000000000000ull + (uint64_t)i, &pl->mask, "bench", 2,
                    MAX_THREADS, i, NULL) != NT_NCCL_SUCCESS) {
      fprintf(stderr, "bench: %s: init failed\n", path);
      return -1;
    }
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return v[n / 2];
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: bench_plugin PLUGIN BASELINE_PLUGIN [collectives]\n");
    return 2;
  }
  int collectives = argc > 3 ? atoi(argv[3]) : 2000;
  if (collectives < 4 || collectives > 1000000) {
    fprintf(stderr, "bench: collectives must be 4..1000000\n");
    return 2;
  }
  char dir[] = "/tmp/nccltop-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("bench: mkdtemp");
    return 1;
  }
  setenv("NCCLTOP_DIR", dir, 1);
  setenv("NCCLTOP_EVENTS", "all", 1);
  bool alloc_ok = counting_works();
  plugin ours, base;
  if (load(&ours, "plugin", argv[1]) || load(&base, "baseline", argv[2])) return 1;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  worker probe = {.pl = &base}; /* counts the calls of one collective */
  collective(&probe, 0);
  printf("plugin:   %s\nbaseline: %s\n", argv[1], argv[2]);
  printf("%d collectives per thread per repetition, each %d channels x %d steps send+recv "
         "(%llu calls);\nmedian of %d interleaved repetitions; ns per ABI call on each thread; "
         "%ld CPUs online\n",
         collectives, CHANNELS, STEPS, (unsigned long long)probe.calls, REPS, cpus);
  if (!alloc_ok) printf("warning: allocation counting does not see libc's own malloc calls\n");
  printf("\n| threads | plugin ns/call | baseline ns/call | ratio | CPU-time ratio | "
         "allocations per call | verdict |\n|---|---|---|---|---|---|---|\n");
  for (int threads = 1; threads <= MAX_THREADS; threads *= 2) {
    crew c;
    if (crew_start(&c, threads) != 0) return 1;
    crew_round(&c, &ours, collectives / 4, false); /* warm-up: rows, rings, caches */
    crew_round(&c, &base, collectives / 4, false);
    double a[REPS], b[REPS], ratio[REPS], cpu_ratio[REPS];
    uint64_t calls = 0, errors = 0;
    atomic_store(&allocations, 0);
    for (int r = 0; r < REPS; r++) {
      /* Which plugin goes first alternates: the first slot read slower
       * (caches, the other's leftovers), up to 1.2x for one plugin in both. */
      round_result x, y;
      if (r & 1) {
        y = crew_round(&c, &base, collectives, false);
        x = crew_round(&c, &ours, collectives, true);
      } else {
        x = crew_round(&c, &ours, collectives, true);
        y = crew_round(&c, &base, collectives, false);
      }
      a[r] = x.wall_ns, b[r] = y.wall_ns;
      ratio[r] = x.wall_ns / y.wall_ns, cpu_ratio[r] = x.cpu_ns / y.cpu_ns;
      calls += x.calls, errors += x.errors + y.errors;
    }
    crew_stop(&c);
    uint64_t allocs = atomic_load(&allocations);
    /* With more busy threads than CPUs, wall time measures the scheduler. */
    bool crowded = threads + 1 > cpus;
    double judged = median(crowded ? cpu_ratio : ratio, REPS);
    bool ok = judged <= BUDGET_RATIO && allocs == 0 && errors == 0;
    char verdict[160];
    int len = snprintf(verdict, sizeof verdict, "%s (%s ratio %.2f %s %.1f",
                       ok ? "ok" : "OVER BUDGET", crowded ? "CPU-time" : "wall", judged,
                       judged <= BUDGET_RATIO ? "<=" : ">", BUDGET_RATIO);
    if (allocs)
      len += snprintf(verdict + len, sizeof verdict - (size_t)len, ", %llu allocations",
                      (unsigned long long)allocs);
    else
      len += snprintf(verdict + len, sizeof verdict - (size_t)len, ", 0 allocations");
    if (errors)
      len += snprintf(verdict + len, sizeof verdict - (size_t)len, ", %llu calls failed",
                      (unsigned long long)errors);
    snprintf(verdict + len, sizeof verdict - (size_t)len, ")");
    printf("| %d | %.1f | %.1f | %.2fx | %.2fx | %.3g (%llu / %llu) | %s |\n", threads,
           median(a, REPS), median(b, REPS), median(ratio, REPS), median(cpu_ratio, REPS),
           (double)allocs / (double)(calls ? calls : 1), (unsigned long long)allocs,
           (unsigned long long)calls, verdict);
  }
  for (int i = 0; i < MAX_THREADS; i++) {
    if (ours.p->finalize(ours.ctx[i]) != NT_NCCL_SUCCESS ||
        base.p->finalize(base.ctx[i]) != NT_NCCL_SUCCESS)
      fprintf(stderr, "bench: finalize failed\n");
  }
  if (rmdir(dir) != 0) fprintf(stderr, "bench: %s left non-empty\n", dir);
  return 0;
}

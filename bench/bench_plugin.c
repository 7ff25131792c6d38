/* `make bench`: the plugin's cost per ABI call on a replayed NCCL event
 * stream, against a plugin that only reads the clock, in the same run, at 1,
 * 2 and 4 threads; and heap allocations per event after init (malloc is
 * interposed here, so the plugin's calls land in our counters).
 *
 * usage: bench_plugin NCCLTOP_PLUGIN CLOCKONLY_PLUGIN [collectives]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../plugin/nccl_profiler_abi.h"

/* ---- allocation counting ---- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
/* Per thread: only the replaying threads' allocations count, after their
 * first collective (which creates their TLS and slot, once per thread). */
static _Thread_local int counting;
static _Atomic uint64_t allocations;

#define EXPORT __attribute__((visibility("default")))
EXPORT void *malloc(size_t n) {
  if (counting) atomic_fetch_add(&allocations, 1);
  return __libc_malloc(n);
}
EXPORT void *calloc(size_t a, size_t b) {
  if (counting) atomic_fetch_add(&allocations, 1);
  return __libc_calloc(a, b);
}
EXPORT void *realloc(void *p, size_t n) {
  if (counting) atomic_fetch_add(&allocations, 1);
  return __libc_realloc(p, n);
}
EXPORT void free(void *p) {
  __libc_free(p);
}

/* ---- the replayed stream ---- */
#define CHANNELS 8
#define STEPS    16

typedef struct {
  const nt_profiler_v5 *p;
  void *ctx;
  int collectives;
  uint64_t calls;
  double seconds;
  int count_allocations;
} worker;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *start(worker *w, nt_descr_v5 *d) {
  void *h = NULL;
  w->p->startEvent(w->ctx, &h, d);
  w->calls++;
  return h;
}
static void record(worker *w, void *h, int state, size_t size) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = size}};
  if (h) w->p->recordEventState(h, state, &a);
  w->calls++;
}
static void stop(worker *w, void *h) {
  if (h) w->p->stopEvent(h);
  w->calls++;
}

static void ctrl(worker *w, int s1, int s2) {
  nt_descr_v5 d = {.type = NT_EV_PROXY_CTRL};
  void *h = start(w, &d);
  record(w, h, s1, 0);
  if (s2) record(w, h, s2, 2 * CHANNELS);
  stop(w, h);
}

/* One collective as NCCL reports it on a network transport. */
static void collective(worker *w, uint64_t seq) {
  nt_descr_v5 d = {.type = NT_EV_COLL};
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *coll = start(w, &d);
  stop(w, coll);
  ctrl(w, NT_ST_CTRL_APPEND, NT_ST_CTRL_APPEND_END);
  ctrl(w, NT_ST_CTRL_ACTIVE, 0);
  void *ops[CHANNELS][2];
  for (int c = 0; c < CHANNELS; c++) {
    for (int dir = 0; dir < 2; dir++) {
      nt_descr_v5 o = {.type = NT_EV_PROXY_OP, .parentObj = coll};
      o.proxyOp.pid = getpid();
      o.proxyOp.channelId = (uint8_t)c;
      o.proxyOp.peer = 1;
      o.proxyOp.nSteps = STEPS;
      o.proxyOp.isSend = dir == 0;
      ops[c][dir] = start(w, &o);
      record(w, ops[c][dir], NT_ST_OP_IN_PROGRESS, 0);
    }
  }
  for (int s = 0; s < STEPS; s++) {
    for (int c = 0; c < CHANNELS; c++) {
      nt_descr_v5 st = {.type = NT_EV_PROXY_STEP, .parentObj = ops[c][0]};
      st.proxyStep.step = s;
      void *h = start(w, &st);
      record(w, h, NT_ST_STEP_SEND_GPU_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_PEER_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_PEER_WAIT, 0);
      record(w, h, NT_ST_STEP_SEND_WAIT, 65536);
      stop(w, h);
      st.parentObj = ops[c][1];
      h = start(w, &st);
      record(w, h, NT_ST_STEP_RECV_WAIT, 0);
      record(w, h, NT_ST_STEP_RECV_FLUSH_WAIT, 65536);
      record(w, h, NT_ST_STEP_RECV_GPU_WAIT, 65536);
      stop(w, h);
    }
  }
  for (int c = 0; c < CHANNELS; c++) stop(w, ops[c][0]), stop(w, ops[c][1]);
  for (int c = 0; c < CHANNELS; c++) {
    nt_descr_v5 k = {.type = NT_EV_KERNEL_CH, .parentObj = coll};
    k.kernelCh.channelId = (uint8_t)c;
    k.kernelCh.pTimer = 1000 + seq;
    void *h = start(w, &k);
    nt_state_args_v5 a = {.kernelCh = {.pTimer = 5000 + seq}};
    if (h) w->p->recordEventState(h, NT_ST_KERNEL_CH_STOP, &a);
    w->calls++;
    stop(w, h);
  }
  ctrl(w, NT_ST_CTRL_IDLE, 0);
  ctrl(w, NT_ST_CTRL_SLEEP, NT_ST_CTRL_WAKEUP);
}

static void *run(void *arg) {
  worker *w = arg;
  collective(w, 0); /* first call on this thread: TLS block and slot */
  w->calls = 0;
  counting = w->count_allocations;
  double t0 = now_s();
  for (int i = 0; i < w->collectives; i++) collective(w, (uint64_t)i);
  w->seconds = now_s() - t0;
  counting = 0;
  return NULL;
}

typedef struct {
  const char *name;
  const nt_profiler_v5 *p;
  int mask;
  void *ctx[4];
} plugin;

static int load(plugin *pl, const char *name, const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench: %s\n", dlerror());
    return -1;
  }
  pl->name = name;
  pl->p = dlsym(lib, "ncclProfiler_v5");
  if (!pl->p) return -1;
  for (int i = 0; i < 4; i++)
    if (pl->p->init(&pl->ctx[i], 0xbe0c0000ull + (uint64_t)i, &pl->mask, "bench", 1, 4, i, NULL))
      return -1;
  return 0;
}

/* ns per call per thread (the mean over threads) for one repetition. */
static double measure(plugin *pl, int threads, int collectives, int count, uint64_t *calls) {
  worker w[4];
  pthread_t t[4];
  for (int i = 0; i < threads; i++) {
    w[i] = (worker){
        .p = pl->p, .ctx = pl->ctx[i], .collectives = collectives, .count_allocations = count};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  double ns = 0;
  *calls = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    ns += w[i].seconds * 1e9 / (double)w[i].calls;
    *calls += w[i].calls;
  }
  return ns / threads;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_plugin NCCLTOP_PLUGIN CLOCKONLY_PLUGIN [collectives]\n");
    return 2;
  }
  int collectives = argc > 3 ? atoi(argv[3]) : 400;
  char dir[] = "/tmp/nccltop-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("NCCLTOP_DIR", dir, 1);
  setenv("NCCLTOP_EVENTS", "all", 1);
  plugin ours, base;
  if (load(&ours, "nccltop", argv[1]) || load(&base, "clock-only", argv[2])) return 1;
  printf("plugin hot path: %d collectives x (%d channels x %d steps, send+recv) per thread,\n"
         "median of 5 interleaved repetitions; ns per ABI call on each thread\n\n",
         collectives, CHANNELS, STEPS);
  printf(
      "| threads | nccltop ns/call | clock-only ns/call | ratio | allocations/event | budget |\n");
  printf("|---|---|---|---|---|---|\n");
  int worst = 0;
  for (int threads = 1; threads <= 4; threads *= 2) {
    double a[5], b[5];
    uint64_t calls = 0, ours_calls = 0;
    measure(&ours, threads, collectives / 4, 0, &calls); /* warm-up: slots, rows */
    measure(&base, threads, collectives / 4, 0, &calls);
    atomic_store(&allocations, 0);
    for (int r = 0; r < 5; r++) {
      a[r] = measure(&ours, threads, collectives, 1, &calls);
      ours_calls += calls;
      b[r] = measure(&base, threads, collectives, 0, &calls);
    }
    qsort(a, 5, sizeof a[0], cmp);
    qsort(b, 5, sizeof b[0], cmp);
    double ratio = a[2] / b[2], per_event = (double)atomic_load(&allocations) / (double)ours_calls;
    bool ok = ratio <= 1.5 && per_event == 0;
    if (!ok) worst = 1;
    printf("| %d | %.1f | %.1f | %.2fx | %.6f | %s |\n", threads, a[2], b[2], ratio, per_event,
           ok ? "ok (<= 1.5x, 0 alloc)" : "OVER BUDGET");
  }
  for (int i = 0; i < 4; i++) ours.p->finalize(ours.ctx[i]), base.p->finalize(base.ctx[i]);
  rmdir(dir);
  printf("\n%s\n", worst ? "verdict: over budget" : "verdict: within budget");
  return 0;
}

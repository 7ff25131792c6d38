/* `make bench`: the plugin's cost per ABI call on the call sequences real
 * NCCL made (the recordings in tests/traces/, read by the trace player's
 * reader, sim/trace_parse.c), against the clock-only plugin, in the same
 * process, repetitions interleaved; heap allocations per call after init.
 *
 * usage: bench_replay [--by-kind] PLUGIN BASELINE_PLUGIN RECORDING_DIR...
 *
 * Each recorded process (a rank) is replayed by one thread per recorded
 * thread (the application's, the proxy thread, a CUDA callback thread),
 * each making its own calls in recorded order as fast as it can. A call
 * that uses a handle another thread starts waits until that start was made
 * (it came first in the recording); the wait is not counted. Rows replay 1,
 * 2 and 4 ranks at once (as many proxy threads), as many as a recording
 * has. Each round replays the ranks LOOPS times; between loops (not
 * counted) each plugin that has nccltop_flush retires its finished operations, as
 * its publisher would while NCCL waits on the GPU.
 *
 * ns/call is each thread's time in its calls (wall, and thread CPU time)
 * summed over the threads, over the calls they made. The calls are the
 * ones NCCL would make to the plugin under test (its activation mask, set
 * by NCCLTOP_EVENTS=all here): both plugins get exactly the same.
 *
 * --by-kind adds, per job, where the time goes by kind of call
 * (call_kinds.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../plugin/nccl_profiler_abi.h"
#include "../sim/trace_model.h"

#include "alloc_count.h"
#include "call_kinds.h"

#define MAX_RANKS 4
/* -DLOOPS=N -DREPS=N: shorter runs (bench/instructions.sh under callgrind). */
#ifndef LOOPS
#define LOOPS 8
#endif
#ifndef REPS
#define REPS 5
#endif

/* ---- a rank's calls, compiled once ---- */

enum { R_START, R_RECORD, R_STOP };
/* Where a start's parent (or a record's or stop's handle) comes from. */
enum { FROM_NULL, FROM_MINE, FROM_OTHER, FROM_RAW };

typedef struct {
  uint8_t verb, from, parent_from, null_args;
  int32_t state;
  uint32_t ev;    /* the event started, recorded or stopped */
  int32_t parent; /* start: the parent's event (from parent_from) */
  int32_t pgroup; /* start: a Coll's or P2p's parent group event, -1 none */
  uint8_t pgroup_from;
  uint32_t type; /* start: the event's type */
  void *ctx[2];  /* start: its context in each plugin (kept here: reading the
                    recorded event would cost a cache miss per call) */
  nt_state_args_v5 args;
  uint8_t kind; /* --by-kind (call_kinds.h) */
} rop;

typedef struct {
  _Atomic uint32_t loop; /* the loop whose start stored h (release) */
  void *h;
} hslot;

struct rank;
typedef struct {
  struct rank *rk;
  rop *ops;
  uint32_t nops;
} rthread;

typedef struct rank {
  const tr_proc *p;
  nt_descr_v5 *descr; /* per event, parents patched at each start */
  int32_t *starter;   /* per event: the thread that starts it, -1 none */
  hslot *h;           /* per event */
  void **ctx[2];      /* per context, per plugin: its context (NULL: declined) */
  rthread *threads;
  uint32_t nthreads;
} rank;

static void *ctx_of(const rank *rk, int plugin, const tr_ref *r) {
  if (r->idx == TR_REF_FOREIGN) return (void *)(uintptr_t)r->raw;
  return r->idx >= 0 ? rk->ctx[plugin][r->idx] : NULL;
}

static uint8_t from_of(const rank *rk, const tr_ref *r, uint32_t me) {
  if (r->idx == TR_REF_FOREIGN) return FROM_RAW;
  if (r->idx < 0 || rk->starter[r->idx] < 0) return FROM_NULL;
  return (uint32_t)rk->starter[r->idx] == me ? FROM_MINE : FROM_OTHER;
}

static nt_nccl_result no_log_init(const nt_profiler_v5 *p, void **ctx, const tr_ctx *x, int *mask) {
  return p->init(ctx, x->hash, mask, x->name, x->nnodes, x->nranks, x->rank, NULL);
}

/* Inits the rank's communicators in both plugins and compiles each thread's
 * calls: those NCCL would make to plugin 0 (its mask). */
static int rank_build(rank *rk, const tr_proc *p, const nt_profiler_v5 *pl[2], int nprocs) {
  memset(rk, 0, sizeof *rk);
  rk->p = p;
  int mask[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    rk->ctx[k] = calloc(p->nctx ? p->nctx : 1, sizeof(void *));
    if (!rk->ctx[k]) return -1;
    for (uint32_t x = 0; x < p->nctx; x++) {
      if (p->ctx[x].fail) continue;
      if (no_log_init(pl[k], &rk->ctx[k][x], &p->ctx[x], &mask[k]) != NT_NCCL_SUCCESS)
        rk->ctx[k][x] = NULL;
    }
  }
  rk->descr = calloc(p->nev ? p->nev : 1, sizeof *rk->descr);
  rk->starter = malloc((p->nev ? p->nev : 1) * sizeof *rk->starter);
  rk->h = calloc(p->nev ? p->nev : 1, sizeof *rk->h);
  rk->threads = calloc(p->nthreads, sizeof *rk->threads);
  void **none = calloc(p->nev ? p->nev : 1, sizeof(void *));
  int32_t *pids = malloc((size_t)nprocs * sizeof *pids);
  if (!rk->descr || !rk->starter || !rk->h || !rk->threads || !none || !pids) return -1;
  for (int i = 0; i < nprocs; i++) pids[i] = (int32_t)getpid();
  tr_player fake = {.p = p, .handles = none, .pids = pids};
  for (uint32_t e = 0; e < p->nev; e++) rk->starter[e] = -1;
  /* Which starts NCCL makes: a context both plugins took, a type the mask
   * wants (ancestors of wanted children included). */
  for (uint32_t k = 0; k < p->ncalls; k++) {
    const tr_call *c = &p->calls[k];
    if (c->verb != TR_START) continue;
    const tr_event *e = &p->ev[c->ref];
    bool ctx_ok = e->ctx.idx == TR_REF_FOREIGN ||
                  (e->ctx.idx >= 0 && rk->ctx[0][e->ctx.idx] && rk->ctx[1][e->ctx.idx]);
    if (ctx_ok && tr_mask_wants(5, mask[0], e->type)) rk->starter[c->ref] = c->thread;
  }
  for (uint32_t t = 0; t < p->nthreads; t++) {
    rthread *th = &rk->threads[t];
    th->rk = rk;
    th->ops = calloc(p->threads[t].ncalls ? p->threads[t].ncalls : 1, sizeof *th->ops);
    if (!th->ops) return -1;
    for (uint32_t i = 0; i < p->threads[t].ncalls; i++) {
      const tr_call *c = &p->calls[p->threads[t].calls[i]];
      if (c->verb != TR_START && c->verb != TR_RECORD && c->verb != TR_STOP) continue;
      const tr_event *e = &p->ev[c->ref];
      if (rk->starter[c->ref] < 0) continue; /* never started: no call */
      rop *o = &th->ops[th->nops++];
      o->ev = (uint32_t)c->ref;
      o->pgroup = -1;
      o->kind = ck_kind(c->verb == TR_START    ? CK_START
                        : c->verb == TR_RECORD ? CK_RECORD
                                               : CK_STOP,
                        e->type, c->state);
      if (c->verb == TR_START) {
        o->verb = R_START;
        o->type = e->type;
        o->ctx[0] = ctx_of(rk, 0, &e->ctx);
        o->ctx[1] = ctx_of(rk, 1, &e->ctx);
        o->parent = e->parent.idx;
        o->parent_from = from_of(rk, &e->parent, t);
        tr_descr_v5(&fake, e, (void *)(uintptr_t)e->parent.raw, &rk->descr[c->ref]);
        if ((e->type == NT_EV_COLL || e->type == NT_EV_P2P) && e->pgroup.idx >= 0) {
          o->pgroup = e->pgroup.idx;
          o->pgroup_from = from_of(rk, &e->pgroup, t);
        }
        continue;
      }
      o->verb = c->verb == TR_RECORD ? R_RECORD : R_STOP;
      o->from = (uint32_t)rk->starter[c->ref] == t ? FROM_MINE : FROM_OTHER;
      o->state = c->state;
      o->null_args = !c->args;
      switch (e->type) { /* as the trace player fills the union */
      case NT_EV_PROXY_CTRL: o->args.proxyCtrl.appendedProxyOps = c->appended; break;
      case NT_EV_KERNEL_CH:
      case NT_EV_KERNEL_PHASE: o->args.kernelCh.pTimer = c->ptimer; break;
      case NT_EV_NET_PLUGIN: break;
      default: o->args.proxyStep.transSize = (size_t)c->size; break;
      }
    }
  }
  free(none);
  free(pids);
  rk->nthreads = p->nthreads;
  return 0;
}

/* ---- replaying ---- */

typedef struct {
  const nt_profiler_v5 *p[2];
  /* Each plugin's nccltop_flush, if it has one: a baseline that is a
   * build of nccltop too retires its operations between loops as well
   * (flushing only plugin 0 read 1.05x-1.2x for a plugin against itself). */
  void (*flush[2])(void);
} plugins;

typedef struct {
  rthread *th;
  int plugin;
  uint32_t loop; /* starts at 1: a zeroed hslot is no loop's */
  bool quit, count_allocations;
  uint64_t calls, errors;
  double wall_ns, cpu_ns;
  const plugins *pl;
  pthread_barrier_t *go, *done, *loop_gate;
  bool flusher;
  ck_table *kinds; /* --by-kind: this worker's, else NULL */
} worker;

static uint64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The handle event ev got in this loop; another thread's start is waited
 * for (uncounted: *waited_wall and *waited_cpu grow). */
static void *handle_of(worker *w, uint32_t ev, uint8_t from, uint64_t *waited_wall,
                       uint64_t *waited_cpu) {
  hslot *s = &w->th->rk->h[ev];
  if (from == FROM_MINE) return s->h;
  if (atomic_load_explicit(&s->loop, memory_order_acquire) != w->loop) {
    uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    while (atomic_load_explicit(&s->loop, memory_order_acquire) != w->loop) sched_yield();
    *waited_wall += now_ns(CLOCK_MONOTONIC) - t0;
    *waited_cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  }
  return s->h;
}

static void *ref_handle(worker *w, int32_t ev, uint8_t from, uint64_t *ww, uint64_t *wc) {
  if (from == FROM_NULL) return NULL;
  return handle_of(w, (uint32_t)ev, from, ww, wc);
}

static void replay_once(worker *w) {
  rthread *th = w->th;
  rank *rk = th->rk;
  const nt_profiler_v5 *p = w->pl->p[w->plugin];
  uint64_t waited_wall = 0, waited_cpu = 0, calls = 0, errors = 0;
  uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  for (uint32_t i = 0; i < th->nops; i++) {
    const rop *o = &th->ops[i];
    if (o->verb == R_START) {
      nt_descr_v5 *d = &rk->descr[o->ev];
      if (o->parent_from != FROM_RAW)
        d->parentObj = ref_handle(w, o->parent, o->parent_from, &waited_wall, &waited_cpu);
      if (o->pgroup >= 0) {
        void *g = ref_handle(w, o->pgroup, o->pgroup_from, &waited_wall, &waited_cpu);
        if (o->type == NT_EV_COLL)
          d->coll.parentGroup = g;
        else
          d->p2p.parentGroup = g;
      }
      /* NCCL fills each descriptor on its stack just before the call, so
       * the plugin reads warm memory: a copy here, for both plugins (read
       * from the table, one cold descriptor per start charged the plugin,
       * which reads it, and not the baseline, which does not). */
      nt_descr_v5 local = *d;
      void *h = NULL;
      uint64_t k0 = w->kinds ? ck_now() : 0;
      errors += p->startEvent(o->ctx[w->plugin], &h, &local) != NT_NCCL_SUCCESS;
      if (w->kinds) ck_add(w->kinds, w->plugin, o->kind, ck_now() - k0);
      calls++;
      rk->h[o->ev].h = h;
      atomic_store_explicit(&rk->h[o->ev].loop, w->loop, memory_order_release);
      continue;
    }
    void *h = handle_of(w, o->ev, o->from, &waited_wall, &waited_cpu);
    if (!h) continue; /* NCCL records and stops no NULL handle */
    nt_state_args_v5 a = o->args;
    uint64_t k0 = w->kinds ? ck_now() : 0;
    if (o->verb == R_RECORD)
      errors += p->recordEventState(h, o->state, o->null_args ? NULL : &a) != NT_NCCL_SUCCESS;
    else
      errors += p->stopEvent(h) != NT_NCCL_SUCCESS;
    if (w->kinds) ck_add(w->kinds, w->plugin, o->kind, ck_now() - k0);
    calls++;
  }
  w->wall_ns += (double)(now_ns(CLOCK_MONOTONIC) - t0 - waited_wall);
  w->cpu_ns += (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 - waited_cpu);
  w->calls += calls;
  w->errors += errors;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  for (;;) {
    pthread_barrier_wait(w->go);
    if (w->quit) return NULL;
    w->calls = w->errors = 0;
    w->wall_ns = w->cpu_ns = 0;
    for (int l = 0; l < LOOPS; l++) {
      /* Everyone is past the last loop: its operations are retired and
       * their handles may be reused. */
      pthread_barrier_wait(w->loop_gate);
      if (w->flusher && w->pl->flush[w->plugin]) w->pl->flush[w->plugin]();
      pthread_barrier_wait(w->loop_gate);
      w->loop++;
      counting = w->count_allocations;
      replay_once(w);
      counting = false;
    }
    pthread_barrier_wait(w->done);
  }
}

typedef struct {
  int n;
  worker *w;
  pthread_t *t;
  pthread_barrier_t go, done, loop_gate;
} crew;

static int crew_start(crew *c, rank *ranks, int nranks, const plugins *pl) {
  c->n = 0;
  for (int r = 0; r < nranks; r++) c->n += (int)ranks[r].nthreads;
  c->w = calloc((size_t)c->n, sizeof *c->w);
  c->t = calloc((size_t)c->n, sizeof *c->t);
  if (!c->w || !c->t || pthread_barrier_init(&c->go, NULL, (unsigned)c->n + 1) ||
      pthread_barrier_init(&c->done, NULL, (unsigned)c->n + 1) ||
      pthread_barrier_init(&c->loop_gate, NULL, (unsigned)c->n))
    return -1;
  int i = 0;
  for (int r = 0; r < nranks; r++)
    for (uint32_t t = 0; t < ranks[r].nthreads; t++, i++)
      c->w[i] = (worker){.th = &ranks[r].threads[t],
                         .pl = pl,
                         .go = &c->go,
                         .done = &c->done,
                         .loop_gate = &c->loop_gate,
                         .flusher = i == 0};
  for (i = 0; i < c->n; i++) {
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
  pthread_barrier_destroy(&c->loop_gate);
  free(c->w);
  free(c->t);
}

typedef struct {
  double wall_ns, cpu_ns; /* per call, over all threads */
  uint64_t calls, errors;
} round_result;

static round_result crew_round(crew *c, int plugin, bool count) {
  for (int i = 0; i < c->n; i++) {
    c->w[i].plugin = plugin;
    c->w[i].count_allocations = count;
  }
  pthread_barrier_wait(&c->go);
  pthread_barrier_wait(&c->done);
  round_result r = {0};
  double wall = 0, cpu = 0;
  for (int i = 0; i < c->n; i++) {
    wall += c->w[i].wall_ns, cpu += c->w[i].cpu_ns;
    r.calls += c->w[i].calls, r.errors += c->w[i].errors;
  }
  double calls = r.calls ? (double)r.calls : 1;
  r.wall_ns = wall / calls, r.cpu_ns = cpu / calls;
  return r;
}

static const nt_profiler_v5 *load(const char *path, void (**flush)(void)) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench: %s\n", dlerror());
    return NULL;
  }
  const nt_profiler_v5 *p = dlsym(lib, "ncclProfiler_v5");
  if (!p) fprintf(stderr, "bench: %s exports no ncclProfiler_v5\n", path);
  if (flush) *(void **)flush = dlsym(lib, "nccltop_flush");
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return v[n / 2];
}

/* Issue 28's budget: no more per call than a plugin that only reads the
 * clock. Each row is judged as bench_plugin judges it: by wall time, or by
 * CPU time where the threads outnumber the CPUs (wall time then measures
 * the scheduler). */
#define BUDGET_RATIO 1.0
static struct {
  int rows, within;
  double worst;
  uint64_t allocs;
} verdict;

/* One recording directory: rows of 1, 2, 4 ranks (as many as it has). */
static int bench_job(const char *dir, const plugins *pl, long cpus, bool by_kind) {
  tr_job job;
  char err[512];
  char *paths[1] = {(char *)dir};
  if (tr_job_load(&job, paths, 1, err, sizeof err) != 0) {
    fprintf(stderr, "bench: %s\n", err);
    return -1;
  }
  for (int i = 0; i < job.nprocs; i++) {
    if (job.procs[i].version != 5) {
      fprintf(stderr, "bench: %s: ABI v%d recordings are not replayed here (v5 only)\n", dir,
              job.procs[i].version);
      tr_job_free(&job);
      return -1;
    }
  }
  const char *base = strrchr(dir, '/');
  base = base && base[1] ? base + 1 : dir;
  printf("\n%s: %d ranks, %llu recorded calls\n", dir, job.nprocs, (unsigned long long)job.calls);
  printf("\n| ranks replayed (threads) | plugin ns/call | baseline ns/call | ratio | CPU-time "
         "ratio | allocations per call |\n|---|---|---|---|---|---|\n");
  int status = 0;
  for (int nr = 1; nr <= MAX_RANKS && nr <= job.nprocs; nr *= 2) {
    rank ranks[MAX_RANKS];
    const nt_profiler_v5 *both[2] = {pl->p[0], pl->p[1]};
    for (int r = 0; r < nr; r++) {
      if (rank_build(&ranks[r], &job.procs[r], both, job.nprocs) != 0) {
        fprintf(stderr, "bench: out of memory\n");
        return -1;
      }
    }
    crew c;
    if (crew_start(&c, ranks, nr, pl) != 0) return -1;
    crew_round(&c, 0, false); /* warm-up: slots, rows, caches */
    crew_round(&c, 1, false);
    ck_table *kinds = by_kind ? calloc((size_t)c.n, sizeof *kinds) : NULL;
    if (by_kind && !kinds) {
      fprintf(stderr, "bench: out of memory\n");
      crew_stop(&c);
      return -1;
    }
    for (int i = 0; kinds && i < c.n; i++) c.w[i].kinds = &kinds[i];
    double a[REPS], b[REPS], ratio[REPS], cpu_ratio[REPS];
    uint64_t calls = 0, errors = 0;
    atomic_store(&allocations, 0);
    for (int r = 0; r < REPS; r++) {
      /* Which plugin goes first alternates: the same plugin in both slots
       * read up to 1.2x in the first one (caches, the other's leftovers). */
      round_result x, y;
      if (r & 1) {
        y = crew_round(&c, 1, false);
        x = crew_round(&c, 0, true);
      } else {
        x = crew_round(&c, 0, true);
        y = crew_round(&c, 1, false);
      }
      a[r] = x.wall_ns, b[r] = y.wall_ns;
      ratio[r] = x.wall_ns / y.wall_ns, cpu_ratio[r] = x.cpu_ns / y.cpu_ns;
      calls += x.calls, errors += x.errors + y.errors;
    }
    int nthreads = c.n;
    crew_stop(&c);
    if (kinds) {
      for (int i = 1; i < nthreads; i++) ck_sum(&kinds[0], &kinds[i]);
      char title[160];
      snprintf(title, sizeof title, "%s, %d rank%s (%d threads)", base, nr, nr > 1 ? "s" : "",
               nthreads);
      ck_print(&kinds[0], title);
      free(kinds);
    }
    uint64_t allocs = atomic_load(&allocations);
    printf("| %s %d (%d) | %.1f | %.1f | %.2fx | %.2fx | %.3g (%llu / %llu)%s |\n", base, nr,
           nthreads, median(a, REPS), median(b, REPS), median(ratio, REPS), median(cpu_ratio, REPS),
           (double)allocs / (double)(calls ? calls : 1), (unsigned long long)allocs,
           (unsigned long long)calls, errors ? ", some calls failed" : "");
    if (errors) status = -1;
    double judged = median(nthreads + 1 > cpus ? cpu_ratio : ratio, REPS);
    verdict.rows++;
    verdict.within += judged <= BUDGET_RATIO;
    if (judged > verdict.worst) verdict.worst = judged;
    verdict.allocs += allocs;
    for (int r = 0; r < nr; r++)
      for (int k = 0; k < 2; k++)
        for (uint32_t x = 0; x < ranks[r].p->nctx; x++)
          if (ranks[r].ctx[k][x] && pl->p[k]->finalize(ranks[r].ctx[k][x]) != NT_NCCL_SUCCESS)
            fprintf(stderr, "bench: finalize failed\n");
  }
  tr_job_free(&job);
  return status;
}

int main(int argc, char **argv) {
  bool by_kind = argc > 1 && strcmp(argv[1], "--by-kind") == 0;
  if (by_kind) argc--, argv++;
  if (argc < 4) {
    fprintf(stderr, "usage: bench_replay [--by-kind] PLUGIN BASELINE_PLUGIN RECORDING_DIR...\n");
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
  plugins pl = {{NULL, NULL}, {NULL, NULL}};
  pl.p[0] = load(argv[1], &pl.flush[0]);
  pl.p[1] = load(argv[2], &pl.flush[1]);
  if (!pl.p[0] || !pl.p[1]) return 1;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  printf("plugin:   %s\nbaseline: %s\n", argv[1], argv[2]);
  printf("real NCCL 2.28.9 call sequences, one thread per recorded thread, %d loops per "
         "repetition;\nmedian of %d interleaved repetitions; ns per ABI call over all threads "
         "(waits for another thread's start not counted); %ld CPUs online\n",
         LOOPS, REPS, cpus);
  if (!alloc_ok) printf("warning: allocation counting does not see libc's own malloc calls\n");
  int status = 0;
  for (int i = 3; i < argc; i++)
    if (bench_job(argv[i], &pl, cpus, by_kind) != 0) status = 1;
  if (verdict.rows)
    printf("\n%s: %d of %d rows at or below %.1fx the clock-only plugin (wall time, CPU time where "
           "threads outnumber CPUs; the worst %.2fx), %llu allocations\n",
           verdict.within == verdict.rows && !verdict.allocs ? "ok" : "OVER BUDGET", verdict.within,
           verdict.rows, BUDGET_RATIO, verdict.worst, (unsigned long long)verdict.allocs);
  if (rmdir(dir) != 0) fprintf(stderr, "bench: %s left non-empty\n", dir);
  return status;
}

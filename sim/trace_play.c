/* Playing a checked job: one forked process per recorded process, one
 * thread per recorded thread. A process plays its calls in one order (the
 * recorded times; trace_parse.c): a thread waits for its turn (the call
 * before it, on whatever thread, is done) and, unless --speed max, for
 * its call's time (origin + (t - t0) / speed, one origin for the whole
 * job), then calls the plugin. So each thread keeps its order and the
 * threads keep the order their times give, at any speed.
 *
 * The plugin's clock: a plugin with the test hook nccltop_sim_set_clock
 * (its test build) reads the recorded times: a call sees its own, any
 * other thread (the publisher) the recorded time the play has reached,
 * kept between the last call played and the next. The production plugin
 * reads CLOCK_MONOTONIC: at --speed 1 that is the recording's timing. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "trace_model.h"

/* What the job's processes share (an anonymous shared mapping). */
typedef struct {
  atomic_int ready, failed, played;
  atomic_int go;      /* 0 wait, 1 play, -1 give up (a process could not start) */
  uint64_t origin_ns; /* CLOCK_MONOTONIC when the job's t0 is played */
  int32_t pids[];     /* per process: its pid (PXN ops name each other) */
} tr_shared;

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- one process of the job (after fork) ---- */

typedef struct {
  pthread_t th;
  pthread_cond_t cv;
  uint32_t idx;
  bool started;
} player_thread;

static struct {
  const tr_job *job;
  const tr_proc *p;
  const nt_trace_config *cfg;
  tr_shared *sh;
  tr_player pl;
  player_thread *threads;
  pthread_mutex_t mu;
  atomic_uint next; /* the call whose turn it is */
  atomic_int stop;  /* SIGINT/SIGTERM */
  atomic_int threads_done;
  atomic_int lingered;
  void (*flush)(void);
} P;

static _Thread_local bool in_call;
static _Thread_local uint64_t call_t;

/* The plugin's clock when it has the test hook (see the top). */
static uint64_t recorded_clock(void) {
  if (in_call) return call_t;
  const tr_call *c = P.p->calls;
  uint32_t n = P.p->ncalls, k = atomic_load_explicit(&P.next, memory_order_acquire);
  uint64_t last = k == 0 ? c[0].t : c[(k < n ? k : n) - 1].t;
  if (P.cfg->speed <= 0 || k >= n) return last;
  uint64_t now = real_ns(), origin = P.sh->origin_ns;
  if (now <= origin) return last;
  double at = (double)P.job->t0 + (double)(now - origin) * P.cfg->speed;
  return at <= (double)last ? last : at >= (double)c[k].t ? c[k].t : (uint64_t)at;
}

/* Waits for call k's turn; false when stopping. */
static bool wait_turn(player_thread *me, uint32_t k) {
  if (atomic_load_explicit(&P.next, memory_order_acquire) == k) return !atomic_load(&P.stop);
  pthread_mutex_lock(&P.mu);
  while (atomic_load_explicit(&P.next, memory_order_acquire) != k && !atomic_load(&P.stop))
    pthread_cond_wait(&me->cv, &P.mu);
  pthread_mutex_unlock(&P.mu);
  return !atomic_load(&P.stop);
}

/* Call k is done: call k + 1's thread goes on. */
static void pass_turn(player_thread *me, uint32_t k) {
  atomic_store_explicit(&P.next, k + 1, memory_order_release);
  if (k + 1 >= P.p->ncalls) return;
  player_thread *owner = &P.threads[P.p->calls[k + 1].thread];
  if (owner == me) return;
  pthread_mutex_lock(&P.mu);
  pthread_cond_signal(&owner->cv);
  pthread_mutex_unlock(&P.mu);
}

/* Sleeps until CLOCK_MONOTONIC `when`, in slices, false when stopping. */
static bool sleep_until(uint64_t when) {
  for (;;) {
    if (atomic_load(&P.stop)) return false;
    uint64_t now = real_ns();
    if (now >= when) return true;
    uint64_t left = when - now;
    nap_ns(left < 50000000ull ? left : 50000000ull);
  }
}

static bool wait_due(uint32_t k) {
  if (P.cfg->speed <= 0) return !atomic_load(&P.stop);
  double off = (double)(P.p->calls[k].t - P.job->t0) / P.cfg->speed;
  return sleep_until(P.sh->origin_ns + (uint64_t)off);
}

/* Everything before the closing finalize calls is played: publish it, say
 * so, and wait --linger seconds. */
static void linger(void) {
  if (atomic_exchange(&P.lingered, 1)) return;
  if (P.flush && !atomic_load(&P.stop)) P.flush();
  atomic_fetch_add(&P.sh->played, 1);
  if (P.cfg->linger_s > 0) sleep_until(real_ns() + (uint64_t)(P.cfg->linger_s * 1e9));
}

static void *thread_main(void *arg) {
  player_thread *me = arg;
  const tr_thread *rt = &P.p->threads[me->idx];
  for (uint32_t i = 0; i < rt->ncalls; i++) {
    uint32_t k = rt->calls[i];
    if (!wait_turn(me, k)) break;
    if (k == P.p->linger_at) linger();
    if (!wait_due(k)) break;
    call_t = P.p->calls[k].t;
    in_call = true;
    tr_call_play(&P.pl, k);
    in_call = false;
    pass_turn(me, k);
  }
  atomic_fetch_add(&P.threads_done, 1);
  return NULL;
}

static void stop_all(void) {
  atomic_store(&P.stop, 1);
  pthread_mutex_lock(&P.mu);
  for (uint32_t t = 0; t < P.p->nthreads; t++)
    if (P.threads[t].started) pthread_cond_signal(&P.threads[t].cv);
  pthread_mutex_unlock(&P.mu);
}

/* SIGINT/SIGTERM (blocked since before the fork) taken here; true when one
 * came within `ms`. */
static bool take_signal(int ms) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  int sig = sigtimedwait(&set, NULL, &ts);
  return sig == SIGINT || sig == SIGTERM;
}

static int setup_env(const nt_trace_config *cfg, pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) return -1;
  if (cfg->dir && setenv("NCCLTOP_DIR", cfg->dir, 1) != 0) return -1;
  if (cfg->interval_ms) {
    char v[16];
    snprintf(v, sizeof v, "%u", (unsigned)cfg->interval_ms);
    if (setenv("NCCLTOP_INTERVAL_MS", v, 1) != 0) return -1;
  }
  for (int i = 0; i < cfg->nenv; i++) {
    char name[128];
    const char *eq = strchr(cfg->env[i], '=');
    size_t n = eq ? (size_t)(eq - cfg->env[i]) : 0;
    if (!n || n >= sizeof name) return -1;
    memcpy(name, cfg->env[i], n);
    name[n] = '\0';
    if (setenv(name, eq + 1, 1) != 0) return -1;
  }
  return 0;
}

/* Loads the plugin with the recording's ABI and what the play needs. */
static int prepare(const char *plugin, int index) {
  char err[512];
  const tr_proc *p = P.p;
  const char *file = P.job->files[p->file];
  if (sim_driver_open(&P.pl.drv, plugin, p->version, p->version, index, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop sim: process %u of %s: %s\n", p->pid, file, err);
    return -1;
  }
  P.pl.p = p;
  P.pl.handles = calloc(p->nev + 1, sizeof *P.pl.handles);
  P.pl.contexts = calloc(p->nctx + 1, sizeof *P.pl.contexts);
  P.pl.on = calloc(p->nctx + 1, sizeof *P.pl.on);
  P.threads = calloc(p->nthreads, sizeof *P.threads);
  if (!P.pl.handles || !P.pl.contexts || !P.pl.on || !P.threads ||
      pthread_mutex_init(&P.mu, NULL) != 0) {
    fprintf(stderr, "nccltop sim: process %u of %s: out of memory\n", p->pid, file);
    return -1;
  }
  P.pl.pids = P.sh->pids;
  P.flush = (void (*)(void))sim_driver_sym(&P.pl.drv, "nccltop_flush");
  void (*set_clock)(uint64_t(*)(void)) =
      (void (*)(uint64_t(*)(void)))sim_driver_sym(&P.pl.drv, "nccltop_sim_set_clock");
  if (set_clock)
    set_clock(recorded_clock);
  else if (index == 0 && !P.cfg->quiet && P.cfg->speed != 1)
    fprintf(stderr,
            "nccltop sim: the plugin reads its own clock (only its test build lets the player "
            "show it the recorded times): its times are the recording's %s\n",
            P.cfg->speed <= 0 ? "squeezed to nothing (--speed max)" : "divided by --speed");
  return 0;
}

static int play_process(const tr_job *job, int index, const nt_trace_config *cfg,
                        const char *plugin, tr_shared *sh, pid_t parent) {
  P.job = job;
  P.p = &job->procs[index];
  P.cfg = cfg;
  P.sh = sh;
  if (setup_env(cfg, parent) != 0 || prepare(plugin, index) != 0) {
    atomic_fetch_add(&sh->failed, 1);
    return 1;
  }
  atomic_fetch_add(&sh->ready, 1);
  while (atomic_load(&sh->go) == 0)
    if (take_signal(1)) return 0; /* stopped before the play began */
  if (atomic_load(&sh->go) < 0) return 1;
  int failed = 0;
  for (uint32_t t = 0; t < P.p->nthreads && !failed; t++) {
    player_thread *pt = &P.threads[t];
    pt->idx = t;
    if (pthread_cond_init(&pt->cv, NULL) != 0 ||
        pthread_create(&pt->th, NULL, thread_main, pt) != 0) {
      fprintf(stderr, "nccltop sim: process %u: cannot start a thread\n", P.p->pid);
      failed = 1;
      break;
    }
    pt->started = true;
  }
  if (failed) stop_all();
  while (atomic_load(&P.threads_done) < (int)P.p->nthreads && !failed && !atomic_load(&P.stop))
    if (take_signal(100)) stop_all();
  for (uint32_t t = 0; t < P.p->nthreads; t++)
    if (P.threads[t].started) pthread_join(P.threads[t].th, NULL);
  bool stopped = atomic_load(&P.stop) != 0;
  if (!stopped) {
    linger(); /* when the recording ends with no finalize */
    stopped = atomic_load(&P.stop) != 0;
  }
  if (stopped || failed) tr_call_finalize_open(&P.pl);
  /* NCCL unloads the plugin after the last finalize; a recording that ends
   * with a communicator open leaves it loaded, as that job did. */
  bool open = false;
  for (uint32_t x = 0; x < P.p->nctx; x++) open |= P.pl.on[x];
  if (!open) sim_driver_close(&P.pl.drv);
  return failed;
}

/* ---- the job ---- */

/* Waits for every process to be ready (or one to fail). */
static bool all_ready(tr_shared *sh, int n, pid_t *pids, const sigset_t *set) {
  uint64_t end = real_ns() + 60000000000ull;
  while (atomic_load(&sh->ready) + atomic_load(&sh->failed) < n && real_ns() < end) {
    struct timespec ts = {0, 5000000};
    int sig = sigtimedwait(set, NULL, &ts);
    if (sig == SIGINT || sig == SIGTERM) return false;
    for (int i = 0; i < n; i++) { /* one that died before it said */
      int st;
      if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        pids[i] = 0;
        return false;
      }
    }
  }
  return atomic_load(&sh->ready) == n;
}

/* Reaps the processes; SIGINT/SIGTERM are passed on as SIGTERM. Says once
 * when every process has played its recording (a test waits for it). */
static int wait_all(const tr_job *job, pid_t *pids, int n, tr_shared *sh, const sigset_t *set,
                    bool quiet) {
  int failed = 0, left = 0;
  bool said = false;
  for (int i = 0; i < n; i++) left += pids[i] > 0;
  while (left > 0) {
    for (int i = 0; i < n; i++) {
      int st;
      if (pids[i] <= 0) continue;
      pid_t got = waitpid(pids[i], &st, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      if (got < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        failed = 1;
        if (got > 0)
          fprintf(stderr, "nccltop sim: the player of process %u of %s %s %d\n", job->procs[i].pid,
                  job->files[job->procs[i].file],
                  WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
                  WIFSIGNALED(st) ? WTERMSIG(st)
                  : WIFEXITED(st) ? WEXITSTATUS(st)
                                  : -1);
      }
      pids[i] = 0;
      left--;
    }
    if (!said && atomic_load(&sh->played) == n) {
      said = true;
      if (!quiet) fprintf(stderr, "nccltop sim: every recording played\n");
    }
    if (left == 0) break;
    struct timespec ts = {0, 50000000};
    int sig = sigtimedwait(set, NULL, &ts);
    if (sig == SIGINT || sig == SIGTERM)
      for (int i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
  }
  return failed;
}

static const char *pick_plugin(const nt_trace_config *cfg, char *buf, size_t cap) {
  if (cfg->plugin) return cfg->plugin;
  /* Faster or slower than recorded: the test build shows the plugin the
   * recorded times; at --speed 1 the production plugin is the honest one. */
  if (cfg->speed != 1 && nt_sim_test_plugin(buf, cap) == 0) return buf;
  return nt_sim_default_plugin(buf, cap) == 0 ? buf : NULL;
}

static int run_job(const tr_job *job, const nt_trace_config *cfg, const char *plugin) {
  size_t shsize = sizeof(tr_shared) + (size_t)job->nprocs * sizeof(int32_t);
  tr_shared *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t *pids = calloc((size_t)job->nprocs, sizeof *pids);
  if (sh == MAP_FAILED || !pids) {
    fprintf(stderr, "nccltop sim: cannot map shared memory: %s\n", strerror(errno));
    free(pids);
    return 1;
  }
  /* Blocked from before the first fork: each process takes them with
   * sigtimedwait, as this one does. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0) {
    munmap(sh, shsize);
    free(pids);
    return 1;
  }
  fflush(NULL);
  pid_t self = getpid();
  int started = 0;
  for (; started < job->nprocs; started++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "nccltop sim: cannot start a process: %s\n", strerror(errno));
      break;
    }
    if (pid == 0) _exit(play_process(job, started, cfg, plugin, sh, self));
    pids[started] = pid;
    sh->pids[started] = pid;
  }
  bool ready = started == job->nprocs && all_ready(sh, job->nprocs, pids, &set);
  /* One origin for every process, a moment ahead so all start together. */
  sh->origin_ns = real_ns() + 100000000ull;
  atomic_store(&sh->go, ready ? 1 : -1);
  if (!ready)
    for (int i = 0; i < started; i++)
      if (pids[i] > 0) kill(pids[i], SIGTERM);
  int failed = wait_all(job, pids, started, sh, &set, cfg->quiet) || !ready;
  struct timespec zero = {0, 0};
  while (sigtimedwait(&set, NULL, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  munmap(sh, shsize);
  free(pids);
  return failed;
}

int nt_trace_run(const nt_trace_config *cfg) {
  tr_job job;
  char err[1024], buf[PATH_MAX];
  if (tr_job_load(&job, (char **)cfg->paths, cfg->npaths, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop sim: %s\n", err);
    tr_job_free(&job);
    return 2;
  }
  const char *plugin = pick_plugin(cfg, buf, sizeof buf);
  if (!plugin) {
    fprintf(stderr, "nccltop sim: cannot find libnccl-profiler-nccltop.so next to nccltop; "
                    "use --plugin PATH or NCCLTOP_PLUGIN\n");
    tr_job_free(&job);
    return 1;
  }
  if (!cfg->quiet) {
    uint32_t threads = 0;
    uint64_t calls = 0;
    for (int i = 0; i < job.nprocs; i++) threads += job.procs[i].nthreads;
    for (int i = 0; i < job.nprocs; i++) calls += job.procs[i].ncalls;
    char speed[32];
    if (cfg->speed > 0)
      snprintf(speed, sizeof speed, "speed %g", cfg->speed);
    else
      snprintf(speed, sizeof speed, "speed max");
    fprintf(stderr,
            "nccltop sim: playing %d recording%s: %d process%s, %u threads, %llu calls over "
            "%.3f s at %s, plugin %s\n",
            job.nfiles, job.nfiles == 1 ? "" : "s", job.nprocs, job.nprocs == 1 ? "" : "es",
            threads, (unsigned long long)calls, (double)(job.t_end - job.t0) / 1e9, speed, plugin);
  }
  int rc = run_job(&job, cfg, plugin);
  tr_job_free(&job);
  return rc;
}

/* One simulated rank: a process that loads the plugin, initializes it once
 * per communicator, runs an application thread and a proxy progress thread
 * per communicator, then flushes, lingers and finalizes. Also the clocks and
 * the queue those threads share (rank.h). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "graph.h"
#include "rank.h"
#include "version.h"
#include "schedule.h"

/* ---- the job's shared progress ---- */

sim_shared *sim_sh;

bool sim_all_launched(int ranks, int comm, uint64_t seq) {
  if (!sim_sh) return true;
  for (int r = 0; r < ranks && r < SIM_MAX_RANKS; r++)
    if (atomic_load_explicit(&sim_sh->launched[r][comm], memory_order_acquire) <= seq &&
        !atomic_load_explicit(&sim_sh->finished[r][comm], memory_order_acquire))
      return false;
  return true;
}

void sim_mark_finished(int rank, int comm) {
  if (sim_sh && rank < SIM_MAX_RANKS)
    atomic_store_explicit(&sim_sh->finished[rank][comm], 1, memory_order_release);
}

void sim_mark_launched(int rank, int comm, uint64_t seq) {
  if (sim_sh && rank < SIM_MAX_RANKS)
    atomic_store_explicit(&sim_sh->launched[rank][comm], seq + 1, memory_order_release);
}

/* ---- stop requests ---- */

static atomic_int stop_flag;

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&stop_flag, 1);
}

bool sim_stopping(void) {
  return atomic_load_explicit(&stop_flag, memory_order_relaxed) != 0;
}

/* ---- clocks ---- */

uint64_t sim_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sim_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  /* An interrupted sleep just ends early: callers re-check their deadline. */
  (void)nanosleep(&ts, NULL);
}

uint64_t sim_rand(uint64_t *s) {
  uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

static _Thread_local bool vc_owner;
static _Thread_local uint64_t vc_now;
static _Atomic uint64_t vc_max;

void sim_vclock_own(void) {
  vc_owner = true;
  vc_now = 0;
}

void sim_vclock_pass(uint64_t ns) {
  vc_now += ns;
  uint64_t m = atomic_load_explicit(&vc_max, memory_order_relaxed);
  while (m < vc_now && !atomic_compare_exchange_weak_explicit(
                           &vc_max, &m, vc_now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

uint64_t sim_vclock(void) {
  return vc_owner ? vc_now : atomic_load_explicit(&vc_max, memory_order_relaxed);
}

/* ---- the op queue ---- */

void sim_queue_push(sim_comm *c, const sim_work *w) {
  pthread_mutex_lock(&c->mu);
  while (c->count == SIM_QUEUE_CAP) pthread_cond_wait(&c->cv, &c->mu);
  c->queue[(c->head + c->count) % SIM_QUEUE_CAP] = *w;
  c->count++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

int sim_queue_pop(sim_comm *c, sim_work *w, bool wait) {
  int rc;
  pthread_mutex_lock(&c->mu);
  while (wait && c->count == 0 && !c->closed) pthread_cond_wait(&c->cv, &c->mu);
  if (c->count > 0) {
    *w = c->queue[c->head];
    c->head = (c->head + 1) % SIM_QUEUE_CAP;
    c->count--;
    pthread_cond_broadcast(&c->cv);
    rc = 1;
  } else {
    rc = c->closed ? -1 : 0;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

bool sim_queue_empty(sim_comm *c) {
  pthread_mutex_lock(&c->mu);
  bool empty = c->count == 0;
  pthread_mutex_unlock(&c->mu);
  return empty;
}

bool sim_queue_peek(sim_comm *c, sim_work *w) {
  pthread_mutex_lock(&c->mu);
  bool got = c->count > 0;
  if (got) *w = c->queue[c->head];
  pthread_mutex_unlock(&c->mu);
  return got;
}

bool sim_queue_wait(sim_comm *c) {
  pthread_mutex_lock(&c->mu);
  while (c->count == 0 && !c->closed) pthread_cond_wait(&c->cv, &c->mu);
  bool got = c->count > 0;
  pthread_mutex_unlock(&c->mu);
  return got;
}

void sim_queue_close(sim_comm *c) {
  pthread_mutex_lock(&c->mu);
  c->closed = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* ---- the rank ---- */

/* NAME=VALUE into the environment. */
static int put_env(const char *kv) {
  char name[128];
  const char *eq = strchr(kv, '=');
  size_t n = eq ? (size_t)(eq - kv) : 0;
  if (!n || n >= sizeof name) return -1;
  memcpy(name, kv, n);
  name[n] = '\0';
  return setenv(name, eq + 1, 1);
}

static int setup_process(const nt_sim_config *cfg, int rank, pid_t parent) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) return -1;
  /* nt_sim_run blocked these around fork so none is lost before here. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  if (pthread_sigmask(SIG_UNBLOCK, &set, NULL) != 0) return -1;
  /* A rank never outlives the job runner (it may be killed outright). */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) atomic_store(&stop_flag, 1);
  if (cfg->nodes > 0) { /* a node of its own: directory and host name */
    char dir[4096], host[32];
    int node = nt_sim_node_of(cfg, rank);
    snprintf(host, sizeof host, "node%d", node);
    if (snprintf(dir, sizeof dir, "%s/node%d", cfg->dir ? cfg->dir : ".", node) >=
            (int)sizeof dir ||
        setenv("NCCLTOP_DIR", dir, 1) != 0 || setenv("NCCLTOP_HOSTNAME", host, 1) != 0)
      return -1;
  } else if (cfg->dir && setenv("NCCLTOP_DIR", cfg->dir, 1) != 0) {
    return -1;
  }
  if (cfg->interval_ms) {
    char v[16];
    snprintf(v, sizeof v, "%u", (unsigned)cfg->interval_ms);
    if (setenv("NCCLTOP_INTERVAL_MS", v, 1) != 0) return -1;
  }
  /* A net plugin's events are only produced when the mask asks for them. */
  if (cfg->net && !getenv("NCCLTOP_EVENTS") && setenv("NCCLTOP_EVENTS", "default,netplugin", 1))
    return -1;
  for (int i = 0; i < cfg->nenv; i++)
    if (put_env(cfg->env[i]) != 0) return -1;
  for (int i = 0; i < cfg->nrank_env; i++)
    if (cfg->rank_env[i].rank == rank && put_env(cfg->rank_env[i].kv) != 0) return -1;
  return 0;
}

static void stop_threads(sim_rank *r, int ncomms) {
  for (int k = 0; k < ncomms; k++) {
    sim_comm *c = &r->comms[k];
    if (c->app_started) pthread_join(c->app, NULL);
    if (!c->app_started) sim_queue_close(c);
    if (c->proxy_started) pthread_join(c->proxy, NULL);
  }
}

int sim_rank_main(const nt_sim_config *cfg, int rank, pid_t parent) {
  static sim_rank r; /* one per process */
  char err[512];
  if (setup_process(cfg, rank, parent) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: cannot set up: %s\n", rank, strerror(errno));
    return 1;
  }
  memset(&r, 0, sizeof r);
  r.cfg = cfg;
  r.rank = rank;
  r.t_start_ns = sim_real_ns();
  /* NCCL tries the newest table its release knows first. */
  int max_abi = sim_version_max_abi(sim_version_of(cfg));
  sim_version_answer(sim_version_of(cfg)); /* before the plugin can ask */
  if (sim_driver_open(&r.drv, cfg->plugin, cfg->abi, max_abi, rank, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: %s\n", rank, err);
    return 1;
  }
  r.drv.nccl_version = sim_version_of(cfg);
  sim_version_note_v7(r.drv.abi, r.drv.nccl_version, rank, cfg->quiet);
  if (cfg->deterministic) {
    /* Before the first init: the plugin reads our virtual clock from then on. */
    void (*set_clock)(uint64_t(*)(void)) =
        (void (*)(uint64_t(*)(void)))sim_driver_sym(&r.drv, "nccltop_sim_set_clock");
    if (set_clock)
      set_clock(sim_vclock);
    else if (!cfg->quiet && rank == 0)
      fprintf(stderr, "nccltop sim: the plugin has no nccltop_sim_set_clock (only its test-only "
                      "build exports it): it keeps its own clock, so its totals will not match "
                      "the deterministic schedule\n");
  }
  int ncomms = cfg->comms < 1 ? 1 : cfg->comms > SIM_MAX_COMMS ? SIM_MAX_COMMS : cfg->comms;
  bool any_on = false;
  for (int k = 0; k < ncomms; k++) {
    sim_comm *c = &r.comms[k];
    c->r = &r;
    c->index = k;
    c->rng = 0x5151000000000000ull ^ ((uint64_t)rank << 20) ^ ((uint64_t)k << 8) ^ 0x2b;
    if (pthread_mutex_init(&c->mu, NULL) != 0 || pthread_cond_init(&c->cv, NULL) != 0) {
      fprintf(stderr, "nccltop sim: rank %d: cannot create a lock\n", rank);
      return 1;
    }
    char name[32];
    snprintf(name, sizeof name, "sim-comm-%d", k);
    /* nNodes = ranks: one GPU per node, so every ring hop is a network hop
     * (but for --graph's intra-node communicator, graph.h); --nodes N: N.
     * Either way every rank simulates network proxy work. --symmetric's
     * communicator 0 is one NVLink domain (nNodes 1); its Send/Recv keep
     * the simulated proxy work. */
    int nnodes = sim_graph_intra(cfg, k) || (cfg->symmetric && k == 0) ? 1
                 : cfg->nodes > 0                                      ? cfg->nodes
                                                                       : cfg->ranks;
    /* --unnamed: config.commName left NULL, as PyTorch leaves it (so in
     * every real 2.28.9 recording: name=-) */
    const char *named = cfg->unnamed ? NULL : name;
    int rc = sim_driver_init(&r.drv, &c->px, nt_sim_comm_hash(k), named, nnodes, cfg->ranks, rank);
    c->px.user_tag = k == 0 ? cfg->user_tag : 0; /* --user-tag: communicator 0's calls */
    if (rc != 0 && !cfg->quiet)
      fprintf(stderr,
              "nccltop sim: rank %d comm %d: the plugin declined (init returned %d); "
              "running without it\n",
              rank, k, rc);
    any_on |= c->px.on;
  }
  int failed = 0;
  for (int k = 0; k < ncomms && !failed; k++) {
    sim_comm *c = &r.comms[k];
    c->proxy_started = pthread_create(&c->proxy, NULL, sim_proxy_main, c) == 0;
    c->app_started = c->proxy_started && pthread_create(&c->app, NULL, sim_app_main, c) == 0;
    if (!c->app_started) {
      fprintf(stderr, "nccltop sim: rank %d: cannot start threads\n", rank);
      atomic_store(&stop_flag, 1);
      failed = 1;
    }
  }
  stop_threads(&r, ncomms);
  /* The schedule is over (virtual time stands still from here). */
  void (*flush)(void) = (void (*)(void))sim_driver_sym(&r.drv, "nccltop_flush");
  if (flush && any_on) flush();
  uint64_t end = sim_real_ns() + (uint64_t)(cfg->linger_s * 1e9);
  while (!sim_stopping() && sim_real_ns() < end) {
    uint64_t left = end - sim_real_ns();
    sim_sleep_ns(left < 20000000ull ? left : 20000000ull);
  }
  for (int k = 0; k < ncomms; k++) sim_driver_finalize(&r.comms[k].px);
  /* NCCL unloads the plugin after the last finalize. */
  sim_driver_close(&r.drv);
  for (int k = 0; k < ncomms; k++) {
    pthread_mutex_destroy(&r.comms[k].mu);
    pthread_cond_destroy(&r.comms[k].cv);
  }
  return failed;
}

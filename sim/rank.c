/* One simulated rank: a process with, per communicator, an application
 * thread that enqueues collectives and a proxy progress thread that runs
 * their network steps, calling the plugin exactly where NCCL would.
 *
 * Deterministic mode: each proxy thread has its own virtual clock that only
 * it advances (schedule.h); other threads read the furthest proxy clock, so
 * once every proxy thread has finished at the same virtual time the totals
 * are exact. Real-time mode: the waits really take time, with a different
 * bottleneck per rank, for the demo.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include "abi_driver.h"
#include "rank.h"
#include "schedule.h"

#define QUEUE_CAP 64

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig, stop_flag = 1;
}

/* ---- virtual clock ---- */
static _Thread_local bool vc_owner;
static _Thread_local uint64_t vc_now;
static _Atomic uint64_t vc_max;

static uint64_t virtual_clock(void) {
  return vc_owner ? vc_now : atomic_load_explicit(&vc_max, memory_order_relaxed);
}

typedef struct sim_comm sim_comm;
typedef struct {
  const nt_sim_config *cfg;
  int rank;
  sim_driver drv;
  double t_start;
} sim_rank;

struct sim_comm {
  sim_rank *r;
  int index;
  void *ctx;
  pthread_t app, proxy;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  void *queue[QUEUE_CAP]; /* Coll handles, oldest first */
  int head, count;
  bool done;
};

static double real_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* Time passes: virtually in deterministic mode, really otherwise. */
static void pass(sim_comm *c, uint64_t ns) {
  if (c->r->cfg->deterministic) {
    vc_now += ns;
    uint64_t m = atomic_load(&vc_max);
    while (m < vc_now && !atomic_compare_exchange_weak(&vc_max, &m, vc_now)) {
    }
  } else if (ns >= 1000) {
    sleep_us(ns / 1000);
  }
}

static nt_descr_v5 descr(sim_comm *c, int type, void *parent) {
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = (uint64_t)type;
  d.parentObj = parent;
  d.rank = c->r->rank;
  return d;
}

/* A ProxyCtrl burst: start, the given states, stop; `gap` ns between them. */
static void ctrl_burst(sim_comm *c, int s1, uint64_t gap1, int s2, uint64_t gap2, int appended) {
  sim_driver *d = &c->r->drv;
  if (!sim_driver_wants(d, NT_EV_PROXY_CTRL)) {
    pass(c, gap1 + gap2);
    return;
  }
  nt_descr_v5 e = descr(c, NT_EV_PROXY_CTRL, NULL);
  void *h = sim_driver_start(d, c->ctx, &e);
  sim_driver_record(d, h, s1, NULL);
  pass(c, gap1);
  if (s2) {
    nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = appended}};
    sim_driver_record(d, h, s2, &a);
  }
  pass(c, gap2);
  sim_driver_stop(d, h);
}

/* ---- application thread ---- */

static void *enqueue_collective(sim_comm *c, uint64_t seq) {
  sim_driver *d = &c->r->drv;
  const nt_sim_config *cfg = c->r->cfg;
  void *group = NULL, *api = NULL, *coll = NULL;
  nt_descr_v5 e;
  if (d->abi >= 5 && sim_driver_wants(d, NT_EV_GROUP_API)) {
    e = descr(c, NT_EV_GROUP_API, NULL);
    e.groupApi.groupDepth = 1;
    group = sim_driver_start(d, c->ctx, &e);
    sim_driver_record(d, group, NT_ST_GROUP_START_API_STOP, NULL);
  }
  if (d->abi >= 5 && sim_driver_wants(d, NT_EV_COLL_API)) {
    e = descr(c, NT_EV_COLL_API, group);
    e.collApi.func = "AllReduce";
    e.collApi.count = (size_t)cfg->steps * SIM_STEP_BYTES * (size_t)cfg->channels / 4;
    e.collApi.datatype = "ncclFloat32";
    e.collApi.root = -1;
    api = sim_driver_start(d, c->ctx, &e);
    sim_driver_stop(d, api);
  }
  if (d->abi < 5 && sim_driver_wants(d, NT_EV_GROUP)) {
    e = descr(c, NT_EV_GROUP, NULL);
    group = sim_driver_start(d, c->ctx, &e);
  }
  if (sim_driver_wants(d, NT_EV_COLL)) {
    e = descr(c, NT_EV_COLL, d->abi >= 5 ? api : group);
    e.coll.seqNumber = seq;
    e.coll.func = "AllReduce";
    e.coll.count = (size_t)cfg->steps * SIM_STEP_BYTES * (size_t)cfg->channels / 4;
    e.coll.datatype = "ncclFloat32";
    e.coll.nChannels = (uint8_t)cfg->channels;
    e.coll.nWarps = 16;
    e.coll.algo = "RING";
    e.coll.proto = "SIMPLE";
    e.coll.parentGroup = d->abi >= 5 ? NULL : group;
    coll = sim_driver_start(d, c->ctx, &e);
    /* Collectives stop at enqueue; their children arrive later. */
    sim_driver_stop(d, coll);
  }
  if (group && d->abi >= 5) sim_driver_record(d, group, NT_ST_GROUP_END_API_START, NULL);
  sim_driver_stop(d, group);
  return coll;
}

static void *app_main(void *arg) {
  sim_comm *c = arg;
  const nt_sim_config *cfg = c->r->cfg;
  for (uint64_t seq = 0; !stop_flag; seq++) {
    if (cfg->iterations && seq >= (uint64_t)cfg->iterations) break;
    if (cfg->duration_s > 0 && real_s() - c->r->t_start >= cfg->duration_s) break;
    void *coll = enqueue_collective(c, seq);
    pthread_mutex_lock(&c->mu);
    while (c->count == QUEUE_CAP && !stop_flag) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 50000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    c->queue[(c->head + c->count++) % QUEUE_CAP] = coll;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!cfg->deterministic) sleep_us(60000 + (uint64_t)(c->r->rank % 3) * 20000);
  }
  pthread_mutex_lock(&c->mu);
  c->done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* ---- proxy thread ---- */

/* Real-time profiles: which wait dominates on which rank (microseconds per
 * round of steps: send gpu, send peer, send net, recv net, recv flush, recv
 * gpu). */
static const uint64_t profiles[4][6] = {
    {150, 100, 300, 300, 20, 150},   /* balanced */
    {100, 100, 1500, 900, 20, 100},  /* slow network */
    {1200, 100, 200, 200, 20, 900},  /* slow GPU */
    {150, 1300, 200, 1100, 20, 100}, /* waits for a slow peer */
};

static uint64_t wait_ns(sim_comm *c, int i) {
  if (c->r->cfg->deterministic) {
    static const uint64_t det[6] = {SIM_SEND_GPU_NS, SIM_SEND_PEER_NS,  SIM_SEND_NET_NS,
                                    SIM_RECV_NET_NS, SIM_RECV_FLUSH_NS, SIM_RECV_GPU_NS};
    return det[i];
  }
  return profiles[c->r->rank % 4][i] * 1000 / (uint64_t)c->r->cfg->channels;
}

static void step_state(sim_comm *c, void *step, int state, size_t size) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = size}};
  sim_driver_record(&c->r->drv, step, state, &a);
}

/* One collective's network work: a send and a recv proxy op per channel,
 * `steps` steps each, in NCCL's state order. */
static void run_collective(sim_comm *c, void *coll) {
  sim_driver *d = &c->r->drv;
  const nt_sim_config *cfg = c->r->cfg;
  int nch = cfg->channels, rank = c->r->rank, n = cfg->ranks;
  void *ops[64][2] = {{NULL}};
  bool want_op = sim_driver_wants(d, NT_EV_PROXY_OP);
  for (int ch = 0; ch < nch && want_op; ch++) {
    for (int dir = 0; dir < 2; dir++) {
      nt_descr_v5 e = descr(c, NT_EV_PROXY_OP, coll);
      e.proxyOp.pid = getpid();
      e.proxyOp.channelId = (uint8_t)ch;
      e.proxyOp.peer = dir == 0 ? (rank + 1) % n : (rank - 1 + n) % n;
      e.proxyOp.nSteps = cfg->steps;
      e.proxyOp.chunkSize = (int)SIM_STEP_BYTES;
      e.proxyOp.isSend = dir == 0;
      ops[ch][dir] = sim_driver_start(d, c->ctx, &e);
      sim_driver_record(d, ops[ch][dir], NT_ST_OP_IN_PROGRESS, NULL);
    }
  }
  bool want_step = sim_driver_wants(d, NT_EV_PROXY_STEP);
  for (int s = 0; s < cfg->steps; s++) {
    for (int ch = 0; ch < nch; ch++) {
      void *st[2] = {NULL, NULL};
      for (int dir = 0; dir < 2 && want_step; dir++) {
        if (!ops[ch][dir]) continue; /* NCCL skips steps of a dropped op */
        nt_descr_v5 e = descr(c, NT_EV_PROXY_STEP, ops[ch][dir]);
        e.proxyStep.step = s;
        st[dir] = sim_driver_start(d, c->ctx, &e);
      }
      size_t size = (size_t)SIM_STEP_BYTES;
      step_state(c, st[0], NT_ST_STEP_SEND_GPU_WAIT, 0);
      pass(c, wait_ns(c, 0));
      step_state(c, st[0], NT_ST_STEP_SEND_PEER_WAIT, 0);
      pass(c, wait_ns(c, 1) / 2);
      step_state(c, st[0], NT_ST_STEP_SEND_PEER_WAIT, 0); /* no credit yet: NCCL repeats it */
      pass(c, wait_ns(c, 1) - wait_ns(c, 1) / 2);
      step_state(c, st[0], NT_ST_STEP_SEND_WAIT, size);
      pass(c, wait_ns(c, 2));
      sim_driver_stop(d, st[0]);
      step_state(c, st[1], NT_ST_STEP_RECV_WAIT, 0);
      pass(c, wait_ns(c, 3));
      step_state(c, st[1], NT_ST_STEP_RECV_FLUSH_WAIT, size);
      pass(c, wait_ns(c, 4));
      step_state(c, st[1], NT_ST_STEP_RECV_GPU_WAIT, size);
      pass(c, wait_ns(c, 5));
      sim_driver_stop(d, st[1]);
    }
  }
  for (int ch = 0; ch < nch; ch++) {
    sim_driver_stop(d, ops[ch][0]);
    sim_driver_stop(d, ops[ch][1]);
  }
  /* Kernel channels: reported late by the proxy thread, with GPU times. */
  if (sim_driver_wants(d, NT_EV_KERNEL_CH)) {
    for (int ch = 0; ch < nch; ch++) {
      nt_descr_v5 e = descr(c, NT_EV_KERNEL_CH, coll);
      e.kernelCh.channelId = (uint8_t)ch;
      e.kernelCh.pTimer = 1700000000000000000ull + virtual_clock();
      void *h = sim_driver_start(d, c->ctx, &e);
      nt_state_args_v5 a = {.kernelCh = {.pTimer = e.kernelCh.pTimer + SIM_KERNEL_NS}};
      sim_driver_record(d, h, NT_ST_KERNEL_CH_STOP, &a);
      sim_driver_stop(d, h);
    }
  }
}

/* Waits for the next collective; false when the application is done. */
static bool next_work(sim_comm *c, void **coll) {
  pthread_mutex_lock(&c->mu);
  while (c->count == 0 && !c->done && !stop_flag) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  bool got = c->count > 0 && !stop_flag;
  if (got) {
    *coll = c->queue[c->head];
    c->head = (c->head + 1) % QUEUE_CAP;
    c->count--;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  return got;
}

/* Waits for the next collective inside a Sleep/Wakeup burst, as NCCL's
 * proxy thread blocks on its op pool when it has nothing to do. */
static bool wait_for_work(sim_comm *c, void **coll) {
  if (c->r->cfg->deterministic) {
    if (!next_work(c, coll)) return false;
    pass(c, SIM_IDLE_NS);
    ctrl_burst(c, NT_ST_CTRL_SLEEP, SIM_SLEEP_NS, NT_ST_CTRL_WAKEUP, SIM_WAKEUP_NS, 0);
    return true;
  }
  sim_driver *d = &c->r->drv;
  void *h = NULL;
  if (sim_driver_wants(d, NT_EV_PROXY_CTRL)) {
    nt_descr_v5 e = descr(c, NT_EV_PROXY_CTRL, NULL);
    h = sim_driver_start(d, c->ctx, &e);
    sim_driver_record(d, h, NT_ST_CTRL_SLEEP, NULL);
  }
  bool got = next_work(c, coll);
  sim_driver_record(d, h, NT_ST_CTRL_WAKEUP, NULL);
  sim_driver_stop(d, h);
  return got;
}

static void *proxy_main(void *arg) {
  sim_comm *c = arg;
  const nt_sim_config *cfg = c->r->cfg;
  vc_owner = true;
  vc_now = 0;
  ctrl_burst(c, NT_ST_CTRL_IDLE, 0, 0, 0, 0); /* the first event: state known from t=0 */
  void *coll = NULL;
  while (wait_for_work(c, &coll)) {
    ctrl_burst(c, NT_ST_CTRL_APPEND, cfg->deterministic ? SIM_APPEND_NS : 20000,
               NT_ST_CTRL_APPEND_END, 0, 2 * cfg->channels);
    ctrl_burst(c, NT_ST_CTRL_ACTIVE, 0, 0, 0, 0);
    run_collective(c, coll);
    ctrl_burst(c, NT_ST_CTRL_IDLE, 0, 0, 0, 0);
  }
  return NULL;
}

int sim_rank_main(const nt_sim_config *cfg, int rank) {
  sim_rank r = {.cfg = cfg, .rank = rank, .t_start = real_s()};
  sim_comm comms[8];
  char err[512];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  if (cfg->dir) setenv("NCCLTOP_DIR", cfg->dir, 1);
  if (cfg->interval_ms) {
    char v[16];
    snprintf(v, sizeof v, "%u", cfg->interval_ms);
    setenv("NCCLTOP_INTERVAL_MS", v, 1);
  }
  if (sim_driver_open(&r.drv, cfg->plugin, cfg->abi, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: %s\n", rank, err);
    return 1;
  }
  if (cfg->deterministic) {
    void (*set_clock)(uint64_t(*)(void)) =
        (void (*)(uint64_t(*)(void)))dlsym(r.drv.lib, "nccltop_sim_set_clock");
    if (set_clock) set_clock(virtual_clock);
  }
  int ncomms = cfg->comms;
  for (int k = 0; k < ncomms; k++) {
    sim_comm *c = &comms[k];
    memset(c, 0, sizeof *c);
    c->r = &r;
    c->index = k;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    char name[32];
    snprintf(name, sizeof name, "sim-comm-%d", k);
    /* Init failing means the plugin declined: the job runs on without it. */
    sim_driver_init(&r.drv, &c->ctx, nt_sim_comm_hash(k), name, cfg->ranks, cfg->ranks, rank);
  }
  for (int k = 0; k < ncomms; k++) {
    pthread_create(&comms[k].proxy, NULL, proxy_main, &comms[k]);
    pthread_create(&comms[k].app, NULL, app_main, &comms[k]);
  }
  for (int k = 0; k < ncomms; k++) {
    pthread_join(comms[k].app, NULL);
    pthread_join(comms[k].proxy, NULL);
  }
  void (*flush)(void) = (void (*)(void))dlsym(r.drv.lib, "nccltop_flush");
  if (flush) flush();
  for (double end = real_s() + cfg->linger_s; !stop_flag && real_s() < end;) sleep_us(20000);
  for (int k = 0; k < ncomms; k++) sim_driver_finalize(&r.drv, comms[k].ctx);
  return 0;
}

/* See kthread.h. Requests go through a bounded FIFO, so every stop follows
 * its start; the thread keeps the plugin's handles by key, as NCCL keeps
 * them in its per-work records. */
#include "kthread.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_QUEUE 256
#define KT_OPEN  2048 /* open KernelCh events at most: collectives x channels */

typedef struct {
  bool stop;
  uint64_t key, ptimer, synced;
  void *parent;
  int ch;
} kt_req;

typedef struct {
  bool used;
  bool phases; /* 2.31 v7: KernelPhase in the mask at the start */
  int ch;
  uint64_t key, start, synced;
  void *h;
} kt_open;

struct sim_kthread {
  sim_comm *c;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  kt_req q[KT_QUEUE];
  int head, count;
  bool closing;
  kt_open open[KT_OPEN];
};

static kt_open *slot_of(sim_kthread *k, uint64_t key, bool take) {
  unsigned i = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 40) % KT_OPEN;
  for (int n = 0; n < KT_OPEN; n++, i = (i + 1) % KT_OPEN) {
    kt_open *o = &k->open[i];
    if (o->used && o->key == key) return o;
    if (!o->used && take) {
      o->used = true;
      o->key = key;
      o->h = NULL;
      o->phases = false;
      o->start = o->synced = 0;
      return o;
    }
  }
  return NULL;
}

/* 2.31's profilerFireKernelPhaseEvents: the kernel's four timestamps
 * (begin, after the opening barrier, before the closing one, end) make up
 * to three phases, each started, stopped at the next and ended before the
 * KernelCh stop; a zero-length phase is skipped. The opening barrier ends
 * when the last rank's kernel arrives: `synced` (0: at once), so a rank
 * whose kernel began while a peer had not launched yet waits there. Of the
 * rest, the simulated kernel spends 1/8 in its initial sync and 1/16 in
 * its final one. */
static void fire_phases(sim_ctx *x, void *kh, int ch, uint64_t start, uint64_t synced,
                        uint64_t stop) {
  if (!start || stop <= start) return;
  uint64_t from = synced > start && synced < stop ? synced : start;
  uint64_t d = stop - from;
  uint64_t ts[4] = {start, from + d / 8, stop - d / 16, stop};
  for (int i = 0; i < 3; i++)
    if (ts[i + 1] > ts[i]) sim_kernel_phase(x, kh, ch, i, ts[i], ts[i + 1]);
}

/* NCCL's ncclProfilerStartKernelChEvent / StopKernelChEvent, on this thread. */
static void serve(sim_kthread *k, const kt_req *r) {
  sim_ctx *x = &k->c->px;
  if (!r->stop) {
    kt_open *o = slot_of(k, r->key, true);
    nt_descr_v5 e;
    memset(&e, 0, sizeof e);
    e.type = NT_EV_KERNEL_CH;
    e.parentObj = r->parent;
    e.kernelCh.channelId = (uint8_t)r->ch;
    e.kernelCh.pTimer = r->ptimer;
    void *h = sim_start(x, &e);
    if (o) {
      o->h = h;
      o->start = r->ptimer;
      o->synced = r->synced;
      o->ch = r->ch;
      o->phases = sim_mask_wants(x->d->abi, sim_mask_now(x), NT_EV_KERNEL_PHASE);
    } else
      sim_stop(x, h); /* no room to remember it: end it at once */
    return;
  }
  kt_open *o = slot_of(k, r->key, false);
  if (!o) return;
  if (o->h) {
    if (o->phases) fire_phases(x, o->h, o->ch, o->start, o->synced, r->ptimer);
    nt_state_args_v5 a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = r->ptimer;
    sim_record(x, o->h, NT_ST_KERNEL_CH_STOP, &a);
    sim_stop(x, o->h);
  }
  o->used = false;
  /* Keep the probe chains whole: re-seat the entries after this one. */
  for (int i = (int)(o - k->open + 1) % KT_OPEN; k->open[i].used; i = (i + 1) % KT_OPEN) {
    kt_open moved = k->open[i];
    k->open[i].used = false;
    kt_open *to = slot_of(k, moved.key, true);
    if (to) *to = moved;
  }
}

static void *kt_main(void *arg) {
  sim_kthread *k = arg;
  pthread_mutex_lock(&k->mu);
  for (;;) {
    while (k->count == 0 && !k->closing) pthread_cond_wait(&k->cv, &k->mu);
    if (k->count == 0) break;
    kt_req r = k->q[k->head];
    k->head = (k->head + 1) % KT_QUEUE;
    k->count--;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    serve(k, &r);
    pthread_mutex_lock(&k->mu);
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

sim_kthread *sim_kthread_new(sim_comm *c) {
  sim_kthread *k = calloc(1, sizeof *k);
  if (!k) {
    fprintf(stderr, "nccltop sim: rank %d: out of memory for the profiler thread\n", c->r->rank);
    return NULL;
  }
  k->c = c;
  if (pthread_mutex_init(&k->mu, NULL) != 0) {
    free(k);
    return NULL;
  }
  if (pthread_cond_init(&k->cv, NULL) != 0) {
    pthread_mutex_destroy(&k->mu);
    free(k);
    return NULL;
  }
  if (pthread_create(&k->thread, NULL, kt_main, k) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: cannot start the profiler thread\n", c->r->rank);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
    return NULL;
  }
  return k;
}

static void push(sim_kthread *k, const kt_req *r) {
  pthread_mutex_lock(&k->mu);
  while (k->count == KT_QUEUE) pthread_cond_wait(&k->cv, &k->mu);
  k->q[(k->head + k->count) % KT_QUEUE] = *r;
  k->count++;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

void sim_kthread_start(sim_kthread *k, uint64_t key, void *parent, int ch, uint64_t ptimer,
                       uint64_t synced) {
  kt_req r = {false, key, ptimer, synced, parent, ch};
  push(k, &r);
}

void sim_kthread_stop(sim_kthread *k, uint64_t key, uint64_t ptimer) {
  kt_req r = {true, key, ptimer, 0, NULL, 0};
  push(k, &r);
}

void sim_kthread_free(sim_kthread *k) {
  if (!k) return;
  pthread_mutex_lock(&k->mu);
  k->closing = true;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
  pthread_join(k->thread, NULL);
  pthread_cond_destroy(&k->cv);
  pthread_mutex_destroy(&k->mu);
  free(k);
}

/* The job the viewer benchmarks watch (bench_analysis, bench_frame): a
 * 1024-process ring, 32 channels each way, 40 NCCL variables, whose rank
 * 77 stalled: its predecessor waits for its credit, everyone else's work is
 * queued behind it. Fed to a model as real encoded snapshots and hellos
 * (encode, decode, apply, as a live viewer gets them). */
#ifndef NCCLTOP_BENCH_JOB_H
#define NCCLTOP_BENCH_JOB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/nccltop_proto.h"
#include "../monitor/core/diag.h"
#include "../monitor/core/model.h"

#define RANKS    1024
#define CHANNELS 32
#define ENV      40
#define STALLED  77
#define HASH     0x5eed00000000abcdull
#define SOURCE   "tcp://bench-relay:5555"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Rank r's snapshot: 32 channels each way, frozen 6 s ago in the state
 * its place in the ring gives it; launch counts; operations in flight. */
static inline void fill(nt_snapshot *s, int r) {
  memset(s->host, 0, sizeof s->host);
  snprintf(s->host, sizeof s->host, "gpu-node-%03d", r / 8);
  s->pid = 10000 + (uint32_t)r;
  s->seq = 1;
  s->interval_ms = 100;
  s->mono_ns = 86400ull * 1000000000ull;
  s->wall_ns = 1760000000ull * 1000000000ull;
  s->process = (nt_process_counters){.events = 123456789, .abi_version = 5};
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){
      .comm_hash = HASH, .rank = r, .nranks = RANKS, .nnodes = RANKS / 8, .colls_enqueued = 5000};
  s->nproxy = 1;
  s->proxy[0] = (nt_proxy_row){.comm_index = 0, .tid = 7, .state = 0, .appends = 900};
  int pred = (r + RANKS - 1) % RANKS, succ = (r + 1) % RANKS;
  s->nchannels = 0;
  for (int c = 0; c < CHANNELS; c++)
    for (int d = 0; d < 2; d++) {
      int wait = d ? NT_WAIT_RECV_NET : NT_WAIT_SEND_GPU, run = NT_RUN_QUEUED;
      if (r == STALLED && d) wait = NT_WAIT_RECV_GPU, run = NT_RUN_RUNNING;
      if (succ == STALLED && !d) wait = NT_WAIT_SEND_PEER, run = NT_RUN_RUNNING;
      s->channels[s->nchannels++] = (nt_channel_row){.comm_index = 0,
                                                     .channel = (uint8_t)c,
                                                     .dir = (uint8_t)d,
                                                     .peer = d ? pred : succ,
                                                     .wait_ns = {4000000000ull, 900000000ull, 1},
                                                     .steps = 123456,
                                                     .bytes = 1ull << 33,
                                                     .ops_started = 1000,
                                                     .ops_done = 998,
                                                     .cur_step = 5,
                                                     .cur_wait = (uint8_t)wait,
                                                     .cur_wait_age_ns = 6000000000ull,
                                                     .progress_age_ns = 6000000000ull,
                                                     .run_state = (uint8_t)run,
                                                     .relay_rank = -1};
    }
  s->nseq = 2;
  s->seq_rows[0] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = 500, .done = 498};
  s->seq_rows[1] = (nt_seq_row){.func = NT_FUNC_ALLGATHER, .launched = 200, .done = 200};
  s->noplog = 2;
  for (uint32_t k = 0; k < 2; k++)
    s->oplog[k] = (nt_oplog_row){
        .kind = NT_OP_COLL,
        .func = NT_FUNC_ALLREDUCE,
        .seq = 498 + k,
        .algo = NT_ALGO_RING,
        .proto = NT_PR_SIMPLE,
        .bytes = 4 << 20,
        .state = NT_OPS_IN_FLIGHT,
        .age_ns = 6000000000ull,
        .children = 64,
        .children_open = 64,
        .run_state = (uint8_t)(r == STALLED || succ == STALLED ? NT_RUN_RUNNING : NT_RUN_QUEUED),
        .progress_age_ns = 6000000000ull};
}

/* Rank r's hello: 40 NCCL variables, one of which differs on every 100th. */
static inline void fill_hello(nt_hello *h, int r) {
  memset(h, 0, sizeof *h);
  h->major = 1;
  snprintf(h->host, sizeof h->host, "gpu-node-%03d", r / 8);
  h->pid = 10000 + (uint32_t)r;
  snprintf(h->nccl_version, sizeof h->nccl_version, "2.28.3");
  for (int k = 0; k < ENV; k++) {
    snprintf(h->env[k].name, sizeof h->env[k].name, "NCCL_SETTING_%02d", k);
    snprintf(h->env[k].value, sizeof h->env[k].value, "%s",
             k == 11 && r % 100 == 0 ? "different" : "value-shared-by-most-ranks");
  }
  h->nenv = ENV;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Encodes, decodes and applies every rank's hello and snapshot. */
static inline int feed(nt_model *m, nt_snapshot *s, nt_snapshot *out, nt_hello *h, nt_hello *hout) {
  size_t cap = 0;
  uint8_t *buf = NULL;
  char *json = malloc(1 << 18), err[256];
  int rc = -1;
  if (!json) return -1;
  for (int r = 0; r < RANKS; r++) {
    fill_hello(h, r);
    size_t hl = nt_hello_encode(h, json, 1 << 18);
    if (!hl || nt_hello_decode(json, hl, hout, err, sizeof err) != 0 ||
        nt_model_apply_hello(m, SOURCE, 0, hout, 1.0) != 0) {
      fprintf(stderr, "bench: hello of rank %d: %s\n", r, hl ? err : "not encoded");
      goto done;
    }
    fill(s, r);
    size_t need = nt_snapshot_encoded_max(s);
    if (need > cap) {
      uint8_t *b = realloc(buf, need);
      if (!b) goto done;
      buf = b;
      cap = need;
    }
    size_t len = nt_snapshot_encode(s, buf, cap);
    if (!len || nt_snapshot_decode(buf, len, out, err, sizeof err) != 0 ||
        nt_model_apply_snapshot(m, SOURCE, 0, out, 1.0) != 0) {
      fprintf(stderr, "bench: snapshot of rank %d: %s\n", r, len ? err : "not encoded");
      goto done;
    }
  }
  rc = 0;
done:
  free(json);
  free(buf);
  return rc;
}

#endif

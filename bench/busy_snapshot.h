/* The busy process the wire benches encode and decode: 4 communicators x
 * 32 channels each way and 4 proxy threads, counters in the ranges a long
 * job reaches so no field encodes as a trivial zero; `full` adds what a
 * process with every event class on publishes besides (kernel rows, 512
 * operation statistics rows, a full operation log, sequence and phase
 * rows). */
#ifndef NCCLTOP_BENCH_BUSY_SNAPSHOT_H
#define NCCLTOP_BENCH_BUSY_SNAPSHOT_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "../proto/nccltop_proto.h"

#define BUSY_COMMS    4
#define BUSY_CHANNELS 32
#define BUSY_OPS      512

static inline double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void bench_fill_busy(nt_snapshot *s, bool full) {
  snprintf(s->host, sizeof s->host, "gpu-node-017");
  s->pid = 4242;
  s->interval_ms = 100;
  s->mono_ns = 86400ull * 1000000000ull;
  s->wall_ns = 1760000000ull * 1000000000ull;
  s->process = (nt_process_counters){
      .events = 123456789012ull, .reclaimed_ops = 3, .event_mask = 0x3e, .abi_version = 5};
  s->ncomms = BUSY_COMMS;
  for (uint32_t k = 0; k < BUSY_COMMS; k++) {
    s->comms[k] = (nt_comm_row){.comm_hash = 0x9e3779b97f4a7c15ull * (k + 1),
                                .rank = 3,
                                .nranks = 16,
                                .nnodes = 2,
                                .colls_enqueued = 1000000 + k,
                                .p2ps_enqueued = 2000 * k,
                                .coll_api = full ? 1000000 + k : 0,
                                .api_ns = full ? 123456789 : 0};
    nt_proxy_row *p = &s->proxy[s->nproxy++];
    *p = (nt_proxy_row){.comm_index = (uint16_t)k,
                        .tid = 100 + k,
                        .state = 1,
                        .state_age_ns = 1500000,
                        .appends = 900000,
                        .appended_ops = 14400000,
                        .wakeups = 850000};
    for (int i = 0; i < NT_PROXY_NSTATES; i++)
      p->state_ns[i] = 3000000000000ull / (uint64_t)(i + 1);
    for (int c = 0; c < BUSY_CHANNELS; c++) {
      if (full)
        s->kernels[s->nkernels++] = (nt_kernel_row){
            .comm_index = (uint16_t)k, .channel = (uint8_t)c, .count = 999, .busy_ns = 1ull << 40};
      for (int d = 0; d < 2; d++)
        s->channels[s->nchannels++] = (nt_channel_row){
            .comm_index = (uint16_t)k,
            .channel = (uint8_t)c,
            .dir = (uint8_t)d,
            .peer = d ? 2 : 4,
            .wait_ns = {40000000000ull + (uint64_t)c, 90000000000ull, 25000000000ull},
            .steps = 123456789,
            .bytes = 64ull << 30,
            .ops_started = 1000000,
            .ops_done = 999998,
            .cur_step = 5,
            .cur_wait = 1,
            .cur_wait_age_ns = 20000,
            .progress_age_ns = 20000,
            .run_state = full ? NT_RUN_RUNNING : 0,
            .relay_rank = full ? -1 : 0};
    }
  }
  if (!full) return;
  for (uint32_t i = 0; i < BUSY_OPS; i++)
    s->ops[s->nops++] = (nt_op_row){.comm_index = (uint16_t)(i % BUSY_COMMS),
                                    .func = (uint8_t)(1 + i % 5),
                                    .algo = NT_ALGO_RING,
                                    .proto = NT_PR_SIMPLE,
                                    .bucket = (uint8_t)(i % 40),
                                    .count = 1000 + i,
                                    .bytes = 1ull << 35,
                                    .done = 1000 + i,
                                    .time_ns = 1ull << 38};
  for (uint32_t i = 0; i < NT_MAX_OPLOG; i++)
    s->oplog[s->noplog++] = (nt_oplog_row){.func = NT_FUNC_ALLREDUCE,
                                           .seq = 5000 + i,
                                           .count = 1 << 20,
                                           .bytes = 4 << 20,
                                           .state = NT_OPS_DONE,
                                           .run_state = NT_RUN_IDLE,
                                           .age_ns = 6000000ull * i,
                                           .duration_ns = 1500000};
  for (uint32_t i = 0; i < 8; i++)
    s->seq_rows[s->nseq++] = (nt_seq_row){
        .comm_index = (uint16_t)(i % BUSY_COMMS), .func = (uint8_t)(1 + i % 4), .launched = 5000};
  for (uint8_t i = 1; i <= 4; i++) {
    nt_phase_row *ph = &s->phases[s->nphases++];
    ph->id = i;
    snprintf(ph->name, sizeof ph->name, "phase-%u", i);
  }
}

#endif

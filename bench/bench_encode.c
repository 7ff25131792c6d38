/* The plugin's side of the wire: snapshots encoded per second on one core,
 * as the publisher thread encodes them (into a buffer sized once by
 * nt_snapshot_encoded_max), for a busy process: 4 communicators x 32
 * channels each way, 4 proxy threads, kernel rows, 512 operation
 * statistics rows, a full operation log, sequence and phase rows. The
 * median of 7 runs; no budget asserted (timings depend on the machine),
 * compare two builds in one run instead.
 *
 * usage: bench_encode [iterations]      (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/nccltop_proto.h"

#define COMMS    4
#define CHANNELS 32
#define OPS      512
#define RUNS     7

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counters in the ranges a long job reaches, so no field is a trivial 0. */
static void fill(nt_snapshot *s) {
  snprintf(s->host, sizeof s->host, "gpu-node-017");
  s->pid = 4242;
  s->interval_ms = 100;
  s->mono_ns = 86400ull * 1000000000ull;
  s->wall_ns = 1760000000ull * 1000000000ull;
  s->process = (nt_process_counters){
      .events = 123456789012ull, .reclaimed_ops = 3, .event_mask = 0x3e, .abi_version = 5};
  s->ncomms = COMMS;
  for (uint32_t k = 0; k < COMMS; k++) {
    s->comms[k] = (nt_comm_row){.comm_hash = 0x9e3779b97f4a7c15ull * (k + 1),
                                .rank = 3,
                                .nranks = 16,
                                .nnodes = 2,
                                .colls_enqueued = 1000000 + k,
                                .coll_api = 1000000 + k,
                                .api_ns = 123456789};
    nt_proxy_row *p = &s->proxy[s->nproxy++];
    *p = (nt_proxy_row){.comm_index = (uint16_t)k, .tid = 100 + k, .state = 1, .appends = 900000};
    for (int i = 0; i < NT_PROXY_NSTATES; i++)
      p->state_ns[i] = 3000000000000ull / (uint64_t)(i + 1);
    for (int c = 0; c < CHANNELS; c++) {
      s->kernels[s->nkernels++] = (nt_kernel_row){
          .comm_index = (uint16_t)k, .channel = (uint8_t)c, .count = 999, .busy_ns = 1ull << 40};
      for (int d = 0; d < 2; d++)
        s->channels[s->nchannels++] =
            (nt_channel_row){.comm_index = (uint16_t)k,
                             .channel = (uint8_t)c,
                             .dir = (uint8_t)d,
                             .peer = d ? 2 : 4,
                             .wait_ns = {40000000000ull + (uint64_t)c, 90000000000ull, 1},
                             .steps = 123456789,
                             .bytes = 64ull << 30,
                             .ops_started = 1000000,
                             .ops_done = 999998,
                             .cur_step = 5,
                             .cur_wait = 1,
                             .cur_wait_age_ns = 20000,
                             .progress_age_ns = 20000,
                             .run_state = NT_RUN_RUNNING,
                             .relay_rank = -1};
    }
  }
  for (uint32_t i = 0; i < OPS; i++)
    s->ops[s->nops++] = (nt_op_row){.comm_index = (uint16_t)(i % COMMS),
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
        .comm_index = (uint16_t)(i % COMMS), .func = (uint8_t)(1 + i % 4), .launched = 5000};
  for (uint8_t i = 1; i <= 4; i++) {
    nt_phase_row *ph = &s->phases[s->nphases++];
    ph->id = i;
    snprintf(ph->name, sizeof ph->name, "phase-%u", i);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  if (n < 1) {
    fprintf(stderr, "usage: bench_encode [iterations >= 1]\n");
    return 2;
  }
  nt_snapshot *s = nt_snapshot_new();
  uint8_t *buf = NULL;
  int rc = 1;
  if (!s) goto done;
  fill(s);
  size_t cap = nt_snapshot_encoded_max(s), len = 0;
  buf = malloc(cap);
  if (!buf) goto done;
  double rate[RUNS];
  for (int k = 0; k < RUNS; k++) {
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
      s->seq = (uint64_t)i + 1; /* as the publisher does: a new message each time */
      len = nt_snapshot_encode(s, buf, cap);
      if (!len) {
        fprintf(stderr, "bench_encode: encoding failed\n");
        goto done;
      }
    }
    rate[k] = n / (now_s() - t0);
  }
  qsort(rate, RUNS, sizeof rate[0], cmp_double);
  printf("snapshot of %zu bytes (%d comms x %d channels x send+recv, %u kernel, %u ops, %u oplog "
         "rows), %d iterations, median of %d\n",
         len, COMMS, CHANNELS, s->nkernels, s->nops, s->noplog, n, RUNS);
  printf("| step | messages/s | MB/s |\n|---|---|---|\n");
  printf("| encode | %.0f | %.0f |\n", rate[RUNS / 2], rate[RUNS / 2] * (double)len / 1e6);
  rc = 0;
done:
  nt_snapshot_free(s);
  free(buf);
  return rc;
}

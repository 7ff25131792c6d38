/* The viewer's side of the budget: snapshot messages decoded per second on
 * one core (goal: over 200,000), alone and with the model update, for a
 * realistic process (4 communicators x 32 channels, send and recv rows,
 * 4 proxy threads).
 *
 * usage: bench_decode [iterations]      (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../proto/nccltop_proto.h"
#include "../monitor/core/model.h"

#define COMMS    4
#define CHANNELS 32

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What one busy rank's plugin publishes: counters in the ranges a long job
 * reaches, so no field encodes as a trivial zero. */
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
                                .p2ps_enqueued = 2000 * k};
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
    for (int c = 0; c < CHANNELS; c++)
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
            .progress_age_ns = 20000};
  }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  if (n < 1) {
    fprintf(stderr, "usage: bench_decode [iterations >= 1]\n");
    return 2;
  }
  nt_snapshot *s = nt_snapshot_new(), *out = nt_snapshot_new();
  nt_model *m = nt_model_new();
  uint8_t *buf = NULL;
  int rc = 1;
  if (!s || !out || !m) goto done;
  fill(s);
  size_t cap = nt_snapshot_encoded_max(s);
  buf = malloc(cap);
  size_t len = buf ? nt_snapshot_encode(s, buf, cap) : 0;
  if (!len) {
    fprintf(stderr, "bench_decode: encoding failed\n");
    goto done;
  }
  char err[256];
  double t0 = now_s();
  for (int i = 0; i < n; i++)
    if (nt_snapshot_decode(buf, len, out, err, sizeof err) != 0) {
      fprintf(stderr, "bench_decode: %s\n", err);
      goto done;
    }
  double decode = n / (now_s() - t0);
  t0 = now_s();
  for (int i = 0; i < n; i++) {
    if (nt_snapshot_decode(buf, len, out, err, sizeof err) != 0) {
      fprintf(stderr, "bench_decode: %s\n", err);
      goto done;
    }
    out->seq = (uint64_t)i + 1; /* a stream of successive snapshots */
    out->mono_ns += (uint64_t)i * 100000000ull;
    if (nt_model_apply_snapshot(m, "ipc:///tmp/nccltop-bench/4242.sock", 4242, out,
                                (double)i / 10)) {
      fprintf(stderr, "bench_decode: the model refused snapshot %d\n", i);
      goto done;
    }
  }
  double both = n / (now_s() - t0);
  printf("snapshot of %zu bytes (%d comms x %d channels x send+recv, %u proxy threads), %d "
         "iterations\n",
         len, COMMS, CHANNELS, s->nproxy, n);
  printf("| step | messages/s | budget |\n|---|---|---|\n");
  printf("| decode | %.0f | %s |\n", decode, decode > 200000 ? "ok (> 200,000)" : "UNDER BUDGET");
  printf("| decode + model update | %.0f | %s |\n", both,
         both > 200000 ? "ok (> 200,000)" : "under 200,000 (no budget set)");
  rc = 0;
done:
  nt_model_free(m);
  nt_snapshot_free(s);
  nt_snapshot_free(out);
  free(buf);
  return rc;
}

/* The viewer's side of the budget: snapshot messages decoded per second on
 * one core (goal: over 200,000), alone and with the model update, for a
 * realistic process (4 communicators x 32 channels, send and recv rows). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../proto/nccltop_proto.h"
#include "../tui/model.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  nt_snapshot *s = nt_snapshot_new(), *out = nt_snapshot_new();
  nt_model *m = nt_model_new();
  if (!s || !out || !m) return 1;
  snprintf(s->host, sizeof s->host, "gpu-node-017");
  s->pid = 4242;
  s->interval_ms = 100;
  s->ncomms = 4;
  for (uint32_t k = 0; k < 4; k++) {
    s->comms[k] = (nt_comm_row){.comm_hash = 0xabc0 + k, .rank = 3, .nranks = 16, .nnodes = 2};
    s->proxy[s->nproxy++] = (nt_proxy_row){.comm_index = (uint16_t)k, .tid = 100 + k};
    for (int c = 0; c < 32; c++)
      for (int d = 0; d < 2; d++)
        s->channels[s->nchannels++] = (nt_channel_row){.comm_index = (uint16_t)k,
                                                       .channel = (uint8_t)c,
                                                       .dir = (uint8_t)d,
                                                       .peer = d ? 2 : 4,
                                                       .steps = 123456,
                                                       .bytes = 1u << 30,
                                                       .ops_started = 100,
                                                       .ops_done = 99};
  }
  size_t cap = nt_snapshot_encoded_max(s);
  uint8_t *buf = malloc(cap);
  size_t len = buf ? nt_snapshot_encode(s, buf, cap) : 0;
  if (!len) return 1;
  char err[256];
  int n = 20000;
  double t0 = now_s();
  for (int i = 0; i < n; i++)
    if (nt_snapshot_decode(buf, len, out, err, sizeof err) != 0) return 1;
  double decode = n / (now_s() - t0);
  t0 = now_s();
  for (int i = 0; i < n; i++) {
    if (nt_snapshot_decode(buf, len, out, err, sizeof err) != 0) return 1;
    out->seq = (uint64_t)i + 1;
    out->mono_ns = (uint64_t)i * 100000000ull;
    nt_model_apply_snapshot(m, "bench", out, (double)i / 10);
  }
  double both = n / (now_s() - t0);
  printf("snapshot of %zu bytes (4 comms x 32 channels x send+recv, 4 proxy threads)\n", len);
  printf("| step | messages/s | budget |\n|---|---|---|\n");
  printf("| decode | %.0f | %s |\n", decode, decode > 200000 ? "ok (> 200,000)" : "UNDER BUDGET");
  printf("| decode + model update | %.0f | %s |\n", both,
         both > 200000 ? "ok (> 200,000)" : "under 200,000");
  nt_model_free(m);
  nt_snapshot_free(s);
  nt_snapshot_free(out);
  free(buf);
  return 0;
}

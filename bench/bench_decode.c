/* The viewer's side of the budget: snapshot messages decoded per second on
 * one core (goal: over 200,000), alone and with the model update, for a
 * realistic process (4 communicators x 32 channels, send and recv rows,
 * 4 proxy threads).
 *
 * usage: bench_decode [iterations]      (default 20000)
 */
#include <stdio.h>
#include <stdlib.h>

#include "busy_snapshot.h"
#include "../monitor/core/model.h"

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
  bench_fill_busy(s, false);
  size_t cap = nt_snapshot_encoded_max(s);
  buf = malloc(cap);
  size_t len = buf ? nt_snapshot_encode(s, buf, cap) : 0;
  if (!len) {
    fprintf(stderr, "bench_decode: encoding failed\n");
    goto done;
  }
  char err[256];
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++)
    if (nt_snapshot_decode(buf, len, out, err, sizeof err) != 0) {
      fprintf(stderr, "bench_decode: %s\n", err);
      goto done;
    }
  double decode = n / (bench_now_s() - t0);
  t0 = bench_now_s();
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
  double both = n / (bench_now_s() - t0);
  printf("snapshot of %zu bytes (%d comms x %d channels x send+recv, %u proxy threads), %d "
         "iterations\n",
         len, BUSY_COMMS, BUSY_CHANNELS, s->nproxy, n);
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

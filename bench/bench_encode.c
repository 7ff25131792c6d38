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

#include "busy_snapshot.h"

#define RUNS 7

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
  bench_fill_busy(s, true);
  size_t cap = nt_snapshot_encoded_max(s), len = 0;
  buf = malloc(cap);
  if (!buf) goto done;
  double rate[RUNS];
  for (int k = 0; k < RUNS; k++) {
    double t0 = bench_now_s();
    for (int i = 0; i < n; i++) {
      s->seq = (uint64_t)i + 1; /* as the publisher does: a new message each time */
      len = nt_snapshot_encode(s, buf, cap);
      if (!len) {
        fprintf(stderr, "bench_encode: encoding failed\n");
        goto done;
      }
    }
    rate[k] = n / (bench_now_s() - t0);
  }
  qsort(rate, RUNS, sizeof rate[0], cmp_double);
  printf("snapshot of %zu bytes (%d comms x %d channels x send+recv, %u kernel, %u ops, %u oplog "
         "rows), %d iterations, median of %d\n",
         len, BUSY_COMMS, BUSY_CHANNELS, s->nkernels, s->nops, s->noplog, n, RUNS);
  printf("| step | messages/s | MB/s |\n|---|---|---|\n");
  printf("| encode | %.0f | %.0f |\n", rate[RUNS / 2], rate[RUNS / 2] * (double)len / 1e6);
  rc = 0;
done:
  nt_snapshot_free(s);
  free(buf);
  return rc;
}

/* The baseline for `make bench`: a profiler plugin that does nothing but
 * read the clock once per call, as cheaply as any plugin that timestamps
 * events can. nccltop's budget is 1.5x its cost per call. */
#include <stdint.h>
#include <time.h>

#include "../../plugin/nccl_profiler_abi.h"

static unsigned char handle;
static volatile uint64_t sink;

static void tick(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  sink = (uint64_t)ts.tv_nsec;
}

static nt_nccl_result init(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                           int nranks, int rank, nt_nccl_logger log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &handle;
  *mask = 0xFFF;
  return 0;
}

static nt_nccl_result start(void *ctx, void **h, nt_descr_v5 *d) {
  (void)ctx, (void)d;
  tick();
  *h = &handle;
  return 0;
}

static nt_nccl_result stop(void *h) {
  (void)h;
  tick();
  return 0;
}

static nt_nccl_result record(void *h, int state, nt_state_args_v5 *a) {
  (void)h, (void)state, (void)a;
  tick();
  return 0;
}

static nt_nccl_result finalize(void *ctx) {
  (void)ctx;
  return 0;
}

__attribute__((visibility("default")))
const nt_profiler_v5 ncclProfiler_v5 = {"clock-only", init, start, stop, record, finalize};

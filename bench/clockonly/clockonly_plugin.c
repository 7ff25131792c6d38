/* The baseline for `make bench`: a profiler plugin that does nothing but
 * read the clock once per call, as cheaply as any plugin that timestamps
 * events can. nccltop's budget is 1.0x its cost per call (issue 28). Exports the v5
 * table (what the bench drives, NCCL 2.28) and v4 (NCCL 2.27). */
#include <stdint.h>
#include <time.h>

#include "../../plugin/nccl_profiler_abi.h"

static unsigned char handle;
/* The empty asm keeps the clock read from being optimized away. It stores
 * nothing: a shared variable written by every thread would bounce one cache
 * line between them and make the baseline slower with more threads. */
static void tick(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  __asm__ volatile("" : : "r"(ts.tv_nsec) : "memory");
}

static nt_nccl_result init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                              int nranks, int rank, nt_nccl_logger log) {
  (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  *ctx = &handle;
  *mask = 0xFFF;
  return NT_NCCL_SUCCESS;
}

static nt_nccl_result init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                              int nranks, int rank, nt_nccl_logger log) {
  return init_v5(ctx, hash, mask, name, nnodes, nranks, rank, log);
}

static nt_nccl_result start_v5(void *ctx, void **h, nt_descr_v5 *d) {
  (void)ctx, (void)d;
  tick();
  *h = &handle;
  return NT_NCCL_SUCCESS;
}

static nt_nccl_result start_v4(void *ctx, void **h, nt_descr_v4 *d) {
  (void)ctx, (void)d;
  tick();
  *h = &handle;
  return NT_NCCL_SUCCESS;
}

static nt_nccl_result stop(void *h) {
  (void)h;
  tick();
  return NT_NCCL_SUCCESS;
}

/* nt_state_args_v5 is nt_state_args_v4: one function serves both tables. */
static nt_nccl_result record(void *h, int state, nt_state_args_v4 *a) {
  (void)h, (void)state, (void)a;
  tick();
  return NT_NCCL_SUCCESS;
}

static nt_nccl_result finalize(void *ctx) {
  (void)ctx;
  return NT_NCCL_SUCCESS;
}

__attribute__((visibility("default")))
const nt_profiler_v5 ncclProfiler_v5 = {"clock-only", init_v5, start_v5, stop, record, finalize};
__attribute__((visibility("default")))
const nt_profiler_v4 ncclProfiler_v4 = {"clock-only", init_v4, start_v4, stop, record, finalize};

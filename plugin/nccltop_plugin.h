/* nccltop's profiler plugin: what libnccl-profiler-nccltop.so exports besides
 * the NCCL ABI tables (ncclProfiler_v3 ... _v7, see nccl_profiler_abi.h).
 *
 * Applications reach these with dlsym(RTLD_DEFAULT, "nccltop_tag") or
 * ctypes.CDLL(path).nccltop_tag; none of them ever blocks or fails the job.
 */
#ifndef NCCLTOP_PLUGIN_H
#define NCCLTOP_PLUGIN_H

#include <stdint.h>

#include "nccl_profiler_abi.h"

/* Phase tag: collectives and p2p operations enqueued from now on by the
 * calling thread are attributed to `tag` (cut to 31 bytes); NULL or ""
 * clears it. Operations enqueued by a thread that never called nccltop_tag
 * (PyTorch's autograd thread, a CUDA graph's host-callback thread, NCCL's
 * own group thread) take the tag any thread set last. Up to 63 distinct
 * names; later new names count as no phase. Thread-safe; costs a short
 * mutex and a few string compares, never waits for NCCL or the publisher. */
void nccltop_tag(const char *tag);

/* Replace the process-wide NCCL activation mask (NT_EV_* bits) while the job
 * runs; returns the previous mask, or -1 before the first init. On NCCL
 * 2.31 (ABI v7) a mask with KernelCh also gets KernelPhase, as at init. */
int nccltop_set_mask(int mask);

/* Test hook, exported only by the test-only build
 * (tests/libnccl-profiler-nccltop-test.so, -DNT_TEST_HOOKS): make the plugin
 * read time from `clock_ns` (nanoseconds, monotonic) instead of
 * CLOCK_MONOTONIC, so a simulated schedule produces exactly known totals.
 * NULL restores the real clock. Call before init. */
void nccltop_sim_set_clock(uint64_t (*clock_ns)(void));

/* Simulation hook: the publisher sends its snapshots now instead of at the
 * next tick (used by the simulator before it exits). */
void nccltop_flush(void);

#endif

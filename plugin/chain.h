/* Chaining another profiler plugin (NCCLTOP_CHAIN): NCCL loads one profiler
 * plugin; nccltop loads a second one itself and forwards every call to it.
 *
 * - The chained plugin is resolved as NCCL resolves NCCL_PROFILER_PLUGIN: the
 *   value as given to dlopen, then libnccl-profiler-<value>.so for a bare
 *   name; nccltop itself (any copy) is refused.
 * - It is driven through its newest ncclProfiler_vK with K <= the version NCCL
 *   initialised us with; descriptors and state arguments are converted down
 *   the way NCCL's own shims convert them for an older plugin.
 * - NCCL's activation mask is the union of ours and its; each plugin gets the
 *   events NCCL would have started for its own mask alone.
 * - A handle NCCL gets is ours when the chained plugin has none for the event,
 *   else a pair {ours, its} from the calling thread's pool: parents in its
 *   descriptors are its own handles.
 * - Its init failure, refusal (mask 0) or absence leaves nccltop working and
 *   is logged once through NCCL's logger.
 *
 * When NCCLTOP_CHAIN is unset the ABI wrappers pay one predictable branch on
 * nt_chain_on.
 */
#ifndef NCCLTOP_PLUGIN_CHAIN_H
#define NCCLTOP_PLUGIN_CHAIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nccl_profiler_abi.h"

/* True once a chained plugin is loaded (never turns false: a handle pair may
 * still be in NCCL's hands). */
extern _Atomic bool nt_chain_on __attribute__((visibility("hidden")));

static inline bool nt_chain_active(void) {
  return __builtin_expect(atomic_load_explicit(&nt_chain_on, memory_order_relaxed), 0);
}

/* state.c, under its init lock. At the first init: loads $NCCLTOP_CHAIN (cfg
 * copy) for NCCL's ABI version `abi`. */
void nt_chain_open(const char *spec, int abi);
/* Where nt_init writes nccltop's own mask: NCCL's when nothing is chained,
 * else our own variable (NCCL then gets the union, nt_chain_comm_init). */
_Atomic int *nt_chain_mask_target(_Atomic int *nccl_mask);
/* After nccltop's init of a communicator (ctx_index: its context slot). */
void nt_chain_comm_init(int ctx_index, int *nccl_mask, const char *name, uint64_t hash, int nnodes,
                        int nranks, int rank, nt_nccl_logger logfn);
/* NCCL's mask := ours | the chained plugin's, if it changed (cheap). */
void nt_chain_mask_sync(void);

/* The event path when chained (abi.c): `ours_start` is nccltop's own start
 * wrapper of the same version. */
typedef nt_nccl_result (*nt_start_fn)(void *ctx, void **h, void *descr);
typedef nt_nccl_result (*nt_record_fn)(void *h, int state, void *args);
nt_nccl_result nt_chain_start(int abi, void *ctx, void **h, void *descr, nt_start_fn ours_start);
nt_nccl_result nt_chain_stop(void *h, nt_nccl_result (*ours_stop)(void *));
nt_nccl_result nt_chain_record(int abi, void *h, int state, void *args, nt_record_fn ours_record);
/* The context NCCL passes with finalize; finalize of the chained plugin. */
void nt_chain_finalize_ctx(void *ctx);

/* Test hook data: how many events could not be forwarded (pool full, no
 * thread slot). */
uint64_t nt_chain_dropped(void);

#endif

/* NCCL 2.31's profiler thread (src/plugin/profiler.cc ncclProfilerThreadFunc,
 * "[Profiler Thread]"): one per communicator, it polls the GPU's work
 * counters and starts and stops the KernelCh events, so from 2.31 on those
 * calls come from a thread that is neither the application's nor the
 * proxy's. The simulated proxy thread, which knows when a channel's kernel
 * work starts and ends, hands both moments to this thread in order. */
#ifndef NCCLTOP_SIM_KTHREAD_H
#define NCCLTOP_SIM_KTHREAD_H

#include <stdint.h>

#include "rank.h"

typedef struct sim_kthread sim_kthread;

/* Starts the thread for communicator c; NULL (with a message) if it
 * cannot, and the caller then makes the calls itself. */
sim_kthread *sim_kthread_new(sim_comm *c);
/* Asks for KernelCh `key` (unique among those open) of channel ch, child of
 * `parent`, to start with GPU time ptimer; its opening barrier (2.31's
 * initial_sync phase) ends at GPU time `synced` (0: at once). */
void sim_kthread_start(sim_kthread *k, uint64_t key, void *parent, int ch, uint64_t ptimer,
                       uint64_t synced);
/* Asks for KernelChStop(ptimer) and the stop of KernelCh `key`. */
void sim_kthread_stop(sim_kthread *k, uint64_t key, uint64_t ptimer);
/* Lets the thread finish what was asked, joins and frees it. */
void sim_kthread_free(sim_kthread *k);

#endif

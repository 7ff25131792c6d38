/* --graph: the application captures its operations into a CUDA graph once
 * and replays the graph, as torch.cuda.graphs and NCCL's persistent plans
 * do (src/enqueue.cc ncclLaunchPrepare, hostStreamPlanTask;
 * src/plugin/profiler.cc ncclProfilerStartTaskEvents).
 *
 * Capture, on the application thread: the API events of every operation,
 * with graphCaptured set, and its KernelLaunch (the launch is captured).
 * A plan with proxy ops gets a host callback instead of running
 * hostStreamPlanTask, so no Group, Coll or P2p event yet.
 *
 * Replay, on a CUDA host-callback thread (here one per communicator): the
 * callback runs hostStreamPlanTask each time the stream reaches it: Group,
 * Coll or P2p start (parentObj still the CollApi/P2pApi handle of the
 * capture, long stopped), the proxy ops posted, the stops. The Coll's
 * seqNumber is the communicator's counter, which a persistent plan advances
 * only when the task's mask has KernelCh (and a Group or CollApi handle
 * exists): without KernelCh every replay repeats the same seqNumber.
 *
 * Intra-node communicators (graph.h) have no network proxy ops, so NCCL
 * adds no host callback: hostStreamPlanTask runs once, at capture, on the
 * application thread, and the replays emit nothing (NCCL issue #1805).
 * With KernelCh in the mask NCCL adds profiler proxy ops, so they get the
 * callback like the others; their KernelCh events are not simulated. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "app_ops.h"
#include "graph.h"
#include "runahead.h"

#define GRAPH_MAX_OPS    16
#define GRAPH_REPLAY_GAP 20000000ull /* real time: host work between replays */

typedef struct {
  sim_op_desc d;
  sim_work w;
  sim_api_ev a;
} graph_op;

typedef struct {
  sim_comm *c;
  graph_op ops[GRAPH_MAX_OPS];
  int len;
  uint64_t n, deadline;
  bool intra;
} graph;

static bool kernelch(const sim_comm *c, int mask) {
  return c->px.on && sim_mask_wants(c->px.d->abi, mask, NT_EV_KERNEL_CH);
}

/* Whether the plan of an operation has proxy ops, so that NCCL gives it a
 * host callback (plan->hasProxyOps). */
static bool has_proxy_ops(const graph *g, int mask) {
  return !g->intra || kernelch(g->c, mask);
}

static void capture(graph *g, sim_plan_fn plan) {
  for (int k = 0; k < g->len; k++) {
    graph_op *o = &g->ops[k];
    o->d = plan(g->c, (uint64_t)k, &o->w);
    sim_op_api(g->c, &o->d, &o->w, true, &o->a);
    if (!has_proxy_ops(g, o->a.mask))
      sim_op_plan(g->c, &o->d, &o->w, &o->a, false, false); /* run once, here */
    sim_op_api_end(g->c, &o->a);
  }
}

/* Interruptible real-time pause; false when stopping. */
static bool pause_ns(uint64_t ns) {
  uint64_t end = sim_real_ns() + ns;
  for (uint64_t now = sim_real_ns(); now < end && !sim_stopping(); now = sim_real_ns()) {
    uint64_t left = end - now;
    sim_sleep_ns(left < 20000000ull ? left : 20000000ull);
  }
  return !sim_stopping();
}

static void *replay_main(void *arg) {
  graph *g = arg;
  sim_comm *c = g->c;
  const nt_sim_config *cfg = c->r->cfg;
  void (*tag)(const char *) = NULL;
  /* Each replay thread names its communicator's phase (the plugin keeps a
   * tag per thread). */
  *(void **)&tag = sim_driver_sym(&c->r->drv, "nccltop_tag");
  const char *phase = NULL;
  for (uint64_t seq = 0; !sim_stopping(); seq++) {
    if (g->n && seq >= g->n) break;
    if (g->deadline && sim_real_ns() >= g->deadline) break;
    graph_op *o = &g->ops[seq % (uint64_t)g->len];
    /* Real time: a replay follows the host's other work, and the GPU's
     * compute with --run-ahead (the stream reaches the callback after it). */
    if (!cfg->deterministic && seq % (uint64_t)g->len == 0 &&
        !pause_ns(GRAPH_REPLAY_GAP + (uint64_t)cfg->run_ahead_ms * 1000000ull))
      break;
    if (tag && o->d.phase != phase) tag(o->d.phase);
    phase = o->d.phase;
    sim_work w = o->w;
    w.seq = seq;
    if (has_proxy_ops(g, o->a.mask))
      sim_op_plan(c, &o->d, &w, &o->a, !g->intra, kernelch(c, o->a.mask));
    sim_mark_launched(c->r->rank, c->index, seq);
  }
  return NULL;
}

void sim_graph_run(sim_comm *c, uint64_t n, uint64_t deadline, sim_plan_fn plan, int len) {
  graph g;
  memset(&g, 0, sizeof g);
  g.c = c;
  g.len = len < 1 ? 1 : len > GRAPH_MAX_OPS ? GRAPH_MAX_OPS : len;
  if (n && n < (uint64_t)g.len) g.len = (int)n;
  g.n = n;
  g.deadline = deadline;
  g.intra = sim_graph_intra(c->r->cfg, c->index);
  capture(&g, plan);
  pthread_t cb;
  if (pthread_create(&cb, NULL, replay_main, &g) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: cannot start the host-callback thread\n", c->r->rank);
    return;
  }
  pthread_join(cb, NULL);
}

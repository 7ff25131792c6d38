/* The application side of one operation, in the two halves NCCL splits it
 * into (app.c): the API calls on the application thread, and the plan
 * (hostStreamPlanTask) on the application thread or, for a CUDA graph, on
 * a host-callback thread at every replay (graph.c). And the operations
 * NCCL reports differently from the call (ops_split.c). */
#ifndef NCCLTOP_SIM_APP_OPS_H
#define NCCLTOP_SIM_APP_OPS_H

#include <stdbool.h>

#include "rank.h"
#include "schedule.h"

typedef struct {
  int mask;      /* the activation mask snapshot of the operation */
  void *gapi;    /* GroupApi, open until sim_op_api_end */
  void *capi;    /* CollApi (stopped) */
  void *papi[2]; /* P2pApi of the Send and of the Recv (stopped) */
} sim_api_ev;

void sim_op_api(sim_comm *c, const sim_op_desc *d, sim_work *w, bool captured, sim_api_ev *a);
void sim_op_plan(sim_comm *c, const sim_op_desc *d, sim_work *w, const sim_api_ev *a, bool post,
                 bool bump);
void sim_op_api_end(sim_comm *c, sim_api_ev *a);

/* --alltoall: ncclAlltoAll (2.28+) or the application's grouped Send/Recv
 * (2.26, 2.27). --broadcast on 2.29+: a CollApi and nothing else. */
void sim_issue_alltoall(sim_comm *c, const sim_op_desc *d, sim_work *w);
void sim_issue_hidden_bcast(sim_comm *c, const sim_op_desc *d, sim_work *w);

/* The next operation of the schedule (app.c plan). */
typedef sim_op_desc (*sim_plan_fn)(sim_comm *c, uint64_t seq, sim_work *w);

/* --graph: capture `len` operations once, then replay them until `n`
 * operations (0: until the deadline or a stop) have run (graph.c). */
void sim_graph_run(sim_comm *c, uint64_t n, uint64_t deadline, sim_plan_fn plan, int len);

#endif

/* The rules NCCL itself keeps when it calls a profiler plugin, checked on a
 * parsed trace (sim_trace.h): every real recording (tests/traces/,
 * tests/test_trace_grammar.c) and every simulator run (sim_grammar.h adds
 * the simulator's own bookkeeping on top). Each rule is one NCCL
 * guarantees in every job of the release named, read in its source and
 * checked against the real 2.28.9 recordings (docs/NCCL-BEHAVIOUR.md names
 * the row); what holds only for the jobs the simulator plays (ring peers,
 * its channel count, its sizes, exactly as many ops appended as started)
 * is not here. */
#ifndef NCCLTOP_SIM_GRAMMAR_NCCL_H
#define NCCLTOP_SIM_GRAMMAR_NCCL_H

/* The rules by side: sim_grammar_nccl_tasks.h (the job, the application's
 * calls, kernels), sim_grammar_nccl_proxy.h (the proxy side, threads). */
#include "sim_grammar_nccl_proxy.h"

/* Everything NCCL guarantees about the calls of one job that ran to its
 * end. */
static inline const char *nccl_problem(const nccl_job *j) {
  int abi = tr.nctx ? tr.ctx[0].version : 0, ver = j->version;
  if (tr.bad_lines || tr.overflow) return BAD("unreadable trace (%d bad lines)", tr.bad_lines);
  if (!tr.nctx) return BAD("no init in the trace");
  if (tr.null_calls) return BAD("%d record/stop calls with a NULL handle", tr.null_calls);
  if (tr.unknown_handles) return BAD("%d calls with a handle never returned", tr.unknown_handles);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *p = parent_of(e);
    if (e->h && e->stops == 0 && unstopped_problem(e, ver)) return why;
    if (e->h && e->stops && e->stop_line < e->line)
      return BAD("event type %d (line %d) stopped before it started", e->type, e->line);
    if (e->h && e->stops > 1 && !may_stop_again(e, ver))
      return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
    if (e->extra_records && !may_stop_again(e, ver))
      return BAD("record after stop (line %d)", e->line);
    if (!ctx_known(e)) return BAD("start with an unknown context (line %d)", e->line);
    if (abi < 5 && e->type >= NT_EV_GROUP_API) return BAD("v%d got API event %d", abi, e->type);
    if (rank_problem(e)) return why;
    switch (e->type) {
    case NT_EV_GROUP:
      if (e->parent || e->nrec) return BAD("Group line %d with a parent or records", e->line);
      break;
    case NT_EV_PROXY_STEP:
      if (step_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_PROXY_OP:
      if (proxy_op_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_PROXY_CTRL:
      if (ctrl_problem(j, e)) return why;
      break;
    case NT_EV_COLL:
      if (coll_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_P2P:
      if (p2p_problem(j, e, p, abi)) return why;
      break;
    case NT_EV_GROUP_API:
    case NT_EV_COLL_API:
    case NT_EV_P2P_API:
    case NT_EV_KERNEL_LAUNCH:
      if (api_problem(e, p)) return why;
      break;
    case NT_EV_KERNEL_CH:
      if (kernel_ch_problem(e, p, abi)) return why;
      break;
    case NT_EV_CE_COLL:
    case NT_EV_CE_SYNC:
    case NT_EV_CE_BATCH:
      if (ce_problem(e, p, abi)) return why;
      break;
    case NT_EV_KERNEL_PHASE:
      if (kernel_phase_problem(e, p, abi)) return why;
      break;
    default: break;
    }
    if (user_tag_presence_problem(e, abi)) return why;
  }
  if (foreign_problem()) return why;
  if (nccl_threads_problem(j)) return why;
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].finalizes != 1) return BAD("context finalized %d times", tr.ctx[i].finalizes);
  return NULL;
}

#endif

/* The diagnosis' internal contract between its files: alerts.c (the
 * report: stalls, operations that do not progress, ranking and the cap),
 * alerts_graph.c (one pass over every process's rows, the waits-on graph
 * and its roots), alerts_straggler.c (lateness), alerts_sync.c (sync
 * phases), alerts_slow.c (below NCCL's own prediction) and
 * alerts_publishers.c (silent publishers, drops). See
 * alerts.c for how each alert is decided. Viewer-internal: only the
 * alerts*.c files include it. */
#ifndef NCCLTOP_TUI_ALERTS_INTERNAL_H
#define NCCLTOP_TUI_ALERTS_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "model_internal.h"

/* When the most advanced rank of a communicator reached each recent launch
 * count of one function (alerts_straggler.c): a rank's lateness is the time since
 * the others first launched more than it has. Samples are kept while some
 * rank is behind them; when full, every other one is dropped (the oldest
 * kept), so the history spans long lags coarsely. */
#define NT_TOP_SAMPLES 32
typedef struct {
  uint64_t comm_hash;
  uint8_t func;
  bool seen; /* the communicator was in the last diagnosis */
  uint32_t n;
  double t[NT_TOP_SAMPLES];
  uint64_t top[NT_TOP_SAMPLES]; /* increasing */
} nt_top_hist;

/* Each rank's KernelPhase totals (NCCL 2.31) at a few recent moments
 * (alerts_sync.c): its sync share is taken over a window of seconds, not
 * one interval that may hold a single operation. Keyed by (communicator,
 * rank, process); samples oldest first. */
#define NT_SYNC_SAMPLES 10
typedef struct {
  uint64_t comm_hash;
  int32_t rank;
  uint32_t pid;
  const void *proc; /* the process it was taken from (compared, never read) */
  bool seen;        /* the rank was in the last diagnosis */
  double named_s;   /* when its share was last below the threshold (viewer clock), 0 never */
  double first_s;   /* when its current naming began (held or not), 0 never */
  uint32_t n;
  double t[NT_SYNC_SAMPLES]; /* when the snapshot summed arrived (viewer clock) */
  uint64_t sync[NT_SYNC_SAMPLES], total[NT_SYNC_SAMPLES];
} nt_sync_hist;

/* A root that rests on the others' reports alone (alerts_graph.c): a rank
 * the waits end at that is not stuck itself (it progresses other work, is
 * queued, or has launched nothing). Its waiters' reports may be older than
 * its own (a stall that just ended looks like one for an interval), so it
 * is named only once each rank waiting on it directly has reported since
 * it first looked so (since_s, the viewer's clock). Keyed by
 * (communicator, rank, process). */
#define NT_ROOT_CLAIMS 32
typedef struct {
  uint64_t comm_hash;
  int32_t rank;
  const void *proc; /* compared, never read */
  double since_s;   /* arrival of its first report that showed it so */
  bool seen;        /* a candidate in the last diagnosis */
} nt_root_claim;

/* A collectives row at the last diagnosis (alerts_slow.c): its sums then,
 * so the next one sees the interval's operations, and how long they have
 * stayed below NT_SLOW_SHARE of NCCL's prediction. Kept in the rows'
 * order (nt_model_op_stats). */
typedef struct {
  nt_op_stat row;     /* identity and sums; row.comm_name not kept (NULL) */
  double sample_s;    /* when they were taken */
  double below_since; /* start of the first interval below, 0: not below */
  double evidence_s;  /* end of the last interval with operations done */
  /* that interval's, of its fastest rank (the one of `ranks` timed in it
   * with the highest share) */
  double share, predicted_us, measured_us;
  int32_t fastest_rank;
  uint32_t ranks;
} nt_slow_hist;

/* One rank's part of a collectives row at the last diagnosis
 * (alerts_slow.c): its own sums, summed over its phases, so the next one
 * sees the interval's operations of that rank alone. Keyed by (row, pid,
 * process, rank), sorted so; only rows the model may judge (collectives
 * without a kernel variant). */
typedef struct {
  uint64_t comm_hash;
  uint64_t order;   /* func, bucket, algo, proto, pid packed: one compare sorts by them */
  const void *proc; /* the process it was taken from (compared, never read) */
  uint32_t pid;
  int32_t rank, nranks, nnodes;
  uint8_t func, bucket, algo, proto;
  uint64_t count, bytes, done, done_bytes, time_ns;
} nt_slow_rank;

/* What the diagnosis remembers between calls (diag.h), and the
 * per-process scratch of one call, kept so a steady job allocates nothing
 * for it per call. */
struct nt_diag {
  uint64_t model; /* the serial of the model it follows; another one: starts over */
  /* launch-count history per (communicator, function) (alerts_straggler.c) */
  nt_top_hist *tops;
  uint32_t ntops, tops_cap;
  /* KernelPhase totals per rank (alerts_sync.c) */
  nt_sync_hist *syncs;
  uint32_t nsyncs, syncs_cap;
  /* collectives rows against NCCL's prediction (alerts_slow.c) */
  nt_slow_hist *slows;
  uint32_t nslows;
  /* ...and each rank's part of them: the last diagnosis' (slow_ranks) and
   * a buffer the next one is built in, swapped after; both kept, so a
   * steady job allocates nothing per diagnosis */
  nt_slow_rank *slow_ranks, *slow_ranks_next;
  uint32_t nslow_ranks, slow_ranks_cap, slow_ranks_next_cap;
  /* roots waiting for their waiters' fresh reports (alerts_graph.c) */
  nt_root_claim claims[NT_ROOT_CLAIMS];
  uint32_t nclaims;
  /* During one call, per process of the model (by its index): where its
   * ranks start in the rank table, and whether a root alert names it. */
  uint32_t *rank_base;
  bool *is_root;
  uint32_t procs_cap;
};

#define COLLAPSE_AT 4 /* more ranks of a communicator than this: one line for them */
#define MAX_GROUPS  16

/* A rank's stuck channels of one (direction, wait, peer). */
typedef struct {
  int dir, wait, peer;
  uint32_t count;
  double age;
} stall_group;

typedef struct {
  nt_model_rank r; /* r.proc_index: its process in the model and the scratch */
  bool silent;     /* stale or ended: its last snapshot is not now */
  bool held;       /* its path held its messages back: not judged late (model.h) */
  bool stuck;      /* a running channel without progress for the stall time */
  int gpu_wait;    /* a stuck wait on its own GPU, NT_WAIT_NONE */
  int first_wait;  /* the wait of its oldest stuck channel */
  double stuck_age;
  uint32_t queued, running; /* channels with ops in flight, by run state */
  double old_age;           /* oldest in-flight work older than the stall time; 0 none */
  int missing_peer;         /* a peer waited on that nccltop does not see, -1 */
  uint32_t e0, ne;          /* edges: c->edges[e0 .. e0 + ne) */
  uint32_t g0, ng;          /* stuck groups: c->groups[g0 .. g0 + ng) */
  const nt_oplog_row *hung; /* its oldest operation that does not progress */
  uint32_t nhung;
  /* the graph */
  bool reach, onstack;
  int32_t index, low, scc;
  uint32_t stamp;  /* the reverse walk that last visited it */
  int32_t root;    /* the root its waits lead to: -1 none, -2 several */
  bool direct;     /* waits on a root's rank directly */
  bool named_root; /* a root alert names it */
} rank_info;

/* An alert and where it goes in the report. */
typedef struct {
  nt_alert a;
  int prio;
  double key;      /* larger first within a priority */
  int sub;         /* folded: the priority it had (what explains first) */
  int32_t root_k;  /* a root alert: its root (c->roots), else -1 */
  int32_t under_k; /* folded under root under_k (a consequence of it), else -1 */
} item;

/* P_FOLDED: the consequences of a root (the stalls and stuck operations of
 * the ranks that wait on it), after everything else, so the cap cuts them
 * first; each says which root it follows from (nt_alert.under). */
enum { P_ROOT, P_EXPLAIN, P_STALL, P_HUNG, P_STRAGGLER, P_SLOW, P_SILENT, P_DROPS, P_FOLDED };

typedef struct {
  uint32_t first, n; /* members: c->members[first .. first + n) */
  uint32_t waiters;
  double age;
} root_info;

typedef struct {
  const nt_model *m;
  nt_diag *d; /* the history, read and updated */
  rank_info *ranks;
  uint32_t n;
  uint32_t *edges, nedges;
  stall_group *groups;
  uint32_t ngroups;
  uint32_t *rev_off, *rev; /* reverse edges, CSR */
  uint32_t *members;       /* ranks of each SCC, SCC after SCC */
  uint32_t *scc_first, nscc;
  bool *scc_sink;
  root_info *roots;
  uint32_t nroots;
  item *items;
  uint32_t nitems, items_cap;
  bool oom;
  uint64_t stall_ns;
  double now_s;
  bool multi_comm; /* ranks of more than one communicator */
  bool per_rank;   /* no node lines: every straggler its own alert */
} ctx;

/* An age in seconds, written as the screen writes durations (units.h):
 * 850ms, 4.60s, 12.5s. The buffer lives until the end of the enclosing
 * block. */
#define AGE(sec) nt_fmt_ns((sec)*1e9, (char[NT_UNIT_LEN]){0}, NT_UNIT_LEN)

/* alerts.c: the helpers every part uses. */
bool al_waits_on_peer(int wait);
/* "host:pid" of a process; of a rank, with its communicator when the job
 * has several (a rank number means something only within one). */
const char *al_who(const nt_model_process *p, char *buf, size_t cap);
const char *al_comm_label(const nt_model_rank *r, char buf[48]);
const char *al_rank_who(const ctx *c, const rank_info *ri, char buf[160]);
/* "3/8 host:pid" (and the communicator as al_rank_who): "3/?" when the
 * rank count is unknown (NCCL 2.26), never "3/0". */
const char *al_rank_said(const ctx *c, const rank_info *ri, char buf[160]);
/* The rank (hash, rank) as seen from process `from` (hash 0 matches only
 * within it); NULL if nccltop does not see it. */
rank_info *al_find_rank(ctx *c, uint64_t hash, int rank, const nt_model_process *from);
/* A new alert of `kind` at priority `prio` (larger `key` first within it);
 * NULL when out of memory. */
nt_alert *al_add(ctx *c, int kind, int prio, double key, const rank_info *ri);
/* The alert just added is a consequence of root k: folded under it. */
void al_fold_last(ctx *c, int32_t k);
/* Time a process's snapshot has aged since it arrived (0 once ended). */
double al_since(const ctx *c, const nt_model_process *p);
/* "72-79", "0-3,8-11", "0,8,16": sorted numbers as runs; a list too long
 * for the buffer ends in "...". */
void al_runs(const int32_t *v, uint32_t n, char *buf, size_t cap);
__attribute__((format(printf, 2, 3))) void al_say(nt_alert *a, const char *fmt, ...);

/* alerts_graph.c */
void al_scan(ctx *c, const uint32_t *pos); /* rows into states, edges, stuck groups */
bool al_find_roots(ctx *c);                /* false: out of memory */

/* alerts_publishers.c: silent publishers and drops, after the roots
 * (a root's process is not said silent as well). */
void al_publishers(ctx *c);

/* alerts_straggler.c */
void al_stragglers(ctx *c);
/* alerts_sync.c: the ranks the others wait for in their kernels' sync
 * phases (NCCL 2.31); after the roots, whose texts it may add to. */
void al_sync_phases(ctx *c);
/* alerts_slow.c: communicators whose collectives stay below NCCL's own
 * prediction (NT_SLOW_SHARE for NT_SLOW_SUSTAIN_S). */
void al_slow(ctx *c);

#endif

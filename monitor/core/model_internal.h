/* The model's own structures, shared by its files (model.c: applying
 * messages and reading; ops.c, runs.c: what is derived from them; the
 * diagnosis, alerts*.c, reads it). Nothing outside core/ includes this. */
#ifndef NCCLTOP_MODEL_INTERNAL_H
#define NCCLTOP_MODEL_INTERNAL_H

#include "model.h"

/* One distinct topology file received (or given with --topology). */
typedef struct {
  nt_topo *topo;
  uint64_t hash; /* of the XML, so a re-sent identical file is not reparsed */
  char source[160];
  /* the file itself (NULL if it could not be copied): NCCL's model of a
   * communicator loads its own nt_topo from it (ops_model.c), so the
   * topology view's what-ifs on `topo` never move a prediction */
  char *xml;
  size_t xml_len;
} nt_model_topo_entry;
/* NCCL's model (ops_model.c): computed models, shared by the
 * communicators of one shape on one machine, and per communicator which
 * one it uses, kept until what it was computed from changes (the
 * topology, the shape, the NCCL version or the variables its processes run
 * with). */
typedef struct nt_tune_slot nt_tune_slot;
typedef struct nt_comm_model nt_comm_model;
#define NT_MODEL_TUNE_SLOTS  16
#define NT_MODEL_COMM_MODELS 4096
#define NT_MODEL_TOPOLOGIES  8
#define NT_MODEL_TOPO_FAILED 16

/* NCCL's graph dump (NCCL_GRAPH_DUMP_FILE) one source sent, its latest. */
typedef struct {
  nt_graph_dump *dump;
  uint64_t hash;
  char source[160];
} nt_model_graphs_entry;

/* An endpoint messages came from (model_source.c). */
typedef struct {
  char name[160]; /* as given (source.c's endpoint names are shorter) */
  uint32_t pid;   /* the pid it speaks for; 0: a --connect endpoint */
  uint32_t nprocs;
  size_t bytes;   /* of its processes */
  uint32_t noted; /* refusal reasons already in the error list, a bit each */
  double last_s;  /* its newest message */
  /* its newest gap (model_watch.c): its processes came back from a silence
   * having sent all along */
  double gap_s, gap_end_s; /* how long; when the first came back, 0 none */
  uint64_t gap_lost;       /* messages lost over it */
  uint32_t gap_procs;      /* processes that came back from it */
  char gap_host[NT_MAX_HOST + 1];
} src_slot;

/* The viewer's gaps (model_watch.c). */
/* Recent gaps kept; an older one is forgotten: its time then counts as
 * read (a silence that old is judged, never excused). */
#define NT_WATCH_BLIND 16
typedef struct {
  double pass_s;  /* the newest pass, 0 none: no gap is ever found */
  double usual_s; /* the loop's usual period, learned (a decaying maximum) */
  struct {
    double start, end;
  } blind[NT_WATCH_BLIND];
  uint32_t nblind, blind_head;
  double gap_start_s, gap_end_s; /* the newest gap, 0 none */
  uint64_t gap_lost;             /* messages lost over it */
  uint32_t gaps;
  double paused_s;
  uint64_t lost_unread;
} nt_watch_state;

/* A process as the model keeps it; `pub` first, so the pointers handed out
 * (nt_model_process *) convert back. */
typedef struct {
  nt_model_process pub;
  src_slot *src;
  nt_snapshot *spare; /* buffer the next snapshot goes into */
  int32_t *match;     /* per cur channel row: the same key's index in prev, or -1 */
  uint32_t match_cap;
  uint32_t nmatch; /* entries of match that describe cur (0 when unknown) */
} proc_slot;

struct nt_model {
  uint64_t serial; /* unique in the process (a new model after a replay's seek is another) */
  proc_slot *procs[NT_MODEL_MAX_PROCESSES];
  uint32_t nprocs;
  uint32_t generation;
  nt_model_error errors[NT_MODEL_ERRORS];
  uint32_t nerrors, error_head;
  uint64_t messages, bad, noted;
  uint64_t refused[NT_REFUSE_COUNT];
  src_slot *sources[NT_MODEL_MAX_SOURCES];
  uint32_t nsources;
  size_t bytes, budget;      /* bytes: of the processes and sources */
  double last_data_s, now_s; /* newest arrival; newest time any call gave */
  /* topologies (model_topo.c) */
  nt_model_topo_entry topos[NT_MODEL_TOPOLOGIES];
  uint32_t ntopos;
  uint64_t topo_failed[NT_MODEL_TOPO_FAILED]; /* hashes of files that did not load */
  uint32_t ntopo_failed, topo_failed_head;
  bool topo_full_noted;
  /* NCCL's graph dumps, one per source (model_graphs.c); files that did not
   * load are remembered in topo_failed too (a hash names the content) */
  nt_model_graphs_entry graphs[NT_MODEL_TOPOLOGIES];
  uint32_t ngraphs;
  uint64_t topo_sets; /* files loaded or replaced: predictions revalidate */
  /* NCCL's model (ops_model.c): computed models, least recently used
   * replaced; communicators sorted by (hash, nranks, nnodes) */
  nt_tune_slot *tune_slots;
  uint32_t ntune_slots;
  nt_comm_model *comm_models;
  uint32_t ncomm_models, comm_model_last; /* the last one looked up */
  /* runs (runs.c) */
  uint32_t run;              /* the current run's id, 0 before any process */
  nt_run_summary *prev_run;  /* the run before the current one, NULL none */
  nt_run_summary *ended_run; /* the current run, summarized when it ended */
  bool ended;                /* ended_run is current */
  /* the current run's environment table (runs.c), rebuilt only when a
   * hello arrives or a process is added or dropped */
  uint64_t hellos;
  struct nt_env_cache *env_cache;
  nt_watch_state watch; /* model_watch.c */
};

/* model_source.c: the source of a message, found or remembered; NULL when
 * the table is full (refused, counted). */
src_slot *nt_source_slot(nt_model *m, const char *endpoint, uint32_t pid, double now_s);
/* Counts a refusal of one of src's messages (src may be NULL) and notes it
 * in the error list the first time for that source and reason. Returns -1. */
int nt_refuse(nt_model *m, src_slot *src, const char *endpoint, int reason, const char *detail,
              double now_s);
/* Whether `more` bytes fit the budget and the source's half of it. */
bool nt_budget_allows(const nt_model *m, const src_slot *src, size_t more);
void nt_sources_free(nt_model *m);

/* model_buf.c: snapshot buffers sized to the rows they hold. */
nt_snapshot *nt_buf_new(void);
void nt_buf_free(nt_snapshot *s);
size_t nt_buf_bytes(const nt_snapshot *s); /* as allocated now; 0 for NULL */
/* The bytes s (NULL: a new buffer) will take once it holds a copy of src
 * (rows clamped to the protocol's limits). */
size_t nt_buf_need(const nt_snapshot *s, const nt_snapshot *src);
/* Sizes s so; -1 when out of memory, and then its rows are not to be read
 * (some arrays may have shrunk): the caller frees it. */
int nt_buf_fit(nt_snapshot *s, const nt_snapshot *src);

/* runs.c: a process was created (joins the current run, or starts one);
 * the model ticked (a run whose processes all ended is summarized); a
 * process is about to be dropped. */
void nt_runs_process_added(nt_model *m, proc_slot *p);
void nt_runs_tick(nt_model *m);
void nt_runs_free(nt_model *m);
/* model_topo.c: frees every topology held (and the predictions made from
 * them). */
void nt_model_topologies_free(nt_model *m);
/* A file's content hash, and the ring of those that did not load (a file
 * re-sent as it was costs neither a parse nor a second error). */
uint64_t nt_model_file_hash(const char *p, size_t n);
bool nt_model_file_known_bad(const nt_model *m, uint64_t h);
void nt_model_file_remember_bad(nt_model *m, uint64_t h);
/* model_graphs.c */
void nt_model_graphs_free(nt_model *m);
/* ops_model.c: frees the per-communicator models. */
void nt_op_models_free(nt_model *m);

/* model_watch.c, fed by model.c. A message was applied now (the viewer
 * reads: a pass, once passes are noted at all). */
void nt_watch_reading(nt_model *m, double now_s);
/* Before s follows p's latest snapshot: whether p comes back from a
 * silence having sent all along (a path's gap: held, noted on its source). */
void nt_watch_arrival(nt_model *m, proc_slot *p, const nt_snapshot *s, double now_s);
/* p's latest snapshot followed one `gap` sequence numbers back: lost
 * messages, the watcher's or not. */
void nt_watch_lost(nt_model *m, proc_slot *p, uint64_t gap, double now_s);
/* p's latest snapshot was applied; `was` the counters of the one before
 * (NULL: a first one, or a restart): a drop counter that grew is news. */
void nt_watch_counters(proc_slot *p, const nt_process_counters *was, double now_s);
/* The time in [t, now] the viewer read (its gaps left out, an open one
 * too): what silence and lateness are measured in. */
double nt_watch_since(const nt_model *m, double t, double now_s);
/* How long a publisher may stay silent before it is stale. */
double nt_stale_limit(const nt_model_process *p);

/* The model's caches (NCCL's model per communicator, ops_model.c; the
 * current run's variables table, runs.c) keep what is a function of the
 * model's content alone, to save work: a reader that fills them through a
 * const model changes nothing any reader can see. This is the one place
 * const is cast away, and only those two caches may use it. */
static inline nt_model *nt_model_cache_of(const nt_model *m) {
  return (nt_model *)m;
}

/* A process entry's slot (the entry is the slot's first member). */
static inline proc_slot *slot_of(const nt_model_process *p) {
  return (proc_slot *)p;
}

/* Channel rows are ordered by (communicator, channel, direction, peer,
 * PXN relay rank: -1, the rank's own row, first); chan_subcmp leaves the
 * communicator out (its index differs between snapshots). */
#define CMP(x, y) ((x) < (y) ? -1 : (x) > (y) ? 1 : 0)
static inline int chan_subcmp(const nt_channel_row *a, const nt_channel_row *b) {
  if (a->channel != b->channel) return CMP(a->channel, b->channel);
  if (a->dir != b->dir) return CMP(a->dir, b->dir);
  if (a->peer != b->peer) return CMP(a->peer, b->peer);
  return CMP(a->relay_rank, b->relay_rank);
}

#endif

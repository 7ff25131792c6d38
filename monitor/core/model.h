/* The viewer's state store: everything nccltop knows about every publisher.
 *
 * Sources (live ZeroMQ sockets, and recordings being replayed) feed decoded messages
 * in; batch output, JSON and every screen read the same model. Nothing here
 * draws or touches a socket, so tests drive it directly.
 *
 * Time: `now_s` arguments are the viewer's own monotonic clock in seconds;
 * publisher clocks are only ever compared with themselves.
 */
#ifndef NCCLTOP_MODEL_H
#define NCCLTOP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "../../proto/nccltop_proto.h"
#include "../../topo/graph_dump.h"
#include "../../topo/topo.h"
#include "units.h"

#define NT_MODEL_MAX_PROCESSES 4096
#define NT_MODEL_ERRORS        64 /* most recent decode errors kept */
#define NT_MODEL_HISTORY       64 /* proxy-state history samples per thread */
#define NT_STALE_INTERVALS     3  /* silent intervals before a publisher is stale */
/* ...but never sooner than this: at the default 100 ms interval a publisher
 * thread delayed 300 ms on a busy node would otherwise flicker STALE. */
#define NT_STALE_MIN_S 1.0
/* An ended process (final snapshot, or its socket and pid gone) stays
 * visible, marked, this long; then nt_model_tick drops it. */
#define NT_MODEL_ENDED_KEEP_S 60.0

/* What one publisher may cost the viewer (issue 17). A source is the
 * endpoint a message came from: a local endpoint (<pid>.sock in the endpoint
 * directory) speaks for its own pid only; a --connect endpoint (a relay, or
 * plugins sending through NCCLTOP_CONNECT) speaks for the processes it
 * introduced, in a namespace of its own: processes are keyed by (source,
 * host, pid), so no endpoint can reach another's processes. */
#define NT_MODEL_MAX_PER_CONNECT 2048 /* processes one --connect endpoint may introduce */
#define NT_MODEL_MAX_SOURCES                                                                       \
  8192 /* endpoints remembered (with their refusals): local                                        \
          publishers and up to 4096 --hosts relays */
/* An entry that never produced a snapshot (made by a hello or a comm message
 * only) is dropped this long after its last message: a real plugin sends a
 * snapshot to every new subscriber at once. */
#define NT_MODEL_UNSEEN_KEEP_S 10.0
/* The bytes the processes may take (entries and snapshot buffers, counted
 * as allocated): beyond it new processes, and snapshots that need bigger
 * buffers, are refused; one source may take at most half of it, so a job
 * started later always has room. --max-memory changes it. */
#define NT_MODEL_DEFAULT_BUDGET (1024ull << 20)
/* Sequence numbers and clocks may move forward only as far as the time since
 * the last accepted snapshot allows (viewer clock): seq by NT_SEQ_JUMP_SLACK
 * plus twice the intervals elapsed (the plugin's interval is never below
 * 10 ms); the publisher's clock by NT_CLOCK_JUMP_SLACK_S plus
 * NT_CLOCK_MAX_RATE times the time elapsed (the simulator's virtual clock
 * runs at its own pace, never a thousand times faster for an hour). */
#define NT_SEQ_JUMP_SLACK     1000
#define NT_SEQ_MIN_INTERVAL_S 0.010
#define NT_CLOCK_JUMP_SLACK_S 3600.0
#define NT_CLOCK_MAX_RATE     1000.0

/* Why a message was refused; counted per reason, noted once per source and
 * reason in the error list. */
enum nt_refusal {
  NT_REFUSE_PID,         /* a local endpoint spoke for another pid */
  NT_REFUSE_SOURCE_FULL, /* the source has all the processes it may have */
  NT_REFUSE_TABLE_FULL,  /* NT_MODEL_MAX_PROCESSES known, or too many sources */
  NT_REFUSE_MEMORY,      /* the byte budget (or the source's half of it) is spent */
  NT_REFUSE_SEQ_JUMP,    /* a sequence number far ahead of what time allows */
  NT_REFUSE_CLOCK_JUMP,  /* a publisher clock far ahead of what time allows */
  NT_REFUSE_COUNT,
};
const char *nt_refusal_name(int reason); /* "pid", "source_full", ... */

typedef struct {
  double time_s;
  char source[64]; /* endpoint or "replay" */
  char text[160];  /* already sanitized */
} nt_model_error;

/* One publishing process: (source, host, pid). */
typedef struct {
  uint32_t pid;
  char host[NT_MAX_HOST + 1]; /* sanitized */
  char endpoint[128];         /* its source's name */
  uint32_t endpoint_pid;      /* the pid its source speaks for, 0: a --connect one */
  bool have_hello;
  nt_hello hello;                       /* strings sanitized on arrival */
  nt_comm_info comm_info[NT_MAX_COMMS]; /* names, by snapshot comm index order not guaranteed */
  uint32_t ncomm_info;
  nt_snapshot *cur;                               /* latest snapshot, NULL before the first */
  nt_snapshot *prev;                              /* the one before it (rates), NULL if none */
  double cur_time_s, prev_time_s;                 /* when they arrived */
  double first_time_s;                            /* first snapshot ever (since-start shares) */
  nt_snapshot *first;                             /* first snapshot, for "since start" */
  uint64_t messages, bad_messages, lost_messages; /* lost: gaps in seq */
  bool stale;                                     /* no snapshot for NT_STALE_INTERVALS intervals */
  bool ended;                                     /* final snapshot seen, or the process is gone */
  uint64_t restarts;   /* sequence numbers started over: a new process with the same pid */
  uint64_t duplicates; /* snapshots already seen (or older ones), ignored */
  double ended_time_s; /* when `ended` was set */
  uint32_t run;        /* the run (job) it belongs to: see nt_model_run_summary */
  double last_msg_s;   /* its newest message (unseen entries expire by it) */
  size_t bytes;        /* what it costs: the entry and its snapshot buffers */
  /* The watcher (model_watch.c): of lost_messages, those lost while the
   * viewer, or the path to this process (a relay), was not reading: the
   * watcher's loss, not the job's. */
  uint64_t lost_unread;
  double drops_s;      /* when a drop counter last grew (the plugin's, or a loss
                          not in lost_unread); 0 never: the drops alert */
  double held_until_s; /* its path held its messages: lateness not judged before */
} nt_model_process;

/* One rank: a (process, communicator) pair, the unit the views list. */
typedef struct {
  const nt_model_process *proc;
  uint32_t proc_index; /* proc's place in the model (nt_model_process_at) */
  uint16_t comm_index; /* into proc->cur->comms */
  uint64_t comm_hash;
  int32_t rank, nranks, nnodes;
  const char *comm_name; /* "" when unknown; sanitized */
} nt_model_rank;

typedef struct nt_model nt_model;

/* How a communicator is named everywhere (screen, text, JSON alerts,
 * traces): its name when NCCL gave one, else its hash in 16 hex digits, so
 * one communicator never reads as two. The name is cut to cap - 1. */
#define NT_COMM_LABEL 48
const char *nt_comm_label(const char *name, uint64_t hash, char *buf, size_t cap);

nt_model *nt_model_new(void);
void nt_model_free(nt_model *m);

/* Apply decoded messages from the source `endpoint`, which speaks for
 * endpoint_pid (a local endpoint's pid, from its socket name) or, with 0, is
 * a --connect endpoint (see NT_MODEL_MAX_PER_CONNECT). They copy what they
 * keep. Return 0, or -1 when the message was refused (counted per reason,
 * see enum nt_refusal). */
int nt_model_apply_snapshot(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                            const nt_snapshot *s, double now_s);
int nt_model_apply_hello(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                         const nt_hello *h, double now_s);
int nt_model_apply_comm(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                        const nt_comm_info *c, double now_s);
/* The byte budget (NT_MODEL_DEFAULT_BUDGET until set). */
void nt_model_set_budget(nt_model *m, size_t bytes);
size_t nt_model_budget(const nt_model *m);
/* Bytes the model holds now: itself, its sources and every process entry
 * with its snapshot buffers, as allocated (malloc's own overhead aside). */
size_t nt_model_bytes(const nt_model *m);
/* A message that failed to decode; text is sanitized before it is kept. */
void nt_model_note_error(nt_model *m, const char *source, const char *text, double now_s);
/* A problem that is not a bad message (an endpoint directory refused, a
 * connect that failed): kept in the same list, not counted as bad. */
void nt_model_note_problem(nt_model *m, const char *source, const char *text, double now_s);
/* Marks stale publishers (silent NT_STALE_INTERVALS intervals of the time
 * the viewer read, at least NT_STALE_MIN_S: see the watcher below) and
 * ended ones, and drops those ended more than
 * NT_MODEL_ENDED_KEEP_S ago, and those that never sent a snapshot and were
 * silent NT_MODEL_UNSEEN_KEEP_S; call once per frame. */
void nt_model_tick(nt_model *m, double now_s);
/* A local endpoint went away (its pid is dead or its socket file was
 * removed): the processes it introduced are marked ended. Matched by the
 * endpoint, not the pid, so a process with the same pid in another PID
 * namespace (another socket) is untouched; a --connect endpoint's processes
 * are never touched: a relay's remote pids are not ours to judge. */
void nt_model_endpoint_gone(nt_model *m, const char *endpoint);

/* The machine's topology: from --topology, or from a publisher's topology
 * message (NCCL_TOPO_DUMP_FILE). Each source's latest file is kept (at most
 * NT_MODEL_TOPOLOGIES sources; a file another source already sent is not
 * kept twice), at its index for good: a source's new version replaces its
 * file in place, so a reader that shows index i keeps showing that source
 * (the topology view picks which, and computes its what-ifs on a copy of
 * its own). A bad one is a model error, noted once per distinct file.
 * Returns 0 when the file is held. */
int nt_model_set_topology(nt_model *m, const char *xml, size_t len, const char *source,
                          double now_s);
/* NCCL's channel graphs as a publisher forwarded them (NCCL_GRAPH_DUMP_FILE:
 * the ring, tree, CollNet and NVLS search results of the last communicator
 * the dumping rank initialised). One is held per source, the latest it
 * sent; a bad one is a model error, noted once per distinct file. Returns
 * 0 when the file is held. */
int nt_model_set_graphs(nt_model *m, const char *xml, size_t len, const char *source, double now_s);
/* The graphs from `prefer` (the shown topology's source: the same machine)
 * when that source sent some, else the first received; NULL when none. */
const nt_graph_dump *nt_model_graphs(const nt_model *m, const char *prefer, const char **source);

/* How many sources' topologies are held. */
uint32_t nt_model_topology_count(const nt_model *m);
/* The i-th (in the order their sources first sent one; NULL past the end)
 * as loaded: the model never computes it, and no reader may (load a copy
 * from its file to compute what-ifs on). `source` names where it came from,
 * `hash` (either may be NULL) tells one version of its file from another. */
const nt_topo *nt_model_topology_at(const nt_model *m, uint32_t i, const char **source,
                                    uint64_t *hash);
/* The i-th's file as received; NULL when there is none or it could not be
 * kept (out of memory). */
const char *nt_model_topology_xml(const nt_model *m, uint32_t i, size_t *len);

/* Reading. Pointers stay valid until the next apply/tick call. Whoever keeps
 * rank rows across those calls (a paused screen) must collect them again
 * when nt_model_generation changes: it does whenever a process is added or
 * dropped. */
uint32_t nt_model_generation(const nt_model *m);
/* Which model this is: never 0, never reused by another (a replay's seek
 * makes a new one), so whoever remembers what it told a model can tell. */
uint64_t nt_model_serial(const nt_model *m);
uint32_t nt_model_nprocesses(const nt_model *m);
const nt_model_process *nt_model_process_at(const nt_model *m, uint32_t i);
/* A process of an earlier run (job) that ended or went silent: once a new
 * run has started, its ranks are the new run's business no longer. The
 * process list still shows it (marked) until it is dropped. */
bool nt_model_process_replaced(const nt_model *m, const nt_model_process *p);
/* Ranks sorted by (comm hash, rank), those of replaced processes left out;
 * returns how many were written. */
uint32_t nt_model_ranks(const nt_model *m, nt_model_rank *out, uint32_t cap);
uint32_t nt_model_nerrors(const nt_model *m);
const nt_model_error *nt_model_error_at(const nt_model *m, uint32_t i); /* 0 = newest */
uint64_t nt_model_total_messages(const nt_model *m);
uint64_t nt_model_total_bad(const nt_model *m);           /* messages that failed to decode */
uint64_t nt_model_total_errors(const nt_model *m);        /* everything noted, bad or problem */
uint64_t nt_model_total_refused(const nt_model *m);       /* messages refused, every reason */
uint64_t nt_model_refused(const nt_model *m, int reason); /* per enum nt_refusal */
double nt_model_last_data_s(const nt_model *m); /* arrival of the newest snapshot, 0 none */

/* Derived numbers, the same for screen and batch output. */
/* Share (0..1) of time per proxy state over the last interval (cur vs prev;
 * since the first snapshot, then the cumulative split, when nothing moved)
 * and since the plugin started (total). Rows are matched by thread id. */
void nt_model_proxy_shares(const nt_model_process *p, const nt_proxy_row *row,
                           double last[NT_PROXY_NSTATES], double total[NT_PROXY_NSTATES]);
/* Steps/s and bytes/s of a channel row over the last interval, in the
 * publisher's own time; 0 when unknown. Rows of cur and prev are matched by
 * key (communicator hash, channel, direction, peer), never by position. */
void nt_model_channel_rates(const nt_model_process *p, const nt_channel_row *row,
                            double *steps_per_s, double *bytes_per_s);
/* The wait state holding the most time over the last interval (since start if
 * nothing moved), as enum nt_wait, NT_WAIT_NONE when none. */
int nt_model_channel_dominant_wait(const nt_model_process *p, const nt_channel_row *row);
/* Both of the above at once (one match of the row in the last snapshot). */
void nt_model_channel_derive(const nt_model_process *p, const nt_channel_row *row,
                             double *steps_per_s, double *bytes_per_s, int *dominant_wait);
/* A row is stalled (stuck) when ops are in flight, they are running (run
 * state running, or unknown from a 1.1 publisher: anything but queued) and
 * its step has not changed for stall_ms. Queued work (the GPU has not
 * reached it: CPU run-ahead) is never stalled, however old. A row that
 * never progressed (progress_age_ns UINT64_MAX) is not: its age is
 * unknown. */
bool nt_model_channel_stalled(const nt_channel_row *row, uint32_t stall_ms);

/* ---- the watcher (model_watch.c) ----
 *
 * What the viewer could not read is not the job's fault. Two gaps are told
 * apart from a job that stopped sending:
 * - the viewer's own: the loops that drive the model note each pass
 *   (nt_source_poll does, and every message applied counts as one); a pass
 *   later than NT_WATCH_GAP_FACTOR times the loop's usual period (never
 *   less than NT_WATCH_GAP_MIN_S, never more than NT_WATCH_GAP_MAX_S) is a
 *   gap: the viewer was stopped (Ctrl-Z, SIGSTOP), descheduled, or blocked
 *   writing its output. Silence (stale) and lateness (stragglers) count
 *   only the time the viewer read: its gaps, the one going on included,
 *   are left out. Sequence gaps over a gap or up to NT_WATCH_SETTLE_S after
 *   it are its loss (lost_unread), not the job's.
 * - a path's (a relay, or the link to it): a process silent to a reading
 *   viewer whose next snapshot shows that it kept sending (a sequence gap,
 *   or a publisher clock that moved less than half the silence: the
 *   message was held on the way) was not silent; its loss then is the
 *   path's, and its lateness is not judged for NT_WATCH_SETTLE_S, while
 *   what the path held back is read. While the path is silent, a relay all
 *   of whose processes went silent is one alert (alerts.c).
 * A model that is never given a pass (a replay, a test) has no gaps. */
#define NT_WATCH_GAP_FACTOR 4.0
#define NT_WATCH_GAP_MIN_S  0.5
#define NT_WATCH_GAP_MAX_S  2.0
#define NT_WATCH_SETTLE_S   5.0
#define NT_WATCH_SHOW_S     15.0 /* a gap is told this long after it ended */
/* A drops alert lasts this long after the last new loss. */
#define NT_DROPS_CLEAR_S 10.0

/* One pass of the loop that drives the model (it reads its sources now). */
void nt_model_note_pass(nt_model *m, double now_s);

enum nt_watch_kind { NT_WATCH_VIEWER, NT_WATCH_PATH };
/* A gap in what the viewer read, as the frame tells it. */
typedef struct {
  int kind;                   /* enum nt_watch_kind */
  char source[64];            /* the path's endpoint; "" the viewer's */
  char host[NT_MAX_HOST + 1]; /* the path's processes' host; "" */
  uint32_t processes;         /* the path's processes (paths: how many) */
  uint32_t paths;             /* paths this note folds (1; 0 the viewer) */
  double gap_s;               /* how long nothing was read (so far, when open) */
  bool open;                  /* the viewer's gap still going on */
  double ago_s;               /* since it ended */
  double resume_in_s;         /* until the settling after it ends; 0 settled */
  uint64_t lost;              /* messages lost over it: the watcher's */
  char text[256];             /* one line for people; sanitized */
} nt_watch_note;
#define NT_WATCH_NOTES 4 /* the viewer's, and paths (folded beyond 2) */
/* Gaps told now (ended within NT_WATCH_SHOW_S, or going on), the viewer's
 * first. */
uint32_t nt_model_watch_notes(const nt_model *m, nt_watch_note *out, uint32_t cap, double now_s);
typedef struct {
  uint32_t gaps;        /* the viewer's gaps so far */
  double paused_s;      /* their time */
  uint64_t lost_unread; /* messages lost over them and over paths' gaps */
} nt_watch_totals;
void nt_model_watch_totals(const nt_model *m, nt_watch_totals *out);

/* ---- operations (ops.c) ---- */

/* nccl-tests' formulas (its doc/PERFORMANCE.md): an operation of S bytes
 * (count x datatype size, as NCCL counts it: per rank for AllGather,
 * ReduceScatter, AlltoAll, Gather and Scatter) moves nt_alg_bytes in the
 * algorithm bandwidth's sense, and bus bandwidth = algorithm bandwidth x
 * nt_bus_factor, which makes numbers comparable across rank counts:
 *   AllReduce            S,     2(n-1)/n
 *   AllGather, ReduceScatter, AlltoAll, Gather, Scatter
 *                        S x n, (n-1)/n
 *   Broadcast, Reduce    S,     1
 *   Send, Recv, SendRecv S,     1
 * With the rank count unknown (nranks <= 0: NCCL 2.26 does not give it)
 * what depends on n is NaN, which stays NaN through the sums below: the
 * bandwidth is unknown ("?" on screen, null in JSON), never 0. */
double nt_alg_bytes(int func, double bytes, int nranks);
double nt_bus_factor(int func, int nranks);

/* Operation statistics of the current run (see runs below), summed over
 * the ranks of each communicator and over phases: one row per
 * (communicator, kind, function, algorithm, protocol, kernel variant, size
 * bucket), sorted that way. Phases and recent operations are of the current run too. */
typedef struct {
  uint64_t comm_hash;
  const char *comm_name;  /* sanitized, "" unknown */
  int32_t nranks, nnodes; /* nnodes: NCCL's, as the communicator reported it (0 unknown) */
  uint8_t kind, func, algo, proto, bucket;
  char variant[NT_MAX_VARIANT + 1]; /* NCCL 2.31's symmetric kernel, "" none; sanitized */
  uint32_t ranks;                   /* ranks that reported the row */
  uint64_t count, done;             /* operations; done ones have a duration */
  uint64_t bytes;                   /* of all of them */
  uint64_t gpu_done;                /* done ones timed by the GPU */
  uint64_t sync_ns, compute_ns;     /* protocol 1.3: their KernelPhase GPU time (NCCL 2.31) */
  double time_s;                    /* summed durations (over ranks) */
  double alg_bytes, bus_bytes;      /* of the done ones, see nt_alg_bytes */
  uint32_t last_proc_;              /* internal: the last process counted in `ranks` */
} nt_op_stat;
uint32_t nt_model_op_stats(const nt_model *m, nt_op_stat *out, uint32_t cap);
/* What reported a row's operations: "coll" or "p2p" (NCCL's Coll and P2p
 * events), "collapi" (a collective with no Coll and no algorithm that is a
 * Broadcast: NCCL 2.29+ reports only its CollApi) or "ce" (any other such
 * collective: a copy-engine CeColl). Only "coll" and "p2p" rows are timed. */
const char *nt_op_source(const nt_op_stat *r);
/* The rows' times: "measured" (every operation), "partial" (some) or
 * "unknown" (none: its time and bandwidths are not 0 but unknown). */
const char *nt_op_timing(const nt_op_stat *r);

/* NCCL's own prediction for a row (ops_model.c): the time NCCL's tuning
 * model (topo/tuning.h, after ncclTopoTuneModel and ncclTopoGetAlgoTime in
 * src/graph/tuning.cc) gives one operation of the row's mean size with the
 * row's algorithm and protocol, on the communicator's machine: the
 * topology its processes sent (or the only one held), the ring and tree
 * graphs NCCL's search finds there over nnodes identical nodes, the NCCL
 * version and the tuning variables of its processes. Like NCCL it assumes
 * every channel. Unknown (never 0) without a topology, when the topology's
 * GPUs x nnodes are not the communicator's ranks, for point-to-point,
 * symmetric-kernel and copy-engine rows, and for algorithms the model has
 * no bandwidth for. Computed once per communicator and kept until its
 * inputs change: cheap to call per row per frame. */
#define NT_OP_BOTTLENECK 128
typedef struct {
  bool known;
  double time_us;   /* predicted, per operation */
  double busbw_gbs; /* the bus bandwidth (nccl-tests' sense) that time means */
  /* measured performance as a share of the model's: predicted over measured
   * mean time (0.58: "58% of model"); < 0 when no operation was timed */
  double ratio;
  const char *why; /* when unknown, why (static text) */
  /* the link the model says limits the communicator's ring: the path
   * between ring neighbours with the lowest bandwidth and its narrowest hop
   * ("GPU3->NET3 PXB, narrowest hop PCI 0000:1a:00.0->NET3 24 GB/s"); "" none */
  char bottleneck[NT_OP_BOTTLENECK];
} nt_op_model;
void nt_model_op_model(const nt_model *m, const nt_op_stat *r, nt_op_model *out);
/* The algorithm as the views name it: NCCL's ("RING"), or for a
 * symmetric-kernel collective (NCCL 2.31, a kernel variant) "sym:" and
 * the variant's part after the function, as NCCL's own algo field has it
 * ("AllReduce_AGxLL_R" -> "sym:AGxLL_R"); "sym" when the variant's name
 * is not known. */
const char *nt_algo_label(int algo, const char *variant, bool symmetric, char *buf, size_t cap);
/* The name of a snapshot's variant id, "" none. */
const char *nt_variant_name(const nt_snapshot *s, uint8_t id);
/* GB/s (1e9 bytes) from a row's sums; 0 when nothing was timed; NaN when
 * the bytes are (an unknown rank count). */
double nt_stat_algbw(double alg_bytes, double time_s);

/* Per phase (nccltop_tag), over every communicator and rank; "" is the
 * time outside any phase. Sorted by name. time_s is busy time: the sum of
 * the operations' times, so where a rank's communicators run operations
 * at the same time (comms > 1) it counts the overlap twice, and the phases
 * can add up to more than the job has run. */
typedef struct {
  char name[4 * NT_MAX_PHASE + 1];
  uint8_t source; /* enum nt_phase_source: NT_PHASE_USER_TAG if a rank says so */
  uint32_t ranks;
  uint32_t comms; /* the most communicators one rank has operations of in this phase */
  uint64_t count, done, bytes;
  double time_s, alg_bytes, bus_bytes;
} nt_phase_stat;
/* At most NT_MAX_PHASES + 1 rows (every phase id and "no phase"). */
uint32_t nt_model_phase_stats(const nt_model *m, nt_phase_stat *out, uint32_t cap);
/* The note a phase table needs under it when its busy times may overlap
 * (some rank's phase spans several communicators): one line saying what
 * BUSY/rank adds up; NULL when no note is needed. */
const char *nt_phase_busy_note(const nt_phase_stat *ph, uint32_t n, char *buf, size_t cap);

/* Recent and in-flight operations of every rank: in flight first (oldest
 * first), then done ones, newest first. At most `per_rank` done ones per
 * rank are taken. */
typedef struct {
  const nt_model_process *proc;
  uint64_t comm_hash;
  int32_t rank, nranks;
  const char *comm_name;
  const char *phase;   /* "" none; sanitized */
  const char *variant; /* its symmetric kernel, "" none; sanitized */
  const nt_oplog_row *op;
  double age_s; /* since it was enqueued, now */
} nt_recent_op;
uint32_t nt_model_recent_ops(const nt_model *m, nt_recent_op *out, uint32_t cap, uint32_t per_rank,
                             double now_s);
/* "32K-64K": the range of a size bucket. */
const char *nt_fmt_bucket(int bucket, char *buf, size_t cap);

/* ---- rings and trees over a communicator's ranks (model_rings.c) ----
 *
 * What NCCL connects (topo/connect.c, as connect.cc) over the ranks a
 * communicator really has: its processes' hosts are its nodes, numbered in
 * the order of their lowest rank, each node's ranks ascending (its local
 * ranks), as init.cc numbers them; every node is taken to run the same
 * per-node graphs (NCCL's dump, or the search on the topology shown), the
 * GPU of local rank k being the one of the topology's k-th rank attribute. */
#define NT_LAYOUT_MAX_COMMS 8
typedef struct {
  uint64_t comm_hash;
  char label[NT_COMM_LABEL];
  int32_t nranks, nnodes;         /* as NCCL reported them */
  int nlocal;                     /* ranks per node; 0 when the layout is not whole */
  int *node_ranks;                /* [n * nlocal + k]: node n's k-th rank; NULL when not whole */
  char (*hosts)[NT_MAX_HOST + 1]; /* node n's host; NULL when not whole */
  nt_topo_env env;                /* NCCL's defaults and its processes' channel variables */
  char why[128];                  /* "" whole; else why there are no rings */
} nt_comm_layout;
/* The current run's communicators, most ranks first (then by hash), at
 * most cap of them; *more receives how many were left out (may be NULL).
 * Free each with nt_comm_layout_free. */
uint32_t nt_model_comm_layouts(nt_model *m, nt_comm_layout *out, uint32_t cap, uint32_t *more);
void nt_comm_layout_free(nt_comm_layout *l);
/* From NCCL's own dump: its ring (id 0) and tree (id 1) graphs, their GPUs
 * (dev numbers) mapped to local ranks through the topology's GPUs (t; by
 * dev order without one, then Hopper's channel doubling is not known).
 * NULL with why when the dump does not fit the layout (another shape of
 * communicator, a GPU the topology lacks). */
nt_topo_rings *nt_comm_rings_from_dump(const nt_comm_layout *l, const nt_graph_dump *d,
                                       const nt_topo *t, char *why, size_t cap);
/* From the search's graphs on the topology (g of nt_topo_graphs_compute on
 * t with 1 node for a one-node communicator, more for several: only whether
 * channels cross nodes changes the search). */
nt_topo_rings *nt_comm_rings_from_graphs(const nt_comm_layout *l, const nt_topo *t,
                                         const nt_topo_graphs *g, char *why, size_t cap);

/* ---- environment and runs (runs.c) ---- */

/* Every NCCL* variable of the current run's processes. */
typedef struct {
  const char *name;  /* sanitized */
  const char *value; /* the most common value; sanitized */
  uint32_t have;     /* processes that set it (of nprocs) */
  uint32_t nvalues;  /* distinct values, counting "unset" when some lack it */
  bool differs;      /* not the same on every process */
} nt_env_row;
/* Sorted by name, differing ones first when differs_first. */
uint32_t nt_model_env(const nt_model *m, nt_env_row *out, uint32_t cap, bool differs_first);
/* The value of `name` in process p, NULL when unset. */
const char *nt_model_env_of(const nt_model_process *p, const char *name);

/* A run is the set of processes that came up while another of them was
 * still alive: a job. When every process of a run has ended and a new one
 * appears, a new run starts and the last one's summary is kept, so a user
 * can change one variable, restart and compare. */
#define NT_RUN_MAX_OPS 256
typedef struct {
  char name[NT_MAX_ENV_NAME + 1];
  char value[NT_MAX_ENV_VALUE + 1]; /* "" unset; the most common when it differs */
  bool differs;
} nt_run_env;
typedef struct {
  uint8_t func, algo, proto, bucket;
  char variant[NT_MAX_VARIANT + 1]; /* "" none */
  uint64_t count, done;
  double time_s, alg_bytes, bus_bytes;
} nt_run_op;
typedef struct {
  uint32_t id;
  uint32_t processes, ranks;
  double start_s, end_s; /* first and last snapshot (viewer clock) */
  nt_run_env env[NT_MAX_ENV];
  uint32_t nenv;
  nt_run_op ops[NT_RUN_MAX_OPS]; /* over communicators and phases */
  uint32_t nops;
} nt_run_summary;
/* The current run's summary (computed now) and the previous run's (kept
 * when it ended); false when there is none. */
bool nt_model_run_summary(const nt_model *m, bool previous, nt_run_summary *out);

#endif

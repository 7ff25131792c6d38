/* One frame of the job: every number the screen, the text batch output and
 * the JSON frame show, derived once per tick from the model.
 *
 * The model holds raw snapshots; nt_frame_build turns them into rows with
 * their rates, states and validity (per process, rank, proxy thread,
 * channel, kernel channel, communicator), runs the diagnosis (diag.h: its
 * own object, which tracks lateness, so exactly one build per tick gives
 * it), and takes the
 * operation statistics, the environment table and the run comparison. The
 * outputs only format what is here, so the screen, the JSON and the
 * Prometheus exporter cannot disagree, and a new metric is added in one
 * place. The build only reads the model.
 *
 * A frame owns copies of everything it shows (strings included): it stays
 * valid after the model changes or drops a process, so a paused screen
 * keeps its frame as long as it likes. Its arrays grow once and are reused
 * by the next build. */
#ifndef NCCLTOP_FRAME_H
#define NCCLTOP_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "model.h"

#define NT_FRAME_ERRORS     8     /* newest model errors kept */
#define NT_FRAME_MAX_RANKS  65536 /* ranks (process, communicator) */
#define NT_FRAME_MAX_ALERTS 256   /* alerts kept, most important first */
#define NT_FRAME_MAX_STATS  4096  /* operation statistics rows */
#define NT_FRAME_MAX_RECENT 256   /* recent and in-flight operations */
#define NT_FRAME_MAX_ENV    (2 * NT_MAX_ENV)
#define NT_FRAME_NAME       (NT_MAX_NAME + 1)
#define NT_FRAME_PHASE      (4 * NT_MAX_PHASE + 1)
/* The bus bandwidth history of each communicator (frame_history.c): one
 * sample per interval, the last NT_FRAME_HISTORY intervals. The interval
 * is the update interval (nt_frame_opts.update_s), never shorter than
 * NT_FRAME_HISTORY_MIN_S: 2 minutes at the default half-second update. */
#define NT_FRAME_HISTORY       120
#define NT_FRAME_HISTORY_MIN_S 1.0

/* What a build takes: the stall threshold, and the parts only some outputs
 * need. */
typedef struct {
  uint32_t stall_ms;
  bool process_env;         /* copy every process's variables (the JSON frame) */
  uint32_t recent_per_rank; /* done operations per rank in the recent list (0: 8) */
  double start_s;           /* the viewer's start (frame time 0); 0: the first build */
  double update_s;          /* how often the caller builds (the history's interval); 0: 1 s */
  bool alerts_per_rank;     /* a node's late ranks one straggler alert each (the exporter's
                               series per rank), not one line for the node */
} nt_frame_opts;

typedef struct {
  char name[NT_MAX_ENV_NAME + 1];
  char value[NT_MAX_ENV_VALUE + 1];
} nt_frame_var;

/* A publishing process with a snapshot. */
typedef struct {
  char host[NT_MAX_HOST + 1];
  uint32_t pid;
  bool stale, ended;
  bool replaced; /* of an earlier run, stale or ended (nt_model_process_replaced): its ranks
                    are left out of ranks[] */
  char nccl_version[32], plugin_version[32]; /* "" before its hello */
  char clock[16];                            /* the plugin's event clock (nt_hello); "" unknown */
  nt_process_counters counters;
  uint64_t seq, lost_messages, restarts;
  uint64_t lost_unread; /* of lost_messages, the watcher's (model.h) */
  uint32_t ncomms;
  char phase[NT_FRAME_PHASE]; /* its phase now, "" none */
  uint32_t proxy0, nproxy;    /* its proxy threads of no communicator, in proxy[] */
  uint32_t var0, nvars;       /* its variables in vars[] (opts.process_env) */
  uint32_t opsum0;            /* private: its communicators' sums in op_sums[] */
} nt_frame_proc;

/* A rank: a (process, communicator) pair, the unit the views list. Its rows
 * are ranges of the frame's arrays. */
typedef struct {
  uint32_t proc; /* index into procs[] */
  uint64_t comm_hash;
  char comm_name[NT_FRAME_NAME]; /* "" unknown */
  int32_t rank, nranks, nnodes;
  nt_comm_row comm;  /* enqueued counts and API counters */
  uint32_t stalled;  /* channel rows stalled */
  uint64_t launched; /* operations launched (over its functions) */
  double done_per_s; /* operations done per second, the publisher's last interval */
  int channels;      /* highest channel id + 1 of its own rows */
  uint32_t proxy0, nproxy, chan0, nchan, kern0, nkern, seq0, nseq, op0, nops, net0, nnet;
  /* Of its done operations since the process started: bus bytes (nccl-tests'
   * sense, as the collectives rows count them) and summed durations; and
   * who counted them (host, endpoint, pid and restarts hashed): the
   * history takes differences only between sums of the same process. */
  double bus_bytes, op_time_s;
  uint64_t origin;
} nt_frame_rank;

typedef struct {
  nt_proxy_row row;
  double share_last[NT_PROXY_NSTATES], share_total[NT_PROXY_NSTATES];
  int dominant; /* the state with the largest share last interval */
  int32_t rank; /* index into ranks[], -1 a thread of no communicator */
  uint32_t proc;
} nt_frame_proxy;

typedef struct {
  nt_channel_row row;
  double steps_per_s, bytes_per_s; /* last interval; 0 unknown */
  int dominant_wait;               /* enum nt_wait */
  bool stalled;                    /* running, no progress for stall_ms */
  bool queued;                     /* work in flight the GPU has not reached */
  uint32_t rank;
} nt_frame_channel;

typedef struct {
  nt_seq_row row;
  double last_launch_s; /* since the last launch, now */
} nt_frame_seq;

/* An operation, in flight or recently done. */
typedef struct {
  nt_oplog_row op;
  double age_s; /* since it was enqueued, now */
  char phase[NT_FRAME_PHASE];
  char variant[NT_MAX_VARIANT + 1]; /* its symmetric kernel (NCCL 2.31), "" none */
  uint32_t rank;                    /* index into ranks[] */
} nt_frame_op;

/* A communicator over the ranks the frame has of it. */
typedef struct {
  uint64_t hash;
  char name[NT_FRAME_NAME];
  int32_t nranks, nnodes;
  uint32_t ranks, stalled;
  uint64_t launched_min, launched_max;
  double done_per_s; /* per rank */
  char phase[NT_FRAME_PHASE];
  /* Bus bandwidth (GB/s, nccl-tests' sense: bus bytes over the time of the
   * operations its ranks completed in the interval) of each of the last
   * nhistory intervals, oldest first; the newest ended at the frame's
   * history_end_s. A gap (NT_FRAME_GAP): nothing completed, or the viewer
   * did not look: unknown, not slow. */
  float busbw_history[NT_FRAME_HISTORY];
  uint32_t nhistory;
} nt_frame_comm;
#define NT_FRAME_GAP (-1.0f)

typedef struct nt_frame_history nt_frame_history; /* frame_history.c */

typedef struct {
  int kind; /* enum nt_alert_kind */
  bool has_proc, has_rank;
  char host[NT_MAX_HOST + 1];
  uint32_t pid;
  uint64_t comm_hash;
  int32_t rank, nranks;
  int peer, wait, func;
  uint32_t count;
  double age_s;
  char text[256];
  int evidence; /* enum nt_alert_evidence */
  /* every rank it is about, lowest first (nt_alert's ranks); none without
   * has_rank */
  int32_t ranks[NT_ALERT_MAX_RANKS];
  uint32_t nlisted;
  int32_t under;   /* folded under the root alert of this index (nt_alert.under), -1 */
  uint32_t folded; /* a root: how many alerts are folded under it */
} nt_frame_alert;

typedef struct {
  nt_op_stat st; /* st.comm_name points at comm_name */
  char comm_name[NT_FRAME_NAME];
  nt_op_model model; /* NCCL's prediction for the row and the measured share of it (why: static) */
} nt_frame_stat;

typedef struct {
  char name[NT_MAX_ENV_NAME + 1];
  char value[NT_MAX_ENV_VALUE + 1]; /* the most common; "" unset */
  uint32_t have, nvalues;
  bool differs;
  char outliers[512]; /* "host:pid=value" of processes with another value */
} nt_frame_env;

typedef struct {
  double now_s; /* viewer clock of the build */
  double time;  /* seconds since opts.start_s */
  uint32_t stall_ms;
  /* the viewer */
  uint32_t publishers;                         /* processes known, with or without a snapshot */
  uint32_t publishers_stale, publishers_ended; /* of them (an ended one is not counted stale) */
  uint64_t messages, bad_messages, errors_total, refused, lost_messages;
  uint64_t refused_by[NT_REFUSE_COUNT];
  size_t memory_bytes, memory_budget;
  double last_data_s; /* newest snapshot's arrival, 0 none */
  nt_model_error errors[NT_FRAME_ERRORS];
  uint32_t nerrors; /* kept, newest first */
  /* the watcher: gaps in what the viewer read, told now (the viewer's
   * first), and the totals (model.h) */
  nt_watch_note watch[NT_WATCH_NOTES];
  uint32_t nwatch;
  nt_watch_totals watch_totals;
  /* rows */
  nt_frame_proc *procs; /* sorted by (host, pid) */
  nt_frame_rank *ranks; /* sorted by (comm hash, rank) */
  nt_frame_proxy *proxy;
  nt_frame_channel *channels;
  nt_kernel_row *kernels;
  nt_frame_seq *seq;
  nt_frame_op *ops; /* ranks' operations in flight */
  nt_net_row *net;
  nt_frame_var *vars;
  uint32_t nprocs, nranks, nproxy, nchannels, nkernels, nseq, nops, nnet, nvars;
  int channel_count; /* highest channel id + 1 over the ranks */
  nt_frame_comm *comms;
  uint32_t ncomms;
  double history_s;     /* the interval of one history sample */
  double history_end_s; /* viewer clock (now_s) where the newest sample ended */
  /* the job */
  nt_frame_alert alerts[NT_FRAME_MAX_ALERTS];
  uint32_t nalerts;
  uint32_t nfolded; /* of them, folded under a root: nalerts - nfolded lines of their own */
  nt_frame_stat *stats;
  uint32_t nstats;
  nt_phase_stat phases[NT_MAX_PHASES + 1];
  uint32_t nphases;
  nt_frame_op *recent; /* in flight first (oldest first), then done, newest first */
  uint32_t nrecent;
  nt_frame_env *env; /* differing ones first */
  uint32_t nenv, env_differ;
  nt_run_summary *run_cur, *run_prev;
  bool have_run_cur, have_run_prev;
  /* capacities (private) */
  uint32_t cap_procs, cap_ranks, cap_proxy, cap_channels, cap_kernels, cap_seq, cap_ops, cap_net,
      cap_vars, cap_comms;
  double first_build_s;
  nt_model_rank *model_ranks; /* the model's rank list, read once per build */
  nt_frame_history *history;  /* the sums the history samples are differences of */
  double
      *op_sums; /* per process and communicator index: bus bytes, time (one pass over its rows) */
  uint32_t nop_sums, cap_op_sums;
} nt_frame;

nt_frame *nt_frame_new(void); /* NULL on allocation failure */
void nt_frame_free(nt_frame *f);
/* Builds the frame of the model now (ticks nothing: call nt_model_tick
 * first); reads the model, never writes it. Returns 0, or -1 when memory
 * ran out (the frame is then empty, still valid). Runs the diagnosis d
 * (which remembers lateness: give the same d for the same model, and build
 * once per tick). */
int nt_frame_build(nt_frame *f, const nt_model *m, nt_diag *d, const nt_frame_opts *o,
                   double now_s);

/* Row helpers. */
static inline const nt_frame_proc *nt_frame_proc_of(const nt_frame *f, const nt_frame_rank *r) {
  return &f->procs[r->proc];
}
/* The busiest (most steps) own row of (rank, channel, dir): PXN relay rows
 * are another rank's work; NULL when none. */
const nt_frame_channel *nt_frame_cell(const nt_frame *f, const nt_frame_rank *r, int channel,
                                      int dir);
/* The wait to show for a channel (enum nt_wait): a stalled one's is the
 * wait it is stuck in (no step completes, so the last interval's dominant
 * wait is what came before the stall), the others' the one that took most
 * of the last interval. The grid and the text agree with the alerts. */
int nt_frame_channel_wait(const nt_frame_channel *c);
/* "0/8 name 0123456789abcdef host:pid": what search and filters match. */
void nt_frame_rank_text(const nt_frame *f, const nt_frame_rank *r, char *buf, size_t cap);
/* The previous run's most used algorithm and protocol for (func, bucket). */
const nt_run_op *nt_frame_previous_choice(const nt_frame *f, int func, int bucket);

#endif

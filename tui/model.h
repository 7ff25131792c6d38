/* The viewer's state store: everything nccltop knows about every publisher.
 *
 * Sources (live ZeroMQ sockets, and later replay files) feed decoded messages
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

#include "../proto/nccltop_proto.h"
#include "../topo/topo.h"

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

typedef struct {
  double time_s;
  char source[64]; /* endpoint or "replay" */
  char text[160];  /* already sanitized */
} nt_model_error;

/* One publishing process (host, pid). */
typedef struct {
  uint32_t pid;
  char host[NT_MAX_HOST + 1]; /* sanitized */
  char endpoint[128];
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
} nt_model_process;

/* One rank: a (process, communicator) pair, the unit the views list. */
typedef struct {
  nt_model_process *proc;
  uint16_t comm_index; /* into proc->cur->comms */
  uint64_t comm_hash;
  int32_t rank, nranks, nnodes;
  const char *comm_name; /* "" when unknown; sanitized */
} nt_model_rank;

typedef struct nt_model nt_model;

nt_model *nt_model_new(void);
void nt_model_free(nt_model *m);

/* Apply decoded messages. They copy what they keep. Return 0, or -1 when the
 * model is full (the message is counted and dropped). */
int nt_model_apply_snapshot(nt_model *m, const char *endpoint, const nt_snapshot *s, double now_s);
int nt_model_apply_hello(nt_model *m, const char *endpoint, const nt_hello *h, double now_s);
int nt_model_apply_comm(nt_model *m, const char *endpoint, const nt_comm_info *c, double now_s);
/* A message that failed to decode; text is sanitized before it is kept. */
void nt_model_note_error(nt_model *m, const char *source, const char *text, double now_s);
/* A problem that is not a bad message (an endpoint directory refused, a
 * connect that failed): kept in the same list, not counted as bad. */
void nt_model_note_problem(nt_model *m, const char *source, const char *text, double now_s);
/* Marks stale / ended publishers and drops those ended more than
 * NT_MODEL_ENDED_KEEP_S ago; call once per frame. */
void nt_model_tick(nt_model *m, double now_s);
/* The process's endpoint went away (its pid is dead or its socket file was
 * removed): it is marked ended. host NULL or "" matches only processes known
 * through a local ipc:// endpoint (a relay's remote pids are not ours). */
void nt_model_process_gone(nt_model *m, uint32_t pid, const char *host);

/* The machine's topology: from --topology, or from a publisher's topology
 * message (NCCL_TOPO_DUMP_FILE). A bad one is a model error; the topology
 * already held is kept. Returns 0 when it was taken. */
int nt_model_set_topology(nt_model *m, const char *xml, size_t len, const char *source,
                          double now_s);
/* NULL when none; `source` names where it came from. */
nt_topo *nt_model_topology(nt_model *m, const char **source);
/* Bumped each time a new topology is taken (views reset their what-ifs). */
uint32_t nt_model_topology_generation(const nt_model *m);

/* Reading. Pointers stay valid until the next apply/tick call. Whoever keeps
 * rank rows across those calls (a paused screen) must collect them again
 * when nt_model_generation changes: it does whenever a process is added or
 * dropped. */
uint32_t nt_model_generation(const nt_model *m);
uint32_t nt_model_nprocesses(const nt_model *m);
nt_model_process *nt_model_process_at(nt_model *m, uint32_t i);
/* Ranks sorted by (comm hash, rank); returns how many were written. */
uint32_t nt_model_ranks(nt_model *m, nt_model_rank *out, uint32_t cap);
uint32_t nt_model_nerrors(const nt_model *m);
const nt_model_error *nt_model_error_at(const nt_model *m, uint32_t i); /* 0 = newest */
uint64_t nt_model_total_messages(const nt_model *m);
uint64_t nt_model_total_bad(const nt_model *m);     /* messages that failed to decode */
uint64_t nt_model_total_errors(const nt_model *m);  /* everything noted, bad or problem */
uint64_t nt_model_total_refused(const nt_model *m); /* messages of processes beyond the limit */
double nt_model_last_data_s(const nt_model *m);     /* arrival of the newest snapshot, 0 none */

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
/* A row is stalled when ops are in flight and its step has not changed for
 * stall_ms. A row that never progressed (progress_age_ns UINT64_MAX) is not:
 * its age is unknown. */
bool nt_model_channel_stalled(const nt_channel_row *row, uint32_t stall_ms);

#endif

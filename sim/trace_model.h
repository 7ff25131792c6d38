/* The trace player's inside (sim/trace.h is its contract): a job read from
 * recordings (trace_parse.c, reading with trace_read.c) and checked
 * (trace_check.c), and what one process of it calls (trace_call.c);
 * trace_play.c plays it. */
#ifndef NCCLTOP_SIM_TRACE_MODEL_H
#define NCCLTOP_SIM_TRACE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi_driver.h"
#include "trace.h"

enum { TR_INIT, TR_START, TR_RECORD, TR_STOP, TR_FINALIZE };

/* Where a recorded handle or context points, once checked: one of this
 * process's events (or contexts) by index, NULL, or a value that is
 * another process's (a PXN proxy op's context and parent, passed as NCCL
 * passes them: a pointer into that process, never to be dereferenced). */
enum { TR_REF_NULL = -1, TR_REF_FOREIGN = -2 };
typedef struct {
  int32_t idx; /* >= 0, TR_REF_NULL or TR_REF_FOREIGN */
  uint64_t raw;
} tr_ref;

/* One call, in the order the process plays them (its recorded times; equal
 * times in file order). */
typedef struct {
  uint64_t t;       /* recorded clock, ns */
  uint64_t raw;     /* as recorded: record/stop h=, init/finalize ctx= */
  uint64_t size;    /* record: size= (proxyStep.transSize; v3 proxyOp.transSize) */
  uint64_t ptimer;  /* record: ptimer= (kernelCh.pTimer) */
  uint32_t line;    /* in its file */
  int32_t ref;      /* start/record/stop: the event; init/finalize: the context */
  int32_t state;    /* record */
  int32_t appended; /* record: appended= (proxyCtrl.appendedProxyOps) */
  int32_t opsteps;  /* record, v3: opsteps= (proxyOp.steps) */
  uint16_t thread;  /* index into the process's threads */
  uint8_t verb;     /* TR_* */
  uint8_t args;     /* record: args=1 (0: NCCL passed NULL) */
} tr_call;

/* One started event: its descriptor's fields as recorded. */
typedef struct {
  uint64_t h; /* as recorded (0: the recorder gave NULL) */
  tr_ref ctx, parent, pgroup;
  const char *func, *dtype, *algo, *proto;
  /* v3 Coll/P2p: the communicator's name; v7 Coll: kernelVariant;
   * KernelPhase: phaseName; CeColl: syncStrategy (NULL: "-" or none) */
  const char *label;
  uint64_t seq, count, chash, utag, ptimer, bytes;
  uint32_t type, line;
  int32_t rank, root, peer, ch, nch, cap, depth, sym;
  int32_t send, steps, chunk, pid, step, phase;
  int32_t ceseq, intra, stream, complete, ceranks, numops;
  int32_t pid_proc; /* ProxyOp: the process its pid= names (-1: none of the job) */
  bool foreign;     /* a PXN op of another process, or a step of one: its context
                       (and the op's parent) are that process's */
} tr_event;

typedef struct {
  uint64_t value, hash;
  const char *name; /* NULL: "-" */
  uint32_t line;
  int32_t nnodes, nranks, rank, log, fail;
} tr_ctx;

typedef struct {
  long tid;
  uint32_t *calls; /* indices into the process's calls, in order */
  uint32_t ncalls, cap;
} tr_thread;

typedef struct {
  int file;     /* index into the job's files */
  uint32_t pid; /* as recorded */
  int version;  /* the ABI its init lines name, 3..7 */
  tr_call *calls;
  uint32_t ncalls, calls_cap;
  tr_event *ev;
  uint32_t nev, ev_cap;
  tr_ctx *ctx;
  uint32_t nctx, ctx_cap;
  tr_thread *threads;
  uint32_t nthreads;
  uint32_t linger_at; /* the first of its closing finalize calls (ncalls: none) */
} tr_proc;

typedef struct tr_strings tr_strings;

typedef struct {
  char **files; /* the recordings, directories expanded */
  int nfiles;
  tr_proc *procs;
  int nprocs;
  uint64_t t0, t_end; /* earliest and latest recorded time of the job */
  uint64_t calls;     /* of every process */
  tr_strings *strings;
} tr_job;

/* ---- reading (trace_read.c) ---- */

/* Called with each line (no newline, NUL-terminated) and its number;
 * returns 0 to go on, else stops the read with that value. */
typedef int (*tr_line_fn)(void *arg, char *line, size_t len, uint32_t lineno);
/* Reads a recording (plain text, xz or zstd, told by its first bytes)
 * within the limits of trace.h. Returns 0, the callback's non-zero value,
 * or -1 with the reason in err ("PATH:LINE: ..." or "PATH: ..."). */
int tr_read_file(const char *path, tr_line_fn fn, void *arg, char *err, size_t errlen);
/* Expands a --trace path: a file as it is, a directory to its *.trace,
 * *.trace.xz and *.trace.zst files by name. Appends to *files; -1 with err. */
int tr_expand_path(const char *path, char ***files, int *nfiles, char *err, size_t errlen);

/* ---- the job (trace_parse.c) ---- */

/* Reads and checks every recording; 0, or -1 with one line in err. */
int tr_job_load(tr_job *job, char **paths, int npaths, char *err, size_t errlen);
void tr_job_free(tr_job *job);

/* ---- checking a process (trace_check.c), for tr_job_load ---- */

/* Sorts p's calls into play order, fills its threads' call lists and
 * resolves every reference; 0, or -1 with one line in err. */
int tr_check_proc(tr_job *job, tr_proc *p, char *err, size_t errlen);
/* Each PXN op's pid= to the process of the job it names. */
void tr_link_pids(tr_job *job);

/* ---- calling the plugin (trace_call.c) ---- */

/* One process's plugin and what it returned. */
typedef struct {
  const tr_proc *p;
  sim_driver drv;
  void **handles;  /* per event: what the plugin returned (NULL: dropped) */
  void **contexts; /* per context */
  bool *on;        /* per context: init succeeded and not yet finalized */
  int32_t *pids;   /* per process of the job: its player pid (PXN ops) */
} tr_player;

/* NCCL's gating: whether NCCL would start an event of `type` for a plugin
 * whose mask is `mask` (asking for a child event produces its ancestors). */
bool tr_mask_wants(int abi, int mask, uint32_t type);
/* The v5/v6 descriptor of event e started under `parent` (its parentGroup
 * and a ProxyOp's pid mapped through pl), as play does; for bench/ too. */
void tr_descr_v5(const tr_player *pl, const tr_event *e, void *parent, nt_descr_v5 *d);
/* Plays call k of the process. */
void tr_call_play(tr_player *pl, uint32_t k);
/* Finalizes the contexts still on (a play stopped early). */
void tr_call_finalize_open(tr_player *pl);

#endif

/* The trace a recording plugin (tests/fixtures/recorder.c) writes of every
 * call the simulator makes, parsed back into events, and the simulator run
 * against that plugin: what test_sim.c checks NCCL's grammar on. */
#ifndef NCCLTOP_SIM_TRACE_H
#define NCCLTOP_SIM_TRACE_H

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "../plugin/nccl_profiler_abi.h"
#include "../proto/nccltop_proto.h"
#include "../sim/sim.h"
#include "../sim/version.h"

static char recorder[PATH_MAX + 32];

/* ---- the trace ---- */

#define MAX_EV   40000
#define MAX_REC  40 /* 2.26's ProxyOps get 4 or more records per step */
#define MAX_CTX  64
#define HASH_CAP (1 << 17)

typedef struct {
  int pid, type, line, stop_line, stops, nrec;
  long tid, stop_tid;
  unsigned long long h, ctx, parent, pgroup, t, t_stop;
  unsigned long long ptimer, ptimer_stop;
  int ch, send, peer, step, steps, chunk, oppid, seq, depth, slot;
  unsigned long long chash; /* 2.26's commHash */
  bool int8, named;         /* datatype ncclInt8; 2.26 carried a name */
  int rank;                 /* eDescr.rank */
  int states[MAX_REC], args[MAX_REC], rec_line[MAX_REC], opsteps[MAX_REC];
  unsigned long long size[MAX_REC], rec_t[MAX_REC];
  int extra_records;                  /* records beyond MAX_REC or after the stop */
  char func[24], dtype[16], algo[24]; /* Coll, P2p and API events; Coll algo */
  long long count;
  int root, captured; /* captured: API events, -1 when not said */
  /* CE: count / totalBytes, CeSync isComplete, CeBatch numOps */
  unsigned long long bytes;
  int complete, numops, ceranks, intra;
  bool has_utag;           /* v7 logs the userTag of calls */
  unsigned long long utag; /* that tag */
  int phase;               /* KernelPhase: its phaseId */
  int nch;                 /* Coll: coll.nChannels */
  int sym;                 /* v7 Coll: coll.isSymColl (-1: not said) */
  char variant[48];        /* v7 Coll: coll.kernelVariant ("-": NULL) */
  char proto[16];          /* Coll: coll.proto ("" when empty) */
} ev_t;

typedef struct {
  int pid, rank, comm, version, nranks, nnodes, log, line, finalizes, finalize_line;
  unsigned long long ctx, hash;
  bool named; /* init got a communicator name (not NULL) */
} ctx_t;

static struct {
  ev_t ev[MAX_EV];
  int nev;
  ctx_t ctx[MAX_CTX];
  int nctx;
  int table[HASH_CAP]; /* (pid, handle) -> ev index + 1 */
  int null_calls, unknown_handles, bad_lines, overflow;
  int set_clock_lines, flush_lines, lines;
  int first_set_clock[MAX_CTX], first_init[MAX_CTX], last_call[MAX_CTX], flush_line[MAX_CTX];
  int pids[MAX_CTX], npids;
} tr;

static inline int pid_slot(int pid) {
  for (int i = 0; i < tr.npids; i++)
    if (tr.pids[i] == pid) return i;
  if (tr.npids == MAX_CTX) return 0;
  tr.first_set_clock[tr.npids] = tr.first_init[tr.npids] = tr.flush_line[tr.npids] = 0;
  tr.last_call[tr.npids] = 0;
  tr.pids[tr.npids] = pid;
  return tr.npids++;
}

static inline unsigned hkey(int pid, unsigned long long h) {
  return (unsigned)((h * 0x9e3779b97f4a7c15ull) ^ ((unsigned long long)pid * 0x85ebca6bull)) &
         (HASH_CAP - 1);
}

static inline ev_t *find(int pid, unsigned long long h) {
  for (unsigned k = hkey(pid, h);; k = (k + 1) & (HASH_CAP - 1)) {
    int i = tr.table[k];
    if (!i) return NULL;
    if (tr.ev[i - 1].pid == pid && tr.ev[i - 1].h == h) return &tr.ev[i - 1];
  }
}

static inline void remember(ev_t *e) {
  unsigned k = hkey(e->pid, e->h);
  while (tr.table[k]) k = (k + 1) & (HASH_CAP - 1);
  tr.table[k] = (int)(e - tr.ev) + 1;
  e->slot = (int)k + 1;
}

static inline ev_t *parent_of(const ev_t *e) {
  /* A PXN op's parent is a handle of the process the op came from. */
  int pid = e->type == NT_EV_PROXY_OP && e->oppid > 0 ? e->oppid : e->pid;
  return e->parent ? find(pid, e->parent) : NULL;
}

static inline ctx_t *ctx_of(int pid, unsigned long long ctx) {
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].pid == pid && tr.ctx[i].ctx == ctx) return &tr.ctx[i];
  return NULL;
}

static inline const char *field(const char *l, const char *key) {
  const char *p = strstr(l, key);
  return p ? p + strlen(key) : NULL;
}
static inline long long num(const char *l, const char *key) {
  const char *p = field(l, key);
  return p ? strtoll(p, NULL, 0) : -1;
}
static inline unsigned long long hex(const char *l, const char *key) {
  const char *p = field(l, key);
  return p ? strtoull(p, NULL, 16) : 0;
}

/* The value of `key` up to the next blank, into out ("" if absent). */
static inline void word(const char *l, const char *key, char *out, size_t cap) {
  const char *p = field(l, key);
  size_t n = p ? strcspn(p, " \n") : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(out, p, n);
  out[n] = '\0';
}

static inline void parse_line(const char *l, int n) {
  int pid, used = 0;
  long tid;
  unsigned long long t;
  char verb[16];
  if (sscanf(l, "%d %ld %llu %15s %n", &pid, &tid, &t, verb, &used) != 4) {
    tr.bad_lines++;
    return;
  }
  const char *rest = l + used;
  int ps = pid_slot(pid);
  if (!strcmp(verb, "set_clock")) {
    tr.set_clock_lines++;
    if (!tr.first_set_clock[ps]) tr.first_set_clock[ps] = n;
    return;
  }
  if (!strcmp(verb, "init")) {
    if (!tr.first_init[ps]) tr.first_init[ps] = n;
    if (tr.nctx == MAX_CTX) return;
    ctx_t *c = &tr.ctx[tr.nctx++];
    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->line = n;
    c->version = rest[1] - '0';
    c->ctx = hex(rest, "ctx=");
    c->hash = hex(rest, "hash=");
    c->nranks = (int)num(rest, "nranks=");
    c->nnodes = (int)num(rest, "nnodes=");
    c->rank = (int)num(rest, "rank=");
    c->log = (int)num(rest, "log=");
    const char *nm = field(rest, " name=");
    c->named = nm && *nm != '-';
    const char *name = field(rest, "name=sim-comm-");
    c->comm = name ? atoi(name) : -1;
    /* an unnamed communicator of the simulator (--unnamed): by its hash */
    for (int k = 0; c->comm < 0 && c->hash && k < 8; k++)
      if (c->hash == nt_sim_comm_hash(k)) c->comm = k;
    return;
  }
  tr.last_call[ps] = n;
  if (!strcmp(verb, "flush")) {
    tr.flush_lines++;
    tr.flush_line[ps] = n;
    return;
  }
  if (!strcmp(verb, "finalize")) {
    ctx_t *c = ctx_of(pid, hex(rest, "ctx="));
    if (c) c->finalizes++, c->finalize_line = n;
    return;
  }
  if (!strcmp(verb, "start")) {
    if (tr.nev == MAX_EV) {
      tr.overflow = 1;
      return;
    }
    ev_t *e = &tr.ev[tr.nev++];
    memset(e, 0, sizeof *e);
    e->pid = pid;
    e->tid = tid;
    e->t = t;
    e->line = n;
    e->type = atoi(rest);
    e->h = hex(rest, "h=");
    e->ctx = hex(rest, "ctx=");
    e->parent = hex(rest, "parent=");
    e->pgroup = hex(rest, "pgroup=");
    e->ch = (int)num(rest, " ch=");
    e->send = (int)num(rest, "send=");
    e->peer = (int)num(rest, "peer=");
    e->step = (int)num(rest, "step=");
    e->steps = (int)num(rest, "steps=");
    e->chunk = (int)num(rest, "chunk=");
    e->oppid = (int)num(rest, " pid=");
    e->seq = (int)num(rest, "seq=");
    e->depth = (int)num(rest, "depth=");
    const char *al = field(rest, "algo=");
    if (al) sscanf(al, "%23s", e->algo);
    e->bytes = (unsigned long long)num(rest, "bytes=");
    if (e->type == NT_EV_CE_COLL) e->bytes = (unsigned long long)num(rest, "count=");
    e->complete = (int)num(rest, "complete=");
    e->numops = (int)num(rest, "numops=");
    e->ceranks = (int)num(rest, "ceranks=");
    e->intra = (int)num(rest, "intra=");
    e->rank = (int)num(rest, " rank=");
    const char *dt = field(rest, " dtype=");
    e->int8 = dt && !strncmp(dt, "ncclInt8", 8) && (dt[8] == ' ' || dt[8] == '\n' || !dt[8]);
    e->chash = hex(rest, " chash=");
    const char *cn = field(rest, " cname=");
    e->named = cn && *cn != '-';
    const char *pt = field(rest, "ptimer=");
    e->ptimer = pt ? strtoull(pt, NULL, 10) : 0;
    word(rest, "func=", e->func, sizeof e->func);
    word(rest, "dtype=", e->dtype, sizeof e->dtype);
    e->count = num(rest, "count=");
    e->root = (int)num(rest, "root=");
    e->captured = (int)num(rest, "cap=");
    const char *ut = field(rest, " utag=");
    e->has_utag = ut != NULL;
    e->utag = ut ? strtoull(ut, NULL, 10) : 0;
    e->phase = (int)num(rest, " phase=");
    e->nch = (int)num(rest, " nch=");
    e->sym = (int)num(rest, " sym=");
    word(rest, " variant=", e->variant, sizeof e->variant);
    word(rest, " proto=", e->proto, sizeof e->proto);
    if (e->h) remember(e);
    return;
  }
  unsigned long long h = hex(rest, "h=");
  if (!h) {
    tr.null_calls++;
    return;
  }
  ev_t *e = find(pid, h);
  if (!e) {
    tr.unknown_handles++;
    return;
  }
  if (!strcmp(verb, "stop")) {
    if (!e->stops++) e->stop_line = n, e->t_stop = t, e->stop_tid = tid;
  } else if (!strcmp(verb, "record")) {
    if (e->stops || e->nrec == MAX_REC) {
      e->extra_records++;
      return;
    }
    int i = e->nrec++;
    e->states[i] = (int)num(rest, "state=");
    e->args[i] = (int)num(rest, "args=");
    const char *sz = field(rest, "size=");
    e->size[i] = sz ? strtoull(sz, NULL, 10) : 0;
    e->rec_line[i] = n;
    e->rec_t[i] = t;
    e->opsteps[i] = (int)num(rest, "opsteps=");
    if (e->states[i] == NT_ST_KERNEL_CH_STOP || e->states[i] == NT_ST_KERNEL_PHASE_STOP) {
      const char *pt = field(rest, "ptimer=");
      e->ptimer_stop = pt ? strtoull(pt, NULL, 10) : 0;
    }
  } else {
    tr.bad_lines++;
  }
}

/* Forgets the previous trace. Only what was used is cleared: wiping the
 * whole (large) trace each time is slow under ASan. */
/* The first event of the trace that pred holds for, or NULL. */
static inline const ev_t *first_event(bool (*pred)(const ev_t *)) {
  for (int i = 0; i < tr.nev; i++)
    if (pred(&tr.ev[i])) return &tr.ev[i];
  return NULL;
}

/* The trace line l with the value after `key` (up to a space or the line's
 * end) replaced by val; l itself when key is absent. In a static buffer. */
static inline const char *with_value(const char *l, const char *key, const char *val) {
  static char out[2048];
  const char *p = strstr(l, key);
  if (!p) return l;
  p += strlen(key);
  size_t len = strcspn(p, " \n");
  snprintf(out, sizeof out, "%.*s%s%s", (int)(p - l), l, val, p + len);
  return out;
}

static inline void reset(void) {
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].slot) tr.table[tr.ev[i].slot - 1] = 0;
  tr.nev = tr.nctx = tr.npids = 0;
  tr.null_calls = tr.unknown_handles = tr.bad_lines = tr.overflow = 0;
  tr.set_clock_lines = tr.flush_lines = tr.lines = 0;
}

/* Adds the lines of `f` to the trace (several processes' recordings make
 * one job; handles are per process). */
static inline void load_stream(FILE *f) {
  static char l[2048];
  while (fgets(l, sizeof l, f)) parse_line(l, ++tr.lines);
}

static inline int load(const char *path) {
  reset();
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  load_stream(f);
  fclose(f);
  return 0;
}

/* ---- running the simulator against the recorder ---- */

typedef struct {
  int abi, ranks, comms, channels, steps, iterations;
  bool realtime;
  const char *mask, *mask_switch, *null_types, *fail;
} rec_opts;

static inline void set_env(const char *name, const char *v) {
  if (v)
    setenv(name, v, 1);
  else
    unsetenv(name);
}

static inline void config_for(const rec_opts *o, nt_sim_config *c) {
  nt_sim_defaults(c);
  c->ranks = o->ranks ? o->ranks : 2;
  c->comms = o->comms ? o->comms : 1;
  c->channels = o->channels ? o->channels : 2;
  c->steps = o->steps ? o->steps : 3;
  c->iterations = o->iterations ? o->iterations : 2;
  c->deterministic = !o->realtime;
  c->abi = o->abi;
  c->plugin = recorder;
  c->quiet = true;
}

static char trace_path[64];

static inline void env_for(const rec_opts *o) {
  snprintf(trace_path, sizeof trace_path, "/tmp/nccltop-rec-%d.log", (int)getpid());
  unlink(trace_path);
  setenv("NT_RECORDER_FILE", trace_path, 1);
  set_env("NT_RECORDER_MASK", o->mask);
  set_env("NT_RECORDER_MASK_SWITCH", o->mask_switch);
  set_env("NT_RECORDER_NULL", o->null_types);
  set_env("NT_RECORDER_FAIL", o->fail);
}

static inline int run_recorded(const rec_opts *o, nt_sim_config *c) {
  config_for(o, c);
  env_for(o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}

#endif

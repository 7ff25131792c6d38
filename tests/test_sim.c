/* The simulator plays NCCL faithfully: a recording plugin (tests/fixtures/
 * recorder.c) logs every call, and the order, threads, arguments and gating
 * are checked against how NCCL 2.28 calls a profiler. The deterministic
 * schedule is re-added from the recorded virtual clock, independently of
 * the simulator, and must give exactly nt_sim_expect_*. Also the options. */
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

static char recorder[PATH_MAX + 32];

/* ---- the trace ---- */

#define MAX_EV   40000
#define MAX_REC  8
#define MAX_CTX  64
#define HASH_CAP (1 << 17)

typedef struct {
  int pid, type, line, stop_line, stops, nrec;
  long tid, stop_tid;
  unsigned long long h, ctx, parent, pgroup, t, t_stop;
  unsigned long long ptimer, ptimer_stop;
  int ch, send, peer, step, steps, chunk, oppid, seq, depth, slot;
  int states[MAX_REC], args[MAX_REC], rec_line[MAX_REC];
  unsigned long long size[MAX_REC], rec_t[MAX_REC];
  int extra_records; /* records beyond MAX_REC or after the stop */
} ev_t;

typedef struct {
  int pid, rank, comm, version, nranks, nnodes, log, line, finalizes, finalize_line;
  unsigned long long ctx, hash;
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

static int pid_slot(int pid) {
  for (int i = 0; i < tr.npids; i++)
    if (tr.pids[i] == pid) return i;
  if (tr.npids == MAX_CTX) return 0;
  tr.first_set_clock[tr.npids] = tr.first_init[tr.npids] = tr.flush_line[tr.npids] = 0;
  tr.last_call[tr.npids] = 0;
  tr.pids[tr.npids] = pid;
  return tr.npids++;
}

static unsigned hkey(int pid, unsigned long long h) {
  return (unsigned)((h * 0x9e3779b97f4a7c15ull) ^ ((unsigned long long)pid * 0x85ebca6bull)) &
         (HASH_CAP - 1);
}

static ev_t *find(int pid, unsigned long long h) {
  for (unsigned k = hkey(pid, h);; k = (k + 1) & (HASH_CAP - 1)) {
    int i = tr.table[k];
    if (!i) return NULL;
    if (tr.ev[i - 1].pid == pid && tr.ev[i - 1].h == h) return &tr.ev[i - 1];
  }
}

static void remember(ev_t *e) {
  unsigned k = hkey(e->pid, e->h);
  while (tr.table[k]) k = (k + 1) & (HASH_CAP - 1);
  tr.table[k] = (int)(e - tr.ev) + 1;
  e->slot = (int)k + 1;
}

static ev_t *parent_of(const ev_t *e) {
  return e->parent ? find(e->pid, e->parent) : NULL;
}

static ctx_t *ctx_of(int pid, unsigned long long ctx) {
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].pid == pid && tr.ctx[i].ctx == ctx) return &tr.ctx[i];
  return NULL;
}

static const char *field(const char *l, const char *key) {
  const char *p = strstr(l, key);
  return p ? p + strlen(key) : NULL;
}
static long long num(const char *l, const char *key) {
  const char *p = field(l, key);
  return p ? strtoll(p, NULL, 0) : -1;
}
static unsigned long long hex(const char *l, const char *key) {
  const char *p = field(l, key);
  return p ? strtoull(p, NULL, 16) : 0;
}

static void parse_line(const char *l, int n) {
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
    const char *name = field(rest, "name=sim-comm-");
    c->comm = name ? atoi(name) : -1;
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
    const char *pt = field(rest, "ptimer=");
    e->ptimer = pt ? strtoull(pt, NULL, 10) : 0;
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
    if (e->states[i] == NT_ST_KERNEL_CH_STOP) {
      const char *pt = field(rest, "ptimer=");
      e->ptimer_stop = pt ? strtoull(pt, NULL, 10) : 0;
    }
  } else {
    tr.bad_lines++;
  }
}

/* Forgets the previous trace. Only what was used is cleared: wiping the
 * whole (large) trace each time is slow under ASan. */
static void reset(void) {
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].slot) tr.table[tr.ev[i].slot - 1] = 0;
  tr.nev = tr.nctx = tr.npids = 0;
  tr.null_calls = tr.unknown_handles = tr.bad_lines = tr.overflow = 0;
  tr.set_clock_lines = tr.flush_lines = tr.lines = 0;
}

static int load(const char *path) {
  reset();
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static char l[2048];
  while (fgets(l, sizeof l, f)) parse_line(l, ++tr.lines);
  fclose(f);
  return 0;
}

/* ---- running the simulator against the recorder ---- */

typedef struct {
  int abi, ranks, comms, channels, steps, iterations;
  bool realtime;
  const char *mask, *mask_switch, *null_types, *fail;
} rec_opts;

static void set_env(const char *name, const char *v) {
  if (v)
    setenv(name, v, 1);
  else
    unsetenv(name);
}

static void config_for(const rec_opts *o, nt_sim_config *c) {
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

static void env_for(const rec_opts *o) {
  snprintf(trace_path, sizeof trace_path, "/tmp/nccltop-rec-%d.log", (int)getpid());
  unlink(trace_path);
  setenv("NT_RECORDER_FILE", trace_path, 1);
  set_env("NT_RECORDER_MASK", o->mask);
  set_env("NT_RECORDER_MASK_SWITCH", o->mask_switch);
  set_env("NT_RECORDER_NULL", o->null_types);
  set_env("NT_RECORDER_FAIL", o->fail);
}

static int run_recorded(const rec_opts *o, nt_sim_config *c) {
  config_for(o, c);
  env_for(o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}

/* ---- the grammar NCCL follows ---- */

static char why[512];
#define BAD(...) (snprintf(why, sizeof why, __VA_ARGS__), why)

static bool seq_is(const ev_t *e, const int *want, int n) {
  if (e->nrec != n) return false;
  for (int i = 0; i < n; i++)
    if (e->states[i] != want[i]) return false;
  return true;
}

/* The ctrl event (same thread) whose Append .. AppendEnd encloses `line`. */
static const ev_t *append_burst_around(const ev_t *op) {
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *c = &tr.ev[i];
    if (c->type != NT_EV_PROXY_CTRL || c->pid != op->pid || c->tid != op->tid || c->nrec != 2 ||
        c->states[0] != NT_ST_CTRL_APPEND)
      continue;
    if (c->rec_line[0] < op->line && op->line < c->rec_line[1]) return c;
  }
  return NULL;
}

static int ops_inside(const ev_t *burst) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_OP && e->pid == burst->pid && e->tid == burst->tid &&
        burst->rec_line[0] < e->line && e->line < burst->rec_line[1])
      n++;
  }
  return n;
}

/* transSize as NCCL passes it: one value per op, set at SendWait or
 * RecvFlushWait, stale in between. Checks every record of op `op`, in
 * line order, against that; `det` also checks the deterministic sizes. */
static const char *check_sizes(const ev_t *op, bool det) {
  static int steps[4096];
  int n = 0;
  for (int i = 0; i < tr.nev && n < 4096; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type == NT_EV_PROXY_STEP && s->pid == op->pid && s->parent == op->h) steps[n++] = i;
  }
  unsigned long long cur = 0;
  for (int line = op->line;;) {
    /* the next record (by line) of any step of this op */
    const ev_t *best = NULL;
    int bi = 0, bl = INT32_MAX;
    for (int k = 0; k < n; k++) {
      const ev_t *s = &tr.ev[steps[k]];
      for (int r = 0; r < s->nrec; r++)
        if (s->rec_line[r] > line && s->rec_line[r] < bl) best = s, bi = r, bl = s->rec_line[r];
    }
    if (!best) return NULL;
    line = bl;
    int st = best->states[bi];
    unsigned long long sz = best->size[bi];
    if (st == NT_ST_STEP_SEND_WAIT || st == NT_ST_STEP_RECV_FLUSH_WAIT) {
      if (det && sz != 131072ull + 4096ull * (unsigned long long)best->step)
        return BAD("step %d of op line %d: size %llu at state %d", best->step, op->line, sz, st);
      if (!sz) return BAD("zero transSize at state %d", st);
      cur = sz;
    } else if (sz != cur) {
      return BAD("op line %d step %d state %d: size %llu, NCCL would pass %llu", op->line,
                 best->step, st, sz, cur);
    }
  }
}

/* Everything NCCL guarantees about the calls of one run. */
static const char *grammar_problem(const nt_sim_config *c) {
  static const int send4[] = {NT_ST_STEP_SEND_GPU_WAIT, NT_ST_STEP_SEND_PEER_WAIT,
                              NT_ST_STEP_SEND_PEER_WAIT, NT_ST_STEP_SEND_WAIT};
  static const int send3[] = {NT_ST_STEP_SEND_GPU_WAIT, NT_ST_STEP_SEND_WAIT};
  static const int recv[] = {NT_ST_STEP_RECV_WAIT, NT_ST_STEP_RECV_FLUSH_WAIT,
                             NT_ST_STEP_RECV_GPU_WAIT};
  static const int gapi[] = {NT_ST_GROUP_START_API_STOP, NT_ST_GROUP_END_API_START};
  int abi = tr.nctx ? tr.ctx[0].version : 0;
  if (tr.bad_lines || tr.overflow) return BAD("unreadable trace (%d bad lines)", tr.bad_lines);
  if (tr.null_calls) return BAD("%d record/stop calls with a NULL handle", tr.null_calls);
  if (tr.unknown_handles) return BAD("%d calls with a handle never returned", tr.unknown_handles);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *p = parent_of(e);
    if (e->h && (e->stops != 1 || e->stop_line < e->line))
      return BAD("event type %d (line %d) stopped %d times", e->type, e->line, e->stops);
    if (e->extra_records) return BAD("record after stop (line %d)", e->line);
    if (!ctx_of(e->pid, e->ctx)) return BAD("start with an unknown context (line %d)", e->line);
    if (abi < 5 && e->type >= NT_EV_GROUP_API) return BAD("v%d got API event %d", abi, e->type);
    switch (e->type) {
    case NT_EV_PROXY_STEP: {
      if (!p) {
        if (e->nrec) return BAD("step of a dropped op has records (line %d)", e->line);
        break;
      }
      if (p->type != NT_EV_PROXY_OP || p->line > e->line)
        return BAD("step parent is not an earlier op (line %d)", e->line);
      if (p->stop_line < e->stop_line) return BAD("op stopped before its step (line %d)", e->line);
      if (e->step < 0 || e->step >= p->steps) return BAD("step %d of %d", e->step, p->steps);
      if (e->tid != p->tid) return BAD("step and op on different threads");
      if (p->nrec && p->rec_line[0] > e->line) return BAD("step before InProgress");
      bool ok =
          p->send ? (abi >= 4 ? seq_is(e, send4, 4) : seq_is(e, send3, 2)) : seq_is(e, recv, 3);
      if (!ok)
        return BAD("%s step line %d has %d states, first %d", p->send ? "send" : "recv", e->line,
                   e->nrec, e->nrec ? e->states[0] : -1);
      for (int r = 0; r < e->nrec && abi == 3; r++)
        if (e->size[r]) return BAD("v3 step args not zeroed");
      break;
    }
    case NT_EV_PROXY_OP: {
      if (abi >= 4 && e->h ? !(e->nrec == 1 && e->states[0] == NT_ST_OP_IN_PROGRESS) : e->nrec != 0)
        return BAD("op line %d: %d records", e->line, e->nrec);
      if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P) || p->line > e->line))
        return BAD("op parent is not an earlier Coll or P2p (line %d)", e->line);
      if (!append_burst_around(e))
        return BAD("op started outside an Append burst (line %d)", e->line);
      const ctx_t *x = ctx_of(e->pid, e->ctx);
      int n = c->ranks, r = x->version == 3 ? -1 : x->rank;
      if (r >= 0 && e->peer != (e->send ? (r + 1) % n : (r - 1 + n) % n))
        return BAD("rank %d %s peer %d", r, e->send ? "send" : "recv", e->peer);
      if (e->oppid != e->pid) return BAD("op pid %d in process %d", e->oppid, e->pid);
      if (e->ch < 0 || e->ch >= c->channels) return BAD("op channel %d", e->ch);
      if (abi >= 4 && c->deterministic && check_sizes(e, true)) return why;
      if (abi >= 4 && !c->deterministic && check_sizes(e, false)) return why;
      break;
    }
    case NT_EV_PROXY_CTRL: {
      bool edge =
          e->nrec == 1 && (e->states[0] == NT_ST_CTRL_IDLE || e->states[0] == NT_ST_CTRL_ACTIVE);
      bool sleep =
          e->nrec == 2 && e->states[0] == NT_ST_CTRL_SLEEP && e->states[1] == NT_ST_CTRL_WAKEUP;
      bool append = e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND &&
                    e->states[1] == NT_ST_CTRL_APPEND_END;
      if (!edge && !sleep && !append) return BAD("ctrl line %d: bad burst", e->line);
      if (e->parent) return BAD("ctrl with a parent");
      if (append && (e->size[1] == 0 || e->size[1] % (2ull * (unsigned)c->channels) ||
                     (ops_inside(e) && (int)e->size[1] != ops_inside(e))))
        return BAD("AppendEnd says %llu ops, %d started inside", e->size[1], ops_inside(e));
      break;
    }
    case NT_EV_COLL:
      if (abi >= 5) {
        if (e->parent && (!p || p->type != NT_EV_COLL_API || p->stop_line > e->line))
          return BAD("v5 Coll parent is not a finished CollApi (line %d)", e->line);
        const ev_t *g = e->pgroup ? find(e->pid, e->pgroup) : NULL;
        if (e->pgroup && (!g || g->type != NT_EV_GROUP))
          return BAD("coll.parentGroup is not a Group");
      } else if (e->parent && (!p || p->type != NT_EV_GROUP)) {
        return BAD("v%d Coll parent is not a Group (line %d)", abi, e->line);
      }
      if (p && p->tid != e->tid) return BAD("Coll and its parent on different threads");
      break;
    case NT_EV_GROUP_API:
      if (!seq_is(e, gapi, 2) || e->args[0] || e->args[1] || e->depth != 1)
        return BAD("GroupApi line %d: states or args wrong", e->line);
      break;
    case NT_EV_KERNEL_CH:
      if (e->parent && (!p || (p->type != NT_EV_COLL && p->type != NT_EV_P2P)))
        return BAD("KernelCh parent not a Coll or P2p");
      if (abi >= 4 && !(e->nrec == 1 && e->states[0] == NT_ST_KERNEL_CH_STOP &&
                        e->ptimer_stop > e->ptimer && e->ptimer))
        return BAD("KernelCh line %d: no KernelChStop with a later pTimer", e->line);
      if (abi == 3 && e->nrec) return BAD("v3 KernelCh has records");
      break;
    default: break;
    }
  }
  /* Threads: collectives on one thread, the proxy side on another; Idle
   * and Active edges alternate on the proxy thread. */
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    long app = 0, proxy = 0;
    int last_edge = -1;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *f = &tr.ev[j];
      if (f->pid != x->pid || f->ctx != x->ctx) continue;
      bool side = f->type == NT_EV_PROXY_OP || f->type == NT_EV_PROXY_STEP ||
                  f->type == NT_EV_PROXY_CTRL || f->type == NT_EV_KERNEL_CH;
      long *tid = side ? &proxy : &app;
      if (!*tid) *tid = f->tid;
      if (*tid != f->tid || (f->h && f->stop_tid != f->tid))
        return BAD("%s events on two threads (line %d)", side ? "proxy" : "app", f->line);
      if (f->type == NT_EV_PROXY_CTRL && f->nrec == 1) {
        if (f->states[0] == last_edge)
          return BAD("two edges %d in a row (line %d)", last_edge, f->line);
        last_edge = f->states[0];
      }
    }
    if (app && app == proxy) return BAD("application and proxy events on one thread");
  }
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    if (x->finalizes != 1) return BAD("context finalized %d times", x->finalizes);
    int ps = pid_slot(x->pid);
    if (x->finalize_line < tr.flush_line[ps]) return BAD("finalize before flush");
  }
  return "none";
}

/* ---- the deterministic totals, re-added from the recorded clock ---- */

static int wait_index(int state) {
  switch (state) {
  case NT_ST_STEP_SEND_GPU_WAIT:
  case NT_ST_STEP_RECV_WAIT: return 0;
  case NT_ST_STEP_SEND_PEER_WAIT:
  case NT_ST_STEP_RECV_FLUSH_WAIT: return 1;
  case NT_ST_STEP_SEND_WAIT:
  case NT_ST_STEP_RECV_GPU_WAIT: return 2;
  default: return -1;
  }
}

static const char *channel_totals(const nt_sim_config *c, const ctx_t *x, int ch, int dir) {
  nt_sim_channel_expect want, got;
  memset(&got, 0, sizeof got);
  nt_sim_expect_channel(c, x->rank, x->comm, ch, dir, &want);
  got.peer = -1;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *op = &tr.ev[i];
    if (op->type != NT_EV_PROXY_OP || op->pid != x->pid || op->ctx != x->ctx || op->ch != ch ||
        op->send != (dir == NT_DIR_SEND))
      continue;
    got.ops++;
    got.peer = op->peer;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *s = &tr.ev[j];
      if (s->type != NT_EV_PROXY_STEP || s->pid != op->pid || s->parent != op->h) continue;
      got.steps++;
      int cur = -1;
      unsigned long long since = 0;
      for (int r = 0; r <= s->nrec; r++) {
        bool end = r == s->nrec;
        int st = end ? -1 : s->states[r];
        if (!end && st == cur) continue; /* a repeated SendPeerWait changes nothing */
        unsigned long long t = end ? s->t_stop : s->rec_t[r];
        if (cur >= 0) got.wait_ns[wait_index(cur)] += t - since;
        cur = st, since = t;
        if (st == NT_ST_STEP_SEND_WAIT || st == NT_ST_STEP_RECV_FLUSH_WAIT) got.bytes += s->size[r];
      }
    }
  }
  uint64_t g[6] = {got.steps, got.bytes, got.ops, got.wait_ns[0], got.wait_ns[1], got.wait_ns[2]};
  uint64_t w[6] = {want.steps,      want.bytes,      want.ops,
                   want.wait_ns[0], want.wait_ns[1], want.wait_ns[2]};
  for (int i = 0; i < 6; i++)
    if (g[i] != w[i])
      return BAD("rank %d comm %d ch %d dir %d field %d: trace %llu, expected %llu", x->rank,
                 x->comm, ch, dir, i, (unsigned long long)g[i], (unsigned long long)w[i]);
  if (got.peer != want.peer) return BAD("peer %d, expected %d", got.peer, want.peer);
  return NULL;
}

/* The proxy thread's control states, as the brief defines them: Sleep ..
 * Wakeup is sleep, Wakeup .. stop wakeup, Append .. AppendEnd append, and
 * otherwise the last Idle/Active edge; counted from the first ctrl event to
 * the end of the schedule. */
static const char *proxy_totals(const nt_sim_config *c, const ctx_t *x, unsigned long long t_end) {
  nt_sim_proxy_expect want, got;
  memset(&got, 0, sizeof got);
  nt_sim_expect_proxy(c, x->rank, x->comm, &want);
  int base = -1, over = -1, cur = -1;
  unsigned long long since = 0;
  bool first = true;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_PROXY_CTRL || e->pid != x->pid || e->ctx != x->ctx) continue;
    if (first && (e->t != 0 || e->nrec != 1 || e->states[0] != NT_ST_CTRL_IDLE))
      return BAD("the first ctrl event is not an Idle edge at t=0");
    first = false;
    for (int r = 0; r <= e->nrec; r++) {
      unsigned long long t = r < e->nrec ? e->rec_t[r] : e->t_stop;
      int st = r < e->nrec ? e->states[r] : -1;
      if (st == NT_ST_CTRL_IDLE) base = NT_PROXY_IDLE;
      if (st == NT_ST_CTRL_ACTIVE) base = NT_PROXY_ACTIVE;
      if (st == NT_ST_CTRL_SLEEP) over = NT_PROXY_SLEEP;
      if (st == NT_ST_CTRL_WAKEUP) over = NT_PROXY_WAKEUP, got.wakeups++;
      if (st == NT_ST_CTRL_APPEND) over = NT_PROXY_APPEND;
      if (st == NT_ST_CTRL_APPEND_END) over = -1, got.appends++, got.appended_ops += e->size[r];
      if (st == -1) over = -1;
      int next = over >= 0 ? over : base;
      if (cur >= 0) got.state_ns[cur] += t - since;
      cur = next, since = t;
    }
  }
  if (cur >= 0) got.state_ns[cur] += t_end - since;
  got.final_state = cur;
  for (int s = 0; s < 5; s++)
    if (got.state_ns[s] != want.state_ns[s])
      return BAD("rank %d comm %d proxy state %d: trace %llu, expected %llu", x->rank, x->comm, s,
                 (unsigned long long)got.state_ns[s], (unsigned long long)want.state_ns[s]);
  if (got.appends != want.appends || got.appended_ops != want.appended_ops ||
      got.wakeups != want.wakeups || got.final_state != want.final_state)
    return BAD("proxy counts: appends %llu/%llu ops %llu/%llu wakeups %llu/%llu final %d/%d",
               (unsigned long long)got.appends, (unsigned long long)want.appends,
               (unsigned long long)got.appended_ops, (unsigned long long)want.appended_ops,
               (unsigned long long)got.wakeups, (unsigned long long)want.wakeups, got.final_state,
               want.final_state);
  return NULL;
}

static const char *comm_totals(const nt_sim_config *c, const ctx_t *x) {
  nt_sim_comm_expect want;
  nt_sim_expect_comm(c, x->rank, x->comm, &want);
  uint64_t colls = 0, count[64] = {0}, busy[64] = {0};
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->pid != x->pid || e->ctx != x->ctx) continue;
    colls += e->type == NT_EV_COLL;
    if (e->type == NT_EV_KERNEL_CH && e->ch >= 0 && e->ch < 64) {
      count[e->ch]++;
      if (e->ptimer_stop > e->ptimer) busy[e->ch] += e->ptimer_stop - e->ptimer;
    }
  }
  if (colls != want.colls)
    return BAD("colls %llu, expected %llu", (unsigned long long)colls,
               (unsigned long long)want.colls);
  for (int ch = 0; ch < c->channels; ch++)
    if (count[ch] != want.kernel_count || busy[ch] != want.kernel_busy_ns)
      return BAD("kernel ch %d: %llu events %llu ns, expected %llu, %llu", ch,
                 (unsigned long long)count[ch], (unsigned long long)busy[ch],
                 (unsigned long long)want.kernel_count, (unsigned long long)want.kernel_busy_ns);
  return NULL;
}

static const char *totals_problem(const nt_sim_config *c) {
  /* Every proxy thread ends at the same virtual time, with its last event. */
  unsigned long long t_end = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_CTRL && e->t_stop > t_end) t_end = e->t_stop;
  }
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    unsigned long long last = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *e = &tr.ev[j];
      if (e->pid != x->pid || e->ctx != x->ctx || e->type == NT_EV_COLL || e->type == NT_EV_GROUP ||
          e->type >= NT_EV_GROUP_API)
        continue;
      if (e->t_stop > last) last = e->t_stop;
    }
    if (last != t_end) return BAD("a proxy thread ends at %llu, another at %llu", last, t_end);
    for (int ch = 0; ch < c->channels; ch++)
      for (int dir = 0; dir < 2; dir++)
        if (channel_totals(c, x, ch, dir)) return why;
    if (proxy_totals(c, x, t_end) || comm_totals(c, x)) return why;
  }
  return "none";
}

/* ---- the tests ---- */

static void options_are_parsed_with_ranges(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *ok[] = {"--ranks", "16", "--channels=32", "--deterministic", "--abi", "4", "-b"};
  CHECK(nt_sim_parse_args(&c, 7, ok) == 6); /* stops at the viewer's -b */
  CHECK(c.ranks == 16 && c.channels == 32 && c.deterministic && c.abi == 4);
  CHECK(c.iterations == 10); /* a deterministic run is a fixed number of collectives */
  char *edges[] = {"--ranks", "1024",     "--comms",       "8",        "--steps",
                   "1",       "--linger", "0.5",           "--plugin", "/x.so",
                   "--dir",   "/tmp/d",   "--interval-ms", "50",       "--quiet"};
  CHECK(nt_sim_parse_args(&c, 15, edges) == 15);
  CHECK(c.ranks == 1024 && c.comms == 8 && c.steps == 1 && c.linger_s == 0.5 && c.quiet);
  CHECK_STR(c.plugin, "/x.so");
  CHECK(c.interval_ms == 50);
  static const char *const bad[][2] = {
      {"--ranks", "0"},     {"--ranks", "1025"},   {"--comms", "9"},       {"--channels", "65"},
      {"--steps", "1025"},  {"--steps", "12x"},    {"--abi", "7"},         {"--abi", "2"},
      {"--duration", "-1"}, {"--linger", "nan"},   {"--iterations", "-3"}, {"--plugin", ""},
      {"--ranks", ""},      {"--interval-ms", "5"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[2] = {(char *)bad[i][0], (char *)bad[i][1]};
    CHECK(nt_sim_parse_args(&c, 2, argv) == -1);
  }
  char *missing[] = {"--steps"};
  CHECK(nt_sim_parse_args(&c, 1, missing) == -1);
  char *novalue[] = {"--quiet=1"};
  CHECK(nt_sim_parse_args(&c, 1, novalue) == -1);
  char *other[] = {"--ranks5"};
  CHECK(nt_sim_parse_args(&c, 1, other) == 0);
}

/* Written out by hand for 2 ranks, 1 channel, 2 steps, 3 collectives. */
static void expectations_are_the_schedule_by_hand(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 2, c.comms = 1, c.channels = 1, c.steps = 2, c.iterations = 3, c.deterministic = true;
  nt_sim_channel_expect e;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &e);
  CHECK_EQ_U64(e.steps, 6);
  CHECK_EQ_U64(e.bytes, 3 * (131072 + 135168));
  CHECK_EQ_U64(e.wait_ns[0], 6000);
  CHECK_EQ_U64(e.wait_ns[1], 12000);
  CHECK_EQ_U64(e.wait_ns[2], 18000);
  CHECK_EQ_U64(e.ops, 3);
  CHECK_EQ_U64(e.peer, 1);
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_RECV, &e);
  CHECK_EQ_U64(e.wait_ns[0], 24000);
  CHECK_EQ_U64(e.wait_ns[1], 3000);
  CHECK_EQ_U64(e.wait_ns[2], 9000);
  CHECK_EQ_U64(e.peer, 1);
  nt_sim_proxy_expect p;
  nt_sim_expect_proxy(&c, 1, 0, &p);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_IDLE], 33000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_ACTIVE], 3 * 2 * 12000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_SLEEP], 15000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_WAKEUP], 900);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_APPEND], 2100);
  CHECK_EQ_U64(p.appends, 3);
  CHECK_EQ_U64(p.appended_ops, 6);
  CHECK_EQ_U64(p.wakeups, 3);
  CHECK(p.final_state == NT_PROXY_IDLE);
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 3);
  CHECK_EQ_U64(ce.kernel_count, 3);
  CHECK_EQ_U64(ce.kernel_busy_ns, 27000);
  /* v3: no SendPeerWait (its time stays in SendGPUWait), no sizes, no pTimer */
  c.abi = 3;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &e);
  CHECK_EQ_U64(e.wait_ns[0], 18000);
  CHECK_EQ_U64(e.wait_ns[1], 0);
  CHECK_EQ_U64(e.bytes, 0);
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.kernel_busy_ns, 0);
  c.iterations = 0; /* the deterministic default */
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 10);
  c.ranks = 3;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_RECV, &e);
  CHECK_EQ_U64(e.peer, 2); /* rank 0 receives from rank 2 in a ring of 3 */
}

static void the_recorded_clock_adds_up_to_the_expectations(void) {
  rec_opts o = {.abi = 5, .comms = 2, .channels = 2, .steps = 3, .iterations = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_EQ_U64(tr.nctx, 4);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  /* the clock was handed over before the first init, the flush after the schedule */
  for (int i = 0; i < tr.npids; i++) {
    CHECK(tr.first_set_clock[i] && tr.first_set_clock[i] < tr.first_init[i]);
    CHECK(tr.flush_line[i] > 0);
  }
}

static void v5_event_order_matches_nccl(void) {
  rec_opts o = {.abi = 5};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int n[16] = {0};
  for (int i = 0; i < tr.nev; i++)
    for (int b = 0; b < 16; b++) n[b] += tr.ev[i].type == 1 << b;
  /* 2 ranks x 2 collectives x 2 channels x 2 directions x 3 steps */
  CHECK_EQ_U64(n[4], 48);
  CHECK_EQ_U64(n[3], 16);
  CHECK_EQ_U64(n[1], 4);  /* Coll */
  CHECK_EQ_U64(n[0], 4);  /* Group: v5 still gets the legacy event */
  CHECK_EQ_U64(n[8], 4);  /* GroupApi */
  CHECK_EQ_U64(n[9], 4);  /* CollApi */
  CHECK_EQ_U64(n[11], 4); /* KernelLaunch */
  CHECK_EQ_U64(n[6], 8);  /* KernelCh */
  for (int i = 0; i < tr.nctx; i++) {
    CHECK(tr.ctx[i].version == 5 && tr.ctx[i].comm == 0 && tr.ctx[i].nranks == 2);
    CHECK(tr.ctx[i].hash == nt_sim_comm_hash(0) && tr.ctx[i].log == 1);
  }
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].type == NT_EV_COLL) CHECK(tr.ev[i].parent && tr.ev[i].pgroup);
}

static void v4_gets_its_own_init_order_and_no_api_events(void) {
  rec_opts o = {.abi = 4, .channels = 1};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_EQ_U64(tr.nctx, 2);
  int ranks_seen = 0;
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    CHECK(x->version == 4 && x->comm == 0 && x->nranks == 2 && x->nnodes == 2 && x->log == 1);
    CHECK(x->hash == nt_sim_comm_hash(0));
    ranks_seen |= 1 << x->rank;
  }
  CHECK(ranks_seen == 3);
  int colls = 0;
  for (int i = 0; i < tr.nev; i++) {
    CHECK(tr.ev[i].type < NT_EV_GROUP_API);
    if (tr.ev[i].type == NT_EV_COLL) {
      const ev_t *g = parent_of(&tr.ev[i]);
      CHECK(g && g->type == NT_EV_GROUP); /* the shim makes the Group the parent */
      colls++;
    }
  }
  CHECK(colls == 4);
}

static void v3_gets_two_argument_init_and_only_its_states(void) {
  rec_opts o = {.abi = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int i = 0; i < tr.nctx; i++) CHECK(tr.ctx[i].version == 3 && tr.ctx[i].log == 0);
  int steps = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    for (int r = 0; r < e->nrec; r++) CHECK(e->states[r] <= NT_ST_CTRL_APPEND_END);
    steps += e->type == NT_EV_PROXY_STEP;
  }
  CHECK_EQ_U64(steps, 48);
}

static int count_type(int type) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type;
  return n;
}

static void the_mask_gates_events_as_nccl_does(void) {
  char mask[16];
  snprintf(mask, sizeof mask, "%d", NT_EV_PROXY_OP | NT_EV_PROXY_CTRL);
  rec_opts o = {.abi = 5, .channels = 1, .mask = mask};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_PROXY_STEP) == 0 && count_type(NT_EV_KERNEL_CH) == 0);
  CHECK(count_type(NT_EV_KERNEL_LAUNCH) == 0);
  /* asking for ProxyOp brings its ancestors */
  CHECK(count_type(NT_EV_PROXY_OP) == 8 && count_type(NT_EV_COLL) == 4);
  CHECK(count_type(NT_EV_GROUP) == 4 && count_type(NT_EV_COLL_API) == 4);
  CHECK(count_type(NT_EV_GROUP_API) == 4);
  /* ProxyCtrl alone: no collective events at all */
  snprintf(mask, sizeof mask, "%d", NT_EV_PROXY_CTRL);
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_PROXY_CTRL) > 0 && count_type(NT_EV_PROXY_CTRL) == tr.nev);
}

static void a_mask_change_applies_from_the_next_collective(void) {
  char sw[32];
  /* while collective 0 is enqueued, turn ProxyStep and KernelCh off (and
   * NetPlugin, which would bring ProxyStep back) */
  snprintf(sw, sizeof sw, "0:%d", 0xFFF & ~(NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | NT_EV_NET_PLUGIN));
  rec_opts o = {.abi = 5, .channels = 1, .iterations = 3, .mask_switch = sw};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *op = parent_of(e);
    const ev_t *coll = e->type == NT_EV_PROXY_STEP && op ? parent_of(op) : NULL;
    if (e->type == NT_EV_PROXY_STEP) CHECK(coll && coll->seq == 0);
  }
  CHECK(count_type(NT_EV_PROXY_STEP) == 2 * 2 * 3); /* collective 0 only */
  CHECK(count_type(NT_EV_PROXY_OP) == 2 * 3 * 2);   /* every collective */
}

static void dropped_handles_are_never_used(void) {
  char null_types[16];
  snprintf(null_types, sizeof null_types, "%d", NT_EV_PROXY_OP | NT_EV_COLL_API);
  rec_opts o = {.abi = 5, .null_types = null_types};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none"); /* no record or stop with NULL */
  int steps = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_STEP) {
      /* NCCL still starts the steps of a dropped op, with no parent and no states */
      CHECK(e->parent == 0 && e->nrec == 0 && e->stops == 1);
      steps++;
    }
    if (e->type == NT_EV_COLL) CHECK(e->parent == 0 && e->pgroup != 0);
  }
  CHECK_EQ_U64(steps, 48);
}

static void a_declining_plugin_gets_no_more_calls(void) {
  rec_opts o = {.abi = 5, .fail = "1"};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0); /* the job runs on without the plugin */
  CHECK_EQ_U64(tr.nctx, 2);
  CHECK_EQ_U64(tr.nev, 0);
  CHECK_EQ_U64(tr.flush_lines, 0);
  CHECK_EQ_U64(tr.null_calls + tr.unknown_handles, 0);
  for (int i = 0; i < tr.nctx; i++) CHECK(tr.ctx[i].finalizes == 0);
}

/* In real time several steps of an op are in flight at once. */
static int max_steps_in_flight(void) {
  int best = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type != NT_EV_PROXY_STEP) continue;
    int n = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *o = &tr.ev[j];
      n += o->type == NT_EV_PROXY_STEP && o->pid == s->pid && o->parent == s->parent &&
           o->line <= s->line && o->stop_line > s->line;
    }
    if (n > best) best = n;
  }
  return best;
}

static void real_time_steps_overlap_and_keep_their_order(void) {
  rec_opts o = {.abi = 6, .realtime = true, .channels = 2, .steps = 4, .iterations = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(tr.ctx[0].version == 6);
  /* 3 operations per communicator: AllGather, AllGather, a Send/Recv pair */
  CHECK(count_type(NT_EV_COLL) == 4);
  CHECK(count_type(NT_EV_P2P) == 4);
  CHECK(max_steps_in_flight() > 1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sigterm_drains_and_finalizes(void) {
  rec_opts o = {.abi = 5, .realtime = true, .channels = 2, .steps = 2};
  nt_sim_config c;
  config_for(&o, &c);
  c.iterations = 0; /* until stopped */
  env_for(&o);
  pid_t pid = nt_sim_spawn(&c);
  CHECK(pid > 0);
  /* let it run until it has done some steps */
  for (double end = now_s() + 10; now_s() < end;) {
    load(trace_path);
    if (count_type(NT_EV_PROXY_STEP) > 20) break;
    usleep(20000);
  }
  kill(-pid, SIGTERM);
  int st = -1;
  for (double end = now_s() + 10; now_s() < end;) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    st = -1;
    usleep(10000);
  }
  if (st == -1) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(load(trace_path) == 0);
  unlink(trace_path);
  CHECK(count_type(NT_EV_PROXY_STEP) > 20);
  /* every op and step started was finished, every context finalized */
  CHECK_STR(grammar_problem(&c), "none");
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", dirname(exe));
  TEST_RUN(options_are_parsed_with_ranges);
  TEST_RUN(expectations_are_the_schedule_by_hand);
  TEST_RUN(the_recorded_clock_adds_up_to_the_expectations);
  TEST_RUN(v5_event_order_matches_nccl);
  TEST_RUN(v4_gets_its_own_init_order_and_no_api_events);
  TEST_RUN(v3_gets_two_argument_init_and_only_its_states);
  TEST_RUN(the_mask_gates_events_as_nccl_does);
  TEST_RUN(a_mask_change_applies_from_the_next_collective);
  TEST_RUN(dropped_handles_are_never_used);
  TEST_RUN(a_declining_plugin_gets_no_more_calls);
  TEST_RUN(real_time_steps_overlap_and_keep_their_order);
  TEST_RUN(sigterm_drains_and_finalizes);
  return TEST_DONE();
}

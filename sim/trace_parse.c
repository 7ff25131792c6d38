/* Recordings into a checked job (trace_model.h). Each line is parsed as the
 * recorder writes it (tests/fixtures/recorder.c; tests/traces/README.md):
 *   <pid> <tid> <t_ns> init vN ctx= name= hash= nnodes= nranks= rank= log= fail=
 *   <pid> <tid> <t_ns> start TYPE h= ctx= parent= rank= <the type's fields>
 *   <pid> <tid> <t_ns> record h= state= args= size= appended= ptimer= [opsteps=]
 *   <pid> <tid> <t_ns> stop h=
 *   <pid> <tid> <t_ns> finalize ctx=
 * ("set_clock" and "flush" lines are the simulator's, not NCCL's: skipped.)
 * A field missing or out of range, a thread whose clock goes back: each
 * refuses the job with the file and line; trace_check.c then follows each
 * process's handles and contexts, so nothing is played half-way. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_model.h"

/* ---- interned strings (func, dtype, algo ... live as long as the job) ---- */

struct tr_strings {
  char **slot;
  size_t cap, n;
};

static uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

static const char *intern(tr_strings *s, const char *p, size_t n) {
  if (s->n * 2 >= s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    char **slot = calloc(cap, sizeof *slot);
    if (!slot) return NULL;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->slot[i]) continue;
      size_t k = hash_bytes(s->slot[i], strlen(s->slot[i])) & (cap - 1);
      while (slot[k]) k = (k + 1) & (cap - 1);
      slot[k] = s->slot[i];
    }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
  }
  size_t k = hash_bytes(p, n) & (s->cap - 1);
  for (; s->slot[k]; k = (k + 1) & (s->cap - 1))
    if (strncmp(s->slot[k], p, n) == 0 && s->slot[k][n] == '\0') return s->slot[k];
  char *c = malloc(n + 1);
  if (!c) return NULL;
  memcpy(c, p, n);
  c[n] = '\0';
  s->slot[k] = c;
  s->n++;
  return c;
}

static void strings_free(tr_strings *s) {
  if (!s) return;
  for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
  free(s->slot);
  free(s);
}

/* ---- one line ---- */

#define MAX_TOKENS 40

typedef struct {
  tr_job *job;
  int file;
  const char *path;
  uint32_t line;
  char *err;
  size_t errlen;
  int first_proc; /* this file's processes start here */
  char *tok[MAX_TOKENS];
  int ntok;
} parser;

__attribute__((format(printf, 2, 3))) static int fail(parser *ps, const char *fmt, ...) {
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(ps->err, ps->errlen, "%s:%u: %s", ps->path, ps->line, what);
  return -1;
}

/* The value of key= among the tokens from `from` on, or NULL. */
static const char *val(const parser *ps, int from, const char *key) {
  size_t n = strlen(key);
  for (int i = from; i < ps->ntok; i++)
    if (strncmp(ps->tok[i], key, n) == 0 && ps->tok[i][n] == '=') return ps->tok[i] + n + 1;
  return NULL;
}

static int get_u64(parser *ps, const char *key, int base, uint64_t *out) {
  const char *v = val(ps, 4, key);
  if (!v) return fail(ps, "%s without %s=", ps->tok[3], key);
  const char *p = v;
  if (base == 16 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  char *end = NULL;
  errno = 0;
  unsigned long long x = *p && *p != '-' && *p != '+' ? strtoull(p, &end, base) : 0;
  if (!end || end == p || *end || errno) return fail(ps, "%s=%.40s is not a number", key, v);
  *out = x;
  return 0;
}

static int get_i32(parser *ps, const char *key, long long lo, long long hi, int32_t *out) {
  const char *v = val(ps, 4, key);
  if (!v) return fail(ps, "%s without %s=", ps->tok[3], key);
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > hi)
    return fail(ps, "%s=%.40s is not a number from %lld to %lld", key, v, lo, hi);
  *out = (int32_t)x;
  return 0;
}

/* A string field, interned; "-" is NULL when `dash_null`. */
static int get_str(parser *ps, const char *key, bool dash_null, const char **out) {
  const char *v = val(ps, 4, key);
  if (!v) return fail(ps, "%s without %s=", ps->tok[3], key);
  if (dash_null && !strcmp(v, "-")) {
    *out = NULL;
    return 0;
  }
  *out = intern(ps->job->strings, v, strlen(v));
  return *out ? 0 : fail(ps, "out of memory");
}

/* A value that may hold blanks (a communicator's name): from after `key`=
 * to the blank before `next`=, copied out before the line is cut into
 * tokens. NULL for "-". */
static int get_spaced(parser *ps, const char *l, const char *key, const char *next,
                      const char **out) {
  char k[24], nx[24];
  snprintf(k, sizeof k, " %s=", key);
  snprintf(nx, sizeof nx, " %s=", next);
  const char *v = strstr(l, k);
  const char *e = v ? strstr(v + strlen(k), nx) : NULL;
  if (!v || !e) return 0; /* said by the token check */
  v += strlen(k);
  if (e - v == 1 && *v == '-') {
    *out = NULL;
    return 0;
  }
  *out = intern(ps->job->strings, v, (size_t)(e - v));
  return *out ? 0 : fail(ps, "out of memory");
}

static void *grow(void *p, uint32_t *cap, uint32_t need, size_t size) {
  if (need <= *cap) return p;
  uint32_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(p, (size_t)c * size);
  if (q) *cap = c;
  return q;
}

static tr_proc *proc_of(parser *ps, uint32_t pid) {
  tr_job *j = ps->job;
  for (int i = ps->first_proc; i < j->nprocs; i++)
    if (j->procs[i].pid == pid) return &j->procs[i];
  if (j->nprocs >= NT_TRACE_MAX_PROCS) {
    fail(ps, "more than %d processes in the job (the limit)", NT_TRACE_MAX_PROCS);
    return NULL;
  }
  tr_proc *procs = realloc(j->procs, (size_t)(j->nprocs + 1) * sizeof *procs);
  if (!procs) {
    fail(ps, "out of memory");
    return NULL;
  }
  j->procs = procs;
  tr_proc *p = &procs[j->nprocs++];
  memset(p, 0, sizeof *p);
  p->file = ps->file;
  p->pid = pid;
  return p;
}

/* The thread's index; its last time goes in *last. */
static int thread_of(parser *ps, tr_proc *p, long tid) {
  for (uint32_t i = 0; i < p->nthreads; i++)
    if (p->threads[i].tid == tid) return (int)i;
  if (p->nthreads >= NT_TRACE_MAX_THREADS)
    return fail(ps, "process %u: more than %d threads (the limit)", p->pid, NT_TRACE_MAX_THREADS);
  tr_thread *t = realloc(p->threads, (p->nthreads + 1) * sizeof *t);
  if (!t) return fail(ps, "out of memory");
  p->threads = t;
  memset(&t[p->nthreads], 0, sizeof *t);
  t[p->nthreads].tid = tid;
  return (int)p->nthreads++;
}

static int parse_init(parser *ps, tr_proc *p, tr_call *c, const char *spaced_name) {
  const char *v = ps->ntok > 4 ? ps->tok[4] : "";
  if (v[0] != 'v' || v[1] < '3' || v[1] > '7' || v[2])
    return fail(ps, "init names no ABI version v3 .. v7 ('%.16s')", v);
  int version = v[1] - '0';
  if (p->version && p->version != version)
    return fail(ps, "process %u: init v%d after init v%d (one process loads one ABI)", p->pid,
                version, p->version);
  p->version = version;
  if (p->nctx >= NT_TRACE_MAX_CONTEXTS)
    return fail(ps, "process %u: more than %d inits (the limit)", p->pid, NT_TRACE_MAX_CONTEXTS);
  tr_ctx *x = grow(p->ctx, &p->ctx_cap, p->nctx + 1, sizeof *x);
  if (!x) return fail(ps, "out of memory");
  p->ctx = x;
  x = &p->ctx[p->nctx];
  memset(x, 0, sizeof *x);
  x->line = ps->line;
  x->name = spaced_name;
  if (!val(ps, 4, "name")) return fail(ps, "init without name=");
  if (get_u64(ps, "ctx", 16, &x->value) || get_u64(ps, "hash", 16, &x->hash) ||
      get_i32(ps, "nnodes", -1, 1 << 24, &x->nnodes) ||
      get_i32(ps, "nranks", -1, 1 << 24, &x->nranks) ||
      get_i32(ps, "rank", -1, 1 << 24, &x->rank) || get_i32(ps, "log", 0, 1, &x->log) ||
      get_i32(ps, "fail", 0, 1, &x->fail))
    return -1;
  c->raw = x->value;
  c->ref = (int32_t)p->nctx++;
  return 0;
}

/* Which types each ABI has (the recorder writes what NCCL gave). */
static uint32_t types_of(int version) {
  return version >= 7 ? 0xFFFFu : version == 6 ? 0x7FFFu : version == 5 ? 0x0FFFu : 0x00FFu;
}

/* The fields of the Coll and P2p descriptors and the API events. */
static int parse_op_fields(parser *ps, int version, tr_event *e) {
  const int32_t imax = 0x7FFFFFFF;
  int rc = 0;
  switch (e->type) {
  case NT_EV_COLL:
    rc = get_u64(ps, "seq", 10, &e->seq) || get_str(ps, "func", false, &e->func) ||
         get_u64(ps, "count", 10, &e->count) || get_str(ps, "dtype", false, &e->dtype) ||
         get_i32(ps, "root", -imax, imax, &e->root) || get_i32(ps, "nch", 0, 255, &e->nch) ||
         get_str(ps, "algo", false, &e->algo) || get_str(ps, "proto", false, &e->proto);
    if (!rc && version == 7)
      rc = get_u64(ps, "utag", 10, &e->utag) || get_i32(ps, "sym", 0, 1, &e->sym) ||
           get_str(ps, "variant", true, &e->label);
    break;
  case NT_EV_P2P:
    rc = get_str(ps, "func", false, &e->func) || get_u64(ps, "count", 10, &e->count) ||
         get_str(ps, "dtype", false, &e->dtype) || get_i32(ps, "peer", -imax, imax, &e->peer);
    if (!rc && version == 7) rc = get_u64(ps, "utag", 10, &e->utag);
    break;
  case NT_EV_COLL_API:
  case NT_EV_P2P_API:
    rc = get_str(ps, "func", false, &e->func) || get_u64(ps, "count", 10, &e->count) ||
         get_str(ps, "dtype", false, &e->dtype) || get_i32(ps, "cap", 0, 1, &e->cap);
    if (!rc && e->type == NT_EV_COLL_API) rc = get_i32(ps, "root", -imax, imax, &e->root);
    if (!rc && version == 7) rc = get_u64(ps, "utag", 10, &e->utag);
    break;
  default: break;
  }
  if (rc) return -1;
  if (e->type == NT_EV_COLL || e->type == NT_EV_P2P) {
    if (version == 3) return get_u64(ps, "chash", 16, &e->chash);
    return get_u64(ps, "pgroup", 16, &e->pgroup.raw);
  }
  return 0;
}

static int parse_fields(parser *ps, int version, tr_event *e) {
  const int32_t imax = 0x7FFFFFFF;
  switch (e->type) {
  case NT_EV_COLL:
  case NT_EV_P2P:
  case NT_EV_COLL_API:
  case NT_EV_P2P_API: return parse_op_fields(ps, version, e);
  case NT_EV_PROXY_OP:
    return get_i32(ps, "ch", 0, 255, &e->ch) || get_i32(ps, "peer", -imax, imax, &e->peer) ||
                   get_i32(ps, "send", -imax, imax, &e->send) ||
                   get_i32(ps, "steps", -imax, imax, &e->steps) ||
                   get_i32(ps, "chunk", -imax, imax, &e->chunk) ||
                   get_i32(ps, "pid", -imax, imax, &e->pid)
               ? -1
               : 0;
  case NT_EV_PROXY_STEP: return get_i32(ps, "step", -imax, imax, &e->step);
  case NT_EV_KERNEL_CH:
    return get_i32(ps, "ch", 0, 255, &e->ch) || get_u64(ps, "ptimer", 10, &e->ptimer) ? -1 : 0;
  case NT_EV_GROUP_API:
    return get_i32(ps, "depth", -imax, imax, &e->depth) || get_i32(ps, "cap", 0, 1, &e->cap) ? -1
                                                                                             : 0;
  case NT_EV_CE_COLL:
    if (get_u64(ps, "seq", 10, &e->seq) || get_str(ps, "func", false, &e->func) ||
        get_u64(ps, "count", 10, &e->count) || get_str(ps, "dtype", false, &e->dtype) ||
        get_str(ps, "sync", true, &e->label) || get_i32(ps, "ceseq", 0, imax, &e->ceseq) ||
        get_i32(ps, "intra", 0, 1, &e->intra) || get_i32(ps, "stream", 0, 1, &e->stream))
      return -1;
    return version == 7 ? get_u64(ps, "utag", 10, &e->utag) : 0;
  case NT_EV_CE_SYNC:
    return get_i32(ps, "complete", 0, 1, &e->complete) ||
                   get_i32(ps, "ceranks", -imax, imax, &e->ceranks)
               ? -1
               : 0;
  case NT_EV_CE_BATCH:
    return get_i32(ps, "numops", -imax, imax, &e->numops) || get_u64(ps, "bytes", 10, &e->bytes) ||
                   get_i32(ps, "intra", 0, 1, &e->intra)
               ? -1
               : 0;
  case NT_EV_KERNEL_PHASE:
    return get_i32(ps, "ch", 0, 255, &e->ch) || get_i32(ps, "phase", 0, 255, &e->phase) ||
                   get_str(ps, "pname", true, &e->label) || get_u64(ps, "ptimer", 10, &e->ptimer)
               ? -1
               : 0;
  default: return 0; /* Group, ProxyCtrl, NetPlugin, KernelLaunch: no fields recorded */
  }
}

static int parse_start(parser *ps, tr_proc *p, tr_call *c, const char *spaced_cname) {
  if (!p->version) return fail(ps, "a start before any init of process %u", p->pid);
  const char *ty = ps->ntok > 4 ? ps->tok[4] : "";
  char *end = NULL;
  unsigned long type = strtoul(ty, &end, 10);
  if (!*ty || *end || type == 0 || (type & (type - 1)) || type > 0x8000)
    return fail(ps, "start of an unknown event type '%.16s'", ty);
  if (!(type & types_of(p->version)))
    return fail(ps, "event type %lu does not exist in ABI v%d", type, p->version);
  tr_event *ev = grow(p->ev, &p->ev_cap, p->nev + 1, sizeof *ev);
  if (!ev) return fail(ps, "out of memory");
  p->ev = ev;
  tr_event *e = &p->ev[p->nev];
  memset(e, 0, sizeof *e);
  e->type = (uint32_t)type;
  e->line = ps->line;
  e->pid_proc = -1;
  if (get_u64(ps, "h", 16, &e->h) || get_u64(ps, "ctx", 16, &e->ctx.raw) ||
      get_u64(ps, "parent", 16, &e->parent.raw) ||
      get_i32(ps, "rank", -0x7FFFFFFF, 0x7FFFFFFF, &e->rank) || parse_fields(ps, p->version, e))
    return -1;
  if (p->version == 3 && (e->type == NT_EV_COLL || e->type == NT_EV_P2P)) {
    if (!val(ps, 4, "cname")) return fail(ps, "start without cname=");
    e->label = spaced_cname;
  }
  c->ref = (int32_t)p->nev++;
  return 0;
}

static int parse_record(parser *ps, tr_proc *p, tr_call *c) {
  int32_t args = 0;
  if (get_u64(ps, "h", 16, &c->raw) || get_i32(ps, "state", 0, 255, &c->state) ||
      get_i32(ps, "args", 0, 1, &args) || get_u64(ps, "size", 10, &c->size) ||
      get_i32(ps, "appended", -0x7FFFFFFFll - 1, 0x7FFFFFFF, &c->appended) ||
      get_u64(ps, "ptimer", 10, &c->ptimer))
    return -1;
  c->args = (uint8_t)args;
  if (p->version == 3 && get_i32(ps, "opsteps", -0x7FFFFFFFll - 1, 0x7FFFFFFF, &c->opsteps))
    return -1;
  return 0;
}

static int on_line(void *arg, char *l, size_t len, uint32_t lineno) {
  parser *ps = arg;
  tr_job *j = ps->job;
  (void)len;
  ps->line = lineno;
  if (++j->calls > NT_TRACE_MAX_TOTAL_LINES)
    return fail(ps, "more than %d lines in all the recordings (the limit)",
                NT_TRACE_MAX_TOTAL_LINES);
  /* Values that may hold blanks, before the line is cut at blanks. */
  const char *name = NULL, *cname = NULL;
  if (get_spaced(ps, l, "name", "hash", &name) || get_spaced(ps, l, "cname", "chash", &cname))
    return -1;
  ps->ntok = 0;
  char *save = NULL;
  for (char *s = strtok_r(l, " \t\r", &save); s; s = strtok_r(NULL, " \t\r", &save)) {
    if (ps->ntok == MAX_TOKENS) return fail(ps, "more than %d fields", MAX_TOKENS);
    ps->tok[ps->ntok++] = s;
  }
  if (ps->ntok == 0) return fail(ps, "an empty line");
  if (ps->ntok < 4) return fail(ps, "not '<pid> <tid> <time> <call> ...'");
  char *end;
  errno = 0;
  unsigned long pid = strtoul(ps->tok[0], &end, 10);
  if (*end || errno || pid < 1 || pid > 4194304 || ps->tok[0][0] == '-')
    return fail(ps, "pid '%.24s' is not a process id", ps->tok[0]);
  long tid = strtol(ps->tok[1], &end, 10);
  if (*end || errno || tid < 1) return fail(ps, "tid '%.24s' is not a thread id", ps->tok[1]);
  unsigned long long t = strtoull(ps->tok[2], &end, 10);
  if (*end || errno || ps->tok[2][0] == '-')
    return fail(ps, "time '%.24s' is not nanoseconds", ps->tok[2]);
  const char *verb = ps->tok[3];
  static const char *const verbs[] = {"init", "start", "record", "stop", "finalize"};
  int v = -1;
  for (int i = 0; i < 5; i++)
    if (!strcmp(verb, verbs[i])) v = i;
  if (v < 0) {
    if (!strcmp(verb, "set_clock") || !strcmp(verb, "flush")) return 0; /* the simulator's */
    return fail(ps, "unknown call '%.24s'", verb);
  }
  tr_proc *p = proc_of(ps, (uint32_t)pid);
  if (!p) return -1;
  int th = thread_of(ps, p, tid);
  if (th < 0) return -1;
  /* A thread's calls keep their order when the process's calls are put in
   * time order: its clock must not go back. */
  tr_thread *thr = &p->threads[th];
  if (thr->ncalls && t < p->calls[thr->calls[thr->ncalls - 1]].t)
    return fail(ps, "thread %ld's clock goes back (%llu after %llu)", tid, t,
                (unsigned long long)p->calls[thr->calls[thr->ncalls - 1]].t);
  tr_call *calls = grow(p->calls, &p->calls_cap, p->ncalls + 1, sizeof *calls);
  uint32_t *tc = calls ? grow(thr->calls, &thr->cap, thr->ncalls + 1, sizeof *tc) : NULL;
  if (calls) p->calls = calls;
  if (!tc) return fail(ps, "out of memory");
  thr->calls = tc;
  tr_call *c = &p->calls[p->ncalls];
  memset(c, 0, sizeof *c);
  c->t = t;
  c->line = lineno;
  c->thread = (uint16_t)th;
  c->verb = (uint8_t)v;
  c->ref = -1;
  int rc = 0;
  switch (v) {
  case TR_INIT: rc = parse_init(ps, p, c, name); break;
  case TR_START: rc = parse_start(ps, p, c, cname); break;
  case TR_RECORD: rc = parse_record(ps, p, c); break;
  case TR_STOP: rc = get_u64(ps, "h", 16, &c->raw); break;
  default: rc = get_u64(ps, "ctx", 16, &c->raw); break;
  }
  if (rc) return -1;
  thr->calls[thr->ncalls++] = p->ncalls; /* renumbered once sorted */
  p->ncalls++;
  return 0;
}

int tr_job_load(tr_job *job, char **paths, int npaths, char *err, size_t errlen) {
  memset(job, 0, sizeof *job);
  job->strings = calloc(1, sizeof *job->strings);
  if (!job->strings) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (int i = 0; i < npaths; i++)
    if (tr_expand_path(paths[i], &job->files, &job->nfiles, err, errlen) != 0) return -1;
  parser *ps = calloc(1, sizeof *ps);
  if (!ps) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int rc = 0;
  for (int f = 0; rc == 0 && f < job->nfiles; f++) {
    *ps = (parser){.job = job,
                   .file = f,
                   .path = job->files[f],
                   .err = err,
                   .errlen = errlen,
                   .first_proc = job->nprocs};
    rc = tr_read_file(job->files[f], on_line, ps, err, errlen);
    if (rc == 0 && job->nprocs == ps->first_proc) {
      snprintf(err, errlen, "%s: no calls in it", job->files[f]);
      rc = -1;
    }
  }
  free(ps);
  for (int i = 0; rc == 0 && i < job->nprocs; i++)
    rc = tr_check_proc(job, &job->procs[i], err, errlen);
  if (rc) return -1;
  tr_link_pids(job);
  job->t0 = UINT64_MAX;
  for (int i = 0; i < job->nprocs; i++) {
    const tr_proc *p = &job->procs[i];
    if (p->calls[0].t < job->t0) job->t0 = p->calls[0].t;
    if (p->calls[p->ncalls - 1].t > job->t_end) job->t_end = p->calls[p->ncalls - 1].t;
  }
  return 0;
}

void tr_job_free(tr_job *job) {
  for (int i = 0; i < job->nprocs; i++) {
    tr_proc *p = &job->procs[i];
    for (uint32_t t = 0; t < p->nthreads; t++) free(p->threads[t].calls);
    free(p->threads);
    free(p->calls);
    free(p->ev);
    free(p->ctx);
  }
  free(job->procs);
  for (int i = 0; i < job->nfiles; i++) free(job->files[i]);
  free(job->files);
  strings_free(job->strings);
  memset(job, 0, sizeof *job);
}

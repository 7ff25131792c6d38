/* Checking a process of a read job (trace_model.h), in the order it is
 * played: its calls put in recorded-time order (equal times in file order),
 * then every handle and context followed through it: a record or stop of a
 * handle that is not live, a parent no earlier start gave, a context no
 * live init gave each refuse the job with the file and line. What a PXN op
 * of another process carries (its context and parent, and its steps'
 * context) is that process's, passed as recorded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_model.h"

/* ---- a u64 -> index map (handles and contexts while checking) ---- */

typedef struct {
  uint64_t *key;
  int32_t *val;
  size_t cap;
} idmap;

static int idmap_init(idmap *m, size_t n) {
  m->cap = 16;
  while (m->cap < n * 2) m->cap *= 2;
  m->key = calloc(m->cap, sizeof *m->key);
  m->val = malloc(m->cap * sizeof *m->val);
  return m->key && m->val ? 0 : -1;
}

static void idmap_free(idmap *m) {
  free(m->key);
  free(m->val);
}

/* The slot of key (0 is never a key: NULL is resolved before). */
static size_t idmap_slot(const idmap *m, uint64_t key) {
  size_t k = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
  while (m->key[k] && m->key[k] != key) k = (k + 1) & (m->cap - 1);
  return k;
}

static int32_t idmap_get(const idmap *m, uint64_t key) {
  size_t k = idmap_slot(m, key);
  return m->key[k] ? m->val[k] : -1;
}

static void idmap_put(idmap *m, uint64_t key, int32_t val) {
  size_t k = idmap_slot(m, key);
  m->key[k] = key;
  m->val[k] = val;
}

static int by_time(const void *a, const void *b) {
  const tr_call *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

static bool foreign_op(const tr_proc *p, const tr_event *e) {
  return e->type == NT_EV_PROXY_OP && e->pid != (int32_t)p->pid;
}

typedef struct {
  const char *path;
  char *err;
  size_t errlen;
  idmap handles, contexts;
  uint8_t *ev_state;  /* 0 not started, 1 live, 2 stopped */
  uint8_t *ctx_state; /* 0 not yet, 1 live, 2 finalized or declined */
} checker;

__attribute__((format(printf, 3, 4))) static int bad(checker *ck, uint32_t line, const char *fmt,
                                                     ...) {
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(ck->err, ck->errlen, "%s:%u: %s", ck->path, line, what);
  return -1;
}

/* A handle no earlier call gave: said with the line of a later start that
 * gives it, if any (then the recording's threads do not share one clock:
 * the deterministic simulator's virtual clocks, say). */
static int no_handle(checker *ck, const tr_proc *p, uint32_t line, const char *what, uint64_t h) {
  for (uint32_t k = 0; k < p->nev; k++)
    if (p->ev[k].h == h)
      return bad(ck, line,
                 "%s 0x%llx: its start (line %u) comes later by the recorded times (do the "
                 "recording's threads share one clock?)",
                 what, (unsigned long long)h, p->ev[k].line);
  return bad(ck, line, "%s 0x%llx is no handle process %u started", what, (unsigned long long)h,
             p->pid);
}

/* A parent or group handle: NULL, an earlier start of this process (live
 * or stopped: NCCL names a stopped CollApi as its Coll's parent), or, for
 * a PXN op, whatever the other process passed. */
static int resolve_handle(checker *ck, const tr_proc *p, const tr_event *e, tr_ref *r,
                          const char *what) {
  if (r->raw == 0) {
    r->idx = TR_REF_NULL;
    return 0;
  }
  /* A PXN op's parent is a pointer of the process it came from: one of
   * ours with the same value would be a coincidence. */
  if (foreign_op(p, e)) {
    r->idx = TR_REF_FOREIGN;
    return 0;
  }
  int32_t i = idmap_get(&ck->handles, r->raw);
  if (i >= 0) {
    r->idx = i;
    return 0;
  }
  return no_handle(ck, p, e->line, what, r->raw);
}

static int check_start(checker *ck, tr_proc *p, tr_call *c) {
  tr_event *e = &p->ev[c->ref];
  e->pgroup.idx = TR_REF_NULL;
  if (resolve_handle(ck, p, e, &e->parent, "parent") ||
      resolve_handle(ck, p, e, &e->pgroup, "pgroup"))
    return -1;
  /* Under PXN an op of another process and its steps carry that process's
   * context. */
  e->foreign = foreign_op(p, e) || (e->parent.idx >= 0 && p->ev[e->parent.idx].foreign);
  int32_t x = e->ctx.raw ? idmap_get(&ck->contexts, e->ctx.raw) : -1;
  if (x >= 0 && ck->ctx_state[x] == 1)
    e->ctx.idx = x;
  else if (e->foreign)
    e->ctx.idx = TR_REF_FOREIGN;
  else
    return bad(ck, c->line, "context 0x%llx is not one a live init of process %u gave",
               (unsigned long long)e->ctx.raw, p->pid);
  if (e->h == 0) return 0; /* the recorder gave NULL: no record or stop follows */
  int32_t prev = idmap_get(&ck->handles, e->h);
  if (prev >= 0 && ck->ev_state[prev] == 1)
    return bad(ck, c->line, "handle 0x%llx started again while live (started at line %u)",
               (unsigned long long)e->h, p->ev[prev].line);
  idmap_put(&ck->handles, e->h, c->ref);
  ck->ev_state[c->ref] = 1;
  return 0;
}

static int check_call(checker *ck, tr_proc *p, tr_call *c) {
  switch (c->verb) {
  case TR_INIT: {
    const tr_ctx *x = &p->ctx[c->ref];
    if (x->fail || x->value == 0) {
      ck->ctx_state[c->ref] = 2; /* declined: NCCL makes no call for it */
      return 0;
    }
    int32_t prev = idmap_get(&ck->contexts, x->value);
    if (prev >= 0 && ck->ctx_state[prev] == 1)
      return bad(ck, c->line, "init gives context 0x%llx, still live (init at line %u)",
                 (unsigned long long)x->value, p->ctx[prev].line);
    idmap_put(&ck->contexts, x->value, c->ref);
    ck->ctx_state[c->ref] = 1;
    return 0;
  }
  case TR_FINALIZE: {
    int32_t x = c->raw ? idmap_get(&ck->contexts, c->raw) : -1;
    if (x < 0 || ck->ctx_state[x] != 1)
      return bad(ck, c->line, "finalize of context 0x%llx, which no live init of process %u gave",
                 (unsigned long long)c->raw, p->pid);
    ck->ctx_state[x] = 2;
    c->ref = x;
    return 0;
  }
  case TR_START: return check_start(ck, p, c);
  default: {
    const char *verb = c->verb == TR_RECORD ? "record of" : "stop of";
    int32_t i = c->raw ? idmap_get(&ck->handles, c->raw) : -1;
    if (c->raw == 0) return bad(ck, c->line, "%s a NULL handle (NCCL never makes one)", verb);
    if (i < 0) return no_handle(ck, p, c->line, verb, c->raw);
    if (ck->ev_state[i] != 1)
      return bad(ck, c->line, "%s handle 0x%llx after its stop", verb, (unsigned long long)c->raw);
    if (c->verb == TR_STOP) ck->ev_state[i] = 2;
    c->ref = i;
    return 0;
  }
  }
}

int tr_check_proc(tr_job *j, tr_proc *p, char *err, size_t errlen) {
  checker ck = {.path = j->files[p->file], .err = err, .errlen = errlen};
  if (!p->version) {
    snprintf(err, errlen, "%s: process %u has no init line (so no ABI version)", ck.path, p->pid);
    return -1;
  }
  qsort(p->calls, p->ncalls, sizeof *p->calls, by_time);
  for (uint32_t t = 0; t < p->nthreads; t++) p->threads[t].ncalls = 0;
  for (uint32_t k = 0; k < p->ncalls; k++) {
    tr_thread *t = &p->threads[p->calls[k].thread];
    t->calls[t->ncalls++] = k;
  }
  int rc = idmap_init(&ck.handles, p->nev) || idmap_init(&ck.contexts, p->nctx) ? -1 : 0;
  ck.ev_state = calloc(p->nev + 1, 1);
  ck.ctx_state = calloc(p->nctx + 1, 1);
  if (rc || !ck.ev_state || !ck.ctx_state) {
    snprintf(err, errlen, "%s: out of memory", ck.path);
    rc = -1;
  }
  for (uint32_t k = 0; rc == 0 && k < p->ncalls; k++) rc = check_call(&ck, p, &p->calls[k]);
  idmap_free(&ck.handles);
  idmap_free(&ck.contexts);
  free(ck.ev_state);
  free(ck.ctx_state);
  if (rc) return rc;
  p->linger_at = p->ncalls;
  while (p->linger_at > 0 && p->calls[p->linger_at - 1].verb == TR_FINALIZE) p->linger_at--;
  return 0;
}

/* A PXN op's pid= names the process that owns it: this file's first, else
 * the one process of the job with that pid. */
void tr_link_pids(tr_job *j) {
  for (int i = 0; i < j->nprocs; i++) {
    tr_proc *p = &j->procs[i];
    for (uint32_t k = 0; k < p->nev; k++) {
      tr_event *e = &p->ev[k];
      if (e->type != NT_EV_PROXY_OP) continue;
      int same_file = -1, any = -1, nany = 0;
      for (int q = 0; q < j->nprocs; q++) {
        if (j->procs[q].pid != (uint32_t)e->pid) continue;
        if (j->procs[q].file == p->file && same_file < 0) same_file = q;
        any = q;
        nany++;
      }
      e->pid_proc = same_file >= 0 ? same_file : nany == 1 ? any : -1;
    }
  }
}

/* The environment view's data and runs: every NCCL* variable of the job's
 * processes (which differ between ranks), and the previous run's summary
 * kept across a restart, for the "change one variable, re-run, compare"
 * loop. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *nt_model_env_of(const nt_model_process *p, const char *name) {
  if (!p->have_hello) return NULL;
  for (uint32_t i = 0; i < p->hello.nenv; i++)
    if (strcmp(p->hello.env[i].name, name) == 0) return p->hello.env[i].value;
  return NULL;
}

static bool in_run(const nt_model *m, const nt_model_process *p, uint32_t run) {
  (void)m;
  return p->run == run;
}

/* The most common value of `name` over the run's processes (NULL: unset
 * wins); how many set it and how many distinct values there are. */
static const char *common_value(nt_model *m, uint32_t run, const char *name, uint32_t *have,
                                uint32_t *nvalues, uint32_t *nprocs) {
  const char *best = NULL;
  uint32_t best_n = 0, unset = 0;
  *have = *nvalues = *nprocs = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (!in_run(m, p, run) || !p->have_hello) continue;
    (*nprocs)++;
    const char *v = nt_model_env_of(p, name);
    if (!v) {
      unset++;
      continue;
    }
    (*have)++;
    /* Count v once: at its first holder. */
    bool first = true;
    uint32_t same = 0;
    for (uint32_t j = 0; j < m->nprocs; j++) {
      const nt_model_process *q = &m->procs[j]->pub;
      if (!in_run(m, q, run) || !q->have_hello) continue;
      const char *w = nt_model_env_of(q, name);
      if (!w || strcmp(v, w) != 0) continue;
      if (j < i) first = false;
      same++;
    }
    if (!first) continue;
    (*nvalues)++;
    if (same > best_n) best = v, best_n = same;
  }
  if (unset) (*nvalues)++;
  if (unset > best_n) best = NULL;
  return best;
}

typedef struct {
  nt_env_row row;
  bool differs_first;
} env_sort;

static int env_cmp_name(const void *a, const void *b) {
  return strcmp(((const nt_env_row *)a)->name, ((const nt_env_row *)b)->name);
}
static int env_cmp_differs(const void *a, const void *b) {
  const nt_env_row *x = a, *y = b;
  if (x->differs != y->differs) return x->differs ? -1 : 1;
  return strcmp(x->name, y->name);
}

uint32_t nt_model_env(nt_model *m, nt_env_row *out, uint32_t cap, bool differs_first) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->run != m->run || !p->have_hello) continue;
    for (uint32_t k = 0; k < p->hello.nenv && n < cap; k++) {
      const char *name = p->hello.env[k].name;
      bool known = false;
      for (uint32_t j = 0; j < n && !known; j++) known = strcmp(out[j].name, name) == 0;
      if (known) continue;
      nt_env_row *r = &out[n++];
      uint32_t nprocs;
      r->name = name;
      const char *v = common_value(m, m->run, name, &r->have, &r->nvalues, &nprocs);
      r->value = v ? v : "";
      r->differs = r->nvalues > 1;
    }
  }
  qsort(out, n, sizeof *out, differs_first ? env_cmp_differs : env_cmp_name);
  return n;
}

/* ---- runs ---- */

static void summarize(nt_model *m, uint32_t run, nt_run_summary *s) {
  memset(s, 0, sizeof *s);
  s->id = run;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->run != run) continue;
    s->processes++;
    if (p->cur) {
      s->ranks += p->cur->ncomms;
      if (!s->start_s || p->first_time_s < s->start_s) s->start_s = p->first_time_s;
      if (p->cur_time_s > s->end_s) s->end_s = p->cur_time_s;
    }
    if (p->have_hello)
      for (uint32_t k = 0; k < p->hello.nenv && s->nenv < NT_MAX_ENV; k++) {
        const char *name = p->hello.env[k].name;
        bool known = false;
        for (uint32_t j = 0; j < s->nenv && !known; j++) known = !strcmp(s->env[j].name, name);
        if (known) continue;
        nt_run_env *e = &s->env[s->nenv++];
        uint32_t have, nvalues, nprocs;
        const char *v = common_value(m, run, name, &have, &nvalues, &nprocs);
        snprintf(e->name, sizeof e->name, "%s", name);
        snprintf(e->value, sizeof e->value, "%s", v ? v : "");
        e->differs = nvalues > 1;
      }
    const nt_snapshot *c = p->cur;
    for (uint32_t k = 0; c && k < c->nops; k++) {
      const nt_op_row *r = &c->ops[k];
      if (r->comm_index >= c->ncomms) continue;
      nt_run_op *o = NULL;
      for (uint32_t j = 0; j < s->nops && !o; j++)
        if (s->ops[j].func == r->func && s->ops[j].algo == r->algo && s->ops[j].proto == r->proto &&
            s->ops[j].bucket == r->bucket)
          o = &s->ops[j];
      if (!o) {
        if (s->nops == NT_RUN_MAX_OPS) continue;
        o = &s->ops[s->nops++];
        o->func = r->func;
        o->algo = r->algo;
        o->proto = r->proto;
        o->bucket = r->bucket;
      }
      int nranks = c->comms[r->comm_index].nranks;
      double alg = nt_alg_bytes(r->func, (double)r->done_bytes, nranks);
      o->count += r->count;
      o->done += r->done;
      o->time_s += (double)r->time_ns / 1e9;
      o->alg_bytes += alg;
      o->bus_bytes += alg * nt_bus_factor(r->func, nranks);
    }
  }
}

static bool run_alive(const nt_model *m, const proc_slot *except) {
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const proc_slot *p = m->procs[i];
    if (p != except && p->pub.run == m->run && !p->pub.ended) return true;
  }
  return false;
}

static bool run_has_processes(const nt_model *m) {
  for (uint32_t i = 0; i < m->nprocs; i++)
    if (m->procs[i]->pub.run == m->run) return true;
  return false;
}

/* The current run's summary into *slot (allocated on first use). */
static bool capture(nt_model *m, nt_run_summary **slot) {
  if (!*slot) *slot = malloc(sizeof **slot);
  if (!*slot) return false;
  summarize(m, m->run, *slot);
  return true;
}

void nt_runs_process_added(nt_model *m, proc_slot *p) {
  if (m->run == 0) {
    m->run = 1;
  } else if (!run_alive(m, p)) {
    /* Everyone of the current run has ended: this is the next job. Its
     * predecessor's summary was taken when it ended, or is taken now. */
    bool kept = false;
    if (m->ended && m->ended_run) {
      nt_run_summary *t = m->prev_run;
      m->prev_run = m->ended_run;
      m->ended_run = t;
      kept = true;
    } else if (run_has_processes(m)) {
      kept = capture(m, &m->prev_run);
    }
    if (kept || !run_has_processes(m)) m->run++;
    m->ended = false;
  }
  p->pub.run = m->run;
}

void nt_runs_tick(nt_model *m) {
  if (m->ended || !run_has_processes(m) || run_alive(m, NULL)) return;
  /* The whole run ended: keep its summary before its processes are dropped. */
  m->ended = capture(m, &m->ended_run);
}

void nt_runs_free(nt_model *m) {
  free(m->prev_run);
  free(m->ended_run);
  m->prev_run = m->ended_run = NULL;
}

bool nt_model_run_summary(nt_model *m, bool previous, nt_run_summary *out) {
  if (previous) {
    if (!m->prev_run || m->run < 2) return false;
    *out = *m->prev_run;
    return true;
  }
  if (m->run == 0) return false;
  if (m->ended && m->ended_run && !run_has_processes(m))
    *out = *m->ended_run; /* its processes are gone; the summary stays */
  else
    summarize(m, m->run, out);
  return true;
}

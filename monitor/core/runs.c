/* The environment view's data and runs: every NCCL* variable of the job's
 * processes (which differ between ranks), and the previous run's summary
 * kept across a restart, for the "change one variable, re-run, compare"
 * loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *nt_model_env_of(const nt_model_process *p, const char *name) {
  if (!p->have_hello) return NULL;
  for (uint32_t i = 0; i < p->hello.nenv; i++)
    if (strcmp(p->hello.env[i].name, name) == 0) return p->hello.env[i].value;
  return NULL;
}

/* ---- the run's variables: one table, hashed ----
 *
 * Every (name, value) of the run's processes goes once through two open
 * addressing tables (names; values per name), so the table costs O(P x V)
 * for P processes of V variables, not a comparison of every process with
 * every other for every variable. */

typedef struct {
  const char *name;
  const char *best; /* most common value (first seen among equals) */
  uint32_t have, nvalues, best_n;
  uint32_t last; /* 1 + the last process counted */
} env_name;

typedef struct {
  const char *value;
  uint32_t name, count; /* name: index into the names */
} env_value;

static uint64_t fnv(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

/* The run's variables into *out (malloc'd, the caller frees); how many,
 * and the processes of the run with a hello in *nprocs. -1: no memory. */
static int env_table(const nt_model *m, uint32_t run, env_name **out, uint32_t *nprocs) {
  size_t total = 0;
  *out = NULL;
  *nprocs = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->run == run && p->have_hello) total += p->hello.nenv, (*nprocs)++;
  }
  size_t cap = 16;
  while (cap < 2 * total) cap *= 2;
  env_name *names = malloc((total + 1) * sizeof *names);
  env_value *values = malloc((total + 1) * sizeof *values);
  uint32_t *nslot = malloc(cap * sizeof *nslot), *vslot = malloc(cap * sizeof *vslot);
  int n = -1;
  if (!names || !values || !nslot || !vslot) goto out;
  memset(nslot, 0xff, cap * sizeof *nslot);
  memset(vslot, 0xff, cap * sizeof *vslot);
  uint32_t nn = 0, nv = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->run != run || !p->have_hello) continue;
    for (uint32_t k = 0; k < p->hello.nenv; k++) {
      const char *name = p->hello.env[k].name, *value = p->hello.env[k].value;
      uint64_t hn = fnv(name, 0xcbf29ce484222325ull);
      size_t j = hn & (cap - 1);
      while (nslot[j] != UINT32_MAX && strcmp(names[nslot[j]].name, name)) j = (j + 1) & (cap - 1);
      if (nslot[j] == UINT32_MAX) {
        nslot[j] = nn;
        names[nn++] = (env_name){.name = name};
      }
      uint32_t ni = nslot[j];
      if (names[ni].last == i + 1) continue; /* set twice in one process: the first counts */
      names[ni].last = i + 1;
      names[ni].have++;
      size_t v = fnv(value, hn ^ 0x9e3779b97f4a7c15ull) & (cap - 1);
      while (vslot[v] != UINT32_MAX &&
             (values[vslot[v]].name != ni || strcmp(values[vslot[v]].value, value)))
        v = (v + 1) & (cap - 1);
      if (vslot[v] == UINT32_MAX) {
        vslot[v] = nv;
        values[nv++] = (env_value){.value = value, .name = ni};
        names[ni].nvalues++;
      }
      values[vslot[v]].count++;
    }
  }
  /* In order of first appearance: the first of equally common values. */
  for (uint32_t v = 0; v < nv; v++) {
    env_name *e = &names[values[v].name];
    if (values[v].count > e->best_n) e->best = values[v].value, e->best_n = values[v].count;
  }
  for (uint32_t k = 0; k < nn; k++) {
    uint32_t unset = *nprocs - names[k].have;
    if (unset) names[k].nvalues++;
    if (unset > names[k].best_n) names[k].best = NULL;
  }
  *out = names;
  names = NULL;
  n = (int)nn;
out:
  free(names);
  free(values);
  free(nslot);
  free(vslot);
  return n;
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

/* The current run's table, kept while no hello arrives and no process is
 * added or dropped (its pointers into the hellos stay valid so long). */
struct nt_env_cache {
  env_name *names;
  int n;
  uint32_t nprocs, generation, run;
  uint64_t hellos;
};

static int current_env(const nt_model *model, env_name **names) {
  nt_model *m = nt_model_cache_of(model); /* the cache only */
  struct nt_env_cache *c = m->env_cache;
  if (!c && !(c = m->env_cache = calloc(1, sizeof *c))) return -1;
  if (!c->names || c->generation != m->generation || c->run != m->run || c->hellos != m->hellos) {
    free(c->names);
    c->names = NULL;
    c->n = env_table(m, m->run, &c->names, &c->nprocs);
    c->generation = m->generation;
    c->run = m->run;
    c->hellos = m->hellos;
  }
  *names = c->names;
  return c->n;
}

uint32_t nt_model_env(const nt_model *m, nt_env_row *out, uint32_t cap, bool differs_first) {
  env_name *names;
  uint32_t n = 0;
  int nn = current_env(m, &names);
  for (int k = 0; k < nn && n < cap; k++) {
    nt_env_row *r = &out[n++];
    r->name = names[k].name;
    r->value = names[k].best ? names[k].best : "";
    r->have = names[k].have;
    r->nvalues = names[k].nvalues;
    r->differs = r->nvalues > 1;
  }
  if (n) qsort(out, n, sizeof *out, differs_first ? env_cmp_differs : env_cmp_name);
  return n;
}

/* ---- runs ---- */

static void summarize(const nt_model *m, uint32_t run, nt_run_summary *s) {
  memset(s, 0, sizeof *s);
  s->id = run;
  env_name *names = NULL;
  uint32_t nprocs;
  bool cached = run == m->run;
  int nn = cached ? current_env(m, &names) : env_table(m, run, &names, &nprocs);
  for (int k = 0; k < nn && s->nenv < NT_MAX_ENV; k++) {
    nt_run_env *e = &s->env[s->nenv++];
    snprintf(e->name, sizeof e->name, "%s", names[k].name);
    snprintf(e->value, sizeof e->value, "%s", names[k].best ? names[k].best : "");
    e->differs = names[k].nvalues > 1;
  }
  if (!cached) free(names);
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->run != run) continue;
    s->processes++;
    if (p->cur) {
      s->ranks += p->cur->ncomms;
      if (!s->start_s || p->first_time_s < s->start_s) s->start_s = p->first_time_s;
      if (p->cur_time_s > s->end_s) s->end_s = p->cur_time_s;
    }
    const nt_snapshot *c = p->cur;
    for (uint32_t k = 0; c && k < c->nops; k++) {
      const nt_op_row *r = &c->ops[k];
      if (r->comm_index >= c->ncomms) continue;
      nt_run_op *o = NULL;
      for (uint32_t j = 0; j < s->nops && !o; j++)
        if (s->ops[j].func == r->func && s->ops[j].algo == r->algo && s->ops[j].proto == r->proto &&
            s->ops[j].bucket == r->bucket &&
            !strcmp(s->ops[j].variant, nt_variant_name(c, r->variant)))
          o = &s->ops[j];
      if (!o) {
        if (s->nops == NT_RUN_MAX_OPS) continue;
        o = &s->ops[s->nops++];
        o->func = r->func;
        o->algo = r->algo;
        o->proto = r->proto;
        o->bucket = r->bucket;
        snprintf(o->variant, sizeof o->variant, "%s", nt_variant_name(c, r->variant));
      }
      int nranks = c->comms[r->comm_index].nranks;
      o->count += r->count;
      o->done += r->done;
      o->time_s += (double)r->time_ns / 1e9;
      if (r->done) { /* NaN when the rank count is unknown (nt_bus_factor) */
        double alg = nt_alg_bytes(r->func, (double)r->done_bytes, nranks);
        o->alg_bytes += alg;
        o->bus_bytes += alg * nt_bus_factor(r->func, nranks);
      }
    }
  }
}

/* A run is alive while one of its processes still publishes: one that
 * ended, or went silent (a killed job's processes never send their last
 * snapshot), does not keep it going, so a restarted job is a new run at
 * once, not after its predecessor's processes are dropped a minute later. */
static bool run_alive(const nt_model *m, const proc_slot *except) {
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const proc_slot *p = m->procs[i];
    if (p != except && p->pub.run == m->run && !p->pub.ended && !p->pub.stale) return true;
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
  if (m->env_cache) free(m->env_cache->names);
  free(m->env_cache);
  m->env_cache = NULL;
  free(m->prev_run);
  free(m->ended_run);
  m->prev_run = m->ended_run = NULL;
}

bool nt_model_run_summary(const nt_model *m, bool previous, nt_run_summary *out) {
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

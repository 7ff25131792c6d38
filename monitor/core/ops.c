/* Operations as the views show them: statistics by (communicator,
 * function, algorithm, protocol, size), by phase, and the recent and
 * in-flight operations of every rank, with nccl-tests' bandwidths. Read from
 * the processes' latest snapshots; nothing here changes the model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

double nt_alg_bytes(int func, double bytes, int nranks) {
  switch (func) {
  case NT_FUNC_ALLGATHER:
  case NT_FUNC_REDUCESCATTER:
  case NT_FUNC_ALLTOALL:
  case NT_FUNC_GATHER:
  case NT_FUNC_SCATTER: return nranks > 0 ? bytes * nranks : NAN;
  default: return bytes;
  }
}

double nt_bus_factor(int func, int nranks) {
  double n = nranks;
  if (nranks <= 0) /* unknown (NCCL 2.26): only the factors that do not depend on it are known */
    return func == NT_FUNC_ALLREDUCE || func == NT_FUNC_ALLGATHER ||
                   func == NT_FUNC_REDUCESCATTER || func == NT_FUNC_ALLTOALL ||
                   func == NT_FUNC_GATHER || func == NT_FUNC_SCATTER
               ? NAN
               : 1;
  switch (func) {
  case NT_FUNC_ALLREDUCE: return 2 * (n - 1) / n;
  case NT_FUNC_ALLGATHER:
  case NT_FUNC_REDUCESCATTER:
  case NT_FUNC_ALLTOALL:
  case NT_FUNC_GATHER:
  case NT_FUNC_SCATTER: return (n - 1) / n;
  default: return 1;
  }
}

const char *nt_op_source(const nt_op_stat *r) {
  if (r->kind == NT_OP_P2P) return "p2p";
  if (r->algo != NT_ALGO_NONE) return "coll";
  return r->func == NT_FUNC_BROADCAST ? "collapi" : "ce";
}

const char *nt_op_timing(const nt_op_stat *r) {
  return !r->done ? "unknown" : r->done < r->count ? "partial" : "measured";
}

double nt_stat_algbw(double alg_bytes, double time_s) {
  return time_s > 0 ? alg_bytes / time_s / 1e9 : 0;
}

const char *nt_fmt_bucket(int bucket, char *buf, size_t cap) {
  static const char unit[] = " KMGTPE";
  int lo = bucket < 0 ? 0 : bucket > 63 ? 63 : bucket, hi = lo + 1;
  char a[16], b[16];
  snprintf(a, sizeof a, "%llu%c", 1ull << (lo % 10), unit[lo / 10]);
  if (hi == 64)
    snprintf(b, sizeof b, "16E");
  else
    snprintf(b, sizeof b, "%llu%c", 1ull << (hi % 10), unit[hi / 10]);
  /* "1 " (bytes) reads better without the blank */
  for (char *p = a; *p; p++)
    if (*p == ' ') *p = '\0';
  for (char *p = b; *p; p++)
    if (*p == ' ') *p = '\0';
  snprintf(buf, cap, "%s-%s", a, b);
  return buf;
}

const char *nt_comm_label(const char *name, uint64_t hash, char *buf, size_t cap) {
  if (name && *name)
    snprintf(buf, cap, "%s", name);
  else
    snprintf(buf, cap, "%016llx", (unsigned long long)hash);
  return buf;
}

static const char *comm_name_of(const nt_model_process *p, uint64_t hash) {
  for (uint32_t j = 0; j < p->ncomm_info; j++)
    if (p->comm_info[j].comm_hash == hash) return p->comm_info[j].name;
  return "";
}

const char *nt_variant_name(const nt_snapshot *s, uint8_t id) {
  for (uint32_t i = 0; s && id && i < s->nvariants; i++)
    if (s->variants[i].id == id) return s->variants[i].name;
  return "";
}

const char *nt_algo_label(int algo, const char *variant, bool symmetric, char *buf, size_t cap) {
  if (!variant || !*variant) return symmetric ? "sym" : nt_algo_name(algo);
  const char *suffix = strchr(variant, '_');
  snprintf(buf, cap, "sym:%s", suffix && suffix[1] ? suffix + 1 : variant);
  return buf;
}

static const char *phase_name(const nt_snapshot *s, uint8_t id) {
  for (uint32_t i = 0; id && i < s->nphases; i++)
    if (s->phases[i].id == id) return s->phases[i].name;
  return "";
}

/* ---- statistics ---- */

static int stat_cmp(const void *a, const void *b) {
  const nt_op_stat *x = a, *y = b;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  if (x->func != y->func) return x->func - y->func;
  if (x->bucket != y->bucket) return x->bucket - y->bucket;
  if (x->algo != y->algo) return x->algo - y->algo;
  if (x->proto != y->proto) return x->proto - y->proto;
  return strcmp(x->variant, y->variant);
}

/* One row of one process, before rows of the same key are added up. */
typedef struct {
  nt_op_stat key; /* the identity fields; sums left 0 */
  const nt_op_row *row;
  uint32_t proc;
} stat_in;

static int stat_in_cmp(const void *a, const void *b) {
  const stat_in *x = a, *y = b;
  int c = stat_cmp(&x->key, &y->key);
  return c ? c : (x->proc > y->proc) - (x->proc < y->proc);
}

/* Sorted, then added up run by run: O(rows log rows) for any job size. */
uint32_t nt_model_op_stats(const nt_model *m, nt_op_stat *out, uint32_t cap) {
  size_t total = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (p->cur && p->run == m->run) total += p->cur->nops;
  }
  stat_in *in = total ? malloc(total * sizeof *in) : NULL;
  if (!in) return 0;
  size_t n_in = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    const nt_snapshot *s = p->cur;
    if (!s || p->run != m->run) continue; /* an earlier run's: see the run summaries */
    for (uint32_t k = 0; k < s->nops; k++) {
      const nt_op_row *r = &s->ops[k];
      if (r->comm_index >= s->ncomms) continue;
      const nt_comm_row *c = &s->comms[r->comm_index];
      stat_in *x = &in[n_in++];
      memset(&x->key, 0, sizeof x->key);
      x->key.comm_hash = c->comm_hash;
      x->key.comm_name = comm_name_of(p, c->comm_hash);
      x->key.nranks = c->nranks;
      x->key.nnodes = c->nnodes;
      x->key.kind = r->kind;
      x->key.func = r->func;
      x->key.algo = r->algo;
      x->key.proto = r->proto;
      x->key.bucket = r->bucket;
      snprintf(x->key.variant, sizeof x->key.variant, "%s", nt_variant_name(s, r->variant));
      x->row = r;
      x->proc = i;
    }
  }
  qsort(in, n_in, sizeof *in, stat_in_cmp);
  uint32_t n = 0;
  for (size_t j = 0; j < n_in; j++) {
    const stat_in *x = &in[j];
    nt_op_stat *o = n ? &out[n - 1] : NULL;
    if (!o || stat_cmp(o, &x->key) != 0) {
      if (n == cap) break;
      o = &out[n++];
      *o = x->key;
    }
    const nt_op_row *r = x->row;
    o->count += r->count;
    o->done += r->done;
    o->bytes += r->bytes;
    o->gpu_done += r->gpu_done;
    o->sync_ns += r->sync_ns;
    o->compute_ns += r->compute_ns;
    o->time_s += (double)r->time_ns / 1e9;
    if (r->done) { /* nothing done adds nothing, not even an unknown */
      double alg = nt_alg_bytes(r->func, (double)r->done_bytes, o->nranks);
      o->alg_bytes += alg;
      o->bus_bytes += alg * nt_bus_factor(r->func, o->nranks);
    }
    if (o->last_proc_ != x->proc + 1) o->ranks++; /* one row per phase: count a process once */
    o->last_proc_ = x->proc + 1;
  }
  free(in);
  return n;
}

static int phase_cmp(const void *a, const void *b) {
  return strcmp(((const nt_phase_stat *)a)->name, ((const nt_phase_stat *)b)->name);
}

/* The communicators of one process seen in one phase row, to count
 * `comms`; beyond this many, the count stops (the note is the same). */
#define PHASE_COMMS_SEEN 8
typedef struct {
  uint32_t proc; /* the process these are of, + 1; 0 none yet */
  uint16_t comm[PHASE_COMMS_SEEN];
  uint32_t n;
} phase_comms;

static void count_comm(nt_phase_stat *o, phase_comms *pc, uint32_t proc, uint16_t comm) {
  if (pc->proc != proc + 1) {
    pc->proc = proc + 1;
    pc->n = 0;
  }
  for (uint32_t i = 0; i < pc->n; i++)
    if (pc->comm[i] == comm) return;
  if (pc->n < PHASE_COMMS_SEEN) pc->comm[pc->n++] = comm;
  if (pc->n > o->comms) o->comms = pc->n;
}

uint32_t nt_model_phase_stats(const nt_model *m, nt_phase_stat *out, uint32_t cap) {
  uint32_t n = 0;
  phase_comms pcs[NT_MAX_PHASES + 1];
  if (cap > NT_MAX_PHASES + 1) cap = NT_MAX_PHASES + 1;
  memset(pcs, 0, sizeof pcs);
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_snapshot *s = m->procs[i]->pub.cur;
    if (!s || m->procs[i]->pub.run != m->run) continue;
    uint64_t seen = 0; /* phase ids of this process counted in `ranks` */
    for (uint32_t k = 0; k < s->nops; k++) {
      const nt_op_row *r = &s->ops[k];
      if (r->comm_index >= s->ncomms) continue;
      const char *name = phase_name(s, r->phase);
      nt_phase_stat *o = NULL;
      for (uint32_t j = 0; j < n && !o; j++)
        if (strcmp(out[j].name, name) == 0) o = &out[j];
      if (!o) {
        if (n >= cap) continue;
        o = &out[n++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", name);
      }
      count_comm(o, &pcs[o - out], i, r->comm_index);
      for (uint32_t j = 0; r->phase && j < s->nphases; j++)
        if (s->phases[j].id == r->phase && s->phases[j].source == NT_PHASE_USER_TAG)
          o->source = NT_PHASE_USER_TAG;
      if (!(seen & (1ull << (r->phase & 63)))) o->ranks++;
      seen |= 1ull << (r->phase & 63);
      int nranks = s->comms[r->comm_index].nranks;
      o->count += r->count;
      o->done += r->done;
      o->bytes += r->bytes;
      o->time_s += (double)r->time_ns / 1e9;
      if (r->done) {
        double alg = nt_alg_bytes(r->func, (double)r->done_bytes, nranks);
        o->alg_bytes += alg;
        o->bus_bytes += alg * nt_bus_factor(r->func, nranks);
      }
    }
  }
  qsort(out, n, sizeof *out, phase_cmp);
  return n;
}

const char *nt_phase_busy_note(const nt_phase_stat *ph, uint32_t n, char *buf, size_t cap) {
  uint32_t most = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ph[i].comms > most) most = ph[i].comms;
  if (most < 2) return NULL;
  /* One line that fits 80 columns. */
  snprintf(buf, cap,
           "BUSY/rank sums %u%s communicators running at once: it can exceed the job's time", most,
           most >= PHASE_COMMS_SEEN ? "+" : "");
  return buf;
}

/* ---- recent operations ---- */

static int recent_cmp(const void *a, const void *b) {
  const nt_recent_op *x = a, *y = b;
  bool fx = x->op->state == NT_OPS_IN_FLIGHT, fy = y->op->state == NT_OPS_IN_FLIGHT;
  if (fx != fy) return fx ? -1 : 1;
  /* In flight: oldest first. Done: newest first. */
  if (x->age_s != y->age_s) return (x->age_s < y->age_s) == fx ? 1 : -1;
  return x->rank - y->rank;
}

uint32_t nt_model_recent_ops(const nt_model *m, nt_recent_op *out, uint32_t cap, uint32_t per_rank,
                             double now_s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nprocs && n < cap; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    const nt_snapshot *s = p->cur;
    if (!s || p->run != m->run) continue;
    /* Ages were taken when the snapshot was; it has aged since (unless the
     * process ended: then it stands still). */
    double since = p->ended ? 0 : now_s - p->cur_time_s;
    uint32_t done_taken[NT_MAX_COMMS] = {0};
    for (uint32_t k = 0; k < s->noplog && n < cap; k++) {
      const nt_oplog_row *op = &s->oplog[k];
      if (op->comm_index >= s->ncomms) continue;
      if (op->state != NT_OPS_IN_FLIGHT && done_taken[op->comm_index]++ >= per_rank) continue;
      const nt_comm_row *c = &s->comms[op->comm_index];
      nt_recent_op *r = &out[n++];
      r->proc = p;
      r->comm_hash = c->comm_hash;
      r->rank = c->rank;
      r->nranks = c->nranks;
      r->comm_name = comm_name_of(p, c->comm_hash);
      r->phase = phase_name(s, op->phase);
      r->variant = nt_variant_name(s, op->variant);
      r->op = op;
      r->age_s = (double)op->age_ns / 1e9 + (since > 0 ? since : 0);
    }
  }
  qsort(out, n, sizeof *out, recent_cmp);
  return n;
}

/* NCCL's own prediction beside what was measured: for each communicator,
 * NCCL's tuning model (topo/tuning.h) of the graphs NCCL's search finds on
 * its machine; for each collectives row, the time the model gives its
 * algorithm, protocol and mean size (ncclTopoGetAlgoTime,
 * src/graph/tuning.cc).
 *
 * Which machine: the topology sent by the endpoint of one of the
 * communicator's processes (the plugin sends NCCL_TOPO_DUMP_FILE), or, when
 * none did, the only topology the model holds (--topology). The search runs
 * over nnodes identical copies of it, so it stands for the communicator
 * only when its GPUs x nnodes are the communicator's ranks.
 *
 * Kept in two tables. A computed model (a file load and a channel search:
 * milliseconds) is a tune_slot, keyed by everything it came from
 * (topology, nranks, nnodes, NCCL version, variables): the communicators of
 * one shape on one machine share it, so a job's hundreds of communicators
 * cost a handful of searches; NT_MODEL_TUNE_SLOTS of them, the least
 * recently used replaced. Each communicator has a small entry (sorted by
 * hash, binary search) with the key it had and its slot; it is rechecked
 * only when a topology is loaded or a hello arrives, and recomputed only
 * when its key then changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

struct nt_tune_slot {
  uint64_t key; /* of everything it came from, with nranks and nnodes */
  int32_t nranks, nnodes;
  double used_s;
  bool known;
  const char *why;
  char bottleneck[NT_OP_BOTTLENECK];
  nt_tune_model tune;
};

struct nt_comm_model {
  uint64_t comm_hash;
  int32_t nranks, nnodes;
  uint64_t hellos, topo_sets; /* the model's counters when last checked */
  uint64_t key;               /* of everything its prediction came from */
  uint32_t slot;              /* its tune_slot, valid while that slot's key is key */
  double used_s;
};

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static bool listed(const char *const *names, const char *name) {
  for (int i = 0; names[i]; i++)
    if (!strcmp(names[i], name)) return true;
  return false;
}

/* 2.30 and later follow 2.30.7's rules, earlier ones 2.28.9's (the
 * versions topo/ models; "" unknown: 2.28). */
static int version_of(const char *nccl_version) {
  int major = 0, minor = 0;
  if (sscanf(nccl_version, "%d.%d", &major, &minor) == 2 && (major > 2 || minor >= 30))
    return NT_NCCL_230;
  return NT_NCCL_228;
}

/* What a prediction for (comm, nranks, nnodes) is made from, found in the
 * model now. */
typedef struct {
  const nt_model_topo_entry *topo; /* NULL: none */
  const nt_model_process *proc;    /* one of the communicator's, NULL none */
  nt_topo_env topo_env;
  nt_tune_env tune_env;
  uint64_t key;
} model_inputs;

static const nt_model_topo_entry *topo_of_endpoint(const nt_model *m, const char *endpoint) {
  char clean[sizeof m->topos[0].source];
  nt_sanitize(endpoint, strnlen(endpoint, 128), clean, sizeof clean);
  for (uint32_t i = 0; i < m->ntopos; i++)
    if (!strcmp(m->topos[i].source, clean)) return &m->topos[i];
  return NULL;
}

static bool has_comm(const nt_model_process *p, uint64_t hash) {
  for (uint32_t k = 0; p->cur && k < p->cur->ncomms; k++)
    if (p->cur->comms[k].comm_hash == hash) return true;
  return false;
}

static void find_inputs(const nt_model *m, uint64_t hash, int32_t nranks, int32_t nnodes,
                        model_inputs *in) {
  memset(in, 0, sizeof *in);
  for (uint32_t i = 0; i < m->nprocs && !in->topo; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (!has_comm(p, hash)) continue;
    const nt_model_topo_entry *t = topo_of_endpoint(m, p->endpoint);
    if (!in->proc || t) in->proc = p;
    in->topo = t;
  }
  if (!in->topo && m->ntopos == 1) in->topo = &m->topos[0];
  nt_topo_env_defaults(&in->topo_env);
  nt_tune_env_defaults(&in->tune_env);
  const nt_model_process *p = in->proc;
  in->topo_env.version = version_of(p && p->have_hello ? p->hello.nccl_version : "");
  uint64_t h = 1469598103934665603ull;
  h = mix(h, &in->topo_env.version, sizeof in->topo_env.version);
  h = mix(h, &nranks, sizeof nranks);
  h = mix(h, &nnodes, sizeof nnodes);
  if (in->topo) h = mix(h, &in->topo->hash, sizeof in->topo->hash);
  /* the variables NCCL's search and tuning read, as the process runs with
   * them; a value NCCL would refuse is left out (NCCL keeps its default) */
  for (uint32_t i = 0; p && p->have_hello && i < p->hello.nenv; i++) {
    const nt_env_var *v = &p->hello.env[i];
    bool for_topo = listed(nt_topo_env_names, v->name),
         for_tune = listed(nt_tune_env_names, v->name);
    if (!for_topo && !for_tune) continue;
    char a[sizeof v->name + sizeof v->value + 2], err[256];
    snprintf(a, sizeof a, "%s=%s", v->name, v->value);
    if (for_topo) (void)nt_topo_env_set(&in->topo_env, a, err, sizeof err);
    if (for_tune) (void)nt_tune_env_set(&in->tune_env, a, err, sizeof err);
    h = mix(h, a, strlen(a) + 1);
  }
  in->key = h;
}

static void endpoint_label(const nt_topo *t, int i, char *buf, size_t cap) {
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, i, &e);
  snprintf(buf, cap, "%s", e.label);
}

/* The link the model says limits the ring: over the ring graph's channels,
 * the path between consecutive GPUs (and, across nodes, from the last GPU
 * to its NIC and from the NIC to the first GPU) with the lowest bottleneck
 * bandwidth, and its narrowest hop; "" when the ring crosses no path. */
static void ring_bottleneck(const nt_topo *t, const nt_topo_graphs *g, char *out, size_t cap) {
  out[0] = '\0';
  nt_topo_graph_info gi;
  if (!nt_topo_graphs_graph(g, 0, &gi)) return;
  bool inter = nt_topo_graphs_nodes(g) > 1;
  nt_topo_pair best, p;
  int from = -1, to = -1;
  for (int c = 0; c < gi.nchannels; c++) {
    for (int k = 0; k <= gi.ngpus; k++) {
      int a, b;
      if (k < gi.ngpus) {
        a = nt_topo_graphs_channel_gpu(g, 0, c, k);
        b = k + 1 < gi.ngpus ? nt_topo_graphs_channel_gpu(g, 0, c, k + 1)
            : inter          ? nt_topo_graphs_channel_net(g, 0, c, 1)
                             : nt_topo_graphs_channel_gpu(g, 0, c, 0);
      } else if (inter) { /* into the node: the NIC to the channel's first GPU */
        a = nt_topo_graphs_channel_net(g, 0, c, 0);
        b = nt_topo_graphs_channel_gpu(g, 0, c, 0);
      } else {
        continue;
      }
      if (a < 0 || b < 0 || a == b || !nt_topo_pair_at(t, a, b, &p)) continue;
      if (from < 0 || p.bw < best.bw) best = p, from = a, to = b;
    }
  }
  if (from < 0) return;
  char fa[16], tb[16];
  endpoint_label(t, from, fa, sizeof fa);
  endpoint_label(t, to, tb, sizeof tb);
  int k = best.bottleneck, n;
  if (k >= 0 && !best.truncated && k + 1 < best.nhops_nodes) {
    char h0[48], h1[48];
    nt_topo_node_label(t, best.route[k], h0, sizeof h0);
    nt_topo_node_label(t, best.route[k + 1], h1, sizeof h1);
    n = snprintf(out, cap, "%s->%s %s, narrowest hop %s->%s %.4g GB/s", fa, tb,
                 nt_path_name(best.type), h0, h1, (double)best.hop_bw[k]);
  } else {
    n = snprintf(out, cap, "%s->%s %s %.4g GB/s", fa, tb, nt_path_name(best.type), best.bw);
  }
  if (n < 0 || (size_t)n >= cap) out[cap - 1] = '\0'; /* cut: still one line */
}

/* The graphs and the model for the inputs: once per communicator and
 * change (a file load and a channel search: milliseconds). */
static void compute(nt_tune_slot *e, const model_inputs *in) {
  e->known = false;
  e->bottleneck[0] = '\0';
  if (!in->topo) {
    e->why = "no topology (run the job with NCCL_TOPO_DUMP_FILE, or give --topology)";
    return;
  }
  if (e->nranks < 2 || e->nnodes < 1) {
    e->why = "the communicator's ranks and nodes are unknown";
    return;
  }
  if (!in->topo->xml) {
    e->why = "out of memory";
    return;
  }
  char err[512];
  nt_topo *t =
      nt_topo_load_buffer(in->topo->xml, in->topo->xml_len, in->topo->source, err, sizeof err);
  nt_topo_graphs *g = NULL;
  if (!t) {
    e->why = "the topology does not load";
  } else if ((int64_t)nt_topo_ngpus(t) * e->nnodes != e->nranks) {
    e->why = "the topology's GPUs x nodes are not the communicator's ranks";
  } else if (nt_topo_compute(t, &in->topo_env, err, sizeof err) != 0 ||
             !(g = nt_topo_graphs_compute(t, e->nnodes, err, sizeof err))) {
    e->why = "NCCL's channel search fails on the topology";
  } else if (nt_topo_graphs_tune(t, g, &in->tune_env, &e->tune, err, sizeof err) != 0) {
    e->why = "NCCL would refuse the job's NCCL_ALGO or NCCL_PROTO";
  } else {
    e->known = true;
    e->why = NULL;
    ring_bottleneck(t, g, e->bottleneck, sizeof e->bottleneck);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

static int comm_cmp(const nt_comm_model *x, uint64_t hash, int32_t nranks, int32_t nnodes) {
  if (x->comm_hash != hash) return x->comm_hash < hash ? -1 : 1;
  if (x->nranks != nranks) return x->nranks < nranks ? -1 : 1;
  return (x->nnodes > nnodes) - (x->nnodes < nnodes);
}

/* The communicator's entry, found or inserted in order (the least recently
 * used dropped when full); NULL out of memory. */
static nt_comm_model *comm_entry(nt_model *m, const nt_op_stat *r) {
  if (!m->comm_models) {
    m->comm_models = calloc(NT_MODEL_COMM_MODELS, sizeof *m->comm_models);
    if (!m->comm_models) return NULL;
  }
  uint32_t lo = 0, hi = m->ncomm_models;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = comm_cmp(&m->comm_models[mid], r->comm_hash, r->nranks, r->nnodes);
    if (c == 0) return &m->comm_models[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (m->ncomm_models == NT_MODEL_COMM_MODELS) {
    uint32_t old = 0;
    for (uint32_t i = 1; i < m->ncomm_models; i++)
      if (m->comm_models[i].used_s < m->comm_models[old].used_s) old = i;
    memmove(&m->comm_models[old], &m->comm_models[old + 1],
            (m->ncomm_models - old - 1) * sizeof *m->comm_models);
    m->ncomm_models--;
    if (old < lo) lo--;
  }
  memmove(&m->comm_models[lo + 1], &m->comm_models[lo],
          (m->ncomm_models - lo) * sizeof *m->comm_models);
  m->ncomm_models++;
  nt_comm_model *e = &m->comm_models[lo];
  memset(e, 0, sizeof *e);
  e->comm_hash = r->comm_hash;
  e->nranks = r->nranks;
  e->nnodes = r->nnodes;
  e->slot = UINT32_MAX;
  return e;
}

static bool slot_is(const nt_tune_slot *t, uint64_t key, int32_t nranks, int32_t nnodes) {
  return t->key == key && t->nranks == nranks && t->nnodes == nnodes;
}

/* The computed model for these inputs: found, or computed into a free (or
 * the least recently used) slot. */
static uint32_t tune_slot_for(nt_model *m, const model_inputs *in, int32_t nranks, int32_t nnodes) {
  uint32_t old = 0;
  for (uint32_t i = 0; i < m->ntune_slots; i++) {
    if (slot_is(&m->tune_slots[i], in->key, nranks, nnodes)) return i;
    if (m->tune_slots[i].used_s < m->tune_slots[old].used_s) old = i;
  }
  uint32_t i = m->ntune_slots < NT_MODEL_TUNE_SLOTS ? m->ntune_slots++ : old;
  nt_tune_slot *t = &m->tune_slots[i];
  t->key = in->key;
  t->nranks = nranks;
  t->nnodes = nnodes;
  compute(t, in);
  return i;
}

static const nt_tune_slot *model_for(nt_model *m, const nt_op_stat *r) {
  if (!m->tune_slots) {
    m->tune_slots = calloc(NT_MODEL_TUNE_SLOTS, sizeof *m->tune_slots);
    if (!m->tune_slots) return NULL;
  }
  nt_comm_model *e = NULL;
  /* rows come sorted by communicator: most lookups are the last one's */
  if (m->comm_model_last < m->ncomm_models &&
      comm_cmp(&m->comm_models[m->comm_model_last], r->comm_hash, r->nranks, r->nnodes) == 0)
    e = &m->comm_models[m->comm_model_last];
  else if (!(e = comm_entry(m, r)))
    return NULL;
  m->comm_model_last = (uint32_t)(e - m->comm_models);
  e->used_s = m->now_s;
  bool current = e->slot != UINT32_MAX && e->hellos == m->hellos && e->topo_sets == m->topo_sets;
  if (!current) { /* something arrived: what it came from may have changed */
    model_inputs in;
    find_inputs(m, r->comm_hash, r->nranks, r->nnodes, &in);
    e->hellos = m->hellos;
    e->topo_sets = m->topo_sets;
    if (e->slot == UINT32_MAX || e->key != in.key ||
        !slot_is(&m->tune_slots[e->slot], e->key, e->nranks, e->nnodes)) {
      e->key = in.key;
      e->slot = tune_slot_for(m, &in, r->nranks, r->nnodes);
    }
  } else if (!slot_is(&m->tune_slots[e->slot], e->key, e->nranks, e->nnodes)) {
    /* its slot went to another machine or shape: find or compute it again */
    model_inputs in;
    find_inputs(m, r->comm_hash, r->nranks, r->nnodes, &in);
    e->key = in.key;
    e->slot = tune_slot_for(m, &in, r->nranks, r->nnodes);
  }
  nt_tune_slot *t = &m->tune_slots[e->slot];
  t->used_s = m->now_s;
  return t;
}

static int tune_coll(int func) {
  switch (func) {
  case NT_FUNC_ALLREDUCE: return NT_TUNE_ALLREDUCE;
  case NT_FUNC_ALLGATHER: return NT_TUNE_ALLGATHER;
  case NT_FUNC_REDUCESCATTER: return NT_TUNE_REDUCESCATTER;
  case NT_FUNC_BROADCAST: return NT_TUNE_BROADCAST;
  case NT_FUNC_REDUCE: return NT_TUNE_REDUCE;
  default: return -1;
  }
}

void nt_model_op_model(const nt_model *model, const nt_op_stat *r, nt_op_model *out) {
  nt_model *m = nt_model_cache_of(model); /* the computed models only */
  memset(out, 0, sizeof *out);
  out->ratio = -1;
  int coll = tune_coll(r->func);
  /* the wire's numbering is NCCL's plus one (0: none) */
  int algo = r->algo - NT_ALGO_TREE, proto = r->proto - NT_PR_LL;
  if (r->kind != NT_OP_COLL || coll < 0) {
    out->why = "NCCL's model covers collectives only";
    return;
  }
  if (r->variant[0] || algo < 0 || algo >= NT_TUNE_NALGOS || proto < 0 ||
      proto >= NT_TUNE_NPROTOS) {
    out->why = "no algorithm and protocol NCCL's model knows";
    return;
  }
  if (!r->count) {
    out->why = "no operation";
    return;
  }
  const nt_tune_slot *e = model_for(m, r);
  if (!e) {
    out->why = "out of memory";
    return;
  }
  if (!e->known) {
    out->why = e->why;
    return;
  }
  /* NCCL's nBytes, the larger buffer: what nt_alg_bytes counts (the mean
   * of the done operations when there are) */
  double bytes = r->done ? r->alg_bytes / (double)r->done
                         : nt_alg_bytes(r->func, (double)r->bytes / (double)r->count, r->nranks);
  float us = nt_tune_time(&e->tune, coll, algo, proto, (size_t)bytes);
  if (us <= 0) {
    out->why = "NCCL's model gives this algorithm and protocol no bandwidth";
    return;
  }
  out->known = true;
  memcpy(out->bottleneck, e->bottleneck, sizeof out->bottleneck);
  out->time_us = us;
  out->busbw_gbs = bytes * nt_bus_factor(r->func, r->nranks) / ((double)us * 1e-6) / 1e9;
  if (r->done && r->time_s > 0) out->ratio = (double)us * 1e-6 / (r->time_s / (double)r->done);
}

void nt_op_models_free(nt_model *m) {
  free(m->comm_models);
  m->comm_models = NULL;
  m->ncomm_models = m->comm_model_last = 0;
  free(m->tune_slots);
  m->tune_slots = NULL;
  m->ntune_slots = 0;
}

/* The rings and trees NCCL connects over a communicator's ranks as the
 * model knows them: which ranks it has, on which hosts (its nodes), with
 * the per-node graphs NCCL dumped or nccltop's search computed
 * (topo/connect.c does the connecting, as connect.cc).
 *
 * Nodes and local ranks as init.cc numbers them: a node is a host (NCCL's
 * host hash), nodes are numbered in the order of their lowest rank, and a
 * node's local ranks are its ranks ascending. Every node is taken to be the
 * machine of the topology (or dump) shown, its k-th local rank on the GPU
 * with the topology's k-th rank attribute: what a job launched the same way
 * on identical nodes does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* A communicator seen in the current run, while counting. */
typedef struct {
  uint64_t hash;
  int32_t nranks, nnodes;
  uint32_t seen;
  const char *name;
  const nt_model_process *proc; /* one of its processes: its variables */
} comm_seen;

#define MAX_SEEN 256 /* distinct communicators looked at; more are left out */

static int comm_order(const void *a, const void *b) {
  const comm_seen *x = a, *y = b;
  if (x->nranks != y->nranks) return x->nranks > y->nranks ? -1 : 1;
  return (x->hash > y->hash) - (x->hash < y->hash);
}

static bool live(const nt_model *m, const nt_model_process *p) {
  return p->cur && !nt_model_process_replaced(m, p);
}

/* The variables connect.cc reads (channel and CTA limits), as the process
 * runs with them; a value NCCL would refuse keeps its default. */
static void env_of(const nt_model_process *p, nt_topo_env *e) {
  nt_topo_env_defaults(e);
  for (uint32_t i = 0; p && p->have_hello && i < p->hello.nenv; i++) {
    const nt_env_var *v = &p->hello.env[i];
    bool known = false;
    for (int k = 0; nt_topo_env_names[k] && !known; k++)
      known = !strcmp(nt_topo_env_names[k], v->name);
    if (!known) continue;
    char a[sizeof v->name + sizeof v->value + 2], err[256];
    snprintf(a, sizeof a, "%s=%s", v->name, v->value);
    (void)nt_topo_env_set(e, a, err, sizeof err);
  }
}

/* Fills l's nodes from every live process's row of the communicator; l->why
 * says what is missing when they are not whole. */
static void lay_out(nt_model *m, nt_comm_layout *l) {
  int32_t R = l->nranks;
  if (R < 1 || R > NT_TOPO_MAX_CONNECT_RANKS) {
    snprintf(l->why, sizeof l->why, "%d ranks: rings are shown for 1 to %d", R,
             NT_TOPO_MAX_CONNECT_RANKS);
    return;
  }
  /* host of each rank, as an index into the hosts met */
  int *host_of = malloc((size_t)R * sizeof *host_of);
  const char **hosts = malloc((size_t)R * sizeof *hosts);
  if (!host_of || !hosts) {
    snprintf(l->why, sizeof l->why, "out of memory");
    goto out;
  }
  for (int32_t r = 0; r < R; r++) host_of[r] = -1;
  int nhosts = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (!live(m, p)) continue;
    for (uint32_t k = 0; k < p->cur->ncomms; k++) {
      const nt_comm_row *c = &p->cur->comms[k];
      if (c->comm_hash != l->comm_hash || c->nranks != R) continue;
      if (c->rank < 0 || c->rank >= R) continue;
      if (host_of[c->rank] >= 0) {
        snprintf(l->why, sizeof l->why, "rank %d is reported by two processes", c->rank);
        goto out;
      }
      int h = 0;
      while (h < nhosts && strcmp(hosts[h], p->host)) h++;
      if (h == nhosts) hosts[nhosts++] = p->host;
      host_of[c->rank] = h;
    }
  }
  int seen = 0;
  for (int32_t r = 0; r < R; r++) seen += host_of[r] >= 0;
  if (seen < R) {
    snprintf(l->why, sizeof l->why, "%d of its %d ranks are seen", seen, R);
    goto out;
  }
  if (l->nnodes > 0 && nhosts != l->nnodes) {
    snprintf(l->why, sizeof l->why, "NCCL counts %d nodes, its ranks are on %d host%s", l->nnodes,
             nhosts, nhosts == 1 ? "" : "s");
    goto out;
  }
  /* nodes in the order of their lowest rank (init.cc), each node's ranks
   * ascending: rank order is both */
  int *node_of_host = malloc((size_t)nhosts * sizeof *node_of_host);
  int *count = calloc((size_t)nhosts, sizeof *count);
  if (!node_of_host || !count) {
    free(node_of_host), free(count);
    snprintf(l->why, sizeof l->why, "out of memory");
    goto out;
  }
  for (int h = 0; h < nhosts; h++) node_of_host[h] = -1;
  int nodes = 0;
  for (int32_t r = 0; r < R; r++) {
    int h = host_of[r];
    if (node_of_host[h] < 0) node_of_host[h] = nodes++;
    count[node_of_host[h]]++;
  }
  int G = count[0];
  for (int n = 1; n < nodes; n++)
    if (count[n] != G) {
      snprintf(l->why, sizeof l->why, "its nodes hold %d and %d ranks: not one graph for all", G,
               count[n]);
      G = 0;
      break;
    }
  if (G > 0) {
    l->node_ranks = malloc((size_t)R * sizeof *l->node_ranks);
    l->hosts = malloc((size_t)nodes * sizeof *l->hosts);
    if (!l->node_ranks || !l->hosts) {
      snprintf(l->why, sizeof l->why, "out of memory");
      G = 0;
    }
  }
  if (G > 0) {
    memset(count, 0, (size_t)nhosts * sizeof *count);
    for (int32_t r = 0; r < R; r++) {
      int n = node_of_host[host_of[r]];
      l->node_ranks[n * G + count[n]++] = r;
    }
    for (int h = 0; h < nhosts; h++)
      snprintf(l->hosts[node_of_host[h]], sizeof l->hosts[0], "%s", hosts[h]);
    l->nnodes = nodes;
    l->nlocal = G;
  } else {
    free(l->node_ranks), free(l->hosts);
    l->node_ranks = NULL, l->hosts = NULL;
  }
  free(node_of_host);
  free(count);
out:
  free(host_of);
  free(hosts);
}

static int hash_order(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* How many distinct values v[0..n) holds (sorts v). */
static uint32_t distinct(uint64_t *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, hash_order);
  uint32_t d = 0;
  for (size_t i = 0; i < n; i++) d += i == 0 || v[i] != v[i - 1];
  return d;
}

uint32_t nt_model_comm_layouts(nt_model *m, nt_comm_layout *out, uint32_t cap, uint32_t *more) {
  static comm_seen seen[MAX_SEEN];
  uint32_t n = 0;
  /* The communicators past MAX_SEEN, a row per process in one: counted
   * once each at the end. */
  uint64_t *over = NULL;
  size_t nover = 0, over_cap = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (!live(m, p)) continue;
    for (uint32_t k = 0; k < p->cur->ncomms; k++) {
      const nt_comm_row *c = &p->cur->comms[k];
      uint32_t j = 0;
      while (j < n && seen[j].hash != c->comm_hash) j++;
      if (j == n) {
        if (n == MAX_SEEN) {
          if (nover == over_cap) {
            size_t grown = over_cap ? 2 * over_cap : 256;
            uint64_t *g = realloc(over, grown * sizeof *over);
            if (!g) continue; /* out of memory: this one goes uncounted */
            over = g, over_cap = grown;
          }
          over[nover++] = c->comm_hash;
          continue;
        }
        seen[n++] = (comm_seen){c->comm_hash, c->nranks, c->nnodes, 0, "", p};
      }
      seen[j].seen++;
      for (uint32_t q = 0; q < p->ncomm_info && !seen[j].name[0]; q++)
        if (p->comm_info[q].comm_hash == c->comm_hash) seen[j].name = p->comm_info[q].name;
    }
  }
  qsort(seen, n, sizeof *seen, comm_order);
  uint32_t w = n < cap ? n : cap;
  for (uint32_t i = 0; i < w; i++) {
    nt_comm_layout *l = &out[i];
    memset(l, 0, sizeof *l);
    l->comm_hash = seen[i].hash;
    nt_comm_label(seen[i].name, seen[i].hash, l->label, sizeof l->label);
    l->nranks = seen[i].nranks;
    l->nnodes = seen[i].nnodes;
    env_of(seen[i].proc, &l->env);
    lay_out(m, l);
  }
  if (more) *more = n - w + distinct(over, nover);
  free(over);
  return w;
}

void nt_comm_layout_free(nt_comm_layout *l) {
  free(l->node_ranks);
  free(l->hosts);
  l->node_ranks = NULL;
  l->hosts = NULL;
}

/* The topology's GPUs by local rank: sorted by their rank attribute, as
 * topo/connect.c numbers them (document order among equals). */
static int gpus_by_local(const nt_topo *t, int *gpu_of_local) {
  int G = nt_topo_ngpus(t);
  if (G > NT_DUMP_MAX_GPUS) G = NT_DUMP_MAX_GPUS;
  int rank[NT_DUMP_MAX_GPUS];
  for (int i = 0; i < G; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    rank[i] = e.rank;
    gpu_of_local[i] = i;
  }
  for (int i = 1; i < G; i++)
    for (int k = i; k > 0 && rank[gpu_of_local[k]] < rank[gpu_of_local[k - 1]]; k--) {
      int x = gpu_of_local[k];
      gpu_of_local[k] = gpu_of_local[k - 1];
      gpu_of_local[k - 1] = x;
    }
  return G;
}

static int min_sm(const nt_topo *t) {
  int sm = 0;
  for (int i = 0; i < nt_topo_ngpus(t); i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    if (i == 0 || e.sm < sm) sm = e.sm;
  }
  return sm;
}

static nt_topo_rings *connect(const nt_comm_layout *l, nt_topo_layout *tl, char *why, size_t cap) {
  tl->nnodes = l->nnodes;
  tl->nlocal = l->nlocal;
  tl->node_ranks = l->node_ranks;
  tl->env = &l->env;
  char err[200];
  nt_topo_rings *r = nt_topo_connect(tl, err, sizeof err);
  if (!r) snprintf(why, cap, "%s", err);
  return r;
}

nt_topo_rings *nt_comm_rings_from_dump(const nt_comm_layout *l, const nt_graph_dump *d,
                                       const nt_topo *t, char *why, size_t cap) {
  if (!l->nlocal) return snprintf(why, cap, "%s", l->why), (nt_topo_rings *)NULL;
  int G = l->nlocal, which[2] = {-1, -1};
  for (int g = 0; g < nt_graph_dump_ngraphs(d); g++) {
    const nt_dump_graph *gr = nt_graph_dump_graph(d, g);
    if (gr->id == 0 || gr->id == 1) which[gr->id] = g;
  }
  if (which[0] < 0 || which[1] < 0)
    return snprintf(why, cap, "NCCL's dump has no ring or no tree graph"), (nt_topo_rings *)NULL;
  const nt_dump_graph *ring = nt_graph_dump_graph(d, which[0]),
                      *tree = nt_graph_dump_graph(d, which[1]);
  if (ring->nchannels < 1 || tree->nchannels < 1)
    return snprintf(why, cap, "NCCL's dump has a graph of no channel"), (nt_topo_rings *)NULL;
  /* dev number -> local rank: the topology's GPUs, else dev order */
  int64_t devs[NT_DUMP_MAX_GPUS];
  int ndevs = 0;
  if (t) {
    int gpu_of_local[NT_DUMP_MAX_GPUS];
    ndevs = gpus_by_local(t, gpu_of_local);
    for (int k = 0; k < ndevs; k++) {
      nt_topo_endpoint e;
      nt_topo_endpoint_at(t, gpu_of_local[k], &e);
      devs[k] = e.dev;
    }
  } else {
    int64_t in, out;
    ndevs = nt_graph_dump_channel(d, which[0], 0, devs, NT_DUMP_MAX_GPUS, &in, &out);
    if (ndevs > NT_DUMP_MAX_GPUS) ndevs = -1; /* more than a node has: never G */
    for (int i = 1; i < ndevs; i++)
      for (int k = i; k > 0 && devs[k] < devs[k - 1]; k--) {
        int64_t x = devs[k];
        devs[k] = devs[k - 1];
        devs[k - 1] = x;
      }
  }
  if (ndevs != G)
    return snprintf(why, cap, "%s has %d GPUs, the communicator %d ranks per node",
                    t ? "the topology" : "NCCL's dump", ndevs < 0 ? 0 : ndevs, G),
           (nt_topo_rings *)NULL;
  int nch[2] = {ring->nchannels, tree->nchannels};
  int *local = malloc((size_t)(nch[0] + nch[1]) * (size_t)G * sizeof *local);
  if (!local) return snprintf(why, cap, "out of memory"), (nt_topo_rings *)NULL;
  nt_topo_rings *r = NULL;
  for (int w = 0; w < 2; w++)
    for (int c = 0; c < nch[w]; c++) {
      int64_t gpus[NT_DUMP_MAX_GPUS], in, out;
      int n = nt_graph_dump_channel(d, which[w], c, gpus, NT_DUMP_MAX_GPUS, &in, &out);
      if (n != G) {
        snprintf(why, cap, "NCCL's dump has %d GPUs in a channel, the communicator %d per node", n,
                 G);
        goto out;
      }
      for (int i = 0; i < G; i++) {
        int k = 0;
        while (k < G && devs[k] != gpus[i]) k++;
        if (k == G) {
          char dev[32];
          nt_dump_dev_text(gpus[i], dev, sizeof dev);
          snprintf(why, cap, "NCCL's dump names GPU %s, which the %s has not", dev,
                   t ? "topology" : "dump's first channel");
          goto out;
        }
        local[(w ? nch[0] * G : 0) + c * G + i] = k;
      }
    }
  nt_topo_layout tl = {.ring_channels = nch[0],
                       .tree_channels = nch[1],
                       .ring_local = local,
                       .tree_local = local + nch[0] * G,
                       .ring_cross_nic = ring->cross_nic,
                       .tree_pattern = tree->pattern,
                       .ring_bw_intra = ring->bw_intra,
                       .min_sm = t ? min_sm(t) : 0};
  r = connect(l, &tl, why, cap);
out:
  free(local);
  return r;
}

nt_topo_rings *nt_comm_rings_from_graphs(const nt_comm_layout *l, const nt_topo *t,
                                         const nt_topo_graphs *g, char *why, size_t cap) {
  if (!l->nlocal) return snprintf(why, cap, "%s", l->why), (nt_topo_rings *)NULL;
  int G = l->nlocal;
  nt_topo_graph_info gi[2];
  if (!nt_topo_graphs_graph(g, 0, &gi[0]) || !nt_topo_graphs_graph(g, 1, &gi[1]))
    return snprintf(why, cap, "no graphs"), (nt_topo_rings *)NULL;
  if (gi[0].ngpus != G)
    return snprintf(why, cap, "the topology has %d GPUs, the communicator %d ranks per node",
                    gi[0].ngpus, G),
           (nt_topo_rings *)NULL;
  int *local = malloc((size_t)(gi[0].nchannels + gi[1].nchannels) * (size_t)G * sizeof *local);
  if (!local) return snprintf(why, cap, "out of memory"), (nt_topo_rings *)NULL;
  for (int w = 0; w < 2; w++)
    for (int c = 0; c < gi[w].nchannels; c++)
      for (int i = 0; i < G; i++)
        local[(w ? gi[0].nchannels * G : 0) + c * G + i] = nt_topo_graphs_channel_local(g, w, c, i);
  nt_topo_layout tl = {.ring_channels = gi[0].nchannels,
                       .tree_channels = gi[1].nchannels,
                       .ring_local = local,
                       .tree_local = local + gi[0].nchannels * G,
                       .ring_cross_nic = gi[0].cross_nic,
                       .tree_pattern = gi[1].pattern,
                       .ring_bw_intra = gi[0].bw_intra,
                       .min_sm = min_sm(t)};
  nt_topo_rings *r = connect(l, &tl, why, cap);
  free(local);
  return r;
}

/* From the graphs one node's search found to the rings and trees NCCL
 * connects over every rank of N identical nodes (src/graph/connect.cc:
 * ncclTopoPreset, ncclTopoPostset, connectRings, connectTrees; rings.cc
 * ncclBuildRings; trees.cc ncclGetBtree / ncclGetDtree; init.cc, which
 * runs the ring search, then the tree search with as many channels, and
 * aligns the two). The same in 2.28.9 and 2.30.7.
 *
 * Ranks: node n holds ranks n*G .. n*G+G-1, its GPUs in the order of their
 * rank attribute (a file from rank 0's node numbers them 0..G-1). */
#include <stdlib.h>
#include <string.h>

#include "search.h"

struct nt_topo_graphs {
  int nodes, ngpus, nranks, nchannels;
  bool inter;
  topo_graph graph[2];             /* ring, tree */
  int gpu_of_local[TOPO_MAX_GPUS]; /* local rank -> GPU position */
  int local_of_gpu[TOPO_MAX_GPUS];
  int *ring;      /* [c * nranks + i]: channel c's ring from rank 0 */
  int *up, *down; /* [c * nranks + r], [(c * nranks + r) * 3 + k] */
};

/* ncclGetBtree: node `rank` of a binary tree over n nodes rooted at 0 in
 * which leaves and inner nodes alternate (the tree of the bit pattern). */
static void btree(int n, int rank, int *u, int *d0, int *d1, int *child_type) {
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    *u = -1, *d0 = -1;
    *d1 = n > 1 ? bit >> 1 : -1;
    return;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  *child_type = rank < up ? 0 : 1;
  *u = up;
  int low = bit >> 1;
  int down0 = low == 0 ? -1 : rank - low, down1 = low == 0 ? -1 : rank + low;
  while (down1 >= n) {
    down1 = low == 0 ? -1 : rank + low;
    low >>= 1;
  }
  *d0 = down0, *d1 = down1;
}

/* ncclGetDtree: the btree, and a second tree mirrored (n even) or shifted
 * by one (n odd), so that a leaf of one is inner in the other. */
static void dtree(int n, int rank, int t0[4], int t1[4]) {
  btree(n, rank, &t0[0], &t0[1], &t0[2], &t0[3]);
  int u, d0, d1;
  if (n % 2 == 1) {
    btree(n, (rank - 1 + n) % n, &u, &d0, &d1, &t1[3]);
    t1[0] = u == -1 ? -1 : (u + 1) % n;
    t1[1] = d0 == -1 ? -1 : (d0 + 1) % n;
    t1[2] = d1 == -1 ? -1 : (d1 + 1) % n;
  } else {
    btree(n, n - 1 - rank, &u, &d0, &d1, &t1[3]);
    t1[0] = u == -1 ? -1 : n - 1 - u;
    t1[1] = d0 == -1 ? -1 : n - 1 - d0;
    t1[2] = d1 == -1 ? -1 : n - 1 - d1;
  }
}

static int global_rank(const nt_topo_graphs *g, int node, int gpu) {
  return node * g->ngpus + g->local_of_gpu[gpu];
}

static void add_down(int *down, int rank) {
  for (int k = 0; k < 3; k++)
    if (down[k] < 0) {
      down[k] = rank;
      return;
    }
}

/* NCCL_MIN/MAX_NCHANNELS (or the older _NRINGS, which they override). */
static int min_channels(const nt_topo_env *e) {
  int m = 0;
  if (e->min_nrings != -2) m = e->min_nrings;
  if (e->min_nchannels != -2) m = e->min_nchannels;
  return m > NCCL_MAXCHANNELS ? NCCL_MAXCHANNELS : m < 0 ? 0 : m;
}

static int max_channels(const nt_topo_env *e) {
  int m = NCCL_MAXCHANNELS;
  if (e->max_nrings != -2) m = e->max_nrings;
  if (e->max_nchannels != -2) m = e->max_nchannels;
  return m > NCCL_MAXCHANNELS ? NCCL_MAXCHANNELS : m < 1 ? 1 : m;
}

/* Preset + Postset for every rank at once. */
static int connect_all(nt_topo_graphs *g, const nt_topo *t) {
  const topo_graph *ring = &g->graph[0], *tree = &g->graph[1];
  int nch = ring->nchannels < tree->nchannels ? ring->nchannels : tree->nchannels;
  int G = g->ngpus, N = g->nodes, R = g->nranks;
  /* Channel counts: the aligned search channels, doubled (the second half
   * with the second tree), doubled again for fast Hopper rings across
   * nodes, then NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS. */
  int total = nch * 2 > NCCL_MAXCHANNELS ? NCCL_MAXCHANNELS : nch * 2;
  int cc_min = t->nodes[t->gpus[0]].sm;
  for (int i = 1; i < G; i++)
    if (t->nodes[t->gpus[i]].sm < cc_min) cc_min = t->nodes[t->gpus[i]].sm;
  int copy_from = total; /* channels from here on copy channel c - copy_from */
  int final = total;
  if (cc_min >= 90 && N > 1 && ring->bw_intra > 45.0f && final < 16) final = 2 * final;
  int later_copy = final;
  /* the communicator's CTA limits (NCCL_MIN/MAX_CTAS, a value <= 0
   * ignored), capped at 64, min no more than max */
  int min_ctas = t->env.min_ctas > 0 ? t->env.min_ctas : 1;
  int max_ctas = t->env.max_ctas > 0 ? t->env.max_ctas : NCCL_MAXCHANNELS;
  if (min_ctas > NCCL_MAXCHANNELS) min_ctas = NCCL_MAXCHANNELS;
  if (max_ctas > NCCL_MAXCHANNELS) max_ctas = NCCL_MAXCHANNELS;
  if (min_ctas > max_ctas) min_ctas = max_ctas;
  int maxc = max_channels(&t->env);
  if (final > maxc) final = maxc;
  if (final > max_ctas) final = max_ctas;
  int minc = min_channels(&t->env);
  int copy2_from = final, target = minc > min_ctas ? minc : min_ctas;
  if (target > final) final = target > NCCL_MAXCHANNELS ? NCCL_MAXCHANNELS : target;
  g->nchannels = final;

  size_t cells = (size_t)NCCL_MAXCHANNELS * (size_t)R;
  int *prev = malloc(cells * sizeof *prev), *next = malloc(cells * sizeof *next);
  g->ring = malloc(cells * sizeof *g->ring);
  g->up = malloc(cells * sizeof *g->up);
  g->down = malloc(cells * 3 * sizeof *g->down);
  if (!prev || !next || !g->ring || !g->up || !g->down) {
    free(prev), free(next);
    return -1;
  }
  for (size_t i = 0; i < cells; i++) g->up[i] = -1;
  for (size_t i = 0; i < cells * 3; i++) g->down[i] = -1;

  /* crossNic 2 rings on even channel counts: odd nodes swap channel pairs
   * so that consecutive nodes do not cross rails the same way */
  bool swap = ring->cross_nic == 2 && nch % 2 == 0;
  for (int c = 0; c < nch; c++) {
    /* rings: inside each node the search's order; node n's last GPU sends
     * to node n+1's first */
    for (int n = 0; n < N; n++) {
      int rc = swap && n % 2 == 1 ? c ^ 1 : c;
      const int8_t *ri = ring->intra + rc * G;
      for (int i = 0; i < G; i++) {
        int r = global_rank(g, n, ri[i]);
        prev[c * R + r] = i == 0 ? -1 : global_rank(g, n, ri[i - 1]);
        next[c * R + r] = i == G - 1 ? -1 : global_rank(g, n, ri[i + 1]);
      }
    }
    for (int n = 0; n < N; n++) {
      int rc = swap && n % 2 == 1 ? c ^ 1 : c, pn = (n - 1 + N) % N, nn = (n + 1) % N;
      int rcp = swap && pn % 2 == 1 ? c ^ 1 : c, rcn = swap && nn % 2 == 1 ? c ^ 1 : c;
      int recv = global_rank(g, n, ring->intra[rc * G]);
      int send = global_rank(g, n, ring->intra[rc * G + G - 1]);
      prev[c * R + recv] = global_rank(g, pn, ring->intra[rcp * G + G - 1]);
      next[c * R + send] = global_rank(g, nn, ring->intra[rcn * G]);
    }
    /* trees: a chain inside each node; across nodes, the double binary
     * tree between each node's first GPU (its parent side) and its second
     * (child 0; the first again for child 1), or the first for both when
     * the search settled on a plain tree */
    const int8_t *ti = tree->intra + c * G;
    int c0 = tree->pattern == PATTERN_TREE ? 0 : 1,
        c1 = tree->pattern == PATTERN_SPLIT_TREE ? 1 : 0;
    if (G == 1) c0 = c1 = 0;
    for (int half = 0; half < 2; half++) {
      int ch = c + half * nch;
      if (ch >= NCCL_MAXCHANNELS) break;
      for (int n = 0; n < N; n++)
        for (int i = 0; i < G; i++) {
          int r = global_rank(g, n, ti[i]);
          g->up[ch * R + r] = i == 0 ? -1 : global_rank(g, n, ti[i - 1]);
          g->down[(ch * R + r) * 3] = i == G - 1 ? -1 : global_rank(g, n, ti[i + 1]);
        }
      for (int n = 0; n < N; n++) {
        int t0[4] = {-1, -1, -1, 0}, t1[4] = {-1, -1, -1, 0};
        dtree(N, n, t0, t1);
        const int *tr = half == 0 ? t0 : t1;
        int parent = global_rank(g, n, ti[0]);
        if (tr[0] != -1) g->up[ch * R + parent] = global_rank(g, tr[0], ti[tr[3] == 0 ? c0 : c1]);
        if (tr[1] != -1)
          add_down(&g->down[(ch * R + global_rank(g, n, ti[c0])) * 3],
                   global_rank(g, tr[1], ti[0]));
        if (tr[2] != -1)
          add_down(&g->down[(ch * R + global_rank(g, n, ti[c1])) * 3],
                   global_rank(g, tr[2], ti[0]));
      }
    }
  }
  /* the second half's rings are the first half's */
  for (int c = nch; c < total; c++) {
    memcpy(prev + c * R, prev + (c - nch) * R, (size_t)R * sizeof *prev);
    memcpy(next + c * R, next + (c - nch) * R, (size_t)R * sizeof *next);
  }
  /* copyChannels: channel c repeats channel c - start, rings and trees */
  int starts[2] = {copy_from, copy2_from}, ends[2] = {later_copy, final};
  for (int k = 0; k < 2; k++)
    for (int c = starts[k]; c < ends[k] && c < NCCL_MAXCHANNELS; c++) {
      int src = c - starts[k];
      memcpy(prev + c * R, prev + src * R, (size_t)R * sizeof *prev);
      memcpy(next + c * R, next + src * R, (size_t)R * sizeof *next);
      memcpy(g->up + c * R, g->up + src * R, (size_t)R * sizeof *g->up);
      memcpy(g->down + c * R * 3, g->down + src * R * 3, (size_t)R * 3 * sizeof *g->down);
    }
  /* ncclBuildRings from rank 0; a ring that does not close is a bug here */
  int rc = 0;
  for (int c = 0; c < final && rc == 0; c++) {
    int cur = 0;
    for (int i = 0; i < R; i++) {
      g->ring[c * R + i] = cur;
      cur = next[c * R + cur];
      if (cur < 0 || cur >= R) {
        rc = -2;
        break;
      }
    }
    if (rc == 0 && cur != 0) rc = -2;
  }
  free(prev);
  free(next);
  return rc;
}

nt_topo_graphs *nt_topo_graphs_compute(nt_topo *t, int nodes, char *err, size_t errlen) {
  if (!t->computed)
    return snprintf(err, errlen, "%s: nothing computed", t->name), (nt_topo_graphs *)NULL;
  if (nodes < 1 || nodes > NT_TOPO_MAX_GRAPH_NODES)
    return snprintf(err, errlen, "--nodes %d: use 1 to %d", nodes, NT_TOPO_MAX_GRAPH_NODES),
           (nt_topo_graphs *)NULL;
  if (t->ngpus == 0)
    return snprintf(err, errlen, "%s: no GPU in the file: NCCL has nothing to connect", t->name),
           (nt_topo_graphs *)NULL;
  if (nodes > 1 && t->nnets == 0)
    return snprintf(err, errlen, "%s: no network device in the file: NCCL cannot connect %d nodes",
                    t->name, nodes),
           (nt_topo_graphs *)NULL;
  nt_topo_graphs *g = calloc(1, sizeof *g);
  topo_search *s = malloc(sizeof *s);
  if (!g || !s) {
    free(g), free(s);
    return snprintf(err, errlen, "%s: out of memory", t->name), (nt_topo_graphs *)NULL;
  }
  g->nodes = nodes;
  g->ngpus = t->ngpus;
  g->nranks = nodes * t->ngpus;
  g->inter = nodes > 1;
  if (topo_search_init(s, t, g->inter, t->env.cross_nic, err, errlen) < 0) goto fail;
  /* local ranks in the order of the rank attributes */
  for (int i = 0; i < t->ngpus; i++) g->gpu_of_local[i] = i;
  for (int i = 1; i < t->ngpus; i++)
    for (int k = i; k > 0 && t->nodes[t->gpus[g->gpu_of_local[k]]].rank <
                                 t->nodes[t->gpus[g->gpu_of_local[k - 1]]].rank;
         k--) {
      int x = g->gpu_of_local[k];
      g->gpu_of_local[k] = g->gpu_of_local[k - 1];
      g->gpu_of_local[k - 1] = x;
    }
  for (int i = 0; i < t->ngpus; i++) g->local_of_gpu[g->gpu_of_local[i]] = i;
  /* the link bandwidths the search borrows come back, rounded as NCCL
   * rounds; keep the exact ones for the matrix */
  float *saved = malloc((size_t)t->nnodes * TOPO_MAX_LINKS * sizeof *saved);
  if (!saved) {
    snprintf(err, errlen, "%s: out of memory", t->name);
    goto fail;
  }
  for (int i = 0; i < t->nnodes; i++)
    for (int l = 0; l < t->nodes[i].nlinks; l++)
      saved[i * TOPO_MAX_LINKS + l] = t->nodes[i].links[l].bw;
  topo_graph *ring = &g->graph[0], *tree = &g->graph[1];
  memset(ring, 0, sizeof *ring);
  ring->pattern = PATTERN_RING;
  ring->min_channels = 1;
  ring->max_channels = NCCL_MAXCHANNELS / 2;
  int rc = topo_graph_compute(s, ring, err, errlen);
  if (rc == 0) {
    memset(tree, 0, sizeof *tree);
    tree->pattern = PATTERN_BALANCED_TREE;
    tree->min_channels = tree->max_channels = ring->nchannels;
    rc = topo_graph_compute(s, tree, err, errlen);
  }
  for (int i = 0; i < t->nnodes; i++)
    for (int l = 0; l < t->nodes[i].nlinks; l++)
      t->nodes[i].links[l].bw = saved[i * TOPO_MAX_LINKS + l];
  free(saved);
  if (rc < 0) goto fail;
  rc = connect_all(g, t);
  if (rc == -1) {
    snprintf(err, errlen, "%s: out of memory", t->name);
    goto fail;
  }
  if (rc < 0) {
    snprintf(err, errlen, "%s: a ring does not close (a bug in nccltop)", t->name);
    goto fail;
  }
  free(s);
  return g;
fail:
  free(s);
  nt_topo_graphs_free(g);
  return NULL;
}

void nt_topo_graphs_free(nt_topo_graphs *g) {
  if (!g) return;
  free(g->ring);
  free(g->up);
  free(g->down);
  free(g);
}

int nt_topo_graphs_nodes(const nt_topo_graphs *g) {
  return g->nodes;
}
int nt_topo_graphs_nranks(const nt_topo_graphs *g) {
  return g->nranks;
}
int nt_topo_graphs_nchannels(const nt_topo_graphs *g) {
  return g->nchannels;
}

bool nt_topo_graphs_graph(const nt_topo_graphs *g, int which, nt_topo_graph_info *out) {
  if (which < 0 || which > 1) return false;
  const topo_graph *s = &g->graph[which];
  *out = (nt_topo_graph_info){.pattern = s->pattern,
                              .nchannels = s->nchannels,
                              .bw_intra = s->bw_intra,
                              .bw_inter = s->bw_inter,
                              .type_intra = s->type_intra,
                              .type_inter = s->type_inter,
                              .same_channels = s->same_channels,
                              .cross_nic = s->cross_nic,
                              .ngpus = g->ngpus};
  return true;
}

int nt_topo_graphs_channel_gpu(const nt_topo_graphs *g, int which, int c, int k) {
  if (which < 0 || which > 1 || c < 0 || c >= g->graph[which].nchannels || k < 0 || k >= g->ngpus)
    return -1;
  return g->graph[which].intra[c * g->ngpus + k];
}

int nt_topo_graphs_channel_net(const nt_topo_graphs *g, int which, int c, int out) {
  if (!g->inter || which < 0 || which > 1 || c < 0 || c >= g->graph[which].nchannels) return -1;
  int n = g->graph[which].inter[c * 2 + (out ? 1 : 0)];
  return n < 0 ? -1 : g->ngpus + n;
}

const int *nt_topo_graphs_ring(const nt_topo_graphs *g, int c) {
  return c >= 0 && c < g->nchannels ? g->ring + c * g->nranks : NULL;
}

bool nt_topo_graphs_tree(const nt_topo_graphs *g, int c, int rank, int *up, int down[3]) {
  if (c < 0 || c >= g->nchannels || rank < 0 || rank >= g->nranks) return false;
  size_t i = (size_t)c * (size_t)g->nranks + (size_t)rank;
  *up = g->up[i];
  for (int k = 0; k < 3; k++) down[k] = g->down[i * 3 + (size_t)k];
  return true;
}

int nt_topo_graphs_rank_gpu(const nt_topo_graphs *g, int rank) {
  if (rank < 0 || rank >= g->nranks) return -1;
  return g->gpu_of_local[rank % g->ngpus];
}

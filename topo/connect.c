/* From the graphs one node's search found to the rings and trees NCCL
 * connects over every rank of N identical nodes (src/graph/connect.cc:
 * ncclTopoPreset, ncclTopoPostset, connectRings, connectTrees; rings.cc
 * ncclBuildRings; trees.cc ncclGetBtree / ncclGetDtree; init.cc, which
 * runs the ring search, then the tree search with as many channels, and
 * aligns the two). The same in 2.28.9 and 2.30.7.
 *
 * nt_topo_connect takes the nodes' ranks as a communicator really has them
 * (init.cc numbers the nodes by their lowest rank; a node's local ranks are
 * its ranks ascending) and the per-node graphs in local ranks: the monitor
 * gives it the job's hosts and NCCL's own dump. nt_topo_graphs_compute
 * gives it N identical nodes, node n holding ranks n*G .. n*G+G-1, its GPUs
 * in the order of their rank attribute (a file from rank 0's node numbers
 * them 0..G-1). */
#include <stdlib.h>
#include <string.h>

#include "search.h"

struct nt_topo_graphs {
  int nodes, ngpus, nranks;
  bool inter;
  topo_graph graph[2];             /* ring, tree */
  int gpu_of_local[TOPO_MAX_GPUS]; /* local rank -> GPU position */
  int local_of_gpu[TOPO_MAX_GPUS];
  nt_topo_rings *conn; /* over node-major ranks */
};

struct nt_topo_rings {
  int nranks, nchannels;
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

/* Each channel of `local` visits every local rank exactly once (seen:
 * nlocal bytes of scratch). */
static bool channels_ok(const int *local, int nch, int nlocal, unsigned char *seen) {
  for (int c = 0; c < nch; c++) {
    memset(seen, 0, (size_t)nlocal);
    for (int i = 0; i < nlocal; i++) {
      int k = local[c * nlocal + i];
      if (k < 0 || k >= nlocal || seen[k]) return false;
      seen[k] = 1;
    }
  }
  return true;
}

static bool layout_ok(const nt_topo_layout *l, char *err, size_t errlen) {
  if (l->nnodes < 1 || l->nlocal < 1 || l->nnodes > NT_TOPO_MAX_CONNECT_RANKS / l->nlocal)
    return snprintf(err, errlen, "%d nodes of %d ranks: use 1 to %d ranks", l->nnodes, l->nlocal,
                    NT_TOPO_MAX_CONNECT_RANKS),
           false;
  if (l->ring_channels < 1 || l->ring_channels > NCCL_MAXCHANNELS || l->tree_channels < 1 ||
      l->tree_channels > NCCL_MAXCHANNELS)
    return snprintf(err, errlen, "%d ring and %d tree channels: use 1 to %d", l->ring_channels,
                    l->tree_channels, NCCL_MAXCHANNELS),
           false;
  int R = l->nnodes * l->nlocal;
  /* scratch on the heap: a thread-local array would grow every thread's
   * static TLS, and threads made with small stacks would fail to start */
  unsigned char *seen = calloc((size_t)R, 1);
  if (!seen) return snprintf(err, errlen, "out of memory"), false;
  bool ok = true;
  for (int i = 0; i < R && ok; i++) {
    int r = l->node_ranks[i];
    ok = r >= 0 && r < R && !seen[r];
    if (ok) seen[r] = 1;
  }
  if (!ok)
    snprintf(err, errlen, "the nodes do not hold ranks 0 to %d once each", R - 1);
  else if (!channels_ok(l->ring_local, l->ring_channels, l->nlocal, seen) ||
           !channels_ok(l->tree_local, l->tree_channels, l->nlocal, seen)) {
    snprintf(err, errlen, "a channel does not visit each of the %d GPUs once", l->nlocal);
    ok = false;
  }
  free(seen);
  return ok;
}

/* connect.cc's Preset and Postset for every rank at once. */
static int connect_layout(nt_topo_rings *g, const nt_topo_layout *l) {
  int nch = l->ring_channels < l->tree_channels ? l->ring_channels : l->tree_channels;
  int G = l->nlocal, N = l->nnodes, R = g->nranks;
  nt_topo_env defaults;
  const nt_topo_env *env = l->env;
  if (!env) nt_topo_env_defaults(&defaults), env = &defaults;
#define RANK(n, i) (l->node_ranks[(n)*G + (i)])
  /* Channel counts: the aligned search channels, doubled (the second half
   * with the second tree), doubled again for fast Hopper rings across
   * nodes, then NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS. */
  int total = nch * 2 > NCCL_MAXCHANNELS ? NCCL_MAXCHANNELS : nch * 2;
  int copy_from = total; /* channels from here on copy channel c - copy_from */
  int final = total;
  if (l->min_sm >= 90 && N > 1 && l->ring_bw_intra > 45.0 && final < 16) final = 2 * final;
  int later_copy = final;
  /* the communicator's CTA limits (NCCL_MIN/MAX_CTAS, a value <= 0
   * ignored), capped at 64, min no more than max */
  int min_ctas = env->min_ctas > 0 ? env->min_ctas : 1;
  int max_ctas = env->max_ctas > 0 ? env->max_ctas : NCCL_MAXCHANNELS;
  if (min_ctas > NCCL_MAXCHANNELS) min_ctas = NCCL_MAXCHANNELS;
  if (max_ctas > NCCL_MAXCHANNELS) max_ctas = NCCL_MAXCHANNELS;
  if (min_ctas > max_ctas) min_ctas = max_ctas;
  int maxc = max_channels(env);
  if (final > maxc) final = maxc;
  if (final > max_ctas) final = max_ctas;
  int minc = min_channels(env);
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
  bool swap = l->ring_cross_nic == 2 && nch % 2 == 0;
  for (int c = 0; c < nch; c++) {
    /* rings: inside each node the search's order; node n's last GPU sends
     * to node n+1's first */
    for (int n = 0; n < N; n++) {
      int rc = swap && n % 2 == 1 ? c ^ 1 : c;
      const int *ri = l->ring_local + rc * G;
      for (int i = 0; i < G; i++) {
        int r = RANK(n, ri[i]);
        prev[c * R + r] = i == 0 ? -1 : RANK(n, ri[i - 1]);
        next[c * R + r] = i == G - 1 ? -1 : RANK(n, ri[i + 1]);
      }
    }
    for (int n = 0; n < N; n++) {
      int rc = swap && n % 2 == 1 ? c ^ 1 : c, pn = (n - 1 + N) % N, nn = (n + 1) % N;
      int rcp = swap && pn % 2 == 1 ? c ^ 1 : c, rcn = swap && nn % 2 == 1 ? c ^ 1 : c;
      int recv = RANK(n, l->ring_local[rc * G]);
      int send = RANK(n, l->ring_local[rc * G + G - 1]);
      prev[c * R + recv] = RANK(pn, l->ring_local[rcp * G + G - 1]);
      next[c * R + send] = RANK(nn, l->ring_local[rcn * G]);
    }
    /* trees: a chain inside each node; across nodes, the double binary
     * tree between each node's first GPU (its parent side) and its second
     * (child 0; the first again for child 1), or the first for both when
     * the search settled on a plain tree */
    const int *ti = l->tree_local + c * G;
    int c0 = l->tree_pattern == PATTERN_TREE ? 0 : 1,
        c1 = l->tree_pattern == PATTERN_SPLIT_TREE ? 1 : 0;
    if (G == 1) c0 = c1 = 0;
    for (int half = 0; half < 2; half++) {
      int ch = c + half * nch;
      if (ch >= NCCL_MAXCHANNELS) break;
      for (int n = 0; n < N; n++)
        for (int i = 0; i < G; i++) {
          int r = RANK(n, ti[i]);
          g->up[ch * R + r] = i == 0 ? -1 : RANK(n, ti[i - 1]);
          g->down[(ch * R + r) * 3] = i == G - 1 ? -1 : RANK(n, ti[i + 1]);
        }
      for (int n = 0; n < N; n++) {
        int t0[4] = {-1, -1, -1, 0}, t1[4] = {-1, -1, -1, 0};
        dtree(N, n, t0, t1);
        const int *tr = half == 0 ? t0 : t1;
        int parent = RANK(n, ti[0]);
        if (tr[0] != -1) g->up[ch * R + parent] = RANK(tr[0], ti[tr[3] == 0 ? c0 : c1]);
        if (tr[1] != -1) add_down(&g->down[(ch * R + RANK(n, ti[c0])) * 3], RANK(tr[1], ti[0]));
        if (tr[2] != -1) add_down(&g->down[(ch * R + RANK(n, ti[c1])) * 3], RANK(tr[2], ti[0]));
      }
    }
  }
#undef RANK
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

nt_topo_rings *nt_topo_connect(const nt_topo_layout *l, char *err, size_t errlen) {
  if (!layout_ok(l, err, errlen)) return NULL;
  nt_topo_rings *g = calloc(1, sizeof *g);
  if (!g) return snprintf(err, errlen, "out of memory"), (nt_topo_rings *)NULL;
  g->nranks = l->nnodes * l->nlocal;
  int rc = connect_layout(g, l);
  if (rc == 0) return g;
  if (rc == -1)
    snprintf(err, errlen, "out of memory");
  else
    snprintf(err, errlen, "a ring does not close (a bug in nccltop)");
  nt_topo_rings_free(g);
  return NULL;
}

void nt_topo_rings_free(nt_topo_rings *r) {
  if (!r) return;
  free(r->ring);
  free(r->up);
  free(r->down);
  free(r);
}

int nt_topo_rings_nranks(const nt_topo_rings *r) {
  return r->nranks;
}
int nt_topo_rings_nchannels(const nt_topo_rings *r) {
  return r->nchannels;
}

const int *nt_topo_rings_ring(const nt_topo_rings *r, int c) {
  return c >= 0 && c < r->nchannels ? r->ring + (size_t)c * (size_t)r->nranks : NULL;
}

bool nt_topo_rings_tree(const nt_topo_rings *r, int c, int rank, int *up, int down[3]) {
  if (c < 0 || c >= r->nchannels || rank < 0 || rank >= r->nranks) return false;
  size_t i = (size_t)c * (size_t)r->nranks + (size_t)rank;
  *up = r->up[i];
  for (int k = 0; k < 3; k++) down[k] = r->down[i * 3 + (size_t)k];
  return true;
}

/* The search's graphs over node-major ranks: node n holds ranks n*G ..
 * n*G+G-1. */
static int connect_all(nt_topo_graphs *g, const nt_topo *t, char *err, size_t errlen) {
  int G = g->ngpus, N = g->nodes, R = g->nranks;
  const topo_graph *ring = &g->graph[0], *tree = &g->graph[1];
  int *node_ranks = malloc((size_t)R * sizeof *node_ranks);
  int *local = malloc((size_t)(ring->nchannels + tree->nchannels) * (size_t)G * sizeof *local);
  if (!node_ranks || !local) {
    free(node_ranks), free(local);
    return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  }
  for (int r = 0; r < R; r++) node_ranks[r] = r;
  int *ring_local = local, *tree_local = local + ring->nchannels * G;
  for (int c = 0; c < ring->nchannels; c++)
    for (int i = 0; i < G; i++) ring_local[c * G + i] = g->local_of_gpu[ring->intra[c * G + i]];
  for (int c = 0; c < tree->nchannels; c++)
    for (int i = 0; i < G; i++) tree_local[c * G + i] = g->local_of_gpu[tree->intra[c * G + i]];
  int sm = t->nodes[t->gpus[0]].sm;
  for (int i = 1; i < G; i++)
    if (t->nodes[t->gpus[i]].sm < sm) sm = t->nodes[t->gpus[i]].sm;
  nt_topo_layout l = {.nnodes = N,
                      .nlocal = G,
                      .node_ranks = node_ranks,
                      .ring_channels = ring->nchannels,
                      .tree_channels = tree->nchannels,
                      .ring_local = ring_local,
                      .tree_local = tree_local,
                      .ring_cross_nic = ring->cross_nic,
                      .tree_pattern = tree->pattern,
                      .ring_bw_intra = ring->bw_intra,
                      .min_sm = sm,
                      .env = &t->env};
  char why[200];
  g->conn = nt_topo_connect(&l, why, sizeof why);
  free(node_ranks);
  free(local);
  if (!g->conn) return snprintf(err, errlen, "%s: %s", t->name, why), -1;
  return 0;
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
  if (connect_all(g, t, err, errlen) < 0) goto fail;
  free(s);
  return g;
fail:
  free(s);
  nt_topo_graphs_free(g);
  return NULL;
}

void nt_topo_graphs_free(nt_topo_graphs *g) {
  if (!g) return;
  nt_topo_rings_free(g->conn);
  free(g);
}

int nt_topo_graphs_nodes(const nt_topo_graphs *g) {
  return g->nodes;
}
int nt_topo_graphs_nranks(const nt_topo_graphs *g) {
  return g->nranks;
}
int nt_topo_graphs_nchannels(const nt_topo_graphs *g) {
  return g->conn->nchannels;
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
  return nt_topo_rings_ring(g->conn, c);
}

bool nt_topo_graphs_tree(const nt_topo_graphs *g, int c, int rank, int *up, int down[3]) {
  return nt_topo_rings_tree(g->conn, c, rank, up, down);
}

int nt_topo_graphs_channel_local(const nt_topo_graphs *g, int which, int c, int k) {
  int gpu = nt_topo_graphs_channel_gpu(g, which, c, k);
  return gpu < 0 ? -1 : g->local_of_gpu[gpu];
}

int nt_topo_graphs_rank_gpu(const nt_topo_graphs *g, int rank) {
  if (rank < 0 || rank >= g->nranks) return -1;
  return g->gpu_of_local[rank % g->ngpus];
}

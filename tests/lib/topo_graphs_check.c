/* See topo_graphs_check.h. */
#include "topo_graphs_check.h"

#include <stdio.h>
#include <stdlib.h>

int tg_dev_of(const nt_topo *t, int endpoint) {
  nt_topo_endpoint e;
  if (endpoint < 0) return -1;
  nt_topo_endpoint_at(t, endpoint, &e);
  return e.dev;
}

bool tg_channel_is(const nt_topo *t, const nt_topo_graphs *g, int which, int c, const int *devs,
                   int n) {
  for (int k = 0; k < n; k++)
    if (tg_dev_of(t, nt_topo_graphs_channel_gpu(g, which, c, k)) != devs[k]) return false;
  return nt_topo_graphs_channel_gpu(g, which, c, n) == -1;
}

int tg_path_type(const nt_topo *t, int i, int j) {
  nt_topo_pair p;
  return nt_topo_pair_at(t, i, j, &p) ? p.type : NT_PATH_DIS;
}

int tg_check_invariants(const nt_topo *t, const nt_topo_graphs *g, const char *what) {
  int bad = 0, ngpus = nt_topo_ngpus(t), nodes = nt_topo_graphs_nodes(g);
  int nranks = nt_topo_graphs_nranks(g), nch = nt_topo_graphs_nchannels(g);
#define INV(cond)                                                                                  \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if (bad++ < 5) fprintf(stderr, "    %s: %s (line %d)\n", what, #cond, __LINE__);             \
    }                                                                                              \
  } while (0)
  INV(nranks == nodes * ngpus);
  INV(nch >= 1 && nch <= 64);
  for (int which = 0; which < 2; which++) {
    nt_topo_graph_info gi;
    INV(nt_topo_graphs_graph(g, which, &gi));
    INV(gi.nchannels >= 1 && gi.ngpus == ngpus);
    INV(gi.bw_intra > 0 && gi.type_intra < NT_PATH_DIS);
    for (int c = 0; c < gi.nchannels; c++) {
      int seen[64] = {0}, order[64];
      for (int k = 0; k < ngpus; k++) {
        order[k] = nt_topo_graphs_channel_gpu(g, which, c, k);
        INV(order[k] >= 0 && order[k] < ngpus);
        if (order[k] >= 0 && order[k] < ngpus) seen[order[k]]++;
      }
      for (int k = 0; k < ngpus; k++) INV(seen[k] == 1); /* every GPU exactly once */
      if (gi.bw_intra < 0.2) continue;                   /* NCCL's fallback: any order, 0.1 GB/s */
      /* every hop a path the graph's type allows, never one NCCL forbids;
       * a ring inside one node closes on its first GPU */
      int hops = which == 0 && nodes == 1 ? ngpus : ngpus - 1;
      for (int k = 0; k < hops && ngpus > 1; k++) {
        int ty = tg_path_type(t, order[k], order[(k + 1) % ngpus]);
        INV(ty < NT_PATH_DIS && ty <= gi.type_intra);
      }
      int in = nt_topo_graphs_channel_net(g, which, c, 0),
          out = nt_topo_graphs_channel_net(g, which, c, 1);
      if (nodes == 1) {
        INV(in == -1 && out == -1);
      } else {
        INV(in >= ngpus && out >= ngpus);
        INV(tg_path_type(t, in, order[0]) <= gi.type_inter);
        /* the ring leaves from its last GPU, trees from their first */
        int last = which == 0 ? order[ngpus - 1] : order[0];
        if (gi.pattern != NT_PATTERN_BALANCED_TREE)
          INV(tg_path_type(t, last, out) <= gi.type_inter);
      }
    }
  }
  for (int c = 0; c < nch; c++) {
    const int *ring = nt_topo_graphs_ring(g, c);
    INV(ring != NULL);
    if (!ring) continue;
    int *seen = calloc((size_t)nranks, sizeof *seen);
    int roots = 0;
    for (int i = 0; i < nranks; i++) {
      INV(ring[i] >= 0 && ring[i] < nranks);
      if (ring[i] >= 0 && ring[i] < nranks) seen[ring[i]]++;
    }
    for (int r = 0; r < nranks; r++) INV(seen[r] == 1); /* every rank once per ring */
    for (int r = 0; r < nranks; r++) {
      int up, down[3];
      INV(nt_topo_graphs_tree(g, c, r, &up, down));
      if (up == -1) roots++;
      if (up >= 0) { /* the parent lists r among its children */
        int pu, pd[3];
        INV(nt_topo_graphs_tree(g, c, up, &pu, pd));
        INV(pd[0] == r || pd[1] == r || pd[2] == r);
      }
      for (int k = 0; k < 3; k++)
        if (down[k] >= 0) {
          int cu, cd[3];
          INV(nt_topo_graphs_tree(g, c, down[k], &cu, cd) && cu == r);
        }
      int x = r, steps = 0; /* up leads to the root: no cycle */
      while (x >= 0 && steps <= nranks) {
        int xd[3];
        nt_topo_graphs_tree(g, c, x, &x, xd);
        steps++;
      }
      INV(steps <= nranks);
    }
    INV(roots == 1);
    free(seen);
  }
#undef INV
  return bad;
}

int tg_check_model(const nt_topo *t, const nt_topo_graphs *g, const char *what) {
  nt_tune_model m;
  char err[512];
  if (nt_topo_graphs_tune(t, g, NULL, &m, err, sizeof err) != 0) {
    fprintf(stderr, "    %s: no model: %s\n", what, err);
    return 1;
  }
  int bad = 0;
  if (m.nranks != nt_topo_graphs_nranks(g) || m.nnodes != nt_topo_graphs_nodes(g)) bad++;
  if (m.nranks == 1) return bad;
  if (m.bandwidth[NT_TUNE_ALLREDUCE][NT_TUNE_RING][NT_TUNE_SIMPLE] <= 0) bad++;
  for (int i = 0; i < NT_TUNE_NSIZES; i++) {
    nt_tune_pick pick;
    if (nt_tune_choose(&m, NT_TUNE_ALLREDUCE, nt_tune_size(i), &pick) != 0 || pick.time_us <= 0)
      bad++;
  }
  if (bad) fprintf(stderr, "    %s: model broken (%d)\n", what, bad);
  return bad;
}

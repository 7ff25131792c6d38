/* NCCL 2.28's path search: for every CPU, GPU, NET and NVSwitch X, a
 * breadth-first search backwards from X gives each node N its path N->X.
 * A node's path is replaced only by one with strictly more bottleneck
 * bandwidth and no more hops; the type follows from the winning route. A GPU
 * relays only one NVLink hop towards X (NVB), unless NCCL_NVB_DISABLE. */
#include <string.h>

#include "internal.h"

topo_path *topo_path_of(nt_topo *t, int src, int dst) {
  return &t->paths[(size_t)src * (size_t)t->nnodes + (size_t)dst];
}

static int max_type(int a, int b) {
  return a > b ? a : b;
}

static void search(nt_topo *t, int base) {
  int nn = t->nnodes;
  for (int i = 0; i < nn; i++) {
    topo_path *p = topo_path_of(t, i, base);
    p->type = NT_PATH_DIS;
    p->bw = 0;
    p->count = 0;
  }
  topo_path *bp = topo_path_of(t, base, base);
  bp->type = NT_PATH_LOC;
  bp->bw = LOC_BW;
  bp->count = 0;
  bp->nodes[0] = (int16_t)base;
  int frontier[TOPO_MAX_NODES], next[TOPO_MAX_NODES], nf = 1, nx;
  frontier[0] = base;
  while (nf > 0) {
    nx = 0;
    for (int f = 0; f < nf; f++) {
      int cur = frontier[f];
      topo_node *node = &t->nodes[cur];
      topo_path *path = topo_path_of(t, cur, base);
      for (int l = 0; l < node->nlinks; l++) {
        topo_link *link = &node->links[l];
        int rem = link->remote;
        topo_node *rn = &t->nodes[rem];
        topo_path *rp = topo_path_of(t, rem, base);
        double bw = path->bw < link->bw ? path->bw : link->bw;
        /* A GPU relays only over NVLink to another GPU, one hop from X. */
        if (cur != base && node->type == NT_NODE_GPU &&
            (t->env.nvb_disable == 1 || link->type != LINK_NVL || rn->type != NT_NODE_GPU ||
             path->count > 1))
          continue;
        if (!((rp->bw == 0 || rp->count > path->count) && rp->bw < bw)) continue;
        if (path->count + 1 > NT_TOPO_MAX_HOPS) continue;
        rp->nodes[0] = (int16_t)rem;
        memcpy(rp->nodes + 1, path->nodes, (size_t)(path->count + 1) * sizeof path->nodes[0]);
        rp->count = path->count + 1;
        rp->bw = bw;
        int type = link->type == LINK_NET ? LINK_LOC : link->type;
        if (node->type == NT_NODE_PCI && rn->type == NT_NODE_PCI) type = NT_PATH_PXB;
        if (link->type == LINK_PCI && (node->type == NT_NODE_CPU || rn->type == NT_NODE_CPU))
          type = NT_PATH_PHB;
        if (node->type == NT_NODE_GPU && path->type == NT_PATH_NVL && type == NT_PATH_NVL &&
            rp->count > 1)
          type = NT_PATH_NVB;
        rp->type = max_type(path->type, type);
        bool queued = false;
        for (int k = 0; k < nx && !queued; k++) queued = next[k] == rem;
        if (!queued) next[nx++] = rem;
      }
    }
    memcpy(frontier, next, (size_t)nx * sizeof next[0]);
    nf = nx;
  }
}

void topo_compute_paths(nt_topo *t) {
  static const int order[] = {NT_NODE_CPU, NT_NODE_GPU, NT_NODE_NET, NT_NODE_NVS};
  for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
    for (int i = 0; i < t->nnodes; i++)
      if (t->nodes[i].type == order[o]) search(t, i);
}

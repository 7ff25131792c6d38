/* NCCL's path search (ncclTopoSetPaths): for every CPU, GPU and NET X, a
 * breadth-first search backwards from X gives each node N its path N->X.
 *   2.28: a path is replaced only by one with strictly more bottleneck
 *         bandwidth and no more hops; its type follows from the winning
 *         route. A GPU relays only one NVLink hop towards X (NVB).
 *   2.30: a lower type wins, then more bandwidth, then fewer hops; GPUs are
 *         leaves under DEV nodes and a DEV relays over NVLink (NVB).
 * Paths are lists of hop records shared between paths, the way NCCL copies
 * a neighbour's path behind the new first hop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static topo_path dis_path = {0, 0, -1, NT_PATH_DIS};

topo_path *topo_path_of(nt_topo *t, int src, int dst) {
  int slot = t->tslot[dst];
  if (slot < 0) { /* never asked by our callers; harmless if it were */
    dis_path = (topo_path){0, 0, -1, NT_PATH_DIS};
    return &dis_path;
  }
  return &t->paths[(size_t)src * (size_t)t->ntargets + (size_t)slot];
}

const topo_path *topo_cpath(const nt_topo *t, int src, int dst) {
  return topo_path_of((nt_topo *)t, src, dst);
}

static int new_rec(nt_topo *t, int node, int link, int next) {
  if (t->nrec >= t->reccap) {
    int cap = t->reccap ? 2 * t->reccap : 4096;
    if (cap > TOPO_MAX_RECORDS) cap = TOPO_MAX_RECORDS;
    topo_rec *r = cap > t->nrec ? realloc(t->rec, (size_t)cap * sizeof *r) : NULL;
    if (!r) {
      t->rec_full = true;
      return -2;
    }
    t->rec = r;
    t->reccap = cap;
  }
  t->rec[t->nrec] = (topo_rec){next, (int16_t)node, (uint8_t)link};
  return t->nrec++;
}

int topo_path_node(const nt_topo *t, int src, const topo_path *p, int k) {
  int node = src, r = p->head;
  for (int i = 0; i < k && r >= 0; i++) {
    node = t->nodes[t->rec[r].node].links[t->rec[r].link].remote;
    r = t->rec[r].next;
  }
  return node;
}

int topo_merge_type(int a, int b) {
  int hi = a > b ? a : b, lo = a < b ? a : b;
  return hi == NT_PATH_PHB && lo == NT_PATH_C2C ? NT_PATH_P2C : hi;
}

bool topo_concat(nt_topo *t, topo_path *dst, topo_path a, topo_path b, int type) {
  int first = t->nrec, head = b.head;
  if (a.count > 0) {
    int r = a.head;
    for (int i = 0; i < a.count; i++, r = t->rec[r].next) {
      int next = i + 1 < a.count ? first + i + 1 : b.head;
      if (new_rec(t, t->rec[r].node, t->rec[r].link, next) < 0) return false;
    }
    head = first;
  }
  dst->head = head;
  dst->count = a.count + b.count;
  dst->bw = a.bw < b.bw ? a.bw : b.bw;
  dst->type = (int8_t)type;
  return true;
}

/* The type a hop adds (the same rules in both versions, but NVB). */
static int hop_type(const nt_topo *t, int node, int rem, const topo_link *l) {
  int type = l->type == NT_LINK_NET ? NT_PATH_LOC : l->type;
  if (t->nodes[node].type == NT_NODE_PCI && t->nodes[rem].type == NT_NODE_PCI) type = NT_PATH_PXB;
  if (l->type == NT_LINK_PCI &&
      (t->nodes[node].type == NT_NODE_CPU || t->nodes[rem].type == NT_NODE_CPU))
    type = NT_PATH_PHB;
  return type;
}

static int search(nt_topo *t, int base, int *frontier, int *next, int *queued, int stamp0,
                  char *err, size_t errlen) {
  bool v230 = t->env.version == NT_NCCL_230;
  int max_len = t->nodes[base].type == NT_NODE_GPU ? 2 : 1;
  int base_dev = v230 && t->nodes[base].type == NT_NODE_GPU ? t->nodes[base].devnode : base;
  for (int i = 0; i < t->nnodes; i++) *topo_path_of(t, i, base) = dis_path;
  *topo_path_of(t, base, base) = (topo_path){LOC_BW, 0, -1, NT_PATH_LOC};
  int nf = 1, stamp = stamp0;
  frontier[0] = base;
  while (nf > 0) {
    int nx = 0;
    stamp++;
    for (int f = 0; f < nf; f++) {
      int node = frontier[f];
      const topo_node *n = &t->nodes[node];
      for (int l = 0; l < n->nlinks; l++) {
        const topo_link *link = &n->links[l];
        int rem = link->remote;
        topo_path path = *topo_path_of(t, node, base), *rp = topo_path_of(t, rem, base);
        float bw = path.bw < link->bw ? path.bw : link->bw;
        int type = hop_type(t, node, rem, link), rtype = t->nodes[rem].type;
        if (!v230) {
          if (node != base && n->type == NT_NODE_GPU &&
              (t->env.nvb_disable || link->type != NT_LINK_NVL || rtype != NT_NODE_GPU ||
               path.count > 1))
            continue;
          if (!((rp->bw == 0 || rp->count > path.count) && rp->bw < bw)) continue;
          if (n->type == NT_NODE_GPU && path.type == NT_PATH_NVL && type == NT_PATH_NVL &&
              path.count + 1 > 1)
            type = NT_PATH_NVB;
          type = type > path.type ? type : path.type;
        } else {
          if (node != base_dev && n->type == NT_NODE_DEV &&
              (link->type != NT_LINK_LOC || rtype != NT_NODE_GPU) &&
              (t->env.nvb_disable || link->type != NT_LINK_NVL || rtype != NT_NODE_DEV ||
               path.count > max_len))
            continue;
          if (n->type == NT_NODE_DEV && path.type == NT_PATH_NVL && type == NT_PATH_NVL &&
              path.count == max_len)
            type = NT_PATH_NVB;
          type = type > path.type ? type : path.type;
          if (!(type < rp->type || (type == rp->type && rp->bw < bw) ||
                (type == rp->type && rp->bw == bw && rp->count > path.count + 1)))
            continue;
        }
        const topo_node *r = &t->nodes[rem];
        int back = 0;
        while (back < r->nlinks &&
               !(r->links[back].remote == node && r->links[back].type == link->type))
          back++;
        if (back == r->nlinks)
          return snprintf(err, errlen,
                          "%s: the %s link from %s to %s has no link back: NCCL fails "
                          "(\"Failed to find reverse path\")",
                          t->name, nt_link_name(link->type), n->label, r->label),
                 -1;
        int rec = new_rec(t, rem, back, path.head);
        if (rec < 0) return snprintf(err, errlen, "%s: topology too complex", t->name), -1;
        *rp = (topo_path){bw, path.count + 1, rec, (int8_t)type};
        if (queued[rem] != stamp) {
          queued[rem] = stamp;
          next[nx++] = rem;
        }
      }
    }
    memcpy(frontier, next, (size_t)nx * sizeof *next);
    nf = nx;
  }
  return stamp;
}

int topo_compute_paths(nt_topo *t, char *err, size_t errlen) {
  int nn = t->nnodes;
  free(t->tslot);
  free(t->paths);
  t->paths = NULL;
  t->tslot = malloc((size_t)(nn > 0 ? nn : 1) * sizeof *t->tslot);
  if (!t->tslot) return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  t->ntargets = 0;
  for (int i = 0; i < nn; i++) {
    int ty = t->nodes[i].type;
    t->tslot[i] =
        !t->nodes[i].removed && (ty == NT_NODE_CPU || ty == NT_NODE_GPU || ty == NT_NODE_NET)
            ? t->ntargets++
            : -1;
  }
  t->nrec = 0;
  t->rec_full = false;
  t->paths = malloc((size_t)(nn > 0 ? nn : 1) * (size_t)(t->ntargets > 0 ? t->ntargets : 1) *
                    sizeof *t->paths);
  int *buf = calloc(3 * (size_t)(nn > 0 ? nn : 1), sizeof *buf);
  if (!t->paths || !buf) {
    free(buf);
    return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  }
  int stamp = 0;
  for (int i = 0; i < nn && stamp >= 0; i++)
    if (t->tslot[i] >= 0) stamp = search(t, i, buf, buf + nn, buf + 2 * nn, stamp, err, errlen);
  free(buf);
  return stamp < 0 ? -1 : 0;
}

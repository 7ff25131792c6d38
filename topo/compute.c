/* nt_topo_compute: paths, then NCCL's rewrites in NCCL's order (P2P CPU
 * detours, P2C, PXN and GDR detours), then the pair table the outputs read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Merging two path types through a CPU: the larger, except that a C2C leg
 * and a PHB leg make P2C (Grace: GPU -C2C- CPU -PCIe- device). */
static int merge_type(int a, int b) {
  int hi = a > b ? a : b, lo = a < b ? a : b;
  return hi == NT_PATH_PHB && lo == NT_PATH_C2C ? NT_PATH_P2C : hi;
}

/* dst = a followed by b (a ends where b starts). */
static void concat(topo_path *dst, const topo_path *a, const topo_path *b, int type) {
  topo_path r;
  r.count = a->count + b->count;
  if (r.count > NT_TOPO_MAX_HOPS) return; /* cannot happen with our node limits */
  memcpy(r.nodes, a->nodes, (size_t)(a->count + 1) * sizeof r.nodes[0]);
  memcpy(r.nodes + a->count + 1, b->nodes + 1, (size_t)b->count * sizeof r.nodes[0]);
  r.bw = a->bw < b->bw ? a->bw : b->bw;
  r.type = type;
  *dst = r;
}

static void detour_via_cpu(nt_topo *t, int src, int dst, int cpu) {
  if (cpu < 0) return;
  topo_path *a = topo_path_of(t, src, cpu), *b = topo_path_of(t, cpu, dst);
  if (a->bw <= 0 || b->bw <= 0) return;
  concat(topo_path_of(t, src, dst), a, b, merge_type(a->type, b->type));
}

/* Devices of `type` local to node a: best bandwidth, then lowest type. */
static int local_of(nt_topo *t, int a, const int *set, int n, int *out, bool from_a) {
  double best_bw = 0;
  int best_type = NT_PATH_DIS, k = 0;
  for (int i = 0; i < n; i++) {
    topo_path *p = from_a ? topo_path_of(t, a, set[i]) : topo_path_of(t, set[i], a);
    if (p->bw > best_bw || (p->bw == best_bw && p->type < best_type))
      best_bw = p->bw, best_type = p->type;
  }
  for (int i = 0; i < n; i++) {
    topo_path *p = from_a ? topo_path_of(t, a, set[i]) : topo_path_of(t, set[i], a);
    if (p->bw == best_bw && p->type == best_type && best_bw > 0) out[k++] = set[i];
  }
  return k;
}

static int bit_reverse(int v, int bits) {
  int r = 0;
  for (int i = 0; i < bits; i++) r |= ((v >> i) & 1) << (bits - 1 - i);
  return r;
}

/* The NET NCCL picks for a GPU on a channel (ncclTopoGetLocalNet, AUTO). */
static int local_net(nt_topo *t, int gpu, int channel) {
  int nets[TOPO_MAX_NODES], gpus[TOPO_MAX_NODES];
  int l = local_of(t, gpu, t->nets, t->nnets, nets, true);
  if (l == 0) return -1;
  int k = t->nodes[gpu].dev;
  if ((l & (l - 1)) == 0) {
    int bits = 0;
    while ((1 << bits) < l) bits++;
    k = bit_reverse(k % l, bits);
  }
  int ng = local_of(t, nets[0], t->gpus, t->ngpus, gpus, true);
  int per_gpu = ng > 0 ? (l + ng - 1) / ng : 1;
  return nets[(k + channel % per_gpu) % l];
}

/* A NIC's local GPU: the first GPU (channels in order, GPUs in order) among
 * those local to the NIC whose own NIC choice is this NIC. */
static int nic_local_gpu(nt_topo *t, int net) {
  int gpus[TOPO_MAX_NODES];
  int n = local_of(t, net, t->gpus, t->ngpus, gpus, true);
  for (int c = 0; c < 64; c++)
    for (int i = 0; i < n; i++)
      if (local_net(t, gpus[i], c) == net) return gpus[i];
  return -1;
}

static void post_process(nt_topo *t, bool *p2p, bool *p2p_read, int *via) {
  int ng = t->ngpus;
  /* 1. P2P off: through the CPU local to the destination. */
  for (int i = 0; i < ng; i++)
    for (int j = 0; j < ng; j++) {
      int a = t->gpus[i], b = t->gpus[j];
      p2p[i * ng + j] = i == j || topo_check_p2p(t, a, b, &p2p_read[i * ng + j], &via[i * ng + j]);
    }
  for (int i = 0; i < ng; i++)
    for (int j = 0; j < ng; j++)
      if (!p2p[i * ng + j])
        detour_via_cpu(t, t->gpus[i], t->gpus[j], topo_local_cpu(t, t->gpus[j]));
  /* 2. P2C: a NIC behind the CPU of a C2C-attached GPU. */
  for (int i = 0; i < ng; i++) {
    int g = t->gpus[i], cpu = topo_local_cpu(t, g);
    if (cpu < 0 || topo_path_of(t, g, cpu)->type != NT_PATH_C2C) continue;
    for (int j = 0; j < t->nnets; j++) {
      int n = t->nets[j];
      if (topo_path_of(t, n, cpu)->type != NT_PATH_PHB) continue;
      topo_path *gn = topo_path_of(t, g, n), *ngp = topo_path_of(t, n, g);
      if (gn->type > NT_PATH_P2C) gn->type = NT_PATH_P2C;
      if (ngp->type > NT_PATH_P2C) ngp->type = NT_PATH_P2C;
    }
  }
  /* 3. PXN through the NIC's local GPU, then GDR-off detours. */
  for (int j = 0; j < t->nnets; j++) {
    int n = t->nets[j], relay = nic_local_gpu(t, n);
    for (int i = 0; i < ng; i++) {
      int g = t->gpus[i];
      topo_path *gn = topo_path_of(t, g, n);
      if (!t->env.pxn_disable && relay >= 0 && relay != g) {
        topo_path *rn = topo_path_of(t, relay, n), *gr = topo_path_of(t, g, relay);
        int max_relay = t->env.pxn_c2c ? NT_PATH_P2C : NT_PATH_PXB;
        if (rn->type <= max_relay && gr->type <= NT_PATH_NVL &&
            (rn->bw > gn->bw || gn->type > NT_PATH_PXN))
          concat(gn, gr, rn, NT_PATH_PXN);
      }
      if (gn->type < NT_PATH_PHB && !topo_check_gdr(t, g, n, 0, NULL)) {
        int cpu = topo_local_cpu(t, g);
        detour_via_cpu(t, n, g, cpu);
        detour_via_cpu(t, g, n, cpu);
      }
    }
  }
}

static void fill_pair(nt_topo *t, nt_topo_pair *o, const topo_path *p) {
  o->type = p->type;
  o->bw = p->bw;
  o->hops = p->count;
  o->nhops_nodes = p->count + 1;
  for (int k = 0; k <= p->count; k++) o->route[k] = p->nodes[k];
  o->bottleneck = -1;
  double worst = 1e300;
  for (int k = 0; k < p->count; k++) {
    nt_topo_pair tmp = *o;
    double bw = nt_topo_hop_bw(t, &tmp, k);
    if (bw < worst) worst = bw, o->bottleneck = k;
  }
}

int nt_topo_compute(nt_topo *t, const nt_topo_env *env, char *err, size_t errlen) {
  size_t nn = (size_t)t->nnodes, ne = (size_t)(t->ngpus + t->nnets);
  if (!t->paths) t->paths = calloc(nn * nn, sizeof *t->paths);
  if (!t->pairs) t->pairs = calloc(ne > 0 ? ne * ne : 1, sizeof *t->pairs);
  bool *p2p = calloc((size_t)t->ngpus * t->ngpus + 1, sizeof *p2p);
  bool *rd = calloc((size_t)t->ngpus * t->ngpus + 1, sizeof *rd);
  int *via = calloc((size_t)t->ngpus * t->ngpus + 1, sizeof *via);
  if (!t->paths || !t->pairs || !p2p || !rd || !via) {
    free(p2p), free(rd), free(via);
    return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  }
  t->env = *env;
  topo_compute_paths(t);
  post_process(t, p2p, rd, via);
  int ng = t->ngpus;
  for (size_t i = 0; i < ne; i++)
    for (size_t j = 0; j < ne; j++) {
      int a = i < (size_t)ng ? t->gpus[i] : t->nets[i - ng];
      int b = j < (size_t)ng ? t->gpus[j] : t->nets[j - ng];
      nt_topo_pair *o = &t->pairs[i * ne + j];
      memset(o, 0, sizeof *o);
      o->via_gpu = -1;
      fill_pair(t, o, topo_path_of(t, a, b));
      if (i < (size_t)ng && j < (size_t)ng) {
        o->p2p = p2p[i * ng + j];
        o->p2p_read = rd[i * ng + j];
        for (int g = 0; via[i * ng + j] >= 0 && g < ng; g++)
          if (t->gpus[g] == via[i * ng + j]) o->via_gpu = g;
      } else if ((i < (size_t)ng) != (j < (size_t)ng)) {
        int gpu = i < (size_t)ng ? a : b, net = i < (size_t)ng ? b : a;
        o->gdr = topo_check_gdr(t, gpu, net, 0, &o->gdr_pci_mode);
        o->gdr_read = topo_check_gdr(t, gpu, net, 1, NULL);
        topo_path *gn = topo_path_of(t, gpu, net);
        o->pxn = gn->type == NT_PATH_PXN;
        for (int k = 1; o->pxn && k < gn->count && o->via_gpu < 0; k++)
          for (int g = 0; g < ng; g++)
            if (t->gpus[g] == gn->nodes[k]) o->via_gpu = g;
      }
    }
  free(p2p), free(rd), free(via);
  t->computed = true;
  return 0;
}

double nt_topo_hop_bw(const nt_topo *t, const nt_topo_pair *p, int k) {
  if (k < 0 || k >= p->hops) return 0;
  const topo_node *n = &t->nodes[p->route[k]];
  double bw = 0;
  for (int l = 0; l < n->nlinks; l++)
    if (n->links[l].remote == p->route[k + 1] && n->links[l].bw > bw) bw = n->links[l].bw;
  return bw;
}

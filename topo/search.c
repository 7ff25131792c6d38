/* NCCL's channel search (src/graph/search.cc, ncclTopoCompute and the
 * recursion under it), for one node's topology: channel after channel, an
 * order of the node's GPUs (and, across nodes, a NIC in and a NIC out) whose
 * every hop still has the bandwidth asked for, the bandwidth being
 * subtracted from the links as the channel is built and given back when the
 * search backtracks. The search is bounded by NCCL's step counters (not a
 * clock), so it is deterministic and finds what NCCL finds, timeouts
 * included. Then NCCL's outer loop: try the same channels, then different
 * ones, a simpler tree, wider path types, crossing NICs, lower speeds; then
 * duplicate the channels and try higher speeds.
 *
 * 2.30.7 differs in: maximum and total bandwidth per physical GPU (DEV), the
 * PCI bandwidth and the pre-Ampere reverse-traffic rule read on the DEV,
 * maxTypeInter forced to SYS below sm 90, faster speed steps for sm 100, and
 * the fallback graph when nothing is found. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#define GLOBAL_TIMEOUT       (1LL << 19)
#define TIMEOUT              (1 << 14)
#define TIMEOUT_TREE         (1 << 14)
#define TIMEOUT_SAMECHANNELS (1 << 8)
#define FORCED_ORDER_PCI     1
#define FORCED_ORDER_REPLAY  2

static bool v230(const topo_search *s) {
  return s->t->env.version == NT_NCCL_230;
}

static topo_link *rec_link(nt_topo *t, int r) {
  return &t->nodes[t->rec[r].node].links[t->rec[r].link];
}

/* NCCL rounds after every subtraction so that the floats come back. */
static float sub_round(float a, float b) {
  return roundf((a - b) * 1000) / 1000;
}

static topo_link *reverse_link(nt_topo *t, int from, int to, int type) {
  topo_node *n = &t->nodes[to];
  for (int l = 0; l < n->nlinks; l++)
    if (n->links[l].remote == from && n->links[l].type == type) return &n->links[l];
  return NULL;
}

/* followPath: takes bw from the first max_steps hops of p (gives it back
 * when bw < 0); returns how many hops had enough. A hop through an Intel
 * CPU's root complex costs 6/5 of the PCI bandwidth; traffic into a
 * pre-Ampere GPU from a NIC costs an eighth more on the way back, traffic to
 * a POWER CPU over NVLink as much again. */
static int follow_links(topo_search *s, const topo_path *p, int start, int max_steps, float bw) {
  nt_topo *t = s->t;
  float pci_bw = bw;
  int r = p->head;
  for (int k = 0; k < p->count && r >= 0; k++, r = t->rec[r].next) {
    const topo_node *n = &t->nodes[rec_link(t, r)->remote];
    if (n->type == NT_NODE_CPU && p->type == NT_PATH_PHB && t->nodes[start].type == NT_NODE_GPU &&
        n->arch == ARCH_X86 && n->vendor == VENDOR_INTEL)
      pci_bw = bw * 6 / 5;
  }
  int node = start, gpu_type = v230(s) ? NT_NODE_DEV : NT_NODE_GPU;
  r = p->head;
  for (int k = 0; k < max_steps && r >= 0; k++, r = t->rec[r].next) {
    topo_link *l = rec_link(t, r), *rev = NULL;
    const topo_node *rn = &t->nodes[l->remote];
    float fw = l->type == NT_LINK_PCI ? pci_bw : bw, rev_bw = 0;
    if (rn->type == gpu_type && rn->sm < 80 && t->nodes[start].type != NT_NODE_GPU) {
      rev = reverse_link(t, node, l->remote, l->type);
      rev_bw += fw / 8;
    }
    if (rn->type == NT_NODE_CPU && rn->arch == ARCH_POWER && l->type == NT_LINK_NVL) {
      rev = reverse_link(t, node, l->remote, l->type);
      rev_bw += fw;
    }
    if (rev_bw != 0 && !rev) {
      s->failed = true; /* NCCL: "Could not find rev link"; paths.c already refuses */
      return k;
    }
    if (l->bw < fw || (rev_bw != 0 && rev->bw < rev_bw)) return k;
    l->bw = sub_round(l->bw, fw);
    if (rev_bw != 0) rev->bw = sub_round(rev->bw, rev_bw);
    node = l->remote;
  }
  return max_steps;
}

static bool is_tree(int pattern) {
  return pattern == PATTERN_BALANCED_TREE || pattern == PATTERN_TREE ||
         pattern == PATTERN_SPLIT_TREE;
}

/* ncclTopoFollowPath from node n1 to node n2 (n1 < 0: nothing to follow).
 * mult 1 takes the graph's bandwidth if every hop has it and the path is
 * no worse than the graph's type (trees also check the way back); -1 gives
 * it back. */
static bool follow(topo_search *s, topo_graph *g, int n1, int n2, float mult) {
  if (n1 < 0) return true;
  nt_topo *t = s->t;
  const topo_path *p = topo_cpath(t, n1, n2), *rev = topo_cpath(t, n2, n1);
  int ty1 = t->nodes[n1].type, ty2 = t->nodes[n2].type;
  bool intra =
      (ty1 == NT_NODE_GPU || ty1 == NT_NODE_NVS) && (ty2 == NT_NODE_GPU || ty2 == NT_NODE_NVS);
  float bw = intra ? g->bw_intra : g->bw_inter;
  int type = intra ? g->type_intra : g->type_inter;
  if (p->type >= NT_PATH_DIS) return false;
  if (mult == 1 && p->type > type) return false;
  if (mult == 1 && is_tree(g->pattern) && rev->type > type) return false;
  bw *= mult;
  int step = follow_links(s, p, n1, p->count, bw);
  if (step < p->count) {
    follow_links(s, p, n1, step, -bw);
    return false;
  }
  g->nhops = (int)(g->nhops + mult * p->count);
  return true;
}

/* gpuPciBw: the narrower direction of the GPU's (2.30: its DEV's) PCI
 * link, truncated to an integer as NCCL does; -1 without one. */
static int gpu_pci_bw(const topo_search *s, int gpu) {
  const nt_topo *t = s->t;
  int node = t->gpus[gpu];
  if (v230(s) && t->nodes[node].devnode >= 0) node = t->nodes[node].devnode;
  const topo_node *n = &t->nodes[node];
  for (int l = 0; l < n->nlinks; l++) {
    if (n->links[l].type != NT_LINK_PCI) continue;
    const topo_node *pci = &t->nodes[n->links[l].remote];
    for (int k = 0; k < pci->nlinks; k++)
      if (pci->links[k].remote == node) return (int)fminf(n->links[l].bw, pci->links[k].bw);
  }
  return -1;
}

typedef struct {
  int g, start_index, intra_nhops, intra_bw, inter_nhops, inter_pci_bw, inter_bw;
} gpu_score;

static int cmp_score(const void *a, const void *b) {
  const gpu_score *s1 = a, *s2 = b;
  int d;
  if ((d = s2->inter_bw - s1->inter_bw)) return d;
  if ((d = s2->inter_pci_bw - s1->inter_pci_bw)) return d;
  if ((d = s1->inter_nhops - s2->inter_nhops)) return d;
  if ((d = s2->intra_bw - s1->intra_bw)) return d;
  if ((d = s1->intra_nhops - s2->intra_nhops)) return d;
  return s1->start_index - s2->start_index;
}

/* ncclTopoSearchNextGpuSort: the GPUs to try after gpu, best first: the
 * best bandwidth to the NIC the channel returns to (sort_net), then the
 * fewest hops, then the best bandwidth and fewest hops from gpu, then the
 * GPU index after gpu. sort_net -1 with every GPU alike intra-node goes in
 * reverse. Behind an NVSwitch, only the next and previous GPUs. */
static int next_gpus(topo_search *s, topo_graph *g, int gpu, uint8_t *next, int sort_net) {
  nt_topo *t = s->t;
  uint64_t flag = 1ULL << g->nchannels;
  int ngpus = t->ngpus, count = 0;
  int net = sort_net ? g->inter[g->nchannels * 2] : -1;
  gpu_score scores[TOPO_MAX_GPUS];
  for (int i = 1; i < ngpus; i++) {
    int n = (gpu + i) % ngpus;
    const topo_path *p = topo_cpath(t, t->gpus[gpu], t->gpus[n]);
    if (p->count == 0 || (s->used[n] & flag)) continue;
    gpu_score *sc = &scores[count++];
    memset(sc, 0, sizeof *sc);
    sc->g = n;
    sc->start_index = i;
    sc->intra_nhops = p->count;
    sc->intra_bw = (int)p->bw;
    if (net >= 0) {
      const topo_path *np = topo_cpath(t, t->nets[net], t->gpus[n]);
      sc->inter_nhops = np->count;
      sc->inter_pci_bw = gpu_pci_bw(s, n);
      sc->inter_bw = (int)np->bw;
    }
  }
  qsort(scores, (size_t)count, sizeof *scores, cmp_score);
  bool alike = true;
  for (int i = 1; i < count; i++)
    if (scores[i].intra_bw != scores[0].intra_bw || scores[i].intra_nhops != scores[0].intra_nhops)
      alike = false;
  for (int i = 0; i < count; i++)
    next[i] = (uint8_t)(sort_net == -1 && alike ? scores[count - 1 - i].g : scores[i].g);
  if (t->nvs < 0) return count;
  /* NVSwitches prefer few peers per GPU: neighbours only */
  int prev = (gpu - 1 + ngpus) % ngpus, nxt = (gpu + 1) % ngpus, first[2], nfirst;
  if (g->pattern == PATTERN_RING) {
    first[0] = nxt, first[1] = prev, nfirst = 2;
  } else if (g->pattern == PATTERN_SPLIT_TREE || g->pattern == PATTERN_BALANCED_TREE) {
    first[0] = prev, first[1] = nxt, nfirst = 2;
  } else {
    first[0] = nxt, nfirst = 1;
  }
  if (nxt == prev && nfirst == 2) nfirst = 1;
  int real = 0;
  for (int f = 0; f < nfirst; f++) {
    int i = 0;
    while (i < count && next[i] != first[f]) i++;
    if (i == count) continue;
    for (; i > 0; i--) next[i] = next[i - 1];
    next[0] = (uint8_t)first[f];
    real++;
  }
  return real;
}

static void search_rec(topo_search *s, topo_graph *g, topo_graph *save, int *time);
static void rec_gpu(topo_search *s, topo_graph *g, topo_graph *save, int gpu, int step,
                    int back_to_net, int back_to_first, int forced, int *time);

/* ncclTopoSearchTryGpu: reach GPU gpu from node `from` (-1: start there). */
static void try_gpu(topo_search *s, topo_graph *g, topo_graph *save, int step, int back_to_net,
                    int back_to_first, int forced, int *time, int from, int gpu) {
  nt_topo *t = s->t;
  uint64_t flag = 1ULL << g->nchannels;
  if (!follow(s, g, from, t->gpus[gpu], 1)) return;
  s->used[gpu] ^= flag;
  rec_gpu(s, g, save, gpu, step, back_to_net, back_to_first, forced, time);
  s->used[gpu] ^= flag;
  follow(s, g, from, t->gpus[gpu], -1);
}

/* ncclTopoCompareGraphs: more channels x bandwidth, then fewer hops. */
static bool better(const topo_graph *g, const topo_graph *ref) {
  if (g->nchannels < g->min_channels) return false;
  if (g->nchannels * g->bw_intra > ref->nchannels * ref->bw_intra) return true;
  if (g->nchannels * g->bw_intra < ref->nchannels * ref->bw_intra) return false;
  return g->pattern == ref->pattern && g->cross_nic == ref->cross_nic && g->nhops < ref->nhops;
}

/* Back to a NIC from GPU gpu at this step (the channel's NIC out). */
static void back_to_nic(topo_search *s, topo_graph *g, topo_graph *save, int gpu, int step,
                        int back_to_first, int forced, int *time) {
  nt_topo *t = s->t;
  int nets[TOPO_MAX_NETS];
  int start = g->inter[g->nchannels * 2], n = topo_select_nets(s, g->type_inter, gpu, nets);
  for (int i = 0; i < n; i++) {
    if (!topo_check_net(s, g, start, nets[i], step)) continue;
    int next_back = -1;
    float saved = g->bw_inter;
    if (g->pattern == PATTERN_BALANCED_TREE) { /* half the bandwidth on each of two GPUs */
      if (step == 0) next_back = 1;
      g->bw_inter /= 2;
    }
    bool ok = follow(s, g, t->gpus[gpu], t->nets[nets[i]], 1);
    g->bw_inter = saved;
    if (!ok) continue;
    g->inter[g->nchannels * 2 + 1] = (int16_t)nets[i];
    rec_gpu(s, g, save, gpu, step, next_back, back_to_first, forced, time);
    if (g->pattern == PATTERN_BALANCED_TREE) g->bw_inter /= 2;
    follow(s, g, t->gpus[gpu], t->nets[nets[i]], -1);
    g->bw_inter = saved;
  }
}

/* The GPU that followed step in the previous channel (replaying it). */
static int replay_gpu(const topo_graph *g, int ngpus, int step) {
  return g->intra[(g->nchannels - 1) * ngpus + step + 1];
}

static void rec_gpu(topo_search *s, topo_graph *g, topo_graph *save, int gpu, int step,
                    int back_to_net, int back_to_first, int forced, int *time) {
  nt_topo *t = s->t;
  if (*time <= 0) return;
  (*time)--;
  int ngpus = t->ngpus;
  if (step == ngpus) { /* a channel is complete */
    g->nchannels++;
    if (better(g, save)) {
      *save = *g;
      if (g->nchannels == g->max_channels) *time = -1;
    }
    if (g->nchannels < g->max_channels) search_rec(s, g, save, time);
    g->nchannels--;
    return;
  }
  g->intra[g->nchannels * ngpus + step] = (int8_t)gpu;
  if (step == back_to_net) {
    if (s->inter) back_to_nic(s, g, save, gpu, step, back_to_first, forced, time);
  } else if (step < ngpus - 1) {
    uint8_t next[TOPO_MAX_GPUS];
    int count;
    if (forced == FORCED_ORDER_PCI) {
      next[0] = (uint8_t)(step + 1);
      count = 1;
    } else if (forced == FORCED_ORDER_REPLAY) {
      next[0] = (uint8_t)replay_gpu(g, ngpus, step);
      count = 1;
    } else {
      count = next_gpus(s, g, gpu, next, back_to_net == -1 ? 0 : back_to_net == step + 1 ? 1 : -1);
    }
    for (int i = 0; i < count; i++)
      try_gpu(s, g, save, step + 1, back_to_net, back_to_first, forced, time, t->gpus[gpu],
              next[i]);
  } else if (step == back_to_first) { /* close the ring on the first GPU */
    int first = g->intra[g->nchannels * ngpus];
    if (follow(s, g, t->gpus[gpu], t->gpus[first], 1)) {
      rec_gpu(s, g, save, first, step + 1, back_to_net, -1, forced, time);
      follow(s, g, t->gpus[gpu], t->gpus[first], -1);
    }
  } else {
    rec_gpu(s, g, save, gpu, ngpus, -1, -1, forced, time);
  }
}

/* Every NIC sharing an ASIC and port with NET n loses (or gets back) bw. */
static void take_net_bw(topo_search *s, int n, int bw) {
  const nt_topo *t = s->t;
  for (int i = 0; i < t->nnets; i++)
    if (s->asic[i] == s->asic[n] && t->nodes[t->nets[i]].port == t->nodes[t->nets[n]].port)
      s->net_bw[i] -= (float)bw;
}

/* ncclTopoSearchRecNet: a channel enters on a NIC, tried in NCCL's order. */
static void rec_net(topo_search *s, topo_graph *g, topo_graph *save, int back_to_net,
                    int back_to_first, int *time) {
  nt_topo *t = s->t;
  const int bw = (int)g->bw_inter; /* NCCL truncates here */
  int nets[TOPO_MAX_NETS], count = topo_select_nets(s, g->type_inter, -1, nets);
  for (int i = 0; i < count; i++) {
    int n = nets[(g->nchannels + i) % count], node = t->nets[n];
    if (s->net_bw[n] < bw) continue;
    if (g->pattern == PATTERN_RING && g->cross_nic == 2 && (g->nchannels & 1) &&
        n != g->inter[(g->nchannels - 1) * 2 + 1])
      continue;
    g->inter[g->nchannels * 2] = (int16_t)n;
    take_net_bw(s, n, bw);
    if (g->nchannels > 0 && g->same_channels == 1) {
      try_gpu(s, g, save, 0, back_to_net, back_to_first, FORCED_ORDER_REPLAY, time, node,
              replay_gpu(g, t->ngpus, -1));
    } else {
      if (g->nchannels == 0 && t->nvs < 0) {
        /* PCI order first, as a reference, on its own small budget */
        int budget = 1 << 10;
        try_gpu(s, g, save, 0, back_to_net, back_to_first, FORCED_ORDER_PCI, &budget, node, 0);
        if (budget == -1) *time = -1;
      }
      int local = s->local_gpu[n];
      if (local != -1) try_gpu(s, g, save, 0, back_to_net, back_to_first, 0, time, node, local);
      int gl[TOPO_MAX_GPUS], ng = topo_get_local(t, node, t->gpus, t->ngpus, gl);
      for (int k = 0; k < ng; k++)
        if (gl[k] != local)
          try_gpu(s, g, save, 0, back_to_net, back_to_first, 0, time, node, gl[k]);
    }
    take_net_bw(s, n, -bw);
  }
}

/* ncclTopoSearchRec: where channels start. Across nodes, on a NIC, the ring
 * coming back to a NIC after the last GPU, trees right after the first;
 * inside a node, on a GPU, the ring closing on its first GPU. */
static void search_rec(topo_search *s, topo_graph *g, topo_graph *save, int *time) {
  nt_topo *t = s->t;
  int ngpus = t->ngpus, back_to_net = -1, back_to_first = -1;
  if (s->inter) {
    back_to_net = g->pattern == PATTERN_RING ? ngpus - 1 : g->pattern == PATTERN_SPLIT_TREE ? 1 : 0;
    rec_net(s, g, save, back_to_net, back_to_first, time);
    return;
  }
  if (g->pattern == PATTERN_RING) back_to_first = ngpus - 1;
  if (g->nchannels == 0)
    try_gpu(s, g, save, 0, back_to_net, back_to_first, FORCED_ORDER_PCI, time, -1, 0);
  else
    try_gpu(s, g, save, 0, back_to_net, back_to_first, FORCED_ORDER_REPLAY, time, -1,
            replay_gpu(g, ngpus, -1));
  if (g->same_channels == 0 || g->nchannels == 0)
    for (int k = 0; k < ngpus; k++)
      try_gpu(s, g, save, 0, back_to_net, back_to_first, 0, time, -1, k);
}

/* ---- ncclTopoSearchInit ------------------------------------------------ */

static float max_path_bw(const nt_topo *t, int node, const int *targets, int n, int skip_dev) {
  float best = 0;
  for (int i = 0; i < n; i++) {
    const topo_path *p = topo_cpath(t, node, targets[i]);
    if (p->count == 0) continue;
    if (skip_dev >= 0 && t->nodes[targets[i]].devnode == skip_dev) continue;
    if (p->bw > best) best = p->bw;
  }
  return best;
}

static float total_bw(const topo_node *n) {
  float nvl = 0, pci = 0;
  for (int l = 0; l < n->nlinks; l++) {
    if (n->links[l].type == NT_LINK_NVL) nvl += n->links[l].bw;
    if (n->links[l].type == NT_LINK_PCI) pci = n->links[l].bw;
  }
  return pci > nvl ? pci : nvl;
}

int topo_search_init(topo_search *s, nt_topo *t, bool inter, int cross_nic, char *err,
                     size_t errlen) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->inter = inter;
  s->cross_nic = cross_nic;
  for (int i = 0; i <= TOPO_MAX_GPUS; i++) s->npref[i] = -1;
  if (t->ngpus == 0)
    return snprintf(err, errlen, "%s: no GPU in the file: NCCL has nothing to connect", t->name),
           -1;
  for (int n = 0; n < t->nnets; n++) {
    const topo_node *net = &t->nodes[t->nets[n]];
    s->net_bw[n] = net->net_bw;
    s->asic[n] = net->has_guid ? net->guid : (uint64_t)net->dev;
    s->local_gpu[n] = topo_gpu_pos(t, t->local_gpu[n]);
  }
  if (!inter && t->ngpus == 1) {
    s->max_bw = s->total_bw = LOC_BW;
    return 0;
  }
  /* 2.28: per GPU. 2.30: per physical GPU (DEV), on the DEV's own paths,
   * which NCCL's PXN, GDR and P2P rewrites (on GPU paths) never touch. A
   * DEV's path to another DEV is read as its path to that DEV's GPU leaf
   * (one more hop at 5000 GB/s, so the same bandwidth). */
  if (!v230(s)) {
    for (int i = 0; i < t->ngpus; i++) {
      int g = t->gpus[i];
      float m = inter ? max_path_bw(t, g, t->nets, t->nnets, -1)
                      : max_path_bw(t, g, t->gpus, t->ngpus, -1);
      float tb = total_bw(&t->nodes[g]);
      if (m > s->max_bw) s->max_bw = m;
      if (tb > s->total_bw) s->total_bw = tb;
    }
    return 0;
  }
  for (int d = 0; d < t->nnodes; d++) {
    if (t->nodes[d].type != NT_NODE_DEV || t->nodes[d].removed) continue;
    float m =
        inter ? max_path_bw(t, d, t->nets, t->nnets, -1) : max_path_bw(t, d, t->gpus, t->ngpus, d);
    float tb = total_bw(&t->nodes[d]);
    if (m > s->max_bw) s->max_bw = m;
    if (tb > s->total_bw) s->total_bw = tb;
  }
  return 0;
}

/* ---- ncclTopoCompute ----------------------------------------------------- */

static const float speed_intra[] = {40.0f, 30.0f, 20.0f, 18.0f, 15.0f, 12.0f, 10.0f,
                                    9.0f,  7.0f,  6.0f,  5.0f,  4.0f,  3.0f};
static const float speed_inter[] = {48.0f, 30.0f, 28.0f, 24.0f, 20.0f, 18.0f, 15.0f,
                                    12.0f, 10.0f, 9.0f,  7.0f,  6.0f,  5.0f,  4.0f,
                                    3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
static const float sm90_intra[] = {60.0f, 50.0f, 40.0f, 30.0f, 24.0f, 20.0f,
                                   15.0f, 12.0f, 11.0f, 6.0f,  3.0f};
static const float sm90_inter[] = {48.0f, 45.0f, 42.0f, 40.0f, 30.0f, 24.0f, 22.0f, 20.0f, 17.5f,
                                   15.0f, 12.0f, 6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
static const float sm100_intra_228[] = {90.0f, 80.0f, 70.0f, 60.0f, 50.0f, 40.0f,
                                        30.0f, 24.0f, 20.0f, 19.0f, 18.0f};
static const float sm100_inter_228[] = {96.0f, 48.0f, 45.1f, 42.0f, 40.0f, 30.0f,
                                        24.0f, 22.0f, 20.0f, 17.5f, 15.0f, 12.0f,
                                        6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
static const float sm100_intra_230[] = {90.0f, 80.0f, 70.0f, 60.0f, 50.0f, 45.0f,
                                        40.0f, 30.0f, 24.0f, 20.0f, 19.0f, 18.0f};
static const float sm100_inter_230[] = {96.0f, 86.0f, 80.0f, 48.0f, 45.1f, 42.0f, 40.0f,
                                        30.0f, 24.0f, 22.0f, 20.0f, 17.5f, 15.0f, 12.0f,
                                        6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
#define NSPEEDS(a) ((int)(sizeof(a) / sizeof(a[0])))

static void speeds(const topo_search *s, int cc_min, const float **arr, int *n) {
  bool v = v230(s);
  if (!s->inter) {
    if (cc_min >= 100) {
      *arr = v ? sm100_intra_230 : sm100_intra_228;
      *n = v ? NSPEEDS(sm100_intra_230) : NSPEEDS(sm100_intra_228);
    } else if (cc_min >= 90) {
      *arr = sm90_intra, *n = NSPEEDS(sm90_intra);
    } else {
      *arr = speed_intra, *n = NSPEEDS(speed_intra);
    }
  } else if (cc_min >= 100) {
    *arr = v ? sm100_inter_230 : sm100_inter_228;
    *n = v ? NSPEEDS(sm100_inter_230) : NSPEEDS(sm100_inter_228);
  } else if (cc_min >= 90) {
    *arr = sm90_inter, *n = NSPEEDS(sm90_inter);
  } else {
    *arr = speed_inter, *n = NSPEEDS(speed_inter);
  }
}

/* ncclTopoGetGpuMinPath / MaxPath over GPU->targets (GPU pairs not to self). */
static void path_range(const nt_topo *t, const int *targets, int n, bool gpus, int *min, int *max) {
  *min = NT_PATH_SYS, *max = NT_PATH_LOC;
  for (int i = 0; i < t->ngpus; i++)
    for (int j = 0; j < n; j++) {
      if (gpus && i == j) continue;
      int ty = topo_cpath(t, t->gpus[i], targets[j])->type;
      if (ty < *min) *min = ty;
      if (ty > *max) *max = ty;
    }
}

/* ncclTopoSplitNvLink: two NVLink islands joined by something slower. */
static bool split_nvlink(const nt_topo *t) {
  int domain[TOPO_MAX_GPUS], count[TOPO_MAX_GPUS] = {0}, ndomains = 0;
  for (int g = 0; g < t->ngpus; g++) domain[g] = g;
  for (int g = 0; g < t->ngpus; g++)
    for (int p = g + 1; p < t->ngpus; p++)
      if (topo_cpath(t, t->gpus[g], t->gpus[p])->type == NT_PATH_NVL) domain[p] = domain[g];
  for (int g = 0; g < t->ngpus; g++) count[domain[g]]++;
  for (int g = 0; g < t->ngpus; g++)
    if (count[g] > 1) ndomains++;
  return ndomains == 2;
}

/* ncclTopoDupChannels: fast channels are doubled, each at half speed. */
static void dup_channels(topo_graph *g, int cc_min, int ngpus) {
  if (g->nchannels == 0 || g->bw_intra < 25.0f) return;
  if (cc_min > 80 && g->bw_intra < 50.0f && g->nchannels > 4) return;
  int dup = g->nchannels * 2 < g->max_channels ? g->nchannels * 2 : g->max_channels;
  memcpy(g->intra + g->nchannels * ngpus, g->intra,
         (size_t)((dup - g->nchannels) * ngpus) * sizeof g->intra[0]);
  memcpy(g->inter + g->nchannels * 2, g->inter,
         (size_t)((dup - g->nchannels) * 2) * sizeof g->inter[0]);
  int div = (dup + g->nchannels - 1) / g->nchannels;
  g->bw_intra /= (float)div;
  g->bw_inter /= (float)div;
  g->nchannels = dup;
}

/* Nothing found: one channel in GPU order at 0.1 GB/s, through SYS. 2.30
 * also names the first and last GPU's preferred NICs, when it has them. */
static void fallback(topo_search *s, topo_graph *g) {
  nt_topo *t = s->t;
  for (int i = 0; i < t->ngpus; i++) g->intra[i] = (int8_t)i;
  g->bw_intra = 0.1f;
  g->type_intra = NT_PATH_SYS;
  g->nchannels = 1;
  if (!v230(s)) { /* NET id 0: the NET whose dev is 0 */
    int net0 = -1;
    for (int n = 0; n < t->nnets && net0 < 0; n++)
      if (t->nodes[t->nets[n]].dev == 0) net0 = n;
    g->inter[0] = g->inter[1] = (int16_t)net0;
    g->bw_inter = 0.1f;
    g->type_inter = NT_PATH_SYS;
    return;
  }
  int nets[TOPO_MAX_NETS];
  int n0 = topo_select_nets(s, -1, 0, nets);
  g->inter[0] = (int16_t)(n0 > 0 ? nets[0] : -1);
  int n1 = topo_select_nets(s, -1, t->ngpus - 1, nets);
  g->inter[1] = (int16_t)(n1 > 0 ? nets[0] : -1);
  if (g->inter[0] != -1 && g->inter[1] != -1) {
    g->bw_inter = 0.1f;
    g->type_inter = NT_PATH_SYS;
  } else {
    g->inter[0] = g->inter[1] = -1;
    g->bw_inter = 0;
    g->type_inter = NT_PATH_DIS;
  }
}

int topo_graph_compute(topo_search *s, topo_graph *graph, char *err, size_t errlen) {
  nt_topo *t = s->t;
  int ngpus = t->ngpus, cc_min = t->nodes[t->gpus[0]].sm;
  for (int i = 1; i < ngpus; i++)
    if (t->nodes[t->gpus[i]].sm < cc_min) cc_min = t->nodes[t->gpus[i]].sm;
  int ndevs = v230(s) ? t->ndevs : ngpus;
  int p = graph->pattern;
  int cross_nic =
      t->nnets > 1 && (p == PATTERN_RING || p == PATTERN_BALANCED_TREE || p == PATTERN_SPLIT_TREE)
          ? s->cross_nic
          : 0;
  graph->cross_nic = cross_nic == 1 ? 1 : 0;
  graph->bw_intra = graph->bw_inter = 0;
  int min_intra = NT_PATH_LOC, min_inter = NT_PATH_PIX, max_intra = NT_PATH_SYS,
      max_inter = NT_PATH_SYS;
  if (ngpus > 1) path_range(t, t->gpus, ngpus, true, &min_intra, &max_intra);
  if (s->inter) {
    path_range(t, t->nets, t->nnets, false, &min_inter, &max_inter);
    max_intra = max_inter;
  }
  if (v230(s) && cc_min < 90) max_inter = NT_PATH_SYS; /* Ampere's balanced tree */
  graph->type_intra = min_intra;
  graph->type_inter = min_inter;
  graph->nchannels = 0;
  graph->same_channels = 1;
  int arch = t->ncpus ? t->nodes[t->cpus[0]].arch : ARCH_UNKNOWN;
  int vendor = t->ncpus ? t->nodes[t->cpus[0]].vendor : VENDOR_UNKNOWN;
  if (ngpus == 1 && graph->pattern != PATTERN_RING) graph->pattern = PATTERN_TREE;
  /* Two NVLink islands: tree needs two channels, and ring must match it */
  if (graph->pattern == PATTERN_RING && split_nvlink(t) && graph->max_channels >= 2 &&
      graph->min_channels == 1)
    graph->min_channels = 2;

  topo_graph *tmp = malloc(sizeof *tmp);
  if (!tmp) return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  *tmp = *graph;
  const float *speed;
  int nspeeds, pass = 1, si = 0;
  speeds(s, cc_min, &speed, &nspeeds);
  float max_bw = s->max_bw, total = s->total_bw;
  if (ndevs > 1 && graph->pattern != PATTERN_RING)
    total = (float)(total * (ndevs * 1.0 / (ndevs - 1)));
  while ((speed[si] > max_bw || speed[si] * graph->min_channels > total) && si < nspeeds - 1) si++;
  tmp->bw_intra = tmp->bw_inter = speed[si];
  long long global_timeout = GLOBAL_TIMEOUT;
  int time;

search:
  time = tmp->same_channels             ? TIMEOUT_SAMECHANNELS
         : tmp->pattern == PATTERN_TREE ? TIMEOUT_TREE
                                        : TIMEOUT;
  tmp->nchannels = 0;
  global_timeout -= time;
  search_rec(s, tmp, graph, &time);
  if (s->failed) {
    free(tmp);
    return snprintf(err, errlen, "%s: a link without its reverse: NCCL fails", t->name), -1;
  }
  if (time == -1) goto done; /* optimal */
  if (graph->nchannels * graph->bw_inter >= s->total_bw) goto done;
  if (pass == 1) {
    /* different channels, except through AMD CPUs */
    if (tmp->same_channels == 1 &&
        !(arch == ARCH_X86 && vendor == VENDOR_AMD && tmp->type_intra == NT_PATH_SYS)) {
      tmp->same_channels = 0;
      goto search;
    }
    tmp->same_channels = 1;
    if (time != -1)
      global_timeout += time;
    else
      global_timeout = GLOBAL_TIMEOUT;
    if (global_timeout < 0 && graph->nchannels) goto done;
    if (cc_min >= 90 && tmp->pattern == PATTERN_BALANCED_TREE) { /* a simpler tree */
      tmp->pattern = PATTERN_TREE;
      goto search;
    }
    tmp->pattern = graph->pattern;
    int max_type = s->inter ? tmp->type_inter : max_intra;
    if (tmp->type_intra < max_type &&
        (graph->nchannels == 0 || tmp->type_intra < graph->type_intra)) {
      tmp->type_intra += 1;
      if (tmp->type_intra < NT_PATH_DIS) goto search;
    }
    tmp->type_intra = min_intra;
    if (s->inter && tmp->type_inter < max_inter &&
        (graph->nchannels == 0 || tmp->type_inter < graph->type_inter ||
         tmp->type_inter < NT_PATH_PXN)) {
      tmp->type_inter += 1;
      if (tmp->type_inter < NT_PATH_DIS) goto search;
    }
    tmp->type_inter = min_inter;
    if (cross_nic == 2 && tmp->cross_nic == 0 &&
        (graph->pattern == PATTERN_RING || graph->pattern == PATTERN_BALANCED_TREE)) {
      tmp->cross_nic = 2;
      goto search;
    }
    tmp->cross_nic = cross_nic == 1 ? 1 : 0;
    if (si < nspeeds - 1 && (graph->nchannels == 0 || speed[si + 1] / graph->bw_inter > .49)) {
      tmp->bw_inter = tmp->bw_intra = speed[++si];
      goto search;
    }
    si = 0;
    while (speed[si] > max_bw && si < nspeeds - 1) si++;
    tmp->bw_intra = tmp->bw_inter = speed[si];
  }

done:
  if (pass == 1) { /* from that solution, try higher speeds */
    time = -1;
    dup_channels(graph, cc_min, ngpus);
    *tmp = *graph;
    si = 0;
    while (speed[si] > graph->bw_inter && si < nspeeds - 1) si++;
    tmp->bw_intra = tmp->bw_inter = speed[si];
    tmp->min_channels = graph->nchannels;
    pass = 2;
  }
  if (pass == 2) {
    if (time != 0 && si > 0) {
      if (graph->pattern == PATTERN_RING) {
        tmp->bw_intra = tmp->bw_inter = speed[--si];
        goto search;
      } else if (tmp->bw_intra == graph->bw_intra && tmp->bw_intra < tmp->bw_inter * 2) {
        tmp->bw_intra = speed[--si]; /* more intra-node bandwidth for trees */
        goto search;
      }
    }
    time = -1;
    *tmp = *graph;
  }
  if (graph->nchannels == 0) fallback(s, graph);
  free(tmp);
  return 0;
}

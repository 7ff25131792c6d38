/* NCCL's decisions on top of the paths: the local CPU of a GPU, the NIC a
 * GPU uses on a channel and the GPU local to a NIC (which picks the PXN
 * relay), P2P and P2P read between GPUs, GDR and GDR read between a GPU and
 * a NIC, the PXN relay, and whether NET beats P2P inside the node. Each
 * function reads the paths as they are when it is called, as NCCL does while
 * it rewrites them. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ncclTopoGetLocal: the members of set with the best bandwidth from src, and
 * among those the lowest type (positions in set, in set order). */
int topo_get_local(nt_topo *t, int src, const int *set, int n, int *out) {
  float max_bw = 0;
  int min_type = NT_PATH_DIS, count = 0;
  for (int i = 0; i < n; i++) {
    const topo_path *p = topo_cpath(t, src, set[i]);
    if (p->bw > max_bw || (p->bw == max_bw && p->type < min_type)) {
      max_bw = p->bw;
      min_type = p->type;
      count = 0;
    }
    if (p->bw == max_bw && p->type == min_type) out[count++] = i;
  }
  return count;
}

/* ncclGetLocalCpu. 2.28: the fewest hops; 2.30: the best bandwidth, then
 * the lowest type, then the fewest hops. First in CPU order on a tie. */
int topo_local_cpu(nt_topo *t, int gpu) {
  int best = -1;
  if (t->env.version == NT_NCCL_230) {
    int local[TOPO_MAX_NODES];
    int n = topo_get_local(t, gpu, t->cpus, t->ncpus, local);
    for (int i = 0; i < n; i++)
      if (best < 0 ||
          topo_cpath(t, gpu, t->cpus[local[i]])->count < topo_cpath(t, gpu, best)->count)
        best = t->cpus[local[i]];
    return best >= 0 && topo_cpath(t, gpu, best)->count > 0 ? best : -1;
  }
  int hops = 0;
  for (int i = 0; i < t->ncpus; i++) {
    int h = topo_cpath(t, gpu, t->cpus[i])->count;
    if (h > 0 && (hops == 0 || h < hops)) best = t->cpus[i], hops = h;
  }
  return best;
}

typedef struct {
  int locals[TOPO_MAX_NETS]; /* positions in t->nets */
  int n, per_gpu, start;
} net_choice;

static int mirror_bits(int val, int pow2) {
  int m = 0;
  for (int b = 1, mb = pow2 >> 1; b < pow2; b <<= 1, mb >>= 1)
    if (val & b) m |= mb;
  return m;
}

/* The part of ncclTopoGetLocalNet that does not depend on the channel. */
static bool choose_nets(nt_topo *t, int gpu, net_choice *c) {
  c->n = topo_get_local(t, gpu, t->nets, t->nnets, c->locals);
  if (c->n == 0) return false;
  int gl[TOPO_MAX_GPUS];
  int ng = topo_get_local(t, t->nets[c->locals[0]], t->gpus, t->ngpus, gl);
  if (ng < 1) ng = 1; /* NCCL would divide by zero; never with a GPU present */
  switch (t->env.netdevs_policy) {
  case NT_NETDEVS_ALL: c->per_gpu = c->n; break;
  case NT_NETDEVS_MAX: c->per_gpu = t->env.netdevs_max < c->n ? t->env.netdevs_max : c->n; break;
  default: c->per_gpu = (c->n + ng - 1) / ng;
  }
  if (c->per_gpu < 1) c->per_gpu = 1;
  int dev = t->nodes[gpu].dev;
  c->start = t->env.version == NT_NCCL_230 ? dev % ng : dev;
  if ((c->n & (c->n - 1)) == 0) c->start = mirror_bits(c->start, c->n);
  return true;
}

static int chosen_net(const nt_topo *t, const net_choice *c, int channel) {
  return t->nets[c->locals[(c->start + channel % c->per_gpu) % c->n]];
}

int topo_local_net(nt_topo *t, int gpu, int channel) {
  net_choice c;
  return choose_nets(t, gpu, &c) ? chosen_net(t, &c, channel) : -1;
}

/* ncclTopoGetLocalGpu: among the GPUs local to the NIC, the first (channels
 * in order, then GPUs in order) whose own NIC choice is this NIC. */
int topo_nic_local_gpu(nt_topo *t, int net) {
  int gl[TOPO_MAX_GPUS];
  net_choice ch[TOPO_MAX_GPUS];
  bool ok[TOPO_MAX_GPUS];
  int ng = topo_get_local(t, net, t->gpus, t->ngpus, gl);
  for (int i = 0; i < ng; i++) ok[i] = choose_nets(t, t->gpus[gl[i]], &ch[i]);
  for (int c = 0; c < NCCL_MAXCHANNELS; c++)
    for (int i = 0; i < ng; i++)
      if (ok[i] && chosen_net(t, &ch[i], c) == net) return t->gpus[gl[i]];
  return -1;
}

/* The machine part of the default needs the graph; t may be NULL. */
int topo_p2p_level_env(const nt_topo *t, const nt_topo_env *e) {
  if (e->p2p_disable == 1) return NT_PATH_LOC;
  if (e->p2p_level >= 0) return e->p2p_level;
  if (!t) return NT_PATH_PXB;
  /* An AMD CPU 0 with at most two GPUs (2.30: physical GPUs): P2P through it. */
  int n = e->version == NT_NCCL_230 ? t->ndevs : t->ngpus;
  if (t->ncpus > 0 && t->nodes[t->cpus[0]].arch == ARCH_X86 &&
      t->nodes[t->cpus[0]].vendor == VENDOR_AMD && n <= 2)
    return NT_PATH_SYS;
  return NT_PATH_PXB;
}

int topo_p2p_level(const nt_topo *t) {
  return topo_p2p_level_env(t, &t->env);
}

int topo_gdr_level(const nt_topo *t) {
  return nt_topo_gdr_level(&t->env);
}

/* The first GPU whose NVML index is that of the DEV (ncclTopoDevToRank). */
static int dev_gpu(const nt_topo *t, int dev) {
  for (int i = 0; i < t->ngpus; i++)
    if (t->nodes[t->gpus[i]].dev == t->nodes[dev].dev) return t->gpus[i];
  return -1;
}

bool topo_check_p2p(nt_topo *t, int g1, int g2, bool *read, int *via) {
  const topo_path *p = topo_cpath(t, g1, g2);
  if (via) {
    *via = -1;
    if (t->env.version != NT_NCCL_230 && p->count == 2) {
      int mid = topo_path_node(t, g1, p, 1);
      if (t->nodes[mid].type == NT_NODE_GPU) *via = mid;
    } else if (t->env.version == NT_NCCL_230 && p->count == 4) {
      int mid = topo_path_node(t, g1, p, 2);
      if (t->nodes[mid].type == NT_NODE_DEV) *via = dev_gpu(t, mid);
    }
  }
  if (read) *read = p->type == NT_PATH_NVL && t->nodes[g1].sm == 80 && t->nodes[g2].sm == 80;
  return p->type <= topo_p2p_level(t);
}

/* ncclTopoGetIntermediateRank for a PXN path: the GPU after the NVSwitch. */
int topo_pxn_relay(nt_topo *t, int gpu, int net) {
  const topo_path *p = topo_cpath(t, gpu, net);
  if (p->type != NT_PATH_PXN) return -1;
  if (t->env.version != NT_NCCL_230) {
    for (int k = 1; k <= p->count; k++) {
      int node = topo_path_node(t, gpu, p, k);
      if (t->nodes[node].type != NT_NODE_NVS) return t->nodes[node].type == NT_NODE_GPU ? node : -1;
    }
    return -1;
  }
  int k = 2; /* list[1]: the hop after GPU->DEV */
  while (k < p->count && t->nodes[topo_path_node(t, gpu, p, k)].type == NT_NODE_NVS) k++;
  int node = topo_path_node(t, gpu, p, k);
  if (t->nodes[node].type == NT_NODE_DEV) {
    const topo_node *d = &t->nodes[node];
    for (int l = 0; l < d->nlinks; l++)
      if (t->nodes[d->links[l].remote].type == NT_NODE_GPU) {
        node = d->links[l].remote;
        break;
      }
  }
  if (t->nodes[node].type != NT_NODE_GPU) return -1;
  for (int i = 0; i < t->ngpus; i++) /* by NVML index, then rank, then index */
    if (t->nodes[t->gpus[i]].dev == t->nodes[node].dev) return t->gpus[i];
  return node;
}

int topo_check_gdr(nt_topo *t, int gpu, int net, int read) {
  const topo_node *g = &t->nodes[gpu];
  bool v230 = t->env.version == NT_NCCL_230;
  if (!t->nodes[net].gdr || !g->gdr) return 0;
  if (v230 && g->mlopart >= 0 && !t->env.gdr_mlopart) return 0;
  if (read) {
    if (t->env.gdr_read == 0) return 0;
    if (t->env.gdr_read < 0 && g->sm < 80) { /* pre-Ampere: only with NVLink */
      bool nvlink = t->ngpus == 1;
      for (int i = 0; i < t->ngpus && !nvlink; i++)
        nvlink = t->gpus[i] != gpu && topo_cpath(t, gpu, t->gpus[i])->type == NT_PATH_NVL;
      if (!nvlink) return 0;
    }
  }
  int level = topo_gdr_level(t), distance = topo_cpath(t, gpu, net)->type;
  if (distance == NT_PATH_PXN) { /* judged on the relay GPU's own path */
    int relay = topo_pxn_relay(t, gpu, net);
    if (relay < 0) return 0;
    gpu = relay;
    distance = topo_cpath(t, gpu, net)->type;
  }
  if (!v230 && t->env.gdr_c2c && distance == NT_PATH_P2C) distance = NT_PATH_C2C;
  if (distance > level) return 0;
  int cpu = topo_local_cpu(t, gpu);
  int own = v230 ? NT_PATH_P2C : NT_PATH_C2C;
  if (cpu >= 0 && topo_cpath(t, gpu, cpu)->type == NT_PATH_C2C && distance != own) return 2;
  return 1;
}

bool topo_net_faster(nt_topo *t, int g1, int g2) {
  if (t->env.net_disable_intra == 1) return false;
  float speed = topo_cpath(t, g1, g2)->bw, s1 = 0, s2 = 0;
  for (int i = 0; i < t->nnets; i++) {
    const topo_path *a = topo_cpath(t, g1, t->nets[i]), *b = topo_cpath(t, g2, t->nets[i]);
    if (a->type <= NT_PATH_PXB && a->bw > s1) s1 = a->bw;
    if (b->type <= NT_PATH_PXB && b->bw > s2) s2 = b->bw;
  }
  return s1 > speed && s2 > speed;
}

/* Which NICs the channel search tries, and in which order (search.cc:
 * ncclTopoSelectNets, ncclTopoPrefNetsChannelFirst, ncclTopoSearchCheckNet;
 * the same in 2.28.9 and 2.30.7 but for 2.30's NIC planes and rails, which
 * a topology file does not carry). */
#include "search.h"

int topo_gpu_pos(const nt_topo *t, int node) {
  int e = node >= 0 ? t->nodes[node].endpoint : -1;
  return e >= 0 && e < t->ngpus ? e : -1;
}

static int net_pos(const nt_topo *t, int node) {
  int e = node >= 0 ? t->nodes[node].endpoint : -1;
  return e >= t->ngpus ? e - t->ngpus : -1;
}

static void append(int *nets, int *count, int n) {
  for (int i = 0; i < *count; i++)
    if (nets[i] == n) return;
  nets[(*count)++] = n;
}

/* The NICs each GPU would pick channel after channel (ncclTopoGetLocalNet),
 * until its choice comes back to its first one; GPU after GPU. Multi-node
 * NVLink systems order them GPU first instead: one host here, never. */
static void preferred_nets(topo_search *s, int gpu, int *nets, int *count) {
  nt_topo *t = s->t;
  for (int g = 0; g < t->ngpus; g++) {
    if (gpu != -1 && gpu != g) continue;
    int local[NCCL_MAXCHANNELS], n = 0;
    for (int c = 0; c < NCCL_MAXCHANNELS; c++) {
      int net = net_pos(t, topo_local_net(t, t->gpus[g], c));
      if (net < 0) break; /* no NIC reachable: NCCL would fail the search */
      if (n > 0 && net == local[0]) break;
      local[n++] = net;
    }
    for (int i = 0; i < n; i++) append(nets, count, local[i]);
  }
}

int topo_select_nets(topo_search *s, int type_inter, int gpu, int *nets) {
  nt_topo *t = s->t;
  int count = 0, row = gpu == -1 ? TOPO_MAX_GPUS : gpu;
  if (s->npref[row] < 0) {
    preferred_nets(s, gpu, nets, &count);
    for (int i = 0; i < count; i++) s->pref[row][i] = (int16_t)nets[i];
    s->npref[row] = count;
  }
  count = s->npref[row];
  for (int i = 0; i < count; i++) nets[i] = s->pref[row][i];
  /* NCCL_NETDEVS_POLICY=MAX:n caps the list at n NICs per GPU asked for;
   * other policies add every NIC within type_inter. */
  int max = t->env.netdevs_policy == NT_NETDEVS_MAX
                ? t->env.netdevs_max * (gpu == -1 ? t->ngpus : 1)
                : TOPO_MAX_NODES;
  if (count >= max) return count;
  for (int type = 0; type <= type_inter; type++)
    for (int g = 0; g < t->ngpus; g++) {
      if (gpu != -1 && gpu != g) continue;
      for (int n = 0; n < t->nnets && n < NCCL_MAXCHANNELS; n++) {
        if (topo_cpath(t, t->gpus[g], t->nets[n])->type != type) continue;
        append(nets, &count, n);
        if (count >= max) return count;
      }
    }
  return count;
}

bool topo_check_net(const topo_search *s, const topo_graph *g, int start_net, int n, int step) {
  const nt_topo *t = s->t;
  if (g->pattern == PATTERN_TREE && n != start_net) return false; /* trees are symmetric */
  if (g->pattern == PATTERN_RING && g->cross_nic == 2) {
    /* odd channels leave by the NIC the previous channel came in on */
    if ((g->nchannels & 1) && n != g->inter[(g->nchannels - 1) * 2]) return false;
  } else if (g->cross_nic == 0) {
    /* the same rail: same ASIC (guid) and port as the NIC it came in on */
    if (s->asic[n] != s->asic[start_net] ||
        t->nodes[t->nets[n]].port != t->nodes[t->nets[start_net]].port)
      return false;
  }
  if (g->pattern == PATTERN_BALANCED_TREE && step != 0 && n != g->inter[g->nchannels * 2 + 1])
    return false;
  return true;
}

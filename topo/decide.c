/* NCCL's decisions on top of the paths (2.28.9): P2P and P2P read between
 * GPUs, GDR and GDR read between GPUs and NICs, PXN, and the path rewrites
 * they cause (CPU detours when P2P or GDR is off, P2C on C2C systems, PXN
 * through a relay GPU). Environment overrides come from nt_topo_env. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const nt_topo_env_names[] = {
    "NCCL_P2P_DISABLE",  "NCCL_P2P_LEVEL",   "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ", "NCCL_NET_GDR_C2C", "NCCL_PXN_DISABLE",
    "NCCL_PXN_C2C",      "NCCL_NVB_DISABLE", NULL};

const char *nt_path_name(int type) {
  static const char *names[NT_PATH_COUNT] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                             "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return type >= 0 && type < NT_PATH_COUNT ? names[type] : "?";
}

int nt_path_parse(const char *s) {
  for (int i = NT_PATH_LOC; i <= NT_PATH_SYS; i++)
    if (!strcmp(s, nt_path_name(i))) return i;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0) return -1;
  static const int old[] = {NT_PATH_LOC, NT_PATH_PIX, NT_PATH_PXB, NT_PATH_PHB, NT_PATH_SYS};
  return v >= 4 ? NT_PATH_SYS : old[v];
}

void nt_topo_env_defaults(nt_topo_env *e) {
  *e = (nt_topo_env){.p2p_disable = 0,
                     .p2p_level = -1,
                     .gdr_level = -1,
                     .gdr_read = -2,
                     .gdr_c2c = 1,
                     .pxn_disable = 0,
                     .pxn_c2c = 1,
                     .nvb_disable = 0};
}

int nt_topo_env_set(nt_topo_env *e, const char *a, char *err, size_t errlen) {
  const char *eq = strchr(a, '=');
  if (!eq) return snprintf(err, errlen, "'%s' is not NAME=VALUE", a), -1;
  size_t n = (size_t)(eq - a);
  const char *v = eq + 1;
#define IS(name) (n == strlen(name) && !strncmp(a, name, n))
  if (IS("NCCL_P2P_LEVEL") || IS("NCCL_NET_GDR_LEVEL")) {
    int level = nt_path_parse(v);
    if (level < 0)
      return snprintf(err, errlen,
                      "%.*s: '%s' is not a level (LOC, NVL, NVB, C2C, PIX, PXB, "
                      "P2C, PXN, PHB, SYS or 0..5)",
                      (int)n, a, v),
             -1;
    if (IS("NCCL_P2P_LEVEL"))
      e->p2p_level = level;
    else
      e->gdr_level = level;
    return 0;
  }
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end) return snprintf(err, errlen, "%.*s: '%s' is not a number", (int)n, a, v), -1;
  if (IS("NCCL_P2P_DISABLE"))
    e->p2p_disable = (int)x;
  else if (IS("NCCL_NET_GDR_READ"))
    e->gdr_read = (int)x;
  else if (IS("NCCL_NET_GDR_C2C"))
    e->gdr_c2c = (int)x;
  else if (IS("NCCL_PXN_DISABLE"))
    e->pxn_disable = (int)x;
  else if (IS("NCCL_PXN_C2C"))
    e->pxn_c2c = (int)x;
  else if (IS("NCCL_NVB_DISABLE"))
    e->nvb_disable = (int)x;
  else
    return snprintf(err, errlen, "%.*s is not a variable nccltop models", (int)n, a), -1;
#undef IS
  return 0;
}

/* The CPU with the fewest hops from the GPU (first on a tie), as 2.28. */
int topo_local_cpu(nt_topo *t, int gpu) {
  int best = -1, hops = 1 << 30;
  for (int i = 0; i < t->ncpus; i++) {
    topo_path *p = topo_path_of(t, gpu, t->cpus[i]);
    if (p->bw > 0 && p->count < hops) best = t->cpus[i], hops = p->count;
  }
  return best;
}

int topo_p2p_level(nt_topo *t) {
  if (t->env.p2p_disable == 1) return NT_PATH_LOC;
  if (t->env.p2p_level >= 0) return t->env.p2p_level;
  /* AMD with at most two GPUs: P2P through the CPU is fine (CPU node 0 decides). */
  if (t->ncpus > 0 && t->nodes[t->cpus[0]].arch == ARCH_X86 &&
      t->nodes[t->cpus[0]].vendor == VENDOR_AMD && t->ngpus <= 2)
    return NT_PATH_SYS;
  return NT_PATH_PXB;
}

bool topo_check_p2p(nt_topo *t, int g1, int g2, bool *read, int *via) {
  topo_path *p = topo_path_of(t, g1, g2);
  if (via) *via = -1;
  if (read) *read = false;
  if (p->count == 2 && t->nodes[p->nodes[1]].type == NT_NODE_GPU && via) *via = p->nodes[1];
  bool ok = p->type <= topo_p2p_level(t);
  if (ok && read) *read = p->type == NT_PATH_NVL && t->nodes[g1].sm == 80 && t->nodes[g2].sm == 80;
  return ok;
}

/* read = 1: the send side (the NIC reads GPU memory); 0: the receive side. */
bool topo_check_gdr(nt_topo *t, int gpu, int net, int read, bool *pci_mode) {
  if (pci_mode) *pci_mode = false;
  if (!t->nodes[net].gdr || !t->nodes[gpu].gdr) return false;
  if (read) {
    if (t->env.gdr_read == 0) return false;
    if (t->env.gdr_read < 0 && t->nodes[gpu].sm < 80) {
      bool nvl = t->ngpus == 1;
      for (int i = 0; i < t->ngpus && !nvl; i++)
        nvl = t->gpus[i] != gpu && topo_path_of(t, gpu, t->gpus[i])->type == NT_PATH_NVL;
      if (!nvl) return false;
    }
  }
  int level = t->env.gdr_level >= 0 ? t->env.gdr_level : NT_PATH_PXB;
  topo_path *p = topo_path_of(t, gpu, net);
  int distance = p->type;
  if (distance == NT_PATH_PXN && p->count >= 2) {
    /* Judged on the relay GPU's own path to the NIC. */
    for (int k = 1; k < p->count; k++)
      if (t->nodes[p->nodes[k]].type == NT_NODE_GPU) {
        gpu = p->nodes[k];
        distance = topo_path_of(t, gpu, net)->type;
        break;
      }
  }
  if (t->env.gdr_c2c && distance == NT_PATH_P2C) distance = NT_PATH_C2C;
  if (distance > level) return false;
  int cpu = topo_local_cpu(t, gpu);
  if (pci_mode && cpu >= 0 && topo_path_of(t, gpu, cpu)->type == NT_PATH_C2C &&
      distance != NT_PATH_C2C)
    *pci_mode = true;
  return true;
}

/* nt_topo_compute: the graph for the chosen version, the paths, then NCCL's
 * rewrites in NCCL's order (ncclTopoComputePaths): P2P off -> detour through
 * the destination's CPU; P2C on C2C machines; PXN through the NIC's local
 * GPU; GDR off -> detour through the GPU's CPU. Then the decisions as NCCL's
 * transports ask for them, on the final paths. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int oom(nt_topo *t, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: %s", t->name,
           t->rec_full ? "topology too complex (path records exhausted)" : "out of memory");
  return -1;
}

static int no_cpu(nt_topo *t, int gpu, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: %s has no path to a CPU: NCCL fails (\"could not find CPU\")", t->name,
           t->nodes[gpu].label);
  return -1;
}

/* src->dst becomes src->via->dst (addInterStep through a CPU). */
static bool via_cpu(nt_topo *t, int src, int dst, int cpu) {
  topo_path a = *topo_path_of(t, src, cpu), b = *topo_path_of(t, cpu, dst);
  return topo_concat(t, topo_path_of(t, src, dst), a, b, topo_merge_type(a.type, b.type));
}

static int p2p_detours(nt_topo *t, char *err, size_t errlen) {
  for (int gi = 0; gi < t->ngpus; gi++)
    for (int pi = 0; pi < t->ngpus; pi++) {
      int g = t->gpus[gi], p = t->gpus[pi];
      if (topo_check_p2p(t, p, g, NULL, NULL)) continue;
      int cpu = topo_local_cpu(t, g);
      if (cpu < 0) return no_cpu(t, g, err, errlen);
      if (!via_cpu(t, p, g, cpu)) return oom(t, err, errlen);
    }
  return 0;
}

/* A NIC behind the CPU of a C2C-attached GPU: the type becomes P2C (route
 * and bandwidth stay). 2.28 does it for every NIC, 2.30 for the GPU's local
 * NICs only. */
static void p2c_rewrite(nt_topo *t) {
  for (int gi = 0; gi < t->ngpus; gi++) {
    int g = t->gpus[gi], c = topo_local_cpu(t, g), local[TOPO_MAX_NETS], n;
    if (c < 0) continue;
    if (t->env.version == NT_NCCL_230) {
      n = topo_get_local(t, g, t->nets, t->nnets, local);
    } else {
      n = t->nnets;
      for (int i = 0; i < n; i++) local[i] = i;
    }
    for (int k = 0; k < n; k++) {
      int net = t->nets[local[k]];
      if (topo_merge_type(topo_cpath(t, g, c)->type, topo_cpath(t, net, c)->type) != NT_PATH_P2C)
        continue;
      topo_path *gn = topo_path_of(t, g, net), *ng = topo_path_of(t, net, g);
      if (gn->type > NT_PATH_P2C) gn->type = NT_PATH_P2C;
      if (ng->type > NT_PATH_P2C) ng->type = NT_PATH_P2C;
    }
  }
}

static bool pxn_applies(nt_topo *t, int g, int net, int relay) {
  const topo_path *rn = topo_cpath(t, relay, net), *gn = topo_cpath(t, g, net);
  int max_type = t->env.pxn_c2c ? NT_PATH_P2C : NT_PATH_PXB;
  if (t->env.version == NT_NCCL_230 && !topo_check_gdr(t, relay, net, 1)) return false;
  return rn->type <= max_type && topo_cpath(t, relay, g)->type <= NT_PATH_NVL &&
         (rn->bw > gn->bw || gn->type > NT_PATH_PXN);
}

static int net_rewrites(nt_topo *t, char *err, size_t errlen) {
  for (int ni = 0; ni < t->nnets; ni++)
    for (int gi = 0; gi < t->ngpus; gi++) {
      int n = t->nets[ni], g = t->gpus[gi];
      if (t->env.pxn_disable != 1) {
        int relay = topo_nic_local_gpu(t, n); /* paths change in this loop: ask every time */
        if (relay >= 0 && relay != g && pxn_applies(t, g, n, relay)) {
          topo_path a = *topo_path_of(t, g, relay), b = *topo_path_of(t, relay, n);
          if (!topo_concat(t, topo_path_of(t, g, n), a, b, NT_PATH_PXN)) return oom(t, err, errlen);
        }
      }
      if (topo_cpath(t, g, n)->type < NT_PATH_PHB && !topo_check_gdr(t, g, n, 0)) {
        int cpu = topo_local_cpu(t, g);
        if (cpu < 0) return no_cpu(t, g, err, errlen);
        if (!via_cpu(t, n, g, cpu) || !via_cpu(t, g, n, cpu)) return oom(t, err, errlen);
      }
    }
  for (int ni = 0; ni < t->nnets; ni++) t->local_gpu[ni] = topo_nic_local_gpu(t, t->nets[ni]);
  return 0;
}

static int endpoint_node(const nt_topo *t, int i) {
  return i < t->ngpus ? t->gpus[i] : t->nets[i - t->ngpus];
}

/* What the P2P and NET transports ask, on the final paths. */
static void decide(nt_topo *t) {
  int ne = t->ngpus + t->nnets;
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      topo_dec *d = &t->dec[i * ne + j];
      memset(d, 0, sizeof *d);
      d->via = -1;
      int a = endpoint_node(t, i), b = endpoint_node(t, j);
      bool ga = i < t->ngpus, gb = j < t->ngpus;
      if (ga && gb) {
        int via;
        bool read;
        d->p2p = topo_check_p2p(t, a, b, &read, &via);
        if (t->env.p2p_read_enable != -2) read = t->env.p2p_read_enable != 0;
        d->read = d->p2p && read && !t->env.p2p_use_cuda_memcpy;
        d->via = via >= 0 ? t->nodes[via].endpoint : -1;
        d->net_faster = d->p2p && via < 0 && i != j && topo_net_faster(t, a, b);
        /* copy engines (NCCL_P2P_USE_CUDA_MEMCPY) cannot relay through a GPU */
        d->transport = d->p2p && !d->net_faster && !(via >= 0 && t->env.p2p_use_cuda_memcpy);
      } else if (ga != gb) {
        int g = ga ? a : b, n = ga ? b : a;
        int recv = topo_check_gdr(t, g, n, 0), send = topo_check_gdr(t, g, n, 1);
        d->gdr = recv != 0;
        d->gdr_read = send != 0;
        d->pci_mode = recv == 2 || send == 2;
        /* PXN is the GPU->NET direction only: NCCL rewrites the GPU's path
         * to the NIC (paths.cc, addInterStep on gpu->paths[NET]) and never
         * relays a receive (net.cc recvSetup), so NET->GPU names no relay. */
        int relay = ga ? topo_pxn_relay(t, g, n) : -1;
        d->pxn = ga && topo_cpath(t, g, n)->type == NT_PATH_PXN;
        d->via = relay >= 0 ? t->nodes[relay].endpoint : -1;
      }
    }
}

int nt_topo_compute(nt_topo *t, const nt_topo_env *env, char *err, size_t errlen) {
  t->computed = false;
  t->nwarn = t->nwarn_load;
  if (env->version != NT_NCCL_228 && env->version != NT_NCCL_230)
    return snprintf(err, errlen, "%s: unknown NCCL version %d", t->name, env->version), -1;
  t->env = *env;
  if (!t->nodes && !(t->nodes = malloc(TOPO_MAX_NODES * sizeof *t->nodes)))
    return oom(t, err, errlen);
  if (topo_build(t, err, errlen) < 0 || topo_compute_paths(t, err, errlen) < 0) return -1;
  int ne = t->ngpus + t->nnets;
  free(t->dec);
  if (!(t->dec = calloc((size_t)(ne > 0 ? ne * ne : 1), sizeof *t->dec)))
    return oom(t, err, errlen);
  for (int i = 0; i < t->ngpus; i++)
    if (topo_local_cpu(t, t->gpus[i]) < 0) return no_cpu(t, t->gpus[i], err, errlen);
  if (p2p_detours(t, err, errlen) < 0) return -1;
  p2c_rewrite(t);
  if (net_rewrites(t, err, errlen) < 0) return -1;
  decide(t);
  t->computed = true;
  return 0;
}

void topo_warn(nt_topo *t, int line, const char *fmt, ...) {
  if (t->nwarn >= TOPO_MAX_WARNINGS) {
    t->warn_dropped++;
    return;
  }
  char msg[TOPO_WARNING_LEN - 20];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (int i = 0; i < t->nwarn; i++) /* the same note on every compute: keep one */
    if (strstr(t->warn[i], msg)) return;
  if (line > 0)
    snprintf(t->warn[t->nwarn++], TOPO_WARNING_LEN, "line %d: %s", line % 10000000, msg);
  else
    snprintf(t->warn[t->nwarn++], TOPO_WARNING_LEN, "%s", msg);
}

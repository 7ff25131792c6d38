/* The model as one JSON document (cJSON): the settings in effect, every
 * node with its identity from the XML, one object per ordered pair of
 * GPUs and NICs, and the notes. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

typedef struct {
  bool ok;
} jb;

static cJSON *add(jb *b, cJSON *obj, const char *key, cJSON *item) {
  if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
    cJSON_Delete(item);
    b->ok = false;
    return NULL;
  }
  return item;
}

/* Bandwidths are floats in NCCL: 6 significant digits print as NCCL logs them. */
static double gbs(double v) {
  char s[32];
  snprintf(s, sizeof s, "%.6g", v);
  return strtod(s, NULL);
}

static void num(jb *b, cJSON *o, const char *k, double v) {
  add(b, o, k, cJSON_CreateNumber(v));
}
static void str(jb *b, cJSON *o, const char *k, const char *v) {
  add(b, o, k, cJSON_CreateString(v ? v : ""));
}
static void boolean(jb *b, cJSON *o, const char *k, bool v) {
  add(b, o, k, cJSON_CreateBool(v));
}

static void settings(jb *b, cJSON *root, const nt_topo *t, const nt_topo_env *e) {
  cJSON *s = add(b, root, "settings", cJSON_CreateObject());
  str(b, s, "p2p_level", nt_path_name(nt_topo_p2p_level(t, e)));
  str(b, s, "gdr_level", nt_path_name(nt_topo_gdr_level(e)));
  num(b, s, "NCCL_P2P_DISABLE", e->p2p_disable);
  num(b, s, "NCCL_NET_GDR_READ", e->gdr_read);
  num(b, s, "NCCL_NET_GDR_C2C", e->gdr_c2c);
  num(b, s, "NCCL_PXN_DISABLE", e->pxn_disable);
  num(b, s, "NCCL_PXN_C2C", e->pxn_c2c);
  num(b, s, "NCCL_NVB_DISABLE", e->nvb_disable);
  static const char *policies[] = {"AUTO", "ALL", "MAX"};
  str(b, s, "NCCL_NETDEVS_POLICY", policies[e->netdevs_policy % 3]);
  if (e->netdevs_policy == NT_NETDEVS_MAX) num(b, s, "netdevs_max", e->netdevs_max);
  num(b, s, "NCCL_P2P_READ_ENABLE", e->p2p_read_enable);
  num(b, s, "NCCL_P2P_USE_CUDA_MEMCPY", e->p2p_use_cuda_memcpy);
  num(b, s, "NCCL_NET_DISABLE_INTRA", e->net_disable_intra);
  if (e->version == NT_NCCL_230) {
    num(b, s, "NCCL_NET_GDR_MLOPART", e->gdr_mlopart);
    num(b, s, "NCCL_TOPO_SPLIT_MLOPART", e->split_mlopart);
  }
}

static void node_json(jb *b, cJSON *arr, const nt_topo *t, int i) {
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, i, &e);
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddItemToArray(arr, o)) {
    cJSON_Delete(o);
    b->ok = false;
    return;
  }
  bool gpu = i < t->ngpus;
  str(b, o, "id", e.label);
  str(b, o, "kind", gpu ? "gpu" : "net");
  str(b, o, "busid", e.busid);
  num(b, o, "dev", e.dev);
  if (gpu) {
    num(b, o, "rank", e.rank);
    num(b, o, "sm", e.sm);
    if (e.mlopart >= 0) num(b, o, "mlopart", e.mlopart);
  } else {
    char guid[24];
    snprintf(guid, sizeof guid, "0x%llx", (unsigned long long)e.guid);
    str(b, o, "name", e.name);
    str(b, o, "guid", guid);
    num(b, o, "port", e.port);
    num(b, o, "speed_gbs", gbs(e.speed_gbs));
    if (e.local_gpu >= 0) {
      char lg[16];
      snprintf(lg, sizeof lg, "GPU%d", e.local_gpu);
      str(b, o, "local_gpu", lg);
    }
  }
  boolean(b, o, "gdr_capable", e.gdr);
  if (e.numa > -2) num(b, o, "numa", e.numa);
  num(b, o, "line", e.line);
}

static void pair_json(jb *b, cJSON *arr, const nt_topo *t, int i, int j) {
  nt_topo_pair p;
  nt_topo_endpoint a, z;
  if (!nt_topo_pair_at(t, i, j, &p)) return;
  nt_topo_endpoint_at(t, i, &a);
  nt_topo_endpoint_at(t, j, &z);
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddItemToArray(arr, o)) {
    cJSON_Delete(o);
    b->ok = false;
    return;
  }
  str(b, o, "from", a.label);
  str(b, o, "to", z.label);
  str(b, o, "type", nt_path_name(p.type));
  num(b, o, "bw", gbs(p.bw));
  num(b, o, "hops", p.hops);
  bool gi = i < t->ngpus, gj = j < t->ngpus;
  if (gi && gj) {
    boolean(b, o, "p2p", p.p2p);
    boolean(b, o, "p2p_read", p.p2p_read);
    boolean(b, o, "p2p_transport", p.p2p_transport);
    boolean(b, o, "net_faster", p.net_faster);
  } else if (gi != gj) {
    boolean(b, o, "gdr", p.gdr);
    boolean(b, o, "gdr_read", p.gdr_read);
    str(b, o, "gdr_mode", !p.gdr && !p.gdr_read ? "off" : p.gdr_pci_mode ? "pci" : "default");
    boolean(b, o, "pxn", p.pxn);
  }
  if (p.via_gpu >= 0) {
    char via[16];
    snprintf(via, sizeof via, "GPU%d", p.via_gpu);
    str(b, o, "via", via);
  }
  cJSON *route = add(b, o, "route", cJSON_CreateArray());
  cJSON *hop_bw = add(b, o, "route_bw", cJSON_CreateArray());
  for (int k = 0; route && hop_bw && k < p.nhops_nodes; k++) {
    char label[48];
    nt_topo_node_label(t, p.route[k], label, sizeof label);
    if (!cJSON_AddItemToArray(route, cJSON_CreateString(label))) b->ok = false;
    if (k + 1 < p.nhops_nodes &&
        !cJSON_AddItemToArray(hop_bw, cJSON_CreateNumber(gbs(p.hop_bw[k]))))
      b->ok = false;
  }
  num(b, o, "bottleneck", p.bottleneck);
  if (p.truncated) boolean(b, o, "route_truncated", true);
}

char *nt_topo_to_json(const nt_topo *t, const nt_topo_env *env) {
  jb b = {.ok = true};
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  (void)env; /* the settings reported are those the pairs were computed with */
  env = &t->env;
  str(&b, root, "file", t->name);
  str(&b, root, "nccl_version", nt_topo_version_name(t->env.version));
  settings(&b, root, t, env);
  int ne = t->computed ? t->ngpus + t->nnets : 0;
  cJSON *nodes = add(&b, root, "nodes", cJSON_CreateArray());
  for (int i = 0; nodes && i < ne; i++) node_json(&b, nodes, t, i);
  cJSON *pairs = add(&b, root, "pairs", cJSON_CreateArray());
  for (int i = 0; pairs && i < ne; i++)
    for (int j = 0; j < ne; j++)
      if (i != j) pair_json(&b, pairs, t, i, j);
  cJSON *warn = add(&b, root, "warnings", cJSON_CreateArray());
  for (int i = 0; warn && i < nt_topo_nwarnings(t); i++)
    if (!cJSON_AddItemToArray(warn, cJSON_CreateString(nt_topo_warning(t, i)))) b.ok = false;
  char *s = b.ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return s;
}

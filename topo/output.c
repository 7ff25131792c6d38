/* The path matrix as text (nvidia-smi topo -m style, with bandwidths and
 * decisions) and as JSON (one object per ordered pair). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* "NVL 370" plus marks: '*' P2P (GPU pairs) or GDR (GPU/NET), 'r' read,
 * 'x' PXN. */
static void cell(const nt_topo *t, int i, int j, char *buf, size_t cap) {
  nt_topo_pair p;
  if (i == j) {
    snprintf(buf, cap, "X");
    return;
  }
  nt_topo_pair_at(t, i, j, &p);
  bool gpu_i = i < t->ngpus, gpu_j = j < t->ngpus;
  char marks[4] = "";
  if (gpu_i && gpu_j)
    snprintf(marks, sizeof marks, "%s%s", p.p2p ? "*" : "", p.p2p_read ? "r" : "");
  else if (gpu_i != gpu_j)
    snprintf(marks, sizeof marks, "%s%s%s", p.gdr ? "*" : "", p.gdr_read ? "r" : "",
             p.pxn && gpu_i ? "x" : "");
  if (p.type == NT_PATH_DIS)
    snprintf(buf, cap, "DIS");
  else
    snprintf(buf, cap, "%s %.4g%s", nt_path_name(p.type), p.bw, marks);
}

void nt_topo_print_text(FILE *out, const nt_topo *t) {
  int ne = t->ngpus + t->nnets;
  char c[32];
  fprintf(out, "%-8s", "");
  for (int j = 0; j < ne; j++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, j, &e);
    fprintf(out, " %-12s", e.label);
  }
  fputc('\n', out);
  for (int i = 0; i < ne; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    fprintf(out, "%-8s", e.label);
    for (int j = 0; j < ne; j++) {
      cell(t, i, j, c, sizeof c);
      fprintf(out, " %-12s", c);
    }
    fputc('\n', out);
  }
  fprintf(out,
          "\nLegend: cell = NCCL path type and bottleneck GB/s from row to column.\n"
          "  LOC same device, NVL NVLink (direct or NVSwitch), NVB NVLink through one GPU,\n"
          "  C2C GPU-CPU chip link, PIX one PCIe switch, PXB several switches, P2C C2C then\n"
          "  PCIe, PXN NVLink to another GPU then its NIC, PHB through a CPU, SYS across CPUs.\n"
          "  GPU pairs: * P2P on, r P2P read.  GPU/NET: * GDR on, r GDR read (send side),\n"
          "  x the GPU sends through PXN.\n\n");
  for (int i = 0; i < ne; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    if (i < t->ngpus)
      fprintf(out, "%-6s bus %-14s dev %d  rank %d  sm %d%s\n", e.label, e.busid, e.dev, e.rank,
              e.sm, e.gdr ? "  gdr" : "");
    else
      fprintf(out, "%-6s %-12s bus %-14s dev %d  %.4g GB/s%s\n", e.label, e.name,
              e.busid[0] ? e.busid : "-", e.dev, e.speed_gbs, e.gdr ? "  gdr" : "");
  }
}

static cJSON *endpoint_json(const nt_topo *t, int i) {
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, i, &e);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", e.label);
  cJSON_AddStringToObject(o, "kind", i < t->ngpus ? "gpu" : "net");
  cJSON_AddStringToObject(o, "busid", e.busid);
  if (i < t->ngpus) {
    cJSON_AddNumberToObject(o, "rank", e.rank);
    cJSON_AddNumberToObject(o, "sm", e.sm);
  } else {
    cJSON_AddStringToObject(o, "name", e.name);
    cJSON_AddNumberToObject(o, "speed_gbs", e.speed_gbs);
  }
  cJSON_AddNumberToObject(o, "dev", e.dev);
  cJSON_AddBoolToObject(o, "gdr_capable", e.gdr);
  return o;
}

char *nt_topo_to_json(const nt_topo *t, const nt_topo_env *env) {
  int ne = t->ngpus + t->nnets;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "file", t->name);
  cJSON_AddStringToObject(root, "nccl_rules", "2.28");
  cJSON *envj = cJSON_AddObjectToObject(root, "env");
  cJSON_AddStringToObject(envj, "p2p_level", nt_path_name(topo_p2p_level((nt_topo *)t)));
  cJSON_AddStringToObject(envj, "gdr_level",
                          nt_path_name(env->gdr_level >= 0 ? env->gdr_level : NT_PATH_PXB));
  cJSON_AddNumberToObject(envj, "gdr_read", env->gdr_read);
  cJSON_AddBoolToObject(envj, "pxn_disable", env->pxn_disable == 1);
  cJSON_AddBoolToObject(envj, "nvb_disable", env->nvb_disable == 1);
  cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
  for (int i = 0; i < ne; i++) cJSON_AddItemToArray(nodes, endpoint_json(t, i));
  cJSON *pairs = cJSON_AddArrayToObject(root, "pairs");
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      if (i == j) continue;
      nt_topo_pair p;
      nt_topo_pair_at(t, i, j, &p);
      nt_topo_endpoint a, b;
      nt_topo_endpoint_at(t, i, &a);
      nt_topo_endpoint_at(t, j, &b);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "from", a.label);
      cJSON_AddStringToObject(o, "to", b.label);
      cJSON_AddStringToObject(o, "type", nt_path_name(p.type));
      cJSON_AddNumberToObject(o, "bw", p.bw);
      cJSON_AddNumberToObject(o, "hops", p.hops);
      bool gi = i < t->ngpus, gj = j < t->ngpus;
      if (gi && gj) {
        cJSON_AddBoolToObject(o, "p2p", p.p2p);
        cJSON_AddBoolToObject(o, "p2p_read", p.p2p_read);
      } else if (gi != gj) {
        cJSON_AddBoolToObject(o, "gdr", p.gdr);
        cJSON_AddBoolToObject(o, "gdr_read", p.gdr_read);
        cJSON_AddBoolToObject(o, "gdr_pci_mode", p.gdr_pci_mode);
        cJSON_AddBoolToObject(o, "pxn", p.pxn);
      }
      if (p.via_gpu >= 0) {
        char via[16];
        snprintf(via, sizeof via, "GPU%d", p.via_gpu);
        cJSON_AddStringToObject(o, "via", via);
      }
      cJSON *route = cJSON_AddArrayToObject(o, "route");
      for (int k = 0; k < p.nhops_nodes; k++) {
        char label[48];
        nt_topo_node_label(t, p.route[k], label, sizeof label);
        cJSON_AddItemToArray(route, cJSON_CreateString(label));
      }
      cJSON_AddItemToArray(pairs, o);
    }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

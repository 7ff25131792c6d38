/* NCCL's view of a machine, from the topology XML NCCL writes with
 * NCCL_TOPO_DUMP_FILE: the graph (GPUs, PCI switches, NVSwitch, CPUs, NICs
 * and their network ports), the path between every GPU/NIC pair as NCCL
 * computes it (type, hops, bottleneck bandwidth) and NCCL's P2P, GDR and
 * PXN decisions under a set of environment overrides. Follows NCCL 2.28.9
 * (topo/README.md lists where and why we differ).
 */
#ifndef NCCLTOP_TOPO_H
#define NCCLTOP_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Path types, NCCL 2.27+ numbering (names are what users see). */
enum nt_path {
  NT_PATH_LOC,
  NT_PATH_NVL,
  NT_PATH_NVB,
  NT_PATH_C2C,
  NT_PATH_PIX,
  NT_PATH_PXB,
  NT_PATH_P2C,
  NT_PATH_PXN,
  NT_PATH_PHB,
  NT_PATH_SYS,
  NT_PATH_NET,
  NT_PATH_DIS,
  NT_PATH_COUNT
};
const char *nt_path_name(int type);
/* Parses NCCL's level syntax: a name (LOC..SYS, exact case) or an old
 * integer 0..5 (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4+ SYS). -1 if neither. */
int nt_path_parse(const char *s);

enum nt_node_type { NT_NODE_GPU, NT_NODE_PCI, NT_NODE_NVS, NT_NODE_CPU, NT_NODE_NIC, NT_NODE_NET };

/* Environment overrides, as NCCL reads them. -1 / -2 mean "unset". */
typedef struct {
  int p2p_disable; /* NCCL_P2P_DISABLE: 1 = no P2P */
  int p2p_level;   /* NCCL_P2P_LEVEL, a path type; -1 = default */
  int gdr_level;   /* NCCL_NET_GDR_LEVEL; -1 = default (PXB) */
  int gdr_read;    /* NCCL_NET_GDR_READ; -2 = default */
  int gdr_c2c;     /* NCCL_NET_GDR_C2C; default 1 */
  int pxn_disable; /* NCCL_PXN_DISABLE */
  int pxn_c2c;     /* NCCL_PXN_C2C; default 1 */
  int nvb_disable; /* NCCL_NVB_DISABLE */
} nt_topo_env;

void nt_topo_env_defaults(nt_topo_env *e);
/* "NAME=VALUE" for one of the variables above; -1 with a message otherwise. */
int nt_topo_env_set(nt_topo_env *e, const char *assignment, char *err, size_t errlen);
/* Every name nt_topo_env_set understands, NULL-terminated. */
extern const char *const nt_topo_env_names[];

typedef struct nt_topo nt_topo;

/* Loads NCCL's topology XML. NULL with "FILE:LINE: problem" in err. */
nt_topo *nt_topo_load_file(const char *path, char *err, size_t errlen);
nt_topo *nt_topo_load_buffer(const char *xml, size_t len, const char *name, char *err,
                             size_t errlen);
void nt_topo_free(nt_topo *t);

/* Recomputes every path and decision for env (cheap: call it on every
 * what-if change). */
int nt_topo_compute(nt_topo *t, const nt_topo_env *env, char *err, size_t errlen);

/* The matrix rows and columns: GPUs then NETs (NIC ports), in NCCL's order. */
int nt_topo_ngpus(const nt_topo *t);
int nt_topo_nnets(const nt_topo *t);

typedef struct {
  const char *label; /* "GPU0", "NET3" */
  const char *busid; /* GPU/NIC PCI bus id, "" when none */
  const char *name;  /* NET device name, "" for GPUs */
  int dev;           /* GPU NVML index / NET plugin device index */
  int rank;          /* GPU rank in the dumping communicator, -1 for NETs */
  int sm;            /* GPUs */
  double speed_gbs;  /* NETs */
  bool gdr;          /* the device's own GDR support attribute */
} nt_topo_endpoint;
/* i in 0..ngpus+nnets-1: GPUs first. */
void nt_topo_endpoint_at(const nt_topo *t, int i, nt_topo_endpoint *out);

#define NT_TOPO_MAX_HOPS 32
typedef struct {
  int type;  /* enum nt_path, after NCCL's rewrites */
  double bw; /* bottleneck GB/s */
  int hops;
  bool p2p, p2p_read; /* GPU->GPU */
  int via_gpu;        /* NVB or PXN relay GPU index, -1 none */
  bool gdr, gdr_read; /* GPU<->NET: receive side (read 0), send side (read 1) */
  bool gdr_pci_mode;  /* GDR through PCIe on a C2C system */
  bool pxn;           /* GPU->NET goes through another GPU's NIC path */
  int nhops_nodes;    /* nodes on the route, source first */
  int route[NT_TOPO_MAX_HOPS + 1];
  int bottleneck; /* index into route of the slowest hop's start, -1 for LOC */
} nt_topo_pair;

/* The pair (row i, column j) in endpoint numbering. False if out of range. */
bool nt_topo_pair_at(const nt_topo *t, int i, int j, nt_topo_pair *out);
/* A node on a route, for explanations: "GPU0", "PCI 0000:a1:00.0", "CPU0", "NVS". */
void nt_topo_node_label(const nt_topo *t, int node, char *buf, size_t cap);
/* Bandwidth of the hop route[k] -> route[k+1] of a pair. */
double nt_topo_hop_bw(const nt_topo *t, const nt_topo_pair *p, int k);

/* Output in the style of `nvidia-smi topo -m`, with bandwidths and decisions. */
void nt_topo_print_text(FILE *out, const nt_topo *t);
/* JSON document (cJSON), caller frees; NULL on allocation failure. */
char *nt_topo_to_json(const nt_topo *t, const nt_topo_env *env);

/* `nccltop topo FILE [--env NAME=VALUE ...] [--json]`; argv[0] is "topo". */
int nt_topo_main(int argc, char **argv);

#endif

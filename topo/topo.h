/* NCCL's view of a machine, from the topology XML NCCL writes with
 * NCCL_TOPO_DUMP_FILE: the graph (GPUs, PCI switches, NVSwitch, CPUs/NUMA
 * nodes, NICs and their network ports), the path between every GPU/NIC pair
 * as NCCL computes it (type, hops, bottleneck bandwidth) and NCCL's P2P, GDR
 * and PXN decisions under a set of environment overrides. Follows NCCL 2.28.9
 * by default and 2.30.7 on request (topo/README.md lists both and every place
 * where we deliberately differ).
 *
 * Life cycle: load (parse and validate) -> compute (graph, paths, decisions
 * for one nt_topo_env; cheap, call it again for every what-if) -> read the
 * matrix (nt_topo_pair_at) and the graph (nt_topo_node_at, nt_topo_link_at).
 * Every string read from the file is sanitized (control characters escaped)
 * before it reaches the model, so it is safe to print on a terminal.
 */
#ifndef NCCLTOP_TOPO_H
#define NCCLTOP_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tuning.h"

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
/* NCCL's level syntax (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL): a name LOC..SYS
 * in exact case, or an old integer when the first character is a digit
 * (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS). -1 if neither: NCCL then
 * ignores the variable. */
int nt_path_parse(const char *s);

/* Graph node types. DEV (a physical GPU, with its ranks as GPU leaves) exists
 * only in the 2.30 model; CXB is 2.30's shared C2C bridge of a split GPU. */
enum nt_node_type {
  NT_NODE_GPU,
  NT_NODE_PCI,
  NT_NODE_NVS,
  NT_NODE_CPU,
  NT_NODE_NIC,
  NT_NODE_NET,
  NT_NODE_DEV,
  NT_NODE_CXB,
  NT_NODE_TYPES
};
const char *nt_node_type_name(int type);

/* Link types, NCCL 2.28 numbering. */
enum {
  NT_LINK_LOC = 0,
  NT_LINK_NVL = 1,
  NT_LINK_C2C = 3,
  NT_LINK_PCI = 4,
  NT_LINK_SYS = 9,
  NT_LINK_NET = 10
};
const char *nt_link_name(int type);

/* Which NCCL's rules: 228 = 2.28.9 (the default), 230 = 2.30.7. */
enum { NT_NCCL_228 = 228, NT_NCCL_230 = 230 };
/* "2.28", "2.28.9", "2.30", "2.30.7" -> NT_NCCL_*; -1 otherwise. */
int nt_topo_version_parse(const char *s);
const char *nt_topo_version_name(int version); /* "2.28.9" / "2.30.7" */

/* NCCL_NETDEVS_POLICY */
enum { NT_NETDEVS_AUTO, NT_NETDEVS_ALL, NT_NETDEVS_MAX };

/* Environment overrides, with NCCL's meaning of each value. Integer
 * variables hold what NCCL's parser reads (strtoll, base auto-detected). */
typedef struct {
  int p2p_disable;         /* NCCL_P2P_DISABLE: only 1 disables (level LOC) */
  int p2p_level;           /* NCCL_P2P_LEVEL as a path type; -1 = unset */
  int gdr_level;           /* NCCL_NET_GDR_LEVEL as a path type; -1 = unset */
  int gdr_read;            /* NCCL_NET_GDR_READ: -2 default, 0 off, >0 on */
  int gdr_c2c;             /* NCCL_NET_GDR_C2C: default 1 */
  int pxn_disable;         /* NCCL_PXN_DISABLE: only 1 disables */
  int pxn_c2c;             /* NCCL_PXN_C2C: default 1 */
  int nvb_disable;         /* NCCL_NVB_DISABLE: nonzero disables */
  int version;             /* NT_NCCL_228 or NT_NCCL_230 (not an NCCL variable) */
  int netdevs_policy;      /* NCCL_NETDEVS_POLICY: NT_NETDEVS_* */
  int netdevs_max;         /* N of MAX:N */
  int p2p_read_enable;     /* NCCL_P2P_READ_ENABLE: -2 default, else replaces P2P read */
  int p2p_use_cuda_memcpy; /* NCCL_P2P_USE_CUDA_MEMCPY: nonzero = copy engines */
  int net_disable_intra;   /* NCCL_NET_DISABLE_INTRA: 1 = never prefer NET inside a node */
  int gdr_mlopart;         /* NCCL_NET_GDR_MLOPART (2.30): default 0 */
  int split_mlopart;       /* NCCL_TOPO_SPLIT_MLOPART (2.30): default 1 */
  int ignore_disabled_p2p; /* NCCL_IGNORE_DISABLED_P2P: accepted, no effect (no NVML data) */
  /* The channel search only (nt_topo_graphs_compute): */
  int min_nchannels, max_nchannels; /* NCCL_MIN/MAX_NCHANNELS: -2 unset */
  int min_nrings, max_nrings;       /* NCCL_MIN/MAX_NRINGS, their old names: -2 unset */
  int cross_nic;                    /* NCCL_CROSS_NIC: 0 same rail, 1 any NIC, 2 (default) try */
  int min_ctas, max_ctas;           /* NCCL_MIN/MAX_CTAS: taken when > 0 (else 1 and 64) */
} nt_topo_env;

void nt_topo_env_defaults(nt_topo_env *e);
/* Applies "NAME=VALUE" for one of nt_topo_env_names. Returns 0 when applied
 * cleanly; 1 when applied the way NCCL reads it but with a note in err (for
 * example "yes" read as 0); -1 with a message when NAME is not modelled, the
 * text is not NAME=VALUE, or NCCL would ignore the value (a level name in the
 * wrong case): the environment is then unchanged. */
int nt_topo_env_set(nt_topo_env *e, const char *assignment, char *err, size_t errlen);
/* Applies every modelled variable present in this process's environment.
 * Returns the number applied; notes (one per line) go to err. */
int nt_topo_env_from_environ(nt_topo_env *e, char *err, size_t errlen);
/* Every name nt_topo_env_set understands, NULL-terminated. */
extern const char *const nt_topo_env_names[];

typedef struct nt_topo nt_topo;
/* The levels NCCL uses under e, defaults resolved: P2P (the default depends
 * on the machine: SYS for an AMD CPU 0 with at most two GPUs) and GDR. */
int nt_topo_p2p_level(const nt_topo *t, const nt_topo_env *e);
int nt_topo_gdr_level(const nt_topo_env *e);

/* Loads NCCL's topology XML. NULL with "FILE:LINE: problem" in err. */
nt_topo *nt_topo_load_file(const char *path, char *err, size_t errlen);
/* The file's bytes (NUL-terminated, *len without the NUL; the caller frees)
 * if it is a regular file within the size limit; NULL with the reason in
 * err otherwise. Never blocks on a FIFO or a device. */
char *nt_topo_read_file(const char *path, size_t *len, char *err, size_t errlen);
nt_topo *nt_topo_load_buffer(const char *xml, size_t len, const char *name, char *err,
                             size_t errlen);
void nt_topo_free(nt_topo *t);

/* Builds the graph for env->version and recomputes every path and decision.
 * -1 with a message when NCCL would refuse the file under that version (the
 * previous results are then gone: nt_topo_pair_at returns false). */
int nt_topo_compute(nt_topo *t, const nt_topo_env *env, char *err, size_t errlen);
/* The environment of the last successful compute. */
const nt_topo_env *nt_topo_current_env(const nt_topo *t);

/* Notes about the file and the last compute: what NCCL's own stricter parser
 * would refuse, what NCCL ignores, where we were lenient. */
int nt_topo_nwarnings(const nt_topo *t);
const char *nt_topo_warning(const nt_topo *t, int i);

/* The matrix rows and columns: GPUs then NETs (NIC ports), in NCCL's order
 * (document order, not dev order). */
int nt_topo_ngpus(const nt_topo *t);
int nt_topo_nnets(const nt_topo *t);

typedef struct {
  const char *label; /* "GPU0", "NET3" */
  const char *busid; /* GPU bus id / bus id of the NET's NIC, "" when none */
  const char *name;  /* NET device name, "" for GPUs */
  int dev;           /* GPU NVML index / NET plugin device index */
  int rank;          /* GPU rank in the dumping communicator, -1 for NETs */
  int sm;            /* GPUs */
  double speed_gbs;  /* NETs: GB/s (speed attribute in Mb/s / 8000) */
  bool gdr;          /* the device's own GDR support attribute */
  int numa;          /* numaid of the local CPU, -2 when unknown */
  int local_gpu;     /* NETs: the NIC's local GPU (PXN relay), -1 none */
  int port;          /* NETs: port attribute */
  int mlopart;       /* GPUs (2.30): MLOPart partition, -1 none */
  uint64_t guid;     /* NETs: guid attribute (0 when absent) */
  int line;          /* where it is in the file */
} nt_topo_endpoint;
/* i in 0..ngpus+nnets-1: GPUs first. */
void nt_topo_endpoint_at(const nt_topo *t, int i, nt_topo_endpoint *out);

#define NT_TOPO_MAX_HOPS 32
typedef struct {
  int type;           /* enum nt_path, after NCCL's rewrites */
  double bw;          /* bottleneck GB/s (the slowest link on the route) */
  int hops;           /* NCCL's hop count for this version */
  bool p2p, p2p_read; /* GPU->GPU: NCCL's P2P decision and P2P read */
  bool net_faster;    /* GPU->GPU: P2P transport declines, NET is faster (ncclTopoCheckNet) */
  bool p2p_transport; /* GPU->GPU: NCCL's P2P transport takes the pair (p2p, not declined) */
  int via_gpu;        /* NVB or PXN relay GPU index, -1 none */
  bool gdr, gdr_read; /* GPU<->NET: receive side (read 0), send side (read 1) */
  bool gdr_pci_mode;  /* GDR through PCIe on a C2C system (GDRDMA(PCI)) */
  bool pxn;           /* GPU->NET goes through another GPU's NIC path */
  int nhops_nodes;    /* nodes stored in route (hops + 1 unless truncated) */
  int route[NT_TOPO_MAX_HOPS + 1]; /* graph node indices, source first */
  int bottleneck;                  /* index into route of the slowest hop's start, -1 for LOC */
  bool truncated;                 /* route longer than NT_TOPO_MAX_HOPS: only its start is stored */
  float hop_bw[NT_TOPO_MAX_HOPS]; /* GB/s of hop route[k] -> route[k+1] */
  unsigned char hop_type[NT_TOPO_MAX_HOPS]; /* link type of that hop */
} nt_topo_pair;

/* The pair (row i, column j) in endpoint numbering. False if out of range
 * or nothing is computed. */
bool nt_topo_pair_at(const nt_topo *t, int i, int j, nt_topo_pair *out);
/* Bandwidth of the hop route[k] -> route[k+1] of a pair. */
double nt_topo_hop_bw(const nt_topo *t, const nt_topo_pair *p, int k);

/* The whole graph of the last compute, for drawing it. */
typedef struct {
  int type;          /* enum nt_node_type */
  const char *label; /* "GPU0", "NET1", "CPU0", "PCI 0000:a1:00.0", "NVS" ... */
  const char *busid; /* "" when none */
  int nlinks;
  int endpoint; /* index in the matrix for GPUs and NETs, -1 otherwise */
  int numa;     /* CPUs: numaid */
  bool removed; /* a Broadcom sub-switch merged into its parent: no links */
} nt_topo_node;
int nt_topo_nnodes(const nt_topo *t);
bool nt_topo_node_at(const nt_topo *t, int node, nt_topo_node *out);
typedef struct {
  int type;   /* NT_LINK_* */
  int remote; /* node index */
  double bw;  /* GB/s */
} nt_topo_link;
/* Links of a node in NCCL's order (bandwidth, uplink last). */
bool nt_topo_link_at(const nt_topo *t, int node, int k, nt_topo_link *out);
/* A node on a route, for explanations: "GPU0", "PCI 0000:a1:00.0", "CPU0", "NVS". */
void nt_topo_node_label(const nt_topo *t, int node, char *buf, size_t cap);

/* The matrix in the style of `nvidia-smi topo -m`, with bandwidths,
 * decisions, a legend, the devices and the warnings. */
void nt_topo_print_text(FILE *out, const nt_topo *t);
/* Its width in columns (the longest row). */
int nt_topo_text_width(const nt_topo *t);
/* The compact form, for narrow terminals: each cell the number of its kind
 * (a distinct cell text), the kinds listed below; an 8 GPU x 8 NIC box
 * fits 80 columns. */
void nt_topo_print_compact(FILE *out, const nt_topo *t);
/* One cell's text, "NVL 370.8*r": type, bottleneck GB/s and the marks of
 * the legend (what both forms and the monitor show); "X" on the diagonal. */
#define NT_TOPO_CELL_LEN 32
void nt_topo_cell_text(const nt_topo *t, int i, int j, char *buf, size_t cap);
/* The distinct cell texts off the diagonal, numbered from 1 in row order. */
#define NT_TOPO_MAX_KINDS 99
typedef struct {
  int n;
  bool more; /* kinds beyond NT_TOPO_MAX_KINDS, shown as ? */
  char text[NT_TOPO_MAX_KINDS][NT_TOPO_CELL_LEN];
} nt_topo_kinds;
void nt_topo_kinds_build(const nt_topo *t, nt_topo_kinds *k);
int nt_topo_kind_of(const nt_topo_kinds *k, const char *cell); /* 1.., 0 none */
/* JSON document (cJSON), caller frees; NULL on allocation failure. */
char *nt_topo_to_json(const nt_topo *t, const nt_topo_env *env);

/* ---- NCCL's channels: the ring and tree graphs and what they connect ----
 * What NCCL's channel search (src/graph/search.cc) finds on the machine of
 * the last nt_topo_compute, under its environment, for a communicator over
 * `nodes` identical copies of it (ranks node-major: node n holds ranks
 * n*G..n*G+G-1, its GPUs in the order of their rank attribute), and the
 * rings and trees NCCL then connects (connect.cc). */
#define NT_TOPO_MAX_GRAPH_NODES 128
/* NCCL's pattern numbers, as NCCL_GRAPH_DUMP_FILE writes them. */
enum {
  NT_PATTERN_BALANCED_TREE = 1,
  NT_PATTERN_SPLIT_TREE = 2,
  NT_PATTERN_TREE = 3,
  NT_PATTERN_RING = 4
};
typedef struct nt_topo_graphs nt_topo_graphs;
/* NULL with the reason when nothing is computed, the file has no GPU or
 * nodes is out of 1..NT_TOPO_MAX_GRAPH_NODES. The search borrows the
 * graph's link bandwidths and gives them back: t is unchanged after. */
nt_topo_graphs *nt_topo_graphs_compute(nt_topo *t, int nodes, char *err, size_t errlen);
void nt_topo_graphs_free(nt_topo_graphs *g);
int nt_topo_graphs_nodes(const nt_topo_graphs *g);
int nt_topo_graphs_nranks(const nt_topo_graphs *g);

/* One search's result (which: 0 the ring graph, 1 the tree graph). */
typedef struct {
  int pattern;                /* NT_PATTERN_*: a tree search may settle on TREE */
  int nchannels;              /* search channels, as the graph dump lists them */
  double bw_intra, bw_inter;  /* GB/s per channel */
  int type_intra, type_inter; /* enum nt_path */
  int same_channels, cross_nic;
  int ngpus; /* GPUs per channel */
} nt_topo_graph_info;
bool nt_topo_graphs_graph(const nt_topo_graphs *g, int which, nt_topo_graph_info *out);
/* The k-th GPU of search channel c (a GPU endpoint index), -1 out of range. */
int nt_topo_graphs_channel_gpu(const nt_topo_graphs *g, int which, int c, int k);
/* The NET a channel comes in on (out = 0) or leaves by (1), as an endpoint
 * index; -1 on one node, where channels touch no NIC. */
int nt_topo_graphs_channel_net(const nt_topo_graphs *g, int which, int c, int out);

/* What NCCL connects: its channel count (search channels doubled, then
 * NCCL_MAX/MIN_NCHANNELS), each channel's ring (nranks ranks from rank 0)
 * and each rank's tree parent and up to 3 children (-1 for none). */
int nt_topo_graphs_nchannels(const nt_topo_graphs *g);
const int *nt_topo_graphs_ring(const nt_topo_graphs *g, int c);
bool nt_topo_graphs_tree(const nt_topo_graphs *g, int c, int rank, int *up, int down[3]);
/* The GPU endpoint index a rank runs on (in its node). */
int nt_topo_graphs_rank_gpu(const nt_topo_graphs *g, int rank);
/* The local rank (0 .. GPUs - 1, the GPUs in the order of their rank
 * attribute) of the k-th GPU of search channel c; -1 out of range. */
int nt_topo_graphs_channel_local(const nt_topo_graphs *g, int which, int c, int k);

/* ---- the rings and trees over a communicator's ranks as they are ----
 * connect.cc over an explicit layout (init.cc numbers the nodes: in the
 * order of their lowest rank; a node's local ranks are its ranks
 * ascending), every node running the same per-node graphs, given in local
 * ranks: what NCCL connects for a job whose ranks are not node-major. */
#define NT_TOPO_MAX_CONNECT_RANKS 65536
typedef struct {
  int nnodes, nlocal;                 /* nodes; ranks on each (GPUs per channel) */
  const int *node_ranks;              /* [n * nlocal + k]: node n's k-th rank, ascending */
  int ring_channels, tree_channels;   /* search channels, 1..64 each */
  const int *ring_local, *tree_local; /* [c * nlocal + i]: local rank at position i of channel c */
  int ring_cross_nic;                 /* the ring graph's crossNic (2: odd nodes swap pairs) */
  int tree_pattern;                   /* NT_PATTERN_* of the tree graph */
  double ring_bw_intra;               /* GB/s (fast Hopper rings across nodes are doubled) */
  int min_sm;                         /* lowest compute capability (90: Hopper); 0 unknown */
  const nt_topo_env *env;             /* channel and CTA limits; NULL: NCCL's defaults */
} nt_topo_layout;
typedef struct nt_topo_rings nt_topo_rings;
/* NULL with one line in err when the layout is not one NCCL could have
 * (ranks not 0..nnodes*nlocal-1 once each, a channel that does not visit
 * each local rank once) or memory runs out. */
nt_topo_rings *nt_topo_connect(const nt_topo_layout *l, char *err, size_t errlen);
void nt_topo_rings_free(nt_topo_rings *r);
int nt_topo_rings_nranks(const nt_topo_rings *r);
int nt_topo_rings_nchannels(const nt_topo_rings *r);
/* Channel c's ring, nranks ranks from rank 0; NULL out of range. */
const int *nt_topo_rings_ring(const nt_topo_rings *r, int c);
/* Rank's tree parent and up to 3 children in channel c (-1 for none). */
bool nt_topo_rings_tree(const nt_topo_rings *r, int c, int rank, int *up, int down[3]);
const char *nt_topo_pattern_name(int pattern); /* "ring", "tree", "balanced tree", ... */

/* NCCL's tuning model (tuning.h) for these graphs: the latency and
 * bandwidth of every collective, algorithm and protocol and, from them,
 * NCCL's picks. The communicator's facts come from the topology file (GPU
 * compute capabilities, the first CPU, an NVSwitch); env holds the tuning
 * variables (NULL: defaults). -1 with the reason as nt_tune_compute. */
int nt_topo_graphs_tune(const nt_topo *t, const nt_topo_graphs *g, const nt_tune_env *env,
                        nt_tune_model *m, char *err, size_t errlen);

/* The graphs as text, then the model and NCCL's picks by size when m is
 * not NULL. */
void nt_topo_graphs_print_text(FILE *out, const nt_topo *t, const nt_topo_graphs *g,
                               const nt_tune_model *m);
/* The JSON document (cJSON): nodes, ranks, graphs, rings, trees, and with
 * m, model and choice (nt_tune_add_json); the caller frees; NULL on
 * allocation failure. */
char *nt_topo_graphs_to_json(const nt_topo *t, const nt_topo_graphs *g, const nt_tune_model *m);

/* `nccltop topo FILE [--env NAME=VALUE ...] [--from-env] [--json]
 * [--nccl-version 2.28|2.30]`; argv[0] is "topo". Returns the exit code. */
int nt_topo_main(int argc, char **argv);

#endif

/* topo/'s channel search, internal to search*.c, connect.c and graphs_out.c:
 * the graph one pattern's search leaves (NCCL's ncclTopoGraph, with GPU and
 * NET positions instead of ranks and ids) and the search's scratch state
 * (bandwidth NCCL subtracts from the links and NICs while it tries a
 * channel, GPUs used per channel). */
#ifndef NCCLTOP_TOPO_SEARCH_H
#define NCCLTOP_TOPO_SEARCH_H

#include "internal.h"

/* NCCL's pattern numbers (graph.h), as the graph dump writes them. */
enum { PATTERN_BALANCED_TREE = 1, PATTERN_SPLIT_TREE = 2, PATTERN_TREE = 3, PATTERN_RING = 4 };

typedef struct {
  int pattern, cross_nic, nchannels, min_channels, max_channels, same_channels;
  int nhops;
  float bw_intra, bw_inter;
  int type_intra, type_inter;
  /* channel c: intra[c * ngpus + k] the k-th GPU (position in t->gpus);
   * inter[2c], inter[2c + 1] the NET in and out (position in t->nets, -1) */
  int8_t intra[NCCL_MAXCHANNELS * TOPO_MAX_GPUS];
  int16_t inter[NCCL_MAXCHANNELS * 2];
} topo_graph;

typedef struct {
  nt_topo *t;
  bool inter;                   /* several nodes: channels start and end on a NIC */
  float max_bw;                 /* ncclTopoSearchInit: best path bandwidth of one GPU */
  float total_bw;               /* and a GPU's total NVLink or PCI bandwidth */
  int cross_nic;                /* NCCL_CROSS_NIC (default 2) */
  uint64_t used[TOPO_MAX_GPUS]; /* bit c: GPU already in channel c */
  float net_bw[TOPO_MAX_NETS];  /* what is left of each NIC's bandwidth */
  uint64_t asic[TOPO_MAX_NETS]; /* the guid, or the NET's id without one */
  int local_gpu[TOPO_MAX_NETS]; /* NET's local GPU as a position in t->gpus, -1 */
  bool failed;                  /* a link without its reverse (NCCL fails) */
  /* each GPU's preferred NICs (the last row: every GPU's), computed once:
   * they depend on the paths only */
  int16_t pref[TOPO_MAX_GPUS + 1][TOPO_MAX_NETS];
  int npref[TOPO_MAX_GPUS + 1]; /* -1: not computed yet */
} topo_search;

/* search.c: ncclTopoSearchInit, then ncclTopoCompute for graph->pattern
 * with graph->min_channels / max_channels set. */
int topo_search_init(topo_search *s, nt_topo *t, bool inter, int cross_nic, char *err,
                     size_t errlen);
int topo_graph_compute(topo_search *s, topo_graph *graph, char *err, size_t errlen);

/* search_net.c: ncclTopoSelectNets (NETs to try, preferred first) for one
 * GPU position, or every GPU with gpu = -1; returns the count. */
int topo_select_nets(topo_search *s, int type_inter, int gpu, int *nets);
/* ncclTopoSearchCheckNet: may a channel that came in on NET start_net go
 * out on NET n at this step? */
bool topo_check_net(const topo_search *s, const topo_graph *g, int start_net, int n, int step);
/* The position in t->gpus of a GPU node, -1. */
int topo_gpu_pos(const nt_topo *t, int node);

#endif

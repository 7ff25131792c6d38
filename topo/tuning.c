/* ncclTopoTuneModel (src/graph/tuning.cc) in NCCL 2.28.9 and 2.30.7: the
 * latency and bandwidth of every collective, algorithm and protocol, then
 * which pairs are enabled. NCCL mixes float and double from line to line;
 * we keep each intermediate in the type NCCL keeps it in (the constants are
 * doubles, the per-entry results floats), so the numbers and the ties of
 * the selection come out bit for bit. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "topo.h"
#include "tuning.h"
#include "tuning_internal.h"

/* NCCL's tuner constants (ncclTunerConstantsDefaults), indexed
 * [hardware][algorithm][protocol] and [arch or CPU][nodes: 1, 2, 4+].
 * The tables keep NCCL's layout; clang-format would scramble them. */
/* clang-format off */
static const double base_latency[NT_TUNE_NALGOS][NT_TUNE_NPROTOS] = {
  {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, /* Tree, Ring (LL, LL128, Simple) */
  {0, 0, 0}, {0, 0, 0},               /* CollNet Direct, Chain */
  {0, 0, 0}, {0, 0, 0},               /* NVLS, NVLS Tree */
  {8.0, 8.0, 8.0}};                   /* PAT */

enum { HW_NVLINK, HW_PCI, HW_NET };
static const double hw_latency[3][NT_TUNE_NALGOS][NT_TUNE_NPROTOS] = {
  /* NVLink */
  {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
  /* PCI */
  {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
  /* NET */
  {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};

enum { CC_VOLTA, CC_AMPERE, CC_HOPPER, CC_BLACKWELL };
/* Rows: Volta, Ampere, Hopper, Blackwell (for LL on one node; across nodes
 * row 0 is Intel, row 1 AMD); columns 1, 2, 4+ nodes. */
static const double ll_max_bw[4][3] = {
  {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
static const double ring_ll128_max_228[4][3] = {
  {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}};
/* 2.30.7: Blackwell's ring LL128 cap is 40 GB/s per channel at every scale. */
static const double ring_ll128_max_230[4][3] = {
  {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
static const double tree_ll128_max[4][3] = {
  {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double tree_max[4][3] = {
  {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double nvls_tree_max_228[4][3] = {
  {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}};
/* 2.30.7: Blackwell NVLS trees over 4+ nodes 80 GB/s (2.28.9: 43.8). */
static const double nvls_tree_max_230[4][3] = {
  {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
static const float nvls_efficiency[4] = {0.0f, 0.0f, 0.85f, 0.74f};
/* clang-format on */

#define PCI_BW                  12.0 /* GB/s, PCI Gen3 x16: below it Simple rings get 256 threads */
#define WARP                    32
#define SIMPLE_MAX_NTHREADS     512
#define LL_MAX_NTHREADS         512
#define LL128_MAX_NTHREADS      640
#define MAX_NTHREADS            640
#define LL_THREAD_THRESHOLD     8 /* comm.h */
#define LL128_THREAD_THRESHOLD  8
#define SIMPLE_THREAD_THRESHOLD 64

static int nthreads(long long env, int min, int max, int def) {
  int nt = (int)env; /* NCCL passes the int64 parameter as an int */
  if (nt <= 0) return def;
  if (nt % WARP != 0) return max;
  if (nt > max) return max;
  if (nt < min) return min;
  return nt;
}

/* log2i: floor(log2 n), -1 for 0 (NCCL's log2Down). */
int tune_log2i(long n) {
  int r = -1;
  while (n > 0) {
    n >>= 1;
    r++;
  }
  return r;
}

static float net_overhead(const nt_tune_input *in) {
  if (in->env.net_overhead != -2) return (float)((double)in->env.net_overhead * .001);
  if (in->cpu_arch == NT_TUNE_ARCH_X86 && in->cpu_vendor == NT_TUNE_VENDOR_INTEL) return 1.0f;
  if (in->cpu_arch == NT_TUNE_ARCH_X86 && in->cpu_vendor == NT_TUNE_VENDOR_AMD) return 2.0f;
  return 1.0f;
}

/* ncclPatEnable: PAT needs SM60, one GPU per node and a host net device,
 * unless NCCL_PAT_ENABLE says otherwise. */
static int pat_enable(const nt_tune_input *in) {
  int env = (int)in->env.pat_enable;
  if (in->min_sm < 60) return 0;
  if (env != 2) return env;
  if (in->nnodes != in->nranks) return 0;
  if (in->net_unpack) return 0;
  return 1;
}

static double dmin(double a, double b) {
  return a < b ? a : b;
}
static float fmin3(float a, float b, float c) {
  float m = a < b ? a : b;
  return m < c ? m : c;
}

/* The graphs NCCL hands the tuning, indexed by algorithm: PAT uses the
 * tree graph, NVLS Tree the NVLS graph (init.cc's graphs[]). */
static void graphs_of(const nt_tune_input *in, nt_tune_graph g[NT_TUNE_NALGOS]) {
  g[NT_TUNE_TREE] = in->tree;
  g[NT_TUNE_RING] = in->ring;
  g[NT_TUNE_COLLNET_DIRECT] = in->collnet_direct;
  g[NT_TUNE_COLLNET_CHAIN] = in->collnet_chain;
  g[NT_TUNE_NVLS] = in->nvls;
  g[NT_TUNE_NVLS_TREE] = in->nvls;
  g[NT_TUNE_PAT] = in->tree;
  /* init.cc: tree and ring keep the smaller channel count of the two. */
  int nc = in->tree.channels < in->ring.channels ? in->tree.channels : in->ring.channels;
  g[NT_TUNE_TREE].channels = g[NT_TUNE_RING].channels = g[NT_TUNE_PAT].channels = nc;
}

/* Bandwidth (before the bus -> algorithm conversion) of one entry. */
static float bus_bw(const nt_tune_input *in, const nt_tune_graph *gr, int coll, int a, int p,
                    int cc, int scale, double ll_max) {
  int nnodes = in->nnodes;
  float ppn = (float)in->nranks / (float)nnodes;
  bool collnet = a == NT_TUNE_COLLNET_DIRECT || a == NT_TUNE_COLLNET_CHAIN;
  const double(*ring_ll128)[3] =
      in->version == NT_NCCL_230 ? ring_ll128_max_230 : ring_ll128_max_228;
  const double(*nvls_tree)[3] = in->version == NT_NCCL_230 ? nvls_tree_max_230 : nvls_tree_max_228;
  float bw = nnodes <= 2 || collnet ? gr->bw_intra : gr->bw_inter;
  if (a == NT_TUNE_NVLS || a == NT_TUNE_NVLS_TREE) {
    /* NVLS bus bandwidth per channel: the multicast efficiency over all
     * channels but one; AllReduce pipelines two operations. */
    float intra =
        gr->bw_intra * nvls_efficiency[cc] * (float)(gr->channels - 1) / (float)gr->channels;
    if (coll == NT_TUNE_ALLREDUCE)
      intra *= 2.0f;
    else
      intra *= (ppn - 1) / ppn;
    float inter = gr->bw_inter * ((nnodes <= 2 && a == NT_TUNE_NVLS_TREE) ? 2 : 1);
    bw = fmin3(intra, inter, a == NT_TUNE_NVLS_TREE ? (float)nvls_tree[cc][scale] : FLT_MAX);
  }
  float bus = (float)gr->channels * bw;
  if (a == NT_TUNE_RING && p == NT_TUNE_LL) bus = (float)dmin(ll_max, bus * .5);
  if (a == NT_TUNE_RING && p == NT_TUNE_LL128)
    bus = (float)dmin(bus * 0.92, gr->channels * ring_ll128[cc][scale]);
  if (a == NT_TUNE_TREE && coll == NT_TUNE_ALLREDUCE)
    bus = (float)dmin(bus * .92, gr->channels * tree_max[cc][scale]);
  if (a == NT_TUNE_TREE && p == NT_TUNE_LL) bus = (float)dmin(bus * 1.0 / 3.8, ll_max);
  if (a == NT_TUNE_TREE && p == NT_TUNE_LL128)
    bus = (float)dmin(bus * (nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      gr->channels * tree_ll128_max[cc][scale]);
  if (a == NT_TUNE_TREE && in->tree.pattern == NT_TUNE_PATTERN_TREE) bus *= .85;
  if (a == NT_TUNE_PAT) bus *= .75;
  if (collnet && p != NT_TUNE_SIMPLE) bus = 0;
  if (a == NT_TUNE_COLLNET_DIRECT && p == NT_TUNE_SIMPLE) {
    if (coll == NT_TUNE_ALLGATHER || coll == NT_TUNE_REDUCESCATTER) {
      float inter = gr->bw_inter * 0.9f;
      bus = ppn * (gr->bw_intra < inter ? gr->bw_intra : inter);
    } else {
      /* full speed only with a NIC per GPU */
      float factor = (float)(ppn / (1.0 * gr->channels));
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (in->min_sm >= 90) bus *= .85;
    }
  }
  /* AllGather / ReduceScatter over NVLS or CollNet Direct across nodes need
   * the CollNet plugin's iallgather / ireducescatter: we model a job
   * without one. */
  if ((a == NT_TUNE_NVLS || a == NT_TUNE_COLLNET_DIRECT) && p == NT_TUNE_SIMPLE &&
      (coll == NT_TUNE_ALLGATHER || coll == NT_TUNE_REDUCESCATTER) && nnodes > 1)
    bus = 0.0f;
  return bus;
}

static float latency(const nt_tune_input *in, const nt_tune_graph *gr, int coll, int a, int p,
                     const double hw[3][NT_TUNE_NALGOS][NT_TUNE_NPROTOS], int nsteps) {
  int nnodes = in->nnodes, nranks = in->nranks;
  float ppn = (float)nranks / (float)nnodes;
  /* typeIntra compared with LINK_NVL: only NVL is NVLink hardware, NVB
   * counts as PCI. */
  int intra_hw = gr->type_intra == 1 ? HW_NVLINK : HW_PCI;
  int ring_hw = nnodes == 1 ? intra_hw : HW_NET;
  float lat = (float)base_latency[a][p];
  float intra = (float)hw[intra_hw][a][p];
  /* with one rank per node the latencies are exposed: the tree's NET latency */
  float inter = ppn == 1 ? (float)hw[HW_NET][NT_TUNE_TREE][p] : (float)hw[HW_NET][a][p];
  inter += gr->latency_inter;
  if (p == NT_TUNE_SIMPLE) inter += gr->latency_inter; /* the flush */
  int local = nranks / nnodes;
  int log_nodes = tune_log2i(nnodes);
  switch (a) {
  case NT_TUNE_RING:
    if (coll == NT_TUNE_REDUCE || coll == NT_TUNE_BROADCAST) {
      float step = (float)hw[ring_hw][a][p];
      if (gr->same_channels) {
        lat += step;
      } else {
        if (p == NT_TUNE_SIMPLE) step = (float)hw[ring_hw][NT_TUNE_TREE][p];
        lat += (float)nsteps * step;
      }
    } else {
      float overhead = 0.0f;
      if (nnodes > 1) {
        overhead = net_overhead(in);
        if (p == NT_TUNE_SIMPLE) overhead *= 3;
      }
      if (overhead > intra) intra = overhead;
      int inter_steps = nnodes == 1 ? 0 : coll == NT_TUNE_ALLREDUCE ? 2 * (nnodes - 1) : nnodes - 1;
      lat += (float)(nsteps - inter_steps) * intra + (float)inter_steps * inter;
    }
    break;
  case NT_TUNE_TREE:
    if (coll == NT_TUNE_ALLREDUCE)
      lat += 2 * ((float)(local - 1) * intra + (float)log_nodes * inter);
    break;
  case NT_TUNE_COLLNET_DIRECT:
    /* NCCL adds this sum in double (the 0.4 us arity serialization) */
    lat =
        (float)(lat + (2 * ((local - 1 < 1 ? local - 1 : 1) * intra + (local - 1) * 0.4) + inter));
    break;
  case NT_TUNE_COLLNET_CHAIN: lat += 2 * (float)(local - 1) * intra + inter; break;
  case NT_TUNE_NVLS:
    lat = intra;
    if (nnodes > 1) lat += inter;
    break;
  case NT_TUNE_NVLS_TREE: lat += intra + 2 * (float)log_nodes * inter; break;
  case NT_TUNE_PAT:
    if (coll == NT_TUNE_ALLGATHER || coll == NT_TUNE_REDUCESCATTER)
      lat = (float)(lat + (log_nodes * (inter / 3.5) + nranks * 2.8)); /* in double */
    break;
  }
  return lat;
}

/* Which (collective, algorithm, protocol) tuning.cc computes at all. */
static bool computed(const nt_tune_input *in, const nt_tune_graph *gr, int coll, int a, int p) {
  if ((coll == NT_TUNE_BROADCAST || coll == NT_TUNE_REDUCE) && a != NT_TUNE_RING) return false;
  if ((coll == NT_TUNE_REDUCESCATTER || coll == NT_TUNE_ALLGATHER) && a != NT_TUNE_PAT &&
      a != NT_TUNE_RING && a != NT_TUNE_NVLS && a != NT_TUNE_COLLNET_DIRECT)
    return false;
  if (coll == NT_TUNE_ALLREDUCE && a == NT_TUNE_PAT) return false;
  if ((a == NT_TUNE_NVLS || a == NT_TUNE_NVLS_TREE) && p != NT_TUNE_SIMPLE) return false;
  if ((coll == NT_TUNE_REDUCESCATTER || coll == NT_TUNE_ALLGATHER) && a == NT_TUNE_PAT &&
      (p != NT_TUNE_SIMPLE || pat_enable(in) == 0))
    return false;
  if ((a == NT_TUNE_NVLS || a == NT_TUNE_NVLS_TREE) && gr->channels < 2) return false;
  /* CollNet entries of a missing graph are computed too: their latency
   * stays in NCCL's table (real 2.28.9 logs: 5.0/8.5/14.0 us with one GPU a
   * node), their bandwidth (NaN from 0/0 for Direct) is disabled. */
  return true;
}

/* The LL128 default (protoEnable 2): Hopper+ up to PXN between nodes unless
 * NCCL_LL128_C2C=0, else up to PXB; NVLink (up to NVB) inside the node;
 * one GPU generation (2.30.7: or all Hopper+); never before Volta nor, with
 * CUDA 11.8, for 2-rank Hopper ring AllReduce. */
static bool ll128_default(const nt_tune_input *in, const nt_tune_graph *gr, int coll, int a) {
  bool on;
  if (in->env.ll128_c2c && in->min_sm >= 90)
    on = gr->type_inter <= NT_PATH_PXN;
  else
    on = gr->type_inter <= NT_PATH_PXB;
  on = on && gr->type_intra <= NT_PATH_NVB;
  if (in->version == NT_NCCL_230)
    on = on && (in->min_sm == in->max_sm || in->min_sm >= 90);
  else
    on = on && in->min_sm == in->max_sm;
  on = on &&
       !(in->min_sm < 70 || (in->min_sm == 90 && in->cuda_runtime == 11080 &&
                             coll == NT_TUNE_ALLREDUCE && a == NT_TUNE_RING && in->nranks == 2));
  return on;
}

static int check_input(const nt_tune_input *in, char *err, size_t errlen) {
  if (in->version != NT_NCCL_228 && in->version != NT_NCCL_230)
    return snprintf(err, errlen, "tuning: unknown NCCL version %d", in->version), -1;
  if (in->nranks < 1 || in->nnodes < 1 || in->nnodes > in->nranks || in->nranks > (1 << 20))
    return snprintf(err, errlen, "tuning: %d ranks on %d nodes", in->nranks, in->nnodes), -1;
  if (in->min_sm < 0 || in->max_sm < in->min_sm || in->max_sm > 1000)
    return snprintf(err, errlen, "tuning: compute capability %d..%d", in->min_sm, in->max_sm), -1;
  const nt_tune_graph *g[] = {&in->tree, &in->ring, &in->nvls, &in->collnet_direct,
                              &in->collnet_chain};
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    const nt_tune_graph *x = g[i];
    if (x->channels < 0 || x->channels > 64 || !(x->bw_intra >= 0 && x->bw_intra < 1e6f) ||
        !(x->bw_inter >= 0 && x->bw_inter < 1e6f) ||
        !(x->latency_inter >= 0 && x->latency_inter < 1e6f) || x->type_intra < 0 ||
        x->type_intra >= NT_PATH_COUNT || x->type_inter < 0 || x->type_inter >= NT_PATH_COUNT)
      return snprintf(err, errlen, "tuning: graph %zu out of range", i), -1;
  }
  if (in->tree.channels < 1 || in->ring.channels < 1)
    return snprintf(err, errlen, "tuning: no ring or tree channel"), -1;
  return 0;
}

int nt_tune_compute(const nt_tune_input *in, nt_tune_model *m, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  memset(m, 0, sizeof *m);
  if (check_input(in, err, errlen) < 0) return -1;
  int proto_on[NT_TUNE_NCOLLS][NT_TUNE_NPROTOS], algo_on[NT_TUNE_NCOLLS][NT_TUNE_NALGOS];
  for (int c = 0; c < NT_TUNE_NCOLLS; c++) {
    for (int p = 0; p < NT_TUNE_NPROTOS; p++) proto_on[c][p] = p == NT_TUNE_LL128 ? 2 : 1;
    for (int a = 0; a < NT_TUNE_NALGOS; a++) algo_on[c][a] = 1;
  }
  /* NCCL parses NCCL_PROTO then NCCL_ALGO; either failing fails the init. */
  if (in->env.proto_set &&
      tune_parse_list(in->env.proto, TUNE_LIST_PROTO, &proto_on[0][0], err, errlen) < 0)
    return -1;
  if (in->env.algo_set &&
      tune_parse_list(in->env.algo, TUNE_LIST_ALGO, &algo_on[0][0], err, errlen) < 0)
    return -1;

  nt_tune_graph g[NT_TUNE_NALGOS];
  graphs_of(in, g);
  m->version = in->version;
  m->nranks = in->nranks;
  m->nnodes = in->nnodes;
  m->min_sm = in->min_sm;
  m->cpu_arch = in->cpu_arch;
  m->graph_channels = g[NT_TUNE_RING].channels;
  m->comm_channels = nt_tune_comm_channels(in);

  int simple_def = g[NT_TUNE_RING].bw_intra * (float)g[NT_TUNE_RING].channels <= PCI_BW
                       ? 256
                       : SIMPLE_MAX_NTHREADS;
  /* every Simple but PAT's, which NCCL never sets (0: its log's table
   * shows 0, and topoGetAlgoInfo then keeps all channels for PAT) */
  for (int a = 0; a < NT_TUNE_NALGOS; a++)
    m->max_threads[a][NT_TUNE_SIMPLE] = a == NT_TUNE_PAT ? 0 : MAX_NTHREADS;
  m->max_threads[NT_TUNE_RING][NT_TUNE_SIMPLE] =
      nthreads(in->env.nthreads, 2 * WARP, SIMPLE_MAX_NTHREADS, simple_def);
  m->max_threads[NT_TUNE_TREE][NT_TUNE_SIMPLE] =
      nthreads(in->env.nthreads, 2 * WARP, SIMPLE_MAX_NTHREADS, SIMPLE_MAX_NTHREADS);
  m->max_threads[NT_TUNE_RING][NT_TUNE_LL] = m->max_threads[NT_TUNE_TREE][NT_TUNE_LL] =
      nthreads(in->env.nthreads, 2 * WARP, LL_MAX_NTHREADS, LL_MAX_NTHREADS);
  m->max_threads[NT_TUNE_RING][NT_TUNE_LL128] = m->max_threads[NT_TUNE_TREE][NT_TUNE_LL128] =
      nthreads(in->env.ll128_nthreads, LL128_MAX_NTHREADS / 4, LL128_MAX_NTHREADS,
               LL128_MAX_NTHREADS);
  /* comm->threadThresholds, set after the model (NCCL_THREAD_THRESHOLDS is
   * not modelled); the ring's LL grows with the ranks */
  for (int a = 0; a < NT_TUNE_NALGOS; a++) {
    m->thread_threshold[a][NT_TUNE_LL] = LL_THREAD_THRESHOLD;
    m->thread_threshold[a][NT_TUNE_LL128] = LL128_THREAD_THRESHOLD;
    m->thread_threshold[a][NT_TUNE_SIMPLE] = SIMPLE_THREAD_THRESHOLD;
  }
  m->thread_threshold[NT_TUNE_RING][NT_TUNE_LL] *= in->nranks;
  m->thread_threshold[NT_TUNE_COLLNET_DIRECT][NT_TUNE_SIMPLE] = 512;
  m->thread_threshold[NT_TUNE_COLLNET_CHAIN][NT_TUNE_SIMPLE] = 512;
  if (in->nranks <= 1) return 0; /* one rank: NCCL computes nothing, picks Ring/Simple */

  int nnodes = in->nnodes, nranks = in->nranks;
  int cc = in->min_sm >= 100  ? CC_BLACKWELL
           : in->min_sm >= 90 ? CC_HOPPER
           : in->min_sm >= 80 ? CC_AMPERE
                              : CC_VOLTA;
  int scale = nnodes <= 2 ? nnodes - 1 : 2;
  /* LL's cap: the GPU for one node, the CPU (AMD or mixed: row 1) across nodes */
  int ll_row = nnodes == 1 ? cc
               : (in->cpu_vendor == NT_TUNE_VENDOR_AMD || in->cpu_vendor == NT_TUNE_VENDOR_MIXED)
                   ? 1
                   : 0;
  double ll_max = ll_max_bw[ll_row][scale];
  double hw[3][NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  memcpy(hw, hw_latency, sizeof hw);
  /* POWER: tree Simple over PCI costs what a ring does, to favour trees */
  if (in->cpu_arch == NT_TUNE_ARCH_POWER)
    hw[HW_PCI][NT_TUNE_TREE][NT_TUNE_SIMPLE] = hw[HW_PCI][NT_TUNE_RING][NT_TUNE_SIMPLE];

  for (int c = 0; c < NT_TUNE_NCOLLS; c++) {
    int nsteps = c == NT_TUNE_ALLREDUCE                                 ? 2 * (nranks - 1)
                 : c == NT_TUNE_REDUCESCATTER || c == NT_TUNE_ALLGATHER ? nranks - 1
                                                                        : nranks;
    for (int a = 0; a < NT_TUNE_NALGOS; a++) {
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        if (!computed(in, &g[a], c, a, p)) continue;
        /* a missing CollNet graph: NCCL gets 0 or NaN (0/0), then disables it */
        bool no_collnet =
            (a == NT_TUNE_COLLNET_DIRECT || a == NT_TUNE_COLLNET_CHAIN) && g[a].channels == 0;
        float bus = no_collnet ? 0.0f : bus_bw(in, &g[a], c, a, p, cc, scale, ll_max);
        /* bus bandwidth -> algorithm bandwidth */
        if (!(a != NT_TUNE_RING && (c == NT_TUNE_ALLGATHER || c == NT_TUNE_REDUCESCATTER))) {
          float ratio = 1.0f;
          if (a == NT_TUNE_RING || a == NT_TUNE_NVLS || a == NT_TUNE_NVLS_TREE)
            ratio = (float)(ratio * ((1.0 * nranks) / nsteps));
          else
            ratio = (float)(ratio * .5);
          bus *= ratio;
        }
        m->bandwidth[c][a][p] = bus;
        m->latency[c][a][p] = latency(in, &g[a], c, a, p,
                                      (const double(*)[NT_TUNE_NALGOS][NT_TUNE_NPROTOS])hw, nsteps);
      }
    }
  }

  /* What NCCL turns off: NVLS Tree on one node; CollNet (and NVLS across
   * nodes) without CollNet; 2.30.7 also CollNet Chain without chain
   * support; CollNet Direct without an NVSwitch. */
  bool collnet = in->collnet_chain.channels > 0 && nnodes >= 2;
  for (int c = 0; c < NT_TUNE_NCOLLS; c++)
    for (int a = 0; a < NT_TUNE_NALGOS; a++) {
      bool off = false;
      if (nnodes == 1 && a == NT_TUNE_NVLS_TREE) off = true;
      if (!collnet && (a == NT_TUNE_COLLNET_DIRECT || a == NT_TUNE_COLLNET_CHAIN ||
                       (a == NT_TUNE_NVLS && nnodes > 1)))
        off = true;
      if (in->nvs_count == 0 && a == NT_TUNE_COLLNET_DIRECT) off = true;
      if (off) algo_on[c][a] = 0;
    }
  for (int c = 0; c < NT_TUNE_NCOLLS; c++)
    for (int a = 0; a < NT_TUNE_NALGOS; a++)
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        int on = proto_on[c][p];
        if (on == 2 && p == NT_TUNE_LL128) on = ll128_default(in, &g[a], c, a);
        if (!on || !algo_on[c][a]) m->bandwidth[c][a][p] = 0;
      }

  /* The selection's own filters (updateCollCostTable), for a sum over a
   * 16/32-bit float type: CollNet needs CollNet support and at most 8 GPUs
   * a node; NVLS needs multicast (an NVLS graph), at most 32 GPUs a node
   * except for AllReduce, and CollNet across nodes. */
  int local = nranks / nnodes;
  bool nvls = in->nvls.channels > 0;
  for (int c = 0; c < NT_TUNE_NCOLLS; c++)
    for (int a = 0; a < NT_TUNE_NALGOS; a++) {
      bool ok = true;
      if ((a == NT_TUNE_COLLNET_DIRECT || a == NT_TUNE_COLLNET_CHAIN) && (!collnet || local > 8))
        ok = false;
      if ((a == NT_TUNE_NVLS || a == NT_TUNE_NVLS_TREE) &&
          (!nvls || (c != NT_TUNE_ALLREDUCE && local > 32)))
        ok = false;
      if (a == NT_TUNE_NVLS && !collnet && nnodes > 1) ok = false;
      m->candidate[c][a] = ok;
    }
  return 0;
}

int nt_tune_comm_channels(const nt_tune_input *in) {
  int graph = in->tree.channels < in->ring.channels ? in->tree.channels : in->ring.channels;
  int nc = 2 * graph > 64 ? 64 : 2 * graph;
  if (in->collnet_chain.channels > 0 && in->nnodes >= 2 &&
      in->collnet_chain.bw_intra > in->collnet_chain.bw_inter && in->nranks > in->nnodes) {
    int more = nc + nc / 2;
    nc = more > 64 ? 64 : more;
  }
  /* Hopper+: 4 compute channels per search channel across nodes */
  if (in->min_sm >= 90 && in->nnodes > 1 && in->ring.bw_intra > 45.0 && nc < 16) nc *= 2;
  if (in->net_unpack && in->nnodes > 1 && nc < 16 && in->env.unpack_double_nchannels) nc *= 2;
  long long maxc = 64, minc = 0;
  if (in->env.max_nrings != -2) maxc = in->env.max_nrings;
  if (in->env.max_nchannels != -2) maxc = in->env.max_nchannels;
  if (maxc > 64) maxc = 64;
  if (maxc < 1) maxc = 1;
  if (in->env.min_nrings != -2) minc = in->env.min_nrings;
  if (in->env.min_nchannels != -2) minc = in->env.min_nchannels;
  if (minc > 64) minc = 64;
  if (minc < 0) minc = 0;
  if (nc > maxc) nc = (int)maxc;
  /* copyChannels up to max(NCCL_MIN_NCHANNELS, minCTAs = 1) */
  if (minc < 1) minc = 1;
  if (nc < minc) nc = (int)minc;
  return nc;
}

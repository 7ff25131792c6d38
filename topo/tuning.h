/* NCCL's tuning model: from the graphs NCCL's search found and a few facts
 * of the communicator, the latency (us) and bandwidth (GB/s) NCCL assigns
 * to every collective, algorithm and protocol (ncclTopoTuneModel in
 * src/graph/tuning.cc), the time it predicts for a size
 * (ncclTopoGetAlgoTime) and the algorithm and protocol it picks for that
 * size without a tuner plugin (updateCollCostTable + topoGetAlgoInfo in
 * src/enqueue.cc). NCCL 2.28.9 and 2.30.7; topo/README.md ("Tuning model")
 * lists the rules and every difference between them.
 *
 * A pure module: no topology, no I/O. The caller (the graph search) fills an
 * nt_tune_input with the graphs as NCCL's search returns them; the model
 * applies what NCCL does between the search and the tuning (tree and ring
 * get the smaller channel count of the two; comm->nChannels follows from
 * it) so the caller does not have to. */
#ifndef NCCLTOP_TOPO_TUNING_H
#define NCCLTOP_TOPO_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* NCCL's numbering (nccl_tuner.h, nccl_common.h), so tables index alike. */
enum {
  NT_TUNE_TREE,
  NT_TUNE_RING,
  NT_TUNE_COLLNET_DIRECT,
  NT_TUNE_COLLNET_CHAIN,
  NT_TUNE_NVLS,
  NT_TUNE_NVLS_TREE,
  NT_TUNE_PAT,
  NT_TUNE_NALGOS
};
enum { NT_TUNE_LL, NT_TUNE_LL128, NT_TUNE_SIMPLE, NT_TUNE_NPROTOS };
enum {
  NT_TUNE_BROADCAST,
  NT_TUNE_REDUCE,
  NT_TUNE_ALLGATHER,
  NT_TUNE_REDUCESCATTER,
  NT_TUNE_ALLREDUCE,
  NT_TUNE_NCOLLS
};
/* NCCL's names: "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS",
 * "NVLSTree", "PAT"; "LL", "LL128", "Simple"; "Broadcast", "Reduce",
 * "AllGather", "ReduceScatter", "AllReduce". "?" out of range. */
const char *nt_tune_algo_name(int algo);
const char *nt_tune_proto_name(int proto);
const char *nt_tune_coll_name(int coll);

/* CPU of the communicator as NCCL records it (graph.h numbering); MIXED
 * when the ranks' CPUs differ. */
enum { NT_TUNE_ARCH_X86 = 1, NT_TUNE_ARCH_POWER = 2, NT_TUNE_ARCH_ARM = 3, NT_TUNE_ARCH_MIXED = 4 };
enum {
  NT_TUNE_VENDOR_INTEL = 1,
  NT_TUNE_VENDOR_AMD = 2,
  NT_TUNE_VENDOR_ZHAOXIN = 3,
  NT_TUNE_VENDOR_MIXED = 4
};
/* The tree graph's pattern (NCCL_TOPO_PATTERN_*): TREE (all NIC traffic on
 * one GPU) costs trees 15% of their bandwidth. */
enum {
  NT_TUNE_PATTERN_BALANCED_TREE = 1,
  NT_TUNE_PATTERN_SPLIT_TREE = 2,
  NT_TUNE_PATTERN_TREE = 3,
  NT_TUNE_PATTERN_RING = 4,
  NT_TUNE_PATTERN_NVLS = 5,
  NT_TUNE_PATTERN_COLLNET_DIRECT = 6
};

/* One graph as the search returns it (struct ncclTopoGraph), already the
 * minimum over ranks for a multi-node job (NCCL's AllGather3). */
typedef struct {
  int channels;               /* nChannels; 0: no such graph */
  float bw_intra, bw_inter;   /* GB/s per channel */
  int type_intra, type_inter; /* path types, enum nt_path (LOC 0 .. NET 10) */
  float latency_inter;        /* us: the NET's latency attribute (usually 0) */
  bool same_channels;         /* sameChannels */
  int pattern;                /* NT_TUNE_PATTERN_* */
} nt_tune_graph;

/* The variables tuning.cc and the selection read. Integers hold what
 * NCCL_PARAM reads (strtoll base 0); strings are copied, "" = unset. */
#define NT_TUNE_LIST_MAX 255
typedef struct {
  long long nthreads;       /* NCCL_NTHREADS, default -2 */
  long long ll128_nthreads; /* NCCL_LL128_NTHREADS, default -2 */
  long long net_overhead;   /* NCCL_NET_OVERHEAD in ns, default -2 (by CPU) */
  long long ll128_c2c;      /* NCCL_LL128_C2C, default 1 */
  long long pat_enable;     /* NCCL_PAT_ENABLE, default 2 (automatic) */
  long long min_nchannels;  /* NCCL_MIN_NCHANNELS (over NCCL_MIN_NRINGS), -2 */
  long long max_nchannels;  /* NCCL_MAX_NCHANNELS (over NCCL_MAX_NRINGS), -2 */
  long long min_nrings, max_nrings;
  long long unpack_double_nchannels; /* NCCL_UNPACK_DOUBLE_NCHANNELS, default 1 */
  bool algo_set, proto_set;
  char algo[NT_TUNE_LIST_MAX + 1];  /* NCCL_ALGO */
  char proto[NT_TUNE_LIST_MAX + 1]; /* NCCL_PROTO */
} nt_tune_env;

void nt_tune_env_defaults(nt_tune_env *e);
/* "NAME=VALUE" for one of nt_tune_env_names, as nt_topo_env_set: 0 applied,
 * 1 applied with a note in err (junk read as NCCL reads it), -1 not
 * applied (unknown name, not NAME=VALUE, a value NCCL ignores or one too
 * long for nccltop). NCCL_ALGO and NCCL_PROTO are checked at
 * nt_tune_compute, where NCCL checks them. */
int nt_tune_env_set(nt_tune_env *e, const char *assignment, char *err, size_t errlen);
extern const char *const nt_tune_env_names[];

typedef struct {
  int version;              /* NT_NCCL_228 or NT_NCCL_230 (topo.h) */
  int nranks;               /* all ranks */
  int nnodes;               /* nodes; identical nodes of nranks/nnodes GPUs */
  int min_sm, max_sm;       /* compute capability x10 over the ranks: 70 Volta, 80 Ampere,
                               90 Hopper, 100 Blackwell */
  int cpu_arch, cpu_vendor; /* NT_TUNE_ARCH_*, NT_TUNE_VENDOR_* (0 unknown) */
  nt_tune_graph tree, ring;
  nt_tune_graph nvls;           /* channels 0 without NVLS (needs multicast, a runtime fact) */
  nt_tune_graph collnet_direct; /* CollNet needs a CollNet plugin: channels 0 without */
  nt_tune_graph collnet_chain;
  int nvls_channels; /* comm->nvlsChannels (16 on Hopper ...) when nvls is given */
  int nvs_count;     /* NVSwitches in the topology (CollNet Direct needs one) */
  bool net_unpack;   /* the net plugin offloads to the GPU (NET_DEVICE_UNPACK) */
  int cuda_runtime;  /* CUDART_VERSION NCCL was built with (11080 has a quirk); 0 unknown */
  nt_tune_env env;
} nt_tune_input;

/* Defaults: 2.28.9, environment defaults, no NVLS or CollNet graph. */
void nt_tune_input_defaults(nt_tune_input *in);

typedef struct {
  int version, nranks, nnodes, min_sm, cpu_arch;
  int comm_channels;  /* comm->nChannels after ncclTopoPostset */
  int graph_channels; /* tree and ring nChannels the model used */
  /* latency (us) and bandwidth (GB/s, NCCL's algorithm bandwidth) per
   * collective, algorithm and protocol; bandwidth 0 = never picked. */
  float latency[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  float bandwidth[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  /* Whether the selection considers the algorithm at all for a collective
   * (updateCollCostTable's filters on NVLS and CollNet support). */
  bool candidate[NT_TUNE_NCOLLS][NT_TUNE_NALGOS];
  int max_threads[NT_TUNE_NALGOS][NT_TUNE_NPROTOS]; /* threads per block (PAT: 0, as NCCL) */
  /* bytes per thread before NCCL adds a channel (comm->threadThresholds) */
  int thread_threshold[NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
} nt_tune_model;

/* ncclTopoTuneModel. -1 with a message when NCCL would fail the
 * communicator's initialization (NCCL_ALGO / NCCL_PROTO it cannot parse)
 * or the input is out of range; 0 otherwise. */
int nt_tune_compute(const nt_tune_input *in, nt_tune_model *m, char *err, size_t errlen);

/* comm->nChannels as ncclTopoPostset leaves it for these graphs: twice the
 * search's channels, doubled again on Hopper+ across nodes when a ring
 * channel is faster than 45 GB/s (and with an unpacking net plugin), then
 * NCCL_MIN/MAX_NCHANNELS. */
int nt_tune_comm_channels(const nt_tune_input *in);

/* ncclTopoGetAlgoTime for one operation of `bytes` (NCCL's nBytes: the
 * larger of the send and receive buffers, i.e. the AllGather output and the
 * ReduceScatter input): us, or -1 when the bandwidth is 0. */
float nt_tune_time(const nt_tune_model *m, int coll, int algo, int proto, size_t bytes);

/* The algorithm and protocol NCCL picks for `bytes` (lowest predicted time,
 * ties to the lower algorithm then protocol). 0, or -1 when nothing is
 * available (NCCL then fails the call). */
typedef struct {
  int algo, proto;
  float time_us;
} nt_tune_pick;
int nt_tune_choose(const nt_tune_model *m, int coll, size_t bytes, nt_tune_pick *out);

/* How many channels NCCL gives one operation of `bytes` (nBytes as for
 * nt_tune_time) with this algorithm and protocol: topoGetAlgoInfo's
 * nMaxChannels for Ring, Tree and PAT (comm->nChannels, one less while the
 * channels' threads would each get under threadThreshold bytes). For one
 * operation alone NCCL's log shows channel{Lo..Hi}={0..n-1}. -1 for NVLS
 * and CollNet (they depend on facts a file does not carry). */
int nt_tune_channels(const nt_tune_model *m, int coll, int algo, int proto, size_t bytes);

/* The collectives the output shows, in its order: AllReduce, AllGather,
 * ReduceScatter, Broadcast. */
#define NT_TUNE_SHOWN 4
extern const int nt_tune_shown_colls[NT_TUNE_SHOWN];
/* The sizes of the choice table: 1 KiB to 1 GiB, powers of 4. */
#define NT_TUNE_NSIZES 11
size_t nt_tune_size(int i);

/* Adds "model" and "choice" to a cJSON object (a cJSON * passed as void *
 * so this header does not need cJSON's): model [{collective, algo, proto,
 * latency_us, bandwidth_gbs}] for every pair NCCL computes with a non-zero
 * bandwidth, choice [{collective, bytes, algo, proto, time_us}]. -1 on
 * allocation failure. */
int nt_tune_add_json(void *cjson_object, const nt_tune_model *m);
/* The model (latency/bandwidth per collective, algorithm and protocol NCCL
 * considers) and the picks by size as text, within 80 columns. */
void nt_tune_print_text(FILE *out, const nt_tune_model *m);

#endif

/* From the graphs topo/'s search found to NCCL's tuning model: the facts
 * ncclTopoTuneModel (src/graph/tuning.cc) reads off the communicator, taken
 * from the topology file as NCCL takes them from its system: the compute
 * capability range over the GPUs (comm->minCompCap/maxCompCap), the first
 * CPU's architecture and vendor (ncclTopoCpuType), whether an NVSwitch is
 * there (nodes[NVS].count). Facts only a running NCCL knows (NVLS
 * multicast, a CollNet plugin, a device-unpacking net plugin, the CUDA
 * runtime) are left as absent: the model then has what a plain
 * communicator has. */
#include <stdio.h>

#include "internal.h"
#include "tuning.h"

static void tune_graph(const nt_topo_graphs *g, int which, nt_tune_graph *out) {
  nt_topo_graph_info gi;
  if (!nt_topo_graphs_graph(g, which, &gi)) return;
  out->channels = gi.nchannels;
  out->bw_intra = (float)gi.bw_intra;
  out->bw_inter = (float)gi.bw_inter;
  out->type_intra = gi.type_intra;
  out->type_inter = gi.type_inter;
  out->same_channels = gi.same_channels != 0;
  out->pattern = gi.pattern; /* NT_PATTERN_* and NT_TUNE_PATTERN_* are both NCCL's numbers */
  out->latency_inter = 0;    /* the topology file carries no NET latency */
}

int nt_topo_graphs_tune(const nt_topo *t, const nt_topo_graphs *g, const nt_tune_env *env,
                        nt_tune_model *m, char *err, size_t errlen) {
  nt_tune_input in;
  nt_tune_input_defaults(&in);
  in.version = t->env.version;
  in.nnodes = nt_topo_graphs_nodes(g);
  in.nranks = nt_topo_graphs_nranks(g);
  in.min_sm = in.max_sm = 0;
  for (int i = 0; i < t->ngpus; i++) {
    int sm = t->nodes[t->gpus[i]].sm;
    if (i == 0 || sm < in.min_sm) in.min_sm = sm;
    if (i == 0 || sm > in.max_sm) in.max_sm = sm;
  }
  if (t->ncpus > 0) {
    /* graph numbering and nt_tune's agree (graph.h) */
    in.cpu_arch = t->nodes[t->cpus[0]].arch;
    in.cpu_vendor = t->nodes[t->cpus[0]].vendor;
  }
  in.nvs_count = t->nvs >= 0 ? 1 : 0;
  tune_graph(g, 0, &in.ring);
  tune_graph(g, 1, &in.tree);
  if (env) in.env = *env;
  return nt_tune_compute(&in, m, err, errlen);
}

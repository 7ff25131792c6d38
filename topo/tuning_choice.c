/* The time NCCL predicts for one operation (ncclTopoGetAlgoTime,
 * src/graph/tuning.cc) and the algorithm and protocol it picks from them
 * without a tuner plugin (updateCollCostTable + topoGetAlgoInfo,
 * src/enqueue.cc). Same float arithmetic as NCCL, so ties break alike. */
#include <float.h>

#include "topo.h"
#include "tuning.h"
#include "tuning_internal.h"

/* Trees stray from the model at medium sizes; NCCL scales their bandwidth
 * by these per power of two of the size, from 64 B. 2.30.7 adds a 24th
 * entry (for NVLS Tree; trees still read 23). */
/* clang-format off */
static const float tree_correction[NT_TUNE_NPROTOS][24] = {
  {1.0, 1.0, 1.0, 1.0,  .9,  .8,  .7,  .7,  .7,  .7,  .6,  .5,  .4,  .4,  .5,  .6,  .7,  .8,  .9, 1.0, 1.0, 1.0, 1.0, 1.0},
  {1.0, 1.0, 1.0, 1.0, 1.0,  .9,  .8,  .8,  .8,  .7,  .6,  .6,  .6,  .6,  .6,  .6,  .8,  .9,  .9,  .9,  .9, 1.0, 1.0, 1.0},
  { .9,  .9,  .9,  .9,  .9,  .9,  .9,  .8,  .7,  .6,  .6,  .5,  .5,  .5,  .5,  .6,  .7,  .8,  .7,  .7,  .8,  .9,  .9,  .9}};
/* clang-format on */

const int nt_tune_shown_colls[NT_TUNE_SHOWN] = {NT_TUNE_ALLREDUCE, NT_TUNE_ALLGATHER,
                                                NT_TUNE_REDUCESCATTER, NT_TUNE_BROADCAST};

size_t nt_tune_size(int i) {
  return i >= 0 && i < NT_TUNE_NSIZES ? (size_t)1024 << (2 * i) : 0;
}

static bool in_range(int coll, int algo, int proto) {
  return coll >= 0 && coll < NT_TUNE_NCOLLS && algo >= 0 && algo < NT_TUNE_NALGOS && proto >= 0 &&
         proto < NT_TUNE_NPROTOS;
}

float nt_tune_time(const nt_tune_model *m, int coll, int algo, int proto, size_t bytes) {
  if (!in_range(coll, algo, proto)) return -1.0f;
  float bw = m->bandwidth[coll][algo][proto];
  float lat = m->latency[coll][algo][proto];
  if (bw == 0) return -1.0f;
  int log_size = tune_log2i((long)(bytes >> 6));
  if (algo == NT_TUNE_TREE && coll == NT_TUNE_ALLREDUCE && log_size >= 0 && log_size < 23)
    bw *= tree_correction[proto][log_size];
  if (m->version == NT_NCCL_230 && algo == NT_TUNE_NVLS_TREE && coll == NT_TUNE_ALLREDUCE &&
      log_size >= 0 && log_size < 24 && m->min_sm >= 100 && m->cpu_arch == NT_TUNE_ARCH_X86)
    bw *= tree_correction[proto][log_size];
  /* the ring's plateau across nodes, once every rank of every channel has
   * 64 bytes or more */
  if (algo == NT_TUNE_RING && proto == NT_TUNE_SIMPLE && m->nnodes > 1 &&
      coll == NT_TUNE_ALLREDUCE && m->comm_channels > 0 &&
      bytes / ((size_t)m->comm_channels * (size_t)m->nranks) >= 64)
    lat *= m->min_sm < 80 ? 1.9 : 1.4;
  /* one operation: latency counted once (NCCL: numPipeOps, batched for trees) */
  return lat + (float)bytes / (1000 * bw);
}

int nt_tune_choose(const nt_tune_model *m, int coll, size_t bytes, nt_tune_pick *out) {
  out->algo = out->proto = -1;
  out->time_us = -1.0f;
  if (coll < 0 || coll >= NT_TUNE_NCOLLS) return -1;
  if (m->nranks == 1) { /* NCCL: Ring/Simple, time 0 */
    out->algo = NT_TUNE_RING;
    out->proto = NT_TUNE_SIMPLE;
    out->time_us = 0.0f;
    return 0;
  }
  float best = m->version == NT_NCCL_230 ? FLT_MAX : 3600000000.0f;
  for (int a = 0; a < NT_TUNE_NALGOS; a++) {
    if (!m->candidate[coll][a]) continue;
    for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
      float t = nt_tune_time(m, coll, a, p, bytes);
      if (t >= 0.0f && t < best) {
        best = t;
        out->algo = a;
        out->proto = p;
      }
    }
  }
  if (out->algo < 0) return -1;
  out->time_us = best;
  return 0;
}

int nt_tune_channels(const nt_tune_model *m, int coll, int algo, int proto, size_t bytes) {
  if (!in_range(coll, algo, proto) || m->comm_channels < 1) return -1;
  if (algo != NT_TUNE_RING && algo != NT_TUNE_TREE && algo != NT_TUNE_PAT) return -1;
  /* topoGetAlgoInfo: int products compared with the size_t nBytes */
  int nc = m->comm_channels, nt = m->max_threads[algo][proto];
  int threshold = m->thread_threshold[algo][proto];
  while (bytes < (size_t)nc * (size_t)nt * (size_t)threshold && nc >= 2) nc--;
  return nc;
}

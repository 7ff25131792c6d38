/* See symmetric.h. */
#include "symmetric.h"

#include <stdio.h>
#include <string.h>

#include "version.h"

bool sim_sym_op(const nt_sim_config *c, int comm, const char *func) {
  if (!c->symmetric || comm != 0 || !func) return false;
  int v = sim_version_of(c);
  if (v < 227) return false;
  return !strcmp(func, "AllReduce") || !strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter");
}

const char *sim_sym_variant(const char *func, uint64_t bytes) {
  bool ll = bytes < SIM_SYM_LL_BELOW;
  if (!strcmp(func, "AllReduce")) return ll ? "AllReduce_AGxLL_R" : "AllReduce_RSxLD_AGxST";
  if (!strcmp(func, "AllGather")) return ll ? "AllGather_LL" : "AllGather_ST";
  return ll ? "ReduceScatter_LL" : "ReduceScatter_LD";
}

const char *sim_sym_algo(const char *variant) {
  const char *u = strchr(variant, '_');
  return u ? u + 1 : variant;
}

/* About 9 us of launch and synchronisation, then NVLink at about
 * 100 GB/s per channel; the slow-GPU rank takes twice as long. */
uint64_t sim_sym_kernel_ns(uint64_t bytes, bool slow_gpu) {
  uint64_t ns = 9000 + bytes / 100;
  return slow_gpu ? 2 * ns : ns;
}

int sim_sym_check(const nt_sim_config *c) {
  if (!c->symmetric) return 0;
  const char *bad = NULL;
  int v = sim_version_of(c);
  if (v < 227)
    bad = "--symmetric needs NCCL 2.27 or later (2.26 has no symmetric kernels): add "
          "--nccl-version 2.27 .. 2.31";
  else if (c->deterministic)
    bad = "--symmetric runs in real time only (the deterministic totals assume the ring's "
          "proxy work)";
  else if (c->nodes > 1 || c->pxn || c->collnet)
    bad = "--symmetric needs every rank in one NVLink domain: not with --nodes N > 1, --pxn "
          "or --collnet";
  else if (c->graph || c->ce)
    bad = "--symmetric with --graph or --ce (not simulated together)";
  if (bad) fprintf(stderr, "nccltop sim: bad configuration: %s\n", bad);
  return bad ? -1 : 0;
}

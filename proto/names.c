/* Names of proxy states and step waits: the words the JSON output, the
 * screens and the documentation all use. */
#include <string.h>

#include "nccltop_proto.h"

const char *nt_proxy_state_name(int state) {
  static const char *names[NT_PROXY_NSTATES] = {"idle", "active", "sleep", "wakeup", "append"};
  return state >= 0 && state < NT_PROXY_NSTATES ? names[state] : "unknown";
}

const char *nt_wait_name(int wait) {
  static const char *names[NT_WAIT_COUNT] = {"send_gpu_wait", "send_peer_wait",  "send_net_wait",
                                             "recv_net_wait", "recv_flush_wait", "recv_gpu_wait"};
  return wait >= 0 && wait < NT_WAIT_COUNT ? names[wait] : "none";
}

/* Operation names: NCCL's own spellings (ncclFuncToString, ncclAlgoToString,
 * ncclProtoToString, ncclDatatypeToString in src/collectives.cc). */
static const char *const func_names[NT_FUNC_COUNT] = {
    "other",    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
    "AlltoAll", "Gather",    "Scatter",   "Send",          "Recv",      "SendRecv"};
static const char *const algo_names[NT_ALGO_COUNT] = {
    "none", "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", "other"};
static const char *const proto_names[NT_PR_COUNT] = {"none", "LL", "LL128", "SIMPLE", "other"};
static const char *const dtype_names[NT_DT_COUNT] = {
    "unknown",      "ncclInt8",       "ncclUint8",     "ncclInt32",   "ncclUint32",
    "ncclInt64",    "ncclUint64",     "ncclFloat16",   "ncclFloat32", "ncclFloat64",
    "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
static const unsigned char dtype_sizes[NT_DT_COUNT] = {0, 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

#define NAME_OF(table, count, i, other) ((i) >= 0 && (i) < (count) ? (table)[i] : (other))

const char *nt_func_name(int f) {
  return NAME_OF(func_names, NT_FUNC_COUNT, f, "other");
}
const char *nt_algo_name(int a) {
  return NAME_OF(algo_names, NT_ALGO_COUNT, a, "other");
}
const char *nt_proto_name(int p) {
  return NAME_OF(proto_names, NT_PR_COUNT, p, "other");
}
const char *nt_dtype_name(int d) {
  return NAME_OF(dtype_names, NT_DT_COUNT, d, "unknown");
}
const char *nt_op_state_name(int s) {
  static const char *const names[NT_OPS_COUNT] = {"enqueued", "in_flight", "done"};
  return NAME_OF(names, NT_OPS_COUNT, s, "unknown");
}
const char *nt_timing_name(int t) {
  static const char *const names[NT_TIMING_COUNT] = {"none", "host", "gpu"};
  return NAME_OF(names, NT_TIMING_COUNT, t, "none");
}
const char *nt_run_name(int r) {
  static const char *const names[NT_RUN_COUNT] = {"unknown", "idle", "queued", "running"};
  return NAME_OF(names, NT_RUN_COUNT, r, "unknown");
}
int nt_dtype_size(int d) {
  return d > 0 && d < NT_DT_COUNT ? dtype_sizes[d] : 0;
}

/* Index of s in table[first..count), else `none`. Called when a Coll or P2p
 * starts (not per step), on NCCL's short static strings. */
static int lookup(const char *const *table, int first, int count, const char *s, int none,
                  int other) {
  if (!s) return none;
  for (int i = first; i < count; i++)
    if (table[i][0] == s[0] && strcmp(table[i], s) == 0) return i;
  return other;
}

int nt_func_from_name(const char *s) {
  return lookup(func_names, 1, NT_FUNC_COUNT, s, NT_FUNC_OTHER, NT_FUNC_OTHER);
}
int nt_algo_from_name(const char *s) {
  return lookup(algo_names, 1, NT_ALGO_OTHER, s, NT_ALGO_NONE, NT_ALGO_OTHER);
}
int nt_proto_from_name(const char *s) {
  return lookup(proto_names, 1, NT_PR_OTHER, s, NT_PR_NONE, NT_PR_OTHER);
}
int nt_dtype_from_name(const char *s) {
  return lookup(dtype_names, 1, NT_DT_COUNT, s, NT_DT_UNKNOWN, NT_DT_UNKNOWN);
}

const char *nt_event_class_name(int bit) {
  static const char *const names[NT_EVENT_CLASSES] = {
      "group",    "coll",      "p2p",      "proxyop",    "proxystep", "proxyctrl",
      "kernelch", "netplugin", "groupapi", "collapi",    "p2papi",    "kernellaunch",
      "cecoll",   "cesync",    "cebatch",  "kernelphase"};
  return bit >= 0 && bit < NT_EVENT_CLASSES ? names[bit] : NULL;
}

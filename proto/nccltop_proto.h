/* nccltop wire protocol: what a publisher (the plugin) sends and a reader
 * (the viewer, the relay, the recorder) accepts. PROTOCOL.md documents every
 * byte; this header is the C contract.
 *
 * A message is two ZeroMQ frames: a topic (NT_TOPIC_*) and a payload.
 * Snapshots are binary (nt_snapshot_encode / nt_snapshot_decode); hello and
 * communicator metadata are JSON (nt_hello_*, nt_comm_*). Decoders treat every
 * byte as hostile: they check each length and count before use and fail with
 * a reason instead of guessing.
 */
#ifndef NCCLTOP_PROTO_H
#define NCCLTOP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot_rows.h"

#define NT_PROTO_MAJOR 1
#define NT_PROTO_MINOR 4

#define NT_TOPIC_HELLO    "nccltop.hello"
#define NT_TOPIC_COMM     "nccltop.comm"
#define NT_TOPIC_SNAPSHOT "nccltop.snap"
#define NT_TOPIC_TOPOLOGY "nccltop.topo"
#define NT_TOPIC_GRAPHS   "nccltop.graphs" /* NCCL_GRAPH_DUMP_FILE, as is */

/* Documented limits: decoders reject anything larger. */
#define NT_MAX_MESSAGE_BYTES (4u << 20)
#define NT_MAX_JSON_BYTES    (256u << 10)
#define NT_MAX_HOST          64       /* bytes of a host name, without the NUL */
#define NT_PID_MAX           4194304u /* Linux's PID_MAX_LIMIT: no pid is larger */
#define NT_MAX_NAME          64       /* bytes of a communicator name */
#define NT_MAX_COMMS         64       /* communicators in one snapshot */
#define NT_MAX_PROXY_THREADS 256
#define NT_MAX_CHANNEL_ROWS  8192
#define NT_MAX_KERNEL_ROWS   4096
#define NT_MAX_ENV           256 /* NCCL_* variables in a hello */
#define NT_MAX_ENV_NAME      64
#define NT_MAX_ENV_VALUE     256
#define NT_NO_COMM           0xFFFFu /* comm_index of a row whose communicator is unknown */
/* Since 1.1: operations, phases and network plugin events. */
#define NT_MAX_OP_ROWS  4096 /* operation statistics rows per snapshot */
#define NT_MAX_OPLOG    256  /* recent and in-flight operations per snapshot */
#define NT_MAX_SEQ_ROWS 1024 /* (communicator, function) sequence rows */
#define NT_MAX_NET_ROWS 1024 /* network plugin (device, QP or socket) rows */
#define NT_MAX_PHASES   63   /* phase ids 1..63; 0 = no phase */
#define NT_MAX_PHASE    31   /* bytes of a phase name */
/* Since 1.4: the kernel variants of NCCL 2.31's symmetric-kernel collectives. */
#define NT_MAX_VARIANTS 63 /* variant ids 1..63; 0 = not a symmetric kernel */
#define NT_MAX_VARIANT  47 /* bytes of a variant name ("AllReduce_AGxLL_R") */

/* Proxy progress thread control states, in wire order. */
enum nt_proxy_state {
  NT_PROXY_IDLE,
  NT_PROXY_ACTIVE,
  NT_PROXY_SLEEP,
  NT_PROXY_WAKEUP,
  NT_PROXY_APPEND,
  NT_PROXY_NSTATES,
  NT_PROXY_UNKNOWN = 255,
};
/* "idle", "active", "sleep", "wakeup", "append"; "unknown" otherwise. */
const char *nt_proxy_state_name(int state);

/* Step wait states, in wire order; the first three are send-side. */
enum nt_wait {
  NT_WAIT_SEND_GPU,
  NT_WAIT_SEND_PEER,
  NT_WAIT_SEND_NET,
  NT_WAIT_RECV_NET,
  NT_WAIT_RECV_FLUSH,
  NT_WAIT_RECV_GPU,
  NT_WAIT_COUNT,
  NT_WAIT_NONE = 255,
};
/* "send_gpu_wait", "send_peer_wait", "send_net_wait", "recv_net_wait",
 * "recv_flush_wait", "recv_gpu_wait"; "none" otherwise. */
const char *nt_wait_name(int wait);

enum nt_dir { NT_DIR_SEND = 0, NT_DIR_RECV = 1 };
/* The i-th (0..2) wait state of a direction: nt_dir_wait(NT_DIR_RECV, 1) is
 * NT_WAIT_RECV_FLUSH. */
static inline int nt_dir_wait(int dir, int i) {
  return dir == NT_DIR_RECV ? 3 + i : i;
}

/* Operations (since 1.1). NCCL names functions, algorithms, protocols and
 * datatypes with strings; the plugin maps them to these wire values, and
 * names it does not know to OTHER (they are counted, not lost). */
enum nt_func {
  NT_FUNC_OTHER,
  NT_FUNC_ALLREDUCE,
  NT_FUNC_ALLGATHER,
  NT_FUNC_REDUCESCATTER,
  NT_FUNC_BROADCAST,
  NT_FUNC_REDUCE,
  NT_FUNC_ALLTOALL,
  NT_FUNC_GATHER,
  NT_FUNC_SCATTER,
  NT_FUNC_SEND,
  NT_FUNC_RECV,
  NT_FUNC_SENDRECV,
  NT_FUNC_COUNT,
};
enum nt_algo {
  NT_ALGO_NONE, /* not given (p2p) */
  NT_ALGO_TREE,
  NT_ALGO_RING,
  NT_ALGO_COLLNET_DIRECT,
  NT_ALGO_COLLNET_CHAIN,
  NT_ALGO_NVLS,
  NT_ALGO_NVLS_TREE,
  NT_ALGO_PAT,
  NT_ALGO_OTHER,
  NT_ALGO_COUNT,
};
enum nt_proto_id { NT_PR_NONE, NT_PR_LL, NT_PR_LL128, NT_PR_SIMPLE, NT_PR_OTHER, NT_PR_COUNT };
enum nt_dtype {
  NT_DT_UNKNOWN,
  NT_DT_INT8,
  NT_DT_UINT8,
  NT_DT_INT32,
  NT_DT_UINT32,
  NT_DT_INT64,
  NT_DT_UINT64,
  NT_DT_FLOAT16,
  NT_DT_FLOAT32,
  NT_DT_FLOAT64,
  NT_DT_BFLOAT16,
  NT_DT_FP8E4M3,
  NT_DT_FP8E5M2,
  NT_DT_COUNT,
};
enum nt_op_kind { NT_OP_COLL, NT_OP_P2P };
/* What is known of an operation's end: only that it was enqueued (no child
 * event ever came: intra-node work without kernelch), still in flight, or
 * done (its last proxy-op or kernel-channel child stopped). */
enum nt_op_state { NT_OPS_ENQUEUED, NT_OPS_IN_FLIGHT, NT_OPS_DONE, NT_OPS_COUNT };
/* Where a done operation's duration comes from. */
enum nt_timing { NT_TIMING_NONE, NT_TIMING_HOST, NT_TIMING_GPU, NT_TIMING_COUNT };
/* Whether work in flight has started on the GPU (1.2). Queued: enqueued and
 * handed to the proxy, but no step has left its first wait (a send step its
 * GPU has not filled, a receive nothing has arrived for) and no kernel
 * channel has started: the GPU has not reached it (CPU run-ahead). Running:
 * some of it has. A channel row with nothing in flight is idle. Unknown (0,
 * so that a zeroed row claims nothing): a 1.1 publisher, which does not say;
 * readers then judge by age alone, as before 1.2. */
enum nt_run { NT_RUN_UNKNOWN, NT_RUN_IDLE, NT_RUN_QUEUED, NT_RUN_RUNNING, NT_RUN_COUNT };
const char *nt_run_name(int run); /* "unknown", "idle", "queued", "running" */
/* Operation flags (1.2); readers ignore bits they do not know. */
enum {
  NT_OPF_UNREPORTED = 1, /* NCCL never reports its completion (CollNet, CE memcpy, no kernelch) */
  NT_OPF_RELAYED = 2,    /* its proxy work ran in another process (PXN) */
  NT_OPF_SYMMETRIC = 4,  /* 1.4: a symmetric-kernel collective (NCCL 2.31 isSymColl) */
};

/* Names as NCCL spells them ("AllReduce", "RING", "SIMPLE", "ncclFloat32"),
 * "other"/"none"/"unknown" otherwise; the *_from_name parsers accept exactly
 * NCCL's spellings (NULL gives NONE / OTHER / UNKNOWN). */
const char *nt_func_name(int func);
const char *nt_algo_name(int algo);
const char *nt_proto_name(int proto);
const char *nt_dtype_name(int dtype);
const char *nt_op_state_name(int state); /* "enqueued", "in_flight", "done" */
const char *nt_timing_name(int timing);  /* "none", "host", "gpu" */
int nt_func_from_name(const char *s);
int nt_algo_from_name(const char *s);
int nt_proto_from_name(const char *s);
int nt_dtype_from_name(const char *s);
int nt_dtype_size(int dtype); /* bytes per element, 0 when unknown */
/* NCCL's event classes by bit (ncclProfileGroup = bit 0 ...
 * ncclProfileKernelPhase = bit 15, ABI v7): "group", "coll", "p2p",
 * "proxyop", "proxystep", "proxyctrl", "kernelch", "netplugin", "groupapi",
 * "collapi", "p2papi", "kernellaunch", "cecoll", "cesync", "cebatch",
 * "kernelphase"; NULL past the last. The names NCCLTOP_EVENTS
 * takes and the viewer shows. */
#define NT_EVENT_CLASSES 16
const char *nt_event_class_name(int bit);
/* Size bucket of a message: floor(log2(bytes)), 0 for 0 or 1 byte. */
static inline uint8_t nt_size_bucket(uint64_t bytes) {
  return bytes > 1 ? (uint8_t)(63 - __builtin_clzll(bytes)) : 0;
}

/* The rows of the snapshot's sections. Their members, types, wire order and
 * versions are the tables in snapshot_rows.h (NT_<SECTION>_ROW), which the
 * encoder and decoder are generated from: add a field there. */

/* Process-wide counters, cumulative since the plugin loaded. */
typedef NT_ROW_STRUCT(NT_PROCESS_ROW) nt_process_counters;

typedef NT_ROW_STRUCT(NT_COMM_ROW) nt_comm_row;

typedef NT_ROW_STRUCT(NT_PROXY_ROW) nt_proxy_row;

typedef NT_ROW_STRUCT(NT_CHANNEL_ROW) nt_channel_row;

/* The kernel phases NCCL 2.31 reports (KernelPhase phaseId). */
enum nt_kphase {
  NT_KPHASE_INITIAL_SYNC = 0,
  NT_KPHASE_COMPUTE,
  NT_KPHASE_FINAL_SYNC,
  NT_KPHASE_COUNT
};
typedef NT_ROW_STRUCT(NT_KERNEL_ROW) nt_kernel_row;

/* Operation statistics (1.1), one row per (communicator, kind, function,
 * algorithm, protocol, size bucket, phase). Counts every operation the
 * plugin retired; those still in flight are in the oplog. */
typedef NT_ROW_STRUCT(NT_OP_ROW) nt_op_row;

/* One phase name (1.1). */
typedef NT_ROW_STRUCT(NT_PHASE_ROW) nt_phase_row;
/* Where a phase name came from (1.3). */
enum nt_phase_source {
  NT_PHASE_NCCLTOP_TAG = 0, /* the application's nccltop_tag() */
  NT_PHASE_USER_TAG = 1,    /* NCCL 2.31's per-call userTag (ABI v7): "tag:<n>" */
  NT_PHASE_SOURCE_COUNT
};

/* One operation (1.1): recently retired, or still in flight. */
typedef NT_ROW_STRUCT(NT_OPLOG_ROW) nt_oplog_row;

/* One kernel variant name (1.4): what NCCL 2.31 calls the symmetric kernel
 * that ran a collective (coll.kernelVariant), e.g. "AllReduce_AGxLL_R". */
typedef NT_ROW_STRUCT(NT_VARIANT_ROW) nt_variant_row;

/* Per (communicator, function) progress (1.1): what the straggler view
 * compares across ranks. */
typedef NT_ROW_STRUCT(NT_SEQ_ROW) nt_seq_row;

enum nt_net_type { NT_NET_IB_QP = 1, NT_NET_SOCKET = 2 };
/* Network plugin events (1.1), per (communicator, device, QP or socket). */
typedef NT_ROW_STRUCT(NT_NET_ROW) nt_net_row;

/* A decoded snapshot; nt_snapshot_new() sizes every array to its limit once,
 * so decoding allocates nothing. */
typedef struct {
  uint16_t major, minor;
  uint64_t seq;
  uint32_t pid;
  uint32_t interval_ms;
  uint64_t mono_ns; /* publisher's monotonic clock when encoded */
  uint64_t wall_ns; /* publisher's CLOCK_REALTIME when encoded */
  uint8_t final;    /* 1 in the last snapshot before the publisher stops */
  char host[NT_MAX_HOST + 1];
  nt_process_counters process;
  uint32_t ncomms, nproxy, nchannels, nkernels;
  nt_comm_row *comms;
  nt_proxy_row *proxy;
  nt_channel_row *channels;
  nt_kernel_row *kernels;
  /* 1.1; empty in a 1.0 snapshot */
  uint32_t nops, nphases, noplog, nseq, nnet;
  nt_op_row *ops;
  nt_phase_row *phases;
  nt_oplog_row *oplog;
  nt_seq_row *seq_rows;
  nt_net_row *net;
  /* 1.4; empty in older snapshots */
  uint32_t nvariants;
  nt_variant_row *variants;
} nt_snapshot;

nt_snapshot *nt_snapshot_new(void); /* NULL on allocation failure */
void nt_snapshot_free(nt_snapshot *s);
void nt_snapshot_clear(nt_snapshot *s); /* counts to 0, header kept */

/* Bytes nt_snapshot_encode needs for `s` at most. */
size_t nt_snapshot_encoded_max(const nt_snapshot *s);
/* Encodes into buf; returns bytes written, 0 if cap is too small or a count
 * exceeds its limit. */
size_t nt_snapshot_encode(const nt_snapshot *s, uint8_t *buf, size_t cap);
/* Decodes; returns 0, or -1 with a human-readable reason in err. Unknown
 * trailing sections and record bytes of a newer minor version are skipped;
 * an unknown major version is rejected. */
int nt_snapshot_decode(const uint8_t *buf, size_t len, nt_snapshot *out, char *err, size_t errlen);

/* Hello: once per process, re-sent every few seconds. */
typedef struct {
  char name[NT_MAX_ENV_NAME + 1];
  char value[NT_MAX_ENV_VALUE + 1];
} nt_env_var;

typedef struct {
  uint16_t major, minor;
  char host[NT_MAX_HOST + 1];
  uint32_t pid;
  char nccl_version[32]; /* "2.28.9", or "" when unknown */
  char plugin_version[32];
  uint8_t abi_version;
  /* The plugin's event clock: "tsc", "cntvct" (the CPU's counter, converted
   * to CLOCK_MONOTONIC) or "monotonic"; "" when an older plugin left it out. */
  char clock[16];
  uint64_t start_wall_ns;
  uint32_t nenv;
  nt_env_var env[NT_MAX_ENV];
} nt_hello;

/* Writes JSON into buf (NUL-terminated); returns its length, 0 if it does not
 * fit. Uses no allocation (safe inside the plugin). */
size_t nt_hello_encode(const nt_hello *h, char *buf, size_t cap);
int nt_hello_decode(const char *json, size_t len, nt_hello *out, char *err, size_t errlen);

typedef struct {
  uint32_t pid;
  uint64_t comm_hash;
  char name[NT_MAX_NAME + 1];
  int32_t rank, nranks, nnodes;
} nt_comm_info;

size_t nt_comm_encode(const nt_comm_info *c, char *buf, size_t cap);
int nt_comm_decode(const char *json, size_t len, nt_comm_info *out, char *err, size_t errlen);

/* Endpoints. The directory is $NCCLTOP_DIR, else /tmp/nccltop-<uid>. */
int nt_endpoint_dir(char *buf, size_t cap); /* 0, or -1 if it does not fit */
/* Opens the directory (creating it 0700 first when `create`) and checks,
 * through the descriptor, that it is a real directory owned by us with no
 * group/other access. Returns the descriptor (O_CLOEXEC), or -1 with the
 * reason in err. Use the directory only through the descriptor from then on
 * (nt_endpoint_fd_address, fdopendir, unlinkat): the path may name another
 * directory, or a symlink, a moment later. */
int nt_endpoint_dir_open(const char *dir, bool create, char *err, size_t errlen);
/* True while the path still names the directory open as fd (same device and
 * inode, not through a symlink); false once it was removed or replaced. */
bool nt_endpoint_dir_same(const char *dir, int fd);
/* "ipc:///proc/self/fd/<fd>/<name>": the file `name` in the directory open
 * as fd, whatever happens to its path (bind and connect with this). -1 if it
 * does not fit. Keep fd open until the ZeroMQ context is terminated (a
 * reconnect, or a listener removing its file at close, goes by this path),
 * then remove the file with unlinkat: ZeroMQ 4.3 leaves it behind. */
int nt_endpoint_fd_address(int fd, const char *name, char *buf, size_t cap);
/* Socket file names: "<pid>.<pidns>.sock", pidns the inode number of
 * /proc/self/ns/pid, so processes with the same pid in different PID
 * namespaces (containers sharing /tmp) do not collide; "<pid>.sock" when
 * pidns is 0 (namespace unknown, or an older plugin). */
uint64_t nt_endpoint_pidns(void); /* ours; 0 if /proc/self/ns/pid is unreadable */
int nt_endpoint_name(uint32_t pid, uint64_t pidns, char *buf, size_t cap);
/* "ipc://<dir>/<name>" for that pid in our PID namespace: the name people
 * read (logs, the viewer's sources); not for binding (see above). */
int nt_endpoint_for_pid(const char *dir, uint32_t pid, char *buf, size_t cap);
/* Parses either name form; returns the pid (1..NT_PID_MAX) and sets *pidns
 * (0 for "<pid>.sock"; pidns may be NULL), or returns 0 for any other name. */
uint32_t nt_endpoint_parse_name(const char *name, uint64_t *pidns);
/* Viewers' socket files (from 0.2 the plugin never listens: every reader
 * binds "viewer-<pid>-<serial>-<pidns>.sock" in the directory, pidns 0 when
 * unknown, and each publisher connects to every live one it finds there).
 * Returns 0, or -1 if it does not fit or pid is 0 or above NT_PID_MAX. */
int nt_endpoint_viewer_name(uint32_t pid, uint32_t serial, uint64_t pidns, char *buf, size_t cap);
/* Parses that form: the pid (1..NT_PID_MAX) and *pidns (may be NULL), or 0
 * for any other name. */
uint32_t nt_endpoint_parse_viewer_name(const char *name, uint64_t *pidns);

/* Copies src into dst (cap bytes with NUL) making control characters, DEL,
 * C1 controls and invalid UTF-8 visible as \xNN; the result is safe to put on
 * a terminal. Returns dst. */
char *nt_sanitize(const char *src, size_t srclen, char *dst, size_t cap);

#endif

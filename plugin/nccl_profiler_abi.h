/* The NCCL profiler plugin ABI, versions 3 to 7, as NCCL 2.26 to 2.31 call it.
 *
 * Written for nccltop from the layouts NCCL publishes in
 * src/include/plugin/profiler/profiler_v{3,4,5,6,7}.h; the static assertions at
 * the end pin every offset we read, so a mistake here fails the build instead
 * of corrupting a training job. Only the fields nccltop (and its simulator,
 * which plays NCCL) use are spelled out in full; v6's CE members share the
 * union with v5's (NCCL sends CE types to a v6 plugin only).
 */
#ifndef NCCLTOP_NCCL_PROFILER_ABI_H
#define NCCLTOP_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int nt_nccl_result; /* ncclResult_t: ncclSuccess is 0 */
enum { NT_NCCL_SUCCESS = 0, NT_NCCL_INTERNAL_ERROR = 3, NT_NCCL_INVALID_USAGE = 5 };

/* ncclDebugLogger_t and the values nccltop passes to it. */
typedef void (*nt_nccl_logger)(int level, unsigned long flags, const char *file, int line,
                               const char *fmt, ...);
enum { NT_NCCL_LOG_WARN = 2, NT_NCCL_LOG_INFO = 3, NT_NCCL_LOG_TRACE = 5 };
#define NT_NCCL_SUBSYS_PROFILE 0x4000UL

/* Event type bits (ncclProfileGroup ...). */
enum {
  NT_EV_GROUP = 1 << 0,
  NT_EV_COLL = 1 << 1,
  NT_EV_P2P = 1 << 2,
  NT_EV_PROXY_OP = 1 << 3,
  NT_EV_PROXY_STEP = 1 << 4,
  NT_EV_PROXY_CTRL = 1 << 5,
  NT_EV_KERNEL_CH = 1 << 6,      /* v3+ */
  NT_EV_NET_PLUGIN = 1 << 7,     /* v3+ */
  NT_EV_GROUP_API = 1 << 8,      /* v5+ */
  NT_EV_COLL_API = 1 << 9,       /* v5+ */
  NT_EV_P2P_API = 1 << 10,       /* v5+ */
  NT_EV_KERNEL_LAUNCH = 1 << 11, /* v5+ */
  NT_EV_CE_COLL = 1 << 12,       /* v6 */
  NT_EV_CE_SYNC = 1 << 13,       /* v6 */
  NT_EV_CE_BATCH = 1 << 14,      /* v6 */
  NT_EV_KERNEL_PHASE = 1 << 15,  /* v7: a phase of a kernel channel's work */
};

/* ncclProfilerEventState_t: one enum for all versions. */
enum {
  /* v3 (NCCL 2.26) ProxyOp states; their arguments carry the op's running
   * transSize. 2.27 dropped them for NT_ST_OP_IN_PROGRESS. */
  NT_ST_V3_OP_SEND_REM_FIFO_WAIT = 1, /* before each isend try of the next step */
  NT_ST_V3_OP_SEND_TRANSMITTED = 2,
  NT_ST_V3_OP_SEND_DONE = 3, /* its proxyOp.steps: the op's steps done so far */
  NT_ST_V3_OP_RECV_RECEIVED = 5,
  NT_ST_V3_OP_RECV_DONE = 7,
  NT_ST_STEP_SEND_GPU_WAIT = 8,
  NT_ST_STEP_SEND_WAIT = 9,
  NT_ST_STEP_RECV_WAIT = 10,
  NT_ST_STEP_RECV_FLUSH_WAIT = 11,
  NT_ST_STEP_RECV_GPU_WAIT = 12,
  NT_ST_CTRL_IDLE = 13,
  NT_ST_CTRL_ACTIVE = 14,
  NT_ST_CTRL_SLEEP = 15,
  NT_ST_CTRL_WAKEUP = 16,
  NT_ST_CTRL_APPEND = 17,
  NT_ST_CTRL_APPEND_END = 18,
  NT_ST_OP_IN_PROGRESS = 19,       /* v4+ */
  NT_ST_STEP_SEND_PEER_WAIT = 20,  /* v4+ */
  NT_ST_NET_PLUGIN_UPDATE = 21,    /* v4+ */
  NT_ST_KERNEL_CH_STOP = 22,       /* v4+ */
  NT_ST_GROUP_START_API_STOP = 23, /* v5+ */
  NT_ST_GROUP_END_API_START = 24,  /* v5+ */
  NT_ST_KERNEL_PHASE_STOP = 31,    /* v7: its argument is kernelCh.pTimer */
};

/* Union members shared by v4, v5 and v6 (v3's differ where noted below). */
struct nt_abi_proxy_op {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct nt_abi_proxy_step {
  int step;
};
struct nt_abi_kernel_ch {
  uint8_t channelId;
  uint64_t pTimer; /* v4+: GPU globaltimer at the channel's start */
};
struct nt_abi_net_plugin {
  int64_t id;
  void *data;
};

/* ---- v3 (NCCL 2.26) ---- */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *name;
      uint64_t commHash;
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
    } p2p;
    struct nt_abi_proxy_op proxyOp;
    struct nt_abi_proxy_step proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    struct nt_abi_net_plugin netPlugin;
  };
} nt_descr_v3;

typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} nt_state_args_v3;

/* ---- v4 (NCCL 2.27) ---- */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct nt_abi_proxy_op proxyOp;
    struct nt_abi_proxy_step proxyStep;
    struct nt_abi_kernel_ch kernelCh;
    struct nt_abi_net_plugin netPlugin;
  };
} nt_descr_v4;

/* State arguments of v4, v5 and v6 (v5 and v6 add members of the same size). */
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} nt_state_args_v4;

/* ---- v5 (NCCL 2.28) and v6 (2.29, 2.30): same layout for what we read ----
 * Their members' fields, which v7 repeats before adding its own. */
#define NT_V5_COLL_API                                                                             \
  const char *func;                                                                                \
  size_t count;                                                                                    \
  const char *datatype;                                                                            \
  int root;                                                                                        \
  void *stream;                                                                                    \
  bool graphCaptured;
#define NT_V5_P2P_API                                                                              \
  const char *func;                                                                                \
  size_t count;                                                                                    \
  const char *datatype;                                                                            \
  void *stream;                                                                                    \
  bool graphCaptured;
#define NT_V5_COLL                                                                                 \
  uint64_t seqNumber;                                                                              \
  const char *func;                                                                                \
  void const *sendBuff;                                                                            \
  void *recvBuff;                                                                                  \
  size_t count;                                                                                    \
  int root;                                                                                        \
  const char *datatype;                                                                            \
  uint8_t nChannels;                                                                               \
  uint8_t nWarps;                                                                                  \
  const char *algo;                                                                                \
  const char *proto;                                                                               \
  void *parentGroup;
#define NT_V5_P2P                                                                                  \
  const char *func;                                                                                \
  void *buff;                                                                                      \
  const char *datatype;                                                                            \
  size_t count;                                                                                    \
  int peer;                                                                                        \
  uint8_t nChannels;                                                                               \
  void *parentGroup;
/* v6's copy-engine collective (the communicator's CE sequence, not per
 * function; AllGather's count in bytes, datatype ncclInt8, as a Coll's). */
#define NT_V6_CE_COLL                                                                              \
  uint64_t seqNumber;                                                                              \
  const char *func;                                                                                \
  void const *sendBuff;                                                                            \
  void *recvBuff;                                                                                  \
  size_t count;                                                                                    \
  int root;                                                                                        \
  const char *datatype;                                                                            \
  const char *syncStrategy;                                                                        \
  bool intraBatchSync;                                                                             \
  uint32_t batchSize;                                                                              \
  uint32_t numBatches;                                                                             \
  uint32_t ceSeqNum;                                                                               \
  void *stream;
/* The members v5, v6 and v7 share unchanged. */
#define NT_V5_SHARED_MEMBERS                                                                       \
  struct {                                                                                         \
    bool graphCaptured;                                                                            \
    int groupDepth;                                                                                \
  } groupApi;                                                                                      \
  struct {                                                                                         \
    void *stream;                                                                                  \
  } kernelLaunch;                                                                                  \
  struct nt_abi_proxy_op proxyOp;                                                                  \
  struct nt_abi_proxy_step proxyStep;                                                              \
  struct nt_abi_kernel_ch kernelCh;                                                                \
  struct nt_abi_net_plugin netPlugin;                                                              \
  struct {                                                                                         \
    bool isComplete;                                                                               \
    int nRanks;                                                                                    \
  } ceCollSync;                                                                                    \
  struct {                                                                                         \
    int numOps;                                                                                    \
    size_t totalBytes;                                                                             \
    bool useIntraSync;                                                                             \
  } ceCollBatch;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    NT_V5_SHARED_MEMBERS
    struct {
      NT_V5_COLL_API
    } collApi;
    struct {
      NT_V5_P2P_API
    } p2pApi;
    struct {
      NT_V5_COLL
    } coll;
    struct {
      NT_V5_P2P
    } p2p;
    /* v6 only (NCCL 2.29+; the v5 shim drops these types): copy-engine
     * collectives. ceColl is the largest member and ends at 112 bytes. */
    struct {
      NT_V6_CE_COLL
    } ceColl;
    unsigned char v6_ce_space[88];
  };
} nt_descr_v5;
typedef nt_descr_v5 nt_descr_v6;
typedef nt_state_args_v4 nt_state_args_v5;
typedef nt_state_args_v4 nt_state_args_v6;

/* ---- v7 (NCCL 2.31): v6 plus a 64-bit userTag (0: none) at the end of
 * CollApi, P2pApi, Coll, P2p and CeColl, Coll's kernelVariant and isSymColl,
 * and the KernelPhase member. Every other member keeps its v6 offset. ---- */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    NT_V5_SHARED_MEMBERS
    struct {
      NT_V5_COLL_API
      uint64_t userTag;
    } collApi;
    struct {
      NT_V5_P2P_API
      uint64_t userTag;
    } p2pApi;
    struct {
      NT_V5_COLL
      const char *kernelVariant; /* symmetric kernels only, else NULL */
      bool isSymColl;
      uint64_t userTag;
    } coll;
    struct {
      NT_V5_P2P
      uint64_t userTag;
    } p2p;
    struct {
      NT_V6_CE_COLL
      uint64_t userTag;
    } ceColl;
    /* A phase of one kernel channel's work (its parent is the KernelCh
     * handle): 0 initial_sync, 1 compute, 2 final_sync; pTimer is the GPU
     * globaltimer at its start, its KernelPhaseStop record carries the stop
     * in the state arguments' kernelCh.pTimer. */
    struct {
      uint8_t channelId;
      uint8_t phaseId;
      const char *phaseName;
      uint64_t pTimer;
    } kernelPhase;
  };
} nt_descr_v7;
/* v7's state arguments: v6's union; KernelPhaseStop reuses kernelCh.pTimer. */
typedef nt_state_args_v4 nt_state_args_v7;

/* Function tables: identical shape in every version, only argument types differ. */
#define NT_PROFILER_TABLE(V, INIT_ARGS)                                                            \
  typedef struct {                                                                                 \
    const char *name;                                                                              \
    nt_nccl_result(*init) INIT_ARGS;                                                               \
    nt_nccl_result (*startEvent)(void *context, void **eHandle, nt_descr_##V *eDescr);             \
    nt_nccl_result (*stopEvent)(void *eHandle);                                                    \
    nt_nccl_result (*recordEventState)(void *eHandle, int eState, nt_state_args_##V *args);        \
    nt_nccl_result (*finalize)(void *context);                                                     \
  } nt_profiler_##V

NT_PROFILER_TABLE(v3, (void **context, int *eActivationMask));
NT_PROFILER_TABLE(v4, (void **context, int *eActivationMask, const char *commName,
                       uint64_t commHash, int nNodes, int nranks, int rank, nt_nccl_logger logfn));
NT_PROFILER_TABLE(v5, (void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, nt_nccl_logger logfn));
NT_PROFILER_TABLE(v6, (void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, nt_nccl_logger logfn));
NT_PROFILER_TABLE(v7, (void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, nt_nccl_logger logfn));

/* Network plugin sub-ABI carried in netPlugin.data (NCCL's net_ib_v1.h / net_socket_v1.h). */
#define NT_NET_TYPE_MASK 0xFFFF0000
#define NT_NET_VER_MASK  0x0000FFFF
#define NT_NET_TYPE_IB   (1 << 16)
#define NT_NET_TYPE_SOCK (2 << 16)
#define NT_NET_EV_QP     1 /* ncclProfileQp */
#define NT_NET_EV_SOCKET 1 /* ncclProfileSocket */

/* Version 1 of the IB and socket event descriptors a network plugin hands
 * the profiler callback (netPlugin.data). */
typedef struct {
  uint8_t type;
  union {
    struct {
      int device;
      uint64_t wr_id;
      int opcode;
      int qpNum;
      size_t length;
    } qp;
  };
} nt_net_ib_v1;

typedef struct {
  uint8_t type;
  union {
    struct {
      int fd;
      int op;
      size_t length;
    } sock;
  };
} nt_net_sock_v1;

/* Layout pins, x86-64 / aarch64 LP64 (the offsets NCCL's headers give there). */
#define NT_PIN(T, F, O) _Static_assert(offsetof(T, F) == (O), #T "." #F " offset")
NT_PIN(nt_descr_v3, parentObj, 8);
NT_PIN(nt_descr_v3, rank, 16);
NT_PIN(nt_descr_v3, coll.commHash, 32);
NT_PIN(nt_descr_v3, coll.seqNumber, 40);
NT_PIN(nt_descr_v3, coll.func, 48);
NT_PIN(nt_descr_v3, coll.count, 72);
NT_PIN(nt_descr_v3, coll.datatype, 88);
NT_PIN(nt_descr_v3, coll.nMaxChannels, 96);
NT_PIN(nt_descr_v3, coll.algo, 104);
NT_PIN(nt_descr_v3, coll.proto, 112);
NT_PIN(nt_descr_v3, coll.root, 80);
NT_PIN(nt_descr_v3, coll.nWarps, 97);
NT_PIN(nt_descr_v3, p2p.func, 40);
NT_PIN(nt_descr_v3, p2p.datatype, 56);
NT_PIN(nt_descr_v3, p2p.count, 64);
NT_PIN(nt_descr_v3, p2p.peer, 72);
NT_PIN(nt_descr_v3, netPlugin.id, 24);
NT_PIN(nt_descr_v3, netPlugin.data, 32);
NT_PIN(nt_descr_v3, proxyOp.pid, 24);
NT_PIN(nt_descr_v3, proxyOp.channelId, 28);
NT_PIN(nt_descr_v3, proxyOp.peer, 32);
NT_PIN(nt_descr_v3, proxyOp.nSteps, 36);
NT_PIN(nt_descr_v3, proxyOp.chunkSize, 40);
NT_PIN(nt_descr_v3, proxyOp.isSend, 44);
NT_PIN(nt_descr_v3, kernelCh.channelId, 24);
_Static_assert(sizeof(nt_descr_v3) == 120, "v3 descriptor size");
_Static_assert(sizeof(nt_state_args_v3) == 16, "v3 state args size");

NT_PIN(nt_descr_v4, parentObj, 8);
NT_PIN(nt_descr_v4, rank, 16);
NT_PIN(nt_descr_v4, coll.seqNumber, 24);
NT_PIN(nt_descr_v4, coll.func, 32);
NT_PIN(nt_descr_v4, coll.count, 56);
NT_PIN(nt_descr_v4, coll.root, 64);
NT_PIN(nt_descr_v4, coll.datatype, 72);
NT_PIN(nt_descr_v4, coll.nChannels, 80);
NT_PIN(nt_descr_v4, coll.nWarps, 81);
NT_PIN(nt_descr_v4, coll.algo, 88);
NT_PIN(nt_descr_v4, coll.proto, 96);
NT_PIN(nt_descr_v4, p2p.func, 24);
NT_PIN(nt_descr_v4, p2p.datatype, 40);
NT_PIN(nt_descr_v4, p2p.count, 48);
NT_PIN(nt_descr_v4, p2p.peer, 56);
NT_PIN(nt_descr_v4, p2p.nChannels, 60);
NT_PIN(nt_descr_v4, proxyOp.pid, 24);
NT_PIN(nt_descr_v4, proxyOp.isSend, 44);
NT_PIN(nt_descr_v4, proxyStep.step, 24);
NT_PIN(nt_descr_v4, kernelCh.channelId, 24);
NT_PIN(nt_descr_v4, kernelCh.pTimer, 32);
NT_PIN(nt_descr_v4, netPlugin.id, 24);
NT_PIN(nt_descr_v4, netPlugin.data, 32);
_Static_assert(sizeof(nt_descr_v4) == 104, "v4 descriptor size");
_Static_assert(sizeof(nt_state_args_v4) == 8, "v4 state args size");

NT_PIN(nt_descr_v5, parentObj, 8);
NT_PIN(nt_descr_v5, rank, 16);
NT_PIN(nt_descr_v5, groupApi.groupDepth, 28);
NT_PIN(nt_descr_v5, collApi.func, 24);
NT_PIN(nt_descr_v5, collApi.count, 32);
NT_PIN(nt_descr_v5, collApi.datatype, 40);
NT_PIN(nt_descr_v5, collApi.root, 48);
NT_PIN(nt_descr_v5, collApi.stream, 56);
NT_PIN(nt_descr_v5, collApi.graphCaptured, 64);
NT_PIN(nt_descr_v5, p2pApi.stream, 48);
NT_PIN(nt_descr_v5, p2pApi.graphCaptured, 56);
NT_PIN(nt_descr_v5, coll.seqNumber, 24);
NT_PIN(nt_descr_v5, coll.func, 32);
NT_PIN(nt_descr_v5, coll.count, 56);
NT_PIN(nt_descr_v5, coll.root, 64);
NT_PIN(nt_descr_v5, coll.datatype, 72);
NT_PIN(nt_descr_v5, coll.nChannels, 80);
NT_PIN(nt_descr_v5, coll.nWarps, 81);
NT_PIN(nt_descr_v5, coll.algo, 88);
NT_PIN(nt_descr_v5, coll.proto, 96);
NT_PIN(nt_descr_v5, coll.parentGroup, 104);
NT_PIN(nt_descr_v5, p2p.func, 24);
NT_PIN(nt_descr_v5, p2p.datatype, 40);
NT_PIN(nt_descr_v5, p2p.count, 48);
NT_PIN(nt_descr_v5, p2p.peer, 56);
NT_PIN(nt_descr_v5, p2p.nChannels, 60);
NT_PIN(nt_descr_v5, p2p.parentGroup, 64);
NT_PIN(nt_descr_v5, proxyOp.pid, 24);
NT_PIN(nt_descr_v5, proxyOp.channelId, 28);
NT_PIN(nt_descr_v5, proxyOp.peer, 32);
NT_PIN(nt_descr_v5, proxyOp.nSteps, 36);
NT_PIN(nt_descr_v5, proxyOp.chunkSize, 40);
NT_PIN(nt_descr_v5, proxyOp.isSend, 44);
NT_PIN(nt_descr_v5, proxyStep.step, 24);
NT_PIN(nt_descr_v5, kernelCh.channelId, 24);
NT_PIN(nt_descr_v5, kernelCh.pTimer, 32);
NT_PIN(nt_descr_v5, netPlugin.id, 24);
NT_PIN(nt_descr_v5, netPlugin.data, 32);
/* v6's CE members, as profiler_v6.h lays them out. */
NT_PIN(nt_descr_v6, ceColl.seqNumber, 24);
NT_PIN(nt_descr_v6, ceColl.func, 32);
NT_PIN(nt_descr_v6, ceColl.sendBuff, 40);
NT_PIN(nt_descr_v6, ceColl.recvBuff, 48);
NT_PIN(nt_descr_v6, ceColl.count, 56);
NT_PIN(nt_descr_v6, ceColl.root, 64);
NT_PIN(nt_descr_v6, ceColl.datatype, 72);
NT_PIN(nt_descr_v6, ceColl.syncStrategy, 80);
NT_PIN(nt_descr_v6, ceColl.intraBatchSync, 88);
NT_PIN(nt_descr_v6, ceColl.batchSize, 92);
NT_PIN(nt_descr_v6, ceColl.numBatches, 96);
NT_PIN(nt_descr_v6, ceColl.ceSeqNum, 100);
NT_PIN(nt_descr_v6, ceColl.stream, 104);
NT_PIN(nt_descr_v6, ceCollSync.isComplete, 24);
NT_PIN(nt_descr_v6, ceCollSync.nRanks, 28);
NT_PIN(nt_descr_v6, ceCollBatch.numOps, 24);
NT_PIN(nt_descr_v6, ceCollBatch.totalBytes, 32);
NT_PIN(nt_descr_v6, ceCollBatch.useIntraSync, 40);
_Static_assert(sizeof(nt_descr_v5) == 112, "v5/v6 descriptor size");

/* v7: v6's offsets for everything v6 has (read by the same macro as v5's),
 * then the new members, as profiler_v7.h lays them out. */
NT_PIN(nt_descr_v7, parentObj, 8);
NT_PIN(nt_descr_v7, rank, 16);
NT_PIN(nt_descr_v7, groupApi.groupDepth, 28);
NT_PIN(nt_descr_v7, collApi.func, 24);
NT_PIN(nt_descr_v7, collApi.count, 32);
NT_PIN(nt_descr_v7, collApi.datatype, 40);
NT_PIN(nt_descr_v7, collApi.root, 48);
NT_PIN(nt_descr_v7, collApi.stream, 56);
NT_PIN(nt_descr_v7, collApi.graphCaptured, 64);
NT_PIN(nt_descr_v7, collApi.userTag, 72);
NT_PIN(nt_descr_v7, p2pApi.func, 24);
NT_PIN(nt_descr_v7, p2pApi.stream, 48);
NT_PIN(nt_descr_v7, p2pApi.graphCaptured, 56);
NT_PIN(nt_descr_v7, p2pApi.userTag, 64);
NT_PIN(nt_descr_v7, coll.seqNumber, 24);
NT_PIN(nt_descr_v7, coll.func, 32);
NT_PIN(nt_descr_v7, coll.count, 56);
NT_PIN(nt_descr_v7, coll.root, 64);
NT_PIN(nt_descr_v7, coll.datatype, 72);
NT_PIN(nt_descr_v7, coll.nChannels, 80);
NT_PIN(nt_descr_v7, coll.nWarps, 81);
NT_PIN(nt_descr_v7, coll.algo, 88);
NT_PIN(nt_descr_v7, coll.proto, 96);
NT_PIN(nt_descr_v7, coll.parentGroup, 104);
NT_PIN(nt_descr_v7, coll.kernelVariant, 112);
NT_PIN(nt_descr_v7, coll.isSymColl, 120);
NT_PIN(nt_descr_v7, coll.userTag, 128);
NT_PIN(nt_descr_v7, p2p.func, 24);
NT_PIN(nt_descr_v7, p2p.datatype, 40);
NT_PIN(nt_descr_v7, p2p.count, 48);
NT_PIN(nt_descr_v7, p2p.peer, 56);
NT_PIN(nt_descr_v7, p2p.nChannels, 60);
NT_PIN(nt_descr_v7, p2p.parentGroup, 64);
NT_PIN(nt_descr_v7, p2p.userTag, 72);
NT_PIN(nt_descr_v7, proxyOp.pid, 24);
NT_PIN(nt_descr_v7, proxyOp.channelId, 28);
NT_PIN(nt_descr_v7, proxyOp.peer, 32);
NT_PIN(nt_descr_v7, proxyOp.nSteps, 36);
NT_PIN(nt_descr_v7, proxyOp.chunkSize, 40);
NT_PIN(nt_descr_v7, proxyOp.isSend, 44);
NT_PIN(nt_descr_v7, proxyStep.step, 24);
NT_PIN(nt_descr_v7, kernelCh.channelId, 24);
NT_PIN(nt_descr_v7, kernelCh.pTimer, 32);
NT_PIN(nt_descr_v7, netPlugin.id, 24);
NT_PIN(nt_descr_v7, netPlugin.data, 32);
NT_PIN(nt_descr_v7, ceColl.func, 32);
NT_PIN(nt_descr_v7, ceColl.count, 56);
NT_PIN(nt_descr_v7, ceColl.root, 64);
NT_PIN(nt_descr_v7, ceColl.datatype, 72);
NT_PIN(nt_descr_v7, ceColl.stream, 104);
NT_PIN(nt_descr_v7, ceColl.userTag, 112);
NT_PIN(nt_descr_v7, ceCollSync.nRanks, 28);
NT_PIN(nt_descr_v7, ceCollBatch.totalBytes, 32);
NT_PIN(nt_descr_v7, kernelPhase.channelId, 24);
NT_PIN(nt_descr_v7, kernelPhase.phaseId, 25);
NT_PIN(nt_descr_v7, kernelPhase.phaseName, 32);
NT_PIN(nt_descr_v7, kernelPhase.pTimer, 40);
_Static_assert(sizeof(nt_descr_v7) == 136, "v7 descriptor size");
_Static_assert(sizeof(nt_state_args_v7) == 8, "v7 state args size");
NT_PIN(nt_state_args_v7, kernelCh.pTimer, 0);
_Static_assert(sizeof(nt_profiler_v7) == 48, "v7 function table size");

NT_PIN(nt_net_ib_v1, qp.device, 8);
NT_PIN(nt_net_ib_v1, qp.qpNum, 28);
NT_PIN(nt_net_ib_v1, qp.length, 32);
NT_PIN(nt_net_sock_v1, sock.fd, 8);
NT_PIN(nt_net_sock_v1, sock.length, 16);
_Static_assert(sizeof(nt_profiler_v5) == 48, "function table size");

#endif

/* --ce (scenario.h): copy-engine collectives of NCCL 2.29+ and the profiler
 * v6 descriptors of their events. The layout is written from the field
 * list of NCCL's profiler_v6.h (the union starts at 24, ceColl ends at
 * 112, the size of every v5/v6 descriptor) and pinned below; the plugin's
 * header only reserves the space. The test recorder reads the descriptor
 * (NT_SIM_CE_DESCR_ONLY). */
#ifndef NCCLTOP_SIM_CE_H
#define NCCLTOP_SIM_CE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../plugin/nccl_profiler_abi.h"

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber; /* the communicator's CE sequence number at the start */
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count; /* elements (bytes for AllGather: NCCL reports ncclInt8) */
      int root;
      const char *datatype;
      const char *syncStrategy; /* "MC" (NVLS multicast) or "UC" */
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void *stream;
    } ceColl;
    struct {
      bool isComplete; /* which of the two flag arrays this sync uses */
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} sim_ce_descr;

_Static_assert(offsetof(sim_ce_descr, ceColl.seqNumber) == 24, "ceColl at 24");
_Static_assert(offsetof(sim_ce_descr, ceColl.syncStrategy) == 80, "syncStrategy at 80");
_Static_assert(offsetof(sim_ce_descr, ceColl.ceSeqNum) == 100, "ceSeqNum at 100");
_Static_assert(offsetof(sim_ce_descr, ceColl.stream) == 104, "stream at 104");
_Static_assert(offsetof(sim_ce_descr, ceCollBatch.totalBytes) == 32, "totalBytes at 32");
_Static_assert(sizeof(sim_ce_descr) == sizeof(nt_descr_v6), "same size as every v6 descriptor");

#ifndef NT_SIM_CE_DESCR_ONLY /* the recorder wants only the descriptor */
#include "rank.h"
/* Issues copy-engine collective d (an AllGather) from the application
 * thread as NCCL 2.29+ does (see ce.c); nothing reaches the proxy. */
void sim_ce_issue(sim_comm *c, const sim_op_desc *d, sim_work *w);
#endif

#endif

/* --ce: a copy-engine AllGather the way NCCL 2.29/2.30 report it.
 *
 * Enqueue (enqueue.cc ceCollTaskAppend): GroupApi start, GroupStartApiStop,
 * CollApi start and stop, then at ncclGroupEnd GroupEndApiStart. The plan
 * holds no Coll task, so ncclProfilerStartGroupEvent finds no activation
 * mask and starts no Group; ncclLaunchCeColl replaces the kernel launch (no
 * KernelLaunch event) and no proxy op is posted. The launch (ce_coll.cc
 * ncclLaunchCeColl, ncclCeAllGather, all ranks in one NVLink domain):
 *
 *   CeColl start (parent CollApi; seqNumber = ceSeqNum = the communicator's
 *                 CE sequence number; count in bytes, ncclInt8)
 *     CeSync start, stop   (ncclMemOpSync: every rank ready)
 *     CeBatch start, stop  (ncclCeLaunchBatchOps: one copy to every rank,
 *                           its own out-of-place copy included)
 *     CeSync start, stop   (every copy complete)
 *   CeColl stop, GroupApi stop
 *
 * Every sync advances ceSeqNum (ncclPrepMCSync/ncclPrepUCSync) and flips
 * which flag array the next one uses (CeSync isComplete). We assume NVLS
 * (syncStrategy "MC") and no intra-batch syncs (the batch stays under
 * NCCL's intraBatchSync thresholds). CE events get no recordEventState
 * (profiler_v6.h), and only a v6 plugin gets them: NCCL's older shims
 * drop the types they do not know. */
#include "ce.h"

#include <string.h>

#include "rank.h"

/* Per communicator of this process: NCCL's comm->ceColl state. Only the
 * communicator's application thread touches its entry. */
static uint32_t ce_seq[SIM_MAX_COMMS];
static bool ce_use_complete[SIM_MAX_COMMS];
static char ce_stream[SIM_MAX_COMMS]; /* stands for the user's stream */

static void *ce_start(sim_ctx *x, sim_ce_descr *e) {
  nt_descr_v6 d;
  memcpy(&d, e, sizeof d); /* the same bytes, in the type the driver takes */
  return sim_start(x, &d);
}

static sim_ce_descr ce_descr(int type, void *parent, int rank) {
  sim_ce_descr e;
  memset(&e, 0, sizeof e);
  e.type = (uint64_t)type;
  e.parentObj = parent;
  e.rank = rank;
  return e;
}

/* Real-time mode: the copies take time on the GPU; NCCL's host thread only
 * enqueues them, but a monitor sees the events spread over the launch. */
static void ce_pause(const nt_sim_config *cfg, uint64_t bytes) {
  if (!cfg->deterministic) sim_sleep_ns(20000 + bytes / 200); /* ~200 GB/s */
}

static void ce_sync(sim_comm *c, void *coll, int mask) {
  sim_ctx *x = &c->px;
  void *h = NULL;
  if (coll && (mask & NT_EV_CE_SYNC)) {
    sim_ce_descr e = ce_descr(NT_EV_CE_SYNC, coll, c->r->rank);
    e.ceCollSync.isComplete = ce_use_complete[c->index];
    e.ceCollSync.nRanks = c->r->cfg->ranks;
    h = ce_start(x, &e);
  }
  ce_seq[c->index]++;
  ce_use_complete[c->index] = !ce_use_complete[c->index];
  ce_pause(c->r->cfg, 0);
  sim_stop(x, h);
}

static void ce_batch(sim_comm *c, void *coll, int mask, uint64_t chunk) {
  sim_ctx *x = &c->px;
  int n = c->r->cfg->ranks;
  void *h = NULL;
  if (coll && (mask & NT_EV_CE_BATCH)) {
    sim_ce_descr e = ce_descr(NT_EV_CE_BATCH, coll, c->r->rank);
    e.ceCollBatch.numOps = n;
    e.ceCollBatch.totalBytes = (size_t)chunk * (size_t)n;
    e.ceCollBatch.useIntraSync = false;
    h = ce_start(x, &e);
  }
  ce_pause(c->r->cfg, chunk * (uint64_t)n);
  sim_stop(x, h);
}

static void *ce_coll_start(sim_comm *c, void *capi, int mask, uint64_t bytes) {
  const int any = NT_EV_CE_COLL | NT_EV_CE_SYNC | NT_EV_CE_BATCH;
  if (c->px.d->abi < 6 || !(mask & any)) return NULL;
  sim_ce_descr e = ce_descr(NT_EV_CE_COLL, capi, c->r->rank);
  e.ceColl.seqNumber = ce_seq[c->index];
  e.ceColl.func = "AllGather";
  e.ceColl.count = (size_t)bytes;
  e.ceColl.root = 0;
  e.ceColl.datatype = "ncclInt8";
  e.ceColl.syncStrategy = "MC";
  e.ceColl.ceSeqNum = ce_seq[c->index];
  e.ceColl.stream = &ce_stream[c->index];
  return ce_start(&c->px, &e);
}

void sim_ce_issue(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, m = x->on ? sim_mask_now(x) : 0;
  void *gapi = NULL, *capi = NULL;
  w->mask = m;
  if (sim_mask_wants(abi, m, NT_EV_GROUP_API)) {
    sim_ce_descr e = ce_descr(NT_EV_GROUP_API, NULL, 0); /* API events: rank 0 (M5) */
    nt_descr_v6 g;
    memcpy(&g, &e, sizeof g);
    g.groupApi.groupDepth = 1;
    gapi = sim_start(x, &g);
  }
  sim_record(x, gapi, NT_ST_GROUP_START_API_STOP, NULL);
  if (sim_mask_wants(abi, m, NT_EV_COLL_API)) {
    sim_ce_descr e = ce_descr(NT_EV_COLL_API, gapi, 0);
    nt_descr_v6 a;
    memcpy(&a, &e, sizeof a);
    a.collApi.func = d->func;
    a.collApi.count = (size_t)(d->bytes / 4); /* the user's count and type */
    a.collApi.datatype = "ncclFloat32";
    capi = sim_start(x, &a);
  }
  sim_stop(x, capi);
  sim_record(x, gapi, NT_ST_GROUP_END_API_START, NULL);
  void *coll = ce_coll_start(c, capi, m, d->bytes);
  ce_sync(c, coll, m);
  ce_batch(c, coll, m, d->bytes);
  ce_sync(c, coll, m);
  sim_stop(x, coll);
  sim_stop(x, gapi);
  sim_mark_launched(rank, c->index, w->seq);
}

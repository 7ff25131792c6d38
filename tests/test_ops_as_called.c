/* Operations as the user called them, through the real plugin's ABI: a
 * Broadcast on NCCL 2.29+ (only a CollApi) counted once, and only once
 * when NCCL does report a Coll for it or on older releases; graph replays
 * (the same seqNumber again) counted as launches; copy-engine collectives
 * (CeColl, ABI v6) counted with their bytes. */
#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0xfeedfacecafe0002ull

static ph_t H;
static const nt_profiler_v6 *V6;

/* Fresh plugin, one communicator initialised through table `abi` (5 or 6),
 * a subscribed SUB socket. Coll events expect no children. */
static void *setup(int abi) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  if (ph_setup_dir(&H) != 0 || ph_load(&H) != 0) return NULL;
  V6 = dlsym(H.lib, "ncclProfiler_v6");
  void *ctx = NULL;
  if (!V6) return NULL;
  if (abi == 6 ? V6->init(&ctx, HASH, &H.mask, "test-comm", 1, 4, 0, NULL)
               : H.v5->init(&ctx, HASH, &H.mask, "test-comm", 1, 4, 0, NULL))
    return NULL;
  H.set_mask(NT_EV_COLL | NT_EV_CE_COLL | NT_EV_CE_SYNC | NT_EV_CE_BATCH);
  if (!ctx || ph_subscribe(&H) != 0 || ph_next_snapshot(&H, 5000) != 0) return NULL;
  return ctx;
}

/* v5 and v6 share the descriptor layout and the start/stop shapes. */
static void *start(void *ctx, nt_descr_v5 *d) {
  void *h = NULL;
  H.v5->startEvent(ctx, &h, d);
  return h;
}

static void *group_api(void *ctx) {
  nt_descr_v5 d = ph_simple(NT_EV_GROUP_API);
  d.groupApi.groupDepth = 1;
  void *g = start(ctx, &d);
  H.v5->recordEventState(g, NT_ST_GROUP_START_API_STOP, NULL);
  return g;
}

/* A CollApi, started and stopped; returns its handle (a Coll's parent). */
static void *coll_api(void *ctx, void *g, const char *func, size_t count, const char *dtype) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL_API);
  d.parentObj = g;
  d.collApi.func = func;
  d.collApi.count = count;
  d.collApi.datatype = dtype;
  d.collApi.root = 1;
  void *a = start(ctx, &d);
  H.v5->stopEvent(a);
  return a;
}

static void coll(void *ctx, void *parent, const char *func, uint64_t seq, size_t count,
                 const char *dtype) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.parentObj = parent;
  d.coll.func = func;
  d.coll.seqNumber = seq;
  d.coll.count = count;
  d.coll.datatype = dtype;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.nChannels = 2;
  H.v5->stopEvent(start(ctx, &d));
}

typedef struct {
  uint64_t count, done, bytes, no_algo, launched, seq_done;
} func_view;

static func_view view(int func);

/* The latest snapshot's totals of func against count, bytes, done and
 * launched; -1 skips a field. */
static void check_view(int func, int64_t count, int64_t bytes, int64_t done, int64_t launched) {
  CHECK(ph_latest(&H) == 0);
  func_view v = view(func);
  const uint64_t got[4] = {v.count, v.bytes, v.done, v.launched};
  const int64_t want[4] = {count, bytes, done, launched};
  for (int i = 0; i < 4; i++)
    if (want[i] >= 0) CHECK_EQ_U64(got[i], (uint64_t)want[i]);
}

/* Operations of `func` in the operation log, and how many of them say
 * "completion not reported" (protocol 1.2). */
static uint32_t flagged_unreported(int func, uint32_t *all) {
  uint32_t n = 0;
  *all = 0;
  for (uint32_t i = 0; i < H.snap->noplog; i++) {
    const nt_oplog_row *o = &H.snap->oplog[i];
    if (o->func != func) continue;
    (*all)++;
    n += (o->flags & NT_OPF_UNREPORTED) != 0;
  }
  return n;
}

static func_view view(int func) {
  func_view v = {0};
  for (uint32_t i = 0; i < H.snap->nops; i++) {
    const nt_op_row *r = &H.snap->ops[i];
    if (r->func != func) continue;
    v.count += r->count;
    v.done += r->done;
    v.bytes += r->bytes;
    if (r->algo == NT_ALGO_NONE) v.no_algo += r->count;
  }
  for (uint32_t i = 0; i < H.snap->nseq; i++)
    if (H.snap->seq_rows[i].func == func) {
      v.launched = H.snap->seq_rows[i].launched;
      v.seq_done = H.snap->seq_rows[i].done;
    }
  return v;
}

/* ---- cases (each runs in its own process) ---- */

/* 2.29+: GroupApi and CollApi, nothing else; three calls, three operations
 * of 1024 x float32, untimed, launched 3. */
static void case_v6_broadcast_counted_from_its_coll_api(void) {
  void *ctx = setup(6);
  CHECK(ctx != NULL);
  for (int i = 0; i < 3; i++) {
    void *g = group_api(ctx);
    coll_api(ctx, g, "Broadcast", 1024, "ncclFloat32");
    H.v5->recordEventState(g, NT_ST_GROUP_END_API_START, NULL);
    H.v5->stopEvent(g);
  }
  check_view(NT_FUNC_BROADCAST, 3, 3 * 4096, 0, 3); /* done 0: its time is unknown */
  CHECK_EQ_U64(view(NT_FUNC_BROADCAST).no_algo, 3);
  uint32_t all;
  CHECK_EQ_U64(flagged_unreported(NT_FUNC_BROADCAST, &all), 3);
  CHECK_EQ_U64(all, 3);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
}

/* 2.29+ with AllGatherV off: the Coll follows in the same group, its parent
 * the CollApi: one operation (the Coll's), launched by its seqNumber. Two
 * Broadcasts in one group, each with its Coll. */
static void case_v6_broadcast_with_a_coll_counts_once(void) {
  void *ctx = setup(6);
  CHECK(ctx != NULL);
  void *g = group_api(ctx);
  void *a = coll_api(ctx, g, "Broadcast", 1024, "ncclFloat32");
  coll_api(ctx, g, "Broadcast", 1024, "ncclFloat32");
  H.v5->recordEventState(g, NT_ST_GROUP_END_API_START, NULL);
  coll(ctx, a, "Broadcast", 0, 4096, "ncclInt8");
  coll(ctx, a, "Broadcast", 1, 4096, "ncclInt8");
  H.v5->stopEvent(g);
  check_view(NT_FUNC_BROADCAST, 2, 2 * 4096, -1, 2);
  CHECK_EQ_U64(view(NT_FUNC_BROADCAST).no_algo, 0);
  uint32_t all;
  CHECK_EQ_U64(flagged_unreported(NT_FUNC_BROADCAST, &all), 0); /* the Colls' own */
}

/* 2.28 (v5): a Broadcast is always a Coll; its CollApi never counts, with
 * or without the Coll. */
static void case_v5_broadcast_coll_api_never_counts(void) {
  void *ctx = setup(5);
  CHECK(ctx != NULL);
  void *g = group_api(ctx);
  void *a = coll_api(ctx, g, "Broadcast", 1024, "ncclFloat32");
  coll(ctx, a, "Broadcast", 0, 4096, "ncclInt8");
  H.v5->stopEvent(g);
  g = group_api(ctx);
  coll_api(ctx, g, "Broadcast", 1024, "ncclFloat32");
  H.v5->stopEvent(g);
  check_view(NT_FUNC_BROADCAST, 1, -1, -1, 1);
}

/* A captured graph replayed: the Coll comes again with the same seqNumber
 * (NCCL does not advance it for graphs without KernelCh); each replay is
 * one more launch, so launched keeps up with the operations. */
static void case_graph_replays_advance_launched(void) {
  void *ctx = setup(6);
  CHECK(ctx != NULL);
  coll(ctx, NULL, "AllReduce", 0, 256, "ncclFloat32");
  coll(ctx, NULL, "AllReduce", 1, 256, "ncclFloat32");
  for (int i = 0; i < 3; i++) coll(ctx, NULL, "AllReduce", 2, 256, "ncclFloat32");
  coll(ctx, NULL, "AllGather", 7, 1024, "ncclInt8"); /* the mask turned on late */
  check_view(NT_FUNC_ALLREDUCE, 5, -1, -1, 5);
  CHECK_EQ_U64(view(NT_FUNC_ALLGATHER).launched, 8);
}

/* 2.29+ copy-engine AllGather: CollApi, then CeColl with CeSync, CeBatch,
 * CeSync; one AllGather of its bytes, untimed, launched once each. */
static void case_ce_coll_counted_with_its_bytes(void) {
  void *ctx = setup(6);
  CHECK(ctx != NULL);
  for (int i = 0; i < 2; i++) {
    void *g = group_api(ctx);
    void *a = coll_api(ctx, g, "AllGather", 16384, "ncclFloat32");
    H.v5->recordEventState(g, NT_ST_GROUP_END_API_START, NULL);
    nt_descr_v6 d = ph_simple(NT_EV_CE_COLL);
    d.parentObj = a;
    d.ceColl.func = "AllGather";
    d.ceColl.count = 65536;
    d.ceColl.datatype = "ncclInt8";
    d.ceColl.seqNumber = d.ceColl.ceSeqNum = (uint32_t)(2 * i);
    void *c = start(ctx, &d);
    static const uint64_t kids[3] = {NT_EV_CE_SYNC, NT_EV_CE_BATCH, NT_EV_CE_SYNC};
    for (int k = 0; k < 3; k++) {
      nt_descr_v6 e = ph_simple(kids[k]);
      e.parentObj = c;
      if (kids[k] == NT_EV_CE_BATCH) e.ceCollBatch.totalBytes = 4 * 65536;
      H.v5->stopEvent(start(ctx, &e));
    }
    H.v5->stopEvent(c);
    H.v5->stopEvent(g);
  }
  check_view(NT_FUNC_ALLGATHER, 2, 2 * 65536, 0, 2);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
  uint32_t all;
  CHECK_EQ_U64(flagged_unreported(NT_FUNC_ALLGATHER, &all), 2);
  CHECK_EQ_U64(all, 2);
}

PH_CHILD(v6_broadcast_counted_from_its_coll_api)
PH_CHILD(v6_broadcast_with_a_coll_counts_once)
PH_CHILD(v5_broadcast_coll_api_never_counts)
PH_CHILD(graph_replays_advance_launched)
PH_CHILD(ce_coll_counted_with_its_bytes)

int main(void) {
  TEST_RUN(v6_broadcast_counted_from_its_coll_api);
  TEST_RUN(v6_broadcast_with_a_coll_counts_once);
  TEST_RUN(v5_broadcast_coll_api_never_counts);
  TEST_RUN(graph_replays_advance_launched);
  TEST_RUN(ce_coll_counted_with_its_bytes);
  return TEST_DONE();
}

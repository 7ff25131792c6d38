/* NCCL 2.31's symmetric-kernel collectives through the real plugin's ABI
 * v7 (docs/NCCL-BEHAVIOUR.md O4): a Coll with isSymColl names its kernel
 * in kernelVariant ("AllReduce_AGxLL_R"), its algorithm is the variant's
 * suffix and its protocol "". A plan's kernel channels come against its
 * first task only, which alone says how many (nChannels); the plan's other
 * tasks say 0, and no proxy op ever comes. The plugin counts them per
 * variant (protocol 1.4), times the first task by its kernel, and retires
 * the others at once as unreported instead of waiting for children. End to
 * end: the simulator's 2.31 --symmetric -> the real plugin -> `nccltop -b
 * --json`. */
#include "testlib.h"
#include "plugin_harness.h"
#include "scenario_harness.h"

#define HASH 0xfeedfacecafe0031ull

static ph_t H;
static const nt_profiler_v7 *V7;

static void *setup(int mask) {
  return ph_setup_v7(&H, &V7, HASH, "sym-comm", 8, mask);
}

static void *start(void *ctx, nt_descr_v7 *d) {
  void *h = NULL;
  V7->startEvent(ctx, &h, d);
  return h;
}

/* NCCL's variant names live in its own constant table: one pointer each. */
static const char AGXLL[] = "AllReduce_AGxLL_R";
static const char RSXLD[] = "AllReduce_RSxLD_AGxST";

/* A Coll as 2.31's ncclProfilerStartTaskEvents describes it: symmetric
 * (variant != NULL) or a RING/SIMPLE one. Started and stopped. */
static void *coll(void *ctx, uint64_t seq, const char *variant, int nchannels) {
  nt_descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_COLL;
  d.coll.func = "AllReduce";
  d.coll.seqNumber = seq;
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = (uint8_t)nchannels;
  d.coll.nWarps = 16;
  if (variant) {
    d.coll.isSymColl = true;
    d.coll.kernelVariant = variant;
    const char *suffix = strchr(variant, '_');
    d.coll.algo = suffix ? suffix + 1 : variant;
    d.coll.proto = "";
  } else {
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
  }
  void *h = start(ctx, &d);
  V7->stopEvent(h);
  return h;
}

static void kernel_ch(void *ctx, void *task, int channel, uint64_t t0, uint64_t t1) {
  nt_descr_v7 k;
  memset(&k, 0, sizeof k);
  k.type = NT_EV_KERNEL_CH;
  k.parentObj = task;
  k.kernelCh.channelId = (uint8_t)channel;
  k.kernelCh.pTimer = t0;
  void *kh = start(ctx, &k);
  CHECK(kh != NULL);
  nt_state_args_v7 a = {.kernelCh = {.pTimer = t1}};
  V7->recordEventState(kh, NT_ST_KERNEL_CH_STOP, &a);
  V7->stopEvent(kh);
}

static uint8_t variant_id(const char *name) {
  for (uint32_t i = 0; i < H.snap->nvariants; i++)
    if (strcmp(H.snap->variants[i].name, name) == 0) return H.snap->variants[i].id;
  return 0;
}

static const nt_op_row *op_row(uint8_t variant) {
  for (uint32_t i = 0; i < H.snap->nops; i++)
    if (H.snap->ops[i].func == NT_FUNC_ALLREDUCE && H.snap->ops[i].variant == variant)
      return &H.snap->ops[i];
  return NULL;
}

static uint32_t log_rows(uint8_t variant, int state, uint8_t flags) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < H.snap->noplog; i++) {
    const nt_oplog_row *r = &H.snap->oplog[i];
    if (r->variant == variant && r->state == state && r->flags == flags) n++;
  }
  return n;
}

/* Two symmetric plans (one of three tasks, one of one) and a ring
 * collective, with kernelch and proxy ops on: each variant its own row,
 * algorithm "other" and protocol "none"; the first task of a plan timed by
 * its longest kernel channel, the others retired at once, not timed. */
static void case_counted_per_variant(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_KERNEL_CH);
  CHECK(ctx != NULL);
  void *head = coll(ctx, 0, AGXLL, 2);
  coll(ctx, 1, AGXLL, 0);
  coll(ctx, 2, AGXLL, 0);
  kernel_ch(ctx, head, 0, 1000, 1700);
  kernel_ch(ctx, head, 1, 1000, 1900);
  void *big = coll(ctx, 3, RSXLD, 1);
  kernel_ch(ctx, big, 0, 5000, 9000);
  void *ring = coll(ctx, 4, NULL, 1);
  kernel_ch(ctx, ring, 0, 10000, 10500);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nvariants, 2);
  uint8_t a = variant_id(AGXLL), b = variant_id(RSXLD);
  CHECK(a && b && a != b);
  const nt_op_row *ra = op_row(a), *rb = op_row(b), *rr = op_row(0);
  CHECK(ra && rb && rr);
  if (!ra || !rb || !rr) return;
  CHECK_EQ_U64(ra->count, 3);
  CHECK_EQ_U64(ra->done, 1);
  CHECK_EQ_U64(ra->gpu_done, 1);
  CHECK_EQ_U64(ra->time_ns, 900);
  CHECK_EQ_U64(ra->algo, NT_ALGO_OTHER);
  CHECK_EQ_U64(ra->proto, NT_PR_NONE);
  CHECK_EQ_U64(rb->count, 1);
  CHECK_EQ_U64(rb->time_ns, 4000);
  CHECK_EQ_U64(rr->algo, NT_ALGO_RING);
  CHECK_EQ_U64(rr->proto, NT_PR_SIMPLE);
  CHECK_EQ_U64(rr->count, 1);
  CHECK_EQ_U64(log_rows(a, NT_OPS_DONE, NT_OPF_SYMMETRIC), 1);
  CHECK_EQ_U64(log_rows(a, NT_OPS_ENQUEUED, NT_OPF_SYMMETRIC | NT_OPF_UNREPORTED), 2);
  CHECK_EQ_U64(log_rows(b, NT_OPS_DONE, NT_OPF_SYMMETRIC), 1);
  CHECK_EQ_U64(log_rows(0, NT_OPS_DONE, 0), 1);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
  CHECK_EQ_U64(H.snap->process.late_children, 0);
}

/* No proxy op ever comes for a symmetric plan, and no kernel channel for
 * its other tasks: they are not held "in flight" for the sweeps an
 * operation waits for proxy children (about 5 s here), so a hang view
 * never shows them. Without flushing, on the publisher's own ticks. */
static void case_not_held_waiting(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_KERNEL_CH);
  CHECK(ctx != NULL);
  /* A communicator that had proxy children waits longest for more. */
  void *ring = coll(ctx, 0, NULL, 1);
  nt_descr_v5 op = ph_op(0, 1, 1, ring);
  void *oh = NULL;
  H.v5->startEvent(ctx, &oh, &op);
  CHECK(oh != NULL);
  H.v5->stopEvent(oh);
  void *head = coll(ctx, 1, AGXLL, 1);
  coll(ctx, 2, AGXLL, 0);
  kernel_ch(ctx, head, 0, 100, 200);
  bool retired = false;
  for (int i = 0; i < 20 && !retired; i++) {
    CHECK(ph_next_snapshot(&H, 1000) == 0);
    uint8_t a = variant_id(AGXLL);
    retired = a && log_rows(a, NT_OPS_DONE, NT_OPF_SYMMETRIC) == 1 &&
              log_rows(a, NT_OPS_ENQUEUED, NT_OPF_SYMMETRIC | NT_OPF_UNREPORTED) == 1;
  }
  CHECK(retired); /* within 2 s of ticks, not 5 */
}

/* Without kernelch NCCL gives every task of a symmetric plan nChannels 0
 * and no child at all: each is counted at once, unreported. */
static void case_without_kernelch(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_PROXY_OP);
  CHECK(ctx != NULL);
  for (int i = 0; i < 4; i++) coll(ctx, (uint64_t)i, RSXLD, 0);
  CHECK(ph_latest(&H) == 0);
  uint8_t b = variant_id(RSXLD);
  CHECK(b != 0);
  const nt_op_row *r = op_row(b);
  CHECK(r && r->count == 4 && r->done == 0);
  CHECK_EQ_U64(log_rows(b, NT_OPS_ENQUEUED, NT_OPF_SYMMETRIC | NT_OPF_UNREPORTED), 4);
}

/* isSymColl is read as a byte; a variant NCCL leaves NULL or empty is no
 * variant (the operation is still symmetric), and an overlong name is cut
 * at the wire's 47 bytes. */
static void case_odd_variants(void) {
  void *ctx = setup(NT_EV_COLL);
  CHECK(ctx != NULL);
  static const char longname[] = "AllReduce_AVariantNameLongerThanTheProtocolAllowsForSure";
  coll(ctx, 0, "", 0);
  coll(ctx, 1, longname, 0);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nvariants, 1);
  CHECK_EQ_U64(strlen(H.snap->variants[0].name), NT_MAX_VARIANT);
  CHECK(strncmp(H.snap->variants[0].name, longname, NT_MAX_VARIANT) == 0);
  CHECK_EQ_U64(log_rows(0, NT_OPS_ENQUEUED, NT_OPF_SYMMETRIC | NT_OPF_UNREPORTED), 1);
}

/* ---- end to end ---- */

/* The frame once the job is over: communicator 0's collectives all in
 * rows of their variant ("sym:<suffix>", protocol none), every one
 * retired; the lone ones (AllReduce, AllGather) all timed; the grouped
 * ReduceScatters timed through their plan's first task only, the others
 * "completion unreported"; communicator 1's ring rows untouched; and no
 * alert about the operations NCCL reports no end of. */
static const char *sym_frame_mismatch(const nt_sim_config *c, const cJSON *f, char *why,
                                      size_t cap) {
  char hex[24];
  double retired = 0, enqueued = 0, rs_done = 0, rs_count = 0;
  const cJSON *x;
  hex_of(nt_sim_comm_hash(0), hex);
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    const char *variant = str(x, "variant"), *algo = str(x, "algo");
    if (strcmp(str(x, "comm"), hex)) {
      FAIL_IF(variant[0] || !strncmp(algo, "sym", 3), "comm 1 row %s %s", algo, variant);
      continue;
    }
    if (!strcmp(str(x, "kind"), "p2p")) continue;
    const char *us = strchr(variant, '_');
    char want[64];
    snprintf(want, sizeof want, "sym:%s", us ? us + 1 : "?");
    FAIL_IF(strcmp(algo, want) || strcmp(str(x, "proto"), "none"), "%s row: algo %s proto %s",
            variant, algo, str(x, "proto"));
    FAIL_IF(strncmp(variant, str(x, "func"), strlen(str(x, "func"))), "%s row named %s",
            str(x, "func"), variant);
    retired += num(x, "count");
    if (!strcmp(str(x, "func"), "ReduceScatter")) {
      rs_done += num(x, "done"), rs_count += num(x, "count");
    } else {
      FAIL_IF(num(x, "done") != num(x, "count") || num(x, "gpu_done") != num(x, "done"),
              "%s: %g done (%g by the GPU) of %g", variant, num(x, "done"), num(x, "gpu_done"),
              num(x, "count"));
    }
  }
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(0), r);
    FAIL_IF(!rank, "rank %d missing", r);
    enqueued += num(rank, "colls");
  }
  FAIL_IF(!enqueued || retired != enqueued, "comm 0: %g collectives retired of %g", retired,
          enqueued);
  FAIL_IF(!rs_done || rs_done >= rs_count, "ReduceScatter: %g done of %g", rs_done, rs_count);
  int sym = 0;
  cJSON_ArrayForEach(x, get(f, "recent")) {
    if (strcmp(str(x, "comm"), hex) || strcmp(str(x, "kind"), "coll")) continue;
    bool done = !strcmp(str(x, "state"), "done");
    FAIL_IF(!cJSON_IsTrue(get(x, "symmetric")) || !str(x, "variant")[0], "a recent %s %s",
            str(x, "func"), str(x, "algo"));
    FAIL_IF(done != !cJSON_IsTrue(get(x, "completion_unreported")), "a %s %s, unreported %d",
            str(x, "state"), str(x, "func"), cJSON_IsTrue(get(x, "completion_unreported")));
    FAIL_IF(done && strcmp(str(x, "timing"), "gpu"), "a done %s timed by %s", str(x, "func"),
            str(x, "timing"));
    sym++;
  }
  FAIL_IF(!sym, "no recent symmetric operation");
  cJSON_ArrayForEach(x, get(f, "alerts")) {
    const char *kind = str(x, "kind");
    FAIL_IF(strcmp(kind, "straggler"), "alert %s: %s", kind, str(x, "text"));
  }
  return NULL;
}

static void v231_symmetric_end_to_end(void) {
  nt_sim_config c;
  char dir[] = "/tmp/nccltop-sym-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  base_config(&c, dir);
  c.ranks = 2;
  c.comms = 2;
  c.channels = 2;
  c.iterations = 22; /* two training steps of each communicator */
  c.nccl_version = 231;
  c.symmetric = true;
  c.linger_s = 60;
  c.env[c.nenv++] = "NCCLTOP_EVENTS=default,kernelch";
  CHECK(run_until(&c, dir, sym_frame_mismatch, 90, "2.31 symmetric end to end"));
}

PH_CHILD(counted_per_variant)
PH_CHILD(not_held_waiting)
PH_CHILD(without_kernelch)
PH_CHILD(odd_variants)

int main(void) {
  scenario_init();
  TEST_RUN(counted_per_variant);
  TEST_RUN(not_held_waiting);
  TEST_RUN(without_kernelch);
  TEST_RUN(odd_variants);
  TEST_RUN(v231_symmetric_end_to_end);
  return TEST_DONE();
}

/* NCCL 2.31's profiler ABI v7 through the real plugin: its table is
 * exported and its descriptors read at v7's offsets; an operation's
 * userTag names its phase ("tag:<n>", source user_tag) in place of the
 * nccltop_tag phase; KernelPhase events (initial_sync, compute,
 * final_sync) give each kernel row its GPU time per phase and each
 * operation its sync and compute time, exactly. End to end: the
 * simulator's 2.31 (v7, --user-tag, kernelch) -> the real plugin ->
 * `nccltop -b --json`. */
#include "testlib.h"
#include "plugin_harness.h"
#include "scenario_harness.h"

#define HASH 0xfeedfacecafe0007ull

static ph_t H;
static const nt_profiler_v7 *V7;

/* Fresh plugin, one communicator initialised through ncclProfiler_v7 with
 * `mask`, a subscribed SUB socket. */
static void *setup(int mask) {
  return ph_setup_v7(&H, &V7, HASH, "v7-comm", 4, mask);
}

static nt_descr_v7 simple(uint64_t type, void *parent) {
  nt_descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  return d;
}

static void *start(void *ctx, nt_descr_v7 *d) {
  void *h = NULL;
  V7->startEvent(ctx, &h, d);
  return h;
}

/* A Coll as 2.31 describes it; started, and stopped unless `keep`. */
static void *coll(void *ctx, const char *func, uint64_t seq, size_t count, uint64_t tag,
                  int nchannels, bool keep) {
  nt_descr_v7 d = simple(NT_EV_COLL, NULL);
  d.rank = 0;
  d.coll.func = func;
  d.coll.seqNumber = seq;
  d.coll.count = count;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "LL128";
  d.coll.nChannels = (uint8_t)nchannels;
  d.coll.nWarps = 8;
  d.coll.kernelVariant = NULL;
  d.coll.isSymColl = false;
  d.coll.userTag = tag;
  void *h = start(ctx, &d);
  if (!keep) V7->stopEvent(h);
  return h;
}

static void p2p(void *ctx, const char *func, size_t count, int peer, uint64_t tag) {
  nt_descr_v7 d = simple(NT_EV_P2P, NULL);
  d.p2p.func = func;
  d.p2p.count = count;
  d.p2p.datatype = "ncclInt8";
  d.p2p.peer = peer;
  d.p2p.nChannels = 1;
  d.p2p.userTag = tag;
  V7->stopEvent(start(ctx, &d));
}

static const nt_op_row *op_row(int func, uint8_t phase) {
  for (uint32_t i = 0; i < H.snap->nops; i++)
    if (H.snap->ops[i].func == func && H.snap->ops[i].phase == phase) return &H.snap->ops[i];
  return NULL;
}

static const nt_phase_row *phase_named(const char *name) {
  for (uint32_t i = 0; i < H.snap->nphases; i++)
    if (strcmp(H.snap->phases[i].name, name) == 0) return &H.snap->phases[i];
  return NULL;
}

/* ---- cases (each runs in its own process) ---- */

/* The v7 table reads a Coll's fields at v7's offsets, and a P2p's; the
 * communicator says ABI 7. */
static void case_v7_descriptors_are_read(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_P2P);
  CHECK(ctx != NULL);
  CHECK_STR(V7->name, "nccltop");
  for (int i = 0; i < 3; i++) coll(ctx, "AllReduce", (uint64_t)i, 1024, 0, 2, false);
  p2p(ctx, "Send", 4096, 3, 0);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->ncomms == 1);
  CHECK_EQ_U64(H.snap->process.abi_version, 7);
  CHECK_EQ_U64(H.snap->comms[0].nranks, 4);
  const nt_op_row *r = op_row(NT_FUNC_ALLREDUCE, 0);
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->count, 3);
  CHECK_EQ_U64(r->bytes, 3 * 4096);
  CHECK_EQ_U64(r->algo, NT_ALGO_RING);
  CHECK_EQ_U64(r->proto, NT_PR_LL128);
  r = op_row(NT_FUNC_SEND, 0);
  CHECK(r != NULL && r->count == 1 && r->bytes == 4096);
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
}

/* An operation with a userTag is in phase "tag:<n>" (source user_tag),
 * one without in the nccltop_tag phase; one phase per tag value, for
 * collectives and p2p alike. */
static void case_user_tag_names_the_phase(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_P2P);
  CHECK(ctx != NULL);
  void (*tag)(const char *);
  *(void **)&tag = dlsym(H.lib, "nccltop_tag");
  CHECK(tag != NULL);
  tag("forward");
  coll(ctx, "AllReduce", 0, 256, 0, 1, false);
  coll(ctx, "AllReduce", 1, 256, 42, 1, false);
  coll(ctx, "AllReduce", 2, 256, 42, 1, false);
  coll(ctx, "AllReduce", 3, 256, 18446744073709551615ull, 1, false);
  p2p(ctx, "Recv", 100, 1, 42);
  CHECK(ph_latest(&H) == 0);
  const nt_phase_row *fw = phase_named("forward"), *t42 = phase_named("tag:42"),
                     *tmax = phase_named("tag:18446744073709551615");
  CHECK(fw && t42 && tmax);
  if (!fw || !t42 || !tmax) return;
  CHECK_EQ_U64(fw->source, NT_PHASE_NCCLTOP_TAG);
  CHECK_EQ_U64(t42->source, NT_PHASE_USER_TAG);
  CHECK_EQ_U64(tmax->source, NT_PHASE_USER_TAG);
  CHECK_EQ_U64(H.snap->nphases, 3);
  const nt_op_row *r = op_row(NT_FUNC_ALLREDUCE, fw->id);
  CHECK(r && r->count == 1);
  r = op_row(NT_FUNC_ALLREDUCE, t42->id);
  CHECK(r && r->count == 2);
  r = op_row(NT_FUNC_ALLREDUCE, tmax->id);
  CHECK(r && r->count == 1);
  r = op_row(NT_FUNC_RECV, t42->id);
  CHECK(r && r->count == 1);
  /* The process's current phase stays the application's. */
  CHECK_EQ_U64(H.snap->process.phase, fw->id);
}

/* KernelCh with its three KernelPhase children per channel, as 2.31's
 * profiler thread sends them: start (pTimer = the phase's start),
 * KernelPhaseStop (kernelCh.pTimer = its end), stop; then KernelChStop
 * and the KernelCh stop. */
static void kernel_channel(void *ctx, void *task, int channel, uint64_t t0, const uint64_t d[3]) {
  nt_descr_v7 k = simple(NT_EV_KERNEL_CH, task);
  k.kernelCh.channelId = (uint8_t)channel;
  k.kernelCh.pTimer = t0;
  void *kh = start(ctx, &k);
  CHECK(kh != NULL);
  static const char *const names[] = {"initial_sync", "compute", "final_sync"};
  uint64_t at = t0;
  for (int i = 0; i < 3; i++) {
    nt_descr_v7 p = simple(NT_EV_KERNEL_PHASE, kh);
    p.kernelPhase.channelId = (uint8_t)channel;
    p.kernelPhase.phaseId = (uint8_t)i;
    p.kernelPhase.phaseName = names[i];
    p.kernelPhase.pTimer = at;
    void *ph = start(ctx, &p);
    CHECK(ph != NULL);
    nt_state_args_v7 a = {.kernelCh = {.pTimer = at + d[i]}};
    V7->recordEventState(ph, NT_ST_KERNEL_PHASE_STOP, &a);
    V7->stopEvent(ph);
    at += d[i];
  }
  nt_state_args_v7 a = {.kernelCh = {.pTimer = at}};
  V7->recordEventState(kh, NT_ST_KERNEL_CH_STOP, &a);
  V7->stopEvent(kh);
}

static void case_kernel_phases_are_totalled(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_KERNEL_CH | NT_EV_KERNEL_PHASE);
  CHECK(ctx != NULL);
  static const uint64_t d0[3] = {100, 500, 50}, d1[3] = {300, 400, 20};
  for (int op = 0; op < 2; op++) {
    void *task = coll(ctx, "AllGather", (uint64_t)op, 1 << 20, 0, 2, false);
    kernel_channel(ctx, task, 0, 1000000 + (uint64_t)op * 10000, d0);
    kernel_channel(ctx, task, 1, 1000000 + (uint64_t)op * 10000, d1);
  }
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nkernels, 2);
  for (uint32_t i = 0; i < H.snap->nkernels; i++) {
    const nt_kernel_row *k = &H.snap->kernels[i];
    const uint64_t *d = k->channel == 0 ? d0 : d1;
    CHECK_EQ_U64(k->count, 2);
    CHECK_EQ_U64(k->busy_ns, 2 * (d[0] + d[1] + d[2]));
    for (int p = 0; p < 3; p++) CHECK_EQ_U64(k->phase_ns[p], 2 * d[p]);
  }
  const nt_op_row *r = op_row(NT_FUNC_ALLGATHER, 0);
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->done, 2);
  CHECK_EQ_U64(r->gpu_done, 2);
  CHECK_EQ_U64(r->time_ns, 2 * 720); /* the longer channel */
  CHECK_EQ_U64(r->sync_ns, 2 * (100 + 50 + 300 + 20));
  CHECK_EQ_U64(r->compute_ns, 2 * (500 + 400));
  CHECK_EQ_U64(H.snap->process.unknown_events, 0);
}

/* A phase whose parent is not a live KernelCh of ours, or whose id is out
 * of range, is counted and ignored; a v6 table never takes KernelPhase
 * (2.31's v6 shim drops them; one that came anyway is unknown). */
static void case_stray_phases_are_ignored(void) {
  void *ctx = setup(NT_EV_COLL | NT_EV_KERNEL_CH | NT_EV_KERNEL_PHASE);
  CHECK(ctx != NULL);
  int junk = 0;
  nt_descr_v7 p = simple(NT_EV_KERNEL_PHASE, &junk);
  p.kernelPhase.pTimer = 5;
  CHECK(start(ctx, &p) == NULL);
  nt_descr_v7 k = simple(NT_EV_KERNEL_CH, NULL);
  k.kernelCh.pTimer = 10;
  void *kh = start(ctx, &k);
  CHECK(kh != NULL);
  p = simple(NT_EV_KERNEL_PHASE, kh);
  p.kernelPhase.phaseId = 3;
  CHECK(start(ctx, &p) == NULL);
  V7->stopEvent(kh);
  p.kernelPhase.phaseId = 1;
  CHECK(start(ctx, &p) == NULL); /* its KernelCh is over */
  const nt_profiler_v6 *v6 = dlsym(H.lib, "ncclProfiler_v6");
  CHECK(v6 != NULL);
  nt_descr_v6 d6 = ph_simple(NT_EV_KERNEL_PHASE);
  void *h = &junk;
  v6->startEvent(ctx, &h, &d6);
  CHECK(h == NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.unknown_events, 4);
}

/* ---- end to end ---- */

#define TAG 4242

/* The frame once the deterministic job is over: communicator 0's
 * operations all in phase "tag:4242" (user_tag), communicator 1's in the
 * application's phases (nccltop_tag); every kernel row's busy time split
 * into its three phases as the simulated kernel spends it (1/8 initial
 * sync, 1/16 final sync, each rounded down per event), and the
 * collectives' sync + compute time equal to the kernel rows' phase time. */
static const char *v7_frame_mismatch(const nt_sim_config *c, const cJSON *f, char *why,
                                     size_t cap) {
  char hex[24];
  double comm_ops[2] = {0, 0}, enq[2] = {0, 0}, sync_ms = 0, compute_ms = 0, kphase_ns = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    for (int k = 0; k < 2; k++)
      if (!strcmp(str(x, "comm"), hex_of(nt_sim_comm_hash(k), hex))) comm_ops[k] += num(x, "count");
    const cJSON *s = get(x, "sync_ms"), *cp = get(x, "compute_ms");
    FAIL_IF(!cJSON_IsNumber(s) || !cJSON_IsNumber(cp), "%s row without kernel phase time",
            str(x, "func"));
    sync_ms += s->valuedouble;
    compute_ms += cp->valuedouble;
  }
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < c->ranks; r++) {
      const cJSON *rank = find_rank(f, nt_sim_comm_hash(k), r);
      FAIL_IF(!rank, "rank %d comm %d missing", r, k);
      enq[k] += num(rank, "colls") + num(rank, "p2ps");
      const cJSON *kr;
      int rows = 0;
      cJSON_ArrayForEach(kr, get(rank, "kernels")) {
        const cJSON *ph = get(kr, "phase_ns");
        double busy = num(kr, "busy_ns"), n = num(kr, "count");
        double is = num(ph, "initial_sync"), cpt = num(ph, "compute"), fs = num(ph, "final_sync");
        FAIL_IF(is + cpt + fs != busy, "rank %d comm %d ch %g: phases %g+%g+%g, busy %g", r, k,
                num(kr, "channel"), is, cpt, fs, busy);
        FAIL_IF(is > busy / 8 || is < busy / 8 - n, "rank %d comm %d: initial_sync %g of %g", r, k,
                is, busy);
        FAIL_IF(fs > busy / 16 || fs < busy / 16 - n, "rank %d comm %d: final_sync %g of %g", r, k,
                fs, busy);
        FAIL_IF(is <= 0 || fs <= 0 || cpt <= is, "rank %d comm %d: phases %g %g %g", r, k, is, cpt,
                fs);
        kphase_ns += is + cpt + fs;
        rows++;
      }
      FAIL_IF(rows != c->channels, "rank %d comm %d: %d kernel rows", r, k, rows);
    }
  for (int k = 0; k < 2; k++)
    FAIL_IF(comm_ops[k] != enq[k] || !enq[k], "comm %d: %g operations retired of %g", k,
            comm_ops[k], enq[k]);
  FAIL_IF(!close_to(sync_ms + compute_ms, kphase_ns / 1e6), "sync %g + compute %g ms, kernels %g",
          sync_ms, compute_ms, kphase_ns / 1e6);
  double tagged = -1, app = 0;
  cJSON_ArrayForEach(x, get(f, "phases")) {
    const char *name = str(x, "phase"), *src = str(x, "phase_source");
    if (!strcmp(name, "tag:4242")) {
      FAIL_IF(strcmp(src, "user_tag"), "tag:4242 source %s", src);
      tagged = num(x, "count");
    } else {
      FAIL_IF(strcmp(src, *name ? "nccltop_tag" : "none"), "phase '%s' source %s", name, src);
      app += num(x, "count");
    }
  }
  FAIL_IF(tagged != comm_ops[0], "phase tag:4242 has %g operations, comm 0 %g", tagged,
          comm_ops[0]);
  FAIL_IF(app != comm_ops[1], "the application's phases have %g operations, comm 1 %g", app,
          comm_ops[1]);
  return NULL;
}

static void case_v231_user_tags_and_kernel_phases_end_to_end(void) {
  nt_sim_config c;
  char dir[] = "/tmp/nccltop-v7-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  base_config(&c, dir);
  c.ranks = 2;
  c.comms = 2;
  c.channels = 2;
  c.steps = 3;
  c.iterations = 4;
  c.nccl_version = 231;
  c.user_tag = TAG;
  c.deterministic = true;
  c.linger_s = 60;
  c.env[c.nenv++] = "NCCLTOP_EVENTS=default,kernelch";
  CHECK(run_until(&c, dir, v7_frame_mismatch, 90, "2.31 v7 end to end"));
}

static void v231_user_tags_and_kernel_phases_end_to_end(void) {
  case_v231_user_tags_and_kernel_phases_end_to_end();
}

PH_CHILD(v7_descriptors_are_read)
PH_CHILD(user_tag_names_the_phase)
PH_CHILD(kernel_phases_are_totalled)
PH_CHILD(stray_phases_are_ignored)

/* nccltop_set_mask on 2.31: kernelch brings its phases along, as at init;
 * without kernelch the phases stay off. */
static void case_live_mask_brings_kernel_phases(void) {
  void *ctx = setup(NT_EV_COLL);
  CHECK(ctx && (H.mask & NT_EV_KERNEL_PHASE) == 0);
  H.set_mask(NT_EV_COLL | NT_EV_KERNEL_CH);
  int with = H.mask;
  H.set_mask(NT_EV_COLL);
  int without = H.mask;
  CHECK((with & NT_EV_KERNEL_CH) && (with & NT_EV_KERNEL_PHASE));
  CHECK(!(without & NT_EV_KERNEL_PHASE));
}
PH_CHILD(live_mask_brings_kernel_phases)

int main(void) {
  scenario_init();
  TEST_RUN(v7_descriptors_are_read);
  TEST_RUN(user_tag_names_the_phase);
  TEST_RUN(kernel_phases_are_totalled);
  TEST_RUN(stray_phases_are_ignored);
  TEST_RUN(live_mask_brings_kernel_phases);
  TEST_RUN(v231_user_tags_and_kernel_phases_end_to_end);
  return TEST_DONE();
}

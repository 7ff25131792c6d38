/* M2 (docs/NCCL-BEHAVIOUR.md): from 2.28 NCCL copies the activation mask
 * when a call begins and the call's tasks keep that copy, so a mask that
 * changes between the call and its Coll (nccltop_set_mask, 2.31's RAS
 * override, a chained plugin narrowing its own) does not change which
 * children the Coll gets. The plugin takes the copy from the Coll's parent,
 * the call's CollApi: a Coll whose call had kernelch waits for its kernel
 * channel even when kernelch was switched off since, and one whose call
 * did not is not held waiting for kernel channels that will never come.
 * Through the real plugin's ABI (v5), on the publisher's own ticks. */
#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0x3a5c0b1e5eed0002ull

static ph_t H;

static void *call(void *ctx) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL_API);
  d.collApi.func = "AllReduce";
  d.collApi.count = 256;
  d.collApi.datatype = "ncclFloat32";
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  if (h) H.v5->stopEvent(h); /* CollApi stops when the task is appended */
  return h;
}

static void *coll(void *ctx, void *api) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.parentObj = api;
  d.coll.func = "AllReduce";
  d.coll.count = 256;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  d.coll.nChannels = 1;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  if (h) H.v5->stopEvent(h);
  return h;
}

static const nt_oplog_row *logged(void) {
  for (uint32_t i = 0; i < H.snap->noplog; i++)
    if (H.snap->oplog[i].func == NT_FUNC_ALLREDUCE && H.snap->oplog[i].state != NT_OPS_IN_FLIGHT)
      return &H.snap->oplog[i];
  return NULL;
}

/* kernelch on at the call, off by the Coll: its kernel channel still comes
 * (NCCL kept the copy) and times it, a second later, not as a late child. */
static void case_a_call_with_kernelch_waits_for_its_kernel(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  H.set_mask(NT_EV_COLL | NT_EV_COLL_API | NT_EV_KERNEL_CH);
  void *api = call(ctx);
  CHECK(api != NULL);
  H.set_mask(NT_EV_COLL | NT_EV_COLL_API);
  void *task = coll(ctx, api);
  CHECK(task != NULL);
  for (int i = 0; i < 10; i++) CHECK(ph_next_snapshot(&H, 1000) == 0); /* a second of ticks */
  CHECK(logged() == NULL);                                             /* still waiting */
  ph_kernel_ch(&H, ctx, task, 0, 1000, 4000);
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *r = logged();
  CHECK(r != NULL);
  if (!r) return;
  CHECK_EQ_U64(r->state, NT_OPS_DONE);
  CHECK_EQ_U64(r->timing, NT_TIMING_GPU);
  CHECK_EQ_U64(r->duration_ns, 3000);
  CHECK_EQ_U64(H.snap->process.late_children, 0);
}

/* kernelch off at the call, on by the Coll: no kernel channel will come,
 * and the operation is retired on the next ticks, not held for the ~25 s
 * an operation waits for its kernel channels, nor called unreported. */
static void case_a_call_without_kernelch_is_not_held(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  H.set_mask(NT_EV_COLL | NT_EV_COLL_API);
  void *api = call(ctx);
  H.set_mask(NT_EV_COLL | NT_EV_COLL_API | NT_EV_KERNEL_CH);
  CHECK(coll(ctx, api) != NULL);
  const nt_oplog_row *r = NULL;
  for (int i = 0; i < 20 && !r; i++) {
    CHECK(ph_next_snapshot(&H, 1000) == 0);
    r = logged();
  }
  CHECK(r != NULL); /* within 2 s of ticks */
  if (!r) return;
  CHECK_EQ_U64(r->state, NT_OPS_ENQUEUED);
  CHECK_EQ_U64(r->flags & NT_OPF_UNREPORTED, 0);
}

/* Without a CollApi parent (NCCL 2.26/2.27, or a parent not ours) the
 * mask at the Coll is the best copy there is. */
static void case_no_call_takes_the_mask_now(void) {
  void *ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  H.set_mask(NT_EV_COLL | NT_EV_KERNEL_CH);
  void *task = coll(ctx, NULL);
  for (int i = 0; i < 5; i++) CHECK(ph_next_snapshot(&H, 1000) == 0);
  CHECK(logged() == NULL);
  ph_kernel_ch(&H, ctx, task, 0, 10, 20);
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *r = logged();
  CHECK(r && r->timing == NT_TIMING_GPU && r->duration_ns == 10);
}

PH_CHILD(a_call_with_kernelch_waits_for_its_kernel)
PH_CHILD(a_call_without_kernelch_is_not_held)
PH_CHILD(no_call_takes_the_mask_now)

int main(void) {
  TEST_RUN(a_call_with_kernelch_waits_for_its_kernel);
  TEST_RUN(a_call_without_kernelch_is_not_held);
  TEST_RUN(no_call_takes_the_mask_now);
  return TEST_DONE();
}

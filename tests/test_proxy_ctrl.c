/* The proxy thread's control bursts (plugin/proxy_ctrl.c) in the real
 * plugin through its ABI, on two proxy threads: a burst belongs to the
 * thread that started it. A stop or a state record on another thread's
 * burst handle (a confused caller: NCCL starts, records and stops a burst
 * on one thread) is counted as unknown and leaves both threads' states
 * alone. Times come from a virtual clock. */
#include <pthread.h>

#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0xfeedfacecafe0005ull

static ph_t H;
static void *ctx;

/* The other proxy thread: opens a Sleep burst and hands its handle over. */
static void *other_burst(void *arg) {
  void **out = arg;
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  H.v5->recordEventState(h, NT_ST_CTRL_SLEEP, NULL);
  *out = h;
  return NULL;
}

static const nt_proxy_row *proxy_in(const nt_snapshot *s, int state) {
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].state == state) return &s->proxy[i];
  return NULL;
}

static void case_a_burst_is_ended_only_by_its_own_thread(void) {
  ctx = ph_setup(&H, HASH, 0, 2);
  CHECK(ctx != NULL);
  ph_now = 1000;
  /* This thread: Active, then an Append burst over it. */
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  void *mine = NULL;
  H.v5->startEvent(ctx, &mine, &d);
  H.v5->recordEventState(mine, NT_ST_CTRL_ACTIVE, NULL);
  H.v5->stopEvent(mine);
  H.v5->startEvent(ctx, &mine, &d);
  H.v5->recordEventState(mine, NT_ST_CTRL_APPEND, NULL);
  /* The other thread's Sleep burst, its handle then misused here. */
  void *theirs = NULL;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, other_burst, &theirs) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(theirs != NULL && theirs != mine);
  ph_now = 3000;
  H.v5->stopEvent(theirs);                                 /* not ours to end */
  H.v5->recordEventState(theirs, NT_ST_CTRL_WAKEUP, NULL); /* nor to record on */
  ph_now = 4000;
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nproxy, 2);
  const nt_proxy_row *appending = proxy_in(H.snap, NT_PROXY_APPEND);
  const nt_proxy_row *sleeping = proxy_in(H.snap, NT_PROXY_SLEEP);
  CHECK(appending != NULL && sleeping != NULL); /* both bursts still open */
  if (appending) CHECK_EQ_U64(appending->state_age_ns, 3000);
  if (sleeping) {
    CHECK_EQ_U64(sleeping->state_age_ns, 3000);
    CHECK_EQ_U64(sleeping->wakeups, 0);
  }
  CHECK_EQ_U64(H.snap->process.unknown_events, 2);
  /* Its own stop ends this thread's burst: back to Active. */
  H.v5->stopEvent(mine);
  CHECK(ph_latest(&H) == 0);
  CHECK(proxy_in(H.snap, NT_PROXY_APPEND) == NULL);
  const nt_proxy_row *active = proxy_in(H.snap, NT_PROXY_ACTIVE);
  CHECK(active != NULL);
  if (active) CHECK_EQ_U64(active->state_ns[NT_PROXY_APPEND], 3000);
}
PH_CHILD(a_burst_is_ended_only_by_its_own_thread)

int main(void) {
  TEST_RUN(a_burst_is_ended_only_by_its_own_thread);
  return TEST_DONE();
}

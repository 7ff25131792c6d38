/* Operations in the real plugin: Coll and P2p events tracked from enqueue
 * to the stop of their last proxy-op or kernel-channel child, their
 * statistics, durations, phases, sequence numbers, API counters and network
 * plugin events, read back through the real publisher. Times come from a
 * virtual clock, so every duration is exact. */
#include <pthread.h>

#include "testlib.h"
#include "plugin_harness.h"
#include "../plugin/nccltop_plugin.h"

#define HASH 0xfeedfacecafe0002ull

static ph_t H;
static void (*tag)(const char *);

static void *setup(const char *events) {
  memset(&H, 0, sizeof H);
  ph_now = 1000;
  if (events) setenv("NCCLTOP_EVENTS", events, 1);
  if (ph_setup_dir(&H) != 0 || ph_load(&H) != 0) return NULL;
  *(void **)&tag = dlsym(H.lib, "nccltop_tag");
  void *ctx = ph_init(&H, HASH, 1, 4);
  if (!tag || !ctx || ph_subscribe(&H) != 0 || ph_next_snapshot(&H, 5000) != 0) return NULL;
  return ctx;
}

static void *coll(void *ctx, const char *func, uint64_t seq, size_t count, const char *algo,
                  const char *proto) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.coll.seqNumber = seq;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.root = 0;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  d.coll.nWarps = 16;
  d.coll.algo = algo;
  d.coll.proto = proto;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

static void *child_op(void *ctx, void *parent, int channel) {
  nt_descr_v5 d = ph_op(channel, 2, 1, parent);
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

static const nt_op_row *op_row(const nt_snapshot *s, int func, uint8_t phase) {
  for (uint32_t i = 0; i < s->nops; i++)
    if (s->ops[i].func == func && s->ops[i].phase == phase) return &s->ops[i];
  return NULL;
}

static const nt_oplog_row *log_row(const nt_snapshot *s, int func, uint64_t seq) {
  for (uint32_t i = 0; i < s->noplog; i++)
    if (s->oplog[i].func == func && s->oplog[i].seq == seq) return &s->oplog[i];
  return NULL;
}

static const nt_seq_row *seq_row(const nt_snapshot *s, int func) {
  for (uint32_t i = 0; i < s->nseq; i++)
    if (s->seq_rows[i].func == func) return &s->seq_rows[i];
  return NULL;
}

/* ---- cases (each runs in its own process) ---- */

static void case_a_collective_completes_at_its_last_child(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  void *c = coll(ctx, "AllReduce", 7, 1024, "RING", "SIMPLE");
  CHECK(c != NULL);
  ph_now = 1100;
  H.v5->stopEvent(c); /* enqueued, not done */
  ph_now = 1200;
  void *a = child_op(ctx, c, 0), *b = child_op(ctx, c, 1);
  CHECK(a && b);
  ph_now = 5000;
  H.v5->stopEvent(a);
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *l = log_row(H.snap, NT_FUNC_ALLREDUCE, 7);
  CHECK(l && l->state == NT_OPS_IN_FLIGHT); /* one child still open */
  CHECK_EQ_U64(l->children, 2);
  CHECK_EQ_U64(l->children_open, 1);
  CHECK_EQ_U64(l->age_ns, 5000 - 1000);
  ph_now = 9000;
  H.v5->stopEvent(b);
  CHECK(ph_latest(&H) == 0);
  const nt_op_row *r = op_row(H.snap, NT_FUNC_ALLREDUCE, 0);
  CHECK(r != NULL);
  CHECK(r->kind == NT_OP_COLL && r->algo == NT_ALGO_RING && r->proto == NT_PR_SIMPLE);
  CHECK_EQ_U64(r->bucket, 12); /* 4096 bytes */
  CHECK_EQ_U64(r->count, 1);
  CHECK_EQ_U64(r->done, 1);
  CHECK_EQ_U64(r->bytes, 4096);
  CHECK_EQ_U64(r->time_ns, 9000 - 1200); /* from its first child's start to its last stop */
  l = log_row(H.snap, NT_FUNC_ALLREDUCE, 7);
  CHECK(l && l->state == NT_OPS_DONE && l->timing == NT_TIMING_HOST);
  CHECK_EQ_U64(l->duration_ns, 7800);
  CHECK(l->dtype == NT_DT_FLOAT32 && l->nchannels == 2 && l->nwarps == 16 && l->count == 1024);
  const nt_seq_row *q = seq_row(H.snap, NT_FUNC_ALLREDUCE);
  CHECK(q && q->launched == 8 && q->done == 1);
  CHECK_EQ_U64(H.snap->comms[0].colls_enqueued, 1);
}

/* An operation's time is its execution, from its first step's start to
 * its last child's stop: not its time in the queue (a CPU that runs ahead
 * enqueues it long before), nor the previous operation's. */
static void case_time_is_execution_not_queue(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  void *c1 = coll(ctx, "AllGather", 0, 256, "RING", "LL128");
  H.v5->stopEvent(c1);
  ph_now = 1500;
  void *c2 = coll(ctx, "AllGather", 1, 256, "RING", "LL128");
  H.v5->stopEvent(c2);
  ph_now = 2000; /* the proxy takes both at once, as it does */
  void *a = child_op(ctx, c1, 0), *b = child_op(ctx, c2, 0);
  ph_now = 100000; /* the GPU reaches them much later: the first steps */
  nt_descr_v5 d = ph_step(a, 0);
  void *sa = NULL, *sb = NULL;
  H.v5->startEvent(ctx, &sa, &d);
  ph_now = 103000;
  d = ph_step(b, 0);
  H.v5->startEvent(ctx, &sb, &d);
  ph_now = 104000;
  H.v5->stopEvent(sa);
  H.v5->stopEvent(a);
  ph_now = 106000;
  H.v5->stopEvent(sb);
  H.v5->stopEvent(b);
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *l1 = log_row(H.snap, NT_FUNC_ALLGATHER, 0);
  const nt_oplog_row *l2 = log_row(H.snap, NT_FUNC_ALLGATHER, 1);
  CHECK(l1 && l2);
  CHECK_EQ_U64(l1->duration_ns, 4000); /* not 104 us from its enqueue */
  CHECK_EQ_U64(l2->duration_ns, 3000); /* not 2 us from the first one's end */
  const nt_op_row *r = op_row(H.snap, NT_FUNC_ALLGATHER, 0);
  CHECK(r && r->count == 2 && r->done == 2 && r->time_ns == 7000);
}

static void case_kernel_channels_give_gpu_time(void) {
  void *ctx = setup("default,kernelch");
  CHECK(ctx != NULL);
  void *c = coll(ctx, "ReduceScatter", 3, 1 << 20, "RING", "SIMPLE");
  H.v5->stopEvent(c);
  CHECK(ph_latest(&H) == 0);
  /* kernelch was on: with no child yet it is in flight, never "enqueued". */
  const nt_oplog_row *l = log_row(H.snap, NT_FUNC_REDUCESCATTER, 3);
  CHECK(l && l->state == NT_OPS_IN_FLIGHT && l->children == 0);
  for (int ch = 0; ch < 2; ch++) {
    nt_descr_v5 d = ph_simple(NT_EV_KERNEL_CH);
    d.parentObj = c;
    d.kernelCh.channelId = (uint8_t)ch;
    d.kernelCh.pTimer = 100;
    void *h = NULL;
    H.v5->startEvent(ctx, &h, &d);
    CHECK(h != NULL);
    nt_state_args_v5 a = {.kernelCh = {.pTimer = ch ? 900 : 600}};
    H.v5->recordEventState(h, NT_ST_KERNEL_CH_STOP, &a);
    ph_now += 100000; /* reported late; the GPU times are what count */
    H.v5->stopEvent(h);
  }
  CHECK(ph_latest(&H) == 0);
  l = log_row(H.snap, NT_FUNC_REDUCESCATTER, 3);
  CHECK(l && l->state == NT_OPS_DONE && l->timing == NT_TIMING_GPU);
  CHECK_EQ_U64(l->duration_ns, 800); /* the longest channel */
  const nt_op_row *r = op_row(H.snap, NT_FUNC_REDUCESCATTER, 0);
  CHECK(r && r->gpu_done == 1 && r->time_ns == 800);
}

/* No proxy-op or kernel class on: nothing will ever say when it is done. */
static void case_operations_without_children_are_only_enqueued(void) {
  void *ctx = setup("coll,p2p");
  CHECK(ctx != NULL);
  void *c = coll(ctx, "Broadcast", 0, 10, "RING", "LL");
  H.v5->stopEvent(c);
  CHECK(ph_latest(&H) == 0);
  const nt_op_row *r = op_row(H.snap, NT_FUNC_BROADCAST, 0);
  CHECK(r && r->count == 1 && r->done == 0 && r->time_ns == 0);
  const nt_oplog_row *l = log_row(H.snap, NT_FUNC_BROADCAST, 0);
  CHECK(l && l->state == NT_OPS_ENQUEUED && l->timing == NT_TIMING_NONE);
}

/* A thread remembers the last 8 names of each kind it was passed
 * (nt_name_index): six functions in turn, each in its own buffer, are each
 * counted under their own name round after round, and a remembered buffer
 * that now spells another name is read anew; ten in turn (more than it
 * keeps) are each counted too. */
static void case_many_names_in_turn_are_each_counted(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  static const char *const names[] = {"AllReduce", "AllGather", "ReduceScatter", "Reduce",
                                      "AlltoAll",  "Gather",    "Scatter",       "Send",
                                      "Recv",      "SendRecv"};
  static const int funcs[] = {NT_FUNC_ALLREDUCE, NT_FUNC_ALLGATHER, NT_FUNC_REDUCESCATTER,
                              NT_FUNC_REDUCE,    NT_FUNC_ALLTOALL,  NT_FUNC_GATHER,
                              NT_FUNC_SCATTER,   NT_FUNC_SEND,      NT_FUNC_RECV,
                              NT_FUNC_SENDRECV};
  enum { N = sizeof names / sizeof names[0] };
  char buf[N][16];
  for (int i = 0; i < N; i++) snprintf(buf[i], sizeof buf[i], "%s", names[i]);
  uint64_t seq = 0;
  /* Rounds 0-2 take the first six, round 2 after buf[0] became "Gather";
   * rounds 3-4 take all ten. */
  for (int round = 0; round < 5; round++) {
    if (round == 2) snprintf(buf[0], sizeof buf[0], "Gather");
    for (int i = 0; i < (round < 3 ? 6 : N); i++) {
      void *c = coll(ctx, buf[i], seq++, 64, "RING", "LL");
      void *a = child_op(ctx, c, 0);
      CHECK(c && a);
      H.v5->stopEvent(c);
      H.v5->stopEvent(a);
    }
  }
  CHECK(ph_latest(&H) == 0);
  for (int i = 0; i < N; i++) {
    const nt_op_row *r = op_row(H.snap, funcs[i], 0);
    uint64_t want = i >= 6                          ? 2
                    : funcs[i] == NT_FUNC_ALLREDUCE ? 2
                    : funcs[i] == NT_FUNC_GATHER    ? 8
                                                    : 5;
    CHECK(r != NULL);
    if (r) CHECK_EQ_U64(r->count, want);
  }
}

/* An AllReduce (seq 41) enqueued whose one ProxyOp never stops; *ctx its
 * communicator (NULL if the set-up failed). */
static void stuck_allreduce(void **ctx) {
  *ctx = setup(NULL);
  CHECK(*ctx != NULL);
  void *c = coll(*ctx, "AllReduce", 41, 1 << 20, "RING", "SIMPLE");
  H.v5->stopEvent(c);
  CHECK(child_op(*ctx, c, 0) != NULL);
}

/* What never completes stays in flight, its age growing: a hang shows. */
static void case_an_operation_that_never_completes_stays_in_flight(void) {
  void *ctx;
  stuck_allreduce(&ctx);
  CHECK(ctx != NULL);
  for (int i = 0; i < 5; i++) {
    ph_now += 1000000000ull; /* 1 s a round */
    struct timespec ts = {0, 150000000};
    nanosleep(&ts, NULL); /* publisher sweeps go by */
  }
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *l = log_row(H.snap, NT_FUNC_ALLREDUCE, 41);
  CHECK(l && l->state == NT_OPS_IN_FLIGHT && l->children_open == 1);
  CHECK(l->age_ns >= 5000000000ull);
  const nt_op_row *r = op_row(H.snap, NT_FUNC_ALLREDUCE, 0);
  CHECK(r == NULL); /* not retired: not counted as done */
}

/* The publisher reads only the task slots taken since the oldest one not
 * free yet (retire.c task_window): an operation still going after the
 * pool went round twice is still seen, and every later one is retired. */
static void case_a_stuck_operation_outlasts_the_pools_rounds(void) {
  void *ctx;
  stuck_allreduce(&ctx);
  CHECK(ctx != NULL);
  enum { N = 2 * 4096 + 2500 }; /* a window shorter than the pool would miss slot 0 */
  for (int i = 0; i < N; i++) {
    void *g = coll(ctx, "AllGather", (uint64_t)i, 64, "RING", "SIMPLE");
    H.v5->stopEvent(g);
    void *a = child_op(ctx, g, 1);
    ph_now += 1000;
    H.v5->stopEvent(a);
    if (i % 1000 == 999) CHECK(ph_latest(&H) == 0);
  }
  CHECK(ph_latest(&H) == 0);
  const nt_oplog_row *l = log_row(H.snap, NT_FUNC_ALLREDUCE, 41);
  CHECK(l && l->state == NT_OPS_IN_FLIGHT && l->children_open == 1);
  const nt_op_row *r = op_row(H.snap, NT_FUNC_ALLGATHER, 0);
  CHECK(r && r->count == N && r->done == N);
  CHECK_EQ_U64(H.snap->process.dropped_ops, 0);
}

static void case_phases_attribute_operations(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  const char *names[] = {"forward", "backward", NULL};
  for (int i = 0; i < 3; i++) {
    tag(names[i]);
    void *c = coll(ctx, "AllReduce", (uint64_t)i, 64, "TREE", "LL");
    H.v5->stopEvent(c);
    void *a = child_op(ctx, c, 0);
    ph_now += 100;
    H.v5->stopEvent(a);
  }
  tag("a phase name longer than thirty-one bytes, cut");
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nphases, 3);
  CHECK_STR(H.snap->phases[0].name, "forward");
  CHECK_STR(H.snap->phases[1].name, "backward");
  CHECK_STR(H.snap->phases[2].name, "a phase name longer than thirty");
  CHECK_EQ_U64(H.snap->process.phase, 3);
  CHECK(op_row(H.snap, NT_FUNC_ALLREDUCE, 1) && op_row(H.snap, NT_FUNC_ALLREDUCE, 1)->count == 1);
  CHECK(op_row(H.snap, NT_FUNC_ALLREDUCE, 2) && op_row(H.snap, NT_FUNC_ALLREDUCE, 2)->count == 1);
  CHECK(op_row(H.snap, NT_FUNC_ALLREDUCE, 0) && op_row(H.snap, NT_FUNC_ALLREDUCE, 0)->count == 1);
  tag("forward"); /* a known name keeps its id */
  tag("");
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nphases, 3);
  CHECK_EQ_U64(H.snap->process.phase, 0);
  /* More names than ids: the extra ones are no phase, nothing breaks. */
  char name[32];
  for (int i = 0; i < 70; i++) {
    snprintf(name, sizeof name, "p%d", i);
    tag(name);
  }
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nphases, NT_MAX_PHASES);
  CHECK_EQ_U64(H.snap->process.phase, 0);
}

/* One operation of `func` enqueued and completed on the calling thread. */
static void one_op(void *ctx, const char *func, uint64_t seq) {
  void *c = coll(ctx, func, seq, 64, "RING", "SIMPLE");
  H.v5->stopEvent(c);
  void *a = child_op(ctx, c, 0);
  ph_now += 100;
  H.v5->stopEvent(a);
}

static void *ctx_a, *ctx_b;
static pthread_barrier_t tagged, enqueued;

/* Communicator A's loop: tags "forward", waits until B's thread has
 * tagged "backward", then enqueues an AllGather; later, after clearing its
 * tag, a ReduceScatter. */
static void *thread_a(void *arg) {
  (void)arg;
  tag("forward");
  pthread_barrier_wait(&tagged);
  pthread_barrier_wait(&enqueued); /* B tagged "backward" and enqueued */
  one_op(ctx_a, "AllGather", 1);
  tag("");
  one_op(ctx_a, "ReduceScatter", 2);
  return NULL;
}

static void *thread_b(void *arg) {
  (void)arg;
  tag("backward");
  one_op(ctx_b, "AllReduce", 1);
  return NULL;
}

/* A thread that never tagged (PyTorch's autograd thread, a CUDA graph's
 * host callback): its operations take the tag set last by any thread. */
static void *thread_untagged(void *arg) {
  (void)arg;
  one_op(ctx_b, "Reduce", 3);
  return NULL;
}

/* Two communicators driven from two threads, each naming its own phase
 * (the demo's two communicators, or a loop per communicator): one thread's
 * tag must not label the other's operations (before, every thread's
 * operations took the tag set last by any thread). */
static void case_phases_are_per_thread(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  ctx_a = ctx;
  ctx_b = ph_init(&H, HASH + 1, 1, 4);
  CHECK(ctx_b != NULL);
  CHECK(pthread_barrier_init(&tagged, NULL, 2) == 0);
  CHECK(pthread_barrier_init(&enqueued, NULL, 2) == 0);
  pthread_t a, b, u;
  CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
  pthread_barrier_wait(&tagged);
  CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
  CHECK(pthread_join(b, NULL) == 0);
  CHECK(pthread_create(&u, NULL, thread_untagged, NULL) == 0); /* last tag: "backward" */
  CHECK(pthread_join(u, NULL) == 0);
  pthread_barrier_wait(&enqueued);
  CHECK(pthread_join(a, NULL) == 0);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nphases, 2);
  CHECK_STR(H.snap->phases[0].name, "forward");
  CHECK_STR(H.snap->phases[1].name, "backward");
  const nt_op_row *ag = op_row(H.snap, NT_FUNC_ALLGATHER, 1);
  CHECK(ag && ag->count == 1);
  CHECK(op_row(H.snap, NT_FUNC_ALLGATHER, 2) == NULL);
  CHECK(op_row(H.snap, NT_FUNC_ALLREDUCE, 2) && op_row(H.snap, NT_FUNC_ALLREDUCE, 2)->count == 1);
  /* A's cleared tag is its own "no phase", not B's "backward". */
  CHECK(op_row(H.snap, NT_FUNC_REDUCESCATTER, 0) != NULL);
  CHECK(op_row(H.snap, NT_FUNC_REDUCE, 2) != NULL);
  CHECK_EQ_U64(H.snap->process.phase, 0); /* A cleared it last */
  pthread_barrier_destroy(&tagged);
  pthread_barrier_destroy(&enqueued);
}

static void *p2p(void *ctx, void *group, const char *func, int peer) {
  nt_descr_v5 d = ph_simple(NT_EV_P2P);
  d.rank = 1; /* setup's rank */
  d.p2p.func = func;
  d.p2p.datatype = "ncclFloat32";
  d.p2p.count = 256;
  d.p2p.peer = peer;
  d.p2p.nChannels = 1;
  d.p2p.parentGroup = group;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

/* An all_to_all's own slice: a Send and a Recv with itself, which NCCL
 * gives no child at all (every 2.28.9 recording). They complete with their
 * group (one kernel), as long as it took; before, they never completed. */
static void case_self_send_and_recv_complete_with_their_group(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  nt_descr_v5 g = ph_simple(NT_EV_GROUP);
  void *grp = NULL;
  H.v5->startEvent(ctx, &grp, &g);
  void *ss = p2p(ctx, grp, "Send", 1), *sr = p2p(ctx, grp, "Recv", 1);
  void *s0 = p2p(ctx, grp, "Send", 0), *r0 = p2p(ctx, grp, "Recv", 0);
  CHECK(ss && sr && s0 && r0);
  H.v5->stopEvent(ss);
  H.v5->stopEvent(sr);
  H.v5->stopEvent(s0);
  H.v5->stopEvent(r0);
  H.v5->stopEvent(grp);
  ph_now = 2000;
  void *a = child_op(ctx, s0, 0), *b = child_op(ctx, r0, 0);
  ph_now = 3000;
  nt_descr_v5 d = ph_step(a, 0);
  void *st = NULL, *rt = NULL;
  H.v5->startEvent(ctx, &st, &d);
  ph_now = 3500;
  d = ph_step(b, 0);
  H.v5->startEvent(ctx, &rt, &d);
  /* The group goes on: its self copies are not done yet. */
  CHECK(ph_latest(&H) == 0);
  const nt_seq_row *q = seq_row(H.snap, NT_FUNC_SEND);
  CHECK(q && q->launched == 2 && q->done == 0);
  ph_now = 7000;
  H.v5->stopEvent(st);
  H.v5->stopEvent(a);
  ph_now = 8000;
  H.v5->stopEvent(rt);
  H.v5->stopEvent(b);
  CHECK(ph_latest(&H) == 0);
  q = seq_row(H.snap, NT_FUNC_SEND);
  const nt_seq_row *r = seq_row(H.snap, NT_FUNC_RECV);
  CHECK(q && q->done == 2 && r && r->done == 2);
  /* Each self copy is timed as its group: from the first step (3000) to
   * the last stop (8000). */
  int selves = 0;
  for (uint32_t i = 0; i < H.snap->noplog; i++) {
    const nt_oplog_row *l = &H.snap->oplog[i];
    if (l->kind != NT_OP_P2P || l->root_peer != 1) continue;
    CHECK(l->state == NT_OPS_DONE && l->timing == NT_TIMING_HOST);
    CHECK_EQ_U64(l->duration_ns, 5000);
    selves++;
  }
  CHECK_EQ_U64(selves, 2);
}

static void case_p2p_operations_have_their_peer(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_simple(NT_EV_P2P);
  d.p2p.func = "Send";
  d.p2p.datatype = "ncclBfloat16";
  d.p2p.count = 512;
  d.p2p.peer = 3;
  d.p2p.nChannels = 1;
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  CHECK(h != NULL);
  H.v5->stopEvent(h);
  void *a = child_op(ctx, h, 0);
  ph_now += 300;
  H.v5->stopEvent(a);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->noplog >= 1);
  const nt_oplog_row *l = &H.snap->oplog[0];
  CHECK(l->kind == NT_OP_P2P && l->func == NT_FUNC_SEND && l->root_peer == 3);
  CHECK(l->dtype == NT_DT_BFLOAT16 && l->bytes == 1024 && l->algo == NT_ALGO_NONE);
  const nt_seq_row *q = seq_row(H.snap, NT_FUNC_SEND);
  CHECK(q && q->launched == 1 && q->done == 1);
  CHECK_EQ_U64(H.snap->comms[0].p2ps_enqueued, 1);
}

static void case_api_events_are_counted(void) {
  void *ctx = setup("default,groupapi,collapi,p2papi,kernellaunch");
  CHECK(ctx != NULL);
  void *h = NULL;
  nt_descr_v5 d = ph_simple(NT_EV_GROUP_API);
  H.v5->startEvent(ctx, &h, &d);
  CHECK(h != NULL);
  H.v5->recordEventState(h, NT_ST_GROUP_START_API_STOP, NULL);
  H.v5->stopEvent(h);
  d = ph_simple(NT_EV_COLL_API);
  d.collApi.func = "AllReduce";
  d.collApi.graphCaptured = true;
  H.v5->startEvent(ctx, &h, &d);
  CHECK(h != NULL);
  ph_now += 2500;
  H.v5->stopEvent(h);
  H.v5->stopEvent(h); /* NCCL may stop a stale CollApi handle again */
  d = ph_simple(NT_EV_P2P_API);
  H.v5->startEvent(ctx, &h, &d);
  ph_now += 500;
  H.v5->stopEvent(h);
  d = ph_simple(NT_EV_KERNEL_LAUNCH);
  H.v5->startEvent(ctx, &h, &d);
  H.v5->stopEvent(h);
  CHECK(ph_latest(&H) == 0);
  const nt_comm_row *c = &H.snap->comms[0];
  CHECK(c->group_api == 1 && c->coll_api == 1 && c->p2p_api == 1 && c->kernel_launches == 1);
  CHECK_EQ_U64(c->graph_captured, 1);
  CHECK_EQ_U64(c->api_ns, 3000);
}

static void *step_of(void *ctx, void *op, int step) {
  nt_descr_v5 d = ph_step(op, step);
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

static void *net_event(void *ctx, void *parent, int64_t id, const void *data) {
  nt_descr_v5 d = ph_simple(NT_EV_NET_PLUGIN);
  d.parentObj = parent;
  d.netPlugin.id = id;
  d.netPlugin.data = (void *)data;
  void *h = (void *)0x1; /* must be overwritten */
  H.v5->startEvent(ctx, &h, &d);
  return h;
}

static void case_net_plugin_events_are_decoded(void) {
  void *ctx = setup("default,netplugin");
  CHECK(ctx != NULL);
  void *op = child_op(ctx, NULL, 0);
  void *st = step_of(ctx, op, 0);
  CHECK(op && st);
  nt_net_ib_v1 ib = {.type = NT_NET_EV_QP};
  ib.qp.device = 1;
  ib.qp.qpNum = 77;
  ib.qp.length = 4096;
  for (int i = 0; i < 3; i++) {
    void *h = net_event(ctx, st, NT_NET_TYPE_IB | 1, &ib);
    CHECK(h != NULL);
    ph_now += 1000;
    H.v5->stopEvent(h);
    H.v5->stopEvent(h); /* NCCL's callback may stop twice: counted once */
  }
  void *open = net_event(ctx, st, NT_NET_TYPE_IB | 1, &ib);
  CHECK(open != NULL);
  nt_state_args_v5 upd = {.netPlugin = {.data = &ib}};
  H.v5->recordEventState(open, NT_ST_NET_PLUGIN_UPDATE, &upd);
  nt_net_sock_v1 so = {.type = NT_NET_EV_SOCKET};
  so.sock.fd = 12;
  so.sock.length = 100;
  void *s = net_event(ctx, NULL, NT_NET_TYPE_SOCK | 1, &so);
  CHECK(s != NULL);
  H.v5->stopEvent(s);
  /* What we cannot read is counted, never read. */
  CHECK(net_event(ctx, st, NT_NET_TYPE_IB | 2, &ib) == NULL);
  CHECK(net_event(ctx, st, NT_NET_TYPE_IB | 1, NULL) == NULL);
  CHECK(net_event(ctx, st, (7 << 16) | 1, &ib) == NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->nnet, 2);
  const nt_net_row *q = H.snap->net[0].type == NT_NET_IB_QP ? &H.snap->net[0] : &H.snap->net[1];
  const nt_net_row *k = q == &H.snap->net[0] ? &H.snap->net[1] : &H.snap->net[0];
  CHECK(q->type == NT_NET_IB_QP && q->device == 1 && q->id == 77 && q->comm_index == 0);
  CHECK_EQ_U64(q->count, 3);
  CHECK_EQ_U64(q->bytes, 3 * 4096);
  CHECK_EQ_U64(q->busy_ns, 3000);
  CHECK_EQ_U64(q->in_flight, 1);
  CHECK(k->type == NT_NET_SOCKET && k->device == -1 && k->id == 12 && k->count == 1);
  CHECK_EQ_U64(H.snap->process.net_events, 8);
  CHECK(H.snap->process.unknown_events >= 3);
}

/* A child whose operation was already retired is counted, not attached
 * to whatever reuses the slot. */
static void case_late_children_are_counted(void) {
  void *ctx = setup("coll,p2p");
  CHECK(ctx != NULL);
  void *c = coll(ctx, "AllReduce", 0, 8, "TREE", "LL");
  H.v5->stopEvent(c);
  CHECK(ph_latest(&H) == 0); /* retired: no children were expected */
  void *a = child_op(ctx, c, 0);
  CHECK(a != NULL); /* the op itself is still aggregated */
  H.v5->stopEvent(a);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.late_children, 1);
  const nt_op_row *r = op_row(H.snap, NT_FUNC_ALLREDUCE, 0);
  CHECK(r && r->count == 1 && r->done == 0);
}

/* More operations than the pool holds: the rest are counted as dropped,
 * and NCCL still gets a handle, so their children keep coming. */
static void case_pool_exhaustion_drops_operations_not_children(void) {
  void *ctx = setup(NULL);
  CHECK(ctx != NULL);
  void *last = NULL;
  for (int i = 0; i < 5000; i++) {
    last = coll(ctx, "AllReduce", (uint64_t)i, 8, "TREE", "LL");
    CHECK(last != NULL); /* never NULL */
  }
  void *a = child_op(ctx, last, 3);
  CHECK(a != NULL);
  H.v5->stopEvent(a);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->process.dropped_ops >= 5000 - 4096);
  CHECK(H.snap->nchannels == 1 && H.snap->channels[0].ops_done == 1);
  const nt_seq_row *q = seq_row(H.snap, NT_FUNC_ALLREDUCE);
  CHECK(q && q->launched == 5000); /* NCCL's sequence numbers are not lost */
}

int main(void) {
  struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {
      {"a_collective_completes_at_its_last_child", case_a_collective_completes_at_its_last_child},
      {"time_is_execution_not_queue", case_time_is_execution_not_queue},
      {"kernel_channels_give_gpu_time", case_kernel_channels_give_gpu_time},
      {"operations_without_children_are_only_enqueued",
       case_operations_without_children_are_only_enqueued},
      {"many_names_in_turn_are_each_counted", case_many_names_in_turn_are_each_counted},
      {"an_operation_that_never_completes_stays_in_flight",
       case_an_operation_that_never_completes_stays_in_flight},
      {"a_stuck_operation_outlasts_the_pools_rounds",
       case_a_stuck_operation_outlasts_the_pools_rounds},
      {"phases_attribute_operations", case_phases_attribute_operations},
      {"phases_are_per_thread", case_phases_are_per_thread},
      {"p2p_operations_have_their_peer", case_p2p_operations_have_their_peer},
      {"self_send_and_recv_complete_with_their_group",
       case_self_send_and_recv_complete_with_their_group},
      {"api_events_are_counted", case_api_events_are_counted},
      {"net_plugin_events_are_decoded", case_net_plugin_events_are_decoded},
      {"late_children_are_counted", case_late_children_are_counted},
      {"pool_exhaustion_drops_operations_not_children",
       case_pool_exhaustion_drops_operations_not_children},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = ph_in_child(cases[i].fn);
    if (rc == 0) {
      tl_passed++;
      fprintf(stderr, "ok   %s\n", cases[i].name);
    } else {
      tl_failed++;
      fprintf(stderr, "FAIL %s (status %d)\n", cases[i].name, rc);
    }
  }
  return TEST_DONE();
}

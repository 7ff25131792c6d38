/* The real plugin, loaded with dlopen and driven through its exported ABI;
 * what it aggregates is read back through its real ZeroMQ publisher. Times
 * come from a virtual clock, so every total is exact. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "testlib.h"
#include "plugin_harness.h"

#define HASH 0xfeedfacecafe0001ull

static ph_t H;

/* Fresh plugin, one communicator, a subscribed SUB socket, first snapshot in. */
static void *setup(void) {
  return ph_setup(&H, HASH, 2, 8);
}

static const nt_channel_row *find_row(const nt_snapshot *s, int channel, int dir, int peer) {
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *r = &s->channels[i];
    if (r->channel == channel && r->dir == dir && r->peer == peer) return r;
  }
  return NULL;
}

static const nt_proxy_row *only_proxy(const nt_snapshot *s) {
  return s->nproxy == 1 ? &s->proxy[0] : NULL;
}

static void ctrl(void *ctx, const int *states, int n, int appended) {
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  for (int i = 0; i < n; i++) {
    nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = appended}};
    H.v5->recordEventState(h, states[i], &a);
  }
  H.v5->stopEvent(h);
}

static void record_size(void *h, int state, size_t size) {
  nt_state_args_v5 a = {.proxyStep = {.transSize = size}};
  H.v5->recordEventState(h, state, &a);
}

/* ---- cases (each runs in its own process) ---- */

static void case_exports_every_abi_version(void) {
  char path[PATH_MAX];
  ph_plugin_path(path, sizeof path, "libnccl-profiler-nccltop.so");
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL);
  const char *names[] = {"ncclProfiler_v3", "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6",
                         "ncclProfiler_v7"};
  for (int i = 0; i < 5; i++) {
    const nt_profiler_v5 *t = dlsym(lib, names[i]);
    CHECK(t != NULL);
    CHECK_STR(t->name, "nccltop");
    CHECK(t->init && t->startEvent && t->stopEvent && t->recordEventState && t->finalize);
  }
  CHECK(dlsym(lib, "nccltop_tag") != NULL);
  CHECK(dlsym(lib, "nccltop_set_mask") != NULL);
  /* The production plugin exports no test hook; its test-only build does. */
  CHECK(dlsym(lib, "nccltop_sim_set_clock") == NULL);
  ph_plugin_path(path, sizeof path, "tests/libnccl-profiler-nccltop-test.so");
  void *test = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(test != NULL && test != lib);
  CHECK(test && dlsym(test, "nccltop_sim_set_clock") != NULL);
}

static void case_disable_makes_init_fail(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  setenv("NCCLTOP_DISABLE", "1", 1);
  CHECK(ph_load(&H) == 0);
  void *ctx = (void *)1;
  CHECK(H.v5->init(&ctx, HASH, &H.mask, "x", 1, 2, 0, NULL) != 0);
  CHECK(ctx == NULL);
}

static void case_send_step_waits_are_exact(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *op = NULL, *st = NULL;
  nt_descr_v5 d = ph_op(3, 1, 1, NULL);
  ph_now = 100;
  H.v5->startEvent(ctx, &op, &d);
  CHECK(op != NULL);
  H.v5->recordEventState(op, NT_ST_OP_IN_PROGRESS, NULL);
  d = ph_step(op, 0);
  ph_now = 1000;
  H.v5->startEvent(ctx, &st, &d);
  CHECK(st != NULL);
  record_size(st, NT_ST_STEP_SEND_GPU_WAIT, 777); /* stale transSize: not counted */
  ph_now = 1500;
  record_size(st, NT_ST_STEP_SEND_PEER_WAIT, 777);
  ph_now = 1700; /* NCCL repeats SendPeerWait until the receiver gives credit */
  record_size(st, NT_ST_STEP_SEND_PEER_WAIT, 777);
  ph_now = 2500;
  record_size(st, NT_ST_STEP_SEND_WAIT, 4096);
  ph_now = 4000;
  H.v5->stopEvent(st);
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = find_row(H.snap, 3, NT_DIR_SEND, 1);
  CHECK(r != NULL);
  CHECK_EQ_U64(r->wait_ns[0], 500);  /* send_gpu_wait */
  CHECK_EQ_U64(r->wait_ns[1], 1000); /* send_peer_wait, once */
  CHECK_EQ_U64(r->wait_ns[2], 1500); /* send_net_wait */
  CHECK_EQ_U64(r->bytes, 4096);
  CHECK_EQ_U64(r->steps, 1);
  CHECK_EQ_U64(r->ops_started, 1);
  CHECK_EQ_U64(r->ops_done, 1);
  CHECK_EQ_U64(H.snap->comms[r->comm_index].comm_hash, HASH);
  CHECK_EQ_U64(H.snap->comms[r->comm_index].rank, 2);
}

static void case_recv_bytes_counted_once_per_step(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *op = NULL;
  nt_descr_v5 d = ph_op(0, 7, 0, NULL);
  H.v5->startEvent(ctx, &op, &d);
  for (int step = 0; step < 3; step++) {
    void *st = NULL;
    d = ph_step(op, step);
    H.v5->startEvent(ctx, &st, &d);
    CHECK(st != NULL);
    record_size(st, NT_ST_STEP_RECV_WAIT, 1);
    ph_now += 300;
    record_size(st, NT_ST_STEP_RECV_FLUSH_WAIT, 8192);
    ph_now += 50;
    record_size(st, NT_ST_STEP_RECV_GPU_WAIT, 8192);
    ph_now += 700;
    H.v5->stopEvent(st);
  }
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = find_row(H.snap, 0, NT_DIR_RECV, 7);
  CHECK(r != NULL);
  CHECK_EQ_U64(r->wait_ns[0], 900);
  CHECK_EQ_U64(r->wait_ns[1], 150);
  CHECK_EQ_U64(r->wait_ns[2], 2100);
  CHECK_EQ_U64(r->bytes, 3 * 8192);
  CHECK_EQ_U64(r->steps, 3);
  CHECK_EQ_U64(r->ops_started - r->ops_done, 1); /* still in flight */
  CHECK_EQ_U64(r->cur_step, 2);
  CHECK(r->cur_wait == NT_WAIT_NONE);
  CHECK(r->progress_age_ns == 0);
}

static void case_proxy_thread_states_are_exact(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  int idle[] = {NT_ST_CTRL_IDLE}, active[] = {NT_ST_CTRL_ACTIVE};
  ph_now = 0;
  ctrl(ctx, idle, 1, 0);
  ph_now = 1000;
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
  void *h = NULL;
  H.v5->startEvent(ctx, &h, &d);
  H.v5->recordEventState(h, NT_ST_CTRL_APPEND, NULL);
  ph_now = 1300;
  nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = 4}};
  H.v5->recordEventState(h, NT_ST_CTRL_APPEND_END, &a);
  H.v5->stopEvent(h);
  ctrl(ctx, active, 1, 0);
  ph_now = 3300;
  ctrl(ctx, idle, 1, 0);
  ph_now = 4000;
  H.v5->startEvent(ctx, &h, &d);
  H.v5->recordEventState(h, NT_ST_CTRL_SLEEP, NULL);
  ph_now = 9000;
  H.v5->recordEventState(h, NT_ST_CTRL_WAKEUP, NULL);
  ph_now = 9200;
  H.v5->stopEvent(h);
  ph_now = 10000;
  CHECK(ph_latest(&H) == 0);
  const nt_proxy_row *p = only_proxy(H.snap);
  CHECK(p != NULL);
  CHECK_EQ_U64(p->state_ns[NT_PROXY_IDLE], 1000 + 700 + 800);
  CHECK_EQ_U64(p->state_ns[NT_PROXY_APPEND], 300);
  CHECK_EQ_U64(p->state_ns[NT_PROXY_ACTIVE], 2000);
  CHECK_EQ_U64(p->state_ns[NT_PROXY_SLEEP], 5000);
  CHECK_EQ_U64(p->state_ns[NT_PROXY_WAKEUP], 200);
  CHECK(p->state == NT_PROXY_IDLE);
  CHECK_EQ_U64(p->state_age_ns, 800);
  CHECK_EQ_U64(p->appends, 1);
  CHECK_EQ_U64(p->appended_ops, 4);
  CHECK_EQ_U64(p->wakeups, 1);
  CHECK(p->comm_index != NT_NO_COMM);
  CHECK(p->tid != 0);
}

static void case_null_and_garbage_are_tolerated(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *h = (void *)0x1;
  CHECK(H.v5->startEvent(ctx, &h, NULL) == 0);
  CHECK(h == NULL);
  nt_descr_v5 d = ph_simple(NT_EV_PROXY_OP);
  CHECK(H.v5->startEvent(ctx, NULL, &d) == 0);
  CHECK(H.v5->stopEvent(NULL) == 0);
  CHECK(H.v5->recordEventState(NULL, NT_ST_STEP_SEND_WAIT, NULL) == 0);
  int on_stack = 12345;
  CHECK(H.v5->stopEvent(&on_stack) == 0); /* NCCL's net-plugin path passes handles unchecked */
  CHECK(H.v5->recordEventState(&on_stack, NT_ST_CTRL_IDLE, NULL) == 0);
  CHECK(on_stack == 12345);
  d = ph_simple(1ull << 40); /* a type from the future */
  h = (void *)0x1;
  H.v5->startEvent(ctx, &h, &d);
  CHECK(h == NULL);
  d = ph_step(NULL, 0); /* step whose op was dropped */
  h = (void *)0x1;
  H.v5->startEvent(ctx, &h, &d);
  CHECK(h == NULL);
  void *op = NULL, *st = NULL;
  d = ph_op(1, 2, 1, NULL);
  H.v5->startEvent(ctx, &op, &d);
  d = ph_step(op, 5);
  H.v5->startEvent(ctx, &st, &d);
  CHECK(st != NULL);
  CHECK(H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, NULL) == 0); /* NULL args */
  CHECK(H.v5->recordEventState(st, NT_ST_STEP_RECV_WAIT, NULL) == 0); /* wrong direction */
  CHECK(H.v5->recordEventState(st, 999, NULL) == 0);                  /* unknown state */
  H.v5->stopEvent(st);
  H.v5->stopEvent(st); /* double stop */
  H.v5->stopEvent(op);
  H.v5->stopEvent(op);
  CHECK(H.v5->finalize(NULL) == 0);
  CHECK(H.v5->finalize(&on_stack) == 0);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->process.unknown_events >= 5);
  const nt_channel_row *r = find_row(H.snap, 1, NT_DIR_SEND, 2);
  CHECK(r != NULL);
  CHECK_EQ_U64(r->steps, 1);
  CHECK_EQ_U64(r->ops_done, 1);
}

static void case_foreign_pxn_ops_are_never_dereferenced(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  nt_descr_v5 d = ph_op(0, 1, 1, (void *)0xdeadbeef);
  d.proxyOp.pid = getpid() + 1;
  void *h = (void *)0x1;
  /* Under PXN even the context is the other process's pointer. */
  H.v5->startEvent((void *)0xdeadbeef0ull, &h, &d);
  CHECK(h == NULL);
  d.proxyOp.pid = getpid();
  H.v5->startEvent((void *)0xdeadbeef0ull, &h, &d);
  CHECK(h == NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.foreign_ops, 1);
  CHECK(H.snap->nchannels == 0);
}

static void case_pool_exhaustion_drops_and_recovers(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  enum { N = 700 };
  static void *ops[N];
  int got = 0;
  for (int i = 0; i < N; i++) {
    nt_descr_v5 d = ph_op(0, 1, 1, NULL);
    H.v5->startEvent(ctx, &ops[i], &d);
    got += ops[i] != NULL;
  }
  CHECK(got < N);
  CHECK(got >= 400);
  for (int i = 0; i < N; i++)
    if (ops[i]) H.v5->stopEvent(ops[i]);
  void *again = NULL;
  nt_descr_v5 d = ph_op(0, 1, 1, NULL);
  H.v5->startEvent(ctx, &again, &d);
  CHECK(again != NULL);
  H.v5->stopEvent(again);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.dropped_events, N - got);
  const nt_channel_row *r = find_row(H.snap, 0, NT_DIR_SEND, 1);
  CHECK(r != NULL);
  CHECK_EQ_U64(r->ops_started, got + 1);
  CHECK_EQ_U64(r->ops_done, got + 1);
}

static void case_step_restarted_without_stop(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *op = NULL, *st = NULL;
  nt_descr_v5 d = ph_op(2, 3, 0, NULL);
  H.v5->startEvent(ctx, &op, &d);
  d = ph_step(op, 0);
  H.v5->startEvent(ctx, &st, &d); /* irecv not posted yet: NCCL starts the slot again */
  H.v5->startEvent(ctx, &st, &d);
  ph_now += 10;
  record_size(st, NT_ST_STEP_RECV_WAIT, 0);
  ph_now += 10;
  record_size(st, NT_ST_STEP_RECV_FLUSH_WAIT, 64);
  record_size(st, NT_ST_STEP_RECV_GPU_WAIT, 64);
  ph_now += 10;
  H.v5->stopEvent(st);
  H.v5->stopEvent(op);
  CHECK(ph_latest(&H) == 0);
  const nt_channel_row *r = find_row(H.snap, 2, NT_DIR_RECV, 3);
  CHECK(r != NULL);
  CHECK_EQ_U64(r->steps, 1);
  CHECK_EQ_U64(r->bytes, 64);
  CHECK_EQ_U64(r->wait_ns[0], 10);
  CHECK_EQ_U64(r->wait_ns[2], 10);
}

static void case_kernel_channel_busy_time_from_ptimers(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  for (int i = 0; i < 2; i++) {
    uint64_t start = 1000000 + (uint64_t)i * 10000;
    CHECK(ph_kernel_ch(&H, ctx, NULL, 5, start, start + 4000) != NULL);
  }
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->nkernels == 1);
  CHECK_EQ_U64(H.snap->kernels[0].channel, 5);
  CHECK_EQ_U64(H.snap->kernels[0].count, 2);
  CHECK_EQ_U64(H.snap->kernels[0].busy_ns, 8000);
}

static void case_subscriber_gets_a_snapshot_at_once(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  setenv("NCCLTOP_INTERVAL_MS", "20000", 1);
  CHECK(ph_load(&H) == 0);
  CHECK(ph_init(&H, HASH, 0, 2) != NULL);
  CHECK(ph_subscribe(&H) == 0);
  /* Far sooner than the 20 s interval: the subscription itself triggers it. */
  CHECK(ph_next_snapshot(&H, 5000) == 0);
}

static void case_nothing_is_encoded_without_a_subscriber(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  setenv("NCCLTOP_INTERVAL_MS", "10", 1);
  CHECK(ph_load(&H) == 0);
  CHECK(ph_init(&H, HASH, 0, 2) != NULL);
  struct timespec ts = {0, 300000000};
  nanosleep(&ts, NULL); /* ~30 intervals with nobody watching */
  CHECK(ph_subscribe(&H) == 0);
  CHECK(ph_next_snapshot(&H, 5000) == 0);
  CHECK_EQ_U64(H.snap->seq, 1); /* sequence numbers count encoded snapshots */
}

/* The plugin never listens: the endpoint directory holds the viewer's file
 * only, before and after the last finalize, which sends a final snapshot. */
static bool only_viewer_files(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  bool ok = d != NULL;
  while (ok && (de = readdir(d)))
    ok = de->d_name[0] == '.' || nt_endpoint_parse_viewer_name(de->d_name, NULL) != 0;
  if (d) closedir(d);
  return ok;
}

static void case_last_finalize_sends_final_snapshot_and_listens_nowhere(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  CHECK(only_viewer_files(H.dir));
  CHECK(H.v5->finalize(ctx) == 0);
  int final = 0;
  while (!final && ph_next_snapshot(&H, 3000) == 0) final = H.snap->final;
  CHECK(final);
  CHECK(only_viewer_files(H.dir));
}

static void case_mask_is_set_at_init_and_changed_live(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  CHECK(H.mask & NT_EV_PROXY_STEP);
  CHECK(H.mask & NT_EV_PROXY_CTRL);
  int old = H.set_mask(NT_EV_COLL | NT_EV_KERNEL_CH);
  CHECK(old & NT_EV_PROXY_STEP);
  CHECK(H.mask == (NT_EV_COLL | NT_EV_KERNEL_CH));
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(H.snap->process.event_mask, NT_EV_COLL | NT_EV_KERNEL_CH);
}

static void case_forked_child_never_touches_the_plugin(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    nt_descr_v5 d = ph_op(0, 1, 1, NULL);
    void *h = (void *)0x1;
    H.v5->startEvent(ctx, &h, &d);
    H.flush(); /* must not wait for a publisher thread the child does not have */
    H.v5->finalize(ctx);
    _exit(h == NULL ? 0 : 3);
  }
  int st = -1;
  for (int i = 0; i < 500 && waitpid(pid, &st, WNOHANG) == 0; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  if (st == -1) kill(pid, SIGKILL);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  /* The parent keeps publishing. */
  CHECK(ph_latest(&H) == 0);
}

static void case_v4_init_argument_order(void) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  const nt_profiler_v4 *v4 = dlsym(H.lib, "ncclProfiler_v4");
  CHECK(v4 != NULL);
  void *ctx = NULL;
  CHECK(v4->init(&ctx, &H.mask, "v4comm", 0xabcdull, 2, 16, 9, NULL) == 0);
  CHECK(ctx != NULL);
  CHECK(ph_subscribe(&H) == 0);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->ncomms == 1);
  CHECK_EQ_U64(H.snap->comms[0].comm_hash, 0xabcd);
  CHECK_EQ_U64(H.snap->comms[0].rank, 9);
  CHECK_EQ_U64(H.snap->comms[0].nranks, 16);
  CHECK_EQ_U64(H.snap->comms[0].nnodes, 2);
  CHECK_EQ_U64(H.snap->process.abi_version, 4);
}

/* Application and proxy threads at once, two communicators: nothing lost. */
static void *app_thread(void *ctx) {
  for (int i = 0; i < 2000; i++) {
    nt_descr_v5 d = ph_simple(NT_EV_COLL);
    void *h = NULL;
    H.v5->startEvent(ctx, &h, &d);
    H.v5->stopEvent(h);
  }
  return NULL;
}

static void *proxy_thread(void *ctx) {
  for (int i = 0; i < 200; i++) {
    void *op = NULL;
    nt_descr_v5 d = ph_op(i % 4, 1, 1, NULL);
    H.v5->startEvent(ctx, &op, &d);
    for (int s = 0; s < 8; s++) {
      void *st = NULL;
      d = ph_step(op, s);
      H.v5->startEvent(ctx, &st, &d);
      record_size(st, NT_ST_STEP_SEND_GPU_WAIT, 0);
      record_size(st, NT_ST_STEP_SEND_WAIT, 100);
      H.v5->stopEvent(st);
    }
    H.v5->stopEvent(op);
  }
  return NULL;
}

static void case_concurrent_threads_lose_nothing(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *ctx2 = ph_init(&H, HASH + 1, 2, 8);
  CHECK(ctx2 != NULL);
  pthread_t t[4];
  CHECK(pthread_create(&t[0], NULL, app_thread, ctx) == 0);
  CHECK(pthread_create(&t[1], NULL, proxy_thread, ctx) == 0);
  CHECK(pthread_create(&t[2], NULL, app_thread, ctx2) == 0);
  CHECK(pthread_create(&t[3], NULL, proxy_thread, ctx2) == 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->ncomms == 2);
  uint64_t steps = 0, bytes = 0;
  for (uint32_t i = 0; i < H.snap->nchannels; i++) {
    steps += H.snap->channels[i].steps;
    bytes += H.snap->channels[i].bytes;
  }
  CHECK_EQ_U64(steps, 2 * 200 * 8);
  CHECK_EQ_U64(bytes, 2 * 200 * 8 * 100);
  CHECK_EQ_U64(H.snap->comms[0].colls_enqueued, 2000);
  CHECK_EQ_U64(H.snap->comms[1].colls_enqueued, 2000);
}

/* NCCL passes the same name literals on every Coll, and the plugin
 * remembers the last one it looked up per thread; a caller whose buffer
 * at the same address now spells another name gets that name's meaning. */
static void one_coll(void *ctx, const char *func, const char *algo, const char *proto,
                     const char *dtype) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.coll.func = func;
  d.coll.count = 256;
  d.coll.datatype = dtype;
  d.coll.algo = algo;
  d.coll.proto = proto;
  void *h = NULL, *op = NULL;
  H.v5->startEvent(ctx, &h, &d);
  nt_descr_v5 o = ph_op(0, 1, 1, h);
  H.v5->startEvent(ctx, &op, &o);
  H.v5->stopEvent(op);
  H.v5->stopEvent(h);
}

static void case_names_are_read_anew_when_a_buffer_changes(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  char func[16] = "AllReduce", algo[16] = "RING", proto[16] = "LL", dtype[16] = "ncclFloat32";
  one_coll(ctx, func, algo, proto, dtype);
  one_coll(ctx, func, algo, proto, dtype); /* remembered */
  strcpy(func, "AllGather");
  strcpy(algo, "TREE");
  strcpy(proto, "SIMPLE");
  strcpy(dtype, "ncclInt8"); /* 256 x 1 byte */
  one_coll(ctx, func, algo, proto, dtype);
  uint64_t ar = 0, ag = 0;
  for (int tries = 0; tries < 50 && ar + ag < 3; tries++) {
    CHECK(ph_latest(&H) == 0);
    ar = ag = 0;
    for (uint32_t i = 0; i < H.snap->nops; i++) {
      const nt_op_row *r = &H.snap->ops[i];
      if (r->func == NT_FUNC_ALLREDUCE && r->algo == NT_ALGO_RING && r->proto == NT_PR_LL &&
          r->bytes == 2 * 256 * 4)
        ar += r->count;
      if (r->func == NT_FUNC_ALLGATHER && r->algo == NT_ALGO_TREE && r->proto == NT_PR_SIMPLE &&
          r->bytes == 256)
        ag += r->count;
    }
  }
  CHECK_EQ_U64(ar, 2);
  CHECK_EQ_U64(ag, 1);
}

/* Operations enqueued on application threads while their proxy-op
 * children start and stop on proxy threads and the publisher retires them:
 * each completes once, none is lost. (Under ThreadSanitizer: make tsan.) */
#define HANDOFF 64
typedef struct {
  void *ctx;
  void *slot[HANDOFF];
  _Atomic uint32_t head, tail;
  int n;
} handoff;

static void *op_app_thread(void *arg) {
  handoff *q = arg;
  for (int i = 0; i < q->n; i++) {
    nt_descr_v5 d = ph_simple(NT_EV_COLL);
    d.coll.func = "AllReduce";
    d.coll.seqNumber = (uint64_t)i;
    d.coll.count = 256;
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "LL128";
    void *h = NULL;
    H.v5->startEvent(q->ctx, &h, &d);
    while (atomic_load(&q->tail) - atomic_load(&q->head) == HANDOFF) sched_yield();
    q->slot[atomic_load(&q->tail) % HANDOFF] = h;
    atomic_fetch_add(&q->tail, 1); /* the proxy may start children before the stop below */
    H.v5->stopEvent(h);
  }
  return NULL;
}

static void *op_proxy_thread(void *arg) {
  handoff *q = arg;
  for (int i = 0; i < q->n; i++) {
    while (atomic_load(&q->head) == atomic_load(&q->tail)) sched_yield();
    void *parent = q->slot[atomic_load(&q->head) % HANDOFF];
    atomic_fetch_add(&q->head, 1);
    void *ops[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
      nt_descr_v5 d = ph_op(k, 1, k == 0, parent);
      H.v5->startEvent(q->ctx, &ops[k], &d);
    }
    for (int k = 0; k < 2; k++) H.v5->stopEvent(ops[k]);
  }
  return NULL;
}

static void case_operations_complete_once_across_threads(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *ctx2 = ph_init(&H, HASH + 1, 2, 8);
  CHECK(ctx2 != NULL);
  static handoff q[2];
  pthread_t t[4];
  for (int k = 0; k < 2; k++) {
    q[k].ctx = k ? ctx2 : ctx;
    q[k].n = 3000;
    CHECK(pthread_create(&t[2 * k], NULL, op_app_thread, &q[k]) == 0);
    CHECK(pthread_create(&t[2 * k + 1], NULL, op_proxy_thread, &q[k]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  /* The publisher retires an operation one quiet sweep after its last
   * child: on a loaded machine one flush can publish before the last of
   * them are retired, so ask again (bounded) until all 6000 are in. */
  uint64_t count = 0, done = 0;
  for (int tries = 0; tries < 50 && count < 6000; tries++) {
    CHECK(ph_latest(&H) == 0);
    count = done = 0;
    for (uint32_t i = 0; i < H.snap->nops; i++) {
      count += H.snap->ops[i].count;
      done += H.snap->ops[i].done;
    }
  }
  CHECK_EQ_U64(count, 6000);
  CHECK_EQ_U64(done, 6000);
  CHECK_EQ_U64(H.snap->process.late_children, 0);
  CHECK_EQ_U64(H.snap->process.dropped_ops, 0);
}

static void case_nccl_topology_dump_is_forwarded(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  setenv("NCCL_TOPO_DUMP_FILE", "examples/topologies/grace-c2c.xml", 1);
  CHECK(ph_load(&H) == 0);
  CHECK(ph_init(&H, HASH, 0, 1) != NULL);
  CHECK(ph_subscribe(&H) == 0);
  static char buf[1 << 20];
  char topic[64];
  bool got = false;
  for (int i = 0; i < 50 && !got; i++) {
    zmq_pollitem_t it = {.socket = H.sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 100) <= 0) continue;
    int n = zmq_recv(H.sub, topic, sizeof topic - 1, 0);
    int len = zmq_recv(H.sub, buf, sizeof buf - 1, 0);
    if (n < 0 || len < 0) break;
    topic[n] = buf[len] = '\0';
    got = !strcmp(topic, NT_TOPIC_TOPOLOGY);
  }
  CHECK(got);
  CHECK(strstr(buf, "<c2c bw=\"45000\"") != NULL);
}

/* A proxy thread that has exited keeps its row: a thread starting later
 * must not take over its slot (and its times). */
static void *short_proxy(void *ctx) {
  int idle[] = {NT_ST_CTRL_IDLE};
  ctrl(ctx, idle, 1, 0);
  return NULL;
}

static void case_exited_proxy_threads_keep_their_rows(void) {
  void *ctx = setup();
  CHECK(ctx != NULL);
  void *ctx2 = ph_init(&H, HASH + 1, 2, 8);
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, short_proxy, ctx) == 0);
  pthread_join(a, NULL); /* exits: its slot is orphaned */
  CHECK(pthread_create(&b, NULL, short_proxy, ctx2) == 0);
  pthread_join(b, NULL);
  CHECK(ph_latest(&H) == 0);
  CHECK(H.snap->nproxy == 2);
  CHECK(H.snap->proxy[0].comm_index != H.snap->proxy[1].comm_index);
}

PH_CHILD(exports_every_abi_version)
PH_CHILD(disable_makes_init_fail)
PH_CHILD(send_step_waits_are_exact)
PH_CHILD(recv_bytes_counted_once_per_step)
PH_CHILD(proxy_thread_states_are_exact)
PH_CHILD(null_and_garbage_are_tolerated)
PH_CHILD(foreign_pxn_ops_are_never_dereferenced)
PH_CHILD(pool_exhaustion_drops_and_recovers)
PH_CHILD(step_restarted_without_stop)
PH_CHILD(kernel_channel_busy_time_from_ptimers)
PH_CHILD(subscriber_gets_a_snapshot_at_once)
PH_CHILD(nothing_is_encoded_without_a_subscriber)
PH_CHILD(last_finalize_sends_final_snapshot_and_listens_nowhere)
PH_CHILD(mask_is_set_at_init_and_changed_live)
PH_CHILD(forked_child_never_touches_the_plugin)
PH_CHILD(v4_init_argument_order)
PH_CHILD(concurrent_threads_lose_nothing)
PH_CHILD(operations_complete_once_across_threads)
PH_CHILD(names_are_read_anew_when_a_buffer_changes)
PH_CHILD(nccl_topology_dump_is_forwarded)
PH_CHILD(exited_proxy_threads_keep_their_rows)

int main(void) {
  TEST_RUN(exports_every_abi_version);
  TEST_RUN(disable_makes_init_fail);
  TEST_RUN(send_step_waits_are_exact);
  TEST_RUN(recv_bytes_counted_once_per_step);
  TEST_RUN(proxy_thread_states_are_exact);
  TEST_RUN(null_and_garbage_are_tolerated);
  TEST_RUN(foreign_pxn_ops_are_never_dereferenced);
  TEST_RUN(pool_exhaustion_drops_and_recovers);
  TEST_RUN(step_restarted_without_stop);
  TEST_RUN(kernel_channel_busy_time_from_ptimers);
  TEST_RUN(subscriber_gets_a_snapshot_at_once);
  TEST_RUN(nothing_is_encoded_without_a_subscriber);
  TEST_RUN(last_finalize_sends_final_snapshot_and_listens_nowhere);
  TEST_RUN(mask_is_set_at_init_and_changed_live);
  TEST_RUN(forked_child_never_touches_the_plugin);
  TEST_RUN(v4_init_argument_order);
  TEST_RUN(concurrent_threads_lose_nothing);
  TEST_RUN(operations_complete_once_across_threads);
  TEST_RUN(names_are_read_anew_when_a_buffer_changes);
  TEST_RUN(nccl_topology_dump_is_forwarded);
  TEST_RUN(exited_proxy_threads_keep_their_rows);
  return TEST_DONE();
}

/* Test harness for the real plugin: loads its test-only build
 * (build/.../tests/libnccl-profiler-nccltop-test.so: the production code
 * plus the nccltop_sim_set_clock hook) with dlopen, drives it through its exported ABI, and reads
 * what it publishes through a real ZeroMQ SUB socket.
 *
 * The plugin keeps process-wide state, so every case runs in a fresh child
 * process (ph_in_child): the parent never loads the plugin.
 */
#ifndef NCCLTOP_PLUGIN_HARNESS_H
#define NCCLTOP_PLUGIN_HARNESS_H

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "testlib.h"
#include "../plugin/nccl_profiler_abi.h"
#include "../proto/nccltop_proto.h"
#include "../monitor/feeds/discover.h"

typedef struct {
  void *lib;
  const nt_profiler_v5 *v5;
  void (*set_clock)(uint64_t (*)(void));
  void (*flush)(void);
  int (*set_mask)(int);
  int mask;
  void *zctx, *sub;
  nt_snapshot *snap;
  char dir[128];
  int dirfd;   /* the directory, held while the SUB is bound there */
  nt_inbox in; /* the SUB's socket file: the plugin connects to it */
} ph_t;

static _Atomic uint64_t ph_now; /* written by the test, read by the publisher thread */
static uint64_t ph_clock(void) {
  return ph_now;
}

static void ph_plugin_path(char *buf, size_t cap, const char *name) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(buf, cap, "%s/../%s", dirname(exe), name);
}

/* Private endpoint directory per case, so cases never see each other. */
__attribute__((unused)) static int ph_setup_dir(ph_t *h) {
  snprintf(h->dir, sizeof h->dir, "/tmp/nccltop-test-XXXXXX");
  if (!mkdtemp(h->dir)) return -1;
  return setenv("NCCLTOP_DIR", h->dir, 1);
}

__attribute__((unused)) static int ph_load(ph_t *h) {
  char path[PATH_MAX];
  ph_plugin_path(path, sizeof path, "tests/libnccl-profiler-nccltop-test.so");
  h->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h->lib) {
    fprintf(stderr, "    dlopen %s: %s\n", path, dlerror());
    return -1;
  }
  h->v5 = dlsym(h->lib, "ncclProfiler_v5");
  h->set_clock = (void (*)(uint64_t(*)(void)))dlsym(h->lib, "nccltop_sim_set_clock");
  h->flush = (void (*)(void))dlsym(h->lib, "nccltop_flush");
  h->set_mask = (int (*)(int))dlsym(h->lib, "nccltop_set_mask");
  if (!h->v5 || !h->set_clock || !h->flush || !h->set_mask) return -1;
  h->set_clock(ph_clock);
  return 0;
}

__attribute__((unused)) static void *ph_init(ph_t *h, uint64_t hash, int rank, int nranks) {
  void *ctx = NULL;
  if (h->v5->init(&ctx, hash, &h->mask, "test-comm", 1, nranks, rank, NULL) != 0) return NULL;
  return ctx;
}

/* Binds a SUB socket in the endpoint directory, as a viewer does: the
 * plugin's publisher connects to it within a scan. */
__attribute__((unused)) static int ph_subscribe(ph_t *h) {
  char err[256];
  h->dirfd = -1;
  h->snap = nt_snapshot_new();
  h->zctx = zmq_ctx_new();
  h->sub = zmq_socket(h->zctx, ZMQ_SUB);
  int zero = 0;
  zmq_setsockopt(h->sub, ZMQ_LINGER, &zero, sizeof zero);
  if (zmq_setsockopt(h->sub, ZMQ_SUBSCRIBE, "", 0) != 0) return -1;
  if ((h->dirfd = nt_endpoint_dir_open(h->dir, true, err, sizeof err)) < 0) {
    fprintf(stderr, "    %s\n", err);
    return -1;
  }
  return nt_inbox_bind(&h->in, h->sub, h->dirfd);
}

/* Receives messages until a snapshot arrives (timeout_ms); decodes it into
 * h->snap. Returns 0, or -1 on timeout or a decode error. */
__attribute__((unused)) static int ph_next_snapshot(ph_t *h, int timeout_ms) {
  static uint8_t buf[NT_MAX_MESSAGE_BYTES];
  char topic[64], err[256];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long left = timeout_ms - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return -1;
    zmq_pollitem_t it = {.socket = h->sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, left) <= 0) continue;
    int n = zmq_recv(h->sub, topic, sizeof topic - 1, 0);
    if (n < 0) return -1;
    topic[n < (int)sizeof topic - 1 ? n : (int)sizeof topic - 1] = '\0';
    int len = zmq_recv(h->sub, buf, sizeof buf, 0);
    if (len < 0) return -1;
    if (strcmp(topic, NT_TOPIC_SNAPSHOT) != 0) continue;
    if (nt_snapshot_decode(buf, (size_t)len, h->snap, err, sizeof err) != 0) {
      fprintf(stderr, "    decode: %s\n", err);
      return -1;
    }
    return 0;
  }
}

/* Flushes the publisher and returns the newest snapshot (drains older ones). */
__attribute__((unused)) static int ph_latest(ph_t *h) {
  h->flush();
  if (ph_next_snapshot(h, 3000) != 0) return -1;
  while (ph_next_snapshot(h, 50) == 0) {
  }
  return 0;
}

/* Fresh plugin, one communicator `name` (rank 1 of `nranks`) initialised
 * through ncclProfiler_v7 (*v7) with `mask`, a subscribed SUB socket and
 * the first snapshot in: the context, NULL if any of it failed. */
__attribute__((unused)) static void *ph_setup_v7(ph_t *h, const nt_profiler_v7 **v7, uint64_t hash,
                                                 const char *name, int nranks, int mask) {
  memset(h, 0, sizeof *h);
  ph_now = 1;
  if (ph_setup_dir(h) != 0 || ph_load(h) != 0) return NULL;
  *v7 = dlsym(h->lib, "ncclProfiler_v7");
  void *ctx = NULL;
  if (!*v7 || (*v7)->init(&ctx, hash, &h->mask, name, 1, nranks, 0, NULL) != 0) return NULL;
  h->set_mask(mask);
  if (!ctx || ph_subscribe(h) != 0 || ph_next_snapshot(h, 5000) != 0) return NULL;
  return ctx;
}

/* Fresh plugin, one communicator, a subscribed SUB socket and the first
 * snapshot in: the communicator's context, NULL if any of it failed. */
__attribute__((unused)) static void *ph_setup(ph_t *h, uint64_t hash, int rank, int nranks) {
  memset(h, 0, sizeof *h);
  ph_now = 1;
  if (ph_setup_dir(h) != 0 || ph_load(h) != 0) return NULL;
  void *ctx = ph_init(h, hash, rank, nranks);
  if (!ctx || ph_subscribe(h) != 0 || ph_next_snapshot(h, 5000) != 0) return NULL;
  return ctx;
}

__attribute__((unused)) static void ph_close(ph_t *h) {
  if (h->sub) zmq_close(h->sub);
  if (h->zctx) zmq_ctx_term(h->zctx);
  if (h->sub) nt_inbox_unbind(&h->in, NULL, h->dirfd);
  if (h->sub && h->dirfd >= 0) close(h->dirfd);
  nt_snapshot_free(h->snap);
}

/* Runs fn in a fresh child process; returns its exit status (0 = passed). */
/* fn uses testlib's CHECK macros (include testlib.h first). */
__attribute__((unused)) static int ph_in_child(void (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    tl_case_failed = 0;
    fn();
    fflush(NULL);
    _exit(tl_case_failed ? 1 : 0);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One KernelCh event of `parent` (NULL: none) on `channel`: started at GPU
 * time `start`, KernelChStop recorded at `stop`, stopped. Its handle (for
 * the stale-handle tests), NULL if the plugin gave none. */
__attribute__((unused)) static void *ph_kernel_ch(ph_t *h, void *ctx, void *parent, int channel,
                                                  uint64_t start, uint64_t stop) {
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_KERNEL_CH;
  d.parentObj = parent;
  d.kernelCh.channelId = (uint8_t)channel;
  d.kernelCh.pTimer = start;
  void *e = NULL;
  h->v5->startEvent(ctx, &e, &d);
  nt_state_args_v5 a = {.kernelCh = {.pTimer = stop}};
  if (e) h->v5->recordEventState(e, NT_ST_KERNEL_CH_STOP, &a);
  if (e) h->v5->stopEvent(e);
  return e;
}

/* The test `name`: case_name run in a fresh child process (ph_in_child). */
#define PH_CHILD(name)                                                                             \
  static void name(void) {                                                                         \
    CHECK(ph_in_child(case_##name) == 0);                                                          \
  }

/* Descriptor builders (v5 layout). */
__attribute__((unused)) static nt_descr_v5 ph_op(int channel, int peer, int is_send, void *parent) {
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_PROXY_OP;
  d.parentObj = parent;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = (uint8_t)channel;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 4;
  d.proxyOp.chunkSize = 1 << 20;
  d.proxyOp.isSend = is_send;
  return d;
}

__attribute__((unused)) static nt_descr_v5 ph_step(void *op, int step) {
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_PROXY_STEP;
  d.parentObj = op;
  d.proxyStep.step = step;
  return d;
}

__attribute__((unused)) static nt_descr_v5 ph_simple(uint64_t type) {
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = type;
  return d;
}

/* A ring AllReduce of 1024 floats on one channel, number `seq`, started:
 * its handle (the operation's task), NULL if the plugin gave none. */
__attribute__((unused)) static void *ph_coll(ph_t *h, void *ctx, uint64_t seq) {
  nt_descr_v5 d = ph_simple(NT_EV_COLL);
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 1;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *e = NULL;
  h->v5->startEvent(ctx, &e, &d);
  return e;
}

#endif

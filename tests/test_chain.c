/* NCCLTOP_CHAIN: the real plugin (test build) chaining another profiler
 * plugin, driven through the ABI as NCCL drives it.
 *
 * The recording fixture (tests/fixtures/recorder.c, recorder7.c, and the
 * older-ABI-only recorder_v3.c, recorder_v4.c) writes every call it gets to
 * $NT_RECORDER_FILE: the cases check that it gets exactly the events of the
 * classes it asked for, with its own handles as parents and the descriptor
 * contents right for its version, while nccltop's snapshot is what it would
 * be alone. chain_refuser.c declines init (and aborts if it is called
 * afterwards); a missing file and nccltop itself are refused. End to end:
 * the simulator run with the recorder as NCCL's plugin and with nccltop
 * chaining it give the recorder the same events. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>

#include "testlib.h"
#include "plugin_harness.h"
#include "sim_trace.h"
#include "chain_recfile.h"

#define HASH 0x00c4a10000000001ull
#define OWN_DEFAULT                                                                                \
  (NT_EV_COLL | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_PROXY_CTRL | NT_EV_CE_COLL)

static ph_t H;
static int N; /* the ABI version "NCCL" initialised nccltop with */
static const nt_profiler_v7 *V7;
static const nt_profiler_v4 *V4;

/* ---- NCCL's logger: what nccltop says about the chained plugin ---- */

static char logbuf[16384];
static size_t loglen;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&log_mu);
  if (loglen < sizeof logbuf - 2) {
    int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen - 1, fmt, ap);
    if (n > 0) loglen += (size_t)n < sizeof logbuf - loglen - 1 ? (size_t)n : 0;
    logbuf[loglen++] = '\n';
    logbuf[loglen] = '\0';
  }
  pthread_mutex_unlock(&log_mu);
  va_end(ap);
}

static int log_count(const char *what) {
  int n = 0;
  pthread_mutex_lock(&log_mu); /* the publisher thread logs too */
  for (const char *p = logbuf; (p = strstr(p, what)) != NULL; p++) n++;
  pthread_mutex_unlock(&log_mu);
  return n;
}

/* ---- driving nccltop as NCCL version n does ---- */

static void plugin_lib(char *out, size_t cap, const char *fixture) {
  char rel[128];
  snprintf(rel, sizeof rel, "tests/lib%s.so", fixture);
  ph_plugin_path(out, cap, rel);
}

/* Fresh plugin chaining `chain` (a fixture name, or a path when it has a
 * '/'), recorder mask `rmask` (NULL: its default), initialised as version
 * n; the first snapshot in. The context, NULL on failure. */
static void *setup(int n, const char *chain, const char *rmask) {
  memset(&H, 0, sizeof H);
  ph_now = 1;
  N = n;
  pthread_mutex_lock(&log_mu);
  loglen = 0;
  logbuf[0] = '\0';
  pthread_mutex_unlock(&log_mu);
  /* Named after the test process (cases run in its children): one file,
   * emptied by each case, removed at the end. */
  snprintf(rec_path, sizeof rec_path, "/tmp/nccltop-chain-%d.log", (int)getppid());
  unlink(rec_path);
  setenv("NT_RECORDER_FILE", rec_path, 1);
  set_env("NT_RECORDER_MASK", rmask);
  char lib[PATH_MAX];
  if (chain && !strchr(chain, '/'))
    plugin_lib(lib, sizeof lib, chain);
  else
    snprintf(lib, sizeof lib, "%s", chain ? chain : "");
  set_env("NCCLTOP_CHAIN", chain ? lib : NULL);
  if (ph_setup_dir(&H) != 0 || ph_load(&H) != 0) return NULL;
  V7 = dlsym(H.lib, "ncclProfiler_v7");
  V4 = dlsym(H.lib, "ncclProfiler_v4");
  void *ctx = NULL;
  int rc = n == 7   ? V7->init(&ctx, HASH, &H.mask, "chain-comm", 1, 4, 0, logger)
           : n == 4 ? V4->init(&ctx, &H.mask, "chain-comm", HASH, 1, 4, 0, logger)
                    : H.v5->init(&ctx, HASH, &H.mask, "chain-comm", 1, 4, 0, logger);
  if (rc != 0 || !ctx || ph_subscribe(&H) != 0 || ph_next_snapshot(&H, 5000) != 0) return NULL;
  return ctx;
}

static nt_descr_v7 descr(uint64_t type, void *parent) {
  nt_descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  d.rank = 0;
  return d;
}

/* v5 to v7 share the offsets of what these cases send (v7 only adds). */
static void *start(void *ctx, nt_descr_v7 *d) {
  void *h = NULL;
  if (N == 7)
    V7->startEvent(ctx, &h, d);
  else
    H.v5->startEvent(ctx, &h, (nt_descr_v5 *)(void *)d);
  return h;
}
static void stop(void *h) {
  H.v5->stopEvent(h);
}
static void record(void *h, int state, uint64_t word) {
  nt_state_args_v5 a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = word; /* the union's one 8-byte word */
  H.v5->recordEventState(h, state, &a);
}

static nt_descr_v7 coll_descr(void *capi, void *group, uint64_t seq) {
  nt_descr_v7 d = descr(NT_EV_COLL, capi);
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.nChannels = 4;
  d.coll.nWarps = 8;
  d.coll.parentGroup = group;
  d.coll.userTag = 77;
  return d;
}

/* One collective as NCCL 2.28+ reports it: GroupApi > CollApi, Group >
 * Coll (parent: the CollApi; parentGroup: the Group) > a send ProxyOp with
 * one step, and a KernelCh (with, on v7, its compute phase). Handles out. */
typedef struct {
  void *gapi, *capi, *group, *coll, *op, *step, *kch, *kph;
} one_coll;
static one_coll collective(void *ctx, uint64_t seq) {
  one_coll c;
  nt_descr_v7 d = descr(NT_EV_GROUP_API, NULL);
  c.gapi = start(ctx, &d);
  d = descr(NT_EV_COLL_API, c.gapi);
  d.collApi.func = "AllReduce";
  d.collApi.count = 1024;
  d.collApi.datatype = "ncclFloat32";
  d.collApi.userTag = 77;
  c.capi = start(ctx, &d);
  d = descr(NT_EV_GROUP, NULL);
  c.group = start(ctx, &d);
  d = coll_descr(c.capi, c.group, seq);
  c.coll = start(ctx, &d);
  nt_descr_v5 o = ph_op(1, 1, 1, c.coll);
  memcpy(&d, &o, sizeof o);
  c.op = start(ctx, &d);
  nt_descr_v5 s = ph_step(c.op, 0);
  memcpy(&d, &s, sizeof s);
  c.step = start(ctx, &d);
  record(c.step, NT_ST_STEP_SEND_GPU_WAIT, 0);
  record(c.step, NT_ST_STEP_SEND_WAIT, 4096);
  stop(c.step);
  stop(c.op);
  d = descr(NT_EV_KERNEL_CH, c.coll);
  d.kernelCh.channelId = 1;
  d.kernelCh.pTimer = 1000;
  c.kch = start(ctx, &d);
  c.kph = NULL;
  if (N == 7) {
    d = descr(NT_EV_KERNEL_PHASE, c.kch);
    d.kernelPhase.channelId = 1;
    d.kernelPhase.phaseId = 1;
    d.kernelPhase.phaseName = "compute";
    d.kernelPhase.pTimer = 1100;
    c.kph = start(ctx, &d);
    record(c.kph, NT_ST_KERNEL_PHASE_STOP, 1900);
    stop(c.kph);
  }
  record(c.kch, NT_ST_KERNEL_CH_STOP, 2000);
  stop(c.kch);
  stop(c.coll);
  stop(c.group);
  stop(c.capi);
  stop(c.gapi);
  return c;
}

static uint64_t ops_counted(void) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < H.snap->nops; i++) n += H.snap->ops[i].count;
  return n;
}

/* ---- cases ---- */

/* v5 NCCL, v5..v6 recorder asking for Coll and KernelCh only: it gets the
 * Coll's ancestors (NCCL starts them for a Coll mask), the Coll, the
 * KernelCh, with its own handles as parents; never the ProxyOp or step
 * nccltop asked for. nccltop never sees the KernelCh; its totals hold. */
static void case_recorder_gets_its_classes_with_its_handles(void) {
  void *ctx = setup(5, "recorder", "0x42");
  CHECK(ctx != NULL);
  CHECK(H.mask == (OWN_DEFAULT | NT_EV_COLL | NT_EV_KERNEL_CH)); /* the union */
  CHECK(H.set_mask(OWN_DEFAULT) == OWN_DEFAULT);                 /* ours stays ours */
  one_coll c = collective(ctx, 7);
  (void)c;
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  CHECK_EQ_U64(H.snap->nkernels, 0); /* KernelCh: the recorder's class only */
  rec_read();
  CHECK(rec_count("init v5 ") == 1); /* the newest both have */
  CHECK(rec_count("start ") == 5);   /* GroupApi, CollApi, Group, Coll, KernelCh */
  CHECK(rec_count("start 8 ") == 0 && rec_count("start 16 ") == 0);
  const char *ga = rec_start(NT_EV_GROUP_API, 0), *ca = rec_start(NT_EV_COLL_API, 0),
             *g = rec_start(NT_EV_GROUP, 0), *co = rec_start(NT_EV_COLL, 0),
             *k = rec_start(NT_EV_KERNEL_CH, 0);
  CHECK(ga && ca && g && co && k);
  unsigned long long hga = rec_hex(ga, "h=0x"), hca = rec_hex(ca, "h=0x"), hg = rec_hex(g, "h=0x"),
                     hco = rec_hex(co, "h=0x"), hk = rec_hex(k, "h=0x");
  CHECK(rec_hex(ca, "parent=0x") == hga);
  CHECK(rec_hex(co, "parent=0x") == hca);
  CHECK(rec_hex(co, "pgroup=0x") == hg);
  CHECK(rec_hex(k, "parent=0x") == hco);
  CHECK(strstr(co, "seq=7 func=AllReduce count=1024 dtype=ncclFloat32 root=0 nch=4 algo=RING "
                   "proto=SIMPLE") != NULL);
  CHECK(strstr(k, "ch=1 ptimer=1000") != NULL);
  CHECK(has_line("record h=0x%llx state=22 args=1 size=2000 appended=2000 ptimer=2000", hk));
  CHECK(has_line("stop h=0x%llx", hk) && has_line("stop h=0x%llx", hco) &&
        has_line("stop h=0x%llx", hga));
  CHECK(rec_count("record ") == 1); /* the step's records were nccltop's */
}

/* v7 NCCL and a v7 recorder: userTag and KernelPhase (its parent: the
 * recorder's KernelCh handle) reach it as 2.31 gives them. */
static void case_v7_to_v7_keeps_user_tag_and_phases(void) {
  void *ctx = setup(7, "recorder7", "0x8042");
  CHECK(ctx != NULL);
  CHECK(H.mask == (OWN_DEFAULT | NT_EV_COLL | NT_EV_KERNEL_CH | NT_EV_KERNEL_PHASE));
  collective(ctx, 3);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  rec_read();
  CHECK(rec_count("init v7 ") == 1);
  const char *co = rec_start(NT_EV_COLL, 0), *k = rec_start(NT_EV_KERNEL_CH, 0),
             *p = rec_start(NT_EV_KERNEL_PHASE, 0);
  CHECK(co && k && p);
  CHECK(strstr(co, "utag=77") != NULL);
  CHECK(rec_hex(p, "parent=0x") == rec_hex(k, "h=0x"));
  CHECK(strstr(p, "ch=1 phase=1 pname=compute ptimer=1100") != NULL);
  CHECK(has_line("record h=0x%llx state=31 args=1 size=1900 appended=1900 ptimer=1900",
                 rec_hex(p, "h=0x")));
}

/* 2.31 turns KernelCh on for a plugin asking KernelPhase only
 * (ncclProfilerEnforceMaskDeps): the chained one gets KernelCh as alone. */
static void case_v7_kernel_phase_brings_kernel_ch(void) {
  void *ctx = setup(7, "recorder7", "0x8002");
  CHECK(ctx != NULL);
  CHECK(H.mask == (OWN_DEFAULT | NT_EV_COLL | NT_EV_KERNEL_CH | NT_EV_KERNEL_PHASE));
  collective(ctx, 3);
  rec_read();
  const char *k = rec_start(NT_EV_KERNEL_CH, 0), *p = rec_start(NT_EV_KERNEL_PHASE, 0);
  CHECK(k && p && rec_hex(p, "parent=0x") == rec_hex(k, "h=0x"));
  CHECK_EQ_U64(H.snap->nkernels, 0);
}

/* v7 NCCL, a recorder with v6 at most (librecorder.so): v6's descriptors,
 * no KernelPhase (NCCL 2.31's v6 shim drops it), even if it asks. */
static void case_v7_to_v6_drops_phases(void) {
  void *ctx = setup(7, "recorder", "0xFFFF");
  CHECK(ctx != NULL);
  collective(ctx, 4);
  rec_read();
  CHECK(rec_count("init v6 ") == 1);
  CHECK(rec_count("start 32768 ") == 0);
  CHECK(rec_count("start 8 ") == 1 && rec_count("start 16 ") == 1);
  const char *co = rec_start(NT_EV_COLL, 0);
  CHECK(co && strstr(co, "seq=4 func=AllReduce count=1024") && !strstr(co, "utag"));
  CHECK(H.mask == (OWN_DEFAULT | (0xFFFF & ((NT_EV_CE_BATCH << 1) - 1))));
}

/* v7 NCCL, a v4-only recorder: no API events; a Coll's parent is its
 * Group (v4's hierarchy), in the recorder's own handles. */
static void case_v7_to_v4_converts_hierarchy(void) {
  void *ctx = setup(7, "recorder_v4", NULL);
  CHECK(ctx != NULL);
  CHECK(H.mask == (OWN_DEFAULT | 0xFF));
  collective(ctx, 9);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  rec_read();
  CHECK(rec_count("init v4 ") == 1);
  CHECK(rec_count("start 256 ") == 0 && rec_count("start 512 ") == 0);
  const char *g = rec_start(NT_EV_GROUP, 0), *co = rec_start(NT_EV_COLL, 0),
             *op = rec_start(NT_EV_PROXY_OP, 0), *st = rec_start(NT_EV_PROXY_STEP, 0),
             *k = rec_start(NT_EV_KERNEL_CH, 0);
  CHECK(g && co && op && st && k);
  CHECK(rec_hex(co, "parent=0x") == rec_hex(g, "h=0x"));
  CHECK(rec_hex(op, "parent=0x") == rec_hex(co, "h=0x"));
  CHECK(rec_hex(st, "parent=0x") == rec_hex(op, "h=0x"));
  CHECK(rec_hex(k, "parent=0x") == rec_hex(co, "h=0x"));
  CHECK(strstr(co, "seq=9 func=AllReduce count=1024 dtype=ncclFloat32 root=0 nch=4") != NULL);
  CHECK(strstr(op, "ch=1 peer=1 send=1 steps=4") != NULL);
  CHECK(has_line("record h=0x%llx state=9 args=1 size=4096 appended=4096 ptimer=4096",
                 rec_hex(st, "h=0x")));
}

/* v5 NCCL, a v3-only recorder (NCCL 2.26's ABI): the communicator's name
 * and hash are not on its descriptors (NULL, 0, as NCCL's v3 shim), the
 * Coll's nChannels is its nMaxChannels; v3 gets the proxy-control states
 * with their count and the step waits without a size, nothing else. */
static void case_v5_to_v3_as_the_v3_shim(void) {
  void *ctx = setup(5, "recorder_v3", NULL);
  CHECK(ctx != NULL);
  collective(ctx, 2);
  nt_descr_v7 d = descr(NT_EV_PROXY_CTRL, NULL);
  void *pc = start(ctx, &d);
  nt_state_args_v5 a = {.proxyCtrl = {.appendedProxyOps = 7}};
  H.v5->recordEventState(pc, NT_ST_CTRL_APPEND, &a);
  H.v5->recordEventState(pc, NT_ST_CTRL_APPEND_END, &a);
  H.v5->recordEventState(pc, NT_ST_OP_IN_PROGRESS, &a); /* not a v3 state here */
  stop(pc);
  rec_read();
  CHECK(rec_count("init v3 ") == 1);
  const char *co = rec_start(NT_EV_COLL, 0), *g = rec_start(NT_EV_GROUP, 0),
             *c = rec_start(NT_EV_PROXY_CTRL, 0), *st = rec_start(NT_EV_PROXY_STEP, 0);
  CHECK(co && g && c && st);
  CHECK(strstr(co, "seq=2 func=AllReduce count=1024 dtype=ncclFloat32 root=0 nch=4 algo=RING "
                   "proto=SIMPLE cname=- chash=0") != NULL);
  CHECK(rec_hex(co, "parent=0x") == rec_hex(g, "h=0x"));
  unsigned long long hc = rec_hex(c, "h=0x"), hs = rec_hex(st, "h=0x");
  CHECK(has_line("record h=0x%llx state=17 args=1 size=7 appended=7 ptimer=0 opsteps=0", hc));
  CHECK(has_line("record h=0x%llx state=18 args=1 size=7 appended=7 ptimer=0 opsteps=0", hc));
  CHECK(has_line("record h=0x%llx state=9 args=1 size=0 appended=0 ptimer=0 opsteps=0", hs));
  CHECK(rec_count("record ") == 4); /* two steps' waits, two control states */
}

/* A v4 NCCL (2.27) and the v4 recorder: the same layout, parents mapped. */
static void case_v4_to_v4(void) {
  void *ctx = setup(4, "recorder_v4", NULL);
  CHECK(ctx != NULL);
  nt_descr_v4 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_GROUP;
  void *g = NULL, *co = NULL;
  V4->startEvent(ctx, &g, &d);
  d.type = NT_EV_COLL;
  d.parentObj = g;
  d.coll.seqNumber = 5;
  d.coll.func = "Broadcast";
  d.coll.count = 8;
  d.coll.datatype = "ncclInt8";
  d.coll.nChannels = 2;
  V4->startEvent(ctx, &co, &d);
  V4->stopEvent(co);
  V4->stopEvent(g);
  rec_read();
  const char *lg = rec_start(NT_EV_GROUP, 0), *lc = rec_start(NT_EV_COLL, 0);
  CHECK(lg && lc && rec_hex(lc, "parent=0x") == rec_hex(lg, "h=0x"));
  CHECK(strstr(lc, "seq=5 func=Broadcast count=8 dtype=ncclInt8") != NULL);
  CHECK(rec_count("stop ") == 2);
}

/* NCCL 2.26 (v3) and the v3 recorder: v3's descriptors as they are (the
 * communicator's name and hash on the Coll), parents mapped, v3's op
 * states with their running size. */
static void case_v3_to_v3(void) {
  memset(&H, 0, sizeof H);
  /* Named after the test process (cases run in its children): one file,
   * emptied by each case, removed at the end. */
  snprintf(rec_path, sizeof rec_path, "/tmp/nccltop-chain-%d.log", (int)getppid());
  unlink(rec_path);
  setenv("NT_RECORDER_FILE", rec_path, 1);
  unsetenv("NT_RECORDER_MASK");
  char lib[PATH_MAX];
  plugin_lib(lib, sizeof lib, "recorder_v3");
  setenv("NCCLTOP_CHAIN", lib, 1);
  CHECK(ph_setup_dir(&H) == 0 && ph_load(&H) == 0);
  const nt_profiler_v3 *v3 = dlsym(H.lib, "ncclProfiler_v3");
  void *ctx = NULL;
  CHECK(v3 && v3->init(&ctx, &H.mask) == 0 && ctx);
  if (!v3 || !ctx) return;
  nt_descr_v3 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_GROUP;
  void *g = NULL, *co = NULL, *op = NULL;
  v3->startEvent(ctx, &g, &d);
  d.type = NT_EV_COLL;
  d.parentObj = g;
  d.coll.name = "old-comm";
  d.coll.commHash = 0xabc;
  d.coll.seqNumber = 1;
  d.coll.func = "AllGather";
  d.coll.count = 16;
  d.coll.datatype = "ncclInt8";
  d.coll.nMaxChannels = 2;
  v3->startEvent(ctx, &co, &d);
  memset(&d, 0, sizeof d);
  d.type = NT_EV_PROXY_OP;
  d.parentObj = co;
  d.proxyOp.pid = getpid();
  d.proxyOp.isSend = 1;
  v3->startEvent(ctx, &op, &d);
  nt_state_args_v3 a = {.proxyOp = {.transSize = 512, .steps = 1}};
  v3->recordEventState(op, NT_ST_V3_OP_SEND_TRANSMITTED, &a);
  v3->stopEvent(op);
  v3->stopEvent(co);
  v3->stopEvent(g);
  rec_read();
  const char *lg = rec_start(NT_EV_GROUP, 0), *lc = rec_start(NT_EV_COLL, 0),
             *lo = rec_start(NT_EV_PROXY_OP, 0);
  CHECK(lg && lc && lo);
  CHECK(rec_hex(lc, "parent=0x") == rec_hex(lg, "h=0x"));
  CHECK(rec_hex(lo, "parent=0x") == rec_hex(lc, "h=0x"));
  CHECK(lc && strstr(lc, "seq=1 func=AllGather count=16 dtype=ncclInt8 root=0 nch=2") &&
        strstr(lc, "cname=old-comm chash=abc"));
  CHECK(has_line("record h=0x%llx state=2 args=1 size=512 appended=512 ptimer=0 opsteps=1",
                 rec_hex(lo, "h=0x")));
  CHECK(rec_count("stop ") == 3);
}

/* A plugin that declines init: nccltop publishes as alone, NCCL's mask is
 * ours, nothing reaches it (it would abort), said once in NCCL's log. */
static void case_refusing_plugin_leaves_nccltop_working(void) {
  void *ctx = setup(5, "chain_refuser", NULL);
  CHECK(ctx != NULL);
  CHECK(H.mask == OWN_DEFAULT);
  void *ctx2 = NULL;
  CHECK(H.v5->init(&ctx2, HASH + 1, &H.mask, "second", 1, 4, 1, logger) == 0 && ctx2);
  CHECK(H.mask == OWN_DEFAULT);
  collective(ctx, 1);
  collective(ctx2, 1);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 2);
  CHECK(log_count("declined") == 1);
  CHECK(H.v5->finalize(ctx) == 0 && H.v5->finalize(ctx2) == 0);
}

/* A plugin that accepts but asks for nothing: said once; NCCL's mask is
 * ours; it gets nothing. */
static void case_plugin_asking_nothing_gets_nothing(void) {
  void *ctx = setup(5, "recorder", "0");
  CHECK(ctx != NULL);
  CHECK(H.mask == OWN_DEFAULT);
  collective(ctx, 1);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  rec_read();
  CHECK(rec_count("start ") == 0 && rec_count("init v5 ") == 1);
  CHECK(log_count("asked for no events") == 1);
  CHECK(H.v5->finalize(ctx) == 0);
  rec_read();
  CHECK(rec_count("finalize ") == 1);
}

/* A plugin may accept a communicator with a NULL context: NCCL passes it
 * NULL with every event and never finalizes it; so does nccltop. */
static void case_null_context_is_passed_as_null(void) {
  setenv("NT_NOOP_NULL_CTX", "1", 1);
  setenv("NT_NOOP_MASK", "0x2", 1);
  setenv("NT_NOOP_COUNT", "1", 1);
  void *ctx = setup(5, "chain_noop", NULL);
  CHECK(ctx != NULL);
  char lib[PATH_MAX];
  plugin_lib(lib, sizeof lib, "chain_noop");
  void *noop = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  unsigned long *calls = noop ? dlsym(noop, "chain_noop_calls") : NULL;
  unsigned long *nulls = noop ? dlsym(noop, "chain_noop_null_starts") : NULL;
  CHECK(calls && nulls);
  if (!calls || !nulls) return;
  collective(ctx, 1); /* GroupApi, CollApi, Group, Coll: its classes */
  CHECK(calls[0] == 1 && calls[1] == 4 && calls[2] == 4 && *nulls == 4);
  CHECK(H.v5->finalize(ctx) == 0);
  CHECK(calls[4] == 0);
  unsetenv("NT_NOOP_NULL_CTX");
  unsetenv("NT_NOOP_MASK");
}

static void case_missing_plugin_is_logged_once(void) {
  void *ctx = setup(5, "/nonexistent/libnccl-profiler-nothing.so", NULL);
  CHECK(ctx != NULL);
  void *ctx2 = NULL;
  CHECK(H.v5->init(&ctx2, HASH + 1, &H.mask, "second", 1, 4, 1, logger) == 0);
  CHECK(H.mask == OWN_DEFAULT);
  collective(ctx, 1);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  CHECK(log_count("cannot load") == 1);
}

/* nccltop itself (this very file, or any copy) is never chained. */
static void case_chaining_nccltop_itself_is_refused(void) {
  char self[PATH_MAX];
  ph_plugin_path(self, sizeof self, "tests/libnccl-profiler-nccltop-test.so");
  void *ctx = setup(5, self, NULL);
  CHECK(ctx != NULL);
  CHECK(H.mask == OWN_DEFAULT);
  collective(ctx, 1);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 1);
  CHECK(log_count("nccltop itself") == 1);
}

static void case_production_copy_is_refused(void) {
  char prod[PATH_MAX];
  ph_plugin_path(prod, sizeof prod, "libnccl-profiler-nccltop.so");
  void *ctx = setup(5, prod, NULL);
  CHECK(ctx != NULL);
  CHECK(H.mask == OWN_DEFAULT);
  CHECK(log_count("nccltop itself") == 1);
}

/* Live mask changes on either side keep NCCL's mask the union and each
 * plugin's events its own: nccltop's mask 0 stops its counting while the
 * recorder goes on; the recorder switching kernelch on mid-run gets it. */
static void case_live_mask_changes_keep_the_union(void) {
  setenv("NT_RECORDER_MASK_SWITCH", "5:0x42", 1);
  void *ctx = setup(5, "recorder", "0x2");
  CHECK(ctx != NULL);
  CHECK(H.mask == (OWN_DEFAULT | NT_EV_COLL));
  CHECK(H.set_mask(0) == OWN_DEFAULT);
  CHECK(H.mask == NT_EV_COLL);
  collective(ctx, 4); /* the recorder: no KernelCh yet */
  collective(ctx, 5); /* switches at this Coll's start */
  CHECK(H.mask == (NT_EV_COLL | NT_EV_KERNEL_CH));
  collective(ctx, 6);
  /* NCCL overriding the mask itself (2.31's RAS): kept until a plugin
   * changes its own. */
  H.mask = NT_EV_PROXY_CTRL;
  nt_descr_v7 d = descr(NT_EV_GROUP, NULL);
  stop(start(ctx, &d));
  CHECK(H.mask == NT_EV_PROXY_CTRL);
  CHECK(H.set_mask(0) == 0);
  CHECK(H.mask == NT_EV_PROXY_CTRL);
  CHECK(H.set_mask(NT_EV_P2P) == 0);
  CHECK(H.mask == (NT_EV_P2P | NT_EV_COLL | NT_EV_KERNEL_CH));
  CHECK(H.set_mask(0) == NT_EV_P2P);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 0);
  rec_read();
  CHECK(rec_count("start 2 ") == 3);
  /* seq 6's only: seq 5's operation had the mask NCCL copied before the
   * switch (at its GroupApi, M2), as NCCL alone would have. */
  CHECK(rec_count("start 64 ") == 1);
  unsetenv("NT_RECORDER_MASK_SWITCH");
}

/* Threads (TSan-relevant: pairs, masks): app threads start collectives
 * whose proxy ops and kernel channels other threads start and stop, while
 * the masks change. Every operation counted once by nccltop, every event
 * the recorder got stopped once. */
typedef struct {
  void *ctx;
  _Atomic int head, tail;
  void *slot[64];
  int n;
} handoff;

static void *app_thread(void *arg) {
  handoff *q = arg;
  for (int i = 0; i < q->n; i++) {
    while (atomic_load(&q->tail) - atomic_load(&q->head) >= 64) sched_yield();
    nt_descr_v7 d = coll_descr(NULL, NULL, (uint64_t)i);
    void *h = start(q->ctx, &d);
    q->slot[atomic_load(&q->tail) % 64] = h;
    atomic_fetch_add(&q->tail, 1);
    stop(h);
  }
  return NULL;
}

static void *proxy_thread(void *arg) {
  handoff *q = arg;
  for (int i = 0; i < q->n; i++) {
    while (atomic_load(&q->head) == atomic_load(&q->tail)) sched_yield();
    void *parent = q->slot[atomic_load(&q->head) % 64];
    atomic_fetch_add(&q->head, 1);
    nt_descr_v5 o = ph_op(0, 1, 1, parent);
    nt_descr_v7 d;
    memcpy(&d, &o, sizeof o);
    void *op = start(q->ctx, &d);
    d = descr(NT_EV_KERNEL_CH, parent);
    void *k = start(q->ctx, &d);
    record(k, NT_ST_KERNEL_CH_STOP, 5);
    stop(k);
    stop(op);
  }
  return NULL;
}

static void case_threads_share_nothing_but_the_ring(void) {
  void *ctx = setup(5, "recorder", "0x4A");
  CHECK(ctx != NULL);
  static handoff q[2];
  pthread_t t[4];
  for (int k = 0; k < 2; k++) {
    q[k].ctx = ctx;
    q[k].n = 2000;
    CHECK(pthread_create(&t[2 * k], NULL, app_thread, &q[k]) == 0);
    CHECK(pthread_create(&t[2 * k + 1], NULL, proxy_thread, &q[k]) == 0);
  }
  for (int i = 0; i < 50; i++) H.set_mask(i & 1 ? OWN_DEFAULT : OWN_DEFAULT & ~NT_EV_P2P);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  H.set_mask(OWN_DEFAULT);
  CHECK(ph_latest(&H) == 0);
  CHECK_EQ_U64(ops_counted(), 4000);
  CHECK_EQ_U64(H.snap->process.late_children, 0);
}

/* Handles NCCL still holds while thousands of newer events go through the
 * thread's ring: an open Coll keeps its pair (its KernelCh gets the
 * recorder's handle as parent), and a Coll stopped at enqueue whose pair
 * went to a newer event is nobody's: its KernelCh reaches the recorder with
 * a NULL parent, as NCCL gives a parent a plugin never got, never with the
 * handle of another of its events. */
static void case_old_handles_are_never_another_events(void) {
  void *ctx = setup(5, "recorder", "0x42"); /* Coll, KernelCh */
  CHECK(ctx != NULL);
  nt_descr_v7 d = coll_descr(NULL, NULL, 1);
  void *open = start(ctx, &d);
  d = coll_descr(NULL, NULL, 2);
  void *enqueued = start(ctx, &d);
  CHECK(open && enqueued);
  stop(enqueued);
  for (int i = 0; i < 4 * 4096 + 64; i++) { /* four times round the ring */
    d = coll_descr(NULL, NULL, 3 + (uint64_t)i);
    stop(start(ctx, &d));
  }
  void *parents[] = {open, enqueued};
  for (int i = 0; i < 2; i++) {
    d = descr(NT_EV_KERNEL_CH, parents[i]);
    d.kernelCh.channelId = (uint8_t)i;
    d.kernelCh.pTimer = 1000;
    void *k = start(ctx, &d);
    record(k, NT_ST_KERNEL_CH_STOP, 2000);
    stop(k);
  }
  stop(open);
  unsigned long long got[4], coll;
  CHECK_EQ_U64(start_parents(NT_EV_KERNEL_CH, got, 4, &coll), 2);
  CHECK(coll != 0 && coll != ~0ull);
  CHECK_EQ_U64(got[0], coll); /* the open Coll: its own handle */
  CHECK_EQ_U64(got[1], 0);    /* the reused one: none, not another's */
}

PH_CHILD(recorder_gets_its_classes_with_its_handles)
PH_CHILD(v7_to_v7_keeps_user_tag_and_phases)
PH_CHILD(v7_kernel_phase_brings_kernel_ch)
PH_CHILD(v7_to_v6_drops_phases)
PH_CHILD(v7_to_v4_converts_hierarchy)
PH_CHILD(v5_to_v3_as_the_v3_shim)
PH_CHILD(v4_to_v4)
PH_CHILD(v3_to_v3)
PH_CHILD(refusing_plugin_leaves_nccltop_working)
PH_CHILD(plugin_asking_nothing_gets_nothing)
PH_CHILD(null_context_is_passed_as_null)
PH_CHILD(missing_plugin_is_logged_once)
PH_CHILD(chaining_nccltop_itself_is_refused)
PH_CHILD(production_copy_is_refused)
PH_CHILD(live_mask_changes_keep_the_union)
PH_CHILD(threads_share_nothing_but_the_ring)
PH_CHILD(old_handles_are_never_another_events)

int main(void) {
  TEST_RUN(recorder_gets_its_classes_with_its_handles);
  TEST_RUN(v7_to_v7_keeps_user_tag_and_phases);
  TEST_RUN(v7_kernel_phase_brings_kernel_ch);
  TEST_RUN(v7_to_v6_drops_phases);
  TEST_RUN(v7_to_v4_converts_hierarchy);
  TEST_RUN(v5_to_v3_as_the_v3_shim);
  TEST_RUN(v4_to_v4);
  TEST_RUN(v3_to_v3);
  TEST_RUN(refusing_plugin_leaves_nccltop_working);
  TEST_RUN(plugin_asking_nothing_gets_nothing);
  TEST_RUN(null_context_is_passed_as_null);
  TEST_RUN(missing_plugin_is_logged_once);
  TEST_RUN(chaining_nccltop_itself_is_refused);
  TEST_RUN(production_copy_is_refused);
  TEST_RUN(live_mask_changes_keep_the_union);
  TEST_RUN(threads_share_nothing_but_the_ring);
  TEST_RUN(old_handles_are_never_another_events);
  char left[64];
  snprintf(left, sizeof left, "/tmp/nccltop-chain-%d.log", (int)getpid());
  unlink(left);
  return TEST_DONE();
}

/* No publisher can fool or exhaust the viewer (issue 17): hostile ZeroMQ
 * publishers written here, next to a real simulated job (`nccltop sim`,
 * real plugin instances), against the real source and model.
 *
 * - a local socket speaking for the job's pid (its host, a huge seq, a
 *   final flag, renamed communicators) is refused; the rank stays live;
 * - --connect sources live in namespaces of their own: they reach no local
 *   process and not each other;
 * - a flood of comm messages (thousands of pids) cannot fill the table: a
 *   job started afterwards is shown, and the flood's entries expire;
 * - thousands of fake full-size publishers: the test process's peak memory
 *   stays near the budget, the model's byte count is what it uses, and a
 *   JSON batch frame stays under its cap;
 * - sequence and clock jumps are refused and counted, a restart is still
 *   one, and the simulator's virtual clock is never refused. */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "testlib.h"
#include "test_diag.h"
#include "scenario_harness.h"
#include "lib/local_view.h"
#include "lib/proc_status.h"
#include "lib/test_publisher.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/feeds/clock.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/feeds/source.h"

/* ---- the job: `nccltop sim` started with fork+exec (this process has
 * ZeroMQ threads by then), leading its own process group ---- */

static pid_t start_job(const char *dir, const char *ranks, bool deterministic) {
  fflush(NULL);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(1);
    if (deterministic)
      execl(nccltop, nccltop, "sim", "--ranks", ranks, "--comms", "1", "--dir", dir,
            "--interval-ms", "50", "--plugin", plugin, "--deterministic", "--iterations", "100000",
            "--linger", "30", "--quiet", (char *)NULL);
    else
      execl(nccltop, nccltop, "sim", "--ranks", ranks, "--comms", "1", "--dir", dir,
            "--interval-ms", "50", "--plugin", plugin, "--duration", "60", "--quiet", (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* A small snapshot of (pid, host). */
static nt_snapshot *small(uint32_t pid, const char *host, uint64_t seq, uint64_t mono_ns) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  s->pid = pid;
  snprintf(s->host, sizeof s->host, "%s", host);
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->wall_ns = mono_ns;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = 0x5eed, .rank = 0, .nranks = 2, .nnodes = 1};
  s->nchannels = 1;
  s->channels[0] = (nt_channel_row){
      .steps = seq, .cur_step = -1, .cur_wait = NT_WAIT_NONE, .progress_age_ns = 1};
  return s;
}

/* ---- the viewer: source and model in this process ---- */

/* Polls (ticking the model) until done(v, arg) or `seconds` pass. */
typedef bool (*view_cond)(local_view *v, const void *arg);
static bool poll_until(local_view *v, view_cond done, const void *arg, double seconds) {
  double end = now_s() + seconds;
  while (now_s() < end) {
    nt_source_poll(v->src, v->m, 20);
    nt_model_tick(v->m, nt_now_s());
    if (done(v, arg)) return true;
  }
  return false;
}

static void poll_for(local_view *v, double seconds) {
  double end = now_s() + seconds;
  while (now_s() < end) {
    nt_source_poll(v->src, v->m, 20);
    nt_model_tick(v->m, nt_now_s());
  }
}

/* The process of `pid` known through its own local endpoint. */
static const nt_model_process *local_proc(local_view *v, uint32_t pid) {
  for (uint32_t i = 0; i < nt_model_nprocesses(v->m); i++) {
    const nt_model_process *p = nt_model_process_at(v->m, i);
    if (p->pid == pid && p->endpoint_pid == pid) return p;
  }
  return NULL;
}

static uint32_t count_pid(local_view *v, uint32_t pid) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(v->m); i++)
    n += nt_model_process_at(v->m, i)->pid == pid;
  return n;
}

static uint32_t from_source(local_view *v, const char *endpoint) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(v->m); i++)
    n += strcmp(nt_model_process_at(v->m, i)->endpoint, endpoint) == 0;
  return n;
}

static bool ranks_live(local_view *v, const void *arg) {
  uint32_t want = *(const uint32_t *)arg, n = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(v->m); i++) {
    const nt_model_process *p = nt_model_process_at(v->m, i);
    n += p->endpoint_pid && p->cur && p->cur->ncomms && !p->ended;
  }
  return n >= want;
}

static int errors_with(local_view *v, const char *source, const char *text) {
  int n = 0;
  for (uint32_t i = 0; i < nt_model_nerrors(v->m); i++) {
    const nt_model_error *e = nt_model_error_at(v->m, i);
    n += strcmp(e->source, source) == 0 && strstr(e->text, text) != NULL;
  }
  return n;
}

/* The name the model shows for a process's first communicator. */
static const char *comm_name(local_view *v, const nt_model_process *p) {
  static nt_model_rank r[4096];
  uint32_t n = nt_model_ranks(v->m, r, 4096);
  for (uint32_t i = 0; i < n; i++)
    if (r[i].proc == p) return r[i].comm_name;
  return NULL;
}

/* A job of `ranks` under a fresh view, up and named; victim: rank 0. */
typedef struct {
  char dir[64];
  pid_t job;
  local_view v;
  void *zctx;
} bench;

static bool bench_start(bench *b, uint32_t ranks) {
  memset(b, 0, sizeof *b);
  snprintf(b->dir, sizeof b->dir, "/tmp/nccltop-hostile-XXXXXX");
  b->job = -1;
  if (!mkdtemp(b->dir)) return false;
  char n[8];
  snprintf(n, sizeof n, "%u", ranks);
  b->job = start_job(b->dir, n, false);
  b->zctx = zmq_ctx_new();
  return b->job > 0 && b->zctx && wait_publishers(b->dir, (int)ranks, 10) &&
         local_view_open(&b->v, b->dir, NULL) && poll_until(&b->v, ranks_live, &ranks, 10);
}

static void bench_stop(bench *b) {
  if (b->v.src) local_view_close(&b->v);
  stop_group(&b->job);
  if (b->zctx) zmq_ctx_term(b->zctx);
  remove_dir(b->dir);
}

/* ---- tests ---- */

/* A local socket (a live pid's <pid>.sock) sends the victim's hello, a
 * renamed communicator, a snapshot with a huge seq and one marked final,
 * all with the victim's pid and host. */
static void a_local_socket_cannot_speak_for_another_pid(void) {
  bench b;
  bool ok = bench_start(&b, 2);
  CHECK(ok);
  pid_t other = tp_idle_child();
  char ep[256];
  void *bad = NULL;
  if (ok && other > 0 && nt_endpoint_for_pid(b.dir, (uint32_t)other, ep, sizeof ep) == 0)
    bad = tp_bind(b.zctx, ep);
  ok = ok && bad && tp_subscribed(bad, b.v.src, b.v.m);
  CHECK(ok);
  const nt_model_process *victim = NULL;
  for (uint32_t i = 0; ok && i < nt_model_nprocesses(b.v.m) && !victim; i++)
    if (nt_model_process_at(b.v.m, i)->endpoint_pid) victim = nt_model_process_at(b.v.m, i);
  CHECK(victim != NULL);
  if (ok && victim) {
    uint32_t pid = victim->pid;
    char host[NT_MAX_HOST + 1], name_before[NT_MAX_NAME * 4 + 1];
    snprintf(host, sizeof host, "%s", victim->host);
    const char *nm = comm_name(&b.v, victim);
    snprintf(name_before, sizeof name_before, "%s", nm ? nm : "");
    uint64_t hash = victim->cur->comms[0].comm_hash, seq_before = victim->cur->seq;
    nt_snapshot *s = small(pid, host, 1ull << 60, victim->cur->mono_ns + 1000);
    CHECK(s != NULL);
    for (int round = 0; s && round < 3; round++) { /* said once, however often sent */
      CHECK(tp_send_hello(bad, pid, host, "evil") == 0);
      CHECK(tp_send_comm(bad, pid, hash, "evil") == 0);
      s->final = 0;
      CHECK(tp_send_snapshot(bad, s) == 0);
      s->final = 1;
      s->seq++;
      CHECK(tp_send_snapshot(bad, s) == 0);
    }
    nt_snapshot_free(s);
    poll_for(&b.v, 1.5);
    victim = local_proc(&b.v, pid);
    CHECK(victim && !victim->ended && !victim->stale);
    CHECK(victim && victim->cur->seq > seq_before && victim->cur->seq < 1000000);
    CHECK(victim && victim->cur->channels[0].steps < 1000000000);
    CHECK(victim && !(victim->have_hello && strcmp(victim->hello.nccl_version, "evil") == 0));
    nm = victim ? comm_name(&b.v, victim) : NULL;
    CHECK(nm && strcmp(nm, name_before) == 0);
    CHECK(count_pid(&b.v, pid) == 1); /* and no second entry for it */
    CHECK_EQ_U64(nt_model_refused(b.v.m, NT_REFUSE_PID), 12);
    CHECK(errors_with(&b.v, ep, "(pid: pid ") == 1);
    /* The hostile socket's own pid is its to speak for. */
    s = small((uint32_t)other, "hostile", 5, 1000);
    CHECK(s && tp_send_snapshot(bad, s) == 0);
    nt_snapshot_free(s);
    poll_for(&b.v, 0.3);
    CHECK(local_proc(&b.v, (uint32_t)other) != NULL);
  }
  if (bad) zmq_close(bad);
  tp_reap(other);
  bench_stop(&b);
}

static const nt_model_process *proc_of(local_view *v, const char *endpoint, uint32_t pid) {
  for (uint32_t i = 0; i < nt_model_nprocesses(v->m); i++) {
    const nt_model_process *p = nt_model_process_at(v->m, i);
    if (p->pid == pid && strcmp(p->endpoint, endpoint) == 0) return p;
  }
  return NULL;
}

/* Two --connect endpoints speak for the job's pid and host: one with a
 * huge seq, a final flag and a renamed communicator, the other plainly. */
static void connect_sources_live_in_namespaces_of_their_own(void) {
  bench b;
  bool ok = bench_start(&b, 2);
  CHECK(ok);
  char ea[128], eb[128];
  snprintf(ea, sizeof ea, "ipc://%s/relay-a", b.dir); /* not <pid>.sock: never scanned */
  snprintf(eb, sizeof eb, "ipc://%s/relay-b", b.dir);
  void *ra = ok ? tp_bind(b.zctx, ea) : NULL, *rb = ok ? tp_bind(b.zctx, eb) : NULL;
  ok = ok && ra && rb && nt_source_connect(b.v.src, b.v.m, ea) == 0 &&
       nt_source_connect(b.v.src, b.v.m, eb) == 0 && tp_subscribed(ra, b.v.src, b.v.m) &&
       tp_subscribed(rb, b.v.src, b.v.m);
  CHECK(ok);
  const nt_model_process *victim = NULL;
  for (uint32_t i = 0; ok && i < nt_model_nprocesses(b.v.m) && !victim; i++)
    if (nt_model_process_at(b.v.m, i)->endpoint_pid) victim = nt_model_process_at(b.v.m, i);
  CHECK(victim != NULL);
  if (ok && victim) {
    uint32_t pid = victim->pid;
    char host[NT_MAX_HOST + 1];
    snprintf(host, sizeof host, "%s", victim->host);
    uint64_t hash = victim->cur->comms[0].comm_hash, seq_before = victim->cur->seq;
    const char *nm = comm_name(&b.v, victim);
    char name_before[NT_MAX_NAME * 4 + 1];
    snprintf(name_before, sizeof name_before, "%s", nm ? nm : "");
    nt_snapshot *a = small(pid, host, 900, victim->cur->mono_ns + 1000);
    nt_snapshot *c = small(pid, host, 3, 5000);
    CHECK(a && c);
    if (a && c) {
      a->final = 1;
      a->comms[0].comm_hash = hash;
      CHECK(tp_send_comm(ra, pid, hash, "evil") == 0 && tp_send_snapshot(ra, a) == 0);
      CHECK(tp_send_snapshot(rb, c) == 0);
    }
    poll_for(&b.v, 1.0);
    victim = local_proc(&b.v, pid);
    const nt_model_process *pa = proc_of(&b.v, ea, pid), *pb = proc_of(&b.v, eb, pid);
    CHECK(victim && !victim->ended && victim->cur->seq > seq_before);
    nm = victim ? comm_name(&b.v, victim) : NULL;
    CHECK(nm && strcmp(nm, name_before) == 0);
    CHECK(count_pid(&b.v, pid) == 3); /* three namespaces, three processes */
    CHECK(pa && pa->cur && pa->ended && pa->cur->seq == 900 && pa->endpoint_pid == 0);
    CHECK(pb && pb->cur && !pb->ended && pb->cur->seq == 3 && pb->cur->channels[0].steps == 3);
    const char *na = pa ? comm_name(&b.v, pa) : NULL, *nb = pb ? comm_name(&b.v, pb) : NULL;
    CHECK(na && nb && strcmp(na, "evil") == 0 && strcmp(nb, "") == 0);
    /* The job's endpoint going away ends no --connect process. */
    if (victim) nt_model_endpoint_gone(b.v.m, victim->endpoint);
    nt_model_endpoint_gone(b.v.m, eb); /* a --connect endpoint is never ended by the scan */
    CHECK(pb && !pb->ended);
    CHECK(victim && victim->ended);
    CHECK_EQ_U64(nt_model_total_refused(b.v.m), 0);
    nt_snapshot_free(a);
    nt_snapshot_free(c);
  }
  if (ra) zmq_close(ra);
  if (rb) zmq_close(rb);
  bench_stop(&b);
}

static bool unseen_gone(local_view *v, const void *arg) {
  return from_source(v, arg) == 0;
}

/* 4,400 comm messages, each for another pid, from one --connect socket and
 * one local socket; then a job starts. */
static void a_comm_flood_cannot_fill_the_table(void) {
  char dir[] = "/tmp/nccltop-flood-XXXXXX", ea[128], el[256];
  CHECK(mkdtemp(dir) != NULL);
  local_view v;
  void *zctx = zmq_ctx_new();
  pid_t other = tp_idle_child(), job = -1;
  snprintf(ea, sizeof ea, "ipc://%s/flood", dir);
  bool ok = zctx && other > 0 && local_view_open(&v, dir, NULL) &&
            nt_endpoint_for_pid(dir, (uint32_t)other, el, sizeof el) == 0;
  void *fc = ok ? tp_bind(zctx, ea) : NULL, *fl = ok ? tp_bind(zctx, el) : NULL;
  ok = ok && fc && fl && nt_source_connect(v.src, v.m, ea) == 0 && tp_subscribed(fc, v.src, v.m) &&
       tp_subscribed(fl, v.src, v.m);
  CHECK(ok);
  const uint32_t flood = 4400;
  /* When the entries kept (the first NT_MODEL_MAX_PER_CONNECT; the rest
   * are refused) had all arrived: they may expire NT_MODEL_UNSEEN_KEEP_S
   * after that at the earliest, however long the rest of the flood takes. */
  double flooded = 0;
  for (uint32_t i = 0; ok && i < flood; i++) {
    CHECK(tp_send_comm(fc, 100000 + i, 0xf100d + i, "flood") == 0);
    CHECK(tp_send_comm(fl, 200000 + i, 0xf100d + i, "flood") == 0);
    if (i % 200 == 199) {
      nt_source_poll(v.src, v.m, 5);
      if (!flooded && from_source(&v, ea) == NT_MODEL_MAX_PER_CONNECT) flooded = now_s();
    }
  }
  for (int i = 0; ok && i < 100 && nt_model_total_messages(v.m) < 2 * flood; i++) {
    nt_source_poll(v.src, v.m, 20);
    if (!flooded && from_source(&v, ea) == NT_MODEL_MAX_PER_CONNECT) flooded = now_s();
  }
  CHECK_EQ_U64(nt_model_total_messages(v.m), 2 * flood);
  CHECK(from_source(&v, ea) == NT_MODEL_MAX_PER_CONNECT);
  CHECK_EQ_U64(nt_model_refused(v.m, NT_REFUSE_SOURCE_FULL), flood - NT_MODEL_MAX_PER_CONNECT);
  CHECK_EQ_U64(nt_model_refused(v.m, NT_REFUSE_PID), flood);
  CHECK(nt_model_nprocesses(v.m) == NT_MODEL_MAX_PER_CONNECT);
  /* A job started after the flood is shown. */
  uint32_t ranks = 2;
  job = ok ? start_job(dir, "2", false) : -1;
  CHECK(job > 0 && poll_until(&v, ranks_live, &ranks, 15));
  /* The flood's entries, which never sent a snapshot, expire; the job's
   * ranks stay. */
  CHECK(poll_until(&v, unseen_gone, ea, NT_MODEL_UNSEEN_KEEP_S + 15));
  double took = now_s() - flooded;
  CHECK(took > NT_MODEL_UNSEEN_KEEP_S - 0.5); /* not before their time */
  CHECK(ranks_live(&v, &ranks) && nt_model_nprocesses(v.m) == 2);
  printf("    flood: %u refused, expired after %.1f s more, job shown\n",
         (unsigned)nt_model_total_refused(v.m), took);
  stop_group(&job);
  if (fc) zmq_close(fc);
  if (fl) zmq_close(fl);
  if (v.src) local_view_close(&v);
  if (zctx) zmq_ctx_term(zctx);
  tp_reap(other);
  remove_dir(dir);
}

/* Every table at its limit: 1.4 MB encoded, 1.4 MB decoded. */
static nt_snapshot *full_size(void) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "fake");
  s->seq = 1;
  s->interval_ms = 100;
  s->mono_ns = 1000;
  s->ncomms = NT_MAX_COMMS;
  s->nproxy = NT_MAX_PROXY_THREADS;
  s->nchannels = NT_MAX_CHANNEL_ROWS;
  s->nkernels = NT_MAX_KERNEL_ROWS;
  s->nops = NT_MAX_OP_ROWS;
  s->nphases = NT_MAX_PHASES;
  s->noplog = NT_MAX_OPLOG;
  s->nseq = NT_MAX_SEQ_ROWS;
  s->nnet = NT_MAX_NET_ROWS;
  for (uint32_t i = 0; i < s->ncomms; i++) s->comms[i].comm_hash = 0xc0ffee00 + i;
  for (uint32_t i = 0; i < s->nchannels; i++) {
    s->channels[i].comm_index = (uint16_t)(i % NT_MAX_COMMS);
    s->channels[i].channel = (uint8_t)(i / NT_MAX_COMMS);
    s->channels[i].progress_age_ns = UINT64_MAX;
    s->channels[i].cur_step = -1;
  }
  for (uint32_t i = 0; i < s->nphases; i++) {
    s->phases[i].id = (uint8_t)(i + 1);
    snprintf(s->phases[i].name, sizeof s->phases[i].name, "phase%u", i);
  }
  for (uint32_t i = 0; i < s->nnet; i++) s->net[i].type = NT_NET_SOCKET;
  s->nvariants = NT_MAX_VARIANTS; /* 1.4 */
  for (uint32_t i = 0; i < s->nvariants; i++) {
    s->variants[i].id = (uint8_t)(i + 1);
    snprintf(s->variants[i].name, sizeof s->variants[i].name, "AllReduce_AGxLL_R%u", i);
  }
  return s;
}

/* VmHWM or VmRSS of this process, bytes. */
static double vm(const char *key) {
  return proc_status_kb(getpid(), key) * 1024.0;
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif

/* Up to 4096 fake processes, each sending a full-size snapshot, through one
 * --connect socket: bounded in time (30 s of sending at most). */
static void fake_full_size_publishers_cost_a_bounded_budget(void) {
  const size_t budget = 256u << 20;
  char dir[] = "/tmp/nccltop-fakes-XXXXXX", ea[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(ea, sizeof ea, "ipc://%s/fakes", dir);
  local_view v;
  void *zctx = zmq_ctx_new();
  nt_snapshot *s = full_size();
  bool ok = zctx && s && local_view_open(&v, dir, NULL);
  if (ok) nt_model_set_budget(v.m, budget);
  void *pub = ok ? tp_bind(zctx, ea) : NULL;
  ok = ok && pub && nt_source_connect(v.src, v.m, ea) == 0 && tp_subscribed(pub, v.src, v.m);
  CHECK(ok);
  poll_for(&v, 0.1);
  double hwm0 = vm("VmHWM"), rss0 = vm("VmRSS");
  size_t bytes0 = ok ? nt_model_bytes(v.m) : 0;
  double end = now_s() + 30;
  uint32_t sent = 0;
  uint64_t msgs0 = ok ? nt_model_total_messages(v.m) : 0;
  for (; ok && sent < 4096 && now_s() < end; sent++) {
    s->pid = 10000 + sent;
    CHECK(tp_send_snapshot(pub, s) == 0);
    /* In step: what ZeroMQ queues is not the model's to answer for. */
    for (int i = 0; i < 400 && nt_model_total_messages(v.m) < msgs0 + sent + 1; i++)
      nt_source_poll(v.src, v.m, 5);
  }
  for (int i = 0; ok && i < 500 && nt_model_total_messages(v.m) < sent; i++)
    nt_source_poll(v.src, v.m, 20);
  double hwm = vm("VmHWM"), rss = vm("VmRSS");
  size_t bytes = ok ? nt_model_bytes(v.m) : 0;
  printf("    %u full-size fakes sent, %u kept, %llu refused for memory; model %.1f MiB "
         "(budget %zu MiB), RSS %.1f -> %.1f MiB, VmHWM %.1f -> %.1f MiB%s\n",
         sent, ok ? nt_model_nprocesses(v.m) : 0,
         ok ? (unsigned long long)nt_model_refused(v.m, NT_REFUSE_MEMORY) : 0ull,
         (double)bytes / (1 << 20), budget >> 20, rss0 / (1 << 20), rss / (1 << 20),
         hwm0 / (1 << 20), hwm / (1 << 20), UNDER_ASAN ? " (ASan)" : "");
  CHECK(sent >= 512);
  CHECK(bytes <= budget / 2 + bytes0); /* one source: half the budget */
  CHECK(ok && nt_model_refused(v.m, NT_REFUSE_MEMORY) > 0);
  /* What the model says it holds is what the process grew by. */
  double grew = rss - rss0;
  if (!UNDER_ASAN) {
    CHECK(hwm - hwm0 < (double)budget / 2 + (64 << 20));
    CHECK(grew > 0.8 * (double)(bytes - bytes0) &&
          grew < 1.2 * (double)(bytes - bytes0) + (16 << 20));
  } else { /* redzones and the quarantine: only bounded */
    CHECK(hwm - hwm0 < (double)budget + (320 << 20));
  }
  /* The attack took only its source's half: a local process that starts
   * now, with snapshots as big, is kept. */
  pid_t later = tp_idle_child();
  char lep[256];
  void *lp = NULL;
  if (ok && later > 0 && nt_endpoint_for_pid(dir, (uint32_t)later, lep, sizeof lep) == 0)
    lp = tp_bind(zctx, lep);
  CHECK(lp && tp_subscribed(lp, v.src, v.m));
  s->pid = (uint32_t)later;
  CHECK(lp && tp_send_snapshot(lp, s) == 0);
  for (int i = 0; lp && i < 200 && !local_proc(&v, (uint32_t)later); i++)
    nt_source_poll(v.src, v.m, 20);
  const nt_model_process *lq = local_proc(&v, (uint32_t)later);
  CHECK(lq && lq->cur && lq->cur->nchannels == NT_MAX_CHANNEL_ROWS);
  if (lp) zmq_close(lp);
  tp_reap(later);
  /* A JSON batch frame of all that stays under its cap, and says what it
   * left out. */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  v.o.json = true;
  CHECK(f && ok && nt_batch_print(f, v.m, test_diag(), &v.o, nt_now_s()) == 0);
  if (f) fclose(f);
  cJSON *frame = text ? cJSON_Parse(text) : NULL;
  CHECK(frame != NULL);
  const cJSON *left = frame ? get(frame, "left_out") : NULL;
  printf("    JSON frame: %.1f MiB, left out %.0f processes, %.0f ranks\n", (double)len / (1 << 20),
         left ? num(left, "processes") : -1, left ? num(left, "ranks") : -1);
  CHECK(len < (64u << 20));
  CHECK(left && num(left, "processes") + num(left, "ranks") > 0);
  CHECK(frame && num(frame, "memory_bytes") == (double)nt_model_bytes(v.m));
  CHECK(frame && num(get(frame, "refused_by"), "memory") > 0);
  cJSON_Delete(frame);
  free(text);
  nt_snapshot_free(s);
  if (pub) zmq_close(pub);
  if (v.src) local_view_close(&v);
  if (zctx) zmq_ctx_term(zctx);
  remove_dir(dir);
}

static uint64_t mono_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool seq_is(local_view *v, const void *arg) {
  const uint64_t *want = arg;
  const nt_model_process *p = local_proc(v, (uint32_t)want[0]);
  return p && p->cur && p->cur->seq == want[1];
}

/* A publisher of its own pid (a local socket) whose seq, then clock, jump
 * ahead; then a restart: seq back to 1, clock on. */
static void seq_and_clock_jumps_are_refused_and_restarts_kept(void) {
  char dir[] = "/tmp/nccltop-jump-XXXXXX", ep[256];
  CHECK(mkdtemp(dir) != NULL);
  local_view v;
  void *zctx = zmq_ctx_new();
  pid_t me = tp_idle_child();
  bool ok = zctx && me > 0 && local_view_open(&v, dir, NULL) &&
            nt_endpoint_for_pid(dir, (uint32_t)me, ep, sizeof ep) == 0;
  void *pub = ok ? tp_bind(zctx, ep) : NULL;
  ok = ok && pub && tp_subscribed(pub, v.src, v.m);
  CHECK(ok);
  nt_snapshot *s = small((uint32_t)me, "node", 1, mono_now_ns());
  CHECK(s != NULL);
  if (ok && s) {
    uint64_t want[2] = {(uint64_t)me, 2};
    CHECK(tp_send_snapshot(pub, s) == 0);
    s->seq = 2, s->mono_ns = mono_now_ns();
    CHECK(tp_send_snapshot(pub, s) == 0);
    CHECK(poll_until(&v, seq_is, want, 3));
    s->seq = 2 + 1000000000ull; /* a billion intervals in no time */
    s->mono_ns = mono_now_ns();
    CHECK(tp_send_snapshot(pub, s) == 0);
    s->seq = 3;
    s->mono_ns = mono_now_ns() + 86400ull * 1000000000ull; /* a day ahead */
    CHECK(tp_send_snapshot(pub, s) == 0);
    s->seq = 3, s->mono_ns = mono_now_ns();
    CHECK(tp_send_snapshot(pub, s) == 0);
    want[1] = 3;
    CHECK(poll_until(&v, seq_is, want, 3));
    const nt_model_process *p = local_proc(&v, (uint32_t)me);
    CHECK_EQ_U64(nt_model_refused(v.m, NT_REFUSE_SEQ_JUMP), 1);
    CHECK_EQ_U64(nt_model_refused(v.m, NT_REFUSE_CLOCK_JUMP), 1);
    CHECK(p && p->lost_messages == 0 && p->restarts == 0);
    CHECK(errors_with(&v, ep, "seq_jump") == 1 && errors_with(&v, ep, "clock_jump") == 1);
    /* A new incarnation: seq starts over, its clock went on. */
    s->seq = 1, s->mono_ns = mono_now_ns(), s->channels[0].steps = 77;
    CHECK(tp_send_snapshot(pub, s) == 0);
    want[1] = 1;
    CHECK(poll_until(&v, seq_is, want, 3));
    CHECK(p && p->restarts == 1 && p->cur->channels[0].steps == 77);
    /* A burst of messages lost (the publisher's queue was full) is no
     * jump: 300 sequence numbers at once are within the slack. */
    nap_ms(300);
    s->seq = 301, s->mono_ns = mono_now_ns();
    CHECK(tp_send_snapshot(pub, s) == 0);
    want[1] = 301;
    CHECK(poll_until(&v, seq_is, want, 3));
    CHECK(p && p->lost_messages == 299);
    CHECK_EQ_U64(nt_model_total_refused(v.m), 2);
  }
  nt_snapshot_free(s);
  if (pub) zmq_close(pub);
  if (v.src) local_view_close(&v);
  if (zctx) zmq_ctx_term(zctx);
  tp_reap(me);
  remove_dir(dir);
}

/* The simulator in deterministic mode: the plugin reads a virtual clock. */
static void the_simulators_virtual_clock_is_never_refused(void) {
  char dir[] = "/tmp/nccltop-virt-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  pid_t job = start_job(dir, "2", true);
  local_view v = {0};
  uint32_t ranks = 2;
  bool ok = job > 0 && wait_publishers(dir, 2, 10) && local_view_open(&v, dir, NULL) &&
            poll_until(&v, ranks_live, &ranks, 10);
  CHECK(ok);
  poll_for(&v, 2.0);
  uint64_t snaps = 0;
  for (uint32_t i = 0; ok && i < nt_model_nprocesses(v.m); i++)
    snaps += nt_model_process_at(v.m, i)->messages;
  CHECK(snaps > 10);
  CHECK(ok && nt_model_total_refused(v.m) == 0);
  stop_group(&job);
  if (v.src) local_view_close(&v);
  remove_dir(dir);
}

int main(void) {
  scenario_init();
  signal(SIGPIPE, SIG_IGN);
  /* First: its memory figures need a heap no other test has grown. */
  TEST_RUN(fake_full_size_publishers_cost_a_bounded_budget);
  TEST_RUN(a_local_socket_cannot_speak_for_another_pid);
  TEST_RUN(connect_sources_live_in_namespaces_of_their_own);
  TEST_RUN(seq_and_clock_jumps_are_refused_and_restarts_kept);
  TEST_RUN(the_simulators_virtual_clock_is_never_refused);
  TEST_RUN(a_comm_flood_cannot_fill_the_table);
  return TEST_DONE();
}

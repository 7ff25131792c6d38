/* The live source through real ZeroMQ sockets: XPUB publishers in this test
 * bind <pid>.sock in a private directory and send good and hostile messages;
 * the source reports each bad one with its reason, keeps every good
 * publisher's data, drops dead publishers, subscribes to --connect
 * endpoints and never blocks past its timeout. */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "testlib.h"
#include "lib/local_view.h"
#include "lib/test_publisher.h"
#include "../monitor/commands/cli.h"
#include "../monitor/feeds/clock.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/feeds/source.h"

#define HASH 0x1234abcd5678ef00ull

static nt_snapshot *snap(uint32_t pid, const char *host, uint64_t seq, uint64_t steps) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "%s", host);
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = seq * 100000000ull;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = 0, .nranks = 2, .nnodes = 1};
  s->nchannels = 1;
  s->channels[0] = (nt_channel_row){
      .steps = steps, .cur_step = -1, .cur_wait = NT_WAIT_NONE, .progress_age_ns = 5};
  return s;
}

/* Encodes into a static buffer; returns the length (0 on failure). */
static size_t encode(const nt_snapshot *s, uint8_t *buf, size_t cap) {
  return s ? nt_snapshot_encode(s, buf, cap) : 0;
}

static void remove_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

static const nt_model_process *find_pid(nt_model *m, uint32_t pid) {
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++)
    if (nt_model_process_at(m, i)->pid == pid) return nt_model_process_at(m, i);
  return NULL;
}

static int count_errors(nt_model *m, const char *source, const char *text, bool prefix) {
  int n = 0;
  for (uint32_t i = 0; i < nt_model_nerrors(m); i++) {
    const nt_model_error *e = nt_model_error_at(m, i);
    bool t = prefix ? strncmp(e->text, text, strlen(text)) == 0 : strcmp(e->text, text) == 0;
    n += t && (!source || strcmp(e->source, source) == 0);
  }
  return n;
}

static void bad_messages_are_reported_and_good_publishers_kept(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX", bad_ep[256];
  CHECK(mkdtemp(dir) != NULL);
  pid_t other = tp_idle_child(); /* a live pid to name the second publisher's socket */
  CHECK(other > 0);
  void *zctx = zmq_ctx_new();
  void *good = tp_bind_pid(zctx, dir, getpid()), *bad = tp_bind_pid(zctx, dir, other);
  nt_endpoint_for_pid(dir, (uint32_t)other, bad_ep, sizeof bad_ep);
  local_view v;
  bool opened = local_view_open(&v, dir, NULL);
  nt_model *m = v.m;
  nt_source *src = v.src;
  bool ok = good && bad && opened && tp_subscribed(good, src, m) && tp_subscribed(bad, src, m);
  static uint8_t buf[1 << 16], v9[1 << 16];
  nt_snapshot *g1 = snap((uint32_t)getpid(), "good", 1, 42);
  nt_snapshot *b1 = snap((uint32_t)other, "other", 1, 7);
  size_t n = encode(g1, buf, sizeof buf);
  if (ok && n) {
    ok = tp_send_hello(good, (uint32_t)getpid(), "good", "2.28.9") == 0 &&
         tp_send_comm(good, (uint32_t)getpid(), HASH, "world") == 0 &&
         tp_send2(good, NT_TOPIC_SNAPSHOT, buf, n) == 0;
    tp_send2(bad, NT_TOPIC_SNAPSHOT, "garbage", 7);
    tp_send2(bad, NT_TOPIC_SNAPSHOT, buf, n / 2); /* truncated */
    memcpy(v9, buf, n);
    v9[4] = 9; /* major version 9 */
    tp_send2(bad, NT_TOPIC_SNAPSHOT, v9, n);
    zmq_send(bad, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), ZMQ_SNDMORE);
    zmq_send(bad, "a", 1, ZMQ_SNDMORE);
    zmq_send(bad, "b", 1, 0);                                       /* three frames */
    zmq_send(bad, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), 0); /* one frame */
    tp_send2(bad, "nccltop.bogus\x1b[2J", "x", 1);
    tp_send2(bad, "nccltop.future", "x", 1); /* a newer publisher's topic: skipped, no error */
    tp_send2(bad, NT_TOPIC_HELLO, "{\"v\":\"1.0\"", 10);
    size_t bn = encode(b1, buf, sizeof buf); /* and then a good one from the same publisher */
    tp_send2(bad, NT_TOPIC_SNAPSHOT, buf, bn);
    for (int i = 0; i < 250 && (nt_model_nerrors(m) < 7 || nt_model_nprocesses(m) < 2); i++)
      nt_source_poll(src, m, 20);
  }
  CHECK(ok);
  CHECK_EQ_U64(nt_model_total_bad(m), 7);
  CHECK(nt_model_nerrors(m) == 7);
  CHECK(count_errors(m, bad_ep, "snapshot: ", true) == 3);
  CHECK(count_errors(m, bad_ep, "snapshot: not an nccltop snapshot", false) == 1);
  CHECK(count_errors(m, bad_ep,
                     "snapshot: unsupported protocol major version 9 (this nccltop reads 1)",
                     false) == 1);
  CHECK(count_errors(m, bad_ep, "message with 3 frames, expected 2", false) == 1);
  CHECK(count_errors(m, bad_ep, "message with 1 frame, expected 2", false) == 1);
  CHECK(count_errors(m, bad_ep, "unknown topic 'nccltop.bogus\\x1B[2J'", false) == 1);
  CHECK(count_errors(m, bad_ep, "hello: ", true) == 1);
  /* The good publisher's data is all there, with its metadata. */
  const nt_model_process *p = find_pid(m, (uint32_t)getpid());
  CHECK(p && p->cur && p->have_hello);
  CHECK_EQ_U64(p->cur->channels[0].steps, 42);
  CHECK_STR(p->hello.nccl_version, "2.28.9");
  nt_model_rank r[4];
  CHECK(nt_model_ranks(m, r, 4) == 2);
  int named = 0;
  for (int i = 0; i < 2; i++) named += strcmp(r[i].comm_name, "world") == 0;
  CHECK(named == 1);
  /* So is the hostile publisher's one good message. */
  const nt_model_process *q = find_pid(m, (uint32_t)other);
  CHECK(q && q->cur && q->cur->channels[0].steps == 7);
  /* And both keep working after the bad input. */
  g1->seq = 2, g1->channels[0].steps = 43;
  b1->seq = 2, b1->channels[0].steps = 8;
  n = encode(g1, buf, sizeof buf);
  CHECK(tp_send2(good, NT_TOPIC_SNAPSHOT, buf, n) == 0);
  n = encode(b1, buf, sizeof buf);
  CHECK(tp_send2(bad, NT_TOPIC_SNAPSHOT, buf, n) == 0);
  for (int i = 0; i < 250 && (p->cur->seq != 2 || q->cur->seq != 2); i++)
    nt_source_poll(src, m, 20);
  CHECK_EQ_U64(p->cur->channels[0].steps, 43);
  CHECK_EQ_U64(q->cur->channels[0].steps, 8);
  CHECK_EQ_U64(p->lost_messages, 0);
  CHECK_EQ_U64(nt_model_total_bad(m), 7);
  nt_snapshot_free(g1);
  nt_snapshot_free(b1);
  local_view_close(&v);
  zmq_close(good);
  zmq_close(bad);
  zmq_ctx_term(zctx);
  tp_reap(other);
  remove_dir(dir);
}

static void a_dead_publisher_is_dropped_and_its_data_kept_as_ended(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  pid_t child = tp_idle_child();
  CHECK(child > 0);
  void *zctx = zmq_ctx_new();
  void *pub = tp_bind_pid(zctx, dir, child);
  local_view v;
  bool opened = local_view_open(&v, dir, NULL);
  nt_model *m = v.m;
  nt_source *src = v.src;
  bool ok = pub && opened && tp_subscribed(pub, src, m);
  static uint8_t buf[1 << 16];
  nt_snapshot *s = snap((uint32_t)child, "node", 1, 5);
  size_t n = encode(s, buf, sizeof buf);
  ok = ok && n && tp_send2(pub, NT_TOPIC_SNAPSHOT, buf, n) == 0;
  for (int i = 0; ok && i < 250 && nt_model_nprocesses(m) == 0; i++) nt_source_poll(src, m, 20);
  CHECK(ok);
  CHECK(nt_source_nendpoints(src) == 1);
  tp_reap(child); /* its socket file stays: only the pid tells */
  for (int i = 0; i < 100 && nt_source_nendpoints(src) == 1; i++) nt_source_poll(src, m, 20);
  CHECK(nt_source_nendpoints(src) == 0);
  const nt_model_process *p = find_pid(m, (uint32_t)child);
  CHECK(p && p->ended);
  CHECK(p->cur && p->cur->channels[0].steps == 5); /* still visible */
  nt_snapshot_free(s);
  local_view_close(&v);
  zmq_close(pub);
  zmq_ctx_term(zctx);
  remove_dir(dir);
}

static void connect_endpoints_are_subscribed_too(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX", relay[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(relay, sizeof relay, "ipc://%s/relay", dir); /* not a <pid>.sock name */
  void *zctx = zmq_ctx_new();
  void *pub = tp_bind(zctx, relay);
  local_view v;
  bool opened = local_view_open(&v, dir, relay);
  nt_model *m = v.m;
  nt_source *src = v.src;
  bool ok = pub && opened && tp_subscribed(pub, src, m);
  static uint8_t buf[1 << 16];
  nt_snapshot *s = snap(4000001, "remote-node", 1, 9); /* a pid that is not ours */
  size_t n = encode(s, buf, sizeof buf);
  ok = ok && n && tp_send2(pub, NT_TOPIC_SNAPSHOT, buf, n) == 0;
  for (int i = 0; ok && i < 250 && nt_model_nprocesses(m) == 0; i++) nt_source_poll(src, m, 20);
  CHECK(ok);
  const nt_model_process *p = find_pid(m, 4000001);
  CHECK(p && p->cur && p->cur->channels[0].steps == 9);
  CHECK_STR(p->host, "remote-node");
  for (int i = 0; i < 60; i++) nt_source_poll(src, m, 20); /* past a directory scan */
  CHECK(nt_source_nendpoints(src) == 1 && !p->ended);
  nt_snapshot_free(s);
  local_view_close(&v);
  zmq_close(pub);
  zmq_ctx_term(zctx);
  remove_dir(dir);
}

/* A --connect address nobody answers on: said once, not a bad message. */
static void a_silent_connect_endpoint_is_noted_once(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX", nobody[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(nobody, sizeof nobody, "ipc://%s/nobody", dir);
  local_view v;
  bool opened = local_view_open(&v, dir, nobody);
  nt_model *m = v.m;
  nt_source *src = v.src;
  CHECK(opened);
  double t0 = nt_now_s();
  while (nt_now_s() - t0 < 2.0) nt_source_poll(src, m, 50);
  CHECK(nt_model_nerrors(m) == 0); /* not yet: a publisher may be slow to answer */
  while (nt_now_s() - t0 < 5.5) nt_source_poll(src, m, 50);
  CHECK(nt_model_nerrors(m) == 1); /* once, however long it stays silent */
  CHECK_STR(nt_model_error_at(m, 0)->source, nobody);
  /* the same words as many endpoints' line, naming a name that does not
   * resolve (newcomer note #26: --hosts nosuchhost.invalid gave no hint) */
  CHECK(strstr(nt_model_error_at(m, 0)->text,
               "nothing received in 3 s: no relay or publisher there, a name that does not "
               "resolve, or not reachable") != NULL);
  CHECK_EQ_U64(nt_model_total_bad(m), 0);
  CHECK(nt_source_nendpoints(src) == 1); /* still connected, still trying */
  local_view_close(&v);
  remove_dir(dir);
}

static void a_refused_directory_is_noted_once_not_as_a_bad_message(void) {
  char base[] = "/tmp/nccltop-src-XXXXXX", dir[128];
  CHECK(mkdtemp(base) != NULL);
  snprintf(dir, sizeof dir, "%s/open", base);
  CHECK(mkdir(dir, 0755) == 0 && chmod(dir, 0755) == 0);
  local_view v;
  bool opened = local_view_open(&v, dir, NULL);
  nt_model *m = v.m;
  nt_source *src = v.src;
  CHECK(opened);
  double t0 = nt_now_s();
  while (nt_now_s() - t0 < 1.3) nt_source_poll(src, m, 50); /* two scans */
  CHECK(nt_model_nerrors(m) == 1);
  CHECK(strstr(nt_model_error_at(m, 0)->text, "accessible to other users") != NULL);
  CHECK_EQ_U64(nt_model_total_bad(m), 0);
  local_view_close(&v);
  remove_dir(base);
}

/* Not a speed test: a generous bound that catches a poll that blocks. */
static void poll_returns_within_its_timeout(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  void *zctx = zmq_ctx_new();
  void *pub = tp_bind_pid(zctx, dir, getpid()); /* connected, silent */
  local_view v;
  bool opened = local_view_open(&v, dir, NULL);
  nt_model *m = v.m;
  nt_source *src = v.src;
  CHECK(pub && opened && tp_subscribed(pub, src, m));
  double t0 = nt_now_s();
  int got = nt_source_poll(src, m, 100);
  double took = nt_now_s() - t0;
  CHECK(got == 0);
  CHECK(took < 2.0);
  t0 = nt_now_s();
  CHECK(nt_source_poll(src, m, 0) == 0);
  CHECK(nt_source_poll(src, m, -1) == 0); /* never "forever" */
  CHECK(nt_now_s() - t0 < 2.0);
  local_view_close(&v);
  zmq_close(pub);
  zmq_ctx_term(zctx);
  remove_dir(dir);
}

int main(void) {
  TEST_RUN(bad_messages_are_reported_and_good_publishers_kept);
  TEST_RUN(a_dead_publisher_is_dropped_and_its_data_kept_as_ended);
  TEST_RUN(connect_endpoints_are_subscribed_too);
  TEST_RUN(a_silent_connect_endpoint_is_noted_once);
  TEST_RUN(a_refused_directory_is_noted_once_not_as_a_bad_message);
  TEST_RUN(poll_returns_within_its_timeout);
  return TEST_DONE();
}

/* The viewer's model, and its live source fed through real ZeroMQ sockets
 * with good and hostile publishers. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "testlib.h"
#include "../tui/viewer.h"

static nt_snapshot *snap(uint32_t pid, uint64_t seq, uint64_t mono_ns, uint64_t steps) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node\x1b[2J");
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = 0xc0ffee, .rank = 1, .nranks = 2, .nnodes = 1};
  s->nproxy = 1;
  s->proxy[0] = (nt_proxy_row){
      .tid = 7, .state = NT_PROXY_ACTIVE, .state_ns = {steps * 10, steps * 30, 0, 0, 0}};
  s->nchannels = 1;
  s->channels[0] = (nt_channel_row){.channel = 0,
                                    .dir = NT_DIR_SEND,
                                    .peer = 0,
                                    .wait_ns = {steps, steps * 5, steps * 2},
                                    .steps = steps,
                                    .bytes = steps * 1000,
                                    .ops_started = 3,
                                    .ops_done = 2,
                                    .cur_wait = NT_WAIT_SEND_PEER,
                                    .progress_age_ns = 0};
  return s;
}

static void rates_shares_and_dominant_wait_follow_the_deltas(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000000000ull, 100), *b = snap(10, 2, 1500000000ull, 600);
  CHECK(m && a && b);
  CHECK(nt_model_apply_snapshot(m, "ep", a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", b, 1.5) == 0);
  nt_model_rank r[4];
  CHECK(nt_model_ranks(m, r, 4) == 1);
  nt_model_process *p = r[0].proc;
  CHECK_STR(p->host, "node\\x1B[2J"); /* escaped on arrival */
  double sps, bps;
  nt_model_channel_rates(p, &p->cur->channels[0], &sps, &bps);
  CHECK(sps > 999.9 && sps < 1000.1); /* 500 steps in 0.5 s of publisher time */
  CHECK(bps > 999999 && bps < 1000001);
  CHECK(nt_model_channel_dominant_wait(p, &p->cur->channels[0]) == NT_WAIT_SEND_PEER);
  double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
  nt_model_proxy_shares(p, &p->cur->proxy[0], last, total);
  CHECK(last[NT_PROXY_ACTIVE] > 0.749 && last[NT_PROXY_ACTIVE] < 0.751);
  CHECK(nt_model_channel_stalled(&p->cur->channels[0], 2000) == false);
  p->cur->channels[0].progress_age_ns = 3000000000ull;
  CHECK(nt_model_channel_stalled(&p->cur->channels[0], 2000) == true);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void sequence_gaps_are_lost_messages_not_lost_totals(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5), *b = snap(10, 5, 5000, 50);
  CHECK(m && a && b);
  nt_model_apply_snapshot(m, "ep", a, 1.0);
  nt_model_apply_snapshot(m, "ep", b, 1.4);
  nt_model_process *p = nt_model_process_at(m, 0);
  CHECK_EQ_U64(p->lost_messages, 3);
  CHECK_EQ_U64(p->cur->channels[0].steps, 50); /* cumulative: nothing lost */
  nt_model_apply_snapshot(m, "ep", b, 1.5);    /* duplicate */
  CHECK_EQ_U64(p->cur->seq, 5);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void silent_publishers_turn_stale_and_stay_visible(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5);
  CHECK(m && a);
  nt_model_apply_snapshot(m, "ep", a, 1.0);
  nt_model_tick(m, 1.2);
  CHECK(!nt_model_process_at(m, 0)->stale);
  nt_model_tick(m, 10.0);
  CHECK(nt_model_process_at(m, 0)->stale);
  nt_model_rank r[2];
  CHECK(nt_model_ranks(m, r, 2) == 1);
  nt_model_note_error(m, "ep", "bad \x1b]0;title\x07 stuff", 10.0);
  CHECK(nt_model_nerrors(m) == 1);
  CHECK(strchr(nt_model_error_at(m, 0)->text, '\x1b') == NULL);
  nt_snapshot_free(a);
  nt_model_free(m);
}

/* ---- through real sockets ---- */

static void *bind_publisher(void *zctx, const char *dir, pid_t pid) {
  char ep[256];
  void *s = zmq_socket(zctx, ZMQ_XPUB);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  if (nt_endpoint_for_pid(dir, (uint32_t)pid, ep, sizeof ep) != 0 || zmq_bind(s, ep) != 0) {
    zmq_close(s);
    return NULL;
  }
  return s;
}

static void send2(void *s, const char *topic, const void *data, size_t len) {
  zmq_send(s, topic, strlen(topic), ZMQ_SNDMORE);
  zmq_send(s, data, len, 0);
}

static bool wait_subscribed(void *pub, nt_source *src, nt_model *m) {
  uint8_t msg[64];
  for (int i = 0; i < 100; i++) {
    nt_source_poll(src, m, 20);
    if (zmq_recv(pub, msg, sizeof msg, ZMQ_DONTWAIT) > 0 && msg[0] == 1) return true;
  }
  return false;
}

static void bad_messages_are_reported_and_good_publishers_kept(void) {
  char dir[] = "/tmp/nccltop-src-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  pid_t other = fork(); /* a live pid for the second publisher's socket name */
  if (other == 0) {
    pause();
    _exit(0);
  }
  void *zctx = zmq_ctx_new();
  void *good = bind_publisher(zctx, dir, getpid()), *bad = bind_publisher(zctx, dir, other);
  nt_options o = {.dir = dir};
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = nt_source_open(&o, err, sizeof err);
  bool ok =
      good && bad && m && src && wait_subscribed(good, src, m) && wait_subscribed(bad, src, m);
  nt_snapshot *s = snap((uint32_t)getpid(), 1, 1000, 42);
  static uint8_t buf[1 << 16];
  size_t n = s ? nt_snapshot_encode(s, buf, sizeof buf) : 0;
  if (ok) {
    send2(good, NT_TOPIC_SNAPSHOT, buf, n);
    send2(bad, NT_TOPIC_SNAPSHOT, "garbage", 7);
    send2(bad, NT_TOPIC_SNAPSHOT, buf, n / 2); /* truncated */
    uint8_t v2[1 << 16];
    memcpy(v2, buf, n);
    v2[4] = 9; /* major 9 */
    send2(bad, NT_TOPIC_SNAPSHOT, v2, n);
    send2(bad, "nccltop.bogus", "x", 1);
    zmq_send(bad, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), ZMQ_SNDMORE);
    zmq_send(bad, "a", 1, ZMQ_SNDMORE);
    zmq_send(bad, "b", 1, 0); /* three frames */
    send2(bad, NT_TOPIC_HELLO, "{\"v\":\"1.0\"", 10);
    for (int i = 0; i < 50 && nt_model_nerrors(m) < 6; i++) nt_source_poll(src, m, 20);
  }
  CHECK(ok);
  CHECK(nt_model_nerrors(m) == 6);
  bool saw_major = false, saw_frames = false, saw_topic = false;
  for (uint32_t i = 0; i < nt_model_nerrors(m); i++) {
    const char *t = nt_model_error_at(m, i)->text;
    saw_major |= strstr(t, "unsupported protocol major version 9") != NULL;
    saw_frames |= strstr(t, "3 frames") != NULL;
    saw_topic |= strstr(t, "unknown topic") != NULL;
  }
  CHECK(saw_major && saw_frames && saw_topic);
  nt_model_rank r[4];
  CHECK(nt_model_ranks(m, r, 4) == 1); /* the good publisher's data is all there */
  CHECK_EQ_U64(r[0].proc->cur->channels[0].steps, 42);
  /* And the source keeps working after the bad input. */
  nt_snapshot *s2 = snap((uint32_t)getpid(), 2, 2000, 43);
  n = nt_snapshot_encode(s2, buf, sizeof buf);
  send2(good, NT_TOPIC_SNAPSHOT, buf, n);
  for (int i = 0; i < 50 && r[0].proc->cur->channels[0].steps != 43; i++)
    nt_source_poll(src, m, 20);
  CHECK_EQ_U64(r[0].proc->cur->channels[0].steps, 43);
  nt_snapshot_free(s);
  nt_snapshot_free(s2);
  nt_source_close(src);
  nt_model_free(m);
  zmq_close(good);
  zmq_close(bad);
  zmq_ctx_term(zctx);
  kill(other, SIGKILL);
  waitpid(other, NULL, 0);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

static void a_bad_topology_keeps_the_one_we_had(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  const char *good = "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\"/></system>";
  CHECK(nt_model_set_topology(m, good, strlen(good), "ep1", 1.0) == 0);
  CHECK(nt_model_topology(m, NULL) != NULL);
  uint32_t gen = nt_model_topology_generation(m);
  CHECK(nt_model_set_topology(m, good, strlen(good), "ep2", 2.0) == 0); /* same file again */
  CHECK(nt_model_topology_generation(m) == gen);
  CHECK(nt_model_set_topology(m, "<system", 7, "ep3", 3.0) == -1);
  CHECK(nt_model_topology(m, NULL) != NULL);
  CHECK(nt_model_nerrors(m) == 1);
  CHECK(strstr(nt_model_error_at(m, 0)->text, "ep3:1:") != NULL);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(rates_shares_and_dominant_wait_follow_the_deltas);
  TEST_RUN(sequence_gaps_are_lost_messages_not_lost_totals);
  TEST_RUN(silent_publishers_turn_stale_and_stay_visible);
  TEST_RUN(bad_messages_are_reported_and_good_publishers_kept);
  TEST_RUN(a_bad_topology_keeps_the_one_we_had);
  return TEST_DONE();
}

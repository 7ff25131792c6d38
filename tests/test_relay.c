/* `nccltop relay` end to end with real processes and sockets (127.0.0.1
 * only, ports probed free, every wait bounded): simulated ranks -> the
 * plugin -> a relay -> batch JSON viewers over TCP. The deterministic job
 * makes every total known (nt_sim_expect_*): viewers through a relay, a
 * relay fed by a relay, a viewer that joins late and one that lives through
 * a relay restart must all print exactly those totals, like a direct one.
 * No keys here (an empty configuration: the relay listens on loopback in
 * plain TCP); test_curve.c covers CURVE. */
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <zmq.h>

#include "relay_harness.h"
#include "relay_job.h"
#include "testlib.h"
#include "../proto/nccltop_proto.h"
#include "../sim/sim.h"

static void two_viewers_through_a_relay_see_what_a_direct_one_sees(void) {
  job j;
  bool started = job_start(&j, 30);
  char ep[64] = "";
  pid_t relay = started ? job_relay(&j, NULL, ep, NULL) : -1;
  static rh_viewer direct, a, b;
  bool ok = relay > 0 &&
            rh_viewer_start(&direct, NULL, 80, 100, "--dir", j.dir, NULL, NULL, NULL, NULL) &&
            rh_viewer_start(&a, NULL, 80, 100, "--dir", j.empty, "--connect", ep, NULL, NULL) &&
            rh_viewer_start(&b, NULL, 80, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  double td = ok ? until_complete(&direct, &j.cfg, 8) : -1;
  double ta = ok ? until_complete(&a, &j.cfg, 8) : -1;
  double tb = ok ? until_complete(&b, &j.cfg, 8) : -1;
  if (ok) {
    rh_viewer_stop(&direct);
    rh_viewer_stop(&a);
    rh_viewer_stop(&b);
  }
  bool said = rh_file_has(j.log, "listening on loopback only, unencrypted");
  int relay_rc = rh_stop(relay); /* a clean stop (the sanitizers' verdict included) */
  job_stop(&j);
  if (td < 0 || ta < 0 || tb < 0) fprintf(stderr, "    complete at %g %g %g\n", td, ta, tb);
  CHECK(ok);
  CHECK(td >= 0);
  CHECK(ta >= 0);
  CHECK(tb >= 0);
  CHECK(said); /* no key: says it stays on loopback */
  CHECK(relay_rc == 0);
}

/* After the job has finished (its ranks linger, publishing), a new viewer
 * still gets every publisher's full snapshot, hello and communicators at
 * once: its first frame, 700 ms after it started, is complete, with the
 * ranks' environment (hello, otherwise sent every 2 s) and communicator
 * names. */
static void a_late_viewer_gets_full_snapshots(void) {
  job j;
  bool started = job_start(&j, 30);
  char ep[64] = "";
  pid_t relay = started ? job_relay(&j, NULL, ep, NULL) : -1;
  static rh_viewer first, late;
  bool ok = relay > 0 &&
            rh_viewer_start(&first, NULL, 80, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  double t1 = ok ? until_complete(&first, &j.cfg, 10) : -1;
  /* The first viewer stays: the relay is subscribed already, and only
   * XPUB_VERBOSE passes the late viewer's subscription on. */
  bool ok2 = t1 >= 0 &&
             rh_viewer_start(&late, NULL, 1, 700, "--dir", j.empty, "--connect", ep, NULL, NULL);
  cJSON *f = ok2 ? rh_viewer_frame(&late, rh_now() + 8) : NULL;
  bool full = f && complete(&j.cfg, f);
  bool env = false, named = f != NULL;
  const cJSON *x;
  if (f) {
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
      env |= cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, "env"),
                                              "NCCLTOP_DIR") != NULL;
    }
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "ranks")) {
      named &= str_of(x, "comm_name")[0] != '\0';
    }
  }
  cJSON_Delete(f);
  if (ok2) rh_viewer_stop(&late);
  if (ok) rh_viewer_stop(&first);
  rh_stop(relay);
  job_stop(&j);
  CHECK(t1 >= 0);
  CHECK(ok2);
  CHECK(full);
  CHECK(env);
  CHECK(named);
}

/* The relay is killed (SIGKILL: no goodbye) while a viewer watches, and
 * started again on the same port: the viewer's messages stop, then resume
 * without the viewer doing anything (ZeroMQ reconnects, the publishers see
 * a new subscription and send full snapshots). */
static void a_viewer_recovers_when_the_relay_restarts(void) {
  job j;
  bool started = job_start(&j, 40);
  unsigned port = 0;
  char ep[64] = "";
  pid_t relay = started ? job_relay(&j, NULL, ep, &port) : -1;
  static rh_viewer v;
  bool ok = relay > 0 &&
            rh_viewer_start(&v, NULL, 200, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  double t1 = ok ? until_complete(&v, &j.cfg, 10) : -1;
  if (relay > 0) {
    kill(-relay, SIGKILL);
    waitpid(relay, NULL, 0);
  }
  /* Frames while it is down: messages stop growing. */
  double during = -1, deadline = rh_now() + 1.5;
  cJSON *f;
  while (t1 >= 0 && (f = rh_viewer_frame(&v, deadline))) {
    during = rh_num(f, "messages");
    cJSON_Delete(f);
  }
  relay = t1 >= 0 ? rh_relay(NULL, j.log, j.dir, port, NULL, NULL, NULL) : -1;
  double after = -1;
  deadline = rh_now() + 10;
  while (relay > 0 && (f = rh_viewer_frame(&v, deadline))) {
    after = rh_num(f, "messages");
    bool fine = complete(&j.cfg, f);
    cJSON_Delete(f);
    if (after > during + 20 && fine) break;
  }
  if (ok) rh_viewer_stop(&v);
  rh_stop(relay);
  job_stop(&j);
  fprintf(stderr, "    messages while down %g, after the restart %g\n", during, after);
  CHECK(t1 >= 0);
  CHECK(during > 0);
  CHECK(after > during + 20);
}

/* node relay -> rack relay -> viewer: the rack relay has no publishers of
 * its own and forwards its upstream's, subscriptions passing up two hops. */
static void a_relay_feeds_a_relay(void) {
  job j;
  bool started = job_start(&j, 30);
  unsigned p1 = rh_free_port(), p2 = rh_free_port();
  char ep1[64], ep2[64], log2[128];
  snprintf(ep1, sizeof ep1, "tcp://127.0.0.1:%u", p1);
  snprintf(ep2, sizeof ep2, "tcp://127.0.0.1:%u", p2);
  snprintf(log2, sizeof log2, "%s/rack.log", j.empty);
  pid_t node = started && p1 && p2 ? rh_relay(NULL, j.log, j.dir, p1, NULL, NULL, NULL) : -1;
  pid_t rack = node > 0 ? rh_relay(NULL, log2, j.empty, p2, "--connect", ep1, NULL) : -1;
  static rh_viewer v;
  bool ok = rack > 0 &&
            rh_viewer_start(&v, NULL, 100, 100, "--dir", j.empty, "--connect", ep2, NULL, NULL);
  double t = ok ? until_complete(&v, &j.cfg, 10) : -1;
  if (ok) rh_viewer_stop(&v);
  bool up = rh_file_has(log2, "+ upstream tcp://127.0.0.1:");
  rh_stop(rack);
  rh_stop(node);
  job_stop(&j);
  CHECK(ok);
  CHECK(t >= 0);
  CHECK(up);
}

/* The relay starts first, on an empty directory; a job comes (its
 * publishers are connected), ends (dropped), and another comes: the viewer,
 * connected throughout, sees both jobs' processes. */
static void publishers_come_and_go(void) {
  job j;
  bool made = job_dirs(&j);
  char ep[64] = "";
  pid_t relay = made ? job_relay(&j, NULL, ep, NULL) : -1;
  static rh_viewer v;
  bool ok = relay > 0 && rh_wait_file(j.log, "forwarding", 10) &&
            rh_viewer_start(&v, NULL, 300, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  int seen_max = 0, nended = 0;
  double ended_pids[8];
  bool ended_seen = false;
  for (int round = 0; ok && round < 2; round++) {
    job_config(&j);
    j.cfg.ranks = 2;
    j.cfg.comms = 1;
    j.cfg.duration_s = 2;
    pid_t sim = nt_sim_spawn(&j.cfg);
    double deadline = rh_now() + 12;
    cJSON *f;
    ended_seen = false;
    while (sim > 0 && (f = rh_viewer_frame(&v, deadline))) {
      int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes"));
      if (n > seen_max) seen_max = n;
      const cJSON *x;
      /* Every pid that ended, once: this round is over when both of its
       * ranks have (the last snapshot's final flag, through the relay). */
      cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
        double pid = rh_num(x, "pid");
        bool known = false;
        for (int i = 0; i < nended; i++) known |= ended_pids[i] == pid;
        if (!known && nended < 8 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "ended")))
          ended_pids[nended++] = pid;
      }
      cJSON_Delete(f);
      if (nended >= 2 * (round + 1)) {
        ended_seen = true;
        break;
      }
    }
    rh_stop(sim);
    rh_wait_file(j.log, "- ", 3);
  }
  if (ok) rh_viewer_stop(&v);
  /* Both jobs' publishers came (4 lines "+ ") and went. */
  int plus = 0, minus = 0;
  FILE *lf = fopen(j.log, "re");
  char line[512];
  while (lf && fgets(line, sizeof line, lf)) {
    plus += strncmp(line, "nccltop relay: + ", 17) == 0;
    minus += strncmp(line, "nccltop relay: - ", 17) == 0;
  }
  if (lf) fclose(lf);
  rh_stop(relay);
  rh_rmdir(j.dir);
  rh_rmdir(j.empty);
  fprintf(stderr, "    processes seen at most %d; relay log: %d added, %d dropped\n", seen_max,
          plus, minus);
  CHECK(ok);
  CHECK(ended_seen);
  CHECK(nended == 4);
  CHECK(seen_max >= 2);
  CHECK(plus == 4);
  CHECK(minus >= 2);
}

/* One viewer stops (SIGSTOP) for a while: the other's messages keep coming
 * at the same pace, the publishers never refuse a send (unsent_messages 0),
 * and the stopped one, once resumed, shows its loss as lost_messages. */
static void a_stopped_viewer_costs_only_its_own_messages(void) {
  job j;
  bool made = job_dirs(&j);
  job_config(&j);
  j.cfg.ranks = 4;
  j.cfg.comms = 2;
  j.cfg.channels = 8;
  j.cfg.duration_s = 25;
  j.cfg.interval_ms = 10;
  pid_t sim = made ? nt_sim_spawn(&j.cfg) : -1;
  char ep[64] = "";
  pid_t relay = sim > 0 ? job_relay(&j, "-q", ep, NULL) : -1;
  static rh_viewer a, b;
  bool ok = relay > 0 &&
            rh_viewer_start(&a, NULL, 400, 100, "--dir", j.empty, "--connect", ep, NULL, NULL) &&
            rh_viewer_start(&b, NULL, 400, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  /* Both see the 4 processes. */
  double deadline = rh_now() + 10;
  int na = 0, nb = 0;
  cJSON *f;
  while (ok && na < 4 && (f = rh_viewer_frame(&a, deadline))) {
    na = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes"));
    cJSON_Delete(f);
  }
  while (ok && nb < 4 && (f = rh_viewer_frame(&b, deadline))) {
    nb = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes"));
    cJSON_Delete(f);
  }
  if (ok && nb >= 4) kill(b.pid, SIGSTOP);
  double m0 = -1, m1 = -1, unsent = 0, stop_s = 6;
  deadline = rh_now() + stop_s;
  while (ok && nb >= 4 && (f = rh_viewer_frame(&a, deadline))) {
    double m = rh_num(f, "messages");
    if (m0 < 0) m0 = m;
    m1 = m;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
      unsent += rh_num(cJSON_GetObjectItemCaseSensitive(x, "counters"), "unsent_messages");
    }
    cJSON_Delete(f);
  }
  if (ok) kill(b.pid, SIGCONT);
  double lost = 0;
  deadline = rh_now() + 10;
  while (ok && nb >= 4 && lost <= 0 && (f = rh_viewer_frame(&b, deadline))) {
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
      lost += rh_num(x, "lost_messages");
    }
    cJSON_Delete(f);
  }
  if (ok) {
    rh_viewer_stop(&a);
    rh_viewer_stop(&b);
  }
  rh_stop(relay);
  rh_stop(sim);
  rh_rmdir(j.dir);
  rh_rmdir(j.empty);
  double rate = (m1 - m0) / stop_s;
  fprintf(stderr,
          "    while the other viewer was stopped: %.0f messages/s to the running one, %g "
          "unsent; the stopped one lost %g\n",
          rate, unsent, lost);
  CHECK(ok);
  CHECK(na >= 4 && nb >= 4);
  CHECK(rate > 100); /* 4 publishers every 10 ms: ~400/s */
  CHECK(unsent == 0);
  CHECK(lost > 0);
}

/* Usage mistakes: one line and status 2. */
static void relay_usage_errors(void) {
  char *bad_listen[] = {"relay", "--listen", "ipc:///tmp/x", NULL};
  char *unknown[] = {"relay", "--bogus", NULL};
  char *help[] = {"relay", "--help", NULL};
  CHECK(rh_wait(rh_spawn(bad_listen, NULL, -1, -1), 10) == 2);
  CHECK(rh_wait(rh_spawn(unknown, NULL, -1, -1), 10) == 2);
  CHECK(rh_wait(rh_spawn(help, NULL, -1, -1), 10) == 0);
}

int main(void) {
  rh_find_bindir();
  signal(SIGPIPE, SIG_IGN);
  TEST_RUN(relay_usage_errors);
  TEST_RUN(two_viewers_through_a_relay_see_what_a_direct_one_sees);
  TEST_RUN(a_late_viewer_gets_full_snapshots);
  TEST_RUN(a_viewer_recovers_when_the_relay_restarts);
  TEST_RUN(a_relay_feeds_a_relay);
  TEST_RUN(publishers_come_and_go);
  TEST_RUN(a_stopped_viewer_costs_only_its_own_messages);
  return TEST_DONE();
}

/* `nccltop relay` under attack (issue 24, round 3: B4 to B7), with real
 * processes and sockets on 127.0.0.1: subscriptions stop at the relay, a
 * subscription flood costs bounded memory and is cut alone, a relay loop is
 * refused, and another local user gets nothing from a keyless relay. */
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <zmq.h>

#include "relay_harness.h"
#include "testlib.h"
#include "relay_job.h"
#include "lib/proc_status.h"
#include "../proto/nccltop_proto.h"
#include "../sim/sim.h"

/* ----- attacks (issue 24, round 3: B4 to B7) ----- */

/* What a subscription flood may add to the relay's peak memory (before the
 * bounds: 10 MB to 384 MB in 10 s, 465 MB in this test's 4 s). The
 * sanitizers' allocators add their redzones and state. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FLOOD_HWM_BOUND_KB (128 * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FLOOD_HWM_BOUND_KB (128 * 1024)
#endif
#endif
#ifndef FLOOD_HWM_BOUND_KB
#define FLOOD_HWM_BOUND_KB (32 * 1024)
#endif

/* The relay's socket file in dir (the first viewer-*.sock), as an ipc://
 * endpoint; false when there is none yet. */
static bool relay_inbox(const char *dir, char *ep, size_t cap) {
  DIR *d = opendir(dir);
  struct dirent *de;
  bool found = false;
  while (d && !found && (de = readdir(d))) {
    if (nt_endpoint_parse_viewer_name(de->d_name, NULL) == 0) continue;
    snprintf(ep, cap, "ipc://%s/%s", dir, de->d_name);
    found = true;
  }
  if (d) closedir(d);
  return found;
}

static int count_lines_with(const char *path, const char *s) {
  FILE *f = fopen(path, "re");
  char line[1024];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) n += strstr(line, s) != NULL;
  if (f) fclose(f);
  return n;
}

static void zset(void *s, int opt, int v) {
  (void)zmq_setsockopt(s, opt, &v, sizeof v);
}

/* A peer of the relay that sends what a viewer never does: distinct
 * subscriptions, unsubscriptions, data, and the subscription to "" again
 * and again, for secs seconds; in a process of its own, started before the
 * test makes any ZeroMQ thread, which begins when a byte comes on go[0]
 * (NULL: at once). */
static pid_t hostile_viewer(const char *ep, double secs, bool distinct_only, const int *go) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  char b;
  if (go) close(go[1]);
  if (go && read(go[0], &b, 1) != 1) _exit(0);
  void *z = zmq_ctx_new(), *s = zmq_socket(z, ZMQ_XSUB);
  zset(s, ZMQ_LINGER, 0);
  zset(s, ZMQ_SNDHWM, 100000);
  if (zmq_connect(s, ep) != 0) _exit(1);
  double end = rh_now() + secs;
  uint64_t n = 0;
  char junk[256];
  while (rh_now() < end) {
    for (int k = 0; k < 1000; k++, n++) {
      uint8_t b[9] = {1};
      memcpy(b + 1, &n, 8);
      if (distinct_only || n % 4 == 0) {
        (void)zmq_send(s, b, sizeof b, ZMQ_DONTWAIT); /* distinct */
      } else if (n % 4 == 1) {
        b[0] = 0;
        (void)zmq_send(s, b, sizeof b, ZMQ_DONTWAIT); /* unsubscription */
      } else if (n % 4 == 2) {
        (void)zmq_send(s, "\x01", 1, ZMQ_DONTWAIT); /* "" again */
      } else {
        (void)zmq_send(s, "data", 4, ZMQ_SNDMORE | ZMQ_DONTWAIT); /* data, two frames */
        (void)zmq_send(s, "more", 4, ZMQ_DONTWAIT);
      }
    }
    while (zmq_recv(s, junk, sizeof junk, ZMQ_DONTWAIT) >= 0) {
    }
    rh_sleep_ms(1);
  }
  zmq_close(s);
  zmq_ctx_term(z);
  _exit(0);
}

/* B4. What viewers send stops at the relay: a publisher (here the test, as
 * the plugin is: an XPUB connected to the relay's socket file, verbose,
 * taking frames of 26 bytes at most) hears one subscription when the first
 * viewer comes and at most one more a second after, never a viewer's other
 * subscriptions, unsubscriptions or data, however many a peer sends; and
 * its messages still reach the viewer. (Before: every one of them reached
 * every publisher, 1.96 M distinct subscriptions in 10 s made each rank drop
 * its connections, and the subscription to "" sent again and again took the
 * ranks' CPU from 0.8 s to 7.8 s per 10 s.) */
static void subscriptions_stop_at_the_relay(void) {
  job j;
  bool made = job_dirs(&j);
  char ep[64] = "", inbox[PATH_MAX + 16] = "";
  pid_t relay = made ? job_relay(&j, NULL, ep, NULL) : -1;
  bool up = relay > 0 && rh_wait_file(j.log, "publishers connect to", 10) &&
            relay_inbox(j.dir, inbox, sizeof inbox);
  int go[2] = {-1, -1};
  pid_t hostile = up && pipe2(go, O_CLOEXEC) == 0 ? hostile_viewer(ep, 4, false, go) : -1;
  if (go[0] >= 0) close(go[0]);
  void *z = zmq_ctx_new(), *pub = zmq_socket(z, ZMQ_XPUB), *sub = zmq_socket(z, ZMQ_SUB);
  int64_t max26 = 26;
  zset(pub, ZMQ_LINGER, 0);
  zset(pub, ZMQ_XPUB_VERBOSE, 1);
  (void)zmq_setsockopt(pub, ZMQ_MAXMSGSIZE, &max26, sizeof max26);
  zset(sub, ZMQ_LINGER, 0);
  (void)zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
  up = up && zmq_connect(pub, inbox) == 0 && zmq_connect(sub, ep) == 0;
  int subs = 0, others = 0, received = 0, after_flood = 0;
  bool flooding = false;
  double t_first = -1, t_end = rh_now() + 12, flood_end = 0;
  while (up && rh_now() < t_end) {
    uint8_t m[64];
    int n;
    while ((n = zmq_recv(pub, m, sizeof m, ZMQ_DONTWAIT)) >= 0) {
      if (n == 1 && m[0] == 1) {
        subs++;
        if (t_first < 0) t_first = rh_now();
      } else if (!(n == 1 && m[0] == 0)) {
        others++;
      }
    }
    /* Once subscribed, a "snapshot" every 10 ms; the viewer must get them. */
    if (t_first >= 0) {
      (void)zmq_send(pub, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), ZMQ_SNDMORE);
      (void)zmq_send(pub, "payload", 7, 0);
    }
    char buf[64];
    while (zmq_recv(sub, buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
      received++;
      if (flood_end && rh_now() > flood_end) after_flood++;
    }
    if (t_first >= 0 && !flooding && rh_now() > t_first + 1) {
      flooding = true;
      subs = 0; /* from now on: what the flood made of it */
      if (go[1] >= 0 && write(go[1], "g", 1) == 1) flood_end = rh_now() + 4.5;
    }
    if (flood_end && rh_now() > flood_end + 1.5) break;
    rh_sleep_ms(10);
  }
  double flood_s = flood_end ? rh_now() - (flood_end - 4.5) : 0;
  if (go[1] >= 0) close(go[1]); /* a child still waiting ends */
  if (hostile > 0) rh_wait(hostile, 10);
  zmq_close(pub);
  zmq_close(sub);
  zmq_ctx_term(z);
  int relay_rc = rh_stop(relay);
  fprintf(stderr,
          "    during and after a %.1f s flood the publisher got %d subscription(s) to \"\" "
          "and %d other message(s); the viewer %d messages (%d after the flood)\n",
          flood_s, subs, others, received, after_flood);
  rh_rmdir(j.dir);
  rh_rmdir(j.empty);
  CHECK(up);
  CHECK(t_first >= 0);
  CHECK(flooding && flood_end > 0);
  CHECK(others == 0);
  CHECK(subs <= (int)flood_s + 2); /* at most one a second */
  CHECK(after_flood > 10);
  CHECK(relay_rc == 0);
}

/* B5. A peer sending distinct subscriptions as fast as it can is cut off
 * (one line in the log) and the relay's memory stays bounded; the relay's
 * other viewer keeps its data; and the job ending afterwards does not
 * take the relay down (before: 10 MB to 384 MB in 10 s, not given back,
 * then `Assertion failed: !_more (src/fq.cpp:112)` when the ranks exited,
 * in 7 of 8 runs). */
static void a_subscription_flood_costs_bounded_memory(void) {
  job j;
  bool made = job_dirs(&j);
  job_config(&j);
  j.cfg.ranks = 4;
  j.cfg.comms = 1;
  j.cfg.duration_s = 9;
  pid_t sim = made ? nt_sim_spawn(&j.cfg) : -1;
  char ep[64] = "";
  /* A sanitized relay with a small quarantine: its peak memory shows what
   * it holds. */
  char *asan_old = asan_small_quarantine();
  pid_t relay = sim > 0 ? job_relay(&j, "-q", ep, NULL) : -1;
  asan_options_restore(asan_old);
  static rh_viewer v;
  bool ok = relay > 0 &&
            rh_viewer_start(&v, NULL, 400, 250, "--dir", j.empty, "--connect", ep, NULL, NULL);
  /* The viewer sees the 4 processes, then the flood for 4 s. */
  double m_before = -1, m_after = -1, deadline = rh_now() + 10;
  cJSON *f;
  while (ok && (f = rh_viewer_frame(&v, deadline))) {
    int procs = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes"));
    m_before = rh_num(f, "messages");
    cJSON_Delete(f);
    if (procs >= 4) break;
  }
  long hwm0 = proc_status_kb(relay, "VmHWM");
  pid_t flood = m_before > 0 ? hostile_viewer(ep, 4, true, NULL) : -1;
  deadline = rh_now() + 4;
  while (flood > 0 && (f = rh_viewer_frame(&v, deadline))) {
    m_after = rh_num(f, "messages");
    cJSON_Delete(f);
  }
  if (flood > 0) rh_wait(flood, 10);
  long hwm1 = proc_status_kb(relay, "VmHWM");
  /* The job ends (9 s); the relay must outlive it. */
  int sim_rc = sim > 0 ? rh_wait(sim, 20) : -1;
  rh_sleep_ms(3000);
  int st = 0;
  bool alive = relay > 0 && waitpid(relay, &st, WNOHANG) == 0;
  if (ok) rh_viewer_stop(&v);
  int relay_rc = alive ? rh_stop(relay) : -1;
  bool cut = rh_file_has(j.log, "(a viewer sends one subscription): disconnected");
  bool assertion = rh_file_has(j.log, "Assertion");
  fprintf(stderr,
          "    relay VmHWM %ld kB before the flood, %ld kB after; viewer messages %g -> %g; "
          "flooder cut: %s; relay %s after the job ended\n",
          hwm0, hwm1, m_before, m_after, cut ? "yes" : "no",
          alive ? "alive" : (WIFSIGNALED(st) ? "killed by a signal" : "gone"));
  rh_rmdir(j.dir);
  rh_rmdir(j.empty);
  CHECK(ok);
  CHECK(m_before > 0);
  CHECK(hwm0 > 0 && hwm1 > 0);
  CHECK(hwm1 - hwm0 < FLOOD_HWM_BOUND_KB);
  CHECK(cut);
  CHECK(m_after > m_before);
  CHECK(sim_rc == 0);
  CHECK(alive);
  CHECK(!assertion);
  CHECK(relay_rc == 0);
}

/* B6. Relay A (the job's) --connect B, B --connect A: each message would
 * go round forever (before: 288,661 messages in 20 s to one viewer instead
 * of 964). One of them finds its own mark coming back, says so in one line
 * and refuses that --connect; the viewer on A gets what it would without
 * the loop, complete. */
static void a_relay_loop_is_refused(void) {
  job j;
  bool started = job_start(&j, 30);
  unsigned pa = rh_free_port(), pb = rh_free_port();
  char epa[64], epb[64], logb[128], emptyb[64];
  snprintf(epa, sizeof epa, "tcp://127.0.0.1:%u", pa);
  snprintf(epb, sizeof epb, "tcp://127.0.0.1:%u", pb);
  snprintf(logb, sizeof logb, "%s/b.log", j.empty);
  snprintf(emptyb, sizeof emptyb, "/tmp/nccltop-relayb-XXXXXX");
  bool made = started && mkdtemp(emptyb);
  pid_t a = made && pa && pb ? rh_relay(NULL, j.log, j.dir, pa, "--connect", epb, NULL) : -1;
  pid_t b = a > 0 ? rh_relay(NULL, logb, emptyb, pb, "--connect", epa, NULL) : -1;
  static rh_viewer v;
  bool ok =
      b > 0 && rh_viewer_start(&v, NULL, 100, 250, "--dir", j.empty, "--connect", epa, NULL, NULL);
  double t = ok ? until_complete(&v, &j.cfg, 10) : -1;
  /* Then 5 s more: messages grow at the publishers' pace. */
  double m0 = -1, m1 = -1, deadline = rh_now() + 5;
  cJSON *f;
  while (t >= 0 && (f = rh_viewer_frame(&v, deadline))) {
    if (m0 < 0) m0 = rh_num(f, "messages");
    m1 = rh_num(f, "messages");
    cJSON_Delete(f);
  }
  if (ok) rh_viewer_stop(&v);
  int said = count_lines_with(j.log, "leads back to this relay") +
             count_lines_with(logb, "leads back to this relay");
  rh_stop(b);
  rh_stop(a);
  job_stop(&j);
  rh_rmdir(emptyb);
  /* 3 ranks every 50 ms, and metadata: about 70 a second. */
  fprintf(stderr, "    complete at %.2f s; then %g messages in 5 s; %d refusal line(s)\n", t,
          m1 - m0, said);
  CHECK(ok);
  CHECK(t >= 0);
  CHECK(m0 > 0 && m1 - m0 < 2000);
  CHECK(said >= 1 && said <= 2);
}

/* B7. A keyless relay serves its own user only: a process of another user
 * (uid 65534) connecting to it on 127.0.0.1 gets nothing, and the relay
 * says so in a line; the same user's viewer is served. Root only (it needs
 * to be another user). Before: the other user read the job, environment
 * included, which the 0700 endpoint directory hides. */
static pid_t other_user_subscriber(const char *ep, double secs, int out_fd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
  void *z = zmq_ctx_new(), *s = z ? zmq_socket(z, ZMQ_SUB) : NULL;
  if (!s) _exit(4);
  zset(s, ZMQ_LINGER, 0);
  (void)zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
  int n = 0;
  if (zmq_connect(s, ep) != 0) _exit(5);
  for (double end = rh_now() + secs; rh_now() < end;) {
    char buf[64];
    zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 100) > 0)
      while (zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT) >= 0) n++;
  }
  zmq_close(s);
  zmq_ctx_term(z);
  _exit(write(out_fd, &n, sizeof n) == sizeof n ? 0 : 3);
}

static void another_user_gets_nothing_from_a_keyless_relay(void) {
  job j;
  bool started = job_start(&j, 30);
  char ep[64] = "";
  pid_t relay = started ? job_relay(&j, NULL, ep, NULL) : -1;
  static rh_viewer v;
  bool ok = relay > 0 &&
            rh_viewer_start(&v, NULL, 80, 100, "--dir", j.empty, "--connect", ep, NULL, NULL);
  double t = ok ? until_complete(&v, &j.cfg, 10) : -1;
  int fds[2] = {-1, -1}, theirs = -1;
  pid_t other = t >= 0 && pipe(fds) == 0 ? other_user_subscriber(ep, 3, fds[1]) : -1;
  if (fds[1] >= 0) close(fds[1]);
  int other_rc = other > 0 ? rh_wait(other, 10) : -1;
  if (fds[0] >= 0 && read(fds[0], &theirs, sizeof theirs) != sizeof theirs) theirs = -1;
  if (fds[0] >= 0) close(fds[0]);
  /* Ours still served meanwhile. */
  double ours = -1;
  cJSON *f = ok ? rh_viewer_frame(&v, rh_now() + 5) : NULL;
  if (f) ours = rh_num(f, "messages");
  cJSON_Delete(f);
  if (ok) rh_viewer_stop(&v);
  int said = count_lines_with(j.log, "runs as uid 65534, not as us");
  rh_stop(relay);
  job_stop(&j);
  fprintf(stderr, "    uid 65534 got %d messages; ours %g; %d refusal line(s)\n", theirs, ours,
          said);
  CHECK(t >= 0);
  CHECK(other_rc == 0);
  CHECK(theirs == 0);
  CHECK(ours > 0);
  CHECK(said >= 1 && said <= 2); /* it retries every 0.1 s: said once per 10 s */
}

int main(void) {
  rh_find_bindir();
  signal(SIGPIPE, SIG_IGN);
  TEST_RUN(subscriptions_stop_at_the_relay);
  TEST_RUN(a_subscription_flood_costs_bounded_memory);
  TEST_RUN(a_relay_loop_is_refused);
  if (geteuid() == 0)
    TEST_RUN(another_user_gets_nothing_from_a_keyless_relay);
  else
    TEST_SKIP(another_user_gets_nothing_from_a_keyless_relay, "needs root (to be another user)");
  return TEST_DONE();
}

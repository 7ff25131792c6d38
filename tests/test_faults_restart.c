/* Fault injection, continued: publishers that come back under the same
 * pid, and viewers that stop reading.
 *
 * - A publisher whose process image is replaced (exec: the pid stays, its
 *   connections close, a new publisher connects as the same pid) is picked
 *   up by a viewer that watched the old one, as a restart.
 * - A publisher SIGKILLed, and a new process given the same pid before or
 *   after the viewer noticed the death: the viewer shows the new one. Needs
 *   root (/proc/sys/kernel/ns_last_pid); skipped otherwise.
 * - A viewer stopped with SIGSTOP while the job runs: the job finishes on
 *   time, and once resumed the viewer shows the messages it lost and keeps
 *   working.
 * - A raw subscriber that never reads: the job's events never wait, the
 *   stuck subscriber loses messages, a reading subscriber next to it loses
 *   none.
 *
 * This binary is also the publisher of the first two cases:
 *   test_faults_restart --publish NAME NEXT
 * runs the real plugin as communicator NAME until SIGTERM; on SIGUSR1 it
 * execs itself as NEXT without finalizing (NEXT empty: just exits).
 */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "plugin_harness.h"
#include "scenario_harness.h"

static char self[PATH_MAX];
static ph_t H;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* ---- the publisher mode ---- */

static volatile sig_atomic_t got_usr1, got_term;
static void on_signal(int sig) {
  if (sig == SIGUSR1)
    got_usr1 = 1;
  else
    got_term = 1;
}

static uint64_t real_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t hash_of(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static int publisher_main(const char *name, const char *next) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  ph_t h;
  memset(&h, 0, sizeof h);
  if (ph_load(&h) != 0) return 2;
  h.set_clock(real_clock);
  void *ctx = NULL;
  if (h.v5->init(&ctx, hash_of(name), &h.mask, name, 1, 1, 0, NULL) != 0 || !ctx) return 3;
  for (double t0 = now_s(); !got_usr1 && !got_term && now_s() - t0 < 120;) {
    void *op = NULL, *st = NULL, *c = NULL;
    nt_descr_v5 d = ph_simple(NT_EV_PROXY_CTRL);
    h.v5->startEvent(ctx, &c, &d);
    h.v5->recordEventState(c, NT_ST_CTRL_ACTIVE, NULL);
    h.v5->stopEvent(c);
    d = ph_op(0, 1, 1, NULL);
    h.v5->startEvent(ctx, &op, &d);
    d = ph_step(op, 0);
    h.v5->startEvent(ctx, &st, &d);
    h.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, NULL);
    h.v5->stopEvent(st);
    h.v5->stopEvent(op);
    sleep_s(0.01);
  }
  if (got_usr1 && next && *next) { /* no finalize */
    execl(self, self, "--publish", next, "", (char *)NULL);
    _exit(4);
  }
  h.v5->finalize(ctx);
  return 0;
}

static pid_t spawn_publisher(const char *name, const char *next) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "--publish", name, next, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void stop_publisher(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 300 && waitpid(pid, NULL, WNOHANG) == 0; i++) sleep_s(0.01);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, WNOHANG);
}

static bool flag(const cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool shows_comm(const cJSON *frame, pid_t pid, const char *name) {
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(frame, "ranks")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "comm_name");
    if (num(r, "pid") == pid && cJSON_IsString(n) && !strcmp(n->valuestring, name)) return true;
  }
  return false;
}

/* Waits for a frame where pid shows communicator `name`, live (not stale,
 * not ended); returns that process's restart count, or -1. */
static int wait_live_comm(viewer *v, pid_t pid, const char *name, double timeout_s) {
  for (double end = now_s() + timeout_s; now_s() < end;) {
    cJSON *f = viewer_frame(v, end);
    if (!f) return -1;
    const cJSON *p = find_process(f, pid);
    int restarts = -1;
    if (p && shows_comm(f, pid, name) && !flag(p, "stale") && !flag(p, "ended"))
      restarts = isfinite(num(p, "restarts")) ? (int)num(p, "restarts") : -1;
    cJSON_Delete(f);
    if (restarts >= 0) return restarts;
  }
  return -1;
}

static bool wait_ended(viewer *v, pid_t pid, double timeout_s) {
  for (double end = now_s() + timeout_s; now_s() < end;) {
    cJSON *f = viewer_frame(v, end);
    if (!f) return false;
    const cJSON *p = find_process(f, pid);
    bool ended = p && flag(p, "ended");
    cJSON_Delete(f);
    if (ended) return true;
  }
  return false;
}

/* A private endpoint directory, base/ep (0700), that the publishers this
 * test starts use (NCCLTOP_DIR); false when it cannot be made. */
static bool private_dir(char *base, char *dir, size_t cap) {
  if (!mkdtemp(base)) return false;
  snprintf(dir, cap, "%s/ep", base);
  if (mkdir(dir, 0700) != 0) return false;
  return setenv("NCCLTOP_DIR", dir, 1) == 0;
}

/* ---- cases ---- */

static void a_publisher_replaced_under_the_same_pid_is_picked_up(void) {
  char base[] = "/tmp/nccltop-restart-XXXXXX", dir[128];
  CHECK(private_dir(base, dir, sizeof dir));
  viewer v;
  CHECK(viewer_start(&v, dir, "200", "2000"));
  pid_t pub = spawn_publisher("first", "second");
  int first = wait_live_comm(&v, pub, "first", 30);
  kill(pub, SIGUSR1); /* exec: same pid, the old connections closed with the old image */
  int second = first >= 0 ? wait_live_comm(&v, pub, "second", 30) : -1;
  stop_publisher(pub);
  viewer_stop(&v);
  remove_dir(base);
  fprintf(stderr, "    first seen: %s, after exec: %s (restarts %d)\n", first >= 0 ? "yes" : "no",
          second >= 0 ? "yes" : "no", second);
  CHECK(first >= 0);
  CHECK(second >= 1); /* the same (host, pid), seen as a restart */
}

/* A new process with pid `want`, running the publisher as `name`; -1 when
 * the pid could not be had (another process took it first, every try). */
static pid_t spawn_publisher_at_pid(pid_t want, const char *name) {
  for (int tries = 0; tries < 50; tries++) {
    int go[2];
    if (pipe(go) != 0) return -1;
    int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d", (int)want - 1);
    bool set = fd >= 0 && write(fd, buf, (size_t)n) == n;
    if (fd >= 0) close(fd);
    if (!set) {
      close(go[0]);
      close(go[1]);
      return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      char c = 0;
      close(go[1]);
      if (read(go[0], &c, 1) == 1 && c == 'g')
        execl(self, self, "--publish", name, "", (char *)NULL);
      _exit(0);
    }
    close(go[0]);
    bool mine = pid == want;
    if (write(go[1], mine ? "g" : "x", 1) != 1) mine = false;
    close(go[1]);
    if (mine) return pid;
    if (pid > 0) waitpid(pid, NULL, 0);
  }
  return -1;
}

static bool can_choose_pids(void) {
  return geteuid() == 0 && access("/proc/sys/kernel/ns_last_pid", W_OK) == 0;
}

/* fast: the new process takes the pid at once, before the viewer's next
 * directory scan; slow: only after the viewer has marked the old one
 * ended. */
static void pid_reuse(bool fast) {
  char base[] = "/tmp/nccltop-reuse-XXXXXX", dir[128];
  CHECK(private_dir(base, dir, sizeof dir));
  viewer v;
  CHECK(viewer_start(&v, dir, "200", "2000"));
  pid_t old = spawn_publisher("before-kill", "");
  int first = wait_live_comm(&v, old, "before-kill", 30);
  kill(old, SIGKILL);
  waitpid(old, NULL, 0);
  bool ended = fast || wait_ended(&v, old, 30);
  pid_t pub = ended ? spawn_publisher_at_pid(old, "after-kill") : -1;
  int second = pub > 0 ? wait_live_comm(&v, pub, "after-kill", 30) : -1;
  stop_publisher(pub);
  viewer_stop(&v);
  remove_dir(base);
  fprintf(stderr, "    %s reuse of pid %d: old seen %s, old marked ended %s, new seen %s\n",
          fast ? "fast" : "slow", (int)old, first >= 0 ? "yes" : "no", ended ? "yes" : "no",
          second >= 0 ? "yes"
          : pub > 0   ? "no"
                      : "(pid not obtained)");
  CHECK(first >= 0);
  CHECK(ended);
  CHECK(pub == old);
  CHECK(second >= 0);
}

static void a_killed_publishers_pid_reused_at_once_is_picked_up(void) {
  pid_reuse(true);
}

static void a_killed_publishers_pid_reused_later_is_picked_up(void) {
  pid_reuse(false);
}

/* A job of big snapshots (4 communicators x 32 channels, every 10 ms) and a
 * viewer stopped with SIGSTOP for 2.5 s once it is attached, resumed while
 * the ranks still publish (losses show as sequence gaps only when a later
 * message arrives). The job must take no longer than without a viewer (a
 * generous deadline: a blocked publisher would never finish); the resumed
 * viewer reports the lost messages and keeps working: a job started
 * afterwards shows up. */
static void sim_config(nt_sim_config *c, const char *dir, int ranks, double linger) {
  nt_sim_defaults(c);
  c->ranks = ranks;
  c->comms = 4;
  c->channels = 32;
  c->steps = 4;
  c->iterations = 300;
  c->deterministic = true;
  c->linger_s = linger;
  c->plugin = plugin;
  c->dir = dir;
  c->interval_ms = 10;
  c->quiet = true;
}

/* Waits for pid; kills its group after deadline_s. Returns the seconds
 * since `since`. */
static double wait_job(pid_t pid, double since, double deadline_s, bool *ok) {
  int st = 0;
  *ok = false;
  while (now_s() - since < deadline_s) {
    if (waitpid(pid, &st, WNOHANG) == pid) {
      *ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      return now_s() - since;
    }
    sleep_s(0.01);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return now_s() - since;
}

static void a_stopped_viewer_shows_its_losses_when_resumed(void) {
  char dir[] = "/tmp/nccltop-stop-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  sim_config(&c, dir, 2, 6.0);
  bool ok_alone, ok_stopped;
  double t0 = now_s();
  double alone = wait_job(nt_sim_spawn(&c), t0, 120, &ok_alone);
  viewer v;
  CHECK(viewer_start(&v, dir, "100", "2000"));
  t0 = now_s();
  pid_t job = nt_sim_spawn(&c);
  bool attached = false;
  for (double end = now_s() + 30; !attached && now_s() < end;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    attached = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes")) == 2;
    cJSON_Delete(f);
  }
  if (attached) kill(v.pid, SIGSTOP);
  double stopped_at = now_s() - t0;
  sleep_s(2.5);
  kill(v.pid, SIGCONT);
  /* The backlog the kernel and ZeroMQ kept arrives first, then the gap. */
  double lost = 0, unsent = -1;
  for (double end = now_s() + 10; lost <= 0 && now_s() < end;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
      lost += num(p, "lost_messages");
      double u = num(cJSON_GetObjectItemCaseSensitive(p, "counters"), "unsent_messages");
      if (u > unsent) unsent = u;
    }
    cJSON_Delete(f);
  }
  double with_viewer = wait_job(job, t0, 10 * alone + 60, &ok_stopped);
  /* And the viewer still works: a new job appears. */
  sim_config(&c, dir, 1, 30);
  c.comms = 1;
  c.iterations = 3;
  pid_t next = nt_sim_spawn(&c);
  bool sees_next = false;
  for (double end = now_s() + 30; !sees_next && now_s() < end;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
      sees_next |= !flag(p, "ended") && !flag(p, "stale");
    }
    cJSON_Delete(f);
  }
  kill(-next, SIGTERM);
  bool ok_next;
  wait_job(next, now_s(), 30, &ok_next);
  viewer_stop(&v);
  remove_dir(dir);
  fprintf(stderr,
          "    job alone %.2fs; with a viewer stopped at %.2fs for 2.5s: %.2fs (%.2fx); resumed "
          "viewer: %.0f messages lost, unsent_messages %.0f\n",
          alone, stopped_at, with_viewer, with_viewer / alone, lost, unsent);
  CHECK(ok_alone);
  CHECK(attached);
  CHECK(ok_stopped); /* finished, within the deadline */
  CHECK(lost > 0);   /* the drops are counted and shown */
  CHECK(sees_next);
}

/* A subscriber that never reads (tiny receive buffers) next to one that
 * reads everything: the event loop never waits, the stuck one loses
 * messages, the reading one loses none. */
static void case_a_stuck_subscriber_costs_only_itself(void) {
  memset(&H, 0, sizeof H);
  setenv("NCCLTOP_INTERVAL_MS", "10", 1);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  H.set_clock(real_clock);
  void *ctx = ph_init(&H, 0x57c4, 0, 2);
  CHECK(ctx != NULL);
  for (int ch = 0; ch < 64; ch++) /* 256 channel rows: snapshots of about 23 KB */
    for (int peer = 0; peer < 2; peer++)
      for (int dir = 0; dir < 2; dir++) {
        void *op = NULL;
        nt_descr_v5 d = ph_op(ch, peer, dir, NULL);
        H.v5->startEvent(ctx, &op, &d);
        H.v5->stopEvent(op);
      }
  void *zctx = zmq_ctx_new(), *stuck = zmq_socket(zctx, ZMQ_SUB);
  int one = 1, small = 4096, zero = 0;
  char derr[256];
  zmq_setsockopt(stuck, ZMQ_RCVHWM, &one, sizeof one);
  zmq_setsockopt(stuck, ZMQ_RCVBUF, &small, sizeof small);
  zmq_setsockopt(stuck, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(stuck, ZMQ_SUBSCRIBE, "", 0);
  int sdir = nt_endpoint_dir_open(H.dir, true, derr, sizeof derr);
  nt_inbox stuck_in;
  CHECK(sdir >= 0 && nt_inbox_bind(&stuck_in, stuck, sdir) == 0);
  CHECK(ph_subscribe(&H) == 0);
  uint64_t last_seq = 0, gaps = 0, snaps = 0, events[6] = {0};
  double t0 = now_s();
  for (double t; (t = now_s() - t0) < 3.0;) {
    for (int i = 0; i < 200; i++) {
      void *op = NULL, *st = NULL;
      nt_descr_v5 d = ph_op(i % 64, 1, 1, NULL);
      H.v5->startEvent(ctx, &op, &d);
      d = ph_step(op, 0);
      H.v5->startEvent(ctx, &st, &d);
      H.v5->recordEventState(st, NT_ST_STEP_SEND_WAIT, NULL);
      H.v5->stopEvent(st);
      H.v5->stopEvent(op);
    }
    events[(int)(t * 2)] += 200 * 5;
    while (ph_next_snapshot(&H, 1) == 0) { /* the reading subscriber */
      if (last_seq && H.snap->seq != last_seq + 1) gaps++;
      last_seq = H.snap->seq;
      snaps++;
    }
  }
  uint64_t unsent = H.snap->process.unsent_messages;
  /* Now read what the stuck one kept: its sequence numbers have holes. */
  static uint8_t buf[NT_MAX_MESSAGE_BYTES];
  char topic[64], err[128];
  nt_snapshot *s = nt_snapshot_new();
  uint64_t stuck_snaps = 0, stuck_lost = 0, prev = 0;
  zmq_pollitem_t it = {.socket = stuck, .events = ZMQ_POLLIN};
  for (double t1 = now_s(); prev <= last_seq && now_s() - t1 < 2 && zmq_poll(&it, 1, 200) > 0;) {
    int n = zmq_recv(stuck, topic, sizeof topic - 1, 0);
    int len = zmq_recv(stuck, buf, sizeof buf, 0);
    if (n < 0 || len < 0) break;
    topic[n] = '\0';
    if (strcmp(topic, NT_TOPIC_SNAPSHOT) ||
        nt_snapshot_decode(buf, (size_t)len, s, err, sizeof err))
      continue;
    if (prev && s->seq > prev + 1) stuck_lost += s->seq - prev - 1;
    prev = s->seq;
    stuck_snaps++;
  }
  nt_snapshot_free(s);
  zmq_close(stuck);
  zmq_ctx_term(zctx);
  nt_inbox_unbind(&stuck_in, NULL, sdir);
  close(sdir);
  fprintf(stderr,
          "    events per 0.5 s: %llu %llu %llu %llu %llu %llu; reading subscriber %llu snapshots, "
          "%llu gaps; stuck one got %llu, lost %llu; unsent_messages %llu\n",
          (unsigned long long)events[0], (unsigned long long)events[1],
          (unsigned long long)events[2], (unsigned long long)events[3],
          (unsigned long long)events[4], (unsigned long long)events[5], (unsigned long long)snaps,
          (unsigned long long)gaps, (unsigned long long)stuck_snaps, (unsigned long long)stuck_lost,
          (unsigned long long)unsent);
  CHECK(snaps > 50);
  CHECK(gaps == 0);
  /* It lost messages: gaps in what it got, or far fewer than the reader
   * (ZeroMQ may have kept only the newest for it). */
  CHECK(stuck_lost > 0 || stuck_snaps + 10 < snaps);
  CHECK(events[5] > 0); /* still running at the end */
  CHECK(H.v5->finalize(ctx) == 0);
}

static void a_stuck_subscriber_costs_only_itself(void) {
  CHECK(ph_in_child(case_a_stuck_subscriber_costs_only_itself) == 0);
}

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  if (argc == 4 && !strcmp(argv[1], "--publish")) return publisher_main(argv[2], argv[3]);
  scenario_init();
  TEST_RUN(a_publisher_replaced_under_the_same_pid_is_picked_up);
  if (can_choose_pids()) {
    TEST_RUN(a_killed_publishers_pid_reused_at_once_is_picked_up);
    TEST_RUN(a_killed_publishers_pid_reused_later_is_picked_up);
  } else {
    TEST_SKIP(a_killed_publishers_pid_reused_at_once_is_picked_up, "needs root (ns_last_pid)");
    TEST_SKIP(a_killed_publishers_pid_reused_later_is_picked_up, "needs root (ns_last_pid)");
  }
  TEST_RUN(a_stopped_viewer_shows_its_losses_when_resumed);
  TEST_RUN(a_stuck_subscriber_costs_only_itself);
  return TEST_DONE();
}

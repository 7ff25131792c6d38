/* A viewer that stops is not the job's fault, end to end: simulated rank
 * processes -> the real plugin -> ZeroMQ -> `nccltop -b --json`, and the
 * viewer stopped with SIGSTOP for 5 s (what Ctrl-Z, a descheduled process
 * or a blocked terminal does to it), then continued.
 *
 * - a healthy job: no frame after the pause has a root, stall, hung_op,
 *   straggler or silent alert, none has a drops alert (what the viewer
 *   missed is its own loss: lost_unread), and a frame says the viewer
 *   paused (watcher notes, kind viewer, about 5 s);
 * - a rank's process stopped while the viewer was: once the viewer reads
 *   again, that rank is still named (root or silent), and no other. */
#include "scenario_harness.h"

#define STALL_MS "1000"
#define PAUSE_S  5

static bool all_ranks(int ranks, const cJSON *f) {
  for (int r = 0; r < ranks; r++)
    if (!find_rank(f, nt_sim_comm_hash(0), r)) return false;
  return true;
}

/* A 4-rank job in a fresh directory (dir: 24 bytes) and its viewer. */
static bool start(char *dir, nt_sim_config *c, pid_t *sim, viewer *v) {
  *v = (viewer){.fd = -1, .pid = -1};
  *sim = -1;
  snprintf(dir, 24, "/tmp/nccltop-wat-XXXXXX");
  if (!mkdtemp(dir)) return false;
  base_config(c, dir);
  c->ranks = 4;
  c->channels = 2;
  c->interval_ms = 100;
  c->duration_s = 45;
  *sim = nt_sim_spawn(c);
  return *sim > 0 && wait_publishers(dir, c->ranks, 30) && viewer_start(v, dir, "250", STALL_MS);
}

/* Frames until every rank has been seen in `n` frames in a row. */
static bool healthy_frames(viewer *v, int ranks, int n, double seconds, cJSON **last) {
  int live = 0;
  for (double end = now_s() + seconds; live < n;) {
    cJSON *f = viewer_frame(v, end);
    if (!f) return false;
    live = all_ranks(ranks, f) ? live + 1 : 0;
    cJSON_Delete(*last);
    *last = f;
  }
  return true;
}

static bool job_kind(const char *kind) {
  return !strcmp(kind, "root") || !strcmp(kind, "stall") || !strcmp(kind, "hung_op") ||
         !strcmp(kind, "straggler") || !strcmp(kind, "silent");
}

/* The viewer note of a frame, or NULL. */
static const cJSON *viewer_note(const cJSON *f) {
  const cJSON *n;
  cJSON_ArrayForEach(n, get(get(f, "watcher"), "notes")) {
    if (!strcmp(str(n, "kind"), "viewer")) return n;
  }
  return NULL;
}

static void stop_viewer_for(viewer *v, int seconds) {
  kill(v->pid, SIGSTOP);
  nap_ms(seconds * 1000);
  kill(v->pid, SIGCONT);
}

static void a_stopped_viewer_blames_nobody(void) {
  char dir[24];
  nt_sim_config c;
  pid_t sim;
  viewer v;
  cJSON *last = NULL;
  bool started = start(dir, &c, &sim, &v);
  bool healthy = started && healthy_frames(&v, c.ranks, 8, 30, &last);
  if (healthy) stop_viewer_for(&v, PAUSE_S);
  int frames = 0, bad = 0, drops = 0;
  double paused = 0, lost_unread = 0;
  char first_bad[512] = "", note[512] = "";
  for (double end = now_s() + 12; healthy;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    frames++;
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      if (job_kind(str(a, "kind")) && !bad++)
        snprintf(first_bad, sizeof first_bad, "frame %d: %s: %s", frames, str(a, "kind"),
                 str(a, "text"));
      drops += !strcmp(str(a, "kind"), "drops");
    }
    const cJSON *n = viewer_note(f);
    if (n && num(n, "paused_s") > paused) {
      paused = num(n, "paused_s");
      snprintf(note, sizeof note, "%s", str(n, "text"));
    }
    double u = num(get(f, "watcher"), "lost_unread");
    if (u > lost_unread) lost_unread = u;
    cJSON_Delete(last);
    last = f;
  }
  cJSON_Delete(last);
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  fprintf(stderr, "    %d frames after the pause; watcher: %s; lost unread %g\n", frames,
          note[0] ? note : "(none)", lost_unread);
  if (bad) fprintf(stderr, "    %d job alerts, the first: %s\n", bad, first_bad);
  CHECK(started && healthy);
  CHECK(frames >= 20);
  CHECK_EQ_U64(bad, 0);
  CHECK_EQ_U64(drops, 0);
  CHECK(paused > PAUSE_S - 1 && paused < PAUSE_S + 5);
}

/* Whether a frame names rank `victim` (pid) as root or silent; *other
 * gets the text of a root or silent alert about another rank. */
static bool names(const cJSON *f, int victim, double pid, char *other, size_t cap) {
  bool named = false;
  const cJSON *a;
  cJSON_ArrayForEach(a, get(f, "alerts")) {
    const char *kind = str(a, "kind");
    bool root = !strcmp(kind, "root"), silent = !strcmp(kind, "silent");
    if (!root && !silent) continue;
    bool me = root ? num(a, "rank") == victim : num(a, "pid") == pid;
    named |= me;
    if (!me && !other[0]) snprintf(other, cap, "%s: %s", kind, str(a, "text"));
  }
  return named;
}

static void a_rank_stopped_meanwhile_is_still_named(void) {
  char dir[24];
  nt_sim_config c;
  pid_t sim;
  viewer v;
  cJSON *last = NULL;
  const int victim = 1;
  bool started = start(dir, &c, &sim, &v);
  bool healthy = started && healthy_frames(&v, c.ranks, 8, 30, &last);
  const cJSON *r = healthy ? find_rank(last, nt_sim_comm_hash(0), victim) : NULL;
  double pid = r ? num(r, "pid") : -1;
  bool stopped = false;
  if (healthy && pid > 1) {
    kill(v.pid, SIGSTOP);
    nap_ms(1000);
    stopped = kill((pid_t)pid, SIGSTOP) == 0;
    nap_ms((PAUSE_S - 1) * 1000);
    kill(v.pid, SIGCONT);
  }
  int frames = 0, named = 0;
  double first_named = -1, t0 = now_s();
  char other[512] = "";
  for (double end = now_s() + 15; stopped && named < 3;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    frames++;
    bool me = names(f, victim, pid, other, sizeof other);
    if (me && first_named < 0) first_named = now_s() - t0;
    named = me ? named + 1 : 0;
    cJSON_Delete(f);
  }
  if (stopped) kill((pid_t)pid, SIGCONT);
  cJSON_Delete(last);
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  fprintf(stderr, "    rank %d (pid %.0f) named %.1f s after the viewer came back (%d frames)\n",
          victim, pid, first_named, frames);
  if (other[0]) fprintf(stderr, "    another named: %s\n", other);
  CHECK(started && healthy && stopped);
  CHECK(named >= 3);
  CHECK(!other[0]);
}

int main(void) {
  scenario_init();
  TEST_RUN(a_stopped_viewer_blames_nobody);
  TEST_RUN(a_rank_stopped_meanwhile_is_still_named);
  return TEST_DONE();
}

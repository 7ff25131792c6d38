/* The diagnosis end to end (PROTOCOL 1.2 run states): simulated rank
 * processes -> the real plugin -> ZeroMQ -> `nccltop -b --json`.
 *
 * - CPU run-ahead (the GPU computes 4 s per step while the CPU enqueues
 *   ahead, real time): queued work, no alert at all;
 * - --stall-rank at 8 ranks: that rank is named root within 2 x --stall-ms
 *   of the stall, and no other rank ever is;
 * - one rank's process stopped with SIGSTOP: it is named root (it stopped
 *   publishing while the others wait on it), no healthy rank ever is;
 * - (release build only) the same stall in a 128-rank job. */
#include "scenario_harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define STALL_MS "1000"

static int count_kind(const cJSON *f, const char *kind) {
  int n = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, get(f, "alerts")) n += !strcmp(str(a, "kind"), kind);
  return n;
}

/* The first root alert of a frame naming another rank than `rank` (any
 * rank when rank < 0), or NULL. */
static const cJSON *other_root(const cJSON *f, int rank) {
  const cJSON *a;
  cJSON_ArrayForEach(a, get(f, "alerts")) {
    if (!strcmp(str(a, "kind"), "root") && (rank < 0 || num(a, "rank") != rank)) return a;
  }
  return NULL;
}

/* Whether one of the rank's rows in `array` (channels, in_flight) runs. */
static bool runs(const cJSON *rank, const char *array) {
  const cJSON *x;
  cJSON_ArrayForEach(x, get(rank, array)) {
    if (!strcmp(str(x, "run_state"), "running")) return true;
  }
  return false;
}

/* A stall or hung_op alert of a rank with nothing running (only work its
 * GPU has not reached): what 1.2 run states rule out. */
static const cJSON *queued_alarm(const cJSON *f) {
  const cJSON *a;
  cJSON_ArrayForEach(a, get(f, "alerts")) {
    bool stall = !strcmp(str(a, "kind"), "stall"), hung = !strcmp(str(a, "kind"), "hung_op");
    if ((!stall && !hung) || !(num(a, "rank") >= 0)) continue; /* null: no rank */
    uint64_t hash = strtoull(str(a, "comm"), NULL, 16);
    const cJSON *r = find_rank(f, hash, (int)num(a, "rank"));
    if (r && !runs(r, stall ? "channels" : "in_flight")) return a;
  }
  return NULL;
}

/* Whether every rank of communicator 0 is in the frame. */
static bool all_ranks(const nt_sim_config *c, const cJSON *f) {
  for (int r = 0; r < c->ranks; r++)
    if (!find_rank(f, nt_sim_comm_hash(0), r)) return false;
  return true;
}

/* A job of `ranks` ranks x 2 channels in a fresh directory (dir, 24
 * bytes), lasting duration_s; false if the directory could not be made. */
static bool job(nt_sim_config *c, char *dir, int ranks, double duration_s) {
  snprintf(dir, 24, "/tmp/nccltop-dia-XXXXXX");
  if (!mkdtemp(dir)) return false;
  base_config(c, dir);
  c->ranks = ranks;
  c->channels = 2;
  c->duration_s = duration_s;
  return true;
}

/* Spawns job c and `nccltop -b --json -d delay_ms --stall-ms STALL_MS`
 * on its directory; whether both started (*sim, *v set either way). */
static bool start(const nt_sim_config *c, const char *dir, const char *delay_ms, pid_t *sim,
                  viewer *v) {
  *v = (viewer){.fd = -1, .pid = -1};
  *sim = nt_sim_spawn(c);
  return *sim > 0 && wait_publishers(dir, c->ranks, 30) && viewer_start(v, dir, delay_ms, STALL_MS);
}

/* ---- run-ahead: no alert ---- */

static void run_ahead_raises_no_alert(void) {
  char dir[24];
  nt_sim_config c;
  CHECK(job(&c, dir, 2, 16));
  c.steps = 3;
  c.run_ahead_ms = 4000;
  pid_t sim;
  viewer v;
  bool started = start(&c, dir, "200", &sim, &v);
  int alerts = 0, seen = 0;
  double done = 0;
  char first[512] = "";
  for (double end = now_s() + 12; started;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    seen += all_ranks(&c, f);
    const cJSON *x;
    double d = 0;
    cJSON_ArrayForEach(x, get(f, "collectives")) d += num(x, "done");
    if (d > done) done = d;
    cJSON_ArrayForEach(x, get(f, "alerts")) {
      if (!alerts++)
        snprintf(first, sizeof first, "frame %d: %s %s", v.frames, str(x, "kind"), str(x, "text"));
    }
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (alerts) fprintf(stderr, "    %d alerts, the first: %s\n", alerts, first);
  CHECK(started);
  CHECK(seen >= 20); /* the job was watched for most of the time */
  CHECK(done > 0);   /* and its operations complete */
  CHECK_EQ_U64(alerts, 0);
}

/* ---- a stalled rank ---- */

/* Runs job c (its stall_rank stalls at stall_after_s) under a viewer; true
 * when the rank is named root (first alert) within 2 x --stall-ms of the
 * stall, two frames in a row, no frame names another root and none raises
 * a stall or hung_op alert for a rank with nothing running. */
static bool stalled_rank_named(nt_sim_config *c, const char *dir, double seconds) {
  double stall_s = atof(STALL_MS) / 1000;
  pid_t sim;
  viewer v;
  bool started = start(c, dir, "250", &sim, &v);
  char wrong[512] = "", late[512] = "";
  int named = 0;
  double first_age = -1;
  for (double end = now_s() + seconds; started && named < 2;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *bad = other_root(f, c->stall_rank), *a = cJSON_GetArrayItem(get(f, "alerts"), 0);
    if (bad && !wrong[0]) snprintf(wrong, sizeof wrong, "frame %d: %s", v.frames, str(bad, "text"));
    const cJSON *q = queued_alarm(f);
    if (q && !wrong[0])
      snprintf(wrong, sizeof wrong, "frame %d, nothing running: %s", v.frames, str(q, "text"));
    bool root = a && !strcmp(str(a, "kind"), "root") && num(a, "rank") == c->stall_rank;
    if (root && first_age < 0) {
      /* How long the rank had been stalled when first named. */
      first_age = num(a, "age_s");
      if (first_age > 2 * stall_s) snprintf(late, sizeof late, "%s", str(a, "text"));
    }
    named = root ? named + 1 : 0;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (named < 2)
    fprintf(stderr, "    rank %d not named root (%d frames)\n", c->stall_rank, v.frames);
  if (wrong[0]) fprintf(stderr, "    wrong: %s\n", wrong);
  if (late[0]) fprintf(stderr, "    named %.1f s after the stall: %s\n", first_age, late);
  return started && named >= 2 && !wrong[0] && !late[0];
}

/* A ranks-rank job whose rank `stalled` stalls after `after_s`, snapshots
 * every interval_ms: stalled_rank_named within `seconds`. */
static bool stall_job(int ranks, uint32_t interval_ms, int stalled, double after_s,
                      double seconds) {
  char dir[24];
  nt_sim_config c;
  if (!job(&c, dir, ranks, seconds + 5)) return false;
  c.interval_ms = interval_ms;
  c.stall_rank = stalled;
  c.stall_after_s = after_s;
  return stalled_rank_named(&c, dir, seconds);
}

static void stalled_rank_is_the_only_root_at_8_ranks(void) {
  CHECK(stall_job(8, 100, 5, 2, 20));
}

/* 128 rank processes, one channel pair each, in a release build on two
 * cores (under ASan the job alone would take the machine). At 256 the
 * simulated ranks themselves were descheduled for seconds on a busy 2-core
 * machine (a rank then truly waits on a peer that is not running: roots
 * that are right about the simulation, and the stall named 2.3-3.9 s after
 * it in four runs of the code of the time), which tests the machine, not
 * the diagnosis. */
static void stalled_rank_is_the_only_root_at_128_ranks(void) {
  if (UNDER_ASAN) {
    fprintf(stderr, "    skipped under ASan (128 sanitized rank processes)\n");
    return;
  }
  CHECK(stall_job(128, 200, 77, 6, 35));
}

/* ---- a stopped rank ---- */

static void a_stopped_rank_is_the_root_and_no_healthy_rank_is(void) {
  char dir[24];
  nt_sim_config c;
  CHECK(job(&c, dir, 4, 40));
  c.interval_ms = 100;
  const int victim = 1;
  pid_t sim;
  viewer v;
  bool started = start(&c, dir, "250", &sim, &v);
  pid_t stopped = -1;
  int live = 0, named = 0;
  char wrong[512] = "", last[512] = "";
  for (double end = now_s() + 25; started && named < 3;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *bad = other_root(f, stopped > 0 ? victim : -1);
    if (bad && !wrong[0]) snprintf(wrong, sizeof wrong, "frame %d: %s", v.frames, str(bad, "text"));
    /* Two seconds of a healthy job, then the victim's process stops. */
    live = all_ranks(&c, f) ? live + 1 : 0;
    if (stopped < 0 && live >= 8) {
      stopped = (pid_t)num(find_rank(f, nt_sim_comm_hash(0), victim), "pid");
      if (stopped <= 1 || kill(stopped, SIGSTOP) != 0) {
        snprintf(wrong, sizeof wrong, "could not stop pid %d", (int)stopped);
        stopped = -1;
        cJSON_Delete(f);
        break;
      }
    }
    const cJSON *a = cJSON_GetArrayItem(get(f, "alerts"), 0);
    bool root = stopped > 0 && a && !strcmp(str(a, "kind"), "root") && num(a, "rank") == victim &&
                count_kind(f, "root") == 1;
    if (a) snprintf(last, sizeof last, "%s: %s", str(a, "kind"), str(a, "text"));
    named = root ? named + 1 : 0;
    cJSON_Delete(f);
  }
  if (stopped > 0) kill(stopped, SIGCONT);
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (named < 3)
    fprintf(stderr, "    stopped pid %d, not named root (%d frames); last first alert: %s\n",
            (int)stopped, v.frames, last);
  if (wrong[0]) fprintf(stderr, "    %s\n", wrong);
  CHECK(started);
  CHECK(stopped > 0);
  CHECK(named >= 3);
  CHECK(!wrong[0]);
}

int main(void) {
  scenario_init();
  TEST_RUN(run_ahead_raises_no_alert);
  TEST_RUN(stalled_rank_is_the_only_root_at_8_ranks);
  TEST_RUN(a_stopped_rank_is_the_root_and_no_healthy_rank_is);
  TEST_RUN(stalled_rank_is_the_only_root_at_128_ranks);
  return TEST_DONE();
}

/* Issue 4 end to end, in batch JSON: real-time simulated jobs -> real
 * ZeroMQ sockets -> `nccltop -b --json`, and what the diagnosis says: a
 * stalled rank named as the root of every wait chain, a straggler named, an
 * environment difference between ranks, a restarted job compared with the
 * previous run, and a viewer started before the job. */
#include "scenario_harness.h"

/* ---- 3. a stalled rank ---- */

static bool waits_on_peer(const char *wait) {
  return !strcmp(wait, "send_peer_wait") || !strcmp(wait, "recv_net_wait") ||
         !strcmp(wait, "send_net_wait");
}

/* Whether, in communicator `hex`, following the stall alerts' waits-on
 * edges from `from` reaches `to`. */
static bool chain_reaches(const cJSON *alerts, const char *hex, int from, int to, int nranks) {
  bool seen[64] = {false};
  int queue[64], head = 0, tail = 0;
  queue[tail++] = from;
  seen[from] = true;
  while (head < tail) {
    int r = queue[head++];
    if (r == to) return true;
    const cJSON *a;
    cJSON_ArrayForEach(a, alerts) {
      double pv = num(a, "peer"); /* null (NaN here) when none */
      int peer = pv >= 0 ? (int)pv : -1;
      if (strcmp(str(a, "kind"), "stall") || strcmp(str(a, "comm"), hex) || num(a, "rank") != r ||
          !waits_on_peer(str(a, "wait")) || peer < 0 || peer >= nranks || seen[peer])
        continue;
      seen[peer] = true;
      queue[tail++] = peer;
    }
  }
  return false;
}

static const cJSON *find_alert(const cJSON *alerts, const char *kind, const char *hex, int rank,
                               const char *wait, int peer) {
  const cJSON *a;
  cJSON_ArrayForEach(a, alerts) {
    if (!strcmp(str(a, "kind"), kind) && !strcmp(str(a, "comm"), hex) && num(a, "rank") == rank &&
        (!wait || !strcmp(str(a, "wait"), wait)) &&
        (peer < -1 || (peer == -1 ? isnan(num(a, "peer")) : num(a, "peer") == peer)))
      return a;
  }
  return NULL;
}

/* The diagnosis, once complete; NULL when this frame shows all of it. */
static const char *stall_incomplete(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  const cJSON *alerts = get(f, "alerts");
  int stalled = c->stall_rank, n = c->ranks;
  const cJSON *first = cJSON_GetArrayItem(alerts, 0);
  FAIL_IF(!first || strcmp(str(first, "kind"), "root") || num(first, "rank") != stalled,
          "the first alert is not the root on rank %d: %s", stalled,
          first ? str(first, "text") : "no alerts");
  for (int k = 0; k < c->comms; k++) {
    char hex[17];
    hex_of(nt_sim_comm_hash(k), hex);
    const cJSON *root = find_alert(alerts, "root", hex, stalled, NULL, -2);
    FAIL_IF(!root, "comm %d: no root alert for rank %d", k, stalled);
    /* Its own GPU: a GPU-side wait, every other rank waiting on it. */
    FAIL_IF(strcmp(str(root, "wait"), "recv_gpu_wait") &&
                strcmp(str(root, "wait"), "send_gpu_wait"),
            "comm %d: the root waits in %s", k, str(root, "wait"));
    FAIL_IF(num(root, "count") != n - 1 || !isnan(num(root, "peer")) || num(root, "age_s") < 1,
            "comm %d: root count %g peer %g age %g: %s", k, num(root, "count"), num(root, "peer"),
            num(root, "age_s"), str(root, "text"));
    char me[32];
    snprintf(me, sizeof me, "rank %d/%d", stalled, n);
    FAIL_IF(!strstr(str(root, "text"), me), "comm %d: root text: %s", k, str(root, "text"));
    /* The predecessor's sends wait for credit from it (running, stuck);
     * the stalled rank's own channels are stuck on its GPU. Ranks whose
     * work the GPU has not reached (queued) are not stalls (1.2). */
    int pred = (stalled - 1 + n) % n;
    FAIL_IF(!find_alert(alerts, "stall", hex, pred, "send_peer_wait", stalled),
            "comm %d: no send_peer_wait stall of rank %d on peer %d", k, pred, stalled);
    FAIL_IF(!find_alert(alerts, "stall", hex, stalled, NULL, -2), "comm %d: rank %d not stalled", k,
            stalled);
    FAIL_IF(!chain_reaches(alerts, hex, pred, stalled, n), "comm %d: rank %d does not lead to %d",
            k, pred, stalled);
  }
  return NULL;
}

static void stalled_rank_is_the_root_of_the_waits(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 4;
  c.comms = 2;
  c.interval_ms = 100;
  c.stall_rank = 2;
  c.stall_after_s = 2;
  c.duration_s = 30; /* bounded even if nobody stops it */
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c.ranks, 10) && viewer_start(&v, dir, "250", "1000");
  char why[512] = "no frame", wrong[512] = "";
  bool ok = false;
  int frames_with_root = 0, complete = 0;
  double end = now_s() + c.stall_after_s + 12;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    /* Never, in any frame, another rank as the root. */
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      if (!strcmp(str(a, "kind"), "root") && num(a, "rank") != c.stall_rank && !wrong[0])
        snprintf(wrong, sizeof wrong, "frame %d: %s", v.frames, str(a, "text"));
      if (!strcmp(str(a, "kind"), "root")) frames_with_root++;
    }
    /* Two frames in a row complete: the diagnosis is steady, not a blip. */
    complete = stall_incomplete(&c, f, why, sizeof why) == NULL ? complete + 1 : 0;
    ok = complete >= 2;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  if (wrong[0]) fprintf(stderr, "    a root alert for another rank: %s\n", wrong);
  CHECK(started);
  CHECK(ok);
  CHECK(!wrong[0]);
  CHECK(frames_with_root > 0);
}

/* ---- 4. a straggler ---- */

static void straggler_rank_is_named(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  /* Four ranks: without --straggler the simulated profiles make rank 2 the
   * one that lags (it thinks longest between operations), so naming rank 1
   * takes the straggler scenario. */
  c.ranks = 4;
  c.interval_ms = 100;
  c.straggler_rank = 1;
  c.straggle_ms = 300;
  c.duration_s = 30;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c.ranks, 10) && viewer_start(&v, dir, "250", "1000");
  int named[4] = {0}, top_is_straggler = 0, frames_with = 0;
  char text[512] = "";
  double end = now_s() + 15;
  while (started && named[c.straggler_rank] < 6) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    bool seen[4] = {false}, top = true;
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      if (strcmp(str(a, "kind"), "straggler")) continue;
      int r = (int)num(a, "rank");
      if (r < 0 || r >= 4) continue;
      /* Most behind first: the first straggler alert of the frame. */
      if (top && r == c.straggler_rank) {
        top_is_straggler++;
        snprintf(text, sizeof text, "%s", str(a, "text"));
      }
      top = false;
      if (!seen[r]) named[r]++;
      seen[r] = true;
    }
    frames_with += !top;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  bool ok = started && named[c.straggler_rank] >= 6;
  for (int r = 0; r < 4; r++)
    if (r != c.straggler_rank && named[r] >= named[c.straggler_rank]) ok = false;
  /* Most behind in most frames that name stragglers. */
  ok = ok && 2 * top_is_straggler > frames_with;
  ok = ok && strstr(text, "rank 1/4") && strstr(text, "is a straggler") && strstr(text, "behind");
  if (!ok)
    fprintf(stderr,
            "    %d frames, %d name stragglers; frames naming rank 0: %d, 1: %d, 2: %d, 3: %d; "
            "rank 1 most behind in %d; its alert: %s\n",
            v.frames, frames_with, named[0], named[1], named[2], named[3], top_is_straggler, text);
  CHECK(ok);
}

/* ---- 5. environment difference between ranks ---- */

static const char *env_mismatch(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(0), r);
    FAIL_IF(!rank, "rank %d missing", r);
    const cJSON *proc = find_process(f, num(rank, "pid"));
    FAIL_IF(!proc, "rank %d: no process", r);
    const cJSON *env = get(proc, "env");
    FAIL_IF(strcmp(str(env, "NCCL_ALGO"), "Ring"), "rank %d: NCCL_ALGO '%s'", r,
            str(env, "NCCL_ALGO"));
    if (r == 1)
      FAIL_IF(strcmp(str(env, "NCCL_PROTO"), "LL"), "rank 1: NCCL_PROTO '%s'",
              str(env, "NCCL_PROTO"));
    else
      FAIL_IF(get(env, "NCCL_PROTO") != NULL, "rank %d: NCCL_PROTO '%s'", r,
              str(env, "NCCL_PROTO"));
  }
  const cJSON *runs = get(f, "runs"), *cur = get(runs, "current");
  FAIL_IF(!cJSON_IsObject(cur), "no current run");
  FAIL_IF(num(cur, "processes") != c->ranks || num(cur, "ranks") != c->ranks,
          "current run: %g processes %g ranks", num(cur, "processes"), num(cur, "ranks"));
  FAIL_IF(strcmp(str(get(cur, "env"), "NCCL_ALGO"), "Ring"), "run env NCCL_ALGO '%s'",
          str(get(cur, "env"), "NCCL_ALGO"));
  FAIL_IF(!array_has_string(get(cur, "env_varies"), "NCCL_PROTO"), "NCCL_PROTO not in env_varies");
  FAIL_IF(array_has_string(get(cur, "env_varies"), "NCCL_ALGO"), "NCCL_ALGO in env_varies");
  FAIL_IF(cJSON_GetArraySize(get(cur, "env_varies")) != 1, "%d variables vary",
          cJSON_GetArraySize(get(cur, "env_varies")));
  FAIL_IF(!cJSON_IsNull(get(runs, "previous")), "a previous run");
  return NULL;
}

static void environment_difference_between_ranks(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 3;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = 30;
  c.env[c.nenv++] = "NCCL_ALGO=Ring";
  c.rank_env[0].rank = 1;
  c.rank_env[0].kv = "NCCL_PROTO=LL";
  c.nrank_env = 1;
  CHECK(run_until(&c, dir, env_mismatch, 15, "environment"));
}

/* ---- 6. a job restart with a changed environment ---- */

static const char *restart_mismatch(const nt_sim_config *a, const cJSON *f, char *why, size_t cap) {
  const cJSON *runs = get(f, "runs"), *cur = get(runs, "current"), *prev = get(runs, "previous");
  FAIL_IF(!cJSON_IsObject(prev), "no previous run (current run %g, %d processes)", num(cur, "id"),
          cJSON_GetArraySize(get(f, "processes")));
  FAIL_IF(!cJSON_IsObject(cur), "no current run");
  FAIL_IF(num(prev, "id") != 1 || num(cur, "id") != 2, "run ids %g -> %g", num(prev, "id"),
          num(cur, "id"));
  FAIL_IF(strcmp(str(get(prev, "env"), "NCCL_PROTO"), "Simple"), "previous NCCL_PROTO '%s'",
          str(get(prev, "env"), "NCCL_PROTO"));
  FAIL_IF(strcmp(str(get(cur, "env"), "NCCL_PROTO"), "LL"), "current NCCL_PROTO '%s'",
          str(get(cur, "env"), "NCCL_PROTO"));
  FAIL_IF(num(prev, "processes") != a->ranks || num(cur, "processes") != a->ranks,
          "processes %g -> %g", num(prev, "processes"), num(cur, "processes"));
  const cJSON *diff = get(runs, "env_diff");
  FAIL_IF(cJSON_GetArraySize(diff) != 1, "%d variables in env_diff", cJSON_GetArraySize(diff));
  const cJSON *d = cJSON_GetArrayItem(diff, 0);
  FAIL_IF(strcmp(str(d, "name"), "NCCL_PROTO") || strcmp(str(d, "previous"), "Simple") ||
              strcmp(str(d, "current"), "LL"),
          "env_diff %s: %s -> %s", str(d, "name"), str(d, "previous"), str(d, "current"));
  FAIL_IF(!cJSON_IsFalse(get(d, "previous_varies")) || !cJSON_IsFalse(get(d, "current_varies")),
          "env_diff: NCCL_PROTO said to vary by rank");
  /* The previous run's operations are kept: all of them. */
  double count = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, get(prev, "ops")) count += num(o, "count");
  FAIL_IF(cJSON_GetArraySize(get(prev, "ops")) == 0 || count != (double)a->iterations * a->ranks,
          "previous run: %d op rows, %g ops, want %d", cJSON_GetArraySize(get(prev, "ops")), count,
          a->iterations * a->ranks);
  return NULL;
}

/* Whether the frame shows `n` processes, all ended. */
static bool all_ended(const cJSON *f, int n) {
  int ended = 0, procs = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, get(f, "processes")) {
    procs++;
    ended += cJSON_IsTrue(get(p, "ended"));
  }
  return procs == n && ended == n;
}

static void job_restart_with_changed_environment(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config a, b;
  base_config(&a, dir);
  a.ranks = 2;
  a.channels = 2;
  a.steps = 2;
  a.iterations = 6;
  a.deterministic = true;
  a.linger_s = 3; /* the viewer sees it live, then it ends by itself */
  b = a;
  a.env[a.nenv++] = "NCCL_PROTO=Simple";
  b.env[b.nenv++] = "NCCL_PROTO=LL";
  b.linger_s = 30;
  viewer v = {.fd = -1, .pid = -1};
  pid_t sim_a = nt_sim_spawn(&a), sim_b = -1;
  bool started =
      sim_a > 0 && wait_publishers(dir, a.ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false, live_a = false, ended_a = false;
  int a_status = -1;
  double end = now_s() + 15;
  /* Job A, live, then ended (its publishers send their final snapshot). */
  while (started && !ended_a) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *cur = get(get(f, "runs"), "current");
    if (!live_a && cJSON_GetArraySize(get(f, "processes")) == a.ranks &&
        !strcmp(str(get(cur, "env"), "NCCL_PROTO"), "Simple"))
      live_a = true;
    if (a_status == -1) a_status = wait_exit(sim_a, 0);
    ended_a = live_a && a_status != -1 && all_ended(f, a.ranks);
    cJSON_Delete(f);
  }
  if (a_status == -1) stop_group(&sim_a);
  snprintf(why, sizeof why, "job A: seen live %d, exit status %d, seen ended %d", live_a, a_status,
           ended_a);
  /* Job B, with another protocol, in the same directory. */
  if (ended_a) sim_b = nt_sim_spawn(&b);
  end = now_s() + 30; /* generous: a loaded 2-core machine under ASan starts ranks slowly */
  while (sim_b > 0 && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = restart_mismatch(&a, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim_b);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  CHECK(started);
  CHECK(live_a);
  CHECK(a_status >= 0 && WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0);
  CHECK(ended_a);
  CHECK(ok);
}

/* ---- 7. the viewer attached before the job ---- */

/* README: nccltop "attaches at any time (before or after the job starts)".
 * Frames come while nothing publishes, and the job shows up when it starts. */
static void viewer_attached_before_the_job(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = 30;
  viewer v = {.fd = -1, .pid = -1};
  bool started = viewer_start(&v, dir, "100", "2000");
  int empty = 0, seen = 0;
  pid_t sim = -1;
  double end = now_s() + 20;
  while (started && seen < 2) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    int procs = cJSON_GetArraySize(get(f, "processes"));
    if (procs == 0 && cJSON_GetArraySize(get(f, "alerts")) == 0 && num(f, "publishers") == 0)
      empty++;
    /* A few empty frames, then the job. */
    if (empty == 3 && sim < 0) sim = nt_sim_spawn(&c);
    const cJSON *r0 = find_rank(f, nt_sim_comm_hash(0), 0),
                *r1 = find_rank(f, nt_sim_comm_hash(0), 1);
    if (procs == 2 && r0 && r1 && num(r0, "colls") == 3 && num(r1, "colls") == 3) seen++;
    cJSON_Delete(f);
  }
  int st = -1;
  if (started && v.pid > 0 && waitpid(v.pid, &st, WNOHANG) == v.pid) v.pid = -1; /* it died */
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (seen < 2)
    fprintf(stderr, "    %d frames (%d empty), job seen in %d; the viewer %s\n", v.frames, empty,
            seen,
            st == -1          ? "was still running"
            : WIFSIGNALED(st) ? "was killed by a signal"
                              : "exited");
  CHECK(started);
  CHECK(empty >= 3);
  CHECK(seen >= 2);
}

int main(void) {
  scenario_init();
  TEST_RUN(stalled_rank_is_the_root_of_the_waits);
  TEST_RUN(straggler_rank_is_named);
  TEST_RUN(environment_difference_between_ranks);
  TEST_RUN(job_restart_with_changed_environment);
  TEST_RUN(viewer_attached_before_the_job);
  return TEST_DONE();
}

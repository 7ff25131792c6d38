/* Issue 9 end to end: each application-side scenario (--alltoall,
 * --broadcast, --graph, --run-ahead) with the real plugin and
 * `nccltop -b --json`. Each test asserts what nccltop shows right (the
 * proxy side's exact totals, the events it counts; since issue 10 item 4
 * also a Broadcast counted once per call on 2.28 and 2.29, and graph
 * replays that keep `launched` up with `done`, with no alert) and prints,
 * as "observed:" lines, what it shows of the operations themselves (a Send
 * to self that never completes, false stall alerts under run-ahead). */
#include "scenario_harness.h"

/* ---- what a frame shows ---- */

static const cJSON *find_channel(const cJSON *rank, int channel, const char *dir) {
  const cJSON *c;
  cJSON_ArrayForEach(c, get(rank, "channels")) {
    if (num(c, "channel") == channel && !strcmp(str(c, "dir"), dir)) return c;
  }
  return NULL;
}

/* The proxy side of communicator k: channels and proxy thread exactly as
 * nt_sim_expect_* say, and `colls` Coll events per rank. */
static const char *proxy_side_mismatch(const nt_sim_config *c, const cJSON *f, int k, double colls,
                                       char *why, size_t cap) {
  static const char *const names[5] = {"idle", "active", "sleep", "wakeup", "append"};
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(k), r);
    FAIL_IF(!rank, "rank %d comm %d missing", r, k);
    FAIL_IF(num(rank, "colls") != colls, "rank %d comm %d: colls %g, want %g", r, k,
            num(rank, "colls"), colls);
    for (int ch = 0; ch < c->channels; ch++)
      for (int dir = 0; dir < 2; dir++) {
        nt_sim_channel_expect e;
        nt_sim_expect_channel(c, r, k, ch, dir, &e);
        const cJSON *x = find_channel(rank, ch, dir ? "recv" : "send");
        if (!e.steps) {
          FAIL_IF(x && num(x, "steps") != 0, "rank %d comm %d ch %d: steps", r, k, ch);
          continue;
        }
        FAIL_IF(!x, "rank %d comm %d ch %d dir %d missing", r, k, ch, dir);
        const cJSON *w = get(x, "wait_ns");
        double got[5] = {num(x, "steps"), num(x, "bytes"), 0, 0, 0};
        double want[5] = {(double)e.steps, (double)e.bytes, (double)e.wait_ns[0],
                          (double)e.wait_ns[1], (double)e.wait_ns[2]};
        for (int i = 0; i < 3; i++) got[2 + i] = num(w, nt_wait_name(nt_dir_wait(dir, i)));
        for (int i = 0; i < 5; i++)
          FAIL_IF(got[i] != want[i], "rank %d comm %d ch %d dir %d field %d: %g, want %g", r, k, ch,
                  dir, i, got[i], want[i]);
      }
    nt_sim_proxy_expect pe;
    nt_sim_expect_proxy(c, r, k, &pe);
    const cJSON *proxy = cJSON_GetArrayItem(get(rank, "proxy"), 0);
    FAIL_IF(!proxy, "rank %d comm %d: no proxy thread", r, k);
    for (int s = 0; s < 5; s++)
      FAIL_IF(num(get(proxy, "state_ns"), names[s]) != (double)pe.state_ns[s],
              "rank %d comm %d proxy %s %g, want %g", r, k, names[s],
              num(get(proxy, "state_ns"), names[s]), (double)pe.state_ns[s]);
  }
  return NULL;
}

/* Prints what the frame shows of operations and alerts, for the report. */
static void observe(const char *label, const cJSON *f) {
  const cJSON *x;
  fprintf(stderr, "    observed (%s):", label);
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    fprintf(stderr, " [%s %s count %g done %g bytes %g]", str(x, "kind"), str(x, "func"),
            num(x, "count"), num(x, "done"), num(x, "bytes"));
  }
  cJSON_ArrayForEach(x, get(f, "ranks")) {
    const cJSON *q;
    fprintf(stderr, " {comm %.4s.. rank %g colls %g in_flight %d api coll %g p2p %g captured %g",
            str(x, "comm") + 12, num(x, "rank"), num(x, "colls"),
            cJSON_GetArraySize(get(x, "in_flight")), num(get(x, "api"), "coll_api"),
            num(get(x, "api"), "p2p_api"), num(get(x, "api"), "graph_captured"));
    cJSON_ArrayForEach(q, get(x, "seq")) {
      fprintf(stderr, " %s %g/%g", str(q, "func"), num(q, "launched"), num(q, "done"));
    }
    fprintf(stderr, "}");
  }
  int alerts = 0;
  cJSON_ArrayForEach(x, get(f, "alerts")) {
    if (alerts++ < 4) fprintf(stderr, " <%s: %s>", str(x, "kind"), str(x, "text"));
  }
  fprintf(stderr, " alerts %d\n", alerts);
}

/* Runs deterministic job c under a viewer until `check` passes (or 60 s),
 * prints what the last frame shows; true if a frame passed. */
static bool run_det(nt_sim_config *c, frame_check check, const char *label) {
  char dir[] = "/tmp/nccltop-app-XXXXXX";
  if (!mkdtemp(dir)) return false;
  c->dir = dir;
  c->deterministic = true;
  c->linger_s = 60;
  pid_t sim = nt_sim_spawn(c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c->ranks, 20) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false;
  cJSON *last = NULL;
  for (double end = now_s() + 60; started && !ok;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = check(c, f, why, sizeof why) == NULL;
    cJSON_Delete(last);
    last = f;
  }
  if (last) observe(label, last);
  cJSON_Delete(last);
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    %s: %s\n", label, started ? why : "did not start");
  return ok;
}

static void small_job(nt_sim_config *c) {
  base_config(c, NULL);
  c->ranks = 2;
  c->channels = 2;
  c->steps = 3;
}

/* ---- the scenarios ---- */

/* A healthy job: no alert. */
static const char *no_alert(const cJSON *f, char *why, size_t cap) {
  const cJSON *a = cJSON_GetArrayItem(get(f, "alerts"), 0);
  FAIL_IF(a, "alert %s: %s", str(a, "kind"), str(a, "text"));
  return NULL;
}

/* Rank r's sequence row of func in communicator k: launched, done. */
static const cJSON *seq_row(const cJSON *f, int k, int r, const char *func) {
  const cJSON *q;
  cJSON_ArrayForEach(q, get(find_rank(f, nt_sim_comm_hash(k), r), "seq")) {
    if (!strcmp(str(q, "func"), func)) return q;
  }
  return NULL;
}

static const char *alltoall_right(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(c, 0, 0, &ce);
  if (proxy_side_mismatch(c, f, 0, (double)ce.colls, why, cap)) return why;
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *api = get(find_rank(f, nt_sim_comm_hash(0), r), "api");
    FAIL_IF(num(api, "p2p_api") != (double)ce.p2ps, "rank %d: p2p_api %g, want %g", r,
            num(api, "p2p_api"), (double)ce.p2ps);
  }
  return no_alert(f, why, cap);
}

static void alltoall_end_to_end(void) {
  nt_sim_config c;
  small_job(&c);
  c.iterations = 3;
  c.alltoall = true;
  CHECK(run_det(&c, alltoall_right, "alltoall 2.28"));
}

/* Broadcast: 2.28 a collectives row like any other (bytes right, ncclInt8
 * counts); 2.29 nothing but the CollApi, from which nccltop counts it: once
 * per call either way, with the same bytes, launched once per call (the
 * straggler comparison), and on 2.29 with an unknown time (source
 * "collapi", timing "unknown", bandwidths null). */
static const char *bcast_counted_once(const nt_sim_config *c, const cJSON *f, char *why,
                                      size_t cap) {
  nt_sim_config c28 = *c;
  c28.nccl_version = 228; /* where Broadcast is a Coll: the expectations count it */
  nt_sim_op_expect ex[32];
  int n = nt_sim_expect_ops(&c28, ex, 32);
  FAIL_IF(n < 0, "expectations");
  double want = 0, want_bytes = 0, count = 0, bytes = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(ex[i].func, "Broadcast"))
      want += (double)ex[i].count, want_bytes += (double)ex[i].bytes;
  FAIL_IF(!want, "the job has no Broadcast");
  bool hidden = c->nccl_version >= 229;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    if (strcmp(str(x, "func"), "Broadcast")) continue;
    count += num(x, "count"), bytes += num(x, "bytes");
    FAIL_IF(strcmp(str(x, "source"), hidden ? "collapi" : "coll"), "Broadcast source %s",
            str(x, "source"));
    FAIL_IF(hidden && (strcmp(str(x, "timing"), "unknown") || !cJSON_IsNull(get(x, "busbw_gbs"))),
            "Broadcast timing %s", str(x, "timing"));
  }
  FAIL_IF(count != want * c->ranks || bytes != want_bytes * c->ranks,
          "Broadcast count %g bytes %g, want %g %g", count, bytes, want * c->ranks,
          want_bytes * c->ranks);
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *q = seq_row(f, 0, r, "Broadcast");
    FAIL_IF(!q || num(q, "launched") != want, "rank %d: Broadcast launched %g, want %g", r,
            q ? num(q, "launched") : -1, want);
  }
  return no_alert(f, why, cap);
}

static const char *bcast_right(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(c, 0, 0, &ce);
  if (proxy_side_mismatch(c, f, 0, (double)ce.colls, why, cap)) return why;
  nt_sim_op_expect ex[32];
  int n = nt_sim_expect_ops(c, ex, 32);
  FAIL_IF(n < 0, "expectations");
  for (int i = 0; i < n; i++) {
    double count = 0, bytes = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, get(f, "collectives")) {
      if (!strcmp(str(x, "func"), ex[i].func) && num(x, "bucket") == ex[i].bucket)
        count += num(x, "count"), bytes += num(x, "bytes");
    }
    FAIL_IF(count != (double)ex[i].count * c->ranks || bytes != (double)ex[i].bytes * c->ranks,
            "%s bucket %u: count %g bytes %g", ex[i].func, ex[i].bucket, count, bytes);
  }
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *api = get(find_rank(f, nt_sim_comm_hash(0), r), "api");
    FAIL_IF(num(api, "coll_api") != c->iterations, "rank %d: coll_api %g", r, num(api, "coll_api"));
  }
  return bcast_counted_once(c, f, why, cap);
}

static void broadcast_end_to_end(void) {
  static const int versions[2] = {228, 229};
  for (int v = 0; v < 2; v++) {
    nt_sim_config c;
    small_job(&c);
    c.iterations = 3;
    c.broadcast = true;
    c.nccl_version = versions[v];
    CHECK(run_det(&c, bcast_right, versions[v] == 228 ? "broadcast 2.28" : "broadcast 2.29"));
  }
}

/* Graph, nccltop's default classes (no KernelCh): comm 0 replays show all
 * their Coll events, with the same seqNumber each time, and `launched`
 * counts each replay, so it keeps up with `done`; the intra-node comm 1
 * shows only the capture's. */
static const char *graph_right(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  if (proxy_side_mismatch(c, f, 0, (double)c->iterations, why, cap)) return why;
  if (proxy_side_mismatch(c, f, 1, 3, why, cap)) return why;
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *q;
    double launched = 0;
    cJSON_ArrayForEach(q, get(find_rank(f, nt_sim_comm_hash(0), r), "seq")) {
      FAIL_IF(num(q, "launched") != num(q, "done"), "rank %d %s: launched %g, done %g", r,
              str(q, "func"), num(q, "launched"), num(q, "done"));
      launched += num(q, "launched");
    }
    FAIL_IF(launched != c->iterations, "rank %d: launched %g in all, want %d", r, launched,
            c->iterations);
  }
  return no_alert(f, why, cap);
}

static void graph_end_to_end(void) {
  nt_sim_config c;
  small_job(&c);
  c.comms = 2;
  c.iterations = 6;
  c.graph = true;
  CHECK(run_det(&c, graph_right, "graph"));
}

/* Run-ahead, deterministic: the GPU's compute shows in SendGPUWait. */
static const char *ahead_right(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  return proxy_side_mismatch(c, f, 0, (double)c->iterations, why, cap);
}

static void run_ahead_end_to_end(void) {
  nt_sim_config c;
  small_job(&c);
  c.iterations = 6;
  c.run_ahead_ms = 4000;
  CHECK(run_det(&c, ahead_right, "run-ahead 4000, deterministic"));
}

/* Run-ahead, real time: operations complete, and while steps wait 4 s for
 * the GPU (queued work, C5) no alert of any kind is raised. */
static void run_ahead_in_real_time(void) {
  char dir[] = "/tmp/nccltop-app-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  small_job(&c);
  c.dir = dir;
  c.run_ahead_ms = 4000;
  c.duration_s = 14;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c.ranks, 20) && viewer_start(&v, dir, "200", "2000");
  double done = 0;
  int kinds[6] = {0};
  static const char *const names[6] = {"root", "stall", "hung_op", "straggler", "silent", "drops"};
  cJSON *last = NULL;
  for (double end = now_s() + 12; started;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *x;
    double d = 0;
    cJSON_ArrayForEach(x, get(f, "collectives")) d += num(x, "done");
    if (d > done) done = d;
    cJSON_ArrayForEach(x, get(f, "alerts")) {
      for (int k = 0; k < 6; k++) kinds[k] += !strcmp(str(x, "kind"), names[k]);
    }
    cJSON_Delete(last);
    last = f;
  }
  if (last) observe("run-ahead 4000, real time", last);
  cJSON_Delete(last);
  fprintf(stderr, "    observed (run-ahead 4000, real time): alert-frames");
  for (int k = 0; k < 6; k++) fprintf(stderr, " %s %d", names[k], kinds[k]);
  fprintf(stderr, ", operations done %g\n", done);
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  CHECK(started);
  CHECK(done > 0);
  for (int k = 0; k < 6; k++) CHECK(kinds[k] == 0);
}

/* The phase the real-time schedule (sim/app.c rt_step) enqueues func in,
 * and for AllReduce the other one it may be in. */
static bool phase_fits(const char *func, const char *phase) {
  if (!strcmp(func, "AllGather")) return !strcmp(phase, "forward");
  if (!strcmp(func, "ReduceScatter")) return !strcmp(phase, "backward");
  if (!strcmp(func, "AllReduce")) return !strcmp(phase, "backward") || !strcmp(phase, "optimizer");
  return true; /* Send/Recv: forward, but a self pair is not counted */
}

/* Two communicators per rank, each enqueued from its own thread that names
 * its own phase (the demo's default): every operation is in the phase its
 * own thread named. Before, a tag was process-wide, and about a third of
 * the operations took the other communicator's phase (newcomer run 3,
 * finding 6). Checked on the "recent" operations of every frame: each
 * function in its schedule's phase, every rank agreeing on each operation. */
typedef struct {
  char key[96], phase[32];
} seen_op;

static void phases_follow_their_thread(void) {
  char dir[] = "/tmp/nccltop-app-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  small_job(&c);
  c.ranks = 4;
  c.comms = 2;
  c.dir = dir;
  c.duration_s = 14;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_publishers(dir, c.ranks, 20) && viewer_start(&v, dir, "200", "5000");
  static seen_op seen[4096];
  int nseen = 0, checked = 0, wrong = 0, split = 0;
  char first_bad[200] = "";
  for (double end = now_s() + 8; started;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *x;
    cJSON_ArrayForEach(x, get(f, "recent")) {
      const char *func = str(x, "func"), *phase = str(x, "phase");
      if (!strcmp(str(x, "kind"), "p2p")) continue;
      checked++;
      if (!phase_fits(func, phase)) {
        if (!wrong++)
          snprintf(first_bad, sizeof first_bad, "%s #%g of comm %s on rank %g in '%s'", func,
                   num(x, "seq"), str(x, "comm"), num(x, "rank"), phase);
      }
      char key[96];
      snprintf(key, sizeof key, "%s/%s/%g", str(x, "comm"), func, num(x, "seq"));
      int i = 0;
      while (i < nseen && strcmp(seen[i].key, key)) i++;
      if (i == nseen && nseen < (int)(sizeof seen / sizeof seen[0])) {
        snprintf(seen[i].key, sizeof seen[i].key, "%s", key);
        snprintf(seen[i].phase, sizeof seen[i].phase, "%s", phase);
        nseen++;
      } else if (i < nseen && strcmp(seen[i].phase, phase)) {
        split++;
      }
    }
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  fprintf(stderr,
          "    %d recent collectives checked (%d operations): %d in another phase%s%s, %d "
          "with ranks disagreeing\n",
          checked, nseen, wrong, wrong ? ", first " : "", first_bad, split);
  CHECK(started);
  CHECK(nseen >= 20);
  CHECK(wrong == 0);
  CHECK(split == 0);
}

int main(void) {
  scenario_init();
  TEST_RUN(alltoall_end_to_end);
  TEST_RUN(broadcast_end_to_end);
  TEST_RUN(graph_end_to_end);
  TEST_RUN(run_ahead_end_to_end);
  TEST_RUN(run_ahead_in_real_time);
  TEST_RUN(phases_follow_their_thread);
  return TEST_DONE();
}

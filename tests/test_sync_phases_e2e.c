/* Sync-phase evidence end to end: `nccltop sim --nccl-version 2.31` (ABI
 * v7, NCCLTOP_EVENTS=default,kernelch: KernelPhase events), real time,
 * through the real plugin and ZeroMQ to `nccltop -b --json`.
 *
 * - --straggler 1 --straggle-ms 300 at 4 ranks: the other ranks' kernels
 *   wait for rank 1 in initial_sync (the simulator's kernels wait there for
 *   the last rank to launch), so rank 1, and no other rank, is named a
 *   straggler with evidence sync_phases;
 * - no straggler, every rank enqueuing ahead (--run-ahead: none is ever
 *   the last to launch for long): no sync_phases alert in any frame;
 * - the straggler under 2.30 (ABI v6: no KernelPhase): no sync_phases
 *   alert (the evidence needs NCCL 2.31).
 * Without --run-ahead the simulator's ranks think for different times
 * between operations (rank % 3 x 10 ms more), so its slowest thinker paces
 * a plain real-time job: tests/test_diagnosis.c says so too. */
#include "scenario_harness.h"

typedef struct {
  int frames;      /* with every rank present */
  int named[4];    /* frames naming each rank with sync_phases evidence */
  char first[512]; /* the first sync_phases alert seen */
} seen;

static bool job(nt_sim_config *c, char *dir, int version) {
  snprintf(dir, 24, "/tmp/nccltop-syn-XXXXXX");
  if (!mkdtemp(dir)) return false;
  base_config(c, dir);
  c->ranks = 4;
  c->channels = 2;
  c->interval_ms = 50;
  c->duration_s = 14;
  c->nccl_version = version;
  c->env[c->nenv++] = "NCCLTOP_EVENTS=default,kernelch";
  return true;
}

/* Runs job c for up to `seconds` of frames (`nccltop -b --json -d 250`). */
static bool watch(const nt_sim_config *c, const char *dir, double seconds, seen *s) {
  memset(s, 0, sizeof *s);
  viewer v = {.fd = -1, .pid = -1};
  pid_t sim = nt_sim_spawn(c);
  bool started =
      sim > 0 && wait_publishers(dir, c->ranks, 30) && viewer_start(&v, dir, "250", "2000");
  for (double end = now_s() + seconds; started;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    bool all = true;
    for (int r = 0; r < c->ranks; r++) all &= find_rank(f, nt_sim_comm_hash(0), r) != NULL;
    s->frames += all;
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      const char *ev = str(a, "evidence");
      if (strcmp(ev, "sync_phases")) continue;
      int r = (int)num(a, "rank");
      if (!s->first[0])
        snprintf(s->first, sizeof s->first, "frame %d: %s", v.frames, str(a, "text"));
      if (r >= 0 && r < 4) s->named[r]++;
    }
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (s->first[0]) fprintf(stderr, "    first sync_phases alert, %s\n", s->first);
  fprintf(stderr, "    %d frames; named with sync_phases: %d %d %d %d\n", s->frames, s->named[0],
          s->named[1], s->named[2], s->named[3]);
  return started;
}

static void straggler_is_named_by_sync_phases(void) {
  char dir[24];
  nt_sim_config c;
  CHECK(job(&c, dir, 231));
  c.comms = 1;
  c.straggler_rank = 1;
  c.straggle_ms = 300;
  seen s;
  CHECK(watch(&c, dir, 12, &s));
  CHECK(s.frames >= 20);
  CHECK(s.named[1] >= 5); /* named, again and again */
  CHECK_EQ_U64(s.named[0] + s.named[2] + s.named[3], 0);
  CHECK(strstr(s.first, "rank 1/4 ") &&
        strstr(s.first, "they wait for it (NCCL 2.31 kernel phases)"));
}

static void ranks_enqueuing_ahead_raise_no_sync_alert(void) {
  char dir[24];
  nt_sim_config c;
  CHECK(job(&c, dir, 231));
  c.comms = 1;
  c.run_ahead_ms = 50;
  seen s;
  CHECK(watch(&c, dir, 12, &s));
  CHECK(s.frames >= 20);
  CHECK_EQ_U64(s.named[0] + s.named[1] + s.named[2] + s.named[3], 0);
  CHECK(!s.first[0]);
}

static void nccl_2_30_gives_no_sync_evidence(void) {
  char dir[24];
  nt_sim_config c;
  CHECK(job(&c, dir, 230));
  c.comms = 1;
  c.straggler_rank = 1;
  c.straggle_ms = 300;
  seen s;
  CHECK(watch(&c, dir, 8, &s));
  CHECK(s.frames >= 12);
  CHECK(!s.first[0]);
}

int main(void) {
  scenario_init();
  TEST_RUN(straggler_is_named_by_sync_phases);
  TEST_RUN(ranks_enqueuing_ahead_raise_no_sync_alert);
  TEST_RUN(nccl_2_30_gives_no_sync_evidence);
  return TEST_DONE();
}

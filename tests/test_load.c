/* Load: one simulated job of N ranks (real processes, the real plugin, each
 * publishing a snapshot every 100 ms, the default) watched by the real
 * viewer.
 *
 * - Batch mode (`nccltop -b --json`, a frame every 500 ms, its default):
 *   every frame keeps every publisher, frames keep coming on time, the
 *   messages keep flowing, memory stays flat.
 * - The interactive screen in a pseudo-terminal: it shows every publisher
 *   and answers keys.
 *
 * N is 256 in `make test` (sized for a 2-core CI machine under ASan);
 * NCCLTOP_LOAD_RANKS raises it, NCCLTOP_LOAD_SECONDS sets the measured window
 * (default 8). Against the non-sanitized build (make build/tests/test_load;
 * NCCLTOP_LOAD_RANKS=1024 build/tests/test_load) it prints the same figures
 * for docs/RELIABILITY.md. The bounds asserted are generous (a viewer that
 * stops reading, loses publishers or grows without bound fails; a slow
 * machine does not): the figures are printed, never compared with a goal.
 */
#include <string.h>
#include <sys/resource.h>

#include "scenario_harness.h"
#include "vterm_harness.h"
#include "lib/proc_status.h"

static char dir[] = "/tmp/nccltop-loadtest-XXXXXX";
static int ranks = 256;
static double window_s = 8;
static pid_t job = -1;

static double proc_cpu_s(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  unsigned long ut = 0, st = 0;
  /* comm may hold spaces; it is "nccltop" here */
  if (!f || fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    ut = st = 0;
  if (f) fclose(f);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- batch ---- */

typedef struct {
  int procs, stale, ended;
  double lost, time, messages;
} frame_info;

static frame_info info_of(const cJSON *f) {
  frame_info i = {.time = num(f, "time_s"), .messages = num(f, "messages")};
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
    i.procs++;
    i.stale += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "stale"));
    i.ended += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "ended"));
    i.lost += num(p, "lost_messages");
  }
  return i;
}

static void batch_viewer_keeps_every_publisher_on_time(void) {
  viewer v;
  double t0 = now_s();
  CHECK(viewer_start(&v, dir, "500", "2000")); /* the defaults */
  /* Until every publisher is in a frame, live. */
  double all_at = -1;
  for (double end = now_s() + 30 + ranks / 10.0; all_at < 0 && now_s() < end;) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    frame_info i = info_of(f);
    if (i.procs == ranks && i.stale == 0) all_at = now_s() - t0;
    cJSON_Delete(f);
  }
  /* One more second for every process's second snapshot buffer, then the
   * measured window. */
  for (double end = now_s() + 1; all_at >= 0 && now_s() < end;) cJSON_Delete(viewer_frame(&v, end));
  long rss0 = proc_status_kb(v.pid, "VmRSS");
  double cpu0 = proc_cpu_s(v.pid), w0 = now_s();
  int frames = 0, fewest = ranks, most_stale = 0, frames_with_stale = 0, ended = 0;
  double max_gap = 0, last_arrival = w0, first_t = -1, last_t = 0, first_m = 0, last_m = 0;
  double lost0 = -1, lost = 0;
  while (all_at >= 0 && now_s() - w0 < window_s) {
    cJSON *f = viewer_frame(&v, now_s() + 10);
    double at = now_s();
    if (!f) {
      max_gap = 1e9;
      break;
    }
    frame_info i = info_of(f);
    cJSON_Delete(f);
    if (frames++ > 0 && at - last_arrival > max_gap) max_gap = at - last_arrival;
    last_arrival = at;
    if (i.procs < fewest) fewest = i.procs;
    if (i.stale > most_stale) most_stale = i.stale;
    frames_with_stale += i.stale > 0;
    ended += i.ended;
    if (first_t < 0) first_t = i.time, first_m = i.messages, lost0 = i.lost;
    last_t = i.time;
    last_m = i.messages;
    lost = i.lost;
  }
  double cpu = proc_cpu_s(v.pid) - cpu0, wall = now_s() - w0;
  long rss1 = proc_status_kb(v.pid, "VmRSS"), hwm = proc_status_kb(v.pid, "VmHWM");
  viewer_stop(&v);
  double rate = last_t > first_t ? (last_m - first_m) / (last_t - first_t) : 0;
  fprintf(stderr,
          "    %d publishers: all live in a frame after %.1f s; over %.1f s: %d frames (every "
          "0.5 s asked), largest gap %.2f s, fewest publishers %d, stale at most %d (in %d "
          "frames), %.0f messages/s (%.0f expected), %.0f lost; viewer CPU %.0f%% of a core, "
          "RSS %ld -> %ld KiB (peak %ld)\n",
          ranks, all_at, wall, frames, max_gap, fewest, most_stale, frames_with_stale, rate,
          ranks * 10.0, lost - (lost0 > 0 ? lost0 : 0), 100 * cpu / wall, rss0, rss1, hwm);
  CHECK(all_at >= 0);
  CHECK(fewest == ranks); /* every publisher kept in every frame */
  CHECK(ended == 0);
  /* Frames keep coming (a quarter of the asked rate: each frame of 256
   * processes is megabytes of JSON that this sanitized test parses too, and
   * a busy 2-core machine gave 7 in 9.8 s), none 10 frames late. */
  CHECK(frames >= (int)(window_s / 0.5) / 4);
  CHECK(max_gap < 5.0);
  CHECK(rate > ranks * 10.0 * 0.3);      /* the messages keep flowing */
  CHECK(rss1 - rss0 < 16384 + rss0 / 4); /* memory stays flat */
}

/* ---- interactive ---- */

static void interactive_viewer_answers_keys_under_load(void) {
  char want[64];
  snprintf(want, sizeof want, "publishers %d ", ranks);
  char *argv[] = {nccltop, "--dir", dir, NULL};
  vt_term t;
  CHECK(vt_start(&t, 50, 160, argv, NULL) == 0);
  double t0 = vt_now();
  bool all = vt_wait_for(&t, want, 30 + ranks / 10.0) && vt_wait_for(&t, "LIVE", 10);
  double shown = vt_now() - t0;
  static const struct {
    const char *keys, *shows;
  } steps[] = {{"3", "[channels]"},  {"2", "[proxy threads]"}, {"\033OP", "Keys"},
               {"\t", "[overview]"}, {"3", "[channels]"},      {"2", "[proxy threads]"}};
  double worst = 0, sum = 0;
  int answered = 0;
  for (size_t i = 0; all && i < sizeof steps / sizeof steps[0]; i++) {
    double k0 = vt_now();
    vt_send(&t, steps[i].keys);
    if (!vt_wait_for(&t, steps[i].shows, 10)) break;
    double d = vt_now() - k0;
    worst = d > worst ? d : worst;
    sum += d;
    answered++;
  }
  double r0 = vt_now();
  if (all) vt_resize(&t, 40, 130); /* a resize is answered too: the next */
  if (all) vt_send(&t, "3");       /* view is drawn at the new size */
  bool resized = all && vt_wait_for(&t, "[channels]", 10) && vt_wait_for(&t, want, 10);
  double resize_ms = 1000 * (vt_now() - r0);
  bool still_all = resized && strstr(vt_text(&t), want) != NULL;
  vt_send(&t, "q");
  int rc = vt_wait_exit(&t, 10);
  vt_stop(&t);
  fprintf(stderr,
          "    screen: all %d publishers shown after %.1f s; %d of 6 keys answered, mean %.0f ms, "
          "worst %.0f ms; redrawn after a resize in %.0f ms; quit with status %d\n",
          ranks, shown, answered, answered ? 1000 * sum / answered : 0, 1000 * worst, resize_ms,
          rc);
  CHECK(all);
  CHECK(answered == 6);
  CHECK(still_all);
  CHECK(rc == 0);
}

int main(void) {
  scenario_init();
  const char *e = getenv("NCCLTOP_LOAD_RANKS");
  if (e && atoi(e) > 0) ranks = atoi(e) > 1024 ? 1024 : atoi(e);
  if ((e = getenv("NCCLTOP_LOAD_SECONDS")) && atof(e) > 0) window_s = atof(e);
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  /* the viewer's ASan (if it has one) keeps freed memory only briefly, so
   * its RSS shows what the viewer holds, not ASan's quarantine */
  free(asan_small_quarantine());
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = ranks;
  c.channels = 4;
  c.steps = 4;
  c.iterations = 5;
  c.deterministic = true;
  c.linger_s = 600;
  c.interval_ms = 100; /* the plugin's default */
  job = nt_sim_spawn(&c);
  double t0 = now_s();
  if (job > 0 && wait_publishers(dir, ranks, 60 + ranks / 5.0)) {
    fprintf(stderr, "    %d of %d ranks publishing after %.1f s\n", ranks, ranks, now_s() - t0);
    /* A real node runs a rank per GPU; here 256 sanitized ranks share two
     * cores, and at equal priority the scheduler gives the viewer 1/257 of
     * them (a CI run saw 6 frames in 10 s at 12% of a core). Lowering the
     * job's priority gives the viewer the CPU a node would have spare, so
     * what is measured is the viewer, not the oversubscription. */
    if (setpriority(PRIO_PGRP, (id_t)job, 19) != 0)
      perror("setpriority (the job keeps its priority)");
    TEST_RUN(batch_viewer_keeps_every_publisher_on_time);
    TEST_RUN(interactive_viewer_answers_keys_under_load);
  } else {
    tl_failed++;
    fprintf(stderr, "FAIL the simulated job did not start\n");
  }
  stop_group(&job);
  remove_dir(dir);
  return TEST_DONE();
}

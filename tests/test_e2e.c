/* End to end: simulated ranks (real processes) -> the real plugin -> real
 * ZeroMQ sockets -> `nccltop -b --json`. The deterministic schedule makes
 * every total known in advance (nt_sim_expect_*); the viewer must print
 * exactly those. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "viewer_pipe.h"
#include "../proto/nccltop_proto.h"
#include "../sim/sim.h"

static uint64_t num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v)) return (uint64_t)cJSON_GetNumberValue(v);
  if (cJSON_IsString(v)) return strtoull(v->valuestring, NULL, 10);
  return UINT64_MAX;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static const cJSON *find_rank(const cJSON *ranks, uint64_t hash, int rank) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, hash);
  const cJSON *r;
  cJSON_ArrayForEach(r, ranks) {
    if (strcmp(str(r, "comm"), hex) == 0 && num(r, "rank") == (uint64_t)rank) return r;
  }
  return NULL;
}

static const cJSON *find_channel(const cJSON *rank, int channel, const char *dir) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rank, "channels")) {
    if (num(c, "channel") == (uint64_t)channel && strcmp(str(c, "dir"), dir) == 0) return c;
  }
  return NULL;
}

/* Compares one JSON frame with the expectations; returns NULL when all
 * match, else a description of the first difference. */
static const char *mismatch(const nt_sim_config *cfg, const cJSON *frame, char *why, size_t cap) {
  static const char *proxy_names[5] = {"idle", "active", "sleep", "wakeup", "append"};
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(frame, "ranks");
  /* The simulator answers ncclGetVersion as the release it plays (2.28's
   * source is 2.28.9): the plugin's hello carries it, never "". */
  const cJSON *proc;
  cJSON_ArrayForEach(proc, cJSON_GetObjectItemCaseSensitive(frame, "processes")) {
    if (strcmp(str(proc, "nccl_version"), "2.28.9") != 0)
      return snprintf(why, cap, "process nccl_version \"%s\", want 2.28.9",
                      str(proc, "nccl_version")),
             why;
  }
  for (int r = 0; r < cfg->ranks; r++) {
    for (int k = 0; k < cfg->comms; k++) {
      const cJSON *rank = find_rank(ranks, nt_sim_comm_hash(k), r);
      if (!rank) return snprintf(why, cap, "rank %d comm %d missing", r, k), why;
      nt_sim_comm_expect ce;
      nt_sim_expect_comm(cfg, r, k, &ce);
      if (num(rank, "colls") != ce.colls)
        return snprintf(why, cap, "rank %d comm %d colls %" PRIu64 " want %" PRIu64, r, k,
                        num(rank, "colls"), ce.colls),
               why;
      for (int c = 0; c < cfg->channels; c++) {
        for (int dir = 0; dir < 2; dir++) {
          nt_sim_channel_expect e;
          nt_sim_expect_channel(cfg, r, k, c, dir, &e);
          const cJSON *ch = find_channel(rank, c, dir ? "recv" : "send");
          if (!ch)
            return snprintf(why, cap, "rank %d comm %d ch %d dir %d missing", r, k, c, dir), why;
          const cJSON *waits = cJSON_GetObjectItemCaseSensitive(ch, "wait_ns");
          uint64_t got[5] = {num(ch, "steps"), num(ch, "bytes"), 0, 0, 0};
          uint64_t want[5] = {e.steps, e.bytes, e.wait_ns[0], e.wait_ns[1], e.wait_ns[2]};
          for (int i = 0; i < 3; i++) got[2 + i] = num(waits, nt_wait_name(nt_dir_wait(dir, i)));
          for (int i = 0; i < 5; i++)
            if (got[i] != want[i])
              return snprintf(why, cap,
                              "rank %d comm %d ch %d %s field %d: %" PRIu64 " want %" PRIu64, r, k,
                              c, dir ? "recv" : "send", i, got[i], want[i]),
                     why;
          if (num(ch, "peer") != (uint64_t)e.peer)
            return snprintf(why, cap, "rank %d ch %d peer wrong", r, c), why;
        }
      }
      nt_sim_proxy_expect pe;
      nt_sim_expect_proxy(cfg, r, k, &pe);
      const cJSON *proxy = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rank, "proxy"), 0);
      if (!proxy) return snprintf(why, cap, "rank %d comm %d: no proxy thread", r, k), why;
      const cJSON *ns = cJSON_GetObjectItemCaseSensitive(proxy, "state_ns");
      for (int s = 0; s < 5; s++)
        if (num(ns, proxy_names[s]) != pe.state_ns[s])
          return snprintf(why, cap, "rank %d comm %d proxy %s %" PRIu64 " want %" PRIu64, r, k,
                          proxy_names[s], num(ns, proxy_names[s]), pe.state_ns[s]),
                 why;
      if (num(proxy, "appends") != pe.appends || num(proxy, "appended_ops") != pe.appended_ops ||
          num(proxy, "wakeups") != pe.wakeups)
        return snprintf(why, cap, "rank %d comm %d proxy counts", r, k), why;
      if (strcmp(str(proxy, "state"), nt_proxy_state_name(pe.final_state)) != 0)
        return snprintf(why, cap, "rank %d comm %d proxy state %s", r, k, str(proxy, "state")), why;
    }
  }
  return NULL;
}

static FILE *start_viewer(const char *dir, pid_t *pid) {
  return start_viewer_frames(dir, "150", pid);
}

static void deterministic_totals_reach_the_viewer_exactly(void) {
  char dir[] = "/tmp/nccltop-e2e-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = 3;
  cfg.comms = 2;
  cfg.channels = 3;
  cfg.steps = 4;
  cfg.iterations = 5;
  cfg.deterministic = true;
  cfg.linger_s = 20;
  cfg.plugin = plugin;
  cfg.dir = dir;
  cfg.interval_ms = 50;
  cfg.quiet = true;
  pid_t sim = nt_sim_spawn(&cfg);
  CHECK(sim > 0);
  pid_t viewer = -1;
  FILE *p = start_viewer(dir, &viewer);
  if (!p) stop_group(sim);
  CHECK(p != NULL);
  static char line[4 << 20];
  char why[256] = "no output";
  int frames = 0, matched = 0;
  while (!matched && fgets(line, sizeof line, p)) {
    frames++;
    cJSON *frame = cJSON_Parse(line);
    if (!frame) {
      snprintf(why, sizeof why, "frame %d is not JSON", frames);
      break;
    }
    matched = mismatch(&cfg, frame, why, sizeof why) == NULL;
    cJSON_Delete(frame);
  }
  kill(viewer, SIGTERM);
  fclose(p);
  waitpid(viewer, NULL, 0);
  stop_group(sim);
  rmdir(dir);
  if (!matched) fprintf(stderr, "    after %d frames: %s\n", frames, why);
  CHECK(matched);
}

int main(void) {
  find_bindir();
  TEST_RUN(deterministic_totals_reach_the_viewer_exactly);
  return TEST_DONE();
}

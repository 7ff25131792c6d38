/* The deterministic job the relay tests watch through relays, and what a
 * complete frame of it is (tests/test_relay.c, test_relay_attacks.c). Include
 * after relay_harness.h and testlib.h. */
#ifndef NCCLTOP_TESTS_RELAY_JOB_H
#define NCCLTOP_TESTS_RELAY_JOB_H

#include <inttypes.h>

#include "../sim/sim.h"

typedef struct {
  char dir[64], empty[64], log[96];
  nt_sim_config cfg;
  pid_t sim;
} job;

static inline const char *str_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static inline uint64_t u64_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v)) return (uint64_t)v->valuedouble;
  if (cJSON_IsString(v)) return strtoull(v->valuestring, NULL, 10);
  return UINT64_MAX;
}

/* Every rank of every communicator with its final collective count and
 * per-channel bytes, as nt_sim_expect_* says. */
static inline bool complete(const nt_sim_config *cfg, const cJSON *frame) {
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(frame, "ranks");
  if (cJSON_GetArraySize(ranks) != cfg->ranks * cfg->comms) return false;
  for (int r = 0; r < cfg->ranks; r++)
    for (int k = 0; k < cfg->comms; k++) {
      char hex[17];
      snprintf(hex, sizeof hex, "%016" PRIx64, nt_sim_comm_hash(k));
      const cJSON *rank = NULL, *x;
      cJSON_ArrayForEach(x, ranks) {
        if (!strcmp(str_of(x, "comm"), hex) && u64_of(x, "rank") == (uint64_t)r) rank = x;
      }
      if (!rank) return false;
      nt_sim_comm_expect ce;
      nt_sim_expect_comm(cfg, r, k, &ce);
      if (u64_of(rank, "colls") != ce.colls) return false;
      for (int c = 0; c < cfg->channels; c++)
        for (int dir = 0; dir < 2; dir++) {
          nt_sim_channel_expect e;
          nt_sim_expect_channel(cfg, r, k, c, dir, &e);
          bool found = false;
          cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(rank, "channels")) {
            if (u64_of(x, "channel") == (uint64_t)c &&
                !strcmp(str_of(x, "dir"), dir ? "recv" : "send"))
              found = u64_of(x, "bytes") == e.bytes && u64_of(x, "steps") == e.steps;
          }
          if (!found) return false;
        }
    }
  return true;
}

/* Makes j's directories: the job's endpoint directory, an empty one the
 * viewers are pointed at (they see only what comes through --connect), and
 * the relay's log in the latter. */
static inline bool job_dirs(job *j) {
  memset(j, 0, sizeof *j);
  snprintf(j->dir, sizeof j->dir, "/tmp/nccltop-relay-XXXXXX");
  snprintf(j->empty, sizeof j->empty, "/tmp/nccltop-relayv-XXXXXX");
  if (!mkdtemp(j->dir) || !mkdtemp(j->empty)) return false;
  snprintf(j->log, sizeof j->log, "%s/relay.log", j->empty);
  return true;
}

/* The simulator's defaults for a job publishing into j->dir through the
 * plugin's test build, quiet, a snapshot every 50 ms. */
static inline void job_config(job *j) {
  static char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", rh_bindir);
  nt_sim_defaults(&j->cfg);
  j->cfg.plugin = plugin;
  j->cfg.dir = j->dir;
  j->cfg.interval_ms = 50;
  j->cfg.quiet = true;
}

/* The deterministic job (3 ranks, 2 channels, 5 iterations), its ranks
 * lingering linger_s after the last one. */
static inline bool job_start(job *j, double linger_s) {
  if (!job_dirs(j)) return false;
  job_config(j);
  j->cfg.ranks = 3;
  j->cfg.comms = 1;
  j->cfg.channels = 2;
  j->cfg.steps = 4;
  j->cfg.iterations = 5;
  j->cfg.deterministic = true;
  j->cfg.linger_s = linger_s;
  j->sim = nt_sim_spawn(&j->cfg);
  return j->sim > 0;
}

/* A relay of j->dir (stderr in j->log, one extra option or NULL) on a free
 * 127.0.0.1 port: its endpoint in ep, the port in *port (NULL: not
 * wanted); its pid, or -1 when no port was free. */
static inline pid_t job_relay(const job *j, const char *extra, char ep[64], unsigned *port) {
  unsigned p = rh_free_port();
  snprintf(ep, 64, "tcp://127.0.0.1:%u", p);
  if (port) *port = p;
  return p ? rh_relay(NULL, j->log, j->dir, p, extra, NULL, NULL) : -1;
}

static inline void job_stop(job *j) {
  rh_stop(j->sim);
  rh_rmdir(j->dir);
  rh_rmdir(j->empty);
}

/* Reads v's frames until one is complete; the frame's time, or -1. */
static inline double until_complete(rh_viewer *v, const nt_sim_config *cfg, double timeout_s) {
  double deadline = rh_now() + timeout_s;
  cJSON *f;
  while ((f = rh_viewer_frame(v, deadline))) {
    bool ok = complete(cfg, f);
    double t = rh_num(f, "time_s");
    cJSON_Delete(f);
    if (ok) return t;
  }
  return -1;
}

#endif

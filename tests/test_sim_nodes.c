/* `nccltop sim --nodes N`: a simulated N-node job on this machine. Each
 * node's ranks publish in <dir>/node<k> under the host name node<k>
 * (NCCLTOP_HOSTNAME, read by the plugin at init); one communicator spans
 * every node, with nNodes = N. Watched by one `nccltop -b --json --dir` per
 * node directory, the nodes together show every rank of the communicator
 * exactly once, each on its own node. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "viewer_pipe.h"
#include "../sim/sim.h"

#define MAX_NODES 4

static FILE *start_viewer(const char *dir, pid_t *pid) {
  return start_viewer_frames(dir, "100", pid);
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? (int)cJSON_GetNumberValue(v) : -1;
}

/* Reads frames until one shows `want` ranks; records them in seen[rank]
 * (how many times), and returns NULL, or what was wrong with the last frame. */
static const char *read_node(FILE *p, const nt_sim_config *cfg, int node, int *seen, char *why,
                             size_t cap) {
  static char line[1 << 20];
  int want = cfg->ranks / cfg->nodes;
  snprintf(why, cap, "node%d: no frame", node);
  while (fgets(line, sizeof line, p)) {
    cJSON *frame = cJSON_Parse(line);
    const cJSON *ranks = frame ? cJSON_GetObjectItemCaseSensitive(frame, "ranks") : NULL;
    int n = cJSON_GetArraySize(ranks);
    if (n < want) {
      snprintf(why, cap, "node%d: %d ranks of %d", node, n, want);
      cJSON_Delete(frame);
      continue;
    }
    char host[16];
    snprintf(host, sizeof host, "node%d", node);
    const char *bad = NULL;
    const cJSON *r;
    cJSON_ArrayForEach(r, ranks) {
      int rank = num(r, "rank");
      if (strcmp(str(r, "host"), host) != 0)
        bad = "a rank with another host";
      else if (num(r, "nnodes") != cfg->nodes || num(r, "nranks") != cfg->ranks)
        bad = "nnodes or nranks wrong";
      else if (rank < 0 || rank >= cfg->ranks || nt_sim_node_of(cfg, rank) != node)
        bad = "a rank of another node";
      if (bad) break;
      seen[rank]++;
    }
    if (bad) snprintf(why, cap, "node%d: %s (%d ranks in the frame)", node, bad, n);
    cJSON_Delete(frame);
    return bad ? why : NULL;
  }
  return why;
}

/* Removes <base>/node<k> (the plugin removed its socket files) and base. */
static void remove_dirs(const char *base, int nodes) {
  for (int k = 0; k < nodes; k++) {
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/node%d", base, k);
    DIR *dp = opendir(d);
    struct dirent *de;
    while (dp && (de = readdir(dp)))
      if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
        char f[PATH_MAX + 300];
        snprintf(f, sizeof f, "%s/%s", d, de->d_name);
        unlink(f);
      }
    if (dp) closedir(dp);
    rmdir(d);
  }
  rmdir(base);
}

static void run_nodes(int nodes, int ranks, char *why, size_t cap, int *ok) {
  *ok = 0;
  char base[] = "/tmp/nccltop-nodes-XXXXXX";
  if (!mkdtemp(base)) {
    snprintf(why, cap, "mkdtemp failed");
    return;
  }
  char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = ranks;
  cfg.nodes = nodes;
  cfg.comms = 1;
  cfg.channels = 2;
  cfg.steps = 2;
  cfg.iterations = 3;
  cfg.deterministic = true;
  cfg.linger_s = 30;
  cfg.plugin = plugin;
  cfg.dir = base;
  cfg.interval_ms = 50;
  cfg.quiet = true;
  pid_t sim = nt_sim_spawn(&cfg);
  pid_t viewer[MAX_NODES];
  FILE *p[MAX_NODES] = {0};
  int seen[64] = {0};
  const char *bad = sim > 0 ? NULL : "the simulator did not start";
  /* Give the nodes' directories a moment to exist (the simulator makes them). */
  for (int i = 0; i < 200 && !bad; i++) {
    char last[PATH_MAX + 16];
    snprintf(last, sizeof last, "%s/node%d", base, nodes - 1);
    if (access(last, F_OK) == 0) break;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  for (int k = 0; k < nodes && !bad; k++) {
    char d[PATH_MAX + 16];
    snprintf(d, sizeof d, "%s/node%d", base, k);
    if (!(p[k] = start_viewer(d, &viewer[k]))) bad = "cannot start a viewer";
  }
  for (int k = 0; k < nodes && !bad; k++) bad = read_node(p[k], &cfg, k, seen, why, cap);
  for (int k = 0; k < nodes; k++) {
    if (!p[k]) continue;
    kill(viewer[k], SIGTERM);
    fclose(p[k]);
    waitpid(viewer[k], NULL, 0);
  }
  stop_group(sim);
  remove_dirs(base, nodes);
  for (int r = 0; r < ranks && !bad; r++)
    if (seen[r] != 1) {
      snprintf(why, cap, "rank %d seen %d times across the nodes", r, seen[r]);
      bad = why;
    }
  if (bad && bad != why) snprintf(why, cap, "%s", bad);
  *ok = !bad;
}

static void two_nodes_each_show_their_own_ranks(void) {
  char why[256] = "";
  int ok;
  run_nodes(2, 4, why, sizeof why, &ok);
  if (!ok) fprintf(stderr, "    %s\n", why);
  CHECK(ok);
}

static void four_nodes_show_every_rank_once(void) {
  char why[256] = "";
  int ok;
  run_nodes(4, 8, why, sizeof why, &ok);
  if (!ok) fprintf(stderr, "    %s\n", why);
  CHECK(ok);
}

/* NCCLTOP_HOSTNAME on its own (no --nodes): the name a rank reports; one
 * longer than 64 bytes is ignored (the plugin logs it) for gethostname's. */
static void the_host_name_override_and_its_limit(void) {
  char dir[] = "/tmp/nccltop-hostname-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char plugin[PATH_MAX + 64], long_name[128], real[256] = "";
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  memset(long_name, 0, sizeof long_name);
  strcpy(long_name, "1:NCCLTOP_HOSTNAME=");
  memset(long_name + strlen(long_name), 'x', 65);
  CHECK(gethostname(real, sizeof real - 1) == 0);
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = 2;
  cfg.comms = 1;
  cfg.channels = 1;
  cfg.steps = 1;
  cfg.iterations = 1;
  cfg.deterministic = true;
  cfg.linger_s = 30;
  cfg.plugin = plugin;
  cfg.dir = dir;
  cfg.interval_ms = 50;
  cfg.quiet = true;
  cfg.rank_env[0].rank = 0;
  cfg.rank_env[0].kv = "NCCLTOP_HOSTNAME=trainer-a";
  cfg.rank_env[1].rank = 1;
  cfg.rank_env[1].kv = long_name + 2;
  cfg.nrank_env = 2;
  pid_t sim = nt_sim_spawn(&cfg), viewer = -1;
  FILE *p = sim > 0 ? start_viewer(dir, &viewer) : NULL;
  static char line[1 << 20];
  char host0[80] = "", host1[80] = "";
  while (p && (!host0[0] || !host1[0]) && fgets(line, sizeof line, p)) {
    cJSON *frame = cJSON_Parse(line);
    const cJSON *r, *ranks = cJSON_GetObjectItemCaseSensitive(frame, "ranks");
    cJSON_ArrayForEach(r, ranks) {
      snprintf(num(r, "rank") == 0 ? host0 : host1, sizeof host0, "%s", str(r, "host"));
    }
    cJSON_Delete(frame);
  }
  if (p) {
    kill(viewer, SIGTERM);
    fclose(p);
    waitpid(viewer, NULL, 0);
  }
  stop_group(sim);
  rmdir(dir);
  CHECK_STR(host0, "trainer-a");
  CHECK_STR(host1, real);
}

static void nodes_must_divide_the_ranks(void) {
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = 6;
  cfg.nodes = 4;
  cfg.quiet = true;
  fprintf(stderr, "    (two configuration errors follow)\n");
  CHECK(nt_sim_spawn(&cfg) == -1);
  cfg.nodes = 7;
  CHECK(nt_sim_spawn(&cfg) == -1);
  cfg.nodes = 3;
  CHECK_EQ_U64(nt_sim_node_of(&cfg, 0), 0);
  CHECK_EQ_U64(nt_sim_node_of(&cfg, 1), 0);
  CHECK_EQ_U64(nt_sim_node_of(&cfg, 2), 1);
  CHECK_EQ_U64(nt_sim_node_of(&cfg, 5), 2);
  char *args[] = {(char *)"--nodes", (char *)"2", (char *)"--ranks", (char *)"4"};
  nt_sim_defaults(&cfg);
  CHECK(nt_sim_parse_args(&cfg, 4, args) == 4);
  CHECK_EQ_U64(cfg.nodes, 2);
}

int main(void) {
  find_bindir();
  TEST_RUN(two_nodes_each_show_their_own_ranks);
  TEST_RUN(four_nodes_show_every_rank_once);
  TEST_RUN(the_host_name_override_and_its_limit);
  TEST_RUN(nodes_must_divide_the_ranks);
  return TEST_DONE();
}

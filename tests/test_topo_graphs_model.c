/* NCCL's tuning model read from the graphs topo/'s search found, and
 * `nccltop topo --graphs` as a command: its JSON document's keys, its text,
 * tuning and channel variables reaching graphs and model, one error line
 * and the documented status for every mistake. The search itself:
 * test_topo_graphs.c, test_topo_graphs_machines.c; the model's numbers:
 * test_topo_tuning.c. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "lib/topo_fixture.h"

/* The model reads the graphs the search found: on the example's 8 H100
 * (sm 90 in the file) the Ring/Simple AllReduce bandwidth is the ring's bus
 * bandwidth, channels x bwIntra (up to 2 nodes), times nranks / (2
 * (nranks - 1)) (tuning.cc's ring steps): 12 x 30 x 8/14 on one node,
 * 8 x 48 x 16/30 = 204.8 on two. */
static void model_of_the_graphs(void) {
  nt_topo *t = tf_load("examples/topologies", "nvswitch-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  for (int nodes = 1; nodes <= 2; nodes++) {
    nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, nodes, NULL, NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r));
    if (!g) continue;
    nt_tune_model m;
    char err[512];
    CHECK(nt_topo_graphs_tune(t, g, NULL, &m, err, sizeof err) == 0);
    int n = 8 * nodes;
    double want = r.nchannels * r.bw_intra * n / (2.0 * (n - 1));
    CHECK(nodes == 1 ? want > 205.7 && want < 205.8 : want == 204.8);
    double got = m.bandwidth[NT_TUNE_ALLREDUCE][NT_TUNE_RING][NT_TUNE_SIMPLE];
    CHECK(got > want * 0.9999 && got < want * 1.0001);
    CHECK(m.min_sm == 90 && m.nranks == n && m.nnodes == nodes);
    /* the tuning variables reach the model: no LL128 anywhere */
    nt_tune_env e;
    nt_tune_env_defaults(&e);
    CHECK(nt_tune_env_set(&e, "NCCL_PROTO=^LL128", err, sizeof err) == 0);
    CHECK(nt_topo_graphs_tune(t, g, &e, &m, err, sizeof err) == 0);
    for (int c = 0; c < NT_TUNE_NCOLLS; c++)
      for (int a = 0; a < NT_TUNE_NALGOS; a++) CHECK(m.bandwidth[c][a][NT_TUNE_LL128] == 0);
    nt_topo_graphs_free(g);
  }
  nt_topo_free(t);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *buf = calloc(1, 1 << 22);
  size_t n = buf ? fread(buf, 1, (1 << 22) - 1, f) : 0;
  (void)n;
  fclose(f);
  return buf;
}

static int lines_in(const char *path) {
  char *s = slurp(path);
  int n = 0;
  for (char *p = s; p && *p; p++) n += *p == '\n';
  free(s);
  return n;
}

/* The JSON document has the documented keys; bad arguments are exit 2 with
 * one error line; a file without GPUs is exit 1. */
static void cli_graphs(void) {
  char out[] = "/tmp/nccltop-graphs-out-XXXXXX", errf[] = "/tmp/nccltop-graphs-err-XXXXXX";
  int fd = mkstemp(out), fe = mkstemp(errf);
  CHECK(fd >= 0 && fe >= 0);
  close(fd);
  close(fe);
  const char *ex = "examples/topologies/nvswitch-8gpu-8nic.xml";
  CHECK(tf_run_cli(out, errf, 6,
                   (const char *[]){"topo", ex, "--graphs", "--nodes", "2", "--json"}) == 0);
  char *s = slurp(out);
  cJSON *j = s ? cJSON_Parse(s) : NULL;
  CHECK(j != NULL);
  if (j) {
    CHECK(cJSON_GetObjectItem(j, "nodes")->valueint == 2);
    CHECK(cJSON_GetObjectItem(j, "ranks")->valueint == 16);
    cJSON *set = cJSON_GetObjectItem(j, "settings");
    CHECK(set && cJSON_GetObjectItem(set, "NCCL_CROSS_NIC")->valueint == 2);
    cJSON *gs = cJSON_GetObjectItem(j, "graphs");
    CHECK(cJSON_GetArraySize(gs) == 2);
    cJSON *g0 = cJSON_GetArrayItem(gs, 0), *g1 = cJSON_GetArrayItem(gs, 1);
    CHECK(!strcmp(cJSON_GetObjectItem(g0, "pattern")->valuestring, "ring"));
    CHECK(!strcmp(cJSON_GetObjectItem(g1, "pattern")->valuestring, "tree"));
    CHECK(cJSON_IsString(cJSON_GetObjectItem(g0, "type_intra")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(g0, "bw_inter")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(g0, "same_channels")));
    cJSON *ch = cJSON_GetObjectItem(g0, "channel");
    int nch = cJSON_GetObjectItem(g0, "channels")->valueint;
    CHECK(cJSON_GetArraySize(ch) == nch);
    cJSON *c0 = cJSON_GetArrayItem(ch, 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(c0, "gpus")) == 8);
    CHECK(cJSON_GetObjectItem(c0, "net_in")->valueint >= 0);
    int conn = cJSON_GetObjectItem(j, "channels")->valueint;
    cJSON *rings = cJSON_GetObjectItem(j, "rings"), *trees = cJSON_GetObjectItem(j, "trees");
    CHECK(cJSON_GetArraySize(rings) == conn);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(rings, 0), "ranks")) == 16);
    CHECK(cJSON_GetArraySize(trees) == conn * 16);
    cJSON *t0 = cJSON_GetArrayItem(trees, 0);
    CHECK(cJSON_GetObjectItem(t0, "rank") && cJSON_GetObjectItem(t0, "up") &&
          cJSON_GetArraySize(cJSON_GetObjectItem(t0, "down")) == 3);
    /* NCCL's model: latency and bandwidth per collective, algorithm,
     * protocol; its pick for 4 collectives x 11 sizes (1 KiB..1 GiB) */
    cJSON *model = cJSON_GetObjectItem(j, "model"), *choice = cJSON_GetObjectItem(j, "choice");
    CHECK(cJSON_GetArraySize(model) > 0);
    cJSON *m0 = cJSON_GetArrayItem(model, 0);
    CHECK(m0 && cJSON_IsString(cJSON_GetObjectItem(m0, "collective")) &&
          cJSON_IsString(cJSON_GetObjectItem(m0, "algo")) &&
          cJSON_IsString(cJSON_GetObjectItem(m0, "proto")) &&
          cJSON_GetObjectItem(m0, "latency_us")->valuedouble > 0 &&
          cJSON_GetObjectItem(m0, "bandwidth_gbs")->valuedouble > 0);
    CHECK(cJSON_GetArraySize(choice) == 44);
    cJSON *last = cJSON_GetArrayItem(choice, 43), *first = cJSON_GetArrayItem(choice, 0);
    CHECK(last && cJSON_GetObjectItem(last, "bytes")->valuedouble == 1073741824.0);
    CHECK(first && cJSON_GetObjectItem(first, "bytes")->valuedouble == 1024.0 &&
          !strcmp(cJSON_GetObjectItem(first, "collective")->valuestring, "AllReduce") &&
          cJSON_IsString(cJSON_GetObjectItem(first, "algo")) &&
          cJSON_IsString(cJSON_GetObjectItem(first, "proto")));
    cJSON_Delete(j);
  }
  free(s);
  CHECK(tf_run_cli(out, errf, 3, (const char *[]){"topo", ex, "--graphs"}) == 0);
  s = slurp(out);
  CHECK(s && strstr(s, "ring search") && strstr(s, "rings (from rank 0)"));
  CHECK(s && strstr(s, "NCCL's model (tuning.cc)") && strstr(s, "NCCL's pick by size") &&
        strstr(s, "  1G "));
  free(s);
  /* a tuning variable (NCCL_PROTO) reaches the model; the channel limit
   * reaches both the graphs and the model */
  CHECK(tf_run_cli(out, errf, 8,
                   (const char *[]){"topo", ex, "--graphs", "--env", "NCCL_PROTO=Simple", "--env",
                                    "NCCL_MAX_NCHANNELS=4", "--json"}) == 0);
  s = slurp(out);
  j = s ? cJSON_Parse(s) : NULL;
  CHECK(j != NULL);
  if (j) {
    CHECK(cJSON_GetObjectItem(j, "channels")->valueint == 4);
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "model"))
        CHECK(!strcmp(cJSON_GetObjectItem(e, "proto")->valuestring, "Simple"));
    cJSON_Delete(j);
  }
  free(s);
  /* a list NCCL refuses (its init fails): the graphs, no model, one line, 1 */
  CHECK(tf_run_cli(out, errf, 5,
                   (const char *[]){"topo", ex, "--graphs", "--env", "NCCL_ALGO=Rign"}) == 1);
  CHECK(lines_in(errf) == 1);
  s = slurp(out);
  CHECK(s && strstr(s, "rings (from rank 0)") && !strstr(s, "NCCL's model"));
  free(s);
  static const char *bad[][5] = {{"topo", "X", "--graphs", "--nodes", "0"},
                                 {"topo", "X", "--graphs", "--nodes", "x2"},
                                 {"topo", "X", "--graphs", "--nodes", "129"},
                                 {"topo", "X", "--nodes", "2", NULL},
                                 {"topo", "X", "--graphs", "--compact", NULL},
                                 {"topo", "X", "--graphs", "--nodes", NULL},
                                 {"topo", "X", "--graphs", "--env", "NCCL_CROSS_NIC="}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *argv[5];
    int argc = 0;
    for (int k = 0; k < 5 && bad[i][k]; k++)
      argv[argc++] = !strcmp(bad[i][k], "X") ? ex : bad[i][k];
    CHECK(tf_run_cli(out, errf, argc, argv) == 2);
    CHECK(lines_in(errf) == 1);
  }
  /* no GPU: one error line, exit 1 */
  char nogpu[] = "/tmp/nccltop-graphs-nogpu-XXXXXX";
  fd = mkstemp(nogpu);
  CHECK(fd >= 0);
  const char *xml = "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" "
                    "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\"></cpu></system>\n";
  CHECK(write(fd, xml, strlen(xml)) == (ssize_t)strlen(xml));
  close(fd);
  CHECK(tf_run_cli(out, errf, 3, (const char *[]){"topo", nogpu, "--graphs"}) == 1);
  CHECK(lines_in(errf) == 1);
  unlink(nogpu);
  unlink(out);
  unlink(errf);
}

int main(void) {
  TEST_RUN(model_of_the_graphs);
  TEST_RUN(cli_graphs);
  return TEST_DONE();
}

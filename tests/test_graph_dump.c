/* NCCL's channel graphs (NCCL_GRAPH_DUMP_FILE): the reader on the files
 * NCCL writes and on ones it never would; a simulated job's rank forwarding
 * its dump through the real plugin to the viewer's model; the topology
 * view's channels face (R) on NCCL's dump and, without one, on the search
 * computed from the topology; and a 2-node job's rings and trees over its
 * ranks on that face, from the dump and computed. */
#include <sys/stat.h>

#include "scenario_harness.h"
#include "vterm_harness.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/feeds/source.h"
#include "../monitor/options.h"
#include "../topo/graph_dump.h"

/* What NCCL 2.28 writes for two nodes of 4 GPUs and 2 NICs (search.cc's
 * ncclTopoGetXmlFromGraphs: ring, tree, CollNet chain, NVLS, CollNet
 * direct; the NVLS channels name their first GPU only). */
static const char two_nodes[] =
    "<graphs version=\"1\">\n"
    "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"2\" speedintra=\"40\" "
    "speedinter=\"24\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
    "samechannels=\"0\">\n"
    "    <channel>\n      <net dev=\"0\"/>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"1\"/>\n"
    "      <gpu dev=\"2\"/>\n      <gpu dev=\"3\"/>\n      <net dev=\"0\"/>\n    </channel>\n"
    "    <channel>\n      <net dev=\"1\"/>\n      <gpu dev=\"3\"/>\n      <gpu dev=\"2\"/>\n"
    "      <gpu dev=\"1\"/>\n      <gpu dev=\"0\"/>\n      <net dev=\"1\"/>\n    </channel>\n"
    "  </graph>\n"
    "  <graph id=\"1\" pattern=\"1\" crossnic=\"0\" nchannels=\"1\" speedintra=\"40\" "
    "speedinter=\"24\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
    "samechannels=\"1\">\n"
    "    <channel>\n      <net dev=\"0\"/>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"1\"/>\n"
    "      <gpu dev=\"2\"/>\n      <gpu dev=\"3\"/>\n      <net dev=\"0\"/>\n    </channel>\n"
    "  </graph>\n"
    "  <graph id=\"2\" pattern=\"6\" crossnic=\"0\" nchannels=\"0\" speedintra=\"0\" "
    "speedinter=\"0\" latencyinter=\"0\" typeintra=\"LOC\" typeinter=\"LOC\" "
    "samechannels=\"0\"/>\n"
    "  <graph id=\"3\" pattern=\"5\" crossnic=\"0\" nchannels=\"1\" speedintra=\"120\" "
    "speedinter=\"24\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
    "samechannels=\"0\">\n"
    "    <channel>\n      <net dev=\"1\"/>\n      <gpu dev=\"144115188075855873\"/>\n"
    "      <net dev=\"1\"/>\n    </channel>\n"
    "  </graph>\n"
    "  <graph id=\"4\" pattern=\"6\" crossnic=\"0\" nchannels=\"0\" speedintra=\"0\" "
    "speedinter=\"0\" latencyinter=\"0\" typeintra=\"LOC\" typeinter=\"LOC\" "
    "samechannels=\"0\"/>\n"
    "</graphs>\n";

static void the_graphs_nccl_writes_are_read_whole(void) {
  char err[256] = "";
  nt_graph_dump *d = nt_graph_dump_parse(two_nodes, strlen(two_nodes), err, sizeof err);
  if (!d) fprintf(stderr, "    %s\n", err);
  CHECK(d != NULL);
  CHECK_EQ_U64(nt_graph_dump_ngraphs(d), 5);
  const nt_dump_graph *ring = nt_graph_dump_graph(d, 0), *nvls = nt_graph_dump_graph(d, 3);
  CHECK(ring && ring->id == 0 && ring->pattern == 4 && ring->nchannels == 2);
  CHECK(ring && ring->bw_intra == 40 && ring->bw_inter == 24);
  CHECK(ring && !strcmp(ring->type_intra, "NVL") && !strcmp(ring->type_inter, "PIX"));
  CHECK(ring && !strcmp(nt_dump_graph_name(ring), "ring"));
  CHECK(nvls && !strcmp(nt_dump_graph_name(nvls), "nvls"));
  int64_t gpus[8], in = 9, out = 9;
  CHECK_EQ_U64(nt_graph_dump_channel(d, 0, 1, gpus, 8, &in, &out), 4);
  CHECK(gpus[0] == 3 && gpus[3] == 0 && in == 1 && out == 1);
  CHECK_EQ_U64(nt_graph_dump_channel(d, 3, 0, gpus, 8, &in, &out), 1);
  char dev[32];
  nt_dump_dev_text(gpus[0], dev, sizeof dev);
  CHECK_STR(dev, "2:1"); /* NCCL_TOPO_ID(system 2, GPU 1): multi-node NVLink */
  CHECK(nt_graph_dump_channel(d, 0, 2, gpus, 8, &in, &out) == -1);
  CHECK(nt_graph_dump_graph(d, 5) == NULL);
  nt_graph_dump_free(d);

  static const char one_node[] =
      "<graphs version=\"1\"><graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" "
      "speedintra=\"20\" speedinter=\"20\" latencyinter=\"0\" typeintra=\"PIX\" "
      "typeinter=\"PIX\" samechannels=\"1\"><channel><gpu dev=\"0\"/><gpu dev=\"1\"/>"
      "</channel></graph></graphs>";
  d = nt_graph_dump_parse(one_node, strlen(one_node), err, sizeof err);
  CHECK(d != NULL);
  CHECK_EQ_U64(nt_graph_dump_channel(d, 0, 0, gpus, 8, &in, &out), 2);
  CHECK(in == -1 && out == -1); /* one node: NCCL writes no <net> */
  nt_graph_dump_free(d);
}

/* Each is one error line naming what is wrong; nothing is half-read. */
static void what_nccl_never_writes_is_refused_with_one_line(void) {
  static const char head[] = "<graphs version=\"1\"><graph id=\"0\" pattern=\"4\" crossnic=\"0\" "
                             "speedintra=\"20\" speedinter=\"0\" latencyinter=\"0\" "
                             "typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"0\" ";
  static const struct {
    const char *body, *says;
  } bad[] = {
      {"<topology version=\"1\"/>", "not <graphs>"},
      {"<graphs version=\"2\"/>", "version 2"},
      {"<graphs version=\"1\">", "line 1:"}, /* cut short */
      {"", "no element found"},
      {"H nchannels=\"2\"><channel><gpu dev=\"0\"/></channel></graph></graphs>",
       "lists 1 channels, its nchannels says 2"},
      {"H nchannels=\"1\"><channel><net dev=\"0\"/><gpu dev=\"0\"/><net dev=\"0\"/>"
       "<gpu dev=\"1\"/></channel></graph></graphs>",
       "a <gpu> after the channel's last <net>"},
      {"H nchannels=\"1\"><channel><gpu dev=\"0\"/><net dev=\"0\"/><gpu dev=\"1\"/></channel>"
       "</graph></graphs>",
       "a <net> neither first nor last"},
      {"H nchannels=\"1\"><channel><net dev=\"0\"/><gpu dev=\"0\"/></channel></graph></graphs>",
       "one <net>"},
      {"H nchannels=\"1\"><channel><gpu dev=\"x\"/></channel></graph></graphs>", "not an integer"},
      {"H nchannels=\"1\"><channel><gpu dev=\"-1\"/></channel></graph></graphs>", "not an integer"},
      {"H nchannels=\"1\"><channel></channel></graph></graphs>", "no <gpu>"},
      {"H nchannels=\"999\"></graph></graphs>", "not an integer in 0..128"},
      {"H nchannels=\"0\"/><graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"0\" "
       "speedintra=\"1\" speedinter=\"0\" latencyinter=\"0\" typeintra=\"NVL\" "
       "typeinter=\"PIX\" samechannels=\"0\"/></graphs>",
       "two graphs with id 0"},
      {"H nchannels=\"0\"><rogue/></graph></graphs>", "<rogue> at depth 3"},
      {"H nchannels=\"0\">text</graph></graphs>", "text inside an element"},
      {"<!DOCTYPE g [<!ENTITY e \"x\">]><graphs version=\"1\"/>", "DOCTYPE"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char xml[2048], err[256] = "";
    if (bad[i].body[0] == 'H')
      snprintf(xml, sizeof xml, "%s%s", head, bad[i].body + 2);
    else
      snprintf(xml, sizeof xml, "%s", bad[i].body);
    nt_graph_dump *d = nt_graph_dump_parse(xml, strlen(xml), err, sizeof err);
    bool ok = !d && strstr(err, "graph dump") && strstr(err, bad[i].says) && !strchr(err, '\n');
    if (!ok) fprintf(stderr, "    case %zu: got \"%s\", want \"%s\"\n", i, err, bad[i].says);
    CHECK(ok);
    nt_graph_dump_free(d);
  }
  /* A channel of more GPUs than the limit. */
  static char big[64 * 1024];
  int n = snprintf(big, sizeof big, "%s nchannels=\"1\"><channel>", head);
  for (int g = 0; g <= NT_DUMP_MAX_GPUS; g++)
    n += snprintf(big + n, sizeof big - n, "<gpu dev=\"%d\"/>", g);
  snprintf(big + n, sizeof big - n, "</channel></graph></graphs>");
  char err[256] = "";
  CHECK(nt_graph_dump_parse(big, strlen(big), err, sizeof err) == NULL);
  CHECK(strstr(err, "more than 128 GPUs") != NULL);
}

static bool write_file(const char *path, const char *data) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, strlen(data), f) == strlen(data);
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp, path) == 0;
}

/* Rank 0 of a simulated job has NCCL_GRAPH_DUMP_FILE: the real plugin
 * forwards it with its hello, the viewer's model holds it; a bad file is
 * one error, however often it is re-sent. */
static void a_ranks_graph_dump_reaches_the_viewer(void) {
  char dir[128], good[160], badf[160];
  snprintf(dir, sizeof dir, "/tmp/nccltop-test-graphs-%d", (int)getpid());
  snprintf(good, sizeof good, "%s-good.xml", dir);
  snprintf(badf, sizeof badf, "%s-bad.xml", dir);
  remove_dir(dir);
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(write_file(good, two_nodes));
  CHECK(write_file(badf, "<graphs version=\"1\"><graph/></graphs>"));
  char kv0[200], kv1[200];
  snprintf(kv0, sizeof kv0, "NCCL_GRAPH_DUMP_FILE=%s", good);
  snprintf(kv1, sizeof kv1, "NCCL_GRAPH_DUMP_FILE=%s", badf);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.duration_s = 30;
  c.rank_env[0].rank = 0, c.rank_env[0].kv = kv0;
  c.rank_env[1].rank = 1, c.rank_env[1].kv = kv1;
  c.nrank_env = 2;
  pid_t job = nt_sim_spawn(&c);
  bool ok = job > 0 && wait_publishers(dir, 2, 10);
  nt_options o;
  nt_options_defaults(&o);
  o.dir = dir;
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = ok && m ? nt_source_open(&o, err, sizeof err) : NULL;
  ok = ok && src;
  const nt_graph_dump *d = NULL;
  /* Past two hellos (every 2 s) of each: the bad one re-sent. */
  for (double end = now_s() + 5; ok && now_s() < end;) {
    nt_source_poll(src, m, 100);
    d = nt_model_graphs(m, NULL, NULL);
  }
  int ngraphs = nt_graph_dump_ngraphs(d);
  const nt_dump_graph *ring = nt_graph_dump_graph(d, 0);
  int ring_channels = ring ? ring->nchannels : -1;
  int bad_errors = 0;
  for (uint32_t i = 0; m && i < nt_model_nerrors(m); i++)
    if (strstr(nt_model_error_at(m, i)->text, "graph dump")) bad_errors++;
  nt_source_close(src);
  nt_model_free(m);
  stop_group(&job);
  remove_dir(dir);
  unlink(good);
  unlink(badf);
  CHECK(ok);
  CHECK_EQ_U64(ngraphs, 5);
  CHECK_EQ_U64(ring_channels, 2);
  CHECK_EQ_U64(bad_errors, 1);
}

/* The topology view's R: NCCL's dump from the job, channel by channel. */
static void the_topology_view_shows_nccls_channels(void) {
  char dir[128], good[160];
  snprintf(dir, sizeof dir, "/tmp/nccltop-test-graphview-%d", (int)getpid());
  snprintf(good, sizeof good, "%s-good.xml", dir);
  remove_dir(dir);
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(write_file(good, two_nodes));
  char kv[200], dir_env[160];
  snprintf(kv, sizeof kv, "NCCL_GRAPH_DUMP_FILE=%s", good);
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s", dir);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 1;
  c.duration_s = 30;
  c.env[0] = kv;
  c.nenv = 1;
  pid_t job = nt_sim_spawn(&c);
  bool ok = job > 0 && wait_publishers(dir, 1, 10);
  vt_term t;
  char *argv[] = {nccltop, NULL};
  char *env[] = {dir_env, NULL};
  ok = ok && vt_start(&t, 24, 80, argv, env) == 0;
  if (ok) {
    vt_send(&t, "5");
    ok = vt_wait_for(&t, "[topology]", 10);
    vt_send(&t, "R");
    ok = ok && vt_wait_for(&t, "as NCCL dumped them", 10) &&
         vt_wait_for(&t, "ring: 2 channels, 40 GB/s NVL in a node, 24 GB/s PIX between", 2) &&
         vt_wait_for(&t, "ch 1   NET 1 > GPU 3 2 1 0 > NET 1", 2) &&
         vt_wait_for(&t, "nvls: 1 channel", 2) && vt_wait_for(&t, "GPU 2:1", 2);
    if (!ok) fprintf(stderr, "    screen:\n%s\n", vt_text(&t));
    vt_send(&t, "q");
    if (ok) ok = vt_wait_exit(&t, 10) == 0;
    vt_stop(&t);
  }
  stop_group(&job);
  remove_dir(dir);
  unlink(good);
  CHECK(ok);
}

/* Without a dump, the channels computed from --topology, marked so, and
 * recomputed under a what-if. */
static void without_a_dump_the_channels_are_computed_and_say_so(void) {
  char dir[128], dir_env[160];
  snprintf(dir, sizeof dir, "/tmp/nccltop-test-graphcomp-%d", (int)getpid());
  remove_dir(dir);
  CHECK(mkdir(dir, 0700) == 0);
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s", dir);
  vt_term t;
  char *argv[] = {nccltop, "--topology", "examples/topologies/pcie-2socket-4gpu.xml", NULL};
  char *env[] = {dir_env, NULL};
  bool ok = vt_start(&t, 24, 80, argv, env) == 0;
  if (ok) {
    vt_send(&t, "5");
    ok = vt_wait_for(&t, "[topology]", 10);
    vt_send(&t, "R");
    ok = ok && vt_wait_for(&t, "computed from this topology", 10) && vt_wait_for(&t, "ring: ", 2) &&
         vt_wait_for(&t, "tree: ", 2) && vt_wait_for(&t, "ch 0   GPU ", 2);
    if (!ok) fprintf(stderr, "    screen:\n%s\n", vt_text(&t));
    vt_send(&t, "R"); /* back to the paths */
    ok = ok && vt_wait_for(&t, "what-if: none", 5);
    vt_send(&t, "q");
    if (ok) ok = vt_wait_exit(&t, 10) == 0;
    vt_stop(&t);
  }
  remove_dir(dir);
  CHECK(ok);
}

/* A 2-node job (`ranks` ranks, node0 the first half, node1 the second, all
 * publishing to one directory), its own topology (`topo`, an example) and,
 * with `dump`, NCCL's graph dump: the R face at 80x24 shows the
 * communicator's rings and trees over its ranks, channel by channel, from
 * NCCL's dump or computed; each `want` must be on the screen, then after
 * `keys` (NULL: none) each `then`. */
typedef struct {
  bool dump;
  const char *topo;
  int ranks;
  const char *const *want;
  int nwant;
  const char *keys;
  const char *const *then;
  int nthen;
} rings_case;

static bool two_node_rings_on_screen(const rings_case *k) {
  char dir[128], good[160], dir_env[160], kv_dir[200], kv_topo[PATH_MAX + 128], kv_dump[200];
  snprintf(dir, sizeof dir, "/tmp/nccltop-test-rings-%d-%d", (int)getpid(), k->dump);
  snprintf(good, sizeof good, "%s-dump.xml", dir);
  remove_dir(dir);
  bool made = mkdir(dir, 0700) == 0 && write_file(good, two_nodes);
  char topo[PATH_MAX + 64], cwd[PATH_MAX];
  snprintf(topo, sizeof topo, "%s/examples/topologies/%s", getcwd(cwd, sizeof cwd) ? cwd : ".",
           k->topo);
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s", dir);
  /* after the node's own directory (--nodes): every rank publishes here */
  snprintf(kv_dir, sizeof kv_dir, "NCCLTOP_DIR=%s", dir);
  snprintf(kv_topo, sizeof kv_topo, "NCCL_TOPO_DUMP_FILE=%s", topo);
  snprintf(kv_dump, sizeof kv_dump, "NCCL_GRAPH_DUMP_FILE=%s", good);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = k->ranks;
  c.nodes = 2;
  c.duration_s = 30;
  c.env[0] = kv_dir;
  c.env[1] = kv_topo;
  c.env[2] = kv_dump;
  c.nenv = k->dump ? 3 : 2;
  pid_t job = made ? nt_sim_spawn(&c) : -1;
  bool ok = job > 0 && wait_publishers(dir, k->ranks, 10);
  vt_term t;
  char *argv[] = {nccltop, NULL};
  char *env[] = {dir_env, NULL};
  ok = ok && vt_start(&t, 24, 80, argv, env) == 0;
  if (ok) {
    char ranks[32];
    snprintf(ranks, sizeof ranks, "ranks %d", k->ranks);
    ok = vt_wait_for(&t, ranks, 10);
    vt_send(&t, "5");
    ok = ok && vt_wait_for(&t, "[topology]", 10);
    vt_send(&t, "R");
    for (int i = 0; ok && i < k->nwant; i++) ok = vt_wait_for(&t, k->want[i], 10);
    if (ok && k->keys) vt_send(&t, k->keys);
    for (int i = 0; ok && i < k->nthen; i++) ok = vt_wait_for(&t, k->then[i], 10);
    if (!ok) fprintf(stderr, "    screen:\n%s\n", vt_text(&t));
    vt_send(&t, "q");
    if (ok) ok = vt_wait_exit(&t, 10) == 0;
    vt_stop(&t);
  }
  stop_group(&job);
  remove_dir(dir);
  unlink(good);
  return ok;
}

/* NCCL's dump: ring channel 0 is GPUs 0 1 2 3 on each node (ranks 0-3 and
 * 4-7), node0's last sends to node1's first; 1 search channel (the tree
 * found one), doubled: channel 1 repeats the ring and carries the second
 * tree. Trees (balanced, 2 nodes): in tree 0 node0 is the root and rank 0
 * has node1's rank 4 as a child; in tree 1 node1 is, and rank 4 has 0. */
static void a_two_node_jobs_rings_and_trees_from_the_dump(void) {
  static const char *const want[] = {
      "from NCCL's dump",
      "comm sim-comm-0: 8 ranks on 2 nodes, 2 channels, from NCCL's dump",
      "nodes    node0:0-3 node1:4-7",
      "ring 0   0 1 2 3 4 5 6 7",
      "ring 1   0 1 2 3 4 5 6 7",
      "tree 0   -1>0>1/4 0>1>2 1>2>3 2>3>-1 0>4>5 4>5>6 5>6>7 6>7>-1",
      "tree 1   4>0>1 0>1>2 1>2>3 2>3>-1 -1>4>5/0 4>5>6 5>6>7 6>7>-1",
  };
  rings_case k = {
      true, "pcie-2socket-4gpu.xml", 8, want, (int)(sizeof want / sizeof want[0]), NULL, NULL, 0};
  CHECK(two_node_rings_on_screen(&k));
}

/* Without a dump: the search's graphs on the job's topology, across nodes,
 * connected over its ranks, marked computed (test_comm_rings checks the
 * order); 16 ranks on the 8-GPU NVSwitch example make more lines than 80x24
 * holds: End scrolls to the last channels' trees, each wrapped to the width
 * (what `topo --graphs --nodes 2` gives channel 15, the second tree of
 * channel 7: node1's rank 15 the root, node0's rank 7 its second child). */
static void without_a_dump_the_rings_are_computed_and_say_so(void) {
  static const char *const want[] = {
      "computed from this topology and what-ifs for several nodes (no dump came)",
      "ring: 8 channels",
      "more v",
  };
  static const char *const then[] = {
      "tree 15  7>0>1 0>1>2 1>2>3 2>3>4 3>4>5 4>5>6 5>6>-1 15>7>0 15>8>9 8>9>10",
      "         9>10>11 10>11>12 11>12>13 12>13>14 13>14>-1 -1>15>8/7",
  };
  rings_case k = {false,
                  "nvswitch-8gpu-8nic.xml",
                  16,
                  want,
                  (int)(sizeof want / sizeof want[0]),
                  "\033OF",
                  then,
                  (int)(sizeof then / sizeof then[0])};
  CHECK(two_node_rings_on_screen(&k));
}

int main(void) {
  scenario_init();
  TEST_RUN(the_graphs_nccl_writes_are_read_whole);
  TEST_RUN(what_nccl_never_writes_is_refused_with_one_line);
  TEST_RUN(a_ranks_graph_dump_reaches_the_viewer);
  TEST_RUN(the_topology_view_shows_nccls_channels);
  TEST_RUN(without_a_dump_the_channels_are_computed_and_say_so);
  TEST_RUN(a_two_node_jobs_rings_and_trees_from_the_dump);
  TEST_RUN(without_a_dump_the_rings_are_computed_and_say_so);
  return TEST_DONE();
}

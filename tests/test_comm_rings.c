/* The rings and trees over a communicator's ranks as the model knows them
 * (monitor/core/model_rings.c with topo/connect.c): the layout from the
 * processes' hosts (nodes numbered by their lowest rank, local ranks
 * ascending, as NCCL's init.cc), then NCCL's connect.cc over it, from
 * NCCL's dump and from the search. The expected values are worked out by
 * hand from connect.cc, rule by rule, in the comments. */
#include <stdlib.h>

#include "testlib.h"
#include "../monitor/core/model.h"

#define HASH 0xc0c0c0c0c0c0c0c0ull

/* rank r of 8 (2 nodes): even ranks on host "zeta", odd ones on "alpha";
 * the names sort the other way round from the ranks, so a layout by name
 * would be wrong */
static nt_snapshot *snap(int rank, int nranks, int nnodes, const char *host) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "%s", host);
  s->pid = 1000 + (uint32_t)rank;
  s->seq = 1;
  s->mono_ns = 1000000;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = rank, .nranks = nranks, .nnodes = nnodes};
  return s;
}

/* A model with `present` of the ranks 0..nranks-1 of one communicator, rank r on
 * host hosts[r % nhosts]. */
static nt_model *job(int nranks, int nnodes, const char *const *hosts, int nhosts, int present) {
  nt_model *m = nt_model_new();
  for (int r = 0; m && r < present; r++) {
    nt_snapshot *s = snap(r, nranks, nnodes, hosts[r % nhosts]);
    if (!s || nt_model_apply_snapshot(m, "ep", 0, s, 1.0) != 0) {
      nt_snapshot_free(s);
      nt_model_free(m);
      return NULL;
    }
    nt_snapshot_free(s);
  }
  return m;
}

static const char *const zeta_alpha[] = {"zeta", "alpha"};

/* NCCL's dump of a 4-GPU node of a 2-node job: 2 ring channels with
 * crossNic 2 (the second one reversed), 2 split-tree channels (the second
 * starting at GPU 1). */
static const char dump_xml[] =
    "<graphs version=\"1\">"
    "<graph id=\"0\" pattern=\"4\" crossnic=\"2\" nchannels=\"2\" speedintra=\"40\" "
    "speedinter=\"24\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"0\">"
    "<channel><net dev=\"0\"/><gpu dev=\"0\"/><gpu dev=\"1\"/><gpu dev=\"2\"/><gpu dev=\"3\"/>"
    "<net dev=\"0\"/></channel>"
    "<channel><net dev=\"1\"/><gpu dev=\"3\"/><gpu dev=\"2\"/><gpu dev=\"1\"/><gpu dev=\"0\"/>"
    "<net dev=\"1\"/></channel></graph>"
    "<graph id=\"1\" pattern=\"2\" crossnic=\"0\" nchannels=\"2\" speedintra=\"40\" "
    "speedinter=\"24\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"0\">"
    "<channel><net dev=\"0\"/><gpu dev=\"0\"/><gpu dev=\"1\"/><gpu dev=\"2\"/><gpu dev=\"3\"/>"
    "<net dev=\"0\"/></channel>"
    "<channel><net dev=\"1\"/><gpu dev=\"1\"/><gpu dev=\"0\"/><gpu dev=\"3\"/><gpu dev=\"2\"/>"
    "<net dev=\"1\"/></channel></graph>"
    "</graphs>";

/* init.cc: a node is a host, numbered in the order of its lowest rank; its
 * local ranks are its ranks ascending. Rank 0 is on zeta: zeta is node 0
 * (not alpha, which sorts first). */
static void nodes_are_hosts_in_the_order_of_their_lowest_rank(void) {
  nt_model *m = job(8, 2, zeta_alpha, 2, 8);
  CHECK(m != NULL);
  if (!m) return;
  nt_comm_layout l[2];
  uint32_t more = 9, n = nt_model_comm_layouts(m, l, 2, &more);
  CHECK_EQ_U64(n, 1);
  CHECK_EQ_U64(more, 0);
  CHECK_STR(l[0].why, "");
  CHECK(l[0].nnodes == 2 && l[0].nlocal == 4);
  static const int want[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  CHECK(l[0].node_ranks && memcmp(l[0].node_ranks, want, sizeof want) == 0);
  if (l[0].hosts) {
    CHECK_STR(l[0].hosts[0], "zeta");
    CHECK_STR(l[0].hosts[1], "alpha");
  }
  for (uint32_t i = 0; i < n; i++) nt_comm_layout_free(&l[i]);
  nt_model_free(m);
}

static bool ring_is(const nt_topo_rings *r, int c, const int *want) {
  const int *ring = nt_topo_rings_ring(r, c);
  bool ok = ring && memcmp(ring, want, 8 * sizeof *want) == 0;
  if (!ok && ring) {
    fprintf(stderr, "    ring %d:", c);
    for (int i = 0; i < 8; i++) fprintf(stderr, " %d", ring[i]);
    fprintf(stderr, "\n");
  }
  return ok;
}

/* tree channel c: each rank's parent and children, -1 none */
static bool tree_is(const nt_topo_rings *r, int c, const int want[8][4]) {
  bool ok = true;
  for (int rank = 0; rank < 8; rank++) {
    int up = -9, down[3];
    bool got = nt_topo_rings_tree(r, c, rank, &up, down);
    if (!got || up != want[rank][0] || down[0] != want[rank][1] || down[1] != want[rank][2] ||
        down[2] != want[rank][3]) {
      fprintf(stderr, "    tree %d rank %d: %d > %d/%d/%d, want %d > %d/%d/%d\n", c, rank, up,
              down[0], down[1], down[2], want[rank][0], want[rank][1], want[rank][2],
              want[rank][3]);
      ok = false;
    }
  }
  return ok;
}

/* NCCL's dump over the interleaved layout, node 0 = {0,2,4,6}, node 1 =
 * {1,3,5,7} (local rank k = GPU dev k without a topology):
 *
 * Channels (init.cc, connect.cc ncclTopoPostset): min(ring 2, tree 2) = 2
 * search channels, doubled to 4; channels 2 and 3 repeat 0 and 1's rings
 * and carry the second tree.
 *
 * Rings (ncclTopoPreset, connectRings, and Postset's "alternate rings to
 * avoid crossing rails": crossNic 2 and an even channel count, so node 1,
 * odd, swaps channels 0 and 1):
 *   ch 0: node 0 runs ring channel 0 (GPUs 0 1 2 3: ranks 0 2 4 6), node 1
 *         ring channel 1 (3 2 1 0: ranks 7 5 3 1); node 0's last (6) sends
 *         to node 1's first (7), node 1's last (1) to node 0's first (0):
 *         0 2 4 6 7 5 3 1
 *   ch 1: node 0 runs channel 1 (6 4 2 0), node 1 channel 0 (1 3 5 7):
 *         from rank 0: 0 1 3 5 7 6 4 2
 * Trees (Preset: a chain inside each node, tree.up the previous GPU,
 * down[0] the next; the split tree's parent side is the channel's GPU 0,
 * both child sides its GPU 1; connectTrees with ncclGetDtree over 2 nodes:
 * tree 0 has node 0 as root with node 1 as child 1 (its childType 1),
 * tree 1 mirrors it: node 1 root, node 0 its child 1):
 *   ch 0 (tree 0, chain GPUs 0 1 2 3): node 1's parent side (rank 1) goes
 *         up to node 0's child-1 side (GPU 1: rank 2), which gets rank 1
 *         as a child after its chain child 4
 *   ch 2 (tree 1, same chain): node 0's parent side (rank 0) goes up to
 *         node 1's child-1 side (GPU 1: rank 3), which gets 0 after 5
 *   ch 1 (tree 0, chain GPUs 1 0 3 2: node 0 2>0>6>4, node 1 3>1>7>5):
 *         rank 3 (node 1's parent side) goes up to rank 0 (node 0's GPU at
 *         position 1), which gets 3 after 6
 *   ch 3 (tree 1, same chain): rank 2 goes up to rank 1, which gets 2
 *         after 7 */
static void the_dump_connects_over_the_real_ranks_as_connect_cc(void) {
  nt_model *m = job(8, 2, zeta_alpha, 2, 8);
  char err[256] = "";
  nt_graph_dump *d = nt_graph_dump_parse(dump_xml, strlen(dump_xml), err, sizeof err);
  CHECK(m && d);
  if (!m || !d) {
    fprintf(stderr, "    %s\n", err);
    nt_model_free(m);
    nt_graph_dump_free(d);
    return;
  }
  nt_comm_layout l;
  CHECK_EQ_U64(nt_model_comm_layouts(m, &l, 1, NULL), 1);
  nt_topo_rings *r = nt_comm_rings_from_dump(&l, d, NULL, err, sizeof err);
  if (!r) fprintf(stderr, "    %s\n", err);
  CHECK(r != NULL);
  if (r) {
    CHECK_EQ_U64(nt_topo_rings_nchannels(r), 4);
    CHECK_EQ_U64(nt_topo_rings_nranks(r), 8);
    static const int ring0[8] = {0, 2, 4, 6, 7, 5, 3, 1}, ring1[8] = {0, 1, 3, 5, 7, 6, 4, 2};
    CHECK(ring_is(r, 0, ring0));
    CHECK(ring_is(r, 1, ring1));
    CHECK(ring_is(r, 2, ring0));
    CHECK(ring_is(r, 3, ring1));
    /* rank: up, down[0..2] */
    static const int tree0[8][4] = {{-1, 2, -1, -1}, {2, 3, -1, -1}, {0, 4, 1, -1},
                                    {1, 5, -1, -1},  {2, 6, -1, -1}, {3, 7, -1, -1},
                                    {4, -1, -1, -1}, {5, -1, -1, -1}};
    static const int tree2[8][4] = {{3, 2, -1, -1},  {-1, 3, -1, -1}, {0, 4, -1, -1},
                                    {1, 5, 0, -1},   {2, 6, -1, -1},  {3, 7, -1, -1},
                                    {4, -1, -1, -1}, {5, -1, -1, -1}};
    static const int tree1[8][4] = {{2, 6, 3, -1},  {3, 7, -1, -1},  {-1, 0, -1, -1},
                                    {0, 1, -1, -1}, {6, -1, -1, -1}, {7, -1, -1, -1},
                                    {0, 4, -1, -1}, {1, 5, -1, -1}};
    static const int tree3[8][4] = {{2, 6, -1, -1},  {3, 7, 2, -1},   {1, 0, -1, -1},
                                    {-1, 1, -1, -1}, {6, -1, -1, -1}, {7, -1, -1, -1},
                                    {0, 4, -1, -1},  {1, 5, -1, -1}};
    CHECK(tree_is(r, 0, tree0));
    CHECK(tree_is(r, 1, tree1));
    CHECK(tree_is(r, 2, tree2));
    CHECK(tree_is(r, 3, tree3));
  }
  nt_topo_rings_free(r);
  nt_comm_layout_free(&l);
  nt_graph_dump_free(d);
  nt_model_free(m);
}

/* The search's graphs over a node-major job are nt_topo_graphs_compute's
 * own rings and trees; over the interleaved one, the same with every rank
 * renamed node_ranks[rank] (connect.cc sees only nodes and local ranks). */
static void computed_graphs_follow_the_ranks_hosts(void) {
  char err[512] = "";
  nt_topo *t = nt_topo_load_file("examples/topologies/pcie-2socket-4gpu.xml", err, sizeof err);
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  CHECK(t && nt_topo_compute(t, &env, err, sizeof err) == 0);
  nt_topo_graphs *g = t ? nt_topo_graphs_compute(t, 2, err, sizeof err) : NULL;
  nt_model *m = job(8, 2, zeta_alpha, 2, 8);
  CHECK(g && m);
  if (!g || !m) {
    fprintf(stderr, "    %s\n", err);
    goto out;
  }
  nt_comm_layout l;
  CHECK_EQ_U64(nt_model_comm_layouts(m, &l, 1, NULL), 1);
  nt_topo_rings *r = nt_comm_rings_from_graphs(&l, t, g, err, sizeof err);
  CHECK(r != NULL);
  if (r) {
    int nch = nt_topo_graphs_nchannels(g);
    CHECK(nt_topo_rings_nchannels(r) == nch);
    bool same = true;
    for (int c = 0; c < nch && same; c++) {
      const int *a = nt_topo_graphs_ring(g, c), *b = nt_topo_rings_ring(r, c);
      for (int i = 0; i < 8; i++) same = same && b[i] == l.node_ranks[a[i]];
      for (int k = 0; k < 8; k++) {
        int ua, da[3], ub, db[3];
        nt_topo_graphs_tree(g, c, k, &ua, da);
        nt_topo_rings_tree(r, c, l.node_ranks[k], &ub, db);
        same = same && ub == (ua < 0 ? -1 : l.node_ranks[ua]);
        for (int j = 0; j < 3; j++) same = same && db[j] == (da[j] < 0 ? -1 : l.node_ranks[da[j]]);
      }
    }
    CHECK(same);
  }
  nt_topo_rings_free(r);
  nt_comm_layout_free(&l);
out:
  nt_model_free(m);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* No rings where the layout is not whole or does not fit, with why. */
static void what_cannot_be_connected_says_why(void) {
  char err[256] = "";
  nt_graph_dump *d = nt_graph_dump_parse(dump_xml, strlen(dump_xml), err, sizeof err);
  static const struct {
    int nranks, nnodes, nhosts, present;
    const char *says;
  } cases[] = {
      {8, 2, 2, 7, "7 of its 8 ranks are seen"},
      {8, 8, 2, 8, "NCCL counts 8 nodes, its ranks are on 2 hosts"},
      {6, 2, 2, 6, "NCCL's dump has 4 GPUs, the communicator 3 ranks per node"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nt_model *m =
        job(cases[i].nranks, cases[i].nnodes, zeta_alpha, cases[i].nhosts, cases[i].present);
    nt_comm_layout l;
    bool one = m && nt_model_comm_layouts(m, &l, 1, NULL) == 1;
    CHECK(one);
    if (!one) {
      nt_model_free(m);
      continue;
    }
    char why[256] = "";
    nt_topo_rings *r = d ? nt_comm_rings_from_dump(&l, d, NULL, why, sizeof why) : NULL;
    if (!strstr(why, cases[i].says)) fprintf(stderr, "    case %zu: \"%s\"\n", i, why);
    CHECK(r == NULL && strstr(why, cases[i].says));
    nt_topo_rings_free(r);
    nt_comm_layout_free(&l);
    nt_model_free(m);
  }
  /* a layout that is not a permutation of the ranks is refused by topo */
  int node_ranks[4] = {0, 1, 1, 3}, local[2] = {0, 1};
  nt_topo_layout tl = {.nnodes = 2,
                       .nlocal = 2,
                       .node_ranks = node_ranks,
                       .ring_channels = 1,
                       .tree_channels = 1,
                       .ring_local = local,
                       .tree_local = local,
                       .tree_pattern = NT_PATTERN_BALANCED_TREE};
  CHECK(nt_topo_connect(&tl, err, sizeof err) == NULL && strstr(err, "once each"));
  node_ranks[2] = 2;
  local[1] = 0;
  CHECK(nt_topo_connect(&tl, err, sizeof err) == NULL && strstr(err, "visit each"));
  nt_graph_dump_free(d);
}

/* More communicators than the model looks at (256): the ones left out are
 * counted once each, however many processes are in them. 10 processes in
 * pairs, each pair in 64 communicators of 2 ranks: 320 communicators. */
static void communicators_left_out_are_counted_once(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  for (int p = 0; m && p < 10; p++) {
    nt_snapshot *s = snap(p & 1, 2, 1, "zeta");
    CHECK(s != NULL);
    if (!s) break;
    s->pid = 2000 + (uint32_t)p;
    s->ncomms = 64;
    for (int k = 0; k < 64; k++)
      s->comms[k] = (nt_comm_row){.comm_hash = HASH + 1 + (uint64_t)(p / 2) * 64 + (uint64_t)k,
                                  .rank = p & 1,
                                  .nranks = 2,
                                  .nnodes = 1};
    CHECK(nt_model_apply_snapshot(m, "ep", 0, s, 1.0) == 0);
    nt_snapshot_free(s);
  }
  nt_comm_layout l[2];
  uint32_t more = 0, n = m ? nt_model_comm_layouts(m, l, 2, &more) : 0;
  CHECK_EQ_U64(n, 2);
  CHECK_EQ_U64(more, 320 - 2);
  for (uint32_t i = 0; i < n; i++) nt_comm_layout_free(&l[i]);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(nodes_are_hosts_in_the_order_of_their_lowest_rank);
  TEST_RUN(the_dump_connects_over_the_real_ranks_as_connect_cc);
  TEST_RUN(computed_graphs_follow_the_ranks_hosts);
  TEST_RUN(what_cannot_be_connected_says_why);
  TEST_RUN(communicators_left_out_are_counted_once);
  return TEST_DONE();
}

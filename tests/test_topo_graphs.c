/* topo/'s channel search and connection (nccltop topo --graphs) on the real
 * NCCL dumps in ../shared/topologies (or $NCCLTOP_SHARED_TOPOLOGIES; the
 * tests that need them are skipped when absent). Expected graphs are
 * derived by hand from NCCL 2.28.9's src/graph/search.cc
 * (ncclTopoSearchInit, ncclTopoCompute and its recursion,
 * ncclTopoDupChannels), connect.cc and trees.cc; the comment above each
 * check gives the derivation. The invariants (lib/topo_graphs_check.h) and
 * NCCL's model run on every real file and every example, one and three
 * nodes, both versions. Machines of our own and rebuilt from NCCL's logs:
 * test_topo_graphs_machines.c; the model and the command line:
 * test_topo_graphs_model.c. */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "lib/topo_fixture.h"
#include "lib/topo_graphs_check.h"

/* simai 8x A100 (sm 80) on NVSwitch, one node, 2.28.9.
 * Ring: each GPU has 12 NVLinks x 20 GB/s = 240 GB/s to the NVSwitch
 * (ncclTopoSearchInit: maxBw = totalBw = 240). speedArrayIntra starts at
 * 40: 240/40 = 6 channels use every GPU's NVSwitch links up exactly, so
 * nChannels x bw = 240 >= totalBw ends pass 1 at once. The first order
 * tried is the PCI order 0..7 (no NET; NVSwitch present only shapes the
 * next-GPU sort) and every later channel replays it (sameChannels 1).
 * ncclTopoDupChannels: bw 40 >= 25 and sm 80 is not > 80, so 12 channels
 * at 20. Pass 2 asks 12 channels at 30 (360 > 240): none. Tree: 12 channels
 * (= ring), totalBw x 8/7 = 274.3 so 40x12 and 30x12 are skipped, 20x12 =
 * 240 fits a chain 0..7 exactly: perfect at once, kept BALANCED (no
 * simpler-tree retry before sm 90), no dup (20 < 25); pass 2's 30 fails.
 * Connected: min(12,12) x 2 = 24 channels; inside one node the ring is the
 * channel order and the tree a chain 0->1->..->7 (up = previous GPU). Real
 * NCCL logged the same on an HGX A100 (NVIDIA/nccl-tests#100: "Channel
 * 23/24 : 0 1 2 3 4 5 6 7", "Trees [0] 1/-1/-1->0->-1 ..."). */
static void a100_nvswitch_one_node(void) {
  const char *dir = tf_shared_dir();
  nt_topo *t = tf_load(dir, "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.pattern == NT_PATTERN_RING && r.nchannels == 12);
  CHECK(r.bw_intra == 20.0 && r.bw_inter == 20.0);
  CHECK(r.type_intra == NT_PATH_NVL && r.type_inter == NT_PATH_PIX && r.same_channels == 1);
  static const int order[] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int c = 0; c < 12; c++) CHECK(tg_channel_is(t, g, 0, c, order, 8));
  CHECK(tr.pattern == NT_PATTERN_BALANCED_TREE && tr.nchannels == 12 && tr.bw_intra == 20.0);
  CHECK(nt_topo_graphs_nchannels(g) == 24 && nt_topo_graphs_nranks(g) == 8);
  const int *ring = nt_topo_graphs_ring(g, 23);
  CHECK(ring && ring[0] == 0 && ring[1] == 1 && ring[7] == 7);
  int up, down[3];
  CHECK(nt_topo_graphs_tree(g, 0, 0, &up, down) && up == -1 && down[0] == 1 && down[1] == -1);
  CHECK(nt_topo_graphs_tree(g, 5, 7, &up, down) && up == 6 && down[0] == -1);
  CHECK(tg_check_invariants(t, g, "simai-8 1 node") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* IBM gx3d 8x H100 (sm 90), NVSwitch with 18 NVLinks x 20.6 = 370.8 GB/s
 * per GPU, one node, 2.28.9. sm90SpeedArrayIntra starts at 60: 6 channels
 * (7 x 60 = 420 > 370.8), 360 < totalBw so pass 1 goes on; lower speeds
 * never beat 360 (50x7, 40x9, 30x12, ... 11x32 = 352). Dup: 60 >= 50, so 12
 * channels at 30; pass 2's 12 x 40 = 480 cannot fit. Tree (12 channels):
 * totalBw x 8/7 = 423.8 skips 60 and 50 and 40 (480); 30 x 12 = 360 fits
 * the chain: perfect, still BALANCED (perfect skips the simpler-tree try);
 * sm 90 with 30 < 50 and 12 > 4 channels: no dup; pass 2's intra 40 fails. */
static void h100_nvswitch_one_node(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  for (int v = 0; v < 2; v++) { /* the same search in 2.30.7 */
    nt_topo_graphs *g = tf_graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, 1, NULL, NULL);
    CHECK(g != NULL);
    if (!g) continue;
    nt_topo_graph_info r, tr;
    CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
    CHECK(r.nchannels == 12 && r.bw_intra == 30.0 && r.type_intra == NT_PATH_NVL);
    CHECK(tr.nchannels == 12 && tr.bw_intra == 30.0 && tr.pattern == NT_PATTERN_BALANCED_TREE);
    CHECK(nt_topo_graphs_nchannels(g) == 24);
    CHECK(tg_check_invariants(t, g, "ibm 1 node") == 0);
    nt_topo_graphs_free(g);
  }
  nt_topo_free(t);
}

/* The same A100 box as two nodes (2.28.9): channels start and end on a
 * NIC. NICs are 200 Gb/s = 25 GB/s; the best GPU->NIC path is PXB at 24
 * (Gen4 x16), so maxBw = 24 and sm80's speedArrayInter {48, 30, 28, 24..}
 * starts at 24. typeInter starts at PIX (no PIX NIC: nothing), then PXB:
 * NET1..4 are PXB to their GPUs, NET0 (on the root port) is PHB and GDR-
 * less. A NIC carries one 24 GB/s channel (25 - 24 < 24; RecNet truncates
 * the channel's bw to an integer): 4 channels, in and out on the same NIC
 * (crossNic 0: same guid and port). Lower speeds never beat 4 x 24 = 96
 * (12 x 8 = 96 ties with more hops). 24 < 25: no dup. Rings come back to
 * the NIC from the last GPU: the next-GPU sort, all GPUs alike, runs in
 * reverse, so channel c is GPU 2c, 2c-1, ... down: 0 7 6 5 4 3 2 1 for NET1.
 * Connected: 4 x 2 = 8 channels; node 0's last GPU sends to node 1's first. */
static void a100_two_nodes(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.nchannels == 4 && r.bw_inter == 24.0 && r.bw_intra == 24.0);
  CHECK(r.type_intra == NT_PATH_NVL && r.type_inter == NT_PATH_PXB && r.cross_nic == 0);
  bool used[8] = {false};
  for (int c = 0; c < 4; c++) {
    int in = tg_dev_of(t, nt_topo_graphs_channel_net(g, 0, c, 0));
    int out = tg_dev_of(t, nt_topo_graphs_channel_net(g, 0, c, 1));
    CHECK(in == out && in >= 1 && in <= 4 && !used[in]);
    if (in >= 0 && in < 8) used[in] = true;
  }
  static const int ch0[] = {0, 7, 6, 5, 4, 3, 2, 1};
  CHECK(tg_channel_is(t, g, 0, 0, ch0, 8));
  CHECK(nt_topo_graphs_nranks(g) == 16 && nt_topo_graphs_nchannels(g) == 8);
  const int *ring = nt_topo_graphs_ring(g, 0);
  static const int want[] = {0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9};
  CHECK(ring && memcmp(ring, want, sizeof want) == 0);
  /* Trees: node 0's first GPU (rank 0) is the root of tree 0 and has node
   * 1's first GPU (rank 8) as its second child (btree over 2 nodes: node 1
   * is child 1 of node 0); in the mirrored tree (channel 4 = 0 + 4) rank 8
   * is the root and rank 0 its child. */
  int up, down[3];
  CHECK(nt_topo_graphs_tree(g, 0, 0, &up, down) && up == -1 && down[0] == 1 && down[1] == 8);
  CHECK(nt_topo_graphs_tree(g, 0, 8, &up, down) && up == 0 && down[0] == 9);
  CHECK(nt_topo_graphs_tree(g, 4, 0, &up, down) && up == 8);
  CHECK(nt_topo_graphs_tree(g, 4, 8, &up, down) && up == -1 && down[1] == 0);
  CHECK(tg_check_invariants(t, g, "simai-8 2 nodes") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* GB10: one GPU (sm 121). inter = 0 with one GPU: maxBw = totalBw =
 * LOC_BW; sm100SpeedArrayIntra starts at 90; a ring of one GPU uses no link,
 * so 32 (MAXCHANNELS/2) channels at 90 end the search at once; dup stays at
 * 32 (the maximum). The tree search becomes TREE (one GPU). Connected: 64. */
static void gb10_one_gpu(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "nvidia-dgx-spark-gb10-c2c.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.nchannels == 32 && r.bw_intra == 90.0 && r.type_intra == NT_PATH_LOC);
  CHECK(tr.pattern == NT_PATTERN_TREE && tr.nchannels == 32);
  CHECK(nt_topo_graphs_nchannels(g) == 64);
  CHECK(tg_check_invariants(t, g, "gb10") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* Variables: NCCL_MAX_NCHANNELS caps the connected channels (the first
 * ones kept); NCCL_MIN_NCHANNELS repeats them (channel 24 + k = channel k);
 * the new name beats NCCL_MIN_NRINGS; NCCL_CROSS_NIC=1 lets a ring leave
 * by another NIC, so H100's channels need no PXN hop (type PIX, not PXN,
 * and out != in); NCCL_P2P_DISABLE=1 sends every GPU pair through the CPUs
 * (Ice Lake's 10 GB/s inter-socket link: one SYS channel). */
static void variables_move_the_graphs(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, "NCCL_MAX_NCHANNELS=4", NULL);
  CHECK(g && nt_topo_graphs_nchannels(g) == 4);
  nt_topo_graphs_free(g);
  g = tf_graphs(t, NT_NCCL_228, 1, "NCCL_MIN_NCHANNELS=40", "NCCL_MIN_NRINGS=30");
  CHECK(g && nt_topo_graphs_nchannels(g) == 40);
  if (g) CHECK(memcmp(nt_topo_graphs_ring(g, 30), nt_topo_graphs_ring(g, 6), 8 * sizeof(int)) == 0);
  nt_topo_graphs_free(g);
  g = tf_graphs(t, NT_NCCL_228, 1, "NCCL_P2P_DISABLE=1", NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_intra == NT_PATH_SYS && r.nchannels == 1);
  if (g) CHECK(tg_check_invariants(t, g, "simai-8 P2P off") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);

  t = tf_load(tf_shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_inter == NT_PATH_PXN && r.cross_nic == 0);
  nt_topo_graphs_free(g);
  g = tf_graphs(t, NT_NCCL_228, 2, "NCCL_CROSS_NIC=1", NULL);
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_inter == NT_PATH_PIX && r.cross_nic == 1);
  if (g) {
    CHECK(nt_topo_graphs_channel_net(g, 0, 0, 0) != nt_topo_graphs_channel_net(g, 0, 0, 1));
    CHECK(tg_check_invariants(t, g, "ibm cross NIC") == 0);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* IBM gx3d (H100, one ConnectX-7 per GPU, each PIX to its GPU) over two
 * nodes, 2.28.9: NICs are tried in each GPU's preferred order (GPU c's own
 * NIC for channel c: nets[(nChannels + i) % count]), a channel starts on
 * the NIC's local GPU c, and behind an NVSwitch the next-GPU sort keeps
 * only the two neighbours, the previous one first (next is moved to the
 * front, then prev). So channel c is c, c-1, ..., c+1 (mod 8), and it must
 * come back to the same NIC (crossNic 0: same guid and port) from GPU c+1,
 * through GPU c: typeInter PXN. Without the neighbour rule channel 5 would
 * be 5 3 2 1 0 4 7 6. */
static void h100_two_nodes_neighbours_and_pxn(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && r.nchannels == 8 && r.bw_inter == 24.0);
  CHECK(r.type_inter == NT_PATH_PXN && r.cross_nic == 0);
  for (int c = 0; c < 8; c++) {
    int order[8];
    for (int k = 0; k < 8; k++) order[k] = (c - k + 8) % 8;
    CHECK(tg_channel_is(t, g, 0, c, order, 8));
    int in = nt_topo_graphs_channel_net(g, 0, c, 0), out = nt_topo_graphs_channel_net(g, 0, c, 1);
    CHECK(in == out && tg_path_type(t, in, nt_topo_graphs_channel_gpu(g, 0, c, 0)) == NT_PATH_PIX);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* Azure NC A100 v4 (4 PCIe A100s, one per AMD NUMA node, one socket NIC)
 * over two nodes, 2.28.9: every GPU pair is SYS (12 GB/s), only GPU0 is
 * PHB to the NIC. Without an NVSwitch, RecNet first tries the PCI order
 * from the NIC on its own 1024-step budget: NET0 -> 0 1 2 3 -> NET0, one
 * channel at 12, typeInter SYS (the last GPU reaches the NIC only through
 * SYS). The normal search after it can only tie (CompareGraphs needs more
 * bandwidth or fewer hops), so the PCI order stays; without that first try
 * the next-GPU sort would give 0 1 3 2. */
static void pcie_two_nodes_pci_order_first(void) {
  nt_topo *t = tf_load(tf_shared_dir(), "azure-ncv4-4xa100-pcie.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r));
  if (g) {
    static const int order[] = {0, 1, 2, 3};
    CHECK(r.nchannels == 1 && r.bw_inter == 12.0 && r.type_intra == NT_PATH_SYS);
    CHECK(r.type_inter == NT_PATH_SYS && tg_channel_is(t, g, 0, 0, order, 4));
    CHECK(tg_dev_of(t, nt_topo_graphs_channel_net(g, 0, 0, 0)) == 0);
    CHECK(nt_topo_graphs_nchannels(g) == 2);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

static int check_dir(const char *dir, bool shared) {
  int bad = 0;
  static const char *real[] = {"ibm-gx3d-h100-8gpu-8nic.xml",
                               "simai-8xa100-bcm-5nic.xml",
                               "simai-1xa100-2nic.xml",
                               "azure-ncv4-4xa100-pcie.xml",
                               "azure-ncv4-4xa100-nvlink-pairs-2023.xml",
                               "nvidia-dgx-spark-gb10-c2c.xml"};
  static const char *ours[] = {"grace-c2c.xml", "nics-behind-switches.xml",
                               "nvswitch-8gpu-8nic.xml", "pcie-2socket-4gpu.xml"};
  const char **files = shared ? real : ours;
  int n = shared ? 6 : 4;
  for (int i = 0; i < n; i++) {
    nt_topo *t = tf_load(dir, files[i]);
    if (!t) {
      bad++;
      continue;
    }
    for (int v = 0; v < 2; v++)
      for (int nodes = 1; nodes <= 3; nodes += 2) { /* 2 nodes: the tests above */
        nt_topo_graphs *g = tf_graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, nodes, NULL, NULL);
        char what[160];
        snprintf(what, sizeof what, "%s v%d %d nodes", files[i], v, nodes);
        if (!g) {
          bad++;
          continue;
        }
        bad += tg_check_invariants(t, g, what);
        bad += tg_check_model(t, g, what);
        nt_topo_graphs_free(g);
      }
    nt_topo_free(t);
  }
  return bad;
}

static void every_real_file_keeps_the_invariants(void) {
  CHECK(check_dir(tf_shared_dir(), true) == 0);
}

static void every_example_keeps_the_invariants(void) {
  CHECK(check_dir("examples/topologies", false) == 0);
}

int main(void) {
  if (tf_shared_dir()) {
    TEST_RUN(a100_nvswitch_one_node);
    TEST_RUN(h100_nvswitch_one_node);
    TEST_RUN(a100_two_nodes);
    TEST_RUN(gb10_one_gpu);
    TEST_RUN(variables_move_the_graphs);
    TEST_RUN(h100_two_nodes_neighbours_and_pxn);
    TEST_RUN(pcie_two_nodes_pci_order_first);
    TEST_RUN(every_real_file_keeps_the_invariants);
  } else {
    const char *why = "../shared/topologies absent (set NCCLTOP_SHARED_TOPOLOGIES)";
    TEST_SKIP(a100_nvswitch_one_node, why);
    TEST_SKIP(h100_nvswitch_one_node, why);
    TEST_SKIP(a100_two_nodes, why);
    TEST_SKIP(gb10_one_gpu, why);
    TEST_SKIP(variables_move_the_graphs, why);
    TEST_SKIP(h100_two_nodes_neighbours_and_pxn, why);
    TEST_SKIP(pcie_two_nodes_pci_order_first, why);
    TEST_SKIP(every_real_file_keeps_the_invariants, why);
  }
  TEST_RUN(every_example_keeps_the_invariants);
  return TEST_DONE();
}

/* topo/'s channel search and connection (nccltop topo --graphs) on the real
 * NCCL dumps in ../shared/topologies (or $NCCLTOP_SHARED_TOPOLOGIES; the
 * tests that need them are skipped when absent) and on our examples.
 * Expected graphs are derived by hand from NCCL 2.28.9's src/graph/
 * search.cc (ncclTopoSearchInit, ncclTopoCompute and its recursion,
 * ncclTopoDupChannels), connect.cc and trees.cc; the comment above each
 * check gives the derivation. Invariants (every GPU once per channel, no
 * hop the paths forbid or the graph's type excludes, rings through every
 * rank, trees that are trees) run on every file, one and two nodes, both
 * versions. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "../topo/topo.h"

static const char *shared_dir(void) {
  const char *d = getenv("NCCLTOP_SHARED_TOPOLOGIES");
  if (d && *d && access(d, R_OK) == 0) return d;
  return access("../shared/topologies", R_OK) == 0 ? "../shared/topologies" : NULL;
}

static nt_topo *load(const char *dir, const char *file) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  nt_topo *t = nt_topo_load_file(path, err, sizeof err);
  if (!t) fprintf(stderr, "    %s\n", err);
  return t;
}

/* Computes t under version and up to two variables, then the graphs. */
static nt_topo_graphs *graphs(nt_topo *t, int version, int nodes, const char *a, const char *b) {
  nt_topo_env e;
  char err[512];
  nt_topo_env_defaults(&e);
  e.version = version;
  if ((a && nt_topo_env_set(&e, a, err, sizeof err) != 0) ||
      (b && nt_topo_env_set(&e, b, err, sizeof err) != 0) ||
      nt_topo_compute(t, &e, err, sizeof err) != 0) {
    fprintf(stderr, "    %s\n", err);
    return NULL;
  }
  nt_topo_graphs *g = nt_topo_graphs_compute(t, nodes, err, sizeof err);
  if (!g) fprintf(stderr, "    %s\n", err);
  return g;
}

static int dev_of(const nt_topo *t, int endpoint) {
  nt_topo_endpoint e;
  if (endpoint < 0) return -1;
  nt_topo_endpoint_at(t, endpoint, &e);
  return e.dev;
}

/* Channel c of graph `which` is the GPUs with these dev numbers. */
static bool channel_is(const nt_topo *t, const nt_topo_graphs *g, int which, int c, const int *devs,
                       int n) {
  for (int k = 0; k < n; k++)
    if (dev_of(t, nt_topo_graphs_channel_gpu(g, which, c, k)) != devs[k]) return false;
  return nt_topo_graphs_channel_gpu(g, which, c, n) == -1;
}

static int path_type(const nt_topo *t, int i, int j) {
  nt_topo_pair p;
  return nt_topo_pair_at(t, i, j, &p) ? p.type : NT_PATH_DIS;
}

/* The invariants every result keeps (returns the failures). */
static int check_invariants(const nt_topo *t, const nt_topo_graphs *g, const char *what) {
  int bad = 0, ngpus = nt_topo_ngpus(t), nodes = nt_topo_graphs_nodes(g);
  int nranks = nt_topo_graphs_nranks(g), nch = nt_topo_graphs_nchannels(g);
#define INV(cond)                                                                                  \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if (bad++ < 5) fprintf(stderr, "    %s: %s (line %d)\n", what, #cond, __LINE__);             \
    }                                                                                              \
  } while (0)
  INV(nranks == nodes * ngpus);
  INV(nch >= 1 && nch <= 64);
  for (int which = 0; which < 2; which++) {
    nt_topo_graph_info gi;
    INV(nt_topo_graphs_graph(g, which, &gi));
    INV(gi.nchannels >= 1 && gi.ngpus == ngpus);
    INV(gi.bw_intra > 0 && gi.type_intra < NT_PATH_DIS);
    for (int c = 0; c < gi.nchannels; c++) {
      int seen[64] = {0}, order[64];
      for (int k = 0; k < ngpus; k++) {
        order[k] = nt_topo_graphs_channel_gpu(g, which, c, k);
        INV(order[k] >= 0 && order[k] < ngpus);
        if (order[k] >= 0 && order[k] < ngpus) seen[order[k]]++;
      }
      for (int k = 0; k < ngpus; k++) INV(seen[k] == 1); /* every GPU exactly once */
      if (gi.bw_intra < 0.2) continue;                   /* NCCL's fallback: any order, 0.1 GB/s */
      /* every hop a path the graph's type allows, never one NCCL forbids;
       * a ring inside one node closes on its first GPU */
      int hops = which == 0 && nodes == 1 ? ngpus : ngpus - 1;
      for (int k = 0; k < hops && ngpus > 1; k++) {
        int ty = path_type(t, order[k], order[(k + 1) % ngpus]);
        INV(ty < NT_PATH_DIS && ty <= gi.type_intra);
      }
      int in = nt_topo_graphs_channel_net(g, which, c, 0),
          out = nt_topo_graphs_channel_net(g, which, c, 1);
      if (nodes == 1) {
        INV(in == -1 && out == -1);
      } else {
        INV(in >= ngpus && out >= ngpus);
        INV(path_type(t, in, order[0]) <= gi.type_inter);
        /* the ring leaves from its last GPU, trees from their first */
        int last = which == 0 ? order[ngpus - 1] : order[0];
        if (gi.pattern != NT_PATTERN_BALANCED_TREE) INV(path_type(t, last, out) <= gi.type_inter);
      }
    }
  }
  for (int c = 0; c < nch; c++) {
    const int *ring = nt_topo_graphs_ring(g, c);
    INV(ring != NULL);
    if (!ring) continue;
    int *seen = calloc((size_t)nranks, sizeof *seen);
    int roots = 0;
    for (int i = 0; i < nranks; i++) {
      INV(ring[i] >= 0 && ring[i] < nranks);
      if (ring[i] >= 0 && ring[i] < nranks) seen[ring[i]]++;
    }
    for (int r = 0; r < nranks; r++) INV(seen[r] == 1); /* every rank once per ring */
    for (int r = 0; r < nranks; r++) {
      int up, down[3];
      INV(nt_topo_graphs_tree(g, c, r, &up, down));
      if (up == -1) roots++;
      if (up >= 0) { /* the parent lists r among its children */
        int pu, pd[3];
        INV(nt_topo_graphs_tree(g, c, up, &pu, pd));
        INV(pd[0] == r || pd[1] == r || pd[2] == r);
      }
      for (int k = 0; k < 3; k++)
        if (down[k] >= 0) {
          int cu, cd[3];
          INV(nt_topo_graphs_tree(g, c, down[k], &cu, cd) && cu == r);
        }
      int x = r, steps = 0; /* up leads to the root: no cycle */
      while (x >= 0 && steps <= nranks) {
        int xd[3];
        nt_topo_graphs_tree(g, c, x, &x, xd);
        steps++;
      }
      INV(steps <= nranks);
    }
    INV(roots == 1);
    free(seen);
  }
#undef INV
  return bad;
}

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
  const char *dir = shared_dir();
  nt_topo *t = load(dir, "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.pattern == NT_PATTERN_RING && r.nchannels == 12);
  CHECK(r.bw_intra == 20.0 && r.bw_inter == 20.0);
  CHECK(r.type_intra == NT_PATH_NVL && r.type_inter == NT_PATH_PIX && r.same_channels == 1);
  static const int order[] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int c = 0; c < 12; c++) CHECK(channel_is(t, g, 0, c, order, 8));
  CHECK(tr.pattern == NT_PATTERN_BALANCED_TREE && tr.nchannels == 12 && tr.bw_intra == 20.0);
  CHECK(nt_topo_graphs_nchannels(g) == 24 && nt_topo_graphs_nranks(g) == 8);
  const int *ring = nt_topo_graphs_ring(g, 23);
  CHECK(ring && ring[0] == 0 && ring[1] == 1 && ring[7] == 7);
  int up, down[3];
  CHECK(nt_topo_graphs_tree(g, 0, 0, &up, down) && up == -1 && down[0] == 1 && down[1] == -1);
  CHECK(nt_topo_graphs_tree(g, 5, 7, &up, down) && up == 6 && down[0] == -1);
  CHECK(check_invariants(t, g, "simai-8 1 node") == 0);
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
  nt_topo *t = load(shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  for (int v = 0; v < 2; v++) { /* the same search in 2.30.7 */
    nt_topo_graphs *g = graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, 1, NULL, NULL);
    CHECK(g != NULL);
    if (!g) continue;
    nt_topo_graph_info r, tr;
    CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
    CHECK(r.nchannels == 12 && r.bw_intra == 30.0 && r.type_intra == NT_PATH_NVL);
    CHECK(tr.nchannels == 12 && tr.bw_intra == 30.0 && tr.pattern == NT_PATTERN_BALANCED_TREE);
    CHECK(nt_topo_graphs_nchannels(g) == 24);
    CHECK(check_invariants(t, g, "ibm 1 node") == 0);
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
  nt_topo *t = load(shared_dir(), "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.nchannels == 4 && r.bw_inter == 24.0 && r.bw_intra == 24.0);
  CHECK(r.type_intra == NT_PATH_NVL && r.type_inter == NT_PATH_PXB && r.cross_nic == 0);
  bool used[8] = {false};
  for (int c = 0; c < 4; c++) {
    int in = dev_of(t, nt_topo_graphs_channel_net(g, 0, c, 0));
    int out = dev_of(t, nt_topo_graphs_channel_net(g, 0, c, 1));
    CHECK(in == out && in >= 1 && in <= 4 && !used[in]);
    if (in >= 0 && in < 8) used[in] = true;
  }
  static const int ch0[] = {0, 7, 6, 5, 4, 3, 2, 1};
  CHECK(channel_is(t, g, 0, 0, ch0, 8));
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
  CHECK(check_invariants(t, g, "simai-8 2 nodes") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* GB10: one GPU (sm 121). inter = 0 with one GPU: maxBw = totalBw =
 * LOC_BW; sm100SpeedArrayIntra starts at 90; a ring of one GPU uses no link,
 * so 32 (MAXCHANNELS/2) channels at 90 end the search at once; dup stays at
 * 32 (the maximum). The tree search becomes TREE (one GPU). Connected: 64. */
static void gb10_one_gpu(void) {
  nt_topo *t = load(shared_dir(), "nvidia-dgx-spark-gb10-c2c.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r, tr;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
  CHECK(r.nchannels == 32 && r.bw_intra == 90.0 && r.type_intra == NT_PATH_LOC);
  CHECK(tr.pattern == NT_PATTERN_TREE && tr.nchannels == 32);
  CHECK(nt_topo_graphs_nchannels(g) == 64);
  CHECK(check_invariants(t, g, "gb10") == 0);
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
  nt_topo *t = load(shared_dir(), "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, "NCCL_MAX_NCHANNELS=4", NULL);
  CHECK(g && nt_topo_graphs_nchannels(g) == 4);
  nt_topo_graphs_free(g);
  g = graphs(t, NT_NCCL_228, 1, "NCCL_MIN_NCHANNELS=40", "NCCL_MIN_NRINGS=30");
  CHECK(g && nt_topo_graphs_nchannels(g) == 40);
  if (g) CHECK(memcmp(nt_topo_graphs_ring(g, 30), nt_topo_graphs_ring(g, 6), 8 * sizeof(int)) == 0);
  nt_topo_graphs_free(g);
  g = graphs(t, NT_NCCL_228, 1, "NCCL_P2P_DISABLE=1", NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_intra == NT_PATH_SYS && r.nchannels == 1);
  if (g) CHECK(check_invariants(t, g, "simai-8 P2P off") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);

  t = load(shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_inter == NT_PATH_PXN && r.cross_nic == 0);
  nt_topo_graphs_free(g);
  g = graphs(t, NT_NCCL_228, 2, "NCCL_CROSS_NIC=1", NULL);
  CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.type_inter == NT_PATH_PIX && r.cross_nic == 1);
  if (g) {
    CHECK(nt_topo_graphs_channel_net(g, 0, 0, 0) != nt_topo_graphs_channel_net(g, 0, 0, 1));
    CHECK(check_invariants(t, g, "ibm cross NIC") == 0);
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
  nt_topo *t = load(shared_dir(), "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && r.nchannels == 8 && r.bw_inter == 24.0);
  CHECK(r.type_inter == NT_PATH_PXN && r.cross_nic == 0);
  for (int c = 0; c < 8; c++) {
    int order[8];
    for (int k = 0; k < 8; k++) order[k] = (c - k + 8) % 8;
    CHECK(channel_is(t, g, 0, c, order, 8));
    int in = nt_topo_graphs_channel_net(g, 0, c, 0), out = nt_topo_graphs_channel_net(g, 0, c, 1);
    CHECK(in == out && path_type(t, in, nt_topo_graphs_channel_gpu(g, 0, c, 0)) == NT_PATH_PIX);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* Our example (H100s, one 400G NIC per GPU, 48 GB/s PCIe) over two nodes:
 * the ring search settles on crossNic 2 (an odd channel leaves by the NIC
 * the previous channel came in on: channel 1 ends on NET 0, where channel
 * 0 started). With 8 (even) channels NCCL's Postset swaps the channel pairs
 * on odd nodes, so ring 0 runs through node 0 in channel 0's order and
 * through node 1 in channel 1's: 0 7 6 5 4 3 2 1, then 9 10 .. 15 8. */
static void cross_nic_rings_swap_on_odd_nodes(void) {
  char err[512];
  nt_topo *t = nt_topo_load_file("examples/topologies/nvswitch-8gpu-8nic.xml", err, sizeof err);
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && r.cross_nic == 2 && r.nchannels % 2 == 0);
  static const int ch0[] = {0, 7, 6, 5, 4, 3, 2, 1}, ch1[] = {1, 2, 3, 4, 5, 6, 7, 0};
  CHECK(channel_is(t, g, 0, 0, ch0, 8) && channel_is(t, g, 0, 1, ch1, 8));
  CHECK(nt_topo_graphs_channel_net(g, 0, 1, 1) == nt_topo_graphs_channel_net(g, 0, 0, 0));
  static const int want[] = {0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8};
  const int *ring = nt_topo_graphs_ring(g, 0);
  CHECK(ring && memcmp(ring, want, sizeof want) == 0);
  CHECK(check_invariants(t, g, "example 2 nodes") == 0);
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
  nt_topo *t = load(shared_dir(), "azure-ncv4-4xa100-pcie.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r));
  if (g) {
    static const int order[] = {0, 1, 2, 3};
    CHECK(r.nchannels == 1 && r.bw_inter == 12.0 && r.type_intra == NT_PATH_SYS);
    CHECK(r.type_inter == NT_PATH_SYS && channel_is(t, g, 0, 0, order, 4));
    CHECK(dev_of(t, nt_topo_graphs_channel_net(g, 0, 0, 0)) == 0);
    CHECK(nt_topo_graphs_nchannels(g) == 2);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* The example with every `from` replaced by `to` (up to two pairs). */
static nt_topo *variant(const char *from1, const char *to1, const char *from2, const char *to2) {
  char err[512];
  size_t len;
  char *src =
      nt_topo_read_file("examples/topologies/nvswitch-8gpu-8nic.xml", &len, err, sizeof err);
  if (!src) return NULL;
  char *out = malloc(len * 2 + 1), *o = out;
  for (const char *p = src; out && *p;) {
    if (!strncmp(p, from1, strlen(from1))) {
      o += sprintf(o, "%s", to1), p += strlen(from1);
    } else if (from2 && !strncmp(p, from2, strlen(from2))) {
      o += sprintf(o, "%s", to2), p += strlen(from2);
    } else {
      *o++ = *p++;
    }
  }
  nt_topo *t =
      out ? nt_topo_load_buffer(out, (size_t)(o - out), "variant.xml", err, sizeof err) : NULL;
  if (!t) fprintf(stderr, "    %s\n", err);
  free(src);
  free(out);
  return t;
}

/* What real NCCL logged, on machines rebuilt from the logs.
 * (1) NVIDIA/nccl#1358: two GPUs on two Intel sockets of three (SYS at the
 * 10 GB/s inter-socket link, PCIe Gen4 x16 to each GPU). NCCL printed
 * "Pattern 4, crossNic 0, nChannels 1, bw 10.000000/10.000000, type
 * SYS/PIX, sameChannels 1", ring "0 : GPU/0 GPU/1", and "Pattern 1, ...
 * nChannels 1, bw 10.000000/10.000000". From search.cc: maxBw 10, speeds
 * (sm < 90) 40 .. 12, 10: one channel at 10 uses the link each way; 5 gives
 * two at 5, a tie with more hops; dup needs 25.
 * (2) NVIDIA/nccl#1453: three nodes of 8 H100s with a NIC per GPU logged
 * "Channel 00/16 : 0 7 6 5 4 3 2 1 8 15 14 13 12 11 10 9 16 23 22 21" and
 * "Channel 01/16 : 0 7 6 5 4 3 2 9 8 15 14 13 12 11 10 17 16 23 22 21";
 * IBM's H100 box over three nodes gives those rings (the H100 derivation
 * above: channel c runs c, c-1, ...; node n's last GPU sends to node n+1's
 * first) and 16 channels.
 * (3) NVIDIA/nccl#892: an H800 box (8 NVLinks per GPU instead of 18:
 * 164.8 GB/s) logged "16 coll channels": at 60 GB/s 2 channels fit, at 40
 * four (160, the best), dup to 8 at 20 (40 < 50 but only 4 channels), so
 * 16 connected. Our example with 2 links to each of its 4 NVSwitches. */
static void matches_real_nccl_logs(void) {
  static const char *xml =
      "<system version=\"1\">"
      "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\">"
      "<pci busid=\"0000:2a:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" "
      "link_width=\"16\"><gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/></pci></cpu>"
      "<cpu numaid=\"1\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\">"
      "</cpu>"
      "<cpu numaid=\"2\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\">"
      "<pci busid=\"0000:ab:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" "
      "link_width=\"16\"><gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\"/></pci></cpu></system>";
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, strlen(xml), "nccl-1358.xml", err, sizeof err);
  CHECK(t != NULL);
  if (t) {
    nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, NULL, NULL);
    nt_topo_graph_info r, tr;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
    if (g) {
      CHECK(r.pattern == NT_PATTERN_RING && r.cross_nic == 0 && r.nchannels == 1);
      CHECK(r.bw_intra == 10.0 && r.bw_inter == 10.0 && r.same_channels == 1);
      CHECK(r.type_intra == NT_PATH_SYS && r.type_inter == NT_PATH_PIX);
      static const int order[] = {0, 1};
      CHECK(channel_is(t, g, 0, 0, order, 2));
      CHECK(tr.pattern == NT_PATTERN_BALANCED_TREE && tr.nchannels == 1 && tr.bw_intra == 10.0);
    }
    nt_topo_graphs_free(g);
    nt_topo_free(t);
  }
  t = variant("count=\"4\"", "count=\"2\"", "count=\"5\"", "count=\"2\"");
  CHECK(t != NULL);
  if (t) {
    nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, NULL, NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.nchannels == 8 && r.bw_intra == 20.0);
    CHECK(g && nt_topo_graphs_nchannels(g) == 16);
    nt_topo_graphs_free(g);
    nt_topo_free(t);
  }
  const char *dir = shared_dir();
  if (!dir) return; /* the last one needs IBM's dump */
  t = load(dir, "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 3, NULL, NULL);
  CHECK(g && nt_topo_graphs_nchannels(g) == 16);
  if (g) {
    static const int c0[] = {0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9, 16, 23, 22, 21};
    static const int c1[] = {0, 7, 6, 5, 4, 3, 2, 9, 8, 15, 14, 13, 12, 11, 10, 17, 16, 23, 22, 21};
    CHECK(memcmp(nt_topo_graphs_ring(g, 0), c0, sizeof c0) == 0);
    CHECK(memcmp(nt_topo_graphs_ring(g, 1), c1, sizeof c1) == 0);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* Where 2.28.9 and 2.30.7 differ.
 * (1) The example's GPUs as sm 80, two nodes: a balanced tree comes back to
 * the NIC from its second GPU, and for trees the way back (NIC -> that GPU,
 * never PXN-rewritten: PHB or SYS) must be within typeInter too. 2.28 caps
 * typeInter at the worst GPU->NIC type (PXN): no tree at all, NCCL's
 * fallback (1 channel, 0.1 GB/s, SYS/SYS), and the job aligns on that one
 * channel (connected 2). 2.30 lets Ampere go to SYS (search.cc: "Ampere
 * relies on BALANCED_TREE which sometimes needs to come back through SYS"):
 * 16 channels, typeInter SYS.
 * (2) sm 100 with 18 NVLinks x 40.1 = 721.8 GB/s, one node: the tree needs
 * 16 channels (= ring: 8 at 90, doubled to 16 at 45); 16 x 50 > 721.8, and
 * 2.28's sm100 intra speeds go 50 -> 40, 2.30's 50 -> 45 -> 40. */
static void versions_differ_where_nccl_does(void) {
  nt_topo *t = variant("sm=\"90\"", "sm=\"80\"", NULL, NULL);
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  nt_topo_graph_info tr;
  CHECK(g && nt_topo_graphs_graph(g, 1, &tr));
  if (g) {
    CHECK(tr.nchannels == 1 && tr.bw_intra < 0.11 && tr.type_inter == NT_PATH_SYS);
    CHECK(nt_topo_graphs_nchannels(g) == 2);
    CHECK(check_invariants(t, g, "sm80 2.28") == 0);
  }
  nt_topo_graphs_free(g);
  g = graphs(t, NT_NCCL_230, 2, NULL, NULL);
  CHECK(g && nt_topo_graphs_graph(g, 1, &tr));
  if (g) {
    CHECK(tr.nchannels == 16 && tr.type_inter == NT_PATH_SYS && tr.bw_inter == 24.0);
    CHECK(nt_topo_graphs_nchannels(g) == 32);
    CHECK(check_invariants(t, g, "sm80 2.30") == 0);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);

  t = variant("sm=\"90\"", "sm=\"100\"", NULL, NULL);
  CHECK(t != NULL);
  if (!t) return;
  for (int v = 0; v < 2; v++) {
    g = graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, 1, NULL, NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
    if (g) {
      CHECK(r.nchannels == 16 && r.bw_intra == 45.0);
      CHECK(tr.nchannels == 16 && tr.bw_intra == (v ? 45.0 : 40.0));
    }
    nt_topo_graphs_free(g);
  }
  nt_topo_free(t);
}

/* Three A100s (sm 80) on root ports of one Intel CPU, Gen4 x16 (24 GB/s):
 * every GPU pair is PHB, above the default P2P level, so through the CPU. A
 * PHB path through an Intel root complex costs 6/5 of the bandwidth on its
 * PCI links (search.cc followPath). maxBw 24 starts the ring at 20 (x 1.2
 * = 24: one channel; a ring uses each GPU's link once each way); lower speeds: 12 would fit two
 * channels without the overhead (2 x 12 = 24 > 20) but 2 x 14.4 > 24 with it; 10 gives two channels
 * = 20, not more; 9/20 < .49 stops. So one channel at 20. On an AMD CPU (no overhead) the same
 * machine gets 2 x 12. */
/* clang-format off */
#define ROOT_PORT_3GPU(vendor)                                                                          \
  "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"" vendor "\" familyid=\"6\" " \
  "modelid=\"106\">"                                                                                \
  "<pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">" \
  "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/></pci>"                                           \
  "<pci busid=\"0000:21:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">" \
  "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\"/></pci>"                                           \
  "<pci busid=\"0000:31:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">" \
  "<gpu dev=\"2\" sm=\"80\" rank=\"2\" gdr=\"1\"/></pci>"                                           \
  "</cpu></system>"
/* clang-format on */
static void intel_root_complex_overhead(void) {
  static const char *vendors[] = {"Intel", "AMD"};
  static const char *xml[] = {ROOT_PORT_3GPU("GenuineIntel"), ROOT_PORT_3GPU("AuthenticAMD")};
  for (int i = 0; i < 2; i++) {
    char err[512];
    nt_topo *t = nt_topo_load_buffer(xml[i], strlen(xml[i]), "inline.xml", err, sizeof err);
    CHECK(t != NULL);
    if (!t) {
      fprintf(stderr, "    %s\n", err);
      continue;
    }
    nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, "NCCL_P2P_LEVEL=PXB", NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r));
    if (g) {
      CHECK(r.type_intra == NT_PATH_PHB);
      CHECK(i == 0 ? r.nchannels == 1 && r.bw_intra == 20.0
                   : r.nchannels == 2 && r.bw_intra == 12.0);
      CHECK(check_invariants(t, g, vendors[i]) == 0);
    }
    nt_topo_graphs_free(g);
    /* no NIC: NCCL's search fails to connect nodes (ncclTopoGetLocalNet) */
    CHECK(graphs(t, NT_NCCL_228, 2, NULL, NULL) == NULL);
    nt_topo_free(t);
  }
}

/* The communicator's channel limits on our NVSwitch example (one node: 12
 * search channels, 24 connected): NCCL_MAX_CTAS caps like
 * NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS repeats channels like
 * NCCL_MIN_NCHANNELS (the larger minimum wins), a value <= 0 is ignored;
 * max first, then min: MAX_NCHANNELS=2 with MIN_CTAS=5 keeps channels 0
 * and 1 and repeats them (channel 4 = channel 0). */
static void cta_limits(void) {
  char err[512];
  nt_topo *t = nt_topo_load_file("examples/topologies/nvswitch-8gpu-8nic.xml", err, sizeof err);
  CHECK(t != NULL);
  if (!t) return;
  static const struct {
    const char *a, *b;
    int want;
  } cases[] = {{NULL, NULL, 24},
               {"NCCL_MAX_CTAS=3", NULL, 3},
               {"NCCL_MIN_CTAS=30", "NCCL_MIN_NCHANNELS=28", 30},
               {"NCCL_MIN_CTAS=0", "NCCL_MAX_CTAS=-1", 24},
               {"NCCL_MAX_NCHANNELS=2", "NCCL_MIN_CTAS=5", 5}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, cases[i].a, cases[i].b);
    CHECK(g && nt_topo_graphs_nchannels(g) == cases[i].want);
    if (g && i == 4) {
      int up0, up4, d0[3], d4[3];
      CHECK(nt_topo_graphs_tree(g, 0, 3, &up0, d0) && nt_topo_graphs_tree(g, 4, 3, &up4, d4));
      CHECK(up0 == up4 && d0[0] == d4[0]);
    }
    nt_topo_graphs_free(g);
  }
  /* every channel variable is one --from-env takes from the environment */
  static const char *const vars[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS",
                                     "NCCL_MAX_NRINGS",    "NCCL_CROSS_NIC",     "NCCL_MIN_CTAS",
                                     "NCCL_MAX_CTAS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    nt_topo_env e;
    nt_topo_env_defaults(&e);
    CHECK(setenv(vars[i], "3", 1) == 0);
    CHECK(nt_topo_env_from_environ(&e, err, sizeof err) == 1);
    unsetenv(vars[i]);
    int got = i == 0   ? e.min_nchannels
              : i == 1 ? e.max_nchannels
              : i == 2 ? e.min_nrings
              : i == 3 ? e.max_nrings
              : i == 4 ? e.cross_nic
              : i == 5 ? e.min_ctas
                       : e.max_ctas;
    CHECK(got == 3);
  }
  nt_topo_free(t);
}

/* Ranks follow the rank attributes, not the file order: with GPU0 and GPU1
 * swapping ranks, rank 0 runs on the file's second GPU (dev 1), and the
 * rings name ranks. */
static void ranks_follow_rank_attributes(void) {
  nt_topo *t = variant("rank=\"0\"", "rank=\"1\"", "rank=\"1\"", "rank=\"0\"");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (g) {
    CHECK(dev_of(t, nt_topo_graphs_rank_gpu(g, 0)) == 1);
    CHECK(dev_of(t, nt_topo_graphs_rank_gpu(g, 9)) == 0);
    CHECK(check_invariants(t, g, "swapped ranks") == 0);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* The largest machine topo/ takes: 64 H100s (sm 90) on one NVSwitch, 18
 * NVLinks each (370.8 GB/s, as IBM's), 32 per socket, each on its own
 * switch, two NICs. The search is the one-node H100 derivation above: 6
 * channels at 60 GB/s, doubled to 12 at 30 (the ring's PCI order 0..63).
 * Over two nodes it stays within NCCL's step budgets and the stack. */
static void largest_machine_stays_bounded(void) {
  size_t cap = 64 * 700 + 4096, len = 0;
  char *xml = malloc(cap);
  CHECK(xml != NULL);
  if (!xml) return;
  len += (size_t)snprintf(xml + len, cap - len, "<system version=\"1\">");
  for (int c = 0, g = 0; c < 2; c++) {
    len += (size_t)snprintf(xml + len, cap - len,
                            "<cpu numaid=\"%d\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
                            "familyid=\"6\" modelid=\"143\">",
                            c);
    for (int k = 0; k < 32; k++, g++) {
      int bus = 0x10 + c * 0x40 + k;
      len += (size_t)snprintf(
          xml + len, cap - len,
          "<pci busid=\"0000:%02x:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" "
          "link_width=\"16\"><pci busid=\"0000:%02x:01.0\" class=\"0x030200\" link_speed=\"32.0 "
          "GT/s PCIe\" link_width=\"16\"><gpu dev=\"%d\" sm=\"90\" rank=\"%d\" gdr=\"1\"><nvlink "
          "target=\"0000:f3:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>",
          bus, bus, g, g);
      if (k == 0)
        len +=
            (size_t)snprintf(xml + len, cap - len,
                             "<pci busid=\"0000:%02x:02.0\" class=\"0x020700\" link_speed=\"32.0 "
                             "GT/s PCIe\" link_width=\"16\"><nic><net name=\"mlx5_%d\" dev=\"%d\" "
                             "speed=\"400000\" port=\"1\" guid=\"0x%x\" gdr=\"1\"/></nic></pci>",
                             bus, c, c, c + 1);
      len += (size_t)snprintf(xml + len, cap - len, "</pci>");
    }
    len += (size_t)snprintf(xml + len, cap - len, "</cpu>");
  }
  len += (size_t)snprintf(xml + len, cap - len, "</system>\n");
  CHECK(len < cap);
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, len, "64gpu.xml", err, sizeof err);
  free(xml);
  CHECK(t != NULL);
  if (!t) return (void)fprintf(stderr, "    %s\n", err);
  CHECK(nt_topo_ngpus(t) == 64);
  nt_topo_graphs *g = graphs(t, NT_NCCL_228, 1, NULL, NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r));
  if (g) {
    CHECK(r.nchannels == 12 && r.bw_intra == 30.0 && r.type_intra == NT_PATH_NVL);
    int order[64];
    for (int k = 0; k < 64; k++) order[k] = k;
    CHECK(channel_is(t, g, 0, 11, order, 64));
    CHECK(check_invariants(t, g, "64 GPUs") == 0);
  }
  nt_topo_graphs_free(g);
  g = graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (g) CHECK(check_invariants(t, g, "64 GPUs 2 nodes") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

/* NCCL's model of any machine's graphs: computed, over the graphs' ranks
 * and nodes, with a Ring/Simple AllReduce (never disabled by default) and a
 * pick for every size; a lone rank has nothing to model (NCCL copies). */
static int check_model(const nt_topo *t, const nt_topo_graphs *g, const char *what) {
  nt_tune_model m;
  char err[512];
  if (nt_topo_graphs_tune(t, g, NULL, &m, err, sizeof err) != 0) {
    fprintf(stderr, "    %s: no model: %s\n", what, err);
    return 1;
  }
  int bad = 0;
  if (m.nranks != nt_topo_graphs_nranks(g) || m.nnodes != nt_topo_graphs_nodes(g)) bad++;
  if (m.nranks == 1) return bad;
  if (m.bandwidth[NT_TUNE_ALLREDUCE][NT_TUNE_RING][NT_TUNE_SIMPLE] <= 0) bad++;
  for (int i = 0; i < NT_TUNE_NSIZES; i++) {
    nt_tune_pick pick;
    if (nt_tune_choose(&m, NT_TUNE_ALLREDUCE, nt_tune_size(i), &pick) != 0 || pick.time_us <= 0)
      bad++;
  }
  if (bad) fprintf(stderr, "    %s: model broken (%d)\n", what, bad);
  return bad;
}

/* The model reads the graphs the search found: on the example's 8 H100
 * (sm 90 in the file) the Ring/Simple AllReduce bandwidth is the ring's bus
 * bandwidth, channels x bwIntra (up to 2 nodes), times nranks / (2
 * (nranks - 1)) (tuning.cc's ring steps): 12 x 30 x 8/14 on one node,
 * 8 x 48 x 16/30 = 204.8 on two. */
static void model_of_the_graphs(void) {
  nt_topo *t = load("examples/topologies", "nvswitch-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  for (int nodes = 1; nodes <= 2; nodes++) {
    nt_topo_graphs *g = graphs(t, NT_NCCL_228, nodes, NULL, NULL);
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
    nt_topo *t = load(dir, files[i]);
    if (!t) {
      bad++;
      continue;
    }
    for (int v = 0; v < 2; v++)
      for (int nodes = 1; nodes <= 3; nodes += 2) { /* 2 nodes: the tests above */
        nt_topo_graphs *g = graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, nodes, NULL, NULL);
        char what[160];
        snprintf(what, sizeof what, "%s v%d %d nodes", files[i], v, nodes);
        if (!g) {
          bad++;
          continue;
        }
        bad += check_invariants(t, g, what);
        bad += check_model(t, g, what);
        nt_topo_graphs_free(g);
      }
    nt_topo_free(t);
  }
  return bad;
}

static void every_real_file_keeps_the_invariants(void) {
  CHECK(check_dir(shared_dir(), true) == 0);
}

static void every_example_keeps_the_invariants(void) {
  CHECK(check_dir("examples/topologies", false) == 0);
}

/* Runs nt_topo_main with stdout and stderr in files; returns the status. */
static int run_cli(const char *out, const char *errf, int argc, const char **argv) {
  fflush(stdout);
  fflush(stderr);
  int saved = dup(1), saved_err = dup(2);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (saved < 0 || saved_err < 0 || fd < 0 || fe < 0) return -100;
  dup2(fd, 1);
  dup2(fe, 2);
  close(fd);
  close(fe);
  int rc = nt_topo_main(argc, (char **)argv);
  fflush(stdout);
  fflush(stderr);
  dup2(saved, 1);
  dup2(saved_err, 2);
  close(saved);
  close(saved_err);
  return rc;
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
  CHECK(run_cli(out, errf, 6, (const char *[]){"topo", ex, "--graphs", "--nodes", "2", "--json"}) ==
        0);
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
  CHECK(run_cli(out, errf, 3, (const char *[]){"topo", ex, "--graphs"}) == 0);
  s = slurp(out);
  CHECK(s && strstr(s, "ring search") && strstr(s, "rings (from rank 0)"));
  CHECK(s && strstr(s, "NCCL's model (tuning.cc)") && strstr(s, "NCCL's pick by size") &&
        strstr(s, "  1G "));
  free(s);
  /* a tuning variable (NCCL_PROTO) reaches the model; the channel limit
   * reaches both the graphs and the model */
  CHECK(run_cli(out, errf, 8,
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
  CHECK(run_cli(out, errf, 5,
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
    CHECK(run_cli(out, errf, argc, argv) == 2);
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
  CHECK(run_cli(out, errf, 3, (const char *[]){"topo", nogpu, "--graphs"}) == 1);
  CHECK(lines_in(errf) == 1);
  unlink(nogpu);
  unlink(out);
  unlink(errf);
}

int main(void) {
  if (shared_dir()) {
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
  TEST_RUN(cross_nic_rings_swap_on_odd_nodes);
  TEST_RUN(versions_differ_where_nccl_does);
  TEST_RUN(ranks_follow_rank_attributes);
  TEST_RUN(intel_root_complex_overhead);
  TEST_RUN(cta_limits);
  TEST_RUN(matches_real_nccl_logs);
  TEST_RUN(largest_machine_stays_bounded);
  TEST_RUN(every_example_keeps_the_invariants);
  TEST_RUN(model_of_the_graphs);
  TEST_RUN(cli_graphs);
  return TEST_DONE();
}

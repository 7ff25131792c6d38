/* topo/tuning.c: NCCL's tuning model against numbers derived by hand from
 * NCCL 2.28.9 / 2.30.7 (src/graph/tuning.cc: ncclTopoTuneModel and
 * ncclTopoGetAlgoTime; src/enqueue.cc: updateCollCostTable and
 * topoGetAlgoInfo). Each case writes its derivation out so a reader can
 * redo it with the constants of tuning.cc:
 *
 *   baseLat   Tree 6.8/14.0/8.4   Ring 6.6/14.0/8.4   PAT 8/8/8   (LL/LL128/Simple)
 *   hwLat NVLink  Tree .6/1.25/4.0  Ring .6/1.9/3.4
 *         PCI     Tree 1.0/1.9/4.0  Ring 1.0/2.5/5.7
 *         NET     Tree 5.0/8.5/14   Ring 2.7/4.0/14   PAT -/-/14
 *   llMaxBw [Volta|Intel, Ampere|AMD, Hopper, Blackwell][1, 2, 4+ nodes]
 *   perChMax{RingLL128, TreeLL128, Tree} [arch][1, 2, 4+ nodes]
 *
 * and the rules: bus bandwidth = channels x (bwIntra up to 2 nodes, else
 * bwInter); Ring LL min(llMax, bus/2); Ring LL128 min(.92 bus, ch x cap);
 * Tree AllReduce min(.92 bus, ch x treeCap), then LL min(/3.8, llMax),
 * LL128 min(x7/9 one node else x120/128, ch x cap); PAT x.75; algorithm
 * bandwidth = bus x nRanks/nsteps (Ring) or x.5 (Tree); time = latency +
 * bytes / (1000 x bandwidth x tree correction). Checked within 0.01%. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "../topo/topo.h"
#include "../topo/tuning.h"

#define CLOSE(a, b) CHECK(fabs((double)(a) - (double)(b)) <= 1e-4 * fabs((double)(b)) + 1e-6)

enum { LL = NT_TUNE_LL, LL128 = NT_TUNE_LL128, SIMPLE = NT_TUNE_SIMPLE };
enum { TREE = NT_TUNE_TREE, RING = NT_TUNE_RING, PAT = NT_TUNE_PAT };
enum { AR = NT_TUNE_ALLREDUCE, AG = NT_TUNE_ALLGATHER, RS = NT_TUNE_REDUCESCATTER };
enum { BC = NT_TUNE_BROADCAST };

static nt_tune_graph graph(int channels, float intra, float inter, int type_intra, int type_inter,
                           int pattern) {
  nt_tune_graph g = {.channels = channels,
                     .bw_intra = intra,
                     .bw_inter = inter,
                     .type_intra = type_intra,
                     .type_inter = type_inter,
                     .pattern = pattern};
  return g;
}

/* Case A: one node of 8 H100 on NVSwitch, 16 ring and tree channels of
 * 40 GB/s, NVL inside, no NET (PIX as the search leaves it), x86 Intel. */
static nt_tune_input h100_node(void) {
  nt_tune_input in;
  nt_tune_input_defaults(&in);
  in.nranks = 8;
  in.nnodes = 1;
  in.min_sm = in.max_sm = 90;
  in.cpu_arch = NT_TUNE_ARCH_X86;
  in.cpu_vendor = NT_TUNE_VENDOR_INTEL;
  in.tree = graph(16, 40, 40, NT_PATH_NVL, NT_PATH_PIX, NT_TUNE_PATTERN_BALANCED_TREE);
  in.ring = graph(16, 40, 40, NT_PATH_NVL, NT_PATH_PIX, NT_TUNE_PATTERN_RING);
  in.ring.same_channels = in.tree.same_channels = true;
  in.nvs_count = 1;
  return in;
}

/* Case B: 2 such nodes (16 ranks) over IB, 8 channels of 25 GB/s inside
 * and between nodes, NICs at PXB. */
static nt_tune_input h100_two_nodes(void) {
  nt_tune_input in = h100_node();
  in.nranks = 16;
  in.nnodes = 2;
  in.tree = graph(8, 25, 25, NT_PATH_NVL, NT_PATH_PXB, NT_TUNE_PATTERN_BALANCED_TREE);
  in.ring = graph(8, 25, 25, NT_PATH_NVL, NT_PATH_PXB, NT_TUNE_PATTERN_RING);
  return in;
}

/* Case C: 16 nodes (128 ranks), 8 channels, 40 GB/s inside, 25 between. */
static nt_tune_input h100_sixteen_nodes(void) {
  nt_tune_input in = h100_two_nodes();
  in.nranks = 128;
  in.nnodes = 16;
  in.tree.bw_intra = in.ring.bw_intra = 40;
  return in;
}

/* Case D: one node of 4 A100 PCIe (no NVLink), 2 channels of 24 GB/s over
 * PXB, an AMD host. */
static nt_tune_input a100_pcie(void) {
  nt_tune_input in;
  nt_tune_input_defaults(&in);
  in.nranks = 4;
  in.nnodes = 1;
  in.min_sm = in.max_sm = 80;
  in.cpu_arch = NT_TUNE_ARCH_X86;
  in.cpu_vendor = NT_TUNE_VENDOR_AMD;
  in.tree = graph(2, 24, 24, NT_PATH_PXB, NT_PATH_PIX, NT_TUNE_PATTERN_BALANCED_TREE);
  in.ring = graph(2, 24, 24, NT_PATH_PXB, NT_PATH_PIX, NT_TUNE_PATTERN_RING);
  return in;
}

static bool model(const nt_tune_input *in, nt_tune_model *m) {
  char err[256];
  if (nt_tune_compute(in, m, err, sizeof err) != 0) {
    fprintf(stderr, "    %s\n", err);
    return false;
  }
  return true;
}

static bool picks(const nt_tune_model *m, int coll, size_t bytes, int algo, int proto) {
  nt_tune_pick p;
  if (nt_tune_choose(m, coll, bytes, &p) != 0) {
    fprintf(stderr, "    nothing chosen for %s %zu\n", nt_tune_coll_name(coll), bytes);
    return false;
  }
  if (p.algo != algo || p.proto != proto)
    fprintf(stderr, "    %s %zu B: %s/%s (%.3f us), expected %s/%s\n", nt_tune_coll_name(coll),
            bytes, nt_tune_algo_name(p.algo), nt_tune_proto_name(p.proto), p.time_us,
            nt_tune_algo_name(algo), nt_tune_proto_name(proto));
  return p.algo == algo && p.proto == proto;
}

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

/* Hopper, one node: index 2 / scale 0: llMax 141, ring LL128 36.7, tree
 * 38.7, tree LL128 36.7. bus = 16 x 40 = 640.
 * AllReduce, nsteps 2x7 = 14, Ring x 8/14:
 *   LL     min(141, 320) = 141            -> 141 x 8/14 = 80.5714
 *   LL128  min(588.8, 16x36.7 = 587.2)     -> 587.2 x 8/14 = 335.5429
 *   Simple 640                             -> 365.7143
 *   latency 6.6 + 14x.6 = 15.0; 14 + 14x1.9 = 40.6; 8.4 + 14x3.4 = 56.0
 * Tree: min(.92 x 640 = 588.8, 16x38.7 = 619.2) = 588.8, x .5:
 *   LL     min(588.8/3.8 = 154.9, 141) = 141 -> 70.5
 *   LL128  min(588.8x7/9 = 457.96, 587.2)    -> 228.9778
 *   Simple 588.8                             -> 294.4
 *   latency 6.8 + 2x7x.6 = 15.2; 14 + 14x1.25 = 31.5; 8.4 + 14x4 = 64.4
 * AllGather, nsteps 7, x 8/7: 161.1429, 671.0857, 731.4286;
 *   latency 6.6 + 7x.6 = 10.8; 14 + 7x1.9 = 27.3; 8.4 + 7x3.4 = 32.2
 * Broadcast, same channels: x 1: 141, 587.2, 640; latency + one NVLink
 *   step: 7.2, 15.9, 11.8. */
static void one_h100_node_model(void) {
  nt_tune_input in = h100_node();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL], 141.0 * 8 / 14);
  CLOSE(m.bandwidth[AR][RING][LL128], 587.2 * 8 / 14);
  CLOSE(m.bandwidth[AR][RING][SIMPLE], 640.0 * 8 / 14);
  CLOSE(m.latency[AR][RING][LL], 15.0);
  CLOSE(m.latency[AR][RING][LL128], 40.6);
  CLOSE(m.latency[AR][RING][SIMPLE], 56.0);
  CLOSE(m.bandwidth[AR][TREE][LL], 70.5);
  CLOSE(m.bandwidth[AR][TREE][LL128], 588.8 * 7 / 9 / 2);
  CLOSE(m.bandwidth[AR][TREE][SIMPLE], 294.4);
  CLOSE(m.latency[AR][TREE][LL], 15.2);
  CLOSE(m.latency[AR][TREE][LL128], 31.5);
  CLOSE(m.latency[AR][TREE][SIMPLE], 64.4);
  CLOSE(m.bandwidth[AG][RING][LL], 141.0 * 8 / 7);
  CLOSE(m.bandwidth[AG][RING][LL128], 587.2 * 8 / 7);
  CLOSE(m.bandwidth[AG][RING][SIMPLE], 640.0 * 8 / 7);
  CLOSE(m.latency[AG][RING][LL], 10.8);
  CLOSE(m.latency[AG][RING][LL128], 27.3);
  CLOSE(m.latency[RS][RING][SIMPLE], 32.2);
  CLOSE(m.bandwidth[BC][RING][LL128], 587.2);
  CLOSE(m.latency[BC][RING][LL], 7.2);
  CLOSE(m.latency[BC][RING][LL128], 15.9);
  CLOSE(m.latency[BC][RING][SIMPLE], 11.8);
  /* neither trees nor PAT (8 GPUs a node) for AllGather */
  CHECK(m.bandwidth[AG][TREE][SIMPLE] == 0 && m.bandwidth[AG][PAT][SIMPLE] == 0);
  /* threads: 16 x 40 > 12 GB/s: 512 for Simple rings; 640 for LL128 */
  CHECK(m.max_threads[RING][SIMPLE] == 512 && m.max_threads[RING][LL128] == 640);
  /* comm->nChannels: twice the search's */
  CHECK(m.comm_channels == 32);
}

/* Times: bytes / (1000 x bw), trees scaled by the correction of
 * log2(bytes/64). Ring LL (15.0 us, 80.57 GB/s) wins up to 1 MiB: at
 * 1 MiB 15 + 1048576/80571.4 = 28.01 against tree LL128 31.5 + 1048576 /
 * (228978 x .6) = 39.13. At 4 MiB ring LL128 40.6 + 12.50 = 53.10 beats
 * tree LL128 31.5 + 4194304/(228978 x .8) = 54.40 and ring LL 67.06; at
 * 16 MiB ring LL128 90.6 < ring Simple 101.9; at 64 MiB ring Simple 56 +
 * 183.50 = 239.50 < ring LL128 40.6 + 200.00 = 240.60. */
static void one_h100_node_choice(void) {
  nt_tune_input in = h100_node();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(nt_tune_time(&m, AR, RING, LL, MiB), 15.0 + 1048576 / (1000 * 141.0 * 8 / 14));
  CLOSE(nt_tune_time(&m, AR, TREE, LL128, 4 * MiB), 31.5 + 4194304 / (1000 * 228.97778 * .8));
  CHECK(picks(&m, AR, KiB, RING, LL));
  CHECK(picks(&m, AR, 256 * KiB, RING, LL));
  CHECK(picks(&m, AR, MiB, RING, LL));
  CHECK(picks(&m, AR, 4 * MiB, RING, LL128));
  CHECK(picks(&m, AR, 16 * MiB, RING, LL128));
  CHECK(picks(&m, AR, 64 * MiB, RING, SIMPLE));
  CHECK(picks(&m, AR, GiB, RING, SIMPLE));
  /* AllGather: rings only; LL (10.8 us, 161 GB/s) then LL128 then Simple:
   * 1 KiB LL; 1 GiB Simple (32.2 + 1468.0 < 27.3 + 1600.0). */
  CHECK(picks(&m, AG, KiB, RING, LL));
  CHECK(picks(&m, AG, GiB, RING, SIMPLE));
}

/* Hopper, 2 nodes: scale 1; LL across nodes by CPU: Intel row 0, llMax
 * 39; tree cap 41.4. bus = 8 x 25 = 200 (bwIntra up to 2 nodes).
 * AllReduce nsteps 2x15 = 30, Ring x 16/30:
 *   LL 39 -> 20.8; LL128 min(184, 293.6) = 184 -> 98.1333; Simple 106.6667
 *   latency: inter-node steps 2(2-1) = 2, the 28 others at max(NVLink,
 *   net overhead 1 us (x3 Simple)): 6.6 + 28x1 + 2x2.7 = 40.0;
 *   14 + 28x1.9 + 2x4 = 75.2; 8.4 + 28x3.4 + 2x14 = 131.6
 * Tree min(184, 331.2) = 184, x .5: LL min(48.4, 39) -> 19.5;
 *   LL128 min(184 x 120/128 = 172.5, 293.6) -> 86.25; Simple 92.0
 *   latency + 2 x (7 x NVLink + log2(2) x NET): 6.8 + 2(4.2 + 5) = 25.2;
 *   14 + 2(8.75 + 8.5) = 48.5; 8.4 + 2(28 + 14) = 92.4
 * Broadcast, different channels: nsteps 16 NET steps of the ring (Simple:
 *   the tree's): 6.6 + 16x2.7 = 49.8; 14 + 16x4 = 78; 8.4 + 16x14 = 232.4 */
static void two_h100_nodes_model(void) {
  nt_tune_input in = h100_two_nodes();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL], 20.8);
  CLOSE(m.bandwidth[AR][RING][LL128], 184.0 * 16 / 30);
  CLOSE(m.bandwidth[AR][RING][SIMPLE], 200.0 * 16 / 30);
  CLOSE(m.latency[AR][RING][LL], 40.0);
  CLOSE(m.latency[AR][RING][LL128], 75.2);
  CLOSE(m.latency[AR][RING][SIMPLE], 131.6);
  CLOSE(m.bandwidth[AR][TREE][LL], 19.5);
  CLOSE(m.bandwidth[AR][TREE][LL128], 86.25);
  CLOSE(m.bandwidth[AR][TREE][SIMPLE], 92.0);
  CLOSE(m.latency[AR][TREE][LL], 25.2);
  CLOSE(m.latency[AR][TREE][LL128], 48.5);
  CLOSE(m.latency[AR][TREE][SIMPLE], 92.4);
  CLOSE(m.latency[BC][RING][LL], 49.8);
  CLOSE(m.latency[BC][RING][LL128], 78.0);
  CLOSE(m.latency[BC][RING][SIMPLE], 232.4);
  CLOSE(m.bandwidth[BC][RING][SIMPLE], 200.0);
  /* AllGather nsteps 15 (one NET step): 6.6 + 14 + 2.7 = 23.3, x 16/15 */
  CLOSE(m.latency[AG][RING][LL], 23.3);
  CLOSE(m.bandwidth[AG][RING][LL], 39.0 * 16 / 15);
  /* 25 GB/s rings are not > 45: no extra doubling, 2 x 8 channels */
  CHECK(m.comm_channels == 16);
}

/* Ring Simple AllReduce across nodes: latency x 1.4 once bytes / (16
 * channels x 16 ranks) >= 64, i.e. from 16 KiB: 131.6 x 1.4 = 184.24.
 * 1 KiB: tree LL 25.2 + 1024/(19500 x .9) = 25.26. 256 KiB (tree LL
 * corrected by .4): ring LL 40 + 262144/20800 = 52.60 < tree LL128 48.5 +
 * 262144/(86250 x .6) = 53.57 < tree LL 25.2 + 262144/7800 = 58.81. 1 and
 * 4 MiB: tree LL128 68.76 and 109.29. 16 MiB: ring LL128 75.2 + 170.96 = 246.2 <
 * tree LL128 264.6. 64 MiB: ring LL128 759.1 < ring Simple 813.4. 256 MiB:
 * ring Simple 184.24 + 2516.6 = 2700.8 < ring LL128 2810.6. */
static void two_h100_nodes_choice(void) {
  nt_tune_input in = h100_two_nodes();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(nt_tune_time(&m, AR, RING, SIMPLE, 8 * KiB), 131.6 + 8192 / (1000 * 200.0 * 16 / 30));
  CLOSE(nt_tune_time(&m, AR, RING, SIMPLE, 16 * KiB),
        131.6 * 1.4 + 16384 / (1000 * 200.0 * 16 / 30));
  CHECK(picks(&m, AR, KiB, TREE, LL));
  CHECK(picks(&m, AR, 256 * KiB, RING, LL));
  CHECK(picks(&m, AR, MiB, TREE, LL128));
  CHECK(picks(&m, AR, 4 * MiB, TREE, LL128));
  CHECK(picks(&m, AR, 16 * MiB, RING, LL128));
  CHECK(picks(&m, AR, 64 * MiB, RING, LL128));
  CHECK(picks(&m, AR, 256 * MiB, RING, SIMPLE));
  CHECK(picks(&m, AR, GiB, RING, SIMPLE));
}

/* 16 nodes: scale 2, bw = bwInter 25 (more than 2 nodes): bus 200.
 * llMax (Intel, 4+) 20.4; tree cap 36.0; tree LL128 cap 29.0.
 * AllReduce nsteps 254, Ring x 128/254: LL 20.4 -> 10.2803; LL128 184 ->
 *   92.7244; Simple 200 -> 100.7874. Latency: 30 NET steps, 224 others:
 *   6.6 + 224 + 81 = 311.6; 14 + 425.6 + 120 = 559.6; 8.4 + 761.6 + 420 =
 *   1190.0.
 * Tree: min(184, 288) = 184: LL 20.4 -> 10.2; LL128 172.5 -> 86.25; Simple
 *   92.0; latency + 2(7 x NVLink + log2(16) = 4 x NET): 6.8 + 2(4.2 + 20) =
 *   55.2; 14 + 2(8.75 + 34) = 99.5; 8.4 + 2(28 + 56) = 176.4.
 * Choice: 1 KiB tree LL (55.2); 256 MiB tree LL128 99.5 + 3112.3 = 3211.8 <
 *   tree Simple 176.4 + 268435456/(92000 x .9) = 3418.4 < ring LL128
 *   3454.6; 1 GiB (no correction past 256 MiB) tree Simple 176.4 + 11671.1
 *   = 11847.5 < ring LL128 12139.6 < ring Simple (1190 x 1.4 = 1666) +
 *   10653.5. */
static void sixteen_h100_nodes(void) {
  nt_tune_input in = h100_sixteen_nodes();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL], 20.4 * 128 / 254);
  CLOSE(m.bandwidth[AR][RING][LL128], 184.0 * 128 / 254);
  CLOSE(m.bandwidth[AR][RING][SIMPLE], 200.0 * 128 / 254);
  CLOSE(m.latency[AR][RING][LL], 311.6);
  CLOSE(m.latency[AR][RING][LL128], 559.6);
  CLOSE(m.latency[AR][RING][SIMPLE], 1190.0);
  CLOSE(m.bandwidth[AR][TREE][LL], 10.2);
  CLOSE(m.bandwidth[AR][TREE][LL128], 86.25);
  CLOSE(m.bandwidth[AR][TREE][SIMPLE], 92.0);
  CLOSE(m.latency[AR][TREE][LL], 55.2);
  CLOSE(m.latency[AR][TREE][LL128], 99.5);
  CLOSE(m.latency[AR][TREE][SIMPLE], 176.4);
  CHECK(picks(&m, AR, KiB, TREE, LL));
  CHECK(picks(&m, AR, 256 * MiB, TREE, LL128));
  CHECK(picks(&m, AR, GiB, TREE, SIMPLE));
  /* a tree whose NIC traffic all goes through one GPU loses 15% */
  in.tree.pattern = NT_TUNE_PATTERN_TREE;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][TREE][SIMPLE], 92.0 * .85);
}

/* 4 A100 PCIe, one node: Ampere index 1, scale 0: llMax 87.7, tree cap
 * 24.0. PXB inside: PCI latencies, and no LL128 (needs NVLink, <= NVB).
 * bus 2 x 24 = 48. AllReduce nsteps 6, Ring x 4/6: LL min(87.7, 24) = 24
 * -> 16.0; Simple 48 -> 32.0; latency 6.6 + 6 x 1.0 = 12.6; 8.4 + 6 x 5.7
 * = 42.6. Tree min(44.16, 48) = 44.16: LL 44.16/3.8 -> 5.8105; Simple
 * 22.08; latency 6.8 + 2 x 3 x 1.0 = 12.8; 8.4 + 2 x 3 x 4.0 = 32.4.
 * Choice: 1 KiB ring LL 12.66 < tree LL 12.8 + 0.196; 256 KiB ring LL
 * 12.6 + 16.38 = 28.98; 1 MiB ring Simple 42.6 + 32.77 = 75.37 < ring LL
 * 78.14 < tree Simple 32.4 + 1048576/(22080 x .5) = 127.4. */
static void a100_pcie_box(void) {
  nt_tune_input in = a100_pcie();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL], 16.0);
  CLOSE(m.bandwidth[AR][RING][SIMPLE], 32.0);
  CHECK(m.bandwidth[AR][RING][LL128] == 0 && m.bandwidth[AR][TREE][LL128] == 0);
  CLOSE(m.latency[AR][RING][LL], 12.6);
  CLOSE(m.latency[AR][RING][SIMPLE], 42.6);
  CLOSE(m.bandwidth[AR][TREE][LL], 44.16 / 3.8 / 2);
  CLOSE(m.bandwidth[AR][TREE][SIMPLE], 22.08);
  CLOSE(m.latency[AR][TREE][LL], 12.8);
  CLOSE(m.latency[AR][TREE][SIMPLE], 32.4);
  CHECK(picks(&m, AR, KiB, RING, LL));
  CHECK(picks(&m, AR, 256 * KiB, RING, LL));
  CHECK(picks(&m, AR, MiB, RING, SIMPLE));
  CHECK(picks(&m, AR, GiB, RING, SIMPLE));
  /* NCCL_PROTO=LL128 forces LL128 on, even over PCI: ring 48 x .92 = 44.16
   * capped by 2 x 20 = 40 -> x 4/6 = 26.667; tree min(44.16 x 7/9, 40) =
   * 34.347 -> 17.173; the others are off. */
  char err[256];
  CHECK(nt_tune_env_set(&in.env, "NCCL_PROTO=LL128", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL128], 40.0 * 4 / 6);
  CLOSE(m.bandwidth[AR][TREE][LL128], 44.16 * 7 / 9 / 2);
  CHECK(m.bandwidth[AR][RING][LL] == 0 && m.bandwidth[AR][RING][SIMPLE] == 0);
  for (int s = 0; s < NT_TUNE_NSIZES; s++) {
    nt_tune_pick p;
    CHECK(nt_tune_choose(&m, AR, nt_tune_size(s), &p) == 0 && p.proto == LL128);
  }
}

/* Across nodes the LL cap and the net overhead follow the CPU: AMD takes
 * row 1 (2 nodes: 22.5 -> x 16/30 = 12.0) and 2 us of overhead (Simple 6):
 * ring AllReduce LL 6.6 + 28 x 2 + 2 x 2.7 = 68.0; Simple 8.4 + 28 x 6 +
 * 2 x 14 = 204.4. NCCL_NET_OVERHEAD=500 (ns) makes it 0.5: LL back to
 * max(.6, .5) per step: 6.6 + 28 x .6 + 5.4 = 28.8. */
static void cpu_vendor_across_nodes(void) {
  nt_tune_input in = h100_two_nodes();
  in.cpu_vendor = NT_TUNE_VENDOR_AMD;
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL], 12.0);
  CLOSE(m.latency[AR][RING][LL], 68.0);
  CLOSE(m.latency[AR][RING][SIMPLE], 204.4);
  char err[256];
  CHECK(nt_tune_env_set(&in.env, "NCCL_NET_OVERHEAD=500", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CLOSE(m.latency[AR][RING][LL], 28.8);
}

/* One GPU per node (4 nodes of 1 H100, 2 channels of 25 GB/s, LOC
 * inside): PAT is on (NCCL_PAT_ENABLE 2: nNodes == nRanks). With ppn 1
 * every NET latency is the tree's. AllGather:
 *   PAT Simple: 2 x 25 x .75 = 37.5 GB/s (no algorithm conversion);
 *     8 + log2(4) x 14/3.5 + 4 x 2.8 = 27.2 us
 *   Ring (nsteps 3, all NET, x 4/3): LL min(20.4, 25) -> 27.2 GB/s, 6.6 +
 *     3 x 5 = 21.6 us; LL128 min(46, 73.4) -> 61.33, 14 + 3 x 8.5 = 39.5;
 *     Simple 66.67, 8.4 + 3 x 14 = 50.4
 * 1 MiB: PAT 27.2 + 27.96 = 55.16 < ring LL128 56.60 < ring LL 60.15.
 * NCCL_PAT_ENABLE=0 takes PAT away. */
static void pat_one_gpu_per_node(void) {
  nt_tune_input in = h100_node();
  in.nranks = in.nnodes = 4;
  in.tree = graph(2, 25, 25, NT_PATH_LOC, NT_PATH_PXB, NT_TUNE_PATTERN_BALANCED_TREE);
  in.ring = graph(2, 25, 25, NT_PATH_LOC, NT_PATH_PXB, NT_TUNE_PATTERN_RING);
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AG][PAT][SIMPLE], 37.5);
  CLOSE(m.latency[AG][PAT][SIMPLE], 27.2);
  CLOSE(m.bandwidth[AG][RING][LL], 27.2);
  CLOSE(m.latency[AG][RING][LL], 21.6);
  CLOSE(m.bandwidth[AG][RING][LL128], 46.0 * 4 / 3);
  CLOSE(m.latency[AG][RING][LL128], 39.5);
  CLOSE(m.latency[AG][RING][SIMPLE], 50.4);
  CHECK(picks(&m, AG, KiB, RING, LL));
  CHECK(picks(&m, AG, MiB, PAT, SIMPLE));
  CHECK(picks(&m, RS, MiB, PAT, SIMPLE));
  CHECK(picks(&m, AG, GiB, RING, SIMPLE));
  char err[256];
  CHECK(nt_tune_env_set(&in.env, "NCCL_PAT_ENABLE=0", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AG][PAT][SIMPLE] == 0);
  CHECK(picks(&m, AG, MiB, RING, LL128));
}

/* NCCL_ALGO / NCCL_PROTO restrict the choice exactly as NCCL's parseList
 * reads them. */
static void algo_and_proto_restrict(void) {
  nt_tune_input in = h100_node();
  nt_tune_model m;
  char err[256];
  /* Tree only, for everything: AllReduce takes trees at every size;
   * AllGather has nothing left (NCCL fails the call). */
  CHECK(nt_tune_env_set(&in.env, "NCCL_ALGO=Tree", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  nt_tune_pick p;
  for (int s = 0; s < NT_TUNE_NSIZES; s++)
    CHECK(nt_tune_choose(&m, AR, nt_tune_size(s), &p) == 0 && p.algo == TREE);
  CHECK(nt_tune_choose(&m, AG, MiB, &p) == -1 && p.algo == -1);
  /* only AllReduce restricted, case-insensitive: AllGather keeps rings */
  CHECK(nt_tune_env_set(&in.env, "NCCL_ALGO=allreduce:tree", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(picks(&m, AR, KiB, TREE, LL));
  CHECK(picks(&m, AG, KiB, RING, LL));
  /* everything but Ring for AllReduce, "^": trees */
  CHECK(nt_tune_env_set(&in.env, "NCCL_ALGO=AllReduce:^ring", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(picks(&m, AR, GiB, TREE, SIMPLE));
  /* NCCL_PROTO=Simple: large AllReduce ring Simple, small ring Simple too
   * (8.4 + 14 x 3.4 = 56 < tree Simple 64.4) */
  in.env.algo_set = false;
  CHECK(nt_tune_env_set(&in.env, "NCCL_PROTO=Simple", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(picks(&m, AR, KiB, RING, SIMPLE));
  CHECK(m.bandwidth[AR][RING][LL] == 0 && m.bandwidth[AR][TREE][LL128] == 0);
  /* "^LL" sets every other protocol explicitly, LL128 included */
  CHECK(nt_tune_env_set(&in.env, "NCCL_PROTO=^LL", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL] == 0 && m.bandwidth[AR][RING][LL128] > 0);
  CHECK(picks(&m, AR, KiB, TREE, LL128)); /* 31.5 < ring LL128 40.6 */
}

/* What NCCL refuses fails the model with one line naming the variable. */
static void algo_and_proto_errors(void) {
  static const char *bad[] = {"NCCL_ALGO=ring;tree",        /* second entry without prefix */
                              "NCCL_ALGO=foo",              /* unknown algorithm */
                              "NCCL_ALGO=allreduce:ring,x", /* unknown in the list */
                              "NCCL_ALGO=allscatter:ring",  /* unknown collective */
                              "NCCL_PROTO=LL;broadcast",    /* no prefix again */
                              "NCCL_ALGO=;ring"};           /* NCCL's first token is not first */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nt_tune_input in = h100_node();
    nt_tune_model m;
    char err[256];
    CHECK(nt_tune_env_set(&in.env, bad[i], err, sizeof err) == 0);
    CHECK(nt_tune_compute(&in, &m, err, sizeof err) == -1);
    CHECK(strstr(err, "NCCL_") && strstr(err, "fails to initialize"));
  }
  /* ok: empty list entries vanish (strtok), a bare "^" enables everything */
  nt_tune_input in = h100_node();
  nt_tune_model m;
  char err[256];
  CHECK(nt_tune_env_set(&in.env, "NCCL_ALGO=ring;;allreduce:^", err, sizeof err) == 0);
  CHECK(nt_tune_compute(&in, &m, err, sizeof err) == 0);
  CHECK(m.bandwidth[AR][TREE][LL] > 0 && m.bandwidth[AG][RING][LL] > 0);
}

static void env_as_nccl_reads_it(void) {
  nt_tune_env e;
  nt_tune_env_defaults(&e);
  char err[256];
  CHECK(nt_tune_env_set(&e, "NCCL_NTHREADS=0x100", err, sizeof err) == 0 && e.nthreads == 256);
  CHECK(nt_tune_env_set(&e, "NCCL_LL128_C2C=yes", err, sizeof err) == 1 && e.ll128_c2c == 0);
  CHECK(strstr(err, "reads it as 0"));
  CHECK(nt_tune_env_set(&e, "NCCL_PAT_ENABLE=", err, sizeof err) == -1 && e.pat_enable == 2);
  CHECK(nt_tune_env_set(&e, "NCCL_NET_OVERHEAD=99999999999999999999", err, sizeof err) == -1);
  CHECK(nt_tune_env_set(&e, "NCCL_FOO=1", err, sizeof err) == -1);
  CHECK(nt_tune_env_set(&e, "NCCL_ALGO", err, sizeof err) == -1);
  char longv[400] = "NCCL_ALGO=";
  memset(longv + 10, 'r', 300);
  longv[310] = '\0';
  CHECK(nt_tune_env_set(&e, longv, err, sizeof err) == -1 && !e.algo_set);
  /* thread counts: not a multiple of 32 -> the maximum; below -> minimum */
  nt_tune_input in = h100_node();
  nt_tune_model m;
  CHECK(nt_tune_env_set(&in.env, "NCCL_NTHREADS=100", err, sizeof err) == 0);
  CHECK(nt_tune_env_set(&in.env, "NCCL_LL128_NTHREADS=64", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(m.max_threads[RING][SIMPLE] == 512 && m.max_threads[RING][LL128] == 160);
  /* channels: NCCL_MAX_NCHANNELS caps comm->nChannels, MIN raises it */
  CHECK(nt_tune_env_set(&in.env, "NCCL_MAX_NCHANNELS=8", err, sizeof err) == 0);
  CHECK(nt_tune_comm_channels(&in) == 8);
  CHECK(nt_tune_env_set(&in.env, "NCCL_MAX_NCHANNELS=64", err, sizeof err) == 0);
  CHECK(nt_tune_env_set(&in.env, "NCCL_MIN_NCHANNELS=40", err, sizeof err) == 0);
  CHECK(nt_tune_comm_channels(&in) == 40);
}

/* LL128 over the network: Hopper up to PXN by default, up to PXB with
 * NCCL_LL128_C2C=0; Ampere up to PXB. */
static void ll128_enablement(void) {
  nt_tune_input in = h100_two_nodes();
  nt_tune_model m;
  in.ring.type_inter = in.tree.type_inter = NT_PATH_PXN;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] > 0);
  char err[256];
  CHECK(nt_tune_env_set(&in.env, "NCCL_LL128_C2C=0", err, sizeof err) == 0);
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] == 0 && m.bandwidth[AR][TREE][LL128] == 0);
  in = h100_two_nodes();
  in.min_sm = in.max_sm = 80;
  in.ring.type_inter = in.tree.type_inter = NT_PATH_P2C;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] == 0);
  in.ring.type_inter = in.tree.type_inter = NT_PATH_PXB;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] > 0);
  /* NVB inside counts as PCI hardware for latency (only NVL is NVLink) but
   * still allows LL128: ring LL latency 6.6 + 28 x max(PCI 1.0, 1.0) + 5.4 */
  in.ring.type_intra = NT_PATH_NVB;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] > 0);
  CLOSE(m.latency[AR][RING][LL128], 14 + 28 * 2.5 + 2 * 4.0);
}

/* The two versions differ for Blackwell's ring LL128 cap (2.28.9: 73.4 GB/s
 * a channel on one node; 2.30.7: 40) and for mixed generations (2.28.9:
 * LL128 off unless all GPUs are the same; 2.30.7: also on when all are
 * Hopper or newer). One node of 8 B200, 16 channels of 60 GB/s: bus 960,
 * ring LL128 min(883.2, 16 x 73.4 = 1174.4) = 883.2 -> x 8/14 = 504.69 in
 * 2.28.9; min(883.2, 16 x 40 = 640) = 640 -> 365.71 in 2.30.7. */
static void versions_differ(void) {
  nt_tune_input in = h100_node();
  in.min_sm = in.max_sm = 100;
  in.ring.bw_intra = in.tree.bw_intra = 60;
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL128], 883.2 * 8 / 14);
  in.version = NT_NCCL_230;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][RING][LL128], 640.0 * 8 / 14);
  in = h100_node();
  in.max_sm = 100;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] == 0);
  in.version = NT_NCCL_230;
  CHECK(model(&in, &m));
  CHECK(m.bandwidth[AR][RING][LL128] > 0);
}

/* Hopper+ across nodes with rings faster than 45 GB/s: comm->nChannels
 * doubles again below 16 (2 x 4 = 8 -> 16), which moves the ring's plateau
 * threshold: bytes / (16 x 16 ranks) >= 64. */
static void comm_channels_and_plateau(void) {
  nt_tune_input in = h100_two_nodes();
  in.ring.channels = in.tree.channels = 4;
  in.ring.bw_intra = 50;
  CHECK(nt_tune_comm_channels(&in) == 16);
  in.ring.bw_intra = 45;
  CHECK(nt_tune_comm_channels(&in) == 8);
  /* tree and ring get the smaller channel count of the two */
  in.tree.channels = 2;
  nt_tune_model m;
  CHECK(model(&in, &m));
  CHECK(m.graph_channels == 2 && m.comm_channels == 4);
  CLOSE(m.bandwidth[AR][RING][SIMPLE], 2 * 45.0 * 16 / 30);
}

/* NVLS, given an NVLS graph (one node: 16 channels of 40 GB/s, Hopper
 * efficiency .85): per channel 40 x .85 x 15/16 = 31.875, x 2 for
 * AllReduce = 63.75; min with bwInter 40 = 40; x 16 = 640, x 8/14 =
 * 365.71; latency = NVLink NVLS 25 us. NVLS Tree is off on one node. */
static void nvls_one_node(void) {
  nt_tune_input in = h100_node();
  in.nvls = graph(16, 40, 40, NT_PATH_NVL, NT_PATH_PIX, NT_TUNE_PATTERN_NVLS);
  in.nvls_channels = 16;
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.bandwidth[AR][NT_TUNE_NVLS][SIMPLE], 640.0 * 8 / 14);
  CLOSE(m.latency[AR][NT_TUNE_NVLS][SIMPLE], 25.0);
  CHECK(m.bandwidth[AR][NT_TUNE_NVLS_TREE][SIMPLE] == 0);
  CHECK(m.candidate[AR][NT_TUNE_NVLS] && !m.candidate[AR][NT_TUNE_COLLNET_DIRECT]);
  /* AllGather over NVLS: x (ppn-1)/ppn = 7/8: 40 x .85 x 15/16 x 7/8 =
   * 27.89 per channel, x 16 = 446.25 (no conversion) */
  CLOSE(m.bandwidth[AG][NT_TUNE_NVLS][SIMPLE], 446.25);
  /* same bandwidth as ring Simple, less latency (25 < 56): NVLS at 1 GiB */
  CHECK(picks(&m, AR, GiB, NT_TUNE_NVLS, SIMPLE));
}

static void json_document(void) {
  nt_tune_input in = h100_node();
  nt_tune_model m;
  CHECK(model(&in, &m));
  cJSON *root = cJSON_CreateObject();
  CHECK(root);
  int rc = nt_tune_add_json(root, &m);
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  CHECK(rc == 0 && s);
  cJSON *doc = cJSON_Parse(s);
  free(s);
  CHECK(doc);
  cJSON *model_arr = cJSON_GetObjectItem(doc, "model");
  cJSON *choice = cJSON_GetObjectItem(doc, "choice");
  bool ok =
      cJSON_IsArray(model_arr) && cJSON_GetArraySize(choice) == NT_TUNE_SHOWN * NT_TUNE_NSIZES;
  /* AllReduce: Tree and Ring x 3 protocols; AllGather, ReduceScatter,
   * Broadcast: Ring x 3 */
  ok = ok && cJSON_GetArraySize(model_arr) == 6 + 3 + 3 + 3;
  cJSON *first = cJSON_GetArrayItem(model_arr, 0);
  ok = ok && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(first, "collective")), "AllReduce") &&
       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(first, "algo")), "Tree") &&
       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(first, "proto")), "LL") &&
       cJSON_GetNumberValue(cJSON_GetObjectItem(first, "latency_us")) == 15.2 &&
       cJSON_GetNumberValue(cJSON_GetObjectItem(first, "bandwidth_gbs")) == 70.5;
  cJSON *c0 = cJSON_GetArrayItem(choice, 0);
  ok = ok && cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "bytes")) == 1024 &&
       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "algo")), "Ring") &&
       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "proto")), "LL");
  cJSON *last = cJSON_GetArrayItem(choice, NT_TUNE_SHOWN * NT_TUNE_NSIZES - 1);
  ok = ok && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(last, "collective")), "Broadcast") &&
       cJSON_GetNumberValue(cJSON_GetObjectItem(last, "bytes")) == 1073741824.0;
  /* channels (channels_per_operation): 1 KiB Ring LL on 1 channel, 1 GiB
   * on all 32 */
  ok = ok && cJSON_GetNumberValue(cJSON_GetObjectItem(c0, "channels")) == 1 &&
       cJSON_GetNumberValue(cJSON_GetObjectItem(last, "channels")) == 32;
  cJSON_Delete(doc);
  CHECK(ok);
}

/* topoGetAlgoInfo (enqueue.cc) gives an operation comm->nChannels, one
 * less while nBytes < nc x maxThreads x threadThreshold. threadThresholds
 * (tuning.cc, comm.h): LL 8, LL128 8, Simple 64, the ring's LL x nRanks,
 * CollNet Simple 512; PAT's maxThreads is never set (0), so PAT keeps every
 * channel. One H100 node: 32 channels; Ring LL 512 threads x 64 and Ring
 * Simple 512 x 64 = 32768 bytes a channel, Tree LL 512 x 8 = 4096, Tree
 * LL128 640 x 8 = 5120. */
static void channels_per_operation(void) {
  nt_tune_input in = h100_node();
  nt_tune_model m;
  CHECK(model(&in, &m));
  CHECK(m.comm_channels == 32);
  CHECK(m.thread_threshold[RING][LL] == 64 && m.thread_threshold[TREE][LL] == 8);
  CHECK(m.thread_threshold[RING][SIMPLE] == 64 && m.thread_threshold[TREE][LL128] == 8);
  CHECK(m.thread_threshold[NT_TUNE_COLLNET_DIRECT][SIMPLE] == 512);
  CHECK(m.max_threads[PAT][SIMPLE] == 0);
  CHECK(nt_tune_channels(&m, AR, RING, LL, 1048576) == 32); /* 32 x 32768, not less */
  CHECK(nt_tune_channels(&m, AR, RING, LL, 524288) == 16);
  CHECK(nt_tune_channels(&m, AR, RING, LL, 1024) == 1);
  CHECK(nt_tune_channels(&m, AR, RING, SIMPLE, 100000) == 3); /* 98304 <= 100000 < 131072 */
  CHECK(nt_tune_channels(&m, AR, TREE, LL, 40000) == 9);      /* 36864 <= 40000 < 40960 */
  CHECK(nt_tune_channels(&m, AR, TREE, LL128, 40000) == 7);   /* 35840 <= 40000 < 40960 */
  CHECK(nt_tune_channels(&m, AR, TREE, LL, 4) == 1);
  CHECK(nt_tune_channels(&m, AG, PAT, SIMPLE, 1024) == 32);
  CHECK(nt_tune_channels(&m, AR, NT_TUNE_NVLS, SIMPLE, 1 << 20) == -1);
  CHECK(nt_tune_channels(&m, AR, RING, 7, 1024) == -1);
  /* 2 ranks: the ring's LL threshold is 16 */
  in.nranks = 2;
  CHECK(model(&in, &m));
  CHECK(m.thread_threshold[RING][LL] == 16);
}

/* With no CollNet graph NCCL still computes CollNet's latencies (its
 * table shows them, real 2.28.9 logs with one GPU a node: 5.0/8.5/14.0 us
 * for Direct's AllGather, ReduceScatter, AllReduce and Chain's AllReduce:
 * base 0 + the tree's NET latency, as ppn = 1), but their bandwidth is 0. */
static void collnet_latency_without_collnet(void) {
  nt_tune_input in = h100_two_nodes();
  in.nranks = 2; /* one GPU a node */
  nt_tune_model m;
  CHECK(model(&in, &m));
  CLOSE(m.latency[AR][NT_TUNE_COLLNET_DIRECT][LL], 5.0);
  CLOSE(m.latency[AG][NT_TUNE_COLLNET_DIRECT][LL128], 8.5);
  CLOSE(m.latency[AR][NT_TUNE_COLLNET_CHAIN][SIMPLE], 14.0);
  CHECK(m.latency[AG][NT_TUNE_COLLNET_CHAIN][SIMPLE] == 0); /* not computed for AllGather */
  CHECK(m.bandwidth[AR][NT_TUNE_COLLNET_DIRECT][SIMPLE] == 0);
  CHECK(m.bandwidth[AR][NT_TUNE_COLLNET_CHAIN][SIMPLE] == 0);
}

static void bad_input_refused(void) {
  nt_tune_model m;
  char err[256];
  nt_tune_input in = h100_node();
  in.nnodes = 9; /* more nodes than ranks */
  CHECK(nt_tune_compute(&in, &m, err, sizeof err) == -1 && err[0]);
  in = h100_node();
  in.ring.channels = 0;
  CHECK(nt_tune_compute(&in, &m, err, sizeof err) == -1);
  in = h100_node();
  in.tree.bw_intra = NAN;
  CHECK(nt_tune_compute(&in, &m, err, sizeof err) == -1);
  in = h100_node();
  in.ring.type_inter = 42;
  CHECK(nt_tune_compute(&in, &m, err, sizeof err) == -1);
  /* one rank: NCCL computes nothing and runs Ring/Simple */
  in = h100_node();
  in.nranks = 1;
  CHECK(model(&in, &m));
  CHECK(picks(&m, AR, MiB, RING, SIMPLE));
}

int main(void) {
  TEST_RUN(one_h100_node_model);
  TEST_RUN(one_h100_node_choice);
  TEST_RUN(two_h100_nodes_model);
  TEST_RUN(two_h100_nodes_choice);
  TEST_RUN(sixteen_h100_nodes);
  TEST_RUN(a100_pcie_box);
  TEST_RUN(cpu_vendor_across_nodes);
  TEST_RUN(pat_one_gpu_per_node);
  TEST_RUN(algo_and_proto_restrict);
  TEST_RUN(algo_and_proto_errors);
  TEST_RUN(env_as_nccl_reads_it);
  TEST_RUN(ll128_enablement);
  TEST_RUN(versions_differ);
  TEST_RUN(comm_channels_and_plateau);
  TEST_RUN(nvls_one_node);
  TEST_RUN(channels_per_operation);
  TEST_RUN(collnet_latency_without_collnet);
  TEST_RUN(json_document);
  TEST_RUN(bad_input_refused);
  return TEST_DONE();
}

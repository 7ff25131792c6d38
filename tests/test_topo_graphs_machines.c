/* topo/'s channel search and connection (nccltop topo --graphs) on
 * machines of our own: our NVSwitch example as it is and with its NVLinks,
 * SM versions or ranks changed, inline machines for the rules no dump
 * exercises (Intel's root complex overhead, the largest machine topo/
 * takes), and machines rebuilt from what real NCCL logged in public issues;
 * the communicator's channel limits. Expected graphs are derived by hand
 * from NCCL 2.28.9 / 2.30.7's src/graph/search.cc, connect.cc and
 * trees.cc; the comment above each check gives the derivation. The real
 * dumps: test_topo_graphs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "lib/topo_fixture.h"
#include "lib/topo_graphs_check.h"

/* Our example (H100s, one 400G NIC per GPU, 48 GB/s PCIe) over two nodes:
 * the ring search settles on crossNic 2 (an odd channel leaves by the NIC
 * the previous channel came in on: channel 1 ends on NET 0, where channel
 * 0 started). With 8 (even) channels NCCL's Postset swaps the channel pairs
 * on odd nodes, so ring 0 runs through node 0 in channel 0's order and
 * through node 1 in channel 1's: 0 7 6 5 4 3 2 1, then 9 10 .. 15 8. */
static void cross_nic_rings_swap_on_odd_nodes(void) {
  nt_topo *t = tf_load("examples/topologies", "nvswitch-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (!g) return nt_topo_free(t);
  nt_topo_graph_info r;
  CHECK(nt_topo_graphs_graph(g, 0, &r) && r.cross_nic == 2 && r.nchannels % 2 == 0);
  static const int ch0[] = {0, 7, 6, 5, 4, 3, 2, 1}, ch1[] = {1, 2, 3, 4, 5, 6, 7, 0};
  CHECK(tg_channel_is(t, g, 0, 0, ch0, 8) && tg_channel_is(t, g, 0, 1, ch1, 8));
  CHECK(nt_topo_graphs_channel_net(g, 0, 1, 1) == nt_topo_graphs_channel_net(g, 0, 0, 0));
  static const int want[] = {0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8};
  const int *ring = nt_topo_graphs_ring(g, 0);
  CHECK(ring && memcmp(ring, want, sizeof want) == 0);
  CHECK(tg_check_invariants(t, g, "example 2 nodes") == 0);
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
    nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, NULL, NULL);
    nt_topo_graph_info r, tr;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r) && nt_topo_graphs_graph(g, 1, &tr));
    if (g) {
      CHECK(r.pattern == NT_PATTERN_RING && r.cross_nic == 0 && r.nchannels == 1);
      CHECK(r.bw_intra == 10.0 && r.bw_inter == 10.0 && r.same_channels == 1);
      CHECK(r.type_intra == NT_PATH_SYS && r.type_inter == NT_PATH_PIX);
      static const int order[] = {0, 1};
      CHECK(tg_channel_is(t, g, 0, 0, order, 2));
      CHECK(tr.pattern == NT_PATTERN_BALANCED_TREE && tr.nchannels == 1 && tr.bw_intra == 10.0);
    }
    nt_topo_graphs_free(g);
    nt_topo_free(t);
  }
  t = variant("count=\"4\"", "count=\"2\"", "count=\"5\"", "count=\"2\"");
  CHECK(t != NULL);
  if (t) {
    nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, NULL, NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r) && r.nchannels == 8 && r.bw_intra == 20.0);
    CHECK(g && nt_topo_graphs_nchannels(g) == 16);
    nt_topo_graphs_free(g);
    nt_topo_free(t);
  }
  const char *dir = tf_shared_dir();
  if (!dir) return; /* the last one needs IBM's dump */
  t = tf_load(dir, "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  if (!t) return;
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 3, NULL, NULL);
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
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  nt_topo_graph_info tr;
  CHECK(g && nt_topo_graphs_graph(g, 1, &tr));
  if (g) {
    CHECK(tr.nchannels == 1 && tr.bw_intra < 0.11 && tr.type_inter == NT_PATH_SYS);
    CHECK(nt_topo_graphs_nchannels(g) == 2);
    CHECK(tg_check_invariants(t, g, "sm80 2.28") == 0);
  }
  nt_topo_graphs_free(g);
  g = tf_graphs(t, NT_NCCL_230, 2, NULL, NULL);
  CHECK(g && nt_topo_graphs_graph(g, 1, &tr));
  if (g) {
    CHECK(tr.nchannels == 16 && tr.type_inter == NT_PATH_SYS && tr.bw_inter == 24.0);
    CHECK(nt_topo_graphs_nchannels(g) == 32);
    CHECK(tg_check_invariants(t, g, "sm80 2.30") == 0);
  }
  nt_topo_graphs_free(g);
  nt_topo_free(t);

  t = variant("sm=\"90\"", "sm=\"100\"", NULL, NULL);
  CHECK(t != NULL);
  if (!t) return;
  for (int v = 0; v < 2; v++) {
    g = tf_graphs(t, v ? NT_NCCL_230 : NT_NCCL_228, 1, NULL, NULL);
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
    nt_topo *t = tf_from_xml(xml[i]);
    CHECK(t != NULL);
    nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, "NCCL_P2P_LEVEL=PXB", NULL);
    nt_topo_graph_info r;
    CHECK(g && nt_topo_graphs_graph(g, 0, &r));
    if (g) {
      CHECK(r.type_intra == NT_PATH_PHB);
      CHECK(i == 0 ? r.nchannels == 1 && r.bw_intra == 20.0
                   : r.nchannels == 2 && r.bw_intra == 12.0);
      CHECK(tg_check_invariants(t, g, vendors[i]) == 0);
    }
    nt_topo_graphs_free(g);
    /* no NIC: NCCL's search fails to connect nodes (ncclTopoGetLocalNet) */
    CHECK(tf_graphs(t, NT_NCCL_228, 2, NULL, NULL) == NULL);
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
  nt_topo *t = tf_load("examples/topologies", "nvswitch-8gpu-8nic.xml");
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
    nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, cases[i].a, cases[i].b);
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
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (g) {
    CHECK(tg_dev_of(t, nt_topo_graphs_rank_gpu(g, 0)) == 1);
    CHECK(tg_dev_of(t, nt_topo_graphs_rank_gpu(g, 9)) == 0);
    CHECK(tg_check_invariants(t, g, "swapped ranks") == 0);
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
  nt_topo_graphs *g = tf_graphs(t, NT_NCCL_228, 1, NULL, NULL);
  nt_topo_graph_info r;
  CHECK(g && nt_topo_graphs_graph(g, 0, &r));
  if (g) {
    CHECK(r.nchannels == 12 && r.bw_intra == 30.0 && r.type_intra == NT_PATH_NVL);
    int order[64];
    for (int k = 0; k < 64; k++) order[k] = k;
    CHECK(tg_channel_is(t, g, 0, 11, order, 64));
    CHECK(tg_check_invariants(t, g, "64 GPUs") == 0);
  }
  nt_topo_graphs_free(g);
  g = tf_graphs(t, NT_NCCL_228, 2, NULL, NULL);
  CHECK(g != NULL);
  if (g) CHECK(tg_check_invariants(t, g, "64 GPUs 2 nodes") == 0);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
}

int main(void) {
  TEST_RUN(cross_nic_rings_swap_on_odd_nodes);
  TEST_RUN(versions_differ_where_nccl_does);
  TEST_RUN(ranks_follow_rank_attributes);
  TEST_RUN(intel_root_complex_overhead);
  TEST_RUN(cta_limits);
  TEST_RUN(matches_real_nccl_logs);
  TEST_RUN(largest_machine_stays_bounded);
  return TEST_DONE();
}

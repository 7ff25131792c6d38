/* topo/ against real NCCL topology dumps (../shared/topologies, or
 * $NCCLTOP_SHARED_TOPOLOGIES; skipped when absent) and our own example
 * machines. Every expected value was derived by hand from NCCL's rules
 * (src/graph/topo.cc, paths.cc of NCCL 2.28.9 and 2.30.7, as collected in
 * ../shared/notes/nccl-topology.md); the comment above each check says how.
 * Invariants (bandwidth = slowest link of the route, overrides move the
 * decisions the documented way, JSON has every pair) run on every file. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "lib/topo_fixture.h"

/* The route as "GPU0 NVS GPU1 ..." for checks on the hops. */
static const char *route(const nt_topo *t, const nt_topo_pair *p) {
  static char buf[1024];
  int n = 0;
  buf[0] = '\0';
  for (int k = 0; k < p->nhops_nodes && n < (int)sizeof buf - 64; k++) {
    char l[48];
    nt_topo_node_label(t, p->route[k], l, sizeof l);
    n += snprintf(buf + n, sizeof buf - n, "%s%s", k ? " > " : "", l);
  }
  return buf;
}

/* IBM gx3d: 8x H100 (sm 90) on NVSwitch, each listing 4+5+5+4 NVLinks to
 * four switch chips; every NVSwitch merges into one NVS node and the counts
 * add: 18 x 20.6 = 370.8 GB/s, 2 hops through NVS. sm 90 gets no P2P read
 * (sm 80 only). A GPU and its NIC share a bridge: GPU-bridge-NIC is PIX; the
 * NIC's 200 Gb/s port (25 GB/s) is the bottleneck. The NETs are numbered in
 * file order (mlx5_7 first). Every other NIC is reached PXN through that
 * NIC's local GPU (NET1 = mlx5_6 sits with GPU1), and GDR for a PXN path is
 * judged on the relay's PIX path: on. Back from a NIC, the bridge uplink is
 * 2.5 GT/s x1 = 1 x 15 / 80 = 0.1875 GB/s, and NCCL takes it at face value;
 * the other socket is SYS over the Sapphire Rapids link (model 143: 22). */
static void ibm_h100_nvswitch_matches_nccl(void) {
  const char *dir = tf_shared_dir();
  nt_topo *t = tf_load(dir, "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 8 && nt_topo_nnets(t) == 8);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU5");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 370.8) && p.hops == 2 && p.p2p && !p.p2p_read);
  CHECK_STR(route(t, &p), "GPU0 > NVS > GPU5");
  nt_topo_endpoint net0;
  nt_topo_endpoint_at(t, tf_endpoint(t, "NET0"), &net0);
  CHECK_STR(net0.name, "mlx5_7");
  CHECK(net0.dev == 7 && net0.local_gpu == 0 && tf_near(net0.speed_gbs, 25));
  p = tf_pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PIX && tf_near(p.bw, 25) && p.gdr && p.gdr_read && !p.pxn && p.hops == 3);
  p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXN && tf_near(p.bw, 25) && p.pxn && p.via_gpu == 1 && p.gdr &&
        p.gdr_read);
  CHECK_STR(route(t, &p), "GPU0 > NVS > GPU1 > PCI 0000:ab:00.0 > NIC 0000:ad:00.0 > NET1");
  p = tf_pair(t, "NET1", "GPU0"); /* PXN is only GPU->NIC; back it is PCIe via CPU0 */
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 0.1875));
  CHECK(!p.pxn && p.via_gpu == -1); /* and names no relay GPU */
  p = tf_pair(t, "NET0", "GPU4");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 0.1875));
  bool saw_spr = false;
  for (int k = 0; k < p.hops; k++) saw_spr |= tf_near(p.hop_bw[k], 22);
  CHECK(saw_spr);
  /* PXN off: GPU0->NET1 goes up the slow bridge through the CPU: PHB, and
   * GDR (level PXB) is off. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_PXN_DISABLE=1", NULL));
  p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 0.1875) && !p.pxn && !p.gdr);
  /* GDR read off: 2.28 keeps PXN (send side without GDR read); 2.30 wants
   * GDR read on the relay for PXN, so the GPU goes up its own bridge. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NET_GDR_READ=0", NULL));
  p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXN && p.gdr && !p.gdr_read);
  CHECK(tf_compute(t, NT_NCCL_230, "NCCL_NET_GDR_READ=0", NULL));
  p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PHB && !p.pxn && tf_near(p.bw, 0.1875));
  /* 2.30 counts the GPU->DEV hops: GPU DEV NVS DEV GPU. */
  p = tf_pair(t, "GPU0", "GPU5");
  CHECK(p.type == NT_PATH_NVL && p.hops == 4 && tf_near(p.bw, 370.8));
  nt_topo_free(t);
}

/* SimAI 8x A100 (sm 80): six NVSwitch chips x 2 links = 12 x 20 = 240 GB/s,
 * P2P read on (NVL, sm 80 at both ends). The Broadcom Gen4 switches
 * (0x1000:0xc010, subsystem 0x1000:0xa096) fold their second level into the
 * first: GPU0 -> switch 11 (subsystem 0x10de, not folded) -> 0c -> NIC 1a,
 * PXB at Gen4 x16 = 16 x 120 / 80 = 24, and 0e and 15 are gone. NET0 hangs
 * off a root port: PHB, above GDR's PXB, so no GDR and no local GPU (every
 * GPU prefers its own PXB NIC). Ice Lake (model 106 >= 0x55) is SKL class:
 * 10 GB/s between the sockets. GPU2's own NIC is NET2, so it reaches NET1
 * PXN through NET1's local GPU, GPU0. */
static void simai_a100_broadcom_matches_nccl(void) {
  const char *dir = tf_shared_dir();
  nt_topo *t = tf_load(dir, "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 240) && p.p2p && p.p2p_read);
  p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXB && tf_near(p.bw, 24) && p.gdr && p.hops == 4);
  CHECK_STR(route(t, &p), "GPU0 > PCI 0000:11:00.0 > PCI 0000:0c:00.0 > NIC 0000:1a:00.0 > NET1");
  p = tf_pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PHB && !p.gdr && !p.pxn);
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, tf_endpoint(t, "NET0"), &e);
  CHECK(e.local_gpu == -1);
  nt_topo_endpoint_at(t, tf_endpoint(t, "NET1"), &e);
  CHECK(e.local_gpu == 0);
  p = tf_pair(t, "GPU4", "NET0");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 10));
  p = tf_pair(t, "GPU2", "NET1");
  CHECK(p.type == NT_PATH_PXN && p.via_gpu == 0 && tf_near(p.bw, 24));
  /* NCCL_P2P_READ_ENABLE=0 replaces the read flag; P2P stays. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_P2P_READ_ENABLE=0", NULL));
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.p2p && !p.p2p_read);
  nt_topo_free(t);
}

/* Azure NCv4 (2023): GPU0-GPU1 and GPU2-GPU3 joined by 12 direct NVLinks
 * (240 GB/s, 1 hop, P2P read on sm 80), each GPU on its own AMD NUMA node.
 * AMD with 4 GPUs (more than 2) keeps the default P2P level PXB, so the
 * other pairs are SYS with P2P off, through the destination's CPU; their
 * PCIe links say link_speed="" (Gen3 fallback) and width 0 (x16) = 12.
 * With P2P disabled, 2.28 picks the GPU0->CPU1 path by bandwidth (the SYS
 * path through CPU0 is found first, the NVLink relay ties on 12 GB/s) so the
 * detour is SYS in 3 hops; 2.30 picks by type: PHB through GPU1's DEV, 5
 * hops (GPU DEV DEV CPU DEV GPU). */
static void azure_ncv4_nvlink_pairs_match_nccl(void) {
  const char *dir = tf_shared_dir();
  nt_topo *t = tf_load(dir, "azure-ncv4-4xa100-nvlink-pairs-2023.xml");
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 240) && p.hops == 1 && p.p2p && p.p2p_read);
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 12) && !p.p2p);
  CHECK_STR(route(t, &p), "GPU0 > CPU0 > CPU2 > GPU2");
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_P2P_DISABLE=1", NULL));
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 12) && p.hops == 3 && !p.p2p);
  CHECK(tf_compute(t, NT_NCCL_230, "NCCL_P2P_DISABLE=1", NULL));
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 12) && p.hops == 5 && !p.p2p);
  nt_topo_free(t);
  /* The current file gives each GPU an NVLink to itself: it adds nothing. */
  t = tf_load(dir, "azure-ncv4-4xa100-pcie.xml");
  CHECK(t != NULL);
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_SYS && !p.p2p);
  p = tf_pair(t, "GPU0", "NET0"); /* eth0 under CPU0: link 5000, port 100 Gb/s */
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 12) && !p.gdr);
  nt_topo_free(t);
}

/* GB10: C2C 43125 MB/s x 8 = 345 GB/s to the CPU; the NICs sit behind the
 * CPU (Wi-Fi on PCIe 5 GT/s x1 = 0.375, tailscale0 at the CPU at 10 Gb/s =
 * 1.25). merge(C2C, PHB) = P2C: 2.28 rewrites every GPU-NIC path to P2C;
 * 2.30 only the GPU's local NIC (best bandwidth: tailscale0), so the Wi-Fi
 * stays PHB. Every gdr attribute is 0: no GDR. numaid -1 is kept. */
static void gb10_c2c_gives_p2c(void) {
  const char *dir = tf_shared_dir();
  nt_topo *t = tf_load(dir, "nvidia-dgx-spark-gb10-c2c.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 1 && nt_topo_nnets(t) == 2);
  nt_topo_pair p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_P2C && tf_near(p.bw, 1.25) && !p.gdr && !p.gdr_read);
  CHECK(p.hops == 3 && tf_near(p.hop_bw[0], 345) && p.hop_type[0] == NT_LINK_C2C &&
        p.bottleneck == 2);
  p = tf_pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_P2C && tf_near(p.bw, 0.375));
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, 0, &e);
  CHECK(e.numa == -1 && e.sm == 121);
  CHECK(tf_compute(t, NT_NCCL_230, NULL, NULL));
  CHECK(tf_pair(t, "GPU0", "NET1").type == NT_PATH_P2C);
  CHECK(tf_pair(t, "GPU0", "NET0").type == NT_PATH_PHB);
  nt_topo_free(t);
}

/* Skeletons have no <gpu rank>, and the Nebius file only NICs: NCCL makes no
 * GPU from them. Nebius's NICs: Gen5 x16 = 48 within a socket (PHB), 10
 * between Ice Lake sockets (SYS). */
static void skeletons_have_no_gpu(void) {
  const char *dir = tf_shared_dir();
  static const char *const files[] = {"aws-p4d-24xl-skeleton.xml", "azure-ndv2-skeleton.xml",
                                      "azure-ndv4-skeleton.xml", "azure-ndv5-skeleton.xml"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    nt_topo *t = tf_load(dir, files[i]);
    CHECK(t != NULL);
    CHECK(nt_topo_ngpus(t) == 0 && nt_topo_nnets(t) == 0 && nt_topo_nwarnings(t) > 0);
    nt_topo_free(t);
  }
  nt_topo *t = tf_load(dir, "nebius-h100-partial.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 0 && nt_topo_nnets(t) == 8);
  nt_topo_pair p = tf_pair(t, "NET0", "NET1");
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 48));
  p = tf_pair(t, "NET0", "NET7");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 10));
  nt_topo_free(t);
}

/* ---- invariants on every file ----------------------------------------- */

static bool gdr0[64][192], p2p0[64][64];

static void check_routes(nt_topo *t, const char *file) {
  int ne = nt_topo_ngpus(t) + nt_topo_nnets(t);
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      nt_topo_pair p;
      CHECK(nt_topo_pair_at(t, i, j, &p));
      if (i == j) {
        CHECK(p.type == NT_PATH_LOC && p.hops == 0 && tf_near(p.bw, 5000));
        continue;
      }
      CHECK(p.type != NT_PATH_DIS && !p.truncated && p.nhops_nodes == p.hops + 1);
      double min = 1e300;
      for (int k = 0; k < p.hops; k++) min = fmin(min, nt_topo_hop_bw(t, &p, k));
      if (!tf_near(min, p.bw))
        fprintf(stderr, "    %s %d->%d bw %g, slowest link %g\n", file, i, j, p.bw, min);
      CHECK(tf_near(min, p.bw) && tf_near(p.hop_bw[p.bottleneck], p.bw));
      nt_topo_node a, z;
      CHECK(nt_topo_node_at(t, p.route[0], &a) && nt_topo_node_at(t, p.route[p.hops], &z));
      CHECK(a.endpoint == i && z.endpoint == j);
      for (int k = 0; k < p.hops; k++) { /* each hop is a link of the graph */
        nt_topo_node n;
        CHECK(nt_topo_node_at(t, p.route[k], &n));
        bool found = false;
        for (int l = 0; l < n.nlinks && !found; l++) {
          nt_topo_link link;
          CHECK(nt_topo_link_at(t, p.route[k], l, &link));
          found = link.remote == p.route[k + 1] && tf_near(link.bw, p.hop_bw[k]);
        }
        CHECK(found);
      }
    }
}

/* Each override against the defaults of the same version. */
static void check_overrides(nt_topo *t, int version) {
  int ng = nt_topo_ngpus(t), ne = ng + nt_topo_nnets(t);
  CHECK(tf_compute(t, version, NULL, NULL));
  for (int i = 0; i < ng && i < 64; i++)
    for (int j = 0; j < ne && j < 192; j++) {
      nt_topo_pair p;
      nt_topo_pair_at(t, i, j, &p);
      if (j < ng) p2p0[i][j] = p.p2p;
      gdr0[i][j] = p.gdr;
    }
  static const char *const env[] = {"NCCL_P2P_DISABLE=1",     "NCCL_P2P_LEVEL=SYS",
                                    "NCCL_P2P_LEVEL=LOC",     "NCCL_NET_GDR_LEVEL=LOC",
                                    "NCCL_NET_GDR_LEVEL=SYS", "NCCL_PXN_DISABLE=1",
                                    "NCCL_NET_GDR_READ=0",    "NCCL_NVB_DISABLE=1"};
  for (int o = 0; o < 8; o++) {
    CHECK(tf_compute(t, version, env[o], NULL));
    for (int i = 0; i < ne; i++)
      for (int j = 0; j < ne; j++) {
        nt_topo_pair p;
        nt_topo_pair_at(t, i, j, &p);
        bool gg = i < ng && j < ng, gn = i < ng && j >= ng;
        if (i == j) continue;
        if ((o == 0 || o == 2) && gg) CHECK(!p.p2p);                        /* no P2P at all */
        if (o == 1 && gg && i < 64 && j < 64) CHECK(p.p2p || !p2p0[i][j]);  /* only more */
        if (o == 3) CHECK(!p.gdr && !p.gdr_read);                           /* no GDR at all */
        if (o == 4 && gn && i < 64 && j < 192) CHECK(p.gdr || !gdr0[i][j]); /* only more */
        if (o == 5) CHECK(!p.pxn && p.type != NT_PATH_PXN);
        if (o == 6) CHECK(!p.gdr_read);
        if (o == 7) CHECK(p.type != NT_PATH_NVB);
      }
  }
}

static void check_json(nt_topo *t) {
  char *s = nt_topo_to_json(t, nt_topo_current_env(t));
  CHECK(s != NULL);
  cJSON *root = cJSON_Parse(s);
  free(s);
  CHECK(root != NULL);
  int ne = nt_topo_ngpus(t) + nt_topo_nnets(t);
  cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "pairs");
  cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
  bool ok = cJSON_GetArraySize(pairs) == ne * (ne - 1) && cJSON_GetArraySize(nodes) == ne;
  cJSON *p;
  cJSON_ArrayForEach(p, pairs) {
    ok &= cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "from")) &&
          cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "type")) &&
          cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, "bw")) &&
          cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, "hops"));
  }
  cJSON_ArrayForEach(p, nodes) ok &= cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "busid"));
  cJSON_Delete(root);
  CHECK(ok);
}

static void check_dir(const char *dir, int *files) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n < 4 || strcmp(de->d_name + n - 4, ".xml")) continue;
    nt_topo *t = tf_load(dir, de->d_name);
    if (!t) closedir(d);
    CHECK(t != NULL);
    (*files)++;
    for (int v = 0; v < 2 && !tl_case_failed; v++) {
      int version = v ? NT_NCCL_230 : NT_NCCL_228;
      if (tf_compute(t, version, NULL, NULL)) check_routes(t, de->d_name);
      if (!tl_case_failed) check_overrides(t, version);
      if (!tl_case_failed && tf_compute(t, version, NULL, NULL)) check_json(t);
    }
    nt_topo_free(t);
    if (tl_case_failed) fprintf(stderr, "    in %s/%s\n", dir, de->d_name);
    if (tl_case_failed) break;
  }
  closedir(d);
}

static void every_real_file_keeps_the_invariants(void) {
  const char *dir = tf_shared_dir();
  int files = 0;
  check_dir(dir, &files);
  CHECK(files >= 11);
}

static void every_example_keeps_the_invariants(void) {
  int files = 0;
  check_dir("examples/topologies", &files);
  CHECK(files >= 4);
}

int main(void) {
  if (tf_shared_dir()) {
    TEST_RUN(ibm_h100_nvswitch_matches_nccl);
    TEST_RUN(simai_a100_broadcom_matches_nccl);
    TEST_RUN(azure_ncv4_nvlink_pairs_match_nccl);
    TEST_RUN(gb10_c2c_gives_p2c);
    TEST_RUN(skeletons_have_no_gpu);
    TEST_RUN(every_real_file_keeps_the_invariants);
  } else {
    const char *why = "../shared/topologies absent (set NCCLTOP_SHARED_TOPOLOGIES)";
    TEST_SKIP(ibm_h100_nvswitch_matches_nccl, why);
    TEST_SKIP(simai_a100_broadcom_matches_nccl, why);
    TEST_SKIP(azure_ncv4_nvlink_pairs_match_nccl, why);
    TEST_SKIP(gb10_c2c_gives_p2c, why);
    TEST_SKIP(skeletons_have_no_gpu, why);
    TEST_SKIP(every_real_file_keeps_the_invariants, why);
  }
  TEST_RUN(every_example_keeps_the_invariants);
  return TEST_DONE();
}

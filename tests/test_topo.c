/* The topology model against real NCCL dumps (../shared/topologies, skipped
 * when absent), our own examples, NCCL's environment overrides and hostile
 * XML. Expected values are derived by hand from NCCL 2.28.9's rules
 * (src/graph/topo.cc, paths.cc; ../shared/notes/nccl-topology.md); each
 * assertion says how. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "../topo/topo.h"

static const char *shared_dir(void) {
  const char *d = getenv("NCCLTOP_SHARED_TOPOLOGIES");
  if (d && *d) return d;
  return access("../shared/topologies", R_OK) == 0 ? "../shared/topologies" : NULL;
}

static nt_topo *load(const char *dir, const char *file) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  nt_topo *t = nt_topo_load_file(path, err, sizeof err);
  if (!t) fprintf(stderr, "    %s\n", err);
  return t;
}

static int idx(const nt_topo *t, const char *label) {
  for (int i = 0; i < nt_topo_ngpus(t) + nt_topo_nnets(t); i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    if (!strcmp(e.label, label)) return i;
  }
  return -1;
}

static nt_topo_pair pair(const nt_topo *t, const char *a, const char *b) {
  nt_topo_pair p;
  memset(&p, 0, sizeof p);
  p.type = -1;
  nt_topo_pair_at(t, idx(t, a), idx(t, b), &p);
  return p;
}

static bool near(double a, double b) {
  return fabs(a - b) < 1e-6;
}

/* IBM gx3d: 8x H100 (sm 90) on NVSwitch. Each GPU lists 4+5+5+4 NVLinks to
 * four switch chips, which merge into one NVS node: 18 x 20.6 = 370.8 GB/s.
 * GPU and NIC share a bridge: GPU-bridge-NIC is PIX; the NIC's 200 Gb/s
 * port (25 GB/s) is the bottleneck. Every other NIC is reached through that
 * NIC's local GPU over NVLink: PXN. Back from a NIC, the bridge uplink is
 * 2.5 GT/s x1 = 1 x 15 / 80 = 0.1875 GB/s, and NCCL takes it at face value. */
static void ibm_h100_nvswitch_matches_nccl(void) {
  const char *dir = shared_dir();
  if (!dir) return;
  nt_topo *t = load(dir, "ibm-gx3d-h100-8gpu-8nic.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 8 && nt_topo_nnets(t) == 8);
  nt_topo_pair p = pair(t, "GPU0", "GPU5");
  CHECK(p.type == NT_PATH_NVL && near(p.bw, 370.8) && p.p2p && !p.p2p_read && p.hops == 2);
  nt_topo_endpoint net0;
  nt_topo_endpoint_at(t, idx(t, "NET0"), &net0);
  CHECK_STR(net0.name, "mlx5_7"); /* NETs in file order, not by dev */
  p = pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PIX && near(p.bw, 25) && p.gdr && p.gdr_read && !p.pxn);
  p = pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXN && near(p.bw, 25) && p.pxn && p.via_gpu == 1 && p.gdr);
  p = pair(t, "NET0", "GPU1");
  CHECK(p.type == NT_PATH_PHB && near(p.bw, 0.1875));
  p = pair(t, "NET0", "GPU4"); /* crosses to the other SPR socket */
  CHECK(p.type == NT_PATH_SYS);
  nt_topo_free(t);
}

/* SimAI 8x A100 (sm 80): 12 NVLinks x 20 = 240 GB/s, and P2P read (NVL with
 * sm 80 at both ends). Broadcom Gen4 switches (0x1000:0xc010, subsystem
 * 0xa096) are flattened, so GPU-NIC under them is PXB, not deeper. NET0
 * hangs off a root port: PHB, so GDR (level PXB) is off. The sockets are
 * Ice Lake (model 106 >= 0x55): 10 GB/s between them. */
static void simai_a100_broadcom_matches_nccl(void) {
  const char *dir = shared_dir();
  if (!dir) return;
  nt_topo *t = load(dir, "simai-8xa100-bcm-5nic.xml");
  CHECK(t != NULL);
  nt_topo_pair p = pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_NVL && near(p.bw, 240) && p.p2p && p.p2p_read);
  p = pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PHB && !p.gdr);
  p = pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXB && near(p.bw, 24) && p.gdr);
  p = pair(t, "GPU4", "NET0");
  CHECK(p.type == NT_PATH_SYS && near(p.bw, 10));
  nt_topo_free(t);
}

/* Azure NCv4 2023: GPU pairs 0-1 and 2-3 with 12 direct NVLinks (240 GB/s,
 * P2P read on sm 80); other pairs cross AMD sockets. AMD with 4 GPUs keeps
 * the default P2P level PXB, so those pairs are SYS with P2P off, through
 * the destination's CPU; the PCIe link says link_speed "" (Gen3 fallback)
 * x16 = 12 GB/s. */
static void azure_ncv4_nvlink_pairs_match_nccl(void) {
  const char *dir = shared_dir();
  if (!dir) return;
  nt_topo *t = load(dir, "azure-ncv4-4xa100-nvlink-pairs-2023.xml");
  CHECK(t != NULL);
  nt_topo_pair p = pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_NVL && near(p.bw, 240) && p.hops == 1 && p.p2p_read);
  p = pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_SYS && near(p.bw, 12) && !p.p2p);
  nt_topo_free(t);
  /* The current file gives each GPU an NVLink to itself: it adds nothing. */
  t = load(dir, "azure-ncv4-4xa100-pcie.xml");
  CHECK(t != NULL);
  p = pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_SYS && !p.p2p);
  nt_topo_free(t);
}

/* GB10: C2C 43125 MB/s x 8 = 345 GB/s to the CPU, NICs behind the CPU over
 * PCIe: the P2C rewrite makes GPU-NIC P2C. Both NICs say gdr="0". */
static void gb10_c2c_gives_p2c(void) {
  const char *dir = shared_dir();
  if (!dir) return;
  nt_topo *t = load(dir, "nvidia-dgx-spark-gb10-c2c.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 1);
  nt_topo_pair p = pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_P2C && !p.gdr);
  nt_topo_free(t);
}

/* Invariants on every file: bandwidth is the minimum link on the route,
 * hops match the route, overrides move decisions the documented way. */
static void every_real_file_loads_and_keeps_the_invariants(void) {
  const char *dir = shared_dir();
  if (!dir) {
    fprintf(stderr, "    (../shared/topologies absent: skipped)\n");
    return;
  }
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  struct dirent *de;
  int files = 0;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, ".xml")) continue;
    nt_topo *t = load(dir, de->d_name);
    CHECK(t != NULL);
    files++;
    int ng = nt_topo_ngpus(t), ne = ng + nt_topo_nnets(t);
    bool base_p2p[64][64] = {{false}};
    for (int i = 0; i < ne; i++)
      for (int j = 0; j < ne; j++) {
        nt_topo_pair p;
        CHECK(nt_topo_pair_at(t, i, j, &p));
        if (i == j || p.type == NT_PATH_DIS) continue;
        CHECK(p.nhops_nodes == p.hops + 1);
        double min = 1e300;
        for (int k = 0; k < p.hops; k++) {
          double bw = nt_topo_hop_bw(t, &p, k);
          if (bw < min) min = bw;
        }
        if (!near(min, p.bw))
          fprintf(stderr, "    %s %d->%d bw %g min %g\n", de->d_name, i, j, p.bw, min);
        CHECK(near(min, p.bw));
        if (i < ng && j < ng && i < 64 && j < 64) base_p2p[i][j] = p.p2p;
      }
    char err[256];
    nt_topo_env env;
    static const char *const overrides[] = {"NCCL_P2P_DISABLE=1", "NCCL_P2P_LEVEL=SYS",
                                            "NCCL_NET_GDR_LEVEL=LOC", "NCCL_PXN_DISABLE=1",
                                            "NCCL_NET_GDR_READ=0"};
    for (int o = 0; o < 5; o++) {
      nt_topo_env_defaults(&env);
      CHECK(nt_topo_env_set(&env, overrides[o], err, sizeof err) == 0);
      CHECK(nt_topo_compute(t, &env, err, sizeof err) == 0);
      for (int i = 0; i < ne; i++)
        for (int j = 0; j < ne; j++) {
          nt_topo_pair p;
          nt_topo_pair_at(t, i, j, &p);
          if (i == j) continue;
          if (o == 0 && i < ng && j < ng) CHECK(!p.p2p);
          if (o == 1 && i < ng && j < ng && i < 64 && j < 64) CHECK(p.p2p || !base_p2p[i][j]);
          if (o == 2) CHECK(!p.gdr && !p.gdr_read);
          if (o == 3) CHECK(!p.pxn && p.type != NT_PATH_PXN);
          if (o == 4) CHECK(!p.gdr_read);
        }
    }
    nt_topo_free(t);
  }
  closedir(d);
  CHECK(files >= 8);
}

/* Our own examples, one per kind of machine. */
static void example_topologies_show_their_point(void) {
  nt_topo *t = load("examples/topologies", "pcie-2socket-4gpu.xml");
  CHECK(t != NULL);
  nt_topo_pair p = pair(t, "GPU0", "GPU1"); /* same Gen4 switch */
  CHECK(p.type == NT_PATH_PIX && near(p.bw, 24) && p.p2p);
  p = pair(t, "GPU2", "GPU3"); /* both on socket 1's root ports: PHB, above PXB */
  CHECK(p.type == NT_PATH_PHB && !p.p2p);
  p = pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_SYS && near(p.bw, 10));
  nt_topo_free(t);
  t = load("examples/topologies", "nics-behind-switches.xml");
  CHECK(t != NULL);
  CHECK(pair(t, "GPU0", "NET0").type == NT_PATH_PIX);
  CHECK(pair(t, "GPU0", "NET1").type == NT_PATH_PXB);
  p = pair(t, "GPU0", "GPU1"); /* AMD with 2 GPUs: P2P level SYS */
  CHECK(p.type == NT_PATH_PHB && p.p2p);
  nt_topo_free(t);
  t = load("examples/topologies", "grace-c2c.xml");
  CHECK(t != NULL);
  p = pair(t, "GPU0", "NET0"); /* C2C 45 x 10 = 450, then Gen5 x16 = 48 */
  CHECK(p.type == NT_PATH_P2C && near(p.bw, 48) && p.gdr);
  nt_topo_env env;
  char err[256];
  nt_topo_env_defaults(&env);
  CHECK(nt_topo_env_set(&env, "NCCL_NET_GDR_C2C=0", err, sizeof err) == 0);
  CHECK(nt_topo_compute(t, &env, err, sizeof err) == 0);
  p = pair(t, "GPU0", "NET0");
  CHECK(!p.gdr && p.type == NT_PATH_P2C); /* P2C > PXB without the C2C allowance */
  nt_topo_free(t);
  t = load("examples/topologies", "nvswitch-8gpu-8nic.xml");
  CHECK(t != NULL);
  CHECK(pair(t, "GPU3", "GPU4").type == NT_PATH_NVL);
  p = pair(t, "GPU0", "NET5");
  CHECK(p.pxn && p.via_gpu == 5);
  nt_topo_free(t);
}

static void hostile_xml_is_refused_with_file_and_line(void) {
  char err[512];
  static const struct {
    const char *xml, *want;
  } cases[] = {
      {"<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\"", ":2:"},
      {"<system version=\"2\"></system>", "version"},
      {"<nope/>", "root element"},
      {"<system version=\"1\"><cpu arch=\"x86_64\"/></system>", "numaid"},
      {"<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
       "familyid=\"6\" modelid=\"1\"><pci class=\"0x0604\"/></cpu></system>",
       "busid"},
      {"<!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]><system version=\"1\"/>",
       "entity"},
      {"", "t.xml:1:"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    err[0] = '\0';
    nt_topo *t = nt_topo_load_buffer(cases[i].xml, strlen(cases[i].xml), "t.xml", err, sizeof err);
    if (t || !strstr(err, cases[i].want)) fprintf(stderr, "    case %zu: '%s'\n", i, err);
    CHECK(t == NULL);
    CHECK(strstr(err, "t.xml") != NULL);
    CHECK(strstr(err, cases[i].want) != NULL);
  }
  /* Deep nesting and huge element counts are bounded, not recursed into. */
  size_t n = 200000;
  char *deep = malloc(n * 8 + 64);
  CHECK(deep != NULL);
  strcpy(deep, "<system version=\"1\">");
  for (int i = 0; i < 100; i++) strcat(deep, "<pci>");
  nt_topo *t = nt_topo_load_buffer(deep, strlen(deep), "deep.xml", err, sizeof err);
  CHECK(t == NULL && strstr(err, "nesting") != NULL);
  char *p = deep + sprintf(deep, "<system version=\"1\">");
  for (size_t i = 0; i < 20000; i++) p += sprintf(p, "<x/>");
  sprintf(p, "</system>");
  t = nt_topo_load_buffer(deep, strlen(deep), "many.xml", err, sizeof err);
  CHECK(t == NULL && strstr(err, "elements") != NULL);
  free(deep);
  CHECK(nt_topo_load_file("/nonexistent/topo.xml", err, sizeof err) == NULL);
  CHECK(strstr(err, "/nonexistent/topo.xml") != NULL);
}

static void env_assignments_are_checked(void) {
  nt_topo_env e;
  char err[256];
  nt_topo_env_defaults(&e);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=NVL", err, sizeof err) == 0 &&
        e.p2p_level == NT_PATH_NVL);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=2", err, sizeof err) == 0 &&
        e.p2p_level == NT_PATH_PXB);
  CHECK(nt_topo_env_set(&e, "NCCL_P2P_LEVEL=pxb", err, sizeof err) == -1); /* names are exact */
  CHECK(nt_topo_env_set(&e, "NCCL_FOO=1", err, sizeof err) == -1);
  CHECK(nt_topo_env_set(&e, "NCCL_PXN_DISABLE", err, sizeof err) == -1);
  CHECK(nt_path_parse("7") == NT_PATH_SYS);
}

int main(void) {
  TEST_RUN(ibm_h100_nvswitch_matches_nccl);
  TEST_RUN(simai_a100_broadcom_matches_nccl);
  TEST_RUN(azure_ncv4_nvlink_pairs_match_nccl);
  TEST_RUN(gb10_c2c_gives_p2c);
  TEST_RUN(every_real_file_loads_and_keeps_the_invariants);
  TEST_RUN(example_topologies_show_their_point);
  TEST_RUN(hostile_xml_is_refused_with_file_and_line);
  TEST_RUN(env_assignments_are_checked);
  return TEST_DONE();
}

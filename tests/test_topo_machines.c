/* topo/ on machines of our own: the examples in examples/topologies/ and
 * small inline machines for the rules no real dump exercises (NVB, CPU
 * bandwidth classes, PCIe speed strings, NET faster than P2P, NIC policy,
 * Broadcom Gen5 folding, pcilinks, MLOPart). Expected values are derived by
 * hand from NCCL 2.28.9 / 2.30.7 (src/graph/topo.cc, paths.cc, search.cc);
 * each comment says how. */
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "lib/topo_fixture.h"

/* The inline XML machines are string concatenations laid out like the XML
 * they spell; clang-format would scramble them. */
/* clang-format off */

#define CPU(numa, extra) "<cpu numaid=\"" #numa "\" arch=\"x86_64\" vendor=\"GenuineIntel\" " \
  "familyid=\"6\" modelid=\"143\"" extra ">"
#define PCI(bus, cls, speed, width) "<pci busid=\"" bus "\" class=\"" cls "\" link_speed=\"" \
  speed "\" link_width=\"" #width "\""
#define GEN4 "16.0 GT/s PCIe"
#define GEN5 "32.0 GT/s PCIe"
#define GPU(dev, sm) "<gpu dev=\"" #dev "\" sm=\"" #sm "\" rank=\"" #dev "\" gdr=\"1\""
#define NIC(name, dev) "<nic><net name=\"" name "\" dev=\"" #dev "\" speed=\"400000\" gdr=\"1\"/></nic>"

/* Two sockets (Ice Lake, model 106: SKL class, 10 GB/s): GPU0, GPU1 and the
 * NIC under one Gen4 switch (PIX 24, P2P and GDR on); GPU2 and GPU3 on root
 * ports of socket 1 (PHB: above the P2P level PXB, so P2P off). */
static void pcie_two_socket_box(void) {
  nt_topo *t = tf_load("examples/topologies", "pcie-2socket-4gpu.xml");
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_PIX && tf_near(p.bw, 24) && p.p2p && p.p2p_transport && !p.p2p_read);
  p = tf_pair(t, "GPU2", "GPU3");
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 24) && !p.p2p);
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 10) && !p.p2p);
  p = tf_pair(t, "GPU1", "NET0");
  CHECK(p.type == NT_PATH_PIX && tf_near(p.bw, 24) && p.gdr && p.gdr_read && !p.pxn);
  p = tf_pair(t, "GPU2", "NET0"); /* no NVLink: no PXN; SYS: no GDR */
  CHECK(p.type == NT_PATH_SYS && !p.gdr && !p.pxn);
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_P2P_LEVEL=PHB", NULL));
  CHECK(tf_pair(t, "GPU2", "GPU3").p2p && !tf_pair(t, "GPU0", "GPU2").p2p);
  nt_topo_free(t);
}

/* One AMD socket: GPU0 and NIC0 under switch 41, NIC1 under switch 44, both
 * below root port 40:01 (GPU0-NIC1 crosses two switches: PXB); GPU1 on its
 * own root port. AMD CPU 0 with at most two GPUs: P2P level SYS, so the PHB
 * pair keeps P2P. A third GPU would bring PXB back. */
static void nics_behind_switches(void) {
  nt_topo *t = tf_load("examples/topologies", "nics-behind-switches.xml");
  CHECK(t != NULL);
  CHECK(tf_pair(t, "GPU0", "NET0").type == NT_PATH_PIX);
  nt_topo_pair p = tf_pair(t, "GPU0", "NET1");
  CHECK(p.type == NT_PATH_PXB && tf_near(p.bw, 24) && p.gdr);
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_PHB && p.p2p && nt_topo_p2p_level(t, nt_topo_current_env(t)) == NT_PATH_SYS);
  p = tf_pair(t, "GPU1", "NET0"); /* PHB: no GDR; GPU0 is not NVLinked: no PXN */
  CHECK(p.type == NT_PATH_PHB && !p.gdr && !p.pxn);
  nt_topo_free(t);
}

/* Two Grace superchips (arm64: 6 GB/s between them), B200-class GPUs (sm
 * 100: 18 x 40.1 = 721.8 NVLink), C2C 10 x 45000 MB/s = 450. Superchip 0:
 * NIC behind the CPU: merge(C2C, PHB) = P2C, GDR on through C2C (2.28 reads
 * P2C as C2C; 2.30's level is P2C), default mode. Superchip 1: GPU and NIC
 * under one PCIe switch: PIX, GDR on but mapped through PCIe (the GPU's CPU
 * path is C2C). Each GPU reaches the other NIC by PXN (relay P2C/PIX <=
 * PXN_C2C's P2C, NVLink, 48 > 6). */
static void grace_superchips(void) {
  nt_topo *t = tf_load("examples/topologies", "grace-c2c.xml");
  CHECK(t != NULL);
  for (int v = 0; v < 2; v++) {
    CHECK(tf_compute(t, v ? NT_NCCL_230 : NT_NCCL_228, NULL, NULL));
    nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
    CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 721.8) && p.p2p);
    p = tf_pair(t, "GPU0", "NET0");
    CHECK(p.type == NT_PATH_P2C && tf_near(p.bw, 48) && p.gdr && !p.gdr_pci_mode);
    CHECK(tf_near(p.hop_bw[v ? 1 : 0], 450)); /* 2.30: GPU -> DEV first */
    p = tf_pair(t, "GPU1", "NET1");
    CHECK(p.type == NT_PATH_PIX && p.gdr && p.gdr_pci_mode);
    p = tf_pair(t, "GPU1", "NET0");
    CHECK(p.type == NT_PATH_PXN && p.via_gpu == 0 && tf_near(p.bw, 48) && p.gdr && !p.gdr_pci_mode);
  }
  /* Without the C2C allowance P2C is above PXB: no GDR (both versions), and
   * without PXN_C2C a P2C relay is not close enough: GPU1 -> NET0 is SYS. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NET_GDR_C2C=0", NULL));
  CHECK(!tf_pair(t, "GPU0", "NET0").gdr && tf_pair(t, "GPU1", "NET1").gdr);
  CHECK(tf_compute(t, NT_NCCL_230, "NCCL_NET_GDR_C2C=0", NULL));
  CHECK(!tf_pair(t, "GPU0", "NET0").gdr && nt_topo_gdr_level(nt_topo_current_env(t)) == NT_PATH_PXB);
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_PXN_C2C=0", NULL));
  nt_topo_pair p = tf_pair(t, "GPU1", "NET0");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 6) && !p.pxn && !p.gdr);
  /* P2P off: the detour goes to the destination's CPU, and NCCL's route
   * there rides NVLink and C2C: GPU0 > GPU1 > CPU1 > GPU1, type C2C. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_P2P_DISABLE=1", NULL));
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_C2C && tf_near(p.bw, 450) && p.hops == 3 && !p.p2p);
  nt_topo_free(t);
}

/* 8x H100 on NVSwitch (18 x 20.6), one 400G NIC per GPU under a Broadcom
 * Gen5 switch: PIX at Gen5 x16 = 48 (the 50 GB/s port is faster). Other
 * NICs by PXN via their GPU. Sapphire Rapids sockets: 22 GB/s. */
static void nvswitch_eight_gpus(void) {
  nt_topo *t = tf_load("examples/topologies", "nvswitch-8gpu-8nic.xml");
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 8 && nt_topo_nnets(t) == 8);
  nt_topo_pair p = tf_pair(t, "GPU3", "GPU4");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 370.8) && p.p2p);
  p = tf_pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PIX && tf_near(p.bw, 48) && p.gdr && p.bottleneck == 0);
  p = tf_pair(t, "GPU0", "NET5");
  CHECK(p.type == NT_PATH_PXN && p.via_gpu == 5 && tf_near(p.bw, 48));
  p = tf_pair(t, "NET0", "GPU4");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 22));
  nt_topo_free(t);
}

/* DGX-1 style partial mesh, V100 (sm 70, 20 GB/s a link): GPU0-GPU1 and
 * GPU1-GPU2 linked, GPU0-GPU2 not: GPU1 relays (NVB, 2 hops, P2P on, via
 * GPU1; 2.30: 4 hops through three DEVs). NVB_DISABLE: back to PCIe. GPU3
 * has no NVLink: pre-Ampere GDR read needs one, unless NET_GDR_READ=1. */
static void nvb_partial_mesh(void) {
  const char *xml =
      "<system version=\"1\">" CPU(0, "")
      "<pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"8.0 GT/s PCIe\" link_width=\"16\">"
      PCI("0000:11:00.0", "0x030200", "8.0 GT/s PCIe", 16) ">" GPU(0, 70) ">"
      "<nvlink target=\"0000:12:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
      PCI("0000:12:00.0", "0x030200", "8.0 GT/s PCIe", 16) ">" GPU(1, 70) ">"
      "<nvlink target=\"0000:11:00.0\" count=\"2\" tclass=\"0x030200\"/>"
      "<nvlink target=\"0000:13:00.0\" count=\"1\" tclass=\"0x030200\"/></gpu></pci>"
      PCI("0000:13:00.0", "0x030200", "8.0 GT/s PCIe", 16) ">" GPU(2, 70) ">"
      "<nvlink target=\"0000:12:00.0\" count=\"1\" tclass=\"0x030200\"/></gpu></pci>"
      PCI("0000:14:00.0", "0x030200", "8.0 GT/s PCIe", 16) ">" GPU(3, 70) "/></pci>"
      PCI("0000:15:00.0", "0x020000", "8.0 GT/s PCIe", 16) ">" NIC("mlx5_0", 0) "</pci>"
      "</pci></cpu></system>";
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_NVB && tf_near(p.bw, 20) && p.hops == 2 && p.p2p && p.via_gpu == 1);
  CHECK(!p.p2p_read && tf_pair(t, "GPU0", "GPU1").type == NT_PATH_NVL);
  CHECK(tf_pair(t, "GPU0", "NET0").gdr_read && !tf_pair(t, "GPU3", "NET0").gdr_read);
  CHECK(tf_pair(t, "GPU3", "NET0").gdr);
  CHECK(tf_compute(t, NT_NCCL_230, NULL, NULL));
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_NVB && p.hops == 4 && p.via_gpu == 1);
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NVB_DISABLE=1", NULL));
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_PIX && tf_near(p.bw, 12) && p.via_gpu == -1);
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NET_GDR_READ=1", NULL));
  CHECK(tf_pair(t, "GPU3", "NET0").gdr_read);
  /* Copy engines cannot relay: the P2P transport declines the NVB pair. */
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_P2P_USE_CUDA_MEMCPY=1", NULL));
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.p2p && !p.p2p_transport && tf_pair(t, "GPU0", "GPU1").p2p_transport);
  nt_topo_free(t);
}

/* Inter-CPU bandwidth is the source CPU's (topo.cc ncclTopoGetInterCpuBw):
 * Intel by model when family is 6 (ERP >= 0xCF 40, SRP >= 0x8F 22, SKL >=
 * 0x55 10, else BDW 6; another family is BDW), AMD 16, POWER 32, ARM 6,
 * Zhaoxin Yongfeng (7/0x5B) 9 else 6, anything unknown 5000. The SYS hop of
 * GPU0 -> GPU1 (one GPU per socket) is the route's second hop. */
static void inter_cpu_bandwidth_by_vendor(void) {
  static const struct {
    const char *cpu;
    double bw;
  } cases[] = {
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"207\"", 40},
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\"", 22},
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"0x55\"", 10},
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"79\"", 6},
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"15\" modelid=\"207\"", 6},
      {"arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"175\" modelid=\"1\"", 16},
      {"arch=\"ppc64\"", 32},
      {"arch=\"arm64\"", 6},
      {"arch=\"x86_64\" vendor=\"CentaurHauls\" familyid=\"7\" modelid=\"0x5B\"", 9},
      {"arch=\"x86_64\" vendor=\"  Shanghai  \" familyid=\"7\" modelid=\"59\"", 6},
      {"arch=\"x86_64\" vendor=\"HygonGenuine\"", 5000},
      {"arch=\"riscv64\"", 5000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char xml[1024];
    snprintf(xml, sizeof xml,
             "<system version=\"1\"><cpu numaid=\"0\" %s>" PCI("0000:01:00.0", "0x030200", GEN4, 16)
             ">" GPU(0, 80) "/></pci></cpu><cpu numaid=\"1\" %s>"
             PCI("0000:81:00.0", "0x030200", GEN4, 16) ">" GPU(1, 80) "/></pci></cpu></system>",
             cases[i].cpu, cases[i].cpu);
    nt_topo *t = tf_from_xml(xml);
    CHECK(t != NULL);
    nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
    if (!tf_near(p.hop_bw[1], cases[i].bw)) fprintf(stderr, "    case %zu: %g\n", i, p.hop_bw[1]);
    CHECK(p.type == NT_PATH_SYS && p.hops == 3 && tf_near(p.hop_bw[1], cases[i].bw));
    CHECK(tf_near(p.bw, cases[i].bw < 24 ? cases[i].bw : 24));
    nt_topo_free(t);
  }
}

/* link_speed by NCCL's prefix table, x100 Mb/s per lane, times the width,
 * / 80: "16.0 GT/s" without "PCIe" is no key (Gen3 fallback, 12); "32 GT/s
 * PCIe/s" starts with the old key "32 GT/s" (Gen5, 48); Gen6 x8 is 48 too;
 * width 0 reads x16. The NIC (Gen6 x16, 50 GB/s port) is never the limit. */
static void pcie_speed_strings(void) {
  static const struct {
    const char *speed;
    int width;
    double bw;
  } cases[] = {{"16.0 GT/s", 16, 12},      {"32 GT/s PCIe/s", 16, 48}, {"64.0 GT/s PCIe", 8, 48},
               {"2.5 GT/s PCIe", 1, 0.1875}, {"8 GT/s", 8, 6},         {"5.0 GT/s PCIe", 0, 6},
               {"", 4, 3},                  {"Unknown", 16, 12}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char xml[1024];
    snprintf(xml, sizeof xml,
             "<system version=\"1\">" CPU(0, "") "<pci busid=\"0000:01:00.0\" class=\"0x030200\" "
             "link_speed=\"%s\" link_width=\"%d\">" GPU(0, 80) "/></pci>"
             PCI("0000:02:00.0", "0x020000", "64.0 GT/s PCIe", 16) ">" NIC("mlx5_0", 0)
             "</pci></cpu></system>",
             cases[i].speed, cases[i].width);
    nt_topo *t = tf_from_xml(xml);
    CHECK(t != NULL);
    nt_topo_pair p = tf_pair(t, "GPU0", "NET0");
    if (!tf_near(p.bw, cases[i].bw)) fprintf(stderr, "    case %zu: %g\n", i, p.bw);
    CHECK(tf_near(p.bw, cases[i].bw) && p.bottleneck == 0);
    nt_topo_free(t);
  }
}

/* ncclTopoCheckNet: two GPUs on root ports whose x8 links (12 GB/s) cap the
 * GPU-GPU path, each GPU with its own NIC at PIX 24 behind its own switch.
 * AMD with two GPUs keeps P2P (level SYS), but both GPUs reach a NIC at <=
 * PXB faster than each other: the P2P transport declines (NET is used),
 * unless NCCL_NET_DISABLE_INTRA=1. */
static void net_faster_than_p2p(void) {
  const char *xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">"
      PCI("0000:10:00.0", "0x060400", GEN4, 8) ">" PCI("0000:11:00.0", "0x030200", GEN4, 16) ">"
      GPU(0, 90) "/></pci>" PCI("0000:12:00.0", "0x020000", GEN4, 16) ">" NIC("mlx5_0", 0)
      "</pci></pci>" PCI("0000:20:00.0", "0x060400", GEN4, 8) ">"
      PCI("0000:21:00.0", "0x030200", GEN4, 16) ">" GPU(1, 90) "/></pci>"
      PCI("0000:22:00.0", "0x020000", GEN4, 16) ">" NIC("mlx5_1", 1) "</pci></pci></cpu></system>";
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_PHB && tf_near(p.bw, 12) && p.p2p && p.net_faster && !p.p2p_transport);
  CHECK(tf_near(tf_pair(t, "GPU0", "NET0").bw, 24));
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NET_DISABLE_INTRA=1", NULL));
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.p2p && !p.net_faster && p.p2p_transport);
  nt_topo_free(t);
}

/* GPU0 and two NICs under one switch, GPU1 on a root port, NVLinked to
 * GPU0. GPU0's local NICs: both (PIX 48); each NIC's local GPUs: GPU0 only,
 * so AUTO gives GPU0 ceil(2/1) = 2 NICs (channel 0 NET0, channel 1 NET1):
 * both NICs' local GPU is GPU0, and GPU1 uses both by PXN. MAX:1 gives GPU0
 * one NIC: NET1 has no local GPU, so no PXN to it (PHB, no GDR). */
static void netdevs_policy_moves_pxn(void) {
  const char *xml =
      "<system version=\"1\">" CPU(0, "") PCI("0000:10:00.0", "0x060400", GEN5, 16) ">"
      PCI("0000:11:00.0", "0x030200", GEN5, 16) ">" GPU(0, 90) ">"
      "<nvlink target=\"0000:21:00.0\" count=\"18\" tclass=\"0x030200\"/></gpu></pci>"
      PCI("0000:12:00.0", "0x020000", GEN5, 16) ">" NIC("mlx5_0", 0) "</pci>"
      PCI("0000:13:00.0", "0x020000", GEN5, 16) ">" NIC("mlx5_1", 1) "</pci></pci>"
      PCI("0000:21:00.0", "0x030200", GEN5, 16) ">" GPU(1, 90) ">"
      "<nvlink target=\"0000:11:00.0\" count=\"18\" tclass=\"0x030200\"/></gpu></pci>"
      "</cpu></system>";
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, 3, &e);
  CHECK(!strcmp(e.label, "NET1") && e.local_gpu == 0);
  CHECK(tf_pair(t, "GPU1", "NET1").type == NT_PATH_PXN && tf_pair(t, "GPU1", "NET0").pxn);
  CHECK(tf_compute(t, NT_NCCL_228, "NCCL_NETDEVS_POLICY=MAX:1", NULL));
  nt_topo_endpoint_at(t, 3, &e);
  CHECK(e.local_gpu == -1);
  nt_topo_pair p = tf_pair(t, "GPU1", "NET1");
  CHECK(p.type == NT_PATH_PHB && !p.pxn && !p.gdr && tf_pair(t, "GPU1", "NET0").pxn);
  nt_topo_free(t);
}

int main(void) {
  TEST_RUN(pcie_two_socket_box);
  TEST_RUN(nics_behind_switches);
  TEST_RUN(grace_superchips);
  TEST_RUN(nvswitch_eight_gpus);
  TEST_RUN(nvb_partial_mesh);
  TEST_RUN(inter_cpu_bandwidth_by_vendor);
  TEST_RUN(pcie_speed_strings);
  TEST_RUN(net_faster_than_p2p);
  TEST_RUN(netdevs_policy_moves_pxn);
  return TEST_DONE();
}
/* clang-format on */

/* topo/ on NCCL's graph-building rules that only odd or newer machines hit:
 * Broadcom Gen5 folding, pcilinks, CPU-level NICs, POWER NVLink to the CPU,
 * GPUs NCCL does not create, elements NCCL's parser skips, and 2.30.7's
 * DEV nodes with MLOPart partitions. Expected values are derived by hand
 * from NCCL's topo.cc/paths.cc (2.28.9, 2.30.7); each comment says how. */
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "lib/topo_fixture.h"

/* The inline XML machines are string concatenations laid out like the XML
 * they spell; clang-format would scramble them. */
/* clang-format off */

#define SPR "<cpu numaid=\"%d\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">"
#define G5 "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\""
#define BCM(bus, sub) "<pci busid=\"" bus "\" class=\"0x060400\" vendor=\"0x1000\" device=\"0xc030\" " \
  "subsystem_vendor=\"0x1000\" subsystem_device=\"" sub "\" " G5 ">"
#define GPUPCI(bus) "<pci busid=\"" bus "\" class=\"0x030200\" " G5 ">"
#define NICPCI(bus, name, dev) "<pci busid=\"" bus "\" class=\"0x020000\" " G5 "><nic><net name=\"" \
  name "\" dev=\"" #dev "\" speed=\"400000\" gdr=\"1\"/></nic></pci>"

/* A Broadcom Gen5 switch shows two levels: subsystem device 0x0XXX on top,
 * 0x1XXX below. NCCL folds the lower level into the top one, so GPU and NIC
 * under two lower switches meet at the top: PIX, 3 hops. A lower level with
 * another subsystem (0x2XXX) is not folded: PXB through three switches. */
static void broadcom_gen5_switches_fold(void) {
  char xml[2048];
  for (int fold = 1; fold >= 0; fold--) {
    snprintf(xml, sizeof xml,
             "<system version=\"1\">" SPR BCM("0000:10:00.0", "0x0100") "%s" GPUPCI("0000:12:00.0")
             "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci></pci>%s"
             NICPCI("0000:14:00.0", "mlx5_0", 0) "</pci></pci></cpu></system>",
             0, fold ? BCM("0000:11:00.0", "0x1100") : BCM("0000:11:00.0", "0x2100"),
             fold ? BCM("0000:13:00.0", "0x1100") : BCM("0000:13:00.0", "0x2100"));
    nt_topo *t = tf_from_xml(xml);
    CHECK(t != NULL);
    nt_topo_pair p = tf_pair(t, "GPU0", "NET0");
    if (fold)
      CHECK(p.type == NT_PATH_PIX && p.hops == 3 && tf_near(p.bw, 48));
    else
      CHECK(p.type == NT_PATH_PXB && p.hops == 5 && tf_near(p.bw, 48));
    nt_topo_free(t);
  }
}

/* <pcilink> links two switches one way at 5000 GB/s (LOC); both ways here.
 * BFS from the NIC reaches switch A over it before going through the CPUs:
 * PCI-to-PCI is PXB, so GPU0 -> NET0 is PXB in 4 hops instead of SYS, and
 * GDR (level PXB) is on. With only one direction NCCL cannot build the way
 * back and fails ("Failed to find reverse path"). */
static void pcilinks_join_switches(void) {
  char xml[2048];
  for (int both = 1; both >= 0; both--) {
    snprintf(xml, sizeof xml,
             "<system version=\"1\">" SPR "<pci busid=\"0000:10:00.0\" class=\"0x060400\" " G5 ">"
             "<pcilink target=\"0000:20:00.0\"/>" GPUPCI("0000:11:00.0")
             "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci></pci></cpu>" SPR
             "<pci busid=\"0000:20:00.0\" class=\"0x060400\" " G5 ">%s"
             NICPCI("0000:21:00.0", "mlx5_0", 0) "</pci></cpu></system>",
             0, 1, both ? "<pcilink target=\"0000:10:00.0\"/>" : "");
    if (both) {
      nt_topo *t = tf_from_xml(xml);
      CHECK(t != NULL);
      nt_topo_pair p = tf_pair(t, "GPU0", "NET0");
      CHECK(p.type == NT_PATH_PXB && p.hops == 4 && tf_near(p.bw, 48) && p.gdr);
      CHECK(tf_near(p.hop_bw[1], 5000) && p.hop_type[1] == NT_LINK_LOC);
      nt_topo_free(t);
    } else {
      char err[512];
      CHECK(nt_topo_load_buffer(xml, strlen(xml), "oneway.xml", err, sizeof err) == NULL);
      CHECK(strstr(err, "oneway.xml") && strstr(err, "no link back"));
    }
  }
}

/* NCCL masks the NUMA id out of a NIC's node id, so every CPU-level <nic>
 * is one node, attached to the first CPU that has one: eth1 under CPU1 is
 * reached through CPU0 (SYS from GPU1). No speed attribute: 10 Gb/s. */
static void cpu_level_nics_merge(void) {
  char xml[2048];
  snprintf(xml, sizeof xml,
           "<system version=\"1\">" SPR GPUPCI("0000:01:00.0")
           "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci>"
           "<nic><net name=\"eth0\" dev=\"0\"/></nic></cpu>" SPR GPUPCI("0000:81:00.0")
           "<gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"/></pci>"
           "<nic><net name=\"eth1\" dev=\"1\"/></nic></cpu></system>",
           0, 1);
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  CHECK(tf_warned(t, "every CPU-level <nic>"));
  nt_topo_pair p = tf_pair(t, "GPU1", "NET1");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 1.25));
  CHECK(tf_pair(t, "GPU0", "NET1").type == NT_PATH_PHB);
  nt_topo_free(t);
}

/* POWER: tclass 0x068001 is an NVLink to the GPU's own CPU (both ways,
 * 3 x 20 for sm 70). Two GPUs with no link between them meet over it: the
 * path is NVLink all the way (NVL 60, through the CPU), so P2P is on, and
 * POWER's inter-socket link is 32 GB/s. */
static void power_nvlink_to_cpu(void) {
  const char *xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"ppc64\">"
      "<pci busid=\"0004:04:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\"><nvlink target=\"0004:00:00.0\" count=\"3\" "
      "tclass=\"0x068001\"/></gpu></pci>"
      "<pci busid=\"0004:05:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu dev=\"1\" sm=\"70\" rank=\"1\" gdr=\"1\"><nvlink target=\"0004:00:00.0\" count=\"3\" "
      "tclass=\"0x068001\"/></gpu></pci></cpu><cpu numaid=\"8\" arch=\"ppc64\">"
      "<pci busid=\"0035:03:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu dev=\"2\" sm=\"70\" rank=\"2\" gdr=\"1\"/></pci></cpu></system>";
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 60) && p.hops == 2 && p.p2p && p.via_gpu == -1);
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_SYS && tf_near(p.bw, 12) && !p.p2p);
  CHECK(tf_near(p.hop_bw[1], 32));
  nt_topo_free(t);
}

/* A <gpu> without rank is no GPU for NCCL (its NVLinks would make NCCL 2.28
 * fail: we skip them and say so); a GPU-class <pci> without <gpu> is a
 * skeleton slot; an NVSwitch-class <pci> makes no node and hides what is
 * inside; elements NCCL's parser does not know, or finds in the wrong
 * place, are skipped with their contents. */
static void what_nccl_does_not_create(void) {
  char xml[4096];
  snprintf(xml, sizeof xml,
           "<system version=\"1\" name=\"test\">" SPR "<foo><pci busid=\"0000:99:00.0\"/></foo>"
           "<gpu dev=\"9\" sm=\"90\" rank=\"9\" gdr=\"1\"/>" GPUPCI("0000:01:00.0")
           "<gpu dev=\"0\" sm=\"90\" gdr=\"1\"><nvlink target=\"0000:02:00.0\" count=\"18\" "
           "tclass=\"0x030200\"/></gpu></pci>" GPUPCI("0000:02:00.0")
           "<gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"><nvlink target=\"0000:01:00.0\" "
           "count=\"18\" tclass=\"0x030200\"/></gpu></pci>" GPUPCI("0000:03:00.0") "</pci>"
           "<pci busid=\"0000:04:00.0\" class=\"0x068000\" " G5 ">" GPUPCI("0000:05:00.0")
           "<gpu dev=\"5\" sm=\"90\" rank=\"5\" gdr=\"1\"/></pci></pci>"
           "<pci busid=\"0000:06:00.0\" class=\"0x060400\" " G5 "><nvlink target=\"x\" count=\"1\" "
           "tclass=\"0x068000\"/></pci></cpu><bar/></system>",
           0);
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 1 && nt_topo_nnets(t) == 0);
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, 0, &e);
  CHECK(e.rank == 1 && !strcmp(e.busid, "0000:02:00.0"));
  CHECK(tf_warned(t, "without rank") && tf_warned(t, "<nvlink> of a GPU NCCL did not create"));
  CHECK(tf_warned(t, "<foo> inside <cpu>") && tf_warned(t, "<gpu> inside <cpu>"));
  CHECK(tf_warned(t, "<nvlink> inside <pci>") && tf_warned(t, "<bar> inside <system>"));
  CHECK(tf_warned(t, "GPU <pci> without <gpu>") && tf_warned(t, "no <nic>"));
  nt_topo_free(t);
}

/* 2.30 refuses what 2.28 accepts: a <gpu> under a bridge-class <pci> (it
 * makes a DEV, then a PCI switch, then looks for the <gpu>'s class), and a
 * GPU bus id using the low bits MLOPart keeps. */
static void nccl_230_refuses_more(void) {
  char xml[2048], err[512];
  snprintf(xml, sizeof xml,
           "<system version=\"1\">" SPR "<pci busid=\"0000:01:00.0\" class=\"0x060400\" " G5 ">"
           "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci></cpu></system>",
           0);
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL && nt_topo_ngpus(t) == 1);
  CHECK(tf_compute_err(t, NT_NCCL_230, NULL, NULL, err, sizeof err) == -1 && strstr(err, "NCCL 2.30 fails"));
  CHECK(!nt_topo_pair_at(t, 0, 0, &(nt_topo_pair){0}) && nt_topo_ngpus(t) == 0);
  CHECK(tf_compute_err(t, NT_NCCL_228, NULL, NULL, err, sizeof err) == 0 && nt_topo_ngpus(t) == 1);
  nt_topo_free(t);
  snprintf(xml, sizeof xml,
           "<system version=\"1\">" SPR GPUPCI("0000:01:00.1")
           "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/></pci></cpu></system>",
           0);
  t = tf_from_xml(xml);
  CHECK(t != NULL);
  CHECK(tf_compute_err(t, NT_NCCL_230, NULL, NULL, err, sizeof err) == -1 && strstr(err, "MLOPart"));
  nt_topo_free(t);
}

/* 2.30.7 MLOPart: one physical GPU (bus 11) split in two partitions, each
 * its own DEV with a rank; the DEVs are joined by LOC 2618, and each gets
 * half of the 18 x 40.1 NVLink bandwidth (360.9). GPU2 is a whole GPU.
 * GPU0 -> GPU1: GPU DEV DEV GPU, type LOC (2.30 picks the lower type over
 * the NVSwitch), 2618. GDR is off for partitions unless
 * NCCL_NET_GDR_MLOPART=1; as GPU0 and GPU1 lose GDR, their NIC paths turn
 * into CPU detours and the NIC's local GPU moves on to GPU2 (NCCL asks for
 * it again inside its loop). Without the split one DEV carries both ranks:
 * LOC 5000 in 2 hops, and the whole 721.8 NVLink. 2.28 knows none of it:
 * the first <gpu> is the GPU, the second <gpu>'s NVLinks add to it. */
static void mlopart_partitions(void) {
  char xml[4096], err[512];
  snprintf(xml, sizeof xml,
           "<system version=\"1\">" SPR "<pci busid=\"0000:10:00.0\" class=\"0x060400\" " G5 ">"
           GPUPCI("0000:11:00.0") "<gpu dev=\"0\" sm=\"100\" rank=\"0\" gdr=\"1\" mlopart=\"0\">"
           "<nvlink target=\"0000:f0:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu>"
           "<gpu dev=\"0\" sm=\"100\" rank=\"1\" gdr=\"1\" mlopart=\"1\">"
           "<nvlink target=\"0000:f0:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>"
           GPUPCI("0000:21:00.0") "<gpu dev=\"1\" sm=\"100\" rank=\"2\" gdr=\"1\">"
           "<nvlink target=\"0000:f0:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>"
           NICPCI("0000:12:00.0", "mlx5_0", 0) "</pci></cpu></system>",
           0);
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL);
  CHECK(nt_topo_ngpus(t) == 2 && tf_near(tf_pair(t, "GPU0", "GPU1").bw, 721.8));
  CHECK(tf_pair(t, "GPU0", "NET0").gdr);
  CHECK(tf_compute_err(t, NT_NCCL_230, NULL, NULL, err, sizeof err) == 0);
  CHECK(nt_topo_ngpus(t) == 3);
  nt_topo_pair p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_LOC && tf_near(p.bw, 2618) && p.hops == 3 && p.p2p);
  p = tf_pair(t, "GPU0", "GPU2");
  CHECK(p.type == NT_PATH_NVL && tf_near(p.bw, 360.9) && p.hops == 4);
  CHECK(tf_pair(t, "GPU0", "NET0").type == NT_PATH_PHB && !tf_pair(t, "GPU0", "NET0").gdr);
  CHECK(tf_pair(t, "GPU1", "NET0").type == NT_PATH_PHB && !tf_pair(t, "GPU1", "NET0").gdr);
  p = tf_pair(t, "GPU2", "NET0");
  CHECK(p.type == NT_PATH_PIX && p.gdr);
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, 3, &e);
  CHECK(e.local_gpu == 2 && e.numa == 0);
  CHECK(tf_compute_err(t, NT_NCCL_230, "NCCL_NET_GDR_MLOPART=1", NULL, err, sizeof err) == 0);
  p = tf_pair(t, "GPU0", "NET0");
  CHECK(p.type == NT_PATH_PIX && p.gdr && tf_pair(t, "GPU1", "NET0").type == NT_PATH_PIX);
  CHECK(tf_compute_err(t, NT_NCCL_230, "NCCL_TOPO_SPLIT_MLOPART=0", NULL, err, sizeof err) == 0);
  p = tf_pair(t, "GPU0", "GPU1");
  CHECK(p.type == NT_PATH_LOC && tf_near(p.bw, 5000) && p.hops == 2);
  CHECK(tf_near(tf_pair(t, "GPU0", "GPU2").bw, 721.8) && !tf_pair(t, "GPU0", "NET0").gdr);
  nt_topo_free(t);
}

/* Several ranks on one GPU (2.30.3+): GPU leaves of one DEV. They reach
 * each other GPU DEV GPU (LOC 5000, 2 hops); the AMD P2P rule counts DEVs
 * (one here, so SYS); the first rank of the DEV is the NVB relay. */
static void ranks_sharing_a_gpu(void) {
  const char *xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" "
      "link_width=\"16\"><gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/>"
      "<gpu dev=\"0\" sm=\"90\" rank=\"1\" gdr=\"1\"/><gpu dev=\"0\" sm=\"90\" rank=\"2\" "
      "gdr=\"1\"/></pci></cpu></system>";
  char err[512];
  nt_topo *t = tf_from_xml(xml);
  CHECK(t != NULL && nt_topo_ngpus(t) == 1);
  CHECK(tf_compute_err(t, NT_NCCL_230, NULL, NULL, err, sizeof err) == 0 && nt_topo_ngpus(t) == 3);
  nt_topo_pair p = tf_pair(t, "GPU1", "GPU2");
  CHECK(p.type == NT_PATH_LOC && tf_near(p.bw, 5000) && p.hops == 2 && p.p2p);
  CHECK(nt_topo_p2p_level(t, nt_topo_current_env(t)) == NT_PATH_SYS);
  nt_topo_free(t);
}

int main(void) {
  TEST_RUN(broadcom_gen5_switches_fold);
  TEST_RUN(pcilinks_join_switches);
  TEST_RUN(cpu_level_nics_merge);
  TEST_RUN(power_nvlink_to_cpu);
  TEST_RUN(what_nccl_does_not_create);
  TEST_RUN(nccl_230_refuses_more);
  TEST_RUN(mlopart_partitions);
  TEST_RUN(ranks_sharing_a_gpu);
  return TEST_DONE();
}
/* clang-format on */

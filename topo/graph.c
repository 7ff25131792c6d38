/* Builds NCCL's nodes from the XML tree, the way ncclTopoGetSystemFromXml
 * walks it: CPUs (NUMA nodes), PCI switches, GPUs (2.30: a DEV per physical
 * GPU with its ranks as GPU leaves), NICs and their NET ports, with the PCI
 * links between them. NVLink, C2C, pcilink, Broadcom flattening, inter-CPU
 * links and NCCL's link order follow in links.c. Elements NCCL's parser
 * skips (unknown names, or known names in the wrong place) are skipped here
 * too. Attributes NCCL requires are required; values must be numbers where
 * NCCL reads numbers (NCCL reads junk as 0; we refuse it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  nt_topo *t;
  const xml_doc *d;
  char *err;
  size_t errlen;
  bool v230;
  int rankless, gpuless, devless;
} builder;

static int fail(builder *b, int el, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(builder *b, int el, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(b->err, b->errlen, "%s:%d: %s", b->t->name, el >= 0 ? b->d->el[el].line : 0, msg);
  return -1;
}

static const char *name_of(builder *b, int el) {
  return topo_xml_name(b->d, el);
}

static const char *attr(builder *b, int el, const char *k) {
  return topo_xml_attr(b->d, el, k);
}

static int req_str(builder *b, int el, const char *k, const char **out) {
  if (!(*out = attr(b, el, k))) return fail(b, el, "<%s> needs attribute %s", name_of(b, el), k);
  return 0;
}

static int get_int(builder *b, int el, const char *k, bool required, long long def, long long min,
                   long long max, long long *out) {
  const char *v = attr(b, el, k);
  if (!v) {
    if (required) return fail(b, el, "<%s> needs attribute %s", name_of(b, el), k);
    *out = def;
    return 0;
  }
  if (!topo_parse_int(v, min, max, out)) {
    char clean[64];
    topo_sanitize(v, clean, sizeof clean);
    return fail(b, el, "<%s> %s=\"%s\" is not an integer in %lld..%lld", name_of(b, el), k, clean,
                min, max);
  }
  return 0;
}

/* NCCL's parser keeps only some children (xml.cc handlers); say so once. */
static bool kept(builder *b, int parent, int child) {
  if (topo_xml_kept(b->d, parent, child)) return true;
  char clean[64];
  topo_sanitize(name_of(b, child), clean, sizeof clean);
  topo_warn(b->t, b->d->el[child].line, "<%s> inside <%s>: NCCL ignores it and its contents", clean,
            name_of(b, parent));
  return false;
}

/* The first kept child of that name (xmlGetSub). */
static int sub(builder *b, int el, const char *name) {
  for (int c = b->d->el[el].first_child; c >= 0; c = b->d->el[c].next)
    if (!strcmp(name_of(b, c), name)) return c;
  return -1;
}

static uint64_t pci_device(builder *b, int el) {
  static const char *const keys[] = {"vendor", "device", "subsystem_vendor", "subsystem_device"};
  uint64_t v = 0;
  for (int i = 0; i < 4; i++) {
    const char *s = attr(b, el, keys[i]);
    if (s) v += (uint64_t)strtoull(s, NULL, 0) << (48 - 16 * i);
  }
  return v;
}

static int add_nets(builder *b, int nic_el, int nic) {
  nt_topo *t = b->t;
  for (int c = b->d->el[nic_el].first_child; c >= 0; c = b->d->el[c].next) {
    if (!kept(b, nic_el, c)) continue;
    long long dev, speed, gdr, port, net = 1;
    if (!attr(b, c, "dev")) {
      topo_warn(t, b->d->el[c].line, "<net> without dev: NCCL ignores it");
      continue;
    }
    if (get_int(b, c, "dev", true, 0, 0, 1 << 20, &dev) < 0 ||
        get_int(b, c, "speed", false, 0, INT32_MIN, INT32_MAX, &speed) < 0 ||
        get_int(b, c, "gdr", false, 0, INT32_MIN, INT32_MAX, &gdr) < 0 ||
        get_int(b, c, "port", false, 0, INT32_MIN, INT32_MAX, &port) < 0)
      return -1;
    if (b->v230 && get_int(b, c, "net", false, 1, INT32_MIN, INT32_MAX, &net) < 0) return -1;
    if (!net) continue; /* 2.30: a GIN/RMA-only device, not a NET */
    if (topo_find_node(t, NT_NODE_NET, (uint64_t)dev) >= 0)
      return fail(b, c, "<net> dev=\"%lld\" appears twice (NCCL would mix the two up)", dev);
    if (t->nnets >= TOPO_MAX_NETS) return fail(b, c, "more than %d network devices", TOPO_MAX_NETS);
    int n = topo_new_node(t, NT_NODE_NET, (uint64_t)dev, b->d->el[c].line);
    if (n < 0) return fail(b, c, "more than %d graph nodes", TOPO_MAX_NODES);
    topo_node *nn = &t->nodes[n];
    nn->dev = (int)dev;
    nn->gdr = (int)gdr;
    nn->port = (int)port;
    nn->nic = nic;
    nn->net_bw = (float)((speed <= 0 ? 10000 : speed) / 8000.0);
    const char *guid = attr(b, c, "guid");
    nn->guid = guid ? strtoull(guid, NULL, 16) : 0;
    nn->has_guid = guid != NULL;
    topo_sanitize(attr(b, c, "name"), nn->name, sizeof nn->name);
    snprintf(nn->busid, sizeof nn->busid, "%s", t->nodes[nic].busid);
    t->nets[t->nnets++] = n;
    if (topo_connect(t, nic, n, NT_LINK_NET, nn->net_bw) < 0 ||
        topo_connect(t, n, nic, NT_LINK_NET, nn->net_bw) < 0)
      return fail(b, c, "too many links on one node");
  }
  return 0;
}

/* A NIC: found by bus id (NCCL masks the NUMA part of the id away, so two
 * NICs with one bus id merge, and every CPU-level NIC is the same node). */
static int add_nic(builder *b, int nic_el, uint64_t id, const char *busid, bool *created) {
  nt_topo *t = b->t;
  int nic = topo_find_node(t, NT_NODE_NIC, id);
  *created = nic < 0;
  if (nic < 0) {
    if ((nic = topo_new_node(t, NT_NODE_NIC, id, b->d->el[nic_el].line)) < 0)
      return fail(b, nic_el, "more than %d graph nodes", TOPO_MAX_NODES);
    topo_sanitize(busid, t->nodes[nic].busid, sizeof t->nodes[nic].busid);
  }
  return nic;
}

static int gpu_fields(builder *b, int el, topo_node *g) {
  long long rank, sm, dev, gdr, mlopart;
  if (get_int(b, el, "rank", true, 0, 0, (1 << 24) - 1, &rank) < 0 ||
      get_int(b, el, "sm", true, 0, 0, 10000, &sm) < 0 ||
      get_int(b, el, "dev", true, 0, 0, 4095, &dev) < 0 ||
      get_int(b, el, "gdr", true, 0, INT32_MIN, INT32_MAX, &gdr) < 0 ||
      get_int(b, el, "mlopart", false, -1, -1, 1, &mlopart) < 0)
    return -1;
  for (int i = 0; i < b->t->ngpus; i++)
    if (b->t->nodes[b->t->gpus[i]].rank == rank)
      return fail(b, el, "rank %lld appears twice", rank);
  if (b->t->ngpus >= TOPO_MAX_GPUS) return fail(b, el, "more than %d GPUs", TOPO_MAX_GPUS);
  g->rank = (int)rank, g->sm = (int)sm, g->dev = (int)dev, g->gdr = (int)gdr;
  g->mlopart = b->v230 ? (int)mlopart : -1;
  return 0;
}

/* 2.30: a DEV node per physical GPU (per MLOPart partition), GPUs as leaves. */
static int add_gpu_sub(builder *b, int pci_el, int gpu_el, int parent, uint64_t busid, float bw) {
  nt_topo *t = b->t;
  long long mlo, sm;
  if (busid & 3)
    return fail(b, pci_el, "bus id uses the low 2 bits NCCL 2.30 keeps for MLOPart: it refuses it");
  if (get_int(b, gpu_el, "mlopart", false, -1, -1, 1, &mlo) < 0 ||
      get_int(b, gpu_el, "sm", true, 0, 0, 10000, &sm) < 0)
    return -1;
  uint64_t devbus = busid;
  if (mlo >= 0 && t->env.split_mlopart) devbus |= (uint64_t)((mlo << 1) | 1) & 3;
  int dev = topo_find_node(t, NT_NODE_DEV, devbus);
  if (dev < 0) {
    long long nvml;
    if (get_int(b, gpu_el, "dev", true, 0, 0, 4095, &nvml) < 0) return -1;
    if ((dev = topo_new_node(t, NT_NODE_DEV, devbus, b->d->el[pci_el].line)) < 0)
      return fail(b, pci_el, "more than %d graph nodes", TOPO_MAX_NODES);
    topo_node *d = &t->nodes[dev];
    d->device = pci_device(b, pci_el);
    d->sm = (int)sm, d->dev = (int)nvml, d->parent = parent;
    d->mlopart = (int)mlo;
    topo_sanitize(attr(b, pci_el, "busid"), d->busid, sizeof d->busid);
    t->ndevs++;
    if (topo_connect(t, dev, parent, NT_LINK_PCI, bw) < 0 ||
        topo_connect(t, parent, dev, NT_LINK_PCI, bw) < 0)
      return fail(b, pci_el, "too many links on one node");
    for (int i = 0; i < t->nnodes; i++) /* sibling partitions of the same GPU */
      if (i != dev && t->nodes[i].type == NT_NODE_DEV &&
          (t->nodes[i].id & ~3ull) == (devbus & ~3ull))
        if (topo_connect(t, dev, i, NT_LINK_LOC, MLOPART_LOC_BW) < 0 ||
            topo_connect(t, i, dev, NT_LINK_LOC, MLOPART_LOC_BW) < 0)
          return fail(b, pci_el, "too many links on one node");
  }
  int g = topo_new_node(t, NT_NODE_GPU, devbus, b->d->el[gpu_el].line);
  if (g < 0) return fail(b, gpu_el, "more than %d graph nodes", TOPO_MAX_NODES);
  if (gpu_fields(b, gpu_el, &t->nodes[g]) < 0) return -1;
  t->nodes[g].devnode = dev;
  t->nodes[g].parent = parent;
  memcpy(t->nodes[g].busid, t->nodes[dev].busid, sizeof t->nodes[g].busid);
  t->gpus[t->ngpus++] = g;
  if (topo_connect(t, dev, g, NT_LINK_LOC, LOC_BW) < 0 ||
      topo_connect(t, g, dev, NT_LINK_LOC, LOC_BW) < 0)
    return fail(b, gpu_el, "too many links on one node");
  return 0;
}

static int pci_bw(builder *b, int el, float *bw) {
  long long width;
  const char *speed;
  if (get_int(b, el, "link_width", true, 0, 0, 1024, &width) < 0 ||
      req_str(b, el, "link_speed", &speed) < 0)
    return -1;
  if (width == 0) width = 16; /* NCCL: width unknown in sysfs */
  *bw = (float)((double)(width * topo_pci_lane_code(speed)) / 80.0);
  return 0;
}

static int add_pci(builder *b, int el, int parent);

static int add_pci_children(builder *b, int el, int node) {
  for (int c = b->d->el[el].first_child; c >= 0; c = b->d->el[c].next)
    if (kept(b, el, c) && strcmp(name_of(b, c), "pcilink") && add_pci(b, c, node) < 0) return -1;
  return 0;
}

static int add_pci(builder *b, int el, int parent) {
  nt_topo *t = b->t;
  const char *cls, *busid_s;
  if (req_str(b, el, "class", &cls) < 0 || req_str(b, el, "busid", &busid_s) < 0) return -1;
  uint64_t busid = topo_busid_num(busid_s);
  int type = topo_pci_class(cls), node = -1, gpu_el = sub(b, el, "gpu"), nic_el = sub(b, el, "nic");
  float bw = 0;
  if (b->v230 && pci_bw(b, el, &bw) < 0) return -1; /* 2.30 reads them first, always */
  if (gpu_el >= 0 && nic_el >= 0)
    return fail(b, el, "<pci> holds both a <gpu> and a <nic>: NCCL leaves the GPU unconnected");
  if (gpu_el >= 0 && b->v230) {
    for (int c = b->d->el[el].first_child; c >= 0; c = b->d->el[c].next) {
      if (strcmp(name_of(b, c), "gpu")) continue;
      if (!attr(b, c, "rank")) { /* 2.30 skips the rest of this <pci> */
        b->rankless++;
        return 0;
      }
      if (add_gpu_sub(b, el, c, parent, busid, bw) < 0) return -1;
    }
    if (type == NT_NODE_PCI)
      return fail(b, el, "<gpu> under a <pci> whose class is not a GPU: NCCL 2.30 fails on it");
    return 0;
  }
  if (gpu_el >= 0) {
    if (!attr(b, gpu_el, "rank")) {
      b->rankless++;
      return 0;
    }
    if (topo_find_node(t, NT_NODE_GPU, busid) >= 0)
      return fail(b, el, "GPU bus id %.20s appears twice", busid_s);
    if ((node = topo_new_node(t, NT_NODE_GPU, busid, b->d->el[gpu_el].line)) < 0)
      return fail(b, el, "more than %d graph nodes", TOPO_MAX_NODES);
    if (gpu_fields(b, gpu_el, &t->nodes[node]) < 0) return -1;
    t->gpus[t->ngpus++] = node;
  } else if (nic_el >= 0) {
    bool created;
    int nic = add_nic(b, nic_el, busid, busid_s, &created);
    if (nic < 0) return -1;
    if (created) node = nic;
    if (add_nets(b, nic_el, nic) < 0) return -1;
  } else if (type == NT_NODE_PCI) {
    if (topo_find_node(t, NT_NODE_PCI, busid) >= 0)
      return fail(b, el, "PCI bus id %.20s appears twice", busid_s);
    if ((node = topo_new_node(t, NT_NODE_PCI, busid, b->d->el[el].line)) < 0)
      return fail(b, el, "more than %d graph nodes", TOPO_MAX_NODES);
    t->nodes[node].device = pci_device(b, el);
    t->nodes[node].parent = parent;
    if (add_pci_children(b, el, node) < 0) return -1;
  } else if (type == NT_NODE_GPU) {
    b->gpuless++; /* a skeleton: NCCL adds the GPU from the live machine */
  } else {
    b->devless++;
  }
  if (node < 0) return 0;
  topo_node *n = &t->nodes[node];
  topo_sanitize(busid_s, n->busid, sizeof n->busid);
  n->parent = parent;
  if (!b->v230 && pci_bw(b, el, &bw) < 0) return -1;
  if (topo_connect(t, node, parent, NT_LINK_PCI, bw) < 0 ||
      topo_connect(t, parent, node, NT_LINK_PCI, bw) < 0)
    return fail(b, el, "too many links on one node");
  return 0;
}

static int add_cpu(builder *b, int el) {
  nt_topo *t = b->t;
  long long numa, family, model;
  const char *arch, *vendor;
  if (get_int(b, el, "numaid", true, 0, -1, 65535, &numa) < 0 || req_str(b, el, "arch", &arch) < 0)
    return -1;
  int cpu = topo_new_node(t, NT_NODE_CPU, (uint64_t)numa, b->d->el[el].line);
  if (cpu < 0) return fail(b, el, "more than %d graph nodes", TOPO_MAX_NODES);
  topo_node *c = &t->nodes[cpu];
  c->numa = (int)numa;
  c->model = MODEL_UNKNOWN;
  c->arch = !strncmp(arch, "x86_64", 6)  ? ARCH_X86
            : !strncmp(arch, "arm64", 5) ? ARCH_ARM
            : !strncmp(arch, "ppc64", 5) ? ARCH_POWER
                                         : ARCH_UNKNOWN;
  if (c->arch == ARCH_UNKNOWN)
    topo_warn(t, b->d->el[el].line, "arch unknown to NCCL: inter-CPU bandwidth is 5000 GB/s");
  if (c->arch == ARCH_X86) {
    if (req_str(b, el, "vendor", &vendor) < 0) return -1;
    c->vendor = !strncmp(vendor, "GenuineIntel", 12)   ? VENDOR_INTEL
                : !strncmp(vendor, "AuthenticAMD", 12) ? VENDOR_AMD
                : !strncmp(vendor, "CentaurHauls", 12) ? VENDOR_ZHAOXIN
                : !strncmp(vendor, "  Shanghai  ", 12) ? VENDOR_ZHAOXIN
                                                       : VENDOR_UNKNOWN;
    if (c->vendor == VENDOR_UNKNOWN)
      topo_warn(t, b->d->el[el].line, "x86 vendor unknown to NCCL: inter-CPU bandwidth 5000 GB/s");
    if (c->vendor == VENDOR_INTEL || c->vendor == VENDOR_ZHAOXIN) {
      if (get_int(b, el, "familyid", true, 0, INT32_MIN, INT32_MAX, &family) < 0 ||
          get_int(b, el, "modelid", true, 0, INT32_MIN, INT32_MAX, &model) < 0)
        return -1;
      if (c->vendor == VENDOR_INTEL)
        c->model = family == 6 && model >= 0xCF   ? MODEL_ERP
                   : family == 6 && model >= 0x8F ? MODEL_SRP
                   : family == 6 && model >= 0x55 ? MODEL_SKL
                                                  : MODEL_BDW;
      else if (family == 7 && model == 0x5B)
        c->model = MODEL_YONGFENG;
    }
  }
  t->cpus[t->ncpus++] = cpu;
  for (int k = b->d->el[el].first_child; k >= 0; k = b->d->el[k].next) {
    if (!kept(b, el, k)) continue;
    if (!strcmp(name_of(b, k), "pci")) {
      if (add_pci(b, k, cpu) < 0) return -1;
      continue;
    }
    bool created;
    int nic = add_nic(b, k, 0, "", &created);
    if (nic < 0) return -1;
    if (created) {
      t->nodes[nic].parent = cpu;
      if (topo_connect(t, cpu, nic, NT_LINK_PCI, LOC_BW) < 0 ||
          topo_connect(t, nic, cpu, NT_LINK_PCI, LOC_BW) < 0)
        return fail(b, k, "too many links on one node");
    } else if (t->nodes[nic].parent != cpu) {
      topo_warn(t, b->d->el[k].line,
                "NCCL attaches every CPU-level <nic> to the first one (under CPU%d)",
                t->nodes[t->nodes[nic].parent].numa);
    }
    if (add_nets(b, k, nic) < 0) return -1;
  }
  return 0;
}

int topo_build(nt_topo *t, char *err, size_t errlen) {
  builder b = {.t = t, .d = &t->doc, .err = err, .errlen = errlen};
  b.v230 = t->env.version == NT_NCCL_230;
  t->nnodes = t->ngpus = t->nnets = t->ncpus = t->ndevs = 0;
  t->nvs = -1;
  long long version;
  if (get_int(&b, 0, "version", true, 0, INT32_MIN, INT32_MAX, &version) < 0) return -1;
  if (version != 1)
    return fail(&b, 0, "<system version=\"%lld\">: NCCL reads only version 1", version);
  for (int c = t->doc.el[0].first_child; c >= 0; c = t->doc.el[c].next)
    if (kept(&b, 0, c) && add_cpu(&b, c) < 0) return -1;
  if (b.rankless)
    topo_warn(t, 0, "%d <gpu> without rank: NCCL ignores them%s", b.rankless,
              b.v230 ? " (2.30: and the rest of their <pci>)" : "");
  if (b.gpuless)
    topo_warn(t, 0, "%d GPU <pci> without <gpu>: a skeleton, NCCL adds GPUs at run time",
              b.gpuless);
  if (b.devless)
    topo_warn(t, 0, "%d <pci> with a NIC/NVSwitch/CPU class but no <nic>: NCCL skips them",
              b.devless);
  if (topo_add_gpu_links(t, err, errlen) < 0) return -1;
  return topo_finish_graph(t, err, errlen);
}

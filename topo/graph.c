/* Builds NCCL's system graph from the XML tree: nodes (GPU, PCI switch,
 * NVSwitch, CPU, NIC, NET) and directed links with NCCL's bandwidths
 * (PCI generation x width, NVLink count x per-GPU-generation bandwidth,
 * C2C, NIC speed, inter-CPU by vendor and model). */
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
  int failed;
} builder;

static int fail(builder *b, const xml_el *e, const char *fmt, ...) {
  if (b->failed++) return -1;
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(b->err, b->errlen, "%s:%d: %s", b->t->name, e ? e->line : 0, msg);
  return -1;
}

static const char *attr(builder *b, const xml_el *e, const char *k) {
  return topo_xml_attr(b->d, e, k);
}

/* C-style integer with base auto-detection, as NCCL reads attributes. */
static bool int_attr(builder *b, const xml_el *e, const char *k, long *out) {
  const char *v = attr(b, e, k);
  if (!v || !*v) return false;
  char *end;
  long x = strtol(v, &end, 0);
  if (*end) return false;
  *out = x;
  return true;
}

static int new_node(builder *b, const xml_el *e, int type, uint64_t id) {
  nt_topo *t = b->t;
  if (t->nnodes >= TOPO_MAX_NODES) return fail(b, e, "more than %d nodes", TOPO_MAX_NODES);
  int i = t->nnodes++;
  topo_node *n = &t->nodes[i];
  memset(n, 0, sizeof *n);
  n->type = type;
  n->id = id;
  n->line = e ? e->line : 0;
  n->uplink = n->parent = -1;
  n->dev = n->rank = -1;
  return i;
}

/* Adds bw to an existing link of the same type to the same node, as NCCL
 * does (parallel NVLinks to several NVSwitch chips merge into one). */
static int add_link(builder *b, int from, int to, int type, double bw) {
  topo_node *n = &b->t->nodes[from];
  for (int i = 0; i < n->nlinks; i++)
    if (n->links[i].remote == to && n->links[i].type == type) {
      n->links[i].bw += bw;
      return i;
    }
  if (n->nlinks >= TOPO_MAX_LINKS) return fail(b, NULL, "node %d has too many links", from);
  n->links[n->nlinks] = (topo_link){type, to, bw};
  return n->nlinks++;
}

/* PCIe lane speed in units of 100 Mb/s, by NCCL's prefix table; anything
 * else counts as Gen3 (NCCL's fallback, even for "16.0 GT/s" without "PCIe"). */
static int lane_code(const char *speed) {
  static const struct {
    const char *key;
    int code;
  } table[] = {{"2.5 GT/s", 15},        {"5 GT/s", 30},         {"8 GT/s", 60},
               {"16 GT/s", 120},        {"32 GT/s", 240},       {"2.5 GT/s PCIe", 15},
               {"5.0 GT/s PCIe", 30},   {"8.0 GT/s PCIe", 60},  {"16.0 GT/s PCIe", 120},
               {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};
  for (size_t i = 0; speed && i < sizeof table / sizeof table[0]; i++)
    if (!strncmp(speed, table[i].key, strlen(table[i].key))) return table[i].code;
  return 60;
}

static double pci_bw(builder *b, const xml_el *e) {
  long width = 16;
  if (!int_attr(b, e, "link_width", &width) || width <= 0) width = 16;
  return (double)width * lane_code(attr(b, e, "link_speed")) / 80.0;
}

static double nvlink_bw(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;
}

/* Bus id digits as one number, as NCCL keys PCI nodes. */
static uint64_t busid_num(const char *s) {
  uint64_t v = 0;
  for (; s && *s; s++) {
    int d = *s >= '0' && *s <= '9'                 ? *s - '0'
            : (*s | 32) >= 'a' && (*s | 32) <= 'f' ? (*s | 32) - 'a' + 10
                                                   : -1;
    if (d >= 0) v = v * 16 + (uint64_t)d;
  }
  return v;
}

static int find_node(nt_topo *t, int type, uint64_t id) {
  for (int i = 0; i < t->nnodes; i++)
    if (t->nodes[i].type == type && t->nodes[i].id == id) return i;
  return -1;
}

static int child(builder *b, const xml_el *e, const char *name) {
  for (int c = e->first_child; c >= 0; c = b->d->el[c].next)
    if (!strcmp(b->d->el[c].name, name)) return c;
  return -1;
}

static int build_nets(builder *b, const xml_el *nic, int nic_node) {
  for (int c = nic->first_child; c >= 0; c = b->d->el[c].next) {
    const xml_el *e = &b->d->el[c];
    long dev, speed = 0, gdr = 0;
    if (strcmp(e->name, "net") || !int_attr(b, e, "dev", &dev))
      continue; /* NCCL ignores a net without dev */
    if (dev < 0 || dev > 65535) return fail(b, e, "<net> dev %ld out of range", dev);
    int_attr(b, e, "speed", &speed);
    int_attr(b, e, "gdr", &gdr);
    int n = new_node(b, e, NT_NODE_NET, (uint64_t)dev);
    if (n < 0) return -1;
    topo_node *net = &b->t->nodes[n];
    net->dev = (int)dev;
    net->gdr = gdr == 1;
    net->net_bw = (speed <= 0 ? 10000 : speed) / 8000.0;
    snprintf(net->name, sizeof net->name, "%s", attr(b, e, "name") ? attr(b, e, "name") : "");
    snprintf(net->busid, sizeof net->busid, "%s", b->t->nodes[nic_node].busid);
    if (add_link(b, nic_node, n, LINK_NET, net->net_bw) < 0 ||
        add_link(b, n, nic_node, LINK_NET, net->net_bw) < 0)
      return -1;
  }
  return 0;
}

static int link_parent(builder *b, int node, int parent, double bw) {
  b->t->nodes[node].parent = parent;
  if (add_link(b, node, parent, LINK_PCI, bw) < 0 || add_link(b, parent, node, LINK_PCI, bw) < 0)
    return -1;
  return 0;
}

static int build_pci(builder *b, const xml_el *e, int parent) {
  const char *busid = attr(b, e, "busid"), *cls = attr(b, e, "class");
  if (!busid) return fail(b, e, "<pci> without busid");
  if (!cls) return fail(b, e, "<pci busid=\"%.20s\"> without class", busid);
  int gpu_el = child(b, e, "gpu"), nic_el = child(b, e, "nic");
  int type;
  if (gpu_el >= 0)
    type = NT_NODE_GPU;
  else if (nic_el >= 0)
    type = NT_NODE_NIC;
  else if (!strncmp(cls, "0x068000", 8) || !strncmp(cls, "0x068001", 8) ||
           !strncmp(cls, "0x03", 4) || !strncmp(cls, "0x02", 4))
    return 0; /* NVSwitch, POWER NPU, or a GPU/NIC with no child: no node, subtree skipped */
  else
    type = NT_NODE_PCI;
  long rank = -1;
  if (type == NT_NODE_GPU && !int_attr(b, &b->d->el[gpu_el], "rank", &rank)) return 0;
  uint64_t id = busid_num(busid);
  if (find_node(b->t, type, id) >= 0) return fail(b, e, "bus id %.20s appears twice", busid);
  int n = new_node(b, e, type, id);
  if (n < 0) return -1;
  snprintf(b->t->nodes[n].busid, sizeof b->t->nodes[n].busid, "%s", busid);
  if (link_parent(b, n, parent, pci_bw(b, e)) < 0) return -1;
  topo_node *node = &b->t->nodes[n];
  if (type == NT_NODE_GPU) {
    const xml_el *g = &b->d->el[gpu_el];
    long dev = -1, sm = 0, gdr = 0;
    if (!int_attr(b, g, "dev", &dev) || !int_attr(b, g, "sm", &sm))
      return fail(b, g, "<gpu> needs dev and sm");
    if (sm < 0 || sm > 1000 || dev < 0 || dev > 4096 || rank < 0 || rank > 1 << 24)
      return fail(b, g, "<gpu> dev, sm or rank out of range");
    int_attr(b, g, "gdr", &gdr);
    node->dev = (int)dev, node->sm = (int)sm, node->rank = (int)rank, node->gdr = gdr == 1;
    return 0;
  }
  if (type == NT_NODE_NIC) return build_nets(b, &b->d->el[nic_el], n);
  for (int c = e->first_child; c >= 0; c = b->d->el[c].next)
    if (!strcmp(b->d->el[c].name, "pci") && build_pci(b, &b->d->el[c], n) < 0) return -1;
  return 0;
}

static int parse_cpu(builder *b, const xml_el *e, int n) {
  topo_node *cpu = &b->t->nodes[n];
  const char *arch = attr(b, e, "arch"), *vendor = attr(b, e, "vendor");
  if (!arch) return fail(b, e, "<cpu> without arch");
  cpu->arch = !strncmp(arch, "x86_64", 6)  ? ARCH_X86
              : !strncmp(arch, "arm64", 5) ? ARCH_ARM
              : !strncmp(arch, "ppc64", 5) ? ARCH_POWER
                                           : ARCH_UNKNOWN;
  if (cpu->arch == ARCH_X86) {
    if (!vendor) return fail(b, e, "x86 <cpu> without vendor");
    cpu->vendor = !strncmp(vendor, "GenuineIntel", 12)   ? VENDOR_INTEL
                  : !strncmp(vendor, "AuthenticAMD", 12) ? VENDOR_AMD
                  : (!strncmp(vendor, "CentaurHauls", 12) || !strncmp(vendor, "  Shanghai  ", 12))
                      ? VENDOR_ZHAOXIN
                      : VENDOR_UNKNOWN;
    long family = 0, model = 0;
    if (cpu->vendor == VENDOR_INTEL || cpu->vendor == VENDOR_ZHAOXIN) {
      if (!int_attr(b, e, "familyid", &family) || !int_attr(b, e, "modelid", &model))
        return fail(b, e, "<cpu> needs familyid and modelid for this vendor");
    }
    cpu->model = (int)(family << 16 | (model & 0xffff));
  }
  return 0;
}

/* Inter-socket bandwidth by the source CPU (NCCL's table). */
static double sys_bw(const topo_node *c) {
  int family = c->model >> 16, model = c->model & 0xffff;
  switch (c->arch) {
  case ARCH_POWER: return 32;
  case ARCH_ARM: return 6;
  case ARCH_X86:
    if (c->vendor == VENDOR_INTEL)
      return model >= 0xCF ? 40 : model >= 0x8F ? 22 : model >= 0x55 ? 10 : 6;
    if (c->vendor == VENDOR_AMD) return 16;
    if (c->vendor == VENDOR_ZHAOXIN) return family == 7 && model == 0x5B ? 9 : 6;
    return LOC_BW;
  default: return LOC_BW;
  }
}

static int cpu_of(nt_topo *t, int n) {
  while (n >= 0 && t->nodes[n].type != NT_NODE_CPU) n = t->nodes[n].parent;
  return n;
}

/* NVLink and C2C links, once every GPU node exists. */
static int build_gpu_links(builder *b) {
  nt_topo *t = b->t;
  for (int i = 0; i < b->d->n; i++) {
    const xml_el *g = &b->d->el[i];
    if (strcmp(g->name, "gpu") || g->parent < 0) continue;
    int gpu = find_node(t, NT_NODE_GPU, busid_num(attr(b, &b->d->el[g->parent], "busid")));
    if (gpu < 0) continue; /* a GPU NCCL ignores (no rank) */
    int sm = t->nodes[gpu].sm;
    for (int c = g->first_child; c >= 0; c = b->d->el[c].next) {
      const xml_el *e = &b->d->el[c];
      long count = 0, bw = 0;
      if (!strcmp(e->name, "nvlink")) {
        const char *tclass = attr(b, e, "tclass"), *target = attr(b, e, "target");
        if (!tclass || !target) return fail(b, e, "<nvlink> needs target and tclass");
        if (!int_attr(b, e, "count", &count) || count < 0 || count > 1024)
          return fail(b, e, "<nvlink> count missing or out of range");
        double lbw = (double)count * nvlink_bw(sm);
        if (!strncmp(tclass, "0x03", 4)) { /* a GPU: one way, the other end adds its own */
          int remote = find_node(t, NT_NODE_GPU, busid_num(target));
          if (remote >= 0 && remote != gpu && add_link(b, gpu, remote, LINK_NVL, lbw) < 0)
            return -1;
        } else if (!strncmp(tclass, "0x068001", 8)) { /* POWER CPU */
          int cpu = cpu_of(t, gpu);
          if (cpu >= 0 && (add_link(b, gpu, cpu, LINK_NVL, lbw) < 0 ||
                           add_link(b, cpu, gpu, LINK_NVL, lbw) < 0))
            return -1;
        } else { /* anything else is an NVSwitch: all merge into one node */
          int nvs = find_node(t, NT_NODE_NVS, 0);
          if (nvs < 0 && (nvs = new_node(b, e, NT_NODE_NVS, 0)) < 0) return -1;
          if (add_link(b, gpu, nvs, LINK_NVL, lbw) < 0 || add_link(b, nvs, gpu, LINK_NVL, lbw) < 0)
            return -1;
        }
      } else if (!strcmp(e->name, "c2c")) {
        if (!int_attr(b, e, "bw", &bw) || !int_attr(b, e, "count", &count) || bw < 0 || count < 0 ||
            bw > 100000000 || count > 1024)
          return fail(b, e, "<c2c> needs bw and count");
        int cpu = cpu_of(t, gpu);
        double lbw = (double)bw * (double)count / 1000.0;
        if (cpu >= 0 &&
            (add_link(b, gpu, cpu, LINK_C2C, lbw) < 0 || add_link(b, cpu, gpu, LINK_C2C, lbw) < 0))
          return -1;
      }
    }
  }
  return 0;
}

/* Broadcom Gen4/Gen5 PCIe switches appear as two levels; NCCL merges a
 * child switch of the same generation into its parent. */
static int bcm_gen(builder *b, const xml_el *e) {
  const char *v = attr(b, e, "vendor"), *d = attr(b, e, "device");
  const char *sv = attr(b, e, "subsystem_vendor"), *sd = attr(b, e, "subsystem_device");
  if (!v || !d || !sv || !sd || strcmp(v, "0x1000") || strcmp(sv, "0x1000")) return 0;
  if (!strcmp(d, "0xc010") && !strncmp(sd, "0xa", 3)) return 4;
  if (!strcmp(d, "0xc030")) return 5;
  return 0;
}

static void flatten_bcm(builder *b) {
  nt_topo *t = b->t;
  for (int i = 0; i < b->d->n; i++) {
    const xml_el *e = &b->d->el[i];
    if (strcmp(e->name, "pci") || !bcm_gen(b, e)) continue;
    int sw = find_node(t, NT_NODE_PCI, busid_num(attr(b, e, "busid")));
    for (int c = e->first_child; sw >= 0 && c >= 0; c = b->d->el[c].next) {
      const xml_el *ce = &b->d->el[c];
      if (strcmp(ce->name, "pci") || bcm_gen(b, ce) != bcm_gen(b, e)) continue;
      int sub = find_node(t, NT_NODE_PCI, busid_num(attr(b, ce, "busid")));
      if (sub < 0) continue;
      /* Re-parent sub's children onto sw, then cut sub out. */
      topo_node *s = &t->nodes[sub];
      for (int l = 0; l < s->nlinks; l++) {
        int r = s->links[l].remote;
        if (r == sw) continue;
        topo_node *rn = &t->nodes[r];
        for (int k = 0; k < rn->nlinks; k++)
          if (rn->links[k].remote == sub) rn->links[k].remote = sw;
        if (rn->parent == sub) rn->parent = sw;
        add_link(b, sw, r, s->links[l].type, s->links[l].bw);
      }
      topo_node *w = &t->nodes[sw];
      for (int l = 0; l < w->nlinks; l++)
        if (w->links[l].remote == sub) {
          memmove(&w->links[l], &w->links[l + 1], (size_t)(w->nlinks - l - 1) * sizeof w->links[0]);
          w->nlinks--;
          l--;
        }
      s->nlinks = 0;
      s->type = -1; /* removed */
    }
  }
}

static int link_cmp(const void *a, const void *b) {
  const topo_link *x = a, *y = b;
  return (x->bw < y->bw) - (x->bw > y->bw);
}

/* Links sorted by bandwidth (stable: insertion order on ties), the link to
 * the parent last: NCCL's order, which decides ties in the path search. */
static void order_links(nt_topo *t) {
  for (int i = 0; i < t->nnodes; i++) {
    topo_node *n = &t->nodes[i];
    topo_link tmp[TOPO_MAX_LINKS];
    int idx[TOPO_MAX_LINKS];
    for (int l = 0; l < n->nlinks; l++) idx[l] = l;
    /* insertion sort keeps equal-bw links in order */
    for (int l = 1; l < n->nlinks; l++)
      for (int k = l; k > 0 && link_cmp(&n->links[idx[k - 1]], &n->links[idx[k]]) > 0; k--) {
        int s = idx[k];
        idx[k] = idx[k - 1];
        idx[k - 1] = s;
      }
    for (int l = 0; l < n->nlinks; l++) tmp[l] = n->links[idx[l]];
    memcpy(n->links, tmp, (size_t)n->nlinks * sizeof tmp[0]);
    if (n->parent >= 0) {
      for (int l = 0; l < n->nlinks; l++)
        if (n->links[l].remote == n->parent && n->links[l].type == LINK_PCI) {
          topo_link up = n->links[l];
          memmove(&n->links[l], &n->links[l + 1], (size_t)(n->nlinks - l - 1) * sizeof up);
          n->links[n->nlinks - 1] = up;
          break;
        }
    }
  }
}

int topo_build(nt_topo *t, const xml_doc *d, char *err, size_t errlen) {
  builder b = {.t = t, .d = d, .err = err, .errlen = errlen};
  const char *version = topo_xml_attr(d, &d->el[0], "version");
  if (!version || strcmp(version, "1") != 0)
    return fail(&b, &d->el[0], "<system> version must be \"1\"");
  for (int c = d->el[0].first_child; c >= 0; c = d->el[c].next) {
    const xml_el *e = &d->el[c];
    if (strcmp(e->name, "cpu")) continue; /* NCCL skips unknown elements */
    long numa;
    if (!int_attr(&b, e, "numaid", &numa)) return fail(&b, e, "<cpu> without numaid");
    int cpu = new_node(&b, e, NT_NODE_CPU, (uint64_t)numa);
    if (cpu < 0 || parse_cpu(&b, e, cpu) < 0) return -1;
    for (int cc = e->first_child; cc >= 0; cc = d->el[cc].next) {
      const xml_el *ce = &d->el[cc];
      if (!strcmp(ce->name, "pci")) {
        if (build_pci(&b, ce, cpu) < 0) return -1;
      } else if (!strcmp(ce->name, "nic")) {
        int nic = new_node(&b, ce, NT_NODE_NIC, 0);
        if (nic < 0) return -1;
        t->nodes[nic].parent = cpu;
        if (add_link(&b, nic, cpu, LINK_PCI, LOC_BW) < 0 ||
            add_link(&b, cpu, nic, LINK_PCI, LOC_BW) < 0 || build_nets(&b, ce, nic) < 0)
          return -1;
      }
    }
  }
  if (build_gpu_links(&b) < 0) return -1;
  for (int i = 0; i < t->nnodes; i++)
    for (int j = 0; j < t->nnodes; j++)
      if (i != j && t->nodes[i].type == NT_NODE_CPU && t->nodes[j].type == NT_NODE_CPU &&
          add_link(&b, i, j, LINK_SYS, sys_bw(&t->nodes[i])) < 0)
        return -1;
  flatten_bcm(&b);
  order_links(t);
  for (int i = 0; i < t->nnodes; i++) {
    topo_node *n = &t->nodes[i];
    if (n->type == NT_NODE_GPU) {
      snprintf(t->labels[i], sizeof t->labels[i], "GPU%d", t->ngpus);
      t->gpus[t->ngpus++] = i;
    } else if (n->type == NT_NODE_NET) {
      snprintf(t->labels[i], sizeof t->labels[i], "NET%d", t->nnets);
      t->nets[t->nnets++] = i;
    } else if (n->type == NT_NODE_CPU) {
      snprintf(t->labels[i], sizeof t->labels[i], "CPU%d", t->ncpus);
      t->cpus[t->ncpus++] = i;
    }
  }
  return b.failed ? -1 : 0;
}

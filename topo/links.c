/* The rest of NCCL's graph: NVLink, C2C and pcilink links (three passes
 * over the tree in document order, as ncclTopoGetSystemFromXml does), the
 * Broadcom PCIe switch flattening, the inter-CPU links and NCCL's link order
 * (bandwidth first, then the uplink last), which decides the BFS's ties. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int topo_new_node(nt_topo *t, int type, uint64_t id, int line) {
  if (t->nnodes >= TOPO_MAX_NODES) return -1;
  int i = t->nnodes++;
  topo_node *n = &t->nodes[i];
  memset(n, 0, sizeof *n);
  n->type = type;
  n->id = id;
  n->line = line;
  n->parent = n->devnode = n->nic = n->endpoint = -1;
  n->dev = n->rank = n->mlopart = -1;
  n->numa = -2;
  return i;
}

int topo_find_node(const nt_topo *t, int type, uint64_t id) {
  for (int i = 0; i < t->nnodes; i++)
    if (t->nodes[i].type == type && !t->nodes[i].removed && t->nodes[i].id == id) return i;
  return -1;
}

/* ncclTopoConnectNodes: a second link of the same type to the same node adds
 * its bandwidth; the changed link then moves up past every slower one. */
int topo_connect(nt_topo *t, int from, int to, int type, float bw) {
  topo_node *n = &t->nodes[from];
  int l = 0;
  while (l < n->nlinks && !(n->links[l].remote == to && n->links[l].type == type)) l++;
  if (l == n->nlinks) {
    if (n->nlinks >= TOPO_MAX_LINKS) return -1;
    n->links[n->nlinks++] = (topo_link){0, (int16_t)to, (uint8_t)type};
  }
  n->links[l].bw += bw;
  topo_link save = n->links[l];
  for (; l > 0 && n->links[l - 1].bw < save.bw; l--) n->links[l] = n->links[l - 1];
  n->links[l] = save;
  return 0;
}

float topo_nvlink_bw(int sm) {
  return sm >= 100  ? 40.1f
         : sm >= 90 ? 20.6f
         : sm == 86 ? 12.0f
         : sm >= 80 ? 20.0f
         : sm >= 70 ? 20.0f
         : sm >= 60 ? 18.0f
                    : 20.0f;
}

/* findLocalCpu: up the PCI tree (the tree is still unflattened here). */
int topo_local_cpu_up(const nt_topo *t, int node) {
  for (int hops = 0; node >= 0 && hops <= XML_MAX_DEPTH + 2; hops++) {
    if (t->nodes[node].type == NT_NODE_CPU) return node;
    node = t->nodes[node].parent;
  }
  return -1;
}

typedef struct {
  nt_topo *t;
  char *err;
  size_t errlen;
  const char *what;
} pass;

static int pfail(pass *p, int el, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pfail(pass *p, int el, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(p->err, p->errlen, "%s:%d: %s", p->t->name, p->t->doc.el[el].line, msg);
  return -1;
}

static int req_int(pass *p, int el, const char *k, long long max, long long *out) {
  const char *v = topo_xml_attr(&p->t->doc, el, k);
  if (!v) return pfail(p, el, "<%s> needs attribute %s", p->what, k);
  if (!topo_parse_int(v, 0, max, out))
    return pfail(p, el, "<%s> %s is not an integer in 0..%lld", p->what, k, max);
  return 0;
}

static bool is_v230(const nt_topo *t) {
  return t->env.version == NT_NCCL_230;
}

/* 2.30: only the first <gpu> of a <pci> (per MLOPart partition) adds links. */
static bool primary_gpu(const nt_topo *t, int gpu_el) {
  const xml_doc *d = &t->doc;
  const char *mine = topo_xml_attr(d, gpu_el, "mlopart");
  for (int s = d->el[d->el[gpu_el].parent].first_child; s >= 0 && s != gpu_el; s = d->el[s].next) {
    if (strcmp(topo_xml_name(d, s), "gpu")) continue;
    const char *theirs = topo_xml_attr(d, s, "mlopart");
    long long a = -1, b = -1;
    if (mine) topo_parse_int(mine, -1, 1, &a);
    if (theirs) topo_parse_int(theirs, -1, 1, &b);
    if (a == b || !t->env.split_mlopart) return false;
  }
  return true;
}

/* The node the links of a <gpu> hang from: the GPU (2.28) or its DEV (2.30). */
static int gpu_owner(pass *p, int gpu_el, const char *busid_s, int *ndevs) {
  nt_topo *t = p->t;
  uint64_t busid = topo_busid_num(busid_s);
  *ndevs = 1;
  if (!is_v230(t)) return topo_find_node(t, NT_NODE_GPU, busid);
  long long mlo = -1;
  const char *m = topo_xml_attr(&t->doc, gpu_el, "mlopart");
  if (m) topo_parse_int(m, -1, 1, &mlo);
  uint64_t devbus = busid;
  if (mlo >= 0 && t->env.split_mlopart) devbus |= (uint64_t)((mlo << 1) | 1) & 3;
  int dev = topo_find_node(t, NT_NODE_DEV, devbus);
  *ndevs = 0;
  for (int i = 0; dev >= 0 && i < t->nnodes; i++)
    if (t->nodes[i].type == NT_NODE_DEV && (t->nodes[i].id & ~3ull) == (devbus & ~3ull)) (*ndevs)++;
  return dev;
}

static int nvs_node(nt_topo *t) {
  if (t->nvs < 0) t->nvs = topo_new_node(t, NT_NODE_NVS, 0, 0);
  return t->nvs;
}

static int both(pass *p, int el, int a, int b, int type, float bw) {
  if (topo_connect(p->t, a, b, type, bw) < 0 || topo_connect(p->t, b, a, type, bw) < 0)
    return pfail(p, el, "too many links on one node");
  return 0;
}

static int add_nvlink(pass *p, int el, const char *busid) {
  nt_topo *t = p->t;
  int gpu_el = t->doc.el[el].parent, ndevs;
  if (is_v230(t) && !primary_gpu(t, gpu_el)) return 0;
  int owner = gpu_owner(p, gpu_el, busid, &ndevs);
  if (owner < 0) {
    topo_warn(t, t->doc.el[el].line, "<nvlink> of a GPU NCCL did not create: NCCL fails here");
    return 0;
  }
  long long count;
  const char *tclass = topo_xml_attr(&t->doc, el, "tclass");
  if (req_int(p, el, "count", 1000, &count) < 0) return -1;
  if (!tclass) return pfail(p, el, "<nvlink> needs attribute tclass");
  float bw = (float)count * topo_nvlink_bw(t->nodes[owner].sm);
  int target = topo_pci_class(tclass);
  if (target == NT_NODE_GPU) {
    const char *ts = topo_xml_attr(&t->doc, el, "target");
    if (!ts) return pfail(p, el, "<nvlink> needs attribute target");
    uint64_t tb = topo_busid_num(ts);
    if (!is_v230(t)) {
      int remote = topo_find_node(t, NT_NODE_GPU, tb);
      if (remote >= 0 && topo_connect(t, owner, remote, NT_LINK_NVL, bw) < 0)
        return pfail(p, el, "too many links on one node");
      return 0;
    }
    int rem[TOPO_MAX_NODES], nrem = 0; /* every partition of the target */
    for (int i = 0; i < t->nnodes; i++)
      if (t->nodes[i].type == NT_NODE_DEV && (t->nodes[i].id & ~3ull) == (tb & ~3ull))
        rem[nrem++] = i;
    for (int j = 0; j < nrem; j++)
      if (topo_connect(t, owner, rem[j], NT_LINK_NVL, bw / (float)nrem / (float)ndevs) < 0)
        return pfail(p, el, "too many links on one node");
    return 0;
  }
  int remote = target == NT_NODE_CPU ? topo_local_cpu_up(t, owner) : nvs_node(t);
  if (remote < 0) return target == NT_NODE_CPU ? 0 : pfail(p, el, "too many graph nodes");
  return both(p, el, owner, remote, NT_LINK_NVL, bw / (float)ndevs);
}

static int add_c2c(pass *p, int el, const char *busid) {
  nt_topo *t = p->t;
  int gpu_el = t->doc.el[el].parent, ndevs;
  if (is_v230(t) && !primary_gpu(t, gpu_el)) return 0;
  int owner = gpu_owner(p, gpu_el, busid, &ndevs);
  if (owner < 0) {
    topo_warn(t, t->doc.el[el].line, "<c2c> of a GPU NCCL did not create: NCCL fails here");
    return 0;
  }
  long long count, mbs;
  if (req_int(p, el, "count", 1000, &count) < 0 || req_int(p, el, "bw", 1000000, &mbs) < 0)
    return -1;
  float bw = (float)((double)(mbs * count) / 1000.0);
  int cpu = topo_local_cpu_up(t, owner);
  if (cpu < 0) return 0;
  if (ndevs <= 1) return both(p, el, owner, cpu, NT_LINK_C2C, bw);
  /* 2.30, a split GPU: its partitions share one C2C bridge to the CPU */
  uint64_t id = t->nodes[owner].id & ~3ull;
  int cxb = topo_find_node(t, NT_NODE_CXB, id);
  if (cxb < 0) {
    if ((cxb = topo_new_node(t, NT_NODE_CXB, id, t->doc.el[el].line)) < 0)
      return pfail(p, el, "too many graph nodes");
    if (both(p, el, cxb, cpu, NT_LINK_C2C, bw) < 0) return -1;
  }
  return both(p, el, owner, cxb, NT_LINK_C2C, bw);
}

static int add_pcilink(pass *p, int el, const char *busid) {
  nt_topo *t = p->t;
  int sw = topo_find_node(t, NT_NODE_PCI, topo_busid_num(busid));
  if (sw < 0) {
    topo_warn(t, t->doc.el[el].line,
              "<pcilink> outside a PCI switch NCCL created: NCCL fails here");
    return 0;
  }
  const char *target = topo_xml_attr(&t->doc, el, "target");
  if (!target) return pfail(p, el, "<pcilink> needs attribute target");
  int remote = topo_find_node(t, NT_NODE_PCI, topo_busid_num(target));
  if (remote >= 0 && topo_connect(t, sw, remote, NT_LINK_LOC, LOC_BW) < 0)
    return pfail(p, el, "too many links on one node");
  return 0;
}

/* NCCL's recursive passes: the nearest busid above an element names it. */
static int walk(pass *p, int el, const char *busid, int (*fn)(pass *, int, const char *),
                const char *name) {
  const xml_doc *d = &p->t->doc;
  if (!strcmp(topo_xml_name(d, el), name)) {
    if (!busid) return pfail(p, el, "<%s> outside any element with a busid", name);
    p->what = name;
    return fn(p, el, busid);
  }
  const char *mine = topo_xml_attr(d, el, "busid");
  for (int c = d->el[el].first_child; c >= 0; c = d->el[c].next)
    if (topo_xml_kept(d, el, c) && walk(p, c, mine ? mine : busid, fn, name) < 0) return -1;
  return 0;
}

int topo_add_gpu_links(nt_topo *t, char *err, size_t errlen) {
  pass p = {.t = t, .err = err, .errlen = errlen};
  if (walk(&p, 0, NULL, add_nvlink, "nvlink") < 0 || walk(&p, 0, NULL, add_c2c, "c2c") < 0 ||
      walk(&p, 0, NULL, add_pcilink, "pcilink") < 0)
    return -1;
  return 0;
}

static int bcm_gen(uint64_t id, int level) {
  if ((id & 0xfffffffffffff000ull) == 0x1000c0101000a000ull) return 4;
  if ((id & 0xfffffffffffff000ull) == (0x1000c03010000000ull | (uint64_t)level * 0x1000)) return 5;
  return 0;
}

static void drop_links_to(nt_topo *t, int gone) {
  for (int i = 0; i < t->nnodes; i++) {
    topo_node *n = &t->nodes[i];
    int k = 0;
    for (int l = 0; l < n->nlinks; l++)
      if (n->links[l].remote != gone) n->links[k++] = n->links[l];
    n->nlinks = k;
  }
  t->nodes[gone].removed = true;
  t->nodes[gone].nlinks = 0;
}

/* Broadcom Gen4/Gen5 switches show two levels; NCCL merges the second level
 * into the first (appending the children's links, unsorted). */
static int flatten_bcm(nt_topo *t) {
  for (int s = 0; s < t->nnodes; s++) {
    topo_node *sw = &t->nodes[s];
    if (sw->type != NT_NODE_PCI || sw->removed) continue;
    int gen = bcm_gen(sw->device, 0);
    if (!gen) continue;
    int subs[TOPO_MAX_LINKS], nsub = 0;
    for (int l = 0; l < sw->nlinks; l++) {
      int r = sw->links[l].remote;
      if (t->nodes[r].type != NT_NODE_PCI || bcm_gen(t->nodes[r].device, 1) != gen) continue;
      subs[nsub++] = r;
      memmove(&sw->links[l], &sw->links[l + 1], (size_t)(sw->nlinks - l - 1) * sizeof sw->links[0]);
      sw->nlinks--;
      l--;
    }
    for (int k = 0; k < nsub; k++) {
      topo_node *sub = &t->nodes[subs[k]];
      if (sub->removed) continue;
      for (int l = 0; l < sub->nlinks; l++) {
        int r = sub->links[l].remote;
        if (r == s) continue;
        if (sw->nlinks >= TOPO_MAX_LINKS) return -1;
        sw->links[sw->nlinks++] = sub->links[l];
        topo_node *rn = &t->nodes[r];
        for (int rl = 0; rl < rn->nlinks; rl++)
          if (rn->links[rl].remote == subs[k]) {
            rn->links[rl].remote = (int16_t)s;
            break;
          }
        if (rn->parent == subs[k]) rn->parent = s;
      }
      drop_links_to(t, subs[k]);
    }
    sw->device |= 0xffff; /* never merge it again */
    s = -1;               /* restart, as NCCL does */
  }
  return 0;
}

static float inter_cpu_bw(const topo_node *c) {
  switch (c->arch) {
  case ARCH_POWER: return 32.0f;
  case ARCH_ARM: return 6.0f;
  case ARCH_X86:
    if (c->vendor == VENDOR_INTEL)
      return c->model == MODEL_ERP   ? 40.0f
             : c->model == MODEL_SRP ? 22.0f
             : c->model == MODEL_SKL ? 10.0f
                                     : 6.0f;
    if (c->vendor == VENDOR_AMD) return 16.0f;
    if (c->vendor == VENDOR_ZHAOXIN) return c->model == MODEL_YONGFENG ? 9.0f : 6.0f;
    return LOC_BW;
  default: return LOC_BW;
  }
}

/* ncclTopoSort: on every node below a CPU, the first link to the node above
 * moves to the end; then down the PCI links. */
static void sort_tree(nt_topo *t, int node, int up, unsigned char *seen) {
  if (seen[node]) return;
  seen[node] = 1;
  topo_node *n = &t->nodes[node];
  if (up >= 0) {
    int l = 0;
    while (l < n->nlinks && n->links[l].remote != up) l++;
    if (l < n->nlinks) {
      topo_link save = n->links[l];
      memmove(&n->links[l], &n->links[l + 1], (size_t)(n->nlinks - l - 1) * sizeof save);
      n->links[n->nlinks - 1] = save;
    }
  }
  for (int l = 0; l < n->nlinks; l++)
    if (n->links[l].type == NT_LINK_PCI && n->links[l].remote != up)
      sort_tree(t, n->links[l].remote, node, seen);
}

static void label_nodes(nt_topo *t) {
  int ncpu = 0;
  for (int i = 0; i < t->nnodes; i++) {
    topo_node *n = &t->nodes[i];
    switch (n->type) {
    case NT_NODE_GPU: snprintf(n->label, sizeof n->label, "GPU%d", n->endpoint); break;
    case NT_NODE_NET: snprintf(n->label, sizeof n->label, "NET%d", n->endpoint - t->ngpus); break;
    case NT_NODE_CPU: snprintf(n->label, sizeof n->label, "CPU%d", ncpu++); break;
    case NT_NODE_NVS: snprintf(n->label, sizeof n->label, "NVS"); break;
    case NT_NODE_CXB: snprintf(n->label, sizeof n->label, "C2C bridge"); break;
    case NT_NODE_NIC:
      snprintf(n->label, sizeof n->label, "NIC %s", n->busid[0] ? n->busid : "(CPU)");
      break;
    case NT_NODE_DEV:
      if (n->id & 1) /* an MLOPart partition */
        snprintf(n->label, sizeof n->label, "DEV %s/%d", n->busid, (int)(n->id >> 1) & 1);
      else
        snprintf(n->label, sizeof n->label, "DEV %s", n->busid);
      break;
    default: snprintf(n->label, sizeof n->label, "PCI %s", n->busid); break;
    }
  }
}

int topo_finish_graph(nt_topo *t, char *err, size_t errlen) {
  if (flatten_bcm(t) < 0)
    return snprintf(err, errlen, "%s: too many links on a PCI switch", t->name), -1;
  for (int a = 0; a < t->ncpus; a++)
    for (int b = 0; b < t->ncpus; b++)
      if (a != b && topo_connect(t, t->cpus[a], t->cpus[b], NT_LINK_SYS,
                                 inter_cpu_bw(&t->nodes[t->cpus[a]])) < 0)
        return snprintf(err, errlen, "%s: too many links on a CPU", t->name), -1;
  unsigned char *seen = calloc((size_t)t->nnodes + 1, 1);
  if (!seen) return snprintf(err, errlen, "%s: out of memory", t->name), -1;
  for (int c = 0; c < t->ncpus; c++) sort_tree(t, t->cpus[c], -1, seen);
  free(seen);
  for (int i = 0; i < t->ngpus; i++) t->nodes[t->gpus[i]].endpoint = i;
  for (int i = 0; i < t->nnets; i++) t->nodes[t->nets[i]].endpoint = t->ngpus + i;
  label_nodes(t);
  return 0;
}

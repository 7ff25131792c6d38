/* Loading, freeing and the read accessors of nt_topo: the matrix (GPUs and
 * NETs), its pairs with their routes, the graph nodes and links. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

nt_topo *nt_topo_load_buffer(const char *xml, size_t len, const char *name, char *err,
                             size_t errlen) {
  nt_topo *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "%s: out of memory", name ? name : "topology");
    return NULL;
  }
  topo_sanitize(name ? name : "topology", t->name, sizeof t->name);
  if (!xml) len = 0;
  if (topo_xml_parse(t, xml ? xml : "", len, &t->doc, err, errlen) != 0) {
    free(t);
    return NULL;
  }
  t->nwarn_load = t->nwarn;
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  if (nt_topo_compute(t, &env, err, errlen) != 0) { /* validates the file under 2.28 */
    nt_topo_free(t);
    return NULL;
  }
  return t;
}

/* Opened without blocking and read only when it is a regular file: a FIFO
 * (whose open would wait for a writer), a device or a directory is refused
 * at once with its kind named. */
static const char *file_kind(mode_t mode) {
  return S_ISFIFO(mode)   ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

char *nt_topo_read_file(const char *path, size_t *len, char *err, size_t errlen) {
  char clean[256];
  topo_sanitize(path, clean, sizeof clean);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, errlen, "%s: %s", clean, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: %s", clean, strerror(errno));
    close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: %s; only a regular file is read", clean, file_kind(st.st_mode));
    close(fd);
    return NULL;
  }
  if ((unsigned long long)st.st_size > XML_MAX_BYTES) {
    close(fd);
    snprintf(err, errlen, "%s: %lld bytes; topology files are limited to %u", clean,
             (long long)st.st_size, XML_MAX_BYTES);
    return NULL;
  }
  size_t want = (size_t)st.st_size, n = 0;
  char *buf = malloc(want + 1);
  while (buf && n < want) {
    ssize_t r = read(fd, buf + n, want - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* an error, or the file shrank meanwhile */
    n += (size_t)r;
  }
  close(fd);
  if (!buf || n != want) {
    free(buf);
    snprintf(err, errlen, "%s: %s", clean, buf ? "cannot read it" : "out of memory");
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

nt_topo *nt_topo_load_file(const char *path, char *err, size_t errlen) {
  size_t n = 0;
  char *buf = nt_topo_read_file(path, &n, err, errlen);
  if (!buf) return NULL;
  nt_topo *t = nt_topo_load_buffer(buf, n, path, err, errlen);
  free(buf);
  return t;
}

void nt_topo_free(nt_topo *t) {
  if (!t) return;
  topo_xml_free(&t->doc);
  free(t->nodes);
  free(t->tslot);
  free(t->paths);
  free(t->rec);
  free(t->dec);
  free(t);
}

const nt_topo_env *nt_topo_current_env(const nt_topo *t) {
  return &t->env;
}

int nt_topo_nwarnings(const nt_topo *t) {
  return t->nwarn + (t->warn_dropped > 0);
}

const char *nt_topo_warning(const nt_topo *t, int i) {
  if (i >= 0 && i < t->nwarn) return t->warn[i];
  if (i == t->nwarn && t->warn_dropped) return "(more notes left out)";
  return NULL;
}

int nt_topo_ngpus(const nt_topo *t) {
  return t->computed ? t->ngpus : 0;
}

int nt_topo_nnets(const nt_topo *t) {
  return t->computed ? t->nnets : 0;
}

static int endpoint_node(const nt_topo *t, int i) {
  if (!t->computed || i < 0 || i >= t->ngpus + t->nnets) return -1;
  return i < t->ngpus ? t->gpus[i] : t->nets[i - t->ngpus];
}

/* The CPU a device hangs from, by its path (after any detour is irrelevant:
 * paths to CPUs are never rewritten). */
static int local_numa(const nt_topo *t, int node) {
  int best = -1, hops = 0;
  for (int c = 0; c < t->ncpus; c++) {
    int h = topo_cpath(t, node, t->cpus[c])->count;
    if (h > 0 && (hops == 0 || h < hops)) best = t->cpus[c], hops = h;
  }
  return best >= 0 ? t->nodes[best].numa : -2;
}

void nt_topo_endpoint_at(const nt_topo *t, int i, nt_topo_endpoint *o) {
  memset(o, 0, sizeof *o);
  o->label = o->busid = o->name = "";
  o->rank = o->local_gpu = o->mlopart = -1;
  o->numa = -2;
  int node = endpoint_node(t, i);
  if (node < 0) return;
  const topo_node *n = &t->nodes[node];
  o->label = n->label;
  o->busid = n->busid;
  o->name = n->name;
  o->dev = n->dev;
  o->sm = n->sm;
  o->gdr = n->gdr != 0;
  o->line = n->line;
  o->numa = local_numa(t, node);
  if (n->type == NT_NODE_GPU) {
    o->rank = n->rank;
    o->mlopart = n->mlopart;
  } else {
    o->speed_gbs = n->net_bw;
    o->port = n->port;
    o->guid = n->guid;
    int lg = t->local_gpu[i - t->ngpus];
    o->local_gpu = lg >= 0 ? t->nodes[lg].endpoint : -1;
  }
}

bool nt_topo_pair_at(const nt_topo *t, int i, int j, nt_topo_pair *out) {
  int a = endpoint_node(t, i), b = endpoint_node(t, j);
  if (a < 0 || b < 0) return false;
  const topo_path *p = topo_cpath(t, a, b);
  const topo_dec *d = &t->dec[i * (t->ngpus + t->nnets) + j];
  memset(out, 0, sizeof *out);
  out->type = p->type;
  out->bw = p->bw;
  out->hops = p->count;
  out->p2p = d->p2p;
  out->p2p_read = d->read;
  out->net_faster = d->net_faster;
  out->p2p_transport = d->transport;
  out->via_gpu = d->via;
  out->gdr = d->gdr;
  out->gdr_read = d->gdr_read;
  out->gdr_pci_mode = d->pci_mode;
  out->pxn = d->pxn;
  out->truncated = p->count > NT_TOPO_MAX_HOPS;
  out->route[0] = a;
  out->bottleneck = -1;
  int k = 0, r = p->head, node = a;
  float worst = 0;
  for (; k < p->count && k < NT_TOPO_MAX_HOPS && r >= 0; k++, r = t->rec[r].next) {
    const topo_link *l = &t->nodes[t->rec[r].node].links[t->rec[r].link];
    node = l->remote;
    out->route[k + 1] = node;
    out->hop_bw[k] = l->bw;
    out->hop_type[k] = l->type;
    if (out->bottleneck < 0 || l->bw < worst) worst = l->bw, out->bottleneck = k;
  }
  out->nhops_nodes = k + 1;
  return true;
}

double nt_topo_hop_bw(const nt_topo *t, const nt_topo_pair *p, int k) {
  (void)t;
  return k >= 0 && k < p->nhops_nodes - 1 && k < NT_TOPO_MAX_HOPS ? p->hop_bw[k] : 0;
}

int nt_topo_nnodes(const nt_topo *t) {
  return t->computed ? t->nnodes : 0;
}

bool nt_topo_node_at(const nt_topo *t, int node, nt_topo_node *out) {
  memset(out, 0, sizeof *out);
  if (!t->computed || node < 0 || node >= t->nnodes) return false;
  const topo_node *n = &t->nodes[node];
  out->type = n->type;
  out->label = n->label;
  out->busid = n->busid;
  out->nlinks = n->nlinks;
  out->endpoint = n->endpoint;
  out->numa = n->numa;
  out->removed = n->removed;
  return true;
}

bool nt_topo_link_at(const nt_topo *t, int node, int k, nt_topo_link *out) {
  if (!t->computed || node < 0 || node >= t->nnodes || k < 0 || k >= t->nodes[node].nlinks)
    return false;
  const topo_link *l = &t->nodes[node].links[k];
  *out = (nt_topo_link){l->type, l->remote, l->bw};
  return true;
}

void nt_topo_node_label(const nt_topo *t, int node, char *buf, size_t cap) {
  if (!t->computed || node < 0 || node >= t->nnodes)
    snprintf(buf, cap, "?");
  else
    snprintf(buf, cap, "%s", t->nodes[node].label);
}

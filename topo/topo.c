/* Loading and the read accessors of nt_topo. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

nt_topo *nt_topo_load_buffer(const char *xml, size_t len, const char *name, char *err,
                             size_t errlen) {
  xml_doc doc = {0};
  if (topo_xml_parse(xml, len, name, &doc, err, errlen) != 0) return NULL;
  nt_topo *t = calloc(1, sizeof *t);
  if (!t) {
    topo_xml_free(&doc);
    snprintf(err, errlen, "%s: out of memory", name);
    return NULL;
  }
  snprintf(t->name, sizeof t->name, "%s", name);
  int rc = topo_build(t, &doc, err, errlen);
  topo_xml_free(&doc);
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  if (rc != 0 || nt_topo_compute(t, &env, err, errlen) != 0) {
    nt_topo_free(t);
    return NULL;
  }
  return t;
}

nt_topo *nt_topo_load_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    snprintf(err, errlen, "%s: not a regular file", path);
    return NULL;
  }
  if ((unsigned long long)st.st_size > XML_MAX_BYTES) {
    fclose(f);
    snprintf(err, errlen, "%s: %lld bytes; topology files are limited to %u", path,
             (long long)st.st_size, XML_MAX_BYTES);
    return NULL;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  fclose(f);
  if (!buf || n != (size_t)st.st_size) {
    free(buf);
    snprintf(err, errlen, "%s: cannot read it", path);
    return NULL;
  }
  nt_topo *t = nt_topo_load_buffer(buf, n, path, err, errlen);
  free(buf);
  return t;
}

void nt_topo_free(nt_topo *t) {
  if (!t) return;
  free(t->paths);
  free(t->pairs);
  free(t);
}

int nt_topo_ngpus(const nt_topo *t) {
  return t->ngpus;
}
int nt_topo_nnets(const nt_topo *t) {
  return t->nnets;
}

void nt_topo_endpoint_at(const nt_topo *t, int i, nt_topo_endpoint *o) {
  memset(o, 0, sizeof *o);
  int node = i < t->ngpus ? t->gpus[i] : t->nets[i - t->ngpus];
  const topo_node *n = &t->nodes[node];
  o->label = t->labels[node];
  o->busid = n->busid;
  o->name = n->name;
  o->dev = n->dev;
  o->rank = n->type == NT_NODE_GPU ? n->rank : -1;
  o->sm = n->sm;
  o->speed_gbs = n->net_bw;
  o->gdr = n->gdr;
}

bool nt_topo_pair_at(const nt_topo *t, int i, int j, nt_topo_pair *out) {
  int ne = t->ngpus + t->nnets;
  if (!t->computed || i < 0 || j < 0 || i >= ne || j >= ne) return false;
  *out = t->pairs[(size_t)i * (size_t)ne + (size_t)j];
  return true;
}

void nt_topo_node_label(const nt_topo *t, int node, char *buf, size_t cap) {
  if (node < 0 || node >= t->nnodes) {
    snprintf(buf, cap, "?");
    return;
  }
  const topo_node *n = &t->nodes[node];
  switch (n->type) {
  case NT_NODE_GPU:
  case NT_NODE_NET:
  case NT_NODE_CPU: snprintf(buf, cap, "%s", t->labels[node]); break;
  case NT_NODE_NVS: snprintf(buf, cap, "NVSwitch"); break;
  case NT_NODE_NIC: snprintf(buf, cap, "NIC %s", n->busid[0] ? n->busid : "(on CPU)"); break;
  default: snprintf(buf, cap, "PCI %s", n->busid); break;
  }
}

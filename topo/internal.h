/* topo/'s internal model, shared by its files. */
#ifndef NCCLTOP_TOPO_INTERNAL_H
#define NCCLTOP_TOPO_INTERNAL_H

#include "topo.h"

/* Bounds on untrusted input. NCCL itself caps a file at 256 elements
 * (2.28: 576 nodes); we accept more but not without limit. */
#define XML_MAX_BYTES    (8u << 20)
#define XML_MAX_ELEMENTS 8192
#define XML_MAX_DEPTH    32
#define XML_MAX_ATTRS    24
#define XML_MAX_NAME     32
#define XML_MAX_VALUE    256

typedef struct {
  char name[XML_MAX_NAME];
  int nattr;
  int key[XML_MAX_ATTRS], val[XML_MAX_ATTRS]; /* offsets into xml_doc.pool */
  int parent, first_child, last_child, next;
  int line;
} xml_el;

typedef struct {
  xml_el *el;
  int n;
  char *pool; /* attribute names and values, NUL-terminated */
  size_t pool_len, pool_cap;
} xml_doc;
void topo_xml_free(xml_doc *doc);

/* xml.c: parses with expat into a bounded element tree. */
int topo_xml_parse(const char *buf, size_t len, const char *name, xml_doc *doc, char *err,
                   size_t errlen);
const char *topo_xml_attr(const xml_doc *d, const xml_el *e, const char *key); /* NULL if absent */

#define TOPO_MAX_NODES 640
#define TOPO_MAX_LINKS 64
#define LOC_BW         5000.0

enum { LINK_LOC = 0, LINK_NVL = 1, LINK_C2C = 3, LINK_PCI = 4, LINK_SYS = 9, LINK_NET = 10 };

typedef struct {
  int type;
  int remote;
  double bw;
} topo_link;

typedef struct {
  int type; /* enum nt_node_type */
  uint64_t id;
  char busid[20];
  char name[64];
  int line; /* in the XML, for messages */
  /* GPU */
  int dev, sm, rank, gdr;
  /* CPU */
  int arch, vendor, model;
  /* NET */
  double net_bw;
  int uplink; /* index of the link to the parent, -1 none */
  int parent; /* node, -1 none */
  int nlinks;
  topo_link links[TOPO_MAX_LINKS];
} topo_node;

enum { ARCH_UNKNOWN, ARCH_X86, ARCH_ARM, ARCH_POWER };
enum { VENDOR_UNKNOWN, VENDOR_INTEL, VENDOR_AMD, VENDOR_ZHAOXIN };

typedef struct {
  int type;
  double bw;
  int count;                           /* links */
  int16_t nodes[NT_TOPO_MAX_HOPS + 1]; /* source first, destination last */
} topo_path;

struct nt_topo {
  char name[256];
  topo_node nodes[TOPO_MAX_NODES];
  int nnodes;
  int gpus[TOPO_MAX_NODES], ngpus; /* node index of GPU i */
  int nets[TOPO_MAX_NODES], nnets;
  int cpus[TOPO_MAX_NODES], ncpus;
  /* paths[src][dst] for every node pair (only those to CPU/GPU/NET/NVS are computed) */
  topo_path *paths;
  nt_topo_env env;
  bool computed;
  nt_topo_pair *pairs; /* (ngpus+nnets)^2, filled by compute */
  char labels[TOPO_MAX_NODES][16];
};

/* graph.c */
int topo_build(nt_topo *t, const xml_doc *doc, char *err, size_t errlen);
/* paths.c */
void topo_compute_paths(nt_topo *t);
topo_path *topo_path_of(nt_topo *t, int src, int dst);
/* decide.c */
bool topo_check_p2p(nt_topo *t, int g1, int g2, bool *read, int *via);
bool topo_check_gdr(nt_topo *t, int gpu, int net, int read, bool *pci_mode);
int topo_local_cpu(nt_topo *t, int gpu);
int topo_p2p_level(nt_topo *t);

#endif

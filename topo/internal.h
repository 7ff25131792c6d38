/* topo/'s internal model, shared by its files. Not part of the contract. */
#ifndef NCCLTOP_TOPO_INTERNAL_H
#define NCCLTOP_TOPO_INTERNAL_H

#include "topo.h"

/* ---- bounds on untrusted input ------------------------------------------
 * NCCL's own parser caps a topology file at 256 elements, 16 attributes per
 * element and 255 characters per value; we accept more elements (and warn),
 * but nothing without a limit. */
#define XML_MAX_BYTES      (8u << 20)
#define XML_MAX_ELEMENTS   4096
#define XML_MAX_DEPTH      16
#define XML_MAX_ATTRS      32
#define XML_MAX_NAME       64
#define XML_MAX_VALUE      255
#define NCCL_XML_MAX_ELEMS 256
#define NCCL_XML_MAX_ATTRS 16
#define TOPO_MAX_NODES     1024
#define TOPO_MAX_LINKS     255 /* per node (NCCL: 576); a link index fits a byte */
#define TOPO_MAX_GPUS      64
#define TOPO_MAX_NETS      128
#define TOPO_MAX_RECORDS   (1 << 21)
#define TOPO_MAX_WARNINGS  32
#define TOPO_WARNING_LEN   200

#define LOC_BW           5000.0f
#define MLOPART_LOC_BW   2618.0f
#define NCCL_MAXCHANNELS 64

/* ---- XML tree (xml.c) --------------------------------------------------- */
typedef struct {
  int name;         /* offset into pool */
  int attr0, nattr; /* into xml_doc.at */
  int parent, first_child, last_child, next;
  int line;
} xml_el;

typedef struct {
  int key, val; /* offsets into pool */
} xml_attr;

typedef struct {
  xml_el *el;
  int n, cap;
  xml_attr *at;
  int nat, atcap;
  char *pool;
  size_t len, pcap;
} xml_doc;

struct nt_topo;
/* Parses with expat into a bounded tree; notes what NCCL's stricter parser
 * would refuse as warnings on t. */
int topo_xml_parse(struct nt_topo *t, const char *buf, size_t len, xml_doc *doc, char *err,
                   size_t errlen);
void topo_xml_free(xml_doc *doc);
const char *topo_xml_attr(const xml_doc *d, int el, const char *key); /* NULL if absent */
const char *topo_xml_name(const xml_doc *d, int el);
/* Whether NCCL's parser keeps child under parent (its handler tables). */
bool topo_xml_kept(const xml_doc *d, int parent, int child);

/* ---- attribute helpers (attr.c) ----------------------------------------- */
/* NCCL's busIdToInt64: hex digits, ':' and '.' skipped, stop at anything
 * else, at most 16 digits, saturating like strtol. */
uint64_t topo_busid_num(const char *s);
/* C-style integer with base auto-detection (0x.. hex, 0.. octal), as NCCL's
 * strtol reads attributes, but the whole value must be a number ("" is 0,
 * as in NCCL). False on junk or out of [min, max]. */
bool topo_parse_int(const char *s, long long min, long long max, long long *out);
int topo_pci_lane_code(const char *speed); /* x100 Mb/s per lane, NCCL's prefix table */
int topo_pci_class(const char *cls);       /* NT_NODE_GPU/PCI/NVS/CPU/NIC by prefix */
/* Escapes control and non-ASCII bytes as \xNN: safe on a terminal. */
void topo_sanitize(const char *in, char *out, size_t cap);

/* ---- graph -------------------------------------------------------------- */
typedef struct {
  float bw;
  int16_t remote;
  uint8_t type;
} topo_link;

enum { ARCH_UNKNOWN = 0, ARCH_X86 = 1, ARCH_POWER = 2, ARCH_ARM = 3 };
enum { VENDOR_UNKNOWN = 0, VENDOR_INTEL = 1, VENDOR_AMD = 2, VENDOR_ZHAOXIN = 3 };
enum {
  MODEL_UNKNOWN = -1,
  MODEL_BDW = 1,
  MODEL_SKL = 2,
  MODEL_SRP = 3,
  MODEL_ERP = 4,
  MODEL_YONGFENG = 1
};

typedef struct {
  int type;
  bool removed; /* a Broadcom sub-switch merged into its parent */
  uint64_t id;
  char busid[24];
  char name[64];
  char label[40];
  int line;
  int parent; /* PCI parent while building (before flattening), -1 none */
  /* GPU (2.28: the device; 2.30: a rank leaf) and DEV */
  int dev, sm, rank, gdr, mlopart;
  int devnode; /* 2.30 GPU: its DEV node */
  /* CPU */
  int numa, arch, vendor, model;
  /* PCI */
  uint64_t device;
  /* NET */
  float net_bw;
  int port;
  uint64_t guid;
  bool has_guid; /* NCCL takes the NET's id as its ASIC without one */
  int nic;       /* the NIC node */
  int endpoint;  /* matrix index for GPU and NET nodes, else -1 */
  int nlinks;
  topo_link links[TOPO_MAX_LINKS];
} topo_node;

/* A path N->X: a persistent list of hop records (each: a node and the index
 * of the link it leaves by), shared between paths the way NCCL copies them. */
typedef struct {
  float bw;
  int count; /* hops */
  int head;  /* first record, -1 for a path of no hop */
  int8_t type;
} topo_path;

typedef struct {
  int next;
  int16_t node;
  uint8_t link;
} topo_rec;

typedef struct {
  bool p2p, read, net_faster, transport, gdr, gdr_read, pci_mode, pxn;
  int via; /* GPU index */
} topo_dec;

struct nt_topo {
  char name[256]; /* sanitized */
  xml_doc doc;
  char warn[TOPO_MAX_WARNINGS][TOPO_WARNING_LEN];
  int nwarn, nwarn_load, warn_dropped;
  nt_topo_env env;
  bool computed;
  /* graph of the last compute */
  topo_node *nodes;
  int nnodes;
  int gpus[TOPO_MAX_GPUS], ngpus;
  int nets[TOPO_MAX_NETS], nnets;
  int cpus[TOPO_MAX_NODES], ncpus;
  int ndevs;
  int nvs; /* the NVSwitch node, -1 none */
  /* paths: paths[node * ntargets + tslot[target]] */
  int *tslot;
  int ntargets;
  topo_path *paths;
  topo_rec *rec;
  int nrec, reccap;
  bool rec_full;
  /* decisions, (ngpus+nnets)^2 in endpoint order */
  topo_dec *dec;
  int local_gpu[TOPO_MAX_NETS];
};

void topo_warn(struct nt_topo *t, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* graph.c: nodes from the XML tree for t->env (version, MLOPart split). */
int topo_build(struct nt_topo *t, char *err, size_t errlen);
/* links.c */
int topo_connect(struct nt_topo *t, int from, int to, int type, float bw);
int topo_new_node(struct nt_topo *t, int type, uint64_t id, int line);
int topo_find_node(const struct nt_topo *t, int type, uint64_t id);
int topo_local_cpu_up(const struct nt_topo *t, int node); /* the CPU above, by PCI parents */
int topo_add_gpu_links(struct nt_topo *t, char *err, size_t errlen);
int topo_finish_graph(struct nt_topo *t, char *err, size_t errlen);
float topo_nvlink_bw(int sm);

/* paths.c */
int topo_compute_paths(struct nt_topo *t, char *err, size_t errlen);
topo_path *topo_path_of(struct nt_topo *t, int src, int dst);
const topo_path *topo_cpath(const struct nt_topo *t, int src, int dst);
/* dst = a then b (a ends where b starts); false when out of record space. */
bool topo_concat(struct nt_topo *t, topo_path *dst, topo_path a, topo_path b, int type);
int topo_merge_type(int a, int b);
/* The node after k hops on p from src (k = 0 is src). */
int topo_path_node(const struct nt_topo *t, int src, const topo_path *p, int k);

/* decide.c */
int topo_local_cpu(struct nt_topo *t, int gpu);
int topo_get_local(struct nt_topo *t, int src, const int *set, int n, int *out);
int topo_local_net(struct nt_topo *t, int gpu, int channel);
int topo_nic_local_gpu(struct nt_topo *t, int net);
int topo_p2p_level(const struct nt_topo *t);
int topo_p2p_level_env(const struct nt_topo *t, const nt_topo_env *e);
/* env.c: a variable NCCL reads with NCCL_PARAM (int64): 0 read; 1 read,
 * though NCCL stops at junk ("12x" is 12, "x" is 0; said in err); -1
 * unset (empty) or out of range, NCCL keeps its default (said in err). */
int nt_nccl_param(const char *name, const char *v, long long *out, char *err, size_t errlen);
int topo_gdr_level(const struct nt_topo *t);
bool topo_check_p2p(struct nt_topo *t, int g1, int g2, bool *read, int *via);
int topo_check_gdr(struct nt_topo *t, int gpu, int net, int read); /* 0 off, 1 on, 2 PCI */
int topo_pxn_relay(struct nt_topo *t, int gpu, int net);           /* -1 if not PXN */
bool topo_net_faster(struct nt_topo *t, int g1, int g2);

#endif

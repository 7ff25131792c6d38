/* NCCL's own channel graphs, as it writes them to NCCL_GRAPH_DUMP_FILE
 * (src/graph/search.cc, ncclTopoGetXmlFromGraphs): what its search found
 * for the ring, tree, CollNet and NVLS patterns of one communicator, on the
 * machine of the rank that dumped them (NCCL_GRAPH_DUMP_FILE_RANK, rank 0 by
 * default). The plugin forwards the file; this reads it, strictly: it comes
 * from another process and maybe another host. */
#ifndef NCCLTOP_TOPO_GRAPH_DUMP_H
#define NCCLTOP_TOPO_GRAPH_DUMP_H

#include <stddef.h>
#include <stdint.h>

#define NT_DUMP_MAX_BYTES    (1u << 20) /* what the plugin forwards */
#define NT_DUMP_MAX_GRAPHS   8          /* NCCL 2.26..2.30 write 5 */
#define NT_DUMP_MAX_CHANNELS 128        /* MAXCHANNELS is 64 (NVLS 32); room to grow */
#define NT_DUMP_MAX_GPUS     128        /* per channel: every GPU of an NVLink domain */

typedef struct {
  int id;      /* 0 ring, 1 tree, 2 CollNet chain, 3 NVLS, 4 CollNet direct */
  int pattern; /* NCCL_TOPO_PATTERN_*: 1 balanced tree .. 4 ring, 5 NVLS, ... */
  int nchannels, same_channels, cross_nic;
  double bw_intra, bw_inter, latency_inter; /* GB/s, GB/s, us */
  char type_intra[8], type_inter[8];        /* "NVL", "PIX", "SYS", ... as NCCL names them */
} nt_dump_graph;

typedef struct nt_graph_dump nt_graph_dump;

/* Parses a dump; NULL with one line in err ("line N: ...") when it is not
 * one NCCL writes: root <graphs version="1">, <graph> elements with their
 * attributes, each with exactly nchannels <channel> elements of optional
 * <net dev>, one or more <gpu dev>, optional <net dev>. */
nt_graph_dump *nt_graph_dump_parse(const char *xml, size_t len, char *err, size_t errlen);
void nt_graph_dump_free(nt_graph_dump *d);

int nt_graph_dump_ngraphs(const nt_graph_dump *d);
const nt_dump_graph *nt_graph_dump_graph(const nt_graph_dump *d, int g); /* NULL out of range */
/* Channel c of graph g: its GPUs' dev numbers in NCCL's order (how many;
 * at most cap are written), and the NIC it comes in on and leaves by (-1
 * on one node, where NCCL writes no <net>). -1 when out of range. */
int nt_graph_dump_channel(const nt_graph_dump *d, int g, int c, int64_t *gpus, int cap,
                          int64_t *net_in, int64_t *net_out);
/* What the pattern and id are called ("ring", "tree", "nvls", ...). */
const char *nt_dump_graph_name(const nt_dump_graph *g);
/* A dev number as NCCL's INFO log would name it: "3", or "2:3" for device 3
 * of system 2 (multi-node NVLink: NCCL_TOPO_ID(systemId, dev)). */
void nt_dump_dev_text(int64_t dev, char *buf, size_t cap);

#endif

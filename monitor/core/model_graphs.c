/* NCCL's channel graphs (NCCL_GRAPH_DUMP_FILE) the publishers forward: the
 * latest from each source, at most NT_MODEL_TOPOLOGIES sources. NCCL writes
 * the dump on one rank per communicator (NCCL_GRAPH_DUMP_FILE_RANK), so
 * usually one process sends it; several processes on one host sharing the
 * path send the same file, held once per source but parsed once per
 * content change. Which one is shown follows the topology shown (model.h). */
#include "model_internal.h"

#include <stdio.h>
#include <string.h>

int nt_model_set_graphs(nt_model *m, const char *xml, size_t len, const char *source,
                        double now_s) {
  uint64_t h = nt_model_file_hash(xml, len);
  char clean[sizeof m->graphs[0].source];
  source = source ? source : "";
  nt_sanitize(source, strlen(source), clean, sizeof clean);
  uint32_t i = 0;
  while (i < m->ngraphs && strcmp(m->graphs[i].source, clean) != 0) i++;
  if (i < m->ngraphs && m->graphs[i].hash == h) return 0; /* re-sent as it was */
  if (nt_model_file_known_bad(m, h)) return -1;
  if (i == m->ngraphs && m->ngraphs == NT_MODEL_TOPOLOGIES) return -1; /* full: keep what we have */
  char err[256];
  nt_graph_dump *d = nt_graph_dump_parse(xml, len, err, sizeof err);
  if (!d) {
    nt_model_file_remember_bad(m, h);
    nt_model_note_error(m, clean, err, now_s);
    return -1;
  }
  if (i == m->ngraphs) {
    m->ngraphs++;
    snprintf(m->graphs[i].source, sizeof m->graphs[i].source, "%s", clean);
  }
  nt_graph_dump_free(m->graphs[i].dump); /* the same source's previous version */
  m->graphs[i].dump = d;
  m->graphs[i].hash = h;
  return 0;
}

const nt_graph_dump *nt_model_graphs(const nt_model *m, const char *prefer, const char **source) {
  uint32_t pick = 0;
  for (uint32_t i = 0; prefer && i < m->ngraphs; i++)
    if (!strcmp(m->graphs[i].source, prefer)) pick = i;
  bool any = m->ngraphs > 0;
  if (source) *source = any ? m->graphs[pick].source : "";
  return any ? m->graphs[pick].dump : NULL;
}

void nt_model_graphs_free(nt_model *m) {
  for (uint32_t i = 0; i < m->ngraphs; i++) nt_graph_dump_free(m->graphs[i].dump);
  m->ngraphs = 0;
}

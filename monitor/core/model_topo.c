/* The topologies the model holds: each source's latest file (publishers
 * send NCCL_TOPO_DUMP_FILE every few seconds; --topology gives one), at most
 * NT_MODEL_TOPOLOGIES sources.
 *
 * A source keeps its index: its new version (NCCL rewrote the dump; the
 * plugin re-reads it when it changes) replaces its file in place, and a
 * source never moves, so the view, which shows an index (the first until
 * the user picks another), cannot flip between two publishers on different
 * machines (or with different dump files) every second. A file that does
 * not load is noted once and remembered by its hash, so re-sending it costs
 * neither a parse nor a new error. Readers only read: what-ifs are computed
 * on the reader's own copy, loaded from the file kept here. */
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t nt_model_file_hash(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

bool nt_model_file_known_bad(const nt_model *m, uint64_t h) {
  for (uint32_t i = 0; i < m->ntopo_failed; i++)
    if (m->topo_failed[i] == h) return true;
  return false;
}

void nt_model_file_remember_bad(nt_model *m, uint64_t h) {
  m->topo_failed[m->topo_failed_head] = h;
  m->topo_failed_head = (m->topo_failed_head + 1) % NT_MODEL_TOPO_FAILED;
  if (m->ntopo_failed < NT_MODEL_TOPO_FAILED) m->ntopo_failed++;
}

int nt_model_set_topology(nt_model *m, const char *xml, size_t len, const char *source,
                          double now_s) {
  uint64_t h = nt_model_file_hash(xml, len);
  for (uint32_t i = 0; i < m->ntopos; i++)
    if (m->topos[i].hash == h) return 0;
  if (nt_model_file_known_bad(m, h)) return -1;
  char clean[sizeof m->topos[0].source];
  source = source ? source : "";
  nt_sanitize(source, strlen(source), clean, sizeof clean);
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, len, clean, err, sizeof err);
  if (!t) {
    nt_model_file_remember_bad(m, h);
    nt_model_note_error(m, clean, err, now_s);
    return -1;
  }
  uint32_t i = 0;
  while (i < m->ntopos && strcmp(m->topos[i].source, clean) != 0) i++;
  if (i == m->ntopos) {
    if (m->ntopos == NT_MODEL_TOPOLOGIES) {
      nt_topo_free(t);
      if (!m->topo_full_noted) {
        char text[128];
        snprintf(text, sizeof text,
                 "more than %d different topologies received; further ones "
                 "are ignored",
                 NT_MODEL_TOPOLOGIES);
        nt_model_note_problem(m, clean, text, now_s);
      }
      m->topo_full_noted = true;
      return -1;
    }
    m->ntopos++;
    snprintf(m->topos[i].source, sizeof m->topos[i].source, "%s", clean);
  }
  nt_topo_free(m->topos[i].topo); /* the same source's previous version */
  m->topos[i].topo = t;
  m->topos[i].hash = h;
  free(m->topos[i].xml);
  m->topos[i].xml = malloc(len ? len : 1); /* NULL: no model from it, nothing else lost */
  if (m->topos[i].xml) memcpy(m->topos[i].xml, xml, len);
  m->topos[i].xml_len = m->topos[i].xml ? len : 0;
  m->topo_sets++;
  return 0;
}

uint32_t nt_model_topology_count(const nt_model *m) {
  return m->ntopos;
}

const nt_topo *nt_model_topology_at(const nt_model *m, uint32_t i, const char **source,
                                    uint64_t *hash) {
  bool held = i < m->ntopos;
  if (source) *source = held ? m->topos[i].source : "";
  if (hash) *hash = held ? m->topos[i].hash : 0;
  return held ? m->topos[i].topo : NULL;
}

const char *nt_model_topology_xml(const nt_model *m, uint32_t i, size_t *len) {
  bool held = i < m->ntopos && m->topos[i].xml;
  *len = held ? m->topos[i].xml_len : 0;
  return held ? m->topos[i].xml : NULL;
}

void nt_model_topologies_free(nt_model *m) {
  for (uint32_t i = 0; i < m->ntopos; i++) {
    nt_topo_free(m->topos[i].topo);
    free(m->topos[i].xml);
  }
  m->ntopos = 0;
  nt_op_models_free(m);
}

/* The topologies the model holds: every distinct file received (publishers
 * send NCCL_TOPO_DUMP_FILE every few seconds; --topology gives one), at most
 * NT_MODEL_TOPOLOGIES of them, one of which is shown.
 *
 * What is shown does not move by itself: the first file that loads stays on
 * screen until the user picks another, so two publishers on different
 * machines (or with different dump files) cannot make the view flip every
 * second. The one exception is the shown file's own source sending a new
 * version (NCCL rewrote the dump; the plugin re-reads it when it changes):
 * that replaces it. A file that does not load is noted once and remembered
 * by its hash, so re-sending it costs neither a parse nor a new error. */
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
  if (m->ntopos == 1 || i == m->topo_shown) {
    m->topo_shown = i;
    m->topo_generation++;
  }
  return 0;
}

nt_topo *nt_model_topology(nt_model *m, const char **source) {
  bool any = m->ntopos > 0;
  if (source) *source = any ? m->topos[m->topo_shown].source : "";
  return any ? m->topos[m->topo_shown].topo : NULL;
}

uint32_t nt_model_topology_generation(const nt_model *m) {
  return m->topo_generation;
}

uint32_t nt_model_topology_count(const nt_model *m, uint32_t *shown) {
  if (shown) *shown = m->topo_shown;
  return m->ntopos;
}

int nt_model_topology_pick(nt_model *m, int delta) {
  if (m->ntopos < 2) return -1;
  int n = (int)m->ntopos, next = ((int)m->topo_shown + delta % n + n) % n;
  m->topo_shown = (uint32_t)next;
  m->topo_generation++;
  return next;
}

void nt_model_topologies_free(nt_model *m) {
  for (uint32_t i = 0; i < m->ntopos; i++) {
    nt_topo_free(m->topos[i].topo);
    free(m->topos[i].xml);
  }
  m->ntopos = 0;
  nt_op_models_free(m);
}

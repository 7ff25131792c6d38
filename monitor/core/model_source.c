/* Where messages come from, and what the model refuses of them (issue 17):
 * the sources it knows, the refusals counted per reason and noted once per
 * source and reason, and the byte budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *nt_refusal_name(int reason) {
  static const char *const names[NT_REFUSE_COUNT] = {
      "pid", "source_full", "table_full", "memory", "seq_jump", "clock_jump",
  };
  return reason >= 0 && reason < NT_REFUSE_COUNT ? names[reason] : "?";
}

/* What the error list says, once per source and reason. */
static const char *refusal_text(int reason) {
  switch (reason) {
  case NT_REFUSE_PID: return "messages for another pid than its own are refused";
  case NT_REFUSE_SOURCE_FULL: return "more processes than one endpoint may have: refused";
  case NT_REFUSE_TABLE_FULL: return "the process table is full: new processes refused";
  case NT_REFUSE_MEMORY: return "memory budget spent: new processes and bigger snapshots refused";
  case NT_REFUSE_SEQ_JUMP: return "sequence number jumped ahead: snapshot refused";
  default: return "publisher clock jumped ahead: snapshot refused";
  }
}

/* Sources stay known while they have processes; the oldest one without
 * any makes room for a new one (its notes are forgotten with it). */
static src_slot *reuse_source(nt_model *m) {
  src_slot *best = NULL;
  for (uint32_t i = 0; i < m->nsources; i++) {
    src_slot *s = m->sources[i];
    if (!s->nprocs && (!best || s->last_s < best->last_s)) best = s;
  }
  if (best) memset(best, 0, sizeof *best);
  return best;
}

src_slot *nt_source_slot(nt_model *m, const char *endpoint, uint32_t pid, double now_s) {
  endpoint = endpoint ? endpoint : "";
  for (uint32_t i = 0; i < m->nsources; i++) {
    src_slot *s = m->sources[i];
    if (s->pid == pid && strncmp(s->name, endpoint, sizeof s->name - 1) == 0) {
      s->last_s = now_s;
      return s;
    }
  }
  src_slot *s = NULL;
  if (m->nsources < NT_MODEL_MAX_SOURCES && (s = calloc(1, sizeof *s))) {
    m->sources[m->nsources++] = s;
    m->bytes += sizeof *s;
  } else if (!(s = reuse_source(m))) {
    nt_refuse(m, NULL, endpoint, NT_REFUSE_TABLE_FULL, "too many endpoints", now_s);
    return NULL;
  }
  snprintf(s->name, sizeof s->name, "%s", endpoint);
  s->pid = pid;
  s->last_s = now_s;
  return s;
}

int nt_refuse(nt_model *m, src_slot *src, const char *endpoint, int reason, const char *detail,
              double now_s) {
  m->refused[reason]++;
  if (src && (src->noted & 1u << reason)) return -1;
  if (src) src->noted |= 1u << reason;
  char text[160];
  snprintf(text, sizeof text, "%s (%s%s%s)", refusal_text(reason), nt_refusal_name(reason),
           detail && detail[0] ? ": " : "", detail ? detail : "");
  nt_model_note_problem(m, endpoint && endpoint[0] ? endpoint : "model", text, now_s);
  return -1;
}

bool nt_budget_allows(const nt_model *m, const src_slot *src, size_t more) {
  return m->bytes + more <= m->budget && (!src || src->bytes + more <= m->budget / 2);
}

void nt_sources_free(nt_model *m) {
  for (uint32_t i = 0; i < m->nsources; i++) free(m->sources[i]);
  m->nsources = 0;
}

void nt_model_set_budget(nt_model *m, size_t bytes) {
  m->budget = bytes;
}

size_t nt_model_budget(const nt_model *m) {
  return m->budget;
}

size_t nt_model_bytes(const nt_model *m) {
  return m->bytes;
}

uint64_t nt_model_refused(const nt_model *m, int reason) {
  return reason >= 0 && reason < NT_REFUSE_COUNT ? m->refused[reason] : 0;
}

uint64_t nt_model_total_refused(const nt_model *m) {
  uint64_t n = 0;
  for (int i = 0; i < NT_REFUSE_COUNT; i++) n += m->refused[i];
  return n;
}

/* Applying recorded messages to a model: the live source's own ingest
 * (ingest.c), with the recording's receive time as now. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "../core/model.h"
#include "recording.h"

struct nt_rec_applier {
  nt_ingest *ingest;
  bool have_snap;
};

nt_rec_applier *nt_rec_applier_new(void) {
  nt_rec_applier *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  if (!(a->ingest = nt_ingest_new())) {
    nt_rec_applier_free(a);
    return NULL;
  }
  return a;
}

void nt_rec_applier_free(nt_rec_applier *a) {
  if (!a) return;
  nt_ingest_free(a->ingest);
  free(a);
}

const nt_snapshot *nt_rec_last_snapshot(const nt_rec_applier *a) {
  return a->have_snap ? nt_ingest_snapshot(a->ingest) : NULL;
}

void nt_rec_apply(nt_rec_applier *a, nt_model *m, const nt_rec_record *r, double now_s) {
  a->have_snap = false;
  if (r->type == NT_REC_FRAME) return; /* a mark, not a message */
  if (r->type == NT_REC_GONE) {
    nt_model_endpoint_gone(m, r->endpoint);
    return;
  }
  uint32_t pid = r->pid; /* whom it spoke for when it was recorded */
  nt_ingested in = nt_ingest_message(a->ingest, m, r->endpoint, &pid, false, r->topic, r->topic_len,
                                     r->body, r->body_len, now_s);
  a->have_snap = in.topic == NT_IN_SNAPSHOT && in.ok;
}

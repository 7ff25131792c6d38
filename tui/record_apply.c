/* Applying recorded messages to a model: what tui/source.c's dispatch does
 * with a live message, with the recording's receive time as now. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recording.h"

struct nt_rec_applier {
  nt_snapshot *snap;
  nt_hello *hello;
  bool have_snap;
};

nt_rec_applier *nt_rec_applier_new(void) {
  nt_rec_applier *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->snap = nt_snapshot_new();
  a->hello = calloc(1, sizeof *a->hello);
  if (!a->snap || !a->hello) {
    nt_rec_applier_free(a);
    return NULL;
  }
  return a;
}

void nt_rec_applier_free(nt_rec_applier *a) {
  if (!a) return;
  nt_snapshot_free(a->snap);
  free(a->hello);
  free(a);
}

const nt_snapshot *nt_rec_last_snapshot(const nt_rec_applier *a) {
  return a->have_snap ? a->snap : NULL;
}

static bool topic_is(const nt_rec_record *r, const char *name) {
  size_t n = strlen(name);
  return r->topic_len == n && memcmp(r->topic, name, n) == 0;
}

void nt_rec_apply(nt_rec_applier *a, nt_model *m, const nt_rec_record *r, double now_s) {
  char err[256];
  a->have_snap = false;
  if (r->type == NT_REC_FRAME) return; /* a mark, not a message */
  if (r->type == NT_REC_GONE) {
    nt_model_endpoint_gone(m, r->endpoint);
    return;
  }
  const char *data = (const char *)r->body;
  size_t len = r->body_len;
  if (topic_is(r, NT_TOPIC_SNAPSHOT)) {
    if (nt_snapshot_decode(r->body, len, a->snap, err, sizeof err) == 0) {
      nt_model_apply_snapshot(m, r->endpoint, r->pid, a->snap, now_s);
      a->have_snap = true;
    } else {
      char text[300];
      snprintf(text, sizeof text, "snapshot: %s", err);
      nt_model_note_error(m, r->endpoint, text, now_s);
    }
  } else if (topic_is(r, NT_TOPIC_HELLO)) {
    if (nt_hello_decode(data, len, a->hello, err, sizeof err) == 0)
      nt_model_apply_hello(m, r->endpoint, r->pid, a->hello, now_s);
    else
      nt_model_note_error(m, r->endpoint, err, now_s);
  } else if (topic_is(r, NT_TOPIC_COMM)) {
    nt_comm_info c;
    if (nt_comm_decode(data, len, &c, err, sizeof err) == 0)
      nt_model_apply_comm(m, r->endpoint, r->pid, &c, now_s);
    else
      nt_model_note_error(m, r->endpoint, err, now_s);
  } else if (topic_is(r, NT_TOPIC_TOPOLOGY)) {
    nt_model_set_topology(m, data, len, r->endpoint, now_s);
  } else {
    char clean[80], text[128];
    size_t tn = r->topic_len;
    snprintf(text, sizeof text, "unknown topic '%s'%s",
             nt_sanitize(r->topic, tn < 40 ? tn : 40, clean, sizeof clean), tn > 40 ? "..." : "");
    nt_model_note_error(m, r->endpoint, text, now_s);
  }
}

/* What batch.c and batch_ops.c share: cJSON helpers and the parts of a
 * frame about operations, diagnosis and the environment (batch_ops.c). */
#ifndef NCCLTOP_BATCH_JSON_H
#define NCCLTOP_BATCH_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "viewer.h"

/* Keys are string constants: cJSON keeps a pointer instead of a copy (a
 * 1024-rank frame has millions of keys). */
static inline cJSON *put_obj(cJSON *o, const char *key, cJSON *v) {
  if (v && !cJSON_AddItemToObjectCS(o, key, v)) { /* out of memory: the frame fails */
    cJSON_Delete(v);
    return NULL;
  }
  return v;
}
static inline void put_num(cJSON *o, const char *key, double v) {
  put_obj(o, key, cJSON_CreateNumber(v));
}
static inline void put_str(cJSON *o, const char *key, const char *v) {
  put_obj(o, key, cJSON_CreateString(v));
}
static inline void put_bool(cJSON *o, const char *key, bool v) {
  put_obj(o, key, cJSON_CreateBool(v));
}
static inline void append(cJSON *array, cJSON *item) {
  if (item && !cJSON_AddItemToArray(array, item)) cJSON_Delete(item);
}

/* Adds "api", "seq", "in_flight" and "net" to a rank's object. */
void nt_batch_rank_ops(cJSON *j, const nt_frame *f, const nt_frame_rank *r);
/* Adds "phase", "event_classes", "env" and the 1.1 counters to a process's. */
void nt_batch_process_ops(cJSON *j, const nt_frame *f, const nt_frame_proc *p);
/* Adds "alerts", "collectives", "phases", "recent" and "runs" to a frame. */
void nt_batch_job_json(cJSON *root, const nt_frame *f);
/* The text frame's alerts (first) and operation tables (after the rest). */
void nt_batch_alerts_text(FILE *out, const nt_frame *f);
void nt_batch_ops_text(FILE *out, const nt_frame *f);

#endif

/* What batch.c and batch_ops.c share: the parts of a
 * frame about operations, diagnosis and the environment (batch_ops.c). */
#ifndef NCCLTOP_BATCH_JSON_H
#define NCCLTOP_BATCH_JSON_H

#include <stdio.h>

#include "json_out.h"
#include "../core/frame.h"

/* Adds "api", "seq", "in_flight" and "net" to a rank's object. */
void nt_batch_rank_ops(nt_jo *w, const nt_frame *f, const nt_frame_rank *r);
/* Adds "phase", "event_classes" and "env" to a process's. */
void nt_batch_process_ops(nt_jo *w, const nt_frame *f, const nt_frame_proc *p);
/* Adds "alerts", "collectives", "phases", "recent" and "runs" to a frame. */
void nt_batch_job_json(nt_jo *w, const nt_frame *f);
/* Adds "topologies" to a frame: the model's topologies (none when m is
 * NULL), each version's path model in the first frame that carries it
 * (batch_topo.c). */
void nt_batch_topologies_json(nt_jo *w, const nt_model *m);
/* The text frame's alerts (first) and operation tables (after the rest). */
void nt_batch_alerts_text(FILE *out, const nt_frame *f);
void nt_batch_ops_text(FILE *out, const nt_frame *f);

#endif

/* Batch output (batch.c): frames as text or one JSON line each. */
#ifndef NCCLTOP_BATCH_H
#define NCCLTOP_BATCH_H

#include <stdio.h>

#include "../core/frame.h"
#include "json_out.h"
#include "../options.h"

/* Batch output: one frame of the model as text or one JSON line to `out`
 * (builds a frame: once per tick, it runs the diagnosis d, the caller's,
 * kept for the model's life). */
int nt_batch_print(FILE *out, const nt_model *m, nt_diag *d, const nt_options *o, double now_s);
/* A built frame as one JSON object, written into `out` (emptied first; its
 * buffer is reused), the keys in batch.c; NULL out of memory. Or as the
 * text batch frame. */
const char *nt_frame_json(const nt_frame *f, nt_jo *out);
void nt_frame_text(FILE *out, const nt_frame *f);

#endif

/* One `nccltop -b` frame of a model, printed into a string as the batch
 * output prints it (text, or one JSON line), for the unit tests of the
 * batch output. */
#ifndef NCCLTOP_TESTS_BATCH_FRAME_H
#define NCCLTOP_TESTS_BATCH_FRAME_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_diag.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/outputs/batch.h"

/* The frame at `now` (the viewer started at 0.5 s), or NULL; the caller
 * frees it. */
static inline char *batch_frame(nt_model *m, bool json, double now) {
  nt_options o;
  nt_options_defaults(&o);
  o.batch = true;
  o.json = json;
  o.start_s = 0.5;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int rc = nt_batch_print(f, m, test_diag(), &o, now);
  if (fclose(f) != 0) rc = -1;
  if (rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

#endif

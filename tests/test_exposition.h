/* The exposition of a model now as `nccltop exporter` renders it: the
 * frame built the exporter's way (nt_exporter_frame_opts) on the test's
 * diagnosis (test_diag.h), then nt_exporter_render. */
#ifndef NCCLTOP_TEST_EXPOSITION_H
#define NCCLTOP_TEST_EXPOSITION_H

#include <stdio.h>

#include "../monitor/outputs/exporter.h"
#include "test_diag.h"

/* 0, or -1 when the frame could not be built or f failed. */
static inline int test_exposition(FILE *f, const nt_model *m, const nt_exporter_opts *o,
                                  double now_s) {
  nt_frame *fr = nt_frame_new();
  nt_frame_opts fo = nt_exporter_frame_opts(o);
  int rc =
      fr && nt_frame_build(fr, m, test_diag(), &fo, now_s) == 0 ? nt_exporter_render(f, fr, o) : -1;
  nt_frame_free(fr);
  return rc;
}

#endif

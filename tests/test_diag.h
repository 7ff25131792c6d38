/* The diagnosis a test's model is judged by (diag.h). A test drives one
 * model at a time; the diagnosis follows whichever model it is given and
 * starts over for a new one, so one per test binary keeps what each model
 * showed over its calls, as a reader's own nt_diag does. */
#ifndef NCCLTOP_TEST_DIAG_H
#define NCCLTOP_TEST_DIAG_H

#include <stdio.h>
#include <stdlib.h>

#include "../monitor/core/diag.h"

static inline nt_diag *test_diag(void) {
  static nt_diag *d;
  if (!d && !(d = nt_diag_new())) {
    fprintf(stderr, "test_diag: out of memory\n");
    abort();
  }
  return d;
}

#endif

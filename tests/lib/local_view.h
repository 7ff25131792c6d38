/* The viewer's live side in the test's own process: the live source and a
 * model, as `nccltop` has them (test_source, test_hostile_viewer). */
#ifndef NCCLTOP_TESTS_LOCAL_VIEW_H
#define NCCLTOP_TESTS_LOCAL_VIEW_H

#include <stdbool.h>

#include "../../monitor/core/model.h"
#include "../../monitor/feeds/source.h"
#include "../../monitor/options.h"

typedef struct {
  nt_model *m;
  nt_source *src;
  nt_options o;
} local_view;

/* Opens a source on dir (and one --connect endpoint, NULL for none) with
 * the default options and a fresh model; false (said) when it cannot. */
bool local_view_open(local_view *v, const char *dir, const char *connect);

void local_view_close(local_view *v);

#endif

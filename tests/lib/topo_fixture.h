/* Loading and computing machines for the topo/ tests (test_topo*.c): each
 * helper prints topo/'s error line, indented like a failed CHECK, and
 * returns NULL or false, so a test only CHECKs the result. */
#ifndef NCCLTOP_TESTS_TOPO_FIXTURE_H
#define NCCLTOP_TESTS_TOPO_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "../../topo/topo.h"

/* Where the real NCCL dumps are: $NCCLTOP_SHARED_TOPOLOGIES, else
 * ../shared/topologies; NULL when neither is readable (tests skip). */
const char *tf_shared_dir(void);

/* dir/file, parsed; NULL (said) when it does not load. */
nt_topo *tf_load(const char *dir, const char *file);

/* An inline machine (named inline.xml in errors); NULL (said) on error. */
nt_topo *tf_from_xml(const char *xml);

/* Computes t's paths as `version` does with up to two NCCL variables
 * ("NAME=value", NULL for none); nt_topo_compute's status, -1 when a
 * variable is refused; the reason in err. */
int tf_compute_err(nt_topo *t, int version, const char *a, const char *b, char *err, size_t errlen);

/* The same, the reason said on stderr; true when computed. */
bool tf_compute(nt_topo *t, int version, const char *a, const char *b);

/* The endpoint labelled `label` ("GPU0", "NET1"), or -1. */
int tf_endpoint(const nt_topo *t, const char *label);

/* The path between two labelled endpoints; type -1 when there is none. */
nt_topo_pair tf_pair(const nt_topo *t, const char *a, const char *b);

/* Equal within 1e-3 (bandwidths in GB/s). */
bool tf_near(double a, double b);

/* Whether one of t's warnings contains what. */
bool tf_warned(const nt_topo *t, const char *what);

/* Runs `nccltop topo` (nt_topo_main) with its stdout in the file `out` and
 * its stderr in `errf` (NULL: thrown away); its exit status, -100 when the
 * files cannot be opened. */
int tf_run_cli(const char *out, const char *errf, int argc, const char **argv);

/* Computes t under version and up to two variables, then its graphs over
 * `nodes` nodes; NULL (said) on error. */
nt_topo_graphs *tf_graphs(nt_topo *t, int version, int nodes, const char *a, const char *b);

#endif

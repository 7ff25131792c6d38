/* Reading the xz-compressed NCCL logs in tests/traces/ (test_topo_real_nccl,
 * test_trace_replay through trace_truth.h). */
#ifndef NCCLTOP_TESTS_XZ_FILE_H
#define NCCLTOP_TESTS_XZ_FILE_H

#include <stddef.h>

/* The file at path (at most 4 MiB compressed) decompressed whole into a
 * NUL-terminated buffer the caller frees, its length in *len (NULL: not
 * wanted); NULL when it cannot be read, is not xz, or holds more than max
 * bytes. */
char *xz_read_file(const char *path, size_t max, size_t *len);

#endif

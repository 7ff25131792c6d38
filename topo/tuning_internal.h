/* Shared by topo/tuning*.c; not part of the contract. */
#ifndef NCCLTOP_TOPO_TUNING_INTERNAL_H
#define NCCLTOP_TOPO_TUNING_INTERNAL_H

#include <stddef.h>

enum { TUNE_LIST_ALGO, TUNE_LIST_PROTO };
/* NCCL's parseList over NCCL_ALGO (table [collective][algorithm]) or
 * NCCL_PROTO ([collective][protocol]): -1 with NCCL's reason when NCCL
 * would refuse the string (and fail the communicator's init). */
int tune_parse_list(const char *str, int which, int *table, char *err, size_t errlen);
int tune_log2i(long n);

#endif

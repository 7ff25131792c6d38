/* One formatter per quantity, each scaled per value to 3 significant
 * digits: 850ns, 12.4us, 3.05ms, 1.20s; 512B, 1.50KiB, 3.00GiB; 850B/s,
 * 12.4KB/s, 1.20GB/s (rates decimal, as NCCL and nccl-tests report GB/s).
 * A small value that is not zero never prints as zero; NaN (a value that
 * cannot be computed, such as a bandwidth without the rank count) prints
 * "?", a negative value "-". The screen and the batch text use these; JSON keeps
 * raw numbers. */
#ifndef NCCLTOP_UNITS_H
#define NCCLTOP_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define NT_UNIT_LEN 24 /* enough for any of them, with the terminating NUL */

const char *nt_fmt_ns(double ns, char *buf, size_t cap);
const char *nt_fmt_size(double bytes, char *buf, size_t cap);
const char *nt_fmt_rate(double bytes_per_s, char *buf, size_t cap);
/* "3/8": a rank and its communicator's rank count; a count NCCL did not
 * give (2.26 tells the plugin none: 0 in the model) is "?" ("3/?"), as is a
 * negative rank. */
const char *nt_fmt_rank(int32_t rank, int32_t nranks, char *buf, size_t cap);

#endif

/* What the tests read about processes they started (or themselves) from
 * /proc, and the sanitizer setting that makes memory figures mean
 * something (test_relay_attacks, test_load, test_hostile_viewer). */
#ifndef NCCLTOP_TESTS_PROC_STATUS_H
#define NCCLTOP_TESTS_PROC_STATUS_H

#include <sys/types.h>

/* A kB field of /proc/PID/status ("VmHWM", "VmRSS"); -1 when absent. */
long proc_status_kb(pid_t pid, const char *field);

/* Adds quarantine_size_mb=4 to ASAN_OPTIONS, for the processes started
 * from now on: a sanitized process keeps what it frees in ASan's quarantine
 * (256 MB by default), so only a small one lets its peak memory show what
 * it holds. Returns the previous value (NULL: unset) for
 * asan_options_restore. */
char *asan_small_quarantine(void);

/* Puts back what asan_small_quarantine returned, and frees it. */
void asan_options_restore(char *previous);

#endif

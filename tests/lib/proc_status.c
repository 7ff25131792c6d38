/* See proc_status.h. */
#include "proc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long proc_status_kb(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "re");
  long kb = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') kb = atol(line + n + 1);
  if (f) fclose(f);
  return kb;
}

char *asan_small_quarantine(void) {
  const char *old = getenv("ASAN_OPTIONS");
  char *previous = old ? strdup(old) : NULL, buf[512];
  snprintf(buf, sizeof buf, "%s%squarantine_size_mb=4", old ? old : "", old && *old ? ":" : "");
  setenv("ASAN_OPTIONS", buf, 1);
  return previous;
}

void asan_options_restore(char *previous) {
  if (previous)
    setenv("ASAN_OPTIONS", previous, 1);
  else
    unsetenv("ASAN_OPTIONS");
  free(previous);
}

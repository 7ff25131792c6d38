/* Logging through NCCL's logger (NCCL_DEBUG_SUBSYS=PROFILE selects it). The
 * v3 ABI gives no logger: then stderr, and only when NCCLTOP_DEBUG is set.
 * Never stdout: it belongs to the training job. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

void nt_log(int level, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  nt_nccl_logger fn = atomic_load(&nt_g.logfn);
  if (fn) {
    fn(level, NT_NCCL_SUBSYS_PROFILE, __FILE__, __LINE__, "nccltop: %s", msg);
    return;
  }
  const char *debug = getenv("NCCLTOP_DEBUG");
  if (debug && *debug && *debug != '0') fprintf(stderr, "nccltop: %s\n", msg);
}

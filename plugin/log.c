/* Logging through NCCL's logger (NCCL_DEBUG_SUBSYS=PROFILE selects it). The
 * v3 ABI gives no logger: then stderr, and only when NCCLTOP_DEBUG is set
 * (read at the first init, never here: we may be on our own thread). Never
 * stdout: it belongs to the training job.
 *
 * What we log quotes values from outside (NCCLTOP_DIR, file names, endpoint
 * names): control characters, ESC, DEL and invalid UTF-8 are escaped as \xNN
 * so no value can forge a log line or drive the terminal reading the log. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

void nt_log(int level, const char *fmt, ...) {
  char msg[512], safe[4 * sizeof msg]; /* one byte escapes to at most four */
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  nt_sanitize(msg, sizeof msg, safe, sizeof safe);
  nt_nccl_logger fn = atomic_load(&nt_g.logfn);
  if (fn) {
    fn(level, NT_NCCL_SUBSYS_PROFILE, __FILE__, __LINE__, "nccltop: %s", safe);
    return;
  }
  if (nt_g.cfg.debug) fprintf(stderr, "nccltop: %s\n", safe);
}

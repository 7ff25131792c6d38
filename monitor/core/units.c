/* Units: a value, its unit ladder and 3 significant digits. */
#include "units.h"

#include <math.h>
#include <stdio.h>

/* Prints v / scale[u] with 3 significant digits, moving to the next unit
 * when rounding reaches `step` (999.5 ns prints 1.00us, not 1000ns). */
static const char *scaled(double v, const char *const *unit, const double *scale, int nunits,
                          char *buf, size_t cap) {
  if (!cap) return buf;
  if (isnan(v)) { /* NaN is how the model says "cannot be computed": unknown, never 0 */
    snprintf(buf, cap, "?");
    return buf;
  }
  if (v < 0) {
    snprintf(buf, cap, "-");
    return buf;
  }
  if (v == 0) {
    snprintf(buf, cap, "0%s", unit[0]);
    return buf;
  }
  int u = 0;
  while (u + 1 < nunits && v >= scale[u + 1] * 0.9995) u++;
  double x = v / scale[u];
  if (isinf(x) || x >= 1e15) {
    snprintf(buf, cap, ">1e15%s", unit[u]);
    return buf;
  }
  if (u == 0 && x == floor(x))
    snprintf(buf, cap, "%.0f%s", x, unit[u]); /* whole base units (bytes, ns) */
  else if (x >= 99.95)
    snprintf(buf, cap, "%.0f%s", x, unit[u]);
  else if (x >= 9.995)
    snprintf(buf, cap, "%.1f%s", x, unit[u]);
  else if (x >= 0.995 || u > 0)
    snprintf(buf, cap, "%.2f%s", x, unit[u]);
  else if (x >= 0.001)
    snprintf(buf, cap, "%.3f%s", x, unit[u]); /* below the smallest unit: still not 0 */
  else
    snprintf(buf, cap, "<0.001%s", unit[u]);
  return buf;
}

const char *nt_fmt_ns(double ns, char *buf, size_t cap) {
  static const char *const unit[] = {"ns", "us", "ms", "s"};
  static const double scale[] = {1, 1e3, 1e6, 1e9};
  return scaled(ns, unit, scale, 4, buf, cap);
}

const char *nt_fmt_size(double bytes, char *buf, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  static const double scale[] = {1,
                                 1024.0,
                                 1024.0 * 1024,
                                 1024.0 * 1024 * 1024,
                                 1024.0 * 1024 * 1024 * 1024,
                                 1024.0 * 1024 * 1024 * 1024 * 1024,
                                 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024};
  return scaled(bytes, unit, scale, 7, buf, cap);
}

const char *nt_fmt_rate(double bps, char *buf, size_t cap) {
  static const char *const unit[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"};
  static const double scale[] = {1, 1e3, 1e6, 1e9, 1e12, 1e15, 1e18};
  return scaled(bps, unit, scale, 7, buf, cap);
}

const char *nt_fmt_rank(int32_t rank, int32_t nranks, char *buf, size_t cap) {
  char r[16] = "?", n[16] = "?";
  if (rank >= 0) snprintf(r, sizeof r, "%d", rank);
  if (nranks > 0) snprintf(n, sizeof n, "%d", nranks);
  snprintf(buf, cap, "%s/%s", r, n);
  return buf;
}

/* The unit formatters: 3 significant digits, scaled per value, rounding
 * that carries into the next unit, and nothing that prints a non-zero
 * value as zero. */
#include <math.h>
#include <stdint.h>

#include "testlib.h"
#include "../tui/units.h"

static char b[NT_UNIT_LEN];

static void durations(void) {
  CHECK_STR(nt_fmt_ns(0, b, sizeof b), "0ns");
  CHECK_STR(nt_fmt_ns(850, b, sizeof b), "850ns");
  CHECK_STR(nt_fmt_ns(12400, b, sizeof b), "12.4us");
  CHECK_STR(nt_fmt_ns(3.05e6, b, sizeof b), "3.05ms");
  CHECK_STR(nt_fmt_ns(1.2e9, b, sizeof b), "1.20s");
  CHECK_STR(nt_fmt_ns(999, b, sizeof b), "999ns");
  CHECK_STR(nt_fmt_ns(999.4, b, sizeof b), "999ns");
  CHECK_STR(nt_fmt_ns(999.5, b, sizeof b), "1.00us"); /* rounds into the next unit */
  CHECK_STR(nt_fmt_ns(999.5e3, b, sizeof b), "1.00ms");
  CHECK_STR(nt_fmt_ns(999.5e6, b, sizeof b), "1.00s");
  CHECK_STR(nt_fmt_ns(9.995e3, b, sizeof b), "10.0us");
  CHECK_STR(nt_fmt_ns(99.95e3, b, sizeof b), "100us");
  CHECK_STR(nt_fmt_ns(1000, b, sizeof b), "1.00us");
  CHECK_STR(nt_fmt_ns(3600e9, b, sizeof b), "3600s");
  CHECK_STR(nt_fmt_ns((double)UINT64_MAX, b, sizeof b), "18446744074s");
  CHECK_STR(nt_fmt_ns(0.25, b, sizeof b), "0.250ns"); /* small, not zero */
  CHECK_STR(nt_fmt_ns(1e-9, b, sizeof b), "<0.001ns");
  CHECK_STR(nt_fmt_ns(-1, b, sizeof b), "-");
  CHECK_STR(nt_fmt_ns(NAN, b, sizeof b), "-");
  CHECK_STR(nt_fmt_ns(INFINITY, b, sizeof b), ">1e15s");
}

static void sizes(void) {
  CHECK_STR(nt_fmt_size(0, b, sizeof b), "0B");
  CHECK_STR(nt_fmt_size(1, b, sizeof b), "1B");
  CHECK_STR(nt_fmt_size(512, b, sizeof b), "512B");
  CHECK_STR(nt_fmt_size(1023, b, sizeof b), "1023B");
  CHECK_STR(nt_fmt_size(1023.5, b, sizeof b), "1.00KiB");
  CHECK_STR(nt_fmt_size(1024, b, sizeof b), "1.00KiB");
  CHECK_STR(nt_fmt_size(1536, b, sizeof b), "1.50KiB");
  CHECK_STR(nt_fmt_size(1048576.0 * 12.34, b, sizeof b), "12.3MiB");
  CHECK_STR(nt_fmt_size(1073741824.0 * 3, b, sizeof b), "3.00GiB");
  CHECK_STR(nt_fmt_size((double)UINT64_MAX, b, sizeof b), "16.0EiB");
  CHECK_STR(nt_fmt_size(-5, b, sizeof b), "-");
  CHECK_STR(nt_fmt_size(NAN, b, sizeof b), "-");
}

static void rates(void) {
  CHECK_STR(nt_fmt_rate(0, b, sizeof b), "0B/s");
  CHECK_STR(nt_fmt_rate(850, b, sizeof b), "850B/s");
  CHECK_STR(nt_fmt_rate(999.5, b, sizeof b), "1.00KB/s");
  CHECK_STR(nt_fmt_rate(12.4e3, b, sizeof b), "12.4KB/s");
  CHECK_STR(nt_fmt_rate(1.2e9, b, sizeof b), "1.20GB/s");
  CHECK_STR(nt_fmt_rate(245.6e9, b, sizeof b), "246GB/s");
  CHECK_STR(nt_fmt_rate(0.004, b, sizeof b), "0.004B/s"); /* never "0.00" */
  CHECK_STR(nt_fmt_rate((double)UINT64_MAX, b, sizeof b), "18.4EB/s");
  CHECK_STR(nt_fmt_rate(-1, b, sizeof b), "-");
}

static void small_buffers_are_not_overrun(void) {
  char tiny[4];
  CHECK_STR(nt_fmt_rate(1.2e9, tiny, sizeof tiny), "1.2");
  CHECK(nt_fmt_ns(5, tiny, 0) == tiny);
}

int main(void) {
  TEST_RUN(durations);
  TEST_RUN(sizes);
  TEST_RUN(rates);
  TEST_RUN(small_buffers_are_not_overrun);
  return TEST_DONE();
}

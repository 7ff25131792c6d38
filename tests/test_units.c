/* The unit formatters: 3 significant digits, scaled per value, rounding
 * that carries into the next unit, and nothing that prints a non-zero
 * value as zero. */
#include <math.h>
#include <stdint.h>

#include "testlib.h"
#include "../monitor/core/units.h"

typedef struct {
  double v;
  const char *want;
} want;

/* Every case of a table; the first that differs fails the test. */
#define CHECK_TABLE(fn, table)                                                                     \
  do {                                                                                             \
    char b[NT_UNIT_LEN];                                                                           \
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)                                    \
      CHECK_STR(fn(table[i].v, b, sizeof b), table[i].want);                                       \
  } while (0)

static void durations(void) {
  static const want t[] = {
      {0, "0ns"},
      {850, "850ns"},
      {12400, "12.4us"},
      {3.05e6, "3.05ms"},
      {1.2e9, "1.20s"},
      {999, "999ns"},
      {999.4, "999ns"},
      {999.5, "1.00us"}, /* rounds into the next unit */
      {999.5e3, "1.00ms"},
      {999.5e6, "1.00s"},
      {9.995e3, "10.0us"},
      {99.95e3, "100us"},
      {1000, "1.00us"},
      {3600e9, "3600s"},
      {(double)UINT64_MAX, "18446744074s"},
      {0.25, "0.250ns"}, /* small, not zero */
      {1e-9, "<0.001ns"},
      {-1, "-"},
      {NAN, "?"},
      {INFINITY, ">1e15s"},
  };
  CHECK_TABLE(nt_fmt_ns, t);
}

static void sizes(void) {
  static const want t[] = {
      {0, "0B"},
      {1, "1B"},
      {512, "512B"},
      {1023, "1023B"},
      {1023.5, "1.00KiB"},
      {1024, "1.00KiB"},
      {1536, "1.50KiB"},
      {1048576.0 * 12.34, "12.3MiB"},
      {1073741824.0 * 3, "3.00GiB"},
      {(double)UINT64_MAX, "16.0EiB"},
      {-5, "-"},
      {NAN, "?"},
  };
  CHECK_TABLE(nt_fmt_size, t);
}

static void rates(void) {
  static const want t[] = {
      {0, "0B/s"},         {850, "850B/s"},
      {999.5, "1.00KB/s"}, {12.4e3, "12.4KB/s"},
      {1.2e9, "1.20GB/s"}, {245.6e9, "246GB/s"},
      {0.004, "0.004B/s"}, /* never "0.00" */ {(double)UINT64_MAX, "18.4EB/s"},
      {-1, "-"},           {NAN, "?"}, /* a bandwidth that cannot be computed is unknown, never 0 */
  };
  CHECK_TABLE(nt_fmt_rate, t);
}

/* NCCL 2.26 gives no rank count: "3/?", never "3/0". */
static void ranks_with_an_unknown_count(void) {
  char b[32];
  CHECK_STR(nt_fmt_rank(3, 8, b, sizeof b), "3/8");
  CHECK_STR(nt_fmt_rank(3, 0, b, sizeof b), "3/?");
  CHECK_STR(nt_fmt_rank(-1, 4, b, sizeof b), "?/4");
  CHECK_STR(nt_fmt_rank(0, -1, b, sizeof b), "0/?");
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
  TEST_RUN(ranks_with_an_unknown_count);
  TEST_RUN(small_buffers_are_not_overrun);
  return TEST_DONE();
}

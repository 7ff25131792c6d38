/* A tiny test harness: each test binary calls TEST_RUN for its cases and ends
 * with TEST_DONE(), which prints "N passed, N failed" and sets the exit code.
 * A case fails on its first failed CHECK; the message names file and line. */
#ifndef NCCLTOP_TESTLIB_H
#define NCCLTOP_TESTLIB_H

#include <stdio.h>
#include <string.h>

static int tl_passed, tl_failed, tl_case_failed;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "    %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                 \
      tl_case_failed = 1;                                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
  do {                                                                                             \
    unsigned long long tl_a = (unsigned long long)(a), tl_b = (unsigned long long)(b);             \
    if (tl_a != tl_b) {                                                                            \
      fprintf(stderr, "    %s:%d: %s == %llu, expected %s == %llu\n", __FILE__, __LINE__, #a,      \
              tl_a, #b, tl_b);                                                                     \
      tl_case_failed = 1;                                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

#define CHECK_STR(a, b)                                                                            \
  do {                                                                                             \
    const char *tl_a = (a), *tl_b = (b);                                                           \
    if (!tl_a || !tl_b || strcmp(tl_a, tl_b) != 0) {                                               \
      fprintf(stderr, "    %s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,        \
              tl_a ? tl_a : "(null)", tl_b ? tl_b : "(null)");                                     \
      tl_case_failed = 1;                                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

#define TEST_RUN(fn)                                                                               \
  do {                                                                                             \
    tl_case_failed = 0;                                                                            \
    fn();                                                                                          \
    if (tl_case_failed) {                                                                          \
      tl_failed++;                                                                                 \
      fprintf(stderr, "FAIL %s\n", #fn);                                                           \
    } else {                                                                                       \
      tl_passed++;                                                                                 \
      fprintf(stderr, "ok   %s\n", #fn);                                                           \
    }                                                                                              \
  } while (0)

#define TEST_SKIP(fn, why) fprintf(stderr, "skip %s: %s\n", #fn, why)

#define TEST_DONE() (printf("%d passed, %d failed\n", tl_passed, tl_failed), tl_failed ? 1 : 0)

#endif

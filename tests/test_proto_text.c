/* Text that reaches a terminal and the words the protocol uses:
 * nt_sanitize (every byte a publisher sends is escaped before display) and
 * the names and parsers of proto/names.c (proxy states, step waits, and the
 * 1.1 operation enums with NCCL's own spellings). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

/* ---------------------------------------------------------------------- */
/* Sanitizing                                                              */

static void sanitize_escapes_controls_and_invalid_utf8(void) {
  char out[64];
  static const struct {
    const char *in;
    size_t len;
    const char *out;
  } cases[] = {
      {"a\x1b[31mb", 7, "a\\x1B[31mb"},                /* ESC: a colour CSI */
      {"\x1b]0;title\x07", 10, "\\x1B]0;title\\x07"},  /* OSC set-title, BEL */
      {"tab\there\r\n", 10, "tab\\x09here\\x0D\\x0A"}, /* C0 */
      {"\x7f", 1, "\\x7F"},                            /* DEL */
      {"\x9b"
       "2J",
       3, "\\x9B2J"}, /* a raw 8-bit CSI byte */
      {"\xc2\x9b"
       "2J",
       4, "\\xC2\\x9B2J"},                                             /* C1 CSI as UTF-8 */
      {"\xc2\x80\xc2\x9f\xc2\xa0", 6, "\\xC2\\x80\\xC2\\x9F\xc2\xa0"}, /* C1 ends at U+009F */
      {"caf\xc3\xa9", 5, "caf\xc3\xa9"},                               /* é kept */
      {"\xe4\xb8\xad", 3, "\xe4\xb8\xad"},                             /* CJK kept */
      {"\xf0\x9f\x98\x80!", 5, "\xf0\x9f\x98\x80!"},                   /* emoji kept */
      {"\xc0\xaf", 2, "\\xC0\\xAF"},                                   /* overlong '/' */
      {"\xe0\x80\xaf", 3, "\\xE0\\x80\\xAF"},                          /* overlong, 3 bytes */
      {"\xed\xa0\x80", 3, "\\xED\\xA0\\x80"},                          /* a surrogate */
      {"\xf4\x90\x80\x80", 4, "\\xF4\\x90\\x80\\x80"},                 /* above U+10FFFF */
      {"\xff\xfe", 2, "\\xFF\\xFE"},                                   /* never UTF-8 */
      {"\x80", 1, "\\x80"},                                            /* stray continuation */
      {"\xe2\x82", 2, "\\xE2\\x82"},                                   /* truncated at the end */
      {"\xe2\x82"
       "A",
       3, "\\xE2\\x82A"},                /* interrupted */
      {"\xe2\x82\xac", 2, "\\xE2\\x82"}, /* srclen cuts the sequence */
      {"ab\0\x1b", 4, "ab"},             /* a NUL ends the text */
      {"a\xe2\x80\xae"
       "b",
       5, "a\\xE2\\x80\\xAEb"}, /* RLO: reorders the line */
      {"\xe2\x80\xaa\xe2\x80\xad", 6, "\\xE2\\x80\\xAA\\xE2\\x80\\xAD"}, /* LRE, LRO */
      {"\xe2\x81\xa6\xe2\x81\xa9", 6, "\\xE2\\x81\\xA6\\xE2\\x81\\xA9"}, /* LRI, PDI */
      {"\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5", 9,
       "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5"}, /* neighbours kept */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nt_sanitize(cases[i].in, cases[i].len, out, sizeof out);
    if (strcmp(out, cases[i].out) != 0) fprintf(stderr, "    case %zu\n", i);
    CHECK_STR(out, cases[i].out);
  }
  CHECK_STR(nt_sanitize(NULL, 3, out, sizeof out), "");
}

static void sanitize_never_splits_at_the_cap(void) {
  char out[16];
  CHECK_STR(nt_sanitize("abc\x1b", 4, out, 8), "abc\\x1B"); /* 7 + NUL fits */
  CHECK_STR(nt_sanitize("abc\x1b", 4, out, 7), "abc");      /* never a split escape */
  CHECK_STR(nt_sanitize("ab\xc3\xa9", 4, out, 5), "ab\xc3\xa9");
  CHECK_STR(nt_sanitize("ab\xc3\xa9", 4, out, 4), "ab"); /* never a split character */
  CHECK_STR(nt_sanitize("\xf0\x9f\x98\x80", 4, out, 5), "\xf0\x9f\x98\x80");
  CHECK_STR(nt_sanitize("\xf0\x9f\x98\x80", 4, out, 4), "");
  CHECK_STR(nt_sanitize("abc", 3, out, 1), "");
  CHECK_STR(nt_sanitize("abcdef", 6, out, 4), "abc");
  out[0] = 'x';
  CHECK(nt_sanitize("abc", 3, out, 0) == out && out[0] == 'x'); /* cap 0: untouched */
  /* Exactly srclen bytes are read. */
  char *exact = malloc(3);
  CHECK(exact != NULL);
  memcpy(exact, "a\xe2\x82", 3);
  nt_sanitize(exact, 3, out, sizeof out);
  free(exact);
  CHECK_STR(out, "a\\xE2\\x82");
}

/* An independent check of the output: well-formed UTF-8 with no C0, DEL or
 * C1 code point. */
static bool terminal_safe(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n;
    if (*p < 0x80)
      cp = *p, n = 1;
    else if ((*p & 0xE0) == 0xC0)
      cp = *p & 0x1F, n = 2;
    else if ((*p & 0xF0) == 0xE0)
      cp = *p & 0x0F, n = 3;
    else if ((*p & 0xF8) == 0xF0)
      cp = *p & 0x07, n = 4;
    else
      return false;
    for (int i = 1; i < n; i++) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (p[i] & 0x3F);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return false;
    p += n;
  }
  return true;
}

static void sanitized_output_is_always_terminal_safe(void) {
  char out[32];
  unsigned char in[4];
  /* Every two-byte input, at every small cap. */
  for (unsigned v = 0; v < 0x10000; v++) {
    in[0] = (unsigned char)(v >> 8);
    in[1] = (unsigned char)v;
    for (size_t cap = 1; cap <= 10; cap += 3) {
      nt_sanitize((const char *)in, 2, out, cap);
      CHECK(strlen(out) < cap);
      CHECK(terminal_safe(out));
    }
  }
  /* Pseudo-random 3- and 4-byte inputs biased towards multi-byte leads. */
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < 200000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    for (int i = 0; i < 4; i++) in[i] = (unsigned char)(x >> (8 * i));
    in[0] |= 0xC0;
    if (k & 1) in[1] = (unsigned char)(0x80 | (in[1] & 0x3F));
    nt_sanitize((const char *)in, 3 + (size_t)(k & 2) / 2, out, sizeof out);
    CHECK(terminal_safe(out));
  }
}

static void names_are_the_documented_ones(void) {
  static const char *const proxy[] = {"idle", "active", "sleep", "wakeup", "append"};
  for (int i = 0; i < NT_PROXY_NSTATES; i++) CHECK_STR(nt_proxy_state_name(i), proxy[i]);
  CHECK_STR(nt_proxy_state_name(NT_PROXY_NSTATES), "unknown");
  CHECK_STR(nt_proxy_state_name(NT_PROXY_UNKNOWN), "unknown");
  CHECK_STR(nt_proxy_state_name(-1), "unknown");
  static const char *const wait[] = {"send_gpu_wait", "send_peer_wait",  "send_net_wait",
                                     "recv_net_wait", "recv_flush_wait", "recv_gpu_wait"};
  for (int i = 0; i < NT_WAIT_COUNT; i++) CHECK_STR(nt_wait_name(i), wait[i]);
  CHECK_STR(nt_wait_name(NT_WAIT_COUNT), "none");
  CHECK_STR(nt_wait_name(NT_WAIT_NONE), "none");
  CHECK_STR(nt_wait_name(-3), "none");
  CHECK_STR(nt_wait_name(nt_dir_wait(NT_DIR_SEND, 2)), "send_net_wait");
  CHECK_STR(nt_wait_name(nt_dir_wait(NT_DIR_RECV, 1)), "recv_flush_wait");
}

/* The 1.1 enums: wire value -> name, as PROTOCOL.md lists them. */
static void operation_names_are_the_documented_ones(void) {
  static const char *const func[NT_FUNC_COUNT] = {
      "other",    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
      "AlltoAll", "Gather",    "Scatter",   "Send",          "Recv",      "SendRecv"};
  for (int i = 0; i < NT_FUNC_COUNT; i++) CHECK_STR(nt_func_name(i), func[i]);
  CHECK(NT_FUNC_COUNT == 12 && NT_FUNC_ALLREDUCE == 1 && NT_FUNC_SENDRECV == 11);
  CHECK_STR(nt_func_name(NT_FUNC_COUNT), "other");
  CHECK_STR(nt_func_name(-1), "other");
  static const char *const algo[NT_ALGO_COUNT] = {"none",           "TREE",          "RING",
                                                  "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                                  "NVLS_TREE",      "PAT",           "other"};
  for (int i = 0; i < NT_ALGO_COUNT; i++) CHECK_STR(nt_algo_name(i), algo[i]);
  CHECK(NT_ALGO_COUNT == 9 && NT_ALGO_RING == 2 && NT_ALGO_OTHER == 8);
  CHECK_STR(nt_algo_name(NT_ALGO_COUNT), "other");
  CHECK_STR(nt_algo_name(-1), "other");
  static const char *const proto[NT_PR_COUNT] = {"none", "LL", "LL128", "SIMPLE", "other"};
  for (int i = 0; i < NT_PR_COUNT; i++) CHECK_STR(nt_proto_name(i), proto[i]);
  CHECK(NT_PR_COUNT == 5 && NT_PR_SIMPLE == 3);
  CHECK_STR(nt_proto_name(NT_PR_COUNT), "other");
  static const char *const dtype[NT_DT_COUNT] = {
      "unknown",      "ncclInt8",       "ncclUint8",     "ncclInt32",   "ncclUint32",
      "ncclInt64",    "ncclUint64",     "ncclFloat16",   "ncclFloat32", "ncclFloat64",
      "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  for (int i = 0; i < NT_DT_COUNT; i++) CHECK_STR(nt_dtype_name(i), dtype[i]);
  CHECK(NT_DT_COUNT == 13 && NT_DT_FLOAT32 == 8 && NT_DT_FP8E5M2 == 12);
  CHECK_STR(nt_dtype_name(NT_DT_COUNT), "unknown");
  CHECK_STR(nt_dtype_name(-1), "unknown");
  static const char *const state[NT_OPS_COUNT] = {"enqueued", "in_flight", "done"};
  for (int i = 0; i < NT_OPS_COUNT; i++) CHECK_STR(nt_op_state_name(i), state[i]);
  CHECK_STR(nt_op_state_name(NT_OPS_COUNT), "unknown");
  CHECK_STR(nt_op_state_name(-1), "unknown");
  static const char *const timing[NT_TIMING_COUNT] = {"none", "host", "gpu"};
  for (int i = 0; i < NT_TIMING_COUNT; i++) CHECK_STR(nt_timing_name(i), timing[i]);
  CHECK_STR(nt_timing_name(NT_TIMING_COUNT), "none");
  CHECK_STR(nt_timing_name(-1), "none");
  CHECK(NT_OP_COLL == 0 && NT_OP_P2P == 1);
  CHECK(NT_NET_IB_QP == 1 && NT_NET_SOCKET == 2);
}

/* The parsers take exactly NCCL's spellings: every name parses back to its
 * value; NULL, "", other case and the fallback words themselves give the
 * fallback. */
static void operation_name_parsers_take_nccl_spellings(void) {
  CHECK(nt_func_from_name("AllReduce") == NT_FUNC_ALLREDUCE);
  CHECK(nt_func_from_name("SendRecv") == NT_FUNC_SENDRECV);
  CHECK(nt_algo_from_name("RING") == NT_ALGO_RING);
  CHECK(nt_algo_from_name("NVLS_TREE") == NT_ALGO_NVLS_TREE);
  CHECK(nt_proto_from_name("LL128") == NT_PR_LL128);
  CHECK(nt_dtype_from_name("ncclBfloat16") == NT_DT_BFLOAT16);
  for (int i = 1; i < NT_FUNC_COUNT; i++) CHECK(nt_func_from_name(nt_func_name(i)) == i);
  for (int i = 1; i < NT_ALGO_OTHER; i++) CHECK(nt_algo_from_name(nt_algo_name(i)) == i);
  for (int i = 1; i < NT_PR_OTHER; i++) CHECK(nt_proto_from_name(nt_proto_name(i)) == i);
  for (int i = 1; i < NT_DT_COUNT; i++) CHECK(nt_dtype_from_name(nt_dtype_name(i)) == i);
  /* NULL: not given (p2p operations carry no algorithm or protocol). */
  CHECK(nt_func_from_name(NULL) == NT_FUNC_OTHER);
  CHECK(nt_algo_from_name(NULL) == NT_ALGO_NONE);
  CHECK(nt_proto_from_name(NULL) == NT_PR_NONE);
  CHECK(nt_dtype_from_name(NULL) == NT_DT_UNKNOWN);
  /* Unknown strings: counted as other / unknown, never lost. */
  static const char *const unknown[] = {"",         "allreduce",  "AllReduce ",
                                        "AllReduc", "AllReduceX", "other",
                                        "none",     "unknown",    "Invalid"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    CHECK(nt_func_from_name(unknown[i]) == NT_FUNC_OTHER);
    CHECK(nt_algo_from_name(unknown[i]) == NT_ALGO_OTHER);
    CHECK(nt_proto_from_name(unknown[i]) == NT_PR_OTHER);
    CHECK(nt_dtype_from_name(unknown[i]) == NT_DT_UNKNOWN);
  }
  CHECK(nt_algo_from_name("Ring") == NT_ALGO_OTHER); /* NCCL_ALGO's spelling, not the profiler's */
  CHECK(nt_proto_from_name("Simple") == NT_PR_OTHER);
  CHECK(nt_func_from_name("PutSignal") == NT_FUNC_OTHER); /* newer NCCL functions */
  CHECK(nt_dtype_from_name("ncclFloat") == NT_DT_UNKNOWN);
}

static void datatype_sizes_and_size_buckets(void) {
  static const int size[NT_DT_COUNT] = {0, 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int i = 0; i < NT_DT_COUNT; i++) CHECK(nt_dtype_size(i) == size[i]);
  CHECK(nt_dtype_size(NT_DT_COUNT) == 0);
  CHECK(nt_dtype_size(-1) == 0);
  CHECK(nt_dtype_size(255) == 0);
  /* floor(log2(bytes)); 0 and 1 byte share bucket 0. */
  CHECK(nt_size_bucket(0) == 0);
  CHECK(nt_size_bucket(1) == 0);
  CHECK(nt_size_bucket(2) == 1);
  CHECK(nt_size_bucket(3) == 1);
  CHECK(nt_size_bucket(4) == 2);
  CHECK(nt_size_bucket(1023) == 9);
  CHECK(nt_size_bucket(1024) == 10);
  CHECK(nt_size_bucket(1025) == 10);
  CHECK(nt_size_bucket(1ull << 63) == 63);
  CHECK(nt_size_bucket(UINT64_MAX) == 63);
  for (int k = 1; k < 64; k++) {
    CHECK(nt_size_bucket(1ull << k) == k);
    CHECK(nt_size_bucket((1ull << k) - 1) == k - 1);
  }
}

int main(void) {
  TEST_RUN(sanitize_escapes_controls_and_invalid_utf8);
  TEST_RUN(sanitize_never_splits_at_the_cap);
  TEST_RUN(sanitized_output_is_always_terminal_safe);
  TEST_RUN(names_are_the_documented_ones);
  TEST_RUN(operation_names_are_the_documented_ones);
  TEST_RUN(operation_name_parsers_take_nccl_spellings);
  TEST_RUN(datatype_sizes_and_size_buckets);
  return TEST_DONE();
}

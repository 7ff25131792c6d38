/* The JSON metadata messages (PROTOCOL.md, "JSON messages"): hello and
 * communicator round trips at every limit, encoders that never overrun a
 * short buffer, and the strict decoders against hostile fields and
 * malformed documents. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

/* "MAJOR.MINOR" of this version, as the encoders write it. */
#define STR_(x)      #x
#define STR(x)       STR_(x)
#define VERSION      STR(NT_PROTO_MAJOR) "." STR(NT_PROTO_MINOR)
#define VERSION_JSON "\"v\":\"" VERSION "\""

#define SAME(f)                                                                                    \
  if (a->f != b->f) {                                                                              \
    fprintf(stderr, "    %s differs (row %u)\n", #f, i);                                           \
    return false;                                                                                  \
  }

/* ---------------------------------------------------------------------- */
/* JSON metadata                                                           */

static nt_hello hello, back;

static bool same_hello(const nt_hello *a, const nt_hello *b) {
  uint32_t i = 0;
  SAME(pid) SAME(abi_version) SAME(start_wall_ns) SAME(nenv);
  if (strcmp(a->host, b->host) || strcmp(a->nccl_version, b->nccl_version) ||
      strcmp(a->plugin_version, b->plugin_version) || strcmp(a->clock, b->clock)) {
    fprintf(stderr, "    a string differs\n");
    return false;
  }
  for (i = 0; i < a->nenv; i++)
    if (strcmp(a->env[i].name, b->env[i].name) || strcmp(a->env[i].value, b->env[i].value)) {
      fprintf(stderr, "    env %u differs\n", i);
      return false;
    }
  return true;
}

static void hello_round_trip_keeps_every_field(void) {
  static char json[NT_MAX_JSON_BYTES];
  char err[256] = "";
  memset(&hello, 0, sizeof hello);
  hello.major = 9; /* ignored: the encoder writes the version it speaks */
  snprintf(hello.host, sizeof hello.host, "node\"quote\\back");
  hello.pid = 77;
  snprintf(hello.nccl_version, sizeof hello.nccl_version, "2.28.9");
  snprintf(hello.plugin_version, sizeof hello.plugin_version, "0.1.0");
  snprintf(hello.clock, sizeof hello.clock, "tsc");
  hello.abi_version = 255;
  hello.start_wall_ns = 9007199254740993ull; /* 2^53 + 1: exact only as a string */
  hello.nenv = 3;
  snprintf(hello.env[0].name, sizeof hello.env[0].name, "NCCL_ALGO");
  /* Controls, DEL, a C1, é, an emoji and an invalid byte. */
  snprintf(hello.env[0].value, sizeof hello.env[0].value,
           "Ring\ttab\x1b[31m\x7f\xc2\x85\xc3\xa9\xf0\x9f\x98\x80\xff");
  snprintf(hello.env[1].name, sizeof hello.env[1].name, "NCCL_PROTO");
  snprintf(hello.env[2].name, sizeof hello.env[2].name, "NCCL_\"odd\\name");
  size_t n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(n > 0 && strlen(json) == n);
  static const char head[] = "{" VERSION_JSON ",\"type\":\"hello\",";
  CHECK(strncmp(json, head, strlen(head)) == 0);
  CHECK(strstr(json, "\"start_wall_ns\":\"9007199254740993\"") != NULL);
  CHECK(strstr(json, "\\u0009tab\\u001b[31m\\u007f\\u0085") != NULL);
  for (size_t i = 0; i < n; i++) CHECK((unsigned char)json[i] >= 0x20 && json[i] != 0x7f);
  int rc = nt_hello_decode(json, n, &back, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(back.major == NT_PROTO_MAJOR && back.minor == NT_PROTO_MINOR);
  CHECK(same_hello(&hello, &back));
  hello.start_wall_ns = UINT64_MAX;
  n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(nt_hello_decode(json, n, &back, err, sizeof err) == 0);
  CHECK_EQ_U64(back.start_wall_ns, UINT64_MAX);
}

/* "clock" came after 1.4's other keys: an older plugin leaves it out, and a
 * reader must take that as unknown, not as an error. */
static void hello_clock_is_optional_and_bounded(void) {
  char err[256] = "";
  static const char base[] = "{\"v\":\"1.4\",\"type\":\"hello\",\"host\":\"h\",\"pid\":5,"
                             "\"abi\":5,\"start_wall_ns\":\"1\"";
  char json[512];
  snprintf(json, sizeof json, "%s}", base);
  CHECK(nt_hello_decode(json, strlen(json), &back, err, sizeof err) == 0);
  CHECK_STR(back.clock, "");
  snprintf(json, sizeof json, "%s,\"clock\":\"monotonic\"}", base);
  CHECK(nt_hello_decode(json, strlen(json), &back, err, sizeof err) == 0);
  CHECK_STR(back.clock, "monotonic");
  snprintf(json, sizeof json, "%s,\"clock\":\"0123456789abcdef\"}", base);
  CHECK(nt_hello_decode(json, strlen(json), &back, err, sizeof err) != 0);
  CHECK_STR(err, "hello: field \"clock\" is 16 bytes, limit 15");
  snprintf(json, sizeof json, "%s,\"clock\":3}", base);
  CHECK(nt_hello_decode(json, strlen(json), &back, err, sizeof err) != 0);
  CHECK_STR(err, "hello: field \"clock\" is not a string");
  memset(&hello, 0, sizeof hello);
  snprintf(hello.host, sizeof hello.host, "h");
  hello.pid = 1;
  CHECK(nt_hello_encode(&hello, json, sizeof json) > 0);
  CHECK(strstr(json, "clock") == NULL); /* unknown: left out, as an older plugin does */
}

static void hello_at_every_limit_round_trips(void) {
  static char json[NT_MAX_JSON_BYTES];
  char err[256] = "";
  memset(&hello, 0, sizeof hello);
  memset(hello.host, 'h', NT_MAX_HOST);
  memset(hello.nccl_version, '9', sizeof hello.nccl_version - 1);
  memset(hello.plugin_version, 'p', sizeof hello.plugin_version - 1);
  hello.pid = NT_PID_MAX;
  hello.nenv = NT_MAX_ENV;
  for (int i = 0; i < NT_MAX_ENV; i++) {
    memset(hello.env[i].name, 'N', NT_MAX_ENV_NAME); /* 64 bytes, distinct */
    hello.env[i].name[1] = (char)('0' + i / 100);
    hello.env[i].name[2] = (char)('0' + i / 10 % 10);
    hello.env[i].name[3] = (char)('0' + i % 10);
    memset(hello.env[i].value, 'v', NT_MAX_ENV_VALUE);
  }
  size_t n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(n > 0 && n <= NT_MAX_JSON_BYTES);
  int rc = nt_hello_decode(json, n, &back, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(same_hello(&hello, &back));
}

/* Every buffer shorter than the message plus its NUL gives 0, and nothing
 * is written past the buffer (ASan watches the exact-size copies). */
static void json_encoders_return_zero_when_the_buffer_is_short(void) {
  static char json[8192];
  memset(&hello, 0, sizeof hello);
  snprintf(hello.host, sizeof hello.host, "h\x01");
  hello.nenv = 1;
  snprintf(hello.env[0].name, sizeof hello.env[0].name, "NCCL_X");
  snprintf(hello.env[0].value, sizeof hello.env[0].value, "\x1b\\");
  nt_comm_info c = {.pid = 5, .comm_hash = 1, .rank = 0, .nranks = 2, .nnodes = 1};
  snprintf(c.name, sizeof c.name, "q\"");
  for (int which = 0; which < 2; which++) {
    size_t n =
        which ? nt_comm_encode(&c, json, sizeof json) : nt_hello_encode(&hello, json, sizeof json);
    CHECK(n > 0);
    for (size_t cap = 0; cap <= n + 1; cap++) {
      char *b = malloc(cap ? cap : 1);
      CHECK(b != NULL);
      size_t got = which ? nt_comm_encode(&c, b, cap) : nt_hello_encode(&hello, b, cap);
      bool ok = cap <= n ? got == 0 : got == n && memcmp(b, json, n + 1) == 0;
      free(b);
      if (!ok) fprintf(stderr, "    cap %zu of %zu: got %zu\n", cap, n, got);
      CHECK(ok);
    }
  }
}

static void comm_round_trip_keeps_every_field(void) {
  char json[1024], err[256] = "";
  static const uint64_t hashes[] = {0, 0xfedcba9876543210ull, UINT64_MAX};
  for (size_t i = 0; i < 3; i++) {
    nt_comm_info c = {
        .pid = NT_PID_MAX, .comm_hash = hashes[i], .rank = -1, .nranks = 1 << 24, .nnodes = 0};
    memset(c.name, 'n', NT_MAX_NAME);
    c.name[0] = '"';
    c.name[1] = '\x1b';
    nt_comm_info cb;
    size_t n = nt_comm_encode(&c, json, sizeof json);
    CHECK(n > 0);
    static const char head[] = "{" VERSION_JSON ",\"type\":\"comm\",";
    CHECK(strncmp(json, head, strlen(head)) == 0);
    int rc = nt_comm_decode(json, n, &cb, err, sizeof err);
    if (rc) fprintf(stderr, "    %s\n", err);
    CHECK(rc == 0);
    CHECK_EQ_U64(cb.comm_hash, hashes[i]);
    CHECK_EQ_U64(cb.pid, NT_PID_MAX);
    CHECK(cb.rank == -1 && cb.nranks == 1 << 24 && cb.nnodes == 0);
    CHECK_STR(cb.name, c.name);
  }
  const char *ok = "{\"v\":\"1.3\",\"type\":\"comm\",\"pid\":1,\"hash\":\"00000000000000FF\","
                   "\"rank\":0,\"nranks\":1,\"nnodes\":1,\"future\":[1,{}]}\r\n\t ";
  nt_comm_info cb;
  CHECK(nt_comm_decode(ok, strlen(ok), &cb, err, sizeof err) == 0);
  CHECK_EQ_U64(cb.comm_hash, 0xff);
  CHECK_STR(cb.name, ""); /* optional */
}

/* JSON with the default fields of a message, one of them replaced by `raw`
 * (a JSON value) or left out (raw NULL); a key that is not a default one is
 * added. */
typedef struct {
  const char *key, *raw;
} field;

static const field hello_fields[] = {
    {"v", "\"" VERSION "\""},
    {"type", "\"hello\""},
    {"host", "\"h\""},
    {"pid", "5"},
    {"nccl_version", "\"2.28.9\""},
    {"plugin_version", "\"0.1\""},
    {"abi", "5"},
    {"start_wall_ns", "\"1\""},
    {"env", "{\"NCCL_ALGO\":\"Ring\"}"},
};
static const field comm_fields[] = {
    {"v", "\"" VERSION "\""},
    {"type", "\"comm\""},
    {"pid", "1"},
    {"hash", "\"00000000000000ff\""},
    {"name", "\"x\""},
    {"rank", "0"},
    {"nranks", "2"},
    {"nnodes", "1"},
};

static char jbuf[NT_MAX_JSON_BYTES + 64];

static size_t json_with(const field *f, size_t nf, const char *key, const char *raw) {
  size_t o = 0;
  bool found = false;
  jbuf[o++] = '{';
  for (size_t i = 0; i <= nf; i++) {
    const char *k = i < nf ? f[i].key : key, *v = i < nf ? f[i].raw : raw;
    if (i == nf && (found || !key)) break;
    if (i < nf && key && strcmp(k, key) == 0) {
      found = true;
      v = raw;
    }
    if (!v) continue;
    o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "%s\"%s\":%s", o > 1 ? "," : "", k, v);
  }
  jbuf[o++] = '}';
  jbuf[o] = '\0';
  return o;
}

typedef struct {
  const char *key, *raw, *err;
} hostile;

static void check_hostile(bool is_hello, const hostile *c) {
  char err[256] = "";
  size_t n = json_with(is_hello ? hello_fields : comm_fields,
                       is_hello ? sizeof hello_fields / sizeof hello_fields[0]
                                : sizeof comm_fields / sizeof comm_fields[0],
                       c->key, c->raw);
  nt_comm_info ci;
  int rc = is_hello ? nt_hello_decode(jbuf, n, &hello, err, sizeof err)
                    : nt_comm_decode(jbuf, n, &ci, err, sizeof err);
  if (rc != -1 || !strstr(err, c->err))
    fprintf(stderr, "    %s: rc %d, error \"%s\", expected \"%s\"\n", jbuf, rc, err, c->err);
  CHECK(rc == -1 && strstr(err, c->err) != NULL);
}

static void hostile_hello_fields_are_rejected_by_name(void) {
  static char host65[80], ver32[48], name65[100], value257[300];
  snprintf(host65, sizeof host65, "\"%065d\"", 0);
  snprintf(ver32, sizeof ver32, "\"%032d\"", 0);
  snprintf(name65, sizeof name65, "{\"%065d\":\"x\"}", 0);
  snprintf(value257, sizeof value257, "{\"NCCL_X\":\"%0257d\"}", 0);
  const hostile cases[] = {
      {"v", "\"2.0\"", "hello: unsupported protocol major version 2 (this nccltop reads 1)"},
      {"v", "\"1\"", "bad version \"1\""},
      {"v", "\" 1.0\"", "bad version"},
      {"v", "\"+1.0\"", "bad version"},
      {"v", "\"-1.0\"", "bad version"},
      {"v", "\"1.0.1\"", "bad version"},
      {"v", "\"65536.0\"", "bad version"},
      {"v", "\"1.\\u001b\"", "bad version \"1.\\x1B\""}, /* echoed escaped */
      {"v", "1.0", "field \"v\" is not a string"},
      {"v", NULL, "field \"v\" missing"},
      {"type", "\"comm\"", "field \"type\" is not \"hello\""},
      {"type", NULL, "field \"type\" missing"},
      {"host", "1", "field \"host\" is not a string"},
      {"host", NULL, "field \"host\" missing"},
      {"host", host65, "field \"host\" is 65 bytes, limit 64"},
      {"host", "\"a\\u0000b\"", "a string contains \\u0000"},
      {"pid", "\"5\"", "field \"pid\" is not a number"},
      {"pid", "0", "field \"pid\" out of range"},
      {"pid", "-1", "field \"pid\" out of range"},
      {"pid", "2147483648", "field \"pid\" out of range"},
      {"pid", "4194305", "field \"pid\" out of range"}, /* above PID_MAX_LIMIT */
      {"pid", "1e400", "field \"pid\" out of range"},
      {"pid", "1.5", "field \"pid\" is not an integer"},
      {"pid", NULL, "field \"pid\" missing"},
      {"abi", "256", "field \"abi\" out of range"},
      {"abi", "true", "field \"abi\" is not a number"},
      {"nccl_version", ver32, "field \"nccl_version\" is 32 bytes, limit 31"},
      {"plugin_version", "null", "field \"plugin_version\" is not a string"},
      {"start_wall_ns", "123", "field \"start_wall_ns\" is not a string"},
      {"start_wall_ns", "\"\"", "start_wall_ns\" is not a decimal u64"},
      {"start_wall_ns", "\"18446744073709551616\"", "is not a decimal u64"}, /* 2^64 */
      {"start_wall_ns", "\"-1\"", "is not a decimal u64"},
      {"start_wall_ns", "\"+1\"", "is not a decimal u64"},
      {"start_wall_ns", "\" 1\"", "is not a decimal u64"},
      {"start_wall_ns", "\"1e3\"", "is not a decimal u64"},
      {"start_wall_ns", "\"0x10\"", "is not a decimal u64"},
      {"env", "[]", "field \"env\" is not an object"},
      {"env", "{\"NCCL_X\":1}", "env entry 0: value is not a string"},
      {"env", "{\"NCCL_A\":\"1\",\"\":\"x\"}", "env entry 1: empty name"},
      {"env", name65, "env entry 0: name is 65 bytes, limit 64"},
      {"env", value257, "env entry 0: value is 257 bytes, limit 256"},
      {"env", "{\"NCCL_X\":\"a\\u0000\"}", "a string contains \\u0000"},
      {"env", "{\"NCCL_\\u0000X\":\"a\"}", "a string contains \\u0000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_hostile(true, &cases[i]);
    if (tl_case_failed) return;
  }
  /* Keys are case-sensitive. */
  field upper[sizeof hello_fields / sizeof hello_fields[0]];
  memcpy(upper, hello_fields, sizeof upper);
  upper[3].key = "PID";
  char err[256];
  size_t n = json_with(upper, sizeof upper / sizeof upper[0], NULL, NULL);
  CHECK(nt_hello_decode(jbuf, n, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: field \"pid\" missing");
  /* An escaped backslash before "u0000" is text, not a NUL. */
  n = json_with(hello_fields, sizeof hello_fields / sizeof hello_fields[0], "host",
                "\"a\\\\u0000\"");
  CHECK(nt_hello_decode(jbuf, n, &hello, err, sizeof err) == 0);
  CHECK_STR(hello.host, "a\\u0000");
}

static void too_many_environment_variables_are_rejected(void) {
  size_t o = 0;
  o += (size_t)snprintf(jbuf + o, sizeof jbuf - o,
                        "{\"v\":\"1.0\",\"type\":\"hello\",\"host\":\"h\",\"pid\":5,\"abi\":5,"
                        "\"start_wall_ns\":\"1\",\"env\":{");
  for (int i = 0; i <= NT_MAX_ENV; i++)
    o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "%s\"NCCL_%d\":\"x\"", i ? "," : "", i);
  o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "}}");
  char err[256];
  CHECK(nt_hello_decode(jbuf, o, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: env: more than 256 variables");
  CHECK(hello.nenv == 0);
}

static void hostile_comm_fields_are_rejected_by_name(void) {
  static char name65[80];
  snprintf(name65, sizeof name65, "\"%065d\"", 0);
  const hostile cases[] = {
      {"v", "\"3.1\"", "comm: unsupported protocol major version 3 (this nccltop reads 1)"},
      {"type", "\"hello\"", "field \"type\" is not \"comm\""},
      {"pid", "\"1\"", "field \"pid\" is not a number"},
      {"pid", "0", "field \"pid\" out of range"},
      {"pid", "4194305", "field \"pid\" out of range"},
      {"hash", "\"00000000000000f\"", "field \"hash\" is not 16 hex digits"},
      {"hash", "\"000000000000000ff\"", "is not 16 hex digits"},
      {"hash", "\"0x000000000000ff\"", "is not 16 hex digits"},
      {"hash", "\"+00000000000000f\"", "is not 16 hex digits"},
      {"hash", "\" 00000000000000f\"", "is not 16 hex digits"},
      {"hash", "\"00000000000000fg\"", "is not 16 hex digits"},
      {"hash", "255", "field \"hash\" is not a string"},
      {"hash", NULL, "field \"hash\" missing"},
      {"name", name65, "field \"name\" is 65 bytes, limit 64"},
      {"name", "[]", "field \"name\" is not a string"},
      {"rank", "-2", "field \"rank\" out of range"},
      {"nranks", "\"8\"", "field \"nranks\" is not a number"},
      {"nranks", "16777217", "field \"nranks\" out of range"},
      {"nnodes", "0.5", "field \"nnodes\" is not an integer"},
      {"nnodes", NULL, "field \"nnodes\" missing"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_hostile(false, &cases[i]);
    if (tl_case_failed) return;
  }
}

static void malformed_json_documents_are_rejected(void) {
  char err[256];
  nt_comm_info c;
  size_t n = json_with(comm_fields, sizeof comm_fields / sizeof comm_fields[0], NULL, NULL);
  CHECK(nt_comm_decode(jbuf, n, &c, err, sizeof err) == 0);
  static const struct {
    const char *tail, *err;
  } trailing[] = {
      {" x", "comm: trailing bytes after the JSON value"},
      {"{}", "trailing bytes"},
      {"\v", "trailing bytes"}, /* not JSON whitespace */
  };
  for (size_t i = 0; i < 3; i++) {
    memcpy(jbuf + n, trailing[i].tail, strlen(trailing[i].tail) + 1);
    CHECK(nt_comm_decode(jbuf, strlen(jbuf), &c, err, sizeof err) == -1);
    CHECK(strstr(err, trailing[i].err) != NULL);
  }
  /* The length bounds the parse: a prefix is malformed, bytes past len are
   * never read (the copy is exactly len bytes). */
  jbuf[n] = '\0';
  for (size_t len = 0; len < n; len++) {
    char *exact = malloc(len ? len : 1);
    CHECK(exact != NULL);
    memcpy(exact, jbuf, len);
    int rc = nt_comm_decode(exact, len, &c, err, sizeof err);
    free(exact);
    CHECK(rc == -1);
  }
  char *exact = malloc(n);
  CHECK(exact != NULL);
  memcpy(exact, jbuf, n);
  int rc = nt_comm_decode(exact, n, &c, err, sizeof err);
  free(exact);
  CHECK(rc == 0);
  static const struct {
    const char *json, *err;
  } bad[] = {
      {"[1,2,3]", "comm: not a JSON object"},
      {"\"str\"", "comm: not a JSON object"},
      {"", "comm: malformed JSON"},
      {"{\"v\":\"1.0\",", "comm: malformed JSON"},
      {"{\"v\":\"1.0\"\x00}", "comm: contains a NUL byte"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t len = strlen(bad[i].json) + (strstr(bad[i].err, "NUL") ? 2 : 0);
    CHECK(nt_comm_decode(bad[i].json, len, &c, err, sizeof err) == -1);
    CHECK(strstr(err, bad[i].err) != NULL);
  }
  CHECK(nt_comm_decode(NULL, 0, &c, err, sizeof err) == -1);
  /* Over the size limit: refused before parsing. */
  memset(jbuf, ' ', NT_MAX_JSON_BYTES + 1);
  jbuf[0] = '{';
  jbuf[1] = '}';
  CHECK(nt_hello_decode(jbuf, NT_MAX_JSON_BYTES + 1, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: 262145 bytes exceed the limit of 262144");
  /* Deep nesting hits cJSON's nesting limit, not the stack. */
  size_t depth = 5000, o = 0;
  jbuf[o++] = '{';
  memcpy(jbuf + o, "\"a\":", 4);
  o += 4;
  for (size_t i = 0; i < depth; i++) jbuf[o++] = '[';
  for (size_t i = 0; i < depth; i++) jbuf[o++] = ']';
  jbuf[o++] = '}';
  CHECK(nt_hello_decode(jbuf, o, &hello, err, sizeof err) == -1);
  CHECK(strstr(err, "malformed JSON") != NULL);
}

/* A 1.1 reader reads 1.0 metadata (the fields are the same) and a newer
 * minor's, whose unknown keys it ignores; the version is kept as sent. */
static void other_minor_versions_are_accepted(void) {
  static const struct {
    const char *v;
    uint16_t minor;
  } cases[] = {{"\"1.0\"", 0}, {"\"1.1\"", 1}, {"\"1.7\"", 7}, {"\"1.65535\"", 65535}};
  char err[256] = "";
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n =
        json_with(hello_fields, sizeof hello_fields / sizeof hello_fields[0], "v", cases[i].v);
    int rc = nt_hello_decode(jbuf, n, &hello, err, sizeof err);
    if (rc) fprintf(stderr, "    %s: %s\n", jbuf, err);
    CHECK(rc == 0);
    CHECK(hello.major == 1 && hello.minor == cases[i].minor);
    CHECK_STR(hello.host, "h");
    nt_comm_info c;
    n = json_with(comm_fields, sizeof comm_fields / sizeof comm_fields[0], "v", cases[i].v);
    rc = nt_comm_decode(jbuf, n, &c, err, sizeof err);
    if (rc) fprintf(stderr, "    %s: %s\n", jbuf, err);
    CHECK(rc == 0);
    CHECK_EQ_U64(c.comm_hash, 0xff);
  }
  /* A newer minor's keys are ignored. */
  size_t n = json_with(hello_fields, sizeof hello_fields / sizeof hello_fields[0], "phases",
                       "[\"forward\"]");
  CHECK(nt_hello_decode(jbuf, n, &hello, err, sizeof err) == 0);
}

int main(void) {
  TEST_RUN(hello_round_trip_keeps_every_field);
  TEST_RUN(hello_at_every_limit_round_trips);
  TEST_RUN(hello_clock_is_optional_and_bounded);
  TEST_RUN(json_encoders_return_zero_when_the_buffer_is_short);
  TEST_RUN(comm_round_trip_keeps_every_field);
  TEST_RUN(hostile_hello_fields_are_rejected_by_name);
  TEST_RUN(too_many_environment_variables_are_rejected);
  TEST_RUN(hostile_comm_fields_are_rejected_by_name);
  TEST_RUN(malformed_json_documents_are_rejected);
  TEST_RUN(other_minor_versions_are_accepted);
  return TEST_DONE();
}

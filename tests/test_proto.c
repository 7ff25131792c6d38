/* The wire protocol: round trips, the strict decoder against every kind of
 * malformed input, forward compatibility with newer minors, JSON metadata,
 * text sanitizing and the endpoint directory rules. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

static nt_snapshot *sample(void) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  s->seq = 77;
  s->pid = 4242;
  s->interval_ms = 100;
  s->mono_ns = 123456789012345ull;
  s->wall_ns = 1763807000123456789ull;
  s->final = 1;
  snprintf(s->host, sizeof s->host, "gpu-node-17");
  s->process = (nt_process_counters){1, 2, 3, 4, 5, 6, 7, 0x3e, 5};
  s->ncomms = 2;
  s->comms[0] = (nt_comm_row){0x697cfc3a09600df6ull, 3, 16, 2, 99, 7};
  s->comms[1] = (nt_comm_row){0xffffffffffffffffull, 0, 1, 1, 0, 0};
  s->nproxy = 1;
  s->proxy[0] = (nt_proxy_row){.comm_index = 1,
                               .tid = 999,
                               .state = NT_PROXY_SLEEP,
                               .state_age_ns = 11,
                               .state_ns = {1, 2, 3, 4, 5},
                               .appends = 6,
                               .appended_ops = 7,
                               .wakeups = 8};
  s->nchannels = 2;
  s->channels[0] = (nt_channel_row){.comm_index = 0,
                                    .channel = 31,
                                    .dir = NT_DIR_RECV,
                                    .peer = -1,
                                    .wait_ns = {10, 20, 30},
                                    .steps = 40,
                                    .bytes = UINT64_MAX,
                                    .ops_started = 5,
                                    .ops_done = 4,
                                    .cur_step = 9,
                                    .cur_wait = NT_WAIT_RECV_FLUSH,
                                    .cur_wait_age_ns = 12,
                                    .progress_age_ns = UINT64_MAX};
  s->channels[1] = (nt_channel_row){
      .comm_index = 1, .channel = 0, .dir = NT_DIR_SEND, .cur_step = -1, .cur_wait = NT_WAIT_NONE};
  s->nkernels = 1;
  s->kernels[0] =
      (nt_kernel_row){.comm_index = 0, .channel = 3, .count = 1, .busy_ns = 2, .last_ns = 3};
  return s;
}

static size_t encode(const nt_snapshot *s, uint8_t *buf, size_t cap) {
  return nt_snapshot_encode(s, buf, cap);
}

static uint8_t buf[1 << 16], buf2[1 << 16];

static void snapshot_round_trip_keeps_every_field(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = encode(s, buf, sizeof buf);
  CHECK(n > 0);
  char err[256] = "";
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == 0);
  CHECK(d->major == 1 && d->minor == 0 && d->final == 1);
  CHECK_EQ_U64(d->seq, 77);
  CHECK_EQ_U64(d->pid, 4242);
  CHECK_EQ_U64(d->mono_ns, s->mono_ns);
  CHECK_EQ_U64(d->wall_ns, s->wall_ns);
  CHECK_STR(d->host, "gpu-node-17");
  CHECK(memcmp(&d->process, &s->process, sizeof s->process) == 0);
  CHECK(d->ncomms == 2 && d->nproxy == 1 && d->nchannels == 2 && d->nkernels == 1);
  CHECK(memcmp(d->comms, s->comms, 2 * sizeof *s->comms) == 0);
  CHECK(memcmp(d->proxy, s->proxy, sizeof *s->proxy) == 0);
  CHECK(memcmp(d->channels, s->channels, 2 * sizeof *s->channels) == 0);
  CHECK(memcmp(d->kernels, s->kernels, sizeof *s->kernels) == 0);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void every_truncation_is_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = encode(s, buf, sizeof buf);
  char err[256];
  for (size_t len = 0; len < n; len++) {
    uint8_t *exact = malloc(len ? len : 1);
    CHECK(exact != NULL);
    memcpy(exact, buf, len); /* exactly len bytes: ASan sees any overread */
    int rc = nt_snapshot_decode(exact, len, d, err, sizeof err);
    free(exact);
    if (rc != -1) fprintf(stderr, "    a %zu-byte prefix of %zu was accepted\n", len, n);
    CHECK(rc == -1);
  }
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void wrong_magic_and_major_are_named(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = encode(s, buf, sizeof buf);
  char err[256];
  buf[0] = 'X';
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK_STR(err, "not an nccltop snapshot");
  buf[0] = 'N';
  buf[4] = 2;
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK_STR(err, "unsupported protocol major version 2 (this nccltop reads 1)");
  CHECK(nt_snapshot_decode((const uint8_t *)"garbage!", 8, d, err, sizeof err) == -1);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* A hand-built 1.1 message: two extra header bytes, channel records 8
 * bytes longer, and an unknown section: a 1.0 reader decodes what it knows. */
static void newer_minor_extensions_are_skipped(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  s->nkernels = 0;
  size_t n = encode(s, buf, sizeof buf);
  size_t hdr = buf[8] | buf[9] << 8;
  size_t o = 0, i = 0;
  memcpy(buf2, buf, hdr);
  buf2[6] = 1;                  /* minor 1 */
  buf2[8] = (uint8_t)(hdr + 2); /* header_len */
  o = hdr;
  buf2[o++] = 0xAA; /* new header fields */
  buf2[o++] = 0xBB;
  for (i = hdr; i < n;) {
    unsigned type = buf[i] | buf[i + 1] << 8;
    uint32_t len = buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16 | (uint32_t)buf[i + 7] << 24;
    if (type == 4) {
      uint32_t count = buf[i + 8] | buf[i + 9] << 8;
      uint32_t rl = buf[i + 12] | buf[i + 13] << 8, nrl = rl + 8, nlen = 8 + count * nrl;
      memcpy(buf2 + o, buf + i, 8);
      buf2[o + 4] = (uint8_t)nlen;
      buf2[o + 5] = (uint8_t)(nlen >> 8);
      memcpy(buf2 + o + 8, buf + i + 8, 8);
      buf2[o + 12] = (uint8_t)nrl;
      o += 16;
      for (uint32_t r = 0; r < count; r++) {
        memcpy(buf2 + o, buf + i + 16 + r * rl, rl);
        memset(buf2 + o + rl, 0xEE, 8);
        o += nrl;
      }
    } else {
      memcpy(buf2 + o, buf + i, 8 + len);
      o += 8 + len;
    }
    i += 8 + len;
  }
  uint8_t unknown[] = {99, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3};
  memcpy(buf2 + o, unknown, sizeof unknown);
  o += sizeof unknown;
  char err[256] = "";
  int rc = nt_snapshot_decode(buf2, o, d, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(d->minor == 1);
  CHECK_STR(d->host, "gpu-node-17");
  CHECK(d->nchannels == 2);
  CHECK(memcmp(d->channels, s->channels, 2 * sizeof *s->channels) == 0);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void counts_over_limits_and_bad_values_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  char err[256];
  s->channels[0].dir = 7;
  size_t n = encode(s, buf, sizeof buf);
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK(strstr(err, "bad direction") != NULL);
  s->channels[0].dir = 1;
  s->channels[0].comm_index = 5;
  n = encode(s, buf, sizeof buf);
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK(strstr(err, "comm index 5 out of range") != NULL);
  s->channels[0].comm_index = 0;
  s->proxy[0].state = 9;
  n = encode(s, buf, sizeof buf);
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK(strstr(err, "bad state 9") != NULL);
  s->proxy[0].state = NT_PROXY_IDLE;
  /* A forged count far above the limit. */
  n = encode(s, buf, sizeof buf);
  size_t hdr = buf[8] | buf[9] << 8, i = hdr;
  while (i < n && (buf[i] | buf[i + 1] << 8) != 4)
    i += 8 + (buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16);
  CHECK(i < n);
  buf[i + 8] = 0xFF;
  buf[i + 9] = 0xFF;
  CHECK(nt_snapshot_decode(buf, n, d, err, sizeof err) == -1);
  CHECK(strstr(err, "exceeds limit") != NULL);
  /* The encoder refuses counts over the limits and too small buffers. */
  CHECK(nt_snapshot_encode(s, buf, 10) == 0);
  s->nchannels = NT_MAX_CHANNEL_ROWS + 1;
  CHECK(nt_snapshot_encode(s, buf, sizeof buf) == 0);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void duplicate_section_is_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = encode(s, buf, sizeof buf);
  size_t hdr = buf[8] | buf[9] << 8;
  size_t plen = 8 + 61; /* the process section comes first */
  memcpy(buf + n, buf + hdr, plen);
  char err[256];
  CHECK(nt_snapshot_decode(buf, n + plen, d, err, sizeof err) == -1);
  CHECK(strstr(err, "appears twice") != NULL);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void hello_and_comm_round_trip(void) {
  static nt_hello h, back;
  memset(&h, 0, sizeof h);
  h.major = 1;
  snprintf(h.host, sizeof h.host, "node\"quote\\back");
  h.pid = 77;
  snprintf(h.nccl_version, sizeof h.nccl_version, "2.28.9");
  h.abi_version = 5;
  h.start_wall_ns = 9007199254740993ull; /* 2^53 + 1: exact only as a string */
  h.nenv = 2;
  snprintf(h.env[0].name, sizeof h.env[0].name, "NCCL_ALGO");
  snprintf(h.env[0].value, sizeof h.env[0].value, "Ring\ttab\x1b[31m");
  snprintf(h.env[1].name, sizeof h.env[1].name, "NCCL_PROTO");
  snprintf(h.env[1].value, sizeof h.env[1].value, "LL128");
  char json[8192], err[256];
  size_t n = nt_hello_encode(&h, json, sizeof json);
  CHECK(n > 0);
  CHECK(nt_hello_decode(json, n, &back, err, sizeof err) == 0);
  CHECK_STR(back.host, h.host);
  CHECK_EQ_U64(back.start_wall_ns, 9007199254740993ull);
  CHECK(back.nenv == 2);
  CHECK_STR(back.env[0].value, h.env[0].value);
  CHECK(nt_hello_encode(&h, json, 20) == 0);
  nt_comm_info c = {
      .pid = 5, .comm_hash = 0xfedcba9876543210ull, .rank = 3, .nranks = 8, .nnodes = 1};
  snprintf(c.name, sizeof c.name, "tp-group");
  nt_comm_info cb;
  n = nt_comm_encode(&c, json, sizeof json);
  CHECK(nt_comm_decode(json, n, &cb, err, sizeof err) == 0);
  CHECK_EQ_U64(cb.comm_hash, 0xfedcba9876543210ull);
  CHECK_STR(cb.name, "tp-group");
  CHECK(cb.rank == 3 && cb.nranks == 8);
}

static void hostile_json_is_rejected_with_a_reason(void) {
  static nt_hello h;
  nt_comm_info c;
  char err[256];
  const char *bad[] = {
      "{\"v\":\"1.0\",\"type\":\"comm\",\"pid\":1,\"hash\":\"00000000000000ff\",\"rank\":0,"
      "\"nranks\":1,\"nnodes\":1} trailing",
      "{\"v\":\"2.0\",\"type\":\"comm\",\"pid\":1,\"hash\":\"00000000000000ff\",\"rank\":0,"
      "\"nranks\":1,\"nnodes\":1}",
      "{\"v\":\"1.0\",\"type\":\"comm\",\"pid\":\"1\",\"hash\":\"00000000000000ff\",\"rank\":0,"
      "\"nranks\":1,\"nnodes\":1}",
      "{\"v\":\"1.0\",\"type\":\"comm\",\"pid\":1,\"hash\":\"xyz\",\"rank\":0,\"nranks\":1,"
      "\"nnodes\":1}",
      "{\"v\":\"1.0\",\"PID\":1}",
      "[1,2,3]",
      "{\"v\":\"1.0\",",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    CHECK(nt_comm_decode(bad[i], strlen(bad[i]), &c, err, sizeof err) == -1);
    CHECK(err[0] != '\0');
  }
  char *big = malloc(NT_MAX_JSON_BYTES + 10);
  CHECK(big != NULL);
  memset(big, ' ', NT_MAX_JSON_BYTES + 10);
  CHECK(nt_hello_decode(big, NT_MAX_JSON_BYTES + 10, &h, err, sizeof err) == -1);
  CHECK(strstr(err, "exceed") != NULL);
  free(big);
  char longhost[200];
  snprintf(longhost, sizeof longhost,
           "{\"v\":\"1.0\",\"host\":\"%0100d\",\"pid\":1,\"abi\":5,\"start_wall_ns\":\"1\"}", 0);
  CHECK(nt_hello_decode(longhost, strlen(longhost), &h, err, sizeof err) == -1);
  CHECK(strstr(err, "host") != NULL);
}

static void sanitize_makes_control_characters_visible(void) {
  char out[64];
  CHECK_STR(nt_sanitize("a\x1b[31mb", 7, out, sizeof out), "a\\x1B[31mb");
  CHECK_STR(nt_sanitize("tab\there", 8, out, sizeof out), "tab\\x09here");
  CHECK_STR(nt_sanitize("\xc2\x9b"
                        "c1",
                        4, out, sizeof out),
            "\\xC2\\x9Bc1"); /* C1 CSI */
  CHECK_STR(nt_sanitize("caf\xc3\xa9", 5, out, sizeof out), "caf\xc3\xa9");
  CHECK_STR(nt_sanitize("\xf0\x9f\x98\x80", 4, out, sizeof out), "\xf0\x9f\x98\x80");
  CHECK_STR(nt_sanitize("\xc0\xaf", 2, out, sizeof out), "\\xC0\\xAF"); /* overlong */
  CHECK_STR(nt_sanitize("\xe2\x82", 2, out, sizeof out), "\\xE2\\x82"); /* truncated */
  CHECK_STR(nt_sanitize("\x7f", 1, out, sizeof out), "\\x7F");
  CHECK_STR(nt_sanitize("abc\x1b", 4, out, 6), "abc");   /* never a split escape */
  CHECK_STR(nt_sanitize("ab\xc3\xa9", 4, out, 4), "ab"); /* never a split character */
  CHECK_STR(nt_sanitize(NULL, 3, out, sizeof out), "");
}

static void names_are_the_documented_ones(void) {
  CHECK_STR(nt_proxy_state_name(NT_PROXY_IDLE), "idle");
  CHECK_STR(nt_proxy_state_name(NT_PROXY_APPEND), "append");
  CHECK_STR(nt_proxy_state_name(NT_PROXY_UNKNOWN), "unknown");
  CHECK_STR(nt_wait_name(NT_WAIT_SEND_PEER), "send_peer_wait");
  CHECK_STR(nt_wait_name(nt_dir_wait(NT_DIR_RECV, 1)), "recv_flush_wait");
  CHECK_STR(nt_wait_name(NT_WAIT_NONE), "none");
}

static void endpoint_directory_rules(void) {
  char dir[] = "/tmp/nccltop-ep-XXXXXX", err[256], path[256], link[300], sub[300];
  CHECK(mkdtemp(dir) != NULL);
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == 0); /* mkdtemp makes 0700 */
  CHECK(chmod(dir, 0755) == 0);
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == -1);
  CHECK(strstr(err, "accessible to other users") != NULL);
  CHECK(chmod(dir, 0700) == 0);
  snprintf(link, sizeof link, "%s-link", dir);
  CHECK(symlink(dir, link) == 0);
  CHECK(nt_endpoint_dir_prepare(link, err, sizeof err) == -1);
  CHECK(strstr(err, "symlink") != NULL);
  unlink(link);
  snprintf(sub, sizeof sub, "%s/new", dir);
  CHECK(nt_endpoint_dir_prepare(sub, err, sizeof err) == 0);
  struct stat st;
  CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
  if (geteuid() == 0 && chown(sub, 65534, 65534) == 0) {
    CHECK(nt_endpoint_dir_check(sub, err, sizeof err) == -1);
    CHECK(strstr(err, "owned by uid 65534") != NULL);
  }
  rmdir(sub);
  CHECK(nt_endpoint_for_pid(dir, 123, path, sizeof path) == 0);
  CHECK(strstr(path, "ipc:///tmp/nccltop-ep-") == path && strstr(path, "/123.sock"));
  char longdir[200];
  memset(longdir, 'x', 150);
  longdir[0] = '/';
  longdir[150] = '\0';
  CHECK(nt_endpoint_for_pid(longdir, 1, path, sizeof path) == -1);
  CHECK_EQ_U64(nt_endpoint_parse_name("4242.sock"), 4242);
  CHECK_EQ_U64(nt_endpoint_parse_name("0.sock"), 0);
  CHECK_EQ_U64(nt_endpoint_parse_name("12a.sock"), 0);
  CHECK_EQ_U64(nt_endpoint_parse_name(".sock"), 0);
  CHECK_EQ_U64(nt_endpoint_parse_name("99999999999.sock"), 0);
  CHECK_EQ_U64(nt_endpoint_parse_name("42.sock.bak"), 0);
  rmdir(dir);
}

int main(void) {
  TEST_RUN(snapshot_round_trip_keeps_every_field);
  TEST_RUN(every_truncation_is_rejected);
  TEST_RUN(wrong_magic_and_major_are_named);
  TEST_RUN(newer_minor_extensions_are_skipped);
  TEST_RUN(counts_over_limits_and_bad_values_are_rejected);
  TEST_RUN(duplicate_section_is_rejected);
  TEST_RUN(hello_and_comm_round_trip);
  TEST_RUN(hostile_json_is_rejected_with_a_reason);
  TEST_RUN(sanitize_makes_control_characters_visible);
  TEST_RUN(names_are_the_documented_ones);
  TEST_RUN(endpoint_directory_rules);
  return TEST_DONE();
}

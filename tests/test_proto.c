/* The binary snapshot: the encoder against a message built by hand from
 * PROTOCOL.md's tables (proto_fixture.h), round trips, the largest
 * snapshot, and the strict decoder against malformed headers, sections and
 * the 1.0 tables' values; forward compatibility with newer minors. The 1.1
 * sections' rules and 1.0 messages are in test_proto_ops.c, JSON metadata
 * in test_proto_json.c, sanitizing and names in test_proto_text.c, endpoint
 * rules in test_endpoint.c. */
#include "proto_fixture.h"

static void encoder_writes_the_documented_layout(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  layout l = default_layout();
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  if (n != wb.n) fprintf(stderr, "    encoder wrote %zu bytes, PROTOCOL.md says %zu\n", n, wb.n);
  CHECK(n == wb.n);
  for (size_t i = 0; i < n; i++) {
    if (enc[i] != wb.b[i]) fprintf(stderr, "    first difference at byte %zu\n", i);
    CHECK(enc[i] == wb.b[i]);
  }
  /* A few fixed offsets, spelled out. */
  CHECK(memcmp(enc, "NCTS", 4) == 0);
  CHECK(enc[4] == NT_PROTO_MAJOR && enc[5] == 0 && enc[6] == NT_PROTO_MINOR && enc[7] == 0);
  CHECK(enc[4] == 1 && enc[6] == 4);         /* this file describes 1.4 */
  CHECK(enc[10] == 1);                       /* final flag */
  CHECK(enc[12] == 0x08 && enc[19] == 0x01); /* seq, little-endian */
  CHECK(enc[44] == strlen(s->host));
  /* Eleven sections, in type order, each exactly as long as its header says. */
  size_t at = 45 + strlen(s->host);
  for (int type = 1; type <= 11; type++) {
    CHECK(at + 8 <= n);
    CHECK(enc[at] == type && enc[at + 1] == 0 && enc[at + 2] == 0 && enc[at + 3] == 0);
    CHECK(at == l.at[type]);
    at += 8 + (enc[at + 4] | (size_t)enc[at + 5] << 8 | (size_t)enc[at + 6] << 16);
  }
  CHECK(at == n);
  nt_snapshot_free(s);
}

static void snapshot_round_trip_keeps_every_field(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0 && n <= nt_snapshot_encoded_max(s));
  char err[256] = "";
  int rc = nt_snapshot_decode(enc, n, d, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(d->major == NT_PROTO_MAJOR && d->minor == NT_PROTO_MINOR);
  CHECK(same_snapshot(s, d));
  CHECK_STR(d->host, "gpu-node-17\x1b[31m\xc3\xa9"); /* bytes kept as received */
  CHECK_STR(d->phases[1].name, "backward \x1b[1m\xc3\xa9");
  CHECK_STR(d->variants[2].name, "ReduceScatter_LD \x1b[1m\xc3\xa9");
  /* Not final, empty tables, empty host. */
  s->final = 0;
  s->host[0] = '\0';
  s->ncomms = s->nproxy = s->nchannels = s->nkernels = 0;
  s->nops = s->nphases = s->noplog = s->nseq = s->nnet = s->nvariants = 0;
  n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == nt_snapshot_encoded_max(s) - NT_MAX_HOST);
  CHECK(nt_snapshot_decode(enc, n, d, err, sizeof err) == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Every table at its limit, with values the decoder accepts, and a 64-byte
 * host: the size PROTOCOL.md gives, which the publisher allocates once. */
static void largest_snapshot_fits_the_message_limit(void) {
  nt_snapshot *s = nt_snapshot_new(), *d = nt_snapshot_new();
  CHECK(s && d);
  s->pid = 1;
  memset(s->host, 'h', NT_MAX_HOST);
  s->host[NT_MAX_HOST] = '\0';
  s->ncomms = NT_MAX_COMMS;
  s->nproxy = NT_MAX_PROXY_THREADS;
  s->nchannels = NT_MAX_CHANNEL_ROWS;
  s->nkernels = NT_MAX_KERNEL_ROWS;
  s->nops = NT_MAX_OP_ROWS;
  s->nphases = NT_MAX_PHASES;
  s->noplog = NT_MAX_OPLOG;
  s->nseq = NT_MAX_SEQ_ROWS;
  s->nnet = NT_MAX_NET_ROWS;
  s->nvariants = NT_MAX_VARIANTS;
  for (uint32_t i = 0; i < s->nchannels; i++) s->channels[i].comm_index = NT_MAX_COMMS - 1;
  for (uint32_t i = 0; i < s->nphases; i++) {
    s->phases[i].id = (uint8_t)(i + 1);
    memset(s->phases[i].name, 'p', NT_MAX_PHASE);
    s->phases[i].name[NT_MAX_PHASE] = '\0';
  }
  for (uint32_t i = 0; i < s->nnet; i++) s->net[i].type = NT_NET_SOCKET;
  for (uint32_t i = 0; i < s->nvariants; i++) {
    s->variants[i].id = (uint8_t)(i + 1);
    memset(s->variants[i].name, 'v', NT_MAX_VARIANT);
    s->variants[i].name[NT_MAX_VARIANT] = '\0';
  }
  size_t max = nt_snapshot_encoded_max(s);
  CHECK(max <= NT_MAX_MESSAGE_BYTES);
  uint8_t *big = malloc(max);
  CHECK(big != NULL);
  size_t n = nt_snapshot_encode(s, big, max);
  CHECK(n == max);          /* the bound is exact for a 64-byte host */
  CHECK_EQ_U64(n, 1477651); /* as PROTOCOL.md says */
  /* Its parts, as PROTOCOL.md adds them up. */
  CHECK_EQ_U64(n, 45 + 64 + (8 + 86) + 4 * 16 + 6 * 16 + 64 * 84 + 256 * 80 + 8192 * 96 +
                      4096 * 56 + 4096 * 80 + 63 * 36 + 256 * 80 + 1024 * 32 + 1024 * 48 + 63 * 52);
  char err[256] = "";
  int rc = nt_snapshot_decode(big, n, d, err, sizeof err);
  free(big);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Every prefix of a valid message is rejected with a reason, and leaves
 * the snapshot empty. */
static void check_prefixes(const uint8_t *msg, size_t n, nt_snapshot *d) {
  char err[256];
  for (size_t len = 0; len < n; len++) {
    uint8_t *exact = malloc(len ? len : 1);
    CHECK(exact != NULL);
    memcpy(exact, msg, len); /* exactly len bytes: ASan sees any overread */
    err[0] = '\0';
    int rc = nt_snapshot_decode(exact, len, d, err, sizeof err);
    free(exact);
    if (rc != -1) fprintf(stderr, "    a %zu-byte prefix of %zu was accepted\n", len, n);
    CHECK(rc == -1);
    CHECK(err[0] != '\0');
    CHECK(d->ncomms == 0 && d->nproxy == 0 && d->nchannels == 0 && d->nkernels == 0);
    CHECK(d->nops == 0 && d->nphases == 0 && d->noplog == 0 && d->nseq == 0 && d->nnet == 0);
    CHECK(d->nvariants == 0);
    CHECK(d->process.events == 0 && d->process.phase == 0);
  }
}

static void every_truncation_is_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0);
  check_prefixes(enc, n, d);
  if (tl_case_failed) return;
  /* Bytes after the last section that are not a whole section. */
  char err[256];
  memset(enc + n, 0, 3);
  CHECK(nt_snapshot_decode(enc, n + 3, d, err, sizeof err) == -1);
  CHECK_STR(err, "truncated section header (3 bytes)");
  /* A 1.0 message too (it ends after section 5). */
  layout l = default_layout();
  l.minor = 0;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  check_prefixes(wb.b, wb.n, d);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void wrong_magic_is_not_a_snapshot(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  wb.b[3] = 's';
  CHECK_DECODE_ERR(d, "not an nccltop snapshot");
  char err[256];
  CHECK(nt_snapshot_decode((const uint8_t *)"garbage!", 8, d, err, sizeof err) == -1);
  CHECK_STR(err, "not an nccltop snapshot");
  CHECK(nt_snapshot_decode((const uint8_t *)"NCT", 3, d, err, sizeof err) == -1);
  CHECK(nt_snapshot_decode(NULL, 0, d, err, sizeof err) == -1);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void unknown_major_version_is_rejected_by_name(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  l.major = 2;
  build(&wb, s, &l);
  CHECK_DECODE_ERR(d, "unsupported protocol major version 2 (this nccltop reads 1)");
  patch(&wb, 4, 0, 2);
  CHECK_DECODE_ERR(d, "unsupported protocol major version 0 (this nccltop reads 1)");
  /* Only the first 8 bytes are needed to say so. */
  patch(&wb, 4, 65535, 2);
  wb.n = 8;
  CHECK_DECODE_ERR(d, "unsupported protocol major version 65535 (this nccltop reads 1)");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* A message of a newer minor: longer header, longer records and process
 * counters, unknown flags and unknown sections (one of them the next type
 * number): decoded as this version plus the minor number. */
static void newer_minor_extensions_are_skipped(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  l.minor = 7;
  l.flags = 0x8002;
  l.extra_header = 5;
  l.extra_record = 8;
  l.unknown = true;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  CHECK(d->major == 1 && d->minor == 7);
  CHECK(d->final == 1);
  CHECK(same_snapshot(s, d));
  /* Sections in another order than the encoder's are fine too, as long as
   * the comm table precedes the rows. */
  layout l2 = default_layout();
  static const int order[] = {2, 10, 5, 4, 11, 1, 7, 3, 9, 6, 8};
  memcpy(l2.order, order, sizeof order);
  l2.norder = 11;
  build(&wb, s, &l2);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void header_fields_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  size_t hostlen = strlen(s->host);
  build(&wb, s, &l);
  wb.b[45 + 3] = '\0';
  CHECK_DECODE_ERR(d, "host name contains a NUL byte");
  build(&wb, s, &l);
  wb.b[44] = 65;
  CHECK_DECODE_ERR(d, "host name length 65 exceeds limit 64");
  build(&wb, s, &l);
  patch(&wb, 8, 44 + hostlen, 2);
  char want[128];
  snprintf(want, sizeof want, "header length %zu is shorter than its %zu-byte host name",
           44 + hostlen, hostlen);
  CHECK_DECODE_ERR(d, want);
  build(&wb, s, &l);
  patch(&wb, 8, wb.n + 1, 2);
  snprintf(want, sizeof want, "header length %zu exceeds the message (%zu bytes)", wb.n + 1, wb.n);
  CHECK_DECODE_ERR(d, want);
  build(&wb, s, &l);
  wb.n = 30;
  CHECK_DECODE_ERR(d, "truncated header (30 bytes)");
  /* No process has pid 0, or one above Linux's PID_MAX_LIMIT. */
  build(&wb, s, &l);
  patch(&wb, 20, 0, 4);
  CHECK_DECODE_ERR(d, "pid 0 is not a process id (1..4194304)");
  build(&wb, s, &l);
  patch(&wb, 20, NT_PID_MAX + 1, 4);
  CHECK_DECODE_ERR(d, "pid 4194305 is not a process id (1..4194304)");
  build(&wb, s, &l);
  patch(&wb, 20, NT_PID_MAX, 4);
  CHECK(nt_snapshot_decode(wb.b, wb.n, d, NULL, 0) == 0 && d->pid == NT_PID_MAX);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void counts_over_limits_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  static const struct {
    int type;
    uint32_t count;
    const char *err;
  } cases[] = {
      {2, NT_MAX_COMMS + 1, "comm section: count 65 exceeds limit 64"},
      {3, NT_MAX_PROXY_THREADS + 1, "proxy section: count 257 exceeds limit 256"},
      {4, 9000, "channel section: count 9000 exceeds limit 8192"},
      {5, 0xFFFFFFFFu, "kernel section: count 4294967295 exceeds limit 4096"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    build(&wb, s, &l);
    patch(&wb, count_at(&l, cases[i].type), cases[i].count, 4);
    CHECK_DECODE_ERR(d, cases[i].err);
  }
  /* Within the limit but more records than the section holds. */
  build(&wb, s, &l);
  patch(&wb, count_at(&l, 4), s->nchannels + 1, 4);
  CHECK_DECODE_ERR(d, "channel section: 7 records of 96 bytes exceed its 576 bytes");
  /* Records shorter than this version's. */
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, 3), 79, 2);
  CHECK_DECODE_ERR(d, "proxy section: record length 79 is shorter than 80");
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, 4), 0, 2);
  CHECK_DECODE_ERR(d, "channel section: record length 0 is shorter than 96");
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, 5), 31, 2);
  CHECK_DECODE_ERR(d, "kernel section: record length 31 is shorter than 56");
  /* A table header cut short. */
  build(&wb, s, &l);
  patch(&wb, l.at[5] + 4, 7, 4);
  CHECK_DECODE_ERR(d, "kernel section: truncated table header");
  /* A section longer than what is left of the message. */
  build(&wb, s, &l);
  size_t left = wb.n - l.at[5] - 8;
  patch(&wb, l.at[5] + 4, left + 1, 4);
  char want[128];
  snprintf(want, sizeof want, "section 5: length %zu exceeds the %zu bytes left", left + 1, left);
  CHECK_DECODE_ERR(d, want);
  build(&wb, s, &l);
  patch(&wb, l.at[11] + 4, 8 + 5 * 52 + 3, 4);
  CHECK_DECODE_ERR(d, "section 11: length 271 exceeds the 268 bytes left");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void duplicate_missing_and_misplaced_sections_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  static const struct {
    int order[16], norder;
    const char *err;
  } cases[] = {
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2}, 12, "comm section appears twice"},
      {{1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12, "process section appears twice"},
      {{1, 2, 3, 4, 6, 7, 8, 9, 10, 11}, 10, "kernel section missing"},
      {{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 10, "process section missing"},
      {{1, 4, 2, 3, 5, 6, 7, 8, 9, 10, 11}, 11, "channel section before the comm section"},
      {{1, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11}, 11, "proxy section before the comm section"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    layout l = default_layout();
    memcpy(l.order, cases[i].order, sizeof cases[i].order);
    l.norder = cases[i].norder;
    build(&wb, s, &l);
    CHECK_DECODE_ERR(d, cases[i].err);
  }
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void out_of_range_values_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  s->proxy[1].state = NT_PROXY_NSTATES;
  EXPECT_REJECT(s, d, "proxy row 1: bad state 5");
  s->proxy[1].state = 254;
  EXPECT_REJECT(s, d, "proxy row 1: bad state 254");
  s->proxy[1].state = NT_PROXY_UNKNOWN;
  EXPECT_ACCEPT(s, d);
  s->proxy[0].comm_index = 3;
  EXPECT_REJECT(s, d, "proxy row 0: comm index 3 out of range (3 comms)");
  s->proxy[0].comm_index = NT_NO_COMM;
  EXPECT_ACCEPT(s, d);

  s->channels[4].dir = 2;
  EXPECT_REJECT(s, d, "channel row 4: bad direction 2");
  s->channels[4].dir = NT_DIR_RECV;
  s->channels[5].cur_wait = NT_WAIT_COUNT;
  EXPECT_REJECT(s, d, "channel row 5: bad wait state 6");
  s->channels[5].cur_wait = NT_WAIT_NONE;
  EXPECT_ACCEPT(s, d);
  s->channels[0].comm_index = 3;
  EXPECT_REJECT(s, d, "channel row 0: comm index 3 out of range (3 comms)");
  /* Channel and kernel rows always name a communicator. */
  s->channels[0].comm_index = NT_NO_COMM;
  EXPECT_REJECT(s, d, "channel row 0: comm index 65535 out of range (3 comms)");
  s->channels[0].comm_index = 2;
  s->channels[3].ops_done = s->channels[3].ops_started + 1;
  EXPECT_REJECT(s, d, "channel row 3: more ops done than started");
  s->channels[3].ops_done = s->channels[3].ops_started;
  s->channels[3].run_state = NT_RUN_IDLE;
  EXPECT_ACCEPT(s, d);

  s->kernels[2].comm_index = 7;
  EXPECT_REJECT(s, d, "kernel row 2: comm index 7 out of range (3 comms)");
  s->kernels[2].comm_index = NT_NO_COMM;
  EXPECT_REJECT(s, d, "kernel row 2: comm index 65535 out of range (3 comms)");
  s->kernels[2].comm_index = 0;
  EXPECT_ACCEPT(s, d);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void encoder_refuses_small_buffers_and_oversized_tables(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  size_t max = nt_snapshot_encoded_max(s);
  memset(enc, 0xCC, sizeof enc);
  CHECK(nt_snapshot_encode(s, enc, 0) == 0);
  CHECK(nt_snapshot_encode(s, enc, 10) == 0);
  CHECK(nt_snapshot_encode(s, enc, max - 1) == 0);
  for (size_t i = 0; i < sizeof enc; i++) CHECK(enc[i] == 0xCC); /* nothing written */
  CHECK(nt_snapshot_encode(s, enc, max) > 0);
  CHECK(nt_snapshot_encode(NULL, enc, sizeof enc) == 0);
  CHECK(nt_snapshot_encode(s, NULL, sizeof enc) == 0);
  /* One row over any table's limit. */
  uint32_t *counts[] = {&s->ncomms,  &s->nproxy, &s->nchannels, &s->nkernels, &s->nops,
                        &s->nphases, &s->noplog, &s->nseq,      &s->nnet,     &s->nvariants};
  static const uint32_t limits[] = {NT_MAX_COMMS,       NT_MAX_PROXY_THREADS, NT_MAX_CHANNEL_ROWS,
                                    NT_MAX_KERNEL_ROWS, NT_MAX_OP_ROWS,       NT_MAX_PHASES,
                                    NT_MAX_OPLOG,       NT_MAX_SEQ_ROWS,      NT_MAX_NET_ROWS,
                                    NT_MAX_VARIANTS};
  static uint8_t big[1 << 21];
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
    uint32_t keep = *counts[i];
    *counts[i] = limits[i] + 1;
    if (nt_snapshot_encode(s, big, sizeof big) != 0) fprintf(stderr, "    table %zu\n", i);
    CHECK(nt_snapshot_encode(s, big, sizeof big) == 0);
    *counts[i] = keep;
  }
  CHECK(nt_snapshot_encode(s, big, sizeof big) > 0);
  nt_snapshot_free(s);
}

static void clear_keeps_the_header_and_empties_the_tables(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  nt_snapshot_clear(s);
  CHECK(s->ncomms == 0 && s->nproxy == 0 && s->nchannels == 0 && s->nkernels == 0);
  CHECK(s->nops == 0 && s->nphases == 0 && s->noplog == 0 && s->nseq == 0 && s->nnet == 0);
  CHECK(s->nvariants == 0);
  CHECK(s->process.events == 0 && s->process.abi_version == 0);
  CHECK(s->process.dropped_ops == 0 && s->process.net_events == 0 && s->process.phase == 0);
  CHECK(s->pid == 4242 && s->seq == 0x0102030405060708ull);
  CHECK(s->comms && s->proxy && s->channels && s->kernels);
  CHECK(s->ops && s->phases && s->oplog && s->seq_rows && s->net && s->variants);
  nt_snapshot_free(s);
  nt_snapshot_free(NULL);
  nt_snapshot_clear(NULL);
}

int main(void) {
  TEST_RUN(encoder_writes_the_documented_layout);
  TEST_RUN(snapshot_round_trip_keeps_every_field);
  TEST_RUN(largest_snapshot_fits_the_message_limit);
  TEST_RUN(every_truncation_is_rejected);
  TEST_RUN(wrong_magic_is_not_a_snapshot);
  TEST_RUN(unknown_major_version_is_rejected_by_name);
  TEST_RUN(newer_minor_extensions_are_skipped);
  TEST_RUN(header_fields_are_checked);
  TEST_RUN(counts_over_limits_are_rejected);
  TEST_RUN(duplicate_missing_and_misplaced_sections_are_rejected);
  TEST_RUN(out_of_range_values_are_rejected);
  TEST_RUN(encoder_refuses_small_buffers_and_oversized_tables);
  TEST_RUN(clear_keeps_the_header_and_empties_the_tables);
  return TEST_DONE();
}

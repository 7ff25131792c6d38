/* Protocol 1.4: NCCL 2.31's symmetric-kernel collectives. The kernel
 * variant names table (type 11), the variant id of operation statistics
 * rows (type 6, bytes 72 to 79 appended) and of operation log rows (type 8,
 * byte 66, reserved before) and the symmetric flag, at their documented
 * offsets (PROTOCOL.md); a 1.3 message read by a 1.4 reader (variant 0, no
 * variant table, byte 66 not read); and every check the new table and
 * fields add, each with its exact message ("What a reader rejects"). */
#include "proto_fixture.h"

static void the_new_fields_sit_at_their_documented_offsets(void) {
  nt_snapshot *s = sample();
  CHECK(s != NULL);
  layout l = default_layout();
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == wb.n && memcmp(enc, wb.b, n) == 0);
  CHECK(rd(enc + 6, 2) == 4);
  /* Type 11, the last section the encoder writes. */
  const uint8_t *t = enc + l.at[SEC_VARIANT];
  CHECK(rd(t, 2) == 11 && rd(t + 2, 2) == 0);
  CHECK(rd(t + 4, 4) == 8 + s->nvariants * 52);
  CHECK(rd(t + 8, 4) == s->nvariants && rd(t + 12, 2) == 52 && rd(t + 14, 2) == 0);
  CHECK(l.at[SEC_VARIANT] + 8 + 8 + s->nvariants * 52 == n);
  for (uint32_t i = 0; i < s->nvariants; i++) {
    const uint8_t *r = t + 16 + i * 52;
    size_t len = strlen(s->variants[i].name);
    CHECK(r[0] == s->variants[i].id && r[1] == len && r[2] == 0 && r[3] == 0);
    CHECK(memcmp(r + 4, s->variants[i].name, len) == 0);
    for (size_t k = 4 + len; k < 52; k++) CHECK(r[k] == 0); /* padded with zeros */
  }
  const uint8_t *r = t + 16;
  CHECK(r[0] == 1 && r[1] == 17 && memcmp(r + 4, "AllReduce_AGxLL_R", 17) == 0);
  r = t + 16 + 3 * 52; /* the longest name, the largest id */
  CHECK(r[0] == NT_MAX_VARIANTS && r[1] == NT_MAX_VARIANT && r[4 + 46] == 'e' && r[4 + 47] == 0);
  CHECK(t[16 + 4 * 52 + 1] == 0); /* an empty name */
  /* Type 6: 80 bytes, the variant at 72, then 7 reserved bytes. */
  t = enc + l.at[SEC_OPS];
  CHECK(rd(t + 12, 2) == 80);
  int with_variant = 0;
  for (uint32_t i = 0; i < s->nops; i++) {
    r = t + 16 + i * 80;
    CHECK(r[72] == s->ops[i].variant);
    for (int k = 73; k < 80; k++) CHECK(r[k] == 0);
    CHECK(rd(r + 64, 8) == s->ops[i].compute_ns); /* 1.3's last field where it was */
    with_variant += s->ops[i].variant != 0;
  }
  CHECK(with_variant >= 3 && s->ops[6].variant == NT_MAX_VARIANTS);
  /* Type 8: still 80 bytes, the variant at 66, flags bit 2 = symmetric. */
  t = enc + l.at[SEC_OPLOG];
  CHECK(rd(t + 12, 2) == 80);
  with_variant = 0;
  for (uint32_t i = 0; i < s->noplog; i++) {
    r = t + 16 + i * 80;
    CHECK(r[65] == s->oplog[i].flags && r[66] == s->oplog[i].variant);
    CHECK(!s->oplog[i].variant || (r[65] & 4));
    for (int k = 67; k < 72; k++) CHECK(r[k] == 0);
    CHECK(rd(r + 72, 8) == s->oplog[i].progress_age_ns);
    with_variant += s->oplog[i].variant != 0;
  }
  CHECK(with_variant >= 3 && NT_OPF_SYMMETRIC == 4);
  nt_snapshot_free(s);
}

/* A 1.3 publisher knows no symmetric kernel: its ops records are 72 bytes,
 * it writes no type 11, and its operation log's byte 66 is reserved. A 1.4
 * reader reads variant 0 everywhere, whatever byte 66 or the bytes after a
 * 72-byte ops record hold. */
static void a_1_3_message_reads_without_variants(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d); /* d held a 1.4 snapshot before */
  CHECK(d->nvariants == SAMPLE_NVARIANTS && d->ops[0].variant == 1);
  layout l;
  CHECK(decodes_as_older(s, 3, drop_1_4, d, &l));
  CHECK(l.at[SEC_VARIANT] == 0); /* not written */
  CHECK(rd(wb.b + reclen_at(&l, SEC_OPS), 2) == 72 && rd(wb.b + reclen_at(&l, SEC_OPLOG), 2) == 80);
  CHECK(d->minor == 3 && d->nvariants == 0);
  for (uint32_t i = 0; i < d->nops; i++) CHECK(d->ops[i].variant == 0);
  for (uint32_t i = 0; i < d->noplog; i++) {
    CHECK(d->oplog[i].variant == 0);
    CHECK(d->oplog[i].flags == s->oplog[i].flags); /* flags kept as sent */
  }
  /* Reserved byte 66, non-zero, even past the variant limit and on a p2p
   * row: not read. */
  for (uint32_t i = 0; i < s->noplog; i++)
    wb.b[record_at(&wb, &l, SEC_OPLOG, i, 66)] = (uint8_t)(i % 2 ? 3 : 200);
  CHECK_DECODE_OK(d);
  for (uint32_t i = 0; i < d->noplog; i++) CHECK(d->oplog[i].variant == 0);
  /* A 1.3 message with longer records (a writer that pads): the bytes
   * after the 72 of an ops record are not a variant. */
  l.extra_record = 8;
  build(&wb, s, &l);
  CHECK(wb.b[record_at(&wb, &l, SEC_OPS, 0, 72)] == 0xEE);
  CHECK_DECODE_OK(d);
  CHECK(d->ops[0].variant == 0 && d->nvariants == 0);
  /* Older minors as well. */
  CHECK(decodes_as_older(s, 2, drop_1_3, d, &l));
  CHECK(d->nvariants == 0);
  for (uint32_t i = 0; i < d->noplog; i++) CHECK(d->oplog[i].variant == 0);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* 1.3 bytes labelled 1.4 are a message cut short, not zeros: 72-byte ops
 * records are refused, and so is a 1.4 message without the variant table. */
static void a_1_4_message_needs_every_1_4_part(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  l.minor = 3;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  patch(&wb, 6, 4, 2);
  CHECK_DECODE_ERR(d, "ops section: record length 72 is shorter than 80");
  l = default_layout();
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_OPS), 79, 2);
  CHECK_DECODE_ERR(d, "ops section: record length 79 is shorter than 80");
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_VARIANT), 51, 2);
  CHECK_DECODE_ERR(d, "variant section: record length 51 is shorter than 52");
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_VARIANT), 0, 2);
  CHECK_DECODE_ERR(d, "variant section: record length 0 is shorter than 52");
  /* Every section but type 11: missing, in 1.4 and in any later minor. */
  for (int minor = 4; minor <= 9; minor += 5) {
    l = default_layout();
    l.minor = (uint16_t)minor;
    for (int k = 1; k <= SEC_NET; k++) l.order[l.norder++] = k;
    build(&wb, s, &l);
    CHECK_DECODE_ERR(d, "variant section missing");
  }
  /* It follows the rules of the other sections. */
  static const struct {
    int order[16], norder;
    const char *err;
  } cases[] = {
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 11}, 12, "variant section appears twice"},
      {{1, 11, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 11, "variant section before the comm section"},
      {{11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 11, "variant section before the comm section"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    l = default_layout();
    memcpy(l.order, cases[i].order, sizeof cases[i].order);
    l.norder = cases[i].norder;
    build(&wb, s, &l);
    CHECK_DECODE_ERR(d, cases[i].err);
  }
  /* Anywhere after the comm table is fine, before the rows that use it too. */
  l = default_layout();
  static const int order[] = {1, 2, 11, 3, 4, 5, 6, 7, 8, 9, 10};
  memcpy(l.order, order, sizeof order);
  l.norder = 11;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void variant_counts_and_tables_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  patch(&wb, count_at(&l, SEC_VARIANT), NT_MAX_VARIANTS + 1, 4);
  CHECK_DECODE_ERR(d, "variant section: count 64 exceeds limit 63");
  build(&wb, s, &l);
  patch(&wb, count_at(&l, SEC_VARIANT), 0xFFFFFFFFu, 4);
  CHECK_DECODE_ERR(d, "variant section: count 4294967295 exceeds limit 63");
  build(&wb, s, &l);
  patch(&wb, count_at(&l, SEC_VARIANT), SAMPLE_NVARIANTS + 1, 4);
  CHECK_DECODE_ERR(d, "variant section: 6 records of 52 bytes exceed its 260 bytes");
  build(&wb, s, &l);
  patch(&wb, l.at[SEC_VARIANT] + 4, 7, 4);
  CHECK_DECODE_ERR(d, "variant section: truncated table header");
  /* Empty is fine (no symmetric kernel ran); so are longer records. */
  s->nvariants = 0;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  s->nvariants = SAMPLE_NVARIANTS;
  l.extra_record = 16;
  build(&wb, s, &l);
  CHECK(rd(wb.b + reclen_at(&l, SEC_VARIANT), 2) == 68);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  /* The encoder refuses a table over the limit. */
  s->nvariants = NT_MAX_VARIANTS + 1;
  CHECK(nt_snapshot_encode(s, enc, sizeof enc) == 0);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void variant_rows_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 3, 0)] = 0;
  CHECK_DECODE_ERR(d, "variant row 3: bad id 0");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 2, 0)] = NT_MAX_VARIANTS + 1;
  CHECK_DECODE_ERR(d, "variant row 2: bad id 64");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 4, 0)] = 255;
  CHECK_DECODE_ERR(d, "variant row 4: bad id 255");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 0, 0)] = 2;
  CHECK_DECODE_ERR(d, "variant row 1: id 2 appears twice");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 4, 0)] = NT_MAX_VARIANTS;
  CHECK_DECODE_ERR(d, "variant row 4: id 63 appears twice");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 0, 1)] = 48;
  CHECK_DECODE_ERR(d, "variant row 0: name length 48 exceeds limit 47");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 1, 1)] = 255;
  CHECK_DECODE_ERR(d, "variant row 1: name length 255 exceeds limit 47");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 0, 4 + 9)] = '\0'; /* "AllReduce\0AGxLL_R" */
  CHECK_DECODE_ERR(d, "variant row 0: name contains a NUL byte");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 3, 4 + 46)] = '\0'; /* the last byte of 47 */
  CHECK_DECODE_ERR(d, "variant row 3: name contains a NUL byte");
  /* Bytes after the name's length are padding, and bytes 2 and 3 are
   * reserved, whatever they hold. */
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_VARIANT, 1, 4 + 12)] = 'X';
  wb.b[record_at(&wb, &l, SEC_VARIANT, 1, 51)] = 0xFF;
  wb.b[record_at(&wb, &l, SEC_VARIANT, 1, 2)] = 0xFF;
  wb.b[record_at(&wb, &l, SEC_VARIANT, 1, 3)] = 0xFF;
  patch(&wb, l.at[SEC_VARIANT] + 2, 0xFFFF, 2);
  patch(&wb, l.at[SEC_VARIANT] + 14, 0xFFFF, 2);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  CHECK_STR(d->variants[1].name, "AllGather_ST");
  /* Names as NCCL spells them, the longest, an empty one, and bytes a
   * terminal would obey: kept as received (a reader escapes them before
   * display). */
  CHECK_STR(d->variants[0].name, "AllReduce_AGxLL_R");
  CHECK(strlen(d->variants[3].name) == NT_MAX_VARIANT && d->variants[3].id == NT_MAX_VARIANTS);
  CHECK_STR(d->variants[4].name, "");
  CHECK_STR(d->variants[2].name, "ReduceScatter_LD \x1b[1m\xc3\xa9");
  /* All 63 ids at once, in any order. */
  s->nvariants = NT_MAX_VARIANTS;
  for (uint32_t i = 0; i < s->nvariants; i++) {
    s->variants[i].id = (uint8_t)(NT_MAX_VARIANTS - i);
    snprintf(s->variants[i].name, sizeof s->variants[i].name, "AllReduce_variant_%u", i);
  }
  EXPECT_ACCEPT(s, d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Variant ids on rows: 0 or 1..63, and only on collectives. */
static void variant_ids_of_rows_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  CHECK(s->ops[4].kind == NT_OP_COLL && s->ops[9].kind == NT_OP_P2P);
  s->ops[4].variant = NT_MAX_VARIANTS + 1;
  EXPECT_REJECT(s, d, "ops row 4: bad variant 64");
  s->ops[4].variant = 255;
  EXPECT_REJECT(s, d, "ops row 4: bad variant 255");
  s->ops[4].variant = NT_MAX_VARIANTS;
  EXPECT_ACCEPT(s, d);
  s->ops[9].variant = 1;
  EXPECT_REJECT(s, d, "ops row 9: variant 1 on a p2p operation");
  s->ops[9].variant = 0;
  CHECK(s->oplog[7].kind == NT_OP_P2P && s->oplog[1].kind == NT_OP_P2P);
  s->oplog[7].variant = 200;
  EXPECT_REJECT(s, d, "oplog row 7: bad variant 200");
  s->oplog[7].variant = 0;
  s->oplog[1].variant = 3;
  EXPECT_REJECT(s, d, "oplog row 1: variant 3 on a p2p operation");
  s->oplog[1].variant = 0;
  CHECK(s->oplog[2].kind == NT_OP_COLL && s->oplog[2].variant == 0);
  s->oplog[2].variant = 3;
  EXPECT_ACCEPT(s, d);
  CHECK(d->oplog[2].variant == 3);
  s->oplog[2].kind = NT_OP_P2P;
  EXPECT_REJECT(s, d, "oplog row 2: variant 3 on a p2p operation");
  s->oplog[2].kind = NT_OP_COLL;
  /* The same bytes through the hand-written message. */
  layout l = default_layout();
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_OPS, 4, 72)] = 64;
  CHECK_DECODE_ERR(d, "ops row 4: bad variant 64");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_OPLOG, 7, 66)] = 200;
  CHECK_DECODE_ERR(d, "oplog row 7: bad variant 200");
  /* The reserved bytes after an ops row's variant are ignored. */
  build(&wb, s, &l);
  for (size_t k = 73; k < 80; k++) wb.b[record_at(&wb, &l, SEC_OPS, 4, k)] = 0xAB;
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  /* An id with no row in the variant table, and a symmetric flag with no
   * variant, are not errors: a reader shows what it has. */
  s->ops[0].variant = 40;
  s->oplog[2].variant = 0;
  s->oplog[2].flags |= NT_OPF_SYMMETRIC;
  EXPECT_ACCEPT(s, d);
  CHECK(d->ops[0].variant == 40 && (d->oplog[2].flags & NT_OPF_SYMMETRIC));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Every field survives encoding and decoding, including a full table of
 * the longest names. */
static void the_variants_round_trip(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  CHECK(d->major == 1 && d->minor == NT_PROTO_MINOR && NT_PROTO_MINOR == 4);
  CHECK(same_snapshot(s, d));
  CHECK(d->nvariants == SAMPLE_NVARIANTS);
  for (uint32_t i = 0; i < s->nops; i++) CHECK(d->ops[i].variant == s->ops[i].variant);
  for (uint32_t i = 0; i < s->noplog; i++) {
    CHECK(d->oplog[i].variant == s->oplog[i].variant);
    CHECK(d->oplog[i].flags == s->oplog[i].flags);
  }
  s->nvariants = NT_MAX_VARIANTS;
  for (uint32_t i = 0; i < s->nvariants; i++) {
    s->variants[i].id = (uint8_t)(i + 1);
    memset(s->variants[i].name, 'A' + (int)(i % 26), NT_MAX_VARIANT);
    s->variants[i].name[NT_MAX_VARIANT] = '\0';
  }
  for (uint32_t i = 0; i < s->nops; i++)
    s->ops[i].variant = s->ops[i].kind == NT_OP_COLL ? (uint8_t)(i + 1) : 0;
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0 && n <= nt_snapshot_encoded_max(s));
  char err[256] = "";
  int rc = nt_snapshot_decode(enc, n, d, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(same_snapshot(s, d));
  /* Cleared with the other tables. */
  nt_snapshot_clear(d);
  CHECK(d->nvariants == 0 && d->variants != NULL);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

int main(void) {
  TEST_RUN(the_new_fields_sit_at_their_documented_offsets);
  TEST_RUN(a_1_3_message_reads_without_variants);
  TEST_RUN(a_1_4_message_needs_every_1_4_part);
  TEST_RUN(variant_counts_and_tables_are_checked);
  TEST_RUN(variant_rows_are_checked);
  TEST_RUN(variant_ids_of_rows_are_checked);
  TEST_RUN(the_variants_round_trip);
  return TEST_DONE();
}

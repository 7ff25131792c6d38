/* Protocol 1.1 in the binary snapshot: the new sections' bytes at their
 * documented offsets, 1.0 messages read by a 1.1 reader, the sections a 1.1
 * message must carry, and every value check of sections 6 to 10 and of the
 * longer process and communicator records, each with its exact message
 * (PROTOCOL.md, "What a reader rejects"). */
#include "proto_fixture.h"

/* Offsets from PROTOCOL.md's 1.1 tables, spelled out once more against the
 * encoder's output (the fixture's writer checks every byte; this checks the
 * writer's idea of the tables on a few fields per record). */
static void new_fields_sit_at_their_documented_offsets(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  layout l = default_layout();
  build(&wb, s, &l); /* for the section offsets */
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == wb.n);
  const uint8_t *p = enc + l.at[SEC_PROCESS];
  CHECK(rd(p + 4, 4) == 86);
  CHECK(rd(p + 8 + 61, 8) == s->process.dropped_ops);
  CHECK(rd(p + 8 + 69, 8) == s->process.late_children);
  CHECK(rd(p + 8 + 77, 8) == s->process.net_events);
  CHECK(rd(p + 8 + 85, 1) == s->process.phase);
  p = enc + l.at[SEC_COMM];
  CHECK(rd(p + 12, 2) == 84);
  const uint8_t *r = p + 16 + 84; /* communicator 1 */
  CHECK(rd(r + 36, 8) == s->comms[1].group_api);
  CHECK(rd(r + 44, 8) == s->comms[1].coll_api);
  CHECK(rd(r + 52, 8) == s->comms[1].p2p_api);
  CHECK(rd(r + 60, 8) == s->comms[1].kernel_launches);
  CHECK(rd(r + 68, 8) == s->comms[1].graph_captured);
  CHECK(rd(r + 76, 8) == s->comms[1].api_ns);
  static const struct {
    int type;
    uint32_t reclen;
  } sizes[] = {{SEC_OPS, 80}, {SEC_PHASE, 36}, {SEC_OPLOG, 80},
               {SEC_SEQ, 32}, {SEC_NET, 48},   {SEC_VARIANT, 52}};
  const uint32_t counts[] = {s->nops, s->nphases, s->noplog, s->nseq, s->nnet, s->nvariants};
  for (int i = 0; i < 6; i++) {
    p = enc + l.at[sizes[i].type];
    CHECK(rd(p, 2) == (uint64_t)sizes[i].type && rd(p + 2, 2) == 0);
    CHECK(rd(p + 4, 4) == 8 + counts[i] * sizes[i].reclen);
    CHECK(rd(p + 8, 4) == counts[i] && rd(p + 12, 2) == sizes[i].reclen && rd(p + 14, 2) == 0);
  }
  r = enc + l.at[SEC_OPS] + 16 + 2 * 80; /* ops row 2 */
  CHECK(rd(r, 2) == s->ops[2].comm_index && r[3] == NT_FUNC_ALLGATHER && r[6] == s->ops[2].bucket);
  CHECK(rd(r + 24, 8) == s->ops[2].done && rd(r + 48, 8) == s->ops[2].gpu_done);
  r = enc + l.at[SEC_PHASE] + 16 + 1 * 36; /* phase row 1 */
  CHECK(r[0] == 2 && r[1] == strlen(s->phases[1].name) && r[2] == 0 && r[3] == 0);
  CHECK(memcmp(r + 4, s->phases[1].name, r[1]) == 0);
  for (size_t k = 4 + r[1]; k < 36; k++) CHECK(r[k] == 0); /* padded with zeros */
  r = enc + l.at[SEC_PHASE] + 16 + 2 * 36;
  CHECK(r[0] == NT_MAX_PHASES && r[1] == NT_MAX_PHASE && r[4 + 31] == 0);
  r = enc + l.at[SEC_OPLOG] + 16 + 3 * 80; /* oplog row 3 */
  CHECK(r[6] == NT_DT_INT32 && r[8] == s->oplog[3].state && r[9] == s->oplog[3].timing);
  CHECK(rd(r + 12, 4) == 0xFFFFFFFFu); /* root_peer -1 */
  CHECK(rd(r + 16, 8) == s->oplog[3].seq && rd(r + 48, 8) == s->oplog[3].duration_ns);
  CHECK(rd(r + 56, 4) == s->oplog[3].children && rd(r + 60, 4) == s->oplog[3].children_open);
  r = enc + l.at[SEC_SEQ] + 16 + 4 * 32; /* seq row 4 */
  CHECK(r[2] == NT_FUNC_SENDRECV && rd(r + 8, 8) == s->seq_rows[4].launched);
  CHECK(rd(r + 24, 8) == s->seq_rows[4].last_launch_age_ns);
  r = enc + l.at[SEC_NET] + 16 + 3 * 48; /* net row 3: a socket of no known communicator */
  CHECK(rd(r, 2) == NT_NO_COMM && r[2] == NT_NET_SOCKET && rd(r + 4, 4) == 0xFFFFFFFFu);
  CHECK(rd(r + 8, 4) == s->net[3].id && rd(r + 40, 8) == s->net[3].in_flight);
  nt_snapshot_free(s);
}

/* A 1.0 message: five sections, 61-byte process counters, 36-byte
 * communicator records. Its 1.1 fields read as 0 and its 1.1 tables are
 * empty, even in a snapshot that held a 1.1 message before. */
static void a_1_0_message_decodes_with_empty_1_1_fields(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new(), *want = nt_snapshot_new();
  CHECK(s && d && want);
  char err[256];
  CHECK(decode_modified(s, want, err, sizeof err) == 0);
  drop_1_1(want);                                     /* s as a 1.0 message carries it */
  CHECK(decode_modified(s, d, err, sizeof err) == 0); /* d holds a 1.1 snapshot */
  CHECK(d->nops > 0 && d->process.phase > 0 && d->comms[0].api_ns > 0);
  layout l = default_layout();
  l.minor = 0;
  build(&wb, s, &l);
  CHECK(wb.b[6] == 0 && wb.b[7] == 0);
  CHECK(rd(wb.b + l.at[SEC_PROCESS] + 4, 4) == 61);
  CHECK(rd(wb.b + reclen_at(&l, SEC_COMM), 2) == 36);
  CHECK(l.at[SEC_OPS] == 0 && l.at[SEC_NET] == 0 && l.at[SEC_VARIANT] == 0); /* not written */
  CHECK_DECODE_OK(d);
  CHECK(d->major == 1 && d->minor == 0);
  CHECK(same_snapshot(want, d));
  CHECK(d->nops == 0 && d->nphases == 0 && d->noplog == 0 && d->nseq == 0 && d->nnet == 0);
  CHECK(d->process.dropped_ops == 0 && d->process.phase == 0);
  for (uint32_t i = 0; i < d->ncomms; i++)
    CHECK(d->comms[i].group_api == 0 && d->comms[i].api_ns == 0);
  /* Records longer than 1.0's in a 1.0 message: the extra bytes are
   * skipped, never read as 1.1 fields. */
  l.extra_record = 48;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(want, d));
  layout l11 = default_layout();
  build(&wb, s, &l11);
  patch(&wb, 6, 0, 2); /* 1.1 bytes, labelled 1.0 */
  CHECK_DECODE_OK(d);
  CHECK(d->minor == 0 && d->process.phase == 0 && d->process.net_events == 0);
  CHECK(d->comms[2].coll_api == 0 && d->comms[2].api_ns == 0);
  /* 1.0 sizes are what a 1.0 message needs. */
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_COMM), 35, 2);
  CHECK_DECODE_ERR(d, "comm section: record length 35 is shorter than 36");
  l.extra_record = 0;
  build(&wb, s, &l);
  patch(&wb, l.at[SEC_PROCESS] + 4, 60, 4);
  CHECK_DECODE_ERR(d, "process section: 60 bytes, expected at least 61");
  build(&wb, s, &l);
  l.norder = 4;
  for (int k = 0; k < 4; k++) l.order[k] = k + 1;
  build(&wb, s, &l);
  CHECK_DECODE_ERR(d, "kernel section missing");
  nt_snapshot_free(want);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* A 1.1 message must carry every section 1.1 has, and its process counters
 * and communicator records at their 1.1 sizes: anything shorter was cut. */
static void a_1_1_message_needs_every_1_1_part(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  static const char *const missing[] = {"ops section missing", "phase section missing",
                                        "oplog section missing", "seq section missing",
                                        "net section missing"};
  for (int t = SEC_OPS; t <= SEC_NET; t++) {
    layout l = default_layout();
    for (int k = 1; k <= SEC_VARIANT; k++)
      if (k != t) l.order[l.norder++] = k;
    build(&wb, s, &l);
    CHECK_DECODE_ERR(d, missing[t - SEC_OPS]);
    l.minor = 7; /* and in any later minor */
    build(&wb, s, &l);
    CHECK_DECODE_ERR(d, missing[t - SEC_OPS]);
  }
  layout l = default_layout();
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_COMM), 83, 2);
  CHECK_DECODE_ERR(d, "comm section: record length 83 is shorter than 84");
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_COMM), 36, 2);
  CHECK_DECODE_ERR(d, "comm section: record length 36 is shorter than 84");
  build(&wb, s, &l);
  patch(&wb, l.at[SEC_PROCESS] + 4, 85, 4);
  CHECK_DECODE_ERR(d, "process section: 85 bytes, expected at least 86");
  build(&wb, s, &l);
  patch(&wb, l.at[SEC_PROCESS] + 4, 61, 4);
  CHECK_DECODE_ERR(d, "process section: 61 bytes, expected at least 86");
  /* The new sections follow the rules of the others. */
  static const struct {
    int order[12], norder;
    const char *err;
  } cases[] = {
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10}, 11, "net section appears twice"},
      {{1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10}, 11, "phase section appears twice"},
      {{1, 6, 2, 3, 4, 5, 7, 8, 9, 10}, 10, "ops section before the comm section"},
      {{7, 1, 2, 3, 4, 5, 6, 8, 9, 10}, 10, "phase section before the comm section"},
      {{10, 2, 3, 4, 5, 6, 7, 8, 9, 1}, 10, "net section before the comm section"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    layout lo = default_layout();
    memcpy(lo.order, cases[i].order, sizeof cases[i].order);
    lo.norder = cases[i].norder;
    build(&wb, s, &lo);
    CHECK_DECODE_ERR(d, cases[i].err);
  }
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void new_counts_and_record_lengths_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  static const struct {
    int type;
    uint32_t count;
    const char *err;
  } counts[] = {
      {SEC_OPS, NT_MAX_OP_ROWS + 1, "ops section: count 4097 exceeds limit 4096"},
      {SEC_PHASE, NT_MAX_PHASES + 1, "phase section: count 64 exceeds limit 63"},
      {SEC_OPLOG, NT_MAX_OPLOG + 1, "oplog section: count 257 exceeds limit 256"},
      {SEC_SEQ, NT_MAX_SEQ_ROWS + 1, "seq section: count 1025 exceeds limit 1024"},
      {SEC_NET, NT_MAX_NET_ROWS + 1, "net section: count 1025 exceeds limit 1024"},
      {SEC_NET, 0xFFFFFFFFu, "net section: count 4294967295 exceeds limit 1024"},
      {SEC_OPS, NT_FUNC_COUNT + 1, "ops section: 13 records of 80 bytes exceed its 960 bytes"},
      {SEC_PHASE, 5, "phase section: 5 records of 36 bytes exceed its 144 bytes"},
      {SEC_OPLOG, 14, "oplog section: 14 records of 80 bytes exceed its 1040 bytes"},
      {SEC_SEQ, 6, "seq section: 6 records of 32 bytes exceed its 160 bytes"},
      {SEC_NET, 5, "net section: 5 records of 48 bytes exceed its 192 bytes"},
  };
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    build(&wb, s, &l);
    patch(&wb, count_at(&l, counts[i].type), counts[i].count, 4);
    CHECK_DECODE_ERR(d, counts[i].err);
  }
  static const struct {
    int type;
    uint16_t reclen;
    const char *err;
  } lens[] = {
      {SEC_OPS, 79, "ops section: record length 79 is shorter than 80"},
      {SEC_PHASE, 35, "phase section: record length 35 is shorter than 36"},
      {SEC_OPLOG, 79, "oplog section: record length 79 is shorter than 80"},
      {SEC_SEQ, 31, "seq section: record length 31 is shorter than 32"},
      {SEC_NET, 47, "net section: record length 47 is shorter than 48"},
      {SEC_NET, 0, "net section: record length 0 is shorter than 48"},
  };
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    build(&wb, s, &l);
    patch(&wb, reclen_at(&l, lens[i].type), lens[i].reclen, 2);
    CHECK_DECODE_ERR(d, lens[i].err);
  }
  for (int t = SEC_OPS; t <= SEC_NET; t++) {
    build(&wb, s, &l);
    patch(&wb, l.at[t] + 4, 7, 4);
    char want[64];
    snprintf(want, sizeof want, "%s section: truncated table header",
             (const char *[]){"ops", "phase", "oplog", "seq", "net"}[t - SEC_OPS]);
    CHECK_DECODE_ERR(d, want);
  }
  /* Empty tables are fine; so are longer records (a newer minor's). */
  s->nops = s->nphases = s->noplog = s->nseq = s->nnet = 0;
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void new_values_out_of_range_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  s->process.phase = NT_MAX_PHASES + 1;
  EXPECT_REJECT(s, d, "process section: bad phase 64");
  s->process.phase = 0;
  EXPECT_ACCEPT(s, d);

  nt_op_row *o = &s->ops[4], ok = *o;
#define OPS_CASE(field, v, msg)                                                                    \
  o->field = v;                                                                                    \
  EXPECT_REJECT(s, d, msg);                                                                        \
  *o = ok
  OPS_CASE(kind, 2, "ops row 4: bad kind 2");
  OPS_CASE(func, NT_FUNC_COUNT, "ops row 4: bad function 12");
  OPS_CASE(func, 255, "ops row 4: bad function 255");
  OPS_CASE(algo, NT_ALGO_COUNT, "ops row 4: bad algorithm 9");
  OPS_CASE(proto, NT_PR_COUNT, "ops row 4: bad protocol 5");
  OPS_CASE(phase, NT_MAX_PHASES + 1, "ops row 4: bad phase 64");
  OPS_CASE(bucket, 64, "ops row 4: bad size bucket 64");
  OPS_CASE(comm_index, 3, "ops row 4: comm index 3 out of range (3 comms)");
  OPS_CASE(comm_index, NT_NO_COMM, "ops row 4: comm index 65535 out of range (3 comms)");
  OPS_CASE(done, o->count + 1, "ops row 4: more done than counted");
  OPS_CASE(gpu_done, o->done + 1, "ops row 4: more done than counted");
  o->done = o->count;
  o->gpu_done = o->done;
  EXPECT_ACCEPT(s, d);
#undef OPS_CASE

  nt_oplog_row *g = &s->oplog[7], gok = *g;
#define OPLOG_CASE(field, v, msg)                                                                  \
  g->field = v;                                                                                    \
  EXPECT_REJECT(s, d, msg);                                                                        \
  *g = gok
  OPLOG_CASE(kind, 255, "oplog row 7: bad kind 255");
  OPLOG_CASE(func, NT_FUNC_COUNT, "oplog row 7: bad function 12");
  OPLOG_CASE(algo, NT_ALGO_COUNT, "oplog row 7: bad algorithm 9");
  OPLOG_CASE(proto, NT_PR_COUNT, "oplog row 7: bad protocol 5");
  OPLOG_CASE(phase, 200, "oplog row 7: bad phase 200");
  OPLOG_CASE(dtype, NT_DT_COUNT, "oplog row 7: bad datatype 13");
  OPLOG_CASE(state, NT_OPS_COUNT, "oplog row 7: bad state 3");
  OPLOG_CASE(timing, NT_TIMING_COUNT, "oplog row 7: bad timing 3");
  OPLOG_CASE(comm_index, 3, "oplog row 7: comm index 3 out of range (3 comms)");
  OPLOG_CASE(comm_index, NT_NO_COMM, "oplog row 7: comm index 65535 out of range (3 comms)");
  OPLOG_CASE(children_open, g->children + 1, "oplog row 7: more children open than started");
  g->children = g->children_open = UINT32_MAX;
  EXPECT_ACCEPT(s, d);
#undef OPLOG_CASE

  nt_seq_row *q = &s->seq_rows[1], qok = *q;
  q->func = NT_FUNC_COUNT;
  EXPECT_REJECT(s, d, "seq row 1: bad function 12");
  *q = qok;
  q->comm_index = 3;
  EXPECT_REJECT(s, d, "seq row 1: comm index 3 out of range (3 comms)");
  q->comm_index = NT_NO_COMM;
  EXPECT_REJECT(s, d, "seq row 1: comm index 65535 out of range (3 comms)");
  *q = qok;

  nt_net_row *t = &s->net[2], tok = *t;
  t->type = 0;
  EXPECT_REJECT(s, d, "net row 2: bad type 0");
  t->type = 3;
  EXPECT_REJECT(s, d, "net row 2: bad type 3");
  *t = tok;
  t->comm_index = 3;
  EXPECT_REJECT(s, d, "net row 2: comm index 3 out of range (3 comms)");
  t->comm_index = NT_NO_COMM; /* net rows may belong to no known communicator */
  EXPECT_ACCEPT(s, d);
  CHECK(d->net[2].comm_index == NT_NO_COMM);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Phase rows, patched on the wire where the encoder cannot write the
 * value (a NUL inside a name, a length over 31). */
static void phase_rows_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  s->phases[3].id = 0;
  EXPECT_REJECT(s, d, "phase row 3: bad id 0");
  s->phases[3].id = NT_MAX_PHASES + 1;
  EXPECT_REJECT(s, d, "phase row 3: bad id 64");
  s->phases[3].id = 255;
  EXPECT_REJECT(s, d, "phase row 3: bad id 255");
  s->phases[3].id = 2;
  EXPECT_REJECT(s, d, "phase row 3: id 2 appears twice");
  s->phases[3].id = NT_MAX_PHASES;
  EXPECT_REJECT(s, d, "phase row 3: id 63 appears twice");
  s->phases[3].id = 7;
  EXPECT_ACCEPT(s, d);
  layout l = default_layout();
  build(&wb, s, &l);
  CHECK_DECODE_OK(d);
  wb.b[record_at(&wb, &l, SEC_PHASE, 0, 4 + 3)] = '\0'; /* "for\0ard" */
  CHECK_DECODE_ERR(d, "phase row 0: name contains a NUL byte");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_PHASE, 0, 1)] = 32;
  CHECK_DECODE_ERR(d, "phase row 0: name length 32 exceeds limit 31");
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_PHASE, 1, 1)] = 255;
  CHECK_DECODE_ERR(d, "phase row 1: name length 255 exceeds limit 31");
  /* Bytes after the name's length are padding, whatever they hold. */
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_PHASE, 0, 4 + 7)] = 'X';
  wb.b[record_at(&wb, &l, SEC_PHASE, 0, 3)] = 0xFF; /* reserved */
  CHECK_DECODE_OK(d);
  CHECK_STR(d->phases[0].name, "forward");
  /* A name of exactly 31 bytes, and an empty one. */
  CHECK_STR(d->phases[2].name, "0123456789abcdef0123456789abcde");
  CHECK(d->phases[2].id == NT_MAX_PHASES);
  CHECK_STR(d->phases[3].name, "");
  /* All 63 ids at once, in any order. */
  s->nphases = NT_MAX_PHASES;
  for (uint32_t i = 0; i < s->nphases; i++) {
    s->phases[i].id = (uint8_t)(NT_MAX_PHASES - i);
    snprintf(s->phases[i].name, sizeof s->phases[i].name, "phase %u", i);
  }
  EXPECT_ACCEPT(s, d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Reserved bytes of the new records are ignored, whatever they hold. */
static void reserved_bytes_are_ignored(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  for (size_t k = 3; k < 8; k++) wb.b[record_at(&wb, &l, SEC_SEQ, 2, k)] = 0xAB;
  wb.b[record_at(&wb, &l, SEC_NET, 1, 3)] = 0xAB;
  for (size_t k = 12; k < 16; k++) wb.b[record_at(&wb, &l, SEC_NET, 1, k)] = 0xAB;
  for (int t = SEC_OPS; t <= SEC_NET; t++) patch(&wb, l.at[t] + 2, 0xFFFF, 2);
  for (int t = SEC_OPS; t <= SEC_NET; t++) patch(&wb, l.at[t] + 14, 0xFFFF, 2);
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

int main(void) {
  TEST_RUN(new_fields_sit_at_their_documented_offsets);
  TEST_RUN(a_1_0_message_decodes_with_empty_1_1_fields);
  TEST_RUN(a_1_1_message_needs_every_1_1_part);
  TEST_RUN(new_counts_and_record_lengths_are_checked);
  TEST_RUN(new_values_out_of_range_are_rejected);
  TEST_RUN(phase_rows_are_checked);
  TEST_RUN(reserved_bytes_are_ignored);
  return TEST_DONE();
}

/* Protocol 1.2: the run state and relay rank of channel rows and the run
 * state, flags and progress age of operation log rows, at their documented
 * offsets (PROTOCOL.md, types 4 and 8); a 1.1 message read by a 1.2 reader
 * ("unknown", never a guess); and every check the new fields add, each with
 * its exact message ("What a reader rejects"). */
#include "proto_fixture.h"

static void the_new_fields_sit_at_their_documented_offsets(void) {
  nt_snapshot *s = sample();
  CHECK(s != NULL);
  layout l = default_layout();
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == wb.n && memcmp(enc, wb.b, n) == 0);
  const uint8_t *t = enc + l.at[SEC_CHANNEL];
  CHECK(rd(t + 12, 2) == 96);
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const uint8_t *r = t + 16 + i * 96;
    CHECK(r[88] == s->channels[i].run_state);
    CHECK(r[89] == 0 && r[90] == 0 && r[91] == 0);
    CHECK((int32_t)rd(r + 92, 4) == s->channels[i].relay_rank);
  }
  CHECK(s->channels[3].relay_rank == INT32_MAX && s->channels[4].relay_rank == 5);
  t = enc + l.at[SEC_OPLOG];
  CHECK(rd(t + 12, 2) == 80);
  for (uint32_t i = 0; i < s->noplog; i++) {
    const uint8_t *r = t + 16 + i * 80;
    CHECK(r[64] == s->oplog[i].run_state && r[65] == s->oplog[i].flags);
    CHECK(r[66] == s->oplog[i].variant); /* reserved in 1.2 and 1.3: test_proto_1_4.c */
    for (int k = 67; k < 72; k++) CHECK(r[k] == 0);
    CHECK(rd(r + 72, 8) == s->oplog[i].progress_age_ns);
  }
  nt_snapshot_free(s);
}

/* A 1.1 publisher does not say whether work has started: its rows read
 * "unknown" (and "never" for the progress age), not "idle" or "queued". */
static void a_1_1_message_reads_as_unknown(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l;
  CHECK(decodes_as_older(s, 1, drop_1_2, d, &l));
  CHECK(rd(wb.b + l.at[SEC_CHANNEL] + 12, 2) == 88 && rd(wb.b + l.at[SEC_OPLOG] + 12, 2) == 64);
  for (uint32_t i = 0; i < d->nchannels; i++)
    CHECK(d->channels[i].run_state == NT_RUN_UNKNOWN && d->channels[i].relay_rank == -1);
  for (uint32_t i = 0; i < d->noplog; i++)
    CHECK(d->oplog[i].run_state ==
          (d->oplog[i].state == NT_OPS_DONE ? NT_RUN_IDLE : NT_RUN_UNKNOWN));
  CHECK_STR(nt_run_name(NT_RUN_UNKNOWN), "unknown");
  CHECK_STR(nt_run_name(NT_RUN_QUEUED), "queued");
  /* 1.1 bytes labelled 1.2 are a message cut short, not zeros. */
  patch(&wb, 6, 2, 2);
  CHECK_DECODE_ERR(d, "channel section: record length 88 is shorter than 96");
  l.minor = 2;
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_OPLOG), 79, 2);
  CHECK_DECODE_ERR(d, "oplog section: record length 79 is shorter than 80");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void run_states_must_agree_with_the_counts(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  nt_channel_row *c = &s->channels[2], cok = *c;
  CHECK(c->ops_started != c->ops_done);
  c->run_state = NT_RUN_COUNT;
  EXPECT_REJECT(s, d, "channel row 2: bad run state 4");
  c->run_state = NT_RUN_UNKNOWN; /* a publisher that cannot tell: any counts */
  EXPECT_ACCEPT(s, d);
  c->ops_done = c->ops_started;
  EXPECT_ACCEPT(s, d);
  *c = cok;
  c->run_state = NT_RUN_IDLE;
  EXPECT_REJECT(s, d, "channel row 2: run state idle with 2 ops in flight");
  *c = cok;
  c->ops_done = c->ops_started;
  EXPECT_REJECT(s, d, "channel row 2: run state queued with 0 ops in flight");
  *c = cok;
  c->relay_rank = -2;
  EXPECT_REJECT(s, d, "channel row 2: bad relay rank -2");
  *c = cok;
  EXPECT_ACCEPT(s, d);

  uint32_t fl = 0, dn = 0;
  for (uint32_t i = 0; i < s->noplog; i++) {
    if (s->oplog[i].state == NT_OPS_IN_FLIGHT && !fl) fl = i;
    if (s->oplog[i].state == NT_OPS_DONE && !dn) dn = i;
  }
  CHECK(fl && dn);
  nt_oplog_row *g = &s->oplog[fl], gok = *g;
  g->run_state = NT_RUN_COUNT;
  char msg[96];
  snprintf(msg, sizeof msg, "oplog row %u: bad run state 4", fl);
  EXPECT_REJECT(s, d, msg);
  g->run_state = NT_RUN_IDLE;
  snprintf(msg, sizeof msg, "oplog row %u: run state idle for a in_flight operation", fl);
  EXPECT_REJECT(s, d, msg);
  *g = gok;
  nt_oplog_row *h = &s->oplog[dn];
  h->run_state = NT_RUN_RUNNING;
  snprintf(msg, sizeof msg, "oplog row %u: run state running for a done operation", dn);
  EXPECT_REJECT(s, d, msg);
  h->run_state = NT_RUN_IDLE;
  /* Flag bits a newer minor may add are ignored, and kept as given. */
  g->flags = 0xFF;
  EXPECT_ACCEPT(s, d);
  CHECK(d->oplog[fl].flags == 0xFF);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void reserved_bytes_of_1_2_are_ignored(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  for (size_t k = 89; k < 92; k++) wb.b[record_at(&wb, &l, SEC_CHANNEL, 1, k)] = 0xAB;
  /* Byte 66 is 1.4's variant (test_proto_1_4.c); 67 to 71 stay reserved. */
  for (size_t k = 67; k < 72; k++) wb.b[record_at(&wb, &l, SEC_OPLOG, 2, k)] = 0xAB;
  CHECK_DECODE_OK(d);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

int main(void) {
  TEST_RUN(the_new_fields_sit_at_their_documented_offsets);
  TEST_RUN(a_1_1_message_reads_as_unknown);
  TEST_RUN(run_states_must_agree_with_the_counts);
  TEST_RUN(reserved_bytes_of_1_2_are_ignored);
  return TEST_DONE();
}

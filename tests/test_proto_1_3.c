/* Protocol 1.3: the kernel phases of kernel rows (per phase GPU time) and
 * of operation statistics rows (sync and compute time), and the source of
 * a phase name (nccltop_tag or NCCL 2.31's userTag), at their documented
 * offsets (PROTOCOL.md, types 5, 6 and 7); a 1.2 message read by a 1.3
 * reader (no phase time, every phase from nccltop_tag); and the check the
 * new field adds. */
#include "proto_fixture.h"

static void the_new_fields_sit_at_their_documented_offsets(void) {
  nt_snapshot *s = sample();
  CHECK(s != NULL);
  layout l = default_layout();
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == wb.n && memcmp(enc, wb.b, n) == 0);
  const uint8_t *t = enc + l.at[SEC_KERNEL];
  CHECK(rd(t + 12, 2) == 56);
  for (uint32_t i = 0; i < s->nkernels; i++) {
    const uint8_t *r = t + 16 + i * 56;
    for (int k = 0; k < NT_KPHASE_COUNT; k++)
      CHECK(rd(r + 32 + 8 * k, 8) == s->kernels[i].phase_ns[k]);
  }
  CHECK(s->kernels[0].phase_ns[NT_KPHASE_COMPUTE] != 0 && s->kernels[1].phase_ns[0] == 0);
  t = enc + l.at[SEC_OPS];
  CHECK(rd(t + 12, 2) == 80); /* 72 in 1.3; 1.4 appended 8 bytes */
  for (uint32_t i = 0; i < s->nops; i++) {
    const uint8_t *r = t + 16 + i * 80;
    CHECK(rd(r + 56, 8) == s->ops[i].sync_ns && rd(r + 64, 8) == s->ops[i].compute_ns);
  }
  t = enc + l.at[SEC_PHASE];
  CHECK(rd(t + 12, 2) == 36);
  for (uint32_t i = 0; i < s->nphases; i++) {
    const uint8_t *r = t + 16 + i * 36;
    CHECK(r[2] == s->phases[i].source && r[3] == 0);
  }
  CHECK(s->phases[3].source == NT_PHASE_USER_TAG && s->phases[0].source == NT_PHASE_NCCLTOP_TAG);
  nt_snapshot_free(s);
}

/* A 1.2 publisher knows no kernel phase and no userTag: its rows read as
 * "no phase time" and "nccltop_tag", whatever its reserved bytes hold. */
static void a_1_2_message_reads_without_phases(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l;
  CHECK(decodes_as_older(s, 2, drop_1_3, d, &l));
  CHECK(rd(wb.b + l.at[SEC_KERNEL] + 12, 2) == 32 && rd(wb.b + l.at[SEC_OPS] + 12, 2) == 56);
  for (uint32_t i = 0; i < d->nphases; i++) CHECK(d->phases[i].source == NT_PHASE_NCCLTOP_TAG);
  /* 1.2 bytes labelled 1.3 are a message cut short, not zeros. */
  patch(&wb, 6, 3, 2);
  CHECK_DECODE_ERR(d, "kernel section: record length 32 is shorter than 56");
  l.minor = 3;
  build(&wb, s, &l);
  patch(&wb, reclen_at(&l, SEC_OPS), 71, 2);
  CHECK_DECODE_ERR(d, "ops section: record length 71 is shorter than 72");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void a_phase_source_must_be_known(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_PHASE, 1, 2)] = NT_PHASE_SOURCE_COUNT;
  CHECK_DECODE_ERR(d, "phase row 1: bad source 2");
  wb.b[record_at(&wb, &l, SEC_PHASE, 1, 2)] = NT_PHASE_USER_TAG;
  CHECK_DECODE_OK(d);
  CHECK(d->phases[1].source == NT_PHASE_USER_TAG);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Before 1.3 a phase row's byte 2 is reserved: not read, whatever it holds
 * (a 1.2 writer wrote 0), so it neither names a source nor fails a check. */
static void a_1_2_phase_rows_reserved_byte_is_not_read(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  l.minor = 2;
  build(&wb, s, &l);
  wb.b[record_at(&wb, &l, SEC_PHASE, 1, 2)] = NT_PHASE_USER_TAG;
  wb.b[record_at(&wb, &l, SEC_PHASE, 2, 2)] = 0xff;
  CHECK_DECODE_OK(d);
  for (uint32_t i = 0; i < d->nphases; i++) CHECK(d->phases[i].source == NT_PHASE_NCCLTOP_TAG);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

int main(void) {
  TEST_RUN(the_new_fields_sit_at_their_documented_offsets);
  TEST_RUN(a_1_2_message_reads_without_phases);
  TEST_RUN(a_phase_source_must_be_known);
  TEST_RUN(a_1_2_phase_rows_reserved_byte_is_not_read);
  return TEST_DONE();
}

/* The snapshot sections protocol 1.1 added: operation statistics, phase
 * names, the operation log, per-function sequence numbers and network
 * plugin rows; and 1.4's kernel variant names. Layout in PROTOCOL.md, fields
 * in snapshot_rows.h; the same rules as the 1.0 sections (every count and
 * value checked, records may grow in newer minors). */
#include "wire.h"

size_t nt_ops_encoded_max(const nt_snapshot *s) {
  const int minor = NT_PROTO_MINOR;
  return 6 * (NT_SECTION_HEADER + NT_TABLE_HEADER) + (size_t)s->nops * NT_ROW_LEN(NT_OP_ROW) +
         (size_t)s->nphases * NT_ROW_LEN(NT_PHASE_ROW) +
         (size_t)s->noplog * NT_ROW_LEN(NT_OPLOG_ROW) + (size_t)s->nseq * NT_ROW_LEN(NT_SEQ_ROW) +
         (size_t)s->nnet * NT_ROW_LEN(NT_NET_ROW) +
         (size_t)s->nvariants * NT_ROW_LEN(NT_VARIANT_ROW);
}

uint8_t *nt_ops_encode(const nt_snapshot *s, uint8_t *p) {
  NT_ENCODE_TABLE(p, NT_SEC_OPS, NT_OP_ROW, nt_op_row, s->ops, s->nops);
  NT_ENCODE_TABLE(p, NT_SEC_PHASES, NT_PHASE_ROW, nt_phase_row, s->phases, s->nphases);
  NT_ENCODE_TABLE(p, NT_SEC_OPLOG, NT_OPLOG_ROW, nt_oplog_row, s->oplog, s->noplog);
  NT_ENCODE_TABLE(p, NT_SEC_SEQ, NT_SEQ_ROW, nt_seq_row, s->seq_rows, s->nseq);
  NT_ENCODE_TABLE(p, NT_SEC_NET, NT_NET_ROW, nt_net_row, s->net, s->nnet);
  NT_ENCODE_TABLE(p, NT_SEC_VARIANTS, NT_VARIANT_ROW, nt_variant_row, s->variants, s->nvariants);
  return p;
}

/* ---- reading: the tables check each field; these, what they cannot say ---- */

/* A kernel variant names a symmetric-kernel collective, never a p2p. */
static int variant_rule(const char *what, uint32_t i, uint8_t kind, uint8_t variant, char *err,
                        size_t errlen) {
  if (variant && kind != NT_OP_COLL)
    return nt_wire_fail(err, errlen, "%s row %u: variant %u on a p2p operation", what, i, variant);
  return 0;
}

static int ops_rule(const nt_op_row *r, uint32_t i, const nt_snapshot *s, char *err,
                    size_t errlen) {
  (void)s;
  if (variant_rule("ops", i, r->kind, r->variant, err, errlen)) return -1;
  if (r->done > r->count || r->gpu_done > r->done)
    return nt_wire_fail(err, errlen, "ops row %u: more done than counted", i);
  return 0;
}

static int oplog_rule(const nt_oplog_row *r, uint32_t i, const nt_snapshot *s, char *err,
                      size_t errlen) {
  (void)s;
  if (variant_rule("oplog", i, r->kind, r->variant, err, errlen)) return -1;
  if (r->children_open > r->children)
    return nt_wire_fail(err, errlen, "oplog row %u: more children open than started", i);
  if (r->run_state != NT_RUN_UNKNOWN &&
      (r->state == NT_OPS_IN_FLIGHT) == (r->run_state == NT_RUN_IDLE))
    return nt_wire_fail(err, errlen, "oplog row %u: run state %s for a %s operation", i,
                        nt_run_name(r->run_state), nt_op_state_name(r->state));
  return 0;
}

/* Ids 1..63 name one row each (the table checks the range). */
static int id_once(uint64_t *seen, const char *what, uint32_t i, uint8_t id, char *err,
                   size_t errlen) {
  if (*seen & (1ull << id))
    return nt_wire_fail(err, errlen, "%s row %u: id %u appears twice", what, i, id);
  *seen |= 1ull << id;
  return 0;
}

static int decode_ops(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_OPS, 1, NT_OP_ROW, nt_op_row, NT_MAX_OP_ROWS, s->ops, s->nops, ops_rule);
}

static int decode_phases(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint64_t seen = 0;
#define PHASE_RULE(r, i, s, err, errlen) id_once(&seen, "phase", i, (r)->id, err, errlen)
  NT_DECODE_TABLE(NT_SEC_PHASES, 1, NT_PHASE_ROW, nt_phase_row, NT_MAX_PHASES, s->phases,
                  s->nphases, PHASE_RULE);
#undef PHASE_RULE
}

static int decode_oplog(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_OPLOG, 1, NT_OPLOG_ROW, nt_oplog_row, NT_MAX_OPLOG, s->oplog, s->noplog,
                  oplog_rule);
}

static int decode_seq(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_SEQ, 1, NT_SEQ_ROW, nt_seq_row, NT_MAX_SEQ_ROWS, s->seq_rows, s->nseq,
                  NT_NO_RULE);
}

static int decode_net(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_NET, 1, NT_NET_ROW, nt_net_row, NT_MAX_NET_ROWS, s->net, s->nnet,
                  NT_NO_RULE);
}

static int decode_variants(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint64_t seen = 0;
#define VARIANT_RULE(r, i, s, err, errlen) id_once(&seen, "variant", i, (r)->id, err, errlen)
  NT_DECODE_TABLE(NT_SEC_VARIANTS, 4, NT_VARIANT_ROW, nt_variant_row, NT_MAX_VARIANTS, s->variants,
                  s->nvariants, VARIANT_RULE);
#undef VARIANT_RULE
}

int nt_ops_decode_section(int type, nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  switch (type) {
  case NT_SEC_OPS: return decode_ops(c, s, err, errlen);
  case NT_SEC_PHASES: return decode_phases(c, s, err, errlen);
  case NT_SEC_OPLOG: return decode_oplog(c, s, err, errlen);
  case NT_SEC_SEQ: return decode_seq(c, s, err, errlen);
  case NT_SEC_NET: return decode_net(c, s, err, errlen);
  case NT_SEC_VARIANTS: return decode_variants(c, s, err, errlen);
  default: return 0; /* a newer minor's section: skipped */
  }
}

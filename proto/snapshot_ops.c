/* The snapshot sections protocol 1.1 added: operation statistics, phase
 * names, the operation log, per-function sequence numbers and network
 * plugin rows; and 1.4's kernel variant names. Layout in PROTOCOL.md; the same rules as the 1.0
 * sections (every count and value checked, records may grow in newer minors). */
#include "wire.h"

#define OPS_LEN_1_2   56
#define OPS_LEN_1_3   72
#define OPS_LEN       80
#define PHASE_LEN     36
#define OPLOG_LEN_1_1 64
#define OPLOG_LEN     80
#define SEQ_LEN       32
#define NET_LEN       48
#define VARIANT_LEN   52

size_t nt_ops_encoded_max(const nt_snapshot *s) {
  return 6 * (NT_SECTION_HEADER + NT_TABLE_HEADER) + (size_t)s->nops * OPS_LEN +
         (size_t)s->nphases * PHASE_LEN + (size_t)s->noplog * OPLOG_LEN +
         (size_t)s->nseq * SEQ_LEN + (size_t)s->nnet * NET_LEN + (size_t)s->nvariants * VARIANT_LEN;
}

uint8_t *nt_ops_encode(const nt_snapshot *s, uint8_t *p) {
  p = nt_table_start(p, NT_SEC_OPS, s->nops, OPS_LEN);
  for (uint32_t i = 0; i < s->nops; i++) {
    const nt_op_row *r = &s->ops[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->kind);
    p = nt_put8(p, r->func);
    p = nt_put8(p, r->algo);
    p = nt_put8(p, r->proto);
    p = nt_put8(p, r->bucket);
    p = nt_put8(p, r->phase);
    p = nt_put64(p, r->count);
    p = nt_put64(p, r->bytes);
    p = nt_put64(p, r->done);
    p = nt_put64(p, r->done_bytes);
    p = nt_put64(p, r->time_ns);
    p = nt_put64(p, r->gpu_done);
    p = nt_put64(p, r->sync_ns);
    p = nt_put64(p, r->compute_ns);
    p = nt_put8(p, r->variant); /* 1.4 */
    p = nt_zeros(p, 7);
  }
  p = nt_table_start(p, NT_SEC_PHASES, s->nphases, PHASE_LEN);
  for (uint32_t i = 0; i < s->nphases; i++) {
    const nt_phase_row *r = &s->phases[i];
    size_t n = strnlen(r->name, NT_MAX_PHASE);
    p = nt_put8(p, r->id);
    p = nt_put8(p, (uint8_t)n);
    p = nt_put8(p, r->source); /* 1.3; reserved (0) before */
    p = nt_zeros(p, 1);
    memcpy(p, r->name, n);
    p = nt_zeros(p + n, 32 - n);
  }
  p = nt_table_start(p, NT_SEC_OPLOG, s->noplog, OPLOG_LEN);
  for (uint32_t i = 0; i < s->noplog; i++) {
    const nt_oplog_row *r = &s->oplog[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->kind);
    p = nt_put8(p, r->func);
    p = nt_put8(p, r->algo);
    p = nt_put8(p, r->proto);
    p = nt_put8(p, r->dtype);
    p = nt_put8(p, r->phase);
    p = nt_put8(p, r->state);
    p = nt_put8(p, r->timing);
    p = nt_put8(p, r->nchannels);
    p = nt_put8(p, r->nwarps);
    p = nt_put32(p, (uint32_t)r->root_peer);
    p = nt_put64(p, r->seq);
    p = nt_put64(p, r->count);
    p = nt_put64(p, r->bytes);
    p = nt_put64(p, r->age_ns);
    p = nt_put64(p, r->duration_ns);
    p = nt_put32(p, r->children);
    p = nt_put32(p, r->children_open);
    p = nt_put8(p, r->run_state);
    p = nt_put8(p, r->flags);
    p = nt_put8(p, r->variant); /* 1.4; reserved (0) before */
    p = nt_zeros(p, 5);
    p = nt_put64(p, r->progress_age_ns);
  }
  p = nt_table_start(p, NT_SEC_SEQ, s->nseq, SEQ_LEN);
  for (uint32_t i = 0; i < s->nseq; i++) {
    const nt_seq_row *r = &s->seq_rows[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->func);
    p = nt_zeros(p, 5);
    p = nt_put64(p, r->launched);
    p = nt_put64(p, r->done);
    p = nt_put64(p, r->last_launch_age_ns);
  }
  p = nt_table_start(p, NT_SEC_NET, s->nnet, NET_LEN);
  for (uint32_t i = 0; i < s->nnet; i++) {
    const nt_net_row *r = &s->net[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->type);
    p = nt_zeros(p, 1);
    p = nt_put32(p, (uint32_t)r->device);
    p = nt_put32(p, r->id);
    p = nt_zeros(p, 4);
    p = nt_put64(p, r->count);
    p = nt_put64(p, r->bytes);
    p = nt_put64(p, r->busy_ns);
    p = nt_put64(p, r->in_flight);
  }
  p = nt_table_start(p, NT_SEC_VARIANTS, s->nvariants, VARIANT_LEN);
  for (uint32_t i = 0; i < s->nvariants; i++) {
    const nt_variant_row *r = &s->variants[i];
    size_t n = strnlen(r->name, NT_MAX_VARIANT);
    p = nt_put8(p, r->id);
    p = nt_put8(p, (uint8_t)n);
    p = nt_zeros(p, 2);
    memcpy(p, r->name, n);
    p = nt_zeros(p + n, NT_MAX_VARIANT + 1 - n);
  }
  return p;
}

/* ---- reading ---- */

static bool comm_ok(uint16_t ci, const nt_snapshot *s, bool allow_none) {
  return ci < s->ncomms || (allow_none && ci == NT_NO_COMM);
}

#define BAD(what, i, field, v)                                                                     \
  nt_wire_fail(err, errlen, "%s row %u: bad %s %u", what, i, field, (unsigned)(v))
#define BAD_COMM(what, i, ci)                                                                      \
  nt_wire_fail(err, errlen, "%s row %u: comm index %u out of range (%u comms)", what, i, ci,       \
               s->ncomms)

/* The names shared by ops and oplog rows. */
static int check_names(const char *what, uint32_t i, uint8_t kind, uint8_t func, uint8_t algo,
                       uint8_t proto, uint8_t phase, uint8_t variant, char *err, size_t errlen) {
  if (kind > NT_OP_P2P) return BAD(what, i, "kind", kind);
  if (func >= NT_FUNC_COUNT) return BAD(what, i, "function", func);
  if (algo >= NT_ALGO_COUNT) return BAD(what, i, "algorithm", algo);
  if (proto >= NT_PR_COUNT) return BAD(what, i, "protocol", proto);
  if (phase > NT_MAX_PHASES) return BAD(what, i, "phase", phase);
  if (variant > NT_MAX_VARIANTS) return BAD(what, i, "variant", variant);
  if (variant && kind != NT_OP_COLL)
    return nt_wire_fail(err, errlen, "%s row %u: variant %u on a p2p operation", what, i, variant);
  return 0;
}

static int decode_ops(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  bool v1_3 = s->minor >= 3, v1_4 = s->minor >= 4;
  if (nt_wire_table(c, NT_SEC_OPS, NT_MAX_OP_ROWS,
                    v1_4   ? OPS_LEN
                    : v1_3 ? OPS_LEN_1_3
                           : OPS_LEN_1_2,
                    &n, &rl, err, errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_op_row *r = &s->ops[i];
    r->comm_index = nt_get16(c);
    r->kind = nt_get8(c);
    r->func = nt_get8(c);
    r->algo = nt_get8(c);
    r->proto = nt_get8(c);
    r->bucket = nt_get8(c);
    r->phase = nt_get8(c);
    r->count = nt_get64(c);
    r->bytes = nt_get64(c);
    r->done = nt_get64(c);
    r->done_bytes = nt_get64(c);
    r->time_ns = nt_get64(c);
    r->gpu_done = nt_get64(c);
    r->sync_ns = v1_3 ? nt_get64(c) : 0;
    r->compute_ns = v1_3 ? nt_get64(c) : 0;
    r->variant = v1_4 ? nt_get8(c) : 0;
    c->p = next;
    if (!comm_ok(r->comm_index, s, false)) return BAD_COMM("ops", i, r->comm_index);
    if (check_names("ops", i, r->kind, r->func, r->algo, r->proto, r->phase, r->variant, err,
                    errlen))
      return -1;
    if (r->bucket > 63) return BAD("ops", i, "size bucket", r->bucket);
    if (r->done > r->count || r->gpu_done > r->done)
      return nt_wire_fail(err, errlen, "ops row %u: more done than counted", i);
  }
  s->nops = n;
  return 0;
}

static int decode_phases(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (nt_wire_table(c, NT_SEC_PHASES, NT_MAX_PHASES, PHASE_LEN, &n, &rl, err, errlen)) return -1;
  uint64_t seen = 0;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_phase_row *r = &s->phases[i];
    r->id = nt_get8(c);
    uint8_t len = nt_get8(c);
    r->source = nt_get8(c); /* 0 (nccltop_tag) in a 1.1 or 1.2 message */
    c->p += 1;
    if (r->id < 1 || r->id > NT_MAX_PHASES) return BAD("phase", i, "id", r->id);
    if (r->source >= NT_PHASE_SOURCE_COUNT) return BAD("phase", i, "source", r->source);
    if (seen & (1ull << r->id))
      return nt_wire_fail(err, errlen, "phase row %u: id %u appears twice", i, r->id);
    seen |= 1ull << r->id;
    if (len > NT_MAX_PHASE)
      return nt_wire_fail(err, errlen, "phase row %u: name length %u exceeds limit %d", i, len,
                          NT_MAX_PHASE);
    if (memchr(c->p, '\0', len))
      return nt_wire_fail(err, errlen, "phase row %u: name contains a NUL byte", i);
    memcpy(r->name, c->p, len);
    r->name[len] = '\0';
    c->p = next;
  }
  s->nphases = n;
  return 0;
}

static int decode_oplog(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  bool v1_2 = s->minor >= 2;
  if (nt_wire_table(c, NT_SEC_OPLOG, NT_MAX_OPLOG, v1_2 ? OPLOG_LEN : OPLOG_LEN_1_1, &n, &rl, err,
                    errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_oplog_row *r = &s->oplog[i];
    r->comm_index = nt_get16(c);
    r->kind = nt_get8(c);
    r->func = nt_get8(c);
    r->algo = nt_get8(c);
    r->proto = nt_get8(c);
    r->dtype = nt_get8(c);
    r->phase = nt_get8(c);
    r->state = nt_get8(c);
    r->timing = nt_get8(c);
    r->nchannels = nt_get8(c);
    r->nwarps = nt_get8(c);
    r->root_peer = (int32_t)nt_get32(c);
    r->seq = nt_get64(c);
    r->count = nt_get64(c);
    r->bytes = nt_get64(c);
    r->age_ns = nt_get64(c);
    r->duration_ns = nt_get64(c);
    r->children = nt_get32(c);
    r->children_open = nt_get32(c);
    /* A 1.1 publisher does not say: what is not done may be running. */
    r->run_state = r->state == NT_OPS_DONE ? NT_RUN_IDLE : NT_RUN_UNKNOWN;
    r->flags = 0;
    r->progress_age_ns = UINT64_MAX;
    r->variant = 0;
    if (v1_2) {
      r->run_state = nt_get8(c);
      r->flags = nt_get8(c);
      uint8_t variant = nt_get8(c); /* reserved before 1.4: not read */
      if (s->minor >= 4) r->variant = variant;
      c->p += 5;
      r->progress_age_ns = nt_get64(c);
    }
    c->p = next;
    if (!comm_ok(r->comm_index, s, false)) return BAD_COMM("oplog", i, r->comm_index);
    if (check_names("oplog", i, r->kind, r->func, r->algo, r->proto, r->phase, r->variant, err,
                    errlen))
      return -1;
    if (r->dtype >= NT_DT_COUNT) return BAD("oplog", i, "datatype", r->dtype);
    if (r->state >= NT_OPS_COUNT) return BAD("oplog", i, "state", r->state);
    if (r->timing >= NT_TIMING_COUNT) return BAD("oplog", i, "timing", r->timing);
    if (r->children_open > r->children)
      return nt_wire_fail(err, errlen, "oplog row %u: more children open than started", i);
    if (r->run_state >= NT_RUN_COUNT) return BAD("oplog", i, "run state", r->run_state);
    if (r->run_state != NT_RUN_UNKNOWN &&
        (r->state == NT_OPS_IN_FLIGHT) == (r->run_state == NT_RUN_IDLE))
      return nt_wire_fail(err, errlen, "oplog row %u: run state %s for a %s operation", i,
                          nt_run_name(r->run_state), nt_op_state_name(r->state));
  }
  s->noplog = n;
  return 0;
}

static int decode_seq(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (nt_wire_table(c, NT_SEC_SEQ, NT_MAX_SEQ_ROWS, SEQ_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_seq_row *r = &s->seq_rows[i];
    r->comm_index = nt_get16(c);
    r->func = nt_get8(c);
    c->p += 5;
    r->launched = nt_get64(c);
    r->done = nt_get64(c);
    r->last_launch_age_ns = nt_get64(c);
    c->p = next;
    if (!comm_ok(r->comm_index, s, false)) return BAD_COMM("seq", i, r->comm_index);
    if (r->func >= NT_FUNC_COUNT) return BAD("seq", i, "function", r->func);
  }
  s->nseq = n;
  return 0;
}

static int decode_net(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (nt_wire_table(c, NT_SEC_NET, NT_MAX_NET_ROWS, NET_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_net_row *r = &s->net[i];
    r->comm_index = nt_get16(c);
    r->type = nt_get8(c);
    c->p += 1;
    r->device = (int32_t)nt_get32(c);
    r->id = nt_get32(c);
    c->p += 4;
    r->count = nt_get64(c);
    r->bytes = nt_get64(c);
    r->busy_ns = nt_get64(c);
    r->in_flight = nt_get64(c);
    c->p = next;
    if (!comm_ok(r->comm_index, s, true)) return BAD_COMM("net", i, r->comm_index);
    if (r->type != NT_NET_IB_QP && r->type != NT_NET_SOCKET) return BAD("net", i, "type", r->type);
  }
  s->nnet = n;
  return 0;
}

static int decode_variants(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (nt_wire_table(c, NT_SEC_VARIANTS, NT_MAX_VARIANTS, VARIANT_LEN, &n, &rl, err, errlen))
    return -1;
  uint64_t seen = 0;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_variant_row *r = &s->variants[i];
    r->id = nt_get8(c);
    uint8_t len = nt_get8(c);
    c->p += 2;
    if (r->id < 1 || r->id > NT_MAX_VARIANTS) return BAD("variant", i, "id", r->id);
    if (seen & (1ull << r->id))
      return nt_wire_fail(err, errlen, "variant row %u: id %u appears twice", i, r->id);
    seen |= 1ull << r->id;
    if (len > NT_MAX_VARIANT)
      return nt_wire_fail(err, errlen, "variant row %u: name length %u exceeds limit %d", i, len,
                          NT_MAX_VARIANT);
    if (memchr(c->p, '\0', len))
      return nt_wire_fail(err, errlen, "variant row %u: name contains a NUL byte", i);
    memcpy(r->name, c->p, len);
    r->name[len] = '\0';
    c->p = next;
  }
  s->nvariants = n;
  return 0;
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

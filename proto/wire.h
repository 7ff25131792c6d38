/* Little-endian field writers and bounds-checked readers shared by the
 * snapshot's section codecs (snapshot.c, snapshot_ops.c; the helpers that
 * are functions live in wire.c), and the macros that make the row tables
 * of snapshot_rows.h into their encoders and decoders. Internal to proto/:
 * every field is written and read on its own, so neither the host's byte
 * order nor its struct layout reaches the wire. */
#ifndef NCCLTOP_PROTO_WIRE_H
#define NCCLTOP_PROTO_WIRE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nccltop_proto.h"

#define NT_SECTION_HEADER 8
#define NT_TABLE_HEADER   8

/* Section types, in the order a publisher writes them. */
enum {
  NT_SEC_PROCESS = 1,
  NT_SEC_COMMS,
  NT_SEC_PROXY,
  NT_SEC_CHANNELS,
  NT_SEC_KERNELS,
  NT_SEC_LAST_1_0 = NT_SEC_KERNELS,
  NT_SEC_OPS, /* 1.1 */
  NT_SEC_PHASES,
  NT_SEC_OPLOG,
  NT_SEC_SEQ,
  NT_SEC_NET,
  NT_SEC_LAST_1_3 = NT_SEC_NET,
  NT_SEC_VARIANTS, /* 1.4 */
  NT_SEC_MAX
};
extern const char *const nt_sec_name[NT_SEC_MAX];

/* On a little-endian host a scalar memcpy is the byte order already;
 * elsewhere the bytes are spelled out. */
#ifndef NT_HOST_LE /* -DNT_HOST_LE=0 tests the portable path */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NT_HOST_LE 1
#else
#define NT_HOST_LE 0
#endif
#endif

static inline uint8_t *nt_put8(uint8_t *p, uint8_t v) {
  *p = v;
  return p + 1;
}
static inline uint8_t *nt_put16(uint8_t *p, uint16_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 2);
  } else {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
  }
  return p + 2;
}
static inline uint8_t *nt_put32(uint8_t *p, uint32_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
  }
  return p + 4;
}
static inline uint8_t *nt_put64(uint8_t *p, uint64_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
  }
  return p + 8;
}
static inline uint8_t *nt_zeros(uint8_t *p, size_t n) {
  memset(p, 0, n);
  return p + n;
}
/* A table section's section and table headers. */
static inline uint8_t *nt_table_start(uint8_t *p, int type, uint32_t count, uint16_t reclen) {
  p = nt_put16(p, (uint16_t)type);
  p = nt_put16(p, 0);
  p = nt_put32(p, NT_TABLE_HEADER + count * (uint32_t)reclen);
  p = nt_put32(p, count);
  p = nt_put16(p, reclen);
  return nt_put16(p, 0);
}

/* Callers check that enough bytes remain before reading a group of fields;
 * the getters themselves do not. */
typedef struct {
  const uint8_t *p, *end;
} nt_cursor;

static inline size_t nt_left(const nt_cursor *c) {
  return (size_t)(c->end - c->p);
}
static inline uint8_t nt_get8(nt_cursor *c) {
  return *c->p++;
}
static inline uint16_t nt_get16(nt_cursor *c) {
  uint16_t v;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 2);
  else
    v = (uint16_t)(c->p[0] | c->p[1] << 8);
  c->p += 2;
  return v;
}
static inline uint32_t nt_get32(nt_cursor *c) {
  uint32_t v = 0;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 4);
  else
    for (int i = 0; i < 4; i++) v |= (uint32_t)c->p[i] << (8 * i);
  c->p += 4;
  return v;
}
static inline uint64_t nt_get64(nt_cursor *c) {
  uint64_t v = 0;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 8);
  else
    for (int i = 0; i < 8; i++) v |= (uint64_t)c->p[i] << (8 * i);
  c->p += 8;
  return v;
}

/* Writes the reason into err and returns -1 (wire.c). */
int nt_wire_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "<what> row <row>: bad <field> <v>", or "<what> section: bad <field> <v>"
 * when row < 0 (the process section); returns -1. */
int nt_wire_bad(char *err, size_t errlen, const char *what, long row, const char *field,
                long long v);
/* A table's header: count and record length, checked against the limit,
 * the record size this version knows and the section's length. */
int nt_wire_table(nt_cursor *c, int type, uint32_t limit, uint16_t known, uint32_t *count,
                  uint16_t *reclen, char *err, size_t errlen);

/* ---- the row tables (snapshot_rows.h) made code ----
 *
 * Each macro below expands a table's rows into statements; they use names
 * of the function they expand in: `p` (the write pointer) and `r` (the
 * row) when encoding; `c` (the cursor), `r`, `s` (the snapshot), `minor`
 * (the message's minor version), `what_` and `row_` (for messages), `err`
 * and `errlen` when decoding. The generated code is what one would write by
 * hand: one put or get per field, no table walked at run time, so the
 * publisher's encoder costs what it did. */

#define NT_WSIZE_U8  1
#define NT_WSIZE_U16 2
#define NT_WSIZE_U32 4
#define NT_WSIZE_U64 8
#define NT_WSIZE_I32 4

#define NT_PUT_U8(p, v)  nt_put8(p, v)
#define NT_PUT_U16(p, v) nt_put16(p, v)
#define NT_PUT_U32(p, v) nt_put32(p, v)
#define NT_PUT_U64(p, v) nt_put64(p, v)
#define NT_PUT_I32(p, v) nt_put32(p, (uint32_t)(v))
#define NT_GET_U8(c)     nt_get8(c)
#define NT_GET_U16(c)    nt_get16(c)
#define NT_GET_U32(c)    nt_get32(c)
#define NT_GET_U64(c)    nt_get64(c)
#define NT_GET_I32(c)    ((int32_t)nt_get32(c))

/* Each row's bytes in a message of minor version `minor` (a local). */
#define NT_LEN_F(type, m, since, read, absent, check) +(minor >= (since) ? NT_WSIZE_##type : 0)
#define NT_LEN_A(type, m, n, since)                   +(minor >= (since) ? NT_WSIZE_##type * (n) : 0)
#define NT_LEN_R(bytes, since)                        +(minor >= (since) ? (bytes) : 0)
#define NT_LEN_L(m, since)                            +(minor >= (since) ? 1 : 0)
#define NT_LEN_S(m, max, since)                       +(minor >= (since) ? (max) + 1 : 0)

/* The sum of the row sizes a message of `minor` carries. */
#define NT_ROW_LEN(TABLE) ((uint16_t)(0 TABLE(NT_LEN_F, NT_LEN_A, NT_LEN_R, NT_LEN_L, NT_LEN_S)))

/* Writing: every field of this version, reserved bytes as 0, a name as its
 * length byte and its bytes padded with zeros. */
#define NT_ENC_F(type, m, since, read, absent, check) p = NT_PUT_##type(p, r->m);
#define NT_ENC_A(type, m, n, since)                                                                \
  for (int k_ = 0; k_ < (n); k_++) p = NT_PUT_##type(p, r->m[k_]);
#define NT_ENC_R(bytes, since) p = nt_zeros(p, bytes);
#define NT_ENC_L(m, since)                                                                         \
  size_t m##_len = strnlen(r->m, sizeof r->m - 1);                                                 \
  p = nt_put8(p, (uint8_t)m##_len);
#define NT_ENC_S(m, max, since)                                                                    \
  memcpy(p, r->m, m##_len);                                                                        \
  p = nt_zeros(p + m##_len, sizeof r->m - m##_len);
#define NT_ENCODE_ROW(TABLE) TABLE(NT_ENC_F, NT_ENC_A, NT_ENC_R, NT_ENC_L, NT_ENC_S)

/* A table section: its headers, then `count` rows of `rows`. */
#define NT_ENCODE_TABLE(p, type, TABLE, rowtype, rows, count)                                      \
  do {                                                                                             \
    const int minor = NT_PROTO_MINOR;                                                              \
    p = nt_table_start(p, type, count, NT_ROW_LEN(TABLE));                                         \
    for (uint32_t i_ = 0; i_ < (count); i_++) {                                                    \
      const rowtype *r = &(rows)[i_];                                                              \
      NT_ENCODE_ROW(TABLE)                                                                         \
    }                                                                                              \
  } while (0)

/* Reading: a field the message's minor version has is read (or skipped,
 * when its meaning is newer than the message), otherwise it is `absent`;
 * then its check. */
#define NT_DEC_F(type, m, since, read, absent, check)                                              \
  if (minor >= (read)) {                                                                           \
    r->m = NT_GET_##type(c);                                                                       \
  } else {                                                                                         \
    if (minor >= (since)) c->p += NT_WSIZE_##type;                                                 \
    r->m = absent;                                                                                 \
  }                                                                                                \
  {                                                                                                \
    const int64_t v_ = (int64_t)r->m;                                                              \
    (void)v_;                                                                                      \
    NT_CHECK_##check                                                                               \
  }
#define NT_DEC_A(type, m, n, since)                                                                \
  for (int k_ = 0; k_ < (n); k_++) r->m[k_] = minor >= (since) ? NT_GET_##type(c) : 0;
#define NT_DEC_R(bytes, since)                                                                     \
  if (minor >= (since)) c->p += (bytes);
#define NT_DEC_L(m, since)                                                                         \
  uint8_t m##_len = 0;                                                                             \
  if (minor >= (since)) m##_len = nt_get8(c);                                                      \
  if (m##_len > sizeof r->m - 1)                                                                   \
    return nt_wire_fail(err, errlen, "%s row %ld: name length %u exceeds limit %d", what_,         \
                        (long)row_, m##_len, (int)(sizeof r->m - 1));
#define NT_DEC_S(m, max, since)                                                                    \
  if (minor >= (since)) {                                                                          \
    if (memchr(c->p, '\0', m##_len))                                                               \
      return nt_wire_fail(err, errlen, "%s row %ld: name contains a NUL byte", what_, (long)row_); \
    memcpy(r->m, c->p, m##_len);                                                                   \
    c->p += (max) + 1;                                                                             \
  }                                                                                                \
  r->m[m##_len] = '\0';
#define NT_DECODE_ROW(TABLE) TABLE(NT_DEC_F, NT_DEC_A, NT_DEC_R, NT_DEC_L, NT_DEC_S)

/* The checks of the table's check column, on the value v_. */
#define NT_CHECK_NONE
#define NT_CHECK_BELOW(n, label)                                                                   \
  if (v_ >= (int64_t)(n)) return nt_wire_bad(err, errlen, what_, (long)row_, label, v_);
#define NT_CHECK_UPTO(n, label)                                                                    \
  if (v_ > (int64_t)(n)) return nt_wire_bad(err, errlen, what_, (long)row_, label, v_);
#define NT_CHECK_BELOW_OR(n, x, label)                                                             \
  if (v_ >= (int64_t)(n) && v_ != (int64_t)(x))                                                    \
    return nt_wire_bad(err, errlen, what_, (long)row_, label, v_);
#define NT_CHECK_IN(lo, hi, label)                                                                 \
  if (v_ < (int64_t)(lo) || v_ > (int64_t)(hi))                                                    \
    return nt_wire_bad(err, errlen, what_, (long)row_, label, v_);
#define NT_CHECK_COMM(none_ok)                                                                     \
  if (v_ >= (int64_t)s->ncomms && !((none_ok) && v_ == NT_NO_COMM))                                \
    return nt_wire_fail(err, errlen, "%s row %ld: comm index %u out of range (%u comms)", what_,   \
                        (long)row_, (unsigned)v_, s->ncomms);

/* No rule between a row's fields. */
#define NT_NO_RULE(r, i, s, err, errlen) 0

/* Decodes table section `type` into rows[] and its count (the body of a
 * decode function): the table header against the limit and the record
 * length of the message's minor version, then each record's fields as
 * TABLE says, then rule(r, i, s, err, errlen) for what the table cannot
 * say (rules between fields; 0 or -1). A section newer than the message
 * (a 1.0 message carrying a type 6) is read as its first minor wrote it,
 * `base`. */
#define NT_DECODE_TABLE(type, base, TABLE, rowtype, limit, rows, count, rule)                      \
  do {                                                                                             \
    const int minor = s->minor > (base) ? s->minor : (base);                                       \
    const char *const what_ = nt_sec_name[type];                                                   \
    uint32_t n_;                                                                                   \
    uint16_t rl_;                                                                                  \
    if (nt_wire_table(c, type, limit, NT_ROW_LEN(TABLE), &n_, &rl_, err, errlen)) return -1;       \
    for (uint32_t row_ = 0; row_ < n_; row_++) {                                                   \
      const uint8_t *next_ = c->p + rl_;                                                           \
      rowtype *r = &(rows)[row_];                                                                  \
      NT_DECODE_ROW(TABLE)                                                                         \
      c->p = next_;                                                                                \
      if (rule(r, row_, s, err, errlen)) return -1;                                                \
    }                                                                                              \
    (void)what_;                                                                                   \
    count = n_;                                                                                    \
    return 0;                                                                                      \
  } while (0)

/* The 1.1 sections (snapshot_ops.c). */
size_t nt_ops_encoded_max(const nt_snapshot *s);
uint8_t *nt_ops_encode(const nt_snapshot *s, uint8_t *p);
int nt_ops_decode_section(int type, nt_cursor *c, nt_snapshot *s, char *err, size_t errlen);

#endif

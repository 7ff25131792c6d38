/* Little-endian field writers and bounds-checked readers shared by the
 * snapshot's section codecs (snapshot.c, snapshot_ops.c). Internal to
 * proto/: every field is written and read on its own, so neither the
 * host's byte order nor its struct layout reaches the wire. */
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

/* Writes the reason into err and returns -1. */
int nt_wire_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A table's header: count and record length, checked against the limit,
 * the record size this version knows and the section's length. */
int nt_wire_table(nt_cursor *c, int type, uint32_t limit, uint16_t known, uint32_t *count,
                  uint16_t *reclen, char *err, size_t errlen);

/* The 1.1 sections (snapshot_ops.c). */
size_t nt_ops_encoded_max(const nt_snapshot *s);
uint8_t *nt_ops_encode(const nt_snapshot *s, uint8_t *p);
int nt_ops_decode_section(int type, nt_cursor *c, nt_snapshot *s, char *err, size_t errlen);

#endif

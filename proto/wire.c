/* The reading helpers both section codecs share (snapshot.c for the 1.0
 * sections, snapshot_ops.c for the later ones): section names, failure
 * messages and the table header check. Kept apart from either codec so
 * that neither depends on the other. */
#include "wire.h"

const char *const nt_sec_name[NT_SEC_MAX] = {"",        "process", "comm", "proxy",
                                             "channel", "kernel",  "ops",  "phase",
                                             "oplog",   "seq",     "net",  "variant"};

int nt_wire_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int nt_wire_bad(char *err, size_t errlen, const char *what, long row, const char *field,
                long long v) {
  if (row < 0) return nt_wire_fail(err, errlen, "%s section: bad %s %lld", what, field, v);
  return nt_wire_fail(err, errlen, "%s row %ld: bad %s %lld", what, row, field, v);
}

int nt_wire_table(nt_cursor *c, int type, uint32_t limit, uint16_t known, uint32_t *count,
                  uint16_t *reclen, char *err, size_t errlen) {
  const char *what = nt_sec_name[type];
  if (nt_left(c) < NT_TABLE_HEADER)
    return nt_wire_fail(err, errlen, "%s section: truncated table header", what);
  *count = nt_get32(c);
  *reclen = nt_get16(c);
  (void)nt_get16(c);
  if (*count > limit)
    return nt_wire_fail(err, errlen, "%s section: count %u exceeds limit %u", what, *count, limit);
  if (*reclen < known)
    return nt_wire_fail(err, errlen, "%s section: record length %u is shorter than %u", what,
                        *reclen, known);
  if ((uint64_t)*count * *reclen > nt_left(c))
    return nt_wire_fail(err, errlen, "%s section: %u records of %u bytes exceed its %zu bytes",
                        what, *count, *reclen, nt_left(c));
  return 0;
}

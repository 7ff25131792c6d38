/* UTF-8 validation shared by the JSON writer and nt_sanitize (internal to
 * proto/; header-only so both the plugin and the viewer get it). */
#ifndef NCCLTOP_UTF8_H
#define NCCLTOP_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the well-formed UTF-8 sequence at s, of which n bytes are
 * readable, with its code point in *cp; 0 when the bytes are not one:
 * a stray continuation byte, an overlong form, a surrogate, a value above
 * U+10FFFF, or a sequence cut short by n or by a byte that does not continue
 * it. */
static inline size_t nt_utf8_len(const unsigned char *s, size_t n, uint32_t *cp) {
  uint32_t c = s[0], v;
  size_t len;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, v = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, v = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, v = c & 0x07;
  else
    return 0; /* continuation byte, 0xC0/0xC1 (always overlong), 0xF5.. */
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3F);
  }
  if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10FFFF ||
      (v >= 0xD800 && v <= 0xDFFF))
    return 0;
  *cp = v;
  return len;
}

#endif

/* Text from other processes reaches a terminal only through here: control
 * characters (C0, DEL, C1) and bytes that are not valid UTF-8 become \xNN, so
 * no escape sequence can be smuggled onto the screen. */
#include <stdbool.h>
#include <stdio.h>

#include "nccltop_proto.h"

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid; rejects
 * overlong forms, surrogates, values above U+10FFFF and C1 controls. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp <= 0x9F))
    return 0;
  return len;
}

char *nt_sanitize(const char *src, size_t srclen, char *dst, size_t cap) {
  if (!cap) return dst;
  size_t o = 0;
  const unsigned char *s = (const unsigned char *)(src ? src : "");
  if (!src) srclen = 0;
  for (size_t i = 0; i < srclen && s[i];) {
    size_t len = utf8_len(s + i, srclen - i);
    bool printable = len > 1 || (len == 1 && s[i] >= 0x20 && s[i] != 0x7F);
    if (printable) {
      if (o + len >= cap) break;
      for (size_t k = 0; k < len; k++) dst[o++] = (char)s[i + k];
      i += len;
    } else {
      if (o + 4 >= cap) break;
      snprintf(dst + o, 5, "\\x%02X", s[i]);
      o += 4;
      i += 1;
    }
  }
  dst[o] = '\0';
  return dst;
}

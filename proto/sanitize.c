/* Text from other processes reaches a terminal only through here: control
 * characters (C0, DEL, C1), the bidirectional embeddings, overrides and
 * isolates, and bytes that are not valid UTF-8 become \xNN, so no escape
 * sequence can be smuggled onto the screen and no text can make what
 * follows it on the line read in another order. */
#include <stdbool.h>

#include "nccltop_proto.h"
#include "utf8.h"

static const char hex[] = "0123456789ABCDEF";

/* U+202A..U+202E (LRE, RLE, PDF, LRO, RLO) and U+2066..U+2069 (LRI, RLI,
 * FSI, PDI): they reorder the rest of a terminal line. */
static bool bidi_control(uint32_t cp) {
  return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* A NUL byte ends the text (callers pass strlen or a buffer size). Output is
 * cut at a whole character or escape, never inside one. */
char *nt_sanitize(const char *src, size_t srclen, char *dst, size_t cap) {
  if (!dst || !cap) return dst;
  size_t o = 0;
  const unsigned char *s = (const unsigned char *)src;
  if (!s) srclen = 0;
  for (size_t i = 0; i < srclen && s[i];) {
    uint32_t cp = 0;
    size_t len = nt_utf8_len(s + i, srclen - i, &cp);
    /* C0, DEL and C1 (U+0080..U+009F, the 8-bit CSI among them) are
     * terminal controls even when well-formed. */
    bool printable =
        len > 0 && cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp <= 0x9F) && !bidi_control(cp);
    if (printable) {
      if (o + len >= cap) break;
      for (size_t k = 0; k < len; k++) dst[o++] = (char)s[i + k];
      i += len;
    } else {
      /* A control character or an invalid byte: escape one byte and look
       * again at the next (a well-formed C1 or bidi control is escaped byte
       * by byte too: its continuation bytes are invalid on their own). */
      if (o + 4 >= cap) break;
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[s[i] >> 4];
      dst[o++] = hex[s[i] & 0xF];
      i++;
    }
  }
  dst[o] = '\0';
  return dst;
}

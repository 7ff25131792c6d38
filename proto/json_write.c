/* See json_write.h. */
#include "json_write.h"
#include "utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void put(nt_jw *w, const char *s, size_t n) {
  if (w->overflow || w->len + n + 1 > w->cap) {
    w->overflow = true;
    return;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
}

static void puts_(nt_jw *w, const char *s) {
  put(w, s, strlen(s));
}

/* Quote, backslash and control characters (C0, DEL, and C1 when it is
 * well-formed UTF-8) become escapes. Bytes that are not UTF-8 pass through
 * unchanged: replacing them would lose what they were and could push a
 * string past the reader's length limit; readers sanitize before display. */
static void quoted(nt_jw *w, const char *str) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  size_t n = strlen((const char *)s);
  put(w, "\"", 1);
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t len = nt_utf8_len(s + i, n - i, &cp);
    if (len == 0) {
      put(w, (const char *)s + i, 1);
      i++;
    } else if (cp == '"' || cp == '\\') {
      char esc[2] = {'\\', (char)cp};
      put(w, esc, 2);
      i++;
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
      char esc[6] = {'\\', 'u', '0', '0', hex[cp >> 4], hex[cp & 0xF]};
      put(w, esc, 6);
      i += len;
    } else {
      put(w, (const char *)s + i, len);
      i += len;
    }
  }
  put(w, "\"", 1);
}

static void key(nt_jw *w, const char *k) {
  if (w->need_comma) put(w, ",", 1);
  w->need_comma = true;
  if (k) {
    quoted(w, k);
    put(w, ":", 1);
  }
}

void nt_jw_init(nt_jw *w, char *buf, size_t cap) {
  w->buf = buf;
  w->cap = cap;
  w->len = 0;
  w->overflow = cap == 0;
  w->need_comma = false;
}

void nt_jw_open(nt_jw *w, const char *k) {
  key(w, k);
  put(w, "{", 1);
  w->need_comma = false;
}

void nt_jw_close(nt_jw *w) {
  put(w, "}", 1);
  w->need_comma = true;
}

void nt_jw_str(nt_jw *w, const char *k, const char *v) {
  key(w, k);
  quoted(w, v);
}

void nt_jw_u64(nt_jw *w, const char *k, uint64_t v) {
  char num[32];
  snprintf(num, sizeof num, "%" PRIu64, v);
  key(w, k);
  puts_(w, num);
}

void nt_jw_i64(nt_jw *w, const char *k, int64_t v) {
  char num[32];
  snprintf(num, sizeof num, "%" PRId64, v);
  key(w, k);
  puts_(w, num);
}

void nt_jw_u64_str(nt_jw *w, const char *k, uint64_t v) {
  char num[32];
  snprintf(num, sizeof num, "%" PRIu64, v);
  nt_jw_str(w, k, num);
}

size_t nt_jw_finish(nt_jw *w) {
  if (w->overflow) return 0;
  w->buf[w->len] = '\0';
  return w->len;
}

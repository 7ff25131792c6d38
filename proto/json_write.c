/* See json_write.h. Strings are escaped fully: quote, backslash and every
 * control character; other bytes pass through (the reader validates). */
#include "json_write.h"

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

static void quoted(nt_jw *w, const char *s) {
  put(w, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      put(w, esc, 2);
    } else if (*p < 0x20 || *p == 0x7F) {
      snprintf(esc, sizeof esc, "\\u%04x", *p);
      put(w, esc, 6);
    } else {
      put(w, (const char *)p, 1);
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

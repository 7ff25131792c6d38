/* The streaming JSON writer (json_out.h). */
#include "json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nt_jo_init(nt_jo *w) {
  memset(w, 0, sizeof *w);
}

void nt_jo_reset(nt_jo *w) {
  w->len = 0;
  w->oom = false;
  w->depth = 0;
  w->comma[0] = false;
  if (w->buf) w->buf[0] = '\0';
}

void nt_jo_free(nt_jo *w) {
  free(w->buf);
  memset(w, 0, sizeof *w);
}

/* Room for n more bytes and a NUL. */
static bool room(nt_jo *w, size_t n) {
  if (w->oom) return false;
  if (w->len + n + 1 <= w->cap) return true;
  size_t cap = w->cap ? w->cap : 4096;
  while (cap < w->len + n + 1) cap *= 2;
  char *b = realloc(w->buf, cap);
  if (!b) {
    w->oom = true;
    return false;
  }
  w->buf = b;
  w->cap = cap;
  return true;
}

static void put(nt_jo *w, const char *s, size_t n) {
  if (!room(w, n)) return;
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = '\0';
}

static inline void put_char(nt_jo *w, char c) {
  if (w->len + 2 > w->cap && !room(w, 1)) return;
  if (w->oom) return;
  w->buf[w->len++] = c;
  w->buf[w->len] = '\0';
}

/* Bytes that must be escaped in a JSON string. */
static const unsigned char must_escape[256] = {
    [0] = 1,  [1] = 1,  [2] = 1,  [3] = 1,  [4] = 1,  [5] = 1,   [6] = 1,    [7] = 1,    [8] = 1,
    [9] = 1,  [10] = 1, [11] = 1, [12] = 1, [13] = 1, [14] = 1,  [15] = 1,   [16] = 1,   [17] = 1,
    [18] = 1, [19] = 1, [20] = 1, [21] = 1, [22] = 1, [23] = 1,  [24] = 1,   [25] = 1,   [26] = 1,
    [27] = 1, [28] = 1, [29] = 1, [30] = 1, [31] = 1, ['"'] = 1, ['\\'] = 1, [0x7f] = 1,
};

static void put_escaped(nt_jo *w, const char *s) {
  static const char hex[] = "0123456789abcdef";
  put_char(w, '"');
  const unsigned char *p = (const unsigned char *)s;
  for (;;) {
    const unsigned char *run = p;
    while (!must_escape[*p]) p++; /* the NUL ends the run: it is escaped */
    if (p > run) put(w, (const char *)run, (size_t)(p - run));
    if (!*p) break;
    char e[6] = {'\\', (char)*p};
    size_t n = 2;
    if (*p != '"' && *p != '\\') {
      memcpy(e, "\\u00", 4);
      e[4] = hex[*p >> 4];
      e[5] = hex[*p & 15];
      n = 6;
    }
    put(w, e, n);
    p++;
  }
  put_char(w, '"');
}

/* The comma before a value and its key. */
static void start(nt_jo *w, const char *key) {
  if (w->comma[w->depth]) put_char(w, ',');
  w->comma[w->depth] = true;
  if (key) {
    put_escaped(w, key);
    put_char(w, ':');
  }
}

static void open(nt_jo *w, const char *key, char c) {
  start(w, key);
  put_char(w, c);
  if (w->depth + 1 < NT_JO_DEPTH) {
    w->depth++;
    w->comma[w->depth] = false;
    w->close[w->depth] = c == '{' ? '}' : ']';
  } else {
    w->oom = true; /* deeper than any frame: a bug, not data */
  }
}

void nt_jo_obj(nt_jo *w, const char *key) {
  open(w, key, '{');
}

void nt_jo_arr(nt_jo *w, const char *key) {
  open(w, key, '[');
}

void nt_jo_end(nt_jo *w) {
  if (w->depth <= 0) return;
  put_char(w, w->close[w->depth]);
  w->depth--;
}

void nt_jo_str(nt_jo *w, const char *key, const char *v) {
  start(w, key);
  put_escaped(w, v ? v : "");
}

/* Decimal digits of v, right to left into the end of buf; returns the first. */
static char *digits(uint64_t v, char *end) {
  do {
    *--end = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

void nt_jo_u64(nt_jo *w, const char *key, uint64_t v) {
  char buf[24], *p = digits(v, buf + sizeof buf);
  start(w, key);
  put(w, p, (size_t)(buf + sizeof buf - p));
}

void nt_jo_i64(nt_jo *w, const char *key, int64_t v) {
  char buf[24], *p = digits(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, buf + sizeof buf);
  if (v < 0) *--p = '-';
  start(w, key);
  put(w, p, (size_t)(buf + sizeof buf - p));
}

void nt_jo_num(nt_jo *w, const char *key, double v) {
  if (!isfinite(v)) {
    nt_jo_null(w, key);
    return;
  }
  double a = fabs(v);
  if (a < 9007199254740992.0 && v == floor(v)) { /* 2^53: exact as an integer */
    nt_jo_i64(w, key, (int64_t)v);
    return;
  }
  char buf[40], *p;
  size_t n;
  if (a < 9e12) { /* six decimals by integer arithmetic: no printf */
    uint64_t scaled = (uint64_t)llround(a * 1e6);
    uint64_t ip = scaled / 1000000, fp = scaled % 1000000;
    char *end = buf + sizeof buf;
    int dec = 6;
    while (dec > 0 && fp % 10 == 0) fp /= 10, dec--;
    p = end;
    for (int i = 0; i < dec; i++) {
      *--p = (char)('0' + fp % 10);
      fp /= 10;
    }
    if (dec) *--p = '.';
    p = digits(ip, p);
    if (v < 0 && (dec || ip)) *--p = '-';
    n = (size_t)(end - p);
  } else {
    int k = snprintf(buf, sizeof buf, "%.17g", v);
    p = buf;
    n = k > 0 && (size_t)k < sizeof buf ? (size_t)k : 0;
  }
  start(w, key);
  put(w, p, n);
}

void nt_jo_bool(nt_jo *w, const char *key, bool v) {
  start(w, key);
  put(w, v ? "true" : "false", v ? 4 : 5);
}

void nt_jo_json(nt_jo *w, const char *key, const char *json) {
  start(w, key);
  put(w, json, strlen(json));
}

void nt_jo_null(nt_jo *w, const char *key) {
  start(w, key);
  put(w, "null", 4);
}

nt_jo_mark nt_jo_here(const nt_jo *w) {
  return (nt_jo_mark){w->len, w->comma[w->depth]};
}

void nt_jo_undo(nt_jo *w, nt_jo_mark m) {
  if (m.len > w->len) return;
  w->len = m.len;
  if (w->buf) w->buf[w->len] = '\0';
  w->comma[w->depth] = m.comma;
}

const char *nt_jo_text(nt_jo *w) {
  if (w->oom) return NULL;
  if (!w->buf && !room(w, 0)) return NULL;
  return w->buf;
}

void nt_jo_count(nt_jo *w, const char *key, int64_t v) {
  if (v > 0)
    nt_jo_i64(w, key, v);
  else
    nt_jo_null(w, key);
}

void nt_jo_str_known(nt_jo *w, const char *key, const char *v) {
  if (v && *v)
    nt_jo_str(w, key, v);
  else
    nt_jo_null(w, key);
}

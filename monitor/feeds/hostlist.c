/* Slurm hostlist expansion (hostlist.h): a checking pass over each entry
 * that counts what it would produce, then an odometer over its bracket
 * groups that writes the names. Nothing is allocated past the limits. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostlist.h"

#define MAX_DIGITS 18 /* a bound fits in uint64_t */

struct nt_hostlist {
  char *names; /* NUL-terminated names, back to back */
  size_t bytes, names_cap;
  uint32_t *offset; /* name i starts at names + offset[i] */
  uint16_t *port;
  uint32_t count, cap;
};

nt_hostlist *nt_hostlist_new(void) {
  return calloc(1, sizeof(nt_hostlist));
}

void nt_hostlist_free(nt_hostlist *l) {
  if (!l) return;
  free(l->names);
  free(l->offset);
  free(l->port);
  free(l);
}

uint32_t nt_hostlist_count(const nt_hostlist *l) {
  return l->count;
}

const char *nt_hostlist_host(const nt_hostlist *l, uint32_t i) {
  return i < l->count ? l->names + l->offset[i] : NULL;
}

uint16_t nt_hostlist_port(const nt_hostlist *l, uint32_t i) {
  return i < l->count ? l->port[i] : 0;
}

static int fail(char *err, size_t errlen, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, size_t pos, const char *fmt, ...) {
  int n = snprintf(err, errlen, "position %zu: ", pos + 1);
  if (n >= 0 && (size_t)n < errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* A character for a message: itself when printable, else \xNN. */
static const char *shown(char c, char buf[8]) {
  unsigned char u = (unsigned char)c;
  if (u > 32 && u < 127)
    snprintf(buf, 8, "'%c'", c);
  else
    snprintf(buf, 8, "\\x%02x", u);
  return buf;
}

static bool is_sep(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' || c == '-' ||
         c == '_';
}

/* A piece of a name: literal text, or a bracket group (between the
 * brackets). */
typedef struct {
  size_t start, end;
  bool group;
} piece;

/* One range of a group, read from t at *i (a number, or number-number). */
typedef struct {
  uint64_t lo, hi;
  int width;
} range;

static int read_number(const char *t, size_t end, size_t *i, uint64_t *v, int *width, char *err,
                       size_t errlen) {
  char b[8];
  size_t s = *i;
  if (s >= end || !is_digit(t[s]))
    return s >= end ? fail(err, errlen, s, "expected a number before ']'")
                    : fail(err, errlen, s, "expected a number, found %s", shown(t[s], b));
  uint64_t x = 0;
  while (*i < end && is_digit(t[*i])) {
    if (*i - s >= MAX_DIGITS)
      return fail(err, errlen, s, "number longer than %d digits", MAX_DIGITS);
    x = x * 10 + (uint64_t)(t[*i] - '0');
    (*i)++;
  }
  *v = x;
  *width = (int)(*i - s);
  return 0;
}

/* The range at *i of a group ending at `end` (its ']'); leaves *i after it
 * and its ',' if any. */
static int read_range(const char *t, size_t end, size_t *i, range *r, char *err, size_t errlen) {
  size_t s = *i;
  int w;
  if (read_number(t, end, i, &r->lo, &r->width, err, errlen)) return -1;
  r->hi = r->lo;
  if (*i < end && t[*i] == '-') {
    (*i)++;
    if (read_number(t, end, i, &r->hi, &w, err, errlen)) return -1;
    if (r->hi < r->lo)
      return fail(err, errlen, s, "range %llu-%llu runs backwards", (unsigned long long)r->lo,
                  (unsigned long long)r->hi);
  }
  if (*i < end && t[*i] != ',') {
    char b[8];
    return fail(err, errlen, *i, "expected ',' or ']' in brackets, found %s", shown(t[*i], b));
  }
  if (*i < end) (*i)++;
  return 0;
}

/* Checks a group and counts its values (capped above `room`). */
static int count_group(const char *t, const piece *g, uint64_t room, uint64_t *count, char *err,
                       size_t errlen) {
  if (g->start == g->end) return fail(err, errlen, g->start - 1, "empty brackets");
  uint64_t n = 0;
  for (size_t i = g->start; i < g->end;) {
    size_t s = i;
    range r;
    if (read_range(t, g->end, &i, &r, err, errlen)) return -1;
    if (i == g->end && t[i - 1] == ',') return fail(err, errlen, i, "expected a number before ']'");
    uint64_t k = r.hi - r.lo + 1;
    if (k > room || n + k > room)
      return fail(err, errlen, s, "more than %d hosts", NT_HOSTLIST_MAX_HOSTS);
    n += k;
  }
  *count = n;
  return 0;
}

/* Splits the entry t[s..e) into pieces and a port; checks every character. */
static int split_entry(const char *t, size_t s, size_t e, piece *pc, int *npc, uint16_t *port,
                       char *err, size_t errlen) {
  char b[8];
  int n = 0, groups = 0;
  *port = 0;
  size_t i = s;
  while (i < e) {
    char c = t[i];
    if (c == '[') {
      size_t open = i++;
      while (i < e && t[i] != ']') {
        if (t[i] == '[') return fail(err, errlen, i, "'[' inside brackets (they do not nest)");
        i++;
      }
      if (i >= e) return fail(err, errlen, open, "'[' is never closed");
      if (++groups > NT_HOSTLIST_MAX_GROUPS)
        return fail(err, errlen, open, "more than %d bracket groups in one name",
                    NT_HOSTLIST_MAX_GROUPS);
      pc[n++] = (piece){open + 1, i, true};
      i++;
    } else if (c == ']') {
      return fail(err, errlen, i, "']' without '['");
    } else if (c == ':') {
      if (i == s) return fail(err, errlen, i, "host name missing before ':'");
      if (i + 2 < e && t[i + 1] == '/' && t[i + 2] == '/')
        return fail(err, errlen, i, "a host name, not an endpoint URL, is expected here");
      size_t p = i + 1;
      unsigned long v = 0;
      while (p < e && is_digit(t[p]) && v <= 65535) v = v * 10 + (unsigned long)(t[p++] - '0');
      if (p == i + 1 || p < e || v < 1 || v > 65535) {
        if (p < e && p > i + 1 && !is_digit(t[p]))
          return fail(err, errlen, p, "unexpected %s after the port", shown(t[p], b));
        return fail(err, errlen, i + 1, "port must be a number from 1 to 65535");
      }
      *port = (uint16_t)v;
      break;
    } else if (is_name_char(c)) {
      size_t lit = i;
      while (i < e && is_name_char(t[i])) i++;
      pc[n++] = (piece){lit, i, false};
    } else {
      return fail(err, errlen, i, "%s is not allowed in a host name", shown(c, b));
    }
  }
  *npc = n;
  return 0;
}

/* Room for one more name of len bytes (NUL not included). */
static int reserve(nt_hostlist *l, size_t len) {
  if (l->count == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 64;
    if (cap > NT_HOSTLIST_MAX_HOSTS) cap = NT_HOSTLIST_MAX_HOSTS;
    uint32_t *o = realloc(l->offset, cap * sizeof *o);
    if (!o) return -1;
    l->offset = o;
    uint16_t *p = realloc(l->port, cap * sizeof *p);
    if (!p) return -1;
    l->port = p;
    l->cap = cap;
  }
  if (l->bytes + len + 1 > l->names_cap) {
    size_t cap = l->names_cap ? l->names_cap * 2 : 4096;
    while (cap < l->bytes + len + 1) cap *= 2;
    if (cap > NT_HOSTLIST_MAX_BYTES) cap = NT_HOSTLIST_MAX_BYTES;
    char *nm = realloc(l->names, cap);
    if (!nm) return -1;
    l->names = nm;
    l->names_cap = cap;
  }
  return 0;
}

/* A group's cursor: the range being walked and where the next one starts. */
typedef struct {
  size_t next;
  range r;
  uint64_t value;
} cursor;

static void cursor_reset(const char *t, const piece *g, cursor *c) {
  char e[8];
  c->next = g->start;
  (void)read_range(t, g->end, &c->next, &c->r, e, sizeof e); /* checked by count_group */
  c->value = c->r.lo;
}

/* Moves to the group's next value; false (and reset) when it wraps. */
static bool cursor_step(const char *t, const piece *g, cursor *c) {
  if (c->value < c->r.hi) {
    c->value++;
    return true;
  }
  if (c->next < g->end) {
    char e[8];
    (void)read_range(t, g->end, &c->next, &c->r, e, sizeof e);
    c->value = c->r.lo;
    return true;
  }
  cursor_reset(t, g, c);
  return false;
}

/* Expands the entry t[s..e) into the list. */
static int add_entry(nt_hostlist *l, const char *t, size_t s, size_t e, char *err, size_t errlen) {
  piece pc[2 * NT_HOSTLIST_MAX_GROUPS + 2];
  int npc = 0;
  uint16_t port = 0;
  if (split_entry(t, s, e, pc, &npc, &port, err, errlen)) return -1;
  uint64_t room = NT_HOSTLIST_MAX_HOSTS - l->count, total = 1;
  for (int k = 0; k < npc; k++) {
    if (!pc[k].group) continue;
    uint64_t n = 0;
    if (count_group(t, &pc[k], NT_HOSTLIST_MAX_HOSTS, &n, err, errlen)) return -1;
    if (n > room / total) return fail(err, errlen, s, "more than %d hosts", NT_HOSTLIST_MAX_HOSTS);
    total *= n;
  }
  if (total > room) return fail(err, errlen, s, "more than %d hosts", NT_HOSTLIST_MAX_HOSTS);
  cursor cur[2 * NT_HOSTLIST_MAX_GROUPS + 2];
  for (int k = 0; k < npc; k++)
    if (pc[k].group) cursor_reset(t, &pc[k], &cur[k]);
  for (uint64_t done = 0; done < total; done++) {
    char name[NT_HOSTLIST_MAX_NAME + 32];
    size_t len = 0;
    for (int k = 0; k < npc && len <= NT_HOSTLIST_MAX_NAME; k++) {
      if (pc[k].group) {
        int w = snprintf(name + len, sizeof name - len, "%0*llu", cur[k].r.width,
                         (unsigned long long)cur[k].value);
        len += w > 0 ? (size_t)w : 0;
      } else {
        size_t n = pc[k].end - pc[k].start;
        if (len + n > NT_HOSTLIST_MAX_NAME) n = NT_HOSTLIST_MAX_NAME + 1 - len;
        memcpy(name + len, t + pc[k].start, n);
        len += n;
      }
    }
    if (len > NT_HOSTLIST_MAX_NAME)
      return fail(err, errlen, s, "host name longer than %d bytes", NT_HOSTLIST_MAX_NAME);
    if (l->bytes + len + 1 > NT_HOSTLIST_MAX_BYTES)
      return fail(err, errlen, s, "the names take more than %u MiB", NT_HOSTLIST_MAX_BYTES >> 20);
    if (reserve(l, len)) return fail(err, errlen, s, "out of memory");
    memcpy(l->names + l->bytes, name, len);
    l->names[l->bytes + len] = '\0';
    l->offset[l->count] = (uint32_t)l->bytes;
    l->port[l->count++] = port;
    l->bytes += len + 1;
    /* The odometer: the last group turns fastest. */
    for (int k = npc - 1; k >= 0; k--)
      if (pc[k].group && cursor_step(t, &pc[k], &cur[k])) break;
  }
  return 0;
}

int nt_hostlist_add(nt_hostlist *l, const char *t, size_t len, char *err, size_t errlen) {
  uint32_t count0 = l->count;
  size_t bytes0 = l->bytes;
  if (len > NT_HOSTLIST_MAX_TEXT)
    return fail(err, errlen, NT_HOSTLIST_MAX_TEXT, "list longer than %u bytes",
                NT_HOSTLIST_MAX_TEXT);
  size_t i = 0;
  int rc = 0;
  while (i < len && rc == 0) {
    while (i < len && is_sep(t[i])) i++;
    if (i >= len) break;
    size_t s = i;
    bool in = false;
    for (; i < len && (in || !is_sep(t[i])); i++) {
      if (t[i] == '[') in = true;
      if (t[i] == ']') in = false;
    }
    rc = add_entry(l, t, s, i, err, errlen);
  }
  if (rc == 0 && l->count == count0) rc = fail(err, errlen, len, "no host names");
  if (rc) {
    l->count = count0;
    l->bytes = bytes0;
  }
  return rc;
}

int nt_hostlist_add_file(nt_hostlist *l, const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s", fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return -1;
  }
  char *buf = malloc(NT_HOSTLIST_MAX_TEXT + 1);
  size_t n = 0;
  ssize_t r = 1;
  while (buf && n <= NT_HOSTLIST_MAX_TEXT && r > 0) {
    r = read(fd, buf + n, NT_HOSTLIST_MAX_TEXT + 1 - n);
    if (r < 0 && errno == EINTR)
      r = 1;
    else if (r > 0)
      n += (size_t)r;
  }
  int saved = errno;
  close(fd);
  if (!buf || r < 0 || n > NT_HOSTLIST_MAX_TEXT) {
    snprintf(err, errlen, "%s",
             !buf    ? "out of memory"
             : r < 0 ? strerror(saved)
                     : "larger than 1 MiB");
    free(buf);
    return -1;
  }
  uint32_t count0 = l->count;
  size_t bytes0 = l->bytes;
  int rc = 0;
  size_t line = 1;
  for (size_t i = 0; i < n && rc == 0; line++) {
    size_t s = i, e;
    while (i < n && buf[i] != '\n') i++;
    e = i < n ? i : n;
    i++;
    size_t hash = s;
    while (hash < e && buf[hash] != '#') hash++;
    size_t k = s;
    while (k < hash && is_sep(buf[k])) k++;
    if (k == hash) continue; /* blank, or only a comment */
    char lerr[200];
    if (nt_hostlist_add(l, buf + s, hash - s, lerr, sizeof lerr) != 0) {
      snprintf(err, errlen, "line %zu: %s", line, lerr);
      rc = -1;
    }
  }
  if (rc == 0 && l->count == count0) {
    snprintf(err, errlen, "no host names in the file");
    rc = -1;
  }
  if (rc) {
    l->count = count0;
    l->bytes = bytes0;
  }
  free(buf);
  return rc;
}

/* ---- duplicates ---- */

static const nt_hostlist *sort_list; /* qsort has no context argument */

static int by_name(const void *a, const void *b) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int c = strcmp(sort_list->names + sort_list->offset[i], sort_list->names + sort_list->offset[j]);
  if (c) return c;
  if (sort_list->port[i] != sort_list->port[j])
    return sort_list->port[i] < sort_list->port[j] ? -1 : 1;
  return i < j ? -1 : i > j;
}

void nt_hostlist_uniq(nt_hostlist *l) {
  if (l->count < 2) return;
  uint32_t *idx = malloc(l->count * sizeof *idx);
  uint8_t *drop = calloc(l->count, 1);
  if (!idx || !drop) { /* keep them all: a repeat costs a second connection */
    free(idx);
    free(drop);
    return;
  }
  for (uint32_t i = 0; i < l->count; i++) idx[i] = i;
  sort_list = l;
  qsort(idx, l->count, sizeof *idx, by_name);
  sort_list = NULL;
  for (uint32_t k = 1; k < l->count; k++) {
    uint32_t a = idx[k - 1], b = idx[k];
    if (l->port[a] == l->port[b] && !strcmp(l->names + l->offset[a], l->names + l->offset[b]))
      drop[b] = 1; /* sorted by index among equals: b comes later */
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->count; i++) {
    if (drop[i]) continue;
    l->offset[n] = l->offset[i];
    l->port[n++] = l->port[i];
  }
  l->count = n; /* the dropped names' bytes stay, unreferenced */
  free(idx);
  free(drop);
}

/* ---- the compact form ---- */

typedef struct {
  char *buf;
  size_t cap, len;
  bool cut;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  if (o->cut) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= o->cap - o->len) {
    o->cut = true;
    o->buf[o->len] = '\0';
    return;
  }
  o->len += (size_t)n;
}

/* A name as prefix + trailing number. */
typedef struct {
  const char *name;
  size_t plen; /* bytes of the prefix */
  int digits;  /* of the trailing number; 0 when it has none */
  int width;   /* the padding it needs: digits when it starts with 0, else 0 */
  uint64_t num;
  uint16_t port;
} split;

static split split_name(const nt_hostlist *l, uint32_t i) {
  split s = {.name = nt_hostlist_host(l, i), .port = l->port[i]};
  size_t len = strlen(s.name), p = len;
  while (p > 0 && is_digit(s.name[p - 1]) && len - p < MAX_DIGITS) p--;
  s.plen = p;
  s.digits = (int)(len - p);
  for (size_t k = p; k < len; k++) s.num = s.num * 10 + (uint64_t)(s.name[k] - '0');
  s.width = s.digits > 1 && s.name[p] == '0' ? s.digits : 0;
  return s;
}

/* Whether b can join a bracket group started by a (width w). */
static bool joins(const split *a, const split *b, int w) {
  if (!a->digits || !b->digits || a->plen != b->plen || a->port != b->port ||
      strncmp(a->name, b->name, a->plen) != 0)
    return false;
  return b->width ? b->width == w : w == 0 || b->digits >= w;
}

void nt_hostlist_ranged(const nt_hostlist *l, char *buf, size_t cap) {
  if (!cap) return;
  buf[0] = '\0';
  if (cap < 4) return;
  out o = {buf, cap - 3, 0, false}; /* room kept for "..." */
  for (uint32_t i = 0; i < l->count && !o.cut;) {
    split a = split_name(l, i);
    uint32_t j = i + 1;
    int w = a.width;
    while (j < l->count) {
      split b = split_name(l, j);
      if (!joins(&a, &b, w)) break;
      j++;
    }
    if (i) put(&o, ",");
    if (j == i + 1) {
      put(&o, "%s", a.name);
    } else {
      put(&o, "%.*s[", (int)a.plen, a.name);
      for (uint32_t k = i; k < j && !o.cut;) {
        split lo = split_name(l, k);
        uint32_t m = k + 1;
        uint64_t last = lo.num;
        for (; m < j; m++) {
          split b = split_name(l, m);
          if (b.num != last + 1) break;
          last = b.num;
        }
        if (k > i) put(&o, ",");
        if (m - k == 1)
          put(&o, "%0*llu", w, (unsigned long long)lo.num);
        else
          put(&o, "%0*llu-%0*llu", w, (unsigned long long)lo.num, w, (unsigned long long)last);
        k = m;
      }
      put(&o, "]");
    }
    if (a.port) put(&o, ":%u", (unsigned)a.port);
    i = j;
  }
  if (o.cut) snprintf(buf + o.len, cap - o.len, "...");
}

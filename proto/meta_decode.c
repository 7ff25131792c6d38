/* Strict decoding of hello and communicator JSON with cJSON (viewer side
 * only; the plugin never links this file). Length-bounded parse, nothing but
 * whitespace after the value, case-sensitive keys, every field type-checked,
 * strings bounded and NUL-free, 64-bit values as exact decimal strings. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccltop_proto.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static bool json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* cJSON turns the escape \u0000 into a NUL that silently ends the string
 * (it keeps no length), so such input is refused before parsing. Outside
 * strings, valid JSON has no quote or backslash, so tracking quotes and
 * skipping escaped characters finds every escape; malformed input that
 * confuses this scan is rejected by cJSON anyway. */
static bool has_escaped_nul(const char *s, size_t len) {
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '"') {
      in_string = !in_string;
    } else if (in_string && s[i] == '\\') {
      if (i + 6 <= len && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0) return true;
      i++; /* the escaped character */
    }
  }
  return false;
}

static cJSON *parse(const char *json, size_t len, const char *what, char *err, size_t errlen) {
  if (!json) return fail(err, errlen, "%s: no data", what), NULL;
  if (len > NT_MAX_JSON_BYTES) {
    fail(err, errlen, "%s: %zu bytes exceed the limit of %u", what, len, NT_MAX_JSON_BYTES);
    return NULL;
  }
  if (memchr(json, '\0', len)) return fail(err, errlen, "%s: contains a NUL byte", what), NULL;
  if (has_escaped_nul(json, len))
    return fail(err, errlen, "%s: a string contains \\u0000", what), NULL;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) {
    long at = end ? (long)(end - json) : -1;
    fail(err, errlen, "%s: malformed JSON near byte %ld", what, at);
    return NULL;
  }
  while (end && end < json + len && json_space(*end)) end++;
  if (end != json + len) {
    cJSON_Delete(root);
    fail(err, errlen, "%s: trailing bytes after the JSON value", what);
    return NULL;
  }
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    fail(err, errlen, "%s: not a JSON object", what);
    return NULL;
  }
  return root;
}

/* A string field copied into dst (cap bytes with NUL); missing is an error
 * unless optional, and a string that does not fit is an error, never cut. */
static int get_str(const cJSON *o, const char *key, char *dst, size_t cap, bool optional,
                   const char *what, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) {
    if (optional) {
      dst[0] = '\0';
      return 0;
    }
    return fail(err, errlen, "%s: field \"%s\" missing", what, key);
  }
  if (!cJSON_IsString(v) || !v->valuestring)
    return fail(err, errlen, "%s: field \"%s\" is not a string", what, key);
  size_t n = strlen(v->valuestring);
  if (n >= cap)
    return fail(err, errlen, "%s: field \"%s\" is %zu bytes, limit %zu", what, key, n, cap - 1);
  memcpy(dst, v->valuestring, n + 1);
  return 0;
}

/* An integer field in [lo, hi] (both well inside 2^53, where doubles are
 * exact); fractions are refused. */
static int get_int(const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *what, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) return fail(err, errlen, "%s: field \"%s\" missing", what, key);
  if (!cJSON_IsNumber(v)) return fail(err, errlen, "%s: field \"%s\" is not a number", what, key);
  double d = cJSON_GetNumberValue(v);
  if (!(d >= (double)lo && d <= (double)hi))
    return fail(err, errlen, "%s: field \"%s\" out of range [%lld, %lld]", what, key, (long long)lo,
                (long long)hi);
  if (d != (double)(int64_t)d)
    return fail(err, errlen, "%s: field \"%s\" is not an integer", what, key);
  *out = (int64_t)d;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Digits only: no sign, space or 0x prefix (strtoull would take them);
 * overflow refused. */
static int parse_u64(const char *s, int base, uint64_t *out) {
  if (!*s) return -1;
  for (const char *p = s; *p; p++) {
    int d = hex_digit(*p);
    if (d < 0 || d >= base) return -1;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* "MAJOR.MINOR", both decimal 0..65535 without sign or spaces. */
static int parse_version(const char *v, uint16_t *major, uint16_t *minor) {
  uint32_t part[2] = {0, 0};
  const char *p = v;
  for (int k = 0; k < 2; k++) {
    const char *start = p;
    for (; *p >= '0' && *p <= '9'; p++) {
      part[k] = part[k] * 10 + (uint32_t)(*p - '0');
      if (part[k] > 0xFFFF) return -1;
    }
    if (p == start) return -1;
    if (k == 0 && *p++ != '.') return -1;
  }
  if (*p) return -1;
  *major = (uint16_t)part[0];
  *minor = (uint16_t)part[1];
  return 0;
}

/* "v" (an unknown major is refused) and "type" (must name this message). */
static int check_header(const cJSON *o, const char *type, uint16_t *major, uint16_t *minor,
                        const char *what, char *err, size_t errlen) {
  char v[16], t[16];
  if (get_str(o, "v", v, sizeof v, false, what, err, errlen)) return -1;
  if (parse_version(v, major, minor) != 0) {
    char clean[4 * sizeof v];
    return fail(err, errlen, "%s: bad version \"%s\"", what,
                nt_sanitize(v, strlen(v), clean, sizeof clean));
  }
  if (*major != NT_PROTO_MAJOR)
    return fail(err, errlen, "%s: unsupported protocol major version %u (this nccltop reads %u)",
                what, (unsigned)*major, NT_PROTO_MAJOR);
  if (get_str(o, "type", t, sizeof t, false, what, err, errlen)) return -1;
  if (strcmp(t, type) != 0)
    return fail(err, errlen, "%s: field \"type\" is not \"%s\"", what, type);
  return 0;
}

static int get_env(const cJSON *o, nt_hello *h, char *err, size_t errlen) {
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
  if (!env) return 0;
  if (!cJSON_IsObject(env)) return fail(err, errlen, "hello: field \"env\" is not an object");
  const cJSON *e;
  cJSON_ArrayForEach(e, env) {
    uint32_t i = h->nenv;
    if (i >= NT_MAX_ENV) return fail(err, errlen, "hello: env: more than %d variables", NT_MAX_ENV);
    size_t nlen = e->string ? strlen(e->string) : 0;
    if (nlen == 0) return fail(err, errlen, "hello: env entry %u: empty name", i);
    if (nlen > NT_MAX_ENV_NAME)
      return fail(err, errlen, "hello: env entry %u: name is %zu bytes, limit %d", i, nlen,
                  NT_MAX_ENV_NAME);
    if (!cJSON_IsString(e) || !e->valuestring)
      return fail(err, errlen, "hello: env entry %u: value is not a string", i);
    size_t vlen = strlen(e->valuestring);
    if (vlen > NT_MAX_ENV_VALUE)
      return fail(err, errlen, "hello: env entry %u: value is %zu bytes, limit %d", i, vlen,
                  NT_MAX_ENV_VALUE);
    memcpy(h->env[i].name, e->string, nlen + 1);
    memcpy(h->env[i].value, e->valuestring, vlen + 1);
    h->nenv++;
  }
  return 0;
}

int nt_hello_decode(const char *json, size_t len, nt_hello *h, char *err, size_t errlen) {
  static const char what[] = "hello";
  if (!h) return fail(err, errlen, "hello: no output");
  memset(h, 0, sizeof *h);
  cJSON *o = parse(json, len, what, err, errlen);
  if (!o) return -1;
  int64_t pid = 0, abi = 0;
  char start[32];
  int rc = -1;
  if (check_header(o, "hello", &h->major, &h->minor, what, err, errlen) ||
      get_str(o, "host", h->host, sizeof h->host, false, what, err, errlen) ||
      get_int(o, "pid", 1, NT_PID_MAX, &pid, what, err, errlen) ||
      get_str(o, "nccl_version", h->nccl_version, sizeof h->nccl_version, true, what, err,
              errlen) ||
      get_str(o, "plugin_version", h->plugin_version, sizeof h->plugin_version, true, what, err,
              errlen) ||
      get_int(o, "abi", 0, 255, &abi, what, err, errlen) ||
      get_str(o, "clock", h->clock, sizeof h->clock, true, what, err, errlen) ||
      get_str(o, "start_wall_ns", start, sizeof start, false, what, err, errlen))
    goto out;
  if (parse_u64(start, 10, &h->start_wall_ns) != 0) {
    fail(err, errlen, "hello: field \"start_wall_ns\" is not a decimal u64");
    goto out;
  }
  h->pid = (uint32_t)pid;
  h->abi_version = (uint8_t)abi;
  if (get_env(o, h, err, errlen)) goto out;
  rc = 0;
out:
  cJSON_Delete(o);
  if (rc) h->nenv = 0;
  return rc;
}

int nt_comm_decode(const char *json, size_t len, nt_comm_info *c, char *err, size_t errlen) {
  static const char what[] = "comm";
  if (!c) return fail(err, errlen, "comm: no output");
  memset(c, 0, sizeof *c);
  cJSON *o = parse(json, len, what, err, errlen);
  if (!o) return -1;
  int64_t pid = 0, rank = 0, nranks = 0, nnodes = 0;
  uint16_t major, minor;
  char hash[32];
  int rc = -1;
  if (check_header(o, "comm", &major, &minor, what, err, errlen) ||
      get_int(o, "pid", 1, NT_PID_MAX, &pid, what, err, errlen) ||
      get_str(o, "hash", hash, sizeof hash, false, what, err, errlen) ||
      get_str(o, "name", c->name, sizeof c->name, true, what, err, errlen) ||
      get_int(o, "rank", -1, 1 << 24, &rank, what, err, errlen) ||
      get_int(o, "nranks", 0, 1 << 24, &nranks, what, err, errlen) ||
      get_int(o, "nnodes", 0, 1 << 24, &nnodes, what, err, errlen))
    goto out;
  if (strlen(hash) != 16 || parse_u64(hash, 16, &c->comm_hash) != 0) {
    fail(err, errlen, "comm: field \"hash\" is not 16 hex digits");
    goto out;
  }
  c->pid = (uint32_t)pid;
  c->rank = (int32_t)rank;
  c->nranks = (int32_t)nranks;
  c->nnodes = (int32_t)nnodes;
  rc = 0;
out:
  cJSON_Delete(o);
  return rc;
}

/* Strict decoding of hello and communicator JSON with cJSON (viewer side
 * only; the plugin never links this file). Length-bounded parse, nothing but
 * whitespace after the value, case-sensitive keys, every field type-checked,
 * strings bounded and NUL-free, 64-bit values as exact decimal strings. */
#include <cjson/cJSON.h>
#include <ctype.h>
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

static cJSON *parse(const char *json, size_t len, const char *what, char *err, size_t errlen) {
  if (!json) return fail(err, errlen, "%s: no data", what), NULL;
  if (len > NT_MAX_JSON_BYTES) {
    fail(err, errlen, "%s: %zu bytes exceed the limit of %u", what, len, NT_MAX_JSON_BYTES);
    return NULL;
  }
  if (memchr(json, '\0', len)) return fail(err, errlen, "%s: contains a NUL byte", what), NULL;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) {
    long at = end ? (long)(end - json) : -1;
    fail(err, errlen, "%s: malformed JSON near byte %ld", what, at);
    return NULL;
  }
  while (end && end < json + len && isspace((unsigned char)*end)) end++;
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
 * unless optional. */
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

static int get_int(const cJSON *o, const char *key, double lo, double hi, int64_t *out,
                   const char *what, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) return fail(err, errlen, "%s: field \"%s\" missing", what, key);
  if (!cJSON_IsNumber(v)) return fail(err, errlen, "%s: field \"%s\" is not a number", what, key);
  double d = cJSON_GetNumberValue(v);
  if (!(d >= lo && d <= hi) || d != (double)(int64_t)d)
    return fail(err, errlen, "%s: field \"%s\" out of range", what, key);
  *out = (int64_t)d;
  return 0;
}

static int parse_u64(const char *s, int base, uint64_t *out) {
  if (!s || !*s || !isxdigit((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* "v": "MAJOR.MINOR"; an unknown major is refused. */
static int check_version(const cJSON *o, uint16_t *major, uint16_t *minor, const char *what,
                         char *err, size_t errlen) {
  char v[16];
  unsigned ma, mi;
  char extra;
  if (get_str(o, "v", v, sizeof v, false, what, err, errlen)) return -1;
  if (sscanf(v, "%u.%u%c", &ma, &mi, &extra) != 2 || ma > 0xFFFF || mi > 0xFFFF)
    return fail(err, errlen, "%s: bad version \"%s\"", what, v);
  if (ma != NT_PROTO_MAJOR)
    return fail(err, errlen, "%s: unsupported protocol major version %u (this nccltop reads %u)",
                what, ma, NT_PROTO_MAJOR);
  if (major) *major = (uint16_t)ma;
  if (minor) *minor = (uint16_t)mi;
  return 0;
}

int nt_hello_decode(const char *json, size_t len, nt_hello *h, char *err, size_t errlen) {
  static const char what[] = "hello";
  cJSON *o = parse(json, len, what, err, errlen);
  if (!o) return -1;
  memset(h, 0, sizeof *h);
  int64_t pid = 0, abi = 0;
  char start[32];
  int rc = -1;
  if (check_version(o, &h->major, &h->minor, what, err, errlen) ||
      get_str(o, "host", h->host, sizeof h->host, false, what, err, errlen) ||
      get_int(o, "pid", 1, 4194304.0 * 1024, &pid, what, err, errlen) ||
      get_str(o, "nccl_version", h->nccl_version, sizeof h->nccl_version, true, what, err,
              errlen) ||
      get_str(o, "plugin_version", h->plugin_version, sizeof h->plugin_version, true, what, err,
              errlen) ||
      get_int(o, "abi", 0, 255, &abi, what, err, errlen) ||
      get_str(o, "start_wall_ns", start, sizeof start, false, what, err, errlen))
    goto out;
  if (parse_u64(start, 10, &h->start_wall_ns) != 0) {
    fail(err, errlen, "hello: start_wall_ns \"%s\" is not a decimal number", start);
    goto out;
  }
  h->pid = (uint32_t)pid;
  h->abi_version = (uint8_t)abi;
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
  if (env && !cJSON_IsObject(env)) {
    fail(err, errlen, "hello: field \"env\" is not an object");
    goto out;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, env) {
    if (h->nenv >= NT_MAX_ENV) {
      fail(err, errlen, "hello: more than %d environment variables", NT_MAX_ENV);
      goto out;
    }
    if (!e->string || strlen(e->string) > NT_MAX_ENV_NAME || !cJSON_IsString(e) ||
        strlen(e->valuestring) > NT_MAX_ENV_VALUE) {
      fail(err, errlen, "hello: environment entry %u is malformed or too long", h->nenv);
      goto out;
    }
    strcpy(h->env[h->nenv].name, e->string);
    strcpy(h->env[h->nenv].value, e->valuestring);
    h->nenv++;
  }
  rc = 0;
out:
  cJSON_Delete(o);
  return rc;
}

int nt_comm_decode(const char *json, size_t len, nt_comm_info *c, char *err, size_t errlen) {
  static const char what[] = "comm";
  cJSON *o = parse(json, len, what, err, errlen);
  if (!o) return -1;
  memset(c, 0, sizeof *c);
  int64_t pid = 0, rank = 0, nranks = 0, nnodes = 0;
  char hash[32];
  int rc = -1;
  if (check_version(o, NULL, NULL, what, err, errlen) ||
      get_int(o, "pid", 1, 4194304.0 * 1024, &pid, what, err, errlen) ||
      get_str(o, "hash", hash, sizeof hash, false, what, err, errlen) ||
      get_str(o, "name", c->name, sizeof c->name, true, what, err, errlen) ||
      get_int(o, "rank", -1, 1 << 24, &rank, what, err, errlen) ||
      get_int(o, "nranks", 0, 1 << 24, &nranks, what, err, errlen) ||
      get_int(o, "nnodes", 0, 1 << 24, &nnodes, what, err, errlen))
    goto out;
  if (strlen(hash) != 16 || parse_u64(hash, 16, &c->comm_hash) != 0) {
    fail(err, errlen, "comm: hash \"%.20s\" is not 16 hex digits", hash);
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

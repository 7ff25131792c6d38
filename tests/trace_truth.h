/* A recording of real NCCL (tests/traces/, the recorder's line format) read
 * by the tests themselves, never by the code under test: each rank's
 * Coll and P2p operations in start order, with their bytes, algorithm and
 * protocol, their own execution time (first ProxyStep start to last ProxyOp
 * stop, or the KernelCh GPU time), and the offset of CLOCK_MONOTONIC to the
 * GPU globaltimer (wall clock) that maps them onto job-rankN.json's phases
 * (read with cJSON). */
#ifndef NCCLTOP_TRACE_TRUTH_H
#define NCCLTOP_TRACE_TRUTH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/xz_file.h"

#define MAX_PH 12

typedef struct {
  bool p2p, self;
  char func[16], algo[16], proto[16];
  uint64_t bytes, t;
  uint64_t first_step, last_op_stop; /* 0: none */
  int proxy_ops;
  uint64_t gpu_start, gpu_stop; /* KernelCh pTimer, 0: none */
} rop;

typedef struct {
  int rank, nranks;
  uint64_t hash;
  rop *ops;
  int nops, cap;
  int64_t wall_minus_mono; /* ns: the GPU globaltimer (wall clock) less CLOCK_MONOTONIC */
  struct {
    char name[24];
    double start, end;
  } ph[MAX_PH];
  int nph;
  cJSON *job;
} rrank;

static const char *after(const char *l, const char *key) {
  const char *p = strstr(l, key);
  return p ? p + strlen(key) : NULL;
}

static uint64_t u64_of(const char *l, const char *key, int base) {
  const char *p = after(l, key);
  return p ? strtoull(p, NULL, base) : 0;
}

static void word_of(const char *l, const char *key, char *out, size_t cap) {
  const char *p = after(l, key);
  size_t n = p ? strcspn(p, " \n") : 0;
  if (n >= cap) n = cap - 1;
  memcpy(out, p ? p : "", n);
  out[n] = '\0';
}

static int dtype_size(const char *d) {
  static const struct {
    const char *name;
    int size;
  } t[] = {{"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
           {"ncclFloat16", 2}, {"ncclBfloat16", 2}, {"ncclInt32", 4},      {"ncclUint32", 4},
           {"ncclFloat32", 4}, {"ncclInt64", 8},    {"ncclUint64", 8},     {"ncclFloat64", 8}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(d, t[i].name)) return t[i].size;
  return 0;
}

/* Handles of one recording: h -> (type, op). */
typedef struct {
  uint64_t *h;
  int *type, *op;
  size_t cap;
} hmap;

static size_t hslot(const hmap *m, uint64_t h) {
  size_t k = (size_t)(h * 0x9E3779B97F4A7C15ull >> 24) & (m->cap - 1);
  while (m->h[k] && m->h[k] != h) k = (k + 1) & (m->cap - 1);
  return k;
}

static bool read_rank(const char *path, rrank *r) {
  size_t len;
  char *text = xz_read_file(path, 64u << 20, &len);
  if (!text) return false;
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  hmap m = {.cap = 16};
  while (m.cap < lines * 2) m.cap *= 2;
  m.h = calloc(m.cap, sizeof *m.h);
  m.type = calloc(m.cap, sizeof *m.type);
  m.op = calloc(m.cap, sizeof *m.op);
  memset(r, 0, sizeof *r);
  r->wall_minus_mono = INT64_MIN;
  bool ok = m.h && m.type && m.op;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); ok && l;
       l = strtok_r(NULL, "\n", &save)) {
    unsigned long long t;
    char verb[16];
    int used = 0;
    if (sscanf(l, "%*d %*d %llu %15s %n", &t, verb, &used) != 2) continue;
    const char *rest = l + used;
    if (!strcmp(verb, "init")) {
      r->rank = (int)u64_of(rest, " rank=", 10);
      r->nranks = (int)u64_of(rest, " nranks=", 10);
      r->hash = u64_of(rest, " hash=", 16);
      continue;
    }
    uint64_t h = u64_of(rest, "h=", 16);
    size_t k = hslot(&m, h);
    if (!strcmp(verb, "start")) {
      int type = atoi(rest);
      size_t pk = hslot(&m, u64_of(rest, " parent=", 16));
      int pop = m.h[pk] ? m.op[pk] : -1, ptype = m.h[pk] ? m.type[pk] : 0;
      m.h[k] = h;
      m.type[k] = type;
      m.op[k] = -1;
      if (type == 2 || type == 4) {
        if (r->nops == r->cap) {
          r->cap = r->cap ? r->cap * 2 : 1024;
          rop *o = realloc(r->ops, (size_t)r->cap * sizeof *o);
          if (!o) {
            ok = false;
            break;
          }
          r->ops = o;
        }
        rop *o = &r->ops[r->nops];
        memset(o, 0, sizeof *o);
        o->p2p = type == 4;
        o->t = t;
        word_of(rest, " func=", o->func, sizeof o->func);
        char dt[24];
        word_of(rest, " dtype=", dt, sizeof dt);
        o->bytes = u64_of(rest, " count=", 10) * (uint64_t)dtype_size(dt);
        if (o->p2p) {
          o->self = (int)u64_of(rest, " peer=", 10) == r->rank;
          snprintf(o->algo, sizeof o->algo, "none");
          snprintf(o->proto, sizeof o->proto, "none");
        } else {
          word_of(rest, " algo=", o->algo, sizeof o->algo);
          word_of(rest, " proto=", o->proto, sizeof o->proto);
        }
        m.op[k] = r->nops++;
      } else if (type == 8 && pop >= 0 && (ptype == 2 || ptype == 4)) {
        m.op[k] = pop;
        r->ops[pop].proxy_ops++;
      } else if (type == 16 && pop >= 0 && ptype == 8) {
        rop *o = &r->ops[pop];
        if (!o->first_step || t < o->first_step) o->first_step = t;
      } else if (type == 64 && pop >= 0) {
        rop *o = &r->ops[pop];
        uint64_t pt = u64_of(rest, " ptimer=", 10);
        m.op[k] = pop;
        if (!o->gpu_start || pt < o->gpu_start) o->gpu_start = pt;
        int64_t d = (int64_t)(pt - t);
        if (d > r->wall_minus_mono) r->wall_minus_mono = d;
      }
    } else if (m.h[k] && m.op[k] >= 0) {
      rop *o = &r->ops[m.op[k]];
      if (!strcmp(verb, "stop") && m.type[k] == 8 && t > o->last_op_stop) o->last_op_stop = t;
      if (!strcmp(verb, "record") && m.type[k] == 64 && u64_of(rest, " state=", 10) == 22) {
        uint64_t pt = u64_of(rest, " ptimer=", 10);
        if (pt > o->gpu_stop) o->gpu_stop = pt;
      }
    }
  }
  free(m.h);
  free(m.type);
  free(m.op);
  free(text);
  return ok && r->nops > 0 && r->nranks > 0;
}

/* The operation's own execution time, ns: its first step's start to its
 * last ProxyOp's stop; without proxy work, its kernel's GPU time; 0 none. */
static uint64_t exec_ns(const rop *o) {
  if (o->proxy_ops && o->first_step && o->last_op_stop > o->first_step)
    return o->last_op_stop - o->first_step;
  if (o->gpu_start && o->gpu_stop > o->gpu_start) return o->gpu_stop - o->gpu_start;
  return 0;
}

static int bucket_of(uint64_t bytes) {
  return bytes > 1 ? 63 - __builtin_clzll(bytes) : 0;
}

static cJSON *read_json(const char *path) {
  size_t n = 0;
  FILE *f = fopen(path, "rb");
  char *b = f ? malloc(1 << 20) : NULL;
  if (b) n = fread(b, 1, (1 << 20) - 1, f);
  if (f) fclose(f);
  if (!b) return NULL;
  b[n] = '\0';
  cJSON *j = cJSON_Parse(b);
  free(b);
  return j;
}

#endif

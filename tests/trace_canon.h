/* A recorder's trace (tests/fixtures/recorder.c) in a canonical form, so a
 * recording and its replay through `nccltop sim --trace` compare equal:
 * per process (ordered by its first call's time), its calls in the order the
 * player plays them (time, then file order), without pid and tid (the
 * thread by its order of appearance), handles and contexts by their order of
 * appearance, a ProxyOp's pid= by the process it names; what another process
 * passed (a PXN op's context and parent) as it is. */
#ifndef NCCLTOP_TRACE_CANON_H
#define NCCLTOP_TRACE_CANON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  size_t got;
  while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *c = realloc(b, cap * 2 + 1);
      if (!c) {
        free(b);
        b = NULL;
        break;
      }
      b = c;
      cap *= 2;
    }
  }
  fclose(f);
  if (b) b[n] = '\0';
  if (len) *len = n;
  return b;
}

#define MAX_LINES 60000
#define MAX_PROCS 16

typedef struct {
  long pid, tid;
  unsigned long long t;
  int order;
  char *rest; /* from the verb on */
} rline;

static int by_proc_time(const void *a, const void *b) {
  const rline *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->order - y->order;
}

typedef struct {
  unsigned long long raw[MAX_LINES];
  int n;
} namer;

static int name_of(namer *m, unsigned long long raw) {
  for (int i = 0; i < m->n; i++)
    if (m->raw[i] == raw) return i;
  if (m->n == MAX_LINES) return -1;
  m->raw[m->n] = raw;
  return m->n++;
}

static int find_name(const namer *m, unsigned long long raw) {
  for (int i = 0; i < m->n; i++)
    if (m->raw[i] == raw) return i;
  return -1;
}

typedef struct {
  char *text; /* every process's canonical lines, processes separated by "--\n" */
  int lines;
} canon;

static void append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap * 2 : 1 << 16;
    while (c < *len + n + 1) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
}

/* The value after " key=" in s as a number, and where it starts and ends. */
static bool field_at(const char *s, const char *key, unsigned long long *v, int base,
                     const char **start, const char **end) {
  char k[24];
  snprintf(k, sizeof k, " %s=", key);
  const char *p = strstr(s, k);
  if (!p) return false;
  *start = p + strlen(k);
  char *e;
  *v = strtoull(*start, &e, base);
  *end = e;
  return true;
}

/* Replaces the value of key in line by `with`. */
static void replace_field(char *line, size_t cap, const char *key, int base, const char *with) {
  unsigned long long v;
  const char *a, *e;
  if (!field_at(line, key, &v, base, &a, &e)) return;
  char tail[1024];
  snprintf(tail, sizeof tail, "%s", e);
  size_t at = (size_t)(a - line);
  snprintf(line + at, cap - at, "%s%s", with, tail);
}

static int canonicalize(const char *path, canon *out) {
  memset(out, 0, sizeof *out);
  size_t len;
  char *text = slurp(path, &len);
  if (!text) return -1;
  rline *ls = calloc(MAX_LINES, sizeof *ls);
  namer *handles = malloc(sizeof *handles), *ctxs = malloc(sizeof *ctxs),
        *tids = malloc(sizeof *tids);
  long pids[MAX_PROCS];
  unsigned long long first_t[MAX_PROCS];
  int n = 0, npids = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && ls && n < MAX_LINES;
       l = strtok_r(NULL, "\n", &save)) {
    int used = 0;
    char verb[16];
    if (sscanf(l, "%ld %ld %llu %15s %n", &ls[n].pid, &ls[n].tid, &ls[n].t, verb, &used) != 4)
      continue;
    if (!strcmp(verb, "set_clock") || !strcmp(verb, "flush")) continue;
    ls[n].order = n;
    ls[n].rest = l + used - (int)strlen(verb) - 1;
    int i = 0;
    while (i < npids && pids[i] != ls[n].pid) i++;
    if (i == npids && npids < MAX_PROCS) pids[npids] = ls[n].pid, first_t[npids++] = ls[n].t;
    if (i < npids && ls[n].t < first_t[i]) first_t[i] = ls[n].t;
    n++;
  }
  /* Processes by their first call's time. */
  int rank_of[MAX_PROCS];
  for (int i = 0; i < npids; i++) {
    rank_of[i] = 0;
    for (int j = 0; j < npids; j++)
      if (first_t[j] < first_t[i] || (first_t[j] == first_t[i] && pids[j] < pids[i])) rank_of[i]++;
  }
  if (ls) qsort(ls, (size_t)n, sizeof *ls, by_proc_time);
  size_t olen = 0, ocap = 0;
  char *o = NULL;
  for (int r = 0; r < npids && ls && handles && ctxs && tids; r++) {
    int pi = 0;
    while (rank_of[pi] != r) pi++;
    handles->n = ctxs->n = tids->n = 0;
    append(&o, &olen, &ocap, "--\n");
    for (int k = 0; k < n; k++) {
      if (ls[k].pid != pids[pi]) continue;
      char line[1200], name[48];
      snprintf(line, sizeof line, " %s", ls[k].rest);
      unsigned long long v, op_pid = 0;
      const char *a, *e;
      bool pxn = strstr(line, " start 8 ") && field_at(line, "pid", &op_pid, 10, &a, &e) &&
                 (long)op_pid != pids[pi];
      if (field_at(line, "pid", &op_pid, 10, &a, &e)) {
        int q = 0;
        while (q < npids && pids[q] != (long)op_pid) q++;
        snprintf(name, sizeof name, "P%d", q < npids ? rank_of[q] : -1);
        replace_field(line, sizeof line, "pid", 10, name);
      }
      if (field_at(line, "ctx", &v, 16, &a, &e)) {
        bool init = !strncmp(line, " init", 5);
        int i = init ? name_of(ctxs, v) : find_name(ctxs, v);
        if (i >= 0)
          snprintf(name, sizeof name, "c%d", i);
        else
          snprintf(name, sizeof name, "X%llx", v);
        replace_field(line, sizeof line, "ctx", 16, name);
      }
      static const char *const hkeys[] = {"parent", "pgroup"};
      for (int h = 0; h < 2; h++) {
        if (!field_at(line, hkeys[h], &v, 16, &a, &e)) continue;
        int i = pxn || v == 0 ? -1 : find_name(handles, v);
        if (pxn || v == 0 || i < 0)
          snprintf(name, sizeof name, "X%llx", pxn || v == 0 ? v : 0xBADull);
        else
          snprintf(name, sizeof name, "h%d", i);
        replace_field(line, sizeof line, hkeys[h], 16, name);
      }
      if (field_at(line, "h", &v, 16, &a, &e)) {
        int i = !strncmp(line, " start", 6) ? name_of(handles, v) : find_name(handles, v);
        snprintf(name, sizeof name, "h%d", i);
        replace_field(line, sizeof line, "h", 16, name);
      }
      char full[1300];
      snprintf(full, sizeof full, "T%d %llu%s\n", name_of(tids, (unsigned long long)ls[k].tid),
               ls[k].t, line);
      append(&o, &olen, &ocap, full);
      out->lines++;
    }
  }
  out->text = o;
  free(ls);
  free(handles);
  free(ctxs);
  free(tids);
  free(text);
  return o ? 0 : -1;
}

/* The first line where a and b differ, on stderr. */
static void say_difference(const char *a, const char *b) {
  int line = 1;
  while (*a && *a == *b) {
    if (*a == '\n') line++;
    a++, b++;
  }
  fprintf(stderr,
          "    canonical line %d differs:\n      recorded: %.160s\n      replayed: %.160s\n", line,
          a, b);
}

#endif

/* The trace player's options (`nccltop sim --trace PATH ...`): each value
 * checked against its range, one line when it is not. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

void nt_trace_defaults(nt_trace_config *c) {
  memset(c, 0, sizeof *c);
  c->speed = 1;
}

bool nt_trace_wanted(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--trace") || !strncmp(argv[i], "--trace=", 8)) return true;
  return false;
}

void nt_trace_usage(FILE *f) {
  fprintf(f,
          "usage: nccltop sim --trace PATH [--trace PATH ...] [--speed X|max] [--plugin PATH]\n"
          "                   [--dir DIR] [--interval-ms N] [--linger S] [--env NAME=VALUE]\n"
          "                   [--quiet]\n"
          "  plays recordings of the profiler calls real NCCL made (tests/traces/), through\n"
          "  the plugin, as one job: a process per recorded process, a thread per recorded\n"
          "  thread, every call at its recorded time; watch it as a live job.\n"
          "  --trace PATH    a recording of one process (plain text, .xz or .zst) or a\n"
          "                  directory of them (*.trace, *.trace.xz, *.trace.zst); repeatable\n"
          "  --speed X|max   X times as fast as recorded (0.001 .. 1000000, default 1); max:\n"
          "                  no waiting, each thread's order and the threads' order kept\n"
          "  --plugin PATH   default: the built plugin; at a speed other than 1 its test build\n"
          "                  when there (it shows the plugin the recorded times)\n"
          "  --linger S      each process waits S s before its closing finalize calls\n"
          "  A recording may hold %d lines of at most %d bytes (%u MiB); all together %d\n"
          "  lines. A bad one: one line naming the file and line, exit status 2, nothing\n"
          "  played.\n",
          NT_TRACE_MAX_FILE_LINES, NT_TRACE_MAX_LINE, NT_TRACE_MAX_FILE_BYTES >> 20,
          NT_TRACE_MAX_TOTAL_LINES);
}

static int bad(const char *opt, const char *want, const char *v) {
  fprintf(stderr, "nccltop sim: %s needs %s, not '%s'\n", opt, want, v ? v : "");
  return -1;
}

static int parse_speed(const char *opt, const char *v, double *out) {
  if (v && !strcmp(v, "max")) {
    *out = 0;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || end == v || *end || errno || !(x >= 0.001 && x <= 1000000))
    return bad(opt, "a factor from 0.001 to 1000000, or max", v);
  *out = x;
  return 0;
}

static int parse_seconds(const char *opt, const char *v, double *out) {
  char *end = NULL;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || end == v || *end || errno || !(x >= 0 && x <= 31536000))
    return bad(opt, "seconds from 0 to 31536000", v);
  *out = x;
  return 0;
}

static int parse_interval(const char *opt, const char *v, uint32_t *out) {
  char *end = NULL;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || end == v || *end || errno || x < 10 || x > 60000)
    return bad(opt, "a whole number from 10 to 60000", v);
  *out = (uint32_t)x;
  return 0;
}

static int parse_env(const char *opt, const char *v, nt_trace_config *c) {
  const char *eq = v ? strchr(v, '=') : NULL;
  bool ok = eq && eq != v && c->nenv < (int)(sizeof c->env / sizeof c->env[0]);
  for (const char *p = v; ok && p < eq; p++)
    ok = *p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
         (*p >= '0' && *p <= '9');
  if (!ok) return bad(opt, "NAME=VALUE (at most 16)", v);
  c->env[c->nenv++] = v;
  return 0;
}

static int parse_path(const char *opt, const char *v, const char **out) {
  if (!v || !*v) return bad(opt, "a path", v);
  *out = v;
  return 0;
}

int nt_trace_parse_args(nt_trace_config *c, int argc, char **argv) {
  for (int i = 0; i < argc;) {
    const char *arg = argv[i];
    char name[32];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name || strncmp(arg, "--", 2) != 0) {
      fprintf(stderr, "nccltop sim: unknown option '%s' with --trace; try 'nccltop sim --help'\n",
              arg);
      return -1;
    }
    memcpy(name, arg, len);
    name[len] = '\0';
    if (!strcmp(name, "--quiet")) {
      if (eq) return bad(name, "no value", eq + 1);
      c->quiet = true;
      i++;
      continue;
    }
    const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
    int rc;
    if (!strcmp(name, "--trace")) {
      if (c->npaths >= NT_TRACE_MAX_PATHS) return bad(name, "at most 64 paths", v);
      rc = parse_path(name, v, &c->paths[c->npaths]);
      if (!rc) c->npaths++;
    } else if (!strcmp(name, "--speed"))
      rc = parse_speed(name, v, &c->speed);
    else if (!strcmp(name, "--plugin"))
      rc = parse_path(name, v, &c->plugin);
    else if (!strcmp(name, "--dir"))
      rc = parse_path(name, v, &c->dir);
    else if (!strcmp(name, "--interval-ms"))
      rc = parse_interval(name, v, &c->interval_ms);
    else if (!strcmp(name, "--linger"))
      rc = parse_seconds(name, v, &c->linger_s);
    else if (!strcmp(name, "--env"))
      rc = parse_env(name, v, c);
    else {
      fprintf(stderr,
              "nccltop sim: %s does not go with --trace (the recording says what the job "
              "does); try 'nccltop sim --help'\n",
              name);
      return -1;
    }
    if (rc) return -1;
    i += eq ? 1 : 2;
  }
  if (c->npaths == 0) {
    fprintf(stderr, "nccltop sim: --trace needs a path\n");
    return -1;
  }
  return 0;
}

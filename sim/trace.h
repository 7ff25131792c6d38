/* The trace player: `nccltop sim --trace PATH ...` plays recordings of the
 * profiler calls real NCCL made (tests/fixtures/recorder.c writes them;
 * tests/traces/ holds some, its README has the line format) through a real
 * plugin, as one job: one process per recorded process, one thread per
 * recorded thread, every call at its recorded time, publishing like a live
 * job so the monitor, `-b --json`, `record` and the exporter watch it.
 *
 * Everything is read and checked before anything is played: a bad or
 * truncated recording is one line naming the file and the line, exit
 * status 2, and no process started. */
#ifndef NCCLTOP_SIM_TRACE_H
#define NCCLTOP_SIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* What a recording may hold (each is refused beyond, with its limit said). */
#define NT_TRACE_MAX_PATHS       64           /* --trace options */
#define NT_TRACE_MAX_FILES       1024         /* recordings, directories expanded */
#define NT_TRACE_MAX_LINE        1024         /* bytes per line, the recorder's own */
#define NT_TRACE_MAX_FILE_LINES  2000000      /* lines per recording */
#define NT_TRACE_MAX_FILE_BYTES  (256u << 20) /* text per recording, decompressed */
#define NT_TRACE_MAX_TOTAL_LINES 4000000      /* lines of all recordings together */
#define NT_TRACE_MAX_PROCS       1024         /* processes of all recordings */
#define NT_TRACE_MAX_THREADS     256          /* threads per process */
#define NT_TRACE_MAX_CONTEXTS    1024         /* inits per process */

typedef struct {
  const char *paths[NT_TRACE_MAX_PATHS]; /* --trace: a recording or a directory */
  int npaths;
  double speed;         /* --speed X (0.001 .. 1000000), 0 = max; default 1 */
  const char *plugin;   /* --plugin; NULL = the built one (see nt_trace_run) */
  const char *dir;      /* --dir: NCCLTOP_DIR of the processes, NULL = inherit */
  uint32_t interval_ms; /* --interval-ms: NCCLTOP_INTERVAL_MS, 0 = inherit */
  double linger_s;      /* --linger S: each process waits S s, flushed, before
                           its closing finalize calls */
  bool quiet;           /* --quiet: no progress lines on stderr */
  const char *env[16];  /* --env NAME=VALUE, set in every process */
  int nenv;
} nt_trace_config;

void nt_trace_defaults(nt_trace_config *c);
/* Whether argv holds a --trace option (then `sim` plays recordings). */
bool nt_trace_wanted(int argc, char **argv);
/* Parses the player's options (all of argv); 0, or -1 with one line on
 * stderr. */
int nt_trace_parse_args(nt_trace_config *c, int argc, char **argv);
void nt_trace_usage(FILE *f);

/* Reads, checks and plays. The plugin: c->plugin, else $NCCLTOP_PLUGIN,
 * else at --speed 1 the production plugin next to nccltop, at any other
 * speed the test build (tests/libnccl-profiler-nccltop-test.so, whose
 * virtual clock shows the plugin the recorded times) when it is there.
 * Returns the exit status: 0 played (or stopped by SIGINT/SIGTERM), 1 the
 * play failed, 2 a recording or an option was refused. */
int nt_trace_run(const nt_trace_config *c);

#endif

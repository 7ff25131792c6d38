/* The viewer's pieces that the command line, the screen and batch output
 * share: options, the live source (ZeroMQ) and the clock. */
#ifndef NCCLTOP_VIEWER_H
#define NCCLTOP_VIEWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "signals.h"

#define NT_VERSION "0.2.0"

typedef struct {
  const char *dir;        /* endpoint directory; NULL = nt_endpoint_dir() */
  const char *connect[8]; /* extra endpoints (tcp://host:port of a relay) */
  int nconnect;
  const char *hosts;    /* --hosts LIST: relays on these hosts (Slurm hostlist syntax) */
  const char *hostfile; /* --hostfile FILE: the same, one list per line */
  uint32_t delay_ms;    /* screen refresh / batch interval, default 500 */
  uint32_t stall_ms;    /* --stall-ms, default 2000 */
  int iterations;       /* -n: frames (batch) or screen updates, 0 = forever */
  bool batch;           /* -b */
  bool json;            /* --json (batch) */
  bool color;           /* false with -C or NO_COLOR */
  bool ascii;           /* -A / --ascii, or a non-UTF-8 locale */
  int initial_view;     /* enum nt_view_id */
  const char *topology; /* --topology FILE */
  double start_s;       /* nt_now_s() when the viewer started; 0: the first frame's time */
  double wait_first_s;  /* batch: wait up to this long for the first snapshot before the
                           first frame (demo: its ranks are starting), 0 = do not wait */
  /* --max-memory: the model's byte budget (nt_model_set_budget), in MiB */
  uint32_t max_memory_mib;
  /* tcp:// --connect endpoints (relays): CURVE with the user's keypair
   * (curve.h) checking this server key (Z85 or a file; NULL: our own
   * key.pub), unless --insecure. */
  const char *server_key;
  bool insecure;
  const char *record; /* --record FILE: what the source receives goes there too */
  bool force;         /* --force: --record may replace an existing FILE */
  /* `nccltop replay` on the screen: the recording replaces the source
   * (recording.h); NULL live. */
  struct nt_replay *replay;
} nt_options;

/* Views, in Tab order; digits 1.. select them. */
enum nt_view_id {
  NT_VIEW_OVERVIEW,
  NT_VIEW_PROXY,
  NT_VIEW_CHANNELS,
  NT_VIEW_OPS,
  NT_VIEW_TOPO,
  NT_VIEW_ENV,
  NT_VIEW_HELP,
  NT_VIEW_COUNT
};

double nt_now_s(void); /* CLOCK_MONOTONIC in seconds */

/* While the screen is on: the shell's terminal modes and the terminfo
 * strings that leave the screen (keypad off, cursor on, alternate screen
 * off); nt_term_restore_now (async-signal-safe) puts them back when a
 * second signal ends the process the default way. */
struct termios;
void nt_term_restore_set(const struct termios *shell, const char *seq);
void nt_term_restore_clear(void);
void nt_term_restore_now(void);

typedef struct nt_source nt_source;
/* Opens the ZeroMQ context; NULL with the reason in err. */
nt_source *nt_source_open(const nt_options *o, char *err, size_t errlen);
/* The options' mistakes batch mode refuses (the screen lists them as the
 * source meets them): a --dir (or $NCCLTOP_DIR) that is not a directory, a
 * --connect that is not a ZeroMQ endpoint. -1 with one line in err. */
int nt_source_check(const nt_options *o, char *err, size_t errlen);
/* Rescans the endpoint directory (at most once a second), connects to new
 * publishers, drops dead ones, then receives and applies every pending
 * message (at most NT_SOURCE_MAX_PER_POLL). Returns within timeout_ms (plus
 * the time to apply what arrived) and the number of messages taken. Never
 * fails: problems become model errors. The first call also connects the
 * options' --connect endpoints. */
#define NT_SOURCE_MAX_PER_POLL 10000
int nt_source_poll(nt_source *s, nt_model *m, int timeout_ms);
uint32_t nt_source_nendpoints(const nt_source *s);
/* Also subscribe to `addr` (a relay's tcp:// endpoint); failures become model errors. */
int nt_source_connect(nt_source *s, nt_model *m, const char *addr);
void nt_source_close(nt_source *s);
/* A tap sees every whole two-frame message before it is decoded (topic and
 * body as received, the time the model is given), and, with topic NULL, an
 * endpoint the source dropped (nt_model_endpoint_gone). For a recorder;
 * NULL removes it. */
typedef void (*nt_source_tap)(void *arg, const char *endpoint, uint32_t endpoint_pid,
                              const void *topic, size_t topic_len, const void *body,
                              size_t body_len, double now_s);
void nt_source_set_tap(nt_source *s, nt_source_tap tap, void *arg);
/* What the source watches, for people: the endpoint directory, and the
 * --connect endpoint (or how many, when several). */
void nt_source_watching(const nt_source *s, char *buf, size_t cap);

/* Batch output: one frame of the model as text or one JSON line to `out`
 * (builds a frame: once per tick, it runs the diagnosis). */
#include <stdio.h>

#include "frame.h"
#include "json_out.h"
int nt_batch_print(FILE *out, nt_model *m, const nt_options *o, double now_s);
/* A built frame as one JSON object, written into `out` (emptied first; its
 * buffer is reused), the keys in batch.c; NULL out of memory. Or as the
 * text batch frame. */
const char *nt_frame_json(const nt_frame *f, nt_jo *out);
void nt_frame_text(FILE *out, const nt_frame *f);

/* --hosts and --hostfile (cli.c): every host's relay, tcp://HOST:PORT
 * (port NT_HOSTS_DEFAULT_PORT unless the list gives one), at most
 * NT_VIEWER_MAX_HOSTS for one viewer (relays can feed relays). */
#define NT_VIEWER_MAX_HOSTS 4096
struct nt_hostlist;
/* The options' hosts, repeats dropped: NULL with err "" when there are
 * none; NULL with one line in err ("--hosts: position 7: ...") when the
 * list or the file is wrong. The caller frees (nt_hostlist_free). */
struct nt_hostlist *nt_options_hosts(const nt_options *o, char *err, size_t errlen);

/* The command line (cli.c). */
#include "../sim/sim.h"
void nt_usage(FILE *f);
void nt_sim_usage(FILE *f); /* `nccltop sim --help` */
/* Defaults: delay 500 ms, stall 2000 ms, colour unless NO_COLOR is set,
 * ASCII when the locale (set it first) is not UTF-8. */
void nt_options_defaults(nt_options *o);
/* Parses the viewer options of argv[1..argc) into o; returns 0, 1 when help
 * or the version was printed (exit 0), 2 after a usage error was printed on
 * stderr (exit 2). The strings stay argv's. */
int nt_options_parse(nt_options *o, int argc, char **argv);
/* One of the viewer's long options (name without "--"; value NULL for a
 * flag), for a subcommand that shares it (record, exporter): the same
 * ranges and messages, said as `prog`. 0, 1 (printed help or version) or
 * 2 (refused, one line on stderr). */
int nt_options_set(nt_options *o, const char *prog, const char *name, const char *value);
/* `demo` arguments (argv[0] "demo"): simulator options go into sim, the rest
 * (with their values) into viewer[1..], viewer[0] = argv[0], NULL-terminated;
 * viewer has room for argc + 1 pointers. -1 after a simulator option error. */
int nt_demo_split_args(nt_sim_config *sim, int argc, char **argv, char **viewer, int *nviewer);

/* The interactive monitor; returns the exit status. */
int nt_screen_run(nt_model *m, nt_source *src, const nt_options *o);

#endif

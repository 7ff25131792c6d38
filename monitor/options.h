/* The viewer's settings, as the command line gives them (cli.c parses
 * them): the one header every layer of the monitor may read. Plain data:
 * it includes nothing of the monitor. */
#ifndef NCCLTOP_OPTIONS_H
#define NCCLTOP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

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
  /* The screen's start, as --view, --sort, --filter give it, else the
   * settings file (feeds/settings.h), else the defaults. */
  int initial_sort;                          /* the screen's enum nt_sort */
  char initial_filter[64];                   /* "" none */
  bool view_given, sort_given, filter_given; /* by a flag: the file does not change it */
  bool no_config;                            /* --no-config: no settings file read or written */
  bool no_mouse;          /* --no-mouse, or the file's "mouse off": clicks stay the terminal's */
  int settings_mouse;     /* the file's mouse setting (-1 none): saved back as it was */
  char hide_columns[128]; /* --hide-columns, else the file's: titles, comma-separated */
  bool hide_given;        /* by the flag */
  bool settings_has_hide; /* the file's hide-columns, saved back as it was */
  char settings_hide[128];
  char settings_path[1024]; /* where the screen saves its settings; "" nowhere */
  char settings_note[256];  /* why the settings file was not used; "" it was, or none */
  const char *topology;     /* --topology FILE */
  double start_s;           /* nt_now_s() when the viewer started; 0: the first frame's time */
  double wait_first_s;      /* batch: wait up to this long for the first snapshot before the
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

#endif

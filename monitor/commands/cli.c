/* nccltop's command line: the usage text, the viewer's options (one
 * getopt_long table, values checked against their ranges with a precise
 * message) and the split of `demo` arguments between simulator and viewer. */
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>

#include "../feeds/source.h"
#include "cli.h"
#include "../../sim/sim.h"
#include "../../sim/trace.h"
#include "../feeds/hostlist.h"
#include "../feeds/settings.h"
#include "../options.h"

/* The simulator's options: `nccltop --help` and `nccltop sim --help`. */
static void sim_options(FILE *f) {
  fprintf(f, "sim options: --ranks N --comms N --channels N --steps N --iterations N --duration S\n"
             "             --linger S --deterministic --abi 3..7 --plugin PATH --interval-ms N\n"
             "             --dir DIR --quiet\n"
             "             --nodes N (an N-node job: ranks / N ranks per node, node k's ranks\n"
             "               publish in DIR/node<k> as host node<k>, nNodes = N; DIR is --dir,\n"
             "               else the default endpoint directory)\n"
             "             --nccl-version 2.26|2.27|2.28|2.29|2.30|2.31  the NCCL release played\n"
             "               (default 2.28): the profiler ABI it loads (v3, v4, v5, v6, v6, v7:\n"
             "               2.31 falls back to v6 through its shim) and its version-specific\n"
             "               behaviour; --abi N is an expert override of the ABI (alone, it\n"
             "               plays the release that loads vN: 3 2.26, 4 2.27, 5 2.28, 6 2.30,\n"
             "               7 2.31)\n"
             "             --user-tag N (2.31: communicator 0's calls carry NCCL's userTag N)\n"
             "             --symmetric (communicator 0's AllReduce, AllGather, ReduceScatter run\n"
             "               as symmetric kernels: 2.31 reports their kernel variant, 2.27-2.30\n"
             "               no Coll for them; real time, 2.27+)\n"
             "             --run-ahead MS (GPU computes MS per step while the CPU enqueues ahead)\n"
             "             --graph (CUDA graph replays) --alltoall --broadcast (NCCL 2.28+/2.29+\n"
             "             report them as Send/Recv, as a CollApi only)\n"
             "             --unnamed (communicators without a name, as PyTorch's: told apart\n"
             "               by their hash)\n"
             "sim scenarios: --pxn (odd ranks' sends run in the proxy of rank - 1), --collnet\n"
             "             (CollNet AllReduces), --ce (copy-engine AllGathers, NCCL 2.29+)\n"
             "             --stall-rank R --stall-after S (rank R's GPU stops after S s)\n"
             "             --straggler R --straggle-ms MS (rank R enqueues every op MS late)\n"
             "             --net ib|socket (the network plugin the ranks report)\n"
             "             --env NAME=VALUE (every rank) --rank-env R:NAME=VALUE (rank R)\n"
             "sim recordings: --trace PATH [--trace PATH ...] [--speed X|max] plays recordings\n"
             "             of real NCCL's profiler calls (a file per process, .xz or .zst too,\n"
             "             or a directory of them) through the plugin as one job, at the\n"
             "             recorded times; with --plugin --dir --interval-ms --linger --env\n"
             "             --quiet only (below)\n");
}

void nt_usage(FILE *f) {
  fprintf(f,
          "usage: nccltop [options]                      watch this node's NCCL jobs\n"
          "       nccltop -b [-n N] [--json] [options]   print frames (text, or JSON lines)\n"
          "       nccltop sim [sim options]              run a simulated job\n"
          "       nccltop demo [sim options] [options]   a simulated 8-rank job with the monitor\n"
          "       nccltop topo FILE.xml [--env NAME=VALUE ...] [--json]  NCCL's path matrix\n"
          "       nccltop exporter [options]             Prometheus metrics (nccltop exporter -h)\n"
          "       nccltop record FILE [--duration T] [--max-size S] [--last T --until-alert KIND]\n"
          "       nccltop replay FILE [-b [--json]] [--speed X|max]  a recording, as it was seen\n"
          "       nccltop export FILE --chrome-trace OUT.json  for ui.perfetto.dev\n"
          "       nccltop relay [--listen EP] [relay options]  forward this node's jobs over TCP\n"
          "       nccltop keygen [--force]               a CURVE keypair for relays and viewers\n"
          "\n"
          "options:\n"
          "  -b, --batch            print frames instead of the interactive screen\n"
          "  -n, --iterations N     stop after N frames (default: until interrupted)\n"
          "      --json             batch frames as JSON lines (with -b)\n"
          "  -d, --delay TIME       time between frames, 50ms..60s (default 500ms): 500ms,\n"
          "                         0.5s, 2s; a bare number is milliseconds (not htop's tenths)\n"
          "      --stall-ms MS      ops in flight and no step progress for MS = stalled,\n"
          "                         10..86400000 (default 2000)\n"
          "  -C, --no-color         no colours (also when NO_COLOR is set)\n"
          "  -A, --ascii            ASCII only (also when the locale is not UTF-8)\n"
          "      --dir DIR          endpoint directory (default $NCCLTOP_DIR or /tmp/nccltop-UID)\n"
          "      --connect EP       also subscribe to ZeroMQ endpoint EP, e.g. tcp://node1:5555\n"
          "                         (repeatable, at most 8)\n"
          "      --server-key KEY   a relay's public key (Z85, or a file holding it) that tcp://\n"
          "                         --connect endpoints must prove (default\n"
          "                         ~/.config/nccltop/key.pub: our own, as the relay's)\n"
          "      --insecure         plain TCP to --connect endpoints, no CURVE\n"
          "      --hosts LIST       also subscribe to the relay on each host of LIST, in Slurm's\n"
          "                         hostlist syntax: gpu[001-064,070], rack[1-2]-gpu[01-08],\n"
          "                         host:port (default port 7460); at most 4096 hosts\n"
          "      --hostfile FILE    the same from a file: host or host:port per line, # comments\n"
          "      --topology FILE    NCCL topology XML for the topology view\n"
          "      --max-memory MIB   what publishers' data may take, 16.. (default 1024)\n"
          "      --record FILE      also record what is received to FILE (see nccltop record);\n"
          "                         an existing FILE is kept (exit status 2) unless --force\n"
          "      --force            with --record: replace an existing FILE\n"
          "      --view NAME        start in view NAME: overview, proxy, channels, collectives,\n"
          "                         topology, environment (default overview)\n"
          "      --sort NAME        rank order: rank, stalled, host (default rank)\n"
          "      --filter TEXT      show only rows containing TEXT (the \\ key's filter)\n"
          "      --no-mouse         leave the mouse to the terminal (select and copy text);\n"
          "                         otherwise a click sorts, selects, scrolls, presses a key\n"
          "      --hide-columns LIST\n"
          "                         leave out these optional columns, by title,\n"
          "                         comma-separated (MODEL%%,PREVIOUS RUN,DONE,ACTV%%)\n"
          "      --no-config        neither read nor write the settings file\n"
          "                         ($NCCLTOP_CONFIG, else ~/.config/nccltop/nccltoprc: the\n"
          "                         screen saves view, sort and filter there when they change)\n"
          "  -V, --version          print the version\n"
          "  -h, --help             this text\n"
          "\n");
  sim_options(f);
  fprintf(f, "With demo, --iterations is the simulator's; use -n for the number of frames.\n");
}

void nt_sim_usage(FILE *f) {
  fprintf(f, "usage: nccltop sim [sim options]    run a simulated job (one process per rank)\n"
             "       nccltop sim --trace PATH ...  play recordings of real NCCL\n"
             "       nccltop demo [sim options] [monitor options]\n"
             "\n");
  sim_options(f);
  fprintf(f, "\n");
  nt_trace_usage(f);
}

enum { OPT_JSON = 256, OPT_STALL, OPT_DIR, OPT_CONNECT, OPT_TOPOLOGY, OPT_MAX_MEMORY, OPT_RECORD };
enum { OPT_HOSTS = 320, OPT_HOSTFILE };      /* --hosts, --hostfile */
enum { OPT_SERVER_KEY = 340, OPT_INSECURE }; /* --server-key, --insecure */
enum { OPT_FORCE = 360 };                    /* --force (with --record) */
enum { OPT_VIEW = 380, OPT_SORT, OPT_FILTER, OPT_NO_CONFIG, OPT_NO_MOUSE, OPT_HIDE_COLUMNS };

static const char short_opts[] = ":bn:d:CAVh"; /* leading colon: a missing value is told apart */
static const struct option long_opts[] = {
    {"batch", no_argument, NULL, 'b'},
    {"iterations", required_argument, NULL, 'n'},
    {"json", no_argument, NULL, OPT_JSON},
    {"delay", required_argument, NULL, 'd'},
    {"stall-ms", required_argument, NULL, OPT_STALL},
    {"no-color", no_argument, NULL, 'C'},
    {"ascii", no_argument, NULL, 'A'},
    {"dir", required_argument, NULL, OPT_DIR},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"hosts", required_argument, NULL, OPT_HOSTS},
    {"hostfile", required_argument, NULL, OPT_HOSTFILE},
    {"topology", required_argument, NULL, OPT_TOPOLOGY},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"server-key", required_argument, NULL, OPT_SERVER_KEY},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"record", required_argument, NULL, OPT_RECORD},
    {"force", no_argument, NULL, OPT_FORCE},
    {"view", required_argument, NULL, OPT_VIEW},
    {"sort", required_argument, NULL, OPT_SORT},
    {"filter", required_argument, NULL, OPT_FILTER},
    {"no-config", no_argument, NULL, OPT_NO_CONFIG},
    {"no-mouse", no_argument, NULL, OPT_NO_MOUSE},
    {"hide-columns", required_argument, NULL, OPT_HIDE_COLUMNS},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void nt_options_defaults(nt_options *o) {
  memset(o, 0, sizeof *o);
  o->delay_ms = 500;
  o->settings_mouse = -1; /* no settings file read */
  o->stall_ms = 2000;
  o->max_memory_mib = (uint32_t)(NT_MODEL_DEFAULT_BUDGET >> 20);
  const char *nc = getenv("NO_COLOR");
  o->color = !(nc && *nc);
  const char *cs = nl_langinfo(CODESET);
  o->ascii = !cs || strcmp(cs, "UTF-8") != 0;
}

static int parse_u32(const char *prog, const char *opt, const char *v, unsigned long lo,
                     unsigned long hi, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
    fprintf(stderr, "%s: %s must be a whole number from %lu to %lu, not '%s'\n", prog, opt, lo, hi,
            v);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

/* -d/--delay: "500ms", "0.5s", "2s"; a bare number is milliseconds. */
static int parse_delay(const char *prog, const char *v, uint32_t *out) {
  char *end = NULL;
  errno = 0;
  double x = (v[0] >= '0' && v[0] <= '9') || v[0] == '.' ? strtod(v, &end) : -1;
  if (x >= 0 && !errno && end != v) {
    if (!strcmp(end, "s"))
      x *= 1000;
    else if (*end && strcmp(end, "ms"))
      x = -1;
  }
  if (x < 0 || errno || end == v || x < 50 || x > 60000) {
    fprintf(stderr,
            "%s: -d/--delay must be a time from 50ms to 60s (500ms, 0.5s; a bare number is "
            "milliseconds), not '%s'\n",
            prog, v);
    return -1;
  }
  *out = (uint32_t)(x + 0.5);
  return 0;
}

/* What getopt found wrong, in one line (argv[optind - 1] is the argument). */
static void bad_option(const char *prog, int ch, char **argv) {
  char name[64];
  const char *arg = argv[optind - 1];
  if (!strncmp(arg, "--", 2) || !optopt || optopt >= 256)
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
  else
    snprintf(name, sizeof name, "-%c", optopt);
  if (ch == ':')
    fprintf(stderr, "%s: option '%s' needs a value; try 'nccltop --help'\n", prog, name);
  else
    fprintf(stderr, "%s: unknown option '%s'; try 'nccltop --help'\n", prog, name);
}

/* One option (its getopt code) with its value: 0 set, 1 done (--version,
 * --help printed), 2 refused (said in one line, prog first), 3 not one of
 * the viewer's. The one place each option's range and message live. */
static int apply_option(nt_options *o, const char *prog, int ch, const char *arg) {
  uint32_t v;
  switch (ch) {
  case 'b': o->batch = true; return 0;
  case 'n':
    if (parse_u32(prog, "-n/--iterations", arg, 1, 1000000000, &v)) return 2;
    o->iterations = (int)v;
    return 0;
  case OPT_JSON: o->json = true; return 0;
  case 'd': return parse_delay(prog, arg, &o->delay_ms) ? 2 : 0;
  case OPT_STALL: return parse_u32(prog, "--stall-ms", arg, 10, 86400000, &o->stall_ms) ? 2 : 0;
  case 'C': o->color = false; return 0;
  case 'A': o->ascii = true; return 0;
  case OPT_DIR: o->dir = arg; return 0;
  case OPT_TOPOLOGY: o->topology = arg; return 0;
  case OPT_SERVER_KEY: o->server_key = arg; return 0;
  case OPT_INSECURE: o->insecure = true; return 0;
  case OPT_RECORD: o->record = arg; return 0;
  case OPT_FORCE: o->force = true; return 0;
  case OPT_VIEW:
    if ((o->initial_view = nt_settings_view_id(arg)) < 0) {
      fprintf(stderr, "%s: --view must be one of %s, not '%s'\n", prog, nt_settings_view_list(),
              arg);
      return 2;
    }
    o->view_given = true;
    return 0;
  case OPT_SORT:
    if ((o->initial_sort = nt_settings_sort_id(arg)) < 0) {
      fprintf(stderr, "%s: --sort must be one of %s, not '%s'\n", prog, nt_settings_sort_list(),
              arg);
      return 2;
    }
    o->sort_given = true;
    return 0;
  case OPT_FILTER:
    if (!nt_settings_filter_ok(arg, strlen(arg))) {
      fprintf(stderr, "%s: --filter must be printable text of at most %d bytes\n", prog,
              NT_SETTINGS_FILTER - 1);
      return 2;
    }
    snprintf(o->initial_filter, sizeof o->initial_filter, "%s", arg);
    o->filter_given = true;
    return 0;
  case OPT_NO_CONFIG: o->no_config = true; return 0;
  case OPT_NO_MOUSE: o->no_mouse = true; return 0;
  case OPT_HIDE_COLUMNS:
    if (!nt_settings_hide_ok(arg, strlen(arg))) {
      fprintf(stderr, "%s: --hide-columns must be printable text of at most %d bytes\n", prog,
              NT_SETTINGS_HIDE - 1);
      return 2;
    }
    snprintf(o->hide_columns, sizeof o->hide_columns, "%s", arg);
    o->hide_given = true;
    return 0;
  case OPT_MAX_MEMORY:
    return parse_u32(prog, "--max-memory", arg, 16, 1048576, &o->max_memory_mib) ? 2 : 0;
  case OPT_CONNECT:
    if (o->nconnect >= 8) {
      fprintf(stderr, "%s: at most 8 --connect endpoints\n", prog);
      return 2;
    }
    o->connect[o->nconnect++] = arg;
    return 0;
  case OPT_HOSTS:
  case OPT_HOSTFILE:
    if (*(ch == OPT_HOSTS ? &o->hosts : &o->hostfile)) {
      fprintf(stderr, "%s: %s given twice; %s\n", prog, ch == OPT_HOSTS ? "--hosts" : "--hostfile",
              ch == OPT_HOSTS ? "join the lists with commas" : "put the hosts in one file");
      return 2;
    }
    *(ch == OPT_HOSTS ? &o->hosts : &o->hostfile) = arg;
    return 0;
  case 'V': printf("nccltop %s\n", NT_VERSION); return 1;
  case 'h': nt_usage(stdout); return 1;
  default: return 3;
  }
}

int nt_options_set(nt_options *o, const char *prog, const char *name, const char *value) {
  for (const struct option *l = long_opts; l->name; l++) {
    if (strcmp(l->name, name) != 0) continue;
    if ((l->has_arg == required_argument) != (value != NULL)) break;
    int rc = apply_option(o, prog, l->val, value);
    return rc == 3 ? 2 : rc;
  }
  fprintf(stderr, "%s: --%s is not an option of the viewer's\n", prog, name);
  return 2;
}

/* The screen's settings file: where it is, and what of it the flags leave
 * (flags win). A file that cannot be used is one line on stderr (it stays
 * on the terminal after the screen) and one on the key bar, never a
 * refusal to start; the screen then saves over it at the next change. */
void nt_options_load_settings(nt_options *o) {
  o->settings_path[0] = o->settings_note[0] = '\0';
  o->settings_mouse = -1;
  if (o->no_config || o->batch) return;
  char path[sizeof o->settings_path];
  if (nt_settings_path(path, sizeof path) != 0) return;
  snprintf(o->settings_path, sizeof o->settings_path, "%s", path);
  nt_settings st;
  char err[200];
  int rc = nt_settings_read(path, &st, err, sizeof err);
  if (rc < 0) {
    /* The key bar has room for the reason; stderr says which file. */
    snprintf(o->settings_note, sizeof o->settings_note, "settings file not used: %s", err);
    fprintf(stderr, "nccltop: the settings file %s is not used (%s); using the defaults\n", path,
            err);
    return;
  }
  if (rc > 0) return;
  if (!o->view_given && st.view >= 0) o->initial_view = st.view;
  if (!o->sort_given && st.sort >= 0) o->initial_sort = st.sort;
  if (!o->filter_given && st.has_filter)
    snprintf(o->initial_filter, sizeof o->initial_filter, "%s", st.filter);
  o->settings_mouse = st.mouse;
  if (st.mouse == 0) o->no_mouse = true;
  o->settings_has_hide = st.has_hide;
  snprintf(o->settings_hide, sizeof o->settings_hide, "%s", st.hide);
  if (!o->hide_given && st.has_hide)
    snprintf(o->hide_columns, sizeof o->hide_columns, "%s", st.hide);
}

int nt_options_parse(nt_options *o, int argc, char **argv) {
  optind = 0; /* GNU: start over (tests and `demo` parse more than once) */
  opterr = 0; /* bad_option says it, in one line */
  const char *prog = argv[0] && !strcmp(argv[0], "nccltop demo") ? argv[0] : "nccltop";
  int ch;
  while ((ch = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
    int rc = apply_option(o, prog, ch, optarg);
    if (rc == 3) {
      bad_option(prog, ch, argv);
      return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) {
    fprintf(stderr, "%s: unexpected argument '%s'; try 'nccltop --help'\n", prog, argv[optind]);
    return 2;
  }
  if (o->json && !o->batch) {
    fprintf(stderr, "nccltop: --json needs -b (batch mode)\n");
    return 2;
  }
  if (o->force && !o->record) {
    fprintf(stderr, "nccltop: --force goes with --record (it replaces an existing FILE)\n");
    return 2;
  }
  char err[512];
  struct nt_hostlist *hosts = nt_options_hosts(o, err, sizeof err);
  nt_hostlist_free(hosts);
  if (!hosts && err[0]) {
    fprintf(stderr, "nccltop: %s\n", err);
    return 2;
  }
  nt_options_load_settings(o);
  return 0;
}

/* Whether a viewer option, as written, takes the next argument as value. */
static bool takes_next(const char *a) {
  if (a[0] != '-' || !a[1]) return false;
  if (a[1] == '-') {
    if (strchr(a, '=')) return false;
    for (const struct option *o = long_opts; o->name; o++)
      if (!strcmp(a + 2, o->name)) return o->has_arg == required_argument;
    return false;
  }
  for (const char *c = a + 1; *c; c++) { /* -bn 3, but -n3 */
    const char *s = strchr(short_opts, *c);
    if (s && s[1] == ':') return c[1] == '\0';
  }
  return false;
}

int nt_demo_split_args(nt_sim_config *sim, int argc, char **argv, char **viewer, int *nviewer) {
  int n = 0;
  viewer[n++] = argv[0];
  for (int i = 1; i < argc;) {
    if (!strcmp(argv[i], "--")) { /* the rest is the viewer's */
      while (++i < argc) viewer[n++] = argv[i];
      break;
    }
    int k = nt_sim_parse_args(sim, argc - i, argv + i);
    if (k < 0) return -1;
    if (k > 0) {
      i += k;
      continue;
    }
    viewer[n++] = argv[i];
    if (takes_next(argv[i]) && i + 1 < argc) viewer[n++] = argv[++i];
    i++;
  }
  viewer[n] = NULL;
  *nviewer = n;
  return 0;
}

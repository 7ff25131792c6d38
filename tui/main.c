/* nccltop's command line: the live monitor, batch output, and the sim, demo
 * and topo subcommands. */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../sim/sim.h"
#include "../topo/topo.h"
#include "viewer.h"

static volatile sig_atomic_t quit_signal;
static void on_quit(int sig) {
  quit_signal = sig;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: nccltop [options]                  watch this node's NCCL jobs\n"
      "       nccltop -b [-n N] [--json]         print frames (text or JSON lines)\n"
      "       nccltop sim [sim options]          run a simulated job\n"
      "       nccltop demo [sim options] [options]  simulated 8-rank job + monitor\n"
      "       nccltop topo FILE.xml [--env NAME=VALUE ...] [--json]  NCCL's path matrix\n"
      "\n"
      "options:\n"
      "  -b, --batch            print frames instead of the interactive screen\n"
      "  -n, --iterations N     stop after N frames\n"
      "      --json             batch frames as JSON lines\n"
      "  -d, --delay MS         time between frames, 50..60000 (default 500)\n"
      "      --stall-ms MS      no step progress for MS with ops in flight = stalled (2000)\n"
      "  -C, --no-color         no colours (also with NO_COLOR set)\n"
      "  -A, --ascii            ASCII only\n"
      "      --dir DIR          endpoint directory (default $NCCLTOP_DIR or /tmp/nccltop-UID)\n"
      "      --connect EP       also subscribe to ZeroMQ endpoint EP (repeatable)\n"
      "      --topology FILE    NCCL topology XML for the topology view (key 3)\n"
      "  -V, --version          print the version\n"
      "  -h, --help             this text\n"
      "\n"
      "sim options: --ranks N --comms N --channels N --steps N --iterations N --duration S\n"
      "             --linger S --deterministic --abi 3..6 --plugin PATH --interval-ms N --quiet\n");
}

static int parse_u32(const char *opt, const char *v, unsigned long lo, unsigned long hi,
                     uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "nccltop: %s must be a whole number from %lu to %lu, not '%s'\n", opt, lo, hi,
            v);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

/* Parses viewer options from argv[optind..]; returns 0, 1 (exit 0: help or
 * version printed) or -1 (usage error). */
static int parse_options(nt_options *o, int argc, char **argv) {
  static const struct option longs[] = {{"batch", no_argument, NULL, 'b'},
                                        {"iterations", required_argument, NULL, 'n'},
                                        {"json", no_argument, NULL, 'j'},
                                        {"delay", required_argument, NULL, 'd'},
                                        {"stall-ms", required_argument, NULL, 's'},
                                        {"no-color", no_argument, NULL, 'C'},
                                        {"ascii", no_argument, NULL, 'A'},
                                        {"dir", required_argument, NULL, 'D'},
                                        {"connect", required_argument, NULL, 'c'},
                                        {"version", no_argument, NULL, 'V'},
                                        {"help", no_argument, NULL, 'h'},
                                        {"topology", required_argument, NULL, 'T'},
                                        {NULL, 0, NULL, 0}};
  int ch;
  uint32_t v;
  while ((ch = getopt_long(argc, argv, "bn:d:CAVh", longs, NULL)) != -1) {
    switch (ch) {
    case 'b': o->batch = true; break;
    case 'n':
      if (parse_u32("--iterations", optarg, 1, 100000000, &v)) return -1;
      o->iterations = (int)v;
      break;
    case 'j': o->json = true; break;
    case 'd':
      if (parse_u32("--delay", optarg, 50, 60000, &o->delay_ms)) return -1;
      break;
    case 's':
      if (parse_u32("--stall-ms", optarg, 10, 86400000, &o->stall_ms)) return -1;
      break;
    case 'C': o->color = false; break;
    case 'A': o->ascii = true; break;
    case 'D': o->dir = optarg; break;
    case 'T': o->topology = optarg; break;
    case 'c':
      if (o->nconnect >= 8) {
        fprintf(stderr, "nccltop: at most 8 --connect endpoints\n");
        return -1;
      }
      o->connect[o->nconnect++] = optarg;
      break;
    case 'V': printf("nccltop %s\n", NT_VERSION); return 1;
    case 'h': usage(stdout); return 1;
    default: usage(stderr); return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nccltop: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return -1;
  }
  if (o->json && !o->batch) {
    fprintf(stderr, "nccltop: --json needs -b (batch mode)\n");
    return -1;
  }
  return 0;
}

static void defaults(nt_options *o) {
  memset(o, 0, sizeof *o);
  o->delay_ms = 500;
  o->stall_ms = 2000;
  const char *nc = getenv("NO_COLOR");
  o->color = !(nc && *nc);
}

static int run_batch(nt_model *m, nt_source *src, const nt_options *o) {
  double next = nt_now_s() + o->delay_ms / 1000.0;
  for (int frame = 0; !quit_signal && (!o->iterations || frame < o->iterations);) {
    double now = nt_now_s();
    if (now >= next) {
      nt_model_tick(m, now);
      if (nt_batch_print(stdout, m, o, now) != 0) return 1;
      frame++;
      next += o->delay_ms / 1000.0;
      if (next < now) next = now + o->delay_ms / 1000.0;
      continue;
    }
    int wait = (int)((next - now) * 1000) + 1;
    nt_source_poll(src, m, wait < 50 ? wait : 50);
  }
  return 0;
}

static int load_topology(nt_model *m, const char *path) {
  char err[512];
  nt_topo *t = nt_topo_load_file(path, err, sizeof err); /* for the message and the checks */
  if (!t) {
    fprintf(stderr, "nccltop: %s\n", err);
    return -1;
  }
  nt_topo_free(t);
  FILE *f = fopen(path, "rb");
  static char buf[8 << 20];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  return nt_model_set_topology(m, buf, n, path, nt_now_s());
}

static int run_viewer(const nt_options *o) {
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = m ? nt_source_open(o, err, sizeof err) : NULL;
  if (!src) {
    fprintf(stderr, "nccltop: %s\n", m ? err : "out of memory");
    nt_model_free(m);
    return 1;
  }
  for (int i = 0; i < o->nconnect; i++) nt_source_connect(src, m, o->connect[i]);
  if (o->topology && load_topology(m, o->topology) != 0) {
    nt_source_close(src);
    nt_model_free(m);
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_quit;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int rc = o->batch ? run_batch(m, src, o) : nt_screen_run(m, src, o);
  nt_source_close(src);
  nt_model_free(m);
  return rc;
}

static void stop_sim(pid_t pid) {
  kill(-pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) return;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static int cmd_demo(int argc, char **argv) {
  nt_sim_config sim;
  nt_sim_defaults(&sim);
  sim.quiet = true;
  int used = nt_sim_parse_args(&sim, argc - 1, argv + 1);
  if (used < 0) return 2;
  nt_options o;
  defaults(&o);
  argv[used] = argv[0];
  optind = 1;
  int prc = parse_options(&o, argc - used, argv + used);
  if (prc) return prc > 0 ? 0 : 2;
  const char *tmp = getenv("TMPDIR");
  char dir[256];
  snprintf(dir, sizeof dir, "%s/nccltop-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "nccltop demo: cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  sim.dir = dir;
  o.dir = dir;
  /* Fork the ranks before any ZeroMQ context or thread exists here. */
  pid_t pid = nt_sim_spawn(&sim);
  if (pid < 0) {
    fprintf(stderr, "nccltop demo: cannot start the simulator\n");
    rmdir(dir);
    return 1;
  }
  int rc = run_viewer(&o);
  stop_sim(pid);
  char path[512];
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  if (system(path) != 0) fprintf(stderr, "nccltop demo: could not remove %s\n", dir);
  return rc;
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "");
  if (argc > 1 && !strcmp(argv[1], "sim")) {
    nt_sim_config sim;
    nt_sim_defaults(&sim);
    int used = nt_sim_parse_args(&sim, argc - 2, argv + 2);
    if (used < 0) return 2;
    if (used != argc - 2) {
      fprintf(stderr, "nccltop sim: unknown option '%s'\n", argv[2 + used]);
      return 2;
    }
    return nt_sim_run(&sim);
  }
  if (argc > 1 && !strcmp(argv[1], "demo")) return cmd_demo(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "topo")) return nt_topo_main(argc - 1, argv + 1);
  if (argc > 1 && argv[1][0] != '-') {
    fprintf(stderr, "nccltop: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
  }
  nt_options o;
  defaults(&o);
  int prc = parse_options(&o, argc, argv);
  if (prc) return prc > 0 ? 0 : 2;
  return run_viewer(&o);
}

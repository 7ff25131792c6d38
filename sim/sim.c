/* The simulated job: options, the plugin's default location, and one
 * process per rank. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rank.h"
#include "sim.h"

void nt_sim_defaults(nt_sim_config *c) {
  memset(c, 0, sizeof *c);
  c->ranks = 8;
  c->comms = 2;
  c->channels = 4;
  c->steps = 8;
}

int nt_sim_default_plugin(char *buf, size_t cap) {
  const char *env = getenv("NCCLTOP_PLUGIN");
  if (env && *env) return snprintf(buf, cap, "%s", env) < (int)cap ? 0 : -1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  const char *dir = dirname(exe);
  static const char *const where[] = {"%s/libnccl-profiler-nccltop.so",
                                      "%s/../lib/libnccl-profiler-nccltop.so"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    struct stat st;
    if (snprintf(buf, cap, where[i], dir) >= (int)cap) return -1;
    if (stat(buf, &st) == 0) return 0;
  }
  return -1;
}

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "nccltop: %s needs a whole number from %ld to %ld, not '%s'\n", opt, lo, hi,
            v ? v : "");
    return -1;
  }
  *out = (int)x;
  return 0;
}

static int parse_seconds(const char *opt, const char *v, double *out) {
  char *end;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || errno || end == v || *end || !(x >= 0 && x <= 31536000)) {
    fprintf(stderr, "nccltop: %s needs seconds (0 or more), not '%s'\n", opt, v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

int nt_sim_parse_args(nt_sim_config *c, int argc, char **argv) {
  int i = 0;
  for (; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int iv = 0, rc = 0;
    if (!strcmp(a, "--ranks"))
      rc = parse_int(a, v, 1, 1024, &c->ranks), i++;
    else if (!strcmp(a, "--comms"))
      rc = parse_int(a, v, 1, 8, &c->comms), i++;
    else if (!strcmp(a, "--channels"))
      rc = parse_int(a, v, 1, 64, &c->channels), i++;
    else if (!strcmp(a, "--steps"))
      rc = parse_int(a, v, 1, 1024, &c->steps), i++;
    else if (!strcmp(a, "--iterations"))
      rc = parse_int(a, v, 0, 100000000, &c->iterations), i++;
    else if (!strcmp(a, "--duration"))
      rc = parse_seconds(a, v, &c->duration_s), i++;
    else if (!strcmp(a, "--linger"))
      rc = parse_seconds(a, v, &c->linger_s), i++;
    else if (!strcmp(a, "--deterministic"))
      c->deterministic = true;
    else if (!strcmp(a, "--quiet"))
      c->quiet = true;
    else if (!strcmp(a, "--abi"))
      rc = parse_int(a, v, 3, 6, &c->abi), i++;
    else if (!strcmp(a, "--interval-ms")) {
      rc = parse_int(a, v, 10, 60000, &iv), i++;
      c->interval_ms = (uint32_t)iv;
    } else if (!strcmp(a, "--dir")) {
      if (!v) {
        fprintf(stderr, "nccltop: --dir needs a directory\n");
        return -1;
      }
      c->dir = v;
      i++;
    } else if (!strcmp(a, "--plugin")) {
      if (!v) {
        fprintf(stderr, "nccltop: --plugin needs a path\n");
        return -1;
      }
      c->plugin = v;
      i++;
    } else
      break;
    if (rc) return -1;
  }
  if (c->deterministic && !c->iterations) c->iterations = 10;
  return i;
}

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) {
  got_signal = sig;
}

int nt_sim_run(const nt_sim_config *cfg) {
  nt_sim_config c = *cfg;
  char plugin[PATH_MAX];
  if (!c.plugin) {
    if (nt_sim_default_plugin(plugin, sizeof plugin) != 0) {
      fprintf(stderr, "nccltop sim: cannot find libnccl-profiler-nccltop.so next to nccltop; "
                      "use --plugin PATH or NCCLTOP_PLUGIN\n");
      return 1;
    }
    c.plugin = plugin;
  }
  pid_t *pids = calloc((size_t)c.ranks, sizeof *pids);
  if (!pids) return 1;
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  if (!c.quiet)
    fprintf(stderr, "nccltop sim: %d ranks x %d comms x %d channels, plugin %s\n", c.ranks, c.comms,
            c.channels, c.plugin);
  int started = 0;
  for (; started < c.ranks; started++) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      sigaction(SIGINT, &old_int, NULL);
      sigaction(SIGTERM, &old_term, NULL);
      _exit(sim_rank_main(&c, started));
    }
    pids[started] = pid;
  }
  int failed = started < c.ranks;
  bool forwarded = false;
  for (int left = started; left > 0;) {
    if (got_signal && !forwarded) {
      for (int i = 0; i < started; i++) kill(pids[i], SIGTERM);
      forwarded = true;
    }
    int st;
    pid_t pid = waitpid(-1, &st, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < started; i++) {
      if (pids[i] != pid) continue;
      left--;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  free(pids);
  return failed;
}

int nt_sim_spawn(const nt_sim_config *c) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0) return pid < 0 ? -1 : pid;
  setpgid(0, 0);
  _exit(nt_sim_run(c));
}

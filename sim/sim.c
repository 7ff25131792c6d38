/* The simulated job: options, the plugin's default location, and one
 * process per rank. */
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include "../proto/nccltop_proto.h"
#include "rank.h"
#include "scenario.h"
#include "schedule.h"
#include "sim.h"
#include "symmetric.h"
#include "version.h"

void nt_sim_defaults(nt_sim_config *c) {
  memset(c, 0, sizeof *c);
  c->ranks = 8;
  c->comms = 2;
  c->channels = 4;
  c->steps = 8;
  c->stall_rank = -1;
  c->stall_after_s = 3;
  c->straggler_rank = -1;
  c->straggle_ms = 300;
  c->nccl_version = 228;
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

/* A deterministic run needs the plugin's virtual-clock hook, which only its
 * test-only build exports: tests/libnccl-profiler-nccltop-test.so next to
 * this executable (the build tree), unless NCCLTOP_PLUGIN says otherwise. */
int nt_sim_test_plugin(char *buf, size_t cap) {
  const char *env = getenv("NCCLTOP_PLUGIN");
  if (env && *env) return -1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  struct stat st;
  if (snprintf(buf, cap, "%s/tests/libnccl-profiler-nccltop-test.so", dirname(exe)) >= (int)cap)
    return -1;
  return stat(buf, &st);
}

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out) {
  char *end = NULL;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || errno || end == v || *end || x < lo || x > hi) {
    if (v)
      fprintf(stderr, "nccltop: %s needs a whole number from %ld to %ld, not '%s'\n", opt, lo, hi,
              v);
    else
      fprintf(stderr, "nccltop: %s needs a whole number from %ld to %ld\n", opt, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

static int parse_seconds(const char *opt, const char *v, double *out) {
  char *end = NULL;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || errno || end == v || *end || !(x >= 0 && x <= 31536000)) {
    if (v)
      fprintf(stderr, "nccltop: %s needs seconds from 0 to 31536000, not '%s'\n", opt, v);
    else
      fprintf(stderr, "nccltop: %s needs seconds from 0 to 31536000\n", opt);
    return -1;
  }
  *out = x;
  return 0;
}

/* --user-tag N: a decimal 1 .. 2^64-1 (0 is "untagged" to NCCL). */
static int parse_tag(const char *opt, const char *v, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long x = v && isdigit((unsigned char)*v) ? strtoull(v, &end, 10) : 0;
  if (!v || !end || *end || errno || x == 0) {
    fprintf(stderr, "nccltop: %s needs a tag from 1 to 18446744073709551615, not '%s'\n", opt,
            v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

/* --nccl-version 2.26 .. 2.31 */
static int parse_nccl_version(const char *opt, const char *v, int *out) {
  int x = sim_version_parse(v);
  if (x < 0) {
    fprintf(stderr, "nccltop: %s needs 2.26, 2.27, 2.28, 2.29, 2.30 or 2.31, not '%s'\n", opt,
            v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

static int parse_path(const char *opt, const char *v, const char **out) {
  if (!v || !*v) {
    fprintf(stderr, "nccltop: %s needs a path\n", opt);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_net(const char *opt, const char *v, int *out) {
  if (v && !strcmp(v, "ib"))
    *out = NT_NET_IB_QP;
  else if (v && !strcmp(v, "socket"))
    *out = NT_NET_SOCKET;
  else {
    fprintf(stderr, "nccltop: %s needs ib or socket, not '%s'\n", opt, v ? v : "");
    return -1;
  }
  return 0;
}

/* NAME=VALUE with a name of letters, digits and '_'. */
static bool good_assignment(const char *kv) {
  const char *eq = kv ? strchr(kv, '=') : NULL;
  if (!eq || eq == kv) return false;
  for (const char *p = kv; p < eq; p++)
    if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
          (*p >= '0' && *p <= '9')))
      return false;
  return true;
}

static int parse_env(const char *opt, const char *v, nt_sim_config *c) {
  if (!good_assignment(v) || c->nenv >= (int)(sizeof c->env / sizeof c->env[0])) {
    fprintf(stderr, "nccltop: %s needs NAME=VALUE (at most 16), not '%s'\n", opt, v ? v : "");
    return -1;
  }
  c->env[c->nenv++] = v;
  return 0;
}

static int parse_rank_env(const char *opt, const char *v, nt_sim_config *c) {
  char *end = NULL;
  long r = v ? strtol(v, &end, 10) : -1;
  if (!v || end == v || *end != ':' || r < 0 || r > 1023 || !good_assignment(end + 1) ||
      c->nrank_env >= (int)(sizeof c->rank_env / sizeof c->rank_env[0])) {
    fprintf(stderr, "nccltop: %s needs RANK:NAME=VALUE (at most 16), not '%s'\n", opt, v ? v : "");
    return -1;
  }
  c->rank_env[c->nrank_env].rank = (int)r;
  c->rank_env[c->nrank_env++].kv = end + 1;
  return 0;
}

/* The scenario switches (--pxn, --collnet, --ce; --graph, --alltoall,
 * --broadcast; --symmetric; --unnamed). Returns 1 when `name` is one, 0 when not, -1 when given a
 * value. */
static int parse_scenario_flag(nt_sim_config *c, const char *name, bool has_value) {
  bool *flag = !strcmp(name, "--pxn")         ? &c->pxn
               : !strcmp(name, "--collnet")   ? &c->collnet
               : !strcmp(name, "--ce")        ? &c->ce
               : !strcmp(name, "--graph")     ? &c->graph
               : !strcmp(name, "--alltoall")  ? &c->alltoall
               : !strcmp(name, "--broadcast") ? &c->broadcast
               : !strcmp(name, "--symmetric") ? &c->symmetric
               : !strcmp(name, "--unnamed")   ? &c->unnamed
                                              : NULL;
  if (!flag) return 0;
  if (has_value) {
    fprintf(stderr, "nccltop: %s takes no value\n", name);
    return -1;
  }
  *flag = true;
  return 1;
}

/* One option: "--name VALUE" or "--name=VALUE"; returns the arguments it
 * used, 0 if it is not a sim option, -1 on a bad value. */
static int parse_one(nt_sim_config *c, const char *arg, const char *next) {
  char name[32];
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  if (len >= sizeof name || strncmp(arg, "--", 2) != 0) return 0;
  memcpy(name, arg, len);
  name[len] = '\0';
  const char *v = eq ? eq + 1 : next;
  int used = eq ? 1 : 2, rc = 0, iv = 0;
  int flag = parse_scenario_flag(c, name, eq != NULL);
  if (flag) return flag;
  if (!strcmp(name, "--deterministic") || !strcmp(name, "--quiet")) {
    if (eq) {
      fprintf(stderr, "nccltop: %s takes no value\n", name);
      return -1;
    }
    if (name[2] == 'd')
      c->deterministic = true;
    else
      c->quiet = true;
    return 1;
  }
  if (!strcmp(name, "--ranks"))
    rc = parse_int(name, v, 1, 1024, &c->ranks);
  else if (!strcmp(name, "--nodes"))
    rc = parse_int(name, v, 1, 1024, &c->nodes);
  else if (!strcmp(name, "--comms"))
    rc = parse_int(name, v, 1, 8, &c->comms);
  else if (!strcmp(name, "--channels"))
    rc = parse_int(name, v, 1, 64, &c->channels);
  else if (!strcmp(name, "--steps"))
    rc = parse_int(name, v, 1, 1024, &c->steps);
  else if (!strcmp(name, "--iterations"))
    rc = parse_int(name, v, 0, 100000000, &c->iterations);
  else if (!strcmp(name, "--duration"))
    rc = parse_seconds(name, v, &c->duration_s);
  else if (!strcmp(name, "--linger"))
    rc = parse_seconds(name, v, &c->linger_s);
  else if (!strcmp(name, "--abi"))
    rc = parse_int(name, v, 3, 7, &c->abi);
  else if (!strcmp(name, "--user-tag"))
    rc = parse_tag(name, v, &c->user_tag);
  else if (!strcmp(name, "--nccl-version"))
    rc = parse_nccl_version(name, v, &c->nccl_version);
  else if (!strcmp(name, "--interval-ms")) {
    rc = parse_int(name, v, 10, 60000, &iv);
    if (!rc) c->interval_ms = (uint32_t)iv;
  } else if (!strcmp(name, "--dir"))
    rc = parse_path(name, v, &c->dir);
  else if (!strcmp(name, "--stall-rank"))
    rc = parse_int(name, v, 0, 1023, &c->stall_rank);
  else if (!strcmp(name, "--stall-after"))
    rc = parse_seconds(name, v, &c->stall_after_s);
  else if (!strcmp(name, "--straggler"))
    rc = parse_int(name, v, 0, 1023, &c->straggler_rank);
  else if (!strcmp(name, "--straggle-ms")) {
    rc = parse_int(name, v, 1, 600000, &iv);
    if (!rc) c->straggle_ms = (uint32_t)iv;
  } else if (!strcmp(name, "--run-ahead")) {
    rc = parse_int(name, v, 0, 600000, &iv);
    if (!rc) c->run_ahead_ms = (uint32_t)iv;
  } else if (!strcmp(name, "--net"))
    rc = parse_net(name, v, &c->net);
  else if (!strcmp(name, "--env"))
    rc = parse_env(name, v, c);
  else if (!strcmp(name, "--rank-env"))
    rc = parse_rank_env(name, v, c);
  else if (!strcmp(name, "--plugin"))
    rc = parse_path(name, v, &c->plugin);
  else
    return 0;
  return rc ? -1 : used;
}

int nt_sim_parse_args(nt_sim_config *c, int argc, char **argv) {
  int i = 0;
  while (i < argc) {
    int used = parse_one(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
    if (used < 0) return -1;
    if (used == 0) break;
    i += used;
  }
  /* A deterministic run is a fixed number of collectives. */
  if (c->deterministic && !c->iterations) c->iterations = SIM_DET_ITERATIONS;
  return i;
}

/* Config values a caller set directly (not through the options). */
static int check_config(const nt_sim_config *c) {
  const char *bad = NULL;
  if (c->ranks < 1 || c->ranks > 1024)
    bad = "ranks (1..1024)";
  else if (c->comms < 1 || c->comms > 8)
    bad = "comms (1..8)";
  else if (c->channels < 1 || c->channels > 64)
    bad = "channels (1..64)";
  else if (c->steps < 1 || c->steps > 1024)
    bad = "steps (1..1024)";
  else if (c->iterations < 0)
    bad = "iterations (0 or more)";
  else if (c->abi != 0 && (c->abi < 3 || c->abi > 7))
    bad = "abi (0, or 3..7)";
  else if (sim_version_check(c))
    bad = sim_version_check(c);
  else if (!(c->duration_s >= 0) || !(c->linger_s >= 0) || !(c->stall_after_s >= 0))
    bad = "duration, linger and stall-after (0 or more seconds)";
  else if (c->nodes < 0 || c->nodes > c->ranks || (c->nodes && c->ranks % c->nodes))
    bad = "--nodes (1 to --ranks, and a divisor of --ranks: every node has ranks / nodes ranks)";
  else if (c->stall_rank >= c->ranks || c->straggler_rank >= c->ranks)
    bad = "stall and straggler ranks (below --ranks)";
  else if (c->graph && (c->alltoall || c->broadcast))
    bad = "--graph with --alltoall or --broadcast (not simulated together)";
  else if (c->deterministic && (c->pxn || c->collnet || c->ce) &&
           (c->graph || c->alltoall || c->broadcast || c->run_ahead_ms))
    bad = "--deterministic with both a proxy-side scenario (--pxn, --collnet, --ce) and an "
          "application-side one (--graph, --alltoall, --broadcast, --run-ahead): their exact "
          "totals are worked out one family at a time; combine them in real time";
  if (bad) fprintf(stderr, "nccltop sim: bad configuration: %s\n", bad);
  return bad || sim_scn_check(c) != 0 || sim_sym_check(c) != 0 ? -1 : 0;
}

int nt_sim_node_of(const nt_sim_config *c, int rank) {
  return c->nodes > 0 && c->ranks >= c->nodes ? rank / (c->ranks / c->nodes) : 0;
}

/* --nodes: the directory the nodes' directories go in (--dir, else the
 * default endpoint directory), created 0700 if missing, with node0 ..
 * node<N-1> in it; `base` receives its path. The checks are the plugin's:
 * a directory that is not ours and private is refused here, with the
 * plugin's reason. */
static int make_node_dirs(const nt_sim_config *c, char *base, size_t cap) {
  char err[512];
  int n = c->dir ? snprintf(base, cap, "%s", c->dir) : nt_endpoint_dir(base, cap) == 0 ? 0 : -1;
  if (n < 0 || (size_t)n >= cap) {
    fprintf(stderr, "nccltop sim: the endpoint directory name is too long\n");
    return -1;
  }
  for (int k = -1; k < c->nodes; k++) {
    char dir[PATH_MAX];
    if (k < 0)
      snprintf(dir, sizeof dir, "%s", base);
    else if (snprintf(dir, sizeof dir, "%s/node%d", base, k) >= (int)sizeof dir)
      return -1;
    int fd = nt_endpoint_dir_open(dir, true, err, sizeof err);
    if (fd < 0) {
      fprintf(stderr, "nccltop sim: %s\n", err);
      return -1;
    }
    close(fd);
  }
  return 0;
}

/* Reaps the ranks; SIGINT/SIGTERM sent to us are passed on to them as
 * SIGTERM. The signals are blocked and taken with sigtimedwait, so none can
 * slip in between a check and a wait. */
static int wait_ranks(pid_t *pids, int started, const sigset_t *set, bool quiet) {
  int failed = 0, left = started;
  while (left > 0) {
    for (int i = 0; i < started; i++) {
      int st;
      if (pids[i] <= 0) continue;
      pid_t got = waitpid(pids[i], &st, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      if (got < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        failed = 1;
        if (!quiet && got > 0)
          fprintf(stderr, "nccltop sim: rank %d %s %d\n", i,
                  WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
                  WIFSIGNALED(st) ? WTERMSIG(st)
                  : WIFEXITED(st) ? WEXITSTATUS(st)
                                  : -1);
      }
      pids[i] = 0;
      left--;
    }
    if (left == 0) break;
    struct timespec ts = {1, 0};
    int sig = sigtimedwait(set, NULL, &ts);
    if (sig == SIGINT || sig == SIGTERM)
      for (int i = 0; i < started; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
  }
  return failed;
}

int nt_sim_run(const nt_sim_config *cfg) {
  nt_sim_config c = *cfg;
  char plugin[PATH_MAX];
  if (check_config(&c) != 0) return 1;
  if (!c.plugin && c.deterministic && nt_sim_test_plugin(plugin, sizeof plugin) == 0)
    c.plugin = plugin;
  if (!c.plugin) {
    if (nt_sim_default_plugin(plugin, sizeof plugin) != 0) {
      fprintf(stderr, "nccltop sim: cannot find libnccl-profiler-nccltop.so next to nccltop; "
                      "use --plugin PATH or NCCLTOP_PLUGIN\n");
      return 1;
    }
    c.plugin = plugin;
  }
  c.nccl_version = sim_version_of(&c); /* what the ranks play (--abi 3 is 2.26) */
  char base[PATH_MAX];
  if (c.nodes > 0) {
    if (make_node_dirs(&c, base, sizeof base) != 0) return 1;
    c.dir = base; /* the ranks add node<k> */
  }
  pid_t *pids = calloc((size_t)c.ranks, sizeof *pids);
  if (!pids) return 1;
  /* What the ranks share, as NCCL's ranks share a collective's progress:
   * how far each has enqueued, and when the job started. */
  void *sh =
      mmap(NULL, sizeof(sim_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    fprintf(stderr, "nccltop sim: cannot map shared memory: %s\n", strerror(errno));
    free(pids);
    return 1;
  }
  sim_sh = sh;
  sim_sh->start_wall_ns = sim_wall_ns();
  if (sim_pxn_setup(&c) != 0) {
    munmap(sh, sizeof(sim_shared));
    sim_sh = NULL;
    free(pids);
    return 1;
  }
  if (!c.quiet)
    fprintf(stderr,
            "nccltop sim: %d ranks x %d comms x %d channels x %d steps, %s, NCCL 2.%d, plugin %s\n",
            c.ranks, c.comms, c.channels, c.steps, c.deterministic ? "deterministic" : "real time",
            c.nccl_version - 200, c.plugin);
  if (!c.quiet && c.nodes > 0)
    fprintf(stderr, "nccltop sim: %d nodes of %d ranks: node<k> publishes in %s/node<k>\n", c.nodes,
            c.ranks / c.nodes, c.dir);
  /* Blocked from before the first fork: a rank installs its handlers and
   * unblocks them itself, and this process takes them with sigtimedwait. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0) {
    free(pids);
    return 1;
  }
  fflush(NULL);
  pid_t self = getpid();
  int started = 0;
  for (; started < c.ranks; started++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "nccltop sim: cannot start rank %d: %s\n", started, strerror(errno));
      break;
    }
    if (pid == 0) _exit(sim_rank_main(&c, started, self));
    pids[started] = pid;
  }
  if (started < c.ranks)
    for (int i = 0; i < started; i++) kill(pids[i], SIGTERM);
  int failed = wait_ranks(pids, started, &set, c.quiet) || started < c.ranks;
  /* Take back a signal that came after the last rank exited, then restore. */
  struct timespec zero = {0, 0};
  while (sigtimedwait(&set, NULL, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(pids);
  munmap(sh, sizeof(sim_shared));
  sim_sh = NULL;
  sim_pxn_teardown();
  return failed;
}

int nt_sim_spawn(const nt_sim_config *c) {
  /* A config the job would refuse fails here, before a viewer waits for it. */
  if (check_config(c) != 0) return -1;
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid < 0 ? -1 : pid;
  setpgid(0, 0);
  /* The job goes when whoever spawned it goes (a crashed viewer, say). */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(0);
  _exit(nt_sim_run(c));
}

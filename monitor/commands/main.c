/* nccltop: the live monitor, batch output, and the sim, demo and topo
 * subcommands. Option parsing is in cli.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/trace.h"
#include "../../topo/topo.h"
#include "../feeds/curve.h"
#include "demo.h"
#include "../feeds/drive.h"
#include "../feeds/feed.h"
#include "../outputs/batch.h"
#include "cli.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../core/diag.h"
#include "../core/model.h"
#include "../options.h"
#include "recorder.h"
#include "../screen/screen.h"
#include "../feeds/source.h"

static volatile pid_t demo_sim;                    /* the demo's simulator (its process group) */
static volatile sig_atomic_t demo_sim_status = -1; /* its wait status, once it exited */
static volatile sig_atomic_t demo_batch;           /* batch: the demo ends with its job */
static volatile sig_atomic_t demo_job_done;        /* batch: it ended well; a last frame */

static char demo_dir[128]; /* the demo's directory, once made */

/* Empties and removes directory `at` (relative to dirfd `parent`), its
 * node<k> subdirectories too, with async-signal-safe calls only: openat,
 * the getdents64 system call (readdir is not safe), unlinkat. */
static void remove_now(int parent, const char *at, int depth) {
  int fd = openat(parent, at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  static char buf[2][4096] __attribute__((aligned(8)));
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[depth])) > 0) {
    for (long off = 0; off < n;) {
      /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
      const char *e = buf[depth] + off;
      unsigned short reclen;
      memcpy(&reclen, e + 16, sizeof reclen);
      const char *name = e + 19;
      if (reclen == 0) break;
      off += reclen;
      if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
      if (unlinkat(fd, name, 0) != 0 && depth == 0) remove_now(fd, name, 1);
    }
  }
  close(fd);
  unlinkat(parent, at, AT_REMOVEDIR);
}

/* The first SIGINT/SIGTERM/SIGHUP asks the running loop to stop (the screen
 * restores the terminal, the demo stops its job and removes its directory);
 * a second one, if the loop has not stopped, ends the process the default
 * way, after this: the job's group goes too, and the demo's directory
 * (wrappers such as timeout and srun forward a signal a second time).
 * Async-signal-safe only. */
static void before_ending(void) {
  if (demo_sim > 0) kill(-demo_sim, SIGKILL);
  if (demo_dir[0]) remove_now(AT_FDCWD, demo_dir, 0);
  nt_term_restore_now();
}

/* The demo's simulator exited: reaped here. The viewer stops when the job
 * failed (a configuration its ranks refused); in batch mode a job that ended
 * well gets one last frame, its final state, and then the viewer stops. */
static void on_child(int sig) {
  int saved = errno, st;
  pid_t pid = demo_sim;
  if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
    demo_sim_status = st;
    demo_sim = 0;
    if (st != 0)
      nt_request_quit(sig);
    else if (demo_batch)
      demo_job_done = 1;
  }
  errno = saved;
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (nt_signals_install(true, before_ending) != 0 || sigaction(SIGCHLD, &sa, NULL) != 0)
    perror("nccltop: signal handlers");
}

typedef struct {
  nt_model *m;
  nt_diag *d; /* the frames' diagnosis of m */
  const nt_options *o;
  nt_recorder *rec;
  nt_feed *feed;
  bool hinted; /* the "nothing received" line was printed */
} batch_run;

enum { BATCH_PRINT_FAILED = 1, BATCH_JOB_DONE = 2 };

/* How long a batch run waits for its first message before it says where it
 * looks: about what discovery and a publisher's first interval take. */
#define NOTHING_YET_S 3.0

/* Batch frames of nothing look like a job with no traffic: where the viewer
 * looks and what a job needs, once, on stderr (the frames stay as they
 * are, and a recording's replay prints the same ones). */
static void hint_if_nothing_yet(batch_run *b, double now) {
  if (b->hinted || nt_model_last_data_s(b->m) || now - b->o->start_s < NOTHING_YET_S) return;
  b->hinted = true;
  char watching[1024];
  nt_feed_status(b->feed, watching, sizeof watching);
  fprintf(stderr,
          "nccltop: nothing received in %.0f s from %s: no NCCL process with the nccltop plugin "
          "there yet (a job needs NCCL_PROFILER_PLUGIN=nccltop and this NCCLTOP_DIR, or a relay "
          "at a --connect address); still waiting\n",
          NOTHING_YET_S, watching);
}

static int batch_frame(void *ctx, double now) {
  batch_run *b = ctx;
  hint_if_nothing_yet(b, now);
  if (nt_batch_print(stdout, b->m, b->d, b->o, now) != 0) return BATCH_PRINT_FAILED;
  nt_recorder_frame(b->rec, now); /* --record: replay prints its frames at these times */
  return 0;
}

static int batch_between(void *ctx, double now) {
  (void)ctx;
  (void)now;
  return demo_job_done ? BATCH_JOB_DONE : 0;
}

/* Prints a frame every delay_ms; polls the feed in between. */
static int batch_frames(batch_run *b, nt_feed *feed) {
  nt_model *m = b->m;
  const nt_options *o = b->o;
  double until = nt_now_s() + o->wait_first_s;
  while (!nt_model_last_data_s(m) && nt_now_s() < until && !nt_quit_requested() && !demo_job_done)
    nt_feed_poll(feed, 50);
  nt_drive d = {.delay_s = o->delay_ms / 1000.0,
                .iterations = o->iterations,
                .on_tick = batch_frame,
                .between = batch_between,
                .ctx = b};
  int rc = demo_job_done ? BATCH_JOB_DONE : nt_drive_run(feed, &d);
  if (rc != BATCH_JOB_DONE) return rc == BATCH_PRINT_FAILED ? 1 : 0;
  /* The demo's job ended (a short one can end before the first frame): what
   * its ranks sent last is read, then shown once. */
  for (double end = nt_now_s() + 0.2; nt_now_s() < end;) nt_feed_poll(feed, 20);
  if (!nt_model_last_data_s(m)) return 0;
  double now = nt_now_s();
  nt_model_tick(m, now);
  return batch_frame(b, now) ? 1 : 0;
}

static int run_batch(nt_feed *feed, const nt_options *o, nt_recorder *rec) {
  batch_run b = {nt_feed_model(feed), nt_diag_new(), o, rec, feed, false};
  if (!b.d) {
    fprintf(stderr, "nccltop: out of memory\n");
    return 1;
  }
  int rc = batch_frames(&b, feed);
  nt_diag_free(b.d);
  return rc;
}

static int load_topology(nt_model *m, const char *path) {
  char err[512];
  size_t n = 0;
  char *buf = nt_topo_read_file(path, &n, err, sizeof err);
  if (!buf) {
    fprintf(stderr, "nccltop: --topology: %s\n", err);
    return -1;
  }
  int rc = nt_model_set_topology(m, buf, n, path, nt_now_s());
  if (rc != 0) fprintf(stderr, "nccltop: --topology: %s\n", nt_model_error_at(m, 0)->text);
  free(buf);
  return rc;
}

/* Every publisher costs the viewer about two file descriptors; the usual
 * soft limit of 1024 would stop it near 500. Take what the hard limit
 * allows (a failure only keeps the old limit: sockets past it are then
 * reported as errors, one by one). */
static void raise_fd_limit(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  rlim_t want = r.rlim_max == RLIM_INFINITY || r.rlim_max > 65536 ? 65536 : r.rlim_max;
  if (want <= r.rlim_cur) return;
  r.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0)
    fprintf(stderr, "nccltop: cannot raise the open-file limit: %s\n", strerror(errno));
}

static int run_viewer(nt_options *o) {
  raise_fd_limit();
  char err[700];
  install_signals();
  if (o->batch && nt_source_check(o, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop: %s\n", err);
    return 2;
  }
  if (o->record && nt_recorder_check(o->record, o->force, o, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop: --record: %s\n", err);
    return 2;
  }
  o->start_s = nt_now_s();
  nt_model *m = nt_model_new();
  if (m && o->max_memory_mib) nt_model_set_budget(m, (size_t)o->max_memory_mib << 20);
  /* A --topology file that cannot be read is a command-line mistake: said
   * before anything starts, with status 2. */
  if (m && o->topology && load_topology(m, o->topology) != 0) {
    nt_model_free(m);
    return 2;
  }
  nt_source *src = m ? nt_source_open(o, err, sizeof err) : NULL;
  if (!src) {
    fprintf(stderr, "nccltop: %s\n", m ? err : "out of memory");
    nt_model_free(m);
    return 1;
  }
  int rc = 1;
  nt_recorder *rec = NULL;
  nt_feed *feed = nt_feed_live_new(src, m);
  if (!feed) {
    fprintf(stderr, "nccltop: out of memory\n");
  } else if (o->record &&
             !(rec = nt_recorder_attach(src, o->record, o->start_s, o->force, err, sizeof err))) {
    fprintf(stderr, "nccltop: --record: %s\n", err);
  } else {
    rc = o->batch ? run_batch(feed, o, rec) : nt_screen_run(feed, o);
  }
  nt_feed_free(feed);
  if (nt_recorder_detach(src, rec) != 0) rc = 1;
  nt_source_close(src);
  nt_model_free(m);
  return rc;
}

/* Stops the demo's job: SIGTERM to the simulator's process group, SIGKILL
 * to whatever is left of it after 2 s. SIGCHLD is held meanwhile, so
 * on_child cannot reap the simulator under our feet. */
static void stop_sim(pid_t pid) {
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old);
  bool running = demo_sim > 0;
  demo_sim = 0;
  kill(-pid, SIGTERM);
  for (int i = 0; running && i < 200; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) running = false;
    struct timespec ts = {0, 10000000};
    if (running) nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL); /* ranks that outlived it; none: ESRCH */
  if (running) waitpid(pid, NULL, 0);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The simulator's stderr goes to an unnamed file in the demo's directory
 * (under the screen its messages would be lost); returns that file, or -1
 * (then stderr stays as it is), and the real stderr in *saved. */
static int capture_stderr(const char *dir, int *saved) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  *saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (*saved < 0 || dup2(fd, 2) < 0) {
    if (*saved >= 0) close(*saved);
    close(fd);
    return -1;
  }
  return fd;
}

static void restore_stderr(int saved) {
  fflush(stderr);
  if (dup2(saved, 2) < 0) _exit(3); /* nowhere left to say it */
  close(saved);
}

/* The first line the simulator wrote (its one-line reason), or "". */
static void first_line(int fd, char *buf, size_t cap) {
  ssize_t n = fd >= 0 ? pread(fd, buf, cap - 1, 0) : -1;
  buf[n > 0 ? n : 0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
}

/* Removes the demo's directory: socket files the ranks left, the nodes'
 * directories (--nodes) with theirs, then itself. */
static void remove_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
      if (de->d_type == DT_DIR && !strncmp(de->d_name, "node", 4)) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        int sfd = open(sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        DIR *sd = sfd >= 0 ? fdopendir(sfd) : NULL;
        struct dirent *se;
        while (sd && (se = readdir(sd)))
          if (strcmp(se->d_name, ".") && strcmp(se->d_name, "..")) unlinkat(sfd, se->d_name, 0);
        if (sd)
          closedir(sd);
        else if (sfd >= 0)
          close(sfd);
        unlinkat(fd, de->d_name, AT_REMOVEDIR);
      } else {
        unlinkat(fd, de->d_name, 0);
      }
    }
    closedir(d);
  } else if (fd >= 0) {
    close(fd);
  }
  if (rmdir(dir) != 0)
    fprintf(stderr, "nccltop demo: cannot remove %s: %s\n", dir, strerror(errno));
}

static int cmd_demo(int argc, char **argv) {
  nt_sim_config sim;
  nt_sim_defaults(&sim);
  sim.quiet = true;
  /* A job given an end (--iterations, --duration) keeps its ranks a second
   * after it, so the monitor reads their final state (unless --linger). */
  sim.linger_s = 1;
  char **vargv = calloc((size_t)argc + 1, sizeof *vargv);
  int vargc = 0, rc = 2;
  if (!vargv || nt_demo_split_args(&sim, argc, argv, vargv, &vargc) != 0) {
    free(vargv);
    return 2;
  }
  if (sim.nodes > NT_DEMO_MAX_NODES) {
    fprintf(stderr, "nccltop demo: --nodes: at most %d (one loopback address each)\n",
            NT_DEMO_MAX_NODES);
    free(vargv);
    return 2;
  }
  nt_options o;
  nt_options_defaults(&o);
  vargv[0] = (char *)"nccltop demo"; /* how getopt names us in its messages */
  int prc = nt_options_parse(&o, vargc, vargv);
  if (prc) {
    free(vargv);
    return prc == 1 ? 0 : 2;
  }
  /* A private directory, short enough for ipc socket paths (107 bytes). */
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp || strlen(tmp) > 60) tmp = "/tmp";
  char dir[128];
  snprintf(dir, sizeof dir, "%s/nccltop-demo-XXXXXX", tmp);
  if (!mkdtemp(dir)) { /* mkdtemp makes it 0700 */
    fprintf(stderr, "nccltop demo: cannot create a directory in %s: %s\n", tmp, strerror(errno));
    free(vargv);
    return 1;
  }
  sim.dir = dir;
  o.dir = dir;
  memcpy(demo_dir, dir, sizeof demo_dir);
  o.wait_first_s = 15; /* frames of the demo start once its ranks publish */
  demo_batch = o.batch;
  install_signals(); /* from here on a signal must not skip the clean-up */
  /* Fork the ranks before any ZeroMQ context or thread exists here. */
  int saved = -1, errfd = capture_stderr(dir, &saved);
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old); /* on_child must know the pid */
  pid_t pid = nt_sim_spawn(&sim);
  if (errfd >= 0) restore_stderr(saved);
  if (pid > 0) demo_sim = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  char why[256];
  /* --nodes: the monitor sees the nodes only through their relays. */
  static pid_t relays[NT_DEMO_MAX_NODES];
  static char hosts[64];
  bool relays_ok = pid < 0 || !sim.nodes ||
                   nt_demo_relays_start(dir, sim.nodes, relays, hosts, sizeof hosts) == 0;
  if (pid > 0 && sim.nodes) o.hosts = hosts;
  if (pid < 0) {
    first_line(errfd, why, sizeof why);
    fprintf(stderr, "%s\n", why[0] ? why : "nccltop demo: cannot start the simulator");
    rc = 2; /* a configuration the simulator refused */
  } else if (!relays_ok) {
    fprintf(stderr, "nccltop demo: cannot start the nodes' relays\n");
    stop_sim(pid);
    rc = 1;
  } else {
    rc = run_viewer(&o);
    if (sim.nodes) nt_demo_relays_stop(relays, sim.nodes);
    int early = demo_sim_status; /* the job ended before we stopped it */
    stop_sim(pid);
    if (early != -1 && early != 0) {
      first_line(errfd, why, sizeof why);
      fprintf(stderr, "%s\n", why[0] ? why : "nccltop demo: the simulated job failed");
      rc = 1;
    }
  }
  if (errfd >= 0) close(errfd);
  demo_dir[0] = '\0';
  remove_dir(dir);
  free(vargv);
  return rc;
}

static int cmd_sim(int argc, char **argv) {
  nt_sim_config sim;
  nt_sim_defaults(&sim);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      nt_sim_usage(stdout);
      return 0;
    }
  /* --trace: play recordings of real NCCL instead of simulating. */
  if (nt_trace_wanted(argc - 1, argv + 1)) {
    nt_trace_config t;
    nt_trace_defaults(&t);
    if (nt_trace_parse_args(&t, argc - 1, argv + 1) != 0) return 2;
    return nt_trace_run(&t);
  }
  int used = nt_sim_parse_args(&sim, argc - 1, argv + 1);
  if (used < 0) return 2;
  if (used != argc - 1) {
    fprintf(stderr, "nccltop sim: unknown option '%s'; try 'nccltop sim --help'\n", argv[1 + used]);
    return 2;
  }
  return nt_sim_run(&sim);
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "");
  if (argc > 1 && argv[1][0] != '-') {
    const char *cmd = argv[1];
    if (!strcmp(cmd, "sim")) return cmd_sim(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo")) return cmd_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "topo")) return nt_topo_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "relay")) return nt_relay_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "keygen")) return nt_keygen_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "exporter")) return nt_exporter_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "record")) return nt_record_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "replay")) return nt_replay_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return nt_export_main(argc - 1, argv + 1);
    fprintf(stderr, "nccltop: unknown command '%s'; try 'nccltop --help'\n", cmd);
    return 2;
  }
  nt_options o;
  nt_options_defaults(&o);
  int prc = nt_options_parse(&o, argc, argv);
  if (prc) return prc == 1 ? 0 : 2;
  return run_viewer(&o);
}

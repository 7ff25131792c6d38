/* The endpoint directory under attack and accident, with the real plugin:
 * another user who can write its parent swaps it for a symlink to a
 * directory of theirs, holding a "viewer" socket, while the plugin starts
 * and stops (root only): the plugin never connects there; the directory
 * removed or replaced under a running publisher, watched by the real
 * source; two publishers with the same pid in two PID namespaces (root
 * only). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "testlib.h"
#include "plugin_harness.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/feeds/source.h"

#define NOBODY 65534

static ph_t H;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void remove_tree(const char *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

/* Removes every entry of dir; returns how many there were. */
static int empty_dir(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    n++;
    (void)unlinkat(dirfd(d), e->d_name, 0);
  }
  if (d) closedir(d);
  return n;
}

/* ---- the race ---- */

static int refused, published, other;
static char other_sample[512];
static void count_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                      ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (strstr(msg, "refusing it")) {
    refused++;
  } else if (strstr(msg, "publishing to the viewers in")) {
    published++;
  } else if (level == NT_NCCL_LOG_WARN) {
    other++; /* the directory vanished between mkdir and open, say */
    snprintf(other_sample, sizeof other_sample, "%s", msg);
  }
}

/* The other user: keeps moving our directory aside and putting a symlink to
 * its own in its place, then putting ours back. Runs until killed. */
static void attacker(const char *base, const char *ep, const char *evil) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(1);
  if (setresgid(NOBODY, NOBODY, NOBODY) != 0 || setresuid(NOBODY, NOBODY, NOBODY) != 0) _exit(1);
  char aside[200];
  for (unsigned i = 0;; i++) {
    snprintf(aside, sizeof aside, "%s/aside-%u", base, i % 64);
    (void)rename(ep, aside);
    (void)symlink(evil, ep);
    for (volatile int spin = 0; spin < 2000; spin++) {
    }
    (void)unlink(ep);
    (void)rename(aside, ep);
    sched_yield();
  }
}

static int race_cycles = 500;

/* A listening socket in the attacker's directory, named as a viewer of ours
 * (our pid: alive), that a plugin fooled into the directory would connect to. */
static int evil_viewer(const char *evil) {
  char name[64];
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (nt_endpoint_viewer_name((uint32_t)getpid(), 1, nt_endpoint_pidns(), name, sizeof name) != 0 ||
      snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", evil, name) >= (int)sizeof a.sun_path)
    return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4096) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

/* Connections that reached the evil viewer. */
static int captured_by(int lfd) {
  int n = 0;
  for (int c; (c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0; n++) close(c);
  return n;
}

static void case_the_race(void) {
  char base[] = "/tmp/nccltop-race-XXXXXX", ep[128], evil[128];
  CHECK(mkdtemp(base) != NULL);
  CHECK(chmod(base, 0777) == 0); /* writable by everyone, no sticky bit */
  snprintf(ep, sizeof ep, "%s/ep", base);
  snprintf(evil, sizeof evil, "%s/evil", base);
  CHECK(mkdir(evil, 0777) == 0);
  int lfd = evil_viewer(evil);
  CHECK(lfd >= 0 && chown(evil, NOBODY, NOBODY) == 0);
  CHECK(setenv("NCCLTOP_DIR", ep, 1) == 0);
  memset(&H, 0, sizeof H);
  CHECK(ph_load(&H) == 0);
  fflush(NULL);
  pid_t bad = fork();
  if (bad == 0) attacker(base, ep, evil);
  CHECK(bad > 0);
  int captured = 0;
  double t0 = now_s();
  for (int i = 0; i < race_cycles; i++) {
    void *ctx = NULL;
    if (H.v5->init(&ctx, 1, &H.mask, "race", 1, 1, 0, count_log) != 0 || !ctx) break;
    H.flush(); /* the publisher has opened the directory and scanned it, or given up */
    H.v5->finalize(ctx);
    captured += captured_by(lfd);
  }
  kill(bad, SIGKILL);
  waitpid(bad, NULL, 0);
  captured += captured_by(lfd);
  close(lfd);
  fprintf(stderr,
          "    %d starts in %.1f s: publishing in our directory %d, refused (symlink seen) %d, "
          "other failures %d%s%s%s, connections to the attacker's viewer %d\n",
          race_cycles, now_s() - t0, published, refused, other, other ? " (\"" : "", other_sample,
          other ? "\")" : "", captured);
  remove_tree(base);
  CHECK(published + refused + other >= race_cycles); /* every start says what it did */
  CHECK(refused > 0 && published > 0);               /* the attack really raced the starts */
  CHECK(captured == 0);
}

static void a_parent_writable_by_another_user_cannot_redirect_the_publisher(void) {
  const char *n = getenv("NCCLTOP_RACE_CYCLES");
  if (n && atoi(n) > 0) race_cycles = atoi(n);
  CHECK(ph_in_child(case_the_race) == 0);
}

/* ---- re-binding ---- */

static const nt_model_process *find_pid(nt_model *m, uint32_t pid) {
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++)
    if (nt_model_process_at(m, i)->pid == pid) return nt_model_process_at(m, i);
  return NULL;
}

static uint64_t latest_seq(nt_model *m) {
  const nt_model_process *p = find_pid(m, (uint32_t)getpid());
  return p && p->cur ? p->cur->seq : 0;
}

/* Polls the source until our process's sequence number passes `after`;
 * seconds it took, or -1. */
static double fresh_after(nt_source *src, nt_model *m, uint64_t after, double timeout_s) {
  double t0 = now_s();
  while (now_s() - t0 < timeout_s) {
    nt_source_poll(src, m, 20);
    if (latest_seq(m) > after) return now_s() - t0;
  }
  return -1;
}

static nt_source *open_source(const char *dir) {
  nt_options o;
  char err[256];
  nt_options_defaults(&o);
  o.dir = dir;
  return nt_source_open(&o, err, sizeof err);
}

static void case_rebind(void) {
  memset(&H, 0, sizeof H);
  CHECK(ph_setup_dir(&H) == 0);
  CHECK(ph_load(&H) == 0);
  void *ctx = ph_init(&H, 7, 0, 1);
  CHECK(ctx != NULL);
  char moved[160];
  snprintf(moved, sizeof moved, "%s.old", H.dir);
  nt_model *m = nt_model_new();
  nt_source *src = open_source(H.dir);
  CHECK(m && src);
  CHECK(fresh_after(src, m, 0, 5) >= 0);
  for (int round = 0; round < 2; round++) {
    const char *what = round == 0 ? "removed" : "replaced by another of ours";
    if (round == 0) {
      remove_tree(H.dir);
    } else {
      CHECK(rename(H.dir, moved) == 0);
      CHECK(mkdir(H.dir, 0700) == 0);
    }
    /* The publisher (every 2 s) and the viewer (every second) look again
     * by themselves: the viewer binds in the new directory, the publisher
     * connects there. What arrives now came through the new one. */
    double seen = fresh_after(src, m, latest_seq(m) + 2, 8);
    /* And a viewer started now finds it too. */
    nt_model *m2 = nt_model_new();
    nt_source *src2 = open_source(H.dir);
    double fresh = m2 && src2 ? fresh_after(src2, m2, 0, 5) : -1;
    nt_source_close(src2);
    nt_model_free(m2);
    fprintf(stderr,
            "    directory %s: the running viewer had new snapshots %.2f s later; a new viewer "
            "saw it in %.2f s\n",
            what, seen, fresh);
    CHECK(seen >= 0 && seen < 6); /* the 2 s check period, a scan, and some slack */
    CHECK(fresh >= 0);
    CHECK(nt_source_nendpoints(src) == 1);
  }
  CHECK(H.v5->finalize(ctx) == 0);
  nt_source_close(src);
  nt_model_free(m);
  /* The viewer removed its socket file; the plugin never had one. */
  CHECK(empty_dir(H.dir) == 0);
  remove_tree(moved);
  remove_tree(H.dir);
}

static void a_removed_or_replaced_directory_is_found_again(void) {
  CHECK(ph_in_child(case_rebind) == 0);
}

/* ---- PID namespaces ---- */

/* A publisher as pid 1 of a fresh PID namespace: loads the plugin, inits a
 * communicator and waits until `go` reads end of file. */
static pid_t ns_publisher(const char *dir, int rank, int go, int stop_w) {
  fflush(NULL);
  pid_t c = fork();
  if (c != 0) return c;
  close(stop_w);
  if (unshare(CLONE_NEWPID) != 0) _exit(2);
  pid_t g = fork();
  if (g == 0) {
    char b;
    if (getpid() != 1 || setenv("NCCLTOP_DIR", dir, 1) != 0) _exit(3);
    memset(&H, 0, sizeof H);
    void *ctx = ph_load(&H) == 0 ? ph_init(&H, 9, rank, 2) : NULL;
    if (!ctx) _exit(4);
    while (read(go, &b, 1) < 0 && errno == EINTR) {
    }
    H.v5->finalize(ctx);
    _exit(0);
  }
  int st = 0;
  if (g < 0 || waitpid(g, &st, 0) != g) _exit(5);
  _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 6);
}

static uint32_t processes_with_pid(nt_model *m, uint32_t pid) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) n += nt_model_process_at(m, i)->pid == pid;
  return n;
}

static void same_pid_in_two_pid_namespaces_are_two_processes(void) {
  char dir[] = "/tmp/nccltop-pidns-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  int stop[2];
  CHECK(pipe(stop) == 0);
  pid_t a = ns_publisher(dir, 0, stop[0], stop[1]);
  pid_t b = ns_publisher(dir, 1, stop[0], stop[1]);
  close(stop[0]);
  CHECK(a > 0 && b > 0);
  /* Both say they are pid 1; the kernel tells the viewer who each sender
   * is, so the source keeps two endpoints (their pid 1 means nothing here,
   * kill() is not asked of it) and the model two processes, across several
   * directory scans. */
  nt_model *m = nt_model_new();
  nt_source *src = open_source(dir);
  CHECK(m && src);
  uint32_t most = 0, ones = 0;
  for (double t0 = now_s(); now_s() - t0 < 4;) {
    nt_source_poll(src, m, 50);
    if (nt_source_nendpoints(src) > most) most = nt_source_nendpoints(src);
    ones = processes_with_pid(m, 1);
  }
  uint32_t kept = nt_source_nendpoints(src);
  nt_source_close(src);
  nt_model_free(m);
  fprintf(stderr, "    the source kept %u endpoints; %u processes are pid 1\n", kept, ones);
  CHECK(most == 2 && kept == 2 && ones == 2);
  close(stop[1]); /* both finalize and exit */
  int sa = 0, sb = 0;
  CHECK(waitpid(a, &sa, 0) == a && waitpid(b, &sb, 0) == b);
  CHECK(WIFEXITED(sa) && WEXITSTATUS(sa) == 0 && WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
  remove_tree(dir);
}

static bool can_unshare_pid(void) {
  fflush(NULL);
  pid_t c = fork();
  if (c == 0) _exit(unshare(CLONE_NEWPID) == 0 ? 0 : 1);
  int st = 0;
  return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void) {
  (void)ph_op, (void)ph_step, (void)ph_simple; /* the harness's builders, unused here */
  if (geteuid() == 0)
    TEST_RUN(a_parent_writable_by_another_user_cannot_redirect_the_publisher);
  else
    TEST_SKIP(a_parent_writable_by_another_user_cannot_redirect_the_publisher,
              "needs root to act as a second user (uid 65534)");
  TEST_RUN(a_removed_or_replaced_directory_is_found_again);
  if (can_unshare_pid())
    TEST_RUN(same_pid_in_two_pid_namespaces_are_two_processes);
  else
    TEST_SKIP(same_pid_in_two_pid_namespaces_are_two_processes,
              "unshare(CLONE_NEWPID) is not allowed here");
  return TEST_DONE();
}

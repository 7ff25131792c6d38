/* Nothing on the plugin's publisher thread may hold the job:
 *  - NCCL_TOPO_DUMP_FILE naming a FIFO: refused with one log line, and
 *    finalize returns at once;
 *  - a publisher really stuck in a system call (a test-only build whose
 *    topology open blocks, as on a stalled network mount): finalize returns
 *    within its bound, init + finalize work again afterwards, and the thread
 *    survives NCCL's dlclose of the plugin;
 *  - a topology file that changes is read and sent again, one that does not
 *    change is not read again;
 *  - NCCLTOP_DIR with a newline and ESC: nothing raw reaches NCCL's log.
 * (Hostile ZeroMQ peers: test_hostile_peer.c.)
 */
#include "hostile_job.h"

/* ---- the topology dump -------------------------------------------------- */

static void topology_on_a_fifo_is_refused(void) {
  job_t j;
  char fifo[128];
  /* The FIFO must exist before the job's first look: make the directory
   * first, as job_start would. */
  CHECK(job_start(&j, NULL, "topo.fifo") == 0);
  snprintf(fifo, sizeof fifo, "%s/topo.fifo", j.dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  viewer_t v;
  CHECK(viewer_open(&v, j.dir) == 0);
  viewer_pump(&v, 2.5); /* one meta period: the FIFO is looked at twice */
  uint64_t snaps = v.snapshots;
  viewer_close(&v);
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  int lines = 0;
  for (const char *p = report; (p = strstr(p, "not a regular file")); p++) lines++;
  fprintf(stderr, "    %llu snapshots in 2.5 s; finalize took %.1f ms; %d refusal line(s)\n",
          (unsigned long long)snaps, ms, lines);
  CHECK(snaps >= 10);
  CHECK(ms >= 0 && ms < 500);
  CHECK(lines == 1);
}

static bool write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write_all(fd, text, strlen(text));
  return close(fd) == 0 && ok;
}

/* inotify events of `mask` on the watch since the last call. */
static int inotify_count(int ifd, uint32_t mask) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  int n = 0;
  for (;;) {
    ssize_t r = read(ifd, buf, sizeof buf);
    if (r <= 0) return n;
    for (char *p = buf; p < buf + r;
         p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
      if (((struct inotify_event *)p)->mask & mask) n++;
  }
}

static void topology_is_read_again_only_when_changed(void) {
  job_t j;
  CHECK(job_start(&j, NULL, "topo.xml") == 0);
  char path[128];
  snprintf(path, sizeof path, "%s/topo.xml", j.dir);
  CHECK(write_file(path, "<system version=\"1\"><cpu numaid=\"0\"/></system>\n"));
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  CHECK(ifd >= 0 && inotify_add_watch(ifd, path, IN_OPEN | IN_ACCESS) >= 0);
  viewer_t v;
  CHECK(viewer_open(&v, j.dir) == 0);
  viewer_pump(&v, 1.0);
  bool first = v.topos > 0 && strstr(v.topo, "numaid=\"0\"") != NULL;
  int first_opens = inotify_count(ifd, IN_OPEN);
  /* Unchanged: sent again from memory every 2 s, never opened again. */
  uint64_t t0 = v.topos;
  viewer_pump(&v, 4.5);
  int idle_opens = inotify_count(ifd, IN_OPEN | IN_ACCESS);
  uint64_t resent = v.topos - t0;
  /* Changed (as NCCL finishing a half-written dump): read and sent. */
  (void)inotify_count(ifd, IN_OPEN | IN_ACCESS);
  CHECK(write_file(path, "<system version=\"1\"><cpu numaid=\"1\"/><gpu/></system>\n"));
  double t1 = now_s(), seen = -1;
  while (seen < 0 && now_s() - t1 < 5) {
    viewer_pump(&v, 0.1);
    if (v.topos && memmem(v.topo, v.topo_len, "numaid=\"1\"", 10)) seen = now_s() - t1;
  }
  /* Reads: our own write opened the file too (and inotify merges repeated
   * opens into one event), but only the job reads it. */
  int change_reads = inotify_count(ifd, IN_ACCESS);
  viewer_close(&v);
  close(ifd);
  char report[sizeof logged + 64];
  double ms = job_stop_report(&j, report, sizeof report);
  fprintf(stderr,
          "    first read: %d open(s); unchanged for 4.5 s: %d open/read, sent %llu more times; "
          "changed: seen after %.2f s, %d read(s)\n",
          first_opens, idle_opens, (unsigned long long)resent, seen, change_reads);
  CHECK(first && first_opens == 1);
  CHECK(idle_opens == 0 && resent >= 2);
  CHECK(seen >= 0 && seen < 3 && change_reads >= 1);
  CHECK(ms >= 0 && ms < 1000);
}

/* ---- a publisher really stuck ------------------------------------------- */

static int publisher_threads(void) {
  int n = 0;
  char path[300], comm[32];
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(comm, sizeof comm, f) && strncmp(comm, "nccltop-pub", 11) == 0) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* The test-only stuck build loaded with its topology dump on a FIFO, one
 * communicator, and a viewer connected: once the viewer has subscribed,
 * the publisher opens the FIFO and blocks. 0, or -1 if any step failed. */
typedef struct {
  char dir[32], fifo[64];
  void *lib;
  const nt_profiler_v5 *v5;
  void *ctx;
  int mask;
  viewer_t v;
} stuck_t;

static int stuck_open(stuck_t *k) {
  memset(k, 0, sizeof *k);
  snprintf(k->dir, sizeof k->dir, "/tmp/nccltop-hostile-XXXXXX");
  if (!mkdtemp(k->dir)) return -1;
  snprintf(k->fifo, sizeof k->fifo, "%s/topo", k->dir);
  if (mkfifo(k->fifo, 0600) != 0) return -1;
  setenv("NCCLTOP_DIR", k->dir, 1);
  setenv("NCCLTOP_INTERVAL_MS", "50", 1);
  setenv("NCCL_TOPO_DUMP_FILE", k->fifo, 1);
  k->lib = dlopen(stuck_plugin, RTLD_NOW | RTLD_LOCAL);
  k->v5 = k->lib ? dlsym(k->lib, "ncclProfiler_v5") : NULL;
  /* no hook: the open itself blocks */
  if (!k->v5 || dlsym(k->lib, "nccltop_test_block") != NULL) return -1;
  if (!(k->ctx = init_comm(k->v5, 1, &k->mask))) return -1;
  return viewer_open(&k->v, k->dir);
}

static void case_stuck_publisher_is_left_behind(void) {
  stuck_t k;
  CHECK(stuck_open(&k) == 0);
  char *dir = k.dir, *fifo = k.fifo;
  void *ctx = k.ctx;
  const nt_profiler_v5 *v5 = k.v5;
  int mask = k.mask;
  viewer_t v = k.v;
  viewer_pump(&v, 1.0); /* subscribed: the publisher opens the FIFO and blocks */
  CHECK(v.snapshots == 0 && publisher_threads() == 1);
  double t0 = now_s();
  CHECK(v5->finalize(ctx) == 0);
  double stop_ms = (now_s() - t0) * 1e3;
  bool left = count_in_log("left behind") == 1 && publisher_threads() == 1;
  /* While it is stuck, a new communicator is profiled but not published. */
  t0 = now_s();
  ctx = init_comm(v5, 2, &mask);
  events(v5, ctx, 100);
  CHECK(ctx != NULL && v5->finalize(ctx) == 0);
  double again_ms = (now_s() - t0) * 1e3;
  bool refused = count_in_log("still blocked; not publishing") == 1;
  /* The mount comes back (a writer opens the FIFO): the publisher left
   * behind ends by itself, and the dump becomes a regular file. */
  int w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(w >= 0);
  close(w);
  CHECK(unlink(fifo) == 0 && write_file(fifo, "<system version=\"1\"><cpu/></system>\n"));
  t0 = now_s();
  while (publisher_threads() > 0 && now_s() - t0 < 3) sleep_s(0.01);
  double end_ms = (now_s() - t0) * 1e3;
  CHECK(publisher_threads() == 0);
  /* Then the next communicator publishes again. */
  ctx = init_comm(v5, 3, &mask);
  CHECK(ctx != NULL);
  events(v5, ctx, 100);
  uint64_t before = v.snapshots;
  viewer_pump(&v, 2.0); /* the viewer reconnects to the new socket by itself */
  uint64_t snaps = v.snapshots - before;
  bool topo = v.topos > 0 && memmem(v.topo, v.topo_len, "<cpu/>", 6) != NULL;
  viewer_close(&v);
  t0 = now_s();
  CHECK(v5->finalize(ctx) == 0);
  double last_ms = (now_s() - t0) * 1e3;
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  fprintf(stderr,
          "    finalize with a stuck publisher: %.1f ms; init+finalize while stuck: %.1f ms; "
          "unblocked, it ended in %.1f ms; then %llu snapshots in 2 s, finalize %.1f ms\n",
          stop_ms, again_ms, end_ms, (unsigned long long)snaps, last_ms);
  CHECK(stop_ms < 1500 && left);
  CHECK(again_ms < 500 && refused);
  CHECK(snaps >= 5 && topo && last_ms < 1000);
}

static void stuck_publisher_is_left_behind(void) {
  if (access(stuck_plugin, R_OK) != 0) {
    TEST_SKIP(stuck_publisher_is_left_behind, "the test-only stuck plugin is not built");
    return;
  }
  CHECK(ph_in_child(case_stuck_publisher_is_left_behind) == 0);
}

/* What NCCL does after the last finalize (ncclProfilerPluginUnload ->
 * dlclose): the library goes, while the publisher finalize left behind is
 * still blocked inside it. When it wakes up it must find its code mapped
 * (-z nodelete), end cleanly, and a later load must work. */
static bool mapped(const char *path) {
  char real[PATH_MAX], line[PATH_MAX + 128];
  if (!realpath(path, real)) return false;
  FILE *f = fopen("/proc/self/maps", "r");
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, real) != NULL;
  if (f) fclose(f);
  return found;
}

static void case_an_abandoned_publisher_survives_dlclose(void) {
  stuck_t k;
  CHECK(stuck_open(&k) == 0);
  char *dir = k.dir, *fifo = k.fifo;
  void *lib = k.lib, *ctx = k.ctx;
  const nt_profiler_v5 *v5 = k.v5;
  int mask = k.mask;
  viewer_t v = k.v;
  viewer_pump(&v, 1.0); /* the publisher blocks in the FIFO's open */
  CHECK(publisher_threads() == 1);
  CHECK(v5->finalize(ctx) == 0); /* abandons it after the bound */
  CHECK(dlclose(lib) == 0);      /* NCCL's unload */
  bool still_mapped = mapped(stuck_plugin);
  /* Wake it: it runs plugin code now, after the dlclose. */
  int w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(w >= 0);
  close(w);
  double t0 = now_s();
  while (publisher_threads() > 0 && now_s() - t0 < 3) sleep_s(0.01);
  bool ended = publisher_threads() == 0;
  /* NCCL loads it again for a later communicator. */
  CHECK(unlink(fifo) == 0);
  lib = dlopen(stuck_plugin, RTLD_NOW | RTLD_LOCAL);
  v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  ctx = init_comm(v5, 2, &mask);
  CHECK(ctx != NULL);
  events(v5, ctx, 100);
  uint64_t before = v.snapshots;
  viewer_pump(&v, 1.5);
  uint64_t snaps = v.snapshots - before;
  viewer_close(&v);
  CHECK(v5->finalize(ctx) == 0 && dlclose(lib) == 0);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  fprintf(
      stderr,
      "    after dlclose: still mapped %d, woken publisher ended %d; reloaded: %llu snapshots\n",
      still_mapped, ended, (unsigned long long)snaps);
  CHECK(still_mapped && ended && snaps >= 3);
}

static void an_abandoned_publisher_survives_dlclose(void) {
  if (access(stuck_plugin, R_OK) != 0) {
    TEST_SKIP(an_abandoned_publisher_survives_dlclose, "the test-only stuck plugin is not built");
    return;
  }
  CHECK(ph_in_child(case_an_abandoned_publisher_survives_dlclose) == 0);
}

/* ---- logging ------------------------------------------------------------ */

static void case_log_lines_are_escaped(void) {
  char base[] = "/tmp/nccltop-hostile-XXXXXX", dir[128];
  CHECK(mkdtemp(base) != NULL);
  snprintf(dir, sizeof dir, "%s/a\nforged: b\x1b[31mred", base);
  setenv("NCCLTOP_DIR", dir, 1);
  void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  CHECK(v5 != NULL);
  int mask = 0;
  void *ctx = init_comm(v5, 1, &mask);
  CHECK(ctx != NULL);
  for (int i = 0; i < 200 && !count_in_log("publishing to the viewers in"); i++) sleep_s(0.01);
  CHECK(v5->finalize(ctx) == 0);
  char cmd[192];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  CHECK(system(cmd) == 0);
  pthread_mutex_lock(&log_mu);
  bool raw = false;
  int lines = 0;
  for (const char *p = logged; *p; p++) {
    if (*p == '\n') lines++;
    if (*p == 0x1b || (*p == '\n' && strncmp(p + 1, "forged", 6) == 0)) raw = true;
  }
  const char *line = strstr(logged, "publishing to the viewers in");
  bool escaped = line && strstr(line, "a\\x0Aforged: b\\x1B[31mred");
  pthread_mutex_unlock(&log_mu);
  fprintf(stderr, "    %d log lines; the endpoint line: %.*s\n", lines,
          line ? (int)strcspn(line, "\n") : 0, line ? line : "");
  CHECK(!raw && escaped);
}

static void log_lines_are_escaped(void) {
  CHECK(ph_in_child(case_log_lines_are_escaped) == 0);
}

int main(int argc, char **argv) {
  hostile_init(argc, argv);
  HOSTILE_RUN(log_lines_are_escaped);
  HOSTILE_RUN(topology_on_a_fifo_is_refused);
  HOSTILE_RUN(topology_is_read_again_only_when_changed);
  HOSTILE_RUN(stuck_publisher_is_left_behind);
  HOSTILE_RUN(an_abandoned_publisher_survives_dlclose);
  return TEST_DONE();
}

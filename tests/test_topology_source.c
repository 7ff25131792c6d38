/* Topologies from publishers, through real processes: ranks of a simulated
 * job load the real plugin, which sends NCCL_TOPO_DUMP_FILE's content; the
 * viewer's source and model receive it over real ZeroMQ sockets. Also
 * --topology and `nccltop topo` on files that are not regular files. */
#include <fcntl.h>
#include <sys/stat.h>

#include "scenario_harness.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/frame.h"
#include "../monitor/core/model.h"
#include "test_diag.h"
#include "../monitor/options.h"
#include "../monitor/feeds/source.h"

#define TOPO_A "examples/topologies/pcie-2socket-4gpu.xml"
#define TOPO_B "examples/topologies/nvswitch-8gpu-8nic.xml"

static bool make_dir(char *dir, size_t cap, const char *tag) {
  snprintf(dir, cap, "/tmp/nccltop-test-%s-%d", tag, (int)getpid());
  remove_dir(dir);
  return mkdir(dir, 0700) == 0;
}

static char *slurp(const char *path, size_t *len) {
  char err[256];
  char *buf = nt_topo_read_file(path, len, err, sizeof err);
  if (!buf) fprintf(stderr, "    %s\n", err);
  return buf;
}

static bool write_file(const char *path, const char *data, size_t len) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp, path) == 0; /* as a whole: the plugin never reads half of it */
}

/* Counts the model's errors that name a line of an XML file ("SOURCE:LINE:"). */
static int xml_errors(nt_model *m) {
  int n = 0;
  for (uint32_t i = 0; i < nt_model_nerrors(m); i++)
    if (strstr(nt_model_error_at(m, i)->text, "ipc://")) n++;
  return n;
}

typedef struct {
  char dir[128];
  pid_t job;
  nt_model *m;
  nt_source *src;
} watch;

static bool watch_start(watch *w, nt_sim_config *c) {
  w->job = nt_sim_spawn(c);
  if (w->job <= 0 || !wait_publishers(w->dir, c->ranks, 10)) return false;
  nt_options o;
  nt_options_defaults(&o);
  o.dir = w->dir;
  char err[256];
  w->m = nt_model_new();
  w->src = w->m ? nt_source_open(&o, err, sizeof err) : NULL;
  return w->src != NULL;
}

static void watch_stop(watch *w) {
  nt_source_close(w->src);
  nt_model_free(w->m);
  stop_group(&w->job);
  remove_dir(w->dir);
}

/* Two ranks whose dump files differ send both every 2 s for 5 s: the first
 * one taken keeps index 0 (the one the view shows until t), unchanged; the
 * other is held at index 1 for the user to pick. */
static void the_first_topology_stays_until_the_user_picks_another(void) {
  watch w = {.job = -1};
  CHECK(access(TOPO_A, R_OK) == 0 && access(TOPO_B, R_OK) == 0);
  CHECK(make_dir(w.dir, sizeof w.dir, "topo2"));
  nt_sim_config c;
  base_config(&c, w.dir);
  c.ranks = 2;
  c.duration_s = 30;
  c.rank_env[0].rank = 0, c.rank_env[0].kv = "NCCL_TOPO_DUMP_FILE=" TOPO_A;
  c.rank_env[1].rank = 1, c.rank_env[1].kv = "NCCL_TOPO_DUMP_FILE=" TOPO_B;
  c.nrank_env = 2;
  bool ok = watch_start(&w, &c);
  const char *first = NULL;
  char first_copy[160] = "";
  uint64_t hash = 0, first_hash = 0;
  uint32_t count = 0, changes = 0;
  for (double end = now_s() + 5.5; ok && now_s() < end;) {
    nt_source_poll(w.src, w.m, 100);
    if (!nt_model_topology_at(w.m, 0, &first, &hash)) continue;
    if (!first_copy[0]) {
      snprintf(first_copy, sizeof first_copy, "%s", first);
      first_hash = hash;
    }
    if (strcmp(first, first_copy) != 0 || hash != first_hash) changes++;
    count = nt_model_topology_count(w.m);
  }
  /* the other machine's, at the index the view's t picks next */
  const char *next_source = "";
  bool moved = ok && nt_model_topology_at(w.m, 1, &next_source, NULL) != NULL &&
               strcmp(next_source, first_copy) != 0;
  watch_stop(&w);
  CHECK(ok);
  CHECK(first_copy[0] != '\0');
  CHECK_EQ_U64(changes, 0);
  CHECK_EQ_U64(count, 2);
  CHECK(moved);
}

/* NCCL writes the dump while the plugin may read it: a half-written file is
 * one error, not one every two seconds, and the finished file replaces it. */
static void a_half_written_dump_is_one_error_then_replaced_when_finished(void) {
  watch w = {.job = -1};
  size_t len = 0;
  char *xml = slurp(TOPO_A, &len);
  CHECK(xml != NULL);
  char dump[PATH_MAX];
  bool made = make_dir(w.dir, sizeof w.dir, "topohalf");
  snprintf(dump, sizeof dump, "%s-dump.xml", w.dir);
  bool ok = made && write_file(dump, xml, len / 2);
  char kv[PATH_MAX + 32];
  snprintf(kv, sizeof kv, "NCCL_TOPO_DUMP_FILE=%s", dump);
  nt_sim_config c;
  base_config(&c, w.dir);
  c.ranks = 1;
  c.duration_s = 30;
  c.env[0] = kv;
  c.nenv = 1;
  ok = ok && watch_start(&w, &c);
  /* Three meta periods with the broken file. */
  for (double end = now_s() + 5; ok && now_s() < end;) nt_source_poll(w.src, w.m, 100);
  int broken_errors = ok ? xml_errors(w.m) : -1;
  bool none_yet = ok && nt_model_topology_at(w.m, 0, NULL, NULL) == NULL;
  ok = ok && write_file(dump, xml, len);
  double t0 = now_s(), took = -1;
  for (double end = t0 + 6; ok && now_s() < end && took < 0;) {
    nt_source_poll(w.src, w.m, 100);
    if (nt_model_topology_at(w.m, 0, NULL, NULL)) took = now_s() - t0;
  }
  watch_stop(&w);
  unlink(dump);
  free(xml);
  CHECK(ok);
  CHECK_EQ_U64(broken_errors, 1);
  CHECK(none_yet);
  if (took < 0) fprintf(stderr, "    the finished file never replaced the broken one\n");
  CHECK(took >= 0);
  fprintf(stderr, "    finished dump shown %.2f s after it was written\n", took);
}

/* End to end: 4 ranks on one node, each with NCCL_TOPO_DUMP_FILE naming
 * the 4-GPU PCIe example, through the real plugin and sockets: the
 * collectives rows get NCCL's prediction from the topology their own
 * processes sent (the model stands for them: 4 GPUs x 1 node = 4 ranks);
 * point-to-point rows stay unknown. */
static void the_job_s_topology_gives_its_collectives_a_model(void) {
  watch w = {.job = -1};
  char parent[128];
  CHECK(access(TOPO_A, R_OK) == 0);
  CHECK(make_dir(parent, sizeof parent, "topomodel"));
  /* --nodes: node 0's ranks publish in <dir>/node0 */
  snprintf(w.dir, sizeof w.dir, "%.100s/node0", parent);
  nt_sim_config c;
  base_config(&c, parent);
  c.ranks = 4;
  c.nodes = 1;
  c.duration_s = 30;
  for (int r = 0; r < 4; r++)
    c.rank_env[r].rank = r, c.rank_env[r].kv = "NCCL_TOPO_DUMP_FILE=" TOPO_A;
  c.nrank_env = 4;
  bool ok = watch_start(&w, &c);
  nt_frame *f = nt_frame_new();
  nt_frame_opts o = {.stall_ms = 2000};
  uint32_t known = 0, timed = 0, p2p_known = 0;
  for (double end = now_s() + 8; ok && f && now_s() < end && !timed;) {
    nt_source_poll(w.src, w.m, 100);
    nt_model_tick(w.m, now_s());
    if (nt_frame_build(f, w.m, test_diag(), &o, now_s()) != 0) continue;
    known = timed = p2p_known = 0;
    for (uint32_t i = 0; i < f->nstats; i++) {
      const nt_frame_stat *x = &f->stats[i];
      if (x->st.kind == NT_OP_P2P) p2p_known += x->model.known;
      if (x->st.kind != NT_OP_COLL || !x->model.known) continue;
      known++;
      timed += x->model.ratio > 0 && x->model.time_us > 0 && x->model.busbw_gbs > 0;
    }
  }
  nt_frame_free(f);
  watch_stop(&w);
  remove_dir(parent);
  CHECK(ok);
  CHECK(known > 0 && timed > 0);
  CHECK_EQ_U64(p2p_known, 0);
}

/* Runs argv with stdin/stdout/stderr to /dev/null but stderr captured into
 * err; returns its exit status, or -1 if it ran past `seconds` (killed). */
static int run_bounded(char *const argv[], double seconds, double *took, char *err, size_t cap) {
  int p[2];
  if (pipe(p) != 0) return -2;
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(p[1], 2);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  int st = wait_exit(pid, seconds);
  *took = now_s() - t0;
  if (st == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  ssize_t n = read(p[0], err, cap - 1);
  err[n > 0 ? n : 0] = '\0';
  close(p[0]);
  return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A FIFO would block a reader until someone writes it: refused at once. */
static void a_fifo_given_as_topology_is_refused_at_once(void) {
  char fifo[128], err[1024], dir[128];
  snprintf(fifo, sizeof fifo, "/tmp/nccltop-test-fifo-%d.xml", (int)getpid());
  unlink(fifo);
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK(make_dir(dir, sizeof dir, "fifodir"));
  size_t len;
  double t0 = now_s();
  char *buf = nt_topo_read_file(fifo, &len, err, sizeof err);
  double api_s = now_s() - t0;
  char *topo_cmd[] = {nccltop, "topo", fifo, NULL};
  double topo_s, view_s;
  int topo_rc = run_bounded(topo_cmd, 5, &topo_s, err, sizeof err);
  bool topo_says = strstr(err, "a FIFO") != NULL;
  char *view_cmd[] = {nccltop, "-b", "-n", "1", "--dir", dir, "--topology", fifo, NULL};
  int view_rc = run_bounded(view_cmd, 5, &view_s, err, sizeof err);
  bool view_says = strstr(err, "a FIFO") != NULL;
  unlink(fifo);
  remove_dir(dir);
  CHECK(buf == NULL);
  CHECK(api_s < 1);
  CHECK(topo_rc == 1 && topo_says);
  CHECK(view_rc != 0 && view_rc != -1 && view_says);
  fprintf(stderr, "    refused in %.3f s (nccltop topo), %.3f s (--topology)\n", topo_s, view_s);
}

int main(void) {
  scenario_init();
  TEST_RUN(the_first_topology_stays_until_the_user_picks_another);
  TEST_RUN(a_half_written_dump_is_one_error_then_replaced_when_finished);
  TEST_RUN(a_fifo_given_as_topology_is_refused_at_once);
  TEST_RUN(the_job_s_topology_gives_its_collectives_a_model);
  return TEST_DONE();
}

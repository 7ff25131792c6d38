/* The interactive nccltop in a pseudo-terminal, read through libvterm, on a
 * deterministic simulated job (real plugin, real sockets): the views show the
 * simulated states and react to keys. */
#include <libgen.h>
#include <limits.h>

#include "testlib.h"
#include "vterm_harness.h"
#include "../sim/sim.h"
#include "../proto/nccltop_proto.h"
#include <zmq.h>

static char bindir[PATH_MAX], nccltop[PATH_MAX + 16], plugin[PATH_MAX + 64];
static char dir[] = "/tmp/nccltop-screen-XXXXXX";
static char dir_env[sizeof dir + 16];
static pid_t sim = -1;

static bool start_job(void) {
  if (!mkdtemp(dir)) return false;
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s", dir);
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 2;
  c.comms = 1;
  c.channels = 3;
  c.steps = 4;
  c.iterations = 5;
  c.deterministic = true;
  c.linger_s = 120; /* the test stops it */
  c.plugin = plugin;
  c.dir = dir;
  c.interval_ms = 50;
  c.quiet = true;
  sim = nt_sim_spawn(&c);
  return sim > 0;
}

static void stop_job(void) {
  if (sim > 0) {
    kill(-sim, SIGTERM);
    double end = vt_now() + 5;
    while (vt_now() < end && waitpid(sim, NULL, WNOHANG) == 0) usleep(10000);
    kill(-sim, SIGKILL);
    waitpid(sim, NULL, WNOHANG);
  }
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void views_show_the_job_and_react_to_keys(void) {
  vt_term t;
  char *argv[] = {nccltop, "-d", "200", NULL};
  char *env[] = {dir_env, NULL};
  CHECK(vt_start(&t, 30, 110, argv, env) == 0);
  /* The overview first: the communicator with both ranks, no alerts. */
  bool ok = vt_wait_for(&t, "[overview]", 15) && vt_wait_for(&t, "sim-comm-0", 15) &&
            vt_wait_for(&t, "2/2", 5) && vt_wait_for(&t, "No alerts", 5);
  if (ok) {
    /* Proxy view: both ranks, their communicator, the final state, LIVE. */
    vt_send(&t, "2");
    ok = vt_wait_for(&t, "1/2", 15) && vt_wait_for(&t, "0/2", 5) && vt_wait_for(&t, "idle", 5) &&
         vt_wait_for(&t, "LIVE", 5) && vt_wait_for(&t, "[proxy threads]", 1);
  }
  if (ok) {
    /* Channels view: the deterministic schedule's dominant waits are the
     * network ones on both sides. */
    vt_send(&t, "3");
    ok = vt_wait_for(&t, "[channels]", 5) && vt_wait_for(&t, "NET/NET", 5) &&
         vt_wait_for(&t, "ch2", 2);
  }
  if (ok) {
    vt_send(&t, "\r"); /* Enter: details of rank 0, channel 0 */
    ok = vt_wait_for(&t, "send to peer 1", 5) && vt_wait_for(&t, "recv from peer 1", 2) &&
         vt_wait_for(&t, "recv_flush_wait", 2);
  }
  if (ok) {
    vt_send(&t, "\033"); /* Esc closes the details */
    double end = vt_now() + 5;
    while (vt_now() < end && strstr(vt_text(&t), "send to peer")) vt_pump(&t, 50);
    ok = !strstr(t.text, "send to peer");
    if (!ok) fprintf(stderr, "    Esc did not close the details\n");
  }
  if (ok) {
    vt_send(&t, "\033OP"); /* F1: help, built from the key table */
    ok = vt_wait_for(&t, "Keys", 5) && vt_wait_for(&t, "quit", 1) &&
         vt_wait_for(&t, "pause / resume", 1);
  }
  if (ok) {
    vt_send(&t, "\t"); /* Tab from help wraps to the overview */
    ok = vt_wait_for(&t, "[overview]", 5);
  }
  if (ok) {
    vt_send(&t, "\t"); /* ... and on to the proxy view */
    ok = vt_wait_for(&t, "[proxy threads]", 5);
  }
  if (ok) {
    vt_send(&t, "\\1/2\r"); /* filter: only rank 1 */
    ok = vt_wait_for(&t, "filter \"1/2\"", 5) && vt_wait_for(&t, "ranks 1", 5);
    if (ok && strstr(t.text, "0/2")) {
      fprintf(stderr, "    the filter kept rank 0\n");
      ok = false;
    }
  }
  if (ok) {
    vt_send(&t, "\\\b\b\b\r>"); /* clear the filter, next sort order */
    ok = vt_wait_for(&t, "ranks 2", 5) && vt_wait_for(&t, "sort stalled first", 5);
  }
  if (ok) {
    vt_resize(&t, 20, 72);
    ok = vt_wait_for(&t, "nccltop", 5) && vt_wait_for(&t, "0/2", 5);
  }
  if (ok) {
    vt_send(&t, " "); /* pause */
    ok = vt_wait_for(&t, "PAUSED", 5);
  }
  if (ok) {
    vt_send(&t, "q");
    int st = vt_wait_exit(&t, 10);
    ok = st == 0;
    if (!ok) fprintf(stderr, "    q: exit status %d\n", st);
  }
  vt_stop(&t);
  CHECK(ok);
}

static void ascii_and_no_color_modes_draw_plain_text(void) {
  vt_term t;
  char *argv[] = {nccltop, "-A", "-C", "-d", "200", NULL};
  char *env[] = {dir_env, NULL};
  CHECK(vt_start(&t, 24, 120, argv, env) == 0);
  vt_send(&t, "2"); /* the proxy view draws state bars */
  bool ok = vt_wait_for(&t, "sim-comm-0", 15) && vt_wait_for(&t, "#", 5);
  if (ok && strstr(t.text, "\xe2\x96\x88")) { /* U+2588 full block */
    fprintf(stderr, "    ASCII mode drew a block character\n");
    ok = false;
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  CHECK(ok);
}

static void a_tiny_terminal_does_not_crash(void) {
  vt_term t;
  char *argv[] = {nccltop, "-d", "100", NULL};
  char *env[] = {dir_env, NULL};
  CHECK(vt_start(&t, 4, 20, argv, env) == 0);
  bool ok = vt_wait_for(&t, "too small", 10);
  if (ok) {
    vt_resize(&t, 1, 1);
    vt_pump(&t, 300);
    vt_resize(&t, 24, 80);
    ok = vt_wait_for(&t, "nccltop", 10);
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  CHECK(ok);
}

/* The topology view: the matrix from --topology, a cell explained, and a
 * what-if toggle that recomputes it. */
static void topology_view_and_what_if(void) {
  vt_term t;
  char *argv[] = {nccltop, "--topology", "examples/topologies/pcie-2socket-4gpu.xml", NULL};
  char *env[] = {dir_env, NULL};
  CHECK(vt_start(&t, 30, 120, argv, env) == 0);
  vt_send(&t, "5");
  bool ok = vt_wait_for(&t, "[topology]", 10) && vt_wait_for(&t, "PIX 24*", 5) &&
            vt_wait_for(&t, "what-if: none", 2);
  if (ok) {
    vt_send(&t, "\033OC"); /* right (keypad mode): GPU0 -> GPU1 */
    ok = vt_wait_for(&t, "GPU0 -> GPU1: PIX, 24 GB/s, 2 hops, P2P on", 5) &&
         vt_wait_for(&t, "route: GPU0", 2);
  }
  if (ok) {
    vt_send(&t, "p"); /* NCCL_P2P_DISABLE=1: through the CPU */
    ok = vt_wait_for(&t, "what-if: P2P_DISABLE=1", 5) &&
         vt_wait_for(&t, "GPU0 -> GPU1: PHB, 24 GB/s, 4 hops, P2P off", 5);
  }
  if (ok) {
    vt_send(&t, "e");
    ok = vt_wait_for(&t, "what-if: none", 5);
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  CHECK(ok);
}

/* An 8 GPU x 8 NIC box: at 80 columns the compact form (kind numbers, the
 * kinds listed below), at 200 the full cells; both with the CLI's marks
 * (grace-c2c's p: GDR through PCIe). */
static bool topology_at(int rows, int cols, const char *file, const char *const *want) {
  vt_term t;
  char *argv[] = {nccltop, "--topology", (char *)file, NULL};
  char *env[] = {dir_env, NULL};
  if (vt_start(&t, rows, cols, argv, env) != 0) return false;
  vt_send(&t, "5");
  bool ok = vt_wait_for(&t, "[topology]", 10);
  for (int i = 0; ok && want[i]; i++) ok = vt_wait_for(&t, want[i], 5);
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  return ok;
}

static void topology_view_compact_at_80_full_at_200(void) {
  static const char *const narrow[] = {"G0 G1", " 1 NVL 370.8*", " 3 PXN 48*rx", "GPU0    X", NULL};
  static const char *const wide[] = {"NVL 370.8*", "PXN 48*rx", "PHB 48*r", NULL};
  static const char *const grace[] = {"PXN 48*rpx", "PIX 48*rp", NULL};
  CHECK(topology_at(24, 80, "examples/topologies/nvswitch-8gpu-8nic.xml", narrow));
  CHECK(topology_at(60, 200, "examples/topologies/nvswitch-8gpu-8nic.xml", wide));
  CHECK(topology_at(24, 80, "examples/topologies/grace-c2c.xml", grace));
}

/* A hostile publisher: its host, communicator name and environment carry
 * terminal escape sequences. They must reach the screen and the batch
 * output as visible text, never as control characters. */
static pid_t hostile_publisher(const char *hdir) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  char ep[256];
  void *z = zmq_ctx_new(), *s = zmq_socket(z, ZMQ_XPUB);
  if (nt_endpoint_for_pid(hdir, (uint32_t)getpid(), ep, sizeof ep) != 0 || zmq_bind(s, ep) != 0)
    _exit(1);
  nt_snapshot *snap = nt_snapshot_new();
  snprintf(snap->host, sizeof snap->host, "evil\x1b[2J\x1b]0;pwned\x07host");
  snap->pid = (uint32_t)getpid();
  snap->ncomms = 1;
  snap->comms[0] = (nt_comm_row){.comm_hash = 0xbad, .rank = 0, .nranks = 1, .nnodes = 1};
  snap->nproxy = 1;
  snap->proxy[0] = (nt_proxy_row){.tid = 1, .state = NT_PROXY_IDLE, .state_ns = {1, 0, 0, 0, 0}};
  nt_comm_info c = {.pid = (uint32_t)getpid(), .comm_hash = 0xbad, .rank = 0, .nranks = 1};
  snprintf(c.name, sizeof c.name, "\x1b[31mred\x1b[0m");
  static uint8_t buf[1 << 16];
  char json[1024];
  for (uint64_t seq = 1; seq < 600; seq++) {
    snap->seq = seq;
    snap->mono_ns = seq * 100000000ull;
    size_t n = nt_snapshot_encode(snap, buf, sizeof buf);
    zmq_send(s, NT_TOPIC_SNAPSHOT, strlen(NT_TOPIC_SNAPSHOT), ZMQ_SNDMORE);
    zmq_send(s, buf, n, 0);
    n = nt_comm_encode(&c, json, sizeof json);
    zmq_send(s, NT_TOPIC_COMM, strlen(NT_TOPIC_COMM), ZMQ_SNDMORE);
    zmq_send(s, json, n, 0);
    usleep(100000);
  }
  _exit(0);
}

static void hostile_strings_are_shown_escaped(void) {
  char hdir[] = "/tmp/nccltop-hostile-XXXXXX", henv[64];
  CHECK(mkdtemp(hdir) != NULL);
  snprintf(henv, sizeof henv, "NCCLTOP_DIR=%s", hdir);
  pid_t pub = hostile_publisher(hdir);
  vt_term t;
  char *argv[] = {nccltop, "-d", "200", NULL};
  char *env[] = {henv, NULL};
  bool ok = vt_start(&t, 24, 120, argv, env) == 0 && vt_wait_for(&t, "evil\\x1B[2J", 15) &&
            vt_wait_for(&t, "\\x1B[31mred", 5);
  if (ok && !strstr(t.text, "red\\x1B[0m")) ok = false; /* the whole name, escaped */
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  /* Batch output: JSON escapes are fine, raw control bytes are not. */
  char cmd[PATH_MAX + 256];
  snprintf(cmd, sizeof cmd, "%s -b -n 2 -d 300 --dir %s | grep -c \"$(printf '\\033')\"", nccltop,
           hdir);
  FILE *p = popen(cmd, "r");
  int raw = -1;
  if (p && fscanf(p, "%d", &raw) != 1) raw = -1;
  if (p) pclose(p);
  kill(pub, SIGKILL);
  waitpid(pub, NULL, 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", hdir);
  if (system(cmd) != 0) ok = false;
  CHECK(ok);
  CHECK(raw == 0);
}

int main(void) {
  vt_build_dir(bindir, sizeof bindir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  if (!start_job()) {
    fprintf(stderr, "cannot start the simulated job\n");
    return 1;
  }
  TEST_RUN(views_show_the_job_and_react_to_keys);
  TEST_RUN(ascii_and_no_color_modes_draw_plain_text);
  TEST_RUN(a_tiny_terminal_does_not_crash);
  TEST_RUN(topology_view_and_what_if);
  TEST_RUN(topology_view_compact_at_80_full_at_200);
  TEST_RUN(hostile_strings_are_shown_escaped);
  stop_job();
  return TEST_DONE();
}

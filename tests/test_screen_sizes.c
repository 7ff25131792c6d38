/* Every view of the monitor, in a pseudo-terminal at 80x24 and at 200x60,
 * watching a 1024-rank job of 32 channels each way and 40 NCCL variables
 * (bench/bench_job.h: a ring stalled at rank 77), published by a child
 * process through one --connect endpoint. Each view shows its title in the
 * header on the first line, its own content (the root of the stall, the
 * proxy threads, the channel grid, the collectives, the topology's message,
 * the differing variable, the keys) and the key bar on the last line. */
#include <libgen.h>
#include <limits.h>
#include <zmq.h>

#include "../bench/bench_job.h"
#include "testlib.h"
#include "vterm_harness.h"

static char nccltop[PATH_MAX + 16];
static char dir[] = "/tmp/nccltop-sizes-XXXXXX";
static char endpoint[PATH_MAX + 16];
static pid_t pub = -1;

static bool send_msg(void *s, const char *topic, const void *body, size_t len) {
  return zmq_send(s, topic, strlen(topic), ZMQ_SNDMORE) >= 0 && zmq_send(s, body, len, 0) >= 0;
}

/* The job: every rank's hello and snapshot once a second (the viewer marks
 * a rank stale after a second of silence), for at most two minutes. */
static pid_t job_publisher(void) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  void *z = zmq_ctx_new(), *s = zmq_socket(z, ZMQ_XPUB);
  int hwm = 0; /* keep every message: the viewer reads them all */
  if (!s || zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 || zmq_bind(s, endpoint) != 0)
    _exit(1);
  nt_snapshot *snap = nt_snapshot_new();
  nt_hello *h = malloc(sizeof *h);
  char *json = malloc(1 << 18);
  size_t cap = 1 << 20;
  uint8_t *buf = malloc(cap);
  if (!snap || !h || !json || !buf) _exit(1);
  for (uint64_t round = 1; round <= 120; round++) {
    for (int r = 0; r < RANKS; r++) {
      fill_hello(h, r);
      size_t hl = nt_hello_encode(h, json, 1 << 18);
      fill(snap, r);
      snap->interval_ms = 1000; /* as it publishes: silent (stale) only after 3 s */
      snap->seq = round;
      snap->mono_ns += round * 1000000000ull;
      size_t n = nt_snapshot_encode(snap, buf, cap);
      if (!hl || !n || !send_msg(s, NT_TOPIC_HELLO, json, hl) ||
          !send_msg(s, NT_TOPIC_SNAPSHOT, buf, n))
        _exit(2);
    }
    sleep(1);
  }
  _exit(0);
}

/* The screen's line `row` (0-based), without its newline. */
static const char *line_at(vt_term *t, int row) {
  static char line[1024];
  const char *p = vt_text(t);
  for (int r = 0; r < row && p; r++)
    if ((p = strchr(p, '\n'))) p++;
  size_t n = p ? strcspn(p, "\n") : 0;
  if (n >= sizeof line) n = sizeof line - 1;
  memcpy(line, p ? p : "", n);
  line[n] = '\0';
  return line;
}

/* Waits until line `row` contains `what`. */
static bool line_shows(vt_term *t, int row, const char *what) {
  double end = vt_now() + 10;
  do {
    vt_pump(t, 50);
    if (strstr(line_at(t, row), what)) return true;
  } while (vt_now() < end);
  fprintf(stderr, "    %dx%d: line %d never showed \"%s\"; it is \"%s\"\n", t->cols, t->rows, row,
          what, line_at(t, row));
  return false;
}

/* A view, what it shows first, and after End (and Right to the last
 * channel in the grid): its last row and column ("-TEXT": TEXT, at the
 * top, scrolled away). */
/* Waits until the screen no longer shows `what`. */
static bool gone(vt_term *t, const char *what) {
  double end = vt_now() + 10;
  do {
    vt_pump(t, 50);
    if (!strstr(vt_text(t), what)) return true;
  } while (vt_now() < end);
  fprintf(stderr, "    %dx%d: \"%s\" never went away:\n%s\n", t->cols, t->rows, what, t->text);
  return false;
}

typedef struct {
  const char *keys, *title, *content, *end_keys, *end;
} view_check;

#define END   "\033OF"
#define RIGHT "\033OC"
#define R8    RIGHT RIGHT RIGHT RIGHT RIGHT RIGHT RIGHT RIGHT
static const view_check views[] = {
    {"1", "[overview]", "77/1024", END, "gpu-node-127:11023"},
    {"2", "[proxy threads]", "0/1024", END, "1023/1024"},
    {"3", "[channels]", "ch0", END R8 R8 R8 R8, "ch31"},
    {"4", "[collectives]", "AllReduce", END, "-COMMUNICATOR"},
    {"5", "[topology]", "no topology", NULL, NULL},
    {"6", "[environment]", "NCCL_SETTING_11", END, "NCCL_SETTING_39"},
    {"\033OP", "[help]", "Keys", END, "Bandwidths:"},
};

static bool every_view(int rows, int cols) {
  vt_term t;
  char *argv[] = {nccltop, "-d", "500", "--dir", dir, "--connect", endpoint, NULL};
  bool ok = vt_start(&t, rows, cols, argv, NULL) == 0 && vt_wait_for(&t, "ranks 1024", 60);
  for (size_t i = 0; ok && i < sizeof views / sizeof views[0]; i++) {
    vt_send(&t, views[i].keys);
    ok = line_shows(&t, 0, views[i].title) && vt_wait_for(&t, views[i].content, 10) &&
         line_shows(&t, 0, " nccltop [") && line_shows(&t, rows - 1, "F1Help") &&
         line_shows(&t, rows - 1, "Quit");
    if (ok && views[i].end_keys) {
      vt_send(&t, views[i].end_keys);
      ok = (views[i].end[0] == '-' ? gone(&t, views[i].end + 1)
                                   : vt_wait_for(&t, views[i].end, 10)) &&
           line_shows(&t, rows - 1, "F1Help");
      /* the grid: the last rank too, in the last channel */
      if (ok && !strcmp(views[i].title, "[channels]")) ok = vt_wait_for(&t, "1023/1024", 10);
    }
    if (!ok) fprintf(stderr, "    %dx%d: view %s\n", cols, rows, views[i].title);
  }
  vt_send(&t, "qq"); /* the first closes the help (any key does), the second quits */
  ok = vt_wait_exit(&t, 20) == 0 && ok;
  vt_stop(&t);
  return ok;
}

static void every_view_at_80x24(void) {
  CHECK(every_view(24, 80));
}

static void every_view_at_200x60(void) {
  CHECK(every_view(60, 200));
}

int main(void) {
  char bindir[PATH_MAX];
  vt_build_dir(bindir, sizeof bindir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  if (!mkdtemp(dir)) return 1;
  snprintf(endpoint, sizeof endpoint, "ipc://%s/job.sock", dir);
  pub = job_publisher();
  if (pub < 0) return 1;
  TEST_RUN(every_view_at_80x24);
  TEST_RUN(every_view_at_200x60);
  kill(pub, SIGKILL);
  waitpid(pub, NULL, 0);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return TEST_DONE();
}

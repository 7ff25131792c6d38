/* The simulator plays NCCL faithfully: a recording plugin (tests/fixtures/
 * recorder.c) logs every call, and the order, arguments and gating are
 * checked against how NCCL calls a profiler. Also its option parsing. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "../plugin/nccl_profiler_abi.h"
#include "../sim/sim.h"

static char recorder[PATH_MAX + 32];

typedef struct {
  unsigned long long handle, parent;
  int type, send, stopped_at, line;
  int states[8], nstates, appended, file;
} ev;

static ev evs[20000];
static int nevs;
static char init_line[512];

static int nfiles;

/* Handles are per process: look only among the same log's events. */
static ev *find_in(unsigned long long h, int file) {
  for (int i = nevs - 1; i >= 0; i--)
    if (evs[i].handle == h && evs[i].file == file) return &evs[i];
  return NULL;
}
static ev *find(unsigned long long h) {
  return find_in(h, nfiles);
}
#define PARENT(e) find_in((e)->parent, (e)->file)

/* Reads one rank's log into evs[]. */
static int load(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char l[512];
  int n = 0;
  nfiles++;
  while (fgets(l, sizeof l, f)) {
    n++;
    int type, st, app, send = 0;
    unsigned long long h, p;
    size_t size;
    if (!strncmp(l, "init", 4)) {
      snprintf(init_line, sizeof init_line, "%s", l);
    } else if (sscanf(l, "start %d %llx parent=%llx", &type, &h, &p) == 3 && nevs < 20000) {
      char *s = strstr(l, "send=");
      if (s) send = atoi(s + 5);
      evs[nevs++] =
          (ev){.handle = h, .parent = p, .type = type, .send = send, .line = n, .file = nfiles};
    } else if (sscanf(l, "record %llx %d size=%zu appended=%d", &h, &st, &size, &app) == 4) {
      ev *e = find(h);
      if (e && e->nstates < 8) e->states[e->nstates++] = st;
      if (e && st == NT_ST_CTRL_APPEND_END) e->appended = app;
    } else if (sscanf(l, "stop %llx", &h) == 1) {
      ev *e = find(h);
      if (e) e->stopped_at = n;
    }
  }
  fclose(f);
  return 0;
}

static bool same(const int *a, int na, const int *b, int nb) {
  return na == nb && !memcmp(a, b, (size_t)na * sizeof *a);
}

static int run_recorded(const char *dir, int abi, const char *mask, int channels) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 2;
  c.comms = 1;
  c.channels = channels;
  c.steps = 3;
  c.iterations = 2;
  c.deterministic = true;
  c.abi = abi;
  c.plugin = recorder;
  c.quiet = true;
  setenv("NT_RECORDER_DIR", dir, 1);
  if (mask)
    setenv("NT_RECORDER_MASK", mask, 1);
  else
    unsetenv("NT_RECORDER_MASK");
  int rc = nt_sim_run(&c);
  nevs = 0;
  nfiles = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!strstr(de->d_name, ".log")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    load(path);
    unlink(path);
  }
  if (d) closedir(d);
  return rc;
}

static void event_order_matches_nccl(void) {
  char dir[] = "/tmp/nccltop-rec-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(run_recorded(dir, 5, NULL, 2) == 0);
  rmdir(dir);
  CHECK(strstr(init_line, "init v5 name=sim-comm-0") != NULL);
  CHECK(strstr(init_line, "nranks=2") != NULL);
  static const int send[] = {NT_ST_STEP_SEND_GPU_WAIT, NT_ST_STEP_SEND_PEER_WAIT,
                             NT_ST_STEP_SEND_PEER_WAIT, NT_ST_STEP_SEND_WAIT};
  static const int recv[] = {NT_ST_STEP_RECV_WAIT, NT_ST_STEP_RECV_FLUSH_WAIT,
                             NT_ST_STEP_RECV_GPU_WAIT};
  int steps = 0, ops = 0, appends = 0, sleeps = 0;
  for (int i = 0; i < nevs; i++) {
    ev *e = &evs[i];
    CHECK(e->stopped_at > e->line || e->type == NT_EV_KERNEL_CH);
    if (e->type == NT_EV_PROXY_STEP) {
      ev *op = PARENT(e);
      CHECK(op && op->type == NT_EV_PROXY_OP && op->line < e->line);
      CHECK(op->stopped_at > e->stopped_at); /* steps stop before their op */
      if (op->send)
        CHECK(same(e->states, e->nstates, send, 4));
      else
        CHECK(same(e->states, e->nstates, recv, 3));
      steps++;
    } else if (e->type == NT_EV_PROXY_OP) {
      ev *coll = PARENT(e);
      CHECK(coll && coll->type == NT_EV_COLL && coll->line < e->line);
      CHECK(e->nstates == 1 && e->states[0] == NT_ST_OP_IN_PROGRESS);
      ops++;
    } else if (e->type == NT_EV_PROXY_CTRL) {
      CHECK(e->nstates == 1 || e->nstates == 2);
      if (e->nstates == 2 && e->states[0] == NT_ST_CTRL_APPEND) {
        CHECK(e->states[1] == NT_ST_CTRL_APPEND_END);
        CHECK(e->appended == 4); /* a send and a recv op on each of 2 channels */
        appends++;
      } else if (e->nstates == 2) {
        CHECK(e->states[0] == NT_ST_CTRL_SLEEP && e->states[1] == NT_ST_CTRL_WAKEUP);
        sleeps++;
      } else {
        CHECK(e->states[0] == NT_ST_CTRL_IDLE || e->states[0] == NT_ST_CTRL_ACTIVE);
      }
    } else if (e->type == NT_EV_COLL) {
      ev *api = PARENT(e);
      CHECK(api && api->type == NT_EV_COLL_API); /* v5: Coll's parent is the CollApi event */
    }
  }
  /* 2 ranks x 2 collectives x 2 channels x 2 directions x 3 steps */
  CHECK_EQ_U64(steps, 48);
  CHECK_EQ_U64(ops, 16);
  CHECK_EQ_U64(appends, 4);
  CHECK_EQ_U64(sleeps, 4);
}

static void v4_gets_its_own_init_order_and_no_api_events(void) {
  char dir[] = "/tmp/nccltop-rec-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(run_recorded(dir, 4, NULL, 1) == 0);
  rmdir(dir);
  CHECK(strstr(init_line, "init v4 name=sim-comm-0") != NULL);
  CHECK(strstr(init_line, "nranks=2") != NULL);
  char hash[64];
  snprintf(hash, sizeof hash, "hash=%llx", (unsigned long long)nt_sim_comm_hash(0));
  CHECK(strstr(init_line, hash) != NULL);
  for (int i = 0; i < nevs; i++) {
    CHECK(evs[i].type < NT_EV_GROUP_API);
    if (evs[i].type == NT_EV_COLL) {
      ev *g = PARENT(&evs[i]);
      CHECK(g && g->type == NT_EV_GROUP);
    }
  }
}

static void the_mask_gates_events_as_nccl_does(void) {
  char dir[] = "/tmp/nccltop-rec-XXXXXX", mask[16];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(mask, sizeof mask, "%d", NT_EV_PROXY_OP | NT_EV_PROXY_CTRL);
  CHECK(run_recorded(dir, 5, mask, 1) == 0);
  rmdir(dir);
  int colls = 0, ops = 0;
  for (int i = 0; i < nevs; i++) {
    CHECK(evs[i].type != NT_EV_PROXY_STEP && evs[i].type != NT_EV_KERNEL_CH);
    colls += evs[i].type == NT_EV_COLL; /* asking for ProxyOp brings its ancestors */
    ops += evs[i].type == NT_EV_PROXY_OP;
  }
  CHECK(colls > 0 && ops > 0);
}

static void options_are_parsed_with_ranges(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *ok[] = {"--ranks", "16", "--channels", "32", "--deterministic", "-b"};
  CHECK(nt_sim_parse_args(&c, 6, ok) == 5); /* stops at the viewer's -b */
  CHECK(c.ranks == 16 && c.channels == 32 && c.deterministic && c.iterations == 10);
  char *bad[] = {"--ranks", "0"};
  CHECK(nt_sim_parse_args(&c, 2, bad) == -1);
  char *bad2[] = {"--steps", "12x"};
  CHECK(nt_sim_parse_args(&c, 2, bad2) == -1);
  char *bad3[] = {"--abi", "7"};
  CHECK(nt_sim_parse_args(&c, 2, bad3) == -1);
}

static void expectations_are_the_schedule_arithmetic(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 3, c.channels = 2, c.steps = 4, c.iterations = 5;
  nt_sim_channel_expect e;
  nt_sim_expect_channel(&c, 0, 0, 1, 1, &e);
  CHECK_EQ_U64(e.steps, 20);
  CHECK_EQ_U64(e.peer, 2); /* rank 0 receives from rank 2 in a ring of 3 */
  nt_sim_expect_channel(&c, 2, 0, 1, 0, &e);
  CHECK_EQ_U64(e.peer, 0);
  nt_sim_proxy_expect p;
  nt_sim_expect_proxy(&c, 0, 0, &p);
  CHECK_EQ_U64(p.appended_ops, 5 * 2 * 2);
  CHECK_EQ_U64(p.appends, 5);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", dirname(exe));
  TEST_RUN(options_are_parsed_with_ranges);
  TEST_RUN(expectations_are_the_schedule_arithmetic);
  TEST_RUN(event_order_matches_nccl);
  TEST_RUN(v4_gets_its_own_init_order_and_no_api_events);
  TEST_RUN(the_mask_gates_events_as_nccl_does);
  return TEST_DONE();
}

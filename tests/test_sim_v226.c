/* NCCL 2.26 (profiler ABI v3) as the simulator plays it, under the
 * recording plugin: its op states with a running transSize and step states
 * without arguments, the communicator's identity on its Coll descriptors,
 * a ProxyCtrl start/stop on every progress pass, and the recv stop bug
 * (#1658, V4), whose never-stopped steps the totals still count. The
 * other releases: tests/test_sim_versions.c. */
#include "sim_grammar.h"
#include "../sim/schedule.h"

static const int versions[2] = {226, 227};

static int run_version(int v, rec_opts *o, nt_sim_config *c) {
  config_for(o, c);
  c->nccl_version = v;
  env_for(o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}

static int count_type(int type) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type;
  return n;
}

/* net.cc@v2.26.6-1: ops started at the first pass, op states with a
 * growing transSize, step states without arguments; profiler.cc: the
 * communicator's name and hash on the Coll, and its rank. */
static void v226_plays_its_op_states_and_null_step_args(void) {
  rec_opts o = {.channels = 2, .steps = 3};
  nt_sim_config c;
  CHECK(run_version(226, &o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int ops = 0, ranks = 0;
  for (int j = 0; j < tr.nev; j++) {
    const ev_t *e = &tr.ev[j];
    if (e->type == NT_EV_PROXY_OP) {
      ops++;
      CHECK(!append_burst_around(e));
      CHECK(e->nrec >= 4 * e->steps);
      CHECK_EQ_U64(e->size[e->nrec - 1], sim_det_op_bytes(e->steps)); /* the running total */
      CHECK_EQ_U64(e->states[e->nrec - 1], e->send ? 3 : 7);
    }
    if (e->type == NT_EV_PROXY_STEP)
      for (int r = 0; r < e->nrec; r++) CHECK(e->args[r] == 0);
    if (e->type == NT_EV_COLL) {
      CHECK(e->named && e->chash == nt_sim_comm_hash(0));
      CHECK(e->rank >= 0 && e->rank < 2);
      ranks |= 1 << e->rank;
    }
  }
  CHECK_EQ_U64(ranks, 3); /* eDescr.rank = comm->rank, though init had none */
  CHECK_EQ_U64(ops, 2 * 2 * 2 * 2);
  CHECK_EQ_U64(count_type(NT_EV_GROUP_API), 0);
}

/* proxy.cc@v2.26.6-1 ncclProxyProgress: a ProxyCtrl start/stop on every
 * pass; 2.27 on only starts one for a transition (PR #1662). */
static void v226_starts_a_ctrl_event_on_every_pass(void) {
  for (int i = 0; i < 2; i++) {
    rec_opts o = {.channels = 1, .steps = 2};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    int empty = 0;
    for (int j = 0; j < tr.nev; j++)
      empty += tr.ev[j].type == NT_EV_PROXY_CTRL && tr.ev[j].nrec == 0;
    if (versions[i] == 226)
      CHECK(empty > 2 * 2 * 2 * 4); /* several per step */
    else
      CHECK_EQ_U64(empty, 0);
  }
}

/* #1658: of two recv steps retired in one pass only the first is stopped.
 * The trace shows the never-stopped step; the plugin closes it when its
 * op stops (V4), so the expectations count every step, and the recorded
 * clock agrees. */
static void v226_recv_stop_bug_leaves_one_step_per_op_open(void) {
  rec_opts o = {.channels = 2, .steps = 4, .iterations = 3};
  nt_sim_config c;
  CHECK(run_version(226, &o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  int open = 0;
  for (int j = 0; j < tr.nev; j++) {
    const ev_t *s = &tr.ev[j];
    const ev_t *op = parent_of(s);
    if (s->type != NT_EV_PROXY_STEP || s->stops) continue;
    CHECK(op && !op->send && s->step == op->steps - 1);
    open++;
  }
  CHECK_EQ_U64(open, 2 * 2 * 3); /* ranks x channels x collectives */
  nt_sim_channel_expect e;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_RECV, &e);
  CHECK_EQ_U64(e.steps, 3 * 4);
  /* with one step per op there is never a pair to retire */
  o.steps = 1;
  CHECK(run_version(226, &o, &c) == 0);
  CHECK_STR(totals_problem(&c), "none");
  for (int j = 0; j < tr.nev; j++) CHECK(!tr.ev[j].h || tr.ev[j].stops == 1);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(recorder, sizeof recorder, "%s/../tests/librecorder.so", dirname(exe));
  TEST_RUN(v226_plays_its_op_states_and_null_step_args);
  TEST_RUN(v226_starts_a_ctrl_event_on_every_pass);
  TEST_RUN(v226_recv_stop_bug_leaves_one_step_per_op_open);
  return TEST_DONE();
}

/* The simulator plays NCCL faithfully: a recording plugin (tests/fixtures/
 * recorder.c) logs every call, and the order, threads, arguments and gating
 * are checked against how NCCL 2.28 calls a profiler. The deterministic
 * schedule is re-added from the recorded virtual clock, independently of
 * the simulator, and must give exactly nt_sim_expect_*. Also the options. */
#include "sim_grammar.h"

/* ---- the tests ---- */

static void options_are_parsed_with_ranges(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *ok[] = {"--ranks", "16", "--channels=32", "--deterministic", "--abi", "4", "-b"};
  CHECK(nt_sim_parse_args(&c, 7, ok) == 6); /* stops at the viewer's -b */
  CHECK(c.ranks == 16 && c.channels == 32 && c.deterministic && c.abi == 4);
  CHECK(c.iterations == 10); /* a deterministic run is a fixed number of collectives */
  char *edges[] = {"--ranks", "1024",     "--comms",       "8",        "--steps",
                   "1",       "--linger", "0.5",           "--plugin", "/x.so",
                   "--dir",   "/tmp/d",   "--interval-ms", "50",       "--quiet"};
  CHECK(nt_sim_parse_args(&c, 15, edges) == 15);
  CHECK(c.ranks == 1024 && c.comms == 8 && c.steps == 1 && c.linger_s == 0.5 && c.quiet);
  CHECK_STR(c.plugin, "/x.so");
  CHECK(c.interval_ms == 50);
  static const char *const bad[][2] = {{"--ranks", "0"},
                                       {"--ranks", "1025"},
                                       {"--comms", "9"},
                                       {"--channels", "65"},
                                       {"--steps", "1025"},
                                       {"--steps", "12x"},
                                       {"--abi", "8"},
                                       {"--abi", "2"},
                                       {"--duration", "-1"},
                                       {"--linger", "nan"},
                                       {"--iterations", "-3"},
                                       {"--plugin", ""},
                                       {"--ranks", ""},
                                       {"--interval-ms", "5"},
                                       {"--user-tag", "0"},
                                       {"--user-tag", "-1"},
                                       {"--user-tag", "18446744073709551616"},
                                       {"--user-tag", "7x"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[2] = {(char *)bad[i][0], (char *)bad[i][1]};
    CHECK(nt_sim_parse_args(&c, 2, argv) == -1);
  }
  char *missing[] = {"--steps"};
  CHECK(nt_sim_parse_args(&c, 1, missing) == -1);
  char *novalue[] = {"--quiet=1"};
  CHECK(nt_sim_parse_args(&c, 1, novalue) == -1);
  char *other[] = {"--ranks5"};
  CHECK(nt_sim_parse_args(&c, 1, other) == 0);
}

/* Written out by hand for 2 ranks, 1 channel, 2 steps, 3 collectives. */
static void expectations_are_the_schedule_by_hand(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 2, c.comms = 1, c.channels = 1, c.steps = 2, c.iterations = 3, c.deterministic = true;
  nt_sim_channel_expect e;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &e);
  CHECK_EQ_U64(e.steps, 6);
  CHECK_EQ_U64(e.bytes, 3 * (131072 + 135168));
  CHECK_EQ_U64(e.wait_ns[0], 6000);
  CHECK_EQ_U64(e.wait_ns[1], 12000);
  CHECK_EQ_U64(e.wait_ns[2], 18000);
  CHECK_EQ_U64(e.ops, 3);
  CHECK_EQ_U64(e.peer, 1);
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_RECV, &e);
  CHECK_EQ_U64(e.wait_ns[0], 24000);
  CHECK_EQ_U64(e.wait_ns[1], 3000);
  CHECK_EQ_U64(e.wait_ns[2], 9000);
  CHECK_EQ_U64(e.peer, 1);
  nt_sim_proxy_expect p;
  nt_sim_expect_proxy(&c, 1, 0, &p);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_IDLE], 33000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_ACTIVE], 3 * 2 * 12000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_SLEEP], 15000);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_WAKEUP], 900);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_APPEND], 2100);
  /* + the shutdown's Sleep/Wakeup and Append of no ops */
  CHECK_EQ_U64(p.appends, 4);
  CHECK_EQ_U64(p.appended_ops, 6);
  CHECK_EQ_U64(p.wakeups, 4);
  CHECK(p.final_state == NT_PROXY_IDLE);
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 3);
  CHECK_EQ_U64(ce.kernel_count, 3);
  CHECK_EQ_U64(ce.kernel_busy_ns, 27000);
  /* v3: no SendPeerWait (the plugin times the credit wait from the op's
   * SendRemFifoWait: the same split), no step sizes (the bytes come from
   * the op's running transSize: the same total), no pTimer */
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &e);
  uint64_t bytes = e.bytes;
  CHECK(bytes > 0);
  c.abi = 3;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &e);
  CHECK_EQ_U64(e.wait_ns[0], 6000);
  CHECK_EQ_U64(e.wait_ns[1], 12000);
  CHECK_EQ_U64(e.bytes, bytes);
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.kernel_busy_ns, 0);
  c.iterations = 0; /* the deterministic default */
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 10);
  c.ranks = 3;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_RECV, &e);
  CHECK_EQ_U64(e.peer, 2); /* rank 0 receives from rank 2 in a ring of 3 */
}

static void the_recorded_clock_adds_up_to_the_expectations(void) {
  rec_opts o = {.abi = 5, .comms = 2, .channels = 2, .steps = 3, .iterations = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_EQ_U64(tr.nctx, 4);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  /* the clock was handed over before the first init, the flush after the schedule */
  for (int i = 0; i < tr.npids; i++) {
    CHECK(tr.first_set_clock[i] && tr.first_set_clock[i] < tr.first_init[i]);
    CHECK(tr.flush_line[i] > 0);
  }
}

/* The size of the first record (by line) of op `op`'s steps, and whether
 * it is a SendWait/RecvFlushWait (NCCL sets the size there). */
static unsigned long long first_step_size(const ev_t *op, bool *valid) {
  int best = INT32_MAX;
  unsigned long long size = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type != NT_EV_PROXY_STEP || s->pid != op->pid || s->parent != op->h || !s->nrec ||
        s->rec_line[0] > best)
      continue;
    best = s->rec_line[0];
    size = s->size[0];
    *valid = s->states[0] == NT_ST_STEP_SEND_WAIT || s->states[0] == NT_ST_STEP_RECV_FLUSH_WAIT;
  }
  return size;
}

/* S2, as the real 2.28.9 recordings show it: NCCL reuses a proxy args slot
 * without clearing it, so an op's step records carry the transSize its
 * slot's previous op set last until the op's own first SendWait or
 * RecvFlushWait (the slot here: the channel and direction of the
 * deterministic schedule, whose steps have 128 KiB + 4 KiB x step). */
static void an_ops_first_records_carry_the_previous_ops_size(void) {
  rec_opts o = {.abi = 5, .channels = 2, .steps = 3, .iterations = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int fresh = 0, stale = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *op = &tr.ev[i];
    if (op->type != NT_EV_PROXY_OP) continue;
    bool first = true, valid = false;
    for (int k = 0; k < i && first; k++)
      first = !(tr.ev[k].type == NT_EV_PROXY_OP && tr.ev[k].pid == op->pid &&
                tr.ev[k].ch == op->ch && tr.ev[k].send == op->send);
    unsigned long long size = first_step_size(op, &valid);
    CHECK(!valid);
    if (first) {
      CHECK_EQ_U64(size, 0); /* a slot never used: calloc'd */
      fresh++;
    } else {
      CHECK_EQ_U64(size, 131072 + 4096 * (3 - 1)); /* the previous op's last step */
      stale++;
    }
  }
  CHECK_EQ_U64(fresh, 2 * 2 * 2);
  CHECK_EQ_U64(stale, 2 * 2 * 2 * 2);
}

/* --unnamed: NCCL passes init no name (NULL), as for PyTorch's process
 * groups (every real 2.28.9 recording: name=-), and 2.26 none on its Coll
 * and P2p descriptors; the communicators stay apart by their hash and the
 * totals hold. */
static void unnamed_communicators_get_no_name(void) {
  nt_sim_config c;
  char *argv[] = {"--unnamed", "-b"};
  nt_sim_defaults(&c);
  CHECK(nt_sim_parse_args(&c, 2, argv) == 1 && c.unnamed);
  for (int abi = 3; abi <= 5; abi += 2) {
    rec_opts o = {.abi = abi, .comms = 2, .channels = 2, .steps = 3, .iterations = 2};
    config_for(&o, &c);
    c.unnamed = true;
    env_for(&o);
    CHECK(nt_sim_run(&c) == 0);
    CHECK(load(trace_path) == 0);
    unlink(trace_path);
    CHECK_EQ_U64(tr.nctx, 2 * 2);
    int named = 0;
    for (int i = 0; i < tr.nev; i++) named += tr.ev[i].named;
    CHECK_EQ_U64(named, 0);
    for (int i = 0; i < tr.nctx && abi == 5; i++) /* told apart by their hash */
      CHECK(!tr.ctx[i].named && tr.ctx[i].comm == (tr.ctx[i].hash == nt_sim_comm_hash(1)));
    CHECK_STR(grammar_problem(&c), "none");
    if (abi == 5) CHECK_STR(totals_problem(&c), "none");
  }
}

static void v5_event_order_matches_nccl(void) {
  rec_opts o = {.abi = 5};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int n[16] = {0};
  for (int i = 0; i < tr.nev; i++)
    for (int b = 0; b < 16; b++) n[b] += tr.ev[i].type == 1 << b;
  /* 2 ranks x 2 collectives x 2 channels x 2 directions x 3 steps */
  CHECK_EQ_U64(n[4], 48);
  CHECK_EQ_U64(n[3], 16);
  CHECK_EQ_U64(n[1], 4);  /* Coll */
  CHECK_EQ_U64(n[0], 4);  /* Group: v5 still gets the legacy event */
  CHECK_EQ_U64(n[8], 4);  /* GroupApi */
  CHECK_EQ_U64(n[9], 4);  /* CollApi */
  CHECK_EQ_U64(n[11], 4); /* KernelLaunch */
  CHECK_EQ_U64(n[6], 8);  /* KernelCh */
  for (int i = 0; i < tr.nctx; i++) {
    CHECK(tr.ctx[i].version == 5 && tr.ctx[i].comm == 0 && tr.ctx[i].nranks == 2);
    CHECK(tr.ctx[i].hash == nt_sim_comm_hash(0) && tr.ctx[i].log == 1);
  }
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].type == NT_EV_COLL) CHECK(tr.ev[i].parent && tr.ev[i].pgroup);
}

static void v4_gets_its_own_init_order_and_no_api_events(void) {
  rec_opts o = {.abi = 4, .channels = 1};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_EQ_U64(tr.nctx, 2);
  int ranks_seen = 0;
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    CHECK(x->version == 4 && x->comm == 0 && x->nranks == 2 && x->nnodes == 2 && x->log == 1);
    CHECK(x->hash == nt_sim_comm_hash(0));
    ranks_seen |= 1 << x->rank;
  }
  CHECK(ranks_seen == 3);
  int colls = 0;
  for (int i = 0; i < tr.nev; i++) {
    CHECK(tr.ev[i].type < NT_EV_GROUP_API);
    if (tr.ev[i].type == NT_EV_COLL) {
      const ev_t *g = parent_of(&tr.ev[i]);
      CHECK(g && g->type == NT_EV_GROUP); /* the shim makes the Group the parent */
      colls++;
    }
  }
  CHECK(colls == 4);
}

static void v3_gets_two_argument_init_and_only_its_states(void) {
  rec_opts o = {.abi = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int i = 0; i < tr.nctx; i++) CHECK(tr.ctx[i].version == 3 && tr.ctx[i].log == 0);
  int steps = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    for (int r = 0; r < e->nrec; r++) CHECK(e->states[r] <= NT_ST_CTRL_APPEND_END);
    steps += e->type == NT_EV_PROXY_STEP;
  }
  CHECK_EQ_U64(steps, 48);
}

static inline int count_type(int type) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type;
  return n;
}

static void the_mask_gates_events_as_nccl_does(void) {
  char mask[16];
  snprintf(mask, sizeof mask, "%d", NT_EV_PROXY_OP | NT_EV_PROXY_CTRL);
  rec_opts o = {.abi = 5, .channels = 1, .mask = mask};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_PROXY_STEP) == 0 && count_type(NT_EV_KERNEL_CH) == 0);
  CHECK(count_type(NT_EV_KERNEL_LAUNCH) == 0);
  /* asking for ProxyOp brings its ancestors */
  CHECK(count_type(NT_EV_PROXY_OP) == 8 && count_type(NT_EV_COLL) == 4);
  CHECK(count_type(NT_EV_GROUP) == 4 && count_type(NT_EV_COLL_API) == 4);
  CHECK(count_type(NT_EV_GROUP_API) == 4);
  /* ProxyCtrl alone: no collective events at all */
  snprintf(mask, sizeof mask, "%d", NT_EV_PROXY_CTRL);
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_PROXY_CTRL) > 0 && count_type(NT_EV_PROXY_CTRL) == tr.nev);
}

static void a_mask_change_applies_from_the_next_collective(void) {
  char sw[32];
  /* while collective 0 is enqueued, turn ProxyStep and KernelCh off (and
   * NetPlugin, which would bring ProxyStep back) */
  snprintf(sw, sizeof sw, "0:%d", 0xFFF & ~(NT_EV_PROXY_STEP | NT_EV_KERNEL_CH | NT_EV_NET_PLUGIN));
  rec_opts o = {.abi = 5, .channels = 1, .iterations = 3, .mask_switch = sw};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *op = parent_of(e);
    const ev_t *coll = e->type == NT_EV_PROXY_STEP && op ? parent_of(op) : NULL;
    if (e->type == NT_EV_PROXY_STEP) CHECK(coll && coll->seq == 0);
  }
  CHECK(count_type(NT_EV_PROXY_STEP) == 2 * 2 * 3); /* collective 0 only */
  CHECK(count_type(NT_EV_PROXY_OP) == 2 * 3 * 2);   /* every collective */
}

static void dropped_handles_are_never_used(void) {
  char null_types[16];
  snprintf(null_types, sizeof null_types, "%d", NT_EV_PROXY_OP | NT_EV_COLL_API);
  rec_opts o = {.abi = 5, .null_types = null_types};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none"); /* no record or stop with NULL */
  int steps = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_PROXY_STEP) {
      /* NCCL still starts the steps of a dropped op, with no parent and no states */
      CHECK(e->parent == 0 && e->nrec == 0 && e->stops == 1);
      steps++;
    }
    if (e->type == NT_EV_COLL) CHECK(e->parent == 0 && e->pgroup != 0);
  }
  CHECK_EQ_U64(steps, 48);
}

static void a_declining_plugin_gets_no_more_calls(void) {
  rec_opts o = {.abi = 5, .fail = "1"};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0); /* the job runs on without the plugin */
  CHECK_EQ_U64(tr.nctx, 2);
  CHECK_EQ_U64(tr.nev, 0);
  CHECK_EQ_U64(tr.flush_lines, 0);
  CHECK_EQ_U64(tr.null_calls + tr.unknown_handles, 0);
  for (int i = 0; i < tr.nctx; i++) CHECK(tr.ctx[i].finalizes == 0);
}

/* In real time several steps of an op are in flight at once. */
static inline int max_steps_in_flight(void) {
  int best = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *s = &tr.ev[i];
    if (s->type != NT_EV_PROXY_STEP) continue;
    int n = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *o = &tr.ev[j];
      n += o->type == NT_EV_PROXY_STEP && o->pid == s->pid && o->parent == s->parent &&
           o->line <= s->line && o->stop_line > s->line;
    }
    if (n > best) best = n;
  }
  return best;
}

static void real_time_steps_overlap_and_keep_their_order(void) {
  rec_opts o = {.abi = 6, .realtime = true, .channels = 2, .steps = 4, .iterations = 3};
  nt_sim_config c;
  CHECK(run_recorded(&o, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(tr.ctx[0].version == 6);
  /* 3 operations per communicator: AllGather, AllGather, a Send/Recv pair */
  CHECK(count_type(NT_EV_COLL) == 4);
  CHECK(count_type(NT_EV_P2P) == 4);
  CHECK(max_steps_in_flight() > 1);
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sigterm_drains_and_finalizes(void) {
  rec_opts o = {.abi = 5, .realtime = true, .channels = 2, .steps = 2};
  nt_sim_config c;
  config_for(&o, &c);
  c.iterations = 0; /* until stopped */
  env_for(&o);
  pid_t pid = nt_sim_spawn(&c);
  CHECK(pid > 0);
  /* let it run until it has done some steps */
  for (double end = now_s() + 10; now_s() < end;) {
    load(trace_path);
    if (count_type(NT_EV_PROXY_STEP) > 20) break;
    usleep(20000);
  }
  kill(-pid, SIGTERM);
  int st = -1;
  for (double end = now_s() + 10; now_s() < end;) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    st = -1;
    usleep(10000);
  }
  if (st == -1) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(load(trace_path) == 0);
  unlink(trace_path);
  CHECK(count_type(NT_EV_PROXY_STEP) > 20);
  /* every op and step started was finished, every context finalized */
  CHECK_STR(grammar_problem(&c), "none");
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", dirname(exe));
  TEST_RUN(options_are_parsed_with_ranges);
  TEST_RUN(expectations_are_the_schedule_by_hand);
  TEST_RUN(the_recorded_clock_adds_up_to_the_expectations);
  TEST_RUN(an_ops_first_records_carry_the_previous_ops_size);
  TEST_RUN(unnamed_communicators_get_no_name);
  TEST_RUN(v5_event_order_matches_nccl);
  TEST_RUN(v4_gets_its_own_init_order_and_no_api_events);
  TEST_RUN(v3_gets_two_argument_init_and_only_its_states);
  TEST_RUN(the_mask_gates_events_as_nccl_does);
  TEST_RUN(a_mask_change_applies_from_the_next_collective);
  TEST_RUN(dropped_handles_are_never_used);
  TEST_RUN(a_declining_plugin_gets_no_more_calls);
  TEST_RUN(real_time_steps_overlap_and_keep_their_order);
  TEST_RUN(sigterm_drains_and_finalizes);
  return TEST_DONE();
}

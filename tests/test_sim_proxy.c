/* Issue 9: the proxy-side scenarios of NCCL played by the simulator (see
 * sim/scenario.h): --pxn (sends run in another process's proxy thread with
 * the originating pid, context and parent), --collnet (ProxyOps started
 * with isSend 0 and never stopped, no steps) and --ce (copy-engine
 * collectives: CeColl / CeSync / CeBatch only). Each runs under the
 * recording plugin and is checked against NCCL's grammar (sim_grammar_nccl.h, sim_grammar.h)
 * and the deterministic expectations; hand-altered traces show the grammar
 * still refuses what NCCL never does. (The same through the real plugin and
 * the viewer: test_sim_proxy_e2e.c.) */
#define num   h_num /* the harness's JSON helpers, apart from the trace's */
#define now_s h_now_s
#include "scenario_harness.h"
#undef num
#undef now_s
#include "sim_grammar.h"

#include <fcntl.h>

#include "../sim/scenario.h"
#include "lib/scenario_tweaks.h"

/* ---- running the simulator under the recorder with a scenario ---- */

static char kept[96]; /* the trace of the last run_kept */

/* As run_recorded, with the scenario set, and the trace kept in `kept`. */
static int run_kept(const rec_opts *o, tweak_fn tw, nt_sim_config *c) {
  config_for(o, c);
  tw(c);
  env_for(o);
  int rc = nt_sim_run(c);
  snprintf(kept, sizeof kept, "%s.kept", trace_path);
  if (rename(trace_path, kept) != 0 || load(kept) != 0) rc = -1;
  return rc;
}

static int run_scn(const rec_opts *o, tweak_fn tw, nt_sim_config *c) {
  int rc = run_kept(o, tw, c);
  unlink(kept);
  return rc;
}

static int count_type(int type) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type;
  return n;
}

static const ctx_t *ctx_of_rank(int rank, int comm) {
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].rank == rank && tr.ctx[i].comm == comm) return &tr.ctx[i];
  return NULL;
}

/* Per-process totals (channels, proxy states, communicator) against the
 * expectations, each process's proxy threads counted to their own end
 * (under --pxn the two processes of a pair do different work). */
static const char *per_process_totals(const nt_sim_config *c) {
  for (int i = 0; i < tr.nctx; i++) {
    const ctx_t *x = &tr.ctx[i];
    unsigned long long t_end = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *e = &tr.ev[j];
      if (e->type == NT_EV_PROXY_CTRL && e->pid == x->pid && e->t_stop > t_end) t_end = e->t_stop;
    }
    for (int ch = 0; ch < c->channels; ch++)
      for (int dir = 0; dir < 2; dir++)
        if (channel_totals(c, x, ch, dir)) return why;
    if (proxy_totals(c, x, t_end) || comm_totals(c, x)) return why;
  }
  return "none";
}

/* ---- options and expectations ---- */

static void options_and_the_version_check(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *ok[] = {"--pxn", "--collnet", "--ce", "--ranks", "4", "-b"};
  CHECK(nt_sim_parse_args(&c, 6, ok) == 5);
  CHECK(c.pxn && c.collnet && c.ce && c.ranks == 4);
  char *bad[] = {"--pxn=1"};
  CHECK(nt_sim_parse_args(&c, 1, bad) == -1);
  /* the default release is 2.28: no copy-engine collectives there */
  CHECK(c.nccl_version == 228 && sim_scn_check(&c) == -1);
  c.plugin = recorder;
  c.quiet = true;
  CHECK(nt_sim_run(&c) != 0);
  CHECK(nt_sim_spawn(&c) == -1); /* refused before anything forks */
  c.nccl_version = 229;
  CHECK(sim_scn_check(&c) == 0);
  c.ce = false;
  c.nccl_version = 228;
  CHECK(sim_scn_check(&c) == 0); /* --pxn and --collnet exist on every release */
}

/* `nccltop demo --ce` on 2.28 exits non-zero at once with one line. */
static int run_demo(char *const argv[], double *took, char *err, size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  double t0 = h_now_s();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    close(fds[0]);
    close(fds[1]);
    execv(nccltop, argv);
    _exit(127);
  }
  close(fds[1]);
  int st = pid > 0 ? wait_exit(pid, 10) : -2;
  if (st == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  *took = h_now_s() - t0;
  ssize_t n = read(fds[0], err, cap - 1);
  err[n > 0 ? n : 0] = '\0';
  close(fds[0]);
  return st;
}

static void demo_refuses_ce_before_2_29(void) {
  char err[2048];
  double took = 0;
  char *a[] = {nccltop, "demo", "--ce", "-b", "-n", "1", NULL};
  int st = run_demo(a, &took, err, sizeof err);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0 && took < 5);
  CHECK(strstr(err, "--ce needs NCCL 2.29") != NULL);
  /* with the version option (its branch), still refused quickly */
  char *b[] = {nccltop, "demo", "--ce", "--nccl-version", "2.28", "-b", "-n", "1", NULL};
  st = run_demo(b, &took, err, sizeof err);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0 && took < 5);
}

/* 4 ranks, 1 channel, 2 steps, 6 collectives: by hand. */
static void scenario_expectations_by_hand(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 4, c.channels = 1, c.steps = 2, c.iterations = 6, c.deterministic = true;
  c.pxn = true;
  nt_sim_scn_expect s;
  nt_sim_expect_scenario(&c, 0, &s);
  CHECK_EQ_U64(s.foreign_ops, 6);
  CHECK_EQ_U64(s.foreign_steps, 12);
  CHECK_EQ_U64(s.foreign_bytes, 6 * (131072 + 135168));
  CHECK_EQ_U64(s.proxied_ops, 0);
  nt_sim_expect_scenario(&c, 3, &s);
  CHECK_EQ_U64(s.proxied_ops, 6);
  CHECK_EQ_U64(s.foreign_ops, 0);
  nt_sim_channel_expect ch;
  nt_sim_expect_channel(&c, 3, 0, 0, NT_DIR_SEND, &ch);
  CHECK(ch.ops == 0 && ch.steps == 0 && ch.peer == -1);
  nt_sim_expect_channel(&c, 3, 0, 0, NT_DIR_RECV, &ch);
  CHECK(ch.ops == 6 && ch.steps == 12 && ch.peer == 2);
  nt_sim_proxy_expect p;
  nt_sim_expect_proxy(&c, 2, 0, &p); /* an executor: 6 own and 6 foreign items */
  CHECK_EQ_U64(p.appends, 12 + 1);   /* + the shutdown's Append of no ops */
  CHECK_EQ_U64(p.appended_ops, 6 * 2 + 6);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_ACTIVE], 6 * 2 * 12000 + 6 * 2 * 6000);
  nt_sim_expect_proxy(&c, 1, 0, &p); /* a proxied rank: its receives only */
  CHECK_EQ_U64(p.appended_ops, 6);
  CHECK_EQ_U64(p.state_ns[NT_PROXY_ACTIVE], 6 * 2 * 6000);
  c.pxn = false, c.collnet = true; /* collective 5 is the one odd AllReduce */
  nt_sim_expect_scenario(&c, 0, &s);
  CHECK_EQ_U64(s.collnet_colls, 1);
  CHECK_EQ_U64(s.never_stopped_ops, 2);
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &ch);
  CHECK(ch.ops == 5 && ch.steps == 10);
  CHECK(!strcmp(sim_scn_det_op(&c, 5).algo, "COLLNET_DIRECT"));
  CHECK(!strcmp(sim_scn_det_op(&c, 11).algo, "COLLNET_CHAIN"));
  c.collnet = false, c.ce = true, c.nccl_version = 229; /* AllGathers 0 and 3 */
  nt_sim_expect_scenario(&c, 0, &s);
  CHECK_EQ_U64(s.ce_colls, 2);
  CHECK_EQ_U64(s.ce_syncs, 4);
  CHECK_EQ_U64(s.ce_bytes, 4 * ((32ull << 10) + (64ull << 20)));
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK(ce.colls == 4 && ce.kernel_count == 4);
}

/* ---- --pxn ---- */

static void pxn_ops_run_in_the_pairs_proxy(void) {
  rec_opts o = {.abi = 6, .ranks = 4, .comms = 2, .channels = 2, .steps = 3, .iterations = 3};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_pxn, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(per_process_totals(&c), "none");
  for (int rank = 0; rank < 4; rank++) {
    for (int comm = 0; comm < 2; comm++) {
      const ctx_t *x = ctx_of_rank(rank, comm), *pair = ctx_of_rank(rank ^ 1, comm);
      CHECK(x && pair);
      nt_sim_scn_expect want;
      nt_sim_expect_scenario(&c, rank, &want);
      uint64_t foreign = 0, steps = 0, bytes = 0, own_sends = 0;
      long tid = proxy_tid(x->pid, x);
      for (int i = 0; i < tr.nev; i++) {
        const ev_t *e = &tr.ev[i];
        if (e->type != NT_EV_PROXY_OP || e->pid != x->pid) continue;
        own_sends += e->oppid == x->pid && e->ctx == x->ctx && e->send;
        if (e->oppid != pair->pid || e->ctx != pair->ctx) continue;
        /* the pair's op: its pid, its context, its Coll, on our proxy thread */
        const ev_t *coll = parent_of(e);
        CHECK(coll && coll->pid == pair->pid && coll->type == NT_EV_COLL);
        CHECK(e->send && e->tid == tid && e->stops == 1);
        foreign++;
        for (int j = 0; j < tr.nev; j++) {
          const ev_t *s = &tr.ev[j];
          if (s->type != NT_EV_PROXY_STEP || s->pid != e->pid || s->parent != e->h) continue;
          CHECK(s->ctx == pair->ctx && s->tid == tid);
          steps++;
          for (int r = 0; r < s->nrec; r++)
            if (s->states[r] == NT_ST_STEP_SEND_WAIT) bytes += s->size[r];
        }
      }
      CHECK_EQ_U64(foreign, want.foreign_ops);
      CHECK_EQ_U64(steps, want.foreign_steps);
      CHECK_EQ_U64(bytes, want.foreign_bytes);
      /* a proxied rank's process starts none of its sends itself */
      CHECK_EQ_U64(own_sends, rank % 2 ? 0 : 3 * 2);
    }
  }
}

/* Real time, with the pipeline's Send/Recv pair: the Send P2p of a proxied
 * rank has no proxy child in its own process, only in its pair's. */
static void pxn_real_time_p2p_send_is_proxied(void) {
  rec_opts o = {.abi = 6, .realtime = true, .ranks = 4, .channels = 2, .steps = 4, .iterations = 3};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_pxn, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int sends_of_rank1 = 0, foreign_under_p2p = 0;
  const ctx_t *r1 = ctx_of_rank(1, 0);
  CHECK(r1 != NULL);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_PROXY_OP) continue;
    if (e->pid == r1->pid && e->send) sends_of_rank1++;
    const ev_t *p = parent_of(e);
    if (e->pid != r1->pid && e->oppid == r1->pid && p && p->type == NT_EV_P2P) foreign_under_p2p++;
  }
  CHECK_EQ_U64(sends_of_rank1, 0);
  CHECK_EQ_U64(foreign_under_p2p, 2); /* one per channel */
}

/* Both together in real time, past the PXN ring's 16 entries: an executor
 * holds only work its own rank launched, so no rank waits on another's full
 * queue (this run deadlocked before). Bounded: spawned and waited for. */
static void pxn_with_collnet_in_real_time_finishes(void) {
  rec_opts o = {
      .abi = 6, .realtime = true, .ranks = 4, .channels = 2, .steps = 2, .iterations = 40};
  nt_sim_config c;
  config_for(&o, &c);
  c.pxn = c.collnet = true;
  env_for(&o);
  pid_t pid = nt_sim_spawn(&c);
  CHECK(pid > 0);
  int st = wait_exit(pid, 60);
  if (st == -1) stop_group(&pid);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(load(trace_path) == 0);
  unlink(trace_path);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_COLL) == 4 * (40 - 4)); /* 4 of 40 are the Send/Recv pair */
}

/* ---- --collnet ---- */

static void collnet_ops_are_started_and_never_stopped(void) {
  rec_opts o = {.abi = 6, .ranks = 2, .comms = 1, .channels = 2, .steps = 3, .iterations = 6};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_collnet, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  for (int k = 0; k < tr.nctx; k++) {
    const ctx_t *x = &tr.ctx[k];
    nt_sim_scn_expect want;
    nt_sim_expect_scenario(&c, x->rank, &want);
    uint64_t colls = 0, never = 0, stopped = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (e->pid != x->pid || e->ctx != x->ctx) continue;
      if (e->type == NT_EV_COLL && !strcmp(e->algo, "COLLNET_DIRECT")) {
        colls++;
        CHECK(e->seq == 1); /* the second AllReduce of the communicator */
      }
      if (e->type != NT_EV_PROXY_OP) continue;
      if (!collnet_op(e)) {
        stopped += e->stops == 1;
        continue;
      }
      CHECK(e->stops == 0 && e->nrec == 0 && e->send == 0 && e->peer == c.ranks);
      CHECK(append_burst_around(e) != NULL);
      never++;
    }
    CHECK_EQ_U64(colls, want.collnet_colls);
    CHECK_EQ_U64(never, want.never_stopped_ops);
    CHECK_EQ_U64(stopped, want.ring_colls * 2 * 2);
  }
}

static void collnet_in_real_time(void) {
  rec_opts o = {
      .abi = 5, .realtime = true, .ranks = 2, .channels = 2, .steps = 2, .iterations = 11};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_collnet, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int colls = 0, never = 0;
  for (int i = 0; i < tr.nev; i++) {
    colls += tr.ev[i].type == NT_EV_COLL && !strncmp(tr.ev[i].algo, "COLLNET_", 8);
    never += collnet_op(&tr.ev[i]) && tr.ev[i].stops == 0;
  }
  /* operation 9 of the real-time step is the one odd-indexed AllReduce */
  CHECK_EQ_U64(colls, 2);
  CHECK_EQ_U64(never, 2 * 2 * 2);
}

/* ---- --ce ---- */

static void ce_collectives_have_only_ce_events(void) {
  rec_opts o = {.abi = 6, .ranks = 3, .channels = 2, .steps = 2, .iterations = 6, .mask = "0x7fff"};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_ce, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  for (int k = 0; k < tr.nctx; k++) {
    const ctx_t *x = &tr.ctx[k];
    nt_sim_scn_expect want;
    nt_sim_expect_scenario(&c, x->rank, &want);
    uint64_t n[3] = {0}, bytes = 0, ag_colls = 0, capis = 0, groups = 0, seq = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (e->pid != x->pid || e->ctx != x->ctx) continue;
      capis += e->type == NT_EV_COLL_API;
      groups += e->type == NT_EV_GROUP;
      ag_colls += e->type == NT_EV_COLL && !strcmp(e->func, "AllGather");
      if (e->type == NT_EV_CE_COLL) {
        n[0]++;
        const ev_t *api = parent_of(e);
        CHECK(api && api->type == NT_EV_COLL_API && !strcmp(api->func, "AllGather"));
        CHECK((uint64_t)e->seq == seq); /* the CE sequence number: two syncs each */
        seq += 2;
        CHECK(!strcmp(e->func, "AllGather") && e->intra == 0);
      }
      if (e->type == NT_EV_CE_SYNC) {
        CHECK(e->complete == (int)(n[1] % 2) && e->ceranks == c.ranks);
        n[1]++;
      }
      if (e->type == NT_EV_CE_BATCH) {
        const ev_t *cc = parent_of(e);
        CHECK(cc && e->numops == c.ranks && e->bytes == cc->bytes * (uint64_t)c.ranks);
        bytes += e->bytes;
        n[2]++;
      }
    }
    CHECK_EQ_U64(n[0], want.ce_colls);
    CHECK_EQ_U64(n[1], want.ce_syncs);
    CHECK_EQ_U64(n[2], want.ce_batches);
    CHECK_EQ_U64(bytes, want.ce_bytes);
    CHECK_EQ_U64(ag_colls, 0);
    CHECK_EQ_U64(capis, 6);                  /* every collective has its CollApi */
    CHECK_EQ_U64(groups, 6 - want.ce_colls); /* a CE plan starts no Group */
  }
}

/* The mask gates CE events as NCCL's does; a v5 plugin never sees them. */
static void ce_events_follow_the_mask_and_the_abi(void) {
  rec_opts o = {.abi = 6, .ranks = 2, .channels = 1, .steps = 2, .iterations = 3};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_ce, &c) == 0); /* the recorder's default mask: 0xfff */
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_CE_COLL) == 0 && count_type(NT_EV_COLL_API) == 6);
  o.mask = "0x4fff"; /* CeBatch without CeColl still brings CeColl */
  CHECK(run_scn(&o, tw_ce, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_CE_COLL) == 2 && count_type(NT_EV_CE_BATCH) == 2);
  CHECK(count_type(NT_EV_CE_SYNC) == 0);
  o.abi = 5;
  o.mask = "0x7fff";
  CHECK(run_scn(&o, tw_ce, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_CE_COLL) + count_type(NT_EV_CE_SYNC) + count_type(NT_EV_CE_BATCH) == 0);
  CHECK(count_type(NT_EV_COLL) == 2 * 2);
}

static void ce_in_real_time(void) {
  rec_opts o = {.abi = 6,
                .realtime = true,
                .ranks = 2,
                .channels = 2,
                .steps = 2,
                .iterations = 4,
                .mask = "0x7fff"};
  nt_sim_config c;
  CHECK(run_scn(&o, tw_ce, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  /* operations 0, 1 and 3 of the real-time step are AllGathers */
  CHECK_EQ_U64(count_type(NT_EV_CE_COLL), 2 * 3);
  CHECK_EQ_U64(count_type(NT_EV_CE_SYNC), 2 * 3 * 2);
  CHECK_EQ_U64(count_type(NT_EV_COLL), 0);
  CHECK_EQ_U64(count_type(NT_EV_P2P), 2 * 2);
}

/* ---- what the grammar still refuses: hand-altered traces ---- */

static char lines[MAX_EV * 2][512];
static int nlines;

static bool read_kept(void) {
  FILE *f = fopen(kept, "r");
  nlines = 0;
  while (f && nlines < MAX_EV * 2 && fgets(lines[nlines], sizeof lines[0], f)) nlines++;
  if (f) fclose(f);
  return f != NULL;
}

/* Writes the kept trace with line `n` (1-based) replaced by `repl` (NULL:
 * removed), lines added after it (`insert`) and line `drop` left out,
 * loads it and returns what the grammar says. */
static const char *altered_drop(const nt_sim_config *c, int n, const char *repl, const char *insert,
                                int drop) {
  char path[128];
  snprintf(path, sizeof path, "%s.bad", kept);
  FILE *f = fopen(path, "w");
  if (!f) return "cannot write";
  for (int i = 0; i < nlines; i++) {
    if (i + 1 == drop) continue;
    if (i + 1 != n)
      fputs(lines[i], f);
    else if (repl)
      fputs(repl, f);
    if (i + 1 == n && insert) fputs(insert, f);
  }
  fclose(f);
  int rc = load(path);
  unlink(path);
  const char *r = rc ? "cannot load" : grammar_problem(c);
  if (getenv("NT_TEST_VERBOSE")) fprintf(stderr, "    altered line %d: %s\n", n, r);
  return r;
}

static const char *altered(const nt_sim_config *c, int n, const char *repl, const char *insert) {
  return altered_drop(c, n, repl, insert, 0);
}

static bool is_foreign_op(const ev_t *e) {
  return e->type == NT_EV_PROXY_OP && e->oppid != e->pid;
}
static bool is_collnet_op(const ev_t *e) {
  return collnet_op(e);
}
static bool is_ring_op(const ev_t *e) {
  return e->type == NT_EV_PROXY_OP && !collnet_op(e);
}
static bool is_ce_sync(const ev_t *e) {
  return e->type == NT_EV_CE_SYNC;
}
static bool is_ce_coll(const ev_t *e) {
  return e->type == NT_EV_CE_COLL;
}

static void grammar_refuses_bad_foreign_ops(void) {
  rec_opts o = {.abi = 6, .ranks = 2, .channels = 1, .steps = 2, .iterations = 2};
  nt_sim_config c;
  CHECK(run_kept(&o, tw_pxn, &c) == 0 && read_kept());
  CHECK_STR(grammar_problem(&c), "none");
  const ev_t *f = first_event(is_foreign_op);
  CHECK(f != NULL);
  int line = f->line, pid = f->pid;
  long tid = f->tid;
  char buf[64];
  /* the originating process's context, but not its own process's */
  const ctx_t *exec = NULL;
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].pid == pid) exec = &tr.ctx[i];
  CHECK(exec != NULL);
  snprintf(buf, sizeof buf, "0x%llx", exec->ctx);
  CHECK(strcmp(altered(&c, line, with_value(lines[line - 1], "ctx=", buf), NULL), "none"));
  /* a parent that is no Coll of the originating process */
  CHECK(strcmp(altered(&c, line, with_value(lines[line - 1], "parent=", "0x1"), NULL), "none"));
  /* a receive run by another process */
  CHECK(strcmp(altered(&c, line, with_value(lines[line - 1], "send=", "0"), NULL), "none"));
  /* on another thread than the executor's proxy thread */
  snprintf(buf, sizeof buf, "%d %ld ", pid, tid + 100000);
  char moved[600];
  const char *rest = strchr(strchr(lines[line - 1], ' ') + 1, ' ') + 1;
  snprintf(moved, sizeof moved, "%s%s", buf, rest);
  CHECK(strcmp(altered(&c, line, moved, NULL), "none"));
  /* a pid of no process of the job */
  CHECK(strcmp(altered(&c, line, with_value(lines[line - 1], " pid=", "1"), NULL), "none"));
  unlink(kept);
}

static void grammar_refuses_bad_collnet_ops(void) {
  rec_opts o = {.abi = 6, .ranks = 2, .channels = 1, .steps = 2, .iterations = 6};
  nt_sim_config c;
  CHECK(run_kept(&o, tw_collnet, &c) == 0 && read_kept());
  CHECK_STR(grammar_problem(&c), "none");
  const ev_t *cn = first_event(is_collnet_op), *ring = first_event(is_ring_op);
  CHECK(cn && ring);
  int cl = cn->line, rl = ring->stop_line;
  char stop[128], rec[160], step[300];
  snprintf(stop, sizeof stop, "%d %ld %llu stop h=0x%llx\n", cn->pid, cn->tid, cn->t, cn->h);
  snprintf(rec, sizeof rec,
           "%d %ld %llu record h=0x%llx state=19 args=1 size=0 appended=0 ptimer=0\n", cn->pid,
           cn->tid, cn->t, cn->h);
  snprintf(step, sizeof step,
           "%d %ld %llu start 16 h=0x7777777 ctx=0x%llx parent=0x%llx rank=0 step=0\n"
           "%d %ld %llu stop h=0x7777777\n",
           cn->pid, cn->tid, cn->t, cn->ctx, cn->h, cn->pid, cn->tid, cn->t);
  /* a ring op NCCL's net transport never stopped */
  CHECK(strcmp(altered(&c, rl, NULL, NULL), "none"));
  /* a CollNet op that says isSend 1, or another peer than CollNet's */
  CHECK(strcmp(altered(&c, cl, with_value(lines[cl - 1], "send=", "1"), NULL), "none"));
  CHECK(strcmp(altered(&c, cl, with_value(lines[cl - 1], "peer=", "1"), NULL), "none"));
  /* a CollNet op that is stopped, gets InProgress, or has a step */
  CHECK(strcmp(altered(&c, cl, lines[cl - 1], stop), "none"));
  CHECK(strcmp(altered(&c, cl, lines[cl - 1], rec), "none"));
  CHECK(strcmp(altered(&c, cl, lines[cl - 1], step), "none"));
  unlink(kept);
}

static void grammar_refuses_bad_ce_events(void) {
  rec_opts o = {.abi = 6, .ranks = 2, .channels = 1, .steps = 2, .iterations = 3, .mask = "0x7fff"};
  nt_sim_config c;
  CHECK(run_kept(&o, tw_ce, &c) == 0 && read_kept());
  CHECK_STR(grammar_problem(&c), "none");
  const ev_t *sync = first_event(is_ce_sync), *coll = first_event(is_ce_coll);
  CHECK(sync && coll);
  int sl = sync->line, cl = coll->line, stop_line = coll->stop_line;
  char stop[600];
  snprintf(stop, sizeof stop, "%s", lines[stop_line - 1]);
  char buf[64], rec[160];
  /* a CeSync outside its CeColl: parented to the CollApi */
  snprintf(buf, sizeof buf, "0x%llx", coll->parent);
  CHECK(strcmp(altered(&c, sl, with_value(lines[sl - 1], "parent=", buf), NULL), "none"));
  /* a CeColl under no CollApi, or with a state */
  CHECK(strcmp(altered(&c, cl, with_value(lines[cl - 1], "parent=", "0x2"), NULL), "none"));
  snprintf(rec, sizeof rec,
           "%d %ld %llu record h=0x%llx state=22 args=1 size=0 appended=0 ptimer=0\n", coll->pid,
           coll->tid, coll->t, coll->h);
  CHECK(strcmp(altered(&c, cl, lines[cl - 1], rec), "none"));
  /* the CeColl stopped before its children */
  CHECK(strcmp(altered_drop(&c, cl, lines[cl - 1], stop, stop_line), "none"));
  /* CE events to a v5 plugin */
  for (int i = 0; i < nlines; i++) {
    char *v = strstr(lines[i], " init v6 ");
    if (v) v[7] = '5';
  }
  CHECK(strcmp(altered(&c, 0, NULL, NULL), "none"));
  unlink(kept);
}

int main(void) {
  scenario_init();
  snprintf(recorder, sizeof recorder, "%s/tests/librecorder.so", bindir);
  TEST_RUN(options_and_the_version_check);
  TEST_RUN(demo_refuses_ce_before_2_29);
  TEST_RUN(scenario_expectations_by_hand);
  TEST_RUN(pxn_ops_run_in_the_pairs_proxy);
  TEST_RUN(pxn_real_time_p2p_send_is_proxied);
  TEST_RUN(pxn_with_collnet_in_real_time_finishes);
  TEST_RUN(collnet_ops_are_started_and_never_stopped);
  TEST_RUN(collnet_in_real_time);
  TEST_RUN(ce_collectives_have_only_ce_events);
  TEST_RUN(ce_events_follow_the_mask_and_the_abi);
  TEST_RUN(ce_in_real_time);
  TEST_RUN(grammar_refuses_bad_foreign_ops);
  TEST_RUN(grammar_refuses_bad_collnet_ops);
  TEST_RUN(grammar_refuses_bad_ce_events);
  return TEST_DONE();
}

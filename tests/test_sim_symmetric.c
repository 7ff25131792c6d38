/* --symmetric: communicator 0's AllReduce, AllGather and ReduceScatter run
 * as NCCL's symmetric kernels, and each release reports them as its source
 * does (sim/symmetric.h, docs/NCCL-BEHAVIOUR.md O4): 2.31 a Coll with
 * isSymColl, the kernel variant, algo = the variant's suffix, proto "",
 * KernelCh on channels 0 .. nChannels-1 of the plan's first task and no
 * proxy op; 2.27 .. 2.30 no Group, Coll, KernelLaunch or KernelCh for them;
 * 2.26 has none (refused). Runs the simulator in real time under the
 * recording plugin and checks the trace with the ABI grammar
 * (tests/sim_grammar_nccl.h symmetric_nccl_problem, sym_child_problem; tests/sim_grammar.h
 * sim_symmetric_problem). */
#include <signal.h>
#include <sys/wait.h>

#include "sim_grammar.h"
#include "../sim/symmetric.h"

static char bindir[PATH_MAX];

/* Everything but ProxyStep and the CE and net events. */
#define MASK_ALL  "0x8f6f"
#define MASK_COLL "0x2" /* Coll only: no KernelCh */

static int run_sym(int v, const char *lib, const char *mask, int iterations, nt_sim_config *c) {
  snprintf(recorder, sizeof recorder, "%s/tests/%s", bindir, lib);
  /* One training step of the real-time schedule: AllGather x 3, a Send/Recv
   * pair, ReduceScatter x 3, AllReduce x 4; communicator 1 plays the ring. */
  rec_opts o = {.realtime = true,
                .comms = 2,
                .channels = 3,
                .steps = 1,
                .iterations = iterations,
                .mask = mask};
  config_for(&o, c);
  c->nccl_version = v;
  c->symmetric = true;
  env_for(&o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}

static int comm_of(const ev_t *e) {
  const ctx_t *x = ctx_of(e->pid, e->ctx);
  return x ? x->comm : -1;
}

static int count_comm(int type, int comm) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type && comm_of(&tr.ev[i]) == comm;
  return n;
}

/* The bytes of a Coll (AllGather counts bytes of ncclInt8, the others
 * ncclFloat32 elements). */
static uint64_t coll_bytes(const ev_t *e) {
  return e->int8 ? (uint64_t)e->count : (uint64_t)e->count * 4;
}

static void the_option_and_what_it_cannot_run_with(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *argv[] = {"--symmetric", "--nccl-version", "2.31"};
  CHECK(nt_sim_parse_args(&c, 3, argv) == 3);
  CHECK(c.symmetric);
  CHECK(sim_version_check(&c) == NULL);
  char *bad[] = {"--symmetric=1"};
  CHECK(nt_sim_parse_args(&c, 1, bad) == -1);
  /* 2.26 has no symmetric kernels. */
  c.nccl_version = 226;
  CHECK(sim_version_check(&c) != NULL);
  CHECK(nt_sim_run(&c) != 0);
  c.nccl_version = 227;
  CHECK(sim_version_check(&c) == NULL);
  /* Only communicator 0, only its three functions, only from 2.27 on. */
  CHECK(sim_sym_op(&c, 0, "AllReduce") && sim_sym_op(&c, 0, "AllGather") &&
        sim_sym_op(&c, 0, "ReduceScatter"));
  CHECK(!sim_sym_op(&c, 1, "AllReduce") && !sim_sym_op(&c, 0, "Send") &&
        !sim_sym_op(&c, 0, "Broadcast") && !sim_sym_op(&c, 0, "AlltoAll"));
  c.symmetric = false;
  CHECK(!sim_sym_op(&c, 0, "AllReduce"));
  /* The variants: LL below 64 KiB, load/store from there. */
  CHECK_STR(sim_sym_variant("AllReduce", 65535), "AllReduce_AGxLL_R");
  CHECK_STR(sim_sym_variant("AllReduce", 65536), "AllReduce_RSxLD_AGxST");
  CHECK_STR(sim_sym_variant("AllGather", 8192), "AllGather_LL");
  CHECK_STR(sim_sym_variant("AllGather", 1 << 22), "AllGather_ST");
  CHECK_STR(sim_sym_variant("ReduceScatter", 8192), "ReduceScatter_LL");
  CHECK_STR(sim_sym_variant("ReduceScatter", 1 << 22), "ReduceScatter_LD");
  CHECK_STR(sim_sym_algo("AllReduce_RSxLD_AGxST"), "RSxLD_AGxST");
  CHECK_STR(sim_sym_algo("AllGather_LL"), "LL");
  /* What it cannot run with: one line and a refusal each. */
  static const char *const refused[][3] = {
      {"--deterministic", NULL, NULL}, {"--nodes", "2", NULL},  {"--pxn", NULL, NULL},
      {"--collnet", NULL, NULL},       {"--graph", NULL, NULL}, {"--ce", NULL, NULL}};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    nt_sim_defaults(&c);
    c.plugin = "/nonexistent/plugin.so"; /* never reached */
    c.quiet = true;
    c.ranks = 2;
    char *args[3] = {"--symmetric", "--nccl-version", "2.31"};
    CHECK(nt_sim_parse_args(&c, 3, args) == 3);
    char *more[2] = {(char *)refused[i][0], (char *)refused[i][1]};
    int nmore = refused[i][1] ? 2 : 1;
    CHECK(nt_sim_parse_args(&c, nmore, more) == nmore);
    CHECK(nt_sim_run(&c) != 0);
  }
}

/* 2.31 with a v7 plugin: every AllReduce, AllGather and ReduceScatter of
 * communicator 0 is a symmetric Coll with the variant its size picks, its
 * plan's channels in nChannels, KernelCh (and KernelPhase) on channels
 * 0 .. n-1 and no proxy op; communicator 1 and the Send/Recv pair keep the
 * ring's events. */
static void v231_reports_symmetric_colls_with_their_variants(void) {
  nt_sim_config c;
  CHECK(run_sym(231, "librecorder7.so", MASK_ALL, 11, &c) == 0);
  for (int k = 0; k < tr.nctx; k++) CHECK_EQ_U64(tr.ctx[k].version, 7);
  CHECK_STR(grammar_problem(&c), "none");
  int sym = 0, ring = 0, ll = 0, ld = 0, heads = 0, wrong = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_COLL) continue;
    if (comm_of(e) == 1) {
      ring++;
      wrong += e->sym != 0 || strcmp(e->variant, "-") || !e->proto[0];
      continue;
    }
    sym++;
    const char *want = sim_sym_variant(e->func, coll_bytes(e));
    /* the grouped ReduceScatters are never LL, and they are large anyway */
    wrong += e->sym != 1 || strcmp(e->variant, want) || strcmp(e->algo, sim_sym_algo(want)) ||
             e->proto[0] || (e->nch != c.channels && e->nch != 0);
    heads += e->nch == c.channels;
    ll += strstr(e->variant, "LL") != NULL;
    ld += strstr(e->variant, "LL") == NULL;
    int kch = 0, ops = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *f = &tr.ev[j];
      if (f->pid != e->pid || f->parent != e->h) continue;
      kch += f->type == NT_EV_KERNEL_CH;
      ops += f->type == NT_EV_PROXY_OP;
    }
    wrong += kch != e->nch || ops != 0;
  }
  CHECK_EQ_U64(wrong, 0);
  CHECK_EQ_U64(sym, 2 * 10);  /* 2 ranks x the 10 collectives of the step */
  CHECK_EQ_U64(heads, 2 * 9); /* the second grouped ReduceScatter is no plan's first */
  CHECK_EQ_U64(ring, 2 * 10);
  CHECK(ll > 0 && ld > 0); /* the optimizer's small AllReduces and the rest */
  /* The Send/Recv pair still has its proxy ops; the symmetric ones none. */
  CHECK_EQ_U64(count_comm(NT_EV_PROXY_OP, 0), 2 * 2 * 3);
  CHECK(count_comm(NT_EV_KERNEL_PHASE, 0) > 0);
  /* GroupApi, CollApi, KernelLaunch and Group as for any collective (one
   * for the two grouped ReduceScatters). */
  CHECK_EQ_U64(count_comm(NT_EV_GROUP_API, 0), 2 * 10);
  CHECK_EQ_U64(count_comm(NT_EV_GROUP, 0), 2 * 10);
  CHECK_EQ_U64(count_comm(NT_EV_KERNEL_LAUNCH, 0), 2 * 10);
  CHECK_EQ_U64(count_comm(NT_EV_COLL_API, 0), 2 * 10);
  /* NCCL posts nothing to the proxy for a symmetric kernel: communicator
   * 0's proxy threads wake and append only for the Send/Recv pair (and at
   * shutdown), where communicator 1's do so for every collective. */
  int sleeps[2] = {0, 0}, appends[2] = {0, 0};
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    int k = comm_of(e);
    if (e->type != NT_EV_PROXY_CTRL || e->nrec != 2 || k < 0 || k > 1) continue;
    sleeps[k] += e->states[0] == NT_ST_CTRL_SLEEP;
    appends[k] += e->states[0] == NT_ST_CTRL_APPEND;
  }
  CHECK(sleeps[0] <= 2 * 3);
  CHECK_EQ_U64(appends[0], 2 * 2);
  CHECK(appends[1] > 2 * 2);
}

/* The step's two backward ReduceScatters in one group: one plan, one
 * kernel. 2.31: one GroupApi with two CollApi, one KernelLaunch and Group,
 * two Colls with the same non-LL variant, the first with the plan's
 * channels and every KernelCh, the second with nChannels 0 and none. */
static void v231_grouped_collectives_share_one_plan(void) {
  nt_sim_config c;
  CHECK(run_sym(231, "librecorder7.so", MASK_ALL, 6, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int pairs = 0, wrong = 0;
  for (int i = 0; i + 1 < tr.nev; i++) {
    const ev_t *a = &tr.ev[i];
    if (a->type != NT_EV_COLL || strcmp(a->func, "ReduceScatter") || comm_of(a) != 0) continue;
    const ev_t *b = NULL;
    for (int j = i + 1; j < tr.nev && !b; j++)
      if (tr.ev[j].type == NT_EV_COLL && tr.ev[j].pid == a->pid && tr.ev[j].ctx == a->ctx)
        b = &tr.ev[j];
    if (!b || b->pgroup != a->pgroup || strcmp(b->func, "ReduceScatter")) continue;
    pairs++;
    const ev_t *ga = parent_of(a), *gb = parent_of(b);
    int kch_a = 0, kch_b = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *f = &tr.ev[j];
      if (f->type != NT_EV_KERNEL_CH || f->pid != a->pid) continue;
      kch_a += f->parent == a->h;
      kch_b += f->parent == b->h;
    }
    wrong += strcmp(a->variant, "ReduceScatter_LD") || strcmp(b->variant, "ReduceScatter_LD") ||
             a->nch != c.channels || b->nch != 0 || kch_a != c.channels || kch_b != 0 || !ga ||
             !gb || ga->parent != gb->parent || b->seq != a->seq + 1;
  }
  CHECK_EQ_U64(pairs, 2); /* one per rank */
  CHECK_EQ_U64(wrong, 0);
  /* 6 operations, 5 groups: GroupApi, KernelLaunch and Group once each. */
  CHECK_EQ_U64(count_comm(NT_EV_GROUP_API, 0), 2 * 5);
  CHECK_EQ_U64(count_comm(NT_EV_KERNEL_LAUNCH, 0), 2 * 5);
  CHECK_EQ_U64(count_comm(NT_EV_GROUP, 0), 2 * 5);
  CHECK_EQ_U64(count_comm(NT_EV_COLL_API, 0), 2 * 5);
}

/* Without KernelCh in the mask the plan's first task advertises no
 * channels (ct->nChannels stays 0) and there are no kernel events. */
static void v231_without_kernel_ch_has_no_channels(void) {
  nt_sim_config c;
  CHECK(run_sym(231, "librecorder7.so", MASK_COLL, 6, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  int sym = 0, wrong = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_COLL || comm_of(e) != 0) continue;
    sym++;
    wrong += e->sym != 1 || e->nch != 0;
  }
  CHECK_EQ_U64(sym, 2 * 5);
  CHECK_EQ_U64(wrong, 0);
  CHECK_EQ_U64(count_comm(NT_EV_KERNEL_CH, 0) + count_comm(NT_EV_KERNEL_CH, 1), 0);
}

/* 2.31 with a v6 plugin (its shim): no isSymColl or kernelVariant, but the
 * same algo (the variant's suffix) and empty proto. */
static void v231_through_the_v6_shim_keeps_algo_and_empty_proto(void) {
  nt_sim_config c;
  CHECK(run_sym(231, "librecorder.so", MASK_ALL, 11, &c) == 0);
  for (int k = 0; k < tr.nctx; k++) CHECK_EQ_U64(tr.ctx[k].version, 6);
  CHECK_STR(grammar_problem(&c), "none");
  int sym = 0, wrong = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_COLL || comm_of(e) != 0) continue;
    sym++;
    const char *want = sim_sym_variant(e->func, coll_bytes(e));
    wrong += e->sym != -1 || strcmp(e->algo, sim_sym_algo(want)) || e->proto[0];
  }
  CHECK_EQ_U64(sym, 2 * 10);
  CHECK_EQ_U64(wrong, 0);
  CHECK_EQ_U64(count_comm(NT_EV_PROXY_OP, 0), 2 * 2 * 3);
  CHECK(count_comm(NT_EV_KERNEL_CH, 0) > 0);
}

/* 2.27 .. 2.30: the plan of a symmetric collective has no task, so it gets
 * no Group, Coll, KernelLaunch, KernelCh or proxy op; 2.28+ still give the
 * API side (GroupApi, CollApi). Only the Send/Recv pair is seen. */
static void v227_to_v230_report_no_coll_for_them(void) {
  for (int v = 227; v <= 230; v++) {
    nt_sim_config c;
    CHECK(run_sym(v, "librecorder.so", MASK_ALL, 11, &c) == 0);
    const char *g = grammar_problem(&c);
    if (strcmp(g, "none")) fprintf(stderr, "    NCCL 2.%d: %s\n", v - 200, g);
    CHECK_STR(g, "none");
    CHECK_EQ_U64(count_comm(NT_EV_COLL, 0), 0);
    CHECK_EQ_U64(count_comm(NT_EV_COLL, 1), 2 * 10); /* the ring communicator */
    CHECK_EQ_U64(count_comm(NT_EV_P2P, 0), 2 * 2);
    CHECK_EQ_U64(count_comm(NT_EV_GROUP, 0), 2); /* the Send/Recv pair's */
    CHECK_EQ_U64(count_comm(NT_EV_PROXY_OP, 0), 2 * 2 * 3);
    int kch = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      const ev_t *p = parent_of(e);
      kch += e->type == NT_EV_KERNEL_CH && comm_of(e) == 0 && (!p || p->type != NT_EV_P2P);
    }
    CHECK_EQ_U64(kch, 0);
    if (v >= 228) {
      CHECK_EQ_U64(count_comm(NT_EV_GROUP_API, 0), 2 * 10); /* the ReduceScatters grouped */
      CHECK_EQ_U64(count_comm(NT_EV_COLL_API, 0), 2 * 10);
      CHECK_EQ_U64(count_comm(NT_EV_KERNEL_LAUNCH, 0), 2); /* the pair's only */
    } else {
      CHECK_EQ_U64(count_comm(NT_EV_GROUP_API, 0), 0); /* v4: no API events */
    }
  }
}

/* The grammar's symmetric rules can fail: a 2.31 trace is wrong for 2.30,
 * for a run without --symmetric, with a ProxyOp or an out-of-range
 * KernelCh under a symmetric Coll, or with an algo that is not the
 * variant's suffix. */
static void the_grammar_rejects_wrong_symmetric_traces(void) {
  nt_sim_config c;
  CHECK(run_sym(231, "librecorder7.so", MASK_ALL, 11, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  c.nccl_version = 230;
  CHECK(strstr(grammar_problem(&c), "2.30 reported a symmetric") != NULL);
  c.nccl_version = 231;
  c.symmetric = false;
  CHECK(strstr(grammar_problem(&c), "symmetric 1, expected 0") != NULL);
  c.symmetric = true;
  ev_t *sym = NULL, *op = NULL, *kch = NULL;
  for (int i = 0; i < tr.nev; i++) {
    ev_t *e = &tr.ev[i];
    if (!sym && e->type == NT_EV_COLL && e->sym == 1) sym = e;
    if (sym && !op && e->type == NT_EV_PROXY_OP && e->pid == sym->pid && e->line > sym->line)
      op = e;
    if (sym && !kch && e->type == NT_EV_KERNEL_CH && e->parent == sym->h && e->pid == sym->pid)
      kch = e;
  }
  CHECK(sym && op && kch);
  if (!sym || !op || !kch) return;
  unsigned long long parent = op->parent;
  op->parent = sym->h;
  CHECK(strstr(grammar_problem(&c), "under a symmetric Coll") != NULL);
  op->parent = parent;
  int ch = kch->ch;
  kch->ch = sym->nch;
  CHECK(strstr(grammar_problem(&c), "under a symmetric Coll with nChannels") != NULL);
  kch->ch = ch;
  int nch = sym->nch;
  sym->nch = 0; /* a task that is not the plan's first has no KernelCh */
  CHECK(strstr(grammar_problem(&c), "under a symmetric Coll with nChannels 0") != NULL);
  sym->nch = nch;
  /* the grouped ReduceScatters: the second may neither advertise channels
   * nor run another kernel */
  ev_t *second = NULL;
  for (int i = 0; i < tr.nev && !second; i++) {
    ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_COLL && e->sym == 1 && e->nch == 0 && e->pgroup) second = e;
  }
  CHECK(second != NULL);
  if (!second) return;
  second->nch = (int)c.channels;
  CHECK(strstr(grammar_problem(&c), "not its plan's first task") != NULL);
  second->nch = 0;
  char variant[sizeof second->variant], salgo[sizeof second->algo];
  memcpy(variant, second->variant, sizeof variant);
  memcpy(salgo, second->algo, sizeof salgo);
  snprintf(second->variant, sizeof second->variant, "ReduceScatter_LL");
  snprintf(second->algo, sizeof second->algo, "LL");
  CHECK(strstr(grammar_problem(&c), "in a plan of ReduceScatter_LD") != NULL);
  memcpy(second->variant, variant, sizeof variant);
  memcpy(second->algo, salgo, sizeof salgo);
  char algo[sizeof sym->algo];
  memcpy(algo, sym->algo, sizeof algo);
  snprintf(sym->algo, sizeof sym->algo, "RING");
  CHECK(strstr(grammar_problem(&c), ": algo RING, variant") != NULL);
  memcpy(sym->algo, algo, sizeof algo);
  snprintf(sym->proto, sizeof sym->proto, "LL");
  CHECK(strstr(grammar_problem(&c), ": proto LL") != NULL);
  sym->proto[0] = '\0';
  CHECK_STR(grammar_problem(&c), "none");
}

static void kill_group(int sig) {
  (void)sig;
  kill(0, SIGKILL);
}

/* A rank whose CPU runs ahead fills every slot of its proxy with
 * symmetric kernels that wait for the other rank's launches, with a
 * Send/Recv pair queued behind them: the kernels must still run (they
 * come first on the stream), or the job hangs. One communicator, enough
 * steps to fill the queue many times; the run must end by itself (a
 * child with a 90 s alarm). */
static void a_full_queue_of_symmetric_kernels_does_not_hang(void) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    /* Its own process group, so that a hang kills the ranks it started too. */
    setpgid(0, 0);
    signal(SIGALRM, kill_group);
    alarm(90);
    snprintf(recorder, sizeof recorder, "%s/tests/librecorder7.so", bindir);
    rec_opts o = {.realtime = true,
                  .comms = 1,
                  .channels = 2,
                  .steps = 1,
                  .iterations = 200,
                  .mask = MASK_COLL};
    nt_sim_config c;
    config_for(&o, &c);
    c.nccl_version = 231;
    c.symmetric = true;
    env_for(&o);
    int rc = nt_sim_run(&c);
    unlink(trace_path);
    _exit(rc == 0 ? 0 : 1);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  kill(-pid, SIGKILL); /* whatever is left of it */
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  TEST_RUN(the_option_and_what_it_cannot_run_with);
  TEST_RUN(v231_reports_symmetric_colls_with_their_variants);
  TEST_RUN(v231_grouped_collectives_share_one_plan);
  TEST_RUN(v231_without_kernel_ch_has_no_channels);
  TEST_RUN(v231_through_the_v6_shim_keeps_algo_and_empty_proto);
  TEST_RUN(v227_to_v230_report_no_coll_for_them);
  TEST_RUN(the_grammar_rejects_wrong_symmetric_traces);
  TEST_RUN(a_full_queue_of_symmetric_kernels_does_not_hang);
  return TEST_DONE();
}

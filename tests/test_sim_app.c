/* Issue 9, the application-side scenarios, recorded: --alltoall,
 * --broadcast, --graph and --run-ahead make the calls NCCL makes on those
 * paths (per release where it differs), the grammar accepts exactly those,
 * and hand-broken traces show it still rejects what NCCL never does. The
 * deterministic totals re-added from the recorded clock match the changed
 * expectations. (End to end with the real plugin: test_sim_app_e2e.c.) */
#include "sim_grammar.h"
#include "../sim/schedule.h"

/* ---- running a scenario ---- */

typedef struct {
  int nccl_version; /* 0: the default */
  uint32_t run_ahead_ms;
  bool graph, alltoall, broadcast;
} scenario;

static int run_scenario(const rec_opts *o, const scenario *s, nt_sim_config *c) {
  config_for(o, c);
  if (s->nccl_version) c->nccl_version = s->nccl_version;
  c->run_ahead_ms = s->run_ahead_ms;
  c->graph = s->graph;
  c->alltoall = s->alltoall;
  c->broadcast = s->broadcast;
  env_for(o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}

static int count_where(int type, const char *func) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++)
    n += tr.ev[i].type == type && (!func || !strcmp(tr.ev[i].func, func));
  return n;
}

static const ctx_t *ctx_for(int rank, int comm) {
  for (int i = 0; i < tr.nctx; i++)
    if (tr.ctx[i].rank == rank && tr.ctx[i].comm == comm) return &tr.ctx[i];
  return NULL;
}

static bool in_ctx(const ev_t *e, const ctx_t *x) {
  return x && e->pid == x->pid && e->ctx == x->ctx;
}

/* The thread of the first event of `type` in context x (0: none). */
static long thread_of(const ctx_t *x, int type) {
  for (int i = 0; i < tr.nev; i++)
    if (in_ctx(&tr.ev[i], x) && tr.ev[i].type == type) return tr.ev[i].tid;
  return 0;
}

static const char *per_ctx_totals(const nt_sim_config *c, const ctx_t *x,
                                  unsigned long long t_end) {
  for (int ch = 0; ch < c->channels; ch++)
    for (int dir = 0; dir < 2; dir++)
      if (channel_totals(c, x, ch, dir)) return why;
  return proxy_totals(c, x, t_end) ? why : "none";
}

static unsigned long long run_end(void) {
  unsigned long long t = 0;
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].type == NT_EV_PROXY_CTRL && tr.ev[i].t_stop > t) t = tr.ev[i].t_stop;
  return t;
}

/* ---- options ---- */

static void the_options_are_parsed(void) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  char *ok[] = {"--run-ahead", "4000", "--graph", "--alltoall", "--broadcast", "--run-ahead=0"};
  CHECK(nt_sim_parse_args(&c, 5, ok) == 5);
  CHECK(c.run_ahead_ms == 4000 && c.graph && c.alltoall && c.broadcast);
  CHECK(nt_sim_parse_args(&c, 1, ok + 5) == 1 && c.run_ahead_ms == 0);
  static const char *const bad[][2] = {{"--run-ahead", "-1"},    {"--run-ahead", "600001"},
                                       {"--run-ahead", "x"},     {"--graph=1", NULL},
                                       {"--alltoall=yes", NULL}, {"--broadcast=0", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[2] = {(char *)bad[i][0], (char *)bad[i][1]};
    CHECK(nt_sim_parse_args(&c, bad[i][1] ? 2 : 1, argv) == -1);
  }
  /* Graphs are simulated for the ordinary collectives only. */
  nt_sim_defaults(&c);
  c.graph = c.alltoall = true;
  c.quiet = true;
  CHECK(nt_sim_run(&c) == 1);
}

/* ---- AlltoAll ---- */

/* 2.28+: ncclAlltoAll is 2 x nranks Send/Recv P2p events, each under its
 * own P2pApi of the same name, in one Group and one GroupApi; no CollApi. */
static void alltoall_on_2_28_is_send_recv_with_p2p_api_events(void) {
  rec_opts o = {.abi = 5, .ranks = 3, .iterations = 3};
  scenario s = {.nccl_version = 228, .alltoall = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  /* collective 1 of 3 is the AlltoAll (it replaced the ReduceScatter) */
  CHECK_EQ_U64(count_where(NT_EV_P2P, NULL), 3 * 2 * 3);
  CHECK_EQ_U64(count_where(NT_EV_P2P_API, "Send") + count_where(NT_EV_P2P_API, "Recv"), 18);
  CHECK_EQ_U64(count_where(NT_EV_COLL_API, NULL), 3 * 2);
  CHECK_EQ_U64(count_where(NT_EV_COLL, NULL), 3 * 2);
  CHECK_EQ_U64(count_where(NT_EV_COLL_API, "AlltoAll") + count_where(NT_EV_COLL, "AlltoAll"), 0);
  CHECK_EQ_U64(count_where(NT_EV_GROUP_API, NULL), 3 * 3);
  for (int r = 0; r < 3; r++) {
    const ctx_t *x = ctx_for(r, 0);
    CHECK(x);
    int peers[2] = {0, 0};
    unsigned long long group = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (!in_ctx(e, x) || e->type != NT_EV_P2P) continue;
      const ev_t *api = parent_of(e);
      CHECK(api && api->type == NT_EV_P2P_API && !strcmp(api->func, e->func));
      CHECK(e->count == (long long)(256 << 10) / 4 / 3); /* per peer, float32 */
      CHECK(!group || group == e->pgroup);               /* one Group for all */
      group = e->pgroup;
      peers[!strcmp(e->func, "Recv")] |= 1 << e->peer;
    }
    CHECK(peers[0] == 7 && peers[1] == 7); /* every peer, self included */
    /* the ring neighbours' Send and Recv carry the proxy ops */
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      const ev_t *p = parent_of(e);
      if (!in_ctx(e, x) || e->type != NT_EV_PROXY_OP || !p || p->type != NT_EV_P2P) continue;
      CHECK(!strcmp(p->func, e->send ? "Send" : "Recv") && p->peer == e->peer);
    }
  }
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 2);
  CHECK_EQ_U64(ce.p2ps, 6);
}

/* 2.26/2.27 have no ncclAlltoAll: the application's grouped Send/Recv gives
 * the same Group and P2p events, and their ABIs no API events. */
static void alltoall_before_2_28_is_the_same_without_api_events(void) {
  static const int versions[2][2] = {{226, 3}, {227, 4}};
  for (int v = 0; v < 2; v++) {
    rec_opts o = {.abi = versions[v][1], .iterations = 3};
    scenario s = {.nccl_version = versions[v][0], .alltoall = true};
    nt_sim_config c;
    CHECK(run_scenario(&o, &s, &c) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    if (o.abi > 3) CHECK_STR(totals_problem(&c), "none"); /* v3 says no rank */
    CHECK_EQ_U64(count_where(NT_EV_P2P, NULL), 2 * 2 * 2);
    CHECK_EQ_U64(count_where(NT_EV_P2P, "Send"), 4);
    for (int i = 0; i < tr.nev; i++) CHECK(tr.ev[i].type < NT_EV_GROUP_API);
  }
}

/* Real time: the training step's ReduceScatters become AlltoAlls and its
 * AllGathers Broadcasts (2.29: CollApi only), with steps in flight. */
static void alltoall_and_broadcast_in_real_time(void) {
  rec_opts o = {
      .abi = 6, .realtime = true, .ranks = 3, .channels = 1, .steps = 2, .iterations = 11};
  scenario s = {.nccl_version = 229, .alltoall = true, .broadcast = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  /* per rank: 3 ReduceScatters -> 3 x 6 P2p, a Send/Recv pair -> 2 more;
   * 3 AllGathers -> CollApi only; 4 AllReduces */
  CHECK_EQ_U64(count_where(NT_EV_P2P, NULL), 3 * (3 * 6 + 2));
  CHECK_EQ_U64(count_where(NT_EV_COLL_API, "Broadcast"), 3 * 3);
  CHECK_EQ_U64(count_where(NT_EV_COLL, NULL), 3 * 4);
  CHECK_EQ_U64(count_where(NT_EV_COLL, "AllReduce"), 3 * 4);
}

/* ---- Broadcast, and the byte counts ---- */

static void broadcast_on_2_29_is_a_coll_api_and_nothing_else(void) {
  rec_opts o = {.abi = 6, .iterations = 3};
  scenario s = {.nccl_version = 229, .broadcast = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  CHECK_EQ_U64(count_where(NT_EV_COLL_API, "Broadcast"), 2);
  CHECK_EQ_U64(count_where(NT_EV_COLL, "Broadcast"), 0);
  CHECK_EQ_U64(count_where(NT_EV_COLL, NULL), 2 * 2);
  CHECK_EQ_U64(count_where(NT_EV_GROUP, NULL), 2 * 2);            /* none for the Broadcast */
  CHECK_EQ_U64(count_where(NT_EV_PROXY_OP, NULL), 2 * 2 * 2 * 2); /* nor proxy ops */
  CHECK_EQ_U64(count_where(NT_EV_KERNEL_CH, NULL), 2 * 2 * 2);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_COLL_API && !strcmp(e->func, "Broadcast"))
      CHECK(e->count == (32 << 10) / 4 && !strcmp(e->dtype, "ncclFloat32") && e->root == 0);
  }
  /* its proxy ops still run: every Append burst says 2 x channels ops, and
   * the others' KernelCh profiler ops (one per channel, the Broadcast's
   * empty mask has none), but the one at shutdown, which takes none */
  int bursts = 0, empty = 0, bcast = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type != NT_EV_PROXY_CTRL || e->nrec != 2 || e->states[0] != NT_ST_CTRL_APPEND) continue;
    bursts++;
    empty += e->size[1] == 0;
    bcast += e->size[1] == 4;
    CHECK(e->size[1] == 4 + 2 || e->size[1] == 4 || e->size[1] == 0);
  }
  CHECK(empty >= 1); /* one per proxy thread */
  CHECK_EQ_U64(bursts - empty, 2 * 3);
  CHECK_EQ_U64(bcast, 2); /* one Broadcast per rank */
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 0, &ce);
  CHECK_EQ_U64(ce.colls, 2);
  CHECK_EQ_U64(ce.kernel_count, 2);
}

/* 2.28 and before: a Coll "Broadcast" counting bytes as ncclInt8, as every
 * release counts AllGather. */
static void broadcast_before_2_29_is_a_coll_counted_in_bytes(void) {
  static const int versions[3][2] = {{228, 5}, {227, 4}, {226, 3}};
  for (int v = 0; v < 3; v++) {
    rec_opts o = {.abi = versions[v][1], .iterations = 4};
    scenario s = {.nccl_version = versions[v][0], .broadcast = true};
    nt_sim_config c;
    CHECK(run_scenario(&o, &s, &c) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    if (o.abi > 3) CHECK_STR(totals_problem(&c), "none");
    CHECK_EQ_U64(count_where(NT_EV_COLL, "Broadcast"), 2 * 2);
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (e->type != NT_EV_COLL || strcmp(e->func, "Broadcast")) continue;
      /* collectives 0 and 3: 32 KiB from root 0, 64 MiB from root 1 */
      bool first = e->count == 32 << 10;
      CHECK(first || e->count == 64 << 20);
      CHECK(!strcmp(e->dtype, "ncclInt8") && e->root == (first ? 0 : 1));
    }
  }
}

static void allgather_counts_bytes_and_its_coll_api_elements(void) {
  rec_opts o = {.abi = 5, .iterations = 1};
  scenario s = {0};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    if (e->type == NT_EV_COLL) CHECK(e->count == 32 << 10 && !strcmp(e->dtype, "ncclInt8"));
    if (e->type == NT_EV_COLL_API)
      CHECK(e->count == (32 << 10) / 4 && !strcmp(e->dtype, "ncclFloat32"));
  }
}

/* ---- CUDA graphs ---- */

static char mask_no_kernel[16];

/* nccltop's default classes: no KernelCh. Comm 0 is inter-node, comm 1
 * intra-node (graph.h). 3 captured collectives, replayed twice. */
static void graph_replays_come_from_a_callback_thread_with_the_same_seq(void) {
  snprintf(mask_no_kernel, sizeof mask_no_kernel, "%d",
           NT_EV_COLL | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_PROXY_CTRL);
  rec_opts o = {.abi = 5, .comms = 2, .iterations = 6, .mask = mask_no_kernel};
  scenario s = {.graph = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  unsigned long long t_end = run_end();
  for (int r = 0; r < 2; r++) {
    const ctx_t *inter = ctx_for(r, 0), *intra = ctx_for(r, 1);
    CHECK(inter && intra && inter->nnodes == 2 && intra->nnodes == 1);
    long app = thread_of(inter, NT_EV_COLL_API), proxy = thread_of(inter, NT_EV_PROXY_OP);
    int colls = 0, apis = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (!in_ctx(e, inter)) continue;
      if (e->type == NT_EV_COLL_API || e->type == NT_EV_GROUP_API) {
        CHECK(e->captured == 1 && e->tid == app); /* captured once, by the application */
        apis += e->type == NT_EV_COLL_API;
      }
      if (e->type == NT_EV_COLL) {
        const ev_t *p = parent_of(e);
        CHECK(e->tid != app && e->tid != proxy); /* a host-callback thread */
        CHECK(p && p->captured == 1 && p->line < e->line);
        CHECK(e->seq == 0); /* no KernelCh: a persistent plan never advances it */
        colls++;
      }
    }
    CHECK(apis == 3 && colls == 6);
    /* intra-node: the plan ran once, at capture, on the application thread;
     * the replays emit nothing, and there is no proxy work */
    colls = 0;
    long iapp = thread_of(intra, NT_EV_COLL_API);
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (!in_ctx(e, intra)) continue;
      CHECK(e->type != NT_EV_PROXY_OP && e->type != NT_EV_PROXY_STEP);
      if (e->type != NT_EV_COLL) continue;
      CHECK(e->tid == iapp && e->seq == 0);
      colls++;
    }
    CHECK(colls == 3);
    CHECK_STR(per_ctx_totals(&c, inter, t_end), "none");
    CHECK_STR(per_ctx_totals(&c, intra, t_end), "none");
  }
}

/* With KernelCh in the mask a persistent plan advances seqNumber, and the
 * intra-node communicator gets the host callback too. */
static void graph_with_kernel_ch_advances_seq_and_replays_intra_node(void) {
  rec_opts o = {.abi = 6, .comms = 2, .iterations = 6};
  scenario s = {.nccl_version = 229, .graph = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 2; k++) {
      const ctx_t *x = ctx_for(r, k);
      long app = thread_of(x, NT_EV_COLL_API);
      int seen[3] = {0, 0, 0};
      for (int i = 0; i < tr.nev; i++) {
        const ev_t *e = &tr.ev[i];
        if (!in_ctx(e, x) || e->type != NT_EV_COLL) continue;
        CHECK(e->tid != app);
        int f = !strcmp(e->func, "AllGather") ? 0 : !strcmp(e->func, "ReduceScatter") ? 1 : 2;
        CHECK(e->seq == seen[f]++); /* 0 then 1 */
      }
      CHECK(seen[0] == 2 && seen[1] == 2 && seen[2] == 2);
    }
  nt_sim_comm_expect ce;
  nt_sim_expect_comm(&c, 0, 1, &ce);
  CHECK_EQ_U64(ce.colls, 6);
  CHECK_EQ_U64(ce.kernel_count, 0); /* not simulated (graph.c) */
}

static void graph_in_real_time_replays_the_same_operations(void) {
  rec_opts o = {.abi = 5, .realtime = true, .channels = 1, .steps = 2, .iterations = 22};
  scenario s = {.graph = true};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  /* 11 captured operations (one of them a Send/Recv pair), replayed twice */
  CHECK_EQ_U64(count_where(NT_EV_COLL_API, NULL), 2 * 10);
  CHECK_EQ_U64(count_where(NT_EV_COLL, NULL), 2 * 20);
  CHECK_EQ_U64(count_where(NT_EV_P2P, NULL), 2 * 4);
  /* replay 2 of each operation repeats replay 1's count */
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *a = &tr.ev[i];
    if (a->type != NT_EV_COLL) continue;
    int same = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *b = &tr.ev[j];
      same += b->type == NT_EV_COLL && b->pid == a->pid && b->parent == a->parent &&
              b->count == a->count;
    }
    CHECK(same == 2);
  }
}

/* ---- run-ahead ---- */

static void run_ahead_moves_the_compute_into_send_gpu_wait(void) {
  rec_opts o = {.abi = 5, .iterations = 4};
  scenario s = {.run_ahead_ms = 3};
  nt_sim_config c;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK_STR(totals_problem(&c), "none");
  /* collectives 0 and 3 open a training step: step 0 of channel 0's send
   * op waits 1 us + 3 ms in SendGPUWait; every other step 1 us */
  int long_waits = 0;
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    const ev_t *op = parent_of(e);
    if (e->type != NT_EV_PROXY_STEP || !op || !op->send) continue;
    unsigned long long gpu = e->rec_t[1] - e->rec_t[0];
    if (gpu != SIM_SEND_GPU_NS) {
      CHECK(gpu == SIM_SEND_GPU_NS + 3000000ull && op->ch == 0 && e->step == 0);
      long_waits++;
    }
  }
  CHECK_EQ_U64(long_waits, 2 * 2);
  nt_sim_channel_expect ch;
  nt_sim_expect_channel(&c, 0, 0, 0, NT_DIR_SEND, &ch);
  CHECK_EQ_U64(ch.wait_ns[0], 4 * 3 * SIM_SEND_GPU_NS + 2 * 3000000ull);
  nt_sim_expect_channel(&c, 0, 0, 1, NT_DIR_SEND, &ch);
  CHECK_EQ_U64(ch.wait_ns[0], 4 * 3 * SIM_SEND_GPU_NS);
  nt_sim_proxy_expect px;
  nt_sim_expect_proxy(&c, 0, 0, &px);
  /* a send try without credit is an idle pass (the credit model, version.h) */
  CHECK_EQ_U64(px.state_ns[NT_PROXY_ACTIVE],
               4 * sim_det_work_ns(2, 3) + 2 * 3000000ull -
                   4 * sim_det_credit_misses(2, 3) * SIM_SEND_PEER_NS);
}

static double secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Real time: every operation is enqueued (Coll started, proxy ops
 * appended) before the GPU lets the first step leave its wait. */
static void run_ahead_in_real_time_enqueues_before_the_gpu_gets_there(void) {
  rec_opts o = {.abi = 5, .realtime = true, .channels = 1, .steps = 2, .iterations = 4};
  scenario s = {.run_ahead_ms = 400};
  nt_sim_config c;
  double t0 = secs();
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK(secs() - t0 >= 0.4);
  CHECK_STR(grammar_problem(&c), "none");
  for (int r = 0; r < 2; r++) {
    const ctx_t *x = ctx_for(r, 0);
    int last_enqueue = 0, first_step_stop = INT32_MAX, appended = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (!in_ctx(e, x)) continue;
      if (e->type == NT_EV_COLL || e->type == NT_EV_P2P)
        last_enqueue = e->line > last_enqueue ? e->line : last_enqueue;
      if (e->type == NT_EV_PROXY_STEP && e->stop_line < first_step_stop)
        first_step_stop = e->stop_line;
      if (e->type == NT_EV_PROXY_OP && e->line < first_step_stop) appended++;
    }
    CHECK(last_enqueue < first_step_stop);
    CHECK(appended >= 2);
  }
}

/* ---- the grammar still rejects what NCCL never does ---- */

static ev_t *first_of(int type, const char *func) {
  for (int i = 0; i < tr.nev; i++)
    if (tr.ev[i].type == type && (!func || !strcmp(tr.ev[i].func, func))) return &tr.ev[i];
  return NULL;
}

static ev_t *second_of(int type, const char *func) {
  ev_t *a = first_of(type, func);
  for (int i = a ? (int)(a - tr.ev) + 1 : tr.nev; i < tr.nev; i++)
    if (tr.ev[i].type == type && !strcmp(tr.ev[i].func, func) && tr.ev[i].pid == a->pid &&
        tr.ev[i].ctx == a->ctx)
      return &tr.ev[i];
  return NULL;
}

#define REJECTS(c, what)                                                                           \
  do {                                                                                             \
    const char *p = grammar_problem(c);                                                            \
    if (!strcmp(p, "none") || !strstr(p, what)) {                                                  \
      fprintf(stderr, "    %s:%d: grammar said \"%s\", wanted \"%s\"\n", __FILE__, __LINE__, p,    \
              what);                                                                               \
      tl_case_failed = 1;                                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

static void the_grammar_rejects_what_nccl_never_emits(void) {
  rec_opts o = {.abi = 5, .iterations = 4};
  scenario s = {.nccl_version = 229};
  nt_sim_config c;
  ev_t *e, saved;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  /* an eager Coll on another thread than its CollApi */
  CHECK((e = first_of(NT_EV_COLL, "AllReduce")) != NULL);
  saved = *e;
  e->tid = e->stop_tid = 424242;
  REJECTS(&c, "parent on different threads");
  *e = saved;
  /* a repeated seqNumber without a graph */
  CHECK((e = second_of(NT_EV_COLL, "AllGather")) != NULL && e->seq == 1);
  e->seq = 0;
  REJECTS(&c, "seqNumber 0 after 0");
  e->seq = 1;
  /* AlltoAll as a Coll or a CollApi */
  e = first_of(NT_EV_COLL_API, "ReduceScatter");
  CHECK(e != NULL);
  snprintf(e->func, sizeof e->func, "AlltoAll");
  REJECTS(&c, "CollApi AlltoAll");
  snprintf(e->func, sizeof e->func, "ReduceScatter");
  e = first_of(NT_EV_COLL, "ReduceScatter");
  snprintf(e->func, sizeof e->func, "Gather");
  REJECTS(&c, "Gather");
  snprintf(e->func, sizeof e->func, "ReduceScatter");
  /* a Coll Broadcast on 2.29, even counted right */
  e = first_of(NT_EV_COLL, "AllGather");
  snprintf(e->func, sizeof e->func, "Broadcast");
  snprintf(parent_of(e)->func, sizeof e->func, "Broadcast");
  REJECTS(&c, "Coll Broadcast on 2.29");
  snprintf(e->func, sizeof e->func, "AllGather");
  snprintf(parent_of(e)->func, sizeof e->func, "AllGather");
  /* an AllGather counted in elements */
  snprintf(e->dtype, sizeof e->dtype, "ncclFloat32");
  REJECTS(&c, "counted in ncclFloat32");
  snprintf(e->dtype, sizeof e->dtype, "ncclInt8");
  /* a Coll whose CollApi is for another function */
  snprintf(parent_of(e)->func, sizeof e->func, "AllReduce");
  REJECTS(&c, "under an API event for AllReduce");
  snprintf(parent_of(e)->func, sizeof e->func, "AllGather");
  CHECK_STR(grammar_problem(&c), "none");

  /* AlltoAll's P2p events: under a CollApi, or named AlltoAll */
  s.alltoall = true;
  CHECK(run_scenario(&o, &s, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  e = first_of(NT_EV_P2P, "Send");
  const ev_t *capi = first_of(NT_EV_COLL_API, NULL);
  CHECK(e && capi);
  unsigned long long parent = e->parent;
  e->parent = capi->h;
  REJECTS(&c, "P2p parent is not a finished P2pApi");
  e->parent = parent;
  snprintf(e->func, sizeof e->func, "AlltoAll");
  REJECTS(&c, "P2p func AlltoAll");
  snprintf(e->func, sizeof e->func, "Send");
  CHECK_STR(grammar_problem(&c), "none");

  /* graph replays: not on the proxy thread, and a repeated seqNumber only
   * under a captured API event */
  o.comms = 1;
  o.mask = mask_no_kernel;
  scenario g = {.graph = true};
  CHECK(run_scenario(&o, &g, &c) == 0);
  CHECK_STR(grammar_problem(&c), "none");
  e = second_of(NT_EV_COLL, "AllGather");
  CHECK(e && e->seq == 0 && parent_of(e)->captured == 1);
  parent_of(e)->captured = 0;
  /* NCCL's rules refuse the repeated seqNumber of an eager Coll; the
   * simulator's, its thread */
  REJECTS(&c, "seqNumber 0 after 0");
  CHECK(strstr(sim_problem(&c) ? why : "", "parent on different threads") != NULL);
  parent_of(e)->captured = 1;
  long proxy = 0;
  for (int i = 0; i < tr.nev && !proxy; i++)
    if (tr.ev[i].type == NT_EV_PROXY_OP && tr.ev[i].pid == e->pid) proxy = tr.ev[i].tid;
  for (int i = 0; i < tr.nev; i++) {
    ev_t *f = &tr.ev[i];
    if (f->pid == e->pid && f->ctx == e->ctx && f->tid == e->tid) f->tid = f->stop_tid = proxy;
  }
  REJECTS(&c, "application-side event type 1 on the proxy thread");
  CHECK(strstr(sim_problem(&c) ? why : "", "proxy and callback events on one thread") != NULL);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", dirname(exe));
  TEST_RUN(the_options_are_parsed);
  TEST_RUN(alltoall_on_2_28_is_send_recv_with_p2p_api_events);
  TEST_RUN(alltoall_before_2_28_is_the_same_without_api_events);
  TEST_RUN(alltoall_and_broadcast_in_real_time);
  TEST_RUN(broadcast_on_2_29_is_a_coll_api_and_nothing_else);
  TEST_RUN(broadcast_before_2_29_is_a_coll_counted_in_bytes);
  TEST_RUN(allgather_counts_bytes_and_its_coll_api_elements);
  TEST_RUN(graph_replays_come_from_a_callback_thread_with_the_same_seq);
  TEST_RUN(graph_with_kernel_ch_advances_seq_and_replays_intra_node);
  TEST_RUN(graph_in_real_time_replays_the_same_operations);
  TEST_RUN(run_ahead_moves_the_compute_into_send_gpu_wait);
  TEST_RUN(run_ahead_in_real_time_enqueues_before_the_gpu_gets_there);
  TEST_RUN(the_grammar_rejects_what_nccl_never_emits);
  return TEST_DONE();
}

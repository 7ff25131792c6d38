/* The frame model (monitor/core/frame.c): built from a model fed hand-made
 * snapshots, its numbers are exact; the JSON frame carries exactly them;
 * the screen shows exactly them (drawn in this process on an ncurses
 * screen, read back cell by cell); and a frame outlives the model it came
 * from (a paused screen keeps its frame while processes are dropped). */
#include <cjson/cJSON.h>
#include <curses.h>
#include <stdlib.h>

#include "../monitor/screen/screen_internal.h"
#include "testlib.h"
#include "json_get.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/frame.h"
#include "../monitor/outputs/json_out.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"

#define HASH 0xc0ffee00c0ffee00ull

/* Process `pid` is rank r of a 2-rank communicator: one proxy thread, one
 * send row whose counters grow with k, an AllReduce launch count of
 * `launched` (done k/100), and on rank 1 a stalled channel. */
static nt_snapshot *snap(uint32_t pid, int32_t r, uint64_t seq, uint64_t mono_ns, uint64_t k,
                         uint64_t launched) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node%d", r);
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->wall_ns = 1700000000000000000ull + mono_ns;
  s->interval_ms = 100;
  s->process.abi_version = 6;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){
      .comm_hash = HASH, .rank = r, .nranks = 2, .nnodes = 2, .colls_enqueued = launched};
  s->nproxy = 1;
  s->proxy[0] =
      (nt_proxy_row){.tid = 7, .state = NT_PROXY_ACTIVE, .state_ns = {k * 250, k * 750, 0, 0, 0}};
  s->nchannels = 2;
  s->channels[0] = (nt_channel_row){.channel = 0,
                                    .dir = NT_DIR_SEND,
                                    .peer = 1 - r,
                                    .wait_ns = {k, k * 5, k * 2},
                                    .steps = k,
                                    .bytes = k * 1000,
                                    .relay_rank = -1};
  s->channels[1] = (nt_channel_row){.channel = 1,
                                    .dir = NT_DIR_RECV,
                                    .peer = 1 - r,
                                    .wait_ns = {k * 3, 0, 0},
                                    .steps = 9,
                                    .ops_started = 3,
                                    .ops_done = r == 1 ? 2 : 3,
                                    .cur_wait = NT_WAIT_RECV_NET,
                                    .run_state = r == 1 ? NT_RUN_RUNNING : NT_RUN_IDLE,
                                    .progress_age_ns = 9000000000ull,
                                    .relay_rank = -1};
  s->nseq = 1;
  s->seq_rows[0] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = launched, .done = k / 100};
  return s;
}

/* Two ranks, two snapshots each, 0.5 s of publisher time apart. */
static nt_model *job(void) {
  nt_model *m = nt_model_new();
  if (!m) return NULL;
  for (int32_t r = 0; r < 2; r++) {
    nt_snapshot *a = snap(100 + (uint32_t)r, r, 1, 1000000000ull, 100, 10 + (uint64_t)r);
    nt_snapshot *b = snap(100 + (uint32_t)r, r, 2, 1500000000ull, 600, 20 + (uint64_t)r * 5);
    bool ok = a && b && nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0 &&
              nt_model_apply_snapshot(m, "ep", 0, b, 1.5) == 0;
    nt_snapshot_free(a);
    nt_snapshot_free(b);
    if (!ok) {
      nt_model_free(m);
      return NULL;
    }
  }
  return m;
}

static const nt_frame_opts opts = {.stall_ms = 2000, .process_env = true};

static void numbers_are_exact(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  CHECK_EQ_U64(f->nprocs, 2);
  CHECK_EQ_U64(f->nranks, 2);
  CHECK_EQ_U64(f->nchannels, 4);
  CHECK(f->channel_count == 2);
  const nt_frame_rank *r1 = &f->ranks[1];
  CHECK(r1->rank == 1 && r1->nchan == 2 && r1->nproxy == 1);
  const nt_frame_channel *send = nt_frame_cell(f, r1, 0, NT_DIR_SEND);
  CHECK(send && send->steps_per_s == 1000.0 && send->bytes_per_s == 1000000.0);
  CHECK(send->dominant_wait == NT_WAIT_SEND_PEER && !send->stalled);
  const nt_frame_channel *recv = nt_frame_cell(f, r1, 1, NT_DIR_RECV);
  CHECK(recv && recv->stalled && !recv->queued);
  CHECK(!nt_frame_cell(f, &f->ranks[0], 1, NT_DIR_RECV)->stalled);
  CHECK(r1->stalled == 1 && f->ranks[0].stalled == 0);
  /* done 1 -> 6 in 0.5 s */
  CHECK(r1->done_per_s == 10.0 && f->ranks[0].done_per_s == 10.0);
  CHECK_EQ_U64(f->ncomms, 1);
  CHECK(f->comms[0].ranks == 2 && f->comms[0].stalled == 1);
  CHECK_EQ_U64(f->comms[0].launched_min, 20);
  CHECK_EQ_U64(f->comms[0].launched_max, 25);
  CHECK(f->comms[0].done_per_s == 10.0);
  CHECK(f->proxy[r1->proxy0].share_last[NT_PROXY_ACTIVE] == 0.75);
  CHECK(f->proxy[r1->proxy0].dominant == NT_PROXY_ACTIVE);
  nt_frame_free(f);
  nt_model_free(m);
}

/* A process that falls silent (a stopped rank) has been seen to finish
 * nothing since: its rate, and its communicator's, read 0, not the last
 * interval's frozen. */
static void a_silent_rank_does_nothing_per_second(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f);
  nt_model_tick(m, 1.6);
  CHECK(nt_frame_build(f, m, test_diag(), &opts, 1.6) == 0);
  CHECK(f->ranks[1].done_per_s == 10.0 && f->comms[0].done_per_s == 10.0);
  /* rank 0 goes on (done 6 -> 11 in 0.5 s); rank 1 says nothing more */
  nt_snapshot *c = snap(100, 0, 3, 2000000000ull, 1100, 30);
  CHECK(c && nt_model_apply_snapshot(m, "ep", 0, c, 9.9) == 0);
  nt_snapshot_free(c);
  nt_model_tick(m, 10.0);
  CHECK(nt_frame_build(f, m, test_diag(), &opts, 10.0) == 0);
  CHECK(!f->procs[f->ranks[0].proc].stale && f->procs[f->ranks[1].proc].stale);
  CHECK(f->ranks[0].done_per_s == 10.0);
  CHECK(f->ranks[1].done_per_s == 0.0);
  CHECK(f->comms[0].done_per_s == 5.0);
  nt_frame_free(f);
  nt_model_free(m);
}

static void the_json_carries_the_frames_numbers(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  nt_jo w;
  nt_jo_init(&w);
  const char *text = nt_frame_json(f, &w);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  nt_jo_free(&w);
  CHECK(root);
  const cJSON *comms = cJSON_GetObjectItemCaseSensitive(root, "comms");
  CHECK(cJSON_GetArraySize(comms) == 1);
  const cJSON *c = cJSON_GetArrayItem(comms, 0);
  CHECK(num(c, "done_per_s") == f->comms[0].done_per_s);
  CHECK(num(c, "stalled_channels") == f->comms[0].stalled);
  CHECK(num(c, "launched_min") == 20 && num(c, "launched_max") == 25);
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks");
  CHECK(cJSON_GetArraySize(ranks) == 2);
  for (int i = 0; i < 2; i++) {
    const cJSON *r = cJSON_GetArrayItem(ranks, i);
    const nt_frame_rank *fr = &f->ranks[i];
    CHECK(num(r, "rank") == fr->rank && num(r, "stalled_channels") == fr->stalled);
    CHECK(num(r, "done_per_s") == fr->done_per_s && num(r, "launched") == (double)fr->launched);
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(r, "channels");
    CHECK(cJSON_GetArraySize(ch) == (int)fr->nchan);
    for (uint32_t k = 0; k < fr->nchan; k++) {
      const cJSON *x = cJSON_GetArrayItem(ch, (int)k);
      const nt_frame_channel *fc = &f->channels[fr->chan0 + k];
      CHECK(num(x, "steps_per_s") == fc->steps_per_s && num(x, "bytes_per_s") == fc->bytes_per_s);
      CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "stalled")) == fc->stalled);
    }
  }
  cJSON_Delete(root);
  nt_frame_free(f);
  nt_model_free(m);
}

/* ---- the screen, drawn here ---- */

static nt_screen scr;
static nt_options sopts;

static bool screen_open(nt_frame *f, nt_model *m, FILE **out, FILE **in, SCREEN **term) {
  *out = fopen("/dev/null", "w");
  *in = fopen("/dev/null", "r");
  *term = *out && *in ? newterm("xterm", *out, *in) : NULL;
  if (!*term || resizeterm(60, 200) != OK) return false;
  memset(&scr, 0, sizeof scr);
  nt_options_defaults(&sopts);
  sopts.color = false;
  scr.m = m;
  scr.o = &sopts;
  scr.f = f;
  scr.now = 2.0;
  return true;
}

static void screen_close(FILE *out, FILE *in, SCREEN *term) {
  if (term) {
    endwin();
    delscreen(term);
  }
  if (out) fclose(out);
  if (in) fclose(in);
}

/* The screen line containing `needle`, or "". */
static const char *screen_line(const char *needle) {
  static char line[256];
  for (int y = 0; y < 60; y++) {
    if (mvinnstr(y, 0, line, 200) == ERR) continue;
    if (strstr(line, needle)) return line;
  }
  return "";
}

static void the_screen_shows_the_frames_numbers(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  FILE *out = NULL, *in = NULL;
  SCREEN *term = NULL;
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  bool ok = screen_open(f, m, &out, &in, &term);
  if (ok) {
    scr.view = NT_VIEW_OVERVIEW;
    nt_screen_draw(&scr);
  }
  char want[64];
  snprintf(want, sizeof want, "%016llx", (unsigned long long)HASH);
  char comm[256];
  snprintf(comm, sizeof comm, "%s", ok ? screen_line(want) : "");
  char done[32];
  snprintf(done, sizeof done, " %.1f ", f->comms[0].done_per_s);
  if (ok) {
    scr.view = NT_VIEW_PROXY;
    nt_screen_draw(&scr);
  }
  char proxy[256];
  snprintf(proxy, sizeof proxy, "%s", ok ? screen_line("node1:101") : "");
  char actv[32];
  snprintf(actv, sizeof actv, " %.1f ",
           100 * f->proxy[f->ranks[1].proxy0].share_total[NT_PROXY_ACTIVE]);
  screen_close(out, in, term);
  CHECK(ok);
  CHECK(strstr(comm, "2/2") && strstr(comm, done) && strstr(comm, "20-25"));
  CHECK(strstr(proxy, actv));
  nt_frame_free(f);
  nt_model_free(m);
}

static void a_frame_outlives_its_model(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  FILE *out = NULL, *in = NULL;
  SCREEN *term = NULL;
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  nt_model_free(m); /* every process gone: the frame owns what it shows */
  bool ok = screen_open(f, NULL, &out, &in, &term);
  static const int views[] = {NT_VIEW_PROXY, NT_VIEW_CHANNELS, NT_VIEW_OPS,
                              NT_VIEW_ENV,   NT_VIEW_HELP,     NT_VIEW_OVERVIEW};
  for (size_t v = 0; ok && v < sizeof views / sizeof views[0]; v++) {
    scr.view = views[v];
    nt_screen_draw(&scr);
  }
  bool shown = ok && strstr(screen_line("node0:100"), "node0:100") != NULL;
  screen_close(out, in, term);
  CHECK(ok && shown);
  nt_jo w;
  nt_jo_init(&w);
  const char *text = nt_frame_json(f, &w);
  bool has = text && strstr(text, "\"host\":\"node1\"");
  nt_jo_free(&w);
  CHECK(has);
  nt_frame_free(f);
}

/* The topology view reads the model and keeps the rest: which topology is
 * shown (t) and the copy its what-ifs are computed on are the screen's;
 * the model's topologies stay as loaded (NCCL's defaults), its error list
 * and its bytes as they were. */
static void the_topology_view_never_writes_the_model(void) {
  char err[256];
  size_t la = 0, lb = 0;
  char *a = nt_topo_read_file("examples/topologies/pcie-2socket-4gpu.xml", &la, err, sizeof err);
  char *b = nt_topo_read_file("examples/topologies/nvswitch-8gpu-8nic.xml", &lb, err, sizeof err);
  nt_model *m = nt_model_new();
  nt_frame *f = nt_frame_new();
  bool ok = a && b && m && f && nt_model_set_topology(m, a, la, "ep1", 1.0) == 0 &&
            nt_model_set_topology(m, b, lb, "ep2", 1.0) == 0;
  free(a);
  free(b);
  FILE *out = NULL, *in = NULL;
  SCREEN *term = NULL;
  ok = ok && screen_open(f, m, &out, &in, &term);
  size_t bytes = ok ? nt_model_bytes(m) : 0;
  uint32_t errors = ok ? nt_model_nerrors(m) : 0;
  nt_topo_pair p;
  bool drawn = false, whatif = false, picked = false, copy_computed = false;
  if (ok) {
    scr.view = NT_VIEW_TOPO;
    scr.rows = 60, scr.cols = 200, scr.bottom = 59;
    erase();
    nt_view_topo(&scr, 1);
    drawn = strstr(screen_line("topology ep1"), "(1 of 2, t: next)") != NULL;
    nt_topo_view_action(&scr, NT_ACT_WHATIF_P2P);
    nt_topo_view_action(&scr, NT_ACT_WHATIF_PXN);
    erase();
    nt_view_topo(&scr, 1);
    whatif = strstr(screen_line("what-if:"), "P2P_DISABLE=1 PXN_DISABLE=1") != NULL;
    copy_computed = scr.topo && nt_topo_pair_at(scr.topo, 0, 1, &p) && !p.p2p;
    picked = nt_topo_view_action(&scr, NT_ACT_TOPO_NEXT);
    erase();
    nt_view_topo(&scr, 1);
    picked = picked && scr.topo_pick == 1 &&
             strstr(screen_line("topology ep2"), "(2 of 2, t: next)") != NULL;
  }
  /* the model: both files as loaded, under NCCL's defaults (no what-if was
   * computed on them) */
  nt_topo_env defaults;
  nt_topo_env_defaults(&defaults);
  bool untouched = ok && nt_model_topology_count(m) == 2;
  for (uint32_t i = 0; untouched && i < 2; i++) {
    const nt_topo *t = nt_model_topology_at(m, i, NULL, NULL);
    const nt_topo_env *e = t ? nt_topo_current_env(t) : NULL;
    untouched = t && t != scr.topo && e && e->p2p_disable == defaults.p2p_disable &&
                e->pxn_disable == defaults.pxn_disable;
  }
  untouched = untouched && nt_model_bytes(m) == bytes && nt_model_nerrors(m) == errors;
  nt_view_topo_free(&scr);
  nt_view_graphs_free(&scr);
  screen_close(out, in, term);
  nt_frame_free(f);
  nt_model_free(m);
  CHECK(ok);
  CHECK(drawn);
  CHECK(whatif);
  CHECK(copy_computed);
  CHECK(picked);
  CHECK(untouched);
}

int main(void) {
  TEST_RUN(numbers_are_exact);
  TEST_RUN(the_json_carries_the_frames_numbers);
  TEST_RUN(the_screen_shows_the_frames_numbers);
  TEST_RUN(a_frame_outlives_its_model);
  TEST_RUN(a_silent_rank_does_nothing_per_second);
  TEST_RUN(the_topology_view_never_writes_the_model);
  return TEST_DONE();
}

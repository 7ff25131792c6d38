/* NCCL 2.31's symmetric-kernel collectives in the viewer (protocol 1.4):
 * operation statistics are kept apart per kernel variant and added up over
 * the ranks by the variant's name (each process numbers its own variants);
 * the frame, the text and JSON batch output, the run summary and the
 * collectives view name them "sym:<variant's suffix>" with the full
 * variant beside; and a variant name from the wire is escaped before a
 * terminal or a JSON reader sees it. Built from hand-made snapshots. */
#include <cjson/cJSON.h>
#include <curses.h>
#include <stdlib.h>

#include "../monitor/screen/screen_internal.h"
#include "testlib.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/frame.h"
#include "../monitor/outputs/json_out.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"

#define HASH 0x5e11c0117e00ull

/* Rank r of a 2-rank communicator. Its variant ids differ per rank on
 * purpose: rank 0 numbers AGxLL_R 1 and RSxLD 2, rank 1 the reverse. */
static nt_snapshot *snap(uint32_t pid, int32_t r) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node%d", r);
  s->pid = pid;
  s->seq = 1;
  s->mono_ns = 1000000000ull;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->process.abi_version = 7;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = r, .nranks = 2, .nnodes = 1};
  uint8_t agxll = r == 0 ? 1 : 2, rsxld = r == 0 ? 2 : 1;
  s->nvariants = 4;
  s->variants[0] = (nt_variant_row){.id = agxll, .name = "AllReduce_AGxLL_R"};
  s->variants[1] = (nt_variant_row){.id = rsxld, .name = "AllReduce_RSxLD_AGxST"};
  s->variants[2] = (nt_variant_row){.id = 3, .name = "AllGather_\x1b[2J\x07"};
  /* NCCL 2.31's longest: its label fills the widest algorithm column */
  s->variants[3] = (nt_variant_row){.id = 4, .name = "AllReduce_RSxTmaLD_AGxTmaST"};
  s->nops = 5;
  s->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_OTHER,
                          .proto = NT_PR_NONE,
                          .bucket = 12,
                          .variant = agxll,
                          .count = 10,
                          .bytes = 10 * 4096,
                          .done = 4,
                          .done_bytes = 4 * 4096,
                          .time_ns = 4 * 20000,
                          .gpu_done = 4};
  s->ops[1] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_OTHER,
                          .proto = NT_PR_NONE,
                          .bucket = 24,
                          .variant = rsxld,
                          .count = 2,
                          .bytes = 2 << 24,
                          .done = 2,
                          .done_bytes = 2 << 24,
                          .time_ns = 2 * 1000000,
                          .gpu_done = 2};
  s->ops[2] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .bucket = 12,
                          .count = 5,
                          .bytes = 5 * 4096,
                          .done = 5,
                          .done_bytes = 5 * 4096,
                          .time_ns = 5 * 50000};
  s->ops[3] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLGATHER,
                          .algo = NT_ALGO_OTHER,
                          .proto = NT_PR_NONE,
                          .bucket = 10,
                          .variant = 3,
                          .count = 1,
                          .bytes = 1024};
  s->ops[4] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_OTHER,
                          .proto = NT_PR_NONE,
                          .bucket = 26,
                          .variant = 4,
                          .count = 1,
                          .bytes = 1 << 26,
                          .done = 1,
                          .done_bytes = 1 << 26,
                          .time_ns = 3000000,
                          .gpu_done = 1};
  s->noplog = 2;
  s->oplog[0] = (nt_oplog_row){.kind = NT_OP_COLL,
                               .func = NT_FUNC_ALLREDUCE,
                               .algo = NT_ALGO_OTHER,
                               .proto = NT_PR_NONE,
                               .dtype = NT_DT_FLOAT32,
                               .state = NT_OPS_DONE,
                               .timing = NT_TIMING_GPU,
                               .nchannels = 2,
                               .root_peer = -1,
                               .seq = 9,
                               .count = 1024,
                               .bytes = 4096,
                               .age_ns = 1000000,
                               .duration_ns = 20000,
                               .children = 2,
                               .run_state = NT_RUN_IDLE,
                               .flags = NT_OPF_SYMMETRIC,
                               .variant = agxll};
  s->oplog[1] = (nt_oplog_row){.kind = NT_OP_COLL,
                               .func = NT_FUNC_ALLREDUCE,
                               .algo = NT_ALGO_OTHER,
                               .proto = NT_PR_NONE,
                               .dtype = NT_DT_FLOAT32,
                               .state = NT_OPS_ENQUEUED,
                               .root_peer = -1,
                               .seq = 10,
                               .count = 1024,
                               .bytes = 4096,
                               .age_ns = 900000,
                               .run_state = NT_RUN_IDLE,
                               .flags = NT_OPF_SYMMETRIC | NT_OPF_UNREPORTED,
                               .variant = agxll};
  return s;
}

static nt_model *job(void) {
  nt_model *m = nt_model_new();
  if (!m) return NULL;
  for (int32_t r = 0; r < 2; r++) {
    nt_snapshot *s = snap(200 + (uint32_t)r, r);
    bool ok = s && nt_model_apply_snapshot(m, "ep", 0, s, 1.0) == 0;
    nt_snapshot_free(s);
    if (!ok) {
      nt_model_free(m);
      return NULL;
    }
  }
  return m;
}

static const nt_frame_opts opts = {.stall_ms = 2000};

static const nt_op_stat *stat_of(const nt_frame *f, const char *variant, int algo) {
  for (uint32_t i = 0; i < f->nstats; i++)
    if (!strcmp(f->stats[i].st.variant, variant) && f->stats[i].st.algo == algo)
      return &f->stats[i].st;
  return NULL;
}

static void stats_are_kept_per_variant_name(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  CHECK_EQ_U64(f->nstats, 5);
  const nt_op_stat *a = stat_of(f, "AllReduce_AGxLL_R", NT_ALGO_OTHER),
                   *b = stat_of(f, "AllReduce_RSxLD_AGxST", NT_ALGO_OTHER),
                   *ring = stat_of(f, "", NT_ALGO_RING);
  CHECK(a && b && ring);
  if (!a || !b || !ring) return;
  /* Both ranks' rows, whatever id each gave the name. */
  CHECK_EQ_U64(a->count, 20);
  CHECK_EQ_U64(a->ranks, 2);
  CHECK_EQ_U64(b->count, 4);
  CHECK_EQ_U64(ring->count, 10);
  char lab[64];
  CHECK_STR(nt_algo_label(a->algo, a->variant, false, lab, sizeof lab), "sym:AGxLL_R");
  CHECK_STR(nt_algo_label(b->algo, b->variant, false, lab, sizeof lab), "sym:RSxLD_AGxST");
  CHECK_STR(nt_algo_label(ring->algo, ring->variant, false, lab, sizeof lab), "RING");
  CHECK_STR(nt_algo_label(NT_ALGO_OTHER, "", true, lab, sizeof lab), "sym");
  /* The hostile name arrives escaped. */
  bool escaped = false;
  for (uint32_t i = 0; i < f->nstats; i++)
    if (f->stats[i].st.func == NT_FUNC_ALLGATHER)
      escaped = !strchr(f->stats[i].st.variant, '\x1b') && !strchr(f->stats[i].st.variant, '\a') &&
                strstr(f->stats[i].st.variant, "AllGather_\\x") != NULL;
  CHECK(escaped);
  nt_run_summary run;
  CHECK(nt_model_run_summary(m, false, &run));
  uint32_t sym_ops = 0;
  for (uint32_t i = 0; i < run.nops; i++)
    if (!strcmp(run.ops[i].variant, "AllReduce_AGxLL_R")) sym_ops += (uint32_t)run.ops[i].count;
  CHECK_EQ_U64(sym_ops, 20);
  nt_frame_free(f);
  nt_model_free(m);
}

static const cJSON *item(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static bool str_is(const cJSON *o, const char *k, const char *want) {
  const cJSON *v = item(o, k);
  return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

static void json_names_the_variant(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  nt_jo w;
  nt_jo_init(&w);
  const char *text = nt_frame_json(f, &w);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  nt_jo_free(&w);
  CHECK(root != NULL);
  int sym = 0, ring = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, item(root, "collectives")) {
    if (str_is(c, "variant", "AllReduce_AGxLL_R"))
      sym += str_is(c, "algo", "sym:AGxLL_R") && str_is(c, "proto", "none") &&
             cJSON_GetNumberValue(item(c, "count")) == 20;
    if (str_is(c, "algo", "RING")) ring += str_is(c, "variant", "");
  }
  CHECK(sym == 1 && ring == 1);
  int recent = 0, unreported = 0;
  cJSON_ArrayForEach(c, item(root, "recent")) {
    if (!str_is(c, "variant", "AllReduce_AGxLL_R") || !str_is(c, "algo", "sym:AGxLL_R") ||
        !cJSON_IsTrue(item(c, "symmetric")))
      continue;
    recent++;
    unreported += cJSON_IsTrue(item(c, "completion_unreported"));
  }
  CHECK(recent == 4 && unreported == 2);
  cJSON_Delete(root);
  FILE *t = tmpfile();
  CHECK(t != NULL);
  if (t) {
    nt_frame_text(t, f);
    char buf[8192];
    rewind(t);
    size_t n = fread(buf, 1, sizeof buf - 1, t);
    buf[n] = '\0';
    fclose(t);
    CHECK(strstr(buf, "sym:AGxLL_R") && strstr(buf, "sym:RSxLD_AGxST"));
    CHECK(!strchr(buf, '\x1b'));
  }
  nt_frame_free(f);
  nt_model_free(m);
}

/* The collectives view, drawn here on an ncurses screen and read back. */
static bool view_line(const char *needle, char *line, int cap) {
  for (int y = 0; y < 60; y++)
    if (mvinnstr(y, 0, line, cap) != ERR && strstr(line, needle)) return true;
  return false;
}

static void the_collectives_view_shows_the_variant(void) {
  nt_model *m = job();
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
  SCREEN *term = out && in ? newterm("xterm", out, in) : NULL;
  static nt_screen scr;
  static nt_options so;
  bool ok = term && resizeterm(60, 200) == OK;
  char stat[256] = "", recent[256] = "", ring[256] = "", longest[256] = "";
  if (ok) {
    nt_options_defaults(&so);
    so.color = false;
    scr.m = m;
    scr.o = &so;
    scr.f = f;
    scr.now = 2.0;
    scr.view = NT_VIEW_OPS;
    nt_screen_draw(&scr);
    ok = view_line("sym:AGxLL_R", stat, 200) && view_line("node1:201", recent, 200) &&
         view_line("RING", ring, 200) && view_line("sym:RSxTmaLD_AGxTmaST ", longest, 200);
  }
  if (term) {
    endwin();
    delscreen(term);
  }
  if (out) fclose(out);
  if (in) fclose(in);
  CHECK(ok);
  CHECK(strstr(stat, "AllReduce") && strstr(stat, " 20 "));
  CHECK(strstr(recent, "sym:AGxLL_R"));
  CHECK(strstr(ring, "SIMPLE"));
  nt_frame_free(f);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(stats_are_kept_per_variant_name);
  TEST_RUN(json_names_the_variant);
  TEST_RUN(the_collectives_view_shows_the_variant);
  return TEST_DONE();
}

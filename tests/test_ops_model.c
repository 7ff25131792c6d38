/* NCCL's own prediction beside what was measured (nt_model_op_model): a
 * job of 8 ranks on one node of our example's 8 H100 (NVSwitch), the
 * topology sent by its endpoint as the plugin sends NCCL_TOPO_DUMP_FILE.
 *
 * The expected prediction, derived by hand from NCCL 2.28.9's tuning.cc
 * (topo/README.md "Tuning model") on the graphs the search finds there
 * (12 ring channels of 30 GB/s, NVL; test_topo_graphs checks them): Ring
 * Simple AllReduce bandwidth 12 x 30 x 8/14 = 205.714 GB/s, latency 56 us
 * (base 8.4 + 14 steps x NVLink 3.4), so 64 MiB takes 56 + 67108864 /
 * (1000 x 205.714) = 382.2 us; the row below measures twice that: 50% of
 * model. Built from hand-made snapshots; the frame, the text and JSON batch
 * output, the collectives view and the exporter all read the same numbers. */
#include <cjson/cJSON.h>
#include <curses.h>
#include <math.h>
#include <stdlib.h>

#include "../monitor/screen/screen_internal.h"
#include "testlib.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/outputs/exporter.h"
#include "test_exposition.h"
#include "../monitor/core/frame.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"

#define HASH      0x70b0c0117e00ull
#define HASH_WIDE 0x70b0c0117e01ull /* 16 ranks on one node: not this machine */
#define EXAMPLE   "examples/topologies/nvswitch-8gpu-8nic.xml"

/* The hand-derived prediction for 64 MiB (see above), in us. */
static const double predicted_us = 56.0 + 67108864.0 / (1000.0 * 8.0 * 12 * 30 / 14);

/* The job's snapshot number `step` (one every 2 s): the 64 MiB AllReduce
 * has done 10 more operations each time, at `share` of NCCL's speed. */
static nt_snapshot *snap_at(int step, double share) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node0");
  s->pid = 100;
  s->seq = 1 + (uint64_t)step;
  s->mono_ns = 1000000000ull + (uint64_t)step * 2000000000ull;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->process.abi_version = 7;
  s->ncomms = 2;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = 0, .nranks = 8, .nnodes = 1};
  s->comms[1] = (nt_comm_row){.comm_hash = HASH_WIDE, .rank = 0, .nranks = 16, .nnodes = 1};
  uint64_t big = 1ull << 26, measured_ns = (uint64_t)(predicted_us * 1e3 / share);
  uint64_t n = 10 * (1 + (uint64_t)step);
  s->nops = 4;
  /* 64 MiB Ring/Simple AllReduce at half of NCCL's predicted speed */
  s->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .bucket = 26,
                          .count = n,
                          .bytes = n * big,
                          .done = n,
                          .done_bytes = n * big,
                          .time_ns = n * measured_ns,
                          .gpu_done = n};
  /* 1 MiB AllGather not timed yet: a prediction, no share */
  s->ops[1] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLGATHER,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_LL,
                          .bucket = 17,
                          .count = 2,
                          .bytes = 2 << 17};
  /* point-to-point: NCCL's model says nothing */
  s->ops[2] = (nt_op_row){.kind = NT_OP_P2P,
                          .func = NT_FUNC_SEND,
                          .bucket = 20,
                          .count = 1,
                          .bytes = 1 << 20,
                          .done = 1,
                          .done_bytes = 1 << 20,
                          .time_ns = 100000};
  /* a communicator the 8-GPU topology cannot stand for */
  s->ops[3] = (nt_op_row){.kind = NT_OP_COLL,
                          .comm_index = 1,
                          .func = NT_FUNC_ALLREDUCE,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .bucket = 26,
                          .count = 1,
                          .bytes = big,
                          .done = 1,
                          .done_bytes = big,
                          .time_ns = measured_ns};
  return s;
}

static nt_snapshot *snap(void) {
  return snap_at(0, 0.5);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 20);
  *len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  return buf;
}

/* The job; with_topology: its endpoint sent the example's topology. */
static nt_model *job(bool with_topology) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = snap();
  bool ok = m && s && nt_model_apply_snapshot(m, "ep1", 0, s, 1.0) == 0;
  nt_snapshot_free(s);
  if (ok && with_topology) {
    size_t len = 0;
    char *xml = slurp(EXAMPLE, &len);
    ok = xml && nt_model_set_topology(m, xml, len, "ep1", 1.0) == 0;
    free(xml);
  }
  if (!ok) {
    nt_model_free(m);
    return NULL;
  }
  return m;
}

static const nt_frame_opts opts = {.stall_ms = 2000};

static const nt_frame_stat *row(const nt_frame *f, uint64_t comm, int func) {
  for (uint32_t i = 0; i < f->nstats; i++)
    if (f->stats[i].st.comm_hash == comm && f->stats[i].st.func == func) return &f->stats[i];
  return NULL;
}

#define NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol)*fabs((double)(b)))

static void predicted_beside_measured(void) {
  nt_model *m = job(true);
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  const nt_frame_stat *ar = row(f, HASH, NT_FUNC_ALLREDUCE), *ag = row(f, HASH, NT_FUNC_ALLGATHER),
                      *send = row(f, HASH, NT_FUNC_SEND),
                      *wide = row(f, HASH_WIDE, NT_FUNC_ALLREDUCE);
  CHECK(ar && ag && send && wide);
  if (ar && ag && send && wide) {
    CHECK(ar->model.known);
    NEAR(ar->model.time_us, predicted_us, 1e-4);
    NEAR(ar->model.ratio, 0.5, 1e-3);
    /* busBw of 64 MiB in 382.2 us: x 2 x 7/8 (AllReduce on 8 ranks) */
    NEAR(ar->model.busbw_gbs, 67108864.0 * 1.75 / (predicted_us * 1e-6) / 1e9, 1e-4);
    /* the AllGather: a prediction for its nBytes (8 x 128 KiB), no share yet */
    CHECK(ag->model.known && ag->model.time_us > 0 && ag->model.ratio < 0);
    /* the ring's narrowest link: GPU to NVSwitch, NVLink at 370.8 GB/s */
    CHECK(strstr(ar->model.bottleneck, "GPU0->GPU1 NVL") &&
          strstr(ar->model.bottleneck, "370.8 GB/s"));
    CHECK(!send->model.known && send->model.why);
    CHECK(!wide->model.known && wide->model.why && strstr(wide->model.why, "GPUs"));
  }
  nt_frame_free(f);
  nt_model_free(m);
}

static void unknown_without_a_topology(void) {
  nt_model *m = job(false);
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  const nt_frame_stat *ar = row(f, HASH, NT_FUNC_ALLREDUCE);
  CHECK(ar && !ar->model.known && ar->model.time_us == 0 && ar->model.ratio < 0);
  CHECK(ar && ar->model.why && strstr(ar->model.why, "no topology"));
  nt_frame_free(f);
  nt_model_free(m);
}

/* The job's variables reach the model (and a hello revalidates it): with
 * NCCL_P2P_DISABLE=1 NCCL's search finds 2 ring channels of 11 GB/s
 * through the CPU instead of 12 of 30 over NVLink, so it predicts a much
 * slower 64 MiB, and the same measured time is above the model. */
static void the_jobs_variables_move_the_prediction(void) {
  nt_model *m = job(true);
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  const nt_frame_stat *ar = row(f, HASH, NT_FUNC_ALLREDUCE);
  double before = ar ? ar->model.time_us : 0;
  static nt_hello h;
  memset(&h, 0, sizeof h);
  h.major = 1;
  h.minor = 4;
  snprintf(h.host, sizeof h.host, "node0");
  h.pid = 100;
  snprintf(h.nccl_version, sizeof h.nccl_version, "2.28.9");
  h.nenv = 1;
  snprintf(h.env[0].name, sizeof h.env[0].name, "NCCL_P2P_DISABLE");
  snprintf(h.env[0].value, sizeof h.env[0].value, "1");
  CHECK(nt_model_apply_hello(m, "ep1", 0, &h, 2.5) == 0);
  CHECK(nt_frame_build(f, m, test_diag(), &opts, 3.0) == 0);
  ar = row(f, HASH, NT_FUNC_ALLREDUCE);
  CHECK(ar && ar->model.known && before > 0 && ar->model.time_us > before * 10);
  CHECK(ar && ar->model.ratio > 1);
  nt_frame_free(f);
  nt_model_free(m);
}

static const cJSON *item(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void json_and_text_carry_both(void) {
  nt_model *m = job(true);
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  nt_jo w;
  nt_jo_init(&w);
  const char *text = nt_frame_json(f, &w);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  nt_jo_free(&w);
  CHECK(root != NULL);
  int known = 0, unknown = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, item(root, "collectives")) {
    const cJSON *t = item(c, "model_time_us"), *b = item(c, "model_busbw_gbs"),
                *r = item(c, "model_ratio"), *why = item(c, "model_why");
    if (cJSON_IsNumber(t)) {
      known++;
      CHECK(cJSON_IsNumber(b) && cJSON_IsNull(why));
      if (cJSON_IsNumber(item(c, "avg_us"))) NEAR(r->valuedouble, 0.5, 1e-3);
    } else {
      unknown++;
      CHECK(cJSON_IsNull(t) && cJSON_IsNull(b) && cJSON_IsNull(r) && cJSON_IsString(why));
    }
  }
  CHECK(known == 2 && unknown == 2);
  cJSON_Delete(root);
  FILE *t = tmpfile();
  CHECK(t != NULL);
  if (t) {
    nt_frame_text(t, f);
    char buf[16384];
    rewind(t);
    size_t n = fread(buf, 1, sizeof buf - 1, t);
    buf[n] = '\0';
    fclose(t);
    CHECK(strstr(buf, "OF MODEL") && strstr(buf, "MODEL BUSBW"));
    CHECK(strstr(buf, " 50%\n"));
  }
  nt_frame_free(f);
  nt_model_free(m);
}

static void the_exporter_has_the_ratio(void) {
  nt_model *m = job(true);
  FILE *t = tmpfile();
  CHECK(m && t);
  if (m && t) {
    nt_exporter_opts o = {.stall_ms = 2000};
    CHECK(test_exposition(t, m, &o, 2.0) == 0);
    static char buf[1 << 20];
    rewind(t);
    size_t n = fread(buf, 1, sizeof buf - 1, t);
    buf[n] = '\0';
    int ratios = 0, seconds = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
      if (!strncmp(line, "nccltop_operation_model_ratio{", 30)) {
        ratios++;
        CHECK(strstr(line, "collective=\"AllReduce\"") && strstr(line, "nranks=\"8\""));
        NEAR(strtod(strrchr(line, ' ') + 1, NULL), 0.5, 1e-3);
      }
      if (!strncmp(line, "nccltop_operation_model_seconds{", 32)) seconds++;
    }
    CHECK(ratios == 1 && seconds == 2); /* unknown: no sample, never 0 */
  }
  if (t) fclose(t);
  nt_model_free(m);
}

/* The collectives view's MODEL% column: there when wide, the first column
 * dropped at 80. */
static bool view_line(const char *needle, char *line, int cap) {
  for (int y = 0; y < 60; y++)
    if (mvinnstr(y, 0, line, cap) != ERR && strstr(line, needle)) return true;
  return false;
}

static void the_collectives_view_shows_the_share(void) {
  nt_model *m = job(true);
  nt_frame *f = nt_frame_new();
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &opts, 2.0) == 0);
  FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
  SCREEN *term = out && in ? newterm("xterm", out, in) : NULL;
  static nt_screen scr;
  static nt_options so;
  bool wide_ok = false, narrow_dropped = false;
  char line[256] = "", header[256] = "";
  if (term && resizeterm(60, 200) == OK) {
    nt_options_defaults(&so);
    so.color = false;
    scr.m = m;
    scr.o = &so;
    scr.f = f;
    scr.now = 2.0;
    scr.view = NT_VIEW_OPS;
    nt_screen_draw(&scr);
    wide_ok = view_line("MODEL%", header, 200) && view_line(" 50% ", line, 200) &&
              strstr(line, "AllReduce") && strstr(line, "64M-128M");
    if (resizeterm(40, 80) == OK) {
      nt_screen_draw(&scr);
      narrow_dropped = view_line("FUNCTION", header, 80) && !strstr(header, "MODEL%");
    }
  }
  if (term) {
    endwin();
    delscreen(term);
  }
  if (out) fclose(out);
  if (in) fclose(in);
  CHECK(wide_ok);
  CHECK(narrow_dropped);
  nt_frame_free(f);
  nt_model_free(m);
}

/* 60 communicators of one process: 40 of 8 ranks on the 8-GPU machine
 * (one search for all of them), 20 of other sizes it cannot stand for
 * (more shapes than the model keeps computed ones): every 8-rank one
 * predicted alike, frame after frame, the others unknown. */
static void many_communicators_share_the_search(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *s = nt_snapshot_new();
  size_t len = 0;
  char *xml = slurp(EXAMPLE, &len);
  CHECK(m && s && xml);
  snprintf(s->host, sizeof s->host, "node0");
  s->pid = 100;
  s->seq = 1;
  s->mono_ns = 1000000000ull;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->process.abi_version = 7;
  s->ncomms = 60;
  s->nops = 60;
  for (uint32_t c = 0; c < 60; c++) {
    int32_t nranks = c < 40 ? 8 : 9 + (int32_t)(c - 40);
    s->comms[c] = (nt_comm_row){.comm_hash = 0x9000 + c, .nranks = nranks, .nnodes = 1};
    s->ops[c] = (nt_op_row){.kind = NT_OP_COLL,
                            .comm_index = (uint16_t)c,
                            .func = NT_FUNC_ALLREDUCE,
                            .algo = NT_ALGO_RING,
                            .proto = NT_PR_SIMPLE,
                            .bucket = 26,
                            .count = 1,
                            .bytes = 1ull << 26,
                            .done = 1,
                            .done_bytes = 1ull << 26,
                            .time_ns = 1000000};
  }
  CHECK(nt_model_apply_snapshot(m, "ep1", 0, s, 1.0) == 0);
  CHECK(nt_model_set_topology(m, xml, len, "ep1", 1.0) == 0);
  nt_frame *f = nt_frame_new();
  CHECK(f != NULL);
  for (int pass = 0; pass < 2; pass++) {
    CHECK(nt_frame_build(f, m, test_diag(), &opts, 2.0 + pass) == 0);
    CHECK_EQ_U64(f->nstats, 60);
    uint32_t known = 0, alike = 0;
    for (uint32_t i = 0; i < f->nstats; i++) {
      const nt_frame_stat *x = &f->stats[i];
      known += x->model.known;
      alike += x->model.known && x->st.nranks == 8 && fabs(x->model.time_us - predicted_us) < 0.01;
    }
    CHECK_EQ_U64(known, 40);
    CHECK_EQ_U64(alike, 40);
  }
  nt_frame_free(f);
  nt_snapshot_free(s);
  free(xml);
  nt_model_free(m);
}

/* The job runs `steps` more snapshots at `share` of the model (one every
 * 2 s, from t = 3), the diagnosis after each; the slow alerts of the last. */
static uint32_t slow_alerts_after(nt_model *m, int steps, double share, nt_alert *out, uint32_t cap,
                                  double *t) {
  static nt_alert all[64];
  uint32_t n = 0;
  *t = 1.0;
  nt_diag_alerts(test_diag(), m, 2000, all, 64, *t);
  for (int k = 1; k <= steps; k++) {
    *t = 1.0 + 2.0 * k;
    nt_snapshot *s = snap_at(k, share);
    if (!s || nt_model_apply_snapshot(m, "ep1", 0, s, *t) != 0)
      fprintf(stderr, "    snapshot %d refused\n", k); /* then no alert: the caller fails */
    nt_snapshot_free(s);
    uint32_t na = nt_diag_alerts(test_diag(), m, 2000, all, 64, *t);
    n = 0;
    for (uint32_t i = 0; i < na && n < cap; i++)
      if (all[i].kind == NT_ALERT_SLOW) out[n++] = all[i];
  }
  return n;
}

/* 40% of model, interval after interval: nothing before NT_SLOW_SUSTAIN_S,
 * then one line naming the communicator, the row and the link the model
 * says limits the ring. */
static void a_job_below_its_model_is_slow(void) {
  CHECK_STR(nt_alert_kind_name(NT_ALERT_SLOW), "slow");
  nt_model *m = job(true);
  nt_alert a[4];
  double t;
  CHECK(m != NULL);
  if (!m) return;
  CHECK(slow_alerts_after(m, 4, 0.4, a, 4, &t) == 0); /* 8 s below: not yet */
  nt_model_free(m);
  m = job(true);
  CHECK(m != NULL);
  if (!m) return;
  uint32_t n = slow_alerts_after(m, 6, 0.4, a, 4, &t); /* 12 s below */
  CHECK(n == 1);
  if (n == 1) {
    fprintf(stderr, "    %s\n", a[0].text);
    CHECK(a[0].comm_hash == HASH && a[0].nranks == 8 && a[0].func == NT_FUNC_ALLREDUCE);
    CHECK(a[0].count == 1 && a[0].age_s >= NT_SLOW_SUSTAIN_S);
    /* one process reports: its rank is the fastest (test_alerts_slow.c has several) */
    CHECK(strstr(a[0].text, "AllReduce 64M-128M RING/SIMPLE for ") != NULL);
    CHECK(strstr(a[0].text, "fastest rank 0 at 40% of NCCL's model") != NULL);
    CHECK(strstr(a[0].text, "bottleneck: GPU0->GPU1 NVL") != NULL);
  }
  /* the frame and the batch text carry it (no new interval: still slow) */
  nt_frame *f = nt_frame_new();
  CHECK(f && nt_frame_build(f, m, test_diag(), &opts, t) == 0);
  bool in_frame = false;
  for (uint32_t i = 0; i < f->nalerts; i++)
    in_frame |= f->alerts[i].kind == NT_ALERT_SLOW && f->alerts[i].comm_hash == HASH;
  CHECK(in_frame);
  FILE *out = tmpfile();
  CHECK(out != NULL);
  nt_frame_text(out, f);
  char buf[16384];
  rewind(out);
  size_t len = fread(buf, 1, sizeof buf - 1, out);
  buf[len] = '\0';
  fclose(out);
  CHECK(strstr(buf, "ALERT slow") && strstr(buf, "40% of NCCL's model"));
  nt_frame_free(f);
  nt_model_free(m);
}

/* At 90% of model, and without a topology even at 10%, the job stays
 * quiet. */
static void a_healthy_job_or_no_model_stays_quiet(void) {
  nt_alert a[4];
  double t;
  nt_model *m = job(true);
  CHECK(m != NULL);
  if (m) CHECK(slow_alerts_after(m, 8, 0.9, a, 4, &t) == 0);
  nt_model_free(m);
  m = job(false);
  CHECK(m != NULL);
  if (m) CHECK(slow_alerts_after(m, 8, 0.1, a, 4, &t) == 0);
  nt_model_free(m);
}

/* A slowdown that ends: the next intervals at full speed clear it. */
static void a_recovered_job_is_no_longer_slow(void) {
  nt_alert a[4];
  double t;
  nt_model *m = job(true);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(slow_alerts_after(m, 6, 0.4, a, 4, &t) == 1);
  static nt_alert all[64];
  /* the cumulative time stays far below the model; the interval does not */
  nt_snapshot *s = snap_at(7, 0.4);
  if (s) {
    s->ops[0].time_ns -=
        (uint64_t)(10 * predicted_us * 1e3 / 0.4) - (uint64_t)(10 * predicted_us * 1e3);
    CHECK(nt_model_apply_snapshot(m, "ep1", 0, s, t + 2) == 0);
  }
  nt_snapshot_free(s);
  uint32_t na = nt_diag_alerts(test_diag(), m, 2000, all, 64, t + 2), slow = 0;
  for (uint32_t i = 0; i < na; i++) slow += all[i].kind == NT_ALERT_SLOW;
  CHECK(slow == 0);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(predicted_beside_measured);
  TEST_RUN(unknown_without_a_topology);
  TEST_RUN(the_jobs_variables_move_the_prediction);
  TEST_RUN(json_and_text_carry_both);
  TEST_RUN(the_exporter_has_the_ratio);
  TEST_RUN(the_collectives_view_shows_the_share);
  TEST_RUN(many_communicators_share_the_search);
  TEST_RUN(a_job_below_its_model_is_slow);
  TEST_RUN(a_healthy_job_or_no_model_stays_quiet);
  TEST_RUN(a_recovered_job_is_no_longer_slow);
  return TEST_DONE();
}

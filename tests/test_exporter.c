/* `nccltop exporter`: the exposition passes `promtool check metrics`, its
 * numbers are those of `nccltop -b --json` and of the simulator's
 * deterministic schedule, hostile publisher strings stay inside their
 * label values, and the HTTP side behaves: 404 for another path, HEAD,
 * 405 for POST, concurrent scrapes, and a textfile that is never read half
 * written. The Prometheus server test is test_exporter_prom.c. */
#include <math.h>
#include <pthread.h>

#include "exporter_harness.h"
#include "../monitor/outputs/exporter.h"
#include "test_exposition.h"
#include "../monitor/core/model.h"
#include "test_diag.h"

#define HASH 0x00c0ffee12345678ull
/* The only complaints promtool may have: the NCCL Inspector's names keep
 * its units (documented in the README). */
static const char *const inspector_lint[] = {
    "nccl_collective_exec_time_microseconds use base unit \"seconds\" instead of \"microseconds\"",
    "nccl_p2p_exec_time_microseconds use base unit \"seconds\" instead of \"microseconds\"",
};

/* Whether promtool's verdict on text is clean but for the Inspector's
 * documented unit lines; says why not on stderr. */
static bool promtool_ok(const char *text) {
  char out[8192];
  int rc = promtool_check(text, out, sizeof out);
  bool ok = rc == 0 || rc == 3;
  for (char *line = strtok(out, "\n"); ok && line; line = strtok(NULL, "\n")) {
    bool known = false;
    for (size_t i = 0; i < 2; i++) known |= !strcmp(line, inspector_lint[i]);
    if (!known) {
      fprintf(stderr, "    promtool: %s\n", line);
      ok = false;
    }
  }
  if (rc != 0 && rc != 3) fprintf(stderr, "    promtool exit status %d: %s\n", rc, out);
  return ok;
}

/* ---- the renderer on a model filled here ---- */

static nt_snapshot *snap(uint64_t seq, uint64_t mono_ns, uint64_t k) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "gpu\"7\\n\x1b[31m}\n# TYPE x counter");
  s->pid = 4242;
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->interval_ms = 100;
  s->process = (nt_process_counters){.events = 1000 + k, .dropped_events = 1, .abi_version = 5};
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = 1, .nranks = 2, .nnodes = 1};
  s->nproxy = 1;
  s->proxy[0] = (nt_proxy_row){.tid = 77, .state = NT_PROXY_SLEEP, .state_ns = {k, 2 * k, k}};
  s->nchannels = 2;
  s->channels[0] = (nt_channel_row){.channel = 1,
                                    .dir = NT_DIR_SEND,
                                    .wait_ns = {k, k * 3, k * 2},
                                    .steps = k,
                                    .bytes = k * 4096,
                                    .cur_step = -1,
                                    .cur_wait = NT_WAIT_NONE,
                                    .progress_age_ns = UINT64_MAX};
  s->channels[1] = s->channels[0];
  s->channels[1].channel = 2;
  s->channels[1].wait_ns[0] = 5 * k;
  return s;
}

static nt_model *filled_model(const char *comm_name) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(1, 1000000000ull, 1000), *b = snap(2, 1500000000ull, 3000);
  bool ok = m && a && b;
  if (ok) {
    nt_comm_info ci = {.pid = 4242, .comm_hash = HASH};
    snprintf(ci.name, sizeof ci.name, "%s", comm_name);
    ok = nt_model_apply_snapshot(m, "ipc:///d/4242.sock", 4242, a, 1.0) == 0 &&
         nt_model_apply_snapshot(m, "ipc:///d/4242.sock", 4242, b, 1.5) == 0 &&
         nt_model_apply_comm(m, "ipc:///d/4242.sock", 4242, &ci, 1.5) == 0;
  }
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  if (!ok) nt_model_free(m);
  return ok ? m : NULL;
}

static char *render(nt_model *m, bool per_channel, bool inspector) {
  nt_exporter_opts o = {.stall_ms = 2000, .per_channel = per_channel, .inspector = inspector};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int rc = test_exposition(f, m, &o, 1.6);
  if (fclose(f) != 0 || rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* ---- one door: the exposition is the frame's ---- */

#define RING_HASH 0x00ab000000000001ull

/* Rank r of a 4-rank ring on one host; from `stuck` on, its channels are
 * running without progress (waiting on their peers) and an AllReduce stays
 * in flight. */
static nt_snapshot *ring_snap(int r, uint64_t seq, double t, bool stuck) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node0");
  s->pid = 1000 + (uint32_t)r;
  s->seq = seq;
  s->mono_ns = (uint64_t)(t * 1e9);
  s->interval_ms = 100;
  s->process = (nt_process_counters){.events = 100 * seq, .abi_version = 5};
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = RING_HASH, .rank = r, .nranks = 4, .nnodes = 1};
  s->nchannels = 2;
  for (int c = 0; c < 2; c++)
    s->channels[c] = (nt_channel_row){.dir = c ? NT_DIR_RECV : NT_DIR_SEND,
                                      .peer = c ? (r + 3) % 4 : (r + 1) % 4,
                                      .wait_ns = {seq, 2 * seq, 3 * seq},
                                      .steps = stuck ? 40 : 10 * seq,
                                      .bytes = (stuck ? 40 : 10 * seq) * 4096,
                                      .cur_step = 5,
                                      .cur_wait = c ? NT_WAIT_RECV_NET : NT_WAIT_SEND_PEER,
                                      .progress_age_ns = stuck ? 9000000000ull : 1000,
                                      .ops_started = 3,
                                      .ops_done = stuck ? 2 : 3,
                                      .run_state = NT_RUN_RUNNING};
  s->nseq = 1;
  s->seq_rows[0] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = 50, .done = 49};
  s->noplog = 1;
  s->oplog[0] = (nt_oplog_row){.kind = NT_OP_COLL,
                               .func = NT_FUNC_ALLREDUCE,
                               .seq = 50,
                               .bytes = 1 << 20,
                               .state = stuck ? NT_OPS_IN_FLIGHT : NT_OPS_DONE,
                               .age_ns = 5000000000ull + (uint64_t)r,
                               .children = 4,
                               .children_open = 2};
  return s;
}

/* Applies step k of the ring (rank 3 silent from step 3: the others' waits
 * end at it); false when out of memory. */
static bool ring_step(nt_model *m, int k, double t, bool stuck) {
  for (int r = 0; r < 4; r++) {
    if (stuck && k >= 3 && r == 3) continue;
    char ep[32];
    snprintf(ep, sizeof ep, "ipc:///d/%d.sock", 1000 + r);
    nt_snapshot *s = ring_snap(r, (uint64_t)k + 1, t, stuck && k >= 2);
    bool ok = s && nt_model_apply_snapshot(m, ep, 1000 + (uint32_t)r, s, t) == 0;
    nt_snapshot_free(s);
    if (!ok) return false;
  }
  nt_model_tick(m, t);
  return true;
}

/* The value of the first sample whose line starts with `head`; NaN none. */
static double sample_of(const char *text, const char *head) {
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, head, strlen(head)) != 0) continue;
    const char *end = strchr(p, '\n'), *sp = NULL;
    for (const char *q = p; q < (end ? end : p + strlen(p)); q++)
      if (*q == ' ') sp = q;
    return sp ? strtod(sp + 1, NULL) : NAN;
  }
  return NAN;
}

/* The exporter reads the frame only: rendered after the model moved on
 * (the stall over) and was freed, its stall, operation and alert gauges
 * are still the frame's, equal to what the screen and the JSON show. */
static void the_exposition_is_the_frames_after_the_model_moved_on(void) {
  nt_model *m = nt_model_new();
  nt_frame *fr = nt_frame_new();
  nt_exporter_opts o = {.stall_ms = 2000};
  nt_frame_opts fo = nt_exporter_frame_opts(&o);
  bool ok = m && fr;
  double t = 1.0;
  for (int k = 0; ok && k < 6; k++, t += 1.0) {
    ok = ring_step(m, k, t, true) && nt_frame_build(fr, m, test_diag(), &fo, t) == 0;
  }
  /* the stall ends in the model; the frame was built before */
  for (int k = 6; ok && k < 8; k++, t += 1.0) ok = ring_step(m, k, t, false);
  nt_model_free(m);
  CHECK(ok);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(f);
  int rc = nt_exporter_render(f, fr, &o);
  CHECK(fclose(f) == 0 && rc == 0);
  /* the scenario is what it should be: ranks stalled, a root */
  uint32_t stalled = 0, roots = 0;
  for (uint32_t i = 0; i < fr->nranks; i++) stalled += fr->ranks[i].stalled;
  for (uint32_t i = 0; i < fr->nalerts; i++) roots += fr->alerts[i].kind == NT_ALERT_ROOT;
  bool fine = stalled >= 4 && roots == 1 && fr->nranks == 4;
  for (uint32_t i = 0; fine && i < fr->nranks; i++) {
    const nt_frame_rank *r = &fr->ranks[i];
    char head[160];
    snprintf(head, sizeof head, "nccltop_channels_stalled{host=\"node0\",pid=\"%u\",rank=\"%d\",",
             nt_frame_proc_of(fr, r)->pid, r->rank);
    fine = sample_of(buf, head) == r->stalled;
    if (!fine)
      fprintf(stderr, "    %s: %g, the frame's %u\n", head, sample_of(buf, head), r->stalled);
    double oldest = 0;
    for (uint32_t k = r->op0; k < r->op0 + r->nops; k++)
      if (fr->ops[k].age_s > oldest) oldest = fr->ops[k].age_s;
    snprintf(head, sizeof head,
             "nccltop_operations_in_flight{host=\"node0\",pid=\"%u\",rank=\"%d\",",
             nt_frame_proc_of(fr, r)->pid, r->rank);
    fine = fine && sample_of(buf, head) == r->nops;
    snprintf(head, sizeof head,
             "nccltop_operation_oldest_in_flight_seconds{host=\"node0\",pid=\"%u\",rank=\"%d\",",
             nt_frame_proc_of(fr, r)->pid, r->rank);
    fine = fine && sample_of(buf, head) == oldest;
  }
  for (int k = 0; fine && k < NT_ALERT_COUNT; k++) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < fr->nalerts; i++) n += fr->alerts[i].kind == k;
    char head[96];
    snprintf(head, sizeof head, "nccltop_alerts{kind=\"%s\"}", nt_alert_kind_name(k));
    fine = sample_of(buf, head) == n;
    if (!fine) fprintf(stderr, "    %s: %g, the frame's %u\n", head, sample_of(buf, head), n);
  }
  for (uint32_t i = 0; fine && i < fr->nalerts; i++) {
    const nt_frame_alert *a = &fr->alerts[i];
    if (a->kind != NT_ALERT_ROOT) continue;
    char head[160];
    snprintf(head, sizeof head, "nccltop_stall_root_waiting_ranks{host=\"%s\",pid=\"%u\",", a->host,
             a->pid);
    fine = sample_of(buf, head) == a->count;
    snprintf(head, sizeof head, "nccltop_stall_root_seconds{host=\"%s\",pid=\"%u\",", a->host,
             a->pid);
    fine = fine && sample_of(buf, head) == a->age_s;
  }
  free(buf);
  nt_frame_free(fr);
  CHECK(fine);
}

static void label_values_are_escaped(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(f);
  nt_prom_label_value(f, "a\"b\\c\nd\x01}e");
  CHECK(fclose(f) == 0);
  CHECK_STR(buf, "a\\\"b\\\\c\\nd?}e");
  free(buf);
}

/* Undoes the exposition's escapes of the label value starting at p (after
 * the opening quote) into out; returns the end quote, NULL if none. */
static const char *unescape(const char *p, char *out, size_t cap) {
  size_t n = 0;
  for (; *p && *p != '"'; p++) {
    char c = *p;
    if (c == '\\') {
      c = *++p;
      if (c == 'n')
        c = '\n';
      else if (c != '\\' && c != '"')
        return NULL;
    }
    if (n + 1 < cap) out[n++] = c;
  }
  out[n] = '\0';
  return *p == '"' ? p : NULL;
}

static void hostile_publisher_strings_stay_in_their_labels(void) {
  const char *hostile = "dp\"} 1\nnccltop_fake 9\\";
  nt_model *m = filled_model(hostile);
  CHECK(m);
  nt_model_rank r;
  CHECK(nt_model_ranks(m, &r, 1) == 1);
  char want_host[sizeof r.proc->host], want_name[256];
  snprintf(want_host, sizeof want_host, "%s", r.proc->host);
  snprintf(want_name, sizeof want_name, "%s", r.comm_name);
  char *text = render(m, false, false);
  nt_model_free(m);
  CHECK(text);
  /* Every line is a comment or one of our families: nothing injected. */
  int samples = 0;
  bool ok = true;
  for (char *line = text; ok && *line;) {
    char *eol = strchr(line, '\n');
    ok = eol && (line[0] == '#' || !strncmp(line, "nccltop_", 8));
    if (ok && line[0] != '#' && strstr(line, "comm_name=\"") && strstr(line, "host=\"")) {
      char host[512], name[512];
      const char *h = unescape(strstr(line, "host=\"") + 6, host, sizeof host);
      const char *c = unescape(strstr(line, "comm_name=\"") + 11, name, sizeof name);
      ok = h && c && !strcmp(host, want_host) && !strcmp(name, want_name);
      if (!ok) fprintf(stderr, "    line: %.*s\n", (int)(eol - line), line);
      samples++;
    }
    line = eol ? eol + 1 : line + strlen(line);
  }
  bool clean = promtool_ok(text);
  free(text);
  CHECK(ok);
  CHECK(samples > 10);
  CHECK(strchr(want_name, '"') && strchr(want_host, '"')); /* the quotes did arrive */
  CHECK(clean);
}

static void exposition_of_a_model_passes_promtool(void) {
  if (!have_promtool()) {
    fprintf(stderr, "    promtool is not installed (Debian package prometheus)\n");
    CHECK(!"promtool missing: run scripts/install-deps.sh");
  }
  nt_model *m = filled_model("dp");
  CHECK(m);
  char *plain = render(m, false, false), *channels = render(m, true, true);
  nt_model_free(m);
  char out[4096];
  int rc = plain ? promtool_check(plain, out, sizeof out) : -1;
  if (rc) fprintf(stderr, "    promtool (%d): %s\n", rc, out);
  bool per = channels && promtool_ok(channels);
  /* Per rank, summed over the two send channels; per channel apart. */
  const char *const send_gpu[] = {"rank=\"1\"", "wait=\"send_gpu_wait\"", NULL};
  const char *const ch2[] = {"channel=\"2\"", "wait=\"send_gpu_wait\"", NULL};
  double sum = plain ? prom_value(plain, "nccltop_channel_wait_seconds_total", send_gpu) : 0;
  double one = channels ? prom_value(channels, "nccltop_channel_wait_seconds_total", ch2) : 0;
  const char *const idle[] = {"tid=\"77\"", "state=\"active\"", NULL};
  double active = plain ? prom_value(plain, "nccltop_proxy_state_seconds_total", idle) : 0;
  free(plain);
  free(channels);
  CHECK_EQ_U64(rc, 0);
  CHECK(per);
  CHECK(sum == (3000.0 + 15000.0) / 1e9);
  CHECK(one == 15000.0 / 1e9);
  CHECK(active == 6000.0 / 1e9);
}

/* ---- a live job ---- */

static http_reply scrape(int port) {
  http_reply r;
  if (!http_request(port, "GET", "/metrics", NULL, 10, &r)) r.status = -1;
  return r;
}

/* Scrapes until rank 0's send steps reach the schedule's total. */
/* A scrape once every rank's send steps are all in (each publisher finds
 * the exporter's socket on its own scan: they do not arrive together). */
static http_reply scrape_done(const nt_sim_config *c, int port) {
  http_reply r = {0};
  for (double end = now_s() + 30; now_s() < end; nap_ms(200)) {
    http_free(&r);
    r = scrape(port);
    bool all = r.status == 200;
    for (int rank = 0; all && rank < c->ranks; rank++) {
      uint64_t want = 0;
      for (int ch = 0; ch < c->channels; ch++) {
        nt_sim_channel_expect x;
        nt_sim_expect_channel(c, rank, 0, ch, NT_DIR_SEND, &x);
        want += x.steps;
      }
      char rl[32];
      snprintf(rl, sizeof rl, "rank=\"%d\"", rank);
      const char *const must[] = {rl, "dir=\"send\"", NULL};
      all = prom_value(r.body, "nccltop_channel_steps_total", must) == (double)want;
    }
    if (all) break;
  }
  return r;
}

/* `nccltop -b --json` on dir: its third frame. */
static cJSON *json_frame(const char *dir) {
  char cmd[PATH_MAX * 2];
  snprintf(cmd, sizeof cmd, "'%s' -b --json -n 3 -d 300 --dir '%s'", nccltop, dir);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  static char line[1 << 22];
  cJSON *last = NULL;
  while (fgets(line, sizeof line, p)) {
    cJSON_Delete(last);
    last = cJSON_Parse(line);
  }
  pclose(p);
  return last;
}

static void numbers_equal_the_schedule_and_the_json_frame(void) {
  nt_sim_config c;
  char dir[24];
  pid_t sim = exporter_det_job(&c, dir);
  exporter e = {.pid = -1};
  const char *const inspector[] = {"--inspector", NULL};
  bool started = sim > 0 && exporter_start(&e, dir, "200ms", inspector);
  http_reply r = started ? scrape_done(&c, e.port) : (http_reply){0};
  cJSON *f = started ? json_frame(dir) : NULL;
  exporter_stop(&e);
  stop_group(&sim);
  remove_dir(dir);
  CHECK(started);
  CHECK(r.status == 200);
  CHECK(f);
  bool promtool_clean = promtool_ok(r.body);
  /* Channel waits: the schedule's nanoseconds, per rank and wait state. */
  int checked = 0;
  char hex[17];
  for (int rank = 0; rank < c.ranks; rank++) {
    for (int dir_i = 0; dir_i < 2; dir_i++) {
      for (int k = 0; k < 3; k++) {
        uint64_t ns = 0;
        for (int ch = 0; ch < c.channels; ch++) {
          nt_sim_channel_expect x;
          nt_sim_expect_channel(&c, rank, 0, ch, dir_i, &x);
          ns += x.wait_ns[k];
        }
        char rl[32], wl[64];
        snprintf(rl, sizeof rl, "rank=\"%d\"", rank);
        snprintf(wl, sizeof wl, "wait=\"%s\"", nt_wait_name(nt_dir_wait(dir_i, k)));
        const char *const must[] = {rl, wl, NULL};
        double got = prom_value(r.body, "nccltop_channel_wait_seconds_total", must);
        if (!close_to(got, (double)ns / 1e9)) {
          fprintf(stderr, "    rank %d %s: %.9f s, the schedule says %.9f\n", rank, wl, got,
                  (double)ns / 1e9);
          http_free(&r);
          cJSON_Delete(f);
          CHECK(!"wait time");
        }
        checked++;
      }
    }
  }
  /* Proxy thread time per state: the schedule's nanoseconds. */
  for (int rank = 0; rank < c.ranks; rank++) {
    nt_sim_proxy_expect px;
    nt_sim_expect_proxy(&c, rank, 0, &px);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) {
      char rl[32], sl[32];
      snprintf(rl, sizeof rl, "rank=\"%d\"", rank);
      snprintf(sl, sizeof sl, "state=\"%s\"", nt_proxy_state_name(k));
      const char *const must[] = {rl, sl, NULL};
      double got = prom_value(r.body, "nccltop_proxy_state_seconds_total", must);
      if (!close_to(got, (double)px.state_ns[k] / 1e9)) {
        fprintf(stderr, "    rank %d %s: %.9f s, the schedule says %.9f\n", rank, sl, got,
                (double)px.state_ns[k] / 1e9);
        http_free(&r);
        cJSON_Delete(f);
        CHECK(!"proxy state time");
      }
      checked++;
    }
  }
  /* Bus bandwidth and durations: what the JSON frame's collectives say. */
  const cJSON *x;
  int rows = 0, bad = 0;
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    if (strcmp(str(x, "kind"), "coll") || !cJSON_IsNumber(get(x, "busbw_gbs"))) continue;
    char cl[64], al[64], hl[64];
    snprintf(cl, sizeof cl, "collective=\"%s\"", str(x, "func"));
    snprintf(al, sizeof al, "algo_proto=\"%s_%s\"", str(x, "algo"), str(x, "proto"));
    /* message_size is the Inspector's; the bucket's own size label is
     * on nccltop_operations_total: match through the bucket's bytes. */
    char sz[32];
    double lo = ldexp(1.0, (int)num(x, "bucket"));
    int u = 0;
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    while (lo >= 1024 && u < 4) lo /= 1024, u++;
    snprintf(sz, sizeof sz, "message_size=\"%.0f-%.0f%s\"", floor(lo), floor(lo) + 1, units[u]);
    snprintf(hl, sizeof hl, "comm_hash=\"%s\"", str(x, "comm"));
    const char *const must[] = {cl, al, sz, hl, NULL};
    double bw = prom_value(r.body, "nccl_bus_bandwidth_gbs", must);
    double us = prom_value(r.body, "nccl_collective_exec_time_microseconds", must);
    if (!close_to(bw, num(x, "busbw_gbs")) || !close_to(us, num(x, "avg_us"))) {
      fprintf(stderr, "    %s %s %s: %g GB/s %g us, JSON %g GB/s %g us\n", cl, al, sz, bw, us,
              num(x, "busbw_gbs"), num(x, "avg_us"));
      bad++;
    }
    rows++;
  }
  (void)hex;
  http_free(&r);
  cJSON_Delete(f);
  CHECK_EQ_U64(checked, 4 * 2 * 3 + 4 * NT_PROXY_NSTATES);
  CHECK(rows > 0);
  CHECK_EQ_U64(bad, 0);
  CHECK(promtool_clean);
}

typedef struct {
  int port;
  int status;
  size_t len;
  bool complete;
  int scrapes;
} scrape_job;

/* Scrapes in a row for 1.5 s; the first failure is kept. */
static void *scrape_thread(void *arg) {
  scrape_job *j = arg;
  j->complete = true;
  for (double end = now_s() + 1.5; now_s() < end && j->complete; j->scrapes++) {
    http_reply r = scrape(j->port);
    j->status = r.status;
    j->len = r.body_len;
    j->complete = r.status == 200 && strstr(r.body, "\nnccltop_exporter_render_seconds ");
    http_free(&r);
  }
  return NULL;
}

static double renders(int port) {
  http_reply r = scrape(port);
  double v = r.status == 200 ? prom_value(r.body, "nccltop_exporter_renders_total", NULL) : NAN;
  http_free(&r);
  return v;
}

static void http_paths_methods_and_concurrent_scrapes(void) {
  nt_sim_config c;
  char dir[24];
  pid_t sim = exporter_det_job(&c, dir);
  exporter e = {.pid = -1};
  bool started = sim > 0 && exporter_start(&e, dir, "100ms", NULL);
  http_reply g = {0}, h = {0}, post = {0}, nf = {0}, q = {0};
  enum { N = 16 };
  scrape_job jobs[N];
  pthread_t t[N];
  int made = 0;
  double r0 = NAN, r1 = NAN, t0 = 0, t1 = 0;
  if (started) {
    g = scrape_done(&c, e.port);
    http_request(e.port, "HEAD", "/metrics", NULL, 10, &h);
    http_request(e.port, "POST", "/metrics", "x=1", 10, &post);
    http_request(e.port, "GET", "/nope", NULL, 10, &nf);
    http_request(e.port, "GET", "/metrics?x=1", NULL, 10, &q);
    r0 = renders(e.port);
    t0 = now_s();
    for (; made < N; made++) {
      jobs[made] = (scrape_job){.port = e.port};
      if (pthread_create(&t[made], NULL, scrape_thread, &jobs[made]) != 0) break;
    }
    for (int i = 0; i < made; i++) pthread_join(t[i], NULL);
    t1 = now_s();
    r1 = renders(e.port);
  }
  exporter_stop(&e);
  stop_group(&sim);
  remove_dir(dir);
  char ct[128] = "", hlen[32] = "", allow[64] = "";
  http_header(&g, "Content-Type", ct, sizeof ct);
  http_header(&h, "Content-Length", hlen, sizeof hlen);
  http_header(&post, "Allow", allow, sizeof allow);
  int good = 0, total = 0;
  for (int i = 0; i < made; i++) {
    good += jobs[i].status == 200 && jobs[i].complete && jobs[i].len > 1000;
    total += jobs[i].scrapes;
  }
  bool head_ok = h.status == 200 && h.body_len == 0 && atol(hlen) > 1000;
  int gs = g.status, ps = post.status, ns = nf.status, qs = q.status;
  /* The default exposition of a running job passes promtool clean. */
  char pout[4096] = "";
  int prc = gs == 200 && g.body ? promtool_check(g.body, pout, sizeof pout) : -1;
  if (prc) fprintf(stderr, "    promtool (%d): %s\n", prc, pout);
  http_free(&g);
  http_free(&h);
  http_free(&post);
  http_free(&nf);
  http_free(&q);
  CHECK(started);
  CHECK_EQ_U64(gs, 200);
  CHECK_EQ_U64(prc, 0);
  CHECK_STR(ct, "text/plain; version=0.0.4; charset=utf-8");
  CHECK(head_ok);
  CHECK_EQ_U64(ps, 405);
  CHECK_STR(allow, "GET, HEAD");
  CHECK_EQ_U64(ns, 404);
  CHECK_EQ_U64(qs, 200);
  CHECK_EQ_U64(made, N);
  CHECK_EQ_U64(good, N);
  /* Renders went on at their pace (every 100 ms) while 16 clients scraped
   * without a pause: at least half of them (a loaded machine). */
  fprintf(stderr, "    %d scrapes by %d clients in %.2f s; %.0f renders meanwhile\n", total, N,
          t1 - t0, r1 - r0);
  CHECK(total >= 2 * N);
  CHECK(r1 - r0 >= (t1 - t0) / 0.1 / 2);
}

/* The textfile (--per-channel) is replaced every 50 ms while it is read:
 * every read is a whole exposition that promtool accepts, and no temporary
 * file is left behind. */
static void textfile_is_written_atomically(void) {
  nt_sim_config c;
  char dir[24], out[64];
  pid_t sim = exporter_det_job(&c, dir);
  snprintf(out, sizeof out, "/tmp/nccltop-tf-XXXXXX");
  bool made = mkdtemp(out) != NULL;
  const char *const extra[] = {"--textfile", out, "--per-channel", NULL};
  exporter e = {.pid = -1};
  bool started = made && sim > 0 && exporter_start(&e, dir, "50ms", extra);
  char path[128];
  snprintf(path, sizeof path, "%s/nccltop.prom", out);
  int reads = 0, whole = 0;
  static char buf[1 << 20];
  for (double end = now_s() + 3; started && now_s() < end; nap_ms(5)) {
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    reads++;
    const char *last = strstr(buf, "\nnccltop_exporter_render_seconds ");
    whole += !strncmp(buf, "# HELP ", 7) && last && buf[n - 1] == '\n' && !strchr(last + 1, '#');
  }
  exporter_stop(&e);
  stop_group(&sim);
  remove_dir(dir);
  /* The last file read, of a running job with per-channel series. */
  const char *const ch[] = {"channel=\"1\"", "peer=\"2\"", "rank=\"3\"", NULL};
  bool per_channel = prom_value(buf, "nccltop_channel_steps_total", ch) > 0;
  bool clean = reads && promtool_ok(buf);
  int left = 0;
  DIR *d = made ? opendir(out) : NULL;
  for (struct dirent *x; d && (x = readdir(d));) left += !strncmp(x->d_name, ".nccltop.prom.", 14);
  if (d) closedir(d);
  struct stat st;
  bool readable = stat(path, &st) == 0 && (st.st_mode & 0444) == 0444;
  if (made) remove_dir(out);
  CHECK(started);
  CHECK(reads >= 50);
  CHECK_EQ_U64(whole, reads);
  CHECK_EQ_U64(left, 0);
  CHECK(readable);
  CHECK(per_channel);
  CHECK(clean);
}

static int run_status(const char *const *args) {
  char cmd[1024];
  int n = snprintf(cmd, sizeof cmd, "'%s' exporter", nccltop);
  for (int i = 0; args[i]; i++) n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s", args[i]);
  snprintf(cmd + n, sizeof cmd - (size_t)n, " >/dev/null 2>&1");
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What `nccltop SUB ARGS` prints on stderr (first line), and its status. */
static int said(const char *sub, const char *args, char *line, size_t cap) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%.900s' %s %s 2>&1 >/dev/null", nccltop, sub, args);
  FILE *p = popen(cmd, "r");
  line[0] = '\0';
  if (!p) return -1;
  if (!fgets(line, (int)cap, p)) line[0] = '\0';
  while (fgetc(p) != EOF) {
  }
  int st = pclose(p);
  line[strcspn(line, "\n")] = '\0';
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The viewer's options that record and the exporter share are checked in
 * one place: the same ranges and words, said as the subcommand (record
 * took --hosts twice silently, and said ranges its own way). */
static void shared_options_say_what_the_viewer_says(void) {
  static const char *const bad[] = {"--stall-ms 5", "--max-memory 1", "-d 1ms",
                                    "--hosts a --hosts b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char viewer[512], exp[512], rec[512], args[256];
    int sv = said("", bad[i], viewer, sizeof viewer);
    int se = said("exporter", bad[i], exp, sizeof exp);
    bool record_has_it = strcmp(bad[i], "-d 1ms") != 0; /* record has no -d */
    snprintf(args, sizeof args, "/tmp/nccltop-never-written %s", bad[i]);
    int sr = record_has_it ? said("record", args, rec, sizeof rec) : 2;
    const char *v = strchr(viewer, ':'), *e = strchr(exp, ':'), *r = strchr(rec, ':');
    bool same = v && e && !strcmp(v, e) && (!record_has_it || (r && !strcmp(v, r)));
    if (!same || sv != 2 || se != 2 || sr != 2)
      fprintf(stderr, "    %s: viewer %d '%s', exporter %d '%s', record %d '%s'\n", bad[i], sv,
              viewer, se, exp, sr, record_has_it ? rec : "-");
    CHECK(sv == 2 && se == 2 && sr == 2 && same);
    CHECK(!strncmp(exp, "nccltop exporter: ", 18));
  }
}

/* SIGINT, SIGTERM and SIGHUP (the ssh session that started it closing)
 * each stop the exporter cleanly: status 0, as every command does. */
static void every_stop_signal_ends_it_cleanly(void) {
  char dir[] = "/tmp/nccltop-expsig-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    exporter e = {.pid = -1};
    bool started = exporter_start(&e, dir, "100ms", NULL);
    int st = started ? (kill(e.pid, sigs[i]), wait_exit(e.pid, 10)) : -1;
    if (st == -1 && e.pid > 0) {
      kill(e.pid, SIGKILL);
      waitpid(e.pid, NULL, 0);
    }
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
      fprintf(stderr, "    signal %d: wait status %d\n", sigs[i], st);
    CHECK(started && st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  remove_dir(dir);
}

static void bad_options_are_refused(void) {
  CHECK_EQ_U64(run_status((const char *const[]){"--listen", "nonsense", NULL}), 2);
  CHECK_EQ_U64(run_status((const char *const[]){"--listen", "127.0.0.1:99999", NULL}), 2);
  CHECK_EQ_U64(run_status((const char *const[]){"--textfile", "/nonexistent/x", NULL}), 2);
  CHECK_EQ_U64(run_status((const char *const[]){"--bogus", NULL}), 2);
  CHECK_EQ_U64(run_status((const char *const[]){"-d", "1ms", NULL}), 2);
  CHECK_EQ_U64(run_status((const char *const[]){"--help", NULL}), 0);
}

/* A port in use is one line that names the address asked for; the
 * library's own line ("Failed to bind to port 0") no longer goes with it. */
static void a_busy_port_is_one_line(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  bool held = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0 &&
              getsockname(fd, (struct sockaddr *)&sa, &len) == 0;
  CHECK(held);
  if (!held) {
    if (fd >= 0) close(fd);
    return;
  }
  char cmd[1200], want[128], out[4096] = "";
  snprintf(want, sizeof want,
           "nccltop exporter: cannot listen on 127.0.0.1:%u: ", ntohs(sa.sin_port));
  snprintf(cmd, sizeof cmd, "'%.900s' exporter --listen 127.0.0.1:%u 2>&1 >/dev/null", nccltop,
           ntohs(sa.sin_port));
  FILE *p = popen(cmd, "r");
  size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
  out[got] = '\0';
  int st = p ? pclose(p) : -1;
  close(fd);
  int lines = 0;
  for (const char *c = out; *c; c++) lines += *c == '\n';
  if (lines != 1 || strncmp(out, want, strlen(want)) != 0) fprintf(stderr, "    said: %s", out);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
  CHECK_EQ_U64(lines, 1);
  CHECK(!strncmp(out, want, strlen(want)) && strstr(out, "in use"));
}

int main(void) {
  scenario_init();
  signal(SIGPIPE, SIG_IGN);
  TEST_RUN(label_values_are_escaped);
  TEST_RUN(the_exposition_is_the_frames_after_the_model_moved_on);
  TEST_RUN(hostile_publisher_strings_stay_in_their_labels);
  TEST_RUN(exposition_of_a_model_passes_promtool);
  TEST_RUN(numbers_equal_the_schedule_and_the_json_frame);
  TEST_RUN(http_paths_methods_and_concurrent_scrapes);
  TEST_RUN(textfile_is_written_atomically);
  TEST_RUN(every_stop_signal_ends_it_cleanly);
  TEST_RUN(shared_options_say_what_the_viewer_says);
  TEST_RUN(bad_options_are_refused);
  TEST_RUN(a_busy_port_is_one_line);
  return TEST_DONE();
}

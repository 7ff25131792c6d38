/* Batch output: the JSON frame parses back with the documented names and
 * exact values, is one line, carries hostile strings escaped exactly once;
 * the text frame has the expected rows; the command line takes the batch
 * options and refuses bad values. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "testlib.h"
#include "json_get.h"
#include "batch_frame.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"

#define HASH 0x00c0ffee12345678ull

static nt_snapshot *snap(uint64_t seq, uint64_t mono_ns, uint64_t k) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "gpu\x1b[31m\"7");
  s->pid = 4242;
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->interval_ms = 100;
  s->process = (nt_process_counters){.events = 1000 + k,
                                     .dropped_events = 1,
                                     .unknown_events = 2,
                                     .foreign_ops = 3,
                                     .reclaimed_ops = 4,
                                     .dropped_rows = 5,
                                     .unsent_messages = 6,
                                     .event_mask = 0x3e,
                                     .abi_version = 5};
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH,
                              .rank = 1,
                              .nranks = 2,
                              .nnodes = 1,
                              .colls_enqueued = 9,
                              .p2ps_enqueued = 2};
  s->nproxy = 2;
  s->proxy[0] = (nt_proxy_row){.tid = 77,
                               .state = NT_PROXY_SLEEP,
                               .state_age_ns = 2500000,
                               .state_ns = {k * 1, k * 2, k * 1, 0, 0},
                               .appends = 11,
                               .appended_ops = 12,
                               .wakeups = 13};
  s->proxy[1] = (nt_proxy_row){.comm_index = NT_NO_COMM, .tid = 78, .state = NT_PROXY_IDLE};
  s->nchannels = 2;
  s->channels[0] = (nt_channel_row){.channel = 1,
                                    .dir = NT_DIR_SEND,
                                    .peer = 0,
                                    .wait_ns = {k, k * 3, k * 2},
                                    .steps = k,
                                    .bytes = k * 4096,
                                    .ops_started = 5,
                                    .ops_done = 3,
                                    .cur_step = 6,
                                    .cur_wait = NT_WAIT_SEND_NET,
                                    .progress_age_ns = 3000000000ull};
  s->channels[1] = (nt_channel_row){.channel = 1,
                                    .dir = NT_DIR_RECV,
                                    .peer = 0,
                                    .wait_ns = {k * 4, 0, 0},
                                    .steps = k,
                                    .cur_step = -1,
                                    .cur_wait = NT_WAIT_NONE,
                                    .progress_age_ns = UINT64_MAX};
  s->nkernels = 1;
  s->kernels[0] = (nt_kernel_row){.channel = 1, .count = 21, .busy_ns = 22};
  return s;
}

/* A model with two snapshots (1000 ns apart... 0.5 s), a hello, a comm name
 * and one bad message. */
static nt_model *filled_model(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(1, 1000000000ull, 1000), *b = snap(2, 1500000000ull, 3000);
  nt_hello *h = calloc(1, sizeof *h);
  bool ok = m && a && b && h;
  if (ok) {
    snprintf(h->host, sizeof h->host, "%s", a->host);
    h->pid = 4242;
    snprintf(h->nccl_version, sizeof h->nccl_version, "2.28.9");
    snprintf(h->plugin_version, sizeof h->plugin_version, "0.1.0");
    snprintf(h->clock, sizeof h->clock, "tsc");
    nt_comm_info ci = {.pid = 4242, .comm_hash = HASH, .name = "dp\x1b]0;x\x07\\"};
    ok = nt_model_apply_snapshot(m, "ipc:///d/4242.sock", 4242, a, 1.0) == 0 &&
         nt_model_apply_snapshot(m, "ipc:///d/4242.sock", 4242, b, 1.5) == 0 &&
         nt_model_apply_hello(m, "ipc:///d/4242.sock", 4242, h, 1.5) == 0 &&
         nt_model_apply_comm(m, "ipc:///d/4242.sock", 4242, &ci, 1.5) == 0;
    nt_model_note_error(m, "ipc:///d/66.sock", "snapshot: not an nccltop snapshot", 1.6);
  }
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  free(h);
  if (!ok) nt_model_free(m);
  return ok ? m : NULL;
}

static void json_frame_has_the_documented_names_and_exact_values(void) {
  nt_model *m = filled_model();
  CHECK(m != NULL);
  char *text = batch_frame(m, true, 2.0);
  nt_model_free(m);
  CHECK(text != NULL);
  size_t len = strlen(text);
  bool one_line = len > 2 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1;
  cJSON *j = cJSON_Parse(text);
  free(text);
  CHECK(one_line);
  CHECK(j != NULL);
  CHECK(num(j, "time_s") == 1.5 && !get(j, "time")); /* the unit in the name */
  CHECK(num(j, "publishers") == 1);
  CHECK(num(j, "messages") == 4);
  CHECK(num(j, "bad_messages") == 1);
  CHECK(num(j, "errors_total") == 1);
  CHECK(num(j, "refused") == 0);
  CHECK(cJSON_GetArraySize(get(j, "errors")) == 1);
  CHECK_STR(cJSON_GetArrayItem(get(j, "errors"), 0)->valuestring,
            "ipc:///d/66.sock: snapshot: not an nccltop snapshot");

  const cJSON *p = cJSON_GetArrayItem(get(j, "processes"), 0);
  CHECK(p && cJSON_GetArraySize(get(j, "processes")) == 1);
  CHECK_STR(str(p, "host"), "gpu\\x1B[31m\"7"); /* sanitized once, JSON-escaped once */
  CHECK(num(p, "pid") == 4242);
  CHECK(boolean(p, "stale") == 0 && boolean(p, "ended") == 0);
  CHECK_STR(str(p, "nccl_version"), "2.28.9");
  CHECK_STR(str(p, "clock"), "tsc");
  CHECK(num(p, "abi") == 5 && num(p, "seq") == 2 && num(p, "lost_messages") == 0);
  const cJSON *k = get(p, "counters");
  CHECK(num(k, "events") == 4000 && num(k, "dropped_events") == 1 &&
        num(k, "unknown_events") == 2 && num(k, "foreign_ops") == 3 &&
        num(k, "reclaimed_ops") == 4 && num(k, "dropped_rows") == 5 &&
        num(k, "unsent_messages") == 6);
  /* Exactly the process section's counters, in wire order (the keys come
   * from its table in proto/snapshot_rows.h). */
  static const char *const counters[] = {
      "events",       "dropped_events",  "unknown_events", "foreign_ops",   "reclaimed_ops",
      "dropped_rows", "unsent_messages", "dropped_ops",    "late_children", "net_events"};
  CHECK(cJSON_GetArraySize(k) == (int)(sizeof counters / sizeof counters[0]));
  for (int i = 0; i < cJSON_GetArraySize(k); i++)
    CHECK_STR(cJSON_GetArrayItem(k, i)->string, counters[i]);
  CHECK(cJSON_GetArraySize(get(p, "proxy")) == 1); /* the thread of no communicator */
  CHECK(num(cJSON_GetArrayItem(get(p, "proxy"), 0), "tid") == 78);

  CHECK(cJSON_GetArraySize(get(j, "ranks")) == 1);
  const cJSON *r = cJSON_GetArrayItem(get(j, "ranks"), 0);
  CHECK_STR(str(r, "comm"), "00c0ffee12345678");
  CHECK_STR(str(r, "comm_name"), "dp\\x1B]0;x\\x07\\");
  CHECK(num(r, "rank") == 1 && num(r, "nranks") == 2 && num(r, "nnodes") == 1);
  CHECK(num(r, "pid") == 4242 && num(r, "colls") == 9 && num(r, "p2ps") == 2);
  CHECK(boolean(r, "stale") == 0);

  CHECK(cJSON_GetArraySize(get(r, "proxy")) == 1);
  const cJSON *t = cJSON_GetArrayItem(get(r, "proxy"), 0);
  CHECK(num(t, "tid") == 77);
  CHECK_STR(str(t, "state"), "sleep");
  CHECK(num(t, "state_age_ms") == 2.5);
  const cJSON *ns = get(t, "state_ns"), *sl = get(t, "share_last");
  CHECK(num(ns, "idle") == 3000 && num(ns, "active") == 6000 && num(ns, "sleep") == 3000 &&
        num(ns, "wakeup") == 0 && num(ns, "append") == 0);
  CHECK(num(sl, "idle") == 0.25 && num(sl, "active") == 0.5 && num(sl, "sleep") == 0.25 &&
        num(sl, "wakeup") == 0 && num(sl, "append") == 0);
  CHECK(cJSON_GetArraySize(get(t, "share_total")) == NT_PROXY_NSTATES);
  CHECK(num(t, "appends") == 11 && num(t, "appended_ops") == 12 && num(t, "wakeups") == 13);

  const cJSON *chans = get(r, "channels");
  CHECK(cJSON_GetArraySize(chans) == 2);
  const cJSON *send = cJSON_GetArrayItem(chans, 0), *recv = cJSON_GetArrayItem(chans, 1);
  CHECK_STR(str(send, "dir"), "send");
  CHECK(num(send, "channel") == 1 && num(send, "peer") == 0);
  CHECK(num(send, "steps") == 3000 && num(send, "bytes") == 3000 * 4096);
  const cJSON *w = get(send, "wait_ns");
  CHECK(cJSON_GetArraySize(w) == 3);
  CHECK(num(w, "send_gpu_wait") == 3000 && num(w, "send_peer_wait") == 9000 &&
        num(w, "send_net_wait") == 6000);
  CHECK_STR(str(send, "dominant_wait_last"), "send_peer_wait"); /* of the last interval */
  CHECK(num(send, "steps_per_s") == 4000 && num(send, "bytes_per_s") == 4000 * 4096);
  CHECK(num(send, "ops_in_flight") == 2 && num(send, "cur_step") == 6);
  CHECK_STR(str(send, "cur_wait"), "send_net_wait");
  CHECK(num(send, "progress_age_ms") == 3000);
  CHECK(boolean(send, "stalled") == 1);
  CHECK_STR(str(recv, "dir"), "recv");
  w = get(recv, "wait_ns");
  CHECK(num(w, "recv_net_wait") == 12000 && num(w, "recv_flush_wait") == 0 &&
        num(w, "recv_gpu_wait") == 0);
  CHECK_STR(str(recv, "dominant_wait_last"), "recv_net_wait");
  CHECK_STR(str(recv, "cur_wait"), "none");
  /* none and never: null, not -1 */
  CHECK(cJSON_IsNull(get(recv, "cur_step")) && cJSON_IsNull(get(recv, "progress_age_ms")));
  CHECK(boolean(recv, "stalled") == 0);

  /* Alerts: what does not apply is null, not 0, -1, "other" or 16 zeros. */
  const cJSON *al;
  int drops = 0;
  cJSON_ArrayForEach(al, get(j, "alerts")) {
    const char *kind = str(al, "kind");
    bool has_func = !strcmp(kind, "straggler") || !strcmp(kind, "hung_op");
    CHECK(has_func == !cJSON_IsNull(get(al, "func")));
    CHECK(cJSON_IsNull(get(al, "peer")) || num(al, "peer") >= 0);
    CHECK(cJSON_IsNull(get(al, "rank")) || num(al, "rank") >= 0);
    if (strcmp(kind, "drops")) continue;
    drops++;
    CHECK(cJSON_IsNull(get(al, "comm")) && cJSON_IsNull(get(al, "rank")));
  }
  CHECK(drops == 1);

  const cJSON *kern = cJSON_GetArrayItem(get(r, "kernels"), 0);
  CHECK(kern && num(kern, "channel") == 1 && num(kern, "count") == 21 &&
        num(kern, "busy_ns") == 22);
  cJSON_Delete(j);
}

static void json_frame_of_an_empty_model_is_valid(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  char *text = batch_frame(m, true, 0.5);
  nt_model_free(m);
  CHECK(text != NULL);
  cJSON *j = cJSON_Parse(text);
  free(text);
  CHECK(j != NULL);
  CHECK(num(j, "time_s") == 0 && num(j, "publishers") == 0);
  CHECK(cJSON_IsArray(get(j, "ranks")) && cJSON_GetArraySize(get(j, "ranks")) == 0);
  CHECK(cJSON_IsArray(get(j, "processes")) && cJSON_IsArray(get(j, "errors")));
  cJSON_Delete(j);
}

static void text_frame_has_the_proxy_and_channel_rows(void) {
  nt_model *m = filled_model();
  CHECK(m != NULL);
  nt_model_tick(m, 30.0); /* silent since 1.5: stale */
  char *text = batch_frame(m, false, 30.0);
  nt_model_free(m);
  CHECK(text != NULL);
  bool header = strstr(text, "publishers 1  ranks 1  messages 4  bad 1  errors 1") != NULL;
  bool error = strstr(text, "error: ipc:///d/66.sock: snapshot: not an nccltop snapshot") != NULL;
  /* The communicator by its name, as every view names it (its hash only
   * when it has none). */
  bool proxy = strstr(text, "1/2     dp\\x1B]0;x") && !strstr(text, "00c0ffee12345678") &&
               strstr(text, "gpu\\x1B[31m\"7:4242") && strstr(text, " sleep ") &&
               strstr(text, "  25.0   50.0   25.0    0.0    0.0") && strstr(text, "STALE");
  /* The stalled send shows the wait it is stuck in (cur_wait), not the
   * interval's dominant one (send_peer_wait), as its alert does. */
  const char *srow = strstr(text, " send ");
  bool send = srow && strstr(srow, "send_net_wait") && strstr(srow, "STALLED") &&
              strstr(srow, "send_net_wait") < strstr(srow, "STALLED") &&
              !strstr(text, "send_peer_wait");
  bool recv = strstr(text, "recv_net_wait") != NULL;
  bool raw_escape = strchr(text, '\x1b') != NULL;
  if (!(header && error && proxy && send && recv)) fprintf(stderr, "%s", text);
  free(text);
  CHECK(header && error);
  CHECK(proxy);
  CHECK(send && recv);
  CHECK(!raw_escape);
}

/* NCCL 2.26 tells the plugin no rank or node count: the text says "1/?",
 * the JSON null, never 0 (README: an unknown is "?" or null). */
static void an_unknown_rank_count_is_unknown_in_text_and_json(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(1, 1000000000ull, 1000);
  CHECK(m && a);
  if (!m || !a) return;
  a->comms[0].nranks = a->comms[0].nnodes = 0;
  a->nops = 1;
  a->ops[0] = (nt_op_row){.kind = NT_OP_COLL,
                          .func = NT_FUNC_ALLGATHER,
                          .algo = NT_ALGO_RING,
                          .proto = NT_PR_SIMPLE,
                          .bucket = 20,
                          .count = 4,
                          .bytes = 4 << 20,
                          .done = 4,
                          .done_bytes = 4 << 20,
                          .time_ns = 4000000};
  /* ...and an AllReduce in flight, never progressed: no root, no duration
   * yet, no progress: null each, never 0 or -1 */
  a->noplog = 1;
  a->oplog[0] = (nt_oplog_row){.kind = NT_OP_COLL,
                               .func = NT_FUNC_ALLREDUCE,
                               .state = NT_OPS_IN_FLIGHT,
                               .root_peer = 0,
                               .seq = 7,
                               .count = 256,
                               .bytes = 1024,
                               .age_ns = 5000000,
                               .run_state = NT_RUN_QUEUED,
                               .progress_age_ns = UINT64_MAX};
  a->nseq = 1;
  a->seq_rows[0] = (nt_seq_row){
      .func = NT_FUNC_ALLREDUCE, .launched = 8, .done = 7, .last_launch_age_ns = 2000000};
  CHECK(nt_model_apply_snapshot(m, "ipc:///d/4242.sock", 4242, a, 1.0) == 0);
  nt_snapshot_free(a);
  char *text = batch_frame(m, false, 1.0), *js = batch_frame(m, true, 1.0);
  nt_model_free(m);
  CHECK(text && js);
  if (!text || !js) {
    free(text);
    free(js);
    return;
  }
  CHECK(strstr(text, "1/?") && !strstr(text, "1/0"));
  /* AllGather's bandwidths need the rank count: "?", not 0B/s */
  const char *row = strstr(text, "AllGather");
  CHECK(row && strstr(row, "  ?") && !strstr(row, "0B/s"));
  cJSON *root = cJSON_Parse(js);
  CHECK(root);
  const cJSON *rk = cJSON_GetArrayItem(get(root, "ranks"), 0),
              *cm = cJSON_GetArrayItem(get(root, "comms"), 0),
              *co = cJSON_GetArrayItem(get(root, "collectives"), 0);
  CHECK(rk && cJSON_IsNull(get(rk, "nranks")) && cJSON_IsNull(get(rk, "nnodes")));
  /* no name was given: null, not "" */
  CHECK(cJSON_IsNull(get(rk, "comm_name")) && cJSON_IsNull(get(cm, "comm_name")) &&
        cJSON_IsNull(get(co, "comm_name")));
  CHECK(num(rk, "rank") == 1);
  CHECK(cm && cJSON_IsNull(get(cm, "nranks")) && cJSON_IsNull(get(cm, "nnodes")));
  CHECK(co && cJSON_IsNull(get(co, "nranks")) && cJSON_IsNull(get(co, "algbw_gbs")) &&
        cJSON_IsNull(get(co, "busbw_gbs")));
  const cJSON *op = cJSON_GetArrayItem(get(rk, "in_flight"), 0),
              *sq = cJSON_GetArrayItem(get(rk, "seq"), 0);
  CHECK(op && cJSON_IsNull(get(op, "root_peer")) && cJSON_IsNull(get(op, "duration_us")) &&
        cJSON_IsNull(get(op, "progress_age_ms")));
  CHECK(sq && num(sq, "last_launch_age_ms") == 2 && !get(sq, "last_launch_ms"));
  if (!rk || !co || !op) fprintf(stderr, "%s\n", js);
  cJSON_Delete(root);
  free(text);
  free(js);
}

static void batch_options_parse_and_bad_values_are_refused(void) {
  nt_options o;
  nt_options_defaults(&o);
  char *good[] = {"nccltop", "-b",        "-n",        "3",          "--json", "-d", "100", "--dir",
                  "/x",      "--connect", "tcp://h:1", "--stall-ms", "50",     "-C", "-A",  NULL};
  CHECK(nt_options_parse(&o, 15, good) == 0);
  CHECK(o.batch && o.json && o.iterations == 3 && o.delay_ms == 100 && o.stall_ms == 50);
  CHECK(!o.color && o.ascii && o.nconnect == 1);
  CHECK_STR(o.dir, "/x");
  CHECK_STR(o.connect[0], "tcp://h:1");
  fprintf(stderr, "    (usage errors expected below)\n");
  char *slow[] = {"nccltop", "-d", "49", NULL};
  CHECK(nt_options_parse(&o, 3, slow) == 2);
  char *junk[] = {"nccltop", "-n", "3x", NULL};
  CHECK(nt_options_parse(&o, 3, junk) == 2);
  char *neg[] = {"nccltop", "-n", "-1", NULL};
  CHECK(nt_options_parse(&o, 3, neg) == 2);
  char *unknown[] = {"nccltop", "--frobnicate", NULL};
  CHECK(nt_options_parse(&o, 2, unknown) == 2);
  char *json_alone[] = {"nccltop", "--json", NULL};
  nt_options_defaults(&o);
  CHECK(nt_options_parse(&o, 2, json_alone) == 2);
  char *many[20] = {"nccltop"};
  for (int i = 0; i < 9; i++) many[1 + 2 * i] = "--connect", many[2 + 2 * i] = "tcp://h:1";
  nt_options_defaults(&o);
  CHECK(nt_options_parse(&o, 19, many) == 2);
}

static void demo_arguments_split_between_simulator_and_viewer(void) {
  char *argv[] = {"demo", "-b",  "--ranks",         "4", "-n", "2", "--channels", "3", "--json",
                  "-d",   "100", "--deterministic", NULL};
  char *viewer[16];
  int n = 0;
  nt_sim_config sim;
  nt_sim_defaults(&sim);
  CHECK(nt_demo_split_args(&sim, 12, argv, viewer, &n) == 0);
  CHECK(sim.ranks == 4 && sim.channels == 3 && sim.deterministic);
  CHECK(n == 7 && viewer[7] == NULL);
  CHECK_STR(viewer[1], "-b");
  CHECK_STR(viewer[2], "-n");
  CHECK_STR(viewer[3], "2");
  CHECK_STR(viewer[4], "--json");
  CHECK_STR(viewer[6], "100");
  nt_options o;
  nt_options_defaults(&o);
  CHECK(nt_options_parse(&o, n, viewer) == 0);
  CHECK(o.batch && o.json && o.iterations == 2 && o.delay_ms == 100);
}

int main(void) {
  TEST_RUN(json_frame_has_the_documented_names_and_exact_values);
  TEST_RUN(json_frame_of_an_empty_model_is_valid);
  TEST_RUN(text_frame_has_the_proxy_and_channel_rows);
  TEST_RUN(an_unknown_rank_count_is_unknown_in_text_and_json);
  TEST_RUN(batch_options_parse_and_bad_values_are_refused);
  TEST_RUN(demo_arguments_split_between_simulator_and_viewer);
  return TEST_DONE();
}

/* The watcher (monitor/core/model_watch.c), on a hand-made job: a viewer that did
 * not read (stopped, descheduled, blocked writing) or a relay that held
 * its processes' messages is not the job's fault, and a drop is news.
 *
 * The world: n processes (rank r of one communicator, pid 100 + r)
 * publish every 100 ms; each publisher queues what the viewer has not
 * read yet, up to QCAP messages, and drops what does not fit (ZeroMQ's
 * high-water mark); the viewer passes, reads and ticks every 100 ms, and
 * builds a frame (the diagnosis) every 500 ms, as `nccltop -b -d 500`
 * does. Processes relay_from..n-1 come through one relay (a --connect
 * source), the others each through its own endpoint.
 *
 * - a viewer paused 5 s: no process is silent, no rank late, in the frame
 *   built before it reads again nor after; what it lost meanwhile is its
 *   own (lost_unread), no drops alert; the frame says the viewer paused;
 * - at 1024 ranks the same pause gives no alert line at all;
 * - a rank stopped while the viewer was paused is still named silent;
 * - a relay that held its processes' messages 5 s: once they come back,
 *   their loss is the path's and their old counts make no rank late;
 * - a process that stopped itself and came back is not the path's;
 * - drops clear NT_DROPS_CLEAR_S after the last new loss (the exporter's
 *   nccltop_alerts{kind="drops"} too), and many processes' drops of one
 *   kind are one line, as are many silent processes of one host. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/outputs/exporter.h"
#include "test_exposition.h"
#include "../monitor/core/frame.h"
#include "../monitor/outputs/json_out.h"
#include "../monitor/core/model.h"

#define HASH      0xfeed000000000400ull
#define QCAP      20
#define STALL     1500
#define STEP_S    0.1
#define MAXALERTS 256

typedef struct {
  uint64_t seq, mono_ns, launched, dropped_events;
} msg;

typedef struct {
  uint64_t seq, launched, dropped_events;
  bool stopped;   /* publishes nothing (SIGSTOP) */
  bool lose_next; /* its next message is lost on the way (the viewer read) */
  msg q[QCAP];
  int nq;
} pub;

typedef struct {
  nt_model *m;
  nt_snapshot *s; /* reused for every message (one costs the protocol's maxima) */
  int n, relay_from;
  double t;         /* the viewer's clock */
  uint64_t mono_ns; /* the publishers' (one host's monotonic clock) */
  bool viewer_paused, relay_paused;
  uint64_t steps;
  nt_alert alerts[MAXALERTS];
  uint32_t nalerts;
  bool broken;
  pub p[];
} world;

static world *world_new(int n, int relay_from) {
  world *w = calloc(1, sizeof *w + (size_t)n * sizeof(pub));
  if (!w) return NULL;
  w->m = nt_model_new();
  w->s = nt_snapshot_new();
  w->n = n;
  w->relay_from = relay_from;
  w->t = 100.0;
  w->mono_ns = 5000000000ull;
  for (int r = 0; r < n; r++) w->p[r].launched = 10;
  if (!w->m || !w->s) {
    nt_model_free(w->m);
    nt_snapshot_free(w->s);
    free(w);
    return NULL;
  }
  return w;
}

static void world_free(world *w) {
  if (!w) return;
  nt_model_free(w->m);
  nt_snapshot_free(w->s);
  free(w);
}

static void deliver(world *w, int r) {
  pub *p = &w->p[r];
  char ep[64];
  bool relayed = r >= w->relay_from;
  if (relayed)
    snprintf(ep, sizeof ep, "tcp://relay-b:7460");
  else
    snprintf(ep, sizeof ep, "/tmp/nccltop-0/%d.sock", 100 + r);
  for (int k = 0; k < p->nq && !w->broken; k++) {
    nt_snapshot *s = w->s;
    snprintf(s->host, sizeof s->host, "%s", relayed ? "hostB" : "hostA");
    s->pid = 100 + (uint32_t)r;
    s->seq = p->q[k].seq;
    s->mono_ns = p->q[k].mono_ns;
    s->interval_ms = 100;
    s->ncomms = 1;
    s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = r, .nranks = w->n, .nnodes = 2};
    s->nseq = 1;
    s->seq_rows[0] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = p->q[k].launched};
    s->process.dropped_events = p->q[k].dropped_events;
    if (nt_model_apply_snapshot(w->m, ep, relayed ? 0 : 100 + (uint32_t)r, s, w->t) != 0)
      w->broken = true;
  }
  p->nq = 0;
}

/* The viewer reads now: a pass, and every queue. */
static void read_all(world *w) {
  nt_model_note_pass(w->m, w->t);
  for (int r = 0; r < w->n; r++)
    if (!(w->relay_paused && r >= w->relay_from)) deliver(w, r);
}

/* A frame: tick, then the diagnosis. */
static void frame(world *w) {
  nt_model_tick(w->m, w->t);
  w->nalerts = nt_diag_alerts(test_diag(), w->m, STALL, w->alerts, MAXALERTS, w->t);
}

/* 100 ms: every running process publishes (one more AllReduce), the
 * viewer reads unless paused, and builds a frame every 500 ms. */
static void step(world *w) {
  w->t += STEP_S;
  w->mono_ns += 100000000ull;
  for (int r = 0; r < w->n; r++) {
    pub *p = &w->p[r];
    if (p->stopped) continue;
    p->seq++;
    p->launched++;
    if (p->lose_next) {
      p->lose_next = false;
      continue;
    }
    if (p->nq < QCAP) p->q[p->nq++] = (msg){p->seq, w->mono_ns, p->launched, p->dropped_events};
  }
  if (w->viewer_paused) return;
  read_all(w);
  if (++w->steps % 5 == 0) frame(w);
}

static void run_for(world *w, double seconds) {
  for (double end = w->t + seconds - STEP_S / 2; w->t < end && !w->broken;) step(w);
}

static uint32_t count_kind(const world *w, int kind) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < w->nalerts; i++) k += w->alerts[i].kind == kind;
  return k;
}

/* Alerts of the job's (roots, stalls, hung operations, stragglers, silent
 * processes: a viewer's pause must raise none). */
static uint32_t job_alerts(const world *w) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < w->nalerts; i++) {
    if (w->alerts[i].kind == NT_ALERT_DROPS) continue;
    k++;
    fprintf(stderr, "    at %.1f: %s: %s\n", w->t, nt_alert_kind_name(w->alerts[i].kind),
            w->alerts[i].text);
  }
  return k;
}

static void say_alerts(const world *w) {
  for (uint32_t i = 0; i < w->nalerts; i++)
    fprintf(stderr, "    at %.1f: %s: %s\n", w->t, nt_alert_kind_name(w->alerts[i].kind),
            w->alerts[i].text);
}

/* The viewer stops for `seconds` (the job runs on), comes back and builds
 * its first frame before it reads anything (the worst case: a SIGCONT in
 * the middle of a frame); job alerts of that frame and of every frame
 * until `after` seconds later are added to *bad. */
static void pause_viewer(world *w, double seconds, double after, uint32_t *bad) {
  w->viewer_paused = true;
  run_for(w, seconds);
  w->viewer_paused = false;
  frame(w);
  *bad += job_alerts(w);
  read_all(w);
  frame(w);
  *bad += job_alerts(w);
  for (double end = w->t + after; w->t < end && !w->broken;) {
    step(w);
    if (w->steps % 5 == 0) *bad += job_alerts(w);
  }
}

static uint64_t lost(const world *w, uint64_t *unread) {
  uint64_t l = 0;
  *unread = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(w->m); i++) {
    const nt_model_process *p = nt_model_process_at(w->m, i);
    l += p->lost_messages;
    *unread += p->lost_unread;
  }
  return l;
}

/* One rank a launch behind the others (a shallower queue): late by a
 * tenth of a second, as healthy as the rest. */
static void a_paused_viewer_blames_nobody(void) {
  world *w = world_new(8, 8);
  CHECK(w);
  w->p[3].launched = 9;
  run_for(w, 3);
  uint32_t before = job_alerts(w), bad = 0;
  pause_viewer(w, 5, 12, &bad);
  uint64_t unread, l = lost(w, &unread);
  nt_watch_note notes[NT_WATCH_NOTES];
  uint32_t nn = nt_model_watch_notes(w->m, notes, NT_WATCH_NOTES, w->t);
  nt_watch_totals tot;
  nt_model_watch_totals(w->m, &tot);
  fprintf(stderr, "    lost %llu (unread %llu), gaps %u (%.2f s), drops alerts now %u\n",
          (unsigned long long)l, (unsigned long long)unread, tot.gaps, tot.paused_s,
          count_kind(w, NT_ALERT_DROPS));
  if (nn) fprintf(stderr, "    %s\n", notes[0].text);
  bool broken = w->broken;
  uint32_t drops = count_kind(w, NT_ALERT_DROPS);
  world_free(w);
  CHECK(!broken);
  CHECK_EQ_U64(before, 0);
  CHECK_EQ_U64(bad, 0);
  CHECK(l > 0 && unread == l); /* 30 messages each were dropped: the viewer's loss */
  CHECK_EQ_U64(drops, 0);
  CHECK_EQ_U64(tot.gaps, 1);
  CHECK(tot.paused_s > 4.9 && tot.paused_s < 5.3);
  CHECK(nn >= 1 && notes[0].kind == NT_WATCH_VIEWER && strstr(notes[0].text, "viewer paused"));
}

/* The frame built before the viewer reads again says it is paused. */
static void the_first_frame_says_the_viewer_paused(void) {
  world *w = world_new(4, 4);
  CHECK(w);
  run_for(w, 2);
  w->viewer_paused = true;
  run_for(w, 5);
  nt_model_tick(w->m, w->t);
  nt_frame *f = nt_frame_new();
  nt_frame_opts o = {.stall_ms = STALL};
  bool built = f && nt_frame_build(f, w->m, test_diag(), &o, w->t) == 0;
  nt_jo jo;
  nt_jo_init(&jo);
  const char *text = built ? nt_frame_json(f, &jo) : NULL;
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  const cJSON *watcher = cJSON_GetObjectItemCaseSensitive(root, "watcher");
  const cJSON *note = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(watcher, "notes"), 0);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(note, "kind");
  const cJSON *open = cJSON_GetObjectItemCaseSensitive(note, "open");
  const cJSON *paused = cJSON_GetObjectItemCaseSensitive(note, "paused_s");
  const cJSON *alerts = cJSON_GetObjectItemCaseSensitive(root, "alerts");
  if (note)
    fprintf(stderr, "    %s\n", cJSON_GetObjectItemCaseSensitive(note, "text")->valuestring);
  bool ok = cJSON_IsString(kind) && !strcmp(kind->valuestring, "viewer") && cJSON_IsTrue(open) &&
            cJSON_IsNumber(paused) && paused->valuedouble > 4.5 && cJSON_GetArraySize(alerts) == 0;
  cJSON_Delete(root);
  nt_jo_free(&jo);
  nt_frame_free(f);
  world_free(w);
  CHECK(built);
  CHECK(ok);
}

/* 1024 ranks: the pause raises no alert line at all, and the frame says
 * so in one line. */
static void a_paused_viewer_at_1024_ranks(void) {
  world *w = world_new(1024, 1024);
  CHECK(w);
  run_for(w, 2);
  uint32_t bad = 0, most = 0;
  w->viewer_paused = true;
  run_for(w, 5);
  w->viewer_paused = false;
  frame(w);
  most = w->nalerts;
  bad += job_alerts(w);
  read_all(w);
  frame(w);
  if (w->nalerts > most) most = w->nalerts;
  bad += job_alerts(w);
  for (double end = w->t + 3; w->t < end && !w->broken;) {
    step(w);
    if (w->nalerts > most) most = w->nalerts;
  }
  nt_watch_note notes[NT_WATCH_NOTES];
  uint32_t nn = nt_model_watch_notes(w->m, notes, NT_WATCH_NOTES, w->t);
  fprintf(stderr, "    most alert lines in a frame: %u; watcher lines %u\n", most, nn);
  bool broken = w->broken;
  world_free(w);
  CHECK(!broken);
  CHECK_EQ_U64(bad, 0);
  CHECK_EQ_U64(most, 0);
  CHECK_EQ_U64(nn, 1);
}

/* A rank whose process stops while the viewer is paused is named silent
 * once the viewer has read for a while: a pause hides no true fault. */
static void a_rank_stopped_during_the_pause_is_still_named(void) {
  world *w = world_new(8, 8);
  CHECK(w);
  run_for(w, 3);
  w->viewer_paused = true;
  run_for(w, 2);
  w->p[5].stopped = true;
  run_for(w, 3);
  w->viewer_paused = false;
  read_all(w);
  bool named = false;
  for (double end = w->t + 4; w->t < end && !named && !w->broken;) {
    step(w);
    for (uint32_t i = 0; i < w->nalerts; i++)
      named |= w->alerts[i].kind == NT_ALERT_SILENT && w->alerts[i].proc &&
               w->alerts[i].proc->pid == 105;
  }
  say_alerts(w);
  uint32_t silent = count_kind(w, NT_ALERT_SILENT);
  world_free(w);
  CHECK(named);
  CHECK_EQ_U64(silent, 1);
}

/* Processes 4-7 come through a relay that stops 5 s: while it does, one
 * alert names the relay (not its processes); once it delivers again, the
 * old messages it held make none of its ranks late, their loss is the
 * path's, and a note says so. */
static void a_relay_that_held_messages_blames_nobody(void) {
  world *w = world_new(8, 4);
  CHECK(w);
  run_for(w, 3);
  w->relay_paused = true;
  run_for(w, 5);
  uint32_t silent = count_kind(w, NT_ALERT_SILENT), during = w->nalerts;
  say_alerts(w);
  w->relay_paused = false;
  /* Half of what it held is read before a frame, then the rest. */
  w->t += STEP_S / 4;
  nt_model_note_pass(w->m, w->t);
  for (int r = 4; r < 8; r++) {
    pub *p = &w->p[r];
    int all = p->nq;
    p->nq = all / 2;
    msg rest[QCAP];
    memcpy(rest, p->q + all / 2, (size_t)(all - all / 2) * sizeof *rest);
    deliver(w, r);
    memcpy(p->q, rest, (size_t)(all - all / 2) * sizeof *rest);
    p->nq = all - all / 2;
  }
  frame(w);
  uint32_t bad = job_alerts(w);
  run_for(w, 12);
  bad += job_alerts(w);
  uint64_t unread, l = lost(w, &unread);
  nt_watch_note notes[NT_WATCH_NOTES];
  uint32_t nn = nt_model_watch_notes(w->m, notes, NT_WATCH_NOTES, w->t);
  if (nn) fprintf(stderr, "    %s\n", notes[0].text);
  uint32_t drops = count_kind(w, NT_ALERT_DROPS);
  bool broken = w->broken;
  world_free(w);
  CHECK(!broken);
  CHECK_EQ_U64(silent, 1);
  CHECK_EQ_U64(during, 1);
  CHECK_EQ_U64(bad, 0);
  CHECK(l > 0 && unread == l);
  CHECK_EQ_U64(drops, 0);
  CHECK(nn == 1 && notes[0].kind == NT_WATCH_PATH && notes[0].processes == 4 &&
        !strcmp(notes[0].host, "hostB"));
}

/* A process that stopped itself (SIGSTOP) sends nothing meanwhile: when
 * it comes back, its silence was its own, not its path's. */
static void a_process_that_stopped_itself_is_not_the_paths(void) {
  world *w = world_new(8, 4);
  CHECK(w);
  run_for(w, 3);
  w->p[6].stopped = true;
  run_for(w, 5);
  bool named = false;
  for (uint32_t i = 0; i < w->nalerts; i++)
    named |=
        w->alerts[i].kind == NT_ALERT_SILENT && w->alerts[i].proc && w->alerts[i].proc->pid == 106;
  w->p[6].stopped = false;
  run_for(w, 1);
  nt_watch_note notes[NT_WATCH_NOTES];
  uint32_t nn = nt_model_watch_notes(w->m, notes, NT_WATCH_NOTES, w->t);
  world_free(w);
  CHECK(named);
  CHECK_EQ_U64(nn, 0);
}

/* The exporter's nccltop_alerts{kind="drops"} value. */
static int exported_drops(nt_model *m, double now_s) {
  nt_exporter_opts o = {.stall_ms = STALL};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return -1;
  int rc = test_exposition(f, m, &o, now_s);
  int value = -1;
  if (fclose(f) == 0 && rc == 0 && buf) {
    const char *p = strstr(buf, "nccltop_alerts{kind=\"drops\"} ");
    if (p) value = atoi(p + strlen("nccltop_alerts{kind=\"drops\"} "));
  }
  free(buf);
  return value;
}

/* A message lost while the viewer read, and events the plugin dropped:
 * a drops alert (the exporter's too), gone NT_DROPS_CLEAR_S after the
 * last one while data flows without new loss. */
static void drops_clear_once_data_flows_without_new_loss(void) {
  world *w = world_new(4, 4);
  CHECK(w);
  run_for(w, 2);
  w->p[1].lose_next = true;
  w->p[2].dropped_events = 7;
  run_for(w, 1);
  uint32_t now = count_kind(w, NT_ALERT_DROPS);
  say_alerts(w);
  int exp_now = exported_drops(w->m, w->t);
  run_for(w, NT_DROPS_CLEAR_S - 2);
  uint32_t still = count_kind(w, NT_ALERT_DROPS);
  run_for(w, 3);
  uint32_t later = count_kind(w, NT_ALERT_DROPS);
  int exp_later = exported_drops(w->m, w->t);
  /* A new loss: news again. */
  w->p[1].lose_next = true;
  run_for(w, 1);
  uint32_t again = count_kind(w, NT_ALERT_DROPS);
  world_free(w);
  CHECK_EQ_U64(now, 2);
  CHECK_EQ_U64(exp_now, 2);
  CHECK_EQ_U64(still, 2);
  CHECK_EQ_U64(later, 0);
  CHECK_EQ_U64(exp_later, 0);
  CHECK_EQ_U64(again, 1);
}

/* 1024 processes that each lost a message while the viewer read: one
 * drops line names them; a few stay a line each. */
static void many_drops_of_one_kind_are_one_line(void) {
  world *w = world_new(1024, 1024);
  CHECK(w);
  run_for(w, 1);
  for (int r = 0; r < 1024; r++) w->p[r].lose_next = true;
  run_for(w, 1);
  uint32_t drops = count_kind(w, NT_ALERT_DROPS), total = w->nalerts;
  char text[256] = "";
  for (uint32_t i = 0; i < w->nalerts; i++)
    if (w->alerts[i].kind == NT_ALERT_DROPS) snprintf(text, sizeof text, "%s", w->alerts[i].text);
  fprintf(stderr, "    %s\n", text);
  world_free(w);
  w = world_new(8, 8);
  CHECK(w);
  run_for(w, 1);
  for (int r = 0; r < 3; r++) w->p[r].lose_next = true;
  run_for(w, 1);
  uint32_t few = count_kind(w, NT_ALERT_DROPS);
  world_free(w);
  CHECK_EQ_U64(total, 1);
  CHECK_EQ_U64(drops, 1);
  CHECK(strstr(text, "ranks 0-1023/1024 (1024 processes): this viewer lost 1024 messages"));
  CHECK_EQ_U64(few, 3);
}

/* Eight processes of one host stopped: one silent line names the host and
 * its ranks; three stay a line each. */
static void many_silent_processes_of_a_host_are_one_line(void) {
  world *w = world_new(12, 12);
  CHECK(w);
  run_for(w, 1);
  for (int r = 0; r < 8; r++) w->p[r].stopped = true;
  run_for(w, 3);
  uint32_t silent = count_kind(w, NT_ALERT_SILENT);
  char text[256] = "";
  for (uint32_t i = 0; i < w->nalerts; i++)
    if (w->alerts[i].kind == NT_ALERT_SILENT) snprintf(text, sizeof text, "%s", w->alerts[i].text);
  fprintf(stderr, "    %s\n", text);
  world_free(w);
  w = world_new(12, 12);
  CHECK(w);
  run_for(w, 1);
  for (int r = 0; r < 3; r++) w->p[r].stopped = true;
  run_for(w, 3);
  uint32_t few = count_kind(w, NT_ALERT_SILENT);
  world_free(w);
  CHECK_EQ_U64(silent, 1);
  CHECK(strstr(text, "host hostA: ranks 0-7/12 (8 processes) sent nothing for up to"));
  CHECK_EQ_U64(few, 3);
}

/* A model never given a pass (a replay, a test) finds no gap: a silence
 * is a silence. */
static void without_passes_a_silence_is_a_silence(void) {
  nt_model *m = nt_model_new();
  CHECK(m);
  nt_snapshot *s = nt_snapshot_new();
  CHECK(s);
  snprintf(s->host, sizeof s->host, "hostA");
  s->pid = 100;
  s->seq = 1;
  s->mono_ns = 1000000000ull;
  s->interval_ms = 100;
  bool ok = nt_model_apply_snapshot(m, "ep", 100, s, 10.0) == 0;
  s->seq = 2; /* 5 s later: it was silent itself */
  s->mono_ns = 6000000000ull;
  ok = ok && nt_model_apply_snapshot(m, "ep", 100, s, 15.0) == 0;
  nt_model_tick(m, 17.0);
  const nt_model_process *p = nt_model_process_at(m, 0);
  bool stale = p && p->stale;
  nt_watch_totals t;
  nt_model_watch_totals(m, &t);
  nt_watch_note notes[NT_WATCH_NOTES];
  uint32_t nn = nt_model_watch_notes(m, notes, NT_WATCH_NOTES, 17.0);
  nt_snapshot_free(s);
  nt_model_free(m);
  CHECK(ok);
  CHECK(stale);
  CHECK_EQ_U64(t.gaps, 0);
  CHECK_EQ_U64(nn, 0);
}

int main(void) {
  TEST_RUN(a_paused_viewer_blames_nobody);
  TEST_RUN(the_first_frame_says_the_viewer_paused);
  TEST_RUN(a_paused_viewer_at_1024_ranks);
  TEST_RUN(a_rank_stopped_during_the_pause_is_still_named);
  TEST_RUN(a_relay_that_held_messages_blames_nobody);
  TEST_RUN(a_process_that_stopped_itself_is_not_the_paths);
  TEST_RUN(drops_clear_once_data_flows_without_new_loss);
  TEST_RUN(many_drops_of_one_kind_are_one_line);
  TEST_RUN(many_silent_processes_of_a_host_are_one_line);
  TEST_RUN(without_passes_a_silence_is_a_silence);
  return TEST_DONE();
}

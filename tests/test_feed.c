/* The feed interface (monitor/feeds/feed.h): the same messages handed to the
 * in-memory feed and played back from a recording of them give the same
 * model, so the same frame (its batch JSON line, byte for byte); the replay
 * delivers both when its controls jump to the end and when it is polled on
 * its own clock; the in-memory feed applies only what its clock reached;
 * the live feed and the replay answer the calls the screen makes without
 * it asking which kind it holds; a recording played in steps by the
 * headless loop (replay -b) ticks at exactly the recording's times, at any
 * speed: every -d from its start with a quiet day skipped, or at its
 * recorded frame marks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/feeds/clock.h"
#include "../monitor/feeds/drive.h"
#include "../monitor/core/diag.h"
#include "../monitor/feeds/feed.h"
#include "../monitor/feeds/recording.h"
#include "../monitor/outputs/batch.h"

#define NSNAP 40      /* snapshots per publisher, 0.1 s apart: 4 s, three chunks */
#define START 1000.0  /* the recording's start, the viewer's monotonic seconds */
#define FIRST 1000.25 /* the first message */

static char dir[] = "/tmp/nccltop-feed-XXXXXX";
static char path[128];

/* Snapshot k of publisher p (pids 4242, 4243: two ranks of one communicator). */
static size_t encode(int p, int k, uint8_t *buf, size_t cap) {
  static nt_snapshot *s;
  if (!s && !(s = nt_snapshot_new())) return 0;
  snprintf(s->host, sizeof s->host, "feedhost");
  s->major = NT_PROTO_MAJOR;
  s->minor = NT_PROTO_MINOR;
  s->pid = 4242 + (uint32_t)p;
  s->seq = (uint64_t)k + 1;
  s->interval_ms = 100;
  s->mono_ns = 5000000000ull + (uint64_t)k * 100000000ull;
  s->wall_ns = 1700000000000000000ull + s->mono_ns;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = 0xfeed,
                              .rank = p,
                              .nranks = 2,
                              .nnodes = 1,
                              .colls_enqueued = (uint64_t)k * (3 + (uint64_t)p)};
  s->nseq = 1;
  s->seq_rows[0] =
      (nt_seq_row){.func = 2, .launched = (uint64_t)k * (3 + (uint64_t)p), .done = (uint64_t)k * 3};
  s->nproxy = 1;
  s->proxy[0] = (nt_proxy_row){.tid = 77 + (uint32_t)p,
                               .state = NT_PROXY_IDLE,
                               .state_ns = {(uint64_t)k * 60000000ull, (uint64_t)k * 40000000ull}};
  return nt_snapshot_encode(s, buf, cap);
}

static void endpoint_of(int p, char *buf, size_t cap) {
  snprintf(buf, cap, "ipc:///tmp/fake/%d.sock", 4242 + p);
}

static double at(int p, int k) {
  return FIRST + k * 0.1 + p * 0.01;
}

/* Every message, in time order, to the recording (w) or the in-memory
 * feed (mem); the last time handed. */
static bool hand_all(nt_rec_writer *w, nt_feed *mem, double *last) {
  static uint8_t buf[1 << 16];
  char err[600];
  for (int k = 0; k < NSNAP; k++)
    for (int p = 0; p < 2; p++) {
      char ep[64];
      endpoint_of(p, ep, sizeof ep);
      size_t n = encode(p, k, buf, sizeof buf);
      if (!n) return false;
      uint32_t pid = 4242 + (uint32_t)p;
      nt_rec_record r = {.type = NT_REC_MESSAGE,
                         .pid = pid,
                         .endpoint = ep,
                         .topic = NT_TOPIC_SNAPSHOT,
                         .topic_len = strlen(NT_TOPIC_SNAPSHOT),
                         .body = buf,
                         .body_len = n};
      if (w && nt_rec_write(w, &r, at(p, k), err, sizeof err) != 0) {
        fprintf(stderr, "    %s\n", err);
        return false;
      }
      if (mem && nt_feed_memory_push(mem, ep, pid, NT_TOPIC_SNAPSHOT, buf, n, at(p, k)) != 0)
        return false;
      *last = at(p, k);
    }
  return true;
}

static bool write_recording(void) {
  char err[600];
  nt_rec_writer *w = nt_rec_create(path, START, false, err, sizeof err);
  if (!w) return fprintf(stderr, "    %s\n", err), false;
  double last;
  bool ok = hand_all(w, NULL, &last);
  if (nt_rec_close(w, err, sizeof err) != 0) ok = false;
  return ok;
}

/* The batch JSON line of the feed's model at `now` (ticked there first),
 * as nccltop -b --json prints it; "" on failure. The caller frees. */
static char *frame_json(nt_feed *f, double now) {
  nt_options o;
  nt_options_defaults(&o);
  o.json = true;
  o.start_s = START;
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (!out) return NULL;
  nt_model *m = nt_feed_model(f);
  nt_model_tick(m, now);
  /* A diagnosis of its own: each frame compared is a first look. */
  nt_diag *d = nt_diag_new();
  int rc = d ? nt_batch_print(out, m, d, &o, now) : -1;
  nt_diag_free(d);
  if (fclose(out) != 0 || rc != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* The in-memory feed given every message, polled at the last one's time. */
static nt_feed *memory_fed(double *last) {
  nt_feed *mem = nt_feed_memory_new(START, 0);
  if (!mem || !hand_all(NULL, mem, last)) {
    nt_feed_free(mem);
    return NULL;
  }
  nt_feed_memory_set_clock(mem, *last);
  if (nt_feed_poll(mem, 0) != 2 * NSNAP) {
    nt_feed_free(mem);
    return NULL;
  }
  return mem;
}

static nt_feed *replay_open(double speed) {
  nt_options o;
  nt_options_defaults(&o);
  char err[700];
  nt_feed *f = nt_feed_replay_open(path, &o, speed, err, sizeof err);
  if (!f) fprintf(stderr, "    %s\n", err);
  return f;
}

static void the_in_memory_feed_applies_what_its_clock_reached(void) {
  nt_feed *mem = nt_feed_memory_new(START, 0);
  CHECK(mem);
  double last;
  bool ok = hand_all(NULL, mem, &last);
  /* Before the first message's time: nothing. */
  int before = nt_feed_poll(mem, 0);
  uint32_t procs_before = nt_model_nprocesses(nt_feed_model(mem));
  /* Up to snapshot 9 of both publishers: 20 messages, both ranks. */
  nt_feed_memory_set_clock(mem, at(1, 9));
  int half = nt_feed_poll(mem, 0), again = nt_feed_poll(mem, 0);
  uint32_t ranks_half = nt_model_nprocesses(nt_feed_model(mem));
  nt_feed_memory_set_clock(mem, last);
  int rest = nt_feed_poll(mem, 0);
  char status[128];
  nt_feed_status(mem, status, sizeof status);
  double now = nt_feed_now(mem);
  /* No controls, no mode word, no speed: the screen keeps its own keys. */
  bool control = nt_feed_control(mem, NT_FEED_PAUSE);
  const char *mode = nt_feed_mode(mem);
  double rate = nt_feed_rate(mem);
  nt_feed_free(mem);
  CHECK(ok);
  CHECK(before == 0 && procs_before == 0);
  CHECK(half == 20 && again == 0 && ranks_half == 2);
  CHECK(rest == 2 * NSNAP - 20);
  CHECK_STR(status, "MEMORY 80 applied, 0 queued");
  CHECK(now == last && !control && !mode && rate == 1);
}

static void only_the_in_memory_feed_takes_pushed_messages(void) {
  CHECK(write_recording());
  nt_feed *rp = replay_open(1);
  nt_feed *mem = nt_feed_memory_new(START, 0);
  CHECK(rp && mem);
  char long_topic[80];
  memset(long_topic, 'x', sizeof long_topic - 1);
  long_topic[sizeof long_topic - 1] = '\0';
  int to_replay = nt_feed_memory_push(rp, "ep", 1, NT_TOPIC_SNAPSHOT, "x", 1, START);
  int too_long = nt_feed_memory_push(mem, "ep", 1, long_topic, "x", 1, START);
  int too_big = nt_feed_memory_push(mem, "ep", 1, NT_TOPIC_SNAPSHOT, "x",
                                    (size_t)NT_MAX_MESSAGE_BYTES + 1, START);
  nt_feed_free(rp);
  nt_feed_free(mem);
  CHECK(to_replay == -1 && too_long == -1 && too_big == -1);
}

/* The replay's End control plays the whole recording at once: the model
 * and its frame are the in-memory feed's. */
static void a_replay_at_its_end_shows_the_in_memory_feeds_frame(void) {
  CHECK(write_recording());
  double last = 0;
  nt_feed *mem = memory_fed(&last);
  nt_feed *rp = replay_open(1);
  CHECK(mem && rp);
  bool took = nt_feed_control(rp, NT_FEED_TO_END);
  char status[256];
  nt_feed_status(rp, status, sizeof status);
  double rp_now = nt_feed_now(rp);
  /* Both frames a little after the last message, at the same time. */
  char *a = frame_json(mem, last + 0.05), *b = frame_json(rp, last + 0.05);
  uint32_t ranks = nt_model_nprocesses(nt_feed_model(rp));
  const char *mode = nt_feed_mode(rp);
  nt_feed_free(mem);
  nt_feed_free(rp);
  bool same = a && b && !strcmp(a, b);
  if (!same) fprintf(stderr, "    memory: %s\n    replay: %s\n", a ? a : "", b ? b : "");
  free(a);
  free(b);
  CHECK(took && mode && !strcmp(mode, "REPLAY"));
  CHECK(strstr(status, "REPLAY 0:04.2 of 0:04.2") && strstr(status, "paused"));
  CHECK(rp_now > last - 1e-6 && rp_now < last + 1e-6);
  CHECK(ranks == 2);
  CHECK(same);
}

/* Polled on its own clock (at the fastest speed, x64: 4 s of recording in
 * about 70 ms), the replay applies every record, stops at the end by
 * itself, and its frame is again the in-memory feed's. */
static void a_replay_polled_to_its_end_shows_the_in_memory_feeds_frame(void) {
  CHECK(write_recording());
  double last = 0;
  nt_feed *mem = memory_fed(&last);
  nt_feed *rp = replay_open(0);
  CHECK(mem && rp);
  CHECK(nt_feed_rate(rp) == 64);
  int applied = 0;
  char status[256] = "";
  /* Bounded by the wall clock, not by a count: a loaded machine only
   * makes it take longer. */
  for (double end = nt_now_s() + 30; nt_now_s() < end && !strstr(status, "paused");) {
    applied += nt_feed_poll(rp, 20);
    nt_feed_status(rp, status, sizeof status);
  }
  char *a = frame_json(mem, last + 0.05), *b = frame_json(rp, last + 0.05);
  nt_feed_free(mem);
  nt_feed_free(rp);
  bool same = a && b && !strcmp(a, b);
  if (!same) fprintf(stderr, "    memory: %s\n    replay: %s\n", a ? a : "", b ? b : "");
  free(a);
  free(b);
  CHECK(strstr(status, "paused"));
  CHECK_EQ_U64(applied, 2 * NSNAP);
  CHECK(same);
}

/* Back to the start rebuilds the replay's model: only the first record is
 * in it; the live feed passes every control to the screen. */
static void replay_controls_move_its_model_and_the_live_feed_has_none(void) {
  CHECK(write_recording());
  nt_feed *rp = replay_open(1);
  CHECK(rp);
  nt_feed_control(rp, NT_FEED_TO_END);
  nt_model *at_end = nt_feed_model(rp);
  uint64_t end_n = 0, start_n = 0;
  char *end_json = frame_json(rp, at(1, NSNAP - 1) + 0.05);
  bool back = nt_feed_control(rp, NT_FEED_TO_START);
  nt_feed_control(rp, NT_FEED_PAUSE); /* the clock stands at the first message */
  nt_model *at_start = nt_feed_model(rp);
  char *start_json = frame_json(rp, FIRST + 0.05);
  double start_now = nt_feed_now(rp);
  nt_feed_free(rp);
  /* "messages": each frame's count of messages the model took. */
  const char *key = "\"messages\":";
  if (end_json && strstr(end_json, key)) end_n = strtoull(strstr(end_json, key) + 11, NULL, 10);
  if (start_json && strstr(start_json, key))
    start_n = strtoull(strstr(start_json, key) + 11, NULL, 10);
  free(end_json);
  free(start_json);
  CHECK(back && at_start != at_end);
  /* At the first message, plus what played between the two controls (a few
   * microseconds; generous for a loaded machine). */
  CHECK(start_now > FIRST - 1e-6 && start_now < FIRST + 5);
  CHECK_EQ_U64(end_n, 2 * NSNAP);
  CHECK_EQ_U64(start_n, 1); /* the first message only */

  /* The live feed over a source that is never opened: only the calls that
   * do not read it. */
  nt_model *m = nt_model_new();
  nt_feed *live = m ? nt_feed_live_new(NULL, m) : NULL;
  CHECK(live);
  bool any = false;
  for (int c = NT_FEED_PAUSE; c <= NT_FEED_FASTER; c++) any |= nt_feed_control(live, c);
  double t0 = nt_now_s(), now = nt_feed_now(live), t1 = nt_now_s();
  bool own_model = nt_feed_model(live) == m, no_mode = !nt_feed_mode(live);
  double rate = nt_feed_rate(live);
  nt_feed_free(live);
  nt_model_free(m);
  CHECK(!any && own_model && no_mode && rate == 1);
  CHECK(now >= t0 && now <= t1); /* the wall clock */
}

/* ---- played in steps by the headless loop ---- */

#define MAX_TICKS 64
#define DAY       86400.0

/* What the loop's ticks saw: the time, and the messages in the model. */
typedef struct {
  nt_feed *feed;
  int n;
  double at[MAX_TICKS];
  uint64_t messages[MAX_TICKS];
  double give_up; /* wall time: a replay that waits for its quiet day fails, not hangs */
} tick_log;

static int note_tick(void *ctx, double now) {
  tick_log *t = ctx;
  if (t->n < MAX_TICKS) {
    t->at[t->n] = now;
    t->messages[t->n] = nt_model_total_messages(nt_feed_model(t->feed));
  }
  return ++t->n > MAX_TICKS;
}

static int in_time(void *ctx, double now) {
  (void)now;
  return nt_now_s() > ((tick_log *)ctx)->give_up;
}

/* The loop's ticks over the recording in steps at `speed` (0: max). */
static bool drive_steps(double speed, double delay_s, tick_log *t) {
  nt_options o;
  nt_options_defaults(&o);
  char err[700];
  memset(t, 0, sizeof *t);
  if (!(t->feed = nt_feed_replay_steps(path, &o, speed, err, sizeof err)))
    return fprintf(stderr, "    %s\n", err), false;
  t->give_up = nt_now_s() + 30;
  nt_drive d = {.delay_s = delay_s, .on_tick = note_tick, .between = in_time, .ctx = t};
  bool clock_at_start = nt_feed_now(t->feed) == START;
  int rc = nt_drive_run(t->feed, &d);
  bool problem = nt_feed_replay_problem(t->feed, err, sizeof err) || err[0];
  nt_feed_free(t->feed);
  if (rc || problem || !clock_at_start) fprintf(stderr, "    rc %d, %d ticks, %s\n", rc, t->n, err);
  return !rc && !problem && clock_at_start && t->n <= MAX_TICKS;
}

/* The snapshots received up to `when`. */
static uint64_t snapshots_by(double when) {
  uint64_t n = 0;
  for (int k = 0; k < NSNAP; k++)
    for (int p = 0; p < 2; p++) n += at(p, k) <= when;
  return n;
}

/* The recording, and a day later one record more (an endpoint gone). */
static bool write_recording_with_a_quiet_day(void) {
  char err[600];
  nt_rec_writer *w = nt_rec_create(path, START, false, err, sizeof err);
  if (!w) return fprintf(stderr, "    %s\n", err), false;
  double last;
  bool ok = hand_all(w, NULL, &last);
  char ep[64];
  endpoint_of(0, ep, sizeof ep);
  nt_rec_record gone = {.type = NT_REC_GONE, .endpoint = ep};
  if (ok && nt_rec_write(w, &gone, START + DAY, err, sizeof err) != 0) ok = false;
  if (nt_rec_close(w, err, sizeof err) != 0) ok = false;
  if (!ok) fprintf(stderr, "    %s\n", err);
  return ok;
}

/* Every -d (0.3 s: not a binary fraction, so a clock that drifted would
 * show) from the recording's start: the ticks are the grid's own sums, not
 * times near them; each sees exactly the records up to it; the quiet
 * interval after the data is shown once, then the day is skipped to the
 * interval that holds its record, which is the last tick. At x50 the same
 * ticks, and the day costs no wall time (waiting for it would take half an
 * hour: the loop gives up after 30 s and the test fails). */
static void a_replay_in_steps_ticks_every_delay_of_the_recording(void) {
  CHECK(write_recording_with_a_quiet_day());
  tick_log fast, paced;
  CHECK(drive_steps(0, 0.3, &fast));
  double grid = START;
  int on_grid = 0, right_records = 0;
  for (int i = 0; i < fast.n && i < MAX_TICKS; i++) {
    if (i < fast.n - 1) grid += 0.3;
    on_grid += i < fast.n - 1 && fast.at[i] == grid; /* the very double: no drift */
    right_records += fast.messages[i] == snapshots_by(fast.at[i]);
  }
  double last_data = at(1, NSNAP - 1), day = START + DAY;
  if (on_grid != fast.n - 1 || right_records != fast.n)
    for (int i = 0; i < fast.n && i < MAX_TICKS; i++)
      fprintf(stderr, "    tick %d at %.9f: %llu messages\n", i, fast.at[i],
              (unsigned long long)fast.messages[i]);
  /* 1000.3 .. 1004.2 (the first after the last snapshot), 1004.5 (quiet),
   * then the day's. */
  CHECK_EQ_U64(fast.n, 16);
  CHECK_EQ_U64(on_grid, fast.n - 1);
  CHECK_EQ_U64(right_records, fast.n);
  CHECK(fast.at[13] >= last_data && fast.at[12] < last_data);
  double steps = (fast.at[15] - START) / 0.3;
  CHECK(fast.at[15] > day - 1e-6 && fast.at[15] < day + 0.3 && fabs(steps - round(steps)) < 1e-6);

  CHECK(drive_steps(50, 0.3, &paced));
  bool same = paced.n == fast.n;
  for (int i = 0; same && i < fast.n; i++)
    same = paced.at[i] == fast.at[i] && paced.messages[i] == fast.messages[i];
  CHECK(same);
}

/* A recording of the batch monitor (-b --record): a tick at each frame
 * mark, at its very time, after the records before it and before the one
 * received in the same nanosecond after it; a mark repeated is one tick;
 * none after the last mark. The same at x50. */
static void a_replay_in_steps_ticks_at_its_recorded_frame_marks(void) {
  static uint8_t buf[1 << 16];
  char err[600], ep[2][64];
  nt_rec_writer *w = nt_rec_create(path, START, false, err, sizeof err);
  bool ok = w && nt_rec_set_flags(w, NT_REC_FLAG_FRAMES, err, sizeof err) == 0;
  for (int k = 0; ok && k < NSNAP; k++)
    for (int p = 0; ok && p < 2; p++) {
      endpoint_of(p, ep[p], sizeof ep[p]);
      nt_rec_record mark = {.type = NT_REC_FRAME, .endpoint = ""};
      if (p == 0 && k % 10 == 0 && k) /* twice, at the next snapshot's time */
        for (int twice = 0; ok && twice < 2; twice++)
          ok = nt_rec_write(w, &mark, at(0, k), err, sizeof err) == 0;
      size_t n = encode(p, k, buf, sizeof buf);
      nt_rec_record r = {.type = NT_REC_MESSAGE,
                         .pid = 4242 + (uint32_t)p,
                         .endpoint = ep[p],
                         .topic = NT_TOPIC_SNAPSHOT,
                         .topic_len = strlen(NT_TOPIC_SNAPSHOT),
                         .body = buf,
                         .body_len = n};
      ok = ok && n && nt_rec_write(w, &r, at(p, k), err, sizeof err) == 0;
    }
  if (w && nt_rec_close(w, err, sizeof err) != 0) ok = false;
  if (!ok) fprintf(stderr, "    %s\n", err);
  CHECK(ok);
  /* The marks' times as a reader gives them back. */
  double marks[3];
  int nmarks = 0;
  nt_rec_reader *rd = nt_rec_open(path, err, sizeof err);
  nt_rec_record x;
  while (rd && nt_rec_next(rd, &x, err, sizeof err) == 1)
    if (x.type == NT_REC_FRAME && nmarks < 3 &&
        (!nmarks || nt_rec_time_s(nt_rec_header_of(rd), x.t_ns) > marks[nmarks - 1]))
      marks[nmarks++] = nt_rec_time_s(nt_rec_header_of(rd), x.t_ns);
  nt_rec_close_reader(rd);
  CHECK_EQ_U64(nmarks, 3);
  for (int speed = 0; speed <= 50; speed += 50) {
    tick_log t;
    CHECK(drive_steps(speed, 1.0, &t));
    if (t.n != 3) fprintf(stderr, "    x%d: %d ticks\n", speed, t.n);
    CHECK_EQ_U64(t.n, 3);
    for (int i = 0; i < 3 && i < t.n; i++) {
      CHECK(t.at[i] == marks[i]);
      CHECK_EQ_U64(t.messages[i], 2 * 10 * (i + 1)); /* not the one at the mark's time */
    }
  }
}

int main(void) {
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  snprintf(path, sizeof path, "%s/feed.ntrec", dir);
  TEST_RUN(the_in_memory_feed_applies_what_its_clock_reached);
  TEST_RUN(only_the_in_memory_feed_takes_pushed_messages);
  unlink(path);
  TEST_RUN(a_replay_at_its_end_shows_the_in_memory_feeds_frame);
  unlink(path);
  TEST_RUN(a_replay_polled_to_its_end_shows_the_in_memory_feeds_frame);
  unlink(path);
  TEST_RUN(replay_controls_move_its_model_and_the_live_feed_has_none);
  unlink(path);
  TEST_RUN(a_replay_in_steps_ticks_every_delay_of_the_recording);
  unlink(path);
  TEST_RUN(a_replay_in_steps_ticks_at_its_recorded_frame_marks);
  unlink(path);
  rmdir(dir);
  return TEST_DONE();
}

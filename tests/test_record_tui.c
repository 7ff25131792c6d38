/* The interactive replay in a pseudo-terminal (libvterm): a 60 s recording
 * of one publisher (a snapshot every 0.5 s) shows REPLAY with its clock;
 * Space pauses it (the clock stands still), Right and Left seek 10 s, End
 * goes to the last message, Home to the first (the model shown follows), ]
 * and [ double and halve the speed, q quits. */
#include <libgen.h>
#include <limits.h>
#include <unistd.h>

#include "testlib.h"
#include "vterm_harness.h"
#include "../monitor/core/model.h"
#include "../monitor/feeds/recording.h"

static char nccltop[PATH_MAX + 16];
static char dir[] = "/tmp/nccltop-rtui-XXXXXX";
static char path[128];

static bool write_recording(void) {
  char err[600];
  nt_snapshot *s = nt_snapshot_new();
  nt_rec_writer *w = s ? nt_rec_create(path, 1000.0, false, err, sizeof err) : NULL;
  static uint8_t buf[1 << 16];
  bool ok = w != NULL;
  const char *ep = "ipc:///tmp/fake/4242.sock";
  for (int k = 0; ok && k < 120; k++) {
    snprintf(s->host, sizeof s->host, "replayhost");
    s->major = NT_PROTO_MAJOR;
    s->minor = NT_PROTO_MINOR;
    s->pid = 4242;
    s->seq = (uint64_t)k + 1;
    s->interval_ms = 500;
    s->mono_ns = 5000000000ull + (uint64_t)k * 500000000ull;
    s->wall_ns = 1700000000000000000ull + s->mono_ns;
    s->ncomms = 1;
    s->comms[0] = (nt_comm_row){.comm_hash = 0xabcdef,
                                .rank = 0,
                                .nranks = 1,
                                .nnodes = 1,
                                .colls_enqueued = (uint64_t)k * 3};
    s->nseq = 1; /* the overview's LAUNCHED column: 3 a snapshot */
    s->seq_rows[0] = (nt_seq_row){.func = 2, .launched = (uint64_t)k * 3, .done = (uint64_t)k * 3};
    s->nproxy = 1;
    s->proxy[0] =
        (nt_proxy_row){.tid = 77,
                       .state = NT_PROXY_IDLE,
                       .state_ns = {(uint64_t)k * 400000000ull, (uint64_t)k * 100000000ull}};
    size_t n = nt_snapshot_encode(s, buf, sizeof buf);
    nt_rec_record r = {.type = NT_REC_MESSAGE,
                       .pid = 4242,
                       .endpoint = ep,
                       .topic = NT_TOPIC_SNAPSHOT,
                       .topic_len = strlen(NT_TOPIC_SNAPSHOT),
                       .body = buf,
                       .body_len = n};
    ok = n > 0 && nt_rec_write(w, &r, 1000.0 + k * 0.5, err, sizeof err) == 0;
  }
  if (!ok) fprintf(stderr, "    %s\n", w ? err : "cannot create the recording");
  if (nt_rec_close(w, err, sizeof err) != 0) ok = false;
  nt_snapshot_free(s);
  return ok;
}

/* The replay clock the screen shows (seconds), -1 when none. */
static double shown_clock(vt_term *t, const char *after) {
  const char *p = strstr(vt_text(t), "watching REPLAY ");
  int m;
  double s;
  if (!p || sscanf(p + 16, "%d:%lf", &m, &s) != 2) return -1;
  (void)after;
  return m * 60 + s;
}

/* Reads the screen for `seconds` (vt_pump returns at the first output). */
static void pump_for(vt_term *t, double seconds) {
  for (double end = vt_now() + seconds; vt_now() < end;) vt_pump(t, 50);
}

/* Waits until the clock shown is within 0.2 s of want. */
static bool clock_near(vt_term *t, double want, double seconds) {
  double end = vt_now() + seconds, got = -1;
  while (vt_now() < end) {
    vt_pump(t, 50);
    got = shown_clock(t, NULL);
    if (got >= want - 0.2 && got <= want + 0.2) return true;
  }
  fprintf(stderr, "    clock %.1f, wanted %.1f:\n%s\n", got, want, t->text);
  return false;
}

static void replay_keys_pause_seek_and_change_speed(void) {
  CHECK(write_recording());
  vt_term t;
  char *argv[] = {nccltop, "replay", path, "-d", "100", NULL};
  char *env[] = {NULL};
  CHECK(vt_start(&t, 24, 140, argv, env) == 0);
  bool ok = vt_wait_for(&t, "REPLAY", 10) && vt_wait_for(&t, "publishers 1", 10);
  if (!ok) fprintf(stderr, "    no replay header:\n%s\n", t.text);
  double a = -1;
  if (ok) { /* Space: the clock stops */
    vt_send(&t, " ");
    ok = vt_wait_for(&t, "paused", 5);
    pump_for(&t, 0.3);
    a = shown_clock(&t, NULL);
    pump_for(&t, 1.0);
    ok = ok && a >= 0 && clock_near(&t, a, 0.1);
  }
  if (ok) { /* Right: 10 s on, still paused */
    vt_send(&t, "\033OC");
    ok = clock_near(&t, a + 10, 5) && strstr(t.text, "paused");
  }
  if (ok) { /* Left: back again (the model rebuilt) */
    vt_send(&t, "\033OD");
    ok = clock_near(&t, a, 5) && strstr(t.text, "publishers 1");
  }
  if (ok) { /* End: the last message, 59.5 s, and the model shows it */
    vt_send(&t, "\033OF");
    ok = clock_near(&t, 59.5, 5) && vt_wait_for(&t, "357-357", 5);
  }
  if (ok) { /* Home: the first; Space resumes and the clock moves */
    vt_send(&t, "\033OH");
    ok = clock_near(&t, 0, 5) && vt_wait_for(&t, " 0-0 ", 5);
    vt_send(&t, " ");
    pump_for(&t, 1.5);
    double b = shown_clock(&t, NULL);
    ok = ok && b > 0.5 && b < 10 && !strstr(t.text, "paused");
    if (!ok) fprintf(stderr, "    after resuming: %.1f\n%s\n", b, t.text);
  }
  if (ok) { /* ] doubles the speed, [ [ halves it twice */
    vt_send(&t, "]");
    ok = vt_wait_for(&t, "x2 ", 5);
    vt_send(&t, "[[");
    ok = ok && vt_wait_for(&t, "x1/2", 5);
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  CHECK(ok);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/tui.ntr", dir);
  char bdir[PATH_MAX];
  vt_build_dir(bdir, sizeof bdir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bdir);
  TEST_RUN(replay_keys_pause_seek_and_change_speed);
  unlink(path);
  rmdir(dir);
  return TEST_DONE();
}

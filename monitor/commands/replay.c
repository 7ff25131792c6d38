/* `nccltop replay FILE`: the recorded messages go into the same model the
 * live viewer fills, each at its recorded receive time, and frames are
 * printed on the recording's clock: the frames the live viewer printed
 * (batch), at the recording's pace or as fast as possible (--speed max). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../feeds/feed.h"
#include "../outputs/batch.h"
#include "cli.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../core/diag.h"
#include "../core/model.h"
#include "../options.h"
#include "../feeds/recording.h"
#include "../screen/screen.h"

static void replay_usage(FILE *f) {
  fprintf(f, "usage: nccltop replay FILE [options]   show a recording as the monitor saw it\n"
             "  the monitor's screen on the recording's clock: Space pauses, Left Right seek\n"
             "  10 s, Home End go to the start / end, [ ] halve / double the speed\n"
             "  -b, --batch          print frames (with --json: JSON lines), as the live -b did\n"
             "  --speed X            X times the recorded pace, 0.1..1000, or max (default 1)\n"
             "  -n N, -d TIME, --json, --stall-ms MS, -C, -A, --max-memory MIB: as the monitor's\n"
             "  -h, --help           this text\n");
}

/* Sleeps until the monotonic time `until` (a signal ends it early). */
static void sleep_until(double until) {
  double left = until - nt_now_s();
  if (left <= 0) return;
  if (left > 1) left = 1;
  struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
  nanosleep(&ts, NULL);
}

typedef struct {
  nt_rec_reader *rd;
  nt_rec_applier *ap;
  nt_rec_record rec;
  bool have; /* rec holds the next record */
  bool done; /* no more records */
  double start_s;
  int rc; /* 1 after a read error */
} feed;

static double rec_time(const feed *f) {
  return nt_rec_time_s(nt_rec_header_of(f->rd), f->rec.t_ns);
}

static void advance(feed *f) {
  char err[700];
  int rc = nt_rec_next(f->rd, &f->rec, err, sizeof err);
  f->have = rc == 1;
  if (rc == 1) return;
  f->done = true;
  if (rc < 0) f->rc = 1;
  if (err[0]) fprintf(stderr, "nccltop replay: %s\n", err);
}

/* Applies every record received up to `until`. */
static void apply_until(feed *f, nt_model *m, double until) {
  while (f->have && rec_time(f) <= until) {
    nt_rec_apply(f->ap, m, &f->rec, rec_time(f));
    advance(f);
  }
}

/* A recording of the batch monitor (-b --record) holds the times it
 * printed its frames: the same frames, printed at the same times, after
 * the same messages. A FRAME record no later than the frame before it is
 * not printed again: the monitor never printed two frames in the same
 * nanosecond (it would be the same frame), so the frames printed are at
 * most the distinct times the file gives, not the records it decompresses
 * to (a file of one FRAME record repeated millions of times is one frame). */
static int run_recorded_frames(feed *f, nt_model *m, nt_diag *d, const nt_options *o,
                               double speed) {
  double wall0 = nt_now_s(), first = -1;
  int frame = 0;
  bool printed = false;
  uint64_t printed_ns = 0;
  while (f->have && !nt_quit_requested() && (!o->iterations || frame < o->iterations)) {
    double t = rec_time(f);
    if (f->rec.type != NT_REC_FRAME) {
      nt_rec_apply(f->ap, m, &f->rec, t);
      advance(f);
      continue;
    }
    if (printed && f->rec.t_ns <= printed_ns) {
      advance(f);
      continue;
    }
    printed = true;
    printed_ns = f->rec.t_ns;
    if (first < 0) first = t;
    if (speed > 0) {
      double at = wall0 + (t - first) / speed;
      while (!nt_quit_requested() && nt_now_s() < at) sleep_until(at);
      if (nt_quit_requested()) break;
    }
    nt_model_tick(m, t);
    if (nt_batch_print(stdout, m, d, o, t) != 0) return 1;
    frame++;
    advance(f);
  }
  return f->rc;
}

/* A frame every -d of the recording's time, from its start. A quiet
 * stretch (no record received) is shown by its first frame only: the
 * frames up to the one whose interval holds the next record are skipped,
 * and not waited for. So a recording that starts long after its recorder
 * (a black box written after a day of waiting) or has a long gap prints at
 * most two frames per interval that holds data, and its time, however far
 * it jumps, costs no frames. */
static int run_batch(feed *f, nt_model *m, nt_diag *d, const nt_options *o, double speed) {
  double delay = o->delay_ms / 1000.0, next = f->start_s + delay;
  double wall0 = nt_now_s(), last_t = 0, skipped = 0;
  bool was_quiet = false;
  for (int frame = 0; !nt_quit_requested() && (!o->iterations || frame < o->iterations);) {
    bool quiet = !(f->have && rec_time(f) <= next);
    if (quiet && was_quiet && f->have) { /* to the interval of the next record */
      double to = next + floor((rec_time(f) - next) / delay) * delay;
      while (to < rec_time(f)) to += delay;
      skipped += to - next;
      next = to;
      quiet = false;
    }
    was_quiet = quiet;
    apply_until(f, m, next);
    if (f->have) last_t = rec_time(f);
    if (speed > 0) {
      double at = wall0 + (next - f->start_s - delay - skipped) / speed;
      while (!nt_quit_requested() && nt_now_s() < at) sleep_until(at);
      if (nt_quit_requested()) break;
    }
    nt_model_tick(m, next);
    if (nt_batch_print(stdout, m, d, o, next) != 0) return 1;
    frame++;
    /* The last frame is the first one after the last record. */
    if (f->done && next >= last_t) break;
    next += delay;
  }
  return f->rc;
}

int nt_replay_main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
      replay_usage(stdout);
      return 0;
    }
    fprintf(stderr, "nccltop replay: which FILE? usage: nccltop replay FILE [options]\n");
    return 2;
  }
  const char *path = argv[1];
  /* --speed is ours; the rest are the monitor's options. */
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  if (!rest) return 1;
  int nrest = 0;
  double speed = 1;
  rest[nrest++] = (char *)"nccltop replay";
  for (int i = 2; i < argc; i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--speed")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nccltop replay: option '--speed' needs a value\n");
        free(rest);
        return 2;
      }
      v = argv[++i];
    } else if (!strncmp(argv[i], "--speed=", 8)) {
      v = argv[i] + 8;
    } else {
      rest[nrest++] = argv[i];
      continue;
    }
    char *end;
    errno = 0;
    speed = !strcmp(v, "max") ? 0 : strtod(v, &end);
    if (strcmp(v, "max") && (errno || end == v || *end || !(speed >= 0.1 && speed <= 1000))) {
      fprintf(stderr, "nccltop replay: --speed must be 0.1..1000 or max, not '%s'\n", v);
      free(rest);
      return 2;
    }
  }
  nt_options o;
  nt_options_defaults(&o);
  int prc = nt_options_parse(&o, nrest, rest);
  free(rest);
  if (prc) return prc == 1 ? 0 : 2;
  if (o.dir || o.nconnect || o.record) {
    fprintf(stderr, "nccltop replay: --dir, --connect and --record are for live sources\n");
    return 2;
  }
  /* The first signal stops the replay (the screen gives the terminal
   * back); a second one, if it has not stopped, ends the process. */
  if (nt_signals_install(true, nt_term_restore_now) != 0) perror("nccltop replay: signal handlers");
  char err[700];
  if (!o.batch) {
    nt_feed *feed = nt_feed_replay_open(path, &o, speed, err, sizeof err);
    if (!feed) {
      fprintf(stderr, "nccltop replay: %s\n", err);
      return 1;
    }
    int rc = nt_screen_run(feed, &o);
    nt_feed_free(feed);
    return rc;
  }
  feed f = {0};
  if (!(f.rd = nt_rec_open(path, err, sizeof err))) {
    fprintf(stderr, "nccltop replay: %s\n", err);
    return 1;
  }
  f.start_s = nt_rec_time_s(nt_rec_header_of(f.rd), 0);
  o.start_s = f.start_s;
  nt_model *m = nt_model_new();
  nt_diag *d = nt_diag_new();
  f.ap = nt_rec_applier_new();
  if (!m || !d || !f.ap) {
    fprintf(stderr, "nccltop replay: out of memory\n");
    nt_diag_free(d);
    nt_model_free(m);
    nt_rec_applier_free(f.ap);
    nt_rec_close_reader(f.rd);
    return 1;
  }
  nt_model_set_budget(m, (size_t)o.max_memory_mib << 20);
  advance(&f);
  int rc = nt_rec_header_of(f.rd)->flags & NT_REC_FLAG_FRAMES
               ? run_recorded_frames(&f, m, d, &o, speed)
               : run_batch(&f, m, d, &o, speed);
  nt_diag_free(d);
  nt_model_free(m);
  nt_rec_applier_free(f.ap);
  nt_rec_close_reader(f.rd);
  return rc;
}

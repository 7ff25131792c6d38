/* `nccltop replay FILE`: the recorded messages go into the same model the
 * live viewer fills, each at its recorded receive time, and frames are
 * printed on the recording's clock: the frames the live viewer printed
 * (batch), at the recording's pace or as fast as possible (--speed max). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../feeds/drive.h"
#include "../feeds/feed.h"
#include "../outputs/batch.h"
#include "cli.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../core/diag.h"
#include "../core/model.h"
#include "../options.h"
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

typedef struct {
  nt_model *m;
  nt_diag *d; /* the frames' diagnosis of m */
  const nt_options *o;
} batch_run;

static int print_frame(void *ctx, double now) {
  batch_run *b = ctx;
  return nt_batch_print(stdout, b->m, b->d, b->o, now) != 0;
}

/* The frames of batch mode: the recording played in steps by the headless
 * loop (feeds/drive.h), a frame at each of its ticks. A recording of the
 * batch monitor (-b --record) holds the times it printed its frames, so
 * the same frames are printed, at the same times, after the same
 * messages; any other, a frame every -d from its start, a quiet stretch
 * skipped after its first frame, the last one the first after the last
 * record (feeds/feed.h: nt_feed_replay_steps). Returns the exit status. */
static int run_batch(const char *path, nt_options *o, double speed) {
  char err[700];
  nt_feed *feed = nt_feed_replay_steps(path, o, speed, err, sizeof err);
  if (!feed) {
    fprintf(stderr, "nccltop replay: %s\n", err);
    return 1;
  }
  o->start_s = nt_feed_now(feed); /* the recording's start: frames count from it */
  batch_run b = {nt_feed_model(feed), nt_diag_new(), o};
  if (!b.d) {
    fprintf(stderr, "nccltop replay: out of memory\n");
    nt_feed_free(feed);
    return 1;
  }
  nt_drive dr = {.delay_s = o->delay_ms / 1000.0,
                 .iterations = o->iterations,
                 .on_tick = print_frame,
                 .ctx = &b};
  int rc = nt_drive_run(feed, &dr) ? 1 : 0;
  /* A cut end is a note; corruption stops the replay there and fails it. */
  if (nt_feed_replay_problem(feed, err, sizeof err)) rc = 1;
  if (err[0]) fprintf(stderr, "nccltop replay: %s\n", err);
  nt_diag_free(b.d);
  nt_feed_free(feed);
  return rc;
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
  return run_batch(path, &o, speed);
}

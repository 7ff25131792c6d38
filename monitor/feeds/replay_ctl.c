/* The replay feed (feed.h): a recording played into a model on its own
 * clock, which the screen reads as it reads the live feed. Its controls:
 * pause, seek (a backward seek, or a long forward one, rebuilds the model
 * from the chunk NT_REPLAY_WARMUP_S before the target: the file's index),
 * and the speed doubled or halved.
 *
 * Played in steps (nt_feed_replay_steps, for replay -b and the headless
 * loop), the same reader and model run on another clock: one that stands
 * until the loop advances it to exactly the next tick's time, so frames are
 * built at the recording's times whatever the speed and however slow a
 * frame is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "../core/model.h"
#include "feed_internal.h"
#include "../options.h"
#include "recording.h"

#define MAX_SEEK_POINTS (1u << 17) /* 2 s chunks: three days */
#define TICK_S          0.5        /* model ticks while fast-forwarding */

typedef struct {
  nt_feed base;  /* first: the feed's calls reach this struct */
  size_t budget; /* the model's byte budget (--max-memory) */
  char path[256];
  nt_rec_reader *rd;
  nt_rec_applier *ap;
  nt_model *m;
  nt_rec_seek_point *idx;
  uint32_t nidx;
  nt_rec_record rec;
  bool have, done;
  char error[700];  /* a read error or truncation note, shown in the status */
  double start_s;   /* the recording's start (monotonic seconds) */
  double end_rel;   /* the last record's time, relative; grows as records are read */
  double first_rel; /* the first record's time */
  /* The clock: rel = base_rel + (now - base_wall) x speed, unless paused. */
  double base_rel, base_wall, speed;
  bool paused;
  double last_tick_rel;
  bool corrupt; /* reading stopped at corruption, not at a (cut) end */
  /* Played in steps: the clock is step_s (the viewer's seconds, as ticks
   * are: a record is due when nt_rec_time_s <= the step, the very
   * comparison the live loop's times make). */
  bool steps, frames; /* frames: ticks at the FRAME marks */
  double step_s;
  bool quiet; /* the last step applied no record */
  bool ended; /* every record was read by the last step */
  /* Wall pacing: a tick's wall time is pace_wall + (its time - pace_s) /
   * speed; pace_s is the first tick's, moved on by every skipped stretch. */
  bool anchored;
  double pace_wall, pace_s;
  /* The frame mark taken (read past) for the next tick. */
  bool have_mark, any_mark;
  double mark_s;
  uint64_t mark_ns;
} nt_replay;

static double rec_rel(const nt_replay *r) {
  return (double)r->rec.t_ns / 1e9;
}

static void advance(nt_replay *r) {
  char err[700];
  int rc = nt_rec_next(r->rd, &r->rec, err, sizeof err);
  r->have = rc == 1;
  if (rc == 1) {
    if (rec_rel(r) > r->end_rel) r->end_rel = rec_rel(r);
    return;
  }
  r->done = true;
  r->corrupt = rc < 0;
  if (err[0]) snprintf(r->error, sizeof r->error, "%s", err);
}

static double clock_rel(const nt_replay *r) {
  if (r->paused) return r->base_rel;
  return r->base_rel + (nt_now_s() - r->base_wall) * r->speed;
}

static void set_clock(nt_replay *r, double rel) {
  if (rel < 0) rel = 0;
  r->base_rel = rel;
  r->base_wall = nt_now_s();
}

/* Applies records up to rel, ticking the model every TICK_S of recording
 * time so that what ages (stale, ended) ages as it did. Returns how many. */
static int apply_until(nt_replay *r, double rel) {
  int n = 0;
  for (; r->have && rec_rel(r) <= rel; n++) {
    double t = rec_rel(r);
    if (t - r->last_tick_rel >= TICK_S) {
      nt_model_tick(r->m, r->start_s + t);
      r->last_tick_rel = t;
    }
    nt_rec_apply(r->ap, r->m, &r->rec, nt_rec_time_s(nt_rec_header_of(r->rd), r->rec.t_ns));
    advance(r);
  }
  return n;
}

static nt_model *new_model(size_t budget) {
  nt_model *m = nt_model_new();
  if (m) nt_model_set_budget(m, budget);
  return m;
}

/* A new model, fed from the chunk NT_REPLAY_WARMUP_S before rel up to
 * rel. Keeps the old one if no memory is left for a new one. */
static void rebuild(nt_replay *r, double rel) {
  nt_model *m = new_model(r->budget);
  if (!m) return;
  nt_model_free(r->m);
  r->m = m;
  uint64_t from = r->nidx ? r->idx[0].offset : 0;
  double want = rel - NT_REPLAY_WARMUP_S;
  for (uint32_t i = 0; i < r->nidx && (double)r->idx[i].first_ns / 1e9 <= want; i++)
    from = r->idx[i].offset;
  char err[700];
  r->error[0] = '\0';
  r->corrupt = false;
  r->done = r->have = false;
  r->last_tick_rel = -1e9;
  if (nt_rec_seek(r->rd, from, err, sizeof err) != 0) {
    snprintf(r->error, sizeof r->error, "%s", err);
    r->done = r->corrupt = true;
    return;
  }
  advance(r);
  apply_until(r, rel);
}

static void replay_free(nt_feed *f) {
  nt_replay *r = (nt_replay *)f;
  nt_rec_close_reader(r->rd);
  nt_rec_applier_free(r->ap);
  nt_model_free(r->m);
  free(r->idx);
  free(r);
}

static int replay_poll(nt_feed *f, int timeout_ms) {
  nt_replay *r = (nt_replay *)f;
  double rel = clock_rel(r);
  int n = apply_until(r, rel);
  if (r->done && !r->paused && rel > r->end_rel) { /* the end: the clock stops there */
    set_clock(r, r->end_rel);
    r->paused = true;
  }
  /* Sleep until the next record is due, or the timeout. */
  double wait = timeout_ms / 1000.0;
  if (r->have && !r->paused) {
    double due = (rec_rel(r) - rel) / r->speed;
    if (due < wait) wait = due;
  }
  if (wait > 0) {
    struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
  }
  return n + apply_until(r, clock_rel(r));
}

static nt_model *replay_model(nt_feed *f) {
  return ((nt_replay *)f)->m;
}

static double replay_now(nt_feed *f) {
  nt_replay *r = (nt_replay *)f;
  double rel = clock_rel(r);
  if (r->done && rel > r->end_rel) rel = r->end_rel;
  return r->start_s + rel;
}

static void toggle_pause(nt_replay *r) {
  double rel = clock_rel(r);
  if (r->paused && r->done && rel >= r->end_rel) return; /* at the end: nothing to resume */
  set_clock(r, rel);
  r->paused = !r->paused;
}

/* Moves the clock by delta_s (negative: back), within the recording. */
static void seek(nt_replay *r, double delta_s) {
  double now = clock_rel(r), to = now + delta_s;
  if (to < r->first_rel) to = r->first_rel;
  if (r->done && to > r->end_rel) to = r->end_rel;
  if (to < now || to - now > 2 * NT_REPLAY_WARMUP_S)
    rebuild(r, to);
  else
    apply_until(r, to);
  set_clock(r, to);
}

static void seek_end(nt_replay *r, bool to_end) {
  if (!to_end) {
    rebuild(r, r->first_rel);
    set_clock(r, r->first_rel);
    return;
  }
  /* The last chunk's start, then everything after it. */
  double last = r->nidx ? (double)r->idx[r->nidx - 1].first_ns / 1e9 : 0;
  if (last > clock_rel(r) + 2 * NT_REPLAY_WARMUP_S) rebuild(r, last);
  apply_until(r, INFINITY);
  set_clock(r, r->end_rel);
  r->paused = true;
}

/* Speed x2 (faster) or /2 (slower), 1/16..64. */
static void change_speed(nt_replay *r, bool faster) {
  set_clock(r, clock_rel(r));
  double s = faster ? r->speed * 2 : r->speed / 2;
  if (s >= 1.0 / 16 && s <= 64) r->speed = s;
}

static bool replay_control(nt_feed *f, int control) {
  nt_replay *r = (nt_replay *)f;
  switch (control) {
  case NT_FEED_PAUSE: toggle_pause(r); return true;
  case NT_FEED_BACK: seek(r, -NT_FEED_SEEK_S); return true;
  case NT_FEED_FORWARD: seek(r, NT_FEED_SEEK_S); return true;
  case NT_FEED_TO_START: seek_end(r, false); return true;
  case NT_FEED_TO_END: seek_end(r, true); return true;
  case NT_FEED_SLOWER: change_speed(r, false); return true;
  case NT_FEED_FASTER: change_speed(r, true); return true;
  default: return false;
  }
}

static double replay_rate(const nt_feed *f) {
  return ((const nt_replay *)f)->speed;
}

static void fmt_clock(double s, char *buf, size_t cap) {
  if (s < 0) s = 0;
  int m = (int)(s / 60);
  snprintf(buf, cap, "%d:%04.1f", m, s - m * 60.0);
}

static void replay_status(const nt_feed *f, char *buf, size_t cap) {
  const nt_replay *r = (const nt_replay *)f;
  char now[32], end[32], speed[32];
  double rel = r->steps ? r->step_s - r->start_s : clock_rel(r);
  if (r->done && rel > r->end_rel) rel = r->end_rel;
  fmt_clock(rel, now, sizeof now);
  fmt_clock(r->end_rel, end, sizeof end);
  if (r->speed <= 0)
    snprintf(speed, sizeof speed, "max");
  else if (r->speed >= 1)
    snprintf(speed, sizeof speed, "x%g", r->speed);
  else
    snprintf(speed, sizeof speed, "x1/%g", 1 / r->speed);
  char clean[200];
  nt_sanitize(r->path, strlen(r->path), clean, sizeof clean);
  snprintf(buf, cap, "REPLAY %s of %s%s  %s%s  %s%s%s", now, end, r->done ? "" : "+", speed,
           r->paused ? "  paused" : "", clean, r->error[0] ? "  " : "", r->error);
}

static const nt_feed_ops replay_ops = {
    .poll = replay_poll,
    .model = replay_model,
    .now = replay_now,
    .rate = replay_rate,
    .status = replay_status,
    .mode = "REPLAY",
    .control = replay_control,
    .free = replay_free,
};

/* The feed with its reader at the first record; the seek index only for
 * the kind that seeks (ops). NULL with one line in err. */
static nt_replay *open_replay(const char *path, const nt_options *o, const nt_feed_ops *ops,
                              char *err, size_t errlen) {
  nt_replay *r = calloc(1, sizeof *r);
  if (!r) return snprintf(err, errlen, "out of memory"), NULL;
  r->base.ops = ops;
  r->budget = (size_t)o->max_memory_mib << 20;
  snprintf(r->path, sizeof r->path, "%s", path);
  if (ops->control) r->idx = calloc(MAX_SEEK_POINTS, sizeof *r->idx);
  r->ap = nt_rec_applier_new();
  r->m = new_model(r->budget);
  if ((ops->control && !r->idx) || !r->ap || !r->m) {
    snprintf(err, errlen, "out of memory");
    replay_free(&r->base);
    return NULL;
  }
  if (!(r->rd = nt_rec_open(path, err, errlen))) {
    replay_free(&r->base);
    return NULL;
  }
  r->start_s = nt_rec_time_s(nt_rec_header_of(r->rd), 0);
  if (r->idx) r->nidx = nt_rec_index(r->rd, r->idx, MAX_SEEK_POINTS);
  /* The end as far as the chunk headers say (a closed last chunk gives its
   * last time); reading moves it on. */
  if (r->nidx) r->end_rel = (double)r->idx[r->nidx - 1].first_ns / 1e9;
  r->last_tick_rel = -1e9;
  advance(r);
  return r;
}

nt_feed *nt_feed_replay_open(const char *path, const nt_options *o, double speed, char *err,
                             size_t errlen) {
  nt_replay *r = open_replay(path, o, &replay_ops, err, errlen);
  if (!r) return NULL;
  /* Start at the first message, not at the recorder's start. */
  r->first_rel = r->have ? rec_rel(r) : 0;
  set_clock(r, r->first_rel);
  /* --speed: 1/16..64 (0, "max": 64). */
  r->speed = speed <= 0 || speed > 64 ? 64 : speed < 1.0 / 16 ? 1.0 / 16 : speed;
  return &r->base;
}

/* ---- played in steps ---- */

static double rec_abs(const nt_replay *r) {
  return nt_rec_time_s(nt_rec_header_of(r->rd), r->rec.t_ns);
}

/* Applies the records received up to `until`, with no model tick between
 * them: the loop ticks at every step, as the live loop did. */
static int apply_to(nt_replay *r, double until) {
  int n = 0;
  for (; r->have && rec_abs(r) <= until; n++) {
    nt_rec_apply(r->ap, r->m, &r->rec, rec_abs(r));
    advance(r);
  }
  return n;
}

/* Reads on to the next frame mark, applying the records before it, and
 * takes it; INFINITY when none is left. The batch monitor never printed
 * two frames in the same nanosecond (it would be the same frame), so a
 * mark no later than the one before is passed over: the ticks are at most
 * the distinct times the file gives, not the records it decompresses to
 * (a file of one FRAME record repeated millions of times is one frame). */
static double next_mark(nt_replay *r) {
  while (r->have && !nt_quit_requested()) {
    if (r->rec.type == NT_REC_FRAME && (!r->any_mark || r->rec.t_ns > r->mark_ns)) {
      r->any_mark = r->have_mark = true;
      r->mark_ns = r->rec.t_ns;
      r->mark_s = rec_abs(r);
      advance(r);
      return r->mark_s;
    }
    nt_rec_apply(r->ap, r->m, &r->rec, rec_abs(r)); /* a mark passed over: nothing */
    advance(r);
  }
  return INFINITY;
}

/* A plan after the clock on the -d grid: past a quiet stretch (no record
 * in the interval just stepped, none in the planned one), on to the
 * interval that holds the next record. A quiet stretch is so shown by its
 * first frame only, however long (a black box written a day after its
 * recorder started), and costs no wall time. */
static double grid_tick(nt_replay *r, double planned, double delay) {
  if (r->ended) return INFINITY; /* the tick after the last record was made */
  if (!r->quiet || !r->have || rec_abs(r) <= planned) return planned;
  double t = rec_abs(r), to = planned + floor((t - planned) / delay) * delay;
  while (to < t) to += delay;
  r->pace_s += to - planned;
  return to;
}

static double steps_next_tick(nt_feed *f, double planned, double delay) {
  nt_replay *r = (nt_replay *)f;
  double wall = nt_now_s(), next;
  if (planned <= r->step_s) /* the clock is there: the tick is about to be made */
    next = planned;
  else if (r->frames) /* the mark taken, until the clock reaches it */
    next = r->have_mark && r->mark_s > r->step_s ? r->mark_s : next_mark(r);
  else
    next = grid_tick(r, planned, delay);
  if (!r->anchored && isfinite(next)) { /* the first tick is at once */
    r->anchored = true;
    r->pace_wall = wall;
    r->pace_s = next;
  }
  return next;
}

static int steps_advance(nt_feed *f, double to, int timeout_ms) {
  nt_replay *r = (nt_replay *)f;
  if (to <= r->step_s) return 0;
  if (r->speed > 0 && r->anchored) {
    double due = r->pace_wall + (to - r->pace_s) / r->speed, left = due - nt_now_s();
    if (left > 0) {
      double wait = timeout_ms / 1000.0 < left ? timeout_ms / 1000.0 : left;
      struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
      nanosleep(&ts, NULL);
      if (nt_now_s() < due) return 0; /* not due yet: the loop looks again */
    }
  }
  /* At a frame mark everything before it was applied when it was taken;
   * what came after it, even in the same nanosecond, waits for the next. */
  int n = r->frames ? 0 : apply_to(r, to);
  r->quiet = n == 0;
  r->step_s = to;
  r->ended = r->done;
  return n;
}

/* The clock stands until advanced: nothing more is due. */
static int steps_poll(nt_feed *f, int timeout_ms) {
  (void)f;
  (void)timeout_ms;
  return 0;
}

static double steps_now(nt_feed *f) {
  return ((nt_replay *)f)->step_s;
}

static double steps_rate(const nt_feed *f) {
  const nt_replay *r = (const nt_replay *)f;
  return r->speed > 0 ? r->speed : INFINITY;
}

static const nt_feed_ops steps_ops = {
    .poll = steps_poll,
    .model = replay_model,
    .now = steps_now,
    .rate = steps_rate,
    .status = replay_status,
    .mode = "REPLAY",
    .free = replay_free,
    .next_tick = steps_next_tick,
    .advance = steps_advance,
};

nt_feed *nt_feed_replay_steps(const char *path, const nt_options *o, double speed, char *err,
                              size_t errlen) {
  nt_replay *r = open_replay(path, o, &steps_ops, err, errlen);
  if (!r) return NULL;
  r->steps = true;
  r->frames = nt_rec_header_of(r->rd)->flags & NT_REC_FLAG_FRAMES;
  r->step_s = r->start_s;
  r->speed = speed > 0 ? speed : 0;
  return &r->base;
}

bool nt_feed_replay_problem(const nt_feed *f, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  if (f->ops != &replay_ops && f->ops != &steps_ops) return false;
  const nt_replay *r = (const nt_replay *)f;
  snprintf(buf, cap, "%s", r->error);
  return r->corrupt;
}

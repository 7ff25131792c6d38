/* The interactive replay: a recording played into a model on its own clock,
 * which the screen loop reads instead of a live source. Space pauses, the
 * clock seeks (a backward seek, or a long forward one, rebuilds the model
 * from the chunk NT_REPLAY_WARMUP_S before the target: the file's index),
 * and the speed doubles or halves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "../core/model.h"
#include "../options.h"
#include "recording.h"
#include "replay.h"

#define MAX_SEEK_POINTS (1u << 17) /* 2 s chunks: three days */
#define TICK_S          0.5        /* model ticks while fast-forwarding */

struct nt_replay {
  const nt_options *o;
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
};

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
 * time so that what ages (stale, ended) ages as it did. */
static void apply_until(nt_replay *r, double rel) {
  while (r->have && rec_rel(r) <= rel) {
    double t = rec_rel(r);
    if (t - r->last_tick_rel >= TICK_S) {
      nt_model_tick(r->m, r->start_s + t);
      r->last_tick_rel = t;
    }
    nt_rec_apply(r->ap, r->m, &r->rec, nt_rec_time_s(nt_rec_header_of(r->rd), r->rec.t_ns));
    advance(r);
  }
}

static nt_model *new_model(const nt_options *o) {
  nt_model *m = nt_model_new();
  if (m) nt_model_set_budget(m, (size_t)o->max_memory_mib << 20);
  return m;
}

/* A new model, fed from the chunk NT_REPLAY_WARMUP_S before rel up to
 * rel. Keeps the old one if no memory is left for a new one. */
static void rebuild(nt_replay *r, double rel) {
  nt_model *m = new_model(r->o);
  if (!m) return;
  nt_model_free(r->m);
  r->m = m;
  uint64_t from = r->nidx ? r->idx[0].offset : 0;
  double want = rel - NT_REPLAY_WARMUP_S;
  for (uint32_t i = 0; i < r->nidx && (double)r->idx[i].first_ns / 1e9 <= want; i++)
    from = r->idx[i].offset;
  char err[700];
  r->error[0] = '\0';
  r->done = r->have = false;
  r->last_tick_rel = -1e9;
  if (nt_rec_seek(r->rd, from, err, sizeof err) != 0) {
    snprintf(r->error, sizeof r->error, "%s", err);
    r->done = true;
    return;
  }
  advance(r);
  apply_until(r, rel);
}

nt_replay *nt_replay_open(const char *path, const nt_options *o, char *err, size_t errlen) {
  nt_replay *r = calloc(1, sizeof *r);
  if (!r) return snprintf(err, errlen, "out of memory"), NULL;
  r->o = o;
  r->speed = 1;
  snprintf(r->path, sizeof r->path, "%s", path);
  r->idx = calloc(MAX_SEEK_POINTS, sizeof *r->idx);
  r->ap = nt_rec_applier_new();
  r->m = new_model(o);
  if (!r->idx || !r->ap || !r->m) {
    snprintf(err, errlen, "out of memory");
    nt_replay_close(r);
    return NULL;
  }
  if (!(r->rd = nt_rec_open(path, err, errlen))) {
    nt_replay_close(r);
    return NULL;
  }
  r->start_s = nt_rec_time_s(nt_rec_header_of(r->rd), 0);
  r->nidx = nt_rec_index(r->rd, r->idx, MAX_SEEK_POINTS);
  /* The end as far as the chunk headers say (a closed last chunk gives its
   * last time); reading moves it on. */
  if (r->nidx) r->end_rel = (double)r->idx[r->nidx - 1].first_ns / 1e9;
  r->last_tick_rel = -1e9;
  advance(r);
  /* Start at the first message, not at the recorder's start. */
  r->first_rel = r->have ? rec_rel(r) : 0;
  set_clock(r, r->first_rel);
  return r;
}

void nt_replay_close(nt_replay *r) {
  if (!r) return;
  nt_rec_close_reader(r->rd);
  nt_rec_applier_free(r->ap);
  nt_model_free(r->m);
  free(r->idx);
  free(r);
}

void nt_replay_poll(nt_replay *r, int timeout_ms) {
  double rel = clock_rel(r);
  apply_until(r, rel);
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
  apply_until(r, clock_rel(r));
}

nt_model *nt_replay_model(nt_replay *r) {
  return r->m;
}

double nt_replay_clock(nt_replay *r) {
  double rel = clock_rel(r);
  if (r->done && rel > r->end_rel) rel = r->end_rel;
  return r->start_s + rel;
}

void nt_replay_toggle_pause(nt_replay *r) {
  double rel = clock_rel(r);
  if (r->paused && r->done && rel >= r->end_rel) return; /* at the end: nothing to resume */
  set_clock(r, rel);
  r->paused = !r->paused;
}

bool nt_replay_paused(const nt_replay *r) {
  return r->paused;
}

void nt_replay_seek(nt_replay *r, double delta_s) {
  double now = clock_rel(r), to = now + delta_s;
  if (to < r->first_rel) to = r->first_rel;
  if (r->done && to > r->end_rel) to = r->end_rel;
  if (to < now || to - now > 2 * NT_REPLAY_WARMUP_S)
    rebuild(r, to);
  else
    apply_until(r, to);
  set_clock(r, to);
}

void nt_replay_seek_end(nt_replay *r, bool to_end) {
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

void nt_replay_speed(nt_replay *r, bool faster) {
  set_clock(r, clock_rel(r));
  double s = faster ? r->speed * 2 : r->speed / 2;
  if (s >= 1.0 / 16 && s <= 64) r->speed = s;
}

void nt_replay_set_speed(nt_replay *r, double speed) {
  set_clock(r, clock_rel(r));
  r->speed = speed <= 0 || speed > 64 ? 64 : speed < 1.0 / 16 ? 1.0 / 16 : speed;
}

double nt_replay_speed_of(const nt_replay *r) {
  return r->speed;
}

static void fmt_clock(double s, char *buf, size_t cap) {
  if (s < 0) s = 0;
  int m = (int)(s / 60);
  snprintf(buf, cap, "%d:%04.1f", m, s - m * 60.0);
}

void nt_replay_status(const nt_replay *r, char *buf, size_t cap) {
  char now[32], end[32], speed[32];
  double rel = clock_rel(r);
  if (r->done && rel > r->end_rel) rel = r->end_rel;
  fmt_clock(rel, now, sizeof now);
  fmt_clock(r->end_rel, end, sizeof end);
  if (r->speed >= 1)
    snprintf(speed, sizeof speed, "x%g", r->speed);
  else
    snprintf(speed, sizeof speed, "x1/%g", 1 / r->speed);
  char clean[200];
  nt_sanitize(r->path, strlen(r->path), clean, sizeof clean);
  snprintf(buf, cap, "REPLAY %s of %s%s  %s%s  %s%s%s", now, end, r->done ? "" : "+", speed,
           r->paused ? "  paused" : "", clean, r->error[0] ? "  " : "", r->error);
}

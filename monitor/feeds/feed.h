/* A feed: where the model's data comes from, as the screen and the headless
 * loop (drive.h) see it. Three kinds sit behind the one interface: the live
 * source (feed_live.c over source.h), the replay of a recording on its own
 * clock (replay_ctl.c), and an in-memory feed that tests hand messages to
 * (feed_memory.c). Every kind applies messages through the one ingest
 * (ingest.h), so a message means the same whichever feed carried it; the
 * reader never asks which kind it holds. */
#ifndef NCCLTOP_FEED_H
#define NCCLTOP_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/model.h"
#include "../options.h"

typedef struct nt_feed nt_feed;

/* Applies what the feed has for the model: live, every message received
 * (waiting up to timeout_ms for the first); a replay, every record due on
 * its clock (sleeping until the next one is due, at most timeout_ms); the
 * in-memory feed, every message handed to it up to its clock (it never
 * waits). Returns the messages applied. Never fails: problems become model
 * errors (or, for a replay, its status). */
int nt_feed_poll(nt_feed *f, int timeout_ms);

/* The headless loop's two calls (drive.h), both in the feed's clock.
 * nt_feed_next_tick: when the loop's next tick is due, given the one it
 * planned (ticks delay_s apart). Most feeds keep the plan; a recording
 * played in steps (nt_feed_replay_steps) moves it past a quiet stretch, or
 * to its next recorded frame mark, and answers INFINITY once it has played
 * to its end (the loop then ends). A plan at or before the feed's clock is
 * the tick about to be made: it is kept. */
double nt_feed_next_tick(nt_feed *f, double planned, double delay_s);
/* Reads the feed on toward its clock reaching `to`, waiting at most
 * timeout_ms of wall time. Live and a replay on its own clock poll (their
 * clock runs by itself; the rate turns the wait into wall time); a
 * recording played in steps, once `to` is due in wall time (at once at the
 * fastest speed), applies every record up to `to` and sets its clock to
 * exactly `to`. Returns the messages applied. */
int nt_feed_advance(nt_feed *f, double to, int timeout_ms);

/* The model the feed fills. Read it again after every nt_feed_poll and
 * nt_feed_control: a replay's seek builds a new one. */
nt_model *nt_feed_model(nt_feed *f);

/* The feed's clock, in the viewer's monotonic seconds (nt_now_s's scale):
 * what the model is ticked and frames are built at. Live, the wall clock;
 * a replay, the recording's time (stopped while paused); the in-memory
 * feed, the time its test set. */
double nt_feed_now(nt_feed *f);

/* Seconds of the feed's clock per second of the wall clock (a replay at x4:
 * 4): a frame's history interval is the update's, in the feed's clock. */
double nt_feed_rate(const nt_feed *f);

/* One line for the header's "watching": live, the endpoint directory and
 * relays; a replay, "REPLAY 0:12.3 of 1:40.0  x2  paused  FILE". */
void nt_feed_status(const nt_feed *f, char *buf, size_t cap);
/* The header's mode word when the feed has its own ("REPLAY"), NULL when
 * the screen judges it from the data's age (LIVE or STALE). */
const char *nt_feed_mode(const nt_feed *f);

/* What the user may ask of the feed's clock. A feed that has no such
 * control (live) refuses it, and the key keeps its meaning on the screen
 * (Space pauses the screen, Left and Right move the cursor). */
enum nt_feed_control {
  NT_FEED_PAUSE,    /* pause or resume */
  NT_FEED_BACK,     /* NT_FEED_SEEK_S back */
  NT_FEED_FORWARD,  /* NT_FEED_SEEK_S on */
  NT_FEED_TO_START, /* the first message */
  NT_FEED_TO_END,   /* the last one, paused there */
  NT_FEED_SLOWER,   /* half the speed */
  NT_FEED_FASTER,   /* twice the speed */
};
#define NT_FEED_SEEK_S 10.0
/* true when the feed took the control (its model may then be new). */
bool nt_feed_control(nt_feed *f, int control);

/* Frees the feed and what it owns (see each kind). NULL is fine. */
void nt_feed_free(nt_feed *f);

/* ---- the kinds ---- */

/* The live source: src and m stay the caller's (a recorder taps src; the
 * caller closes both after nt_feed_free). NULL when out of memory. */
struct nt_source;
nt_feed *nt_feed_live_new(struct nt_source *src, nt_model *m);

/* A recording played on its own clock (replay_ctl.c), which owns its model:
 * a seek back (or far on) rebuilds it from the chunk NT_REPLAY_WARMUP_S
 * before the target (the file's index). speed: 1/16..64, 0 the fastest
 * (64). The model's byte budget is o->max_memory_mib. Starts at the first
 * message, playing. NULL with one line in err. */
#define NT_REPLAY_WARMUP_S 30.0
nt_feed *nt_feed_replay_open(const char *path, const nt_options *o, double speed, char *err,
                             size_t errlen);

/* A recording played in steps, for the headless loop (replay -b): its
 * clock starts at the recording's start and moves only by
 * nt_feed_advance, to exactly the time asked, so frames are built at the
 * recording's own times. speed: x the recorded pace (the wall time
 * between ticks is their distance in the recording / speed, counted from
 * the first tick); 0: no waiting. Ticks: every delay_s, a quiet stretch
 * (no record in two intervals in a row) skipped to the interval that holds
 * the next record at no wall time; or, in a recording of the batch monitor
 * (NT_REC_FLAG_FRAMES), at its recorded frame marks, each after the
 * records before it and none after it (a mark no later than the one
 * before is the same frame: skipped). nt_feed_poll applies nothing (the
 * clock stands until advanced); it has no controls. NULL with one line in
 * err. */
nt_feed *nt_feed_replay_steps(const char *path, const nt_options *o, double speed, char *err,
                              size_t errlen);
/* A replay's read problem so far: "" when none, else one line (a truncated
 * end's note, or the corruption reading stopped at). true when it was
 * corruption (not a cut end). "" and false for another kind of feed. */
bool nt_feed_replay_problem(const nt_feed *f, char *buf, size_t cap);

/* The in-memory feed (for tests): messages handed to it with their receive
 * times are applied by nt_feed_poll once the feed's clock (set by the test,
 * start_s at first) reaches them, in the order handed. It owns a new model
 * with budget_bytes (0: none). NULL when out of memory. */
nt_feed *nt_feed_memory_new(double start_s, size_t budget_bytes);
/* Hands a copy of one message (topic, body) from `endpoint`, speaking for
 * pid (0: the processes it introduces, as a relay's), received at at_s.
 * -1 when f is not an in-memory feed, the message is over
 * NT_MAX_MESSAGE_BYTES, or memory ran out. */
int nt_feed_memory_push(nt_feed *f, const char *endpoint, uint32_t pid, const char *topic,
                        const void *body, size_t len, double at_s);
/* Sets the in-memory feed's clock (nothing for another kind). */
void nt_feed_memory_set_clock(nt_feed *f, double now_s);

#endif

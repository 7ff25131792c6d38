/* The headless loop that batch output, the exporter, record and replay -b
 * share: read the feed (feed.h), and at each tick advance the model and
 * hand it on. Ticks go by the feed's clock: live, a tick is made when the
 * wall clock passes it; a recording played in steps (replay -b) is moved
 * to exactly each tick's time, skipping its quiet stretches, or ticks at
 * its recorded frame marks, and ends the loop at its end. */
#ifndef NCCLTOP_TUI_DRIVE_H
#define NCCLTOP_TUI_DRIVE_H

#include <stdbool.h>

#include "../core/model.h"
#include "feed.h"

typedef struct {
  double delay_s;    /* between ticks */
  bool tick_at_once; /* the first tick at the start, else one delay after it */
  int iterations;    /* ticks before the loop ends; 0: until stopped */
  /* After nt_model_tick(nt_feed_model(feed), now): a non-zero return ends
   * the loop with it. */
  int (*on_tick)(void *ctx, double now);
  /* After every read of the feed (at most 100 ms apart), NULL for none:
   * a non-zero return ends the loop with it. */
  int (*between)(void *ctx, double now);
  void *ctx;
} nt_drive;

/* Runs until a signal asks to quit (nt_quit_requested), the iterations are
 * done or the feed has no more ticks (0 returned), or a callback returns
 * non-zero (returned). A tick that
 * fell behind (a frame slower than the delay) does not make a burst of
 * them, and the feed is read after every tick, so the publishers are
 * never left unread while frames are slow. A feed whose clock stands still
 * (a paused replay, an in-memory feed) never ticks: give it one that runs,
 * or one played in steps. */
int nt_drive_run(nt_feed *feed, const nt_drive *d);

#endif

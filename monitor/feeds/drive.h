/* The headless loop that batch output, the exporter and record share:
 * read the source, and at each tick advance the model and hand it on. */
#ifndef NCCLTOP_TUI_DRIVE_H
#define NCCLTOP_TUI_DRIVE_H

#include <stdbool.h>

#include "../core/model.h"
#include "source.h"

typedef struct {
  double delay_s;    /* between ticks */
  bool tick_at_once; /* the first tick at the start, else one delay after it */
  int iterations;    /* ticks before the loop ends; 0: until stopped */
  /* After nt_model_tick(now): a non-zero return ends the loop with it. */
  int (*on_tick)(void *ctx, double now);
  /* After every read of the source (at most 100 ms apart), NULL for none:
   * a non-zero return ends the loop with it. */
  int (*between)(void *ctx, double now);
  void *ctx;
} nt_drive;

/* Runs until a signal asks to quit (nt_quit_requested), the iterations are
 * done (0 returned), or a callback returns non-zero (returned). A tick that
 * fell behind (a frame slower than the delay) does not make a burst of
 * them, and the source is read after every tick, so the publishers are
 * never left unread while frames are slow. */
int nt_drive_run(nt_source *src, nt_model *m, const nt_drive *d);

#endif

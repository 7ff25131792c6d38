/* The interactive monitor (screen.c): what the commands call. */
#ifndef NCCLTOP_SCREEN_H
#define NCCLTOP_SCREEN_H

#include "../feeds/feed.h"
#include "../options.h"

/* Runs the screen on the feed (live or a replay: feed.h) until quit;
 * returns the exit status. The caller keeps the feed. */
int nt_screen_run(nt_feed *feed, const nt_options *o);

#endif

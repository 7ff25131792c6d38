/* The frame's bus bandwidth history (frame.h: nt_frame_comm.busbw_history),
 * private to the frame builder. */
#ifndef NCCLTOP_FRAME_HISTORY_H
#define NCCLTOP_FRAME_HISTORY_H

#include <stdbool.h>

#include "frame.h"

/* After the ranks and communicators of a build: adds what each rank
 * completed since the last build to its communicator's open interval,
 * closes the intervals that ended by f->now_s (update_s: how often the
 * caller builds, see nt_frame_opts), and copies every communicator's
 * samples into f->comms. False when memory ran out (the history starts
 * over). */
bool nt_frame_history_update(nt_frame *f, double update_s);
void nt_frame_history_free(nt_frame_history *h);

#endif

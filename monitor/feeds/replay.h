/* Interactive replay (replay_ctl.c): a recording played instead of the
 * live source, and what the screen loop asks of it. */
#ifndef NCCLTOP_REPLAY_H
#define NCCLTOP_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/model.h"
#include "../options.h"

/* The replay owns the model: after a seek it is a new one (read it again
 * with nt_replay_model after every nt_replay_poll). The clock is the
 * recording's (the model's now), in the viewer's monotonic seconds. */
typedef struct nt_replay nt_replay;
nt_replay *nt_replay_open(const char *path, const nt_options *o, char *err, size_t errlen);
void nt_replay_close(nt_replay *r);
/* Applies what is due at the replay clock; waits up to timeout_ms. */
void nt_replay_poll(nt_replay *r, int timeout_ms);
nt_model *nt_replay_model(nt_replay *r);
double nt_replay_clock(nt_replay *r);
void nt_replay_toggle_pause(nt_replay *r);
bool nt_replay_paused(const nt_replay *r);
/* Moves the clock by delta_s (negative: back; the model is rebuilt from
 * the nearest chunk NT_REPLAY_WARMUP_S before), or to the start (-INF
 * with to_end false) or the end (to_end true). */
#define NT_REPLAY_WARMUP_S 30.0
void nt_replay_seek(nt_replay *r, double delta_s);
void nt_replay_seek_end(nt_replay *r, bool to_end);
/* Speed x2 (faster) or /2 (slower), 1/16..64. */
void nt_replay_speed(nt_replay *r, bool faster);
double nt_replay_speed_of(const nt_replay *r);
/* --speed: 1/16..64 (0, "max": 64). */
void nt_replay_set_speed(nt_replay *r, double speed);
/* "REPLAY 0:12.3 of 1:40.0  x2  paused  FILE": the header's watching line. */
void nt_replay_status(const nt_replay *r, char *buf, size_t cap);

#endif

/* The interactive monitor (screen.c): what the commands call. */
#ifndef NCCLTOP_SCREEN_H
#define NCCLTOP_SCREEN_H

#include "../core/model.h"
#include "../options.h"
#include "../feeds/source.h"

/* Runs the screen on the live source (or o->replay) until quit; returns
 * the exit status. */
int nt_screen_run(nt_model *m, nt_source *src, const nt_options *o);

#endif

/* The live source's tap (record.c): what the viewer receives, written to
 * a recording (recording.h) as it arrives. */
#ifndef NCCLTOP_RECORDER_H
#define NCCLTOP_RECORDER_H

#include <stdbool.h>
#include <stddef.h>

#include "../options.h"
#include "../feeds/source.h"

typedef struct nt_recorder nt_recorder;
/* Whether FILE may be recorded to (before anything starts): it does not
 * exist, or force (--force) and it is a regular file; never one of the
 * files the options name to read (--topology, --hostfile, --server-key).
 * 0, or -1 with one line in err (a usage error). */
int nt_recorder_check(const char *path, bool force, const nt_options *o, char *err, size_t errlen);
/* The viewer's --record FILE: every message the source receives goes to
 * FILE (replaced if `replace`, see nt_rec_create). NULL with err. */
nt_recorder *nt_recorder_attach(nt_source *src, const char *path, double start_s, bool replace,
                                char *err, size_t errlen);
/* The batch monitor printed a frame at now_s (a FRAME record); NULL: no-op. */
void nt_recorder_frame(nt_recorder *rec, double now_s);
/* Detaches and closes; returns 0, or -1 after printing a write error. */
int nt_recorder_detach(nt_source *src, nt_recorder *rec);

#endif

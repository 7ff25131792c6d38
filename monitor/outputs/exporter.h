/* `nccltop exporter`: the frame the monitor shows, as Prometheus' text
 * exposition format (version 0.0.4) over HTTP (libmicrohttpd) and/or as a
 * node_exporter textfile.
 *
 * nt_exporter_render (exporter_render.c) writes one exposition of a frame;
 * exporter.c runs the source, builds a frame once per interval (with
 * nt_exporter_frame_opts, on its own nt_diag), renders it and serves the
 * latest text (its entry point: commands.h). Tests build the frame of a
 * model they fill themselves. */
#ifndef NCCLTOP_EXPORTER_H
#define NCCLTOP_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/frame.h"

/* The default --listen: loopback only. 19788 is outside the range Prometheus'
 * default port allocations list hands out (9100-9999), so it cannot clash
 * with an allocated exporter (dcgm-exporter 9400, node_exporter 9100). */
#define NT_EXPORTER_DEFAULT_PORT   19788
#define NT_EXPORTER_DEFAULT_LISTEN "127.0.0.1:19788"

typedef struct {
  uint32_t stall_ms;     /* --stall-ms, as the monitor */
  bool per_channel;      /* --per-channel: channel and peer labels */
  bool inspector;        /* the NCCL Inspector's four families (--inspector) */
  uint64_t renders;      /* nccltop_exporter_renders_total (before this one) */
  double render_seconds; /* the previous render's duration */
} nt_exporter_opts;

/* How the frame an exposition shows is built: the stall time, and the
 * alerts per rank (a node's late ranks keep a series each). */
nt_frame_opts nt_exporter_frame_opts(const nt_exporter_opts *o);
/* Writes the exposition of a frame built so to f. 0, or -1 when f failed. */
int nt_exporter_render(FILE *f, const nt_frame *fr, const nt_exporter_opts *o);

/* Writes v as a label value: backslash, double quote and line feed escaped
 * as the exposition format wants; bytes that are not printable ASCII or
 * valid UTF-8 never reach it (the model sanitized publisher strings), but a
 * control byte is written as '?' all the same. */
void nt_prom_label_value(FILE *f, const char *v);

#endif

/* The topology view's other face (R): the channels NCCL builds on that
 * machine, graph by graph (ring, tree, and from NCCL's own dump also
 * CollNet and NVLS), each channel's GPUs in NCCL's order and the NICs it
 * enters and leaves by. NCCL's own graphs when a publisher forwarded
 * NCCL_GRAPH_DUMP_FILE; else computed from the topology shown with the
 * what-ifs in force (nccltop's re-implementation of NCCL's search), and
 * marked as computed. */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/model.h"
#include "screen_internal.h"

#define CH_LINES 512 /* lines the panel holds; more are summed up in the last */
#define CH_LINE  256

typedef struct {
  char text[CH_LINES][CH_LINE];
  int n;
  bool bold[CH_LINES];
} ch_lines;

static void add(ch_lines *l, bool bold, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(ch_lines *l, bool bold, const char *fmt, ...) {
  if (l->n >= CH_LINES) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->text[l->n], CH_LINE, fmt, ap);
  va_end(ap);
  l->bold[l->n++] = bold;
}

/* "NET 0 > GPU 0 1 2 3 > NET 0", or without the NETs on one node. */
static void channel_line(ch_lines *l, int c, const int64_t *gpus, int ngpus, int64_t in,
                         int64_t out) {
  char line[CH_LINE], dev[32];
  int n = snprintf(line, sizeof line, "  ch %-3d ", c);
  if (in >= 0) {
    nt_dump_dev_text(in, dev, sizeof dev);
    n += snprintf(line + n, sizeof line - n, "NET %s > ", dev);
  }
  n += snprintf(line + n, sizeof line - n, "GPU");
  for (int k = 0; k < ngpus && n < (int)sizeof line - 40; k++) {
    nt_dump_dev_text(gpus[k], dev, sizeof dev);
    n += snprintf(line + n, sizeof line - n, " %s", dev);
  }
  if (out >= 0) {
    nt_dump_dev_text(out, dev, sizeof dev);
    snprintf(line + n, sizeof line - n, " > NET %s", dev);
  }
  add(l, false, "%s", line);
}

/* Between nodes only where channels cross them (they name their NICs). */
static void graph_head(ch_lines *l, const char *name, int nch, double bw_intra, double bw_inter,
                       const char *type_intra, const char *type_inter, int same, bool inter) {
  if (nch == 0) {
    add(l, true, "%s: no channel", name);
    return;
  }
  char between[64] = "";
  if (inter) snprintf(between, sizeof between, ", %.4g GB/s %s between", bw_inter, type_inter);
  add(l, true, "%s: %d channel%s, %.4g GB/s %s in a node%s%s", name, nch, nch == 1 ? "" : "s",
      bw_intra, type_intra, between, same ? ", same channels" : "");
}

static void from_dump(ch_lines *l, const nt_graph_dump *d) {
  static int64_t gpus[NT_DUMP_MAX_GPUS];
  for (int g = 0; g < nt_graph_dump_ngraphs(d); g++) {
    const nt_dump_graph *gr = nt_graph_dump_graph(d, g);
    int64_t in = -1;
    if (gr->nchannels > 0) nt_graph_dump_channel(d, g, 0, gpus, NT_DUMP_MAX_GPUS, &in, NULL);
    graph_head(l, nt_dump_graph_name(gr), gr->nchannels, gr->bw_intra, gr->bw_inter, gr->type_intra,
               gr->type_inter, gr->same_channels, in >= 0);
    for (int c = 0; c < gr->nchannels; c++) {
      int64_t in, out;
      int n = nt_graph_dump_channel(d, g, c, gpus, NT_DUMP_MAX_GPUS, &in, &out);
      if (n > 0) channel_line(l, c, gpus, n < NT_DUMP_MAX_GPUS ? n : NT_DUMP_MAX_GPUS, in, out);
    }
  }
}

static int64_t ep_dev(nt_topo *t, int endpoint) {
  if (endpoint < 0) return -1;
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, endpoint, &e);
  return e.dev;
}

static void from_search(ch_lines *l, nt_topo *t, const nt_topo_graphs *g) {
  static int64_t gpus[NT_DUMP_MAX_GPUS];
  for (int which = 0; which < 2; which++) {
    nt_topo_graph_info gi;
    if (!nt_topo_graphs_graph(g, which, &gi)) continue;
    graph_head(l, which ? "tree" : "ring", gi.nchannels, gi.bw_intra, gi.bw_inter,
               nt_path_name(gi.type_intra), nt_path_name(gi.type_inter), gi.same_channels,
               nt_topo_graphs_nodes(g) > 1);
    int ngpus = gi.ngpus < NT_DUMP_MAX_GPUS ? gi.ngpus : NT_DUMP_MAX_GPUS;
    for (int c = 0; c < gi.nchannels; c++) {
      for (int k = 0; k < ngpus; k++)
        gpus[k] = ep_dev(t, nt_topo_graphs_channel_gpu(g, which, c, k));
      channel_line(l, c, gpus, ngpus, ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 0)),
                   ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 1)));
    }
  }
}

/* The search for the topology shown, again only when it or a what-if
 * changed (s->topo_serial). */
static const nt_topo_graphs *computed(nt_screen *s, nt_topo *t, char *err, size_t errlen) {
  if (s->gr_search && s->gr_serial == s->topo_serial) return s->gr_search;
  nt_topo_graphs_free(s->gr_search);
  s->gr_search = nt_topo_graphs_compute(t, 1, err, errlen);
  s->gr_serial = s->topo_serial;
  return s->gr_search;
}

void nt_view_graphs(nt_screen *s, nt_topo *t, const char *topo_source, int y) {
  static ch_lines l;
  l.n = 0;
  const char *gsrc = "";
  const nt_graph_dump *d = nt_model_graphs(s->m, topo_source, &gsrc);
  char err[256] = "";
  if (d) {
    const char *base = strrchr(gsrc, '/');
    add(&l, false, "as NCCL dumped them (NCCL_GRAPH_DUMP_FILE), from %s", base ? base + 1 : gsrc);
    from_dump(&l, d);
  } else {
    const nt_topo_graphs *g = t ? computed(s, t, err, sizeof err) : NULL;
    if (g) {
      add(&l, false, "computed from this topology and what-ifs (no NCCL_GRAPH_DUMP_FILE came)");
      from_search(&l, t, g);
    } else {
      add(&l, false, "no channels: %s", t ? err : "no topology and no NCCL_GRAPH_DUMP_FILE came");
    }
  }
  int rows = s->bottom - y;
  if (rows < 1) return;
  if (s->gr_top > l.n - rows) s->gr_top = l.n - rows;
  if (s->gr_top < 0) s->gr_top = 0;
  for (int i = s->gr_top; i < l.n && y < s->bottom; i++, y++) {
    if (l.bold[i]) attron(A_BOLD);
    mvaddnstr(y, 0, l.text[i], s->cols);
    if (l.bold[i]) attroff(A_BOLD);
  }
  if (s->gr_top + rows < l.n)
    mvaddnstr(s->bottom - 1, s->cols - 8 > 0 ? s->cols - 8 : 0, " more v", 7);
}

void nt_view_graphs_free(nt_screen *s) {
  nt_topo_graphs_free(s->gr_search);
  s->gr_search = NULL;
}

/* The topology view's other face (R): the channels NCCL builds on that
 * machine, graph by graph (ring, tree, and from NCCL's own dump also
 * CollNet and NVLS), each channel's GPUs in NCCL's order and the NICs it
 * enters and leaves by. NCCL's own graphs when a publisher forwarded
 * NCCL_GRAPH_DUMP_FILE; else computed from the topology shown with the
 * what-ifs in force (nccltop's re-implementation of NCCL's search), and
 * marked as computed. Then, for each communicator of the job, the rings
 * and trees NCCL connects from those graphs over its ranks as they are
 * (hosts as nodes: model_rings.c), channel by channel, marked as from
 * NCCL's dump or computed. */
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

/* The search for the topology shown, again only when it, a what-if or
 * whether the job crosses nodes changed (s->topo_serial). */
static const nt_topo_graphs *computed(nt_screen *s, nt_topo *t, bool inter, char *err,
                                      size_t errlen) {
  if (s->gr_search && s->gr_serial == s->topo_serial && s->gr_inter == inter) return s->gr_search;
  nt_topo_graphs_free(s->gr_search);
  /* two nodes stand for any number: only whether channels leave the node
   * changes the search */
  s->gr_search = nt_topo_graphs_compute(t, inter ? 2 : 1, err, errlen);
  s->gr_serial = s->topo_serial;
  s->gr_inter = inter;
  return s->gr_search;
}

/* Lines no wider than the screen: a head, then tokens, the lines after
 * the first indented under it. */
typedef struct {
  ch_lines *l;
  char line[CH_LINE];
  int n, width, indent;
  bool bold;
} wrap;

static void wrap_start(wrap *w, ch_lines *l, int width, const char *head) {
  w->l = l;
  w->width = width < CH_LINE - 1 ? width : CH_LINE - 1;
  w->n = snprintf(w->line, sizeof w->line, "%s", head);
  w->indent = w->n;
  w->bold = false;
}

static void wrap_add(wrap *w, const char *tok) {
  int len = (int)strlen(tok);
  if (w->n > w->indent && w->n + 1 + len > w->width) {
    add(w->l, w->bold, "%s", w->line);
    w->n = snprintf(w->line, sizeof w->line, "%*s", w->indent, "");
  }
  w->n += snprintf(w->line + w->n, sizeof w->line - (size_t)w->n, " %s", tok);
  if (w->n >= (int)sizeof w->line) w->n = (int)sizeof w->line - 1;
}

static void wrap_end(wrap *w) {
  if (w->n > w->indent) add(w->l, w->bold, "%s", w->line);
}

/* A sentence, broken between words; the lines after the first indented. */
static void wrap_text(ch_lines *l, bool bold, int width, const char *text) {
  wrap w;
  char word[CH_LINE];
  const char *p = text;
  size_t n = strcspn(p, " ");
  snprintf(word, sizeof word, "%.*s", (int)n, p);
  wrap_start(&w, l, width, word);
  w.bold = bold;
  w.indent = 4;
  for (p += n; *p;) {
    p += strspn(p, " ");
    n = strcspn(p, " ");
    if (n == 0) break;
    snprintf(word, sizeof word, "%.*s", (int)n, p);
    wrap_add(&w, word);
    p += n;
  }
  add(l, bold, "%s", w.line);
}

/* "0-3,8": ascending ranks with runs shortened. */
static void ranks_text(const int *r, int n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && k < cap; i++) {
    int j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
    int w = j > i ? snprintf(buf + k, cap - k, "%s%d-%d", k ? "," : "", r[i], r[j])
                  : snprintf(buf + k, cap - k, "%s%d", k ? "," : "", r[i]);
    k += w > 0 ? (size_t)w : 0;
    i = j;
  }
}

/* One communicator: its nodes, then each channel's ring (from rank 0) and
 * each rank's tree parent and children as NCCL's INFO "Tree" lines give
 * them (parent>rank>children, -1 none). */
static void comm_rings(ch_lines *l, int width, const nt_comm_layout *c, const nt_topo_rings *r,
                       const char *from) {
  int R = nt_topo_rings_nranks(r), nch = nt_topo_rings_nchannels(r);
  char line[CH_LINE + 128]; /* wrap_text keeps CH_LINE of a line */
  snprintf(line, sizeof line, "comm %s: %d ranks on %d node%s, %d channels, %s", c->label, R,
           c->nnodes, c->nnodes == 1 ? "" : "s", nch, from);
  wrap_text(l, true, width, line);
  wrap w;
  char tok[CH_LINE], head[32];
  wrap_start(&w, l, width, "  nodes   ");
  for (int n = 0; n < c->nnodes; n++) {
    char ranks[160];
    ranks_text(c->node_ranks + n * c->nlocal, c->nlocal, ranks, sizeof ranks);
    snprintf(tok, sizeof tok, "%.40s:%s", c->hosts[n], ranks);
    wrap_add(&w, tok);
  }
  wrap_end(&w);
  for (int ch = 0; ch < nch; ch++) {
    const int *ring = nt_topo_rings_ring(r, ch);
    snprintf(head, sizeof head, "  ring %-3d", ch);
    wrap_start(&w, l, width, head);
    for (int i = 0; i < R; i++) {
      snprintf(tok, sizeof tok, "%d", ring[i]);
      wrap_add(&w, tok);
    }
    wrap_end(&w);
  }
  for (int ch = 0; ch < nch; ch++) {
    snprintf(head, sizeof head, "  tree %-3d", ch);
    wrap_start(&w, l, width, head);
    for (int rank = 0; rank < R; rank++) {
      int up, down[3];
      if (!nt_topo_rings_tree(r, ch, rank, &up, down)) continue;
      int n = snprintf(tok, sizeof tok, "%d>%d>", up, rank);
      bool any = false;
      for (int k = 0; k < 3; k++)
        if (down[k] >= 0)
          n += snprintf(tok + n, sizeof tok - (size_t)n, "%s%d", any ? "/" : "", down[k]),
              any = true;
      if (!any) snprintf(tok + n, sizeof tok - (size_t)n, "-1");
      wrap_add(&w, tok);
    }
    wrap_end(&w);
  }
}

/* The job's communicators: from NCCL's dump when it fits, else computed. */
static void comm_sections(ch_lines *l, nt_screen *s, nt_topo *t, const nt_graph_dump *d,
                          nt_comm_layout *ls, uint32_t n, uint32_t more, int width) {
  if (n == 0) return;
  add(l, true, "rings and trees over the job's ranks (tree: parent>rank>children, -1 none)");
  for (uint32_t i = 0; i < n; i++) {
    char dwhy[200] = "", why[200] = "", from[256];
    nt_topo_rings *r = d ? nt_comm_rings_from_dump(&ls[i], d, t, dwhy, sizeof dwhy) : NULL;
    snprintf(from, sizeof from, "from NCCL's dump");
    if (!r && t && ls[i].nlocal) {
      const nt_topo_graphs *g = computed(s, t, ls[i].nnodes > 1, why, sizeof why);
      if (g) r = nt_comm_rings_from_graphs(&ls[i], t, g, why, sizeof why);
      if (d)
        snprintf(from, sizeof from, "computed (NCCL's dump does not fit: %s)", dwhy);
      else
        snprintf(from, sizeof from, "computed");
    } else if (!r) {
      snprintf(why, sizeof why, "%s",
               !ls[i].nlocal ? ls[i].why
               : d           ? dwhy
                             : "no topology and no NCCL_GRAPH_DUMP_FILE came");
    }
    if (r) {
      comm_rings(l, width, &ls[i], r, from);
    } else {
      char line[CH_LINE + 128];
      snprintf(line, sizeof line, "comm %s: %d ranks, no rings: %s", ls[i].label, ls[i].nranks,
               why);
      wrap_text(l, true, width, line);
    }
    nt_topo_rings_free(r);
  }
  if (more) add(l, false, "(%u more communicators, fewer ranks: not shown)", more);
}

void nt_view_graphs(nt_screen *s, nt_topo *t, const char *topo_source, int y) {
  static ch_lines l;
  static nt_comm_layout ls[NT_LAYOUT_MAX_COMMS];
  l.n = 0;
  uint32_t more = 0, nl = nt_model_comm_layouts(s->m, ls, NT_LAYOUT_MAX_COMMS, &more);
  bool inter = nl > 0 && ls[0].nlocal > 0 && ls[0].nnodes > 1; /* the job's, when known */
  const char *gsrc = "";
  const nt_graph_dump *d = nt_model_graphs(s->m, topo_source, &gsrc);
  char err[256] = "";
  if (d) {
    const char *base = strrchr(gsrc, '/');
    add(&l, false, "as NCCL dumped them (NCCL_GRAPH_DUMP_FILE), from %s", base ? base + 1 : gsrc);
    from_dump(&l, d);
  } else {
    const nt_topo_graphs *g = t ? computed(s, t, inter, err, sizeof err) : NULL;
    if (g) {
      if (inter)
        add(&l, false, "computed from this topology and what-ifs for several nodes (no dump came)");
      else
        add(&l, false, "computed from this topology and what-ifs (no NCCL_GRAPH_DUMP_FILE came)");
      from_search(&l, t, g);
    } else {
      add(&l, false, "no channels: %s", t ? err : "no topology and no NCCL_GRAPH_DUMP_FILE came");
    }
  }
  comm_sections(&l, s, t, d, ls, nl, more, s->cols);
  for (uint32_t i = 0; i < nl; i++) nt_comm_layout_free(&ls[i]);
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

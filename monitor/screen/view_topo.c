/* The topology view: NCCL's path matrix of the machine (rows and columns
 * GPUs and NIC ports), scrollable, the pair under the cursor explained hop
 * by hop with its bottleneck, and what-if toggles for NCCL's variables that
 * recompute the matrix at once and mark the cells that changed.
 *
 * It only reads the model: which of its topologies is shown (s->topo_pick)
 * and the copy the what-ifs are computed on (s->topo, loaded from the
 * file the model keeps) are the screen's, and a what-if that cannot be
 * computed is said here, not noted in the model. */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/model.h"
#include "screen_internal.h"

#define LEFT_W    8
#define EXPLAIN_H 5

static int nendpoints(nt_topo *t) {
  return nt_topo_ngpus(t) + nt_topo_nnets(t);
}

/* What a user compares between two computations of one pair. */
static bool same_pair(const nt_topo_pair *a, const nt_topo_pair *b) {
  return a->type == b->type && a->bw == b->bw && a->p2p == b->p2p && a->gdr == b->gdr &&
         a->gdr_read == b->gdr_read && a->pxn == b->pxn;
}

static void recompute(nt_screen *s, nt_topo *t, bool mark) {
  static nt_topo_pair before[NT_TOPO_VIEW_MAX * NT_TOPO_VIEW_MAX];
  int ne = nendpoints(t);
  if (ne > NT_TOPO_VIEW_MAX) ne = NT_TOPO_VIEW_MAX;
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) nt_topo_pair_at(t, i, j, &before[i * ne + j]);
  s->topo_serial++;
  s->topo_err[0] = '\0';
  if (nt_topo_compute(t, &s->topo_env, s->topo_err, sizeof s->topo_err) != 0) return;
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      nt_topo_pair p;
      nt_topo_pair_at(t, i, j, &p);
      s->topo_changed[i * ne + j] = mark && !same_pair(&before[i * ne + j], &p);
    }
}

/* The view's copy of the topology picked; NULL when the model holds none
 * (or the copy could not be made: s->topo_err says why). Another file (a
 * new version from its source, another pick, a replay's new model) is
 * loaded again and starts from NCCL's defaults. */
static nt_topo *current(nt_screen *s, const char **source) {
  uint32_t n = nt_model_topology_count(s->m);
  if (s->topo_pick >= n) s->topo_pick = 0;
  uint64_t hash = 0;
  const char *src = "";
  if (!nt_model_topology_at(s->m, s->topo_pick, &src, &hash)) hash = 0;
  if (source) *source = src;
  if (hash != s->topo_hash) {
    nt_topo_free(s->topo);
    s->topo = NULL;
    s->topo_hash = hash;
    s->topo_err[0] = '\0';
    size_t len = 0;
    const char *xml = hash ? nt_model_topology_xml(s->m, s->topo_pick, &len) : NULL;
    if (hash && !xml) snprintf(s->topo_err, sizeof s->topo_err, "no copy of %s kept", src);
    if (xml) s->topo = nt_topo_load_buffer(xml, len, src, s->topo_err, sizeof s->topo_err);
    nt_topo_env_defaults(&s->topo_env);
    memset(s->topo_changed, 0, sizeof s->topo_changed);
    s->trow = s->tcol = 0;
    if (s->topo) recompute(s, s->topo, false);
  }
  return s->topo;
}

void nt_view_topo_free(nt_screen *s) {
  nt_topo_free(s->topo);
  s->topo = NULL;
  s->topo_hash = 0;
}

static int next_level(int level, bool allow_default) {
  /* default -> LOC -> NVL -> PIX -> PXB -> PHB -> SYS -> default */
  static const int order[] = {NT_PATH_LOC, NT_PATH_NVL, NT_PATH_PIX,
                              NT_PATH_PXB, NT_PATH_PHB, NT_PATH_SYS};
  if (level < 0) return order[0];
  for (size_t i = 0; i + 1 < sizeof order / sizeof order[0]; i++)
    if (order[i] == level) return order[i + 1];
  return allow_default ? -1 : order[0];
}

/* The channels face scrolls by lines; its what-ifs act as on the paths. */
static bool channels_action(nt_screen *s, int action) {
  switch (action) {
  case NT_ACT_UP: s->gr_top--; return true;
  case NT_ACT_DOWN: s->gr_top++; return true;
  case NT_ACT_PAGE_UP: s->gr_top -= 10; return true;
  case NT_ACT_PAGE_DOWN: s->gr_top += 10; return true;
  case NT_ACT_HOME: s->gr_top = 0; return true;
  case NT_ACT_END: s->gr_top = 1 << 20; return true; /* the drawing clamps it */
  default: return false;
  }
}

bool nt_topo_view_action(nt_screen *s, int action) {
  /* The view loads the next one when it sees its file differ. */
  if (action == NT_ACT_TOPO_NEXT) {
    uint32_t n = nt_model_topology_count(s->m);
    if (n < 2) return false;
    s->topo_pick = (s->topo_pick + 1) % n;
    return true;
  }
  if (action == NT_ACT_TOPO_CHANNELS) {
    s->topo_graphs = !s->topo_graphs;
    s->gr_top = 0;
    return true;
  }
  if (s->topo_graphs && channels_action(s, action)) return true;
  nt_topo *t = current(s, NULL);
  if (!t) return false;
  nt_topo_env *e = &s->topo_env;
  int ne = nendpoints(t);
  switch (action) {
  case NT_ACT_UP: s->trow--; break;
  case NT_ACT_DOWN: s->trow++; break;
  case NT_ACT_LEFT: s->tcol--; break;
  case NT_ACT_RIGHT: s->tcol++; break;
  case NT_ACT_PAGE_UP: s->trow -= 10; break;
  case NT_ACT_PAGE_DOWN: s->trow += 10; break;
  case NT_ACT_HOME: s->trow = s->tcol = 0; break;
  case NT_ACT_END: s->trow = s->tcol = ne - 1; break;
  case NT_ACT_WHATIF_P2P: e->p2p_disable = e->p2p_disable == 1 ? 0 : 1; break;
  case NT_ACT_WHATIF_P2P_LEVEL: e->p2p_level = next_level(e->p2p_level, true); break;
  case NT_ACT_WHATIF_GDR_LEVEL: e->gdr_level = next_level(e->gdr_level, true); break;
  case NT_ACT_WHATIF_GDR_READ: e->gdr_read = e->gdr_read == 0 ? -2 : 0; break;
  case NT_ACT_WHATIF_PXN: e->pxn_disable = !e->pxn_disable; break;
  case NT_ACT_WHATIF_NVB: e->nvb_disable = !e->nvb_disable; break;
  case NT_ACT_WHATIF_C2C: e->gdr_c2c = !e->gdr_c2c; break;
  case NT_ACT_WHATIF_RESET: nt_topo_env_defaults(e); break;
  default: return false;
  }
  if (action >= NT_ACT_WHATIF_P2P) recompute(s, t, true);
  if (s->trow < 0) s->trow = 0;
  if (s->tcol < 0) s->tcol = 0;
  if (s->trow >= ne) s->trow = ne - 1;
  if (s->tcol >= ne) s->tcol = ne - 1;
  return true;
}

static void whatif_line(nt_screen *s, char *buf, size_t cap) {
  const nt_topo_env *e = &s->topo_env;
  nt_topo_env d;
  nt_topo_env_defaults(&d);
  int n = snprintf(buf, cap, "what-if:");
  if (e->p2p_disable != d.p2p_disable) n += snprintf(buf + n, cap - n, " P2P_DISABLE=1");
  if (e->p2p_level >= 0)
    n += snprintf(buf + n, cap - n, " P2P_LEVEL=%s", nt_path_name(e->p2p_level));
  if (e->gdr_level >= 0)
    n += snprintf(buf + n, cap - n, " NET_GDR_LEVEL=%s", nt_path_name(e->gdr_level));
  if (e->gdr_read == 0) n += snprintf(buf + n, cap - n, " NET_GDR_READ=0");
  if (e->pxn_disable) n += snprintf(buf + n, cap - n, " PXN_DISABLE=1");
  if (e->nvb_disable) n += snprintf(buf + n, cap - n, " NVB_DISABLE=1");
  if (!e->gdr_c2c) n += snprintf(buf + n, cap - n, " NET_GDR_C2C=0");
  if (n == 8) snprintf(buf + n, cap - n, " none (NCCL defaults)");
}

/* The pair under the cursor, hop by hop, with the bottleneck marked. */
static void explain(nt_screen *s, nt_topo *t, int y) {
  nt_topo_pair p;
  nt_topo_endpoint a, b;
  if (!nt_topo_pair_at(t, s->trow, s->tcol, &p)) return;
  nt_topo_endpoint_at(t, s->trow, &a);
  nt_topo_endpoint_at(t, s->tcol, &b);
  char line[512];
  mvhline(y++, 0, ACS_HLINE, s->cols);
  if (s->trow == s->tcol) {
    snprintf(line, sizeof line, "%s: bus %s%s%s", a.label, a.busid, a.name[0] ? "  " : "", a.name);
    mvaddnstr(y, 1, line, s->cols - 1);
    return;
  }
  bool gi = s->trow < nt_topo_ngpus(t), gj = s->tcol < nt_topo_ngpus(t);
  int n = snprintf(line, sizeof line, "%s -> %s: %s, %.4g GB/s, %d hops", a.label, b.label,
                   nt_path_name(p.type), p.bw, p.hops);
  if (gi && gj)
    n += snprintf(line + n, sizeof line - n, ", P2P %s%s", p.p2p ? "on" : "off",
                  p.p2p_read ? " (read)" : "");
  else if (gi != gj)
    n += snprintf(line + n, sizeof line - n, ", GDR %s, GDR read %s%s", p.gdr ? "on" : "off",
                  p.gdr_read ? "on" : "off", p.gdr_pci_mode ? ", through PCIe" : "");
  if (p.via_gpu >= 0)
    snprintf(line + n, sizeof line - n, ", via GPU%d (%s)", p.via_gpu, p.pxn ? "PXN" : "NVB");
  mvaddnstr(y++, 1, line, s->cols - 1);
  n = snprintf(line, sizeof line, "route:");
  for (int k = 0; k < p.nhops_nodes && n < (int)sizeof line - 64; k++) {
    char label[48];
    nt_topo_node_label(t, p.route[k], label, sizeof label);
    n += snprintf(line + n, sizeof line - n, " %s", label);
    if (k < p.hops)
      n += snprintf(line + n, sizeof line - n, " -%.4g%s->", nt_topo_hop_bw(t, &p, k),
                    k == p.bottleneck ? "!" : "");
  }
  mvaddnstr(y++, 1, line, s->cols - 1);
  mvaddnstr(
      y, 1,
      "(! = the bottleneck link)  R channels  p P2P off  l P2P level  g GDR level  r GDR read  "
      "x PXN off  n NVB off  c GDR C2C  e reset",
      s->cols - 1);
}

void nt_view_topo(nt_screen *s, int y) {
  const char *source = "";
  nt_topo *t = current(s, &source);
  if (!t && s->topo_graphs) {
    nt_view_graphs(s, NULL, "", y); /* NCCL's dump needs no topology */
    return;
  }
  if (!t && s->topo_err[0]) {
    char line[320];
    snprintf(line, sizeof line, "topology not shown: %s", s->topo_err);
    mvaddnstr(y, 0, line, s->cols);
    return;
  }
  if (!t) {
    mvaddnstr(y, 0,
              "no topology: start nccltop with --topology FILE.xml, or run the job with "
              "NCCL_TOPO_DUMP_FILE=/path/topo.xml so the plugin sends it",
              s->cols);
    return;
  }
  char line[512], wi[256], which[48] = "";
  whatif_line(s, wi, sizeof wi);
  uint32_t n = nt_model_topology_count(s->m);
  if (n > 1) snprintf(which, sizeof which, " (%u of %u, t: next)", s->topo_pick + 1, n);
  /* The file's name, not its directory: the what-ifs must fit 80 columns. */
  const char *base = strrchr(source, '/');
  snprintf(line, sizeof line, "topology %s%s  %d GPUs, %d NICs  %s", base ? base + 1 : source,
           which, nt_topo_ngpus(t), nt_topo_nnets(t), wi);
  mvaddnstr(y++, 0, line, s->cols);
  if (s->topo_err[0]) { /* a what-if NCCL's rules cannot compute: the matrix is the last one */
    snprintf(line, sizeof line, "what-if not computed: %s", s->topo_err);
    mvaddnstr(y++, 0, line, s->cols);
  }
  if (s->topo_graphs) {
    nt_view_graphs(s, t, source, y);
    return;
  }
  int ne = nendpoints(t);
  if (ne > NT_TOPO_VIEW_MAX) ne = NT_TOPO_VIEW_MAX;
  if (ne == 0) {
    mvaddnstr(y, 0, "no GPU or NIC in this file (a skeleton: NCCL adds the devices at run time)",
              s->cols);
    return;
  }
  /* The cells as the CLI writes them (same marks); when the full cells do
   * not fit, the compact form: each cell its kind's number, the kinds
   * listed below the grid. */
  static nt_topo_kinds kinds;
  int cell_w = 4;
  char c[NT_TOPO_CELL_LEN];
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      nt_topo_cell_text(t, i, j, c, sizeof c);
      if ((int)strlen(c) + 1 > cell_w) cell_w = (int)strlen(c) + 1;
    }
  bool compact = LEFT_W + ne * cell_w > s->cols;
  int legend_lines = 0, kind_w = 0, per_line = 1;
  if (compact) {
    nt_topo_kinds_build(t, &kinds);
    cell_w = kinds.n >= 10 ? 4 : 3;
    for (int i = 0; i < kinds.n; i++)
      if ((int)strlen(kinds.text[i]) > kind_w) kind_w = (int)strlen(kinds.text[i]);
    per_line = (s->cols - 1) / (kind_w + 6);
    if (per_line < 1) per_line = 1;
    legend_lines = (kinds.n + per_line - 1) / per_line + (kinds.more ? 1 : 0);
  }
  int vis_rows = s->bottom - 1 - y - 1 - EXPLAIN_H - legend_lines,
      vis_cols = (s->cols - LEFT_W) / cell_w;
  if (vis_rows < 1) vis_rows = 1;
  if (vis_cols < 1) vis_cols = 1;
  if (s->trow < s->ttop) s->ttop = s->trow;
  if (s->trow >= s->ttop + vis_rows) s->ttop = s->trow - vis_rows + 1;
  if (s->tcol < s->tleft) s->tleft = s->tcol;
  if (s->tcol >= s->tleft + vis_cols) s->tleft = s->tcol - vis_cols + 1;
  attron(A_BOLD);
  for (int j = s->tleft; j < ne && j < s->tleft + vis_cols; j++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, j, &e);
    char lab[16];
    if (compact) /* G0 .. N7: the rows say GPU0, NET0 */
      snprintf(lab, sizeof lab, "%c%d", j < nt_topo_ngpus(t) ? 'G' : 'N',
               j < nt_topo_ngpus(t) ? j : j - nt_topo_ngpus(t));
    mvaddnstr(y, LEFT_W + (j - s->tleft) * cell_w, compact ? lab : e.label, cell_w - 1);
  }
  attroff(A_BOLD);
  y++;
  for (int i = s->ttop; i < ne && i < s->ttop + vis_rows; i++, y++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    attron(A_BOLD);
    mvaddnstr(y, 0, e.label, LEFT_W - 1);
    attroff(A_BOLD);
    for (int j = s->tleft; j < ne && j < s->tleft + vis_cols; j++) {
      nt_topo_cell_text(t, i, j, c, sizeof c);
      if (compact && i != j) {
        int k = nt_topo_kind_of(&kinds, c);
        snprintf(c, sizeof c, k ? "%d" : "?", k);
      }
      int attr = 0;
      if (s->topo_changed[i * ne + j]) attr |= A_BOLD | A_UNDERLINE;
      if (i == s->trow && j == s->tcol) attr |= A_REVERSE;
      attron(attr);
      mvaddnstr(y, LEFT_W + (j - s->tleft) * cell_w, c, cell_w - 1);
      attroff(attr);
    }
  }
  for (int k = 0; compact && k < kinds.n; k++) {
    int line = k / per_line, col = k % per_line;
    char item[NT_TOPO_CELL_LEN + 8];
    snprintf(item, sizeof item, "%2d %s", k + 1, kinds.text[k]);
    int ly = s->bottom - 1 - EXPLAIN_H - legend_lines + line;
    if (ly >= y) mvaddnstr(ly, 1 + col * (kind_w + 6), item, s->cols - 1 - col * (kind_w + 6));
  }
  if (compact && kinds.more)
    mvaddnstr(s->bottom - 2 - EXPLAIN_H, 1, " ?  more kinds: a wider terminal shows every cell",
              s->cols - 1);
  explain(s, t, s->bottom - 1 - EXPLAIN_H);
}

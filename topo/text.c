/* The path matrix as text, read like `nvidia-smi topo -m`: rows and columns
 * GPUs and NICs, each cell NCCL's path type and bottleneck GB/s with the
 * decisions as marks, then the legend, the devices and the notes. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* "NVL 370.8*r": type, GB/s, marks (see the legend). The monitor's
 * topology view shows the same text. */
void nt_topo_cell_text(const nt_topo *t, int i, int j, char *buf, size_t cap) {
  nt_topo_pair p;
  if (i == j || !nt_topo_pair_at(t, i, j, &p)) {
    snprintf(buf, cap, "X");
    return;
  }
  if (p.type == NT_PATH_DIS) {
    snprintf(buf, cap, "DIS");
    return;
  }
  bool gi = i < t->ngpus, gj = j < t->ngpus;
  char marks[8] = "";
  int m = 0;
  if (gi && gj) {
    if (p.p2p) marks[m++] = '*';
    if (p.p2p_read) marks[m++] = 'r';
    if (p.net_faster) marks[m++] = 'n';
    if (p.via_gpu >= 0) marks[m++] = 'v';
  } else if (gi != gj) {
    if (p.gdr) marks[m++] = '*';
    if (p.gdr_read) marks[m++] = 'r';
    if (p.gdr_pci_mode && (p.gdr || p.gdr_read)) marks[m++] = 'p';
    if (p.pxn && gi) marks[m++] = 'x';
  }
  marks[m] = '\0';
  snprintf(buf, cap, "%s %.4g%s", nt_path_name(p.type), p.bw, marks);
}

static void print_types(FILE *out) {
  fputs("  X   = the device itself\n"
        "  NVL = NVLink (direct, or through the NVSwitch)\n"
        "  NVB = NVLink through one other GPU\n"
        "  C2C = the GPU's chip-to-chip link to its CPU\n"
        "  PIX = PCIe through at most one switch\n"
        "  PXB = PCIe through several switches, no CPU\n"
        "  P2C = C2C to the CPU, then PCIe (Grace)\n"
        "  PXN = NVLink to another GPU, then that GPU's PCIe path to the NIC\n"
        "  PHB = PCIe through a CPU (nvidia-smi says PHB or NODE)\n"
        "  SYS = across CPUs (the inter-socket link)\n"
        "  DIS = disconnected\n",
        out);
}

static void print_marks(FILE *out) {
  fputs("  GPU to GPU marks: * P2P on, r P2P read, n the P2P transport declines (NET is\n"
        "    faster), v through another GPU (NVB)\n"
        "  GPU and NIC marks: * GDR on (receive side), r GDR read (send side), p GDR maps\n"
        "    the GPU through PCIe (C2C machine), x the GPU sends through PXN\n"
        "  Without P2P or GDR the cell shows NCCL's detour through a CPU.\n",
        out);
}

static void print_legend(FILE *out) {
  fputs("\nLegend: each cell is NCCL's path from the row to the column: type, bottleneck GB/s,"
        " marks.\n",
        out);
  print_types(out);
  print_marks(out);
}

static void print_devices(FILE *out, const nt_topo *t) {
  fputs("\nDevices:\n", out);
  for (int i = 0; i < t->ngpus + t->nnets; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    char numa[16] = "?";
    if (e.numa > -2) snprintf(numa, sizeof numa, "%d", e.numa);
    if (i < t->ngpus) {
      fprintf(out, "  %-6s bus %-14s dev %d  rank %d  sm %d  gdr %d  NUMA %s", e.label, e.busid,
              e.dev, e.rank, e.sm, e.gdr, numa);
      if (e.mlopart >= 0) fprintf(out, "  mlopart %d", e.mlopart);
      fputc('\n', out);
    } else {
      fprintf(out, "  %-6s %-12s NIC %-14s dev %d  port %d  %.4g GB/s  gdr %d  NUMA %s", e.label,
              e.name[0] ? e.name : "-", e.busid[0] ? e.busid : "(CPU)", e.dev, e.port, e.speed_gbs,
              e.gdr, numa);
      if (e.local_gpu >= 0) fprintf(out, "  local GPU%d", e.local_gpu);
      fputc('\n', out);
    }
  }
}

static void print_header(FILE *out, const nt_topo *t) {
  const nt_topo_env *e = &t->env;
  fprintf(out, "%s: NCCL %s rules, %d GPU%s, %d NIC%s\n", t->name, nt_topo_version_name(e->version),
          t->ngpus, t->ngpus == 1 ? "" : "s", t->nnets, t->nnets == 1 ? "" : "s");
  fprintf(out, "P2P level %s, GDR level %s, GDR read %s, PXN %s, NVB %s\n",
          nt_path_name(topo_p2p_level(t)), nt_path_name(topo_gdr_level(t)),
          e->gdr_read == 0  ? "off"
          : e->gdr_read > 0 ? "on"
                            : "default",
          e->pxn_disable == 1 ? "off" : "on", e->nvb_disable ? "off" : "on");
  if (t->ngpus == 0)
    fputs("No GPU in this file (a skeleton: NCCL adds the GPUs from the live machine).\n", out);
}

void nt_topo_kinds_build(const nt_topo *t, nt_topo_kinds *k) {
  int ne = t->ngpus + t->nnets;
  k->n = 0;
  k->more = false;
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      char c[NT_TOPO_CELL_LEN];
      if (i == j) continue;
      nt_topo_cell_text(t, i, j, c, sizeof c);
      if (nt_topo_kind_of(k, c) > 0) continue;
      if (k->n == NT_TOPO_MAX_KINDS) {
        k->more = true;
        continue;
      }
      memcpy(k->text[k->n++], c, sizeof c);
    }
}

int nt_topo_kind_of(const nt_topo_kinds *k, const char *cell) {
  for (int i = 0; i < k->n; i++)
    if (!strcmp(k->text[i], cell)) return i + 1;
  return 0;
}

/* Cell `i, j` of the compact form: its kind's number, X, or ? past the
 * numbered kinds. */
static void compact_cell(const nt_topo *t, const nt_topo_kinds *k, int i, int j, char *buf,
                         size_t cap) {
  char c[NT_TOPO_CELL_LEN];
  if (i == j) {
    snprintf(buf, cap, "X");
    return;
  }
  nt_topo_cell_text(t, i, j, c, sizeof c);
  int n = nt_topo_kind_of(k, c);
  if (n)
    snprintf(buf, cap, "%d", n);
  else
    snprintf(buf, cap, "?");
}

void nt_topo_print_compact(FILE *out, const nt_topo *t) {
  if (!t->computed) {
    fprintf(out, "%s: nothing computed\n", t->name);
    return;
  }
  print_header(out, t);
  int ne = t->ngpus + t->nnets;
  static nt_topo_kinds k;
  nt_topo_kinds_build(t, &k);
  int w = k.n >= 10 ? 3 : 2; /* room for the widest number and a blank */
  if (ne > 0) {
    fprintf(out, "\n%-6s", "");
    /* Column labels without their kind: G0 .. N7 (the rows say GPU0, NET0). */
    for (int j = 0; j < ne; j++) {
      char lab[16];
      snprintf(lab, sizeof lab, "%c%d", j < t->ngpus ? 'G' : 'N', j < t->ngpus ? j : j - t->ngpus);
      fprintf(out, " %*s", w, lab);
    }
    fprintf(out, " NUMA\n");
  }
  for (int i = 0; i < ne; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    fprintf(out, "%-6s", e.label);
    for (int j = 0; j < ne; j++) {
      char c[16];
      compact_cell(t, &k, i, j, c, sizeof c);
      fprintf(out, " %*s", w, c);
    }
    if (e.numa > -2)
      fprintf(out, " %4d\n", e.numa);
    else
      fprintf(out, " %4s\n", "?");
  }
  if (ne > 0) {
    fputs("\nEach cell is the number of NCCL's path from the row to the column, listed here\n"
          "(type, bottleneck GB/s, marks); X is the device itself:\n",
          out);
    /* As many kinds per line as fit 80 columns. */
    int kw = 0;
    for (int i = 0; i < k.n; i++)
      if ((int)strlen(k.text[i]) > kw) kw = (int)strlen(k.text[i]);
    int per_line = 78 / (w + kw + 6);
    if (per_line < 1) per_line = 1;
    for (int i = 0; i < k.n; i++) {
      bool last = i % per_line == per_line - 1 || i == k.n - 1;
      fprintf(out, "  %*d  %-*s", w, i + 1, last ? 0 : kw + 2, k.text[i]);
      if (last) fputc('\n', out);
    }
    if (k.more)
      fprintf(out, "  ?  more kinds than %d: see the full form (--full)\n", NT_TOPO_MAX_KINDS);
    fputc('\n', out);
    print_types(out);
    print_marks(out);
  }
  print_devices(out, t);
  int nw = nt_topo_nwarnings(t);
  if (nw > 0) fputs("\nNotes:\n", out);
  for (int i = 0; i < nw; i++) fprintf(out, "  %s\n", nt_topo_warning(t, i));
}

int nt_topo_text_width(const nt_topo *t) {
  int ne = t->ngpus + t->nnets, w = 4;
  char c[NT_TOPO_CELL_LEN];
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      nt_topo_cell_text(t, i, j, c, sizeof c);
      int n = (int)strlen(c);
      if (n > w) w = n;
    }
  return 7 + ne * (w + 1) + 5;
}

void nt_topo_print_text(FILE *out, const nt_topo *t) {
  if (!t->computed) {
    fprintf(out, "%s: nothing computed\n", t->name);
    return;
  }
  print_header(out, t);
  int ne = t->ngpus + t->nnets, w = 4;
  char c[48];
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      nt_topo_cell_text(t, i, j, c, sizeof c);
      int n = (int)strlen(c);
      if (n > w) w = n;
    }
  if (ne > 0) {
    fprintf(out, "\n%-7s", "");
    for (int j = 0; j < ne; j++) {
      nt_topo_endpoint e;
      nt_topo_endpoint_at(t, j, &e);
      fprintf(out, " %-*s", w, e.label);
    }
    fprintf(out, " NUMA\n");
  }
  for (int i = 0; i < ne; i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    fprintf(out, "%-7s", e.label);
    for (int j = 0; j < ne; j++) {
      nt_topo_cell_text(t, i, j, c, sizeof c);
      fprintf(out, " %-*s", w, c);
    }
    if (e.numa > -2)
      fprintf(out, " %d\n", e.numa);
    else
      fprintf(out, " ?\n");
  }
  if (ne > 0) print_legend(out);
  print_devices(out, t);
  int nw = nt_topo_nwarnings(t);
  if (nw > 0) fputs("\nNotes:\n", out);
  for (int i = 0; i < nw; i++) fprintf(out, "  %s\n", nt_topo_warning(t, i));
}

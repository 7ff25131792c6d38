/* The model and the picks for people (`topo --graphs`): one line per
 * collective and algorithm NCCL considers, latency/bandwidth per protocol,
 * then NCCL's pick and predicted time per size; fits 80 columns. */
#include <stdio.h>

#include "tuning.h"

/* A time in a few characters: 0.42, 12.3, 10737. */
static void fmt_us(char *buf, size_t cap, float us) {
  snprintf(buf, cap, us < 10 ? "%.2f" : us < 100 ? "%.1f" : "%.0f", (double)us);
}

static bool considered(const nt_tune_model *m, int c, int a) {
  if (!m->candidate[c][a]) return false;
  for (int p = 0; p < NT_TUNE_NPROTOS; p++)
    if (m->bandwidth[c][a][p] > 0) return true;
  return false;
}

void nt_tune_print_text(FILE *out, const nt_tune_model *m) {
  fprintf(out,
          "NCCL's model (tuning.cc): %d rank%s, %d node%s, sm %d, %d channel%s (%d connected)\n"
          "latency us/bandwidth GB/s:\n",
          m->nranks, m->nranks == 1 ? "" : "s", m->nnodes, m->nnodes == 1 ? "" : "s", m->min_sm,
          m->graph_channels, m->graph_channels == 1 ? "" : "s", m->comm_channels);
  fprintf(out, "  %-13s %-13s", "collective", "algorithm");
  for (int p = 0; p < NT_TUNE_NPROTOS; p++)
    fprintf(out, p + 1 < NT_TUNE_NPROTOS ? " %-15s" : " %s", nt_tune_proto_name(p));
  fputc('\n', out);
  for (int i = 0; i < NT_TUNE_SHOWN; i++) {
    int c = nt_tune_shown_colls[i];
    for (int a = 0; a < NT_TUNE_NALGOS; a++) {
      if (!considered(m, c, a)) continue;
      fprintf(out, "  %-13s %-13s", nt_tune_coll_name(c), nt_tune_algo_name(a));
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        char cell[32];
        if (m->bandwidth[c][a][p] > 0)
          snprintf(cell, sizeof cell, "%.3g/%.4g", (double)m->latency[c][a][p],
                   (double)m->bandwidth[c][a][p]);
        else
          snprintf(cell, sizeof cell, "-");
        fprintf(out, p + 1 < NT_TUNE_NPROTOS ? " %-15s" : " %s", cell);
      }
      fputc('\n', out);
    }
  }
  fprintf(out, "NCCL's pick by size (algorithm/protocol predicted-us):\n  %-6s", "bytes");
  for (int i = 0; i < NT_TUNE_SHOWN; i++)
    fprintf(out, i + 1 < NT_TUNE_SHOWN ? " %-17s" : " %s",
            nt_tune_coll_name(nt_tune_shown_colls[i]));
  fputc('\n', out);
  for (int s = 0; s < NT_TUNE_NSIZES; s++) {
    size_t bytes = nt_tune_size(s);
    char size[16];
    if (bytes >= (size_t)1 << 30)
      snprintf(size, sizeof size, "%zuG", bytes >> 30);
    else if (bytes >= (size_t)1 << 20)
      snprintf(size, sizeof size, "%zuM", bytes >> 20);
    else
      snprintf(size, sizeof size, "%zuK", bytes >> 10);
    fprintf(out, "  %-6s", size);
    for (int i = 0; i < NT_TUNE_SHOWN; i++) {
      nt_tune_pick pick;
      char cell[48], us[16];
      if (nt_tune_choose(m, nt_tune_shown_colls[i], bytes, &pick) == 0) {
        fmt_us(us, sizeof us, pick.time_us);
        snprintf(cell, sizeof cell, "%s/%s %s", nt_tune_algo_name(pick.algo),
                 nt_tune_proto_name(pick.proto), us);
      } else {
        snprintf(cell, sizeof cell, "none (fails)");
      }
      fprintf(out, i + 1 < NT_TUNE_SHOWN ? " %-17s" : " %s", cell);
    }
    fputc('\n', out);
  }
}

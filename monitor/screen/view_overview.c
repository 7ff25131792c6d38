/* The overview: alerts first (where a stall's waits end, stalled channels
 * and the peer they wait on, operations that do not complete, stragglers,
 * silent publishers), each wrapped to be read whole, then one line per
 * communicator and per process. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../core/frame.h"
#include "screen_internal.h"

/* An alert wraps under itself, indented past its kind, so that its cause
 * and who waits on it can be read at any width (the first line names the
 * rank; at most ALERT_LINES lines, the last one cut by the screen). Cut at
 * a blank where there is one in the line's second half, never inside a
 * UTF-8 sequence. */
#define ALERT_LINES  4
#define ALERT_INDENT 12
static bool alert_lines(nt_screen *s, int *y, int *n, int attr, const char *text) {
  const char *p = text;
  char buf[600];
  for (int k = 0; *p && k < ALERT_LINES; k++) {
    int room = (s->cols > 2 * ALERT_INDENT ? s->cols : 2 * ALERT_INDENT) - (k ? ALERT_INDENT : 0);
    size_t len = strlen(p), cut = len;
    if (len > (size_t)room && k < ALERT_LINES - 1) {
      cut = (size_t)room;
      size_t b = cut;
      while (b > cut / 2 && p[b] != ' ') b--;
      if (p[b] == ' ') cut = b;
      while (cut > 1 && ((unsigned char)p[cut] & 0xC0) == 0x80) cut--;
    }
    snprintf(buf, sizeof buf, "%*s%.*s", k ? ALERT_INDENT : 0, "", (int)cut, p);
    if (!nt_scroll_line(s, y, n, attr, buf)) return false;
    p += cut;
    while (*p == ' ') p++;
  }
  return true;
}

/* One alert: "! stall  ...", indented under its root when unfolded. */
static bool alert_line(nt_screen *s, int *y, int *n, const nt_frame_alert *a, const char *indent) {
  char line[512];
  bool bad = a->kind <= NT_ALERT_HUNG_OP;
  snprintf(line, sizeof line, "%s%s %-9s %s", indent, bad ? "!" : "-", nt_alert_kind_name(a->kind),
           a->text);
  return alert_lines(s, y, n, bad ? nt_stall_attr(s) : nt_warn_attr(s), line);
}

/* The bus bandwidth history of a communicator as `cells` blocks, newest on
 * the right, each scaled to the largest shown (printed after them, in
 * SPARK_RATE cells): "▃▅▇█▇▂  12.3GB/s". A gap (nothing completed: unknown,
 * not slow) is a blank; so is time before its first sample. ASCII
 * terminals get ".:-=+*#@". */
#define SPARK_RATE  8
#define SPARK_CELLS 18
static const char *sparkline(const nt_frame_comm *c, int cells, bool ascii, char *out, size_t cap) {
  static const char *const block[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ascii_level[8] = {'.', ':', '-', '=', '+', '*', '#', '@'};
  uint32_t n = c->nhistory < (uint32_t)cells ? c->nhistory : (uint32_t)cells;
  const float *v = c->busbw_history + (c->nhistory - n);
  float max = NT_FRAME_GAP;
  for (uint32_t i = 0; i < n; i++)
    if (v[i] > max) max = v[i];
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < cells; i++) {
    int k = i - (cells - (int)n); /* the sample in this cell; < 0 before the first */
    const char *g = " ";
    char a[2] = {0};
    if (k >= 0 && v[k] >= 0) {
      int level = max > 0 ? (int)(v[k] / max * 8 + 0.999) - 1 : 0;
      level = level < 0 ? 0 : level > 7 ? 7 : level;
      a[0] = ascii_level[level];
      g = ascii ? a : block[level];
    }
    int w = snprintf(out + used, cap - used, "%s", g);
    if (w < 0 || (size_t)w >= cap - used) return out;
    used += (size_t)w;
  }
  char rate[NT_UNIT_LEN];
  if (max >= 0)
    nt_fmt_rate((double)max * 1e9, rate, sizeof rate);
  else
    snprintf(rate, sizeof rate, "-");
  snprintf(out + used, cap - used, " %*s", SPARK_RATE, rate);
  return out;
}

void nt_view_overview(nt_screen *s, int y) {
  char line[512];
  int n = 0;
  const nt_frame *f = s->f;
  /* What the viewer itself missed (Ctrl-Z, a stalled relay) comes first:
   * it says why the job is not blamed for it. */
  for (uint32_t i = 0; i < f->nwatch; i++) {
    snprintf(line, sizeof line, "~ %-9s %s", "watcher", f->watch[i].text);
    if (!alert_lines(s, &y, &n, nt_warn_attr(s), line)) break;
  }
  if (f->nalerts == 0) {
    nt_scroll_line(s, &y, &n, A_BOLD,
                   "No alerts: nothing stalled, no operation overdue, no straggler.");
  } else {
    if (f->nfolded)
      snprintf(line, sizeof line, "ALERTS (%u, and %u under their roots: %s), most important first",
               f->nalerts - f->nfolded, f->nfolded, s->unfold ? "- folds them" : "+ shows them");
    else
      snprintf(line, sizeof line, "ALERTS (%u), most important first", f->nalerts);
    nt_scroll_line(s, &y, &n, A_BOLD, line);
    for (uint32_t i = 0; i < f->nalerts; i++) {
      const nt_frame_alert *a = &f->alerts[i];
      if (a->under >= 0) continue; /* under its root, which came before */
      if (!alert_line(s, &y, &n, a, "")) {
        n += (int)(f->nalerts - i - 1);
        break;
      }
      if (!a->folded) continue;
      if (!s->unfold) {
        snprintf(line, sizeof line,
                 "    + %u more under it: the stalls and stuck operations of the ranks waiting on "
                 "it",
                 a->folded);
        if (!alert_lines(s, &y, &n, 0, line)) break;
        continue;
      }
      for (uint32_t k = i + 1; k < f->nalerts; k++)
        if (f->alerts[k].under == (int32_t)i && !alert_line(s, &y, &n, &f->alerts[k], "    "))
          break;
    }
  }
  nt_scroll_line(s, &y, &n, 0, "");
  /* Columns drop by priority on narrow screens: the communicator, its
   * ranks and stalled channels stay; the bandwidth history goes after the
   * hash and the node count, before the phase (it takes 120 columns). */
  static const nt_list_col ccols[] = {
      {"COMMUNICATOR", 24, 0, false},
      {"HASH", 16, 4, false},
      {"RANKS", 9, 0, true},
      {"NODES", 6, 3, true},
      {"LAUNCHED (min-max)", 21, 2, true},
      {"DONE/s", 9, 1, true},
      {"STALLED", 8, 0, true},
      {"PHASE NOW", 16, 2, false},
      {"BUSBW HISTORY, MAX", SPARK_CELLS + 1 + SPARK_RATE, 2, false},
  };
  enum { NC = sizeof ccols / sizeof ccols[0] };
  bool keep[NC];
  nt_list_fit(ccols, NC, 1, s->cols, keep);
  nt_scroll_line(s, &y, &n, A_BOLD, nt_list_line(line, sizeof line, ccols, NC, keep, NULL));
  for (uint32_t i = 0; i < f->ncomms; i++) {
    const nt_frame_comm *c = &f->comms[i];
    if (!nt_screen_comm_kept(s, c->hash)) continue; /* the filter's ranks' communicators */
    char hash[24], ranks[24], nodes[16], launched[48], done[24], stalled[16], spark[128];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)c->hash);
    nt_fmt_rank((int32_t)c->ranks, c->nranks, ranks, sizeof ranks); /* seen/of */
    snprintf(nodes, sizeof nodes, c->nnodes > 0 ? "%d" : "?", c->nnodes);
    snprintf(launched, sizeof launched, "%llu-%llu", (unsigned long long)c->launched_min,
             (unsigned long long)c->launched_max);
    snprintf(done, sizeof done, "%.1f", c->done_per_s);
    snprintf(stalled, sizeof stalled, "%u", c->stalled);
    const char *cells[NC] = {c->name[0] ? c->name : "-",
                             hash,
                             ranks,
                             nodes,
                             launched,
                             done,
                             stalled,
                             c->phase[0] ? c->phase : "-",
                             sparkline(c, SPARK_CELLS, s->o->ascii, spark, sizeof spark)};
    if (!nt_scroll_line(s, &y, &n, c->stalled ? nt_stall_attr(s) : 0,
                        nt_list_line(line, sizeof line, ccols, NC, keep, cells))) {
      n += (int)(f->ncomms - i - 1);
      break;
    }
  }
  nt_scroll_line(s, &y, &n, 0, "");
  static const nt_list_col pcols[] = {
      {"PROCESS", 28, 0, false}, {"NCCL", 8, 2, false},   {"ABI", 4, 4, true},
      {"COMMS", 5, 3, true},     {"EVENTS", 12, 3, true}, {"DROPPED", 9, 1, true},
      {"UNSENT", 9, 3, true},    {"STATE", 14, 0, false},
  };
  enum { NP = sizeof pcols / sizeof pcols[0] };
  bool pkeep[NP];
  nt_list_fit(pcols, NP, 1, s->cols, pkeep);
  nt_scroll_line(s, &y, &n, A_BOLD, nt_list_line(line, sizeof line, pcols, NP, pkeep, NULL));
  for (uint32_t i = 0; i < f->nprocs; i++) {
    const nt_frame_proc *p = &f->procs[i];
    if (!nt_screen_proc_kept(s, i)) continue; /* the filter's ranks' processes */
    const nt_process_counters *c = &p->counters;
    char who[96], abi[16], comms_n[16], events[24], dropped[24], unsent[24];
    snprintf(who, sizeof who, "%s:%u", p->host, p->pid);
    snprintf(abi, sizeof abi, "%u", c->abi_version);
    snprintf(comms_n, sizeof comms_n, "%u", p->ncomms);
    snprintf(events, sizeof events, "%llu", (unsigned long long)c->events);
    snprintf(dropped, sizeof dropped, "%llu",
             (unsigned long long)(c->dropped_events + c->dropped_ops));
    snprintf(unsent, sizeof unsent, "%llu", (unsigned long long)c->unsent_messages);
    const char *cells[NP] = {who,    p->nccl_version[0] ? p->nccl_version : "?",
                             abi,    comms_n,
                             events, dropped,
                             unsent, p->ended ? "ended" : p->stale ? "STALE (silent)" : "live"};
    if (!nt_scroll_line(s, &y, &n, p->stale && !p->ended ? nt_warn_attr(s) : 0,
                        nt_list_line(line, sizeof line, pcols, NP, pkeep, cells))) {
      n += (int)(f->nprocs - i - 1);
      break;
    }
  }
  /* Keep the scroll within what there is. */
  nt_scroll_clamp(s, n);
}

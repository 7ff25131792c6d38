/* The environment view: every NCCL* variable of the job's processes, the
 * ones that differ between ranks first (with who has which value), and what
 * changed since the previous run. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../core/frame.h"
#include "screen_internal.h"

static const nt_run_env *entry_in(const nt_run_summary *r, const char *name) {
  for (uint32_t i = 0; i < r->nenv; i++)
    if (!strcmp(r->env[i].name, name)) return &r->env[i];
  return NULL;
}

/* How a run had a variable: its value, "(unset)", or that it varied. */
static const char *shown(const nt_run_env *e, char *buf, size_t cap) {
  if (!e) return "(unset)";
  if (e->differs)
    snprintf(buf, cap, "varies by rank (mostly %s)", e->value[0] ? e->value : "unset");
  else
    snprintf(buf, cap, "%s", e->value[0] ? e->value : "(unset)");
  return buf;
}

static void run_diff(nt_screen *s, int *y, int *n) {
  if (!s->f->have_run_prev || !s->f->have_run_cur) return;
  const nt_run_summary *cur = s->f->run_cur, *prev = s->f->run_prev;
  char line[700];
  snprintf(line, sizeof line, "CHANGED SINCE THE PREVIOUS RUN (run %u: %u processes -> run %u: %u)",
           prev->id, prev->processes, cur->id, cur->processes);
  nt_scroll_line(s, y, n, A_BOLD, line);
  int changes = 0;
  for (int pass = 0; pass < 2; pass++) {
    const nt_run_summary *a = pass ? prev : cur, *b = pass ? cur : prev;
    for (uint32_t i = 0; i < a->nenv; i++) {
      const nt_run_env *other = entry_in(b, a->env[i].name);
      if (pass && other) continue; /* seen from the current run's side */
      if (other && !strcmp(other->value, a->env[i].value) && other->differs == a->env[i].differs)
        continue;
      const nt_run_env *was = pass ? &a->env[i] : other, *now = pass ? other : &a->env[i];
      char wb[320], nb[320];
      snprintf(line, sizeof line, "  %-32s %s -> %s", a->env[i].name, shown(was, wb, sizeof wb),
               shown(now, nb, sizeof nb));
      nt_scroll_line(s, y, n, nt_warn_attr(s), line);
      changes++;
    }
  }
  if (!changes) nt_scroll_line(s, y, n, 0, "  no NCCL* variable changed");
  nt_scroll_line(s, y, n, 0, "");
}

void nt_view_env(nt_screen *s, int y) {
  const nt_frame *f = s->f;
  char line[1024];
  int n = 0;
  run_diff(s, &y, &n);
  uint32_t nv = f->nenv, differ = f->env_differ;
  snprintf(line, sizeof line, "NCCL* VARIABLES OF THIS RUN: %u, %u differ between processes", nv,
           differ);
  nt_scroll_line(s, &y, &n, A_BOLD, line);
  snprintf(line, sizeof line, "%-32s %-30s %6s  %s", "VARIABLE", "VALUE (most common)", "SET ON",
           "DIFFERENT ON");
  nt_scroll_line(s, &y, &n, A_BOLD, line);
  if (!nv) nt_scroll_line(s, &y, &n, 0, "  none reported yet");
  for (uint32_t i = 0; i < nv; i++) {
    const nt_frame_env *r = &f->env[i];
    char on[24];
    snprintf(on, sizeof on, "%u", r->have);
    snprintf(line, sizeof line, "%-32.32s %-30.30s %6s  %s", r->name,
             r->value[0] ? r->value : "(unset)", on, r->outliers);
    if (!nt_scroll_line(s, &y, &n, r->differs ? nt_warn_attr(s) : 0, line)) {
      n += (int)(nv - i - 1);
      break;
    }
  }
  nt_scroll_clamp(s, n);
}

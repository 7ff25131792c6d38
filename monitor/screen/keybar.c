/* The key bar on the last line, htop style ("F1Help F3Search ... F10Quit"):
 * the keys are read from the key table, so the bar names the keys nccltop
 * really has; the labels are short names of their actions. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../core/frame.h"
#include "screen_internal.h"

static const struct {
  int action;
  const char *label;
} bar[] = {
    {NT_ACT_HELP, "Help"},      {NT_ACT_SEARCH, "Search"},  {NT_ACT_FILTER, "Filter"},
    {NT_ACT_SORT_MENU, "Sort"}, {NT_ACT_NEXT_VIEW, "View"}, {NT_ACT_ENTER, "Detail"},
    {NT_ACT_PAUSE, "Pause"},    {NT_ACT_QUIT, "Quit"},
};

/* The key of an action as the table writes it: its F-key if it has one,
 * else the first key named. */
static bool bar_key(int action, char *out, size_t cap) {
  for (const nt_key_binding *b = nt_keys; b->key; b++) {
    if (b->action != action || !b->keys_text) continue;
    char text[64];
    snprintf(text, sizeof text, "%s", b->keys_text);
    char *save = NULL, *first = strtok_r(text, " ", &save), *pick = first;
    for (char *t = first; t; t = strtok_r(NULL, " ", &save))
      if (t[0] == 'F' && t[1] >= '0' && t[1] <= '9') {
        pick = t;
        break;
      }
    if (!pick) return false;
    snprintf(out, cap, "%s", pick);
    return true;
  }
  return false;
}

/* Whether the bar offers an action in this view: Enter opens details only
 * where there are some (the channel under the cursor), so only there does
 * the bar say so (htop's bar, too, names only what works where you are). */
static bool offered(int action, int view) {
  return action != NT_ACT_ENTER || view == NT_VIEW_CHANNELS;
}

/* The items that fit in cols: keys[i] and labels[i]; returns their count. */
static int fit(int cols, int view, char keys[][16], const char **labels) {
  int used = 0, n = 0, nbar = (int)(sizeof bar / sizeof bar[0]);
  for (int i = 0; i < nbar; i++) {
    if (!offered(bar[i].action, view) || !bar_key(bar[i].action, keys[n], sizeof keys[n])) continue;
    int w = (int)(strlen(keys[n]) + strlen(bar[i].label)) + 1;
    /* Quit always fits: the items before it give way. */
    if (i + 1 < nbar && used + w + 8 > cols) continue;
    if (used + w > cols) break;
    labels[n++] = bar[i].label;
    used += w;
  }
  return n;
}

int nt_keybar_action_at(int cols, int view, int x) {
  char keys[16][16];
  const char *labels[16];
  int n = fit(cols, view, keys, labels), at = 0;
  for (int i = 0; i < n; i++) {
    int w = (int)(strlen(keys[i]) + strlen(labels[i]));
    if (x >= at && x < at + w)
      for (size_t k = 0; k < sizeof bar / sizeof bar[0]; k++)
        if (bar[k].label == labels[i]) return bar[k].action;
    at += w + 1;
  }
  return NT_ACT_NONE;
}

int nt_keybar_text(char *out, size_t cap, int cols, int view) {
  char keys[16][16];
  const char *labels[16];
  int n = fit(cols, view, keys, labels);
  size_t used = 0;
  if (cap) out[0] = '\0';
  for (int i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(out + used, cap - used, "%s%s ", keys[i], labels[i]);
  return n;
}

void nt_draw_keybar(nt_screen *s) {
  const nt_rect *r = &s->lay.keys;
  if (r->h <= 0) return;
  char keys[16][16];
  const char *labels[16];
  int n = fit(r->w, s->view, keys, labels);
  int label = s->o->color && has_colors() ? COLOR_PAIR(NT_C_HEAD) : A_REVERSE;
  move(r->y, r->x);
  clrtoeol();
  /* Keys plain, labels highlighted, as htop draws them. */
  move(r->y, r->x);
  for (int i = 0; i < n; i++) {
    addstr(keys[i]);
    attron(label);
    addstr(labels[i]);
    attroff(label);
    addch(' ');
  }
}

void nt_draw_alerts_band(nt_screen *s) {
  const nt_rect *r = &s->lay.alerts;
  uint32_t n = s->f->nalerts - s->f->nfolded; /* lines of their own: the roots stand for the rest */
  if (r->h <= 0 || !n) return;
  const nt_frame_alert *a = &s->f->alerts[0];
  char line[512];
  snprintf(line, sizeof line, "%s %u alert%s, first: %s %s  (1: overview)",
           a->kind <= NT_ALERT_HUNG_OP ? "!" : "-", n, n == 1 ? "" : "s",
           nt_alert_kind_name(a->kind), a->text);
  int attr = a->kind <= NT_ALERT_HUNG_OP ? nt_stall_attr(s) : nt_warn_attr(s);
  attron(attr);
  mvaddnstr(r->y, r->x, line, r->w);
  attroff(attr);
}

/* The interactive loop: poll the source (never longer than 50 ms), handle
 * every pending key, redraw on a timer and after input. Keys map to actions
 * through one table (keys.c); views only draw. */
#include <curses.h>
#include <locale.h>
#include <signal.h>
#include <string.h>

#include "screen.h"

static void colors(const nt_options *o) {
  if (!o->color || !has_colors()) return;
  start_color();
  use_default_colors();
  init_pair(NT_C_IDLE, COLOR_WHITE, -1);
  init_pair(NT_C_ACTIVE, COLOR_GREEN, -1);
  init_pair(NT_C_SLEEP, COLOR_BLUE, -1);
  init_pair(NT_C_WAKEUP, COLOR_YELLOW, -1);
  init_pair(NT_C_APPEND, COLOR_MAGENTA, -1);
  init_pair(NT_C_STALL, COLOR_WHITE, COLOR_RED);
  init_pair(NT_C_HEAD, COLOR_BLACK, COLOR_CYAN);
}

static void clamp_cursor(nt_screen *s) {
  int nrows = (int)s->nranks, ncols = nt_channel_count(s);
  if (s->row >= nrows) s->row = nrows - 1;
  if (s->row < 0) s->row = 0;
  if (s->col >= ncols) s->col = ncols - 1;
  if (s->col < 0) s->col = 0;
}

/* Applies one action; returns false to quit. */
static bool act(nt_screen *s, int action) {
  int page = s->rows > 6 ? s->rows - 6 : 1;
  switch (action) {
  case NT_ACT_QUIT: return false;
  case NT_ACT_HELP:
    if (s->view != NT_VIEW_HELP) s->prev_view = s->view;
    s->view = NT_VIEW_HELP;
    break;
  case NT_ACT_NEXT_VIEW: s->view = (s->view + 1) % NT_VIEW_COUNT; break;
  case NT_ACT_PREV_VIEW: s->view = (s->view + NT_VIEW_COUNT - 1) % NT_VIEW_COUNT; break;
  case NT_ACT_VIEW_1: s->view = NT_VIEW_PROXY; break;
  case NT_ACT_VIEW_2: s->view = NT_VIEW_CHANNELS; break;
  case NT_ACT_VIEW_3: s->view = NT_VIEW_HELP; break;
  case NT_ACT_UP: s->row--; break;
  case NT_ACT_DOWN: s->row++; break;
  case NT_ACT_LEFT: s->col--; break;
  case NT_ACT_RIGHT: s->col++; break;
  case NT_ACT_PAGE_UP: s->row -= page; break;
  case NT_ACT_PAGE_DOWN: s->row += page; break;
  case NT_ACT_HOME: s->row = 0; break;
  case NT_ACT_END: s->row = (int)s->nranks - 1; break;
  case NT_ACT_ENTER:
    if (s->view == NT_VIEW_CHANNELS) s->detail = true;
    break;
  case NT_ACT_BACK:
    if (s->detail)
      s->detail = false;
    else if (s->view == NT_VIEW_HELP)
      s->view = s->prev_view;
    break;
  case NT_ACT_PAUSE: s->paused = !s->paused; break;
  case NT_ACT_REDRAW: clear(); break;
  default: break;
  }
  if (s->view != NT_VIEW_CHANNELS) s->detail = false;
  clamp_cursor(s);
  return true;
}

static void draw(nt_screen *s) {
  getmaxyx(stdscr, s->rows, s->cols);
  erase();
  if (s->rows < 5 || s->cols < 30) {
    mvaddnstr(0, 0, "terminal too small", s->cols);
    refresh();
    return;
  }
  if (!s->paused) {
    s->nranks = nt_model_ranks(s->m, s->ranks, NT_SCREEN_MAX_RANKS);
    clamp_cursor(s);
  }
  nt_draw_header(s);
  switch (s->view) {
  case NT_VIEW_PROXY: nt_view_proxy(s, 3); break;
  case NT_VIEW_CHANNELS: nt_view_channels(s, 3); break;
  default: nt_view_help(s, 3); break;
  }
  refresh();
}

int nt_screen_run(nt_model *m, nt_source *src, const nt_options *o) {
  static nt_screen s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.o = o;
  s.view = s.prev_view = o->initial_view;
  if (!initscr()) return 1;
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  colors(o);
  int updates = 0;
  double next_draw = 0;
  bool running = true;
  while (running) {
    nt_source_poll(src, m, 50);
    bool input = false;
    for (int key; running && (key = getch()) != ERR; input = true) {
      if (key == KEY_RESIZE) continue;
      running = act(&s, nt_key_action(key));
    }
    s.now = nt_now_s();
    if (!running) break;
    if (input || s.now >= next_draw) {
      nt_model_tick(m, s.now);
      draw(&s);
      if (s.now >= next_draw) {
        next_draw = s.now + o->delay_ms / 1000.0;
        if (o->iterations && ++updates >= o->iterations) break;
      }
    }
  }
  endwin();
  return 0;
}

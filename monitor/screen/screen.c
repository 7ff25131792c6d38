/* The interactive loop: poll the feed (never longer than 50 ms), handle
 * every pending key, redraw on a timer and after input. Keys map to actions
 * through one table (keys.c); views only draw. The loop never asks which
 * feed it reads (live or a replay): keys that move a feed's clock go to
 * the feed first, and keep their screen meaning where it has no clock. */
#include <curses.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "../feeds/clock.h"
#include "../core/frame.h"
#include "../core/model.h"
#include "../feeds/feed.h"
#include "../options.h"
#include "screen_internal.h"

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
  init_pair(NT_C_WARN, COLOR_YELLOW, -1);
  init_pair(NT_C_WAIT_SELF, COLOR_YELLOW, -1);
  init_pair(NT_C_WAIT_PEER, COLOR_MAGENTA, -1);
  init_pair(NT_C_WAIT_NET, COLOR_CYAN, -1);
}

/* What endwin would send, kept for a signal handler (nt_term_restore_now). */
static void save_leave_sequence(const struct termios *shell) {
  static const char *const caps[] = {"rmkx", "cnorm", "rmcup"};
  /* xterm's mouse reports off (endwin turns them off; a signal does not
   * get there). */
  char seq[256] = "\033[?1006l\033[?1000l";
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    const char *v = tigetstr(caps[i]);
    if (v && v != (char *)-1 && strlen(seq) + strlen(v) < sizeof seq) strcat(seq, v);
  }
  nt_term_restore_set(shell, seq);
}

static void clamp_cursor(nt_screen *s) {
  int nrows = (int)s->nranks, ncols = s->nchannels;
  if (s->row >= nrows) s->row = nrows - 1;
  if (s->row < 0) s->row = 0;
  if (s->col >= ncols) s->col = ncols - 1;
  if (s->col < 0) s->col = 0;
}

static void start_prompt(nt_screen *s, int which) {
  s->prompt = which;
  snprintf(s->filter_was, sizeof s->filter_was, "%s", s->filter);
  snprintf(s->input, sizeof s->input, "%s", which == NT_ACT_FILTER ? s->filter : "");
}

/* Moves the cursor to the next row (from the current one + from) whose text
 * contains the search string. */
/* A search that matches nothing says so (htop turns its bar red); the
 * cursor stays. */
static void search_next(nt_screen *s, int from) {
  for (uint32_t k = 0; k < s->nranks; k++) {
    int i = (int)((s->row + from + (int)k) % (int)s->nranks);
    char text[256];
    nt_frame_rank_text(s->f, nt_screen_rank(s, i), text, sizeof text);
    if (strstr(text, s->search)) {
      s->row = i;
      return;
    }
  }
  snprintf(s->missed, sizeof s->missed, "search: no rank matches \"%.40s\"", s->search);
}

/* A key while a search or filter line is open: edit, Enter applies, Esc
 * cancels. The filter applies as it is typed. */
static void prompt_key(nt_screen *s, int key) {
  size_t n = strlen(s->input);
  if (key == 27) { /* the filter goes back to what it was */
    if (s->prompt == NT_ACT_FILTER) snprintf(s->filter, sizeof s->filter, "%s", s->filter_was);
    s->prompt = 0;
    return;
  }
  if (key == '\n' || key == '\r' || key == KEY_ENTER) {
    if (s->prompt == NT_ACT_SEARCH) {
      snprintf(s->search, sizeof s->search, "%s", s->input);
      search_next(s, 0);
    }
    s->prompt = 0;
  } else if ((key == KEY_BACKSPACE || key == 127 || key == 8) && n > 0) {
    s->input[n - 1] = '\0';
  } else if (key >= 32 && key < 127 && n + 1 < sizeof s->input) {
    s->input[n] = (char)key;
    s->input[n + 1] = '\0';
  }
  if (s->prompt == NT_ACT_FILTER) snprintf(s->filter, sizeof s->filter, "%s", s->input);
}

/* Scroll keys of the line views. */
static bool scroll_action(nt_screen *s, int action, int page) {
  if (!nt_views[s->view].lines) return false;
  int *top = &s->scroll[s->view];
  switch (action) {
  case NT_ACT_UP: (*top)--; break;
  case NT_ACT_DOWN: (*top)++; break;
  case NT_ACT_PAGE_UP: *top -= page; break;
  case NT_ACT_PAGE_DOWN: *top += page; break;
  case NT_ACT_HOME: *top = 0; break;
  case NT_ACT_END: *top = 1 << 20; break; /* the view clamps it */
  default: return false;
  }
  if (*top < 0) *top = 0;
  return true;
}

/* Space, Left, Right, Home, End, [ and ] ask the feed to move its clock
 * (a replay does); -1 for the other actions. */
static int feed_control(int action) {
  switch (action) {
  case NT_ACT_PAUSE: return NT_FEED_PAUSE;
  case NT_ACT_LEFT: return NT_FEED_BACK;
  case NT_ACT_RIGHT: return NT_FEED_FORWARD;
  case NT_ACT_HOME: return NT_FEED_TO_START;
  case NT_ACT_END: return NT_FEED_TO_END;
  case NT_ACT_SLOWER: return NT_FEED_SLOWER;
  case NT_ACT_FASTER: return NT_FEED_FASTER;
  default: return -1;
  }
}

/* In help, the scroll keys scroll it and a view key goes to that view;
 * any other key (q included: it does not quit from here) closes it, as in
 * htop. */
static bool help_action(nt_screen *s, int action, int page) {
  if (s->view != NT_VIEW_HELP) return false;
  if (scroll_action(s, action, page)) return true;
  bool to_view = action == NT_ACT_NEXT_VIEW || action == NT_ACT_PREV_VIEW ||
                 (action >= NT_ACT_VIEW_1 && action <= NT_ACT_VIEW_3) ||
                 (action >= NT_ACT_VIEW_4 && action <= NT_ACT_VIEW_6);
  if (to_view) return false;
  s->view = s->prev_view != NT_VIEW_HELP ? s->prev_view : NT_VIEW_OVERVIEW;
  return true;
}

static bool act(nt_screen *s, int action);

/* A mouse event, as htop takes them: the wheel scrolls (three lines), a
 * click on the key bar is its key, on a column title sorts by it (again:
 * inverts), on a row moves the cursor there; in the help any click closes
 * it, with the sort menu open a click picks an entry or closes it. Returns
 * false to quit. */
static bool mouse(nt_screen *s) {
  MEVENT ev;
  if (getmouse(&ev) != OK) return true;
  if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
    int a = ev.bstate & BUTTON4_PRESSED ? NT_ACT_UP : NT_ACT_DOWN;
    for (int i = 0; i < 3; i++) act(s, a);
    return true;
  }
  if (!(ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))) return true;
  if (s->lay.keys.h > 0 && ev.y == s->lay.keys.y) {
    int a = nt_keybar_action_at(s->lay.keys.w, s->view, ev.x);
    return a == NT_ACT_NONE || act(s, a);
  }
  if (s->menu) {
    nt_sort_menu_click(s, ev.y, ev.x);
  } else if (s->view == NT_VIEW_HELP) {
    act(s, NT_ACT_NONE); /* closes it, as a key does */
  } else if (nt_views[s->view].click) {
    nt_views[s->view].click(s, ev.y, ev.x);
    clamp_cursor(s);
  }
  return true;
}

/* Applies one action; returns false to quit. */
static bool act(nt_screen *s, int action) {
  int page = s->rows > 6 ? s->rows - 6 : 1;
  if (help_action(s, action, page)) return true;
  if (nt_sort_menu_action(s, action)) return true;
  int control = feed_control(action);
  if (control >= 0 && nt_feed_control(s->feed, control)) {
    s->m = nt_feed_model(s->feed); /* a seek may have made a new one */
    return true;
  }
  if (nt_views[s->view].action && nt_views[s->view].action(s, action)) return true;
  if (scroll_action(s, action, page)) return true;
  switch (action) {
  case NT_ACT_QUIT: return false;
  case NT_ACT_HELP:
    if (s->view != NT_VIEW_HELP) s->prev_view = s->view;
    s->view = NT_VIEW_HELP;
    break;
  case NT_ACT_NEXT_VIEW: s->view = (s->view + 1) % NT_VIEW_COUNT; break;
  case NT_ACT_PREV_VIEW: s->view = (s->view + NT_VIEW_COUNT - 1) % NT_VIEW_COUNT; break;
  case NT_ACT_VIEW_1: s->view = NT_VIEW_OVERVIEW; break;
  case NT_ACT_VIEW_2: s->view = NT_VIEW_PROXY; break;
  case NT_ACT_VIEW_3: s->view = NT_VIEW_CHANNELS; break;
  case NT_ACT_VIEW_4: s->view = NT_VIEW_OPS; break;
  case NT_ACT_VIEW_5: s->view = NT_VIEW_TOPO; break;
  case NT_ACT_VIEW_6: s->view = NT_VIEW_ENV; break;
  case NT_ACT_VIEW_7:
    if (s->view != NT_VIEW_HELP) s->prev_view = s->view;
    s->view = NT_VIEW_HELP;
    break;
  case NT_ACT_UP: s->row--; break;
  case NT_ACT_DOWN: s->row++; break;
  case NT_ACT_LEFT: s->col--; break;
  case NT_ACT_RIGHT: s->col++; break;
  case NT_ACT_PAGE_UP: s->row -= page; break;
  case NT_ACT_PAGE_DOWN: s->row += page; break;
  case NT_ACT_HOME: s->row = 0; break;
  case NT_ACT_END: s->row = (int)s->nranks - 1; break;
  case NT_ACT_ENTER:
    if (s->view == NT_VIEW_CHANNELS) s->detail = true, s->detail_top = 0;
    break;
  case NT_ACT_BACK:
    if (s->detail)
      s->detail = false;
    else if (s->view == NT_VIEW_HELP)
      s->view = s->prev_view;
    else
      s->filter[0] = '\0';
    break;
  case NT_ACT_PAUSE: s->paused = !s->paused; break;
  case NT_ACT_UNFOLD: s->unfold = true; break;
  case NT_ACT_FOLD: s->unfold = false; break;
  case NT_ACT_REDRAW: clear(); break;
  case NT_ACT_SEARCH: start_prompt(s, NT_ACT_SEARCH); break;
  case NT_ACT_SEARCH_NEXT:
    if (s->search[0])
      search_next(s, 1);
    else
      start_prompt(s, NT_ACT_SEARCH);
    break;
  case NT_ACT_FILTER: start_prompt(s, NT_ACT_FILTER); break;
  case NT_ACT_SORT_MENU: nt_sort_menu_open(s); break;
  case NT_ACT_SORT_INVERT: s->sort_invert = !s->sort_invert; break;
  case NT_ACT_SORT_NEXT: s->sort = (s->sort + 1) % NT_SORT_COUNT; break;
  case NT_ACT_SORT_PREV: s->sort = (s->sort + NT_SORT_COUNT - 1) % NT_SORT_COUNT; break;
  default: break;
  }
  if (s->view != NT_VIEW_CHANNELS) s->detail = false;
  clamp_cursor(s);
  return true;
}

/* The settings file follows what the user changes: written whole when the
 * view (help aside), the rank order or the filter differs from what it
 * holds or the screen started with. */
static void save_settings(nt_screen *s) {
  if (!s->o->settings_path[0]) return;
  nt_settings st = {.view = s->view == NT_VIEW_HELP ? s->prev_view : s->view,
                    .sort = s->sort,
                    .has_filter = true,
                    .mouse = s->o->settings_mouse, /* the file's, not --no-mouse's */
                    .has_hide = s->o->settings_has_hide};
  snprintf(st.hide, sizeof st.hide, "%s", s->o->settings_hide);
  snprintf(st.filter, sizeof st.filter, "%s", s->filter);
  if (st.view == s->saved.view && st.sort == s->saved.sort && !strcmp(st.filter, s->saved.filter))
    return;
  s->saved = st;
  char err[256];
  if (nt_settings_write(s->o->settings_path, &st, err, sizeof err) != 0 && !s->settings_err[0])
    snprintf(s->settings_err, sizeof s->settings_err, "%s", err);
}

void nt_screen_draw(nt_screen *s) {
  getmaxyx(stdscr, s->rows, s->cols);
  erase();
  if (s->rows < 5 || s->cols < 30) {
    mvaddnstr(0, 0, "terminal too small", s->cols);
    refresh();
    return;
  }
  /* The frame's rows as the filter and sort say (paused, the frame is the
   * one that was shown: it owns what it shows). */
  nt_screen_collect(s);
  clamp_cursor(s);
  bool band = s->f->nalerts && s->view != NT_VIEW_OVERVIEW && s->view != NT_VIEW_HELP;
  nt_layout(s->rows, s->cols, band ? 1 : 0, s->detail && s->view == NT_VIEW_CHANNELS, &s->lay);
  s->bottom = s->lay.list.y + s->lay.list.h;
  nt_draw_header(s);
  nt_draw_alerts_band(s);
  nt_views[s->view].draw(s, s->lay.list.y);
  nt_sort_menu_draw(s);
  nt_draw_keybar(s);
  if (!s->prompt && s->missed[0]) {
    move(s->rows - 1, 0);
    clrtoeol();
    int attr = nt_stall_attr(s) | A_REVERSE;
    attron(attr);
    mvaddnstr(s->rows - 1, 0, s->missed, s->cols);
    attroff(attr);
  }
  if (s->prompt) {
    char line[128];
    snprintf(line, sizeof line, "%s: %s_  (Enter: %s, Esc: cancel)",
             s->prompt == NT_ACT_FILTER ? "filter" : "search", s->input,
             s->prompt == NT_ACT_FILTER ? "keep" : "find");
    move(s->rows - 1, 0);
    clrtoeol();
    attron(A_REVERSE);
    mvaddnstr(s->rows - 1, 0, line, s->cols);
    attroff(A_REVERSE);
  }
  refresh();
}

int nt_screen_run(nt_feed *feed, const nt_options *o) {
  static nt_screen s;
  memset(&s, 0, sizeof s);
  if (!(s.f = nt_frame_new()) || !(s.diag = nt_diag_new())) {
    fprintf(stderr, "nccltop: out of memory\n");
    nt_frame_free(s.f);
    return 1;
  }
  nt_frame_opts fo = {.stall_ms = o->stall_ms, .start_s = o->start_s};
  nt_model *m = nt_feed_model(feed);
  s.m = m;
  s.feed = feed;
  s.o = o;
  s.view = s.prev_view = o->initial_view;
  s.sort = o->initial_sort;
  snprintf(s.filter, sizeof s.filter, "%s", o->initial_filter);
  s.saved = (nt_settings){.view = s.view, .sort = s.sort, .has_filter = true};
  snprintf(s.saved.filter, sizeof s.saved.filter, "%s", s.filter);
  if (o->settings_note[0]) /* on the key bar until the first key; cut to fit */
    snprintf(s.missed, sizeof s.missed, "%.*s", (int)sizeof s.missed - 1, o->settings_note);
  nt_feed_status(feed, s.watching, sizeof s.watching);
  s.feed_mode = nt_feed_mode(feed);
  struct termios shell;
  bool have_shell = tcgetattr(STDOUT_FILENO, &shell) == 0;
  if (!initscr()) {
    nt_frame_free(s.f);
    nt_diag_free(s.diag);
    return 1;
  }
  if (have_shell) save_leave_sequence(&shell);
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  /* Clicks come as presses, at once (no click interval to wait out). */
  nt_list_hide(o->hide_columns);
  if (!o->no_mouse) mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
  mouseinterval(0);
  colors(o);
  int updates = 0;
  double next_draw = 0;
  bool running = true, built = false;
  while (running && !nt_quit_requested()) { /* a signal quits as q does */
    nt_feed_poll(feed, 50);
    s.m = m = nt_feed_model(feed); /* a replay's may be new */
    bool input = false;
    for (int key; running && (key = getch()) != ERR; input = true) {
      if (key == KEY_RESIZE) continue;
      s.missed[0] = '\0';
      if (key == KEY_MOUSE)
        running = s.prompt || mouse(&s); /* a line being typed: the mouse waits */
      else if (s.prompt)
        prompt_key(&s, key);
      else
        running = act(&s, nt_key_action(key, s.view));
      s.last_key = key;
    }
    if (input && !s.prompt) save_settings(&s);
    m = s.m;
    /* The model's clock (the feed's: a replay's own); redraws go by the
     * wall clock. */
    double wall = nt_now_s();
    s.now = nt_feed_now(feed);
    nt_feed_status(feed, s.watching, sizeof s.watching);
    if (!running) break;
    if (input || wall >= next_draw) {
      nt_model_tick(m, s.now);
      bool update = wall >= next_draw;
      /* Every update, whatever the view: the diagnosis tracks how long
       * ranks lag. Paused, the frame shown stays. */
      if ((update && !s.paused) || !built) {
        /* The history's interval is the update's, in the model's clock: a
         * replay at x4 updates every 4 x -d of the recording. */
        fo.update_s = o->delay_ms / 1000.0 * nt_feed_rate(feed);
        nt_frame_build(s.f, m, s.diag, &fo, s.now);
        nt_screen_sample(&s);
        built = true;
      }
      /* Paused, the screen holds still: redrawn only for a key. */
      if (input || !s.paused) nt_screen_draw(&s);
      if (update) {
        next_draw = wall + o->delay_ms / 1000.0;
        if (o->iterations && ++updates >= o->iterations) break;
      }
    }
  }
  endwin();
  nt_view_graphs_free(&s);
  nt_view_topo_free(&s);
  nt_term_restore_clear(); /* after: a signal meanwhile still restores it */
  if (s.settings_err[0]) fprintf(stderr, "nccltop: settings not saved: %s\n", s.settings_err);
  nt_frame_free(s.f);
  nt_diag_free(s.diag);
  return 0;
}

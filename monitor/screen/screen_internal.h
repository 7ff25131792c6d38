/* The interactive monitor's internals: key table, screen state, views. */
#ifndef NCCLTOP_SCREEN_INTERNAL_H
#define NCCLTOP_SCREEN_INTERNAL_H

#include <stdbool.h>

#include "actions.h"
#include "layout.h"
#include "list.h"
#include "../core/frame.h"
#include "../core/model.h"
#include "../feeds/feed.h"
#include "../feeds/settings.h"
#include "../options.h"

#define NT_TOPO_VIEW_MAX 256 /* GPUs + NICs shown */

/* Orders of the rank rows (F6, < >). */
enum nt_sort { NT_SORT_RANK, NT_SORT_STALLED, NT_SORT_HOST, NT_SORT_COUNT };
const char *nt_sort_name(int sort);

#define NT_HISTORY 24 /* proxy-state samples per thread, one per screen update */

typedef struct {
  int key;
  const char *keys_text; /* NULL: an alias, shown with the entry above */
  const char *help;
  int action;
} nt_key_binding;

extern const nt_key_binding nt_keys[]; /* ends with key 0 */
/* The action of a key in a view: the topology what-ifs only in the
 * topology view (where their letters mean nothing else), so `n` is the
 * next search match elsewhere. */
int nt_key_action(int key, int view);

/* Colour pairs (attributes fall back to bold/reverse without colour). */
enum {
  NT_C_IDLE = 1,
  NT_C_ACTIVE,
  NT_C_SLEEP,
  NT_C_WAKEUP,
  NT_C_APPEND,
  NT_C_STALL,
  NT_C_HEAD,
  NT_C_WARN,
  NT_C_WAIT_SELF, /* a wait on the rank's own GPU */
  NT_C_WAIT_PEER, /* a wait on a peer (credit) */
  NT_C_WAIT_NET,  /* data on the wire */
};

#define NT_SCREEN_MAX_RANKS NT_FRAME_MAX_RANKS

typedef struct {
  uint32_t pid, tid;
  uint8_t state[NT_HISTORY]; /* dominant state of each update, oldest first */
  int n;
  bool seen;
} nt_proxy_history;

#define NT_SCREEN_MAX_HISTORY 1024

typedef struct {
  nt_model *m;   /* the feed's (read again after each poll: a replay's seek makes a new one) */
  nt_feed *feed; /* where m's data comes from: live, a replay (feed.h) */
  const nt_options *o;
  int view, prev_view;
  bool paused, detail;
  int detail_top; /* the detail panel's first line shown (PgUp/PgDn) */
  bool unfold;    /* the overview shows the alerts folded under each root (+, -) */
  int sort;
  int proxy_sort;   /* the proxy view's sort column; 0 (its RANK): the rank order */
  bool sort_invert; /* I: every order reversed */
  bool menu;        /* the sort menu (F6) is open */
  int menu_row;     /* its cursor */
  int last_key;
  int prompt;          /* 0, NT_ACT_SEARCH or NT_ACT_FILTER while typing */
  char input[64];      /* the line being typed */
  char filter[64];     /* rows must contain this text */
  char filter_was[64]; /* the filter before the line was opened (Esc goes back to it) */
  char watching[320];  /* what the header says is watched (nt_feed_status) */
  char search[64];     /* last search */
  char missed[96];     /* a search that found nothing: said on the key bar until the next key */
  /* The header's mode word if the feed has one (nt_feed_mode), else NULL. */
  const char *feed_mode;
  nt_proxy_history hist[NT_SCREEN_MAX_HISTORY];
  /* topology view: which of the model's topologies it shows, and its own
   * copy of it that the what-ifs are computed on (the model's is never
   * touched) */
  nt_topo_env topo_env;
  uint32_t topo_pick; /* the model's index shown (t: the next) */
  uint64_t topo_hash; /* the file `topo` is a copy of; 0 none (load it) */
  nt_topo *topo;      /* the view's copy, NULL none */
  char topo_err[256]; /* why the copy or a what-if could not be computed, "" none */
  int trow, tcol, ttop, tleft;
  uint32_t topo_serial;      /* bumped at each recompute (a new file, a what-if) */
  bool topo_graphs;          /* R: the channels NCCL builds instead of the paths */
  int gr_top;                /* the channels panel's first line shown */
  nt_topo_graphs *gr_search; /* the search of the topology shown (view_graphs.c) */
  uint32_t gr_serial;        /* the topo_serial gr_search was computed at */
  bool gr_inter;             /* gr_search's channels cross nodes (the job's have several) */
  unsigned char topo_changed[NT_TOPO_VIEW_MAX * NT_TOPO_VIEW_MAX];
  int nhist;
  int row, col;              /* cursor: rank row, channel column */
  int scroll[NT_VIEW_COUNT]; /* line views (overview, collectives, environment) */
  /* The frame shown (frame.h): built at each update, kept as it is while
   * paused (it owns its copies: the model may drop what it showed). */
  nt_frame *f;
  nt_diag *diag; /* the frames' diagnosis of the model (it follows a replay's new one) */
  int rows, cols;
  /* Where each part goes this frame (layout.h); views draw in lay.list,
   * from its first line down to `bottom` (exclusive: the detail panel or
   * the key bar starts there). */
  nt_layout_rects lay;
  int bottom;
  nt_list_state lists[NT_VIEW_COUNT]; /* the list views' own scroll and cursor */
  /* The frame's ranks as shown: filtered and sorted (indices into f->ranks). */
  uint32_t order[NT_SCREEN_MAX_RANKS];
  uint32_t nranks;
  /* Which of the frame's ranks and processes the filter keeps (indices
   * into f->ranks, f->procs; a process past the array is kept): every
   * table reads them, so the filter means the same rows everywhere. */
  bool kept[NT_SCREEN_MAX_RANKS];
  bool proc_kept[NT_SCREEN_MAX_RANKS];
  int nchannels; /* channel columns: highest channel id + 1 of the ranks shown */
  double now;
  /* The settings file (screen.c save_settings): what it holds now, and the
   * first failure to write it, said after the screen. */
  nt_settings saved;
  char settings_err[320];
} nt_screen;
_Static_assert(NT_SORT_COUNT == NT_SETTINGS_NSORTS, "the settings file names every rank order");

/* The i-th rank shown. */
static inline const nt_frame_rank *nt_screen_rank(const nt_screen *s, int i) {
  return &s->f->ranks[s->order[i]];
}

/* Draws the whole screen (header, view, key bar) from s->f on stdscr, at
 * the terminal's size now. */
void nt_screen_draw(nt_screen *s);
/* Drawing (view_*.c); each draws below the header from line `y`. */
void nt_draw_header(nt_screen *s);
/* The key bar (keybar.c): the text of the items that fit in cols, and the
 * drawing on lay.keys; returns the number of items. */
int nt_keybar_text(char *out, size_t cap, int cols, int view);
void nt_draw_keybar(nt_screen *s);
/* The alerts band on lay.alerts (the overview lists them itself). */
void nt_draw_alerts_band(nt_screen *s);
/* The views (view_table.c), indexed by enum nt_view_id, in Tab order; the
 * digit keys select them in this order. A view draws below the header from
 * line y; its action handler (NULL: none) takes the keys it understands
 * (cursor, what-ifs) before the screen's; a line view scrolls by lines. */
typedef struct {
  const char *name; /* in the header: "[name]" */
  void (*draw)(nt_screen *s, int y);
  bool (*action)(nt_screen *s, int action);
  bool lines;
  /* A click at (y, x) (NULL: none): a column title sorts by it (again:
   * inverts), a row takes the cursor. */
  void (*click)(nt_screen *s, int y, int x);
} nt_view_def;
extern const nt_view_def nt_views[NT_VIEW_COUNT];
/* Cursor and scroll keys of the list views; false if not handled. */
bool nt_channels_action(nt_screen *s, int action);
void nt_channels_click(nt_screen *s, int y, int x);
void nt_proxy_click(nt_screen *s, int y, int x);
/* The action of the key bar's item under column x (NT_ACT_NONE: none). */
int nt_keybar_action_at(int cols, int view, int x);
/* A click while the sort menu is open: an entry picks it, elsewhere
 * closes it. */
void nt_sort_menu_click(nt_screen *s, int y, int x);
bool nt_proxy_list_action(nt_screen *s, int action);
/* What the proxy view is sorted by, for the header. */
const char *nt_proxy_sort_name(const nt_screen *s);
/* The proxy view's own sort columns (after the rank orders), with their
 * titles; returns how many (at most cap). */
int nt_proxy_sort_columns(int *cols, const char **names, int cap);
/* The sort menu (sort_menu.c): open it on the order in force; while open it
 * takes every action (true); drawn over the view's top left. */
void nt_sort_menu_open(nt_screen *s);
bool nt_sort_menu_action(nt_screen *s, int action);
void nt_sort_menu_draw(nt_screen *s);
/* The mark of the sort column's title: ^, or v when inverted. */
static inline const char *nt_sort_mark(const nt_screen *s) {
  return s->sort_invert ? "v" : "^";
}
/* The channel details (view_detail.c) of (rank, channel) in area: wrapped
 * to its width, scrolled by PgUp/PgDn while open (the action, true when
 * taken). */
void nt_channel_detail(nt_screen *s, const nt_frame_rank *r, int channel, nt_rect area);
bool nt_channel_detail_action(nt_screen *s, int action);
void nt_view_proxy(nt_screen *s, int y);
void nt_view_channels(nt_screen *s, int y);
void nt_view_help(nt_screen *s, int y);
void nt_view_overview(nt_screen *s, int y);
void nt_view_ops(nt_screen *s, int y);
void nt_view_env(nt_screen *s, int y);
int nt_stall_attr(const nt_screen *s);
/* The attribute of a wait state by what it waits on: its own GPU, a peer,
 * the network (enum nt_wait). */
int nt_wait_attr(const nt_screen *s, int wait);
/* An htop meter: [|||||     ] of width w (brackets included), the filled
 * part share (0..1) of it, in attr. */
void nt_meter(const nt_screen *s, int y, int x, int w, double share, int attr);
int nt_warn_attr(const nt_screen *s);
/* A line of a scrolling view: drawn when line `*n` (counted from 0) is
 * within the window of the view's scroll, then *n advances; returns false
 * once the screen is full (the line still counted). A loop that stops
 * there adds the lines it did not format to *n, so that the scroll can
 * reach the last line. attr 0: plain. */
bool nt_scroll_line(nt_screen *s, int *y, int *n, int attr, const char *text);
/* A paragraph as scrolling lines, wrapped at blanks to the screen's
 * width, the lines after the first indented by `indent` (all of them
 * counted, shown or not); false once the screen is full. */
bool nt_scroll_wrap(nt_screen *s, int *y, int *n, int attr, int indent, const char *text);
/* After a line view drew its n lines: its scroll stops at the last page. */
void nt_scroll_clamp(nt_screen *s, int n);
void nt_view_topo(nt_screen *s, int y);
/* The topology view's channels face (view_graphs.c); t may be NULL. */
void nt_view_graphs(nt_screen *s, nt_topo *t, const char *topo_source, int y);
void nt_view_graphs_free(nt_screen *s);
void nt_view_topo_free(nt_screen *s); /* the view's copy of the topology */
/* Cursor and what-if keys of the topology view; false if not handled. */
bool nt_topo_view_action(nt_screen *s, int action);
int nt_state_attr(const nt_screen *s, int proxy_state);
/* The history of a proxy thread (NULL if none yet). */
const nt_proxy_history *nt_history_of(const nt_screen *s, uint32_t pid, uint32_t tid);
/* The frame's ranks, filtered and sorted as the screen shows them (order,
 * nranks, nchannels). */
void nt_screen_collect(nt_screen *s);
/* What the filter keeps of the other tables: a communicator or process
 * with a rank kept, an operation of a rank kept (all of them without a
 * filter). */
bool nt_screen_comm_kept(const nt_screen *s, uint64_t comm_hash);
bool nt_screen_proc_kept(const nt_screen *s, uint32_t proc);
static inline bool nt_screen_rank_kept(const nt_screen *s, uint32_t rank) {
  return !s->filter[0] || (rank < NT_SCREEN_MAX_RANKS && s->kept[rank]);
}
/* Appends the frame's dominant states to the histories (once per update). */
void nt_screen_sample(nt_screen *s);

#endif

/* What a key does (keys.c maps keys to these): the screen's actions, which
 * the list panel also takes for its cursor. */
#ifndef NCCLTOP_ACTIONS_H
#define NCCLTOP_ACTIONS_H

enum nt_action {
  NT_ACT_NONE,
  NT_ACT_HELP,
  NT_ACT_QUIT,
  NT_ACT_NEXT_VIEW,
  NT_ACT_PREV_VIEW,
  NT_ACT_VIEW_1,
  NT_ACT_VIEW_2,
  NT_ACT_VIEW_3,
  NT_ACT_UP,
  NT_ACT_DOWN,
  NT_ACT_LEFT,
  NT_ACT_RIGHT,
  NT_ACT_PAGE_UP,
  NT_ACT_PAGE_DOWN,
  NT_ACT_HOME,
  NT_ACT_END,
  NT_ACT_ENTER,
  NT_ACT_BACK,
  NT_ACT_PAUSE,
  NT_ACT_REDRAW,
  NT_ACT_SEARCH,
  NT_ACT_FILTER,
  NT_ACT_SORT_NEXT,
  NT_ACT_SORT_PREV,
  NT_ACT_VIEW_4,
  NT_ACT_VIEW_5,
  NT_ACT_VIEW_6,
  NT_ACT_VIEW_7,
  NT_ACT_SEARCH_NEXT,
  NT_ACT_TOPO_NEXT,
  NT_ACT_TOPO_CHANNELS, /* the topology view: channels (rings, trees) / paths */
  NT_ACT_UNFOLD,        /* the overview: show the alerts folded under their roots */
  NT_ACT_FOLD,
  NT_ACT_SLOWER, /* replay: half the speed */
  NT_ACT_FASTER, /* replay: twice the speed */
  NT_ACT_SORT_MENU,
  NT_ACT_SORT_INVERT,
  /* topology view what-ifs (keep these last: >= NT_ACT_WHATIF_P2P recompute) */
  NT_ACT_WHATIF_P2P,
  NT_ACT_WHATIF_P2P_LEVEL,
  NT_ACT_WHATIF_GDR_LEVEL,
  NT_ACT_WHATIF_GDR_READ,
  NT_ACT_WHATIF_PXN,
  NT_ACT_WHATIF_NVB,
  NT_ACT_WHATIF_C2C,
  NT_ACT_WHATIF_RESET,
};

#endif

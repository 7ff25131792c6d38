/* Key bindings and their help text: one table, so the help screen cannot
 * drift from what the keys do. Every F-key has a letter alias. */
#include <curses.h>

#include "../options.h"
#include "screen_internal.h"

const nt_key_binding nt_keys[] = {
    {'h', "F1 h ?", "help (this screen)", NT_ACT_HELP},
    {'?', NULL, NULL, NT_ACT_HELP},
    {KEY_F(1), NULL, NULL, NT_ACT_HELP},
    {'q', "q F10", "quit", NT_ACT_QUIT},
    {KEY_F(10), NULL, NULL, NT_ACT_QUIT},
    {'\t', "Tab S-Tab", "next / previous view", NT_ACT_NEXT_VIEW},
    {KEY_BTAB, NULL, NULL, NT_ACT_PREV_VIEW},
    {'1', "1 .. 7",
     "views: overview, proxy threads, channels, collectives, topology, environment, help",
     NT_ACT_VIEW_1},
    {'2', NULL, NULL, NT_ACT_VIEW_2},
    {'3', NULL, NULL, NT_ACT_VIEW_3},
    {'4', NULL, NULL, NT_ACT_VIEW_4},
    {'5', NULL, NULL, NT_ACT_VIEW_5},
    {'6', NULL, NULL, NT_ACT_VIEW_6},
    {'7', NULL, NULL, NT_ACT_VIEW_7},
    {KEY_UP, "arrows", "move the cursor, or scroll", NT_ACT_UP},
    {KEY_DOWN, NULL, NULL, NT_ACT_DOWN},
    {KEY_LEFT, NULL, NULL, NT_ACT_LEFT},
    {KEY_RIGHT, NULL, NULL, NT_ACT_RIGHT},
    {KEY_PPAGE, "PgUp PgDn", "scroll a page", NT_ACT_PAGE_UP},
    {KEY_NPAGE, NULL, NULL, NT_ACT_PAGE_DOWN},
    {KEY_HOME, "Home End", "first / last row", NT_ACT_HOME},
    {KEY_END, NULL, NULL, NT_ACT_END},
    {'\n', "Enter", "channels view: details of the channel under the cursor", NT_ACT_ENTER},
    {KEY_ENTER, NULL, NULL, NT_ACT_ENTER},
    {27, "Esc", "close details / leave help / clear the filter; cancel a search or filter line",
     NT_ACT_BACK},
    {' ', "Space Z", "pause / resume (data keeps arriving)", NT_ACT_PAUSE},
    {'z', NULL, NULL, NT_ACT_PAUSE},
    {'Z', NULL, NULL, NT_ACT_PAUSE},
    {12, "Ctrl-L", "redraw the screen", NT_ACT_REDRAW},
    {'/', "/", "search rows (rank, comm, host, pid)", NT_ACT_SEARCH},
    {KEY_F(3), "F3 n", "next match of the last search", NT_ACT_SEARCH_NEXT},
    {'n', NULL, NULL, NT_ACT_SEARCH_NEXT},
    {'\\', "F4 \\", "filter rows by text (empty: show all)", NT_ACT_FILTER},
    {KEY_F(4), NULL, NULL, NT_ACT_FILTER},
    {KEY_F(6), "F6",
     "sort menu: the orders of this view, the one in force highlighted; Enter picks one, Esc "
     "closes",
     NT_ACT_SORT_MENU},
    {'>', "> <",
     "next / previous sort: rank, stalled first, host; in the proxy view then any column",
     NT_ACT_SORT_NEXT},
    {'<', NULL, NULL, NT_ACT_SORT_PREV},
    {'I', "I", "invert the sort order (the column's mark turns from ^ to v)", NT_ACT_SORT_INVERT},
    {'[', "[ ]",
     "replay: half / twice the speed (in a replay, Space pauses it, Left Right seek 10 s, Home End "
     "go to its start / end)",
     NT_ACT_SLOWER},
    {']', NULL, NULL, NT_ACT_FASTER},
    {'+', "+ -",
     "overview: show / fold the alerts under each root (the stalls and stuck operations of the "
     "ranks that wait on it)",
     NT_ACT_UNFOLD},
    {'-', NULL, NULL, NT_ACT_FOLD},
    {'t', "t", "topology: show the next one received (publishers sent several)", NT_ACT_TOPO_NEXT},
    {'R', "R",
     "topology: the channels NCCL builds (rings, trees; NCCL's own with NCCL_GRAPH_DUMP_FILE) / "
     "the paths",
     NT_ACT_TOPO_CHANNELS},
    {'p', "p", "topology what-if: NCCL_P2P_DISABLE=1 on/off", NT_ACT_WHATIF_P2P},
    {'l', "l", "topology what-if: next NCCL_P2P_LEVEL", NT_ACT_WHATIF_P2P_LEVEL},
    {'g', "g", "topology what-if: next NCCL_NET_GDR_LEVEL", NT_ACT_WHATIF_GDR_LEVEL},
    {'r', "r", "topology what-if: NCCL_NET_GDR_READ=0 on/off", NT_ACT_WHATIF_GDR_READ},
    {'x', "x", "topology what-if: NCCL_PXN_DISABLE=1 on/off", NT_ACT_WHATIF_PXN},
    {'n', "n", "topology what-if: NCCL_NVB_DISABLE=1 on/off", NT_ACT_WHATIF_NVB},
    {'c', "c", "topology what-if: NCCL_NET_GDR_C2C=0 on/off", NT_ACT_WHATIF_C2C},
    {'e', "e", "topology what-if: back to NCCL's defaults", NT_ACT_WHATIF_RESET},
    {0, NULL, NULL, NT_ACT_NONE},
};

int nt_key_action(int key, int view) {
  int any = NT_ACT_NONE;
  for (const nt_key_binding *b = nt_keys; b->key; b++) {
    if (b->key != key) continue;
    bool what_if = b->action >= NT_ACT_WHATIF_P2P;
    if (what_if == (view == NT_VIEW_TOPO)) return b->action;
    if (!what_if && !any) any = b->action;
  }
  return any;
}

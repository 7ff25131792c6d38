/* The table of views: adding one is its own file (draw, and an action
 * handler when it has a cursor), its id in enum nt_view_id (options.h, for
 * --view) and one line here. */
#include "../options.h"
#include "screen_internal.h"

const nt_view_def nt_views[NT_VIEW_COUNT] = {
    [NT_VIEW_OVERVIEW] = {"overview", nt_view_overview, NULL, true},
    [NT_VIEW_PROXY] = {"proxy threads", nt_view_proxy, nt_proxy_list_action, false, nt_proxy_click},
    [NT_VIEW_CHANNELS] = {"channels", nt_view_channels, nt_channels_action, false,
                          nt_channels_click},
    [NT_VIEW_OPS] = {"collectives", nt_view_ops, NULL, true},
    [NT_VIEW_TOPO] = {"topology", nt_view_topo, nt_topo_view_action, false},
    [NT_VIEW_ENV] = {"environment", nt_view_env, NULL, true},
    [NT_VIEW_HELP] = {"help", nt_view_help, NULL, true},
};

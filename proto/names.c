/* Names of proxy states and step waits: the words the JSON output, the
 * screens and the documentation all use. */
#include "nccltop_proto.h"

const char *nt_proxy_state_name(int state) {
  static const char *names[NT_PROXY_NSTATES] = {"idle", "active", "sleep", "wakeup", "append"};
  return state >= 0 && state < NT_PROXY_NSTATES ? names[state] : "unknown";
}

const char *nt_wait_name(int wait) {
  static const char *names[NT_WAIT_COUNT] = {"send_gpu_wait", "send_peer_wait",  "send_net_wait",
                                             "recv_net_wait", "recv_flush_wait", "recv_gpu_wait"};
  return wait >= 0 && wait < NT_WAIT_COUNT ? names[wait] : "none";
}

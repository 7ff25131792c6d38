/* The demo's helpers (demo_nodes.c): relays for a simulated multi-node job. */
#ifndef NCCLTOP_DEMO_H
#define NCCLTOP_DEMO_H

#include <stddef.h>
#include <sys/types.h>

#define NT_DEMO_MAX_NODES 254 /* 127.0.0.1 .. 127.0.0.254 */

/* Starts one `nccltop relay` per node (DIR/node<k> on 127.0.0.(k+1), a
 * free port) and writes the --hosts list that reaches them into hosts.
 * Returns 0, or -1 after stopping any it started. */
int nt_demo_relays_start(const char *dir, int nodes, pid_t *pids, char *hosts, size_t cap);
/* SIGTERM, 2 s, then SIGKILL; reaps them. */
void nt_demo_relays_stop(pid_t *pids, int nodes);

#endif

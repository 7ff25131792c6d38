/* The endpoint directory's rules, shared by the viewer (source.c) and the
 * relay (relay.c): which files are publishers' sockets and which of those
 * publishers are alive. The callers keep their own bookkeeping (sockets,
 * what was seen at the last scan, the grace period after the directory was
 * re-opened). */
#ifndef NCCLTOP_DISCOVER_H
#define NCCLTOP_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>

/* A publisher in another PID namespace (a container sharing the directory):
 * its pid means nothing here, kill() would ask about an unrelated process or
 * none, so it is taken as alive while its socket file exists (a SIGKILLed
 * one's file stays, and shows as a publisher that stopped sending). */
bool nt_discover_alive(uint32_t pid, uint64_t pidns, uint64_t our_pidns);

/* Lists the directory open as dirfd (through a descriptor of its own, so
 * the caller's keeps its position) and calls found() for every socket file
 * name (<pid>.<pidns>.sock or <pid>.sock, shorter than name_max bytes).
 * Returns 0, or -1 with errno when it cannot be listed. */
int nt_discover_list(int dirfd, unsigned name_max,
                     void (*found)(void *ctx, const char *name, uint32_t pid, uint64_t pidns),
                     void *ctx);

#endif

/* The endpoint directory's rules, shared by the viewer (source.c) and the
 * relay (relay.c): the reader's own socket there, which the publishers
 * connect to (from 0.2 a plugin never listens), who sent what arrives on it;
 * and, for publishers older than 0.2 that bound, which files are their
 * sockets and which of them are alive. The callers keep their own
 * bookkeeping (sockets, what was seen at the last scan, the grace period
 * after the directory was re-opened). */
#ifndef NCCLTOP_DISCOVER_H
#define NCCLTOP_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <zmq.h>

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

/* A reader's socket in the directory: what it bound, for unbinding. */
typedef struct {
  char name[64];  /* viewer-<pid>-<serial>-<pidns>.sock */
  char addr[160]; /* what ZeroMQ bound (ipc:///proc/self/fd/<dirfd>/<name>) */
} nt_inbox;

/* Binds sock (a SUB or XSUB) to a new viewer-<pid>-<serial>-<pidns>.sock in
 * the directory open as dirfd, first removing the files of readers in our
 * PID namespace that died without removing theirs. Returns 0, or -1 with
 * errno (ZeroMQ's). */
int nt_inbox_bind(nt_inbox *in, void *sock, int dirfd);
/* Unbinds and removes the file (ZeroMQ 4.3 leaves it); dirfd must be the
 * one it was bound through, still open. Safe on an inbox never bound. */
void nt_inbox_unbind(nt_inbox *in, void *sock, int dirfd);
/* The sender of a message received on an inbox, as the kernel saw it
 * connect (SO_PEERCRED, through ZeroMQ's Peer-Address property): its pid in
 * our PID namespace (0 if it has none here). False when the message carries
 * no credentials or they are another user's. */
bool nt_inbox_sender(zmq_msg_t *msg, uint32_t *pid);
/* Whether pid (in our namespace) lives in our PID namespace too: then the
 * pid its messages carry must be that one. */
bool nt_pid_in_our_ns(uint32_t pid, uint64_t our_pidns);

#endif

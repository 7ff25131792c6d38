/* The relay's accepted TCP connections, as the kernel sees them: libzmq 4.3
 * neither says which connection a subscription or an authentication
 * request came from nor can drop one connection of a socket, but the
 * sockets are ours: listed in /proc/self/fd, measured with TCP_INFO, their
 * far end's owner asked of the kernel (loopback), and ended with
 * shutdown(), which libzmq sees as that peer going away (relay_guard.c). */
#ifndef NCCLTOP_RELAY_CONNS_H
#define NCCLTOP_RELAY_CONNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef struct {
  int fd;
  uint64_t ino; /* the socket's inode: what tells it apart once fd is reused */
  struct sockaddr_storage local, peer;
} nt_conn;

/* The connected TCP sockets of this process whose local port is port (the
 * ones a listener on it accepted), at most cap of them. Their count, or -1
 * when /proc/self/fd cannot be listed. */
int nt_conns_list(unsigned port, nt_conn *out, int cap);
/* The bytes the kernel received on c from its peer so far. */
bool nt_conn_bytes_in(const nt_conn *c, uint64_t *bytes);
/* The uid owning the far end of c when that end is on this host
 * (loopback), asked of the kernel (sock_diag); -1 when there is none here
 * (gone, or another host's). */
long nt_conn_peer_uid(const nt_conn *c);
/* Ends c (shutdown both ways) if its descriptor still holds the same
 * socket; false if it did not any more. */
bool nt_conn_cut(const nt_conn *c);
/* "127.0.0.1:45678", "[::1]:45678". */
void nt_conn_peer_name(const nt_conn *c, char *buf, size_t cap);
/* The port of a bound tcp:// endpoint ("tcp://127.0.0.1:7460"), 0 if none. */
unsigned nt_endpoint_port(const char *ep);

#endif

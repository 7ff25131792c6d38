/* See relay_conns.h. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
/* After the glibc headers: the kernel's tcp_info has tcpi_bytes_received
 * (Linux 4.1), glibc's does not. */
#include <linux/tcp.h>

#include "relay_conns.h"

static unsigned port_of(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)ss)->sin_port);
  if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  return 0;
}

static int sock_int(int fd, int level, int opt) {
  int v = -1;
  socklen_t len = sizeof v;
  return getsockopt(fd, level, opt, &v, &len) == 0 ? v : -1;
}

int nt_conns_list(unsigned port, nt_conn *out, int cap) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while (n < cap && (de = readdir(d))) {
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end || end == de->d_name || fd < 0 || fd == dirfd(d)) continue;
    struct stat st;
    nt_conn c = {.fd = (int)fd};
    socklen_t ll = sizeof c.local, pl = sizeof c.peer;
    if (fstat(c.fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        getsockname(c.fd, (struct sockaddr *)&c.local, &ll) != 0 ||
        (c.local.ss_family != AF_INET && c.local.ss_family != AF_INET6) ||
        port_of(&c.local) != port || sock_int(c.fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
        sock_int(c.fd, SOL_SOCKET, SO_ACCEPTCONN) != 0 ||
        getpeername(c.fd, (struct sockaddr *)&c.peer, &pl) != 0)
      continue;
    c.ino = (uint64_t)st.st_ino;
    out[n++] = c;
  }
  closedir(d);
  return n;
}

static bool same_socket(int fd, uint64_t ino) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && (uint64_t)st.st_ino == ino;
}

bool nt_conn_bytes_in(const nt_conn *c, uint64_t *bytes) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  memset(&ti, 0, sizeof ti);
  if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received ||
      !same_socket(c->fd, c->ino))
    return false;
  *bytes = ti.tcpi_bytes_received;
  return true;
}

bool nt_conn_cut(const nt_conn *c) {
  /* Our own descriptor for the socket: whatever libzmq does with its own
   * meanwhile (close it, the number reused), the check and the shutdown
   * are about one and the same socket. */
  int d = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return false;
  bool ok = same_socket(d, c->ino) && shutdown(d, SHUT_RDWR) == 0;
  close(d);
  return ok;
}

void nt_conn_peer_name(const nt_conn *c, char *buf, size_t cap) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (c->peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)&c->peer)->sin_addr, host, sizeof host);
    snprintf(buf, cap, "%s:%u", host, port_of(&c->peer));
  } else {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&c->peer)->sin6_addr, host, sizeof host);
    snprintf(buf, cap, "[%s]:%u", host, port_of(&c->peer));
  }
}

/* The far end of c, the socket whose source is c's peer and destination
 * c's own address, looked up exactly by the kernel (sock_diag, as `ss`
 * does; no privilege needed); family AF_INET, or AF_INET6 for a client
 * whose IPv6 socket reached an IPv4 address (::ffff:a.b.c.d). Its owner's
 * uid, or -1 when there is no such socket here. */
static long diag_uid(const nt_conn *c, int family) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req;
  memset(&req, 0, sizeof req);
  req.nlh.nlmsg_len = sizeof req;
  req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.nlh.nlmsg_flags = NLM_F_REQUEST;
  req.r.sdiag_family = (uint8_t)family;
  req.r.sdiag_protocol = IPPROTO_TCP;
  req.r.idiag_states = ~0u;
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  const struct sockaddr_storage *ends[2] = {&c->peer, &c->local};
  for (int e = 0; e < 2; e++) {
    uint32_t w[4] = {0, 0, 0, 0};
    uint16_t port;
    if (ends[e]->ss_family == AF_INET) {
      const struct sockaddr_in *a = (const struct sockaddr_in *)ends[e];
      port = a->sin_port;
      if (family == AF_INET) {
        w[0] = a->sin_addr.s_addr;
      } else {
        w[2] = htonl(0xffff);
        w[3] = a->sin_addr.s_addr;
      }
    } else {
      const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ends[e];
      port = a->sin6_port;
      if (family == AF_INET6) {
        memcpy(w, &a->sin6_addr, sizeof w);
      } else if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
        memcpy(&w[0], a->sin6_addr.s6_addr + 12, 4);
      } else {
        return -1;
      }
    }
    if (e == 0) {
      req.r.id.idiag_sport = port;
      memcpy(req.r.id.idiag_src, w, sizeof w);
    } else {
      req.r.id.idiag_dport = port;
      memcpy(req.r.id.idiag_dst, w, sizeof w);
    }
  }
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return -1;
  struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
  long uid = -1;
  union {
    struct nlmsghdr h;
    char buf[1024];
  } ans;
  struct timeval tv = {1, 0}; /* the kernel answers at once; never wait longer */
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
      sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&nl, sizeof nl) == (ssize_t)sizeof req) {
    ssize_t n = recv(fd, &ans, sizeof ans, 0);
    if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) && NLMSG_OK(&ans.h, (size_t)n) &&
        ans.h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      const struct inet_diag_msg *m = NLMSG_DATA(&ans.h);
      uid = (long)m->idiag_uid;
    }
  }
  close(fd);
  return uid;
}

long nt_conn_peer_uid(const nt_conn *c) {
  long uid = diag_uid(c, AF_INET);
  return uid >= 0 ? uid : diag_uid(c, AF_INET6);
}

unsigned nt_endpoint_port(const char *ep) {
  const char *colon = strrchr(ep, ':');
  if (!colon) return 0;
  char *end;
  unsigned long p = strtoul(colon + 1, &end, 10);
  return *end || end == colon + 1 || p == 0 || p > 65535 ? 0 : (unsigned)p;
}

/* The local endpoint: the publisher's ipc socket file in the endpoint
 * directory (publisher thread only).
 *
 * The directory is opened and checked once, then used only through its
 * descriptor (see nt_endpoint_dir_open), so nobody who can write its parent
 * can slip a directory of theirs in between the check and the bind. Every
 * couple of seconds we look whether the path still names the directory we
 * hold and our socket file is still in it; when the directory was removed or
 * replaced (a cleanup of /tmp, a careless rm -rf) we open it again, with the
 * same checks, and bind there again, so monitoring resumes by itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "internal.h"

/* Not on the event path: two stat calls every two seconds, in the
 * publisher thread. */
#define CHECK_PERIOD_NS 2000000000ull

/* Says once what keeps us from publishing again; quiet until it works. */
#define NOTE_TROUBLE(l, ...)                                                                       \
  do {                                                                                             \
    if (!(l)->trouble_noted) nt_log(NT_NCCL_LOG_WARN, __VA_ARGS__);                                \
    (l)->trouble_noted = true;                                                                     \
  } while (0)

/* Binds sock through the directory descriptor; remembers what ZeroMQ bound
 * (the exact string zmq_unbind wants). */
static int bind_in(struct nt_local *l, void *sock) {
  char addr[sizeof l->bound];
  size_t len = sizeof l->bound;
  if (nt_endpoint_fd_address(l->dirfd, l->name, addr, sizeof addr) != 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (zmq_bind(sock, addr) != 0) return -1;
  if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, l->bound, &len) != 0)
    snprintf(l->bound, sizeof l->bound, "%s", addr);
  return 0;
}

bool nt_local_bind(struct nt_local *l, void *sock, const char *dir, bool quiet) {
  char err[512];
  memset(l, 0, sizeof *l);
  l->dirfd = -1;
  uint32_t pid = (uint32_t)nt_g.pid;
  if (snprintf(l->dir, sizeof l->dir, "%s", dir) >= (int)sizeof l->dir ||
      nt_endpoint_name(pid, nt_endpoint_pidns(), l->name, sizeof l->name) != 0 ||
      snprintf(l->display, sizeof l->display, "ipc://%s/%s", dir, l->name) >=
          (int)sizeof l->display) {
    nt_log(NT_NCCL_LOG_WARN, "endpoint path too long in %s; not publishing locally", dir);
    return false;
  }
  if ((l->dirfd = nt_endpoint_dir_open(dir, true, err, sizeof err)) < 0) {
    nt_log(NT_NCCL_LOG_WARN, "%s; not publishing locally", err);
    return false;
  }
  if (bind_in(l, sock) != 0) {
    nt_log(NT_NCCL_LOG_WARN, "cannot bind %s: %s", l->display, zmq_strerror(errno));
    nt_local_close(l);
    return false;
  }
  l->watching = true;
  if (!quiet) nt_log(NT_NCCL_LOG_INFO, "publishing on %s", l->display);
  return true;
}

/* Opens the directory again (creating it if it is gone) and moves the
 * binding there. */
static void rebind(struct nt_local *l, void *sock, const char *why) {
  char err[512];
  int fd = nt_endpoint_dir_open(l->dir, true, err, sizeof err);
  if (fd < 0) {
    NOTE_TROUBLE(l, "%s; not publishing locally until it is fixed", err);
    return;
  }
  /* ZeroMQ's listener may remove its socket file by path when it closes
   * (4.3 does not, other versions do), in its own thread, some time after
   * zmq_unbind returns. Its path goes through the old descriptor: we remove
   * our old file ourselves and close that descriptor first (the new one,
   * opened while the old was still open, has another number), so a late
   * removal finds nothing, and cannot take the new file when the directory
   * is the same one. */
  if (l->dirfd >= 0) {
    (void)unlinkat(l->dirfd, l->name, 0); /* already gone with its directory: fine */
    close(l->dirfd);
  }
  l->dirfd = fd;
  if (l->bound[0]) (void)zmq_unbind(sock, l->bound); /* ENOENT: it was never bound */
  l->bound[0] = '\0';
  if (bind_in(l, sock) != 0) {
    NOTE_TROUBLE(l, "cannot bind %s again: %s", l->display, zmq_strerror(errno));
    return;
  }
  l->trouble_noted = false;
  nt_log(NT_NCCL_LOG_INFO, "%s; publishing again on %s", why, l->display);
}

void nt_local_check(struct nt_local *l, void *sock, uint64_t now_ns) {
  if (!l->watching || now_ns < l->next_check_ns) return;
  bool first = l->next_check_ns == 0; /* just bound: the first look is a period away */
  l->next_check_ns = now_ns + CHECK_PERIOD_NS;
  if (first) return;
  struct stat st;
  if (l->dirfd < 0 || !nt_endpoint_dir_same(l->dir, l->dirfd))
    rebind(l, sock, "endpoint directory removed or replaced");
  else if (!l->bound[0] || fstatat(l->dirfd, l->name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
           !S_ISSOCK(st.st_mode))
    rebind(l, sock, "socket file removed");
}

/* After the ZeroMQ context is terminated, so that a listener that removes
 * its own file (through our descriptor) has done so; ZeroMQ 4.3's does not,
 * hence the unlinkat. */
void nt_local_close(struct nt_local *l) {
  if (l->dirfd >= 0) {
    (void)unlinkat(l->dirfd, l->name, 0);
    close(l->dirfd);
  }
  l->dirfd = -1;
  l->watching = false;
}

/* See discover.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../proto/nccltop_proto.h"
#include "discover.h"

bool nt_discover_alive(uint32_t pid, uint64_t pidns, uint64_t our_pidns) {
  if (pidns && pidns != our_pidns) return true;
  return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

int nt_discover_list(int dirfd, unsigned name_max,
                     void (*found)(void *ctx, const char *name, uint32_t pid, uint64_t pidns),
                     void *ctx) {
  /* openat, not dup: a dup would share the read position with dirfd. */
  int lfd = dirfd >= 0 ? openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d) {
    int e = errno;
    if (lfd >= 0) close(lfd);
    errno = e;
    return -1;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    uint64_t pidns = 0;
    uint32_t pid = nt_endpoint_parse_name(de->d_name, &pidns);
    if (pid && strlen(de->d_name) < name_max) found(ctx, de->d_name, pid, pidns);
  }
  closedir(d);
  return 0;
}

/* Stale files of readers in our namespace that died (SIGKILL leaves the
 * file): the publishers would skip them anyway, this keeps the directory
 * from filling up. Only our own user's files are in it (it is 0700). */
static void sweep_stale(int dirfd, uint64_t our_pidns) {
  int lfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d) {
    if (lfd >= 0) close(lfd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    uint64_t pidns = 0;
    uint32_t pid = nt_endpoint_parse_viewer_name(de->d_name, &pidns);
    if (pid && (pidns == our_pidns || !pidns) && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      (void)unlinkat(dirfd, de->d_name, 0);
  }
  closedir(d);
}

int nt_inbox_bind(nt_inbox *in, void *sock, int dirfd) {
  static atomic_uint serial;
  uint64_t pidns = nt_endpoint_pidns();
  char addr[sizeof in->addr];
  size_t len = sizeof in->addr;
  memset(in, 0, sizeof *in);
  sweep_stale(dirfd, pidns);
  if (nt_endpoint_viewer_name((uint32_t)getpid(), atomic_fetch_add(&serial, 1), pidns, in->name,
                              sizeof in->name) != 0 ||
      nt_endpoint_fd_address(dirfd, in->name, addr, sizeof addr) != 0) {
    in->name[0] = '\0';
    errno = ENAMETOOLONG;
    return -1;
  }
  /* A file of that name is a dead reader's whose pid we now have. */
  (void)unlinkat(dirfd, in->name, 0);
  if (zmq_bind(sock, addr) != 0) {
    in->name[0] = '\0';
    return -1;
  }
  if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, in->addr, &len) != 0)
    snprintf(in->addr, sizeof in->addr, "%s", addr);
  return 0;
}

void nt_inbox_unbind(nt_inbox *in, void *sock, int dirfd) {
  if (!in->name[0]) return;
  if (sock && in->addr[0]) (void)zmq_unbind(sock, in->addr);
  if (dirfd >= 0) (void)unlinkat(dirfd, in->name, 0);
  in->name[0] = in->addr[0] = '\0';
}

/* ZeroMQ 4.3 writes an ipc peer as "<address>:<uid>:<gid>:<pid>". */
bool nt_inbox_sender(zmq_msg_t *msg, uint32_t *pid) {
  const char *pa = zmq_msg_gets(msg, "Peer-Address");
  if (!pa) return false;
  const char *colon[3] = {NULL, NULL, NULL};
  for (const char *p = pa; *p; p++)
    if (*p == ':') {
      colon[0] = colon[1];
      colon[1] = colon[2];
      colon[2] = p;
    }
  if (!colon[0]) return false;
  char *end;
  errno = 0;
  unsigned long uid = strtoul(colon[0] + 1, &end, 10);
  if (errno || end != colon[1] || uid != (unsigned long)geteuid()) return false;
  unsigned long p = strtoul(colon[2] + 1, &end, 10);
  if (errno || *end || end == colon[2] + 1 || p > NT_PID_MAX) return false;
  *pid = (uint32_t)p;
  return true;
}

bool nt_pid_in_our_ns(uint32_t pid, uint64_t our_pidns) {
  char path[64];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%u/ns/pid", (unsigned)pid);
  return pid && our_pidns && stat(path, &st) == 0 && (uint64_t)st.st_ino == our_pidns;
}

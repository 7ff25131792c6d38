/* See discover.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "../proto/nccltop_proto.h"
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

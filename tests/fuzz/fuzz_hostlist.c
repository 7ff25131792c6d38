/* libFuzzer target: Slurm hostlist expansion (monitor/feeds/hostlist.c), as a list
 * and as a host file, then de-duplication and the compact form. Whatever
 * the input, every name is 1..253 bytes of [A-Za-z0-9._-], the count stays
 * under the cap, and an error leaves the list as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../monitor/feeds/hostlist.h"

static void check_names(const nt_hostlist *l) {
  if (nt_hostlist_count(l) > NT_HOSTLIST_MAX_HOSTS) abort();
  for (uint32_t i = 0; i < nt_hostlist_count(l); i++) {
    const char *h = nt_hostlist_host(l, i);
    size_t n = strlen(h);
    if (n == 0 || n > NT_HOSTLIST_MAX_NAME ||
        strspn(h, "abcdefghijklmnopqrstuvwxyz"
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nt_hostlist *l = nt_hostlist_new();
  if (!l) return 0;
  char err[256], out[512];
  /* A name first, so an error can be seen to leave it. */
  if (nt_hostlist_add(l, "seed", 4, err, sizeof err) != 0) abort();
  int rc;
  if (size > 0 && data[0] == '#') { /* as a host file (its first line a comment) */
    int fd = memfd_create("hosts", MFD_CLOEXEC);
    if (fd < 0) {
      nt_hostlist_free(l);
      return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    rc = write(fd, data, size) == (ssize_t)size ? nt_hostlist_add_file(l, path, err, sizeof err)
                                                : -2;
    close(fd);
  } else {
    rc = nt_hostlist_add(l, (const char *)data, size, err, sizeof err);
  }
  if (rc == -1 && (nt_hostlist_count(l) != 1 || strcmp(nt_hostlist_host(l, 0), "seed") != 0))
    abort();
  if (rc == -1 && !err[0]) abort();
  check_names(l);
  nt_hostlist_ranged(l, out, sizeof out);
  if (strlen(out) >= sizeof out) abort();
  nt_hostlist_uniq(l);
  check_names(l);
  nt_hostlist_free(l);
  return 0;
}

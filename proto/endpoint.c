/* Where publishers bind and viewers look: one directory per user, 0700,
 * holding <pid>.sock files. The directory is refused unless it is a real
 * directory owned by us that nobody else can enter: anyone who can write it
 * could impersonate a job, anyone who can read it could watch one. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccltop_proto.h"

#define IPC_PATH_MAX 107 /* sun_path minus the NUL */

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int nt_endpoint_dir(char *buf, size_t cap) {
  if (!buf || !cap) return -1;
  const char *d = getenv("NCCLTOP_DIR");
  int n = d && *d ? snprintf(buf, cap, "%s", d)
                  : snprintf(buf, cap, "/tmp/nccltop-%u", (unsigned)geteuid());
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int nt_endpoint_dir_check(const char *dir, char *err, size_t errlen) {
  if (!dir || !*dir) return fail(err, errlen, "endpoint directory: empty path");
  /* lstat("link/") follows the link: drop trailing slashes first. */
  char path[4096];
  size_t n = strlen(dir);
  if (n >= sizeof path) return fail(err, errlen, "endpoint directory path is too long");
  memcpy(path, dir, n + 1);
  while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
  struct stat st;
  if (lstat(path, &st) != 0)
    return fail(err, errlen, "endpoint directory %s: %s", dir, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return fail(err, errlen, "endpoint directory %s is a symlink; refusing it", dir);
  if (!S_ISDIR(st.st_mode))
    return fail(err, errlen, "endpoint directory %s is not a directory; refusing it", dir);
  if (st.st_uid != geteuid())
    return fail(err, errlen, "endpoint directory %s is owned by uid %u, not us; refusing it", dir,
                (unsigned)st.st_uid);
  if (st.st_mode & 077)
    return fail(err, errlen,
                "endpoint directory %s is accessible to other users (mode %03o); refusing it "
                "(chmod 700 it)",
                dir, (unsigned)(st.st_mode & 0777));
  return 0;
}

int nt_endpoint_dir_prepare(const char *dir, char *err, size_t errlen) {
  if (!dir || !*dir) return fail(err, errlen, "endpoint directory: empty path");
  /* An existing directory is taken as it is (never chmod-ed): the checks
   * decide whether it is safe. */
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return fail(err, errlen, "cannot create endpoint directory %s: %s", dir, strerror(errno));
  return nt_endpoint_dir_check(dir, err, errlen);
}

int nt_endpoint_for_pid(const char *dir, uint32_t pid, char *buf, size_t cap) {
  if (!dir || !buf || !cap) return -1;
  int n = snprintf(buf, cap, "ipc://%s/%u.sock", dir, (unsigned)pid);
  if (n < 0 || (size_t)n >= cap || (size_t)n - strlen("ipc://") > IPC_PATH_MAX) return -1;
  return 0;
}

/* Digits without a leading zero, at most INT32_MAX (pid_t is an int: a
 * larger value would turn into a negative pid, which kill() takes as a
 * process group), then exactly ".sock". */
uint32_t nt_endpoint_parse_name(const char *name) {
  uint64_t v = 0;
  const char *p = name;
  if (!p || *p < '1' || *p > '9') return 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > 0x7fffffff) return 0;
  }
  return strcmp(p, ".sock") == 0 ? (uint32_t)v : 0;
}

/* Where viewers bind and publishers look: one directory per user, 0700,
 * holding the viewers' viewer-<pid>-<serial>-<pidns>.sock files (and the
 * <pid>.<pidns>.sock files of publishers older than 0.2, which bound). The directory is refused
 * unless it is a real directory owned by us that nobody else can enter: anyone who can write it
 * could impersonate a job, anyone who can read it could watch one.
 *
 * The directory is checked once through a descriptor and then used only
 * through that descriptor (bind and connect go through the magic link
 * /proc/self/fd/<fd>/<name>, listing through fdopendir, removal through
 * unlinkat). Checking a path and then binding by that path would be a race:
 * whoever can write the parent could swap the directory for a symlink to one
 * of theirs in between. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccltop_proto.h"

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

/* O_NOFOLLOW and lstat act on the last component only, and "link/" follows
 * the link: drop trailing slashes first. -1 if it does not fit. */
static int strip_slashes(const char *dir, char *path, size_t cap) {
  size_t n = strlen(dir);
  if (n >= cap) return -1;
  memcpy(path, dir, n + 1);
  while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
  return 0;
}

/* The verdict on what the descriptor (or, when the open failed, the path)
 * is; the messages are the ones users see in NCCL's log and the viewer. */
static int check_stat(const char *dir, const struct stat *st, char *err, size_t errlen) {
  if (S_ISLNK(st->st_mode))
    return fail(err, errlen, "endpoint directory %s is a symlink; refusing it", dir);
  if (!S_ISDIR(st->st_mode))
    return fail(err, errlen, "endpoint directory %s is not a directory; refusing it", dir);
  if (st->st_uid != geteuid())
    return fail(err, errlen, "endpoint directory %s is owned by uid %u, not us; refusing it", dir,
                (unsigned)st->st_uid);
  if (st->st_mode & 077)
    return fail(err, errlen,
                "endpoint directory %s is accessible to other users (mode %03o); refusing it "
                "(chmod 700 it)",
                dir, (unsigned)(st->st_mode & 0777));
  return 0;
}

int nt_endpoint_dir_open(const char *dir, bool create, char *err, size_t errlen) {
  char path[4096];
  if (!dir || !*dir) return fail(err, errlen, "endpoint directory: empty path");
  if (strip_slashes(dir, path, sizeof path) != 0)
    return fail(err, errlen, "endpoint directory path is too long");
  /* An existing directory is taken as it is (never chmod-ed): the checks
   * decide whether it is safe. */
  if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
    return fail(err, errlen, "cannot create endpoint directory %s: %s", dir, strerror(errno));
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    int e = errno;
    /* A symlink (ELOOP) or a file (ENOTDIR): say which, as lstat sees it. */
    if ((e == ELOOP || e == ENOTDIR) && lstat(path, &st) == 0 &&
        check_stat(dir, &st, err, errlen) != 0)
      return -1;
    return fail(err, errlen, "endpoint directory %s: %s", dir, strerror(e));
  }
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fail(err, errlen, "endpoint directory %s: %s", dir, strerror(e));
  }
  if (check_stat(dir, &st, err, errlen) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool nt_endpoint_dir_same(const char *dir, int fd) {
  char path[4096];
  struct stat at_path, held;
  if (!dir || fd < 0 || strip_slashes(dir, path, sizeof path) != 0) return false;
  return lstat(path, &at_path) == 0 && fstat(fd, &held) == 0 && at_path.st_dev == held.st_dev &&
         at_path.st_ino == held.st_ino;
}

int nt_endpoint_fd_address(int fd, const char *name, char *buf, size_t cap) {
  if (fd < 0 || !name || !buf || !cap) return -1;
  int n = snprintf(buf, cap, "ipc:///proc/self/fd/%d/%s", fd, name);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

uint64_t nt_endpoint_pidns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int nt_endpoint_name(uint32_t pid, uint64_t pidns, char *buf, size_t cap) {
  if (!buf || !cap) return -1;
  int n = pidns ? snprintf(buf, cap, "%u.%llu.sock", (unsigned)pid, (unsigned long long)pidns)
                : snprintf(buf, cap, "%u.sock", (unsigned)pid);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int nt_endpoint_for_pid(const char *dir, uint32_t pid, char *buf, size_t cap) {
  char name[64];
  if (!dir || !buf || !cap || nt_endpoint_name(pid, nt_endpoint_pidns(), name, sizeof name) != 0)
    return -1;
  int n = snprintf(buf, cap, "ipc://%s/%s", dir, name);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Digits without a leading zero, at most max; *p is left after them. */
static bool parse_number(const char **p, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  const char *s = *p;
  if (*s < '1' || *s > '9') return false;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (max - (uint64_t)(*s - '0')) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *p = s;
  *out = v;
  return true;
}

/* The pid is at most NT_PID_MAX (no Linux pid is larger; anything above
 * INT32_MAX would also turn into a negative pid, which kill() takes as a
 * process group). */
uint32_t nt_endpoint_parse_name(const char *name, uint64_t *pidns) {
  uint64_t pid = 0, ns = 0;
  const char *p = name;
  if (pidns) *pidns = 0;
  if (!p || !parse_number(&p, NT_PID_MAX, &pid)) return 0;
  if (*p == '.' && p[1] >= '0' && p[1] <= '9') {
    p++;
    if (!parse_number(&p, UINT64_MAX, &ns)) return 0;
  }
  if (strcmp(p, ".sock") != 0) return 0;
  if (pidns) *pidns = ns;
  return (uint32_t)pid;
}

/* "viewer-<pid>-<serial>-<pidns>.sock": whatever binds here to receive
 * (a viewer, a relay, a recorder, an exporter); serial tells apart several
 * in one process. */
int nt_endpoint_viewer_name(uint32_t pid, uint32_t serial, uint64_t pidns, char *buf, size_t cap) {
  if (!buf || !cap || !pid || pid > NT_PID_MAX) return -1;
  int n = snprintf(buf, cap, "viewer-%u-%u-%llu.sock", (unsigned)pid, (unsigned)serial,
                   (unsigned long long)pidns);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* A number that may also be exactly "0". */
static bool parse_number0(const char **p, uint64_t max, uint64_t *out) {
  if (**p == '0' && ((*p)[1] < '0' || (*p)[1] > '9')) {
    (*p)++;
    *out = 0;
    return true;
  }
  return parse_number(p, max, out);
}

uint32_t nt_endpoint_parse_viewer_name(const char *name, uint64_t *pidns) {
  static const char prefix[] = "viewer-";
  uint64_t pid = 0, serial = 0, ns = 0;
  if (pidns) *pidns = 0;
  if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
  const char *p = name + sizeof prefix - 1;
  if (!parse_number(&p, NT_PID_MAX, &pid) || *p++ != '-' ||
      !parse_number0(&p, UINT32_MAX, &serial) || *p++ != '-' ||
      !parse_number0(&p, UINT64_MAX, &ns) || strcmp(p, ".sock") != 0)
    return 0;
  if (pidns) *pidns = ns;
  return (uint32_t)pid;
}

/* Output files a user names (outfile.h): never an input, never an existing
 * file truncated or written in place; replaced only with --force, by a
 * rename. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

int nt_file_id_of(const char *path, nt_file_id *id) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  *id = (nt_file_id){.dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino, .name = path};
  return 0;
}

static bool special(mode_t mode) {
  return S_ISFIFO(mode) || S_ISCHR(mode);
}

int nt_out_check(const char *path, unsigned flags, const nt_file_id *inputs, int ninputs, char *err,
                 size_t errlen) {
  struct stat l, st;
  if (lstat(path, &l) != 0) {
    if (errno == ENOENT) return 0; /* a new name (a missing directory fails when it is created) */
    return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
  }
  bool resolves = stat(path, &st) == 0; /* false: a dangling symlink */
  for (int i = 0; resolves && i < ninputs; i++) {
    if ((uint64_t)st.st_dev != inputs[i].dev || (uint64_t)st.st_ino != inputs[i].ino) continue;
    if (!strcmp(path, inputs[i].name))
      snprintf(err, errlen, "%s is the file this command reads; write elsewhere", path);
    else
      snprintf(err, errlen, "%s is the same file as %s, which this command reads; write elsewhere",
               path, inputs[i].name);
    return -1;
  }
  if (resolves && special(st.st_mode) && (flags & NT_OUT_SPECIAL)) return 0;
  if (resolves && !S_ISREG(st.st_mode))
    return snprintf(err, errlen, "%s exists and is not a regular file", path), -1;
  if (!(flags & NT_OUT_REPLACE))
    return snprintf(err, errlen, "%s already exists; keeping it (--force replaces it)", path), -1;
  return 0;
}

/* f->tmp: a new file beside f->path (".NAME.XXXXXX" in its directory). */
static int open_beside(nt_outfile *f, char *err, size_t errlen) {
  char d[PATH_MAX], b[PATH_MAX];
  snprintf(d, sizeof d, "%s", f->path);
  snprintf(b, sizeof b, "%s", f->path);
  if (snprintf(f->tmp, sizeof f->tmp, "%s/.%s.XXXXXX", dirname(d), basename(b)) >=
      (int)sizeof f->tmp)
    return snprintf(err, errlen, "%s: name too long", f->path), -1;
  f->fd = mkostemp(f->tmp, O_CLOEXEC); /* mode 0600 */
  if (f->fd < 0) {
    snprintf(err, errlen, "cannot create %s: %s", f->tmp, strerror(errno));
    f->tmp[0] = '\0';
    return -1;
  }
  return 0;
}

int nt_out_open(nt_outfile *f, const char *path, unsigned flags, const nt_file_id *inputs,
                int ninputs, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  if (nt_out_check(path, flags, inputs, ninputs, err, errlen) != 0) return -1;
  if (snprintf(f->path, sizeof f->path, "%s", path) >= (int)sizeof f->path)
    return snprintf(err, errlen, "%.200s...: name too long", path), -1;
  struct stat st;
  if (lstat(path, &st) != 0) { /* new: O_EXCL, so nothing that appeared meanwhile is touched */
    f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
    if (f->fd < 0) return snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno)), -1;
    f->created = true;
    return 0;
  }
  if (stat(path, &st) == 0 && special(st.st_mode)) { /* allowed by nt_out_check */
    f->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    /* Checked again on what was opened: it must not have become a regular
     * file (it would be written in place, without O_TRUNC). */
    if (f->fd >= 0 && (fstat(f->fd, &st) != 0 || !special(st.st_mode))) {
      close(f->fd);
      f->fd = -1;
      errno = EEXIST;
    }
    if (f->fd < 0) return snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno)), -1;
    return 0;
  }
  /* --force: replace the file a symlink leads to (the link stays), or a
   * dangling link itself. */
  char real[PATH_MAX];
  if (stat(path, &st) == 0 && realpath(path, real)) snprintf(f->path, sizeof f->path, "%s", real);
  return open_beside(f, err, errlen);
}

int nt_out_commit(nt_outfile *f, char *err, size_t errlen) {
  if (!f->tmp[0]) {
    f->created = false; /* it is the output now: kept */
    return 0;
  }
  if (rename(f->tmp, f->path) != 0)
    return snprintf(err, errlen, "cannot replace %s: %s", f->path, strerror(errno)), -1;
  f->tmp[0] = '\0';
  return 0;
}

void nt_out_discard(nt_outfile *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp[0])
    unlink(f->tmp);
  else if (f->created)
    unlink(f->path);
  f->tmp[0] = '\0';
  f->created = false;
}

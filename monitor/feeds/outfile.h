/* Files a user names for nccltop to write: recordings (`record FILE`,
 * --record FILE) and exports (`export --chrome-trace OUT`).
 *
 * The contract: an existing file is never opened for writing, truncated or
 * overwritten in place. A new name is created (O_EXCL, mode 0600: a
 * recording carries every rank's environment, a trace is made from one); an
 * existing file is replaced only when the user said --force, by a file
 * written beside it and renamed over it, so its old bytes are never half
 * overwritten (another name for the same file keeps them). An output that
 * is the same file as one of the command's inputs (compared by device and
 * inode after following links, so a symlink or a hard link is caught) is
 * refused even with --force. */
#ifndef NCCLTOP_OUTFILE_H
#define NCCLTOP_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which file an input is (fstat's or stat's device and inode), and the
 * name the command was given for it. */
typedef struct {
  uint64_t dev, ino;
  const char *name;
} nt_file_id;

/* The file at path (following links), named path; -1 when there is none. */
int nt_file_id_of(const char *path, nt_file_id *id);

enum {
  NT_OUT_REPLACE = 1, /* --force: an existing regular file is replaced */
  NT_OUT_SPECIAL = 2, /* an existing FIFO or character device (/dev/stdout,
                         /dev/null) is written as it is (exports; a recording
                         needs a regular file: it rewrites its chunk headers) */
};

/* Whether path may be written with these flags and these inputs: 0, or -1
 * with one line in err (a usage error: nothing was touched). */
int nt_out_check(const char *path, unsigned flags, const nt_file_id *inputs, int ninputs, char *err,
                 size_t errlen);

typedef struct {
  int fd;
  char path[PATH_MAX]; /* where the file ends up */
  char tmp[PATH_MAX];  /* the file being written, renamed to path by nt_out_commit; "" when
                          it is written at path directly */
  bool created;        /* path was created by nt_out_open (nt_out_discard removes it) */
} nt_outfile;

/* Opens path for writing as the contract above says (checking again: a
 * file that appeared since nt_out_check is not replaced without
 * NT_OUT_REPLACE). 0, or -1 with one line in err. */
int nt_out_open(nt_outfile *f, const char *path, unsigned flags, const nt_file_id *inputs,
                int ninputs, char *err, size_t errlen);
/* Puts the written file in place (a rename when it was written beside it);
 * the descriptor stays open. 0, or -1 with one line in err. */
int nt_out_commit(nt_outfile *f, char *err, size_t errlen);
/* Closes; before a commit, removes what nt_out_open created (the old file,
 * if any, is untouched). */
void nt_out_discard(nt_outfile *f);

#endif

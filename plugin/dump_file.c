/* Files NCCL writes that the plugin forwards as they are: the topology
 * (NCCL_TOPO_DUMP_FILE) and the channel graphs (NCCL_GRAPH_DUMP_FILE).
 *
 * NCCL writes both during communicator init (before ours on the dumping
 * rank; other processes may look before they exist, so the publisher looks
 * again every few seconds). Nothing here may block: the path may name a
 * FIFO or a device, so the file is opened non-blocking and only a regular
 * file is read, at most 1 MiB. It is read again only when it changed (a
 * half-written dump is replaced once NCCL has finished it; a file that stays
 * as it is, good or bad, costs one stat). A stalled network mount can still
 * block open or stat; finalize does not wait for that (nt_publisher_stop).
 * Runs on the publisher thread only. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define DUMP_MAX_BYTES (1u << 20)
#ifndef NT_TEST_TOPO_OPEN_BLOCKS
#define DUMP_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
#else /* tests/test_hostile_plugin.c's stuck publisher: an open that blocks */
#define DUMP_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY)
#endif

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads at most cap bytes; the count, or -1 on an error. */
static ssize_t read_bounded(int fd, char *buf, size_t cap) {
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    n += (size_t)r;
  }
  return (ssize_t)n;
}

void nt_dump_file_load(struct nt_dump_file *f) {
  const char *path = f->path;
  struct stat st;
  if (!path || !*path || stat(path, &st) != 0) return; /* not written yet */
  if (f->seen && same_file(&st, &f->st)) return;
  int fd = open(path, DUMP_OPEN_FLAGS);
  if (fd < 0) return;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  f->st = st;
  f->seen = true;
  bool regular = S_ISREG(st.st_mode);
  if (!regular || st.st_size > (off_t)DUMP_MAX_BYTES) {
    if (!f->refused_logged)
      nt_log(NT_NCCL_LOG_WARN, "%s %s is %s; %s not sent", f->var, path,
             regular ? "over 1 MiB" : "not a regular file", f->what);
    f->refused_logged = true;
    close(fd);
    return;
  }
  char *buf = malloc(DUMP_MAX_BYTES + 1);
  ssize_t n = buf ? read_bounded(fd, buf, DUMP_MAX_BYTES + 1) : -1;
  close(fd);
  if (n <= 0 || n > (ssize_t)DUMP_MAX_BYTES) { /* empty so far, or grew past the limit */
    free(buf);
    return;
  }
  free(f->buf);
  f->buf = buf;
  f->len = (size_t)n;
}

void nt_dump_file_free(struct nt_dump_file *f) {
  free(f->buf);
  f->buf = NULL;
  f->len = 0;
}

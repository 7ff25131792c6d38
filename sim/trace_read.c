/* Reading recordings: plain text, xz (liblzma) or zstd, told apart by their
 * first bytes, decompressed as a stream and cut into lines, every limit of
 * trace.h enforced as the bytes come (a small file that decompresses to
 * gigabytes stops at the limit). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "trace_model.h"

#define CHUNK (64u << 10)

typedef struct {
  const char *path;
  tr_line_fn fn;
  void *arg;
  char line[NT_TRACE_MAX_LINE + 1];
  size_t len;
  uint32_t lineno;
  uint64_t bytes;
  char *err;
  size_t errlen;
} reader;

/* Text as it comes: whole lines go to the callback. 0, or the callback's
 * value, or -1 with err set. */
static int feed(reader *r, const char *p, size_t n) {
  r->bytes += n;
  if (r->bytes > NT_TRACE_MAX_FILE_BYTES) {
    snprintf(r->err, r->errlen, "%s: more than %u MiB of text (the limit of a recording)", r->path,
             NT_TRACE_MAX_FILE_BYTES >> 20);
    return -1;
  }
  while (n > 0) {
    const char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) : n;
    if (r->len + take > NT_TRACE_MAX_LINE) {
      snprintf(r->err, r->errlen, "%s:%u: a line longer than %d bytes", r->path, r->lineno + 1,
               NT_TRACE_MAX_LINE);
      return -1;
    }
    if (memchr(p, '\0', take)) {
      snprintf(r->err, r->errlen, "%s:%u: a NUL byte: not a recording", r->path, r->lineno + 1);
      return -1;
    }
    memcpy(r->line + r->len, p, take);
    r->len += take;
    if (!nl) return 0;
    p += take + 1;
    n -= take + 1;
    if (++r->lineno > NT_TRACE_MAX_FILE_LINES) {
      snprintf(r->err, r->errlen, "%s: more than %d lines (the limit of a recording)", r->path,
               NT_TRACE_MAX_FILE_LINES);
      return -1;
    }
    r->line[r->len] = '\0';
    size_t len = r->len;
    r->len = 0;
    int rc = r->fn(r->arg, r->line, len, r->lineno);
    if (rc) return rc;
  }
  return 0;
}

/* The end of the text: a last line without its newline was cut short. */
static int finish(reader *r) {
  if (r->len == 0) return 0;
  snprintf(r->err, r->errlen, "%s:%u: truncated: the last line has no end", r->path, r->lineno + 1);
  return -1;
}

static ssize_t read_some(int fd, char *buf, size_t cap) {
  for (;;) {
    ssize_t n = read(fd, buf, cap);
    if (n >= 0 || errno != EINTR) return n;
  }
}

static int io_error(reader *r) {
  snprintf(r->err, r->errlen, "%s: cannot read: %s", r->path, strerror(errno));
  return -1;
}

static int read_plain(reader *r, int fd, char *in, size_t have) {
  for (;;) {
    if (have) {
      int rc = feed(r, in, have);
      if (rc) return rc;
    }
    ssize_t n = read_some(fd, in, CHUNK);
    if (n < 0) return io_error(r);
    if (n == 0) return finish(r);
    have = (size_t)n;
  }
}

static int read_xz(reader *r, int fd, char *in, size_t have) {
  lzma_stream s = LZMA_STREAM_INIT;
  /* xz -9 needs 65 MiB to decode; a stream that asks for more is refused. */
  if (lzma_stream_decoder(&s, 128u << 20, LZMA_CONCATENATED) != LZMA_OK) {
    snprintf(r->err, r->errlen, "%s: cannot start the xz decoder", r->path);
    return -1;
  }
  char *out = malloc(CHUNK);
  int rc = out ? 0 : -1;
  bool eof = false;
  if (!out) snprintf(r->err, r->errlen, "%s: out of memory", r->path);
  s.next_in = (const uint8_t *)in;
  s.avail_in = have;
  while (rc == 0) {
    if (s.avail_in == 0 && !eof) {
      ssize_t n = read_some(fd, in, CHUNK);
      if (n < 0) {
        rc = io_error(r);
        break;
      }
      eof = n == 0;
      s.next_in = (const uint8_t *)in;
      s.avail_in = (size_t)n;
    }
    s.next_out = (uint8_t *)out;
    s.avail_out = CHUNK;
    lzma_ret ret = lzma_code(&s, eof ? LZMA_FINISH : LZMA_RUN);
    rc = feed(r, out, CHUNK - s.avail_out);
    if (rc) break;
    if (ret == LZMA_STREAM_END) {
      rc = finish(r);
      break;
    }
    if (ret == LZMA_OK) continue;
    const char *why = ret == LZMA_MEMLIMIT_ERROR ? "needs more than 128 MiB to decompress"
                      : ret == LZMA_BUF_ERROR    ? "truncated xz data"
                                                 : "corrupt xz data";
    snprintf(r->err, r->errlen, "%s:%u: %s", r->path, r->lineno + 1, why);
    rc = -1;
  }
  free(out);
  lzma_end(&s);
  return rc;
}

static int read_zstd(reader *r, int fd, char *in, size_t have) {
  ZSTD_DCtx *z = ZSTD_createDCtx();
  char *out = malloc(CHUNK);
  /* Windows past 128 MiB are refused (zstd's default limit is the same). */
  if (!z || !out || ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, 27))) {
    snprintf(r->err, r->errlen, "%s: cannot start the zstd decoder", r->path);
    ZSTD_freeDCtx(z);
    free(out);
    return -1;
  }
  int rc = 0;
  bool eof = false;
  size_t last = 0; /* 0: the last frame read is complete */
  ZSTD_inBuffer ib = {in, have, 0};
  for (;;) {
    if (ib.pos == ib.size && !eof) {
      ssize_t n = read_some(fd, in, CHUNK);
      if (n < 0) {
        rc = io_error(r);
        break;
      }
      eof = n == 0;
      ib = (ZSTD_inBuffer){in, (size_t)n, 0};
    }
    ZSTD_outBuffer ob = {out, CHUNK, 0};
    size_t in_before = ib.pos;
    size_t ret = ZSTD_decompressStream(z, &ob, &ib);
    if (ZSTD_isError(ret)) {
      snprintf(r->err, r->errlen, "%s:%u: corrupt zstd data (%s)", r->path, r->lineno + 1,
               ZSTD_getErrorName(ret));
      rc = -1;
      break;
    }
    /* A call that did nothing only hints at the next frame's header. */
    if (ib.pos != in_before || ob.pos > 0) last = ret;
    rc = feed(r, out, ob.pos);
    if (rc) break;
    /* All input read and nothing more comes out: done, or cut short. */
    if (eof && ob.pos == 0) {
      if (last == 0) {
        rc = finish(r);
      } else {
        snprintf(r->err, r->errlen, "%s:%u: truncated zstd data", r->path, r->lineno + 1);
        rc = -1;
      }
      break;
    }
  }
  ZSTD_freeDCtx(z);
  free(out);
  return rc;
}

int tr_read_file(const char *path, tr_line_fn fn, void *arg, char *err, size_t errlen) {
  /* O_NONBLOCK: a FIFO named by mistake must not hang the open. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  reader *r = calloc(1, sizeof *r);
  char *in = malloc(CHUNK);
  if (!r || !in) {
    snprintf(err, errlen, "%s: out of memory", path);
    free(r);
    free(in);
    close(fd);
    return -1;
  }
  r->path = path;
  r->fn = fn;
  r->arg = arg;
  r->err = err;
  r->errlen = errlen;
  ssize_t n = read_some(fd, in, CHUNK);
  int rc;
  static const unsigned char xz_magic[6] = {0xFD, '7', 'z', 'X', 'Z', 0x00};
  static const unsigned char zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  if (n < 0)
    rc = io_error(r);
  else if (n >= 6 && memcmp(in, xz_magic, 6) == 0)
    rc = read_xz(r, fd, in, (size_t)n);
  else if (n >= 4 && memcmp(in, zstd_magic, 4) == 0)
    rc = read_zstd(r, fd, in, (size_t)n);
  else
    rc = read_plain(r, fd, in, (size_t)n);
  free(in);
  free(r);
  close(fd);
  return rc;
}

static bool is_recording_name(const char *name) {
  static const char *const ends[] = {".trace", ".trace.xz", ".trace.zst"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
    size_t e = strlen(ends[i]);
    if (n > e && strcmp(name + n - e, ends[i]) == 0) return true;
  }
  return false;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_file(char ***files, int *nfiles, const char *path, char *err, size_t errlen) {
  if (*nfiles >= NT_TRACE_MAX_FILES) {
    snprintf(err, errlen, "%s: more than %d recordings (the limit)", path, NT_TRACE_MAX_FILES);
    return -1;
  }
  char **f = realloc(*files, (size_t)(*nfiles + 1) * sizeof *f);
  char *copy = f ? strdup(path) : NULL;
  if (!copy) {
    if (f) *files = f;
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  *files = f;
  f[(*nfiles)++] = copy;
  return 0;
}

int tr_expand_path(const char *path, char ***files, int *nfiles, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return add_file(files, nfiles, path, err, errlen);
  DIR *d = opendir(path);
  if (!d) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  int first = *nfiles, rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!is_recording_name(e->d_name)) continue;
    struct stat fs;
    if (fstatat(dirfd(d), e->d_name, &fs, 0) != 0 || !S_ISREG(fs.st_mode)) continue;
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", path, e->d_name) >= (int)sizeof full) {
      snprintf(err, errlen, "%s/%s: the path is too long", path, e->d_name);
      rc = -1;
      break;
    }
    rc = add_file(files, nfiles, full, err, errlen);
  }
  closedir(d);
  if (rc == 0 && *nfiles == first) {
    snprintf(err, errlen, "%s: no recordings in it (*.trace, *.trace.xz, *.trace.zst)", path);
    rc = -1;
  }
  if (rc == 0) qsort(*files + first, (size_t)(*nfiles - first), sizeof **files, by_name);
  return rc;
}

/* The recording file: writer and reader (proto/RECORDING.md). Integers are
 * little-endian; every length read back is checked against its limit and
 * against what is left before it is used. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "outfile.h"
#include "recording.h"

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* CRC-32 (IEEE, as zlib's crc32) of each record, so a corrupted record is
 * refused before its bytes reach a decoder. */
static uint32_t crc_table[256];
static void crc_init(void) {
  if (crc_table[1]) return;
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}
static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

static int write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, off_t at) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t k = pwrite(fd, p, n, at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
    at += k;
  }
  return 0;
}

uint64_t nt_rec_ns_of(double mono_s) {
  return mono_s > 0 ? (uint64_t)llround(mono_s * 1e9) : 0;
}

double nt_rec_time_s(const nt_rec_header *h, uint64_t t_ns) {
  uint64_t ns = h->start_mono_ns + t_ns;
  return (double)(ns / 1000000000u) + (double)(ns % 1000000000u) / 1e9; /* as nt_now_s */
}

/* ---- writer ---- */

struct nt_rec_writer {
  int fd;
  char path[512];
  ZSTD_CCtx *cctx;
  double start_s;
  uint64_t size; /* bytes in the file */
  bool chunk_open;
  uint64_t chunk_offset, chunk_first_ns, chunk_last_ns, chunk_raw;
  uint64_t last_ns; /* the last record's time */
  uint32_t chunk_records;
  uint8_t *out; /* compressor output */
  size_t out_cap;
  uint8_t *rec; /* one record, serialized */
  size_t rec_cap;
};

static void chunk_header(uint8_t h[NT_REC_CHUNK_HEADER], uint32_t nrecords, uint64_t clen,
                         uint64_t first_ns, uint64_t last_ns) {
  memcpy(h, NT_REC_CHUNK_MAGIC, 4);
  put32(h + 4, nrecords);
  put64(h + 8, clen);
  put64(h + 16, first_ns);
  put64(h + 24, last_ns);
}

nt_rec_writer *nt_rec_create(const char *path, double start_mono_s, bool replace, char *err,
                             size_t errlen) {
  nt_rec_writer *w = calloc(1, sizeof *w);
  if (!w) return snprintf(err, errlen, "out of memory"), NULL;
  w->fd = -1;
  w->start_s = start_mono_s;
  w->out_cap = ZSTD_CStreamOutSize();
  w->out = malloc(w->out_cap);
  w->cctx = ZSTD_createCCtx();
  if (!w->out || !w->cctx ||
      ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, 3)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1))) {
    snprintf(err, errlen, "cannot set up the zstd compressor");
    nt_rec_close(w, NULL, 0);
    return NULL;
  }
  snprintf(w->path, sizeof w->path, "%s", path);
  /* Never truncated in place: a new file (0600: it carries every rank's
   * environment), or with `replace` one written beside the old and renamed
   * over it once its header is whole, so the name holds the old recording or
   * a readable new one at every moment, and a recorder killed later leaves
   * the new one there, readable to its last record. */
  nt_outfile of;
  if (nt_out_open(&of, path, replace ? NT_OUT_REPLACE : 0, NULL, 0, err, errlen) != 0) {
    nt_rec_close(w, NULL, 0);
    return NULL;
  }
  w->fd = of.fd;
  char host[NT_REC_MAX_HOST + 1] = "";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
  host[NT_REC_MAX_HOST] = '\0';
  size_t hl = strlen(host);
  struct timespec wall, mono;
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  /* The wall clock at start_mono_s: now's, less the time since then. */
  double since = ((double)mono.tv_sec + mono.tv_nsec / 1e9) - start_mono_s;
  uint64_t wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
  uint64_t back = since > 0 && since < 1e9 ? (uint64_t)(since * 1e9) : 0;
  wall_ns = back < wall_ns ? wall_ns - back : 0;
  uint8_t h[NT_REC_FILE_HEADER + NT_REC_MAX_HOST];
  memset(h, 0, sizeof h);
  memcpy(h, NT_REC_MAGIC, 8);
  put16(h + 8, NT_REC_VERSION);
  put16(h + 10, (uint16_t)(NT_REC_FILE_HEADER + hl));
  put32(h + 12, 0); /* flags */
  put64(h + 16, wall_ns);
  put64(h + 24, nt_rec_ns_of(start_mono_s));
  put16(h + 32, (uint16_t)hl);
  memcpy(h + NT_REC_FILE_HEADER, host, hl);
  bool wrote = write_all(w->fd, h, NT_REC_FILE_HEADER + hl) == 0;
  if (!wrote) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  if (!wrote || nt_out_commit(&of, err, errlen) != 0) {
    nt_out_discard(&of);
    w->fd = -1;
    nt_rec_close(w, NULL, 0);
    return NULL;
  }
  w->size = NT_REC_FILE_HEADER + hl;
  return w;
}

int nt_rec_set_flags(nt_rec_writer *w, uint32_t flags, char *err, size_t errlen) {
  uint8_t b[4];
  put32(b, flags);
  if (pwrite_all(w->fd, b, sizeof b, 12) != 0)
    return snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno)), -1;
  return 0;
}

uint64_t nt_rec_size(const nt_rec_writer *w) {
  return w->size;
}

double nt_rec_start_s(const nt_rec_writer *w) {
  return w->start_s;
}

/* Runs the compressor over in (may be empty) with `op`, writing what it
 * produces. */
static int compress_write(nt_rec_writer *w, const void *data, size_t n, ZSTD_EndDirective op) {
  ZSTD_inBuffer in = {data, n, 0};
  for (;;) {
    ZSTD_outBuffer out = {w->out, w->out_cap, 0};
    size_t left = ZSTD_compressStream2(w->cctx, &out, &in, op);
    if (ZSTD_isError(left)) return errno = EIO, -1;
    if (out.pos && write_all(w->fd, w->out, out.pos) != 0) return -1;
    w->size += out.pos;
    if (op == ZSTD_e_continue ? in.pos == in.size : left == 0) return 0;
  }
}

/* Ends the open chunk: the frame's end, then its header with the real
 * length, record count and last time. */
static int end_chunk(nt_rec_writer *w) {
  if (!w->chunk_open) return 0;
  w->chunk_open = false;
  if (compress_write(w, NULL, 0, ZSTD_e_end) != 0) return -1;
  uint8_t h[NT_REC_CHUNK_HEADER];
  chunk_header(h, w->chunk_records, w->size - w->chunk_offset - NT_REC_CHUNK_HEADER,
               w->chunk_first_ns, w->chunk_last_ns);
  return pwrite_all(w->fd, h, sizeof h, (off_t)w->chunk_offset);
}

static int start_chunk(nt_rec_writer *w, uint64_t t_ns) {
  uint8_t h[NT_REC_CHUNK_HEADER];
  chunk_header(h, 0, 0, t_ns, 0); /* length 0: open, it runs to the end of the file */
  if (ZSTD_isError(ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only))) return errno = EIO, -1;
  if (write_all(w->fd, h, sizeof h) != 0) return -1;
  w->chunk_offset = w->size;
  w->size += sizeof h;
  w->chunk_open = true;
  w->chunk_first_ns = w->chunk_last_ns = t_ns;
  w->chunk_raw = 0;
  w->chunk_records = 0;
  return 0;
}

int nt_rec_write(nt_rec_writer *w, const nt_rec_record *r, double t_mono_s, char *err,
                 size_t errlen) {
  size_t el = strlen(r->endpoint);
  if (el > NT_REC_MAX_ENDPOINT) el = NT_REC_MAX_ENDPOINT;
  bool msg = r->type == NT_REC_MESSAGE;
  size_t tl = msg ? r->topic_len : 0, bl = msg ? r->body_len : 0;
  /* No topic is that long: what is kept is enough for replay to say it is
   * unknown, as live. */
  if (tl > NT_REC_MAX_TOPIC) tl = NT_REC_MAX_TOPIC;
  if (bl > NT_MAX_MESSAGE_BYTES) return snprintf(err, errlen, "message too large to record"), -1;
  size_t len = 1 + 8 + 4 + 1 + el + (msg ? 1 + tl + 4 + bl : 0);
  if (8 + len > w->rec_cap) {
    uint8_t *p = realloc(w->rec, 8 + len);
    if (!p) return snprintf(err, errlen, "out of memory"), -1;
    w->rec = p;
    w->rec_cap = 8 + len;
  }
  /* Whole nanoseconds of the monotonic clock, as clock_gettime gave them
   * (nt_now_s's double holds them exactly enough to round back). */
  uint64_t at = nt_rec_ns_of(t_mono_s), from = nt_rec_ns_of(w->start_s);
  uint64_t t_ns = at > from ? at - from : 0;
  if (t_ns < w->last_ns) t_ns = w->last_ns; /* never backwards, across chunks too */
  w->last_ns = t_ns;
  uint8_t *p = w->rec + 8;
  put32(w->rec, (uint32_t)len);
  p[0] = (uint8_t)r->type;
  put64(p + 1, t_ns);
  put32(p + 9, r->pid);
  p[13] = (uint8_t)el;
  memcpy(p + 14, r->endpoint, el);
  p += 14 + el;
  if (msg) {
    *p++ = (uint8_t)tl;
    memcpy(p, r->topic, tl);
    p += tl;
    put32(p, (uint32_t)bl);
    if (bl) memcpy(p + 4, r->body, bl);
  }
  crc_init();
  put32(w->rec + 4, crc32_of(w->rec + 8, len));
  int rc = 0;
  if (w->chunk_open && (t_ns - w->chunk_first_ns >= (uint64_t)(NT_REC_CHUNK_SECONDS * 1e9) ||
                        w->chunk_raw >= NT_REC_CHUNK_RAW))
    rc = end_chunk(w);
  if (rc == 0 && !w->chunk_open) rc = start_chunk(w, t_ns);
  /* Flushed after each record: a killed recorder loses nothing written. */
  if (rc == 0) rc = compress_write(w, w->rec, 8 + len, ZSTD_e_flush);
  if (rc != 0) return snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno)), -1;
  w->chunk_last_ns = t_ns;
  w->chunk_raw += 8 + len;
  w->chunk_records++;
  return 0;
}

int nt_rec_close(nt_rec_writer *w, char *err, size_t errlen) {
  if (!w) return 0;
  int rc = 0;
  if (w->fd >= 0) {
    rc = end_chunk(w);
    if (close(w->fd) != 0) rc = -1;
    if (rc != 0 && err) snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
  }
  ZSTD_freeCCtx(w->cctx);
  free(w->out);
  free(w->rec);
  free(w);
  return rc;
}

/* ---- reader ---- */

struct nt_rec_reader {
  int fd;
  char path[512];
  uint64_t file_size;
  nt_rec_header header;
  uint64_t data_start; /* the first chunk */
  ZSTD_DCtx *dctx;
  /* The chunk being read. */
  bool in_chunk;
  uint64_t chunk_offset, chunk_end; /* chunk_end: where its frame ends (file size if open) */
  bool chunk_open;                  /* its length was 0 (the recorder did not close it) */
  uint64_t pos;                     /* the next compressed byte to read */
  bool frame_done;
  uint8_t *in;
  size_t in_cap, in_pos, in_len;
  /* Decompressed bytes not yet taken as records. */
  uint8_t *buf;
  size_t buf_cap, buf_start, buf_len;
  char endpoint[NT_REC_MAX_ENDPOINT + 1];
  uint64_t chunk_first_ns; /* the chunk's first time: its records are within its span */
  uint64_t last_ns;        /* the last record's time */
  uint64_t max_first_ns;   /* the latest a chunk may start (NT_REC_MAX_TIME_NS) */
  uint64_t dev, ino;       /* which file it is */
  bool failed;
};

static int pread_all(int fd, void *buf, size_t n, uint64_t at) {
  uint8_t *p = buf;
  while (n) {
    ssize_t k = pread(fd, p, n, (off_t)at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
    at += (uint64_t)k;
  }
  return 0;
}

nt_rec_reader *nt_rec_open(const char *path, char *err, size_t errlen) {
  nt_rec_reader *r = calloc(1, sizeof *r);
  if (!r) return snprintf(err, errlen, "out of memory"), NULL;
  snprintf(r->path, sizeof r->path, "%s", path);
  /* O_NONBLOCK: a FIFO or a device is refused below, not waited on in open. */
  r->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st;
  if (r->fd < 0 || fstat(r->fd, &st) != 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    nt_rec_close_reader(r);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    nt_rec_close_reader(r);
    return NULL;
  }
  r->file_size = (uint64_t)st.st_size;
  r->dev = (uint64_t)st.st_dev;
  r->ino = (uint64_t)st.st_ino;
  uint8_t h[NT_REC_FILE_HEADER + NT_REC_MAX_HOST];
  if (r->file_size < 8 || pread_all(r->fd, h, 8, 0) != 0 || memcmp(h, NT_REC_MAGIC, 8) != 0) {
    snprintf(err, errlen, "%s: not an nccltop recording (offset 0: no %s magic)", path,
             NT_REC_MAGIC);
    nt_rec_close_reader(r);
    return NULL;
  }
  if (r->file_size < NT_REC_FILE_HEADER || pread_all(r->fd, h, NT_REC_FILE_HEADER, 0) != 0) {
    snprintf(err, errlen, "%s: truncated header (offset %llu)", path,
             (unsigned long long)r->file_size);
    nt_rec_close_reader(r);
    return NULL;
  }
  r->header.version = get16(h + 8);
  uint16_t hlen = get16(h + 10), hl = get16(h + 32);
  if (r->header.version > NT_REC_VERSION || r->header.version == 0) {
    snprintf(err, errlen,
             "%s: recording format version %u (offset 8); this nccltop reads version %d only", path,
             r->header.version, NT_REC_VERSION);
    nt_rec_close_reader(r);
    return NULL;
  }
  if (hl > NT_REC_MAX_HOST || hlen != NT_REC_FILE_HEADER + hl || hlen > r->file_size ||
      pread_all(r->fd, h + NT_REC_FILE_HEADER, hl, NT_REC_FILE_HEADER) != 0) {
    snprintf(err, errlen, "%s: bad header length %u (offset 10)", path, hlen);
    nt_rec_close_reader(r);
    return NULL;
  }
  r->header.flags = get32(h + 12);
  r->header.start_wall_ns = get64(h + 16);
  r->header.start_mono_ns = get64(h + 24);
  /* Times stay within NT_REC_MAX_TIME_NS, so that no sum of a start and a
   * record time overflows, here or in what reads them. */
  for (int k = 0; k < 2; k++) {
    uint64_t v = k ? r->header.start_mono_ns : r->header.start_wall_ns;
    if (v > NT_REC_MAX_TIME_NS - NT_REC_CHUNK_SPAN_NS) {
      snprintf(err, errlen, "%s: start time %llu ns out of range (offset %d; at most 2^62)", path,
               (unsigned long long)v, k ? 24 : 16);
      nt_rec_close_reader(r);
      return NULL;
    }
  }
  uint64_t later = r->header.start_mono_ns > r->header.start_wall_ns ? r->header.start_mono_ns
                                                                     : r->header.start_wall_ns;
  r->max_first_ns = NT_REC_MAX_TIME_NS - NT_REC_CHUNK_SPAN_NS - later;
  memcpy(r->header.host, h + NT_REC_FILE_HEADER, hl);
  r->header.host[hl] = '\0';
  r->data_start = r->pos = hlen;
  r->in_cap = ZSTD_DStreamInSize();
  r->in = malloc(r->in_cap);
  r->dctx = ZSTD_createDCtx();
  if (!r->in || !r->dctx ||
      ZSTD_isError(ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 27))) {
    snprintf(err, errlen, "out of memory");
    nt_rec_close_reader(r);
    return NULL;
  }
  return r;
}

const nt_rec_header *nt_rec_header_of(const nt_rec_reader *r) {
  return &r->header;
}

nt_file_id nt_rec_file_id(const nt_rec_reader *r) {
  return (nt_file_id){.dev = r->dev, .ino = r->ino, .name = r->path};
}

void nt_rec_close_reader(nt_rec_reader *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  ZSTD_freeDCtx(r->dctx);
  free(r->in);
  free(r->buf);
  free(r);
}

static int fail(nt_rec_reader *r, char *err, size_t errlen, uint64_t at, const char *what) {
  snprintf(err, errlen, "%s: corrupt at offset %llu: %s; replay stops here", r->path,
           (unsigned long long)at, what);
  r->failed = true;
  return -1;
}

/* Reads the chunk header at r->pos. 1 ok, 0 at the end of the file (or a
 * truncated header: noted), -1 corrupt. */
static int open_chunk(nt_rec_reader *r, char *err, size_t errlen) {
  if (r->pos >= r->file_size) return 0;
  uint8_t h[NT_REC_CHUNK_HEADER];
  if (r->file_size - r->pos < sizeof h) {
    snprintf(err, errlen, "%s: truncated at offset %llu (a partial chunk header)", r->path,
             (unsigned long long)r->pos);
    return 0;
  }
  if (pread_all(r->fd, h, sizeof h, r->pos) != 0)
    return fail(r, err, errlen, r->pos, strerror(errno));
  if (memcmp(h, NT_REC_CHUNK_MAGIC, 4) != 0) return fail(r, err, errlen, r->pos, "no chunk header");
  uint64_t first = get64(h + 16);
  char why[160];
  if (first < r->last_ns || first > r->max_first_ns) {
    snprintf(why, sizeof why, "the chunk's time %.3f s is %s", (double)first / 1e9,
             first < r->last_ns ? "before the record before it" : "out of range (2^62 ns)");
    return fail(r, err, errlen, r->pos, why);
  }
  r->chunk_first_ns = first;
  uint64_t clen = get64(h + 8);
  r->chunk_offset = r->pos;
  r->pos += sizeof h;
  r->chunk_open = clen == 0;
  if (clen > r->file_size - r->pos) /* truncated: read what there is */
    r->chunk_end = r->file_size, r->chunk_open = true;
  else
    r->chunk_end = clen ? r->pos + clen : r->file_size;
  r->in_chunk = true;
  r->frame_done = false;
  r->in_pos = r->in_len = 0;
  r->buf_start = r->buf_len = 0;
  if (ZSTD_isError(ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only)))
    return fail(r, err, errlen, r->chunk_offset, "zstd reset failed");
  return 1;
}

/* Decompresses more of the chunk into buf. 1 more came, 0 the chunk is
 * over (or its data ran out: truncated), -1 corrupt. */
static int inflate_more(nt_rec_reader *r, char *err, size_t errlen) {
  if (r->frame_done) return 0;
  if (r->buf_start) { /* keep the partial record at the front */
    memmove(r->buf, r->buf + r->buf_start, r->buf_len);
    r->buf_start = 0;
  }
  if (r->buf_cap - r->buf_len < ZSTD_DStreamOutSize()) {
    size_t cap = r->buf_len + ZSTD_DStreamOutSize() * 2;
    if (cap > NT_REC_MAX_RECORD_LEN + 8 + ZSTD_DStreamOutSize() * 2)
      return fail(r, err, errlen, r->pos, "record larger than the limit");
    uint8_t *p = realloc(r->buf, cap);
    if (!p) return fail(r, err, errlen, r->pos, "out of memory");
    r->buf = p;
    r->buf_cap = cap;
  }
  for (;;) {
    if (r->in_pos == r->in_len) {
      uint64_t left = r->chunk_end - r->pos;
      if (!left) {
        if (!r->chunk_open) return fail(r, err, errlen, r->pos, "the compressed chunk ends early");
        snprintf(err, errlen, "%s: truncated at offset %llu; replayed to the last whole message",
                 r->path, (unsigned long long)r->pos);
        return 0;
      }
      size_t n = left < r->in_cap ? (size_t)left : r->in_cap;
      if (pread_all(r->fd, r->in, n, r->pos) != 0)
        return fail(r, err, errlen, r->pos, strerror(errno));
      r->in_pos = 0;
      r->in_len = n;
      r->pos += n;
    }
    ZSTD_inBuffer in = {r->in, r->in_len, r->in_pos};
    ZSTD_outBuffer out = {r->buf + r->buf_len, r->buf_cap - r->buf_len, 0};
    size_t rc = ZSTD_decompressStream(r->dctx, &out, &in);
    uint64_t at = r->pos - r->in_len + in.pos;
    r->in_pos = in.pos;
    r->buf_len += out.pos;
    if (ZSTD_isError(rc)) return fail(r, err, errlen, at, ZSTD_getErrorName(rc));
    if (rc == 0) { /* the frame is whole */
      r->frame_done = true;
      uint64_t end = at;
      if (r->chunk_open) {
        r->chunk_end = end; /* an open chunk: the next one starts here */
      } else if (end != r->chunk_end) {
        return fail(r, err, errlen, end, "data after the chunk's frame");
      }
      r->pos = end;
      return out.pos ? 1 : 0;
    }
    if (out.pos) return 1;
  }
}

int nt_rec_next(nt_rec_reader *r, nt_rec_record *out, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  if (r->failed) return snprintf(err, errlen, "%s: read after an error", r->path), -1;
  for (;;) {
    if (!r->in_chunk) {
      int rc = open_chunk(r, err, errlen);
      if (rc <= 0) return rc;
    }
    if (r->buf_len >= 8) {
      const uint8_t *p = r->buf + r->buf_start;
      uint32_t len = get32(p);
      uint64_t at = r->chunk_offset;
      if (len < 14 || len > NT_REC_MAX_RECORD_LEN)
        return fail(r, err, errlen, at, "bad record length in the chunk at this offset");
      if (r->buf_len >= 8 + (size_t)len) {
        const uint8_t *q = p + 8, *end = q + len;
        crc_init();
        if (crc32_of(q, len) != get32(p + 4))
          return fail(r, err, errlen, at, "record checksum mismatch in the chunk at this offset");
        out->type = q[0];
        out->t_ns = get64(q + 1);
        /* A record is within its chunk's span (the writer starts a new
         * chunk after it) and never before the one before it: a time that
         * jumps beyond what the file has shown so far is refused, not
         * played out tick by tick. */
        uint64_t t = out->t_ns, first = r->chunk_first_ns;
        if (t < first || t - first > NT_REC_CHUNK_SPAN_NS || t < r->last_ns) {
          char why[200];
          if (t < r->last_ns)
            snprintf(why, sizeof why, "record time %.3f s is before the one before it (%.3f s)",
                     (double)t / 1e9, (double)r->last_ns / 1e9);
          else
            snprintf(why, sizeof why, "record time %.3f s is outside its chunk (%.3f s to %.3f s)",
                     (double)t / 1e9, (double)first / 1e9,
                     (double)(first + NT_REC_CHUNK_SPAN_NS) / 1e9);
          return fail(r, err, errlen, at, why);
        }
        r->last_ns = t;
        out->pid = get32(q + 9);
        size_t el = q[13];
        q += 14;
        if (out->type != NT_REC_MESSAGE && out->type != NT_REC_GONE && out->type != NT_REC_FRAME)
          return fail(r, err, errlen, at, "unknown record type in the chunk at this offset");
        if (el > NT_REC_MAX_ENDPOINT || (size_t)(end - q) < el)
          return fail(r, err, errlen, at, "bad endpoint length in the chunk at this offset");
        /* An endpoint name is shown: printable ASCII only (a recorder writes
         * socket paths and tcp:// addresses). */
        for (size_t k = 0; k < el; k++)
          r->endpoint[k] = q[k] >= 0x20 && q[k] < 0x7f ? (char)q[k] : '?';
        r->endpoint[el] = '\0';
        q += el;
        out->endpoint = r->endpoint;
        out->topic = NULL;
        out->topic_len = out->body_len = 0;
        out->body = NULL;
        if (out->type == NT_REC_MESSAGE) {
          size_t tl = end - q >= 1 ? q[0] : 256;
          if (tl > NT_REC_MAX_TOPIC || (size_t)(end - q) < 1 + tl + 4)
            return fail(r, err, errlen, at, "bad topic length in the chunk at this offset");
          out->topic = (const char *)q + 1;
          out->topic_len = tl;
          q += 1 + tl;
          uint32_t bl = get32(q);
          q += 4;
          if (bl > NT_MAX_MESSAGE_BYTES || (size_t)(end - q) != bl)
            return fail(r, err, errlen, at, "bad body length in the chunk at this offset");
          out->body = q;
          out->body_len = bl;
        } else if (q != end) {
          return fail(r, err, errlen, at, "bad record length in the chunk at this offset");
        }
        out->offset = at;
        r->buf_start += 8 + (size_t)len;
        r->buf_len -= 8 + (size_t)len;
        return 1;
      }
    }
    int rc = inflate_more(r, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0) {
      if (err[0]) return 0; /* truncated: the end */
      if (r->buf_len)
        return fail(r, err, errlen, r->chunk_offset, "a partial record at the chunk's end");
      r->in_chunk = false;
      r->pos = r->chunk_end;
    }
  }
}

uint32_t nt_rec_index(nt_rec_reader *r, nt_rec_seek_point *out, uint32_t cap) {
  uint32_t n = 0;
  uint64_t at = r->data_start;
  uint8_t h[NT_REC_CHUNK_HEADER];
  while (n < cap && r->file_size - at >= sizeof h && pread_all(r->fd, h, sizeof h, at) == 0 &&
         memcmp(h, NT_REC_CHUNK_MAGIC, 4) == 0) {
    uint64_t first = get64(h + 16);
    /* The index ends where the reader would refuse the chunk. */
    if (first > r->max_first_ns || (n && first < out[n - 1].first_ns)) break;
    out[n].offset = at;
    out[n].first_ns = first;
    n++;
    uint64_t clen = get64(h + 8);
    if (!clen || clen > r->file_size - at - sizeof h) break; /* open or truncated: the last */
    at += sizeof h + clen;
  }
  return n;
}

int nt_rec_seek(nt_rec_reader *r, uint64_t offset, char *err, size_t errlen) {
  if (offset < r->data_start || offset > r->file_size)
    return snprintf(err, errlen, "%s: no chunk at offset %llu", r->path,
                    (unsigned long long)offset),
           -1;
  r->failed = false;
  r->last_ns = 0;
  r->in_chunk = false;
  r->pos = offset;
  r->buf_start = r->buf_len = 0;
  return 0;
}

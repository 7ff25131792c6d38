/* Recordings: the messages a viewer received, with their receive times and
 * sources, in a zstd-compressed file (format: proto/RECORDING.md).
 *
 * The writer (record_file.c) appends records and flushes the compressor after
 * each, so a recorder killed at any moment leaves a file that replays up to
 * its last whole message. The reader validates everything it reads: a file
 * is untrusted input; every error is one line that names the file offset.
 *
 * recorder.h is the viewer's --record (and `nccltop record`); the replay
 * of a recording on its own clock is a feed (feed.h, replay_ctl.c). */
#ifndef NCCLTOP_RECORDING_H
#define NCCLTOP_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/model.h"
#include "outfile.h"

#define NT_REC_MAGIC          "NTRECORD"
#define NT_REC_VERSION        1
#define NT_REC_CHUNK_MAGIC    "NTCK"
#define NT_REC_FILE_HEADER    40 /* fixed part; the host name follows */
#define NT_REC_CHUNK_HEADER   32
#define NT_REC_MAX_HOST       255
#define NT_REC_MAX_ENDPOINT   159
#define NT_REC_MAX_TOPIC      64
#define NT_REC_CHUNK_SECONDS  2.0        /* a new chunk (seek point) this often */
#define NT_REC_CHUNK_RAW      (8u << 20) /* ...or after this many uncompressed bytes */
#define NT_REC_MAX_RECORD_LEN (NT_MAX_MESSAGE_BYTES + 512)
/* A chunk's records lie within this much of its first (the writer starts a
 * new chunk after NT_REC_CHUNK_SECONDS); a reader refuses one beyond it. */
#define NT_REC_CHUNK_SPAN_NS ((uint64_t)(NT_REC_CHUNK_SECONDS * 1e9))
/* Every time a recording gives (a start time of the header; a start plus a
 * record's time) is at most 2^62 ns: 146 years of uptime, or the wall clock
 * up to the year 2116. So the sum or difference of two always fits int64. */
#define NT_REC_MAX_TIME_NS (1ull << 62)

/* FRAME: the monitor (-b --record) printed a frame at this time. */
enum nt_rec_type { NT_REC_MESSAGE = 1, NT_REC_GONE = 2, NT_REC_FRAME = 3 };

/* One record as read back; pointers stay valid until the next read. */
typedef struct {
  int type;             /* enum nt_rec_type */
  uint64_t t_ns;        /* receive time, ns after the recording's start */
  uint32_t pid;         /* the pid the endpoint speaks for, 0: a --connect one */
  const char *endpoint; /* NUL-terminated, as the source named it (not sanitized) */
  const char *topic;    /* NT_REC_MESSAGE: the topic frame (not NUL-terminated) */
  size_t topic_len;
  const uint8_t *body; /* the body frame */
  size_t body_len;
  uint64_t offset; /* file offset of the chunk it came from */
} nt_rec_record;

typedef struct {
  uint16_t version;
  uint32_t flags;         /* NT_REC_FLAG_* */
  uint64_t start_wall_ns; /* the recorder's CLOCK_REALTIME at the start */
  uint64_t start_mono_ns; /* the recorder's CLOCK_MONOTONIC at the start */
  char host[NT_REC_MAX_HOST + 1];
} nt_rec_header;

/* Header flags. FRAMES: the batch monitor recorded when it printed its
 * frames (FRAME records); replay prints its frames at those times. */
#define NT_REC_FLAG_FRAMES 1u

/* Receive times: whole nanoseconds of the monotonic clock. nt_rec_ns_of
 * turns the viewer's seconds (nt_now_s) into them; nt_rec_time_s gives a
 * record's time back in the viewer's seconds, the very double the live
 * viewer had. */
uint64_t nt_rec_ns_of(double mono_s);

/* ---- writer ---- */
typedef struct nt_rec_writer nt_rec_writer;
/* Creates path (mode 0600) and writes the header; start_mono_s is the
 * monotonic time receive times count from. An existing path is refused,
 * or with `replace` (--force) replaced as outfile.h says: the new file,
 * written beside it, is renamed over it once its header is written. NULL
 * with one line in err. */
nt_rec_writer *nt_rec_create(const char *path, double start_mono_s, bool replace, char *err,
                             size_t errlen);
/* Appends one record (time in the viewer's monotonic seconds); -1 with one
 * line in err on a write error (the file stays readable up to the last
 * record written). */
int nt_rec_write(nt_rec_writer *w, const nt_rec_record *r, double t_mono_s, char *err,
                 size_t errlen);
uint64_t nt_rec_size(const nt_rec_writer *w); /* bytes written so far */
/* Sets the header's flags (NT_REC_FLAG_*); -1 with err on a write error. */
int nt_rec_set_flags(nt_rec_writer *w, uint32_t flags, char *err, size_t errlen);
double nt_rec_start_s(const nt_rec_writer *w);
/* Ends the last chunk and closes; -1 with err on a write error. NULL is fine. */
int nt_rec_close(nt_rec_writer *w, char *err, size_t errlen);

/* ---- reader ---- */
double nt_rec_time_s(const nt_rec_header *h, uint64_t t_ns);
typedef struct nt_rec_reader nt_rec_reader;
/* Opens and checks the header: not a regular file (a FIFO is refused, not
 * waited on), not a recording, a newer version, a bad header, a start time
 * beyond NT_REC_MAX_TIME_NS are refused with one line in err. */
nt_rec_reader *nt_rec_open(const char *path, char *err, size_t errlen);
const nt_rec_header *nt_rec_header_of(const nt_rec_reader *r);
/* The file opened (an output must not be it: outfile.h). */
nt_file_id nt_rec_file_id(const nt_rec_reader *r);
/* The next record: 1, 0 at the end (a truncated end is not an error: a
 * note is left in err, "" otherwise), -1 on corruption (err names the
 * offset; what was returned before stays good). Times are checked: a
 * record's is never before the one before it and within its chunk's
 * NT_REC_CHUNK_SPAN_NS, a chunk's no earlier than the record before it,
 * every one within NT_REC_MAX_TIME_NS; anything else is corruption. */
int nt_rec_next(nt_rec_reader *r, nt_rec_record *out, char *err, size_t errlen);
/* The seek points: the chunks' offsets and first receive times, read from
 * the chunk headers without decompressing, up to the first chunk header
 * the reader would refuse. Returns the count (<= cap). */
typedef struct {
  uint64_t offset;
  uint64_t first_ns;
} nt_rec_seek_point;
uint32_t nt_rec_index(nt_rec_reader *r, nt_rec_seek_point *out, uint32_t cap);
/* Continues reading at a seek point's offset (one from nt_rec_index). */
int nt_rec_seek(nt_rec_reader *r, uint64_t offset, char *err, size_t errlen);
void nt_rec_close_reader(nt_rec_reader *r);

/* ---- applying records to a model, as the live source does ---- */
typedef struct nt_rec_applier nt_rec_applier;
nt_rec_applier *nt_rec_applier_new(void);
void nt_rec_applier_free(nt_rec_applier *a);
/* Decodes a message record and applies it to m at now_s (or marks its
 * endpoint gone); decode failures become model errors, as live. */
void nt_rec_apply(nt_rec_applier *a, nt_model *m, const nt_rec_record *r, double now_s);
/* The last snapshot nt_rec_apply decoded (valid after a snapshot record was
 * applied successfully; export reads its operation log). NULL otherwise. */
const nt_snapshot *nt_rec_last_snapshot(const nt_rec_applier *a);

#endif

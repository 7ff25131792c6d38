/* The recording file (proto/RECORDING.md): what is written reads back
 * exactly; a file cut at any byte replays a prefix of whole messages; a
 * corrupted chunk stops the reader with an error naming an offset and the
 * chunks before it intact; a newer format version and a file that is not
 * a recording are refused with one line; the chunk index seeks. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "../monitor/feeds/recording.h"

#define NREC 300

static char dir[] = "/tmp/nccltop-recf-XXXXXX";
static char path[128];

/* Record i: a body of (i * 37) % 5000 bytes derived from i, 0.05 s apart
 * (so a chunk ends every 2 s), every 10th an endpoint-gone record. */
static size_t body_of(int i, uint8_t *buf) {
  size_t n = (size_t)(i * 37) % 5000;
  for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)(i + k * 7);
  return n;
}

static void endpoint_of(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "ipc:///tmp/x/%d.sock", 1000 + i % 3);
}

static bool write_file(void) {
  char err[600];
  nt_rec_writer *w = nt_rec_create(path, 100.0, false, err, sizeof err);
  if (!w) return fprintf(stderr, "    %s\n", err), false;
  static uint8_t body[5000];
  for (int i = 0; i < NREC; i++) {
    char ep[64];
    endpoint_of(i, ep, sizeof ep);
    nt_rec_record r = {.type = i % 10 == 9 ? NT_REC_GONE : NT_REC_MESSAGE,
                       .pid = 1000 + (uint32_t)(i % 3),
                       .endpoint = ep,
                       .topic = NT_TOPIC_SNAPSHOT,
                       .topic_len = strlen(NT_TOPIC_SNAPSHOT),
                       .body = body,
                       .body_len = body_of(i, body)};
    if (nt_rec_write(w, &r, 100.0 + i * 0.05, err, sizeof err) != 0) {
      fprintf(stderr, "    %s\n", err);
      nt_rec_close(w, NULL, 0);
      return false;
    }
  }
  return nt_rec_close(w, err, sizeof err) == 0;
}

/* Whether record r is record i as written. */
static bool same(const nt_rec_record *r, int i) {
  static uint8_t body[5000];
  char ep[64];
  endpoint_of(i, ep, sizeof ep);
  if (r->type != (i % 10 == 9 ? NT_REC_GONE : NT_REC_MESSAGE) || strcmp(r->endpoint, ep) ||
      r->pid != 1000 + (uint32_t)(i % 3))
    return false;
  uint64_t want_ns = (uint64_t)(i * 0.05 * 1e9 + 0.5);
  if (r->t_ns + 1000 < want_ns || r->t_ns > want_ns + 1000) return false;
  if (r->type == NT_REC_GONE) return r->body_len == 0;
  size_t n = body_of(i, body);
  return r->topic_len == strlen(NT_TOPIC_SNAPSHOT) && !memcmp(r->topic, NT_TOPIC_SNAPSHOT, 11) &&
         r->body_len == n && !memcmp(r->body, body, n);
}

/* Reads file p; returns records read that match the written ones in
 * order (-1 if one differs), *rc the last nt_rec_next result. */
static int read_back(const char *p, int *rc, char *err, size_t errlen) {
  nt_rec_reader *r = nt_rec_open(p, err, errlen);
  if (!r) return *rc = -2, 0;
  nt_rec_record rec;
  int n = 0;
  while ((*rc = nt_rec_next(r, &rec, err, errlen)) == 1) {
    if (n >= NREC || !same(&rec, n)) {
      nt_rec_close_reader(r);
      return -1;
    }
    n++;
  }
  nt_rec_close_reader(r);
  return n;
}

static uint8_t *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  uint8_t *buf = malloc(1 << 22);
  *n = buf ? fread(buf, 1, 1 << 22, f) : 0;
  fclose(f);
  return buf;
}

static bool spit(const char *p, const uint8_t *buf, size_t n) {
  FILE *f = fopen(p, "wb");
  if (!f) return false;
  bool ok = fwrite(buf, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static void written_records_read_back_exactly(void) {
  CHECK(write_file());
  char err[600];
  int rc;
  nt_rec_reader *r = nt_rec_open(path, err, sizeof err);
  CHECK(r != NULL);
  CHECK_EQ_U64(nt_rec_header_of(r)->version, NT_REC_VERSION);
  CHECK_EQ_U64(nt_rec_header_of(r)->start_mono_ns, 100000000000ull);
  CHECK(nt_rec_header_of(r)->host[0] != '\0');
  nt_rec_close_reader(r);
  CHECK_EQ_U64(read_back(path, &rc, err, sizeof err), NREC);
  CHECK_EQ_U64(rc, 0);
  CHECK_STR(err, "");
}

/* Every prefix of the file: never an error, always whole records, and
 * (records are flushed one by one) never fewer than a shorter prefix. */
static void a_file_cut_anywhere_replays_its_whole_messages(void) {
  size_t n;
  uint8_t *buf = slurp(path, &n);
  CHECK(buf != NULL && n > 1000);
  char cut[160], err[600];
  snprintf(cut, sizeof cut, "%s/cut", dir);
  int last = 0, bad = 0, step = (int)(n / 400) + 1;
  for (size_t len = 48; len <= n && !bad; len += (size_t)step) {
    if (!spit(cut, buf, len)) bad = 1;
    int rc, got = read_back(cut, &rc, err, sizeof err);
    if (got < last || rc != 0) {
      fprintf(stderr, "    cut at %zu: %d records (before %d), rc %d: %s\n", len, got, last, rc,
              err);
      bad = 1;
    }
    if (got > 0) last = got;
  }
  free(buf);
  CHECK(!bad);
  CHECK(last > NREC / 2);
  /* The reader says where it was cut. */
  int rc;
  buf = slurp(path, &n);
  CHECK(buf && spit(cut, buf, n - 5));
  free(buf);
  CHECK(read_back(cut, &rc, err, sizeof err) > 0);
  CHECK(strstr(err, "truncated at offset") != NULL);
}

static void a_corrupted_chunk_stops_with_its_offset_and_earlier_records_intact(void) {
  char err[600];
  nt_rec_reader *r = nt_rec_open(path, err, sizeof err);
  CHECK(r != NULL);
  nt_rec_seek_point idx[64];
  uint32_t nidx = nt_rec_index(r, idx, 64);
  nt_rec_close_reader(r);
  CHECK(nidx >= 5);
  size_t n;
  uint8_t *buf = slurp(path, &n);
  CHECK(buf != NULL);
  /* Records before the third chunk, counted by time (0.05 s apart). */
  int before = (int)((double)idx[2].first_ns / 0.05e9 + 0.5);
  size_t at = idx[2].offset + NT_REC_CHUNK_HEADER + 200;
  for (int k = 0; k < 64; k++) buf[at + k] ^= 0x5a;
  char bad[160];
  snprintf(bad, sizeof bad, "%s/bad", dir);
  bool ok = spit(bad, buf, n);
  free(buf);
  CHECK(ok);
  int rc, got = read_back(bad, &rc, err, sizeof err);
  fprintf(stderr, "    %d records before: %s\n", got, err);
  CHECK_EQ_U64(rc, (uint64_t)-1);
  CHECK(got >= before);
  CHECK(strstr(err, "corrupt at offset") != NULL);
  /* A bad chunk header too. */
  buf = slurp(path, &n);
  CHECK(buf != NULL);
  buf[idx[3].offset] = 'X';
  ok = spit(bad, buf, n);
  free(buf);
  CHECK(ok);
  got = read_back(bad, &rc, err, sizeof err);
  CHECK_EQ_U64(rc, (uint64_t)-1);
  CHECK(got >= (int)((double)idx[3].first_ns / 0.05e9 + 0.5));
  char want[64];
  snprintf(want, sizeof want, "offset %llu: no chunk header", (unsigned long long)idx[3].offset);
  CHECK(strstr(err, want) != NULL);
}

static void a_newer_version_and_other_files_are_refused(void) {
  size_t n;
  uint8_t *buf = slurp(path, &n);
  CHECK(buf != NULL);
  buf[8] = NT_REC_VERSION + 1;
  char p[160], err[600];
  snprintf(p, sizeof p, "%s/newer", dir);
  bool ok = spit(p, buf, n);
  free(buf);
  CHECK(ok);
  CHECK(nt_rec_open(p, err, sizeof err) == NULL);
  CHECK(strstr(err, "version 2 (offset 8)") != NULL);
  CHECK(!strchr(err, '\n'));
  CHECK(spit(p, (const uint8_t *)"{\"not\": \"a recording\"}\n", 23));
  CHECK(nt_rec_open(p, err, sizeof err) == NULL);
  CHECK(strstr(err, "not an nccltop recording (offset 0") != NULL);
  CHECK(spit(p, (const uint8_t *)"NTRECORD\1", 9));
  CHECK(nt_rec_open(p, err, sizeof err) == NULL);
  CHECK(strstr(err, "truncated header") != NULL);
  CHECK(nt_rec_open(dir, err, sizeof err) == NULL);
  CHECK(strstr(err, "not a regular file") != NULL);
}

static void the_index_seeks_to_a_chunk(void) {
  char err[600];
  nt_rec_reader *r = nt_rec_open(path, err, sizeof err);
  CHECK(r != NULL);
  nt_rec_seek_point idx[64];
  uint32_t n = nt_rec_index(r, idx, 64);
  /* 300 records over 15 s, a chunk per 2 s. */
  bool ok = n == 8 && idx[0].first_ns == 0;
  for (uint32_t i = 1; ok && i < n; i++) ok = idx[i].first_ns >= idx[i - 1].first_ns + 2000000000;
  nt_rec_record rec;
  int got = ok && nt_rec_seek(r, idx[4].offset, err, sizeof err) == 0
                ? nt_rec_next(r, &rec, err, sizeof err)
                : -9;
  ok = ok && got == 1 && rec.t_ns == idx[4].first_ns && same(&rec, (int)(rec.t_ns / 50000000 + 0));
  /* And back to the start. */
  ok = ok && nt_rec_seek(r, idx[0].offset, err, sizeof err) == 0 &&
       nt_rec_next(r, &rec, err, sizeof err) == 1 && same(&rec, 0);
  nt_rec_close_reader(r);
  if (!ok) fprintf(stderr, "    %u chunks, %s\n", n, err);
  CHECK(ok);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/rec.ntr", dir);
  TEST_RUN(written_records_read_back_exactly);
  TEST_RUN(a_file_cut_anywhere_replays_its_whole_messages);
  TEST_RUN(a_corrupted_chunk_stops_with_its_offset_and_earlier_records_intact);
  TEST_RUN(a_newer_version_and_other_files_are_refused);
  TEST_RUN(the_index_seeks_to_a_chunk);
  char p[160];
  const char *names[] = {"rec.ntr", "cut", "bad", "newer"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
  return TEST_DONE();
}

/* Recordings are a job's black box: no command may destroy one, and one
 * crafted to hurt is one error line, not a hang or gigabytes of output.
 * - export never writes the recording it reads (the same name, a symlink, a
 *   hard link; --force or not), nor --record the --topology file: exit 2,
 *   the bytes untouched;
 * - an existing output (record FILE, -b --record FILE, FILE.1 of
 *   --max-size, export's OUT) is kept without --force, and replaced by a
 *   rename with it (a hard link to the old file keeps the old bytes); new
 *   outputs are mode 0600;
 * - a FIFO given as a recording is refused at once;
 * - a record time beyond its chunk's span (2^62 ns, a day later), or going
 *   back, is one error line naming the offset; a day's gap between chunks
 *   costs a frame or two, not one per -d, and is not waited for;
 * - FRAME records repeated at one time are one frame;
 * - start times and publisher clocks out of range are refused or left out
 *   with one line, with no overflow (this runs under UBSan).
 * The recordings are built here, record by record (crc, zstd), so each
 * breaks exactly one rule. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "testlib.h"
#include "../monitor/core/model.h"
#include "../monitor/feeds/recording.h"

static char nccltop[PATH_MAX + 16];
static char dir[] = "/tmp/nccltop-rhost-XXXXXX";
static char empty[160]; /* an endpoint directory with nobody in it */

/* ---- crafting recordings ---- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}
static void put_le(buf *b, uint64_t v, int bytes) {
  uint8_t x[8];
  for (int i = 0; i < bytes; i++) x[i] = (uint8_t)(v >> (8 * i));
  put(b, x, (size_t)bytes);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

/* One record (proto/RECORDING.md), appended to raw. topic NULL: no message. */
static void record(buf *raw, int type, uint64_t t_ns, const char *ep, const char *topic,
                   const void *body, size_t bl) {
  buf r = {0};
  put_le(&r, (uint64_t)type, 1);
  put_le(&r, t_ns, 8);
  put_le(&r, 4242, 4);
  put_le(&r, strlen(ep), 1);
  put(&r, ep, strlen(ep));
  if (type == NT_REC_MESSAGE) {
    put_le(&r, strlen(topic), 1);
    put(&r, topic, strlen(topic));
    put_le(&r, bl, 4);
    put(&r, body, bl);
  }
  put_le(raw, r.n, 4);
  put_le(raw, crc32_of(r.p, r.n), 4);
  put(raw, r.p, r.n);
  free(r.p);
}

static void gone(buf *raw, uint64_t t_ns) {
  record(raw, NT_REC_GONE, t_ns, "ipc:///tmp/none/1.sock", NULL, NULL, 0);
}

/* A header: no host name, so the first chunk is at offset 40. */
static void header(buf *f, uint32_t flags, uint64_t wall_ns, uint64_t mono_ns) {
  put(f, NT_REC_MAGIC, 8);
  put_le(f, NT_REC_VERSION, 2);
  put_le(f, NT_REC_FILE_HEADER, 2);
  put_le(f, flags, 4);
  put_le(f, wall_ns, 8);
  put_le(f, mono_ns, 8);
  put_le(f, 0, 8); /* host length, reserved */
}

/* A closed chunk holding raw's records (raw is emptied). */
static void chunk(buf *f, buf *raw, uint64_t first_ns) {
  size_t cap = ZSTD_compressBound(raw->n);
  uint8_t *z = malloc(cap);
  size_t zn = z ? ZSTD_compress(z, cap, raw->p, raw->n, 3) : 0;
  if (!z || ZSTD_isError(zn)) abort();
  put(f, NT_REC_CHUNK_MAGIC, 4);
  put_le(f, 1, 4);
  put_le(f, zn, 8);
  put_le(f, first_ns, 8);
  put_le(f, first_ns, 8);
  put(f, z, zn);
  free(z);
  raw->n = 0;
}

static bool spit(const char *p, const void *data, size_t n) {
  FILE *f = fopen(p, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static bool save(const char *p, buf *f) {
  bool ok = spit(p, f->p, f->n);
  free(f->p);
  *f = (buf){0};
  return ok;
}

static char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  char *b = malloc(8 << 20);
  size_t k = b ? fread(b, 1, (8 << 20) - 1, f) : 0;
  fclose(f);
  if (b) b[k] = '\0';
  if (n) *n = k;
  return b;
}

static void path_in(char *p, size_t cap, const char *name) {
  snprintf(p, cap, "%s/%s", dir, name);
}

/* ---- running nccltop ---- */

typedef struct {
  int rc;           /* exit status; -1 killed (too long, or more than the cap printed) */
  size_t out_bytes; /* everything it printed on stdout */
  char out[1 << 20];
  char err[4096];
} ran;
static ran res;

/* Runs argv with stdout read through a pipe (at most `cap` bytes, then it
 * is killed, so a runaway costs neither disk nor time) and stderr kept. */
static int run(char *const argv[], double seconds, size_t cap) {
  memset(&res, 0, sizeof res);
  char errpath[200];
  path_in(errpath, sizeof errpath, "stderr");
  int fds[2];
  if (pipe(fds) != 0) return res.rc = -2;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = open("/dev/null", O_RDONLY);
    if (e < 0 || in < 0 || dup2(fds[1], 1) < 0 || dup2(e, 2) < 0 || dup2(in, 0) < 0) _exit(126);
    close(fds[0]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bool killed = false;
  for (;;) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double left = seconds - ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9);
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    if (left <= 0 || res.out_bytes > cap) {
      killed = true;
      break;
    }
    if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0) continue;
    char chunk[65536];
    ssize_t k = read(fds[0], chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    if (res.out_bytes < sizeof res.out - 1) { /* the first MiB is kept, NUL-terminated */
      size_t room = sizeof res.out - 1 - res.out_bytes;
      memcpy(res.out + res.out_bytes, chunk, (size_t)k < room ? (size_t)k : room);
    }
    res.out_bytes += (size_t)k;
  }
  if (killed) kill(pid, SIGKILL);
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  size_t en;
  char *e = slurp(errpath, &en);
  if (e) snprintf(res.err, sizeof res.err, "%s", e);
  free(e);
  res.rc = killed ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return res.rc;
}

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static void show(const char *what) {
  fprintf(stderr, "    %s: rc %d, %zu bytes out, %d stderr lines: %s", what, res.rc, res.out_bytes,
          lines(res.err), res.err[0] ? res.err : "\n");
}

static bool same_bytes(const char *p, const char *want, size_t n) {
  size_t k;
  char *b = slurp(p, &k);
  bool same = b && k == n && !memcmp(b, want, n);
  free(b);
  return same;
}

static unsigned mode_of(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (unsigned)(st.st_mode & 0777) : 0;
}

/* A small valid recording: GONE records from 0.1 s to 1.0 s. */
static bool small_recording(const char *p) {
  buf f = {0}, raw = {0};
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  for (int i = 1; i <= 10; i++) gone(&raw, (uint64_t)i * 100000000ull);
  chunk(&f, &raw, 100000000ull);
  free(raw.p);
  return save(p, &f);
}

/* ---- the tests ---- */

static void no_command_writes_a_file_it_reads(void) {
  char rec[200], sym[200], hard[200];
  path_in(rec, sizeof rec, "victim.ntr");
  path_in(sym, sizeof sym, "victim.json");
  path_in(hard, sizeof hard, "victim-too.ntr");
  CHECK(small_recording(rec));
  size_t n;
  char *before = slurp(rec, &n);
  CHECK(before != NULL);
  unlink(sym);
  unlink(hard);
  CHECK(symlink(rec, sym) == 0 && link(rec, hard) == 0);
  const char *outs[] = {rec, sym, hard, rec};
  bool ok = true;
  for (int i = 0; i < 4 && ok; i++) {
    char *av[] = {nccltop, "export", rec, "--chrome-trace", (char *)outs[i], "--force", NULL};
    if (i < 3) av[5] = NULL; /* the last one with --force: still refused */
    run(av, 30, 1 << 20);
    ok = res.rc == 2 && lines(res.err) == 1 && strstr(res.err, "this command reads") &&
         same_bytes(rec, before, n);
    if (!ok) show(outs[i]);
  }
  free(before);
  CHECK(ok);
  /* The monitor's --record FILE is not its --topology FILE either. */
  static const char xml[] = "<system version=\"1\"></system>\n";
  char topo[200];
  path_in(topo, sizeof topo, "topo.xml");
  CHECK(spit(topo, xml, sizeof xml - 1));
  char *mv[] = {nccltop, "-b",         "-n", "1",        "-d", "100",     "--dir",
                empty,   "--topology", topo, "--record", topo, "--force", NULL};
  run(mv, 30, 1 << 20);
  if (res.rc != 2) show("--record the --topology file");
  CHECK_EQ_U64(res.rc, 2);
  CHECK(strstr(res.err, "this command reads") && lines(res.err) == 1);
  CHECK(same_bytes(topo, xml, sizeof xml - 1));
}

static void existing_outputs_are_kept_without_force_and_replaced_with_it(void) {
  char old[200], other[200], out[200];
  path_in(old, sizeof old, "old.json");
  path_in(other, sizeof other, "old-link.json");
  path_in(out, sizeof out, "in.ntr");
  CHECK(small_recording(out));
  static const char keep[] = "an older trace, to be kept\n";
  unlink(old);
  unlink(other);
  CHECK(spit(old, keep, sizeof keep - 1) && link(old, other) == 0);
  /* export: kept, then replaced by a new file (the hard link keeps the
   * old bytes: the old file was not written in place), mode 0600. */
  char *av[] = {nccltop, "export", out, "--chrome-trace", old, NULL, NULL};
  run(av, 30, 1 << 20);
  if (res.rc != 2) show("export to an existing file");
  CHECK_EQ_U64(res.rc, 2);
  CHECK(strstr(res.err, "already exists") && lines(res.err) == 1);
  CHECK(same_bytes(old, keep, sizeof keep - 1));
  av[5] = "--force";
  run(av, 30, 1 << 20);
  if (res.rc != 0) show("export --force");
  CHECK_EQ_U64(res.rc, 0);
  char *text = slurp(old, NULL);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(j != NULL);
  cJSON_Delete(j);
  CHECK(same_bytes(other, keep, sizeof keep - 1));
  CHECK_EQ_U64(mode_of(old), 0600);
  /* A new trace, a new recording: 0600. */
  char fresh[200];
  path_in(fresh, sizeof fresh, "fresh.json");
  unlink(fresh);
  av[4] = fresh;
  av[5] = NULL;
  CHECK_EQ_U64(run(av, 30, 1 << 20), 0);
  CHECK_EQ_U64(mode_of(fresh), 0600);
  /* record and -b --record: the same. */
  char rec[200], rec_link[200];
  path_in(rec, sizeof rec, "kept.ntr");
  path_in(rec_link, sizeof rec_link, "kept-link.ntr");
  unlink(rec);
  unlink(rec_link);
  CHECK(spit(rec, keep, sizeof keep - 1) && link(rec, rec_link) == 0);
  char *rv[] = {nccltop, "record", rec, "--dir", empty, "--duration", "0.3s", NULL, NULL};
  char *bv[] = {nccltop, "-b", "-n", "1", "-d", "100", "--dir", empty, "--record", rec, NULL, NULL};
  for (int k = 0; k < 2; k++) {
    run(k ? bv : rv, 30, 1 << 20);
    if (res.rc != 2) show(k ? "-b --record" : "record");
    CHECK_EQ_U64(res.rc, 2);
    CHECK(strstr(res.err, "already exists") && lines(res.err) == 1);
    CHECK(same_bytes(rec, keep, sizeof keep - 1));
  }
  for (int k = 0; k < 2; k++) {
    (k ? bv : rv)[k ? 10 : 7] = "--force";
    run(k ? bv : rv, 30, 1 << 20);
    if (res.rc != 0) show(k ? "-b --record --force" : "record --force");
    CHECK_EQ_U64(res.rc, 0);
    char err[700];
    nt_rec_reader *r = nt_rec_open(rec, err, sizeof err);
    nt_rec_close_reader(r);
    CHECK(r != NULL);
    CHECK_EQ_U64(mode_of(rec), 0600);
    CHECK(same_bytes(rec_link, keep, sizeof keep - 1));
  }
  /* --max-size: FILE.1 counts as an output too. */
  char rot[200], rot1[210];
  path_in(rot, sizeof rot, "rot.ntr");
  snprintf(rot1, sizeof rot1, "%s.1", rot);
  unlink(rot);
  CHECK(spit(rot1, keep, sizeof keep - 1));
  char *mv[] = {nccltop,      "record", rot,          "--dir", empty,
                "--duration", "0.3s",   "--max-size", "64K",   NULL};
  run(mv, 30, 1 << 20);
  CHECK_EQ_U64(res.rc, 2);
  CHECK(strstr(res.err, ".1 already exists"));
  CHECK(access(rot, F_OK) != 0 && same_bytes(rot1, keep, sizeof keep - 1));
  unlink(rot1);
  CHECK_EQ_U64(run(mv, 30, 1 << 20), 0);
  CHECK_EQ_U64(mode_of(rot), 0600);
}

static void a_fifo_given_as_a_recording_is_refused_at_once(void) {
  char fifo[200], trace[200];
  path_in(fifo, sizeof fifo, "fifo.ntr");
  path_in(trace, sizeof trace, "fifo.json");
  unlink(fifo);
  CHECK(mkfifo(fifo, 0600) == 0);
  char *cmds[4][8] = {
      {nccltop, "replay", fifo, "-b", NULL},
      {nccltop, "replay", fifo, NULL},
      {nccltop, "export", fifo, "--chrome-trace", trace, NULL},
      {nccltop, "record", fifo, "--dir", empty, "--duration", "0.3s", NULL},
  };
  for (int i = 0; i < 4; i++) {
    run(cmds[i], 10, 1 << 20);
    bool ok =
        res.rc == (i == 3 ? 2 : 1) && lines(res.err) == 1 && strstr(res.err, "not a regular file");
    if (!ok) show(cmds[i][1]);
    CHECK(ok);
  }
}

/* The records of small_recording, then one more in the same chunk at t. */
static bool with_late_record(const char *p, uint64_t t_ns) {
  buf f = {0}, raw = {0};
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  for (int i = 1; i <= 10; i++) gone(&raw, (uint64_t)i * 100000000ull);
  gone(&raw, t_ns);
  chunk(&f, &raw, 100000000ull);
  free(raw.p);
  return save(p, &f);
}

/* Reads p to its end: the records, and the last result and message. */
static int read_all(const char *p, int *rc, char *err, size_t errlen) {
  nt_rec_reader *r = nt_rec_open(p, err, errlen);
  if (!r) return *rc = -2, 0;
  nt_rec_record x;
  int n = 0;
  while ((*rc = nt_rec_next(r, &x, err, errlen)) == 1) n++;
  nt_rec_close_reader(r);
  return n;
}

static void a_record_time_beyond_its_chunk_is_one_error_line(void) {
  char p[200];
  path_in(p, sizeof p, "jump.ntr");
  const uint64_t late[] = {1ull << 62, 86400000000000ull, 2100000001ull};
  for (int i = 0; i < 3; i++) {
    CHECK(with_late_record(p, late[i]));
    char err[700];
    int rc, n = read_all(p, &rc, err, sizeof err);
    if (rc != -1) fprintf(stderr, "    %d records, rc %d: %s\n", n, rc, err);
    CHECK_EQ_U64(n, 10);
    CHECK_EQ_U64(rc, (uint64_t)-1);
    CHECK(strstr(err, "corrupt at offset 40: record time") && strstr(err, "outside its chunk"));
    /* The CLI: the frames before it, one line, exit 1, at once. */
    char *av[] = {nccltop, "replay", p, "-b", "--json", "-d", "100", "--speed", "max", NULL};
    run(av, 30, 4 << 20);
    bool ok = res.rc == 1 && lines(res.err) == 1 && strstr(res.err, "offset 40") &&
              lines(res.out) >= 9 && lines(res.out) <= 12;
    if (!ok) show("replay of a time jump");
    CHECK(ok);
  }
  /* Times that go back: within a chunk, and a chunk that starts before
   * the record before it. */
  buf f = {0}, raw = {0};
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  gone(&raw, 500000000ull);
  gone(&raw, 400000000ull);
  chunk(&f, &raw, 400000000ull);
  CHECK(save(p, &f));
  char err[700];
  int rc, n = read_all(p, &rc, err, sizeof err);
  CHECK(n == 1 && rc == -1 && strstr(err, "before the one before it"));
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  gone(&raw, 500000000ull);
  chunk(&f, &raw, 500000000ull);
  gone(&raw, 400000000ull);
  chunk(&f, &raw, 400000000ull);
  free(raw.p);
  CHECK(save(p, &f));
  n = read_all(p, &rc, err, sizeof err);
  CHECK(n == 1 && rc == -1 && strstr(err, "before the record before it"));
}

/* A day without a record between two chunks (a black box written a day
 * after its recorder started looks the same): a frame or two for it, not
 * one per -d, and no waiting for it at the recorded pace. */
static void a_quiet_day_costs_a_frame_not_a_frame_per_tick(void) {
  char p[200];
  path_in(p, sizeof p, "gap.ntr");
  buf f = {0}, raw = {0};
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  for (int i = 1; i <= 10; i++) gone(&raw, (uint64_t)i * 100000000ull);
  chunk(&f, &raw, 100000000ull);
  gone(&raw, 86400000000000ull);
  chunk(&f, &raw, 86400000000000ull);
  free(raw.p);
  CHECK(save(p, &f));
  char err[700];
  int rc, n = read_all(p, &rc, err, sizeof err);
  CHECK(n == 11 && rc == 0);
  /* 11 records in 11 intervals of -d: at most two frames each. */
  char *av[] = {nccltop, "replay", p, "-b", "--json", "-d", "100", "--speed", "max", NULL};
  run(av, 30, 4 << 20);
  int frames = lines(res.out);
  if (res.rc != 0 || frames > 23) show("replay --speed max");
  CHECK_EQ_U64(res.rc, 0);
  CHECK(frames >= 11 && frames <= 23);
  /* The last frame is the day after. */
  const char *last = res.out;
  for (const char *q = res.out; *q; q++)
    if (q[0] == '\n' && q[1]) last = q + 1;
  cJSON *j = cJSON_Parse(last);
  cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "time_s") : NULL;
  if (!t) fprintf(stderr, "    last frame: %.200s\n", last);
  CHECK(t != NULL && t->valuedouble >= 86400.0);
  cJSON_Delete(j);
  /* At the recorded pace: a second of data, the day skipped. */
  av[7] = NULL;
  run(av, 20, 4 << 20);
  if (res.rc != 0) show("replay at the recorded pace");
  CHECK_EQ_U64(res.rc, 0);
}

static void frame_records_at_one_time_are_one_frame(void) {
  char p[200];
  path_in(p, sizeof p, "frames.ntr");
  buf f = {0}, raw = {0};
  header(&f, NT_REC_FLAG_FRAMES, 1700000000000000000ull, 1000000000000ull);
  gone(&raw, 100000000ull);
  for (int i = 0; i < 200000; i++) record(&raw, NT_REC_FRAME, 200000000ull, "", NULL, NULL, 0);
  record(&raw, NT_REC_FRAME, 300000000ull, "", NULL, NULL, 0);
  record(&raw, NT_REC_FRAME, 400000000ull, "", NULL, NULL, 0);
  chunk(&f, &raw, 100000000ull);
  free(raw.p);
  size_t size = f.n;
  CHECK(save(p, &f));
  char *av[] = {nccltop, "replay", p, "-b", "--json", "--speed", "max", NULL};
  run(av, 60, 4 << 20);
  fprintf(stderr, "    %zu-byte file: %d frames, %zu bytes\n", size, lines(res.out), res.out_bytes);
  if (res.rc != 0) show("replay of repeated frames");
  CHECK_EQ_U64(res.rc, 0);
  CHECK_EQ_U64(lines(res.out), 3);
}

static void times_out_of_range_are_refused_without_overflow(void) {
  char p[200], trace[200];
  path_in(p, sizeof p, "clock.ntr");
  path_in(trace, sizeof trace, "clock.json");
  /* The header's start times. */
  for (int k = 0; k < 2; k++) {
    buf f = {0}, raw = {0};
    header(&f, 0, k ? 1700000000000000000ull : 1ull << 63, k ? 1ull << 63 : 1000000000000ull);
    gone(&raw, 100000000ull);
    chunk(&f, &raw, 100000000ull);
    free(raw.p);
    CHECK(save(p, &f));
    char err[700];
    CHECK(nt_rec_open(p, err, sizeof err) == NULL);
    CHECK(strstr(err, k ? "(offset 24" : "(offset 16") && strstr(err, "out of range"));
    unlink(trace);
    char *av[] = {nccltop, "export", p, "--chrome-trace", trace, NULL};
    run(av, 30, 1 << 20);
    if (res.rc != 1) show("export of a bad start time");
    CHECK(res.rc == 1 && lines(res.err) == 1 && strstr(res.err, "out of range"));
  }
  /* A publisher's clocks: wall_ns INT64_MAX at mono_ns 1, then mono_ns 10:
   * its wall time no longer fits. Its events are left out, said once. */
  nt_snapshot *s = nt_snapshot_new();
  CHECK(s != NULL);
  buf f = {0}, raw = {0};
  header(&f, 0, 1700000000000000000ull, 1000000000000ull);
  static uint8_t body[1 << 16];
  for (int k = 0; k < 3; k++) {
    snprintf(s->host, sizeof s->host, "clockhost");
    s->major = NT_PROTO_MAJOR;
    s->minor = NT_PROTO_MINOR;
    s->pid = 4242;
    s->seq = (uint64_t)k + 1;
    s->interval_ms = 100;
    s->mono_ns = k ? 10ull * (uint64_t)k : 1;
    s->wall_ns = INT64_MAX;
    s->ncomms = 1;
    s->comms[0] = (nt_comm_row){.comm_hash = 0xabc, .rank = 0, .nranks = 1, .nnodes = 1};
    size_t n = nt_snapshot_encode(s, body, sizeof body);
    CHECK(n > 0);
    record(&raw, NT_REC_MESSAGE, (uint64_t)(k + 1) * 100000000ull, "ipc:///tmp/none/4242.sock",
           NT_TOPIC_SNAPSHOT, body, n);
  }
  nt_snapshot_free(s);
  chunk(&f, &raw, 100000000ull);
  free(raw.p);
  CHECK(save(p, &f));
  unlink(trace);
  char *av[] = {nccltop, "export", p, "--chrome-trace", trace, NULL};
  run(av, 30, 1 << 20);
  bool said = res.rc == 0 && lines(res.err) == 2 && strstr(res.err, "out of range") &&
              strstr(res.err, "left out");
  if (!said) show("export of a publisher's clocks out of range");
  CHECK(said);
  char *text = slurp(trace, NULL);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(j != NULL);
  cJSON_Delete(j);
}

int main(void) {
  umask(022); /* so that 0600 is the program's choice */
  if (!mkdtemp(dir)) return 1;
  snprintf(empty, sizeof empty, "%s/endpoints", dir);
  if (mkdir(empty, 0700) != 0) return 1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(nccltop, sizeof nccltop, "%s/../nccltop", dirname(exe));
  TEST_RUN(no_command_writes_a_file_it_reads);
  TEST_RUN(existing_outputs_are_kept_without_force_and_replaced_with_it);
  TEST_RUN(a_fifo_given_as_a_recording_is_refused_at_once);
  TEST_RUN(a_record_time_beyond_its_chunk_is_one_error_line);
  TEST_RUN(a_quiet_day_costs_a_frame_not_a_frame_per_tick);
  TEST_RUN(frame_records_at_one_time_are_one_frame);
  TEST_RUN(times_out_of_range_are_refused_without_overflow);
  if (getenv("KEEP")) {
    fprintf(stderr, "kept %s\n", dir);
  } else {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return TEST_DONE();
}

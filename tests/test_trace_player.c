/* `nccltop sim --trace`: a recording played through the recording plugin
 * (tests/fixtures/recorder.c) gives back the same recording, for every ABI
 * the recorder writes (v3 .. v7, CE, KernelPhase, userTag, symmetric
 * kernels, PXN); a bad, truncated or oversized recording is one line naming
 * the file and line, exit status 2, and nothing played (the recording
 * plugin, which writes a line per call, wrote nothing). And the recording
 * plugin keeps a real clock, and buffers only when asked (real NCCL), but
 * for a simulator that drives it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <lzma.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "testlib.h"
#include "trace_canon.h"
#include "../plugin/nccl_profiler_abi.h"
#include "../proto/nccltop_proto.h"
#include "../sim/sim.h"

static char bindir[PATH_MAX], nccltop[PATH_MAX + 16], recorder[PATH_MAX + 32],
    recorder7[PATH_MAX + 32], work[64];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- files ---- */

static int spit(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, len, f);
  return fclose(f) == 0 && w == len ? 0 : -1;
}

static int zstd_file(const char *path, const char *data, size_t len) {
  size_t cap = ZSTD_compressBound(len);
  char *buf = malloc(cap);
  size_t n = buf ? ZSTD_compress(buf, cap, data, len, 3) : 0;
  int rc = buf && !ZSTD_isError(n) ? spit(path, buf, n) : -1;
  free(buf);
  return rc;
}

static int xz_file(const char *path, const char *data, size_t len) {
  size_t cap = len + len / 2 + 4096, out = 0;
  uint8_t *buf = malloc(cap);
  int rc = buf && lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, (const uint8_t *)data, len,
                                          buf, &out, cap) == LZMA_OK
               ? spit(path, (const char *)buf, out)
               : -1;
  free(buf);
  return rc;
}

/* ---- running nccltop sim --trace ---- */

typedef struct {
  int status; /* wait status, -1 when it had to be killed */
  char err[4096];
} run_result;

/* Runs nccltop with args (NULL-terminated), the recorder writing `out`;
 * its stderr kept. */
static void run_player(const char *const *args, const char *out, double seconds, run_result *r) {
  int fds[2];
  memset(r, 0, sizeof *r);
  r->status = -1;
  if (pipe(fds) != 0) return;
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(126);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    setenv("NT_RECORDER_FILE", out, 1);
    setenv("NT_RECORDER_MASK", "0xFFFF", 1);
    char *argv[32];
    int n = 0;
    argv[n++] = nccltop;
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    execv(nccltop, argv);
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  double end = now_s() + seconds;
  for (;;) {
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int left = (int)((end - now_s()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0) break;
    ssize_t n = read(fds[0], r->err + len, sizeof r->err - 1 - len);
    if (n <= 0) break;
    len += (size_t)n;
    if (len == sizeof r->err - 1) break;
  }
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (now_s() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fprintf(stderr, "    the player did not finish in %.0f s\n", seconds);
      return;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  r->status = st;
}

static int exit_code(const run_result *r) {
  return r->status >= 0 && WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

/* ---- the round trip ---- */

typedef struct {
  const char *label;
  int abi, nccl_version; /* 0: the simulator's default */
  bool v7;               /* the v7 recorder (recorder7.c) */
  bool ce, alltoall, graph, pxn, symmetric, net;
  uint64_t user_tag;
} trip;

static const trip trips[] = {
    {"v3 (NCCL 2.26)", .abi = 3},
    {"v4 (NCCL 2.27)", .abi = 4},
    {"v5 (NCCL 2.28) with all_to_all", .abi = 5, .alltoall = true},
    {"v5 with CUDA graphs", .abi = 5, .graph = true},
    {"v5 with a socket net plugin", .abi = 5, .net = true},
    {"v5 with PXN", .abi = 5, .pxn = true},
    {"v6 (NCCL 2.29) with copy-engine collectives", .nccl_version = 229, .ce = true},
    {"v7 (NCCL 2.31) with a userTag", .nccl_version = 231, .v7 = true, .user_tag = 7},
    {"v7 with symmetric kernels", .nccl_version = 231, .v7 = true, .symmetric = true},
};

/* A real-time simulated job recorded by the recorder (real clock, buffered). */
static int record_job(const trip *t, const char *path) {
  nt_sim_config c;
  nt_sim_defaults(&c);
  c.ranks = 2;
  c.comms = 2;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.abi = t->abi;
  if (t->nccl_version) c.nccl_version = t->nccl_version;
  c.ce = t->ce;
  c.alltoall = t->alltoall;
  c.graph = t->graph;
  c.pxn = t->pxn;
  c.symmetric = t->symmetric;
  c.user_tag = t->user_tag;
  if (t->net) c.net = NT_NET_SOCKET;
  c.plugin = t->v7 ? recorder7 : recorder;
  c.quiet = true;
  unlink(path);
  setenv("NT_RECORDER_FILE", path, 1);
  setenv("NT_RECORDER_MASK", "0xFFFF", 1);
  int rc = nt_sim_run(&c);
  unsetenv("NT_RECORDER_FILE");
  return rc;
}

static void replays_every_abi_as_recorded(void) {
  char rec[128], out[128];
  snprintf(rec, sizeof rec, "%s/job.trace", work);
  snprintf(out, sizeof out, "%s/replayed.trace", work);
  for (size_t i = 0; i < sizeof trips / sizeof trips[0]; i++) {
    const trip *t = &trips[i];
    CHECK(record_job(t, rec) == 0);
    unlink(out);
    const char *args[] = {
        "sim",     "--trace", rec, "--speed", "max", "--plugin", t->v7 ? recorder7 : recorder,
        "--quiet", NULL};
    run_result r;
    run_player(args, out, 120, &r);
    if (exit_code(&r) != 0) fprintf(stderr, "    %s: %s", t->label, r.err);
    CHECK(exit_code(&r) == 0);
    canon a, b;
    CHECK(canonicalize(rec, &a) == 0 && canonicalize(out, &b) == 0);
    bool same = a.lines > 100 && !strcmp(a.text, b.text);
    if (!same) {
      fprintf(stderr, "    %s: %d recorded calls, %d replayed\n", t->label, a.lines, b.lines);
      say_difference(a.text, b.text);
    } else {
      fprintf(stderr, "    %s: %d calls replayed as recorded\n", t->label, a.lines);
    }
    free(a.text);
    free(b.text);
    CHECK(same);
  }
}

/* ---- refusals ---- */

typedef struct {
  const char *label;
  const char *match;  /* the start of the line to replace */
  const char *with;   /* what goes there */
  const char *expect; /* in the error line (after the file's name) */
} breakage;

/* A small recording to break: init, a Coll with a ProxyOp and a step. */
static const char base[] =
    "10 10 1000 init v5 ctx=0x10101 name=- hash=abc nnodes=2 nranks=2 rank=0 log=1 fail=0\n"
    "10 10 2000 start 1 h=0x1001 ctx=0x10101 parent=0x0 rank=0 \n"
    "10 10 3000 start 2 h=0x1002 ctx=0x10101 parent=0x0 rank=0 seq=0 func=AllReduce count=1024 "
    "dtype=ncclFloat32 root=0 nch=1 algo=RING proto=LL pgroup=0x1001\n"
    "10 11 4000 start 8 h=0x1003 ctx=0x10101 parent=0x1002 rank=0 ch=0 peer=1 send=1 steps=1 "
    "chunk=4096 pid=10\n"
    "10 11 5000 start 16 h=0x1004 ctx=0x10101 parent=0x1003 rank=0 step=0\n"
    "10 11 6000 record h=0x1004 state=9 args=1 size=4096 appended=4096 ptimer=4096\n"
    "10 11 7000 stop h=0x1004\n"
    "10 11 8000 stop h=0x1003\n"
    "10 10 9000 stop h=0x1002\n"
    "10 10 9500 stop h=0x1001\n"
    "10 10 10000 finalize ctx=0x10101\n";

static const breakage breakages[] = {
    {"a bad number", "10 10 3000",
     "10 10 3000 start 2 h=0x1002 ctx=0x10101 parent=0x0 rank=0 "
     "seq=x func=AllReduce count=1024 dtype=ncclFloat32 root=0 nch=1 algo=RING proto=LL "
     "pgroup=0x1001",
     ":3: seq=x is not a number"},
    {"a missing field", "10 10 3000",
     "10 10 3000 start 2 h=0x1002 ctx=0x10101 parent=0x0 rank=0 "
     "seq=0 func=AllReduce count=1024 dtype=ncclFloat32 root=0 nch=1 proto=LL pgroup=0x1001",
     ":3: start without algo="},
    {"an unknown call", "10 11 7000", "10 11 7000 poke h=0x1004", ":7: unknown call 'poke'"},
    {"an unknown event type", "10 10 2000",
     "10 10 2000 start 3 h=0x1001 ctx=0x10101 parent=0x0 "
     "rank=0",
     ":2: start of an unknown event type '3'"},
    {"a type the ABI lacks", "10 10 2000",
     "10 10 2000 start 4096 h=0x1001 ctx=0x10101 "
     "parent=0x0 rank=0",
     ":2: event type 4096 does not exist in ABI v5"},
    {"a record after the stop", "10 11 8000",
     "10 11 8000 record h=0x1004 state=9 args=1 "
     "size=0 appended=0 ptimer=0",
     ":8: record of handle 0x1004 after its stop"},
    {"a stop of a handle never started", "10 11 7000", "10 11 7000 stop h=0x1999",
     ":7: stop of 0x1999 is no handle process 10 started"},
    {"a parent never started", "10 11 4000",
     "10 11 4000 start 8 h=0x1003 ctx=0x10101 "
     "parent=0x1777 rank=0 ch=0 peer=1 send=1 steps=1 chunk=4096 pid=10",
     ":4: parent 0x1777 is no handle process 10 started"},
    {"a parent that starts later by the times", "10 11 4000",
     "10 11 2500 start 8 h=0x1003 "
     "ctx=0x10101 parent=0x1002 rank=0 ch=0 peer=1 send=1 steps=1 chunk=4096 pid=10",
     "comes later by the recorded times"},
    {"a thread's clock going back", "10 11 7000", "10 11 10 stop h=0x1004",
     ":7: thread 11's clock goes back"},
    {"a context no init gave", "10 10 2000",
     "10 10 2000 start 1 h=0x1001 ctx=0x20202 "
     "parent=0x0 rank=0",
     ":2: context 0x20202 is not one a live init"},
    {"an init with no ABI", "10 10 1000",
     "10 10 1000 init v9 ctx=0x10101 name=- hash=abc "
     "nnodes=2 nranks=2 rank=0 log=1 fail=0",
     ":1: init names no ABI version"},
    {"a start before any init", "10 10 1000",
     "10 10 1000 start 1 h=0x1009 ctx=0x10101 "
     "parent=0x0 rank=0",
     ":1: a start before any init"},
    {"a line that is not a call", "10 11 5000", "hello", ":5: not '<pid> <tid> <time>"},
};

/* base with the line starting `match` replaced by `with`. */
static char *broken(const breakage *b) {
  size_t cap = sizeof base + 2048;
  char *out = malloc(cap);
  if (!out) return NULL;
  const char *at = strstr(base, b->match);
  const char *eol = at ? strchr(at, '\n') : NULL;
  if (!eol) {
    free(out);
    return NULL;
  }
  snprintf(out, cap, "%.*s%s%s", (int)(at - base), base, b->with, eol);
  return out;
}

/* The player refuses `path` in one line containing `expect`, exit 2, and
 * the recorder got no call. */
static bool refused(const char *path, const char *expect, const char *label) {
  char out[128];
  snprintf(out, sizeof out, "%s/played.trace", work);
  unlink(out);
  const char *args[] = {"sim", "--trace", path, "--speed", "max", "--plugin", recorder, NULL};
  run_result r;
  run_player(args, out, 60, &r);
  struct stat st;
  bool nothing_played = stat(out, &st) != 0;
  const char *nl = strchr(r.err, '\n');
  bool one_line = nl && nl[1] == '\0';
  bool named = strstr(r.err, path) != NULL && (!expect || strstr(r.err, expect) != NULL);
  bool ok = exit_code(&r) == 2 && nothing_played && one_line && named;
  if (!ok)
    fprintf(stderr, "    %s: exit %d, %s, said: %s", label, exit_code(&r),
            nothing_played ? "nothing played" : "PLAYED", r.err);
  return ok;
}

static void refuses_broken_recordings_before_playing(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/broken.trace", work);
  /* The unbroken one plays, plain, xz- or zstd-compressed. */
  char xz[128], zst[128];
  snprintf(xz, sizeof xz, "%s/base.trace.xz", work);
  snprintf(zst, sizeof zst, "%s/base.trace.zst", work);
  CHECK(spit(path, base, strlen(base)) == 0);
  CHECK(xz_file(xz, base, strlen(base)) == 0 && zstd_file(zst, base, strlen(base)) == 0);
  const char *const ok_paths[] = {path, xz, zst};
  for (int i = 0; i < 3; i++) {
    const char *args[] = {"sim",      "--trace", ok_paths[i], "--speed", "max",
                          "--plugin", recorder,  "--quiet",   NULL};
    run_result r;
    char out[128];
    snprintf(out, sizeof out, "%s/played.trace", work);
    unlink(out);
    run_player(args, out, 60, &r);
    if (exit_code(&r) != 0) fprintf(stderr, "    %s: %s", ok_paths[i], r.err);
    CHECK(exit_code(&r) == 0);
    char *played = slurp(out, NULL);
    int lines = 0;
    for (char *p = played; p && (p = strchr(p, '\n')); p++) lines++;
    free(played);
    CHECK(lines == 13); /* set_clock, the 11 calls, the flush before the finalize */
  }
  for (size_t i = 0; i < sizeof breakages / sizeof breakages[0]; i++) {
    const breakage *b = &breakages[i];
    char *text = broken(b);
    CHECK(text != NULL);
    int rc = spit(path, text, strlen(text));
    free(text);
    CHECK(rc == 0);
    CHECK(refused(path, b->expect, b->label));
  }
  /* A NUL byte inside line 5. */
  char nul[sizeof base];
  memcpy(nul, base, sizeof base);
  char *at = strstr(nul, "10 11 5000");
  CHECK(at != NULL);
  at[4] = '\0';
  CHECK(spit(path, nul, sizeof base - 1) == 0);
  CHECK(refused(path, ":5: a NUL byte", "a NUL byte"));
}

static void refuses_truncated_and_oversized_input(void) {
  char path[128];
  /* The last line cut short. */
  snprintf(path, sizeof path, "%s/cut.trace", work);
  CHECK(spit(path, base, strlen(base) - 5) == 0);
  CHECK(refused(path, ":11: truncated: the last line has no end", "a cut line"));
  /* An xz stream cut short (of 40 processes: base with pids 50 .. 89). */
  size_t bl = strlen(base), n = bl * 40;
  char *big = malloc(n + 1);
  CHECK(big != NULL);
  for (size_t i = 0; i < 40; i++) {
    memcpy(big + i * bl, base, bl);
    for (char *l = big + i * bl; l < big + (i + 1) * bl; l = strchr(l, '\n') + 1) {
      l[0] = (char)('5' + i / 10);
      l[1] = (char)('0' + i % 10);
    }
  }
  big[n] = '\0';
  snprintf(path, sizeof path, "%s/whole.trace.xz", work);
  int rc = xz_file(path, big, n);
  free(big);
  CHECK(rc == 0);
  size_t len;
  char *xz = slurp(path, &len);
  CHECK(xz != NULL && len > 64);
  snprintf(path, sizeof path, "%s/cut.trace.xz", work);
  rc = spit(path, xz, len - 40);
  free(xz);
  CHECK(rc == 0);
  CHECK(refused(path, "truncated xz data", "a cut xz stream"));
  /* zstd that is not. */
  snprintf(path, sizeof path, "%s/bad.trace.zst", work);
  CHECK(spit(path, "\x28\xb5\x2f\xfd garbage garbage", 20) == 0);
  CHECK(refused(path, "corrupt zstd data", "bad zstd"));
  /* A line longer than the recorder ever writes. */
  char *longl = malloc(4096);
  CHECK(longl != NULL);
  memset(longl, 'a', 4000);
  memcpy(longl + 4000, "\n", 2);
  snprintf(path, sizeof path, "%s/long.trace", work);
  rc = spit(path, longl, 4001);
  free(longl);
  CHECK(rc == 0);
  CHECK(refused(path, ":1: a line longer than 1024 bytes", "a long line"));
  /* More lines than a recording may hold: 2,000,001 of the simulator's
   * "flush" lines (skipped, but counted), xz-compressed to a few KiB. */
  const char *flush = "10 10 0 flush\n";
  size_t fl = strlen(flush), lines = 2000001;
  char *many = malloc(fl * lines);
  CHECK(many != NULL);
  for (size_t i = 0; i < lines; i++) memcpy(many + i * fl, flush, fl);
  snprintf(path, sizeof path, "%s/many.trace.xz", work);
  rc = xz_file(path, many, fl * lines);
  free(many);
  CHECK(rc == 0);
  CHECK(refused(path, "more than 2000000 lines", "too many lines"));
  /* A directory with no recording in it. */
  snprintf(path, sizeof path, "%s/empty", work);
  CHECK(mkdir(path, 0700) == 0);
  CHECK(refused(path, "no recordings in it", "an empty directory"));
}

/* Options the recording decides are refused, and so are bad values. */
static void refuses_options_that_do_not_apply(void) {
  char path[128], out[128];
  snprintf(path, sizeof path, "%s/ok.trace", work);
  snprintf(out, sizeof out, "%s/played.trace", work);
  CHECK(spit(path, base, strlen(base)) == 0);
  static const char *const bad[][3] = {
      {"--ranks", "4", "--ranks does not go with --trace"},
      {"--speed", "0", "--speed needs a factor from 0.001 to 1000000, or max"},
      {"--speed", "fast", "--speed needs"},
      {"--linger", "-1", "--linger needs seconds"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[] = {"sim", "--trace", path, bad[i][0], bad[i][1], NULL};
    run_result r;
    unlink(out);
    run_player(args, out, 30, &r);
    if (exit_code(&r) != 2 || !strstr(r.err, bad[i][2])) fprintf(stderr, "    said: %s", r.err);
    CHECK(exit_code(&r) == 2);
    CHECK(strstr(r.err, bad[i][2]) != NULL);
  }
}

/* ---- the recorder itself (tests/gpu/run.sh --record) ---- */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t fixed_clock(void) {
  return 424242;
}

static size_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* In a child: the recorder loaded as NCCL loads it, one communicator with
 * one event; `buffer` sets NT_RECORDER_BUFFER=1, `sim_clock` installs a
 * simulator's clock first. Exits with a code saying what went wrong. */
static int recorder_child(const char *out, bool buffer, bool sim_clock) {
  setenv("NT_RECORDER_FILE", out, 1);
  if (buffer) setenv("NT_RECORDER_BUFFER", "1", 1);
  void *lib = dlopen(recorder, RTLD_NOW | RTLD_LOCAL);
  const nt_profiler_v5 *v5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  void (*set_clock)(uint64_t(*)(void)) = lib ? dlsym(lib, "nccltop_sim_set_clock") : NULL;
  if (!v5 || !set_clock) return 10;
  if (sim_clock) set_clock(fixed_clock);
  void *ctx = NULL, *h = NULL;
  int mask = 0;
  if (v5->init(&ctx, 0x1234, &mask, "c", 1, 2, 0, NULL) != 0) return 11;
  nt_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = NT_EV_GROUP;
  v5->startEvent(ctx, &h, &d);
  v5->stopEvent(h);
  /* Buffered: nothing written before the finalize; at once otherwise. */
  size_t before = file_size(out);
  if (buffer && !sim_clock && before != 0) return 12;
  if ((!buffer || sim_clock) && before == 0) return 13;
  /* A child forked now drops what it inherited: its exit writes nothing. */
  pid_t kid = fork();
  if (kid == 0) _exit(0);
  if (kid < 0 || waitpid(kid, NULL, 0) != kid) return 14;
  if (buffer && !sim_clock && file_size(out) != 0) return 15;
  v5->finalize(ctx);
  return file_size(out) > before ? 0 : 16;
}

static void recorder_keeps_real_time_and_buffers_on_request(void) {
  char out[128];
  snprintf(out, sizeof out, "%s/rec.trace", work);
  static const struct {
    bool buffer, sim_clock;
  } modes[] = {{false, false}, {true, false}, {true, true}};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    unlink(out);
    uint64_t t0 = mono_ns();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(recorder_child(out, modes[m].buffer, modes[m].sim_clock));
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    uint64_t t1 = mono_ns();
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fprintf(stderr, "    mode %zu: the child exited %d\n", m,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Every line once (init, start, stop, finalize; set_clock with a
     * simulator), each with the clock it should have. */
    char *text = slurp(out, NULL);
    CHECK(text != NULL);
    int lines = 0, good = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      unsigned long long t;
      lines++;
      if (sscanf(l, "%*d %*d %llu", &t) != 1) continue;
      good += modes[m].sim_clock ? t == 424242 : t >= t0 && t <= t1;
    }
    free(text);
    if (good != lines || lines != (modes[m].sim_clock ? 5 : 4))
      fprintf(stderr, "    mode %zu: %d lines, %d with the right clock\n", m, lines, good);
    CHECK(lines == (modes[m].sim_clock ? 5 : 4) && good == lines);
  }
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s", dirname(exe));
  snprintf(nccltop, sizeof nccltop, "%s/../nccltop", bindir);
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", bindir);
  snprintf(recorder7, sizeof recorder7, "%s/librecorder7.so", bindir);
  snprintf(work, sizeof work, "/tmp/nccltop-trace-%d", (int)getpid());
  if (mkdir(work, 0700) != 0) {
    fprintf(stderr, "cannot make %s: %s\n", work, strerror(errno));
    return 1;
  }
  unsetenv("NCCLTOP_PLUGIN");
  TEST_RUN(refuses_broken_recordings_before_playing);
  TEST_RUN(refuses_truncated_and_oversized_input);
  TEST_RUN(refuses_options_that_do_not_apply);
  TEST_RUN(recorder_keeps_real_time_and_buffers_on_request);
  TEST_RUN(replays_every_abi_as_recorded);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", work);
  return TEST_DONE();
}

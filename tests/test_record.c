/* Record and replay end to end: a deterministic simulated job (real rank
 * processes, the real plugin, ZeroMQ) watched by `nccltop -b --json
 * --record FILE`; `nccltop replay FILE -b --json --speed max` must print
 * the same frames, byte for byte (and the simulator's expected totals); a
 * cut and a corrupted file replay what came before; --max-size rotates;
 * the black box (`nccltop record --last --until-alert
 * root`) writes the history before a --stall-rank stall; the Chrome trace
 * export is JSON with one slice per operation done. */
#include <fcntl.h>
#include <sys/stat.h>

#include "scenario_harness.h"
#include "../monitor/feeds/recording.h"

static char dir[32];

/* Runs argv to its end (at most `seconds`), stdout and stderr to files;
 * its exit status, -1 when it had to be killed. */
static int run(char *const argv[], const char *out, const char *err, double seconds) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = wait_exit(pid, seconds);
  if (st == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- a strict reader of Chrome trace JSON, as Perfetto reads it ---- */

typedef struct {
  double pid, tid, ts, end;
  const char *cat, *id, *name;
  int ph; /* 'X', 'b', 'e' */
  int order;
} tr_ev;

static int tr_cmp_x(const void *a, const void *b) {
  const tr_ev *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->end > y->end ? -1 : x->end < y->end; /* the outer one first */
}

static int tr_cmp_async(const void *a, const void *b) {
  const tr_ev *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  int c = strcmp(x->cat, y->cat);
  if (!c) c = strcmp(x->id, y->id);
  if (!c) c = strcmp(x->name, y->name);
  if (c) return c;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->ph != y->ph) return x->ph == 'b' ? -1 : 1; /* a zero-length slice: begin first */
  return x->order - y->order;
}

/* Perfetto's rules for JSON traces (its FAQ: slices on one track must
 * nest; async slices pair by id): every event has ph, ts and pid;
 * complete events (X) of one (pid, tid) are nested or disjoint, never
 * overlapping; every async begin (b) has its end (e) with the same pid,
 * cat, id and name, not before it, and an id is not begun again while
 * open. Returns the violations (the first few printed); *nasync: the
 * async slices. */
static int trace_violations(const cJSON *events, int *nasync) {
  int n = cJSON_GetArraySize(events), nx = 0, na = 0, bad = 0;
  tr_ev *xs = calloc((size_t)n + 1, sizeof *xs), *as = calloc((size_t)n + 1, sizeof *as);
  if (!xs || !as) {
    free(xs);
    free(as);
    return 1;
  }
  const cJSON *e;
  int k = 0;
  cJSON_ArrayForEach(e, events) {
    const char *ph = str(e, "ph");
    if (!*ph || !cJSON_IsNumber(get(e, "ts")) || !cJSON_IsNumber(get(e, "pid"))) {
      if (bad++ < 3) fprintf(stderr, "    event %d: no ph, ts or pid\n", k);
      continue;
    }
    tr_ev v = {.pid = num(e, "pid"),
               .tid = num(e, "tid"),
               .ts = num(e, "ts"),
               .cat = str(e, "cat"),
               .id = str(e, "id"),
               .name = str(e, "name"),
               .ph = ph[0],
               .order = k++};
    if (!strcmp(ph, "X")) {
      v.end = v.ts + num(e, "dur");
      if (!(num(e, "dur") >= 0) && bad++ < 3) fprintf(stderr, "    X %s: no dur\n", v.name);
      xs[nx++] = v;
    } else if (!strcmp(ph, "b") || !strcmp(ph, "e")) {
      if (!*v.id && bad++ < 3) fprintf(stderr, "    async %s: no id\n", v.name);
      as[na++] = v;
    }
  }
  qsort(xs, (size_t)nx, sizeof *xs, tr_cmp_x);
  /* A stack per (pid, tid): pop what ended; what is left must hold us. */
  tr_ev **stack = calloc((size_t)nx + 1, sizeof *stack);
  int depth = 0;
  for (int i = 0; stack && i < nx; i++) {
    if (i && (xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid)) depth = 0;
    while (depth && stack[depth - 1]->end <= xs[i].ts) depth--;
    if (depth && xs[i].end > stack[depth - 1]->end) {
      if (bad++ < 3)
        fprintf(stderr, "    pid %g tid %g: %s [%g, %g] overlaps %s [%g, %g] without nesting\n",
                xs[i].pid, xs[i].tid, xs[i].name, xs[i].ts, xs[i].end, stack[depth - 1]->name,
                stack[depth - 1]->ts, stack[depth - 1]->end);
      continue;
    }
    stack[depth++] = &xs[i];
  }
  free(stack);
  qsort(as, (size_t)na, sizeof *as, tr_cmp_async);
  int open = 0, slices = 0;
  for (int i = 0; i < na; i++) {
    bool same = i && as[i].pid == as[i - 1].pid && !strcmp(as[i].cat, as[i - 1].cat) &&
                !strcmp(as[i].id, as[i - 1].id) && !strcmp(as[i].name, as[i - 1].name);
    if (!same) {
      if (open && bad++ < 3)
        fprintf(stderr, "    async %s id %s: begun, never ended\n", as[i - 1].name, as[i - 1].id);
      open = 0;
    }
    if (as[i].ph == 'b') {
      if (open && bad++ < 3)
        fprintf(stderr, "    async %s id %s: begun again while open\n", as[i].name, as[i].id);
      open++;
      slices++;
    } else if (!open) {
      if (bad++ < 3)
        fprintf(stderr, "    async %s id %s: ended, not begun\n", as[i].name, as[i].id);
    } else {
      open--;
    }
  }
  if (open && bad++ < 3) fprintf(stderr, "    async slice begun, never ended\n");
  free(xs);
  free(as);
  *nasync = slices;
  return bad;
}

/* Processes in rank order within each communicator: process_sort_index
 * grows with the rank of the processes named "... rank R/N COMM". */
static bool processes_in_rank_order(const cJSON *events) {
  struct {
    double pid, index;
    int rank;
    char comm[64];
  } p[256];
  int n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    if (strcmp(str(e, "ph"), "M") || n == 256) continue;
    double pid = num(e, "pid");
    int at = -1;
    for (int i = 0; i < n; i++)
      if (p[i].pid == pid) at = i;
    if (at < 0) {
      at = n++;
      memset(&p[at], 0, sizeof p[at]);
      p[at].pid = pid;
      p[at].index = NAN;
      p[at].rank = -1;
    }
    if (!strcmp(str(e, "name"), "process_sort_index"))
      p[at].index = num(get(e, "args"), "sort_index");
    const char *rk = strstr(str(get(e, "args"), "name"), " rank ");
    if (!strcmp(str(e, "name"), "process_name") && rk)
      if (sscanf(rk, " rank %d/%*s %63s", &p[at].rank, p[at].comm) != 2) p[at].rank = -1;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (p[i].rank >= 0 && p[j].rank > p[i].rank && !strcmp(p[i].comm, p[j].comm) &&
          !(p[i].index < p[j].index)) {
        fprintf(stderr, "    rank %d (sort index %g) is not before rank %d (%g) in %s\n", p[i].rank,
                p[i].index, p[j].rank, p[j].index, p[i].comm);
        return false;
      }
  return n > 0;
}

static char *slurp(const char *p) {
  FILE *f = fopen(p, "r");
  if (!f) return NULL;
  char *buf = malloc(64 << 20);
  size_t n = buf ? fread(buf, 1, (64 << 20) - 1, f) : 0;
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The frames of a JSON-lines file, parsed; *n how many. */
static cJSON **frames_of(const char *p, int *n) {
  char *text = slurp(p);
  *n = 0;
  if (!text) return NULL;
  cJSON **out = calloc(4096, sizeof *out);
  for (char *line = text, *nl; out && *line && *n < 4096; line = nl + 1) {
    nl = strchr(line, '\n');
    if (!nl) break;
    *nl = '\0';
    out[(*n)++] = cJSON_Parse(line);
  }
  free(text);
  return out;
}

static void free_frames(cJSON **f, int n) {
  for (int i = 0; f && i < n; i++) cJSON_Delete(f[i]);
  free(f);
}

/* Whether a frame shows the simulator's expected totals; why not in why. */
static bool totals_match(const nt_sim_config *cfg, const cJSON *frame, char *why, size_t cap) {
  if (!frame) return snprintf(why, cap, "no frame"), false;
  for (int r = 0; r < cfg->ranks; r++) {
    for (int k = 0; k < cfg->comms; k++) {
      const cJSON *rank = find_rank(frame, nt_sim_comm_hash(k), r);
      if (!rank) return snprintf(why, cap, "rank %d comm %d missing", r, k), false;
      nt_sim_comm_expect ce;
      nt_sim_expect_comm(cfg, r, k, &ce);
      if ((uint64_t)num(rank, "colls") != ce.colls)
        return snprintf(why, cap, "rank %d colls %.0f want %" PRIu64, r, num(rank, "colls"),
                        ce.colls),
               false;
      for (int c = 0; c < cfg->channels; c++) {
        for (int d = 0; d < 2; d++) {
          nt_sim_channel_expect e;
          nt_sim_expect_channel(cfg, r, k, c, d, &e);
          const cJSON *ch, *found = NULL;
          cJSON_ArrayForEach(ch, get(rank, "channels")) {
            if (num(ch, "channel") == c && !strcmp(str(ch, "dir"), d ? "recv" : "send")) found = ch;
          }
          if (!found || (uint64_t)num(found, "steps") != e.steps ||
              (uint64_t)num(found, "bytes") != e.bytes)
            return snprintf(why, cap, "rank %d comm %d channel %d %s differs", r, k, c,
                            d ? "recv" : "send"),
                   false;
        }
      }
    }
  }
  return true;
}

static void path_in(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

/* A deterministic job recorded by the batch viewer, replayed. */
static nt_sim_config job;
static char rec[64];

static void replay_prints_the_live_viewers_totals_and_frames(void) {
  base_config(&job, dir);
  job.ranks = 3;
  job.comms = 2;
  job.channels = 3;
  job.steps = 4;
  job.iterations = 5;
  job.deterministic = true;
  job.linger_s = 30;
  pid_t sim = nt_sim_spawn(&job);
  CHECK(sim > 0);
  char live[64], replay[64], err[64];
  path_in(rec, sizeof rec, "job.ntr");
  path_in(live, sizeof live, "live.json");
  path_in(replay, sizeof replay, "replay.json");
  path_in(err, sizeof err, "err.txt");
  bool up = wait_publishers(dir, job.ranks, 30);
  char *lv[] = {nccltop, "-b",    "--json", "-n",       "100", "-d",
                "100",   "--dir", dir,      "--record", rec,   NULL};
  int rc = up ? run(lv, live, err, 60) : -2;
  stop_group(&sim);
  CHECK(up);
  CHECK_EQ_U64(rc, 0);
  char *rv[] = {nccltop, "replay", rec, "-b", "--json", "-d", "100", "--speed", "max", NULL};
  CHECK_EQ_U64(run(rv, replay, err, 60), 0);
  int nl, nr;
  cJSON **lf = frames_of(live, &nl), **rf = frames_of(replay, &nr);
  char why[256] = "";
  bool live_ok = nl == 100 && totals_match(&job, lf[nl - 1], why, sizeof why);
  if (!live_ok) fprintf(stderr, "    live: %d frames, %s\n", nl, why);
  bool replay_ok = nr == 100 && totals_match(&job, rf[nr - 1], why, sizeof why);
  if (!replay_ok) fprintf(stderr, "    replay: %d frames, %s\n", nr, why);
  /* Frame by frame: the batch monitor recorded when it printed each frame
   * (FRAME records), so the replay prints the same frames, byte for byte. */
  char *lt = slurp(live), *rt = slurp(replay);
  bool same = lt && rt && !strcmp(lt, rt);
  if (!same && lt && rt) {
    int line = 1;
    size_t k = 0;
    while (lt[k] && lt[k] == rt[k]) line += lt[k++] == '\n';
    fprintf(stderr, "    live and replayed frames differ at frame %d, byte %zu: ...%.60s\n", line,
            k, lt + (k > 30 ? k - 30 : 0));
  }
  free(lt);
  free(rt);
  free_frames(lf, nl);
  free_frames(rf, nr);
  CHECK(live_ok);
  CHECK(replay_ok);
  CHECK(same);
}

/* At a finite pace (x20: the 10 s recording in about half a second) the
 * replay waits for each frame in wall time, and still prints the live
 * viewer's frames byte for byte: each is built at its recorded time, not
 * when the wall clock got there (a replay whose frames drifted to the wall
 * clock would show other times, rates and ages). */
static void replay_at_a_finite_speed_prints_the_same_frames(void) {
  char live[64], paced[64], err[64];
  path_in(live, sizeof live, "live.json");
  path_in(paced, sizeof paced, "paced.json");
  path_in(err, sizeof err, "paced.err");
  char *rv[] = {nccltop, "replay", rec, "-b", "--json", "-d", "100", "--speed", "20", NULL};
  CHECK_EQ_U64(run(rv, paced, err, 60), 0);
  char *lt = slurp(live), *pt = slurp(paced);
  bool same = lt && pt && *lt && !strcmp(lt, pt);
  if (!same && lt && pt) {
    size_t k = 0;
    while (lt[k] && lt[k] == pt[k]) k++;
    fprintf(stderr, "    live and paced frames differ at byte %zu: ...%.60s\n", k,
            pt + (k > 30 ? k - 30 : 0));
  }
  free(lt);
  free(pt);
  CHECK(same);
}

/* The same file cut short and corrupted in the middle, through the CLI. */
static void replay_of_a_cut_or_corrupted_file_keeps_what_came_before(void) {
  static char bytes[16 << 20];
  FILE *f = fopen(rec, "rb");
  CHECK(f != NULL);
  size_t n = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  CHECK(n > 1000);
  char cut[64], out[64], err[64];
  path_in(cut, sizeof cut, "cut.ntr");
  path_in(out, sizeof out, "cut.json");
  path_in(err, sizeof err, "cut.err");
  f = fopen(cut, "wb");
  bool ok = f && fwrite(bytes, 1, n * 2 / 3, f) == n * 2 / 3;
  if (f) fclose(f);
  CHECK(ok);
  char *rv[] = {nccltop, "replay", cut, "-b", "--json", "-d", "100", "--speed", "max", NULL};
  int rc = run(rv, out, err, 60);
  char *e = slurp(err);
  int nf;
  cJSON **fr = frames_of(out, &nf);
  free_frames(fr, nf);
  bool said = e && strstr(e, "truncated at offset");
  if (!said) fprintf(stderr, "    stderr: %s\n", e ? e : "?");
  free(e);
  CHECK_EQ_U64(rc, 0);
  CHECK(said);
  CHECK(nf > 15);
  /* Corrupt the middle: replay stops there, exit 1, one line. */
  nt_rec_reader *r = nt_rec_open(rec, NULL, 0);
  CHECK(r != NULL);
  nt_rec_seek_point idx[64];
  uint32_t ni = nt_rec_index(r, idx, 64);
  nt_rec_close_reader(r);
  CHECK(ni >= 2);
  for (int k = 0; k < 32; k++) bytes[idx[1].offset + NT_REC_CHUNK_HEADER + 40 + k] ^= 0x33;
  f = fopen(cut, "wb");
  ok = f && fwrite(bytes, 1, n, f) == n;
  if (f) fclose(f);
  CHECK(ok);
  rc = run(rv, out, err, 60);
  e = slurp(err);
  fr = frames_of(out, &nf);
  free_frames(fr, nf);
  said = e && strstr(e, "corrupt at offset") && strchr(e, '\n') == strrchr(e, '\n');
  if (!said) fprintf(stderr, "    stderr: %s\n", e ? e : "?");
  free(e);
  CHECK_EQ_U64(rc, 1);
  CHECK(said);
  /* The frames of the first chunk's span, one every 100 ms (the first
   * message comes when the publishers have found the viewer's socket). */
  int want = (int)((idx[1].first_ns - idx[0].first_ns) / 100000000ull);
  if (nf < want)
    fprintf(
        stderr,
        "    %d frames before the corrupt chunk, which starts at %.2f s (the first at %.2f s)\n",
        nf, (double)idx[1].first_ns / 1e9, (double)idx[0].first_ns / 1e9);
  CHECK(nf >= want);
}

/* The black box: a job whose rank 1 stalls 5 s in; `nccltop record --last
 * 4s --until-alert root` writes the 4 s before the alert (the stall and the
 * healthy seconds before it) with the ranks' introductions, and a replay
 * of that file names the same root. */
static void the_black_box_writes_the_history_before_a_stall(void) {
  char bdir[32];
  snprintf(bdir, sizeof bdir, "/tmp/nccltop-bb-XXXXXX");
  CHECK(mkdtemp(bdir) != NULL);
  nt_sim_config c;
  base_config(&c, bdir);
  c.ranks = 4;
  c.channels = 2;
  c.duration_s = 40;
  c.stall_rank = 1;
  c.stall_after_s = 5;
  pid_t sim = nt_sim_spawn(&c);
  bool up = sim > 0 && wait_publishers(bdir, c.ranks, 30);
  char box[64], out[64], err[64];
  path_in(box, sizeof box, "box.ntr");
  path_in(out, sizeof out, "box.out");
  path_in(err, sizeof err, "box.err");
  double t0 = now_s();
  char *av[] = {nccltop,         "record", box,       "--dir", bdir,         "--last", "4s",
                "--until-alert", "root",   "--after", "1s",    "--stall-ms", "1000",   NULL};
  int rc = up ? run(av, out, err, 30) : -2;
  double took = now_s() - t0;
  stop_group(&sim);
  remove_dir(bdir);
  char *e = slurp(err);
  fprintf(stderr, "    after %.1f s: %s", took, e ? e : "?\n");
  bool said = e && strstr(e, "alert root") && strstr(e, "of history");
  free(e);
  CHECK(up);
  CHECK_EQ_U64(rc, 0);
  CHECK(said);
  /* What the file holds: every rank's hello, snapshots of the last 4 s
   * before the alert (not the first seconds), then 1 s more. */
  char why[700] = "";
  nt_rec_reader *r = nt_rec_open(box, why, sizeof why);
  CHECK(r != NULL);
  nt_rec_record x;
  int hellos = 0, snaps = 0;
  double first_snap = -1, last = 0;
  while ((rc = nt_rec_next(r, &x, why, sizeof why)) == 1) {
    double t = x.t_ns / 1e9;
    bool snap = x.topic_len == strlen(NT_TOPIC_SNAPSHOT) && !memcmp(x.topic, NT_TOPIC_SNAPSHOT, 11);
    hellos += x.topic_len == strlen(NT_TOPIC_HELLO) && !memcmp(x.topic, NT_TOPIC_HELLO, 13);
    if (snap && first_snap < 0) first_snap = t;
    snaps += snap;
    last = t;
  }
  nt_rec_close_reader(r);
  fprintf(stderr, "    %d hellos, %d snapshots from %.2f s to %.2f s\n", hellos, snaps, first_snap,
          last);
  CHECK_EQ_U64(rc, 0);
  CHECK(hellos >= c.ranks);
  CHECK(first_snap >= 1.0);        /* older history was dropped */
  CHECK(last - first_snap >= 4.0); /* the window, and the second after */
  CHECK(last - first_snap <= 4.0 + 1.0 + 1.5);
  CHECK(snaps >= c.ranks * 4 * 10); /* 20 snapshots a second per rank, most of them */
  /* Replayed, it names rank 1 root. */
  char *rv[] = {nccltop,      "replay", box,       "-b",  "--json",
                "--stall-ms", "1000",   "--speed", "max", NULL};
  CHECK_EQ_U64(run(rv, out, err, 60), 0);
  int nf;
  cJSON **fr = frames_of(out, &nf);
  bool root = false;
  for (int i = 0; i < nf; i++) {
    const cJSON *a;
    cJSON_ArrayForEach(a, get(fr[i], "alerts")) {
      root |= !strcmp(str(a, "kind"), "root") && num(a, "rank") == 1;
    }
  }
  free_frames(fr, nf);
  CHECK(root);
  /* Its trace: the counter tracks of every rank, and the root alert as an
   * instant on rank 1's process. */
  char trace[64];
  path_in(trace, sizeof trace, "box.json");
  char *ev[] = {nccltop, "export", box, "--chrome-trace", trace, "--stall-ms", "1000", NULL};
  CHECK_EQ_U64(run(ev, out, err, 60), 0);
  char *text = slurp(trace);
  cJSON *t = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(t != NULL);
  /* Real-time ranks enqueue ahead: their operations overlap, and the
   * trace still reads as Perfetto requires. */
  int nasync = 0, violations = trace_violations(get(t, "traceEvents"), &nasync);
  bool ordered = processes_in_rank_order(get(t, "traceEvents"));
  int waits = 0, rates = 0, states = 0, roots = 0, rank1 = -1, p2p = 0;
  const cJSON *ev2;
  cJSON_ArrayForEach(ev2, get(t, "traceEvents")) {
    const char *ph = str(ev2, "ph"), *name = str(ev2, "name");
    if (!strcmp(ph, "M") && !strcmp(name, "process_name") &&
        strstr(str(get(ev2, "args"), "name"), " rank 1/4 "))
      rank1 = (int)num(ev2, "pid");
    waits += !strcmp(ph, "C") && !strcmp(name, "channel waits (ms/s)") &&
             num(get(ev2, "args"), "recv_gpu_wait") >= 0;
    rates += !strcmp(ph, "C") && !strcmp(name, "bytes/s");
    p2p += !strcmp(ph, "b") && !strcmp(str(ev2, "cat"), "p2p") &&
           (!strcmp(name, "Send") || !strcmp(name, "Recv"));
    states += !strcmp(ph, "C") && !strcmp(name, "proxy thread states (share)");
    roots += !strcmp(ph, "i") && !strcmp(name, "alert: root") && num(ev2, "pid") == rank1;
  }
  cJSON_Delete(t);
  fprintf(stderr,
          "    trace: %d wait, %d bytes/s, %d proxy samples, %d p2p slices, %d root alerts on "
          "rank 1\n",
          waits, rates, states, p2p, roots);
  CHECK(waits >= 4 * 30 && rates == waits && states == waits);
  CHECK(roots >= 1);
  CHECK(p2p > 0);
  CHECK_EQ_U64(violations, 0);
  CHECK(nasync > 0 && ordered);
}

/* The deterministic job's recording as a Chrome trace: JSON a parser
 * takes, a named process per rank, one slice per operation done (the
 * replay's count), each with its function, size, algorithm, protocol and
 * phase. */
static void the_chrome_trace_has_a_slice_per_operation_done(void) {
  char trace[64], out[64], err[64];
  path_in(trace, sizeof trace, "trace.json");
  path_in(out, sizeof out, "export.out");
  path_in(err, sizeof err, "export.err");
  char *av[] = {nccltop, "export", rec, "--chrome-trace", trace, NULL};
  CHECK_EQ_U64(run(av, out, err, 60), 0);
  char *text = slurp(trace);
  cJSON *t = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(t != NULL);
  int slices = 0, named = 0, bad = 0, coll = 0, nasync = 0;
  int violations = trace_violations(get(t, "traceEvents"), &nasync);
  bool ordered = processes_in_rank_order(get(t, "traceEvents"));
  const cJSON *e;
  cJSON_ArrayForEach(e, get(t, "traceEvents")) {
    const char *ph = str(e, "ph");
    if (!strcmp(ph, "b")) { /* an operation's async slice; its end pairs by id */
      slices++;
      const cJSON *a = get(e, "args");
      coll += !strcmp(str(e, "cat"), "collective");
      if (!*str(a, "function") || num(a, "bytes") <= 0 || !*str(a, "algorithm") ||
          !*str(a, "protocol") || !cJSON_IsString(get(a, "phase")))
        bad++;
    } else if (!strcmp(ph, "M") && !strcmp(str(e, "name"), "process_name")) {
      char host[64];
      unsigned pid;
      int r, n;
      named +=
          sscanf(str(get(e, "args"), "name"), "%63[^:]:%u rank %d/%d", host, &pid, &r, &n) == 4 &&
          n == job.ranks;
    }
  }
  cJSON_Delete(t);
  /* Operations done, as the replay's last frame counts them. */
  char replay[64];
  path_in(replay, sizeof replay, "replay.json");
  int nf;
  cJSON **fr = frames_of(replay, &nf);
  double done = 0;
  cJSON_ArrayForEach(e, get(fr[nf - 1], "collectives")) done += num(e, "done");
  free_frames(fr, nf);
  fprintf(stderr, "    %d slices (%d collectives), %.0f operations done, %d ranks named\n", slices,
          coll, done, named);
  CHECK_EQ_U64(bad, 0);
  CHECK_EQ_U64(violations, 0);
  CHECK_EQ_U64(nasync, slices);
  CHECK(ordered);
  CHECK_EQ_U64(named, job.ranks * job.comms);
  CHECK_EQ_U64(slices, (uint64_t)done);
  CHECK_EQ_U64(slices, job.ranks * job.comms * job.iterations * 1);
}

/* Counts a recording's records: hellos, and all; -1 on a read error. */
static int count_records(const char *p, int *hellos) {
  char why[700];
  nt_rec_reader *r = nt_rec_open(p, why, sizeof why);
  if (!r) return fprintf(stderr, "    %s\n", why), -1;
  nt_rec_record x;
  int n = 0, rc;
  *hellos = 0;
  while ((rc = nt_rec_next(r, &x, why, sizeof why)) == 1) {
    n++;
    *hellos += x.topic_len == strlen(NT_TOPIC_HELLO) && !memcmp(x.topic, NT_TOPIC_HELLO, 13);
  }
  nt_rec_close_reader(r);
  return rc == 0 ? n : -1;
}

/* --max-size: the file moves to FILE.1 at the size, and the new FILE
 * starts with every publisher's hello, so it replays alone. */
static void max_size_rotates_and_each_file_replays_alone(void) {
  char rdir[32];
  snprintf(rdir, sizeof rdir, "/tmp/nccltop-rot-XXXXXX");
  CHECK(mkdtemp(rdir) != NULL);
  nt_sim_config c;
  base_config(&c, rdir);
  c.ranks = 3;
  c.duration_s = 30;
  pid_t sim = nt_sim_spawn(&c);
  bool up = sim > 0 && wait_publishers(rdir, c.ranks, 30);
  char f[64], f1[80], out[64], err[64];
  path_in(f, sizeof f, "rot.ntr");
  snprintf(f1, sizeof f1, "%s.1", f);
  path_in(out, sizeof out, "rot.out");
  path_in(err, sizeof err, "rot.err");
  char *av[] = {nccltop, "record", f, "--dir", rdir, "--max-size", "64K", "--duration", "4s", NULL};
  int rc = up ? run(av, out, err, 30) : -2;
  stop_group(&sim);
  remove_dir(rdir);
  CHECK(up);
  CHECK_EQ_U64(rc, 0);
  struct stat a, b;
  CHECK(stat(f, &a) == 0 && stat(f1, &b) == 0);
  int h0, h1, n0 = count_records(f, &h0), n1 = count_records(f1, &h1);
  fprintf(stderr, "    FILE %lld bytes %d records %d hellos; FILE.1 %lld bytes %d records\n",
          (long long)a.st_size, n0, h0, (long long)b.st_size, n1);
  CHECK(b.st_size >= 65536 && b.st_size < 65536 + 256 * 1024);
  CHECK(n0 > 0 && n1 > 0);
  CHECK(h0 >= c.ranks);
  char *rv[] = {nccltop, "replay", f, "-b", "--json", "--speed", "max", NULL};
  CHECK_EQ_U64(run(rv, out, err, 60), 0);
  int nf;
  cJSON **fr = frames_of(out, &nf);
  const cJSON *p0 = nf > 0 ? cJSON_GetArrayItem(get(fr[nf - 1], "processes"), 0) : NULL;
  bool named = nf > 0 && cJSON_GetArraySize(get(fr[nf - 1], "processes")) == c.ranks &&
               *str(p0, "plugin_version");
  /* The plugin says which clock its times come from, and the recording keeps it. */
  const char *clock = p0 ? str(p0, "clock") : "";
  CHECK(!strcmp(clock, "tsc") || !strcmp(clock, "cntvct") || !strcmp(clock, "monotonic"));
  free_frames(fr, nf);
  CHECK(named);
}

int main(void) {
  scenario_init();
  snprintf(dir, sizeof dir, "/tmp/nccltop-rec-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  TEST_RUN(replay_prints_the_live_viewers_totals_and_frames);
  TEST_RUN(replay_at_a_finite_speed_prints_the_same_frames);
  TEST_RUN(replay_of_a_cut_or_corrupted_file_keeps_what_came_before);
  TEST_RUN(the_chrome_trace_has_a_slice_per_operation_done);
  TEST_RUN(max_size_rotates_and_each_file_replays_alone);
  TEST_RUN(the_black_box_writes_the_history_before_a_stall);
  if (!getenv("KEEP"))
    remove_dir(dir);
  else
    fprintf(stderr, "kept %s\n", dir);
  return TEST_DONE();
}

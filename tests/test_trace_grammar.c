/* Real NCCL is the oracle: every recording of real NCCL in tests/traces/
 * (before they are copied there, ../shared/traces/nccl-2.28.9-pytorch/)
 * keeps the rules NCCL keeps (sim_grammar_nccl.h), one process at a time
 * and each directory as one job; what the recordings needed beyond the old
 * grammar is seen in them; hand-broken copies of a recording are refused,
 * each by the rule it breaks; and the allowances NCCL's source gives (and
 * no wider ones) are accepted. Without recordings the cases skip. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "sim_grammar.h"

#define MAX_TRACES 64

static char root[PATH_MAX + 64];          /* the directory searched */
static char traces[MAX_TRACES][PATH_MAX]; /* the recordings found, sorted */
static int ntraces;
static char base_text_path[PATH_MAX + 32]; /* a decoded recording to break */
static int base_version;

/* ---- reading recordings (plain, .xz, .zst) ---- */

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

/* Opens `path` for reading, decompressed by xz or zstd in a child process
 * when its name says so; *child is that process (0 for a plain file). */
static FILE *open_decoded(const char *path, pid_t *child) {
  *child = 0;
  const char *tool = ends_with(path, ".xz") ? "xz" : ends_with(path, ".zst") ? "zstd" : NULL;
  if (!tool) return fopen(path, "r");
  int fd[2];
  if (pipe(fd) != 0) return NULL;
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return NULL;
  }
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execlp(tool, tool, "-dcq", path, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  *child = pid;
  FILE *f = fdopen(fd[0], "r");
  if (!f) close(fd[0]);
  return f;
}

/* Closes what open_decoded opened; 0 when all was read. */
static int close_decoded(FILE *f, pid_t child) {
  fclose(f);
  if (!child) return 0;
  int st = 0;
  if (waitpid(child, &st, 0) != child) return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Adds a recording to the trace (tr). */
static int add_recording(const char *path) {
  pid_t child;
  FILE *f = open_decoded(path, &child);
  if (!f) return -1;
  load_stream(f);
  return close_decoded(f, child);
}

/* The NCCL release of the recordings in `dir`: its NCCL logs say
 * "NCCL version 2.28.9"; without one, the release that loads the trace's
 * ABI natively. */
static int version_in(const char *dir, int abi) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int v = 0;
  while (d && !v && (de = readdir(d))) {
    if (!strstr(de->d_name, "nccl-log")) continue;
    char p[PATH_MAX + 256], l[1024];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    pid_t child;
    FILE *f = open_decoded(p, &child);
    if (!f) continue;
    while (!v && fgets(l, sizeof l, f)) {
      const char *s = strstr(l, "NCCL version 2.");
      int minor;
      if (s && sscanf(s, "NCCL version 2.%d", &minor) == 1 && minor >= 26 && minor <= 32)
        v = 200 + minor;
    }
    while (fgets(l, sizeof l, f)) { /* let the decompressor finish */
    }
    close_decoded(f, child);
  }
  if (d) closedir(d);
  static const int native[8] = {0, 0, 0, 226, 227, 228, 230, 231};
  return v ? v : abi >= 3 && abi <= 7 ? native[abi] : 0;
}

static bool is_recording(const char *name) {
  return ends_with(name, ".trace") || ends_with(name, ".trace.xz") || ends_with(name, ".trace.zst");
}

static void find_traces(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) && ntraces < MAX_TRACES) {
    if (de->d_name[0] == '.') continue;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) continue;
    struct stat st;
    if (stat(p, &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < 4)
      find_traces(p, depth + 1);
    else if (S_ISREG(st.st_mode) && is_recording(de->d_name))
      snprintf(traces[ntraces++], PATH_MAX, "%s", p);
  }
  closedir(d);
}

static int by_name(const void *a, const void *b) {
  return strcmp(a, b);
}

/* The repository root: the first directory above this executable that has
 * tests/sim_grammar_nccl.h. */
static bool repo_root(char *out, size_t cap) {
  char dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0) return false;
  dir[n] = '\0';
  for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
    *slash = '\0';
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/tests/sim_grammar_nccl.h", dir);
    if (access(probe, R_OK) == 0) {
      snprintf(out, cap, "%s", dir);
      return true;
    }
  }
  return false;
}

static void dir_of(const char *path, char *out, size_t cap) {
  size_t n = strnlen(path, cap - 1);
  memcpy(out, path, n);
  out[n] = '\0';
  char *s = strrchr(out, '/');
  if (s) *s = '\0';
}

/* ---- every recording keeps NCCL's rules ---- */

static const char *check_loaded(int version) {
  nccl_job j = {.version = version, .graphs = true, .mask_changes = false};
  const char *p = nccl_problem(&j);
  return p ? p : "none";
}

static void every_recording_keeps_nccls_rules(void) {
  for (int i = 0; i < ntraces; i++) {
    reset();
    CHECK(add_recording(traces[i]) == 0);
    CHECK(tr.nctx > 0);
    char dir[PATH_MAX];
    dir_of(traces[i], dir, sizeof dir);
    int v = version_in(dir, tr.ctx[0].version);
    const char *p = check_loaded(v);
    fprintf(stderr, "    %s: %d events, NCCL 2.%d: %s\n", traces[i] + strlen(root) + 1, tr.nev,
            v - 200, p);
    CHECK_STR(p, "none");
  }
  /* each directory as one job: the processes' contexts, PXN and the
   * per-communicator rules across them */
  for (int i = 0; i < ntraces;) {
    char dir[PATH_MAX], next[PATH_MAX];
    dir_of(traces[i], dir, sizeof dir);
    reset();
    int k = i;
    for (; k < ntraces; k++) {
      dir_of(traces[k], next, sizeof next);
      if (strcmp(dir, next)) break;
      CHECK(add_recording(traces[k]) == 0);
    }
    if (tr.overflow) {
      fprintf(stderr, "    %s: more than %d events together, checked per process only\n",
              dir + strlen(root) + 1, MAX_EV);
    } else {
      int v = version_in(dir, tr.ctx[0].version);
      const char *p = check_loaded(v);
      fprintf(stderr, "    %s as one job (%d processes): %s\n", dir + strlen(root) + 1, tr.nctx, p);
      CHECK_STR(p, "none");
    }
    i = k;
  }
}

/* ---- what the recordings needed, seen in them ---- */

static bool has_children(const ev_t *e) {
  for (int k = (int)(e - tr.ev) + 1; k < tr.nev; k++)
    if (tr.ev[k].pid == e->pid && tr.ev[k].parent == e->h) return true;
  return false;
}

/* The rules the old grammar had, that no real recording keeps, each seen:
 * appendedProxyOps above the ops started inside (KernelCh's profiler
 * ops), a transSize left from an earlier op before the op's first
 * SendWait/RecvFlushWait, a zero transSize at SendWait or RecvFlushWait;
 * and what the simulator did otherwise: API events with rank 0 on every
 * rank, a GroupApi deeper than 1, unnamed communicators, a self Send/Recv
 * with no child. */
static void what_the_recordings_needed_is_in_them(void) {
  int more_appended = 0, stale = 0, zero = 0, api_rank0 = 0, deep = 0, unnamed = 0, self = 0;
  for (int i = 0; i < ntraces; i++) {
    reset();
    CHECK(add_recording(traces[i]) == 0);
    for (int c = 0; c < tr.nctx; c++) unnamed += !tr.ctx[c].named;
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *e = &tr.ev[k];
      const ctx_t *x = ctx_of(e->pid, e->ctx);
      if (e->type == NT_EV_PROXY_CTRL && e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND)
        more_appended += (int)e->size[1] > ops_inside(e);
      if (e->type == NT_EV_PROXY_STEP) {
        const ev_t *op = parent_of(e);
        for (int r = 0; r < e->nrec; r++) {
          bool valid =
              e->states[r] == NT_ST_STEP_SEND_WAIT || e->states[r] == NT_ST_STEP_RECV_FLUSH_WAIT;
          zero += valid && !e->size[r];
          /* the op's first record: nothing set yet in this op */
          stale += !valid && e->size[r] && op && e->step == 0 && r == 0;
        }
      }
      if (e->type >= NT_EV_GROUP_API && e->type <= NT_EV_KERNEL_LAUNCH && x && x->rank > 0)
        api_rank0 += e->rank == 0;
      deep += e->type == NT_EV_GROUP_API && e->depth > 1;
      self += e->type == NT_EV_P2P && x && e->peer == x->rank && !has_children(e);
    }
  }
  fprintf(stderr,
          "    AppendEnd above the ops inside: %d; stale transSize: %d; zero transSize: %d; API "
          "events with rank 0 on ranks > 0: %d; GroupApi deeper than 1: %d; unnamed "
          "communicators: %d; self Send/Recv with no child: %d\n",
          more_appended, stale, zero, api_rank0, deep, unnamed, self);
  CHECK(more_appended > 0 && stale > 0 && zero > 0 && api_rank0 > 0 && deep > 0 && unnamed > 0 &&
        self > 0);
}

/* ---- hand-broken recordings ---- */

static char **lines;
static int nlines;

/* The base recording decoded into lines (and a file), and loaded. */
static bool load_base(void) {
  static char *store[400000];
  if (!lines) {
    /* the smallest recording: the quickest to break many times */
    int best = -1;
    off_t size = 0;
    for (int i = 0; i < ntraces; i++) {
      struct stat st;
      if (stat(traces[i], &st) == 0 && (best < 0 || st.st_size < size)) best = i, size = st.st_size;
    }
    if (best < 0) return false;
    pid_t child;
    FILE *f = open_decoded(traces[best], &child);
    if (!f) return false;
    char l[2048];
    while (nlines < 400000 && fgets(l, sizeof l, f)) store[nlines++] = strdup(l);
    if (close_decoded(f, child) != 0) return false;
    lines = store;
    char dir[PATH_MAX];
    dir_of(traces[best], dir, sizeof dir);
    snprintf(base_text_path, sizeof base_text_path, "/tmp/nccltop-trace-grammar-%d.log",
             (int)getpid());
    reset();
    for (int i = 0; i < nlines; i++) parse_line(lines[i], ++tr.lines);
    base_version = version_in(dir, tr.nctx ? tr.ctx[0].version : 0);
  }
  reset();
  for (int i = 0; i < nlines; i++) parse_line(lines[i], ++tr.lines);
  return tr.nev > 0;
}

/* One change to the base: line `line` (1-based) replaced by `repl` (NULL:
 * removed), `insert` added after it. */
typedef struct {
  int line;
  const char *repl, *insert;
} edit;

/* What the NCCL rules say of the base with the edits made; reloads the
 * base afterwards, so events found before stay valid. */
static const char *broken_edits(int version, const edit *ed, int n, bool mask_changes) {
  static char said[sizeof why];
  FILE *f = fopen(base_text_path, "w");
  if (!f) return "cannot write";
  for (int i = 0; i < nlines; i++) {
    const edit *hit = NULL;
    for (int k = 0; k < n; k++)
      if (ed[k].line == i + 1) hit = &ed[k];
    if (!hit)
      fputs(lines[i], f);
    else if (hit->repl)
      fputs(hit->repl, f);
    if (hit && hit->insert) fputs(hit->insert, f);
  }
  fclose(f);
  int rc = load(base_text_path);
  unlink(base_text_path);
  nccl_job j = {.version = version, .graphs = true, .mask_changes = mask_changes};
  const char *p = rc ? "cannot load" : nccl_problem(&j);
  snprintf(said, sizeof said, "%s", p ? p : "none");
  load_base();
  return said;
}

static const char *broken(int version, int n, const char *repl, const char *insert,
                          bool mask_changes) {
  edit e = {n, repl, insert};
  return broken_edits(version, &e, 1, mask_changes);
}

static bool is_group_api(const ev_t *e) {
  return e->type == NT_EV_GROUP_API;
}
static bool is_coll(const ev_t *e) {
  return e->type == NT_EV_COLL;
}
static bool is_allgather(const ev_t *e) {
  return e->type == NT_EV_COLL && !strcmp(e->func, "AllGather");
}
static bool is_broadcast(const ev_t *e) {
  return e->type == NT_EV_COLL && !strcmp(e->func, "Broadcast");
}
static bool is_coll_api(const ev_t *e) {
  return e->type == NT_EV_COLL_API;
}
static bool is_p2p(const ev_t *e) {
  return e->type == NT_EV_P2P;
}
static bool is_send_step(const ev_t *e) {
  const ev_t *op = parent_of(e);
  return e->type == NT_EV_PROXY_STEP && op && op->send && e->nrec >= 3;
}
static bool is_recv_step(const ev_t *e) {
  const ev_t *op = parent_of(e);
  return e->type == NT_EV_PROXY_STEP && op && !op->send && e->nrec == 3;
}
/* A recv step recorded after its op already set a transSize. */
static bool is_later_recv_step(const ev_t *e) {
  return is_recv_step(e) && e->step > 0;
}
static bool is_op(const ev_t *e) {
  return e->type == NT_EV_PROXY_OP && e->nrec == 1 && e->stops == 1;
}
static bool is_append(const ev_t *e) {
  return e->type == NT_EV_PROXY_CTRL && e->nrec == 2 && e->states[0] == NT_ST_CTRL_APPEND &&
         ops_inside(e) > 0;
}
static bool is_sleep(const ev_t *e) {
  return e->type == NT_EV_PROXY_CTRL && e->nrec == 2 && e->states[0] == NT_ST_CTRL_SLEEP;
}
static bool is_edge(const ev_t *e) {
  return e->type == NT_EV_PROXY_CTRL && e->nrec == 1;
}
static bool is_kernel_ch(const ev_t *e) {
  return e->type == NT_EV_KERNEL_CH && e->nrec == 1;
}

#define REFUSED(said, what)                                                                        \
  do {                                                                                             \
    const char *tl_s = (said);                                                                     \
    if (!strstr(tl_s, what)) {                                                                     \
      fprintf(stderr, "    %s:%d: NCCL's rules said \"%s\", wanted \"%s\"\n", __FILE__, __LINE__,  \
              tl_s, what);                                                                         \
      tl_case_failed = 1;                                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* A line of (pid, tid, t) with `rest` after it. */
static const char *line_of(const ev_t *at, long tid, const char *rest) {
  static char out[2][1024];
  static int k;
  k ^= 1;
  snprintf(out[k], sizeof out[k], "%d %ld %llu %.*s\n", at->pid, tid, at->t,
           (int)strcspn(rest, "\n"), rest);
  return out[k];
}

static void hand_broken_recordings_are_refused(void) {
  CHECK(load_base());
  int v = base_version;
  CHECK_STR(broken(v, 0, NULL, NULL, false), "none"); /* the original */
  const ctx_t *x = &tr.ctx[0];
  char buf[1024], val[64];
  const ev_t *e;
  /* an API event carrying the rank (NCCL leaves 0) */
  CHECK((e = first_event(is_group_api)) != NULL);
  snprintf(val, sizeof val, "%d", x->rank ? x->rank : 1);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], " rank=", val), NULL, false),
          "event type 256 with rank");
  /* a Coll with another rank than its communicator's */
  CHECK((e = first_event(is_coll)) != NULL);
  snprintf(val, sizeof val, "%d", x->rank + 1);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], " rank=", val), NULL, false),
          "its communicator's");
  /* a record after a step's RecvFlushWait with a size NCCL did not set */
  CHECK((e = first_event(is_later_recv_step)) != NULL);
  snprintf(val, sizeof val, "%llu", e->size[1] + 1);
  REFUSED(
      broken(v, e->rec_line[2], with_value(lines[e->rec_line[2] - 1], "size=", val), NULL, false),
      "NCCL would pass");
  /* AppendEnd counting fewer ops than were started inside */
  CHECK((e = first_event(is_append)) != NULL);
  snprintf(val, sizeof val, "%d", ops_inside(e) - 1);
  REFUSED(
      broken(v, e->rec_line[1], with_value(lines[e->rec_line[1] - 1], "size=", val), NULL, false),
      "AppendEnd says");
  /* a send step without SendPeerWait */
  CHECK((e = first_event(is_send_step)) != NULL);
  REFUSED(broken(v, e->rec_line[1], NULL, NULL, false), "send step");
  /* a recv step, and an op, never stopped */
  CHECK((e = first_event(is_recv_step)) != NULL);
  REFUSED(broken(v, e->stop_line, NULL, NULL, false), "stopped 0 times");
  CHECK((e = first_event(is_op)) != NULL);
  REFUSED(broken(v, e->stop_line, NULL, NULL, false), "stopped 0 times");
  /* a Coll stopped twice, or given a record after its stop */
  CHECK((e = first_event(is_coll)) != NULL);
  REFUSED(broken(v, e->stop_line, lines[e->stop_line - 1], lines[e->stop_line - 1], false),
          "stopped 2 times");
  snprintf(buf, sizeof buf, "record h=0x%llx state=19 args=1 size=0 appended=0 ptimer=0", e->h);
  REFUSED(broken(v, e->stop_line, lines[e->stop_line - 1], line_of(e, e->tid, buf), false),
          "record after stop");
  /* an AllGather counted in elements, a Coll Broadcast on 2.29 */
  CHECK((e = first_event(is_allgather)) != NULL);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], " dtype=", "ncclFloat32"), NULL, false),
          "AllGather Coll");
  CHECK((e = first_event(is_broadcast)) != NULL);
  REFUSED(broken(229, 0, NULL, NULL, false), "Coll Broadcast on 2.29");
  /* a seqNumber going back */
  const ev_t *c0 = first_event(is_coll);
  for (e = NULL; c0 && !e;) {
    for (int i = (int)(c0 - tr.ev) + 1; i < tr.nev && !e; i++)
      if (tr.ev[i].type == NT_EV_COLL && !strcmp(tr.ev[i].func, c0->func) && tr.ev[i].seq > c0->seq)
        e = &tr.ev[i];
    break;
  }
  CHECK(e != NULL);
  snprintf(val, sizeof val, "%d", c0->seq > 0 ? c0->seq - 1 : 0);
  snprintf(buf, sizeof buf, "%s", with_value(lines[e->line - 1], "seq=", val));
  REFUSED(broken(v, e->line, buf, NULL, false), "seqNumber");
  /* an AlltoAll CollApi (NCCL splits it into Send/Recv) */
  CHECK((e = first_event(is_coll_api)) != NULL);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "func=", "AlltoAll"), NULL, false),
          "CollApi AlltoAll");
  /* a P2p under a CollApi, a Coll under a GroupApi */
  const ev_t *capi = first_event(is_coll_api), *gapi = first_event(is_group_api);
  CHECK((e = first_event(is_p2p)) != NULL && capi && gapi);
  snprintf(val, sizeof val, "0x%llx", capi->h);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "parent=", val), NULL, false),
          "P2p parent is not a finished P2pApi");
  CHECK((e = first_event(is_coll)) != NULL);
  snprintf(val, sizeof val, "0x%llx", gapi->h);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "parent=", val), NULL, false),
          "Coll parent is not a finished CollApi");
  /* a GroupApi of depth 0 */
  REFUSED(broken(v, gapi->line, with_value(lines[gapi->line - 1], "depth=", "0"), NULL, false),
          "GroupApi line");
  /* an op started while the proxy thread sleeps */
  CHECK((e = first_event(is_sleep)) != NULL);
  snprintf(buf, sizeof buf,
           "start 8 h=0x7fff0001 ctx=0x%llx parent=0x0 rank=%d ch=0 peer=0 send=1 steps=1 "
           "chunk=1 pid=%d",
           e->ctx, x->rank, e->pid);
  REFUSED(broken(v, e->rec_line[0], lines[e->rec_line[0] - 1], line_of(e, e->tid, buf), false),
          "no Append burst");
  /* an op whose peer is no rank of the communicator */
  CHECK((e = first_event(is_op)) != NULL);
  snprintf(val, sizeof val, "%d", x->nranks);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "peer=", val), NULL, false), "op peer");
  /* a step beyond its op's steps */
  CHECK((e = first_event(is_recv_step)) != NULL);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "step=", "99"), NULL, false),
          "step 99 of");
  /* a KernelCh without its KernelChStop */
  CHECK((e = first_event(is_kernel_ch)) != NULL);
  REFUSED(broken(v, e->rec_line[0], NULL, NULL, false), "no KernelChStop");
  /* a CollApi on the proxy thread */
  CHECK((e = first_event(is_coll_api)) != NULL);
  long proxy = first_event(is_op)->tid;
  char moved[2][1024];
  snprintf(moved[0], sizeof moved[0], "%s", line_of(e, proxy, strstr(lines[e->line - 1], "start")));
  snprintf(moved[1], sizeof moved[1], "%s",
           line_of(e, proxy, strstr(lines[e->stop_line - 1], "stop")));
  edit both[2] = {{e->line, moved[0], NULL}, {e->stop_line, moved[1], NULL}};
  REFUSED(broken_edits(v, both, 2, false), "on the proxy thread");
  /* two Idle edges in a row */
  CHECK((e = first_event(is_edge)) != NULL);
  snprintf(buf, sizeof buf, "start 32 h=0x7fff0002 ctx=0x%llx parent=0x0 rank=0 ", e->ctx);
  char more[3][256];
  snprintf(more[0], sizeof more[0], "%s", line_of(e, e->tid, buf));
  snprintf(buf, sizeof buf, "record h=0x7fff0002 state=%d args=1 size=0 appended=0 ptimer=0",
           e->states[0]);
  snprintf(more[1], sizeof more[1], "%s", line_of(e, e->tid, buf));
  snprintf(more[2], sizeof more[2], "%s", line_of(e, e->tid, "stop h=0x7fff0002"));
  char ins[800];
  snprintf(ins, sizeof ins, "%s%s%s", more[0], more[1], more[2]);
  REFUSED(broken(v, e->stop_line, lines[e->stop_line - 1], ins, false), "two edges");
  /* a handle never returned, a context never initialised, two finalizes */
  snprintf(buf, sizeof buf, "stop h=0x7fff0003");
  REFUSED(broken(v, 1, lines[0], line_of(&tr.ev[0], tr.ev[0].tid, buf), false),
          "handle never returned");
  CHECK((e = first_event(is_coll)) != NULL);
  REFUSED(broken(v, e->line, with_value(lines[e->line - 1], "ctx=", "0x1"), NULL, false),
          "unknown context");
  REFUSED(broken(v, nlines, lines[nlines - 1], lines[nlines - 1], false), "finalized 2 times");
}

/* ---- the allowances are NCCL's, and no wider ---- */

static void the_allowances_are_nccls_and_no_wider(void) {
  CHECK(load_base());
  int v = base_version;
  const ctx_t *x = &tr.ctx[0];
  char buf[1024], ins[1024];
  const ev_t *e;
  /* S3: a recv step slot started again, the first start never stopped and
   * without records: accepted from 2.27 on; with a record it is refused */
  CHECK((e = first_event(is_recv_step)) != NULL);
  snprintf(buf, sizeof buf, "start 16 h=0x7fff0004 ctx=0x%llx parent=0x%llx rank=%d step=%d",
           e->ctx, e->parent, x->rank, e->step);
  snprintf(ins, sizeof ins, "%s", line_of(e, e->tid, buf));
  int before = e->line - 1; /* the restarted step begins just before */
  CHECK_STR(broken(v, before, lines[before - 1], ins, false), "none");
  snprintf(buf, sizeof buf, "record h=0x7fff0004 state=10 args=1 size=0 appended=0 ptimer=0");
  char two[2048];
  snprintf(two, sizeof two, "%s%s", ins, line_of(e, e->tid, buf));
  REFUSED(broken(v, before, lines[before - 1], two, false), "stopped 0 times");
  /* K3 (2.27 .. 2.30): a KernelCh stopped again after a KernelChStop on the
   * stale handle; no other event may be */
  CHECK((e = first_event(is_kernel_ch)) != NULL);
  snprintf(buf, sizeof buf, "record h=0x%llx state=22 args=1 size=0 appended=0 ptimer=%llu", e->h,
           e->ptimer_stop);
  snprintf(two, sizeof two, "%s%s", line_of(e, e->tid, buf), lines[e->stop_line - 1]);
  CHECK(v >= 227 && v <= 230);
  CHECK_STR(broken(v, e->stop_line, lines[e->stop_line - 1], two, false), "none");
  /* M4: a CollApi stopped again by a later call of its thread */
  CHECK((e = first_event(is_coll_api)) != NULL);
  CHECK_STR(broken(v, e->stop_line, lines[e->stop_line - 1], lines[e->stop_line - 1], false),
            "none");
  /* M2: a mask change between a ProxyCtrl start and its record drops the
   * record: refused for a job whose mask stays, accepted when it changes */
  CHECK((e = first_event(is_sleep)) != NULL);
  REFUSED(broken(v, e->rec_line[1], NULL, NULL, false), "bad burst");
  CHECK_STR(broken(v, e->rec_line[1], NULL, NULL, true), "none");
  /* P2: a ProxyOp no net transport progresses (CE memcpy), never stopped,
   * without records or steps */
  const ev_t *a = first_event(is_append);
  CHECK(a != NULL);
  snprintf(buf, sizeof buf,
           "start 8 h=0x7fff0005 ctx=0x%llx parent=0x0 rank=%d ch=0 peer=0 send=0 steps=1 "
           "chunk=1 pid=%d",
           a->ctx, x->rank, a->pid);
  snprintf(ins, sizeof ins, "%s", line_of(a, a->tid, buf));
  /* AppendEnd still counts at least the ops inside: this one too */
  char count[64];
  snprintf(count, sizeof count, "%llu", a->size[1] + 1);
  char end[1024];
  snprintf(end, sizeof end, "%s", with_value(lines[a->rec_line[1] - 1], "size=", count));
  edit op_in[2] = {{a->rec_line[0], lines[a->rec_line[0] - 1], ins}, {a->rec_line[1], end, NULL}};
  CHECK_STR(broken_edits(v, op_in, 2, false), "none");
  /* ... but not one with a record (an InProgress: net progressed it) */
  snprintf(buf, sizeof buf, "record h=0x7fff0005 state=19 args=1 size=0 appended=0 ptimer=0");
  snprintf(two, sizeof two, "%s%s", ins, line_of(a, a->tid, buf));
  op_in[0].insert = two;
  REFUSED(broken_edits(v, op_in, 2, false), "stopped 0 times");
}

int main(void) {
  char top[PATH_MAX];
  if (!repo_root(top, sizeof top)) {
    fprintf(stderr, "cannot find the repository from this executable\n");
    return 1;
  }
  struct stat st;
  if (snprintf(root, sizeof root, "%s/tests/traces", top) >= (int)sizeof root) return 1;
  if ((stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) &&
      snprintf(root, sizeof root, "%s/../shared/traces/nccl-2.28.9-pytorch", top) >=
          (int)sizeof root)
    return 1;
  find_traces(root, 0);
  qsort(traces, (size_t)ntraces, sizeof traces[0], by_name);
  if (!ntraces) {
    fprintf(stderr, "no real NCCL recordings in tests/traces/ or ../shared/traces/\n");
    TEST_SKIP(every_recording_keeps_nccls_rules, "no recordings");
    TEST_SKIP(what_the_recordings_needed_is_in_them, "no recordings");
    TEST_SKIP(hand_broken_recordings_are_refused, "no recordings");
    TEST_SKIP(the_allowances_are_nccls_and_no_wider, "no recordings");
    return TEST_DONE();
  }
  /* a decompressor that is not installed: the recordings cannot be read */
  reset();
  if (add_recording(traces[0]) != 0) {
    fprintf(stderr, "cannot decode %s (is xz or zstd installed?)\n", traces[0]);
    TEST_SKIP(every_recording_keeps_nccls_rules, "recordings cannot be decoded");
    return TEST_DONE();
  }
  TEST_RUN(every_recording_keeps_nccls_rules);
  TEST_RUN(what_the_recordings_needed_is_in_them);
  TEST_RUN(hand_broken_recordings_are_refused);
  TEST_RUN(the_allowances_are_nccls_and_no_wider);
  return TEST_DONE();
}

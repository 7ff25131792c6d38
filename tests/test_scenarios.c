/* Issue 4 end to end, in batch JSON: simulated jobs (real rank processes
 * that load the real plugin) -> real ZeroMQ sockets -> `nccltop -b --json`.
 * Each scenario asserts what the viewer's model shows: the collectives by
 * algorithm/protocol/size and the phases (exact, on the deterministic
 * schedule), net plugin events (exact), a stalled rank named as the root of
 * the waits, a straggler named, an environment difference between ranks, and
 * a job restart with a changed environment. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"
#include "../sim/schedule.h"
#include "../sim/sim.h"

static char bindir[PATH_MAX], nccltop[PATH_MAX + 16], plugin[PATH_MAX + 64];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- processes ---- */

/* Waits up to `seconds` for pid; its wait status, or -1 if still running. */
static int wait_exit(pid_t pid, double seconds) {
  double end = now_s() + seconds;
  int st;
  do {
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) return st;
    if (got < 0 && errno != EINTR) return -2;
    nap_ms(10);
  } while (now_s() < end);
  return -1;
}

/* Stops a simulated job: its runner leads a process group with the ranks. */
static void stop_group(pid_t *pid) {
  if (*pid <= 0) return;
  kill(-*pid, SIGTERM);
  if (wait_exit(*pid, 5) == -1) {
    kill(-*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
  }
  *pid = -1;
}

static void remove_dir(const char *dir) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "    could not remove %s\n", dir);
}

/* Waits until `n` publishers' endpoints (<pid>.sock) are in dir. */
static bool wait_endpoints(const char *dir, int n, double seconds) {
  double end = now_s() + seconds;
  do {
    int found = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
      size_t len = strlen(e->d_name);
      found += len > 5 && !strcmp(e->d_name + len - 5, ".sock");
    }
    if (d) closedir(d);
    if (found >= n) return true;
    nap_ms(20);
  } while (now_s() < end);
  fprintf(stderr, "    fewer than %d endpoints in %s\n", n, dir);
  return false;
}

/* A config with the test's plugin, a private endpoint directory, quick
 * snapshots and one communicator. */
static void base_config(nt_sim_config *c, const char *dir) {
  nt_sim_defaults(c);
  c->comms = 1;
  c->plugin = plugin;
  c->dir = dir;
  c->interval_ms = 50;
  c->quiet = true;
}

/* ---- the viewer: `nccltop -b --json`, one frame per line ---- */

typedef struct {
  pid_t pid;
  int fd;
  char *buf;
  size_t len, cap;
  int frames;
} viewer;

static bool viewer_start(viewer *v, const char *dir, const char *delay_ms, const char *stall_ms) {
  int fds[2];
  memset(v, 0, sizeof *v);
  v->fd = v->pid = -1;
  if (pipe(fds) != 0) return false;
  fflush(NULL);
  pid_t parent = getpid();
  v->pid = fork();
  if (v->pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (v->pid == 0) {
    /* Never outlive the test. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(nccltop, nccltop, "-b", "--json", "-d", delay_ms, "--stall-ms", stall_ms, "--dir", dir,
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  v->fd = fds[0];
  return true;
}

/* The next frame, or NULL at the deadline, at the end of the output or on
 * a line that is not JSON (said on stderr). */
static cJSON *viewer_frame(viewer *v, double deadline) {
  for (;;) {
    char *nl = v->len ? memchr(v->buf, '\n', v->len) : NULL;
    if (nl) {
      *nl = '\0';
      cJSON *f = cJSON_Parse(v->buf);
      size_t used = (size_t)(nl - v->buf) + 1;
      memmove(v->buf, nl + 1, v->len - used);
      v->len -= used;
      v->frames++;
      if (!f) fprintf(stderr, "    viewer frame %d is not JSON\n", v->frames);
      return f;
    }
    double left = deadline - now_s();
    if (left <= 0) return NULL;
    struct pollfd p = {.fd = v->fd, .events = POLLIN};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return NULL;
    if (v->cap - v->len < 65536) {
      size_t cap = v->cap ? v->cap * 2 : 1 << 20;
      char *b = realloc(v->buf, cap);
      if (!b) return NULL;
      v->buf = b;
      v->cap = cap;
    }
    ssize_t n = read(v->fd, v->buf + v->len, v->cap - v->len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "    the viewer's output ended after %d frames\n", v->frames);
      return NULL;
    }
    v->len += (size_t)n;
  }
}

static void viewer_stop(viewer *v) {
  if (v->pid > 0) {
    kill(v->pid, SIGTERM);
    if (wait_exit(v->pid, 5) == -1) {
      kill(v->pid, SIGKILL);
      waitpid(v->pid, NULL, 0);
    }
  }
  if (v->fd >= 0) close(v->fd);
  free(v->buf);
  v->buf = NULL;
  v->len = v->cap = 0;
  v->fd = v->pid = -1; /* frames stays: the reports use it */
}

/* ---- JSON ---- */

static const cJSON *get(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsNumber(v) ? cJSON_GetNumberValue(v) : NAN;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *hex_of(uint64_t hash, char *buf) {
  snprintf(buf, 17, "%016" PRIx64, hash);
  return buf;
}

static const cJSON *find_rank(const cJSON *frame, uint64_t hash, int rank) {
  char hex[17];
  hex_of(hash, hex);
  const cJSON *r;
  cJSON_ArrayForEach(r, get(frame, "ranks")) {
    if (!strcmp(str(r, "comm"), hex) && num(r, "rank") == rank) return r;
  }
  return NULL;
}

static const cJSON *find_process(const cJSON *frame, double pid) {
  const cJSON *p;
  cJSON_ArrayForEach(p, get(frame, "processes")) {
    if (num(p, "pid") == pid) return p;
  }
  return NULL;
}

static bool array_has_string(const cJSON *a, const char *s) {
  const cJSON *x;
  cJSON_ArrayForEach(x, a) {
    if (cJSON_IsString(x) && !strcmp(x->valuestring, s)) return true;
  }
  return false;
}

static bool close_to(double got, double want) {
  return fabs(got - want) <= 1e-6 * fabs(want) + 1e-9;
}

#define FAIL_IF(cond, ...)                                                                         \
  do {                                                                                             \
    if (cond) {                                                                                    \
      snprintf(why, cap, __VA_ARGS__);                                                             \
      return why;                                                                                  \
    }                                                                                              \
  } while (0)

/* ---- 1. protocol switch by size, phases ---- */

/* nccl-tests' algorithm bytes and bus factor, by hand (ccl funcs in NCCL's
 * count convention: AllGather sendcount, ReduceScatter recvcount). */
static double alg_factor(const char *func, int n) {
  return !strcmp(func, "AllReduce") ? 1 : n;
}
static double bus_factor(const char *func, int n) {
  return !strcmp(func, "AllReduce") ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

/* Host time of one collective on the deterministic schedule: from the
 * previous one's last proxy-op stop through idle, sleep, wakeup, append and
 * the steps. */
static uint64_t det_op_ns(const nt_sim_config *c) {
  return SIM_IDLE_NS + SIM_SLEEP_NS + SIM_WAKEUP_NS + SIM_APPEND_NS +
         sim_det_work_ns(c->channels, c->steps);
}

static const char *ops_mismatch(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  nt_sim_op_expect ex[64];
  int n = nt_sim_expect_ops(c, ex, 64), R = c->ranks;
  double T = (double)det_op_ns(c);
  char hex[17];
  hex_of(nt_sim_comm_hash(0), hex);
  FAIL_IF(n <= 0, "no expectations");
  /* Collectives: one row per (function, algorithm, protocol, size bucket);
   * here the phase follows the function, so the expectations map 1:1. */
  int rows = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "collectives")) rows++;
  FAIL_IF(rows != n, "%d collectives rows, want %d", rows, n);
  for (int i = 0; i < n; i++) {
    const nt_sim_op_expect *e = &ex[i];
    const cJSON *row = NULL;
    cJSON_ArrayForEach(x, get(f, "collectives")) {
      if (!strcmp(str(x, "comm"), hex) && !strcmp(str(x, "func"), e->func) &&
          !strcmp(str(x, "algo"), e->algo) && !strcmp(str(x, "proto"), e->proto) &&
          num(x, "bucket") == e->bucket)
        row = x;
    }
    FAIL_IF(!row, "no collectives row %s %s/%s bucket %u", e->func, e->algo, e->proto, e->bucket);
    double count = (double)e->count * R, bytes = (double)e->bytes * R;
    FAIL_IF(strcmp(str(row, "kind"), "coll") || num(row, "nranks") != R || num(row, "ranks") != R,
            "%s %s/%s: kind %s nranks %g ranks %g", e->func, e->algo, e->proto, str(row, "kind"),
            num(row, "nranks"), num(row, "ranks"));
    FAIL_IF(num(row, "count") != count || num(row, "done") != count || num(row, "bytes") != bytes ||
                num(row, "gpu_done") != 0,
            "%s %s/%s bucket %u: count %g done %g bytes %g, want %g, %g, %g", e->func, e->algo,
            e->proto, e->bucket, num(row, "count"), num(row, "done"), num(row, "bytes"), count,
            count, bytes);
    double per_op = (double)e->bytes / (double)e->count;
    double algbw = alg_factor(e->func, R) * per_op / T; /* bytes/ns = GB/s */
    FAIL_IF(!close_to(num(row, "time_ms"), count * T / 1e6) ||
                !close_to(num(row, "avg_us"), T / 1e3),
            "%s %s/%s: time_ms %g avg_us %g, want %g, %g", e->func, e->algo, e->proto,
            num(row, "time_ms"), num(row, "avg_us"), count * T / 1e6, T / 1e3);
    FAIL_IF(!close_to(num(row, "algbw_gbs"), algbw) ||
                !close_to(num(row, "busbw_gbs"), algbw * bus_factor(e->func, R)),
            "%s %s/%s: algbw %g busbw %g, want %g, %g", e->func, e->algo, e->proto,
            num(row, "algbw_gbs"), num(row, "busbw_gbs"), algbw, algbw * bus_factor(e->func, R));
  }
  /* Phases: exactly forward, backward and optimizer. */
  static const char *const phases[3] = {"forward", "backward", "optimizer"};
  rows = 0;
  cJSON_ArrayForEach(x, get(f, "phases")) rows++;
  FAIL_IF(rows != 3, "%d phases rows, want 3", rows);
  for (int p = 0; p < 3; p++) {
    double count = 0, bytes = 0;
    for (int i = 0; i < n; i++)
      if (!strcmp(ex[i].phase, phases[p]))
        count += (double)ex[i].count, bytes += (double)ex[i].bytes;
    const cJSON *row = NULL;
    cJSON_ArrayForEach(x, get(f, "phases")) {
      if (!strcmp(str(x, "phase"), phases[p])) row = x;
    }
    FAIL_IF(!row, "no phase row %s", phases[p]);
    FAIL_IF(num(row, "ranks") != R || num(row, "count") != count * R ||
                num(row, "done") != count * R || num(row, "bytes") != bytes * R ||
                !close_to(num(row, "time_ms"), count * T / 1e6),
            "phase %s: ranks %g count %g done %g bytes %g time_ms %g, want %d, %g, %g, %g, %g",
            phases[p], num(row, "ranks"), num(row, "count"), num(row, "done"), num(row, "bytes"),
            num(row, "time_ms"), R, count * R, count * R, bytes * R, count * T / 1e6);
  }
  /* Every rank's per-function sequence numbers follow the ladder. */
  for (int r = 0; r < R; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(0), r);
    FAIL_IF(!rank, "rank %d missing", r);
    FAIL_IF(num(rank, "colls") != c->iterations || cJSON_GetArraySize(get(rank, "in_flight")) != 0,
            "rank %d: colls %g in flight %d", r, num(rank, "colls"),
            cJSON_GetArraySize(get(rank, "in_flight")));
    const cJSON *api = get(rank, "api");
    FAIL_IF(num(api, "coll_api") != c->iterations || num(api, "group_api") != c->iterations ||
                num(api, "p2p_api") != 0,
            "rank %d: api coll %g group %g p2p %g", r, num(api, "coll_api"), num(api, "group_api"),
            num(api, "p2p_api"));
    static const char *const funcs[3] = {"AllGather", "ReduceScatter", "AllReduce"};
    FAIL_IF(cJSON_GetArraySize(get(rank, "seq")) != 3, "rank %d: %d seq rows", r,
            cJSON_GetArraySize(get(rank, "seq")));
    for (int k = 0; k < 3; k++) {
      double want = 0;
      for (int i = 0; i < c->iterations; i++)
        want += !strcmp(sim_det_op((uint64_t)i).func, funcs[k]);
      const cJSON *q = NULL;
      cJSON_ArrayForEach(x, get(rank, "seq")) {
        if (!strcmp(str(x, "func"), funcs[k])) q = x;
      }
      FAIL_IF(!q || num(q, "launched") != want || num(q, "done") != want,
              "rank %d %s: launched %g done %g, want %g", r, funcs[k], q ? num(q, "launched") : -1,
              q ? num(q, "done") : -1, want);
    }
  }
  return NULL;
}

static void protocol_switch_by_size_and_phases_are_exact(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.channels = 2;
  c.steps = 3;
  c.iterations = 14; /* not a whole number of ladders: rows differ in count */
  c.deterministic = true;
  c.linger_s = 30;
  /* The ladder crosses every protocol, so the rows show the switch. */
  nt_sim_op_expect ex[64];
  int n = nt_sim_expect_ops(&c, ex, 64);
  bool ll = false, ll128 = false, simple = false;
  for (int i = 0; i < n; i++) {
    ll |= !strcmp(ex[i].proto, "LL") && !strcmp(ex[i].algo, "TREE");
    ll128 |= !strcmp(ex[i].proto, "LL128");
    simple |= !strcmp(ex[i].proto, "SIMPLE") && !strcmp(ex[i].algo, "RING");
  }
  CHECK(ll && ll128 && simple);
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_endpoints(dir, c.ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false;
  double end = now_s() + 20;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = ops_mismatch(&c, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  CHECK(started);
  CHECK(ok);
}

/* ---- 2. net plugin events ---- */

static const char *net_mismatch(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  uint64_t it = (uint64_t)c->iterations, steps = (uint64_t)c->steps;
  const char *type = c->net == NT_NET_IB_QP ? "ib_qp" : "socket";
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(0), r);
    FAIL_IF(!rank, "rank %d missing", r);
    FAIL_IF(cJSON_GetArraySize(get(rank, "net")) != 2 * c->channels,
            "rank %d: %d net rows, want %d", r, cJSON_GetArraySize(get(rank, "net")),
            2 * c->channels);
    double total = 0;
    for (int ch = 0; ch < c->channels; ch++) {
      for (int dir = 0; dir < 2; dir++) {
        const cJSON *row = NULL, *x;
        cJSON_ArrayForEach(x, get(rank, "net")) {
          if (num(x, "id") == SIM_NET_ID(ch, dir)) row = x;
        }
        FAIL_IF(!row, "rank %d: no net row id %u", r, SIM_NET_ID(ch, dir));
        FAIL_IF(strcmp(str(row, "type"), type) != 0, "rank %d id %u: type %s, want %s", r,
                SIM_NET_ID(ch, dir), str(row, "type"), type);
        FAIL_IF(c->net == NT_NET_IB_QP && num(row, "device") != SIM_NET_DEVICE(ch),
                "rank %d QP %u: device %g, want %d", r, SIM_NET_ID(ch, dir), num(row, "device"),
                SIM_NET_DEVICE(ch));
        double busy_ns = (double)(it * steps * (dir ? SIM_RECV_NET_NS : SIM_SEND_NET_NS));
        FAIL_IF(num(row, "count") != (double)(it * steps) ||
                    num(row, "bytes") != (double)(it * sim_det_op_bytes(c->steps)) ||
                    num(row, "in_flight") != 0 || !close_to(num(row, "busy_ms") * 1e6, busy_ns),
                "rank %d id %u: count %g bytes %g busy_ms %g in flight %g, want %" PRIu64
                ", %" PRIu64 ", %g, 0",
                r, SIM_NET_ID(ch, dir), num(row, "count"), num(row, "bytes"), num(row, "busy_ms"),
                num(row, "in_flight"), it * steps, it * sim_det_op_bytes(c->steps), busy_ns / 1e6);
        total += num(row, "count");
      }
    }
    nt_sim_comm_expect ce;
    nt_sim_expect_comm(c, r, 0, &ce);
    const cJSON *proc = find_process(f, num(rank, "pid"));
    FAIL_IF(!proc, "rank %d: no process", r);
    FAIL_IF(total != (double)ce.net_events || num(get(proc, "counters"), "net_events") != total,
            "rank %d: %g net events in rows, %g counted, want %" PRIu64, r, total,
            num(get(proc, "counters"), "net_events"), ce.net_events);
    FAIL_IF(!array_has_string(get(proc, "event_classes"), "netplugin"),
            "rank %d: netplugin not among the event classes", r);
  }
  return NULL;
}

static bool net_events_run(int net) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  if (!mkdtemp(dir)) return false;
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.channels = 3;
  c.steps = 4;
  c.iterations = 5;
  c.deterministic = true;
  c.net = net;
  c.linger_s = 30;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_endpoints(dir, c.ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false;
  double end = now_s() + 20;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = net_mismatch(&c, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok)
    fprintf(stderr, "    %s, after %d frames: %s\n", net == NT_NET_IB_QP ? "ib" : "socket",
            v.frames, why);
  return started && ok;
}

static void net_plugin_events_are_counted_per_qp_and_socket(void) {
  CHECK(net_events_run(NT_NET_IB_QP));
  CHECK(net_events_run(NT_NET_SOCKET));
}

/* ---- 3. a stalled rank ---- */

static bool waits_on_peer(const char *wait) {
  return !strcmp(wait, "send_peer_wait") || !strcmp(wait, "recv_net_wait") ||
         !strcmp(wait, "send_net_wait");
}

/* Whether, in communicator `hex`, following the stall alerts' waits-on
 * edges from `from` reaches `to`. */
static bool chain_reaches(const cJSON *alerts, const char *hex, int from, int to, int nranks) {
  bool seen[64] = {false};
  int queue[64], head = 0, tail = 0;
  queue[tail++] = from;
  seen[from] = true;
  while (head < tail) {
    int r = queue[head++];
    if (r == to) return true;
    const cJSON *a;
    cJSON_ArrayForEach(a, alerts) {
      int peer = (int)num(a, "peer");
      if (strcmp(str(a, "kind"), "stall") || strcmp(str(a, "comm"), hex) || num(a, "rank") != r ||
          !waits_on_peer(str(a, "wait")) || peer < 0 || peer >= nranks || seen[peer])
        continue;
      seen[peer] = true;
      queue[tail++] = peer;
    }
  }
  return false;
}

static const cJSON *find_alert(const cJSON *alerts, const char *kind, const char *hex, int rank,
                               const char *wait, int peer) {
  const cJSON *a;
  cJSON_ArrayForEach(a, alerts) {
    if (!strcmp(str(a, "kind"), kind) && !strcmp(str(a, "comm"), hex) && num(a, "rank") == rank &&
        (!wait || !strcmp(str(a, "wait"), wait)) && (peer < -1 || num(a, "peer") == peer))
      return a;
  }
  return NULL;
}

/* The diagnosis, once complete; NULL when this frame shows all of it. */
static const char *stall_incomplete(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  const cJSON *alerts = get(f, "alerts");
  int stalled = c->stall_rank, n = c->ranks;
  const cJSON *first = cJSON_GetArrayItem(alerts, 0);
  FAIL_IF(!first || strcmp(str(first, "kind"), "root") || num(first, "rank") != stalled,
          "the first alert is not the root on rank %d: %s", stalled,
          first ? str(first, "text") : "no alerts");
  for (int k = 0; k < c->comms; k++) {
    char hex[17];
    hex_of(nt_sim_comm_hash(k), hex);
    const cJSON *root = find_alert(alerts, "root", hex, stalled, NULL, -2);
    FAIL_IF(!root, "comm %d: no root alert for rank %d", k, stalled);
    /* Its own GPU: a GPU-side wait, every other rank waiting on it. */
    FAIL_IF(strcmp(str(root, "wait"), "recv_gpu_wait") &&
                strcmp(str(root, "wait"), "send_gpu_wait"),
            "comm %d: the root waits in %s", k, str(root, "wait"));
    FAIL_IF(num(root, "count") != n - 1 || num(root, "peer") != -1 || num(root, "age_s") < 1,
            "comm %d: root count %g peer %g age %g: %s", k, num(root, "count"), num(root, "peer"),
            num(root, "age_s"), str(root, "text"));
    char me[32];
    snprintf(me, sizeof me, "rank %d/%d", stalled, n);
    FAIL_IF(!strstr(str(root, "text"), me), "comm %d: root text: %s", k, str(root, "text"));
    /* The predecessor's sends wait for credit from it; the successor's
     * receives wait for its data. */
    int pred = (stalled - 1 + n) % n, succ = (stalled + 1) % n;
    FAIL_IF(!find_alert(alerts, "stall", hex, pred, "send_peer_wait", stalled),
            "comm %d: no send_peer_wait stall of rank %d on peer %d", k, pred, stalled);
    FAIL_IF(!find_alert(alerts, "stall", hex, succ, "recv_net_wait", stalled),
            "comm %d: no recv_net_wait stall of rank %d on peer %d", k, succ, stalled);
    for (int r = 0; r < n; r++) {
      FAIL_IF(!find_alert(alerts, "stall", hex, r, NULL, -2), "comm %d: rank %d not stalled", k, r);
      FAIL_IF(r != stalled && !chain_reaches(alerts, hex, r, stalled, n),
              "comm %d: the waits of rank %d do not lead to rank %d", k, r, stalled);
      const cJSON *hung = find_alert(alerts, "hung_op", hex, r, NULL, -2);
      FAIL_IF(!hung || !strcmp(str(hung, "func"), "other") || num(hung, "count") < 1 ||
                  num(hung, "age_s") < 1,
              "comm %d: no hung_op alert for rank %d", k, r);
    }
  }
  return NULL;
}

static void stalled_rank_is_the_root_of_the_waits(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 4;
  c.comms = 2;
  c.interval_ms = 100;
  c.stall_rank = 2;
  c.stall_after_s = 2;
  c.duration_s = 30; /* bounded even if nobody stops it */
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_endpoints(dir, c.ranks, 10) && viewer_start(&v, dir, "250", "1000");
  char why[512] = "no frame", wrong[512] = "";
  bool ok = false;
  int frames_with_root = 0, complete = 0;
  double end = now_s() + c.stall_after_s + 12;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    /* Never, in any frame, another rank as the root. */
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      if (!strcmp(str(a, "kind"), "root") && num(a, "rank") != c.stall_rank && !wrong[0])
        snprintf(wrong, sizeof wrong, "frame %d: %s", v.frames, str(a, "text"));
      if (!strcmp(str(a, "kind"), "root")) frames_with_root++;
    }
    /* Two frames in a row complete: the diagnosis is steady, not a blip. */
    complete = stall_incomplete(&c, f, why, sizeof why) == NULL ? complete + 1 : 0;
    ok = complete >= 2;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  if (wrong[0]) fprintf(stderr, "    a root alert for another rank: %s\n", wrong);
  CHECK(started);
  CHECK(ok);
  CHECK(!wrong[0]);
  CHECK(frames_with_root > 0);
}

/* ---- 4. a straggler ---- */

static void straggler_rank_is_named(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  /* Four ranks: without --straggler the simulated profiles make rank 2 the
   * one that lags (it thinks longest between operations), so naming rank 1
   * takes the straggler scenario. */
  c.ranks = 4;
  c.interval_ms = 100;
  c.straggler_rank = 1;
  c.straggle_ms = 300;
  c.duration_s = 30;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_endpoints(dir, c.ranks, 10) && viewer_start(&v, dir, "250", "1000");
  int named[4] = {0}, top_is_straggler = 0, frames_with = 0;
  char text[512] = "";
  double end = now_s() + 15;
  while (started && named[c.straggler_rank] < 6) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    bool seen[4] = {false}, top = true;
    const cJSON *a;
    cJSON_ArrayForEach(a, get(f, "alerts")) {
      if (strcmp(str(a, "kind"), "straggler")) continue;
      int r = (int)num(a, "rank");
      if (r < 0 || r >= 4) continue;
      /* Most behind first: the first straggler alert of the frame. */
      if (top && r == c.straggler_rank) {
        top_is_straggler++;
        snprintf(text, sizeof text, "%s", str(a, "text"));
      }
      top = false;
      if (!seen[r]) named[r]++;
      seen[r] = true;
    }
    frames_with += !top;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  bool ok = started && named[c.straggler_rank] >= 6;
  for (int r = 0; r < 4; r++)
    if (r != c.straggler_rank && named[r] >= named[c.straggler_rank]) ok = false;
  /* Most behind in most frames that name stragglers. */
  ok = ok && 2 * top_is_straggler > frames_with;
  ok = ok && strstr(text, "rank 1/4") && strstr(text, "is a straggler") && strstr(text, "behind");
  if (!ok)
    fprintf(stderr,
            "    %d frames, %d name stragglers; frames naming rank 0: %d, 1: %d, 2: %d, 3: %d; "
            "rank 1 most behind in %d; its alert: %s\n",
            v.frames, frames_with, named[0], named[1], named[2], named[3], top_is_straggler, text);
  CHECK(ok);
}

/* ---- 5. environment difference between ranks ---- */

static const char *env_mismatch(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rank = find_rank(f, nt_sim_comm_hash(0), r);
    FAIL_IF(!rank, "rank %d missing", r);
    const cJSON *proc = find_process(f, num(rank, "pid"));
    FAIL_IF(!proc, "rank %d: no process", r);
    const cJSON *env = get(proc, "env");
    FAIL_IF(strcmp(str(env, "NCCL_ALGO"), "Ring"), "rank %d: NCCL_ALGO '%s'", r,
            str(env, "NCCL_ALGO"));
    if (r == 1)
      FAIL_IF(strcmp(str(env, "NCCL_PROTO"), "LL"), "rank 1: NCCL_PROTO '%s'",
              str(env, "NCCL_PROTO"));
    else
      FAIL_IF(get(env, "NCCL_PROTO") != NULL, "rank %d: NCCL_PROTO '%s'", r,
              str(env, "NCCL_PROTO"));
  }
  const cJSON *runs = get(f, "runs"), *cur = get(runs, "current");
  FAIL_IF(!cJSON_IsObject(cur), "no current run");
  FAIL_IF(num(cur, "processes") != c->ranks || num(cur, "ranks") != c->ranks,
          "current run: %g processes %g ranks", num(cur, "processes"), num(cur, "ranks"));
  FAIL_IF(strcmp(str(get(cur, "env"), "NCCL_ALGO"), "Ring"), "run env NCCL_ALGO '%s'",
          str(get(cur, "env"), "NCCL_ALGO"));
  FAIL_IF(!array_has_string(get(cur, "env_varies"), "NCCL_PROTO"), "NCCL_PROTO not in env_varies");
  FAIL_IF(array_has_string(get(cur, "env_varies"), "NCCL_ALGO"), "NCCL_ALGO in env_varies");
  FAIL_IF(cJSON_GetArraySize(get(cur, "env_varies")) != 1, "%d variables vary",
          cJSON_GetArraySize(get(cur, "env_varies")));
  FAIL_IF(!cJSON_IsNull(get(runs, "previous")), "a previous run");
  return NULL;
}

static void environment_difference_between_ranks(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 3;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = 30;
  c.env[c.nenv++] = "NCCL_ALGO=Ring";
  c.rank_env[0].rank = 1;
  c.rank_env[0].kv = "NCCL_PROTO=LL";
  c.nrank_env = 1;
  pid_t sim = nt_sim_spawn(&c);
  viewer v = {.fd = -1, .pid = -1};
  bool started =
      sim > 0 && wait_endpoints(dir, c.ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false;
  double end = now_s() + 15;
  while (started && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = env_mismatch(&c, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  CHECK(started);
  CHECK(ok);
}

/* ---- 6. a job restart with a changed environment ---- */

static const char *restart_mismatch(const nt_sim_config *a, const cJSON *f, char *why, size_t cap) {
  const cJSON *runs = get(f, "runs"), *cur = get(runs, "current"), *prev = get(runs, "previous");
  FAIL_IF(!cJSON_IsObject(prev), "no previous run (current run %g, %d processes)", num(cur, "id"),
          cJSON_GetArraySize(get(f, "processes")));
  FAIL_IF(!cJSON_IsObject(cur), "no current run");
  FAIL_IF(num(prev, "id") != 1 || num(cur, "id") != 2, "run ids %g -> %g", num(prev, "id"),
          num(cur, "id"));
  FAIL_IF(strcmp(str(get(prev, "env"), "NCCL_PROTO"), "Simple"), "previous NCCL_PROTO '%s'",
          str(get(prev, "env"), "NCCL_PROTO"));
  FAIL_IF(strcmp(str(get(cur, "env"), "NCCL_PROTO"), "LL"), "current NCCL_PROTO '%s'",
          str(get(cur, "env"), "NCCL_PROTO"));
  FAIL_IF(num(prev, "processes") != a->ranks || num(cur, "processes") != a->ranks,
          "processes %g -> %g", num(prev, "processes"), num(cur, "processes"));
  const cJSON *diff = get(runs, "env_diff");
  FAIL_IF(cJSON_GetArraySize(diff) != 1, "%d variables in env_diff", cJSON_GetArraySize(diff));
  const cJSON *d = cJSON_GetArrayItem(diff, 0);
  FAIL_IF(strcmp(str(d, "name"), "NCCL_PROTO") || strcmp(str(d, "previous"), "Simple") ||
              strcmp(str(d, "current"), "LL"),
          "env_diff %s: %s -> %s", str(d, "name"), str(d, "previous"), str(d, "current"));
  FAIL_IF(!cJSON_IsFalse(get(d, "previous_varies")) || !cJSON_IsFalse(get(d, "current_varies")),
          "env_diff: NCCL_PROTO said to vary by rank");
  /* The previous run's operations are kept: all of them. */
  double count = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, get(prev, "ops")) count += num(o, "count");
  FAIL_IF(cJSON_GetArraySize(get(prev, "ops")) == 0 || count != (double)a->iterations * a->ranks,
          "previous run: %d op rows, %g ops, want %d", cJSON_GetArraySize(get(prev, "ops")), count,
          a->iterations * a->ranks);
  return NULL;
}

/* Whether the frame shows `n` processes, all ended. */
static bool all_ended(const cJSON *f, int n) {
  int ended = 0, procs = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, get(f, "processes")) {
    procs++;
    ended += cJSON_IsTrue(get(p, "ended"));
  }
  return procs == n && ended == n;
}

static void job_restart_with_changed_environment(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config a, b;
  base_config(&a, dir);
  a.ranks = 2;
  a.channels = 2;
  a.steps = 2;
  a.iterations = 6;
  a.deterministic = true;
  a.linger_s = 3; /* the viewer sees it live, then it ends by itself */
  b = a;
  a.env[a.nenv++] = "NCCL_PROTO=Simple";
  b.env[b.nenv++] = "NCCL_PROTO=LL";
  b.linger_s = 30;
  viewer v = {.fd = -1, .pid = -1};
  pid_t sim_a = nt_sim_spawn(&a), sim_b = -1;
  bool started =
      sim_a > 0 && wait_endpoints(dir, a.ranks, 10) && viewer_start(&v, dir, "100", "2000");
  char why[512] = "no frame";
  bool ok = false, live_a = false, ended_a = false;
  int a_status = -1;
  double end = now_s() + 15;
  /* Job A, live, then ended (its publishers send their final snapshot). */
  while (started && !ended_a) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    const cJSON *cur = get(get(f, "runs"), "current");
    if (!live_a && cJSON_GetArraySize(get(f, "processes")) == a.ranks &&
        !strcmp(str(get(cur, "env"), "NCCL_PROTO"), "Simple"))
      live_a = true;
    if (a_status == -1) a_status = wait_exit(sim_a, 0);
    ended_a = live_a && a_status != -1 && all_ended(f, a.ranks);
    cJSON_Delete(f);
  }
  if (a_status == -1) stop_group(&sim_a);
  snprintf(why, sizeof why, "job A: seen live %d, exit status %d, seen ended %d", live_a, a_status,
           ended_a);
  /* Job B, with another protocol, in the same directory. */
  if (ended_a) sim_b = nt_sim_spawn(&b);
  end = now_s() + 30; /* generous: a loaded 2-core machine under ASan starts ranks slowly */
  while (sim_b > 0 && !ok) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    ok = restart_mismatch(&a, f, why, sizeof why) == NULL;
    cJSON_Delete(f);
  }
  if (started) viewer_stop(&v);
  stop_group(&sim_b);
  remove_dir(dir);
  if (!ok) fprintf(stderr, "    after %d frames: %s\n", v.frames, why);
  CHECK(started);
  CHECK(live_a);
  CHECK(a_status >= 0 && WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0);
  CHECK(ended_a);
  CHECK(ok);
}

/* ---- 7. the viewer attached before the job ---- */

/* README: nccltop "attaches at any time (before or after the job starts)".
 * Frames come while nothing publishes, and the job shows up when it starts. */
static void viewer_attached_before_the_job(void) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = 30;
  viewer v = {.fd = -1, .pid = -1};
  bool started = viewer_start(&v, dir, "100", "2000");
  int empty = 0, seen = 0;
  pid_t sim = -1;
  double end = now_s() + 20;
  while (started && seen < 2) {
    cJSON *f = viewer_frame(&v, end);
    if (!f) break;
    int procs = cJSON_GetArraySize(get(f, "processes"));
    if (procs == 0 && cJSON_GetArraySize(get(f, "alerts")) == 0 && num(f, "publishers") == 0)
      empty++;
    /* A few empty frames, then the job. */
    if (empty == 3 && sim < 0) sim = nt_sim_spawn(&c);
    const cJSON *r0 = find_rank(f, nt_sim_comm_hash(0), 0),
                *r1 = find_rank(f, nt_sim_comm_hash(0), 1);
    if (procs == 2 && r0 && r1 && num(r0, "colls") == 3 && num(r1, "colls") == 3) seen++;
    cJSON_Delete(f);
  }
  int st = -1;
  if (started && v.pid > 0 && waitpid(v.pid, &st, WNOHANG) == v.pid) v.pid = -1; /* it died */
  if (started) viewer_stop(&v);
  stop_group(&sim);
  remove_dir(dir);
  if (seen < 2)
    fprintf(stderr, "    %d frames (%d empty), job seen in %d; the viewer %s\n", v.frames, empty,
            seen,
            st == -1          ? "was still running"
            : WIFSIGNALED(st) ? "was killed by a signal"
                              : "exited");
  CHECK(started);
  CHECK(empty >= 3);
  CHECK(seen >= 2);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  snprintf(plugin, sizeof plugin, "%s/libnccl-profiler-nccltop.so", bindir);
  /* The scenarios set these themselves; inherited ones would blur them. */
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  unsetenv("NCCLTOP_EVENTS");
  TEST_RUN(protocol_switch_by_size_and_phases_are_exact);
  TEST_RUN(net_plugin_events_are_counted_per_qp_and_socket);
  TEST_RUN(stalled_rank_is_the_root_of_the_waits);
  TEST_RUN(straggler_rank_is_named);
  TEST_RUN(environment_difference_between_ranks);
  TEST_RUN(job_restart_with_changed_environment);
  TEST_RUN(viewer_attached_before_the_job);
  return TEST_DONE();
}

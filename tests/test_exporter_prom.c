/* A real Prometheus server (Debian's prometheus, on 127.0.0.1, a free port,
 * its own temporary data directory and configuration, 1 s scrapes)
 * scrapes two `nccltop exporter`s: one watching a deterministic job, one a
 * real-time job whose rank 2 stalls (--stall-rank). After two scrapes the
 * test asks Prometheus' HTTP API the queries of the Grafana dashboard
 * (examples/grafana/nccltop.json, $instance and $__rate_interval filled
 * in) and checks:
 *  - a channel wait rate: rank 1 of the real-time job plays the simulator's
 *    "slow network" profile (per step 4200 us send_net_wait, 400 us
 *    send_gpu_wait, 300 us send_peer_wait plus its receiver's GPU wait):
 *    its send_net_wait rate is the largest of its send waits, at least
 *    three times each other, and within what 2 channels x 4 steps in
 *    flight allow;
 *  - bus bandwidth: the deterministic job's rows equal what
 *    `nccltop -b --json` says, and the operations counted equal the
 *    schedule's (nt_sim_expect_ops, per rank);
 *  - the stall root: the real-time job's root is rank 2.
 * Everything stops by itself within about a minute. */
#include "exporter_harness.h"

#define STALL_RANK    2
#define STALL_AFTER_S 14.0

static char tmpdir[64];

/* A free loopback port (bound and released: Prometheus takes it next). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                     getsockname(fd, (struct sockaddr *)&a, &len) == 0
                 ? ntohs(a.sin_port)
                 : -1;
  if (fd >= 0) close(fd);
  return port;
}

static pid_t start_prometheus(int port, int det_port, int stall_port) {
  char cfg[128], data[128], log[128], listen[64], cfg_arg[160], data_arg[160];
  snprintf(cfg, sizeof cfg, "%s/prometheus.yml", tmpdir);
  snprintf(data, sizeof data, "%s/data", tmpdir);
  snprintf(log, sizeof log, "%s/prometheus.log", tmpdir);
  FILE *f = fopen(cfg, "w");
  if (!f || mkdir(data, 0700) != 0) {
    if (f) fclose(f);
    return -1;
  }
  fprintf(f,
          "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
          "scrape_configs:\n  - job_name: nccltop\n    static_configs:\n"
          "      - targets: ['127.0.0.1:%d', '127.0.0.1:%d']\n",
          det_port, stall_port);
  if (fclose(f) != 0) return -1;
  snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", port);
  snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg);
  snprintf(data_arg, sizeof data_arg, "--storage.tsdb.path=%s", data);
  fflush(NULL);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execlp("prometheus", "prometheus", cfg_arg, data_arg, listen, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void show_log(void) {
  char cmd[192];
  snprintf(cmd, sizeof cmd, "tail -5 %s/prometheus.log >&2", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "    (no Prometheus log)\n");
}

/* ---- the HTTP API ---- */

static void urlencode(const char *s, char *out, size_t cap) {
  size_t n = 0;
  for (; *s && n + 4 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("-_.~", c))
      out[n++] = (char)c;
    else
      n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
  }
  out[n] = '\0';
}

/* The result array of an instant query, or NULL (the whole reply in *root,
 * which the caller deletes). */
static const cJSON *query(int port, const char *promql, cJSON **root) {
  char enc[4096], path[4200];
  urlencode(promql, enc, sizeof enc);
  snprintf(path, sizeof path, "/api/v1/query?query=%s", enc);
  http_reply r;
  *root = NULL;
  if (!http_request(port, "GET", path, NULL, 10, &r)) return NULL;
  if (r.status == 200)
    *root = cJSON_Parse(r.body);
  else
    fprintf(stderr, "    query %s: HTTP %d: %.300s\n", promql, r.status, r.body);
  http_free(&r);
  const cJSON *data = get(*root, "data");
  return strcmp(str(*root, "status"), "success") ? NULL : get(data, "result");
}

static double sample_value(const cJSON *s) {
  const cJSON *v = cJSON_GetArrayItem(get(s, "value"), 1);
  return cJSON_IsString(v) ? strtod(v->valuestring, NULL) : NAN;
}

/* The first series of `result` whose labels include key=value (all of
 * them: NULL-terminated pairs). */
static const cJSON *series(const cJSON *result, const char *const *kv) {
  const cJSON *s;
  cJSON_ArrayForEach(s, result) {
    bool all = true;
    for (int i = 0; kv[i]; i += 2) all = all && !strcmp(str(get(s, "metric"), kv[i]), kv[i + 1]);
    if (all) return s;
  }
  return NULL;
}

/* ---- the dashboard ---- */

static cJSON *dashboard;

static bool load_dashboard(void) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/../../examples/grafana/nccltop.json", bindir);
  FILE *f = fopen(path, "r");
  if (!f) f = fopen("examples/grafana/nccltop.json", "r");
  if (!f) return false;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  dashboard = cJSON_Parse(buf);
  return dashboard != NULL;
}

/* The dashboard query that reads `metric`, with its variables filled in;
 * false when no panel has one. */
static bool dashboard_query(const char *metric, const char *instance, char *out, size_t cap) {
  const cJSON *p, *t;
  cJSON_ArrayForEach(p, get(dashboard, "panels")) {
    cJSON_ArrayForEach(t, get(p, "targets")) {
      const char *e = str(t, "expr");
      const char *at = strstr(e, metric);
      if (!at || (at[strlen(metric)] != '{' && at[strlen(metric)] != '[')) continue;
      size_t n = 0;
      for (const char *s = e; *s && n + 64 < cap;) {
        if (!strncmp(s, "$instance", 9)) {
          n += (size_t)snprintf(out + n, cap - n, "%s", instance);
          s += 9;
        } else if (!strncmp(s, "$__rate_interval", 16)) {
          n += (size_t)snprintf(out + n, cap - n, "4s");
          s += 16;
        } else {
          out[n++] = *s++;
        }
      }
      out[n] = '\0';
      return true;
    }
  }
  fprintf(stderr, "    the dashboard has no query on %s\n", metric);
  return false;
}

/* ---- the checks ---- */

/* Rank 1's send waits per second (the dashboard's panel) match its
 * profile; NULL or why not. */
static const char *check_wait_rate(int port, const char *inst, char *why, size_t cap) {
  char q[2048];
  cJSON *root;
  if (!dashboard_query("nccltop_channel_wait_seconds_total", inst, q, sizeof q))
    return "no wait panel";
  const cJSON *res = query(port, q, &root);
  double v[3];
  static const char *const names[3] = {"send_gpu_wait", "send_peer_wait", "send_net_wait"};
  for (int k = 0; k < 3; k++) {
    const cJSON *s = series(res, (const char *const[]){"rank", "1", "wait", names[k], NULL});
    v[k] = s ? sample_value(s) : NAN;
  }
  cJSON_Delete(root);
  snprintf(why, cap, "rank 1 send waits per second: gpu %.3f, peer %.3f, net %.3f", v[0], v[1],
           v[2]);
  if (!(v[2] > 0.1 && v[2] <= 8.0 && v[2] >= 3 * v[0] && v[2] >= 3 * v[1])) return why;
  fprintf(stderr, "    %s\n", why);
  return NULL;
}

/* The deterministic job's bus bandwidth rows (the dashboard's panel) equal
 * the JSON frame's, and the operations counted equal the schedule's. */
static const char *check_busbw(int port, const char *inst, const nt_sim_config *c, const char *dir,
                               char *why, size_t cap) {
  char q[2048], cmd[PATH_MAX * 2];
  if (!dashboard_query("nccl_bus_bandwidth_gbs", inst, q, sizeof q)) return "no busbw panel";
  snprintf(cmd, sizeof cmd, "'%s' -b --json -n 3 -d 300 --dir '%s'", nccltop, dir);
  FILE *p = popen(cmd, "r");
  static char line[1 << 22];
  cJSON *frame = NULL;
  while (p && fgets(line, sizeof line, p)) {
    cJSON_Delete(frame);
    frame = cJSON_Parse(line);
  }
  if (p) pclose(p);
  cJSON *root;
  const cJSON *res = query(port, q, &root);
  int rows = 0, bad = 0;
  double ops = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(frame, "collectives")) {
    ops += num(x, "count");
    if (strcmp(str(x, "kind"), "coll") || !cJSON_IsNumber(get(x, "busbw_gbs"))) continue;
    char ap[64], sz[32];
    snprintf(ap, sizeof ap, "%s_%s", str(x, "algo"), str(x, "proto"));
    double lo = ldexp(1.0, (int)num(x, "bucket"));
    int u = 0;
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    while (lo >= 1024 && u < 4) lo /= 1024, u++;
    snprintf(sz, sizeof sz, "%.0f-%.0f%s", floor(lo), floor(lo) + 1, units[u]);
    const cJSON *s = series(res, (const char *const[]){"collective", str(x, "func"), "algo_proto",
                                                       ap, "message_size", sz, NULL});
    double got = s ? sample_value(s) : NAN;
    if (!close_to(got, num(x, "busbw_gbs"))) {
      if (!bad)
        snprintf(why, cap, "%s %s %s: Prometheus %g GB/s, JSON %g", str(x, "func"), ap, sz, got,
                 num(x, "busbw_gbs"));
      bad++;
    }
    rows++;
  }
  cJSON_Delete(root);
  cJSON_Delete(frame);
  nt_sim_op_expect want[64];
  int nw = nt_sim_expect_ops(c, want, 64);
  double expect = 0;
  for (int i = 0; i < nw; i++) expect += (double)want[i].count * c->ranks;
  /* The operations total, as Prometheus has it. */
  char tq[256];
  snprintf(tq, sizeof tq, "sum(nccltop_operations_total{instance=\"%s\"})", inst);
  const cJSON *tr = query(port, tq, &root);
  double total = cJSON_GetArraySize(tr) == 1 ? sample_value(cJSON_GetArrayItem(tr, 0)) : NAN;
  cJSON_Delete(root);
  if (bad) return why;
  if (!rows) return "no timed collective row";
  if (ops != expect || total != expect) {
    snprintf(why, cap, "operations: JSON %.0f, Prometheus %.0f, the schedule %.0f", ops, total,
             expect);
    return why;
  }
  fprintf(stderr, "    %d bus bandwidth rows equal the JSON frame's; %.0f operations\n", rows,
          total);
  return NULL;
}

static double stall_root(int port, const char *inst) {
  char q[2048];
  cJSON *root;
  if (!dashboard_query("nccltop_stall_root_rank", inst, q, sizeof q)) return NAN;
  const cJSON *res = query(port, q, &root);
  double v = cJSON_GetArraySize(res) >= 1 ? sample_value(cJSON_GetArrayItem(res, 0)) : NAN;
  if (cJSON_GetArraySize(res) > 1) v = -1; /* more than one root */
  cJSON_Delete(root);
  return v;
}

/* Scrapes Prometheus made of each of the two targets: the smaller. */
static int scrapes(int port) {
  cJSON *root;
  const cJSON *res = query(port, "count_over_time(up{job=\"nccltop\"}[5m])", &root);
  int n = cJSON_GetArraySize(res) == 2 ? INT32_MAX : 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, res) {
    int v = (int)sample_value(s);
    if (v < n) n = v;
  }
  cJSON_Delete(root);
  return n;
}

static void prometheus_scrapes_and_answers_from_the_schedule(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/nccltop-prom-XXXXXX");
  CHECK(mkdtemp(tmpdir));
  char ddir[96], sdir[96];
  snprintf(ddir, sizeof ddir, "%s/det", tmpdir);
  snprintf(sdir, sizeof sdir, "%s/stall", tmpdir);
  CHECK(mkdir(ddir, 0700) == 0 && mkdir(sdir, 0700) == 0);
  nt_sim_config dc, sc;
  base_config(&dc, ddir);
  dc.ranks = 4;
  dc.channels = 2;
  dc.deterministic = true;
  dc.linger_s = 90;
  base_config(&sc, sdir);
  sc.ranks = 4;
  sc.channels = 2;
  sc.duration_s = 90;
  sc.interval_ms = 100;
  sc.stall_rank = STALL_RANK;
  sc.stall_after_s = STALL_AFTER_S;
  double t0 = now_s();
  pid_t dsim = nt_sim_spawn(&dc), ssim = nt_sim_spawn(&sc);
  exporter de = {.pid = -1}, se = {.pid = -1};
  const char *const stall_opts[] = {"--stall-ms", "1000", "--inspector", NULL};
  const char *const det_opts[] = {"--inspector", NULL};
  bool started = dsim > 0 && ssim > 0 && wait_publishers(ddir, 4, 30) &&
                 wait_publishers(sdir, 4, 30) && exporter_start(&de, ddir, "250ms", det_opts) &&
                 exporter_start(&se, sdir, "250ms", stall_opts);
  int pport = started ? free_port() : -1;
  pid_t prom = pport > 0 ? start_prometheus(pport, de.port, se.port) : -1;
  char dinst[32], sinst[32], why[512] = "";
  snprintf(dinst, sizeof dinst, "127.0.0.1:%d", de.port);
  snprintf(sinst, sizeof sinst, "127.0.0.1:%d", se.port);
  /* Two scrapes of each exporter (plus one: a rate needs two samples in
   * its window). */
  int n = 0;
  for (double end = now_s() + 30; prom > 0 && now_s() < end && (n = scrapes(pport)) < 3;)
    nap_ms(250);
  const char *wait_bad = "not asked", *bw_bad = "not asked";
  double before_stall = t0 + STALL_AFTER_S - now_s();
  if (n >= 3) {
    char w1[512], w2[512];
    wait_bad = before_stall > 1 ? check_wait_rate(pport, sinst, w1, sizeof w1)
                                : "the job stalled before Prometheus had two scrapes";
    bw_bad = check_busbw(pport, dinst, &dc, ddir, w2, sizeof w2);
    if (wait_bad) snprintf(why, sizeof why, "%s", wait_bad);
    if (bw_bad) fprintf(stderr, "    bus bandwidth: %s\n", bw_bad);
    wait_bad = wait_bad ? why : NULL;
  }
  double root = NAN;
  for (double end = t0 + STALL_AFTER_S + 25; n >= 3 && now_s() < end; nap_ms(500)) {
    root = stall_root(pport, sinst);
    if (root == STALL_RANK) break;
  }
  if (n < 3) show_log();
  if (prom > 0) {
    kill(prom, SIGTERM);
    if (wait_exit(prom, 10) == -1) {
      kill(prom, SIGKILL);
      waitpid(prom, NULL, 0);
    }
  }
  exporter_stop(&de);
  exporter_stop(&se);
  stop_group(&dsim);
  stop_group(&ssim);
  remove_dir(tmpdir);
  if (wait_bad) fprintf(stderr, "    wait rate: %s\n", wait_bad);
  fprintf(stderr, "    stall root %g after %.1f s\n", root, now_s() - t0);
  CHECK(started);
  CHECK(prom > 0);
  CHECK(n >= 3);
  CHECK(!wait_bad);
  CHECK(!bw_bad);
  CHECK(root == STALL_RANK);
}

static void dashboard_is_valid_json_with_the_panels(void) {
  CHECK(dashboard);
  static const char *const titles[] = {"Bus bandwidth by size and algorithm",
                                       "Channel waits by state", "Stalls and their roots",
                                       "Drops and lost messages"};
  for (size_t i = 0; i < 4; i++) {
    bool found = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, get(dashboard, "panels")) found |= !strcmp(str(p, "title"), titles[i]);
    if (!found) fprintf(stderr, "    no panel \"%s\"\n", titles[i]);
    CHECK(found);
  }
  char q[2048];
  CHECK(dashboard_query("nccl_bus_bandwidth_gbs", "x", q, sizeof q));
  CHECK(dashboard_query("nccltop_channel_wait_seconds_total", "x", q, sizeof q));
  CHECK(dashboard_query("nccltop_stall_root_rank", "x", q, sizeof q));
  CHECK(dashboard_query("nccltop_plugin_dropped_events_total", "x", q, sizeof q));
}

int main(void) {
  scenario_init();
  signal(SIGPIPE, SIG_IGN);
  load_dashboard();
  TEST_RUN(dashboard_is_valid_json_with_the_panels);
  if (system("command -v prometheus >/dev/null 2>&1") != 0)
    TEST_SKIP(prometheus_scrapes_and_answers_from_the_schedule,
              "no prometheus binary (Debian package prometheus: scripts/install-deps.sh)");
  else
    TEST_RUN(prometheus_scrapes_and_answers_from_the_schedule);
  cJSON_Delete(dashboard);
  return TEST_DONE();
}

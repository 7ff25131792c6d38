/* Issue 4 end to end, in batch JSON, on the deterministic schedule:
 * simulated jobs -> real ZeroMQ sockets -> `nccltop -b --json`. The
 * collectives by algorithm, protocol and size, the phases, and network
 * plugin events per QP and socket are exactly what the schedule produced.
 * (Diagnosis scenarios: test_diagnosis.c.) */
#include "scenario_harness.h"

/* ---- 1. protocol switch by size, phases ---- */

/* nccl-tests' algorithm bytes and bus factor, by hand (ccl funcs in NCCL's
 * count convention: AllGather sendcount, ReduceScatter recvcount). */
static double alg_factor(const char *func, int n) {
  return !strcmp(func, "AllReduce") ? 1 : n;
}
static double bus_factor(const char *func, int n) {
  return !strcmp(func, "AllReduce") ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

/* Host time of one collective on the deterministic schedule: its
 * execution, from its first step's start to its last proxy op's stop (not
 * the proxy's idle, sleep, wakeup and append before it). */
static uint64_t det_op_ns(const nt_sim_config *c) {
  return sim_det_work_ns(c->channels, c->steps);
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
  CHECK(run_until(&c, dir, ops_mismatch, 20, "protocol switch"));
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
  return run_until(&c, dir, net_mismatch, 20, net == NT_NET_IB_QP ? "ib" : "socket");
}

static void net_plugin_events_are_counted_per_qp_and_socket(void) {
  CHECK(net_events_run(NT_NET_IB_QP));
  CHECK(net_events_run(NT_NET_SOCKET));
}

int main(void) {
  scenario_init();
  TEST_RUN(protocol_switch_by_size_and_phases_are_exact);
  TEST_RUN(net_plugin_events_are_counted_per_qp_and_socket);
  return TEST_DONE();
}

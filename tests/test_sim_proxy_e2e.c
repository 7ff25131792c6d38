/* Issue 9's proxy-side scenarios (--pxn, --collnet, --ce) through the real
 * plugin and `nccltop -b --json`: one deterministic job each (exact ring
 * steps, foreign-op counts, proxy totals, collective rows; under --collnet
 * also exact ring bytes, nothing in flight or dropped and no hung_op alert),
 * and each frame is printed ("observed"). The events themselves are checked
 * under the recorder in test_sim_proxy.c. */
#include "scenario_harness.h"
#include "../sim/scenario.h"
#include "lib/scenario_tweaks.h"

/* ---- end to end: the real plugin and `nccltop -b --json` ---- */

/* What a frame shows (for the report of issue 10); printed once. */
static void show(const char *label, const cJSON *f) {
  fprintf(stderr, "    [%s] what nccltop shows:\n", label);
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "processes")) {
    const cJSON *k = get(x, "counters");
    fprintf(stderr, "      pid %g: foreign_ops %g unknown_events %g reclaimed_ops %g dropped %g\n",
            num(x, "pid"), num(k, "foreign_ops"), num(k, "unknown_events"), num(k, "reclaimed_ops"),
            num(k, "dropped_events"));
  }
  cJSON_ArrayForEach(x, get(f, "ranks")) {
    const cJSON *ch, *op;
    fprintf(stderr, "      rank %g: colls %g coll_api %g, channels:", num(x, "rank"),
            num(x, "colls"), num(get(x, "api"), "coll_api"));
    cJSON_ArrayForEach(ch, get(x, "channels")) {
      fprintf(stderr, " %g/%s steps %g in_flight %g%s;", num(ch, "channel"), str(ch, "dir"),
              num(ch, "steps"), num(ch, "ops_in_flight"),
              cJSON_IsTrue(get(ch, "stalled")) ? " STALLED" : "");
    }
    int open = 0;
    cJSON_ArrayForEach(op, get(x, "in_flight")) open += strcmp(str(op, "state"), "done") != 0;
    fprintf(stderr, " ops not done %d\n", open);
  }
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    fprintf(stderr, "      collectives %s %s/%s: count %g done %g\n", str(x, "func"),
            str(x, "algo"), str(x, "proto"), num(x, "count"), num(x, "done"));
  }
  cJSON_ArrayForEach(x, get(f, "alerts")) {
    fprintf(stderr, "      alert %s: %s\n", str(x, "kind"), str(x, "text"));
  }
}

/* Passes once `ok` has held for 3 s (past --stall-ms), to see the alerts. */
static double held_since;
static const char *settled(const char *label, const cJSON *f, bool ok, char *why, size_t cap) {
  if (!ok) {
    held_since = 0;
    snprintf(why, cap, "%s: not there yet", label);
    return why;
  }
  if (!held_since) held_since = now_s();
  if (now_s() - held_since < 3) {
    snprintf(why, cap, "%s: waiting for the alerts", label);
    return why;
  }
  show(label, f);
  return NULL;
}

/* The rank's own row (not a PXN relay row) of channel `ch`, direction `dir`. */
static const cJSON *channel_row(const cJSON *rank, int ch, const char *dir) {
  const cJSON *x;
  cJSON_ArrayForEach(x, get(rank, "channels")) {
    if (num(x, "channel") == ch && !strcmp(str(x, "dir"), dir) && !get(x, "relay_rank")) return x;
  }
  return NULL;
}

/* The row of `rank`'s process that counts another rank's PXN ops, NULL if
 * none; *n counts every relay row of the rank. */
static const cJSON *relay_row(const cJSON *rank, int ch, const char *dir, int relayed, int *n) {
  const cJSON *x, *found = NULL;
  cJSON_ArrayForEach(x, get(rank, "channels")) {
    if (!get(x, "relay_rank")) continue;
    (*n)++;
    if (num(x, "channel") == ch && !strcmp(str(x, "dir"), dir) && num(x, "relay_rank") == relayed)
      found = x;
  }
  return found;
}

/* The relayed sends are counted where they ran, once, with the steps and
 * bytes their receiver got, and running them alarms no one. */
static bool relays_add_up(const nt_sim_config *c, const cJSON *f) {
  for (int r = 0; r + 1 < c->ranks; r += 2) {
    const cJSON *exec = find_rank(f, nt_sim_comm_hash(0), r);
    for (int ch = 0; exec && ch < c->channels; ch++) {
      int n = 0;
      const cJSON *row = relay_row(exec, ch, "send", r + 1, &n);
      if (!row || n != c->channels) return false;
      const cJSON *to = find_rank(f, nt_sim_comm_hash(0), (int)num(row, "peer"));
      const cJSON *got = NULL, *x;
      cJSON_ArrayForEach(x, get(to, "channels")) {
        if (num(x, "channel") == ch && !strcmp(str(x, "dir"), "recv") && num(x, "peer") == r + 1)
          got = x;
      }
      if (!got || num(row, "steps") != num(got, "steps") || num(row, "bytes") <= 0 ||
          num(row, "bytes") != num(got, "bytes") || strcmp(str(row, "run_state"), "idle"))
        return false;
    }
    if (!exec) return false;
  }
  return cJSON_GetArraySize(get(f, "alerts")) == 0;
}

/* Steps of every (rank, channel) row of `dir` equal `want` (ranks in mask). */
static bool steps_are(const nt_sim_config *c, const cJSON *f, const char *dir, unsigned mask,
                      double want) {
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rk = find_rank(f, nt_sim_comm_hash(0), r);
    if (!(mask >> r & 1)) continue;
    for (int ch = 0; ch < c->channels; ch++) {
      const cJSON *row = rk ? channel_row(rk, ch, dir) : NULL;
      if (!row || num(row, "steps") != want) return false;
    }
  }
  return true;
}

static const char *pxn_frame(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  double steps = (double)sim_det_iterations(c) * c->steps;
  bool ok = steps_are(c, f, "recv", 0xf, steps) && steps_are(c, f, "send", 0x5, steps) &&
            relays_add_up(c, f);
  /* every proxy thread's states and appends, the pair's sends included */
  for (int r = 0; r < c->ranks && ok; r++) {
    nt_sim_proxy_expect px;
    nt_sim_expect_proxy(c, r, 0, &px);
    const cJSON *rk = find_rank(f, nt_sim_comm_hash(0), r);
    const cJSON *p = rk ? cJSON_GetArrayItem(get(rk, "proxy"), 0) : NULL;
    ok = p && num(get(p, "state_ns"), "active") == (double)px.state_ns[NT_PROXY_ACTIVE] &&
         num(p, "appended_ops") == (double)px.appended_ops &&
         num(p, "appends") == (double)px.appends;
  }
  for (int r = 0; r < c->ranks && ok; r += 2) { /* the executors count the pair's ops */
    nt_sim_scn_expect want;
    nt_sim_expect_scenario(c, r, &want);
    const cJSON *rk = find_rank(f, nt_sim_comm_hash(0), r);
    const cJSON *p = rk ? find_process(f, num(rk, "pid")) : NULL;
    ok = p && num(get(p, "counters"), "foreign_ops") == (double)want.foreign_ops;
  }
  return settled("pxn", f, ok, why, cap);
}

/* Every (rank, channel, dir) row of the ring's peers carries exactly the
 * ring's steps and bytes, none has ops in flight, and no row is the
 * CollNet peer's (nRanks). */
static bool ring_rows_exact(const nt_sim_config *c, const cJSON *f) {
  for (int r = 0; r < c->ranks; r++) {
    const cJSON *rk = find_rank(f, nt_sim_comm_hash(0), r), *x;
    if (!rk) return false;
    for (int ch = 0; ch < c->channels; ch++)
      for (int dir = 0; dir < 2; dir++) {
        nt_sim_channel_expect want;
        nt_sim_expect_channel(c, r, 0, ch, dir, &want);
        const cJSON *row = channel_row(rk, ch, dir == NT_DIR_SEND ? "send" : "recv");
        if (!row || num(row, "steps") != (double)want.steps ||
            num(row, "bytes") != (double)want.bytes)
          return false;
      }
    cJSON_ArrayForEach(x, get(rk, "channels")) {
      if (num(x, "ops_in_flight") != 0 || num(x, "peer") == c->ranks) return false;
    }
    cJSON_ArrayForEach(x, get(rk, "in_flight")) {
      if (strcmp(str(x, "state"), "done") != 0) return false;
    }
  }
  return true;
}

/* CollNet ops are never stopped (P2): the ring's totals stay exact, the
 * CollNet AllReduces are counted and done without a duration, nothing is
 * in flight, nothing dropped, and no hung_op alert. */
static const char *collnet_frame(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  nt_sim_scn_expect want;
  nt_sim_expect_scenario(c, 0, &want);
  bool ok = ring_rows_exact(c, f);
  double ring = 0, collnet = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    if (!strncmp(str(x, "algo"), "COLLNET", 7)) {
      ok = ok && num(x, "done") == 0; /* completion not reported by NCCL */
      collnet += num(x, "count");
    } else {
      ok = ok && num(x, "done") == num(x, "count");
      ring += num(x, "count");
    }
  }
  ok = ok && ring == (double)(want.ring_colls * (uint64_t)c->ranks) &&
       collnet == (double)(want.collnet_colls * (uint64_t)c->ranks);
  cJSON_ArrayForEach(x, get(f, "processes")) {
    ok = ok && num(get(x, "counters"), "dropped_events") == 0;
  }
  const char *w = settled("collnet", f, ok, why, cap);
  if (w) return w;
  /* A healthy job: no alert of any kind (a hung_op for the CollNet ones
   * before the plugin knew they are never stopped). */
  const cJSON *a = cJSON_GetArrayItem(get(f, "alerts"), 0);
  FAIL_IF(a, "collnet: %s alert: %s", str(a, "kind"), str(a, "text"));
  return NULL;
}

static const char *ce_frame(const nt_sim_config *c, const cJSON *f, char *why, size_t cap) {
  nt_sim_scn_expect want;
  nt_sim_expect_scenario(c, 0, &want);
  bool ok = steps_are(c, f, "send", 0x3, (double)want.ring_colls * c->steps);
  /* NCCL reports no Coll for the CE AllGathers: nccltop counts their CeColl
   * events, with their bytes (the CeBatch totals: every rank's chunk), an
   * unknown time, launched once each; and raises no alert. */
  double other = 0, ce = 0, ce_bytes = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, get(f, "collectives")) {
    if (!strcmp(str(x, "source"), "ce")) {
      ok = ok && !strcmp(str(x, "func"), "AllGather") && !strcmp(str(x, "timing"), "unknown");
      ce += num(x, "count"), ce_bytes += num(x, "bytes");
    } else {
      other += num(x, "count");
    }
  }
  ok = ok && other == (double)(want.ring_colls * (uint64_t)c->ranks) &&
       ce == (double)(want.ce_colls * (uint64_t)c->ranks) && ce_bytes == (double)want.ce_bytes &&
       cJSON_GetArraySize(get(f, "alerts")) == 0;
  return settled("ce", f, ok, why, cap);
}

static void e2e_config(nt_sim_config *c, char *dir, int ranks) {
  base_config(c, dir);
  c->ranks = ranks;
  c->channels = 2;
  c->steps = 2;
  c->iterations = 6;
  c->deterministic = true;
  c->linger_s = 30;
}

/* One deterministic job with the scenario `tw` sets, under the batch viewer,
 * until a frame passes `check`. */
static void end_to_end(void (*tw)(nt_sim_config *), int ranks, frame_check check,
                       const char *label) {
  char dir[] = "/tmp/nccltop-scn-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  nt_sim_config c;
  e2e_config(&c, dir, ranks);
  tw(&c);
  held_since = 0;
  CHECK(run_until(&c, dir, check, 20, label));
}

static void end_to_end_pxn(void) {
  end_to_end(tw_pxn, 4, pxn_frame, "pxn");
}
static void end_to_end_collnet(void) {
  end_to_end(tw_collnet, 2, collnet_frame, "collnet");
}
/* Enough CollNet AllReduces (4 never-stopped ops each) to fill the old
 * 512-slot pool several times over: the ring's totals stay exact. */
static void tw_collnet_many(nt_sim_config *c) {
  c->collnet = true;
  c->iterations = 1500; /* 250 CollNet AllReduces: 1000 ops */
}
static void end_to_end_collnet_overflows_old_pool(void) {
  end_to_end(tw_collnet_many, 2, collnet_frame, "collnet-many");
}
static void end_to_end_ce(void) {
  end_to_end(tw_ce, 2, ce_frame, "ce");
}

int main(void) {
  scenario_init();
  TEST_RUN(end_to_end_pxn);
  TEST_RUN(end_to_end_collnet);
  TEST_RUN(end_to_end_collnet_overflows_old_pool);
  TEST_RUN(end_to_end_ce);
  return TEST_DONE();
}

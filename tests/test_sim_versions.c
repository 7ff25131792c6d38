/* The simulator plays each NCCL release it knows (--nccl-version 2.26 ..
 * 2.31) as that release calls a profiler: the recording plugin logs every
 * call, and the ABI, event shapes, threads, states and counts are checked
 * against what that release's source does (sim/version.h names the NCCL
 * functions; 2.26's own differences: tests/test_sim_v226.c). The
 * deterministic totals must hold for every release, in the
 * recorded clock and in the real plugin as the viewer shows it; hand-made
 * bad traces must be rejected; and `nccltop demo --nccl-version V` must
 * report the ABI release V would load. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "sim_grammar.h"
#include "../sim/schedule.h"

static const int versions[6] = {226, 227, 228, 229, 230, 231};
static const int abi_of[6] = {3, 4, 5, 6, 6, 6};
static char bindir[PATH_MAX];

/* Runs release v deterministically (or in real time) under the recorder
 * and loads the trace; the trace file is kept at keep (if not NULL). */
static int run_tagged(int v, uint64_t user_tag, rec_opts *o, nt_sim_config *c, const char *keep) {
  config_for(o, c);
  c->nccl_version = v;
  c->user_tag = user_tag;
  env_for(o);
  int rc = nt_sim_run(c);
  if (load(trace_path) != 0) rc = -1;
  if (keep && rename(trace_path, keep) != 0) rc = -1;
  unlink(trace_path);
  return rc;
}
static int run_version(int v, rec_opts *o, nt_sim_config *c, const char *keep) {
  return run_tagged(v, 0, o, c, keep);
}

static inline int count_type(int type) {
  int n = 0;
  for (int i = 0; i < tr.nev; i++) n += tr.ev[i].type == type;
  return n;
}

static int count_state(const ev_t *e, int state) {
  int n = 0;
  for (int r = 0; r < e->nrec; r++) n += e->states[r] == state;
  return n;
}

/* ---- the option ---- */

static void the_nccl_version_option_and_its_relation_to_abi(void) {
  static const struct {
    const char *arg;
    int v;
  } ok[] = {{"2.26", 226}, {"2.27", 227}, {"2.28", 228},     {"2.29", 229},
            {"2.30", 230}, {"2.31", 231}, {"2.30.7-1", 230}, {"2.26.6", 226}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    nt_sim_config c;
    nt_sim_defaults(&c);
    char *argv[] = {"--nccl-version", (char *)ok[i].arg};
    CHECK(nt_sim_parse_args(&c, 2, argv) == 2);
    CHECK_EQ_U64(c.nccl_version, ok[i].v);
  }
  static const char *const bad[] = {"2.25", "2.32", "3.26", "2.2", "228", "2.28.", "2.28-1", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nt_sim_config c;
    nt_sim_defaults(&c);
    char *argv[] = {"--nccl-version", (char *)bad[i]};
    CHECK(nt_sim_parse_args(&c, 2, argv) == -1);
  }
  nt_sim_config c;
  nt_sim_defaults(&c);
  CHECK_EQ_U64(sim_version_of(&c), 228); /* the default */
  /* --abi alone plays the release that loads that table itself */
  static const int native[4] = {226, 227, 228, 230};
  for (int abi = 3; abi <= 6; abi++) {
    c.abi = abi;
    CHECK_EQ_U64(sim_version_of(&c), native[abi - 3]);
    CHECK(sim_version_check(&c) == NULL);
  }
  /* with a release: at most its newest table; v3 only as 2.26 */
  c.nccl_version = 227, c.abi = 5;
  CHECK(sim_version_check(&c) != NULL);
  c.nccl_version = 229, c.abi = 3;
  CHECK(sim_version_check(&c) != NULL);
  c.nccl_version = 231, c.abi = 4; /* 2.31 loading a v4-only plugin through its shim */
  CHECK(sim_version_check(&c) == NULL && sim_version_of(&c) == 231);
  c.ranks = 2, c.nccl_version = 226, c.abi = 4, c.quiet = true;
  CHECK(nt_sim_run(&c) != 0); /* refused before any rank starts */
  /* the help lists the option and exits 0, for sim and demo */
  for (int i = 0; i < 2; i++) {
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "timeout 20 %s/nccltop %s --help", bindir, i ? "demo" : "sim");
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    static char out[16384];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(strstr(out, "--nccl-version 2.26|2.27|2.28|2.29|2.30|2.31") != NULL);
  }
}

/* ---- every release ---- */

static void each_release_loads_the_abi_it_looks_for_first(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.channels = 1};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_EQ_U64(tr.nctx, 2);
    for (int k = 0; k < tr.nctx; k++) CHECK_EQ_U64(tr.ctx[k].version, abi_of[i]);
    /* 2.26 has the two-argument init: no name, hash, rank or logger */
    CHECK(tr.ctx[0].log == (versions[i] > 226));
    CHECK_STR(grammar_problem(&c), "none");
  }
}

static void the_recorded_clock_adds_up_for_every_release(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.comms = 2, .channels = 2, .steps = 4, .iterations = 3};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    CHECK_STR(totals_problem(&c), "none");
  }
}

/* net.cc: SendPeerWait before every isend try; the simulator's credit
 * model gives sim_det_peer_waits tries, mostly one. 2.26 records
 * SendRemFifoWait on the op instead, once per try as well. */
static void send_peer_waits_follow_the_credit_model(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.channels = 2, .steps = 6};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    int ones = 0, more = 0;
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *s = &tr.ev[k];
      const ev_t *op = parent_of(s);
      if (s->type != NT_EV_PROXY_STEP || !op || !op->send) continue;
      int want = sim_det_peer_waits(op->ch, s->step);
      if (versions[i] == 226) {
        CHECK_EQ_U64(count_state(s, NT_ST_STEP_SEND_PEER_WAIT), 0);
      } else {
        CHECK_EQ_U64(count_state(s, NT_ST_STEP_SEND_PEER_WAIT), want);
      }
      ones += want == 1;
      more += want > 1;
    }
    CHECK(more > 0 && ones > 2 * more);
    if (versions[i] != 226) continue;
    for (int k = 0; k < tr.nev; k++) {
      const ev_t *op = &tr.ev[k];
      if (op->type != NT_EV_PROXY_OP || !op->send) continue;
      int fifo = count_state(op, 1 /* SendRemFifoWait */), want = 0;
      for (int s = 0; s < op->steps; s++) want += sim_det_peer_waits(op->ch, s);
      CHECK_EQ_U64(fifo, want);
    }
  }
}

/* ncclProxyProgress: a pass that progressed nothing is idle, so every send
 * that found no credit at first makes an Idle and an Active edge. */
static void idle_edges_come_at_progress_pass_frequency(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.channels = 2, .steps = 6, .iterations = 2};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    uint64_t misses = sim_det_credit_misses(2, 6);
    for (int k = 0; k < tr.nctx; k++) {
      int idle = 0, active = 0;
      for (int j = 0; j < tr.nev; j++) {
        const ev_t *e = &tr.ev[j];
        if (e->type != NT_EV_PROXY_CTRL || e->pid != tr.ctx[k].pid || e->ctx != tr.ctx[k].ctx ||
            e->nrec != 1)
          continue;
        idle += e->states[0] == NT_ST_CTRL_IDLE;
        active += e->states[0] == NT_ST_CTRL_ACTIVE;
      }
      /* t = 0, then per collective: Active, Idle + Active per miss, Idle */
      CHECK_EQ_U64(idle, 1 + 2 * (1 + misses));
      CHECK_EQ_U64(active, 2 * (1 + misses));
    }
  }
}

/* ncclProxyGetPostedOps after ncclProxyProgressDestroy wakes the thread:
 * an Append burst that appended nothing. */
static void append_end_can_report_no_ops(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.channels = 1};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    int zero = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *e = &tr.ev[j];
      if (e->type == NT_EV_PROXY_CTRL && e->nrec == 2 && e->states[1] == NT_ST_CTRL_APPEND_END &&
          e->size[1] == 0)
        zero++;
    }
    CHECK_EQ_U64(zero, tr.nctx);
  }
}

/* collTaskAppend: AllGather (and Broadcast) tasks in bytes of ncclInt8,
 * in every release; the CollApi keeps the caller's count. */
static void allgather_counts_bytes_of_int8(void) {
  for (int i = 0; i < 6; i++) {
    rec_opts o = {.channels = 1, .iterations = 3};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    int ag = 0;
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *e = &tr.ev[j];
      if (e->type != NT_EV_COLL) continue;
      if (!strcmp(e->func, "AllGather")) {
        CHECK(e->int8 && (uint64_t)e->count == sim_det_op(0).bytes); /* collective 0 */
        ag++;
      } else {
        CHECK(!e->int8);
      }
    }
    CHECK_EQ_U64(ag, 2); /* one per rank */
  }
}

/* ---- 2.27 / 2.28 ---- */

/* 2.27 is v4: no API events, the Coll's parent is the Group; it starts
 * no step of an op the plugin dropped, which 2.28 does (NULL parent). */
static void v227_has_no_api_events_and_no_steps_of_dropped_ops(void) {
  char null_types[16];
  snprintf(null_types, sizeof null_types, "%d", NT_EV_PROXY_OP);
  for (int v = 227; v <= 228; v++) {
    rec_opts o = {.channels = 1, .null_types = null_types};
    nt_sim_config c;
    CHECK(run_version(v, &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    CHECK_EQ_U64(count_type(NT_EV_PROXY_STEP), v == 227 ? 0 : 2 * 2 * 3 * 2);
    CHECK_EQ_U64(count_type(NT_EV_COLL_API), v == 227 ? 0 : 4);
  }
}

/* ---- 2.31 ---- */

/* profiler.cc@2.31 ncclProfilerThreadFunc: KernelCh on a thread of its
 * own, neither the application's nor the proxy's; 2.30 on the proxy. */
static void v231_kernel_events_come_from_the_profiler_thread(void) {
  for (int v = 230; v <= 231; v++) {
    rec_opts o = {.channels = 2};
    nt_sim_config c;
    CHECK(run_version(v, &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    CHECK_EQ_U64(count_type(NT_EV_KERNEL_CH), 2 * 2 * 2);
    for (int j = 0; j < tr.nev; j++) {
      const ev_t *k = &tr.ev[j];
      if (k->type != NT_EV_KERNEL_CH) continue;
      long proxy = 0, app = 0;
      for (int i = 0; i < tr.nev; i++) {
        const ev_t *e = &tr.ev[i];
        if (e->pid != k->pid || e->ctx != k->ctx) continue;
        if (e->type == NT_EV_PROXY_OP) proxy = e->tid;
        if (e->type == NT_EV_COLL) app = e->tid;
      }
      CHECK(proxy && app && k->tid != app && k->stop_tid == k->tid);
      CHECK(v == 231 ? k->tid != proxy : k->tid == proxy);
      CHECK(k->nrec == 1 && k->ptimer_stop > k->ptimer);
    }
  }
}

/* profiler.cc@2.31 ncclProfilerPluginLoad: ncclProfiler_v7 first, then v6.
 * With v7 every call carries its userTag (--user-tag: communicator 0's)
 * and, with KernelPhase in the mask, each KernelCh its three phases from
 * the profiler thread before its stop; KernelPhase alone turns KernelCh
 * on (ncclProfilerEnforceMaskDeps). Through the v6 shim (librecorder.so
 * has no v7): no userTag, KernelPhase cleared from the mask. */
static void v231_loads_v7_first_with_user_tags_and_kernel_phases(void) {
  char v6_only[sizeof recorder];
  memcpy(v6_only, recorder, sizeof recorder);
  snprintf(recorder, sizeof recorder, "%s/tests/librecorder7.so", bindir);
  static const char *const masks[] = {"0x8042", "0x8002"}; /* Coll + KernelPhase (+ KernelCh) */
  for (int m = 0; m < 2; m++) {
    rec_opts o = {.channels = 2, .comms = 2, .iterations = 3, .mask = masks[m]};
    nt_sim_config c;
    CHECK(run_tagged(231, 42, &o, &c, NULL) == 0);
    for (int k = 0; k < tr.nctx; k++) CHECK_EQ_U64(tr.ctx[k].version, 7);
    CHECK_STR(grammar_problem(&c), "none");
    int kch = count_type(NT_EV_KERNEL_CH), phases = count_type(NT_EV_KERNEL_PHASE);
    CHECK(kch > 0);
    CHECK_EQ_U64(phases, 3 * kch);
    int tagged = 0, untagged = 0;
    for (int i = 0; i < tr.nev; i++) {
      const ev_t *e = &tr.ev[i];
      if (e->type != NT_EV_COLL && e->type != NT_EV_P2P) continue;
      tagged += e->has_utag && e->utag == 42;
      untagged += e->has_utag && e->utag == 0;
    }
    CHECK(tagged > 0 && untagged > 0);
  }
  /* A bad tag is refused by the grammar. */
  rec_opts o = {.channels = 1, .iterations = 2, .mask = "0x8042"};
  nt_sim_config c;
  CHECK(run_tagged(231, 7, &o, &c, NULL) == 0);
  c.user_tag = 8;
  CHECK(strstr(grammar_problem(&c), "userTag 7, expected 8") != NULL);
  memcpy(recorder, v6_only, sizeof recorder);
  /* the v6 fallback */
  rec_opts o6 = {.channels = 2, .iterations = 2, .mask = "0x8042"};
  CHECK(run_version(231, &o6, &c, NULL) == 0);
  for (int k = 0; k < tr.nctx; k++) CHECK_EQ_U64(tr.ctx[k].version, 6);
  CHECK_STR(grammar_problem(&c), "none");
  CHECK(count_type(NT_EV_KERNEL_CH) > 0);
  CHECK_EQ_U64(count_type(NT_EV_KERNEL_PHASE), 0);
  /* --user-tag needs 2.31's v7 */
  c.user_tag = 1;
  c.nccl_version = 230;
  CHECK(sim_version_check(&c) != NULL);
  c.nccl_version = 231;
  CHECK(sim_version_check(&c) == NULL);
}

/* ---- real time ---- */

static void real_time_follows_each_release(void) {
  for (int i = 0; i < 6; i++) {
    /* one step per op: 2.26's op records of a 4-step op fit the trace */
    rec_opts o = {.realtime = true, .channels = 2, .steps = 1, .iterations = 3};
    nt_sim_config c;
    CHECK(run_version(versions[i], &o, &c, NULL) == 0);
    CHECK_STR(grammar_problem(&c), "none");
    CHECK(tr.ctx[0].version == abi_of[i]);
    CHECK(count_type(NT_EV_PROXY_STEP) > 0);
  }
}

/* ---- the grammar still rejects what NCCL never does ---- */

/* Copies trace `from` to the recorder's path keeping the lines for which
 * keep() is true (and adding `extra` at the end), then loads it. */
static int rewrite(const char *from, bool (*keep)(const char *line), const char *extra) {
  FILE *in = fopen(from, "r"), *out = fopen(trace_path, "w");
  if (!in || !out) {
    if (in) fclose(in);
    if (out) fclose(out);
    return -1;
  }
  static char l[2048];
  while (fgets(l, sizeof l, in))
    if (!keep || keep(l)) fputs(l, out);
  if (extra) fputs(extra, out);
  fclose(in);
  if (fclose(out) != 0) return -1;
  int rc = load(trace_path);
  unlink(trace_path);
  return rc;
}

static bool no_peer_wait(const char *l) {
  return !strstr(l, " state=20 ");
}

static unsigned long long drop_h;
static bool not_that_stop(const char *l) {
  char want[48];
  snprintf(want, sizeof want, "stop h=0x%llx\n", drop_h);
  const char *p = strstr(l, "stop h=");
  return !p || strcmp(p, want) != 0;
}

/* The handle of the first step of a send (or recv) op in the loaded trace. */
static const ev_t *first_step(bool send) {
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *op = parent_of(&tr.ev[i]);
    if (tr.ev[i].type == NT_EV_PROXY_STEP && op && op->send == send && tr.ev[i].stops)
      return &tr.ev[i];
  }
  return NULL;
}

static void hand_made_bad_traces_are_rejected(void) {
  char t228[64], t226[64], t231[64];
  snprintf(t228, sizeof t228, "/tmp/nccltop-vers-228-%d.log", (int)getpid());
  snprintf(t226, sizeof t226, "/tmp/nccltop-vers-226-%d.log", (int)getpid());
  snprintf(t231, sizeof t231, "/tmp/nccltop-vers-231-%d.log", (int)getpid());
  rec_opts o = {.channels = 1};
  nt_sim_config c228, c226, c231, c230;
  CHECK(run_version(228, &o, &c228, t228) == 0);
  CHECK(run_version(226, &o, &c226, t226) == 0);
  CHECK(run_version(231, &o, &c231, t231) == 0);
  c230 = c231;
  c230.nccl_version = 230;
  /* the originals pass */
  CHECK(rewrite(t228, NULL, NULL) == 0);
  CHECK_STR(grammar_problem(&c228), "none");
  /* a 2.28 send step with no SendPeerWait at all */
  CHECK(rewrite(t228, no_peer_wait, NULL) == 0);
  CHECK(strstr(grammar_problem(&c228), "send step") != NULL);
  /* a recv step never stopped: only 2.26 does that */
  CHECK(rewrite(t228, NULL, NULL) == 0);
  const ev_t *s = first_step(false);
  CHECK(s != NULL);
  drop_h = s->h;
  CHECK(rewrite(t228, not_that_stop, NULL) == 0);
  CHECK(strstr(grammar_problem(&c228), "stopped 0 times") != NULL);
  /* ... and even 2.26 stops every send step */
  CHECK(rewrite(t226, NULL, NULL) == 0);
  CHECK_STR(grammar_problem(&c226), "none");
  s = first_step(true);
  CHECK(s != NULL);
  drop_h = s->h;
  CHECK(rewrite(t226, not_that_stop, NULL) == 0);
  CHECK(strstr(grammar_problem(&c226), "stopped 0 times") != NULL);
  /* an empty ctrl event: 2.26 makes them, 2.28 never */
  CHECK(rewrite(t228, NULL, NULL) == 0);
  /* on the proxy thread of the first context (the trace's last event may
   * belong to another process or thread) */
  const ev_t *ctl = NULL;
  for (int i = tr.nev - 1; i >= 0 && !ctl; i--)
    if (tr.ev[i].type == NT_EV_PROXY_CTRL && tr.ev[i].pid == tr.ctx[0].pid &&
        tr.ev[i].ctx == tr.ctx[0].ctx)
      ctl = &tr.ev[i];
  CHECK(ctl != NULL);
  char extra[256];
  snprintf(extra, sizeof extra,
           "%d %ld 0 start 32 h=0xfffff ctx=0x%llx parent=0x0 rank=0 \n%d %ld 0 stop h=0xfffff\n",
           ctl->pid, ctl->tid, tr.ctx[0].ctx, ctl->pid, ctl->tid);
  CHECK(rewrite(t228, NULL, extra) == 0);
  CHECK(strstr(grammar_problem(&c228), "bad burst") != NULL);
  /* KernelCh on the profiler thread is 2.31's, on the proxy thread 2.30's */
  CHECK(rewrite(t231, NULL, NULL) == 0);
  CHECK_STR(grammar_problem(&c231), "none");
  CHECK(strstr(grammar_problem(&c230), "proxy events on two threads") != NULL);
  CHECK(rewrite(t228, NULL, NULL) == 0);
  c228.nccl_version = 231;
  CHECK(strstr(grammar_problem(&c228), "one thread") != NULL);
  unlink(t228);
  unlink(t226);
  unlink(t231);
}

/* ---- the real plugin and the viewer ---- */

static uint64_t jnum(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? (uint64_t)cJSON_GetNumberValue(v) : UINT64_MAX;
}

static const char *jstr(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* One rank entry of a frame against the expectations of rank r. */
static const char *rank_mismatch(const nt_sim_config *cfg, const cJSON *rank, int r, char *why,
                                 size_t cap) {
  static const char *proxy_names[5] = {"idle", "active", "sleep", "wakeup", "append"};
  const cJSON *ch;
  int seen = 0;
  cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(rank, "channels")) {
    int dir = strcmp(jstr(ch, "dir"), "recv") == 0;
    nt_sim_channel_expect e;
    nt_sim_expect_channel(cfg, r, 0, (int)jnum(ch, "channel"), dir, &e);
    const cJSON *waits = cJSON_GetObjectItemCaseSensitive(ch, "wait_ns");
    uint64_t got[6] = {jnum(ch, "steps"), jnum(ch, "bytes"), 0, 0, 0, jnum(ch, "peer")};
    uint64_t want[6] = {e.steps,      e.bytes,      e.wait_ns[0],
                        e.wait_ns[1], e.wait_ns[2], (uint64_t)e.peer};
    for (int i = 0; i < 3; i++) got[2 + i] = jnum(waits, nt_wait_name(nt_dir_wait(dir, i)));
    for (int i = 0; i < 6; i++)
      if (got[i] != want[i])
        return snprintf(why, cap, "rank %d ch %" PRIu64 " %s field %d: %" PRIu64 " want %" PRIu64,
                        r, jnum(ch, "channel"), dir ? "recv" : "send", i, got[i], want[i]),
               why;
    seen++;
  }
  if (seen != 2 * cfg->channels) return snprintf(why, cap, "rank %d: %d channels", r, seen), why;
  nt_sim_proxy_expect pe;
  nt_sim_expect_proxy(cfg, r, 0, &pe);
  const cJSON *proxy = NULL, *t;
  /* the thread with proxy states (2.31's profiler thread has none) */
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rank, "proxy")) {
    if (jnum(t, "appends") != 0 && jnum(t, "appends") != UINT64_MAX) proxy = t;
  }
  if (!proxy) return snprintf(why, cap, "rank %d: no proxy thread", r), why;
  const cJSON *ns = cJSON_GetObjectItemCaseSensitive(proxy, "state_ns");
  for (int s = 0; s < 5; s++)
    if (jnum(ns, proxy_names[s]) != pe.state_ns[s])
      return snprintf(why, cap, "rank %d proxy %s %" PRIu64 " want %" PRIu64, r, proxy_names[s],
                      jnum(ns, proxy_names[s]), pe.state_ns[s]),
             why;
  if (jnum(proxy, "appends") != pe.appends || jnum(proxy, "wakeups") != pe.wakeups ||
      jnum(proxy, "appended_ops") != pe.appended_ops)
    return snprintf(why, cap, "rank %d proxy counts", r), why;
  return NULL;
}

/* A frame has every rank of the job with exactly the expected totals. In
 * 2.26 the plugin learns no rank or hash from init, so ranks are told
 * apart by their send peer. */
static const char *frame_mismatch(const nt_sim_config *cfg, const cJSON *frame, char *why,
                                  size_t cap) {
  const cJSON *rank;
  int seen = 0;
  snprintf(why, cap, "no ranks");
  cJSON_ArrayForEach(rank, cJSON_GetObjectItemCaseSensitive(frame, "ranks")) {
    int r = (int)jnum(rank, "rank");
    if (r < 0 || r >= cfg->ranks) {
      const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rank, "channels"), 0);
      uint64_t peer = ch ? jnum(ch, "peer") : 0;
      bool send = ch && !strcmp(jstr(ch, "dir"), "send");
      r = (int)((peer + (uint64_t)cfg->ranks - (send ? 1 : 0) + (send ? 0 : 1)) %
                (uint64_t)cfg->ranks);
    }
    if (rank_mismatch(cfg, rank, r, why, cap)) return why;
    seen++;
  }
  if (seen != cfg->ranks) return snprintf(why, cap, "%d ranks of %d", seen, cfg->ranks), why;
  return NULL;
}

/* The real plugin, published and shown by `nccltop -b --json`, counts
 * exactly nt_sim_expect_* for every release, 2.26's recv bug included. */
static void the_plugin_counts_the_expectations_of_every_release(void) {
  char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", bindir);
  for (int i = 0; i < 6; i++) {
    char dir[] = "/tmp/nccltop-vers-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    nt_sim_config cfg;
    nt_sim_defaults(&cfg);
    cfg.ranks = 2, cfg.comms = 1, cfg.channels = 2, cfg.steps = 4, cfg.iterations = 3;
    cfg.deterministic = true;
    cfg.linger_s = 15;
    cfg.plugin = plugin;
    cfg.dir = dir;
    cfg.interval_ms = 50;
    cfg.quiet = true;
    cfg.nccl_version = versions[i];
    pid_t sim = nt_sim_spawn(&cfg);
    CHECK(sim > 0);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd,
             "timeout -k 2 30 %s/nccltop -b --json -n 100 -d 100 --dir %s 2>/dev/null", bindir,
             dir);
    FILE *p = popen(cmd, "r");
    static char line[4 << 20];
    char why[256] = "no output";
    bool matched = false;
    while (p && !matched && fgets(line, sizeof line, p)) {
      cJSON *f = cJSON_Parse(line);
      matched = f && !frame_mismatch(&cfg, f, why, sizeof why);
      cJSON_Delete(f);
    }
    kill(-sim, SIGTERM);
    if (p) pclose(p);
    waitpid(sim, NULL, 0);
    char rm[PATH_MAX];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0) fprintf(stderr, "    cannot remove %s\n", dir);
    if (!matched) fprintf(stderr, "    NCCL 2.%d: %s\n", versions[i] - 200, why);
    CHECK(matched);
  }
}

/* `nccltop demo --nccl-version V -b -n 6 --json`: every process's hello
 * reports the ABI release V loads from nccltop (2.31: v7). */
static void demo_reports_the_abi_each_release_loads(void) {
  for (int i = 0; i < 6; i++) {
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd,
             "timeout -k 5 120 %s/nccltop demo --nccl-version 2.%d -b -n 6 --json 2>/dev/null",
             bindir, versions[i] - 200);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    static char line[4 << 20];
    int procs = 0, wrong = 0, frames = 0;
    while (fgets(line, sizeof line, p)) {
      cJSON *f = cJSON_Parse(line);
      if (!f) continue;
      frames++;
      const cJSON *r;
      cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "processes")) {
        procs++;
        wrong += jnum(r, "abi") != (uint64_t)(versions[i] == 231 ? 7 : abi_of[i]);
      }
      cJSON_Delete(f);
    }
    int st = pclose(p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_U64(frames, 6);
    CHECK(procs > 0);
    CHECK_EQ_U64(wrong, 0);
  }
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s/..", dirname(exe));
  snprintf(recorder, sizeof recorder, "%s/tests/librecorder.so", bindir);
  TEST_RUN(the_nccl_version_option_and_its_relation_to_abi);
  TEST_RUN(each_release_loads_the_abi_it_looks_for_first);
  TEST_RUN(the_recorded_clock_adds_up_for_every_release);
  TEST_RUN(send_peer_waits_follow_the_credit_model);
  TEST_RUN(idle_edges_come_at_progress_pass_frequency);
  TEST_RUN(append_end_can_report_no_ops);
  TEST_RUN(allgather_counts_bytes_of_int8);
  TEST_RUN(v227_has_no_api_events_and_no_steps_of_dropped_ops);
  TEST_RUN(v231_kernel_events_come_from_the_profiler_thread);
  TEST_RUN(v231_loads_v7_first_with_user_tags_and_kernel_phases);
  TEST_RUN(real_time_follows_each_release);
  TEST_RUN(hand_made_bad_traces_are_rejected);
  TEST_RUN(the_plugin_counts_the_expectations_of_every_release);
  TEST_RUN(demo_reports_the_abi_each_release_loads);
  return TEST_DONE();
}

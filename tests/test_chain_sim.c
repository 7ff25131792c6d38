/* NCCLTOP_CHAIN end to end: the simulator run with the recording fixture
 * as NCCL's plugin, and with nccltop chaining it, gives the recorder the
 * same events (every ABI, a Coll-only mask, PXN and CE, a mask switch), and
 * `nccltop sim` finds a chained plugin by name. (The ABI cases:
 * test_chain.c.) */
#include <libgen.h>
#include <limits.h>

#include "testlib.h"
#include "plugin_harness.h"
#include "sim_trace.h"
#include "chain_recfile.h"

/* ---- end to end: the simulator, recorder alone vs chained ---- */

/* One line per event the recorder got: type, function, sequence, parent's
 * type, stops and records; sorted. */
static char **signature(int *n) {
  char **s = calloc((size_t)tr.nev + 1, sizeof *s);
  for (int i = 0; i < tr.nev; i++) {
    const ev_t *e = &tr.ev[i];
    /* A PXN op's parent is a handle of the process it came from: NCCL
     * gives the recorder there its own, nccltop passes what NCCL gave it
     * (nccltop's, there). Not compared. */
    bool pxn = e->type == NT_EV_PROXY_OP && e->oppid > 0 && e->oppid != e->pid;
    const ev_t *p = pxn ? NULL : parent_of(e);
    char buf[160];
    snprintf(buf, sizeof buf, "%d %s %d %lld ch%d step%d parent%d stops%d recs%d", e->type, e->func,
             e->seq, e->count, e->ch, e->step,
             pxn ? -2
             : p ? p->type
                 : (e->parent ? -1 : 0),
             e->stops, e->nrec);
    s[i] = strdup(buf);
  }
  *n = tr.nev;
  return s;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The recorder's events in a simulated job (abi, its mask, --pxn, --ce),
 * loaded by "NCCL" alone and then chained behind nccltop: the same
 * multiset of (type, function, sequence, count, channel, step, parent's
 * type, stops, records). */
static void same_events(int abi, const char *mask, bool pxn, bool ce, const char *sw);
static void case_simulator_chained_gives_the_recorder_the_same_events(void) {
  same_events(6, NULL, false, false, NULL);
}
static void case_simulator_chained_coll_only_recorder(void) {
  same_events(5, "0x2", false, false, NULL); /* nccltop's proxy classes filtered out */
}
/* The recorder switching its mask mid-job (at the first Coll's start): its
 * operations keep the mask NCCL copied for them, alone and chained. One
 * communicator per rank, so no other thread copies the mask while the
 * switch happens (which thread wins that race is not NCCL's contract). */
static void case_simulator_chained_mask_switch(void) {
  same_events(6, "0x2", false, false, "0:0x4A");
}
static void case_simulator_chained_pxn_and_ce(void) {
  same_events(6, "0x4A", true, true, NULL); /* PXN ops, CE collectives (CeColl only nccltop's) */
}

static void same_events(int abi, const char *mask, bool pxn, bool ce, const char *sw) {
  char exe[PATH_MAX], bindir[PATH_MAX], nccltop[PATH_MAX + 64];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s", dirname(exe));
  snprintf(recorder, sizeof recorder, "%s/librecorder.so", bindir);
  snprintf(nccltop, sizeof nccltop, "%s/libnccl-profiler-nccltop-test.so", bindir);
  char dir[] = "/tmp/nccltop-chain-sim-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("NCCLTOP_DIR", dir, 1);
  rec_opts o = {.abi = abi,
                .ranks = 4,
                .comms = 1,
                .channels = 2,
                .steps = 3,
                .iterations = 3,
                .mask = mask,
                .mask_switch = sw};
  nt_sim_config c;
  unsetenv("NCCLTOP_CHAIN");
  config_for(&o, &c);
  c.pxn = pxn;
  c.ce = ce;
  if (ce) c.nccl_version = 230;
  env_for(&o);
  CHECK(nt_sim_run(&c) == 0);
  CHECK(load(trace_path) == 0);
  unlink(trace_path);
  int n1 = 0;
  char **alone = signature(&n1);
  int colls_alone = 0, ops_alone = 0;
  for (int i = 0; i < tr.nev; i++) {
    colls_alone += tr.ev[i].type == NT_EV_COLL;
    ops_alone += tr.ev[i].type == NT_EV_PROXY_OP;
  }
  if (mask && !strcmp(mask, "0x2") && !sw) CHECK(ops_alone == 0);
  int pxn_ops = 0;
  for (int i = 0; i < tr.nev; i++)
    pxn_ops +=
        tr.ev[i].type == NT_EV_PROXY_OP && tr.ev[i].oppid > 0 && tr.ev[i].oppid != tr.ev[i].pid;
  if (pxn) CHECK(pxn_ops > 0);
  if (sw) CHECK(ops_alone > 0); /* the switch took effect */
  /* The same run, NCCL loading nccltop, nccltop chaining the recorder. */
  setenv("NCCLTOP_CHAIN", recorder, 1);
  config_for(&o, &c);
  c.plugin = nccltop;
  c.pxn = pxn;
  c.ce = ce;
  if (ce) c.nccl_version = 230;
  env_for(&o);
  int rc = nt_sim_run(&c);
  CHECK(rc == 0);
  CHECK(load(trace_path) == 0);
  unlink(trace_path);
  unsetenv("NCCLTOP_CHAIN");
  int n2 = 0;
  char **chained = signature(&n2);
  CHECK(colls_alone > 0);
  if (n1 != n2) fprintf(stderr, "    %d events alone, %d chained\n", n1, n2);
  qsort(alone, (size_t)n1, sizeof *alone, cmp_str);
  qsort(chained, (size_t)n2, sizeof *chained, cmp_str);
  /* Both sorted: walk them together, naming what only one has. */
  int diffs = 0;
  for (int i = 0, j = 0; i < n1 || j < n2;) {
    int c = i == n1 ? 1 : j == n2 ? -1 : strcmp(alone[i], chained[j]);
    if (c && diffs++ < 8)
      fprintf(stderr, "    only %s %s\n",
              c < 0 ? "alone:  " : "chained:", c < 0 ? alone[i] : chained[j]);
    if (c <= 0) i++;
    if (c >= 0) j++;
  }
  CHECK(diffs == 0);
  CHECK(tr.unknown_handles == 0);
  (void)rmdir(dir); /* empty once the job's publishers have gone */
  for (int i = 0; i < n1; i++) free(alone[i]);
  for (int i = 0; i < n2; i++) free(chained[i]);
  free(alone);
  free(chained);
}

/* `nccltop sim` as a user runs it: NCCLTOP_CHAIN=<bare name> found as
 * libnccl-profiler-<name>.so on the library path, as NCCL finds a plugin;
 * NCCL 2.31 (v7): the recorder sees the job's collectives through v7. */
static void case_nccltop_sim_chains_a_plugin_by_name(void) {
  char exe[PATH_MAX], bindir[PATH_MAX], nccltop[PATH_MAX + 64], plugin[PATH_MAX + 64],
      rec7[PATH_MAX + 64], link[PATH_MAX + 64];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  snprintf(bindir, sizeof bindir, "%s", dirname(exe));
  snprintf(nccltop, sizeof nccltop, "%s/../nccltop", bindir);
  snprintf(plugin, sizeof plugin, "%s/libnccl-profiler-nccltop-test.so", bindir);
  snprintf(rec7, sizeof rec7, "%s/librecorder7.so", bindir);
  char dir[] = "/tmp/nccltop-chain-name-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snprintf(link, sizeof link, "%s/libnccl-profiler-chained.so", dir);
  CHECK(symlink(rec7, link) == 0);
  snprintf(rec_path, sizeof rec_path, "%s/rec.log", dir);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", dir, 1);
    setenv("NCCLTOP_CHAIN", "chained", 1);
    setenv("NT_RECORDER_FILE", rec_path, 1);
    setenv("NT_RECORDER_MASK", "0x8FFF", 1);
    execl(nccltop, nccltop, "sim", "--nccl-version", "2.31", "--ranks", "2", "--iterations", "3",
          "--deterministic", "--quiet", "--plugin", plugin, "--dir", dir, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  rec_read();
  CHECK(rec_count("init v7 ") == 4);    /* two communicators per rank */
  CHECK(rec_count("start 2 ") == 12);   /* 3 iterations x 2 communicators x 2 ranks */
  CHECK(rec_count("start 32768 ") > 0); /* 2.31's KernelPhase, through v7 */
  CHECK(nlines < MAXL);
  CHECK(rec_count("finalize ") == 4);
  unlink(rec_path);
  unlink(link);
  (void)rmdir(dir);
}

PH_CHILD(nccltop_sim_chains_a_plugin_by_name)
PH_CHILD(simulator_chained_gives_the_recorder_the_same_events)
PH_CHILD(simulator_chained_coll_only_recorder)
PH_CHILD(simulator_chained_pxn_and_ce)
PH_CHILD(simulator_chained_mask_switch)

int main(void) {
  TEST_RUN(simulator_chained_gives_the_recorder_the_same_events);
  TEST_RUN(simulator_chained_coll_only_recorder);
  TEST_RUN(simulator_chained_pxn_and_ce);
  TEST_RUN(simulator_chained_mask_switch);
  TEST_RUN(nccltop_sim_chains_a_plugin_by_name);
  return TEST_DONE();
}

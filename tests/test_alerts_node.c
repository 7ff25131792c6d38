/* A slow node (monitor/core/alerts_straggler.c), on hand-made snapshots: when every
 * rank of a communicator on one host is a straggler by its launch counts
 * (two or more, latest on the same function), one alert names the node
 * and lists its ranks (nt_alert.ranks, JSON "ranks"); ranks of a host that
 * are not all behind, a host with a silent rank, ranks of no known host
 * and a single late rank stay one line per rank, with their text as
 * before; two slow nodes make two lines; a node's ranks latest on
 * different functions but late on a same one are still one line; ranks
 * placed round-robin are listed as they are; a node line ranks as its
 * latest rank; and the Prometheus exporter keeps one straggler series per
 * rank. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "test_diag.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/outputs/exporter.h"
#include "test_exposition.h"
#include "../monitor/core/frame.h"
#include "../monitor/outputs/json_out.h"
#include "../monitor/core/model.h"

#define HASH    0xc0ffee0000000400ull
#define ROUNDS  5
#define STALL   1500
#define NEVER   ROUNDS
#define MAXR    64
#define LAST_T  ((double)ROUNDS) /* the last round's time */
#define NO_HOST ((const char *)"")

/* A job: n ranks, rank r on host[r] (pid 100 + r); in round k (at t = 1 +
 * k) rank r has launched 10 + min(k, stop[r]) AllReduce; rank r publishes
 * no more after round quiet[r] (NEVER: to the end). With `allgather`, it
 * has launched 30 + min(k, stop_ag[r]) AllGather too. With `two_comms`,
 * each process has a rank in a second communicator too, which keeps
 * pace. */
typedef struct {
  int n;
  const char *host[MAXR];
  int stop[MAXR], stop_ag[MAXR], quiet[MAXR];
  bool allgather, two_comms;
} job;

static job plain(int n, int per_host) {
  static const char *const hosts[] = {"hostA", "hostB", "hostC", "hostD"};
  job j = {.n = n};
  for (int r = 0; r < n; r++) {
    j.host[r] = hosts[r / per_host];
    j.stop[r] = j.stop_ag[r] = j.quiet[r] = NEVER;
  }
  return j;
}

static nt_snapshot *snap(const job *j, int r, uint64_t k) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "%s", j->host[r]);
  s->pid = 100 + (uint32_t)r;
  s->seq = k + 1;
  s->mono_ns = (k + 1) * 1000000000ull;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH, .rank = r, .nranks = j->n, .nnodes = 4};
  uint64_t upto = k < (uint64_t)j->stop[r] ? k : (uint64_t)j->stop[r];
  s->seq_rows[s->nseq++] = (nt_seq_row){.func = NT_FUNC_ALLREDUCE, .launched = 10 + upto};
  if (j->allgather) {
    upto = k < (uint64_t)j->stop_ag[r] ? k : (uint64_t)j->stop_ag[r];
    s->seq_rows[s->nseq++] = (nt_seq_row){.func = NT_FUNC_ALLGATHER, .launched = 30 + upto};
  }
  if (j->two_comms) {
    s->ncomms = 2;
    s->comms[1] = (nt_comm_row){.comm_hash = HASH + 1, .rank = r, .nranks = j->n, .nnodes = 4};
    s->seq_rows[s->nseq++] =
        (nt_seq_row){.comm_index = 1, .func = NT_FUNC_ALLGATHER, .launched = 20 + k};
  }
  return s;
}

/* Runs the job's rounds (the diagnosis once a round, as a viewer does once
 * a frame); the model, or NULL. */
static nt_model *run(const job *j) {
  nt_model *m = nt_model_new();
  bool ok = m != NULL;
  nt_alert a[64];
  for (uint64_t k = 0; k < ROUNDS && ok; k++) {
    double t = 1.0 + (double)k;
    for (int r = 0; r < j->n && ok; r++) {
      if ((int)k > j->quiet[r]) continue;
      nt_snapshot *s = snap(j, r, k);
      ok = s && nt_model_apply_snapshot(m, "ep", 0, s, t) == 0;
      nt_snapshot_free(s);
    }
    nt_model_tick(m, t);
    if (ok && k + 1 < ROUNDS) (void)nt_diag_alerts(test_diag(), m, STALL, a, 64, t);
  }
  if (!ok) {
    fprintf(stderr, "    the job could not be built\n");
    nt_model_free(m);
    return NULL;
  }
  return m;
}

/* The last round's alerts. */
static uint32_t last_alerts(nt_model *m, nt_alert *a, uint32_t cap) {
  uint32_t n = m ? nt_diag_alerts(test_diag(), m, STALL, a, cap, LAST_T) : 0;
  for (uint32_t i = 0; i < n; i++)
    fprintf(stderr, "    %s [%u ranks]: %s\n", nt_alert_kind_name(a[i].kind), a[i].nlisted,
            a[i].text);
  return n;
}

static uint32_t stragglers(const nt_alert *a, uint32_t n) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) k += a[i].kind == NT_ALERT_STRAGGLER;
  return k;
}

static bool lists(const nt_alert *a, const int32_t *ranks, uint32_t n) {
  if (a->nlisted != n) return false;
  for (uint32_t i = 0; i < n; i++)
    if (a->ranks[i] != ranks[i]) return false;
  return true;
}

/* Ranks 4-7 are every rank of hostB: one line for the node. */
static void a_whole_node_behind_is_one_line(void) {
  job j = plain(8, 4);
  for (int r = 4; r < 8; r++) j.stop[r] = 0;
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  CHECK_EQ_U64(stragglers(a, n), 1);
  if (n == 1) {
    CHECK_EQ_U64(a[0].kind, NT_ALERT_STRAGGLER);
    CHECK_STR(a[0].text, "node hostB: ranks 4-7/8 (all 4 of its ranks) are 4 AllReduce launches "
                         "behind the others for 3.00s; the others wait for this node");
    CHECK(lists(&a[0], (const int32_t[]){4, 5, 6, 7}, 4));
    CHECK_EQ_U64(a[0].rank, 4); /* the lowest, and its process */
    CHECK(a[0].proc && a[0].proc->pid == 104 && !strcmp(a[0].proc->host, "hostB"));
    CHECK_EQ_U64(a[0].count, 4);
    CHECK_EQ_U64(a[0].func, NT_FUNC_ALLREDUCE);
    CHECK_EQ_U64(a[0].evidence, NT_EVIDENCE_LAUNCHES);
    CHECK(a[0].age_s > 2.99 && a[0].age_s < 3.01);
  }
  /* Per rank (the exporter's series): the same four ranks, one each. */
  nt_alert p[64];
  n = m ? nt_diag_alerts_per_rank(test_diag(), m, STALL, p, 64, LAST_T) : 0;
  CHECK_EQ_U64(n, 4);
  for (uint32_t i = 0; i < n && i < 4; i++) {
    CHECK_EQ_U64(p[i].kind, NT_ALERT_STRAGGLER);
    CHECK(lists(&p[i], &p[i].rank, 1));
    CHECK(p[i].rank >= 4 && p[i].rank <= 7 && strstr(p[i].text, "is a straggler"));
  }
  nt_model_free(m);
}

/* A slow node's ranks are late on the same functions, but each may be
 * latest on another one at a given moment: still one line, naming the
 * function the node is latest on. Ranks late on no function in common
 * (hostB's ranks 4-5 on AllReduce only, 6-7 on AllGather only) stay a line
 * each. */
static void a_node_late_on_a_same_function_is_one_line(void) {
  job j = plain(8, 4);
  j.allgather = true;
  j.stop[4] = j.stop[5] = j.stop_ag[6] = j.stop_ag[7] = 0; /* 3 s */
  j.stop_ag[4] = j.stop_ag[5] = j.stop[6] = j.stop[7] = 1; /* 2 s */
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  if (n == 1) {
    CHECK_STR(a[0].text, "node hostB: ranks 4-7/8 (all 4 of its ranks) are 3-4 AllReduce launches "
                         "behind the others for 3.00s (and on other functions); the others wait "
                         "for this node");
    CHECK(lists(&a[0], (const int32_t[]){4, 5, 6, 7}, 4));
    CHECK_EQ_U64(a[0].count, 7); /* 4 AllReduce + 3 AllGather */
    CHECK_EQ_U64(a[0].func, NT_FUNC_ALLREDUCE);
  }
  nt_model_free(m);
  /* Late on AllGather only from round 2 (1 s late: not yet): the line
   * says AllReduce, where the node is 3 s late. */
  for (int r = 4; r < 8; r++) j.stop[r] = 0, j.stop_ag[r] = NEVER;
  j.stop_ag[6] = 2;
  m = run(&j);
  n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  if (n == 1)
    CHECK_STR(a[0].text, "node hostB: ranks 4-7/8 (all 4 of its ranks) are 4 AllReduce launches "
                         "behind the others for 3.00s; the others wait for this node");
  nt_model_free(m);
  /* No function in common: four lines. */
  j.stop[4] = j.stop[5] = j.stop_ag[6] = j.stop_ag[7] = 0;
  j.stop_ag[4] = j.stop_ag[5] = j.stop[6] = j.stop[7] = NEVER;
  m = run(&j);
  n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 4);
  CHECK_EQ_U64(stragglers(a, n), 4);
  for (uint32_t i = 0; i < n; i++) CHECK(strstr(a[i].text, "is a straggler") != NULL);
  nt_model_free(m);
}

/* 64 ranks on 8 nodes of 8, placed round-robin (rank r on gpu-node-00<r %
 * 8>): node 3 slow gives one line naming its 8 ranks; the rest of the job
 * says nothing. */
static void eight_ranks_of_a_node_round_robin(void) {
  static char names[8][16];
  job j = plain(64, 64);
  for (int r = 0; r < 64; r++) {
    snprintf(names[r % 8], sizeof names[r % 8], "gpu-node-00%d", r % 8);
    j.host[r] = names[r % 8];
    if (r % 8 == 3) j.stop[r] = 0;
  }
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  if (n == 1) {
    CHECK_STR(a[0].text, "node gpu-node-003: ranks 3,11,19,27,35,43,51,59/64 (all 8 of its ranks) "
                         "are 4 AllReduce launches behind the others for 3.00s; the others wait "
                         "for this node");
    CHECK(lists(&a[0], (const int32_t[]){3, 11, 19, 27, 35, 43, 51, 59}, 8));
  }
  nt_model_free(m);
}

/* In a job of several communicators the line says which one. */
static void the_node_line_names_its_communicator(void) {
  job j = plain(8, 4);
  j.two_comms = true;
  for (int r = 4; r < 8; r++) j.stop[r] = 0;
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  if (n == 1) {
    CHECK_STR(a[0].text,
              "node hostB: ranks 4-7/8 (all 4 of its ranks in comm c0ffee0000000400) are 4 "
              "AllReduce launches behind the others for 3.00s; the others wait for "
              "this node");
    CHECK_EQ_U64(a[0].comm_hash, HASH);
  }
  nt_model_free(m);
}

/* Two of hostB's four ranks behind: a line each, as before. */
static void part_of_a_node_stays_per_rank(void) {
  job j = plain(8, 4);
  j.stop[5] = j.stop[6] = 0;
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 2);
  CHECK_EQ_U64(stragglers(a, n), 2);
  for (uint32_t i = 0; i < n && i < 2; i++) {
    CHECK_EQ_U64(a[i].rank, 5 + i);
    CHECK(lists(&a[i], (const int32_t[]){5 + (int32_t)i}, 1));
    CHECK(strstr(a[i].text, "is a straggler") && !strstr(a[i].text, "node"));
  }
  nt_model_free(m);
}

/* hostB and hostC all behind (hostA, hostD not): two node lines. */
static void two_slow_nodes_make_two_lines(void) {
  job j = plain(16, 4);
  for (int r = 4; r < 12; r++) j.stop[r] = 0;
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 2);
  CHECK_EQ_U64(stragglers(a, n), 2);
  if (n == 2) {
    CHECK(strstr(a[0].text, "node hostB: ranks 4-7/16 (all 4 of its ranks)") != NULL);
    CHECK(lists(&a[0], (const int32_t[]){4, 5, 6, 7}, 4));
    CHECK(strstr(a[1].text, "node hostC: ranks 8-11/16 (all 4 of its ranks)") != NULL);
    CHECK(lists(&a[1], (const int32_t[]){8, 9, 10, 11}, 4));
  }
  nt_model_free(m);
}

/* One rank behind: its line, word for word as before node lines. */
static void a_single_rank_is_unchanged(void) {
  job j = plain(8, 4);
  j.stop[5] = 0;
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 1);
  if (n == 1) {
    CHECK_STR(a[0].text,
              "rank 5/8 hostB:105 is a straggler: behind the other ranks by 4 AllReduce "
              "(10 of 14, 3.00s late); the others launched its next AllReduce 3.00s ago");
    CHECK(lists(&a[0], (const int32_t[]){5}, 1));
    CHECK_EQ_U64(a[0].count, 4);
  }
  nt_model_free(m);
}

/* A node line ranks as its latest rank: behind 2 s, it comes after a rank
 * behind 3 s and before one behind 1.9 s... (a rank of hostA stopped a
 * round earlier, then a round later, than hostB). */
static void a_node_line_ranks_as_its_latest_rank(void) {
  job j = plain(8, 4);
  for (int r = 4; r < 8; r++) j.stop[r] = 1; /* behind since t = 3: 2 s */
  j.stop[4] = 0;                             /* ...its rank 4 since t = 2: 3 s */
  j.stop[1] = 0;                             /* hostA's rank 1: 3 s */
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  /* rank 4 latest on AllReduce as the others are: still one node line;
   * ties go by rank: rank 1 first. */
  CHECK_EQ_U64(n, 2);
  if (n == 2) {
    CHECK_EQ_U64(a[0].rank, 1);
    CHECK(strstr(a[0].text, "rank 1/8 hostA:101 is a straggler") != NULL);
    CHECK(strstr(a[1].text, "node hostB: ranks 4-7/8 (all 4 of its ranks) are 3-4 AllReduce "
                            "launches behind the others for 3.00s") != NULL);
    CHECK(a[1].age_s > 2.99 && a[1].age_s < 3.01);
  }
  nt_model_free(m);
  /* hostB's ranks all 2 s behind, hostA's rank 1 3 s: the rank first. */
  j.stop[4] = 1;
  m = run(&j);
  n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 2);
  if (n == 2) {
    CHECK_EQ_U64(a[0].rank, 1);
    CHECK(strstr(a[1].text, "node hostB") && a[1].age_s > 1.99 && a[1].age_s < 2.01);
  }
  nt_model_free(m);
  /* ...and rank 1 behind 2 s, hostB's rank 6 3 s: the node first. */
  j.stop[1] = 1;
  j.stop[6] = 0;
  m = run(&j);
  n = last_alerts(m, a, 64);
  CHECK_EQ_U64(n, 2);
  if (n == 2) {
    CHECK(strstr(a[0].text, "node hostB") && a[0].age_s > 2.99);
    CHECK_EQ_U64(a[1].rank, 1);
  }
  nt_model_free(m);
}

/* Not every rank of the host is known to be behind: hostB's rank 7 went
 * silent (its own alert), and ranks of no known host are never a node. */
static void a_silent_rank_or_no_host_stays_per_rank(void) {
  job j = plain(8, 4);
  for (int r = 4; r < 8; r++) j.stop[r] = 0;
  j.quiet[7] = 0; /* publishes only in the first round */
  nt_model *m = run(&j);
  nt_alert a[64];
  uint32_t n = last_alerts(m, a, 64);
  CHECK_EQ_U64(stragglers(a, n), 3);
  for (uint32_t i = 0; i < n; i++) CHECK(!strstr(a[i].text, "node"));
  nt_model_free(m);
  j = plain(4, 4);
  for (int r = 0; r < 4; r++) j.host[r] = NO_HOST;
  j.stop[2] = j.stop[3] = 0;
  m = run(&j);
  n = last_alerts(m, a, 64);
  CHECK_EQ_U64(stragglers(a, n), 2);
  for (uint32_t i = 0; i < n; i++) CHECK(strstr(a[i].text, "is a straggler") != NULL);
  nt_model_free(m);
}

/* The frame's JSON: "ranks" lists the node's ranks (one for a rank's
 * alert), "rank" the lowest, "host" and "pid" its process. */
static void the_json_lists_the_ranks(void) {
  job j = plain(16, 4);
  for (int r = 4; r < 8; r++) j.stop[r] = 0;
  j.stop[9] = 0;
  nt_model *m = run(&j);
  nt_frame *f = nt_frame_new();
  nt_frame_opts o = {.stall_ms = STALL};
  CHECK(m && f && nt_frame_build(f, m, test_diag(), &o, LAST_T) == 0);
  nt_jo w;
  nt_jo_init(&w);
  const char *text = m && f ? nt_frame_json(f, &w) : NULL;
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  nt_jo_free(&w);
  CHECK(root);
  const cJSON *alerts = cJSON_GetObjectItemCaseSensitive(root, "alerts"), *x;
  CHECK_EQ_U64(cJSON_GetArraySize(alerts), 2);
  int seen = 0;
  cJSON_ArrayForEach(x, alerts) {
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(x, "ranks");
    const cJSON *rank = cJSON_GetObjectItemCaseSensitive(x, "rank");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(x, "host");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(x, "pid");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(x, "count");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(x, "evidence");
    CHECK(cJSON_IsArray(ranks) && cJSON_IsNumber(rank) && cJSON_IsString(host) &&
          cJSON_IsNumber(pid) && cJSON_IsNumber(count) && cJSON_IsString(ev));
    if (!cJSON_IsArray(ranks) || !cJSON_IsNumber(rank) || !cJSON_IsString(host) ||
        !cJSON_IsNumber(pid) || !cJSON_IsString(ev))
      continue;
    CHECK_STR(ev->valuestring, "launches");
    if (rank->valueint == 4) {
      seen |= 1;
      CHECK_EQ_U64(cJSON_GetArraySize(ranks), 4);
      for (int k = 0; k < 4; k++) CHECK_EQ_U64(cJSON_GetArrayItem(ranks, k)->valueint, 4 + k);
      CHECK_STR(host->valuestring, "hostB");
      CHECK_EQ_U64(pid->valueint, 104);
      CHECK_EQ_U64(count->valueint, 4);
    } else if (rank->valueint == 9) {
      seen |= 2;
      CHECK_EQ_U64(cJSON_GetArraySize(ranks), 1);
      CHECK_EQ_U64(cJSON_GetArrayItem(ranks, 0)->valueint, 9);
      CHECK_STR(host->valuestring, "hostC");
    }
  }
  CHECK_EQ_U64(seen, 3);
  cJSON_Delete(root);
  nt_frame_free(f);
  nt_model_free(m);
}

/* The exporter keeps one straggler series per rank: four for hostB's
 * ranks, labelled with each rank and its own process. */
static void the_exporter_keeps_a_series_per_rank(void) {
  job j = plain(8, 4);
  for (int r = 4; r < 8; r++) j.stop[r] = 0;
  nt_model *m = run(&j);
  nt_exporter_opts o = {.stall_ms = STALL};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(m && f);
  if (!m || !f) {
    if (f) fclose(f);
    free(buf);
    nt_model_free(m);
    return;
  }
  int rc = test_exposition(f, m, &o, LAST_T);
  CHECK(fclose(f) == 0 && rc == 0);
  static const char *const fams[] = {"nccltop_straggler_operations_behind{",
                                     "nccltop_straggler_lag_seconds{"};
  for (int k = 0; k < 2 && buf; k++) {
    int found[8] = {0}, lines = 0;
    for (const char *p = buf; (p = strstr(p, fams[k])); p++) {
      if (p != buf && p[-1] != '\n') continue;
      lines++;
      const char *r = strstr(p, "rank=\""), *pid = strstr(p, "pid=\""), *nl = strchr(p, '\n');
      if (!r || !pid || (nl && (r > nl || pid > nl))) continue;
      int rank = atoi(r + 6);
      if (rank >= 0 && rank < 8 && atoi(pid + 5) == 100 + rank) found[rank]++;
    }
    CHECK_EQ_U64(lines, 4);
    for (int r = 4; r < 8; r++) CHECK_EQ_U64(found[r], 1);
  }
  CHECK(buf && strstr(buf, "nccltop_straggler_operations_behind{host=\"hostB\",pid=\"105\"") &&
        strstr(buf, "nccltop_alerts{kind=\"straggler\"} 4"));
  if (buf && !strstr(buf, "nccltop_alerts{kind=\"straggler\"} 4")) fprintf(stderr, "%s", buf);
  free(buf);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(a_whole_node_behind_is_one_line);
  TEST_RUN(a_node_late_on_a_same_function_is_one_line);
  TEST_RUN(eight_ranks_of_a_node_round_robin);
  TEST_RUN(the_node_line_names_its_communicator);
  TEST_RUN(part_of_a_node_stays_per_rank);
  TEST_RUN(two_slow_nodes_make_two_lines);
  TEST_RUN(a_single_rank_is_unchanged);
  TEST_RUN(a_node_line_ranks_as_its_latest_rank);
  TEST_RUN(a_silent_rank_or_no_host_stays_per_rank);
  TEST_RUN(the_json_lists_the_ranks);
  TEST_RUN(the_exporter_keeps_a_series_per_rank);
  return TEST_DONE();
}

/* topo --graphs and NCCL's tuning model against what REAL NCCL 2.28.9
 * computed and logged (tests/traces/nccl-2.28.9-pytorch/story{2,4}/
 * rankN.nccl-log.xz: one H200 shared by 2 and 4 ranks, each its own node,
 * NET/Socket over lo at 10 Gbps, NCCL_P2P_DISABLE=1, no GDR). The
 * topology is tests/topologies/h200-vm-socket-lo.xml, the file NCCL's
 * detection builds on that machine (its README says how). From the logs:
 * the rings rank 0 prints ("Channel 00/02 : 0 1 2 3"), every rank's trees
 * ("Trees [0] 2/-1/-1->0->-1 ..."), the channel count ("2 coll channels"),
 * rank 0's whole tuning table (latency/bandwidth of every collective,
 * algorithm and protocol, zeros included; Max NThreads), threadThresholds,
 * and every algorithm, protocol and channel range NCCL picked for a
 * collective ("AllReduce: 4096 Bytes -> Algo RING proto LL
 * channel{Lo..Hi}={0..0}"). Each is compared with ours; the counts of
 * agreement are printed. The table prints one decimal: a value agrees
 * when ours printed the same way is the same text, or is within 0.1 or 1%
 * of it (the second count says how many needed that). */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "lib/xz_file.h"
#include "../topo/topo.h"
#include "../topo/tuning.h"

#define TRACES   "tests/traces/nccl-2.28.9-pytorch"
#define TOPOLOGY "tests/topologies/h200-vm-socket-lo.xml"
#define MAX_LOG  (16u << 20)

/* ---- the log ---- */

/* Each line's message: what follows "NCCL INFO ", else NULL. The line is
 * cut at its newline (the text is modified in place). */
static char *next_message(char **cursor) {
  while (**cursor) {
    char *line = *cursor, *nl = strchr(line, '\n');
    if (nl) {
      *nl = '\0';
      *cursor = nl + 1;
    } else {
      *cursor = line + strlen(line);
    }
    char *m = strstr(line, "NCCL INFO ");
    if (m) return m + strlen("NCCL INFO ");
  }
  return NULL;
}

static void trim(char *s) {
  size_t n = strlen(s), a = 0;
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  while (isspace((unsigned char)s[a])) a++;
  memmove(s, s + a, n - a + 1);
}

/* NCCL's names in the log ("RING", "COLLNET_DIRECT", "SIMPLE", "Tree",
 * "CollNetDirect") against ours: case and '_' ignored. */
static bool same_name(const char *logged, const char *ours) {
  while (*logged || *ours) {
    if (*logged == '_') {
      logged++;
      continue;
    }
    if (tolower((unsigned char)*logged) != tolower((unsigned char)*ours)) return false;
    logged++;
    ours++;
  }
  return true;
}

static int index_of(const char *logged, const char *(*name)(int), int n) {
  for (int i = 0; i < n; i++)
    if (same_name(logged, name(i))) return i;
  return -1;
}

#define MAX_RANKS 8
#define MAX_CH    64
#define MAX_PICKS 64
#define MAX_ENV   32

typedef struct {
  int coll;
  size_t bytes; /* count x type size, as NCCL logs it */
  int algo, proto, lo, hi, lines;
} pick;

typedef struct {
  /* rank 0 */
  int ring_channels, nrings;
  int ring[MAX_CH][MAX_RANKS];
  bool table_seen[NT_TUNE_NCOLLS][NT_TUNE_NALGOS];
  float lat[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  float bw[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  char lat_s[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS][16];
  char bw_s[NT_TUNE_NCOLLS][NT_TUNE_NALGOS][NT_TUNE_NPROTOS][16];
  int threads[NT_TUNE_NALGOS][NT_TUNE_NPROTOS];
  int nthreads_seen;
  pick picks[MAX_PICKS];
  int npicks, pick_lines;
  char env[MAX_ENV][128];
  int nenv;
  /* every rank */
  int tree_channels[MAX_RANKS];
  int tree_up[MAX_RANKS][MAX_CH], tree_down[MAX_RANKS][MAX_CH][3];
  int coll_channels[MAX_RANKS];
  int thresholds[MAX_RANKS][8];
} logged;

static void parse_table_row(logged *L, char *msg, const int *block, int nblock) {
  char *bar = strchr(msg, '|');
  if (!bar) return;
  *bar = '\0';
  char name[32];
  snprintf(name, sizeof name, "%s", msg);
  trim(name);
  char *cells = bar + 1;
  if (strcmp(name, "Max NThreads") == 0) {
    for (int b = 0; b < nblock; b++)
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        char *end;
        long v = strtol(cells, &end, 10);
        if (end == cells) return;
        L->threads[block[b]][p] = (int)v;
        L->nthreads_seen++;
        cells = strchr(end, '|');
        if (!cells) return;
        cells++;
      }
    return;
  }
  int c = index_of(name, nt_tune_coll_name, NT_TUNE_NCOLLS);
  if (c < 0) return;
  for (int b = 0; b < nblock; b++)
    for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
      char *slash = strchr(cells, '/'), *end = slash ? strchr(slash, '|') : NULL;
      if (!slash || !end) return;
      *slash = *end = '\0';
      int a = block[b];
      snprintf(L->lat_s[c][a][p], sizeof L->lat_s[c][a][p], "%s", cells);
      snprintf(L->bw_s[c][a][p], sizeof L->bw_s[c][a][p], "%s", slash + 1);
      trim(L->lat_s[c][a][p]);
      trim(L->bw_s[c][a][p]);
      L->lat[c][a][p] = strtof(L->lat_s[c][a][p], NULL);
      L->bw[c][a][p] = strtof(L->bw_s[c][a][p], NULL);
      L->table_seen[c][a] = true;
      cells = end + 1;
    }
}

static void parse_pick(logged *L, const char *msg) {
  char coll[32], algo[32], proto[32];
  unsigned long long bytes;
  int lo, hi;
  if (sscanf(msg, "%31[A-Za-z]: %llu Bytes -> Algo %31s proto %31s channel{Lo..Hi}={%d..%d}", coll,
             &bytes, algo, proto, &lo, &hi) != 6)
    return;
  pick p = {.coll = index_of(coll, nt_tune_coll_name, NT_TUNE_NCOLLS),
            .bytes = (size_t)bytes,
            .algo = index_of(algo, nt_tune_algo_name, NT_TUNE_NALGOS),
            .proto = index_of(proto, nt_tune_proto_name, NT_TUNE_NPROTOS),
            .lo = lo,
            .hi = hi,
            .lines = 1};
  L->pick_lines++;
  for (int i = 0; i < L->npicks; i++) {
    pick *q = &L->picks[i];
    if (q->coll == p.coll && q->bytes == p.bytes && q->algo == p.algo && q->proto == p.proto &&
        q->lo == p.lo && q->hi == p.hi) {
      q->lines++;
      return;
    }
  }
  if (L->npicks < MAX_PICKS) L->picks[L->npicks++] = p;
}

static void parse_trees(logged *L, int rank, const char *msg) {
  const char *s = msg + strlen("Trees");
  int n = 0;
  while ((s = strchr(s, '[')) != NULL && n < MAX_CH) {
    int c, d0, d1, d2, me, up, used = 0;
    if (sscanf(s, "[%d] %d/%d/%d->%d->%d%n", &c, &d0, &d1, &d2, &me, &up, &used) != 6 || c != n ||
        me != rank)
      break;
    L->tree_up[rank][c] = up;
    L->tree_down[rank][c][0] = d0;
    L->tree_down[rank][c][1] = d1;
    L->tree_down[rank][c][2] = d2;
    n++;
    s += used;
  }
  L->tree_channels[rank] = n;
}

static bool parse_rank(logged *L, const char *dir, int rank) {
  char path[512];
  snprintf(path, sizeof path, "%s/rank%d.nccl-log.xz", dir, rank);
  char *text = xz_read_file(path, MAX_LOG, NULL);
  if (!text) {
    fprintf(stderr, "    cannot read %s\n", path);
    return false;
  }
  char *cursor = text, *msg;
  int block[3], nblock = 0;
  while ((msg = next_message(&cursor)) != NULL) {
    int ch, nch, v[5];
    char rest[256];
    if (strncmp(msg, "Trees ", 6) == 0) {
      parse_trees(L, rank, msg);
    } else if (sscanf(msg, "%d coll channels, %d collnet channels, %d nvls channels", &v[0], &v[1],
                      &v[2]) == 3) {
      L->coll_channels[rank] = v[0];
    } else if (sscanf(msg, "threadThresholds %d/%d/%d | %d/%d/%d | %d | %d", &v[0], &v[1], &v[2],
                      &v[3], &v[4], &L->thresholds[rank][5], &L->thresholds[rank][6],
                      &L->thresholds[rank][7]) == 8) {
      memcpy(L->thresholds[rank], v, sizeof v);
    } else if (rank != 0) {
      continue; /* rank 0 alone prints the rest */
    } else if (sscanf(msg, "Channel %d/%d : %255[0-9 ]", &ch, &nch, rest) == 3 &&
               !strchr(msg, '[') && ch >= 0 && ch < MAX_CH) {
      L->ring_channels = nch;
      int k = 0;
      for (char *tok = strtok(rest, " "); tok && k < MAX_RANKS; tok = strtok(NULL, " "))
        L->ring[ch][k++] = atoi(tok);
      if (ch + 1 > L->nrings) L->nrings = ch + 1;
    } else if (strstr(msg, "  Algorithm   |") == msg) {
      /* a block of up to 3 algorithms, named between the bars */
      nblock = 0;
      char *s = strchr(msg, '|');
      while (s && nblock < 3) {
        char *e = strchr(s + 1, '|');
        if (!e) break;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(e - s - 1), s + 1);
        trim(name);
        int a = index_of(name, nt_tune_algo_name, NT_TUNE_NALGOS);
        if (a >= 0) block[nblock++] = a;
        s = e;
      }
    } else if (nblock > 0 && strchr(msg, '|') && !strstr(msg, "Protocol")) {
      parse_table_row(L, msg, block, nblock);
    } else if (strstr(msg, "Bytes -> Algo")) {
      parse_pick(L, msg);
    } else if (strstr(msg, " set by environment to ") && strncmp(msg, "NCCL_", 5) == 0 &&
               L->nenv < MAX_ENV) {
      /* "NCCL_X set by environment to V" (sometimes with a final '.') */
      char name[64], value[64];
      if (sscanf(msg, "%63s set by environment to %63s", name, value) == 2) {
        size_t n = strlen(value);
        if (n > 0 && value[n - 1] == '.') value[n - 1] = '\0';
        char a[128];
        snprintf(a, sizeof a, "%s=%s", name, value);
        bool dup = false;
        for (int i = 0; i < L->nenv; i++) dup = dup || strcmp(L->env[i], a) == 0;
        if (!dup) snprintf(L->env[L->nenv++], sizeof L->env[0], "%s", a);
      }
    }
  }
  free(text);
  return true;
}

/* ---- ours ---- */

/* The variables of the log NCCL read that are facts of the topology file
 * (the socket NIC on lo, no InfiniBand, one node per rank) or have no
 * effect on the graphs and the model (shared memory with one GPU a node,
 * plugins, where the RAS and profiler live). Any other variable must be
 * one our what-ifs take: a new one in a new log fails the test rather than
 * being ignored. */
static const char *const file_facts[] = {
    "NCCL_SOCKET_IFNAME", "NCCL_NET_PLUGIN",      "NCCL_HOSTID", "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",    "NCCL_PROFILER_PLUGIN", "NCCL_NET",    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",  "NCCL_TUNER_PLUGIN",    NULL};

static bool is_file_fact(const char *assignment) {
  for (int i = 0; file_facts[i]; i++) {
    size_t n = strlen(file_facts[i]);
    if (strncmp(assignment, file_facts[i], n) == 0 && assignment[n] == '=') return true;
  }
  return false;
}

typedef struct {
  int ok, total;
  int loose; /* agreed only within the tolerance */
} tally;

static void count(tally *t, bool ok) {
  t->total++;
  t->ok += ok;
}

/* A table value: printed alike, or within 0.1 / 1%. */
static bool value_agrees(float ours, const char *logged_s, float logged_v, bool *loose) {
  char s[32];
  snprintf(s, sizeof s, "%.1f", (double)ours);
  *loose = false;
  if (strcmp(s, logged_s) == 0) return true;
  double d = fabs((double)ours - (double)logged_v);
  *loose = d <= 0.1 + 1e-6 || d <= 0.01 * fabs((double)logged_v);
  return *loose;
}

static int story_failures;

static void report(const char *story, const char *what, const tally *t) {
  printf("%s %-23s %d/%d", story, what, t->ok, t->total);
  if (t->loose) printf(" (%d within 0.1 or 1%%, not printed alike)", t->loose);
  printf("\n");
  if (t->ok != t->total || t->total == 0) story_failures++;
}

static void run_story(const char *name, int nranks) {
  char dir[256];
  snprintf(dir, sizeof dir, "%s/%s", TRACES, name);
  logged *L = calloc(1, sizeof *L);
  CHECK(L != NULL);
  bool read = true;
  for (int r = 0; r < nranks; r++) read = read && parse_rank(L, dir, r);
  if (!read) free(L);
  CHECK(read);

  /* our machine, under the log's variables */
  char err[512];
  nt_topo *t = nt_topo_load_file(TOPOLOGY, err, sizeof err);
  if (!t) {
    fprintf(stderr, "    %s\n", err);
    free(L);
  }
  CHECK(t != NULL);
  nt_topo_env e;
  nt_tune_env te;
  nt_topo_env_defaults(&e);
  nt_tune_env_defaults(&te);
  e.version = NT_NCCL_228;
  int unknown = 0, applied = 0;
  for (int i = 0; i < L->nenv; i++) {
    if (is_file_fact(L->env[i])) continue;
    if (nt_topo_env_set(&e, L->env[i], err, sizeof err) == 0 ||
        nt_tune_env_set(&te, L->env[i], err, sizeof err) == 0) {
      applied++;
      continue;
    }
    fprintf(stderr, "    %s: %s in the log is neither a what-if nor a fact of the file\n", name,
            L->env[i]);
    unknown++;
  }
  nt_topo_graphs *g = NULL;
  nt_tune_model *m = calloc(1, sizeof *m);
  bool ok = unknown == 0 && applied >= 1 && m && nt_topo_compute(t, &e, err, sizeof err) == 0 &&
            (g = nt_topo_graphs_compute(t, nranks, err, sizeof err)) != NULL &&
            nt_topo_graphs_tune(t, g, &te, m, err, sizeof err) == 0;
  if (!ok) {
    fprintf(stderr, "    %s: %s\n", name, err);
    nt_topo_graphs_free(g);
    nt_topo_free(t);
    free(m);
    free(L);
  }
  CHECK(ok);
  story_failures = 0;

  /* rings: rank 0 prints channel c's order starting from itself */
  tally rings = {0}, trees = {0}, chans = {0}, cells = {0}, zeros = {0}, threads = {0},
        thresh = {0}, picks = {0}, pick_lines = {0}, ranges = {0};
  int nch = nt_topo_graphs_nchannels(g);
  count(&chans, L->ring_channels == nch);
  count(&chans, L->nrings == nch);
  for (int c = 0; c < L->nrings; c++) {
    const int *ring = c < nch ? nt_topo_graphs_ring(g, c) : NULL;
    bool same = ring != NULL;
    for (int k = 0; same && k < nranks; k++) same = ring[k] == L->ring[c][k];
    if (!same) fprintf(stderr, "    %s: ring %d differs\n", name, c);
    count(&rings, same);
  }
  /* trees and channel counts: every rank */
  for (int r = 0; r < nranks; r++) {
    count(&chans, L->coll_channels[r] == nch && L->coll_channels[r] == m->comm_channels);
    count(&chans, L->tree_channels[r] == nch);
    for (int c = 0; c < L->tree_channels[r]; c++) {
      int up, down[3];
      bool same = nt_topo_graphs_tree(g, c, r, &up, down) && up == L->tree_up[r][c];
      for (int k = 0; same && k < 3; k++) same = down[k] == L->tree_down[r][c][k];
      if (!same) fprintf(stderr, "    %s: rank %d tree %d differs\n", name, r, c);
      count(&trees, same);
    }
    /* threadThresholds: Tree LL/LL128/Simple | Ring ... | CollNet Direct | Chain */
    const int ta[8] = {NT_TUNE_TREE, NT_TUNE_TREE, NT_TUNE_TREE,           NT_TUNE_RING,
                       NT_TUNE_RING, NT_TUNE_RING, NT_TUNE_COLLNET_DIRECT, NT_TUNE_COLLNET_CHAIN};
    const int tp[8] = {NT_TUNE_LL,    NT_TUNE_LL128,  NT_TUNE_SIMPLE, NT_TUNE_LL,
                       NT_TUNE_LL128, NT_TUNE_SIMPLE, NT_TUNE_SIMPLE, NT_TUNE_SIMPLE};
    for (int i = 0; i < 8; i++) {
      bool same = m->thread_threshold[ta[i]][tp[i]] == L->thresholds[r][i];
      if (!same)
        fprintf(stderr, "    %s: rank %d threadThreshold %d: ours %d, NCCL %d\n", name, r, i,
                m->thread_threshold[ta[i]][tp[i]], L->thresholds[r][i]);
      count(&thresh, same);
    }
  }
  /* the tuning table, every cell; Max NThreads */
  for (int c = 0; c < NT_TUNE_NCOLLS; c++)
    for (int a = 0; a < NT_TUNE_NALGOS; a++) {
      if (!L->table_seen[c][a]) continue;
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        const char *what[2] = {"latency", "bandwidth"};
        float ours[2] = {m->latency[c][a][p], m->bandwidth[c][a][p]};
        float theirs[2] = {L->lat[c][a][p], L->bw[c][a][p]};
        const char *theirs_s[2] = {L->lat_s[c][a][p], L->bw_s[c][a][p]};
        for (int k = 0; k < 2; k++) {
          bool loose, same = value_agrees(ours[k], theirs_s[k], theirs[k], &loose);
          if (!same)
            fprintf(stderr, "    %s: %s %s %s %s: ours %.4f, NCCL %s\n", name, nt_tune_coll_name(c),
                    nt_tune_algo_name(a), nt_tune_proto_name(p), what[k], (double)ours[k],
                    theirs_s[k]);
          tally *into = theirs[k] == 0 ? &zeros : &cells;
          count(into, same);
          into->loose += same && loose;
        }
      }
    }
  for (int a = 0; a < NT_TUNE_NALGOS; a++)
    for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
      bool same = m->max_threads[a][p] == L->threads[a][p];
      if (!same)
        fprintf(stderr, "    %s: Max NThreads %s %s: ours %d, NCCL %d\n", name,
                nt_tune_algo_name(a), nt_tune_proto_name(p), m->max_threads[a][p],
                L->threads[a][p]);
      count(&threads, same);
    }
  if (L->nthreads_seen != NT_TUNE_NALGOS * NT_TUNE_NPROTOS)
    story_failures++; /* a table cut short */
  /* every pick: NCCL selects on the larger buffer (the AllGather output,
   * the ReduceScatter input), it logs count x type size */
  for (int i = 0; i < L->npicks; i++) {
    const pick *q = &L->picks[i];
    size_t nbytes = q->bytes;
    if (q->coll == NT_TUNE_ALLGATHER || q->coll == NT_TUNE_REDUCESCATTER) nbytes *= (size_t)nranks;
    nt_tune_pick ours;
    bool same = q->coll >= 0 && nt_tune_choose(m, q->coll, nbytes, &ours) == 0 &&
                ours.algo == q->algo && ours.proto == q->proto;
    int n = same ? nt_tune_channels(m, q->coll, ours.algo, ours.proto, nbytes) : -1;
    bool range = same && q->lo == 0 && q->hi == n - 1;
    if (!same || !range)
      fprintf(stderr, "    %s: %s %zu bytes: NCCL %s/%s {%d..%d}, ours %s/%s %d channels\n", name,
              nt_tune_coll_name(q->coll), q->bytes, nt_tune_algo_name(q->algo),
              nt_tune_proto_name(q->proto), q->lo, q->hi, same ? nt_tune_algo_name(ours.algo) : "?",
              same ? nt_tune_proto_name(ours.proto) : "?", n);
    count(&picks, same);
    count(&ranges, range);
    pick_lines.total += q->lines;
    pick_lines.ok += same && range ? q->lines : 0;
  }
  report(name, "rings (channels)", &rings);
  report(name, "trees (rank x channel)", &trees);
  report(name, "channel counts", &chans);
  report(name, "table values, non-zero", &cells);
  report(name, "table values, zero", &zeros);
  report(name, "Max NThreads", &threads);
  report(name, "threadThresholds", &thresh);
  report(name, "choices (distinct)", &picks);
  report(name, "channel ranges", &ranges);
  report(name, "choice lines", &pick_lines);
  nt_topo_graphs_free(g);
  nt_topo_free(t);
  free(m);
  free(L);
  CHECK(story_failures == 0);
}

/* 2 ranks: 1 channel found, 2 connected; Ring LL for the 4-byte barrier
 * (16.6 us beside the tree's 16.8). */
static void story2_two_nodes_agree_with_nccl(void) {
  run_story("story2", 2);
}

/* 4 ranks: the double binary tree over 4 nodes; Tree LL for 4 bytes
 * (26.8 us beside the ring's 36.6), Ring LL for 4 KiB. */
static void story4_four_nodes_agree_with_nccl(void) {
  run_story("story4", 4);
}

int main(void) {
  TEST_RUN(story2_two_nodes_agree_with_nccl);
  TEST_RUN(story4_four_nodes_agree_with_nccl);
  return TEST_DONE();
}

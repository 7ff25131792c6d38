/* Judges the viewer's JSON lines (`nccltop -b --json`) from a real NCCL run
 * of NRANKS single-rank processes: every rank 0..NRANKS-1 appears, each from
 * its own process; on every rank a proxy thread spent time in at least two
 * states, send and recv channels moved steps and bytes and waited on the
 * network, and collectives were counted. It judges the last frame that shows
 * the most ranks (counters only grow) and prints one PASS or FAIL line per
 * check; the exit status is 1 if any failed.
 *
 * usage: check_json NRANKS < frames.jsonl
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHECK_RANKS 64

typedef struct {
  int seen;
  double pid, colls;
  int proxy_two_states;     /* proxy threads with time in 2+ states */
  int send_rows, recv_rows; /* rows with steps, bytes and a network wait */
} rank_info;

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? cJSON_GetNumberValue(v) : 0;
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int verdict(int ok, const char *what, int rank) {
  if (rank < 0)
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  else
    printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", rank, what);
  return ok ? 0 : 1;
}

/* Fills info[] from one frame; returns how many of the wanted ranks it shows. */
static int scan(const cJSON *frame, int want, rank_info *info) {
  memset(info, 0, sizeof *info * (size_t)want);
  int found = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(frame, "ranks")) {
    double rank = num(r, "rank");
    if (num(r, "nranks") != want || rank < 0 || rank >= want || rank != (int)rank) continue;
    rank_info *x = &info[(int)rank];
    if (!x->seen) found++;
    x->seen = 1;
    x->pid = num(r, "pid");
    x->colls += num(r, "colls");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "proxy")) {
      int states = 0;
      const cJSON *s;
      cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(p, "state_ns")) {
        if (cJSON_IsNumber(s) && cJSON_GetNumberValue(s) > 0) states++;
      }
      x->proxy_two_states += states >= 2;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "channels")) {
      const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wait_ns");
      if (num(c, "steps") <= 0 || num(c, "bytes") <= 0) continue;
      if (!strcmp(str(c, "dir"), "send") && num(w, "send_net_wait") > 0) x->send_rows++;
      if (!strcmp(str(c, "dir"), "recv") && num(w, "recv_net_wait") > 0) x->recv_rows++;
    }
  }
  return found;
}

/* What the publishers said about themselves: the ABI NCCL loaded, etc. */
static void print_processes(const cJSON *frame) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(frame, "processes")) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "counters");
    printf("process %.0f: profiler ABI v%.0f, NCCL %s, events %.0f, dropped %.0f, unknown %.0f, "
           "mask 0x%x\n",
           num(p, "pid"), num(p, "abi"), *str(p, "nccl_version") ? str(p, "nccl_version") : "?",
           num(k, "events"), num(k, "dropped_events"), num(k, "unknown_events"),
           (unsigned)num(p, "event_mask"));
  }
}

/* The job-level tables: at least one done collective with an algorithm and
 * protocol NCCL really reported and a bus bandwidth; the app's phases. */
static int check_operations(const cJSON *frame) {
  int fails = 0, timed = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(frame, "collectives")) {
    const char *algo = str(c, "algo"), *proto = str(c, "proto");
    bool named = strcmp(algo, "none") && strcmp(algo, "other") &&
                 (!strcmp(proto, "LL") || !strcmp(proto, "LL128") || !strcmp(proto, "SIMPLE"));
    printf("collective %s %s %s/%s: count %.0f done %.0f busbw %.3f GB/s\n", str(c, "func"),
           str(c, "size"), algo, proto, num(c, "count"), num(c, "done"), num(c, "busbw_gbs"));
    if (!strcmp(str(c, "kind"), "coll") && named && num(c, "done") > 0 && num(c, "busbw_gbs") > 0)
      timed++;
  }
  fails += verdict(timed > 0, "collectives done with NCCL's algorithm, protocol and bandwidth", -1);
  int tagged = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(frame, "phases")) {
    tagged += str(p, "phase")[0] && num(p, "count") > 0; /* the app tags its loops */
  }
  fails += verdict(tagged > 0, "operations attributed to the app's nccltop_tag phases", -1);
  return fails;
}

int main(int argc, char **argv) {
  int want = argc == 2 ? atoi(argv[1]) : 0;
  if (want < 1 || want > MAX_CHECK_RANKS) {
    fprintf(stderr, "usage: check_json NRANKS (1..%d) < frames.jsonl\n", MAX_CHECK_RANKS);
    return 2;
  }
  cJSON *best = NULL;
  int best_found = -1, frames = 0;
  rank_info info[MAX_CHECK_RANKS];
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) > 0) {
    cJSON *f = cJSON_Parse(line);
    if (!f) continue;
    frames++;
    int found = scan(f, want, info);
    if (found >= best_found) {
      cJSON_Delete(best);
      best = f, best_found = found;
    } else {
      cJSON_Delete(f);
    }
  }
  free(line);
  if (verdict(best != NULL, "the viewer printed JSON frames", -1)) return 1;
  printf("judging the last of %d frames that shows %d of %d ranks\n", frames, best_found, want);
  print_processes(best);
  scan(best, want, info);
  int fails = verdict(best_found == want, "every rank appears", -1);
  int distinct = 1;
  for (int i = 0; i < want; i++)
    for (int j = 0; j < i; j++)
      if (info[i].seen && info[j].seen && info[i].pid == info[j].pid) distinct = 0;
  if (best_found == want) fails += verdict(distinct, "each rank has its own process", -1);
  for (int i = 0; i < want; i++) {
    const rank_info *x = &info[i];
    if (!x->seen) continue;
    printf("rank %d: pid %.0f, colls %.0f, proxy threads with 2+ states %d, send rows %d, "
           "recv rows %d\n",
           i, x->pid, x->colls, x->proxy_two_states, x->send_rows, x->recv_rows);
    fails +=
        verdict(x->proxy_two_states > 0, "a proxy thread spent time in at least two states", i);
    fails +=
        verdict(x->send_rows > 0, "send channels moved steps and bytes, with send_net_wait", i);
    fails +=
        verdict(x->recv_rows > 0, "recv channels moved steps and bytes, with recv_net_wait", i);
    fails += verdict(x->colls > 0, "collectives were counted", i);
  }
  fails += check_operations(best);
  cJSON_Delete(best);
  return fails ? 1 : 0;
}

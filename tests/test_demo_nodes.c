/* `nccltop demo --nodes`: a 16-rank job on 4 simulated nodes, each node's
 * publishers in a directory of its own forwarded by a relay of its own on
 * 127.0.0.(k+1); the monitor (batch JSON) sees every rank, on its node's
 * host, only through the relays (its own directory has no publisher), and
 * a stall of rank 13 gives one root alert, naming rank 13. Afterwards the
 * demo's directory and relays are gone. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static char nccltop[PATH_MAX + 16];

static char *run(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n - 1, p)) > 0;) {
    n += k;
    if (n + 1 == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) break;
      buf = b;
    }
  }
  if (buf) buf[n] = '\0';
  *status = pclose(p);
  return buf;
}

/* The last JSON frame the command prints, when it exits 0; NULL otherwise. */
static cJSON *last_frame(const char *cmd) {
  int st;
  char *out = run(cmd, &st);
  cJSON *f = NULL;
  if (out && st == 0) {
    char *last = out, *nl;
    while ((nl = strchr(last, '\n')) && nl[1]) last = nl + 1;
    f = cJSON_Parse(last);
  }
  free(out);
  return f;
}

static void four_nodes_through_relays(void) {
  char cmd[PATH_MAX + 256];
  snprintf(cmd, sizeof cmd,
           "TMPDIR=/tmp/nccltop-dn-test %s demo --nodes 4 --ranks 16 --comms 1 --stall-rank 13 "
           "--stall-after 5 -b -n 60 -d 250 --json 2>/dev/null",
           nccltop);
  CHECK(system("mkdir -p /tmp/nccltop-dn-test") == 0);
  cJSON *f = last_frame(cmd);
  CHECK(f);
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(f, "ranks");
  int n = cJSON_GetArraySize(ranks), on_node[4] = {0};
  bool hosts_right = true;
  for (int i = 0; i < n; i++) {
    const cJSON *r = cJSON_GetArrayItem(ranks, i);
    int rank = cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint;
    const char *host = cJSON_GetObjectItemCaseSensitive(r, "host")->valuestring;
    char want[16];
    snprintf(want, sizeof want, "node%d", rank / 4); /* 4 ranks per node */
    hosts_right = hosts_right && !strcmp(host, want) &&
                  cJSON_GetObjectItemCaseSensitive(r, "nnodes")->valueint == 4;
    if (rank >= 0 && rank < 16) on_node[rank / 4]++;
  }
  int roots = 0, root_rank = -1;
  const cJSON *a;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(f, "alerts")) {
    if (strcmp(cJSON_GetObjectItemCaseSensitive(a, "kind")->valuestring, "root")) continue;
    roots++;
    root_rank = cJSON_GetObjectItemCaseSensitive(a, "rank")->valueint;
  }
  int errors = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "errors"));
  cJSON_Delete(f);
  fprintf(stderr, "    %d ranks (per node %d %d %d %d), %d root alert(s) on rank %d, %d errors\n",
          n, on_node[0], on_node[1], on_node[2], on_node[3], roots, root_rank, errors);
  CHECK(n == 16 && hosts_right);
  CHECK(on_node[0] == 4 && on_node[1] == 4 && on_node[2] == 4 && on_node[3] == 4);
  CHECK(roots == 1 && root_rank == 13);
  /* Nothing left behind: no demo directory, no relay. */
  CHECK(system("rmdir /tmp/nccltop-dn-test") == 0);
  CHECK(system("pgrep -f 'relay --dir /tmp/nccltop-d[n]-test' >/dev/null") != 0);
}

/* A node whose relay dies: one alert says the relay went silent (its host,
 * its 4 processes), none per process, and no rank is called stalled. */
static void a_dead_relay_is_one_silent_node(void) {
  CHECK(system("mkdir -p /tmp/nccltop-dr-test") == 0);
  char cmd[PATH_MAX + 512];
  snprintf(cmd, sizeof cmd,
           "(sleep 6; pkill -f 'relay --dir /tmp/nccltop-d[r]-test/.*/node2 ') & "
           "TMPDIR=/tmp/nccltop-dr-test %s demo --nodes 4 --ranks 16 --comms 1 -b -n 56 -d 250 "
           "--json 2>/dev/null",
           nccltop);
  cJSON *f = last_frame(cmd);
  CHECK(f);
  int silent = 0, others = 0;
  bool named = false;
  const cJSON *a;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(f, "alerts")) {
    const char *kind = cJSON_GetObjectItemCaseSensitive(a, "kind")->valuestring;
    const char *text = cJSON_GetObjectItemCaseSensitive(a, "text")->valuestring;
    fprintf(stderr, "    %s: %s\n", kind, text);
    if (!strcmp(kind, "silent")) {
      silent++;
      named = strstr(text, "host node2, 4 processes") && strstr(text, "relay");
    } else if (strcmp(kind, "drops")) {
      others++;
    }
  }
  cJSON_Delete(f);
  CHECK(system("rmdir /tmp/nccltop-dr-test") == 0);
  CHECK(silent == 1 && named && others == 0);
}

static void too_many_nodes_is_a_usage_error(void) {
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "%s demo --nodes 300 --ranks 300 -b -n 1 2>/dev/null", nccltop);
  int st;
  char *out = run(cmd, &st);
  free(out);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = '\0';
  snprintf(nccltop, sizeof nccltop, "%s/../nccltop", dirname(exe)); /* build/<cfg>/tests/.. */
  TEST_RUN(four_nodes_through_relays);
  TEST_RUN(a_dead_relay_is_one_silent_node);
  TEST_RUN(too_many_nodes_is_a_usage_error);
  return TEST_DONE();
}

/* Checks the viewer's JSON lines from a real NCCL run: every rank seen, proxy
 * threads with time in at least two states, send and recv channels with
 * steps, bytes and network waits, collectives counted. Reads the frames on
 * stdin and judges the last one that lists the most ranks.
 *
 * usage: check_json NRANKS < frames.jsonl
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? cJSON_GetNumberValue(v) : 0;
}

static int verdict(const char *what, int ok) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int want = argc > 1 ? atoi(argv[1]) : 2;
  static char line[8 << 20];
  cJSON *best = NULL;
  int best_ranks = -1;
  while (fgets(line, sizeof line, stdin)) {
    cJSON *f = cJSON_Parse(line);
    if (!f) continue;
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "ranks"));
    if (n >= best_ranks) {
      cJSON_Delete(best);
      best = f, best_ranks = n;
    } else {
      cJSON_Delete(f);
    }
  }
  if (!best) return verdict("viewer printed JSON frames", 0);
  int fails = verdict("every rank appears", best_ranks >= want);
  int two_states = 0, send_ok = 0, recv_ok = 0;
  double colls = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(best, "ranks")) {
    colls += num(r, "colls");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "proxy")) {
      int states = 0;
      const cJSON *s;
      cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(p, "state_ns")) states +=
          cJSON_GetNumberValue(s) > 0;
      if (states >= 2) two_states++;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "channels")) {
      const cJSON *dir = cJSON_GetObjectItemCaseSensitive(c, "dir");
      const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wait_ns");
      int moving = num(c, "steps") > 0 && num(c, "bytes") > 0;
      if (cJSON_IsString(dir) && !strcmp(dir->valuestring, "send") && moving &&
          num(w, "send_net_wait") > 0)
        send_ok++;
      if (cJSON_IsString(dir) && !strcmp(dir->valuestring, "recv") && moving &&
          num(w, "recv_net_wait") > 0)
        recv_ok++;
    }
  }
  fails += verdict("a proxy thread spent time in at least two states", two_states > 0);
  fails += verdict("send channels moved steps and bytes, with send_net_wait", send_ok > 0);
  fails += verdict("recv channels moved steps and bytes, with recv_net_wait", recv_ok > 0);
  fails += verdict("collectives were counted", colls > 0);
  printf("ranks %d, proxy threads with 2+ states %d, send rows %d, recv rows %d, colls %.0f\n",
         best_ranks, two_states, send_ok, recv_ok, colls);
  cJSON_Delete(best);
  return fails ? 1 : 0;
}

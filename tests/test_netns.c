/* Two nodes in network namespaces made by this test (root and `ip netns`
 * only; skipped with the reason otherwise): a 4-rank job on 2 simulated
 * nodes, node k's relay in namespace k on 10.254.7.(k+1) (a veth pair
 * between them: addresses of the test's own namespaces, nothing else),
 * both speaking CURVE with a key made for the test; the viewer runs in
 * the second namespace and reaches node 0's relay across the link, and
 * sees every rank on its node. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static char nccltop[PATH_MAX + 16];
static char ns[2][32], dir[] = "/tmp/nccltop-netns-XXXXXX";

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Starts a command in the background (its own process group); its pid. */
static pid_t spawn(const char *cmd) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 200 && waitpid(pid, NULL, WNOHANG) == 0; i++) usleep(10000);
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static bool make_namespaces(char *why, size_t cap) {
  if (geteuid() != 0) return snprintf(why, cap, "not root"), false;
  if (sh("command -v ip >/dev/null 2>&1") != 0) return snprintf(why, cap, "no ip(8)"), false;
  int id = (int)getpid() % 100000;
  snprintf(ns[0], sizeof ns[0], "nt-a-%d", id);
  snprintf(ns[1], sizeof ns[1], "nt-b-%d", id);
  if (sh("ip netns add %s 2>/dev/null", ns[0]) != 0) {
    snprintf(why, cap, "ip netns add refused (no CAP_SYS_ADMIN, or no netns support)");
    ns[0][0] = ns[1][0] = '\0';
    return false;
  }
  bool ok = sh("ip netns add %s", ns[1]) == 0 &&
            sh("ip link add nta%d netns %s type veth peer name ntb%d netns %s", id, ns[0], id,
               ns[1]) == 0 &&
            sh("ip -n %s addr add 10.254.7.1/30 dev nta%d && ip -n %s link set nta%d up && "
               "ip -n %s link set lo up",
               ns[0], id, ns[0], id, ns[0]) == 0 &&
            sh("ip -n %s addr add 10.254.7.2/30 dev ntb%d && ip -n %s link set ntb%d up && "
               "ip -n %s link set lo up",
               ns[1], id, ns[1], id, ns[1]) == 0;
  if (!ok) snprintf(why, cap, "could not set up the veth link");
  return ok;
}

static void remove_namespaces(void) {
  for (int k = 0; k < 2; k++)
    if (ns[k][0]) sh("ip netns del %s 2>/dev/null", ns[k]); /* the veth pair goes with them */
}

static void two_nodes_in_two_namespaces(void) {
  char why[128] = "";
  if (!make_namespaces(why, sizeof why)) {
    remove_namespaces();
    printf("   skipped: %s\n", why);
    return;
  }
  char cfg[PATH_MAX + 16], cmd[PATH_MAX * 4];
  snprintf(cfg, sizeof cfg, "%s/config", dir);
  /* One user, one key (a shared home directory): the relays' server key
   * and the viewer's client key. */
  bool ok = sh("XDG_CONFIG_HOME=%s %s keygen >/dev/null 2>&1", cfg, nccltop) == 0;
  snprintf(cmd, sizeof cmd,
           "exec %s sim --nodes 2 --ranks 4 --comms 1 --dir %s --duration 30 --quiet", nccltop,
           dir);
  pid_t sim = ok ? spawn(cmd) : -1;
  pid_t relay[2] = {-1, -1};
  for (int k = 0; ok && k < 2; k++) {
    snprintf(cmd, sizeof cmd,
             "exec ip netns exec %s env XDG_CONFIG_HOME=%s %s relay --dir %s/node%d --listen "
             "tcp://10.254.7.%d:7460 -q 2>/dev/null",
             ns[k], cfg, nccltop, dir, k, k + 1);
    relay[k] = spawn(cmd);
  }
  char *out = NULL;
  if (ok) {
    snprintf(cmd, sizeof cmd,
             "ip netns exec %s env XDG_CONFIG_HOME=%s %s -b -n 24 -d 250 --json --dir %s/none "
             "--hosts '10.254.7.[1-2]' 2>/dev/null | tail -1",
             ns[1], cfg, nccltop, dir);
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 20, n = 0;
    out = p ? malloc(cap) : NULL;
    for (size_t k; out && (k = fread(out + n, 1, cap - 1 - n, p)) > 0;) n += k;
    if (out) out[n] = '\0';
    if (p) pclose(p);
  }
  for (int k = 0; k < 2; k++) stop(relay[k]);
  stop(sim);
  remove_namespaces();
  cJSON *f = out ? cJSON_Parse(out) : NULL;
  free(out);
  int ranks = 0, on[2] = {0};
  const cJSON *r, *all = f ? cJSON_GetObjectItemCaseSensitive(f, "ranks") : NULL;
  cJSON_ArrayForEach(r, all) {
    const char *host = cJSON_GetObjectItemCaseSensitive(r, "host")->valuestring;
    int rank = cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint;
    ranks++;
    if (!strcmp(host, rank < 2 ? "node0" : "node1")) on[rank < 2 ? 0 : 1]++;
  }
  cJSON_Delete(f);
  fprintf(stderr,
          "    %d ranks seen from namespace %s: %d on node0 (across the link), %d on node1\n",
          ranks, ns[1], on[0], on[1]);
  CHECK(ok && ranks == 4 && on[0] == 2 && on[1] == 2);
}

int main(void) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = '\0';
  snprintf(nccltop, sizeof nccltop, "%s/../nccltop", dirname(exe));
  if (!mkdtemp(dir)) return 1;
  TEST_RUN(two_nodes_in_two_namespaces);
  sh("rm -rf %s", dir);
  return TEST_DONE();
}

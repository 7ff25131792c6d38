/* Publishers for scripts/measure-relays.sh: RANKS processes spread over
 * NODES node directories (DIR/node<k>), each a real local publisher (its
 * socket named by its pid, its snapshots of that pid) sending the bench
 * job's rank (bench/bench_job.h: 32 channels each way, 40 variables) once a
 * second, as host node<k>, for SECONDS; relays forward them. Not a test:
 * `make build/tests/load_relays` builds it.
 *
 * usage: load_relays RANKS NODES SECONDS DIR */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zmq.h>

#include "../bench/bench_job.h"

static bool send_msg(void *s, const char *topic, const void *body, size_t len) {
  return zmq_send(s, topic, strlen(topic), ZMQ_SNDMORE) >= 0 &&
         zmq_send(s, body, len, ZMQ_DONTWAIT) >= 0;
}

static int publish(int r, int nranks, int node, int secs, const char *dir) {
  char name[64], ep[PATH_MAX + 96], host[32];
  uint32_t pid = (uint32_t)getpid();
  if (nt_endpoint_name(pid, nt_endpoint_pidns(), name, sizeof name) != 0) return 1;
  snprintf(ep, sizeof ep, "ipc://%s/node%d/%s", dir, node, name);
  snprintf(host, sizeof host, "node%d", node);
  void *z = zmq_ctx_new(), *s = z ? zmq_socket(z, ZMQ_XPUB) : NULL;
  nt_snapshot *snap = nt_snapshot_new();
  nt_hello *h = malloc(sizeof *h);
  char *json = malloc(1 << 18);
  size_t cap = 1 << 20;
  uint8_t *buf = malloc(cap);
  if (!s || !snap || !h || !json || !buf || zmq_bind(s, ep) != 0) return 1;
  for (int t = 0; t < secs && getppid() != 1; t++) {
    fill_hello(h, r);
    snprintf(h->host, sizeof h->host, "%s", host);
    h->pid = pid;
    size_t hl = nt_hello_encode(h, json, 1 << 18);
    fill(snap, r);
    snprintf(snap->host, sizeof snap->host, "%s", host);
    snap->pid = pid;
    snap->interval_ms = 1000;
    snap->seq = (uint64_t)t + 1;
    snap->mono_ns += (uint64_t)t * 1000000000ull;
    snap->comms[0].nranks = nranks;
    size_t n = nt_snapshot_encode(snap, buf, cap);
    if (hl && n) {
      if (t % 5 == 0) send_msg(s, NT_TOPIC_HELLO, json, hl);
      send_msg(s, NT_TOPIC_SNAPSHOT, buf, n);
    }
    sleep(1);
  }
  zmq_close(s);
  zmq_ctx_term(z);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: load_relays RANKS NODES SECONDS DIR\n");
    return 2;
  }
  int ranks = atoi(argv[1]), nodes = atoi(argv[2]), secs = atoi(argv[3]);
  const char *dir = argv[4];
  if (ranks < 1 || ranks > RANKS || nodes < 1 || ranks % nodes || secs < 1) {
    fprintf(stderr, "load_relays: RANKS 1..%d, NODES dividing it, SECONDS > 0\n", RANKS);
    return 2;
  }
  for (int k = 0; k < nodes; k++) {
    char d[PATH_MAX + 16];
    snprintf(d, sizeof d, "%s/node%d", dir, k);
    if (mkdir(d, 0700) != 0 && errno != EEXIST) return 1;
  }
  for (int r = 0; r < ranks; r++) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) _exit(publish(r, ranks, r / (ranks / nodes), secs, dir));
  }
  while (wait(NULL) > 0) {
  }
  return 0;
}

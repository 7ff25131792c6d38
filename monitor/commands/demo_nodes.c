/* `nccltop demo --nodes N`: the simulated job's N nodes, each with its own
 * endpoint directory (DIR/node<k>, the simulator's), each forwarded by a
 * relay of its own on its own loopback address (127.0.0.(k+1), one port
 * for all), the monitor subscribed to all of them through --hosts: what a
 * multi-node job looks like, on one machine. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"

/* A port free on 127.0.0.1 now: the kernel's choice for port 0. The relays
 * bind it on 127.0.0.1 .. 127.0.0.N (distinct addresses: no clash). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

int nt_demo_relays_start(const char *dir, int nodes, pid_t *pids, char *hosts, size_t cap) {
  if (nodes < 1 || nodes > NT_DEMO_MAX_NODES) return -1;
  int port = free_port();
  if (port <= 0) {
    fprintf(stderr, "nccltop demo: no free port on 127.0.0.1: %s\n", strerror(errno));
    return -1;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  for (int k = 0; k < nodes; k++) pids[k] = -1;
  for (int k = 0; k < nodes; k++) {
    char node_dir[512], listen[64];
    snprintf(node_dir, sizeof node_dir, "%s/node%d", dir, k);
    snprintf(listen, sizeof listen, "tcp://127.0.0.%d:%d", k + 1, port);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      nt_demo_relays_stop(pids, nodes);
      return -1;
    }
    if (pid == 0) {
      /* Its messages would land on the monitor's screen; the monitor says
       * itself when a relay does not answer. */
      int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
      }
      execl(self, self, "relay", "--dir", node_dir, "--listen", listen, "-q", (char *)NULL);
      _exit(127);
    }
    pids[k] = pid;
  }
  /* --hosts in Slurm's syntax: 127.0.0.[1-N]:PORT */
  if (nodes == 1)
    snprintf(hosts, cap, "127.0.0.1:%d", port);
  else
    snprintf(hosts, cap, "127.0.0.[1-%d]:%d", nodes, port);
  return 0;
}

void nt_demo_relays_stop(pid_t *pids, int nodes) {
  for (int k = 0; k < nodes; k++)
    if (pids[k] > 0) kill(pids[k], SIGTERM);
  for (int k = 0; k < nodes; k++) {
    if (pids[k] <= 0) continue;
    /* 2 s to close cleanly, then killed. */
    for (int i = 0; i < 200 && waitpid(pids[k], NULL, WNOHANG) == 0; i++) {
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
    if (waitpid(pids[k], NULL, WNOHANG) == 0) {
      kill(pids[k], SIGKILL);
      waitpid(pids[k], NULL, 0);
    }
    pids[k] = -1;
  }
}

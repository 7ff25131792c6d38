/* See test_publisher.h. */
#include "test_publisher.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

static bool no_limits(void *s) {
  int zero = 0;
  return zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero) == 0 &&
         zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof zero) == 0;
}

void *tp_bind(void *zctx, const char *addr) {
  void *s = zmq_socket(zctx, ZMQ_XPUB);
  if (!s) return NULL;
  if (!no_limits(s) || zmq_bind(s, addr) != 0) {
    zmq_close(s);
    return NULL;
  }
  return s;
}

void *tp_bind_pid(void *zctx, const char *dir, pid_t pid) {
  char ep[256];
  return nt_endpoint_for_pid(dir, (uint32_t)pid, ep, sizeof ep) == 0 ? tp_bind(zctx, ep) : NULL;
}

void *tp_bind_tcp(void *zctx, int *port) {
  void *s = tp_bind(zctx, "tcp://127.0.0.1:*");
  char ep[64];
  size_t n = sizeof ep;
  if (s && zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &n) != 0) {
    zmq_close(s);
    s = NULL;
  }
  const char *colon = s ? strrchr(ep, ':') : NULL;
  *port = colon ? atoi(colon + 1) : 0;
  return s;
}

int tp_send2(void *s, const char *topic, const void *data, size_t len) {
  if (zmq_send(s, topic, strlen(topic), ZMQ_SNDMORE) < 0) return -1;
  return zmq_send(s, data, len, 0) < 0 ? -1 : 0;
}

int tp_send_snapshot(void *s, const nt_snapshot *snap) {
  static uint8_t wire[NT_MAX_MESSAGE_BYTES];
  size_t n = snap ? nt_snapshot_encode(snap, wire, sizeof wire) : 0;
  return n ? tp_send2(s, NT_TOPIC_SNAPSHOT, wire, n) : -1;
}

int tp_send_hello(void *s, uint32_t pid, const char *host, const char *version) {
  static nt_hello h;
  memset(&h, 0, sizeof h);
  h.major = NT_PROTO_MAJOR;
  h.pid = pid;
  snprintf(h.host, sizeof h.host, "%s", host);
  snprintf(h.nccl_version, sizeof h.nccl_version, "%s", version);
  char buf[4096];
  size_t n = nt_hello_encode(&h, buf, sizeof buf);
  return n ? tp_send2(s, NT_TOPIC_HELLO, buf, n) : -1;
}

int tp_send_comm(void *s, uint32_t pid, uint64_t hash, const char *name) {
  nt_comm_info c = {.pid = pid, .comm_hash = hash, .nranks = 2};
  snprintf(c.name, sizeof c.name, "%s", name);
  char buf[512];
  size_t n = nt_comm_encode(&c, buf, sizeof buf);
  return n ? tp_send2(s, NT_TOPIC_COMM, buf, n) : -1;
}

bool tp_subscribed(void *pub, nt_source *src, nt_model *m) {
  uint8_t msg[64];
  for (int i = 0; i < 250; i++) {
    nt_source_poll(src, m, 20);
    if (zmq_recv(pub, msg, sizeof msg, ZMQ_DONTWAIT) > 0 && msg[0] == 1) return true;
  }
  return false;
}

pid_t tp_idle_child(void) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(120); /* never outlive a test that failed before reaping it */
    pause();
    _exit(0);
  }
  return pid;
}

void tp_reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* One XPUB socket towards one reader: a viewer in the endpoint directory
 * (local.c) or NCCLTOP_CONNECT (publisher.c). One socket each, so whatever a
 * reader does (floods us, stops reading) costs that reader its connection
 * and nobody else theirs: libzmq 4.3 has no way to drop one pipe of a
 * socket, only the whole socket. Publisher thread only. */
#include <errno.h>
#include <string.h>
#include <zmq.h>

#include "internal.h"

#define SNDHWM 64
/* What may come in. nccltop's viewer (a SUB) sends one ZMTP READY command of
 * 25 bytes and one subscription to "" (a 10-byte SUBSCRIBE command over ZMTP
 * 3.1, a 1-byte message before); a relay's XSUB sends a 26-byte READY. With
 * libzmq 4.3.4 the size check applies to every frame, commands and handshake
 * included: 25 is the smallest value that lets a viewer in, 26 a relay. Any
 * larger frame makes ZeroMQ drop that connection before it allocates it. */
#define MAXMSGSIZE 26
#define RCVHWM     16
/* libzmq 4.3.4 keeps every subscription a peer sends in a trie until the
 * peer goes, and queues a notification for each one until we read it. We
 * can neither refuse nor forget one, so a reader that sends more than the
 * protocol's subscription to "" (a few, from a relay's subscribers, are
 * tolerated) loses its socket, which frees all of it. */
#define FOREIGN_MAX 64   /* other messages tolerated over a socket's life */
#define DRAIN_MAX   1024 /* messages read per pass; more means a flood */
/* After a dropped connection ZeroMQ connects again after 1 s, backing off
 * up to 30 s while the reader is away. */
#define RECONNECT_IVL_MS     1000
#define RECONNECT_IVL_MAX_MS 30000

static void set_int(void *sock, int opt, int v) {
  if (zmq_setsockopt(sock, opt, &v, sizeof v) != 0)
    nt_log(NT_NCCL_LOG_WARN, "zmq_setsockopt(%d): %s", opt, zmq_strerror(errno));
}

bool nt_outlet_open(struct nt_outlet *o, void *zctx, uint64_t now_ns) {
  memset(o, 0, sizeof *o);
  o->sock = zmq_socket(zctx, ZMQ_XPUB);
  if (!o->sock) return false;
  o->opened_ns = now_ns;
  int64_t max = MAXMSGSIZE;
  set_int(o->sock, ZMQ_LINGER, 0);
  set_int(o->sock, ZMQ_SNDHWM, SNDHWM);
  set_int(o->sock, ZMQ_RCVHWM, RCVHWM);
  if (zmq_setsockopt(o->sock, ZMQ_MAXMSGSIZE, &max, sizeof max) != 0)
    nt_log(NT_NCCL_LOG_WARN, "zmq_setsockopt(MAXMSGSIZE): %s", zmq_strerror(errno));
  set_int(o->sock, ZMQ_RECONNECT_IVL, RECONNECT_IVL_MS);
  set_int(o->sock, ZMQ_RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS);
  set_int(o->sock, ZMQ_XPUB_VERBOSE, 1); /* every new subscription reaches us */
  return true;
}

void nt_outlet_close(struct nt_outlet *o, int linger_ms) {
  if (!o->sock) return;
  set_int(o->sock, ZMQ_LINGER, linger_ms);
  zmq_close(o->sock);
  o->sock = NULL;
  o->subscribed = o->fresh = false;
}

/* Inbound messages: with XPUB_VERBOSE a viewer's subscription to "" arrives
 * as the byte 1, and the byte 0 when the last one has left. Anything else
 * is foreign. Reads at most DRAIN_MAX messages: a queue longer than that is
 * a flood, and so is more than FOREIGN_MAX foreign messages. */
bool nt_outlet_drain(struct nt_outlet *o) {
  uint8_t msg[MAXMSGSIZE + 1];
  int i = 0;
  for (; i < DRAIN_MAX; i++) {
    int n = zmq_recv(o->sock, msg, sizeof msg, ZMQ_DONTWAIT);
    if (n < 0) break;
    if (n == 1 && msg[0] == 1) {
      o->subscribed = true;
      o->fresh = true;
    } else if (n == 1 && msg[0] == 0) {
      o->subscribed = false;
    } else if (++o->foreign > FOREIGN_MAX) {
      break;
    }
  }
  return i < DRAIN_MAX && o->foreign <= FOREIGN_MAX;
}

bool nt_outlet_send(struct nt_outlet *o, const char *topic, const void *data, size_t len) {
  if (zmq_send(o->sock, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_send(o->sock, data, len, ZMQ_DONTWAIT) < 0) {
    atomic_fetch_add(&nt_g.unsent_messages, 1);
    return false;
  }
  return true;
}

/* The live source's messages: each one read whole (two frames), handed to
 * the tap (a recorder) and decoded into the model; what fails becomes a
 * model error with its reason. */
#include <stdio.h>
#include <string.h>

#include "source_internal.h"

/* Hands one two-frame message to the tap (a recorder), then to the model
 * (ingest.c). The endpoint's pid (0 for a --connect one) tells the model
 * whom it may speak for; a publisher from another PID namespace that
 * connected to the inbox speaks for the first pid it names, and that one
 * only. */
static void dispatch(nt_source *s, endpoint *e, nt_model *m, zmq_msg_t *topic, zmq_msg_t *body) {
  double now = nt_now_s();
  if (s->tap)
    s->tap(s->tap_arg, e->endpoint, e->pid, zmq_msg_data(topic), zmq_msg_size(topic),
           zmq_msg_data(body), zmq_msg_size(body), now);
  nt_ingested r =
      nt_ingest_message(s->ingest, m, e->endpoint, &e->pid, e->peer, zmq_msg_data(topic),
                        zmq_msg_size(topic), zmq_msg_data(body), zmq_msg_size(body), now);
  if (r.topic == NT_IN_TOPOLOGY) s->topology_messages++;
}

/* Reads the rest of a message whose topic is in; applies it as e's (or
 * notes why not). A message is always read to its last frame, so the next
 * one starts clean. */
static void receive_rest(nt_source *s, void *sock, endpoint *e, nt_model *m, zmq_msg_t *topic) {
  zmq_msg_t body, extra;
  zmq_msg_init(&body);
  unsigned frames = 1;
  for (bool more = zmq_msg_more(topic); more; frames++) {
    /* ZeroMQ delivers the frames of a message together: they are here. */
    zmq_msg_t *into = frames == 1 ? &body : &extra;
    if (into == &extra) zmq_msg_init(&extra);
    if (zmq_msg_recv(into, sock, ZMQ_DONTWAIT) < 0) {
      if (into == &extra) zmq_msg_close(&extra);
      break;
    }
    more = zmq_msg_more(into);
    if (into == &extra) zmq_msg_close(&extra);
  }
  if (!e)
    ; /* a sender we cannot tell, or no room for it: noted where it was found */
  else if (frames != 2)
    nt_source_note(m, e->endpoint, true, "message with %u frame%s, expected 2", frames,
                   frames == 1 ? "" : "s");
  else if (zmq_msg_size(&body) > NT_MAX_MESSAGE_BYTES)
    nt_source_note(m, e->endpoint, true, "message of %zu bytes exceeds the limit of %u",
                   zmq_msg_size(&body), NT_MAX_MESSAGE_BYTES);
  else
    dispatch(s, e, m, topic, &body);
  zmq_msg_close(&body);
}

/* Receives one whole message; false when the socket has none. */
bool nt_source_receive(nt_source *s, endpoint *e, nt_model *m) {
  zmq_msg_t topic;
  zmq_msg_init(&topic);
  if (zmq_msg_recv(&topic, e->sock, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&topic);
    return false;
  }
  e->heard = true;
  receive_rest(s, e->sock, e, m, &topic);
  zmq_msg_close(&topic);
  return true;
}

bool nt_source_receive_inbox(nt_source *s, nt_model *m) {
  zmq_msg_t topic;
  zmq_msg_init(&topic);
  if (zmq_msg_recv(&topic, s->inbox, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&topic);
    return false;
  }
  uint32_t pid = 0;
  endpoint *e = NULL;
  if (!nt_inbox_sender(&topic, &pid)) {
    if (!s->sender_noted)
      nt_source_note(m, "endpoints", false,
                     "a message without the sender's credentials (or another user's) on %s/%s: "
                     "dropped",
                     s->dir, s->in.name);
    s->sender_noted = true;
  } else if ((e = nt_source_peer(s, m, pid))) {
    e->heard = true;
  }
  receive_rest(s, s->inbox, e, m, &topic);
  zmq_msg_close(&topic);
  return true;
}

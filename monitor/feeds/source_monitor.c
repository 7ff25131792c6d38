/* The live source's socket monitors: a tcp:// endpoint whose CURVE
 * handshake fails (our key not authorized, the wrong server key, CURVE on
 * one side only) becomes one model error, not a silent empty screen. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "source_internal.h"

static void note_refusal(nt_source *s, endpoint *e, nt_model *m, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note_refusal(nt_source *s, endpoint *e, nt_model *m, const char *fmt, ...) {
  (void)s;
  if (e->refusal_noted) return;
  e->refusal_noted = true;
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  nt_model_note_problem(m, e->endpoint, text, nt_now_s());
}

/* Reads the socket monitors of the --connect endpoints. */
void nt_source_poll_monitors(nt_source *s, nt_model *m) {
  for (uint32_t i = 0; i < s->neps; i++) {
    endpoint *e = &s->eps[i];
    for (int k = 0; e->mon && k < 64; k++) {
      uint8_t ev[6];
      int n = zmq_recv(e->mon, ev, sizeof ev, ZMQ_DONTWAIT);
      if (n < 0) break;
      int more = 0;
      size_t ml = sizeof more;
      char junk[8];
      while (zmq_getsockopt(e->mon, ZMQ_RCVMORE, &more, &ml) == 0 && more)
        if (zmq_recv(e->mon, junk, sizeof junk, 0) < 0) break;
      if (n < 6) continue;
      uint16_t event;
      uint32_t value;
      memcpy(&event, ev, 2);
      memcpy(&value, ev + 2, 4);
      switch (event) {
      case ZMQ_EVENT_CONNECTED: e->handshaking = true; break;
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        e->handshaking = false;
        e->refusal_noted = false;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        e->handshaking = false;
        note_refusal(s, e, m,
                     "refused by the relay (status %u): our public key %s is not in its "
                     "authorized_keys",
                     value, s->keys.pub);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        e->handshaking = false;
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
          note_refusal(s, e, m, "handshake refused: %s",
                       e->secure
                           ? "the relay does not speak CURVE (it runs --insecure or without a key)"
                           : "the relay requires CURVE ('nccltop keygen', no --insecure)");
        else
          note_refusal(s, e, m, "handshake refused: protocol error 0x%x", value);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      case ZMQ_EVENT_DISCONNECTED:
        /* A CURVE server that cannot open our HELLO (it is not the key we
         * were told) closes the connection without a word: we see a broken
         * pipe, or the connection closed, during the handshake. */
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && value != EPIPE && value != ECONNRESET)
          note_refusal(s, e, m, "handshake failed: %s", zmq_strerror((int)value));
        else if (e->handshaking)
          note_refusal(s, e, m, "%s",
                       e->secure ? "the relay closed the connection during the CURVE handshake: "
                                   "its public key is not the --server-key, or it does not speak "
                                   "CURVE"
                                 : "the relay closed the connection during the handshake: it "
                                   "requires CURVE ('nccltop keygen', no --insecure)");
        e->handshaking = false;
        break;
      default: break;
      }
    }
  }
}

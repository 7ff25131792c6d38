/* The relay's door keeper: one thread that answers ZeroMQ's authentication
 * requests (ZAP) for the relay's listening socket, logs the handshakes that
 * failed on it (its socket monitor), and watches every connection it
 * accepted (relay_conns.h):
 *   - with CURVE, a viewer is let in when its key is ours or one of the
 *     authorized keys (held in memory: the file is read by the relay's main
 *     thread, never here);
 *   - without a key (loopback only), a connection is let in only when the
 *     process at its other end is our own user's: another user's is ended
 *     before the handshake completes, so it never gets a message (the
 *     endpoint directory, 0700, keeps other users out of the node's
 *     publishers; a keyless relay must not let them in through TCP);
 *   - a viewer sends one subscription and nothing more: a connection that
 *     sends more than GUARD_BYTES_BASE + GUARD_BYTES_PER_S x its age is
 *     ended, alone (libzmq keeps every subscription of a connection until it
 *     goes; this is what bounds that memory per connection).
 * Each refusal or cut is one line on stderr, rate-limited. */
#ifndef NCCLTOP_RELAY_GUARD_H
#define NCCLTOP_RELAY_GUARD_H

#include <stdbool.h>

#include "../feeds/curve.h"

#define GUARD_BYTES_BASE  (64u << 10)
#define GUARD_BYTES_PER_S 1024u
#define GUARD_SWEEP_MS    250

typedef struct {
  void *zctx;
  void *zap;              /* nt_zap_bind's socket (taken over), NULL without ZAP (--insecure) */
  const char *monitor_ep; /* the listening socket's monitor (bound by the caller) */
  unsigned port;          /* the listening socket's TCP port */
  bool same_user;         /* no key: only our own user's connections */
  const char *own_pub;    /* CURVE: our public key, always accepted; NULL without CURVE */
  const char *auth_file;  /* for the log lines */
} nt_guard_config;

typedef struct nt_guard nt_guard;
/* Starts the thread; cfg->zap and keys (CURVE only, else NULL) are taken
 * over when it starts. NULL with the reason in err. */
nt_guard *nt_guard_start(const nt_guard_config *cfg, nt_authkeys *keys, char *err, size_t errlen);
/* Replaces the authorized keys (taken over; the old ones freed). */
void nt_guard_set_keys(nt_guard *g, nt_authkeys *keys);
/* A key the guard does not know, while the file has changed since (a
 * stat), makes it ask for the file to be read again before it refuses (an
 * edit needs no restart; libzmq does not retry a refused handshake):
 * nonzero when the relay's thread should, which then calls
 * nt_guard_keys_checked with that number (keys set before if they
 * changed). The guard waits at most a second. */
unsigned nt_guard_keys_wanted(nt_guard *g);
void nt_guard_keys_checked(nt_guard *g, unsigned wanted);
/* Says that a viewer sent something other than nccltop's subscription:
 * the guard looks at the connections within POKED_SWEEP_MS (20 ms), not
 * GUARD_SWEEP_MS, so that a flood is cut short. */
void nt_guard_poke(nt_guard *g);
/* Asks for the connection that has sent the most to be ended (the relay's
 * bound on what all viewers together made libzmq keep). */
void nt_guard_cut_top(nt_guard *g);
/* How many connections the last sweep found. */
int nt_guard_connections(const nt_guard *g);
void nt_guard_stop(nt_guard *g);

#endif

/* The relay's state, shared by its files: relay.c (options, start, the
 * forwarding loop), relay_local.c (this node's publishers) and relay_subs.c
 * (what viewers send: subscriptions, relay loops). One thread owns every
 * socket here; relay_guard.c runs beside it and touches none of them. */
#ifndef NCCLTOP_RELAY_INTERNAL_H
#define NCCLTOP_RELAY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../feeds/discover.h"
#include "relay_guard.h"

#define MAX_PUBLISHERS 4096 /* older publishers connected; senders logged */
#define MAX_UPSTREAM   8
#define MAX_MARKERS    256 /* downstream relays' marks passed upstream */
/* A relay's mark: 0xff 'R', its random id (8 bytes), the index of the
 * --connect it came through; subscribed to upstream only (relay_subs.c). */
#define MARKER_LEN 11

typedef struct {
  char name[48];  /* the socket file's name */
  char addr[160]; /* what the XSUB connected to */
  uint32_t pid;
  uint64_t pidns;
  bool seen;
  double keep_until_s; /* kept this long while absent (the directory was re-opened) */
} legacy_pub;

typedef struct {
  const char *ep;
  void *sock;         /* NULL once refused */
  unsigned long subs; /* subscriptions to "" sent (the XSUB counts them) */
  bool looped;        /* our mark came back through it: its messages are dropped */
  double refuse_at;   /* when it is refused if still looped */
} upstream;

typedef struct {
  void *zctx;
  void *xpub;   /* towards viewers and downstream relays, on --listen */
  void *local;  /* XSUB bound in the directory: publishers 0.2 on connect to it */
  void *legacy; /* XSUB connected to older publishers' files; NULL until one is found */
  unsigned long local_subs, legacy_subs;
  bool legacy_drained; /* read to the end this turn: safe to disconnect (relay_local.c) */
  upstream ups[MAX_UPSTREAM];
  int nups;
  uint8_t id[8];

  /* This node's publishers (relay_local.c). */
  char dir[256];
  int dirfd;
  nt_inbox in;
  bool inbox_noted, dir_error_noted, full_noted, senders_full_noted, other_ns_noted;
  uint64_t pidns;
  legacy_pub *pubs;
  uint32_t npubs;
  uint32_t *senders; /* pids whose messages came in on the inbox */
  uint32_t nsenders;

  /* Viewers (relay_subs.c). */
  bool down;           /* subscribed upstream for our viewers */
  bool resub_wanted;   /* a viewer came since: ask the publishers for full state */
  double resub_last_s; /* when we last did */
  double idle_since_s; /* no connection since, 0 while there is one */
  bool xpub_more;      /* inside a multipart message a viewer sent */
  bool foreign_seen;   /* this turn: something else than nccltop's subscription */
  uint8_t markers[MAX_MARKERS][MARKER_LEN];
  int nmarkers;
  bool markers_full_noted;
  uint64_t foreign_subs, foreign_bytes; /* what libzmq keeps of viewers' other subscriptions */
  double cut_asked_s;
  nt_guard *guard;

  bool quiet;
} relay;

double nt_relay_now(void);

/* relay_local.c */
void nt_relay_scan(relay *r, bool may_disconnect);
void nt_relay_note_sender(relay *r, uint32_t pid);
int nt_relay_set_xsub(void *s); /* the options of every XSUB towards publishers */

/* relay_subs.c */
void nt_relay_subscribe_new(relay *r, void *xsub, unsigned long *subs);
void nt_relay_drain_viewers(relay *r);
void nt_relay_tick_subs(relay *r);
void nt_relay_upstream_marks(relay *r, int k);

#endif

/* The live source's insides, shared by source.c (endpoints, discovery,
 * the poll loop), source_recv.c (receiving and applying messages) and
 * source_monitor.c (handshake refusals of tcp:// endpoints). */
#ifndef NCCLTOP_SOURCE_INTERNAL_H
#define NCCLTOP_SOURCE_INTERNAL_H

/* How often the endpoint directory is listed, the socket monitors read and
 * the quiet remote endpoints looked at. */
#define NT_SOURCE_SCAN_PERIOD_S 1.0
/* Socket monitors (two descriptors each) tell a refused handshake apart;
 * past this many remote endpoints they are left out (a silent one is then
 * said together with the others: "no relay, not reachable, or refused"). */
#define NT_SOURCE_MAX_MONITORS 64

#include <stdbool.h>
#include <stdint.h>
#include <zmq.h>

#include "clock.h"
#include "hostlist.h"
#include "curve.h"
#include "discover.h"
#include "ingest.h"
#include "../core/model.h"
#include "source.h"

typedef struct {
  void *sock;     /* NULL for a publisher that connected to our inbox */
  uint32_t pid;   /* the pid it speaks for: from the socket file's name, or the
                     sender's; 0 for --connect endpoints */
  uint64_t pidns; /* from the name too; 0 when it has none */
  bool seen;      /* still in the directory at the last scan */
  bool listed;    /* in the listing under way */
  bool heard, silence_noted;
  double since_s;      /* connected at */
  double keep_until_s; /* kept this long while absent (the directory was re-opened) */
  char name[48];       /* the socket file's name; "" for --connect endpoints */
  char addr[272];      /* what the SUB socket connects to ("tcp://" 253-byte host ":" port) */
  char endpoint[160];  /* what people read: ipc://<dir>/<name>, or the --connect address
                          (a longer one cut, with a hash of it to keep it unique) */
  void *mon;           /* the socket monitor's PAIR (tcp:// --connect endpoints) */
  bool secure;         /* CURVE */
  bool handshaking;    /* connected, handshake not done yet */
  bool refusal_noted;  /* a failed handshake was noted; again only after a success */
  /* A publisher that connected to our inbox: the sender's pid as the kernel
   * saw it (in our namespace); pid is that too when the sender lives in our
   * PID namespace, else the first pid its messages name (a container's). */
  bool peer;
  uint32_t peer_pid;
} endpoint;

struct nt_source {
  void *zctx;
  char dir[256];
  int dirfd;            /* the endpoint directory, checked; -1 while none is usable */
  void *inbox;          /* SUB bound in the directory: the publishers connect to it */
  nt_inbox in;          /* its file there */
  bool inbox_noted;     /* a failed bind was noted; again only after one works */
  bool sender_noted;    /* a message with no usable sender was noted */
  int *item_ep;         /* what each poll item is: an endpoint index, -1 the inbox */
  uint64_t pidns;       /* our PID namespace (nt_endpoint_pidns) */
  char (*connect)[272]; /* --connect endpoints, then tcp://HOST:PORT of --hosts */
  int nconnect;
  uint32_t nhosts; /* of which from --hosts / --hostfile */
  char hosts[200]; /* them, compactly (nt_hostlist_ranged) */
  uint32_t cap;    /* endpoints the table holds: MAX_ENDPOINTS + nconnect */
  bool connected;  /* the --connect endpoints were tried */
  endpoint *eps;
  zmq_pollitem_t *items;
  uint32_t neps;
  double next_scan_s;
  bool dir_error_noted, full_noted;
  uint64_t topology_messages;
  nt_ingest *ingest; /* decodes every message into the model */
  bool insecure;
  int keys_rc; /* nt_curve_load: 0 keys, 1 none, -1 unusable (keys_err) */
  nt_curve_keys keys;
  char keys_err[320];
  char server_key[NT_CURVE_KEY_LEN + 1];
  unsigned monitors;         /* names the monitors' inproc endpoints; also how many there are */
  uint32_t reconnect_max_ms; /* a refusing remote endpoint is tried at least this often */
  bool budget_noted;         /* remote endpoints left out for want of descriptors: said */
  bool nokey_noted;          /* a non-loopback tcp:// endpoint was refused for want of a key */
  nt_source_tap tap;         /* sees every message received (a recorder), or NULL */
  void *tap_arg;
};

/* A model error (bad: a message that failed to decode) or problem, with
 * its text formatted. */
void nt_source_note(nt_model *m, const char *source, bool bad, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Receives one whole message of e and applies it; false when the socket
 * has none (source_recv.c). */
bool nt_source_receive(nt_source *s, endpoint *e, nt_model *m);
/* Receives one whole message from the inbox and applies it as its sender's
 * endpoint's (found or added); false when the inbox has none. */
bool nt_source_receive_inbox(nt_source *s, nt_model *m);
/* The endpoint of a publisher that connected to the inbox, by the sender's
 * pid; added when new (NULL when the table is full). */
endpoint *nt_source_peer(nt_source *s, nt_model *m, uint32_t peer_pid);
/* Reads the socket monitors of the tcp:// endpoints: a refused handshake
 * becomes one model error (source_monitor.c). */
void nt_source_poll_monitors(nt_source *s, nt_model *m);

/* source.c: a new endpoint (an address, the name shown, the pid it may
 * speak for, 0: any it introduces). */
endpoint *nt_source_add_endpoint(nt_source *s, nt_model *m, const char *addr, const char *shown,
                                 uint32_t pid);
/* source_remote.c: the --connect and --hosts endpoints. */
void nt_source_connect_remote(nt_source *s, nt_model *m);           /* once, after the local ones */
bool nt_source_quiet_remote(const nt_source *s, const endpoint *e); /* not polled each pass */
void nt_source_wake_quiet(nt_source *s, nt_model *m);               /* once a second */
void nt_source_note_silent_connects(nt_source *s, nt_model *m, double now);

#endif

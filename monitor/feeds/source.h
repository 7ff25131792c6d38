/* The live feed (source*.c): the endpoint directory's publishers, the
 * --connect and --hosts relays, each message received into the model. */
#ifndef NCCLTOP_SOURCE_H
#define NCCLTOP_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/model.h"
#include "../options.h"

typedef struct nt_source nt_source;
/* Opens the ZeroMQ context; NULL with the reason in err. */
nt_source *nt_source_open(const nt_options *o, char *err, size_t errlen);
/* The options' mistakes batch mode refuses (the screen lists them as the
 * source meets them): a --dir (or $NCCLTOP_DIR) that is not a directory, a
 * --connect that is not a ZeroMQ endpoint. -1 with one line in err. */
int nt_source_check(const nt_options *o, char *err, size_t errlen);
/* Rescans the endpoint directory (at most once a second), connects to new
 * publishers, drops dead ones, then receives and applies every pending
 * message (at most NT_SOURCE_MAX_PER_POLL). Returns within timeout_ms (plus
 * the time to apply what arrived) and the number of messages taken. Never
 * fails: problems become model errors. The first call also connects the
 * options' --connect endpoints. */
#define NT_SOURCE_MAX_PER_POLL 10000
int nt_source_poll(nt_source *s, nt_model *m, int timeout_ms);
uint32_t nt_source_nendpoints(const nt_source *s);
/* Also subscribe to `addr` (a relay's tcp:// endpoint); failures become model errors. */
int nt_source_connect(nt_source *s, nt_model *m, const char *addr);
void nt_source_close(nt_source *s);
/* A tap sees every whole two-frame message before it is decoded (topic and
 * body as received, the time the model is given), and, with topic NULL, an
 * endpoint the source dropped (nt_model_endpoint_gone). For a recorder;
 * NULL removes it. */
typedef void (*nt_source_tap)(void *arg, const char *endpoint, uint32_t endpoint_pid,
                              const void *topic, size_t topic_len, const void *body,
                              size_t body_len, double now_s);
void nt_source_set_tap(nt_source *s, nt_source_tap tap, void *arg);
/* What the source watches, for people: the endpoint directory, and the
 * --connect endpoint (or how many, when several). */
void nt_source_watching(const nt_source *s, char *buf, size_t cap);

/* --hosts and --hostfile (source_remote.c): every host's relay, tcp://HOST:PORT
 * (port NT_HOSTS_DEFAULT_PORT unless the list gives one), at most
 * NT_VIEWER_MAX_HOSTS for one viewer (relays can feed relays). */
#define NT_VIEWER_MAX_HOSTS 4096
struct nt_hostlist;
/* The options' hosts, repeats dropped: NULL with err "" when there are
 * none; NULL with one line in err ("--hosts: position 7: ...") when the
 * list or the file is wrong. The caller frees (nt_hostlist_free). */
struct nt_hostlist *nt_options_hosts(const nt_options *o, char *err, size_t errlen);

#endif

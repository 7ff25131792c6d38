/* Publishers written in the test (test_source, test_hosts_source,
 * test_hostile_viewer): XPUB sockets bound where the live source looks,
 * sending what the plugin sends, or what it never would. */
#ifndef NCCLTOP_TESTS_TEST_PUBLISHER_H
#define NCCLTOP_TESTS_TEST_PUBLISHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../monitor/core/model.h"
#include "../../monitor/feeds/source.h"
#include "../../proto/nccltop_proto.h"

/* An XPUB bound at addr, lingering 0 and with no send limit (every message
 * reaches the viewer); NULL when it cannot bind. */
void *tp_bind(void *zctx, const char *addr);

/* The same at the socket a process `pid` publishes on in dir. */
void *tp_bind_pid(void *zctx, const char *dir, pid_t pid);

/* The same on 127.0.0.1 and a port the kernel picked, put in *port. */
void *tp_bind_tcp(void *zctx, int *port);

/* A two-frame message (topic, data); 0 when sent. */
int tp_send2(void *s, const char *topic, const void *data, size_t len);

/* A snapshot, encoded; 0 when sent. */
int tp_send_snapshot(void *s, const nt_snapshot *snap);

/* A hello of (pid, host) naming NCCL `version`; 0 when sent. */
int tp_send_hello(void *s, uint32_t pid, const char *host, const char *version);

/* A communicator's name (2 ranks); 0 when sent. */
int tp_send_comm(void *s, uint32_t pid, uint64_t hash, const char *name);

/* Polls the source until the publisher has seen a subscription (XPUB hands
 * it up as a message starting with 1); false after about 5 s. */
bool tp_subscribed(void *pub, nt_source *src, nt_model *m);

/* A live process that does nothing (a pid to name a socket after); it ends
 * by itself after 120 s should the test never reap it. */
pid_t tp_idle_child(void);

/* Kills and waits for a child (nothing for pid <= 0). */
void tp_reap(pid_t pid);

#endif

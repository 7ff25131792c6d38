/* The exporter's HTTP connections, bounded in number and in time.
 *
 * libmicrohttpd 0.9.75 times a connection out after a silence only: a
 * client that sends one header byte every few seconds keeps its connection
 * for ever, and a few dozen such clients (or a thousand that send a GET and
 * never read) hold every slot of a fixed connection limit, so no scrape
 * gets in. The guard keeps its own book of the daemon's connections,
 * through the daemon's notifications, and
 *  - closes a connection whose request (line and headers) is not in within
 *    header_s of its start, or whose response is not sent within
 *    exchange_s of it, whatever bytes it trickles meanwhile. A request
 *    starts when its connection is accepted, or when the previous response
 *    on it was sent (an idle keep-alive connection waits for its next
 *    request under the same clock);
 *  - when a client address (IPv4; an IPv6 /64, one host's usual share)
 *    holds more than max_per_address connections, or all of them hold more
 *    than max_connections, closes that address's (or anyone's) oldest
 *    connection whose request is not in yet, else its oldest: the newcomer
 *    always gets its turn, so a scrape from an address an attacker shares
 *    (loopback) still gets through.
 *
 * Closing: the daemon offers no call that closes a connection from outside
 * its own callbacks. The guard shuts the socket down (shutdown(2), not
 * close: the descriptor stays the daemon's); the daemon sees the hang-up,
 * closes the connection and says so. The book's lock is held from the
 * look-up to the shutdown, and the daemon's "closed" notification, which
 * takes the lock, comes before it closes the descriptor: a shutdown never
 * reaches a descriptor number reused by another connection. */
#ifndef NCCLTOP_EXPORTER_GUARD_H
#define NCCLTOP_EXPORTER_GUARD_H

#include <stdarg.h>

#include <microhttpd.h>

typedef struct {
  unsigned max_connections; /* past it, a newcomer closes the oldest unfinished one */
  unsigned max_per_address; /* the same, per client address */
  double header_s;          /* a request's line and headers within this of its start */
  double exchange_s;        /* its response sent within this of its start */
} nt_http_limits;

typedef struct nt_http_guard nt_http_guard;

/* A guard with its sweeper thread (it checks the deadlines four times a
 * second); NULL when the thread or memory could not be had. */
nt_http_guard *nt_http_guard_new(const nt_http_limits *l);

/* Stops the sweeper and frees the guard: after MHD_stop_daemon. */
void nt_http_guard_free(nt_http_guard *g);

/* The daemon's MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_NOTIFY_COMPLETED
 * callbacks; their closure is the guard. */
void nt_http_guard_on_connection(void *guard, struct MHD_Connection *c, void **socket_context,
                                 enum MHD_ConnectionNotificationCode what);
void nt_http_guard_on_completed(void *guard, struct MHD_Connection *c, void **request,
                                enum MHD_RequestTerminationCode why);

/* The daemon's MHD_OPTION_EXTERNAL_LOGGER (closure: the guard). It says a
 * line for each connection it refuses or that breaks: a flood would write
 * thousands. The first is printed ("nccltop exporter: http: ..."), then at
 * most one a minute with the number held back since the last. */
void nt_http_guard_log(void *guard, const char *fmt, va_list ap);

/* The access handler's first call for a request: its headers are in, from
 * now on the exchange deadline applies. */
void nt_http_guard_request_in(struct MHD_Connection *c);

#endif

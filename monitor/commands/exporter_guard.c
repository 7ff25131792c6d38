/* The exporter's HTTP connections, bounded in number and in time: see
 * exporter_guard.h for the rules and why the guard shuts sockets down. */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "exporter_guard.h"
#include "../feeds/clock.h"

#define SWEEP_NS    250000000L
#define LOG_EVERY_S 60.0

/* One connection of the daemon, in the book from its "started" to its
 * "closed" notification. */
typedef struct conn {
  struct conn *prev, *next; /* the book, oldest first */
  nt_http_guard *guard;
  int fd;
  uint8_t addr[9]; /* 4 and the IPv4 address, or 6 and the IPv6 /64 */
  bool request_in; /* the current request's headers are in */
  bool closing;    /* shut down: the daemon is closing it */
  double start;    /* the current request's start (nt_now_s) */
} conn;

struct nt_http_guard {
  nt_http_limits lim;
  pthread_mutex_t lock; /* the book, and every field of its entries */
  pthread_cond_t wake;  /* stop */
  pthread_t sweeper;
  bool stop;
  conn *oldest, *newest;
  unsigned open; /* in the book and not closing */
  bool logged;   /* the daemon's messages: one a minute */
  double logged_at;
  unsigned long held_back;
};

/* The address a client is counted under. An IPv4-mapped IPv6 address is
 * the IPv4 client it is; other IPv6 clients by /64, since one host usually
 * has a whole /64 to pick source addresses from. */
static void address_key(const struct sockaddr *sa, uint8_t key[9]) {
  memset(key, 0, 9);
  if (!sa) return;
  if (sa->sa_family == AF_INET) {
    key[0] = 4;
    memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) {
      key[0] = 4;
      memcpy(key + 1, a->s6_addr + 12, 4);
    } else {
      key[0] = 6;
      memcpy(key + 1, a->s6_addr, 8);
    }
  }
}

/* Under the lock. The daemon closes k once it sees the hang-up. */
static void shut(nt_http_guard *g, conn *k) {
  if (!k || k->closing) return;
  /* A failure (ENOTCONN) means the client already reset it: the daemon
   * sees that by itself. */
  (void)shutdown(k->fd, SHUT_RDWR);
  k->closing = true;
  g->open--;
}

/* Whether the client has hung up (closed, or shut its sending side) on a
 * connection the daemon has not closed yet: under load a pool thread sees
 * the hang-ups of its connections late, and a client scraping in a loop
 * from one address leaves a trail of them. */
static bool hung_up(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static bool counted(const conn *k, const uint8_t *key, const conn *newcomer) {
  return k != newcomer && !k->closing && (!key || !memcmp(k->addr, key, sizeof k->addr));
}

/* The connection a newcomer displaces, of the address `key` or of anyone
 * (NULL), never `newcomer`: the oldest one its client has hung up, else the
 * oldest whose request is not in yet, else the oldest. A hung-up one first:
 * displacing it costs nobody anything, where the oldest waiting for its
 * request can be a live scrape the daemon has not read yet (one failed in
 * a few hundred thousand scrapes by 16 clients on a loaded machine). */
static conn *displaced(nt_http_guard *g, const uint8_t *key, const conn *newcomer) {
  for (conn *k = g->oldest; k; k = k->next)
    if (counted(k, key, newcomer) && hung_up(k->fd)) return k;
  conn *oldest = NULL;
  for (conn *k = g->oldest; k; k = k->next) {
    if (!counted(k, key, newcomer)) continue;
    if (!k->request_in) return k;
    if (!oldest) oldest = k;
  }
  return oldest;
}

static unsigned open_from(const nt_http_guard *g, const uint8_t *key) {
  unsigned n = 0;
  for (const conn *k = g->oldest; k; k = k->next)
    n += !k->closing && !memcmp(k->addr, key, sizeof k->addr);
  return n;
}

static void started(nt_http_guard *g, struct MHD_Connection *c, void **socket_context) {
  const union MHD_ConnectionInfo *fd =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *from =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!fd) return; /* cannot happen in 0.9.75; nothing to watch it by */
  conn *k = calloc(1, sizeof *k);
  *socket_context = k;
  if (!k) {
    /* A connection the guard cannot watch could outlive every bound. */
    (void)shutdown(fd->connect_fd, SHUT_RDWR);
    return;
  }
  k->guard = g;
  k->fd = fd->connect_fd;
  address_key(from ? from->client_addr : NULL, k->addr);
  pthread_mutex_lock(&g->lock);
  k->start = nt_now_s();
  k->prev = g->newest;
  if (g->newest)
    g->newest->next = k;
  else
    g->oldest = k;
  g->newest = k;
  g->open++;
  if (open_from(g, k->addr) > g->lim.max_per_address) shut(g, displaced(g, k->addr, k));
  if (g->open > g->lim.max_connections) shut(g, displaced(g, NULL, k));
  pthread_mutex_unlock(&g->lock);
}

static void closed(nt_http_guard *g, void **socket_context) {
  conn *k = *socket_context;
  if (!k) return;
  pthread_mutex_lock(&g->lock);
  if (k->prev)
    k->prev->next = k->next;
  else
    g->oldest = k->next;
  if (k->next)
    k->next->prev = k->prev;
  else
    g->newest = k->prev;
  if (!k->closing) g->open--;
  pthread_mutex_unlock(&g->lock);
  free(k);
  *socket_context = NULL;
}

void nt_http_guard_on_connection(void *guard, struct MHD_Connection *c, void **socket_context,
                                 enum MHD_ConnectionNotificationCode what) {
  if (what == MHD_CONNECTION_NOTIFY_STARTED)
    started(guard, c, socket_context);
  else if (what == MHD_CONNECTION_NOTIFY_CLOSED)
    closed(guard, socket_context);
}

static conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

void nt_http_guard_request_in(struct MHD_Connection *c) {
  conn *k = conn_of(c);
  if (!k) return;
  pthread_mutex_lock(&k->guard->lock);
  k->request_in = true;
  pthread_mutex_unlock(&k->guard->lock);
}

void nt_http_guard_on_completed(void *guard, struct MHD_Connection *c, void **request,
                                enum MHD_RequestTerminationCode why) {
  (void)request;
  (void)why;
  nt_http_guard *g = guard;
  conn *k = conn_of(c);
  if (!k) return;
  /* The response is sent (or the request ended otherwise): the next
   * request on this connection starts now. */
  pthread_mutex_lock(&g->lock);
  k->request_in = false;
  k->start = nt_now_s();
  pthread_mutex_unlock(&g->lock);
}

void nt_http_guard_log(void *guard, const char *fmt, va_list ap) {
  nt_http_guard *g = guard;
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t len = strlen(msg);
  while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r')) msg[--len] = '\0';
  pthread_mutex_lock(&g->lock);
  double now = nt_now_s();
  bool say = !g->logged || now - g->logged_at >= LOG_EVERY_S;
  unsigned long held = g->held_back;
  if (say) {
    g->logged = true;
    g->logged_at = now;
    g->held_back = 0;
  } else {
    g->held_back++;
  }
  pthread_mutex_unlock(&g->lock);
  if (say && held)
    fprintf(stderr, "nccltop exporter: http: %s (and %lu more messages in the last minute)\n", msg,
            held);
  else if (say)
    fprintf(stderr, "nccltop exporter: http: %s\n", msg);
}

static void *sweep(void *arg) {
  nt_http_guard *g = arg;
  pthread_mutex_lock(&g->lock);
  while (!g->stop) {
    double now = nt_now_s();
    for (conn *k = g->oldest; k; k = k->next) {
      double limit = k->request_in ? g->lim.exchange_s : g->lim.header_s;
      if (!k->closing && now - k->start >= limit) shut(g, k);
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += SWEEP_NS;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    /* A wake-up early (a signal, stop) only sweeps sooner. */
    (void)pthread_cond_timedwait(&g->wake, &g->lock, &until);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

nt_http_guard *nt_http_guard_new(const nt_http_limits *l) {
  nt_http_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->lim = *l;
  pthread_condattr_t ca;
  bool attr = pthread_condattr_init(&ca) == 0;
  bool cond = attr && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&g->wake, &ca) == 0;
  if (attr) pthread_condattr_destroy(&ca);
  bool lock = cond && pthread_mutex_init(&g->lock, NULL) == 0;
  if (lock && pthread_create(&g->sweeper, NULL, sweep, g) == 0) return g;
  if (lock) pthread_mutex_destroy(&g->lock);
  if (cond) pthread_cond_destroy(&g->wake);
  free(g);
  return NULL;
}

void nt_http_guard_free(nt_http_guard *g) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->stop = true;
  pthread_cond_signal(&g->wake);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->sweeper, NULL);
  /* The stopped daemon said "closed" for every connection: the book is
   * empty, but it is freed all the same. */
  for (conn *k = g->oldest, *next; k; k = next) {
    next = k->next;
    free(k);
  }
  pthread_cond_destroy(&g->wake);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

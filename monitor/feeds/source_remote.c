/* The live source's remote endpoints (--connect, --hosts): connected once,
 * within the descriptor limit and after the local job's share; the quiet
 * ones (no relay answers) looked at once a second rather than polled on
 * every pass; their silence said once, in one line when many. */
#include <dirent.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>

#include "source_internal.h"

/* A publisher answers a new subscriber with a full snapshot at once, so a
 * --connect endpoint silent this long has nobody (reachable) behind it. */
#define CONNECT_SILENT_S 3.0
/* Up to this many --connect endpoints are polled on every pass, heard from
 * or not (nt_source_quiet_remote). */
#define POLL_ALL_CONNECTS 64
/* Descriptors kept for the endpoint directory and the local publishers
 * when remote endpoints are connected (each takes two: its socket's eventfd
 * and its connection). */
#define LOCAL_RESERVE_FDS 128
/* More silent endpoints than this at one scan are said in one line. */
#define SILENT_ONE_LINE 8

/* Says once of each --connect endpoint that nothing came from it; ZeroMQ
 * keeps reconnecting, and its data shows as soon as a publisher answers. */
/* A --connect endpoint whose handshake was refused has said so already. */
static bool silent_for(const endpoint *e, double now, double secs) {
  return !e->pid && !e->heard && !e->silence_noted && !e->refusal_noted && now - e->since_s >= secs;
}

void nt_source_note_silent_connects(nt_source *s, nt_model *m, double now) {
  /* Many at once (the relays of a --hosts list): one line for them all, so
   * the error list keeps room for the rest; it takes in those that would be
   * due at the next scan, which the connecting of thousands spreads over. */
  uint32_t due = 0, silent = 0, first = 0;
  for (uint32_t i = 0; i < s->neps; i++) {
    due += silent_for(&s->eps[i], now, CONNECT_SILENT_S);
    if (silent_for(&s->eps[i], now, CONNECT_SILENT_S - NT_SOURCE_SCAN_PERIOD_S) && !silent++)
      first = i;
  }
  if (!due) return;
  bool one_line = silent > SILENT_ONE_LINE;
  if (one_line)
    nt_source_note(
        m, "connect", false,
        "nothing yet from %u endpoints (%s, ...): no relay there, a name that does not resolve, "
        "not reachable, or our key refused (still trying)",
        silent, s->eps[first].endpoint);
  for (uint32_t i = first; i < s->neps; i++) {
    endpoint *e = &s->eps[i];
    if (!silent_for(e, now,
                    one_line ? CONNECT_SILENT_S - NT_SOURCE_SCAN_PERIOD_S : CONNECT_SILENT_S))
      continue;
    e->silence_noted = true;
    if (!one_line)
      nt_source_note(
          m, e->endpoint, false,
          "nothing received in %.0f s: no relay or publisher there, a name that does not "
          "resolve, or not reachable%s (still trying)",
          CONNECT_SILENT_S, e->mon || !e->secure ? "" : ", or refusing our key");
  }
}

/* One failed handshake with a relay, in the model's error list (once until
 * a handshake succeeds again: ZeroMQ retries every second). */
/* A remote endpoint that never sent anything (a relay that is not there,
 * of thousands in a --hosts list) is not polled with the others: each
 * polled socket costs ZeroMQ a look on every pass. A few --connect
 * endpoints are always polled, so a relay's first messages show at once
 * rather than at the next scan. */
bool nt_source_quiet_remote(const nt_source *s, const endpoint *e) {
  return s->nconnect > POLL_ALL_CONNECTS && !e->pid && !e->peer && !e->heard;
}

/* Once a second: the quiet remote endpoints that have something now join
 * the others (their first messages are read here). */
void nt_source_wake_quiet(nt_source *s, nt_model *m) {
  for (uint32_t i = 0; i < s->neps; i++) {
    endpoint *e = &s->eps[i];
    int events = 0;
    size_t len = sizeof events;
    if (!e->sock || !nt_source_quiet_remote(s, e) ||
        zmq_getsockopt(e->sock, ZMQ_EVENTS, &events, &len) != 0 || !(events & ZMQ_POLLIN))
      continue;
    for (int k = 0; k < 16 && nt_source_receive(s, e, m); k++) {
    }
  }
}

/* Descriptors this process may still open. */
static unsigned long fds_room(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  unsigned long limit = r.rlim_cur == RLIM_INFINITY ? ULONG_MAX : (unsigned long)r.rlim_cur;
  unsigned long open = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return limit; /* no /proc: ZeroMQ's own refusals say it */
  while (readdir(d)) open++;
  closedir(d);
  open = open > 2 ? open - 2 : 0; /* "." and ".." (the listing's own descriptor is gone now) */
  return limit > open ? limit - open : 0;
}

/* The --connect endpoints and the --hosts relays, once, after the endpoint
 * directory and the inbox have their descriptors: as many as the limit
 * leaves room for beside LOCAL_RESERVE_FDS for the local job; the others
 * are said in one line (a local job hidden by remote ones would be worse). */
void nt_source_connect_remote(nt_source *s, nt_model *m) {
  s->connected = true;
  unsigned long room = s->nconnect ? fds_room() : 0;
  int i = 0;
  for (; i < s->nconnect; i++) {
    bool tcp = !strncmp(s->connect[i], "tcp://", 6);
    unsigned long cost = 2 + (tcp && s->monitors < NT_SOURCE_MAX_MONITORS ? 2 : 0);
    if (room < LOCAL_RESERVE_FDS + cost) break;
    room -= cost;
    nt_source_add_endpoint(s, m, s->connect[i], s->connect[i], 0);
  }
  if (i < s->nconnect)
    nt_source_note(m, "connect", false,
                   "%d of %d remote endpoints not connected (from %s on): the descriptor limit "
                   "(ulimit -n) leaves room for %d beside the local job; raise it, or watch "
                   "through relays that each watch many",
                   s->nconnect - i, s->nconnect, s->connect[i], i);
}

struct nt_hostlist *nt_options_hosts(const nt_options *o, char *err, size_t errlen) {
  err[0] = '\0';
  if (!o->hosts && !o->hostfile) return NULL;
  nt_hostlist *l = nt_hostlist_new();
  char why[400];
  if (!l) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (o->hosts && nt_hostlist_add(l, o->hosts, strlen(o->hosts), why, sizeof why) != 0)
    snprintf(err, errlen, "--hosts: %s", why);
  else if (o->hostfile && nt_hostlist_add_file(l, o->hostfile, why, sizeof why) != 0)
    snprintf(err, errlen, "--hostfile %.200s: %s", o->hostfile, why);
  if (!err[0]) {
    nt_hostlist_uniq(l);
    uint32_t n = nt_hostlist_count(l);
    if (n > NT_VIEWER_MAX_HOSTS)
      snprintf(err, errlen,
               "%s: %u hosts, at most %d for one viewer (relays can feed relays: watch a few "
               "that each watch many)",
               o->hosts ? "--hosts" : "--hostfile", n, NT_VIEWER_MAX_HOSTS);
  }
  if (err[0]) {
    nt_hostlist_free(l);
    return NULL;
  }
  return l;
}

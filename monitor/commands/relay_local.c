/* The relay's side of this node's publishers, the viewer's rules
 * (discover.h): its socket file in the endpoint directory, which publishers
 * from 0.2 on connect to (each message carries its sender's pid, from the
 * kernel), and the <pid>[.<pidns>].sock files of older publishers, which it
 * connects to, dead processes dropped. Publishers coming and going are
 * logged: "+ pid N" for a sender's first message, "- pid N (process ended)"
 * once it has; older publishers by their file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "../../proto/nccltop_proto.h"
#include "relay_internal.h"

#define XSUB_RCVHWM 100 /* messages per publisher (or upstream relay) */
/* After the endpoint directory was removed or replaced, a publisher binds
 * again within its check period (2 s); until then it is kept (as the
 * viewer does, source.c). */
#define REBIND_GRACE_S 5.0

static int set_int(void *s, int opt, int v) {
  return zmq_setsockopt(s, opt, &v, sizeof v);
}

int nt_relay_set_xsub(void *s) {
  int64_t maxmsg = (int64_t)NT_MAX_MESSAGE_BYTES + 4096;
  return set_int(s, ZMQ_LINGER, 0) || set_int(s, ZMQ_RCVHWM, XSUB_RCVHWM) ||
         zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
}

/* r->senders is kept sorted: one lookup per message forwarded. */
static uint32_t sender_slot(const relay *r, uint32_t pid) {
  uint32_t lo = 0, hi = r->nsenders;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r->senders[mid] < pid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void nt_relay_note_sender(relay *r, uint32_t pid) {
  uint32_t at = sender_slot(r, pid);
  if (at < r->nsenders && r->senders[at] == pid) return;
  if (pid == 0) { /* another PID namespace: no pid of ours to follow */
    if (!r->other_ns_noted && !r->quiet)
      fprintf(stderr, "nccltop relay: + a publisher in another PID namespace\n");
    r->other_ns_noted = true;
    return;
  }
  if (r->nsenders >= MAX_PUBLISHERS) {
    if (!r->senders_full_noted && !r->quiet)
      fprintf(stderr, "nccltop relay: more than %d publishers; not logging the others\n",
              MAX_PUBLISHERS);
    r->senders_full_noted = true;
    return;
  }
  memmove(r->senders + at + 1, r->senders + at, (r->nsenders - at) * sizeof *r->senders);
  r->senders[at] = pid;
  r->nsenders++;
  if (!r->quiet) fprintf(stderr, "nccltop relay: + pid %u\n", (unsigned)pid);
}

/* Senders whose process ended; a pid is ours to ask (the kernel gave it in
 * our namespace). */
static void senders_gone(relay *r) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < r->nsenders; i++) {
    uint32_t pid = r->senders[i];
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
      if (!r->quiet) fprintf(stderr, "nccltop relay: - pid %u (process ended)\n", (unsigned)pid);
    } else {
      r->senders[kept++] = pid; /* still sorted */
    }
  }
  r->nsenders = kept;
}

static bool publisher_alive(const relay *r, uint32_t pid, uint64_t pidns) {
  return nt_discover_alive(pid, pidns, r->pidns);
}

static void drop(relay *r, uint32_t i, const char *why) {
  legacy_pub *p = &r->pubs[i];
  (void)zmq_disconnect(r->legacy, p->addr);
  if (!r->quiet) fprintf(stderr, "nccltop relay: - %s/%s (%s)\n", r->dir, p->name, why);
  r->pubs[i] = r->pubs[--r->npubs];
}

/* Holds the directory open, checked; when its path names another directory
 * now, every older publisher is connected again through the new one (they
 * bind again there within their check period), and our socket file is made
 * there. */
static bool hold_dir(relay *r, bool may_disconnect) {
  if (r->dirfd >= 0 && nt_endpoint_dir_same(r->dir, r->dirfd)) return true;
  if (r->dirfd >= 0 && !may_disconnect) return true; /* next time */
  char err[512] = "";
  int fd = nt_endpoint_dir_open(r->dir, false, err, sizeof err);
  if (fd < 0) {
    if (!r->dir_error_noted) fprintf(stderr, "nccltop relay: %s (still watching)\n", err);
    r->dir_error_noted = true;
    return false;
  }
  if (r->dirfd >= 0) {
    for (uint32_t i = 0; i < r->npubs; i++) {
      legacy_pub *p = &r->pubs[i];
      char addr[sizeof p->addr];
      if (nt_endpoint_fd_address(fd, p->name, addr, sizeof addr) != 0) continue;
      (void)zmq_disconnect(r->legacy, p->addr);
      if (zmq_connect(r->legacy, addr) == 0) snprintf(p->addr, sizeof p->addr, "%s", addr);
      p->keep_until_s = nt_relay_now() + REBIND_GRACE_S;
    }
    nt_inbox_unbind(&r->in, r->local, r->dirfd);
    close(r->dirfd);
  }
  r->dirfd = fd;
  r->dir_error_noted = false;
  return true;
}

/* Our socket file, where the publishers (0.2 on) connect; bound again when
 * it was removed. Unbinding ends the connections it accepted the way their
 * peers' going would: whatever was received is still read first. */
static void hold_inbox(relay *r) {
  struct stat st;
  if (r->in.name[0] && fstatat(r->dirfd, r->in.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISSOCK(st.st_mode))
    return;
  nt_inbox_unbind(&r->in, r->local, r->dirfd);
  if (nt_inbox_bind(&r->in, r->local, r->dirfd) != 0) {
    if (!r->inbox_noted)
      fprintf(stderr, "nccltop relay: cannot listen in %s for publishers: %s (still trying)\n",
              r->dir, zmq_strerror(zmq_errno()));
    r->inbox_noted = true;
    return;
  }
  if (r->inbox_noted || !r->quiet)
    fprintf(stderr, "nccltop relay: publishers connect to %s/%s\n", r->dir, r->in.name);
  r->inbox_noted = false;
}

/* The XSUB for older publishers, made when the first one is found. */
static bool have_legacy(relay *r) {
  if (r->legacy) return true;
  r->legacy = zmq_socket(r->zctx, ZMQ_XSUB);
  if (!r->legacy || nt_relay_set_xsub(r->legacy)) {
    fprintf(stderr, "nccltop relay: cannot create a socket for older publishers: %s\n",
            zmq_strerror(zmq_errno()));
    if (r->legacy) zmq_close(r->legacy);
    r->legacy = NULL;
    return false;
  }
  r->legacy_drained = true;
  nt_relay_subscribe_new(r, r->legacy, &r->legacy_subs);
  return true;
}

static void add(relay *r, const char *name, uint32_t pid, uint64_t pidns) {
  if (r->npubs >= MAX_PUBLISHERS) {
    if (!r->full_noted)
      fprintf(stderr, "nccltop relay: more than %d publishers; %s not forwarded\n", MAX_PUBLISHERS,
              name);
    r->full_noted = true;
    return;
  }
  legacy_pub *p = &r->pubs[r->npubs];
  memset(p, 0, sizeof *p);
  if (strlen(name) >= sizeof p->name ||
      nt_endpoint_fd_address(r->dirfd, name, p->addr, sizeof p->addr) != 0 || !have_legacy(r))
    return;
  if (zmq_connect(r->legacy, p->addr) != 0) {
    fprintf(stderr, "nccltop relay: cannot connect to %s/%s: %s\n", r->dir, name,
            zmq_strerror(zmq_errno()));
    return;
  }
  snprintf(p->name, sizeof p->name, "%s", name);
  p->pid = pid;
  p->pidns = pidns;
  p->seen = true;
  r->npubs++;
  if (!r->quiet) fprintf(stderr, "nccltop relay: + %s/%s\n", r->dir, name);
}

static void found(void *ctx, const char *name, uint32_t pid, uint64_t pidns) {
  relay *r = ctx;
  uint32_t i = 0;
  while (i < r->npubs && strcmp(r->pubs[i].name, name) != 0) i++;
  if (i < r->npubs)
    r->pubs[i].seen = true;
  else if (publisher_alive(r, pid, pidns))
    add(r, name, pid, pidns);
}

/* The viewer's scan (source.c): new live older publishers connected, those
 * whose file is gone (after the grace period) or whose process ended
 * dropped; senders that ended said. When the directory cannot be listed,
 * what is connected stays. A disconnect waits for a turn that read the
 * older publishers' socket to its end (may_disconnect): libzmq 4.3 must not
 * end one of its connections in the middle of a message it is reading
 * (fq.cpp:112). */
void nt_relay_scan(relay *r, bool may_disconnect) {
  senders_gone(r);
  if (hold_dir(r, may_disconnect)) {
    hold_inbox(r);
    for (uint32_t i = 0; i < r->npubs; i++) r->pubs[i].seen = false;
    if (nt_discover_list(r->dirfd, sizeof r->pubs[0].name, found, r) != 0) {
      for (uint32_t i = 0; i < r->npubs; i++) r->pubs[i].seen = true;
      if (!r->dir_error_noted)
        fprintf(stderr, "nccltop relay: cannot list %s: %s\n", r->dir, strerror(errno));
      r->dir_error_noted = true;
    }
  }
  if (!may_disconnect) return;
  for (uint32_t i = 0; i < r->npubs;) {
    legacy_pub *p = &r->pubs[i];
    if (!p->seen && nt_relay_now() >= p->keep_until_s)
      drop(r, i, "socket file gone");
    else if (!publisher_alive(r, p->pid, p->pidns))
      drop(r, i, "process ended");
    else
      i++;
  }
}

/* The viewers on this machine (publisher thread only).
 *
 * The plugin never listens. A process that accepts connections can be
 * killed by whoever connects: libzmq 4.3 asserts when accept fails with
 * EMFILE (ipc_listener.cpp:325), so a job at its descriptor limit died the
 * moment a viewer attached. Instead every reader (viewer, relay, recorder,
 * exporter) binds a socket file viewer-<pid>-<serial>-<pidns>.sock in the
 * endpoint directory, and the publisher connects its XPUB to each live one
 * it finds there. A connect that finds no descriptor is ZeroMQ's ordinary
 * reconnect (stream_connecter_base.cpp: the socket() failure is retried),
 * never an abort. Each viewer gets a socket of its own (outlet.c), so one
 * that misbehaves is dropped alone, and kept out for a while that doubles.
 *
 * The directory is opened and checked once, then used only through its
 * descriptor (see nt_endpoint_dir_open), so nobody who can write its parent
 * can slip a directory of theirs in between the check and the connect.
 * Every SCAN_PERIOD_NS we list it: new live viewers are connected, those
 * whose file is gone or whose process died are disconnected. Every
 * CHECK_PERIOD_NS we look whether the path still names the directory we
 * hold; when it was removed or replaced (a cleanup of /tmp) we open it
 * again, with the same checks, and connect there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "internal.h"

/* A new viewer sees data within a scan: cheap (one getdents of a directory
 * of a few files, and a kill(pid, 0) per viewer) on the publisher thread. */
#define SCAN_PERIOD_NS  250000000ull
#define CHECK_PERIOD_NS 2000000000ull

/* Says once what keeps us from publishing locally; quiet until it works. */
#define NOTE_TROUBLE(l, ...)                                                                       \
  do {                                                                                             \
    if (!(l)->trouble_noted) nt_log(NT_NCCL_LOG_WARN, __VA_ARGS__);                                \
    (l)->trouble_noted = true;                                                                     \
  } while (0)

bool nt_local_open(struct nt_local *l, const char *dir) {
  char err[512];
  memset(l, 0, sizeof *l);
  l->dirfd = -1;
  l->pidns = nt_endpoint_pidns();
  if (snprintf(l->dir, sizeof l->dir, "%s", dir) >= (int)sizeof l->dir) {
    nt_log(NT_NCCL_LOG_WARN, "endpoint directory name too long; not publishing locally");
    return false;
  }
  if ((l->dirfd = nt_endpoint_dir_open(dir, true, err, sizeof err)) < 0) {
    /* Kept watching: a directory created (or fixed) later is taken up. */
    l->watching = true;
    NOTE_TROUBLE(l, "%s; not publishing locally until it is fixed", err);
    return false;
  }
  l->watching = true;
  nt_log(NT_NCCL_LOG_INFO, "publishing to the viewers in %s", dir);
  return true;
}

static void drop(struct nt_local *l, uint32_t i) {
  nt_outlet_close(&l->viewers[i].out, 0);
  l->viewers[i] = l->viewers[--l->nviewers];
}

/* A viewer that flooded us is kept out 1 s, then 2, 4... up to a minute
 * each time it does it again (a minute of good behaviour forgets it). */
#define BAN_FIRST_NS 1000000000ull
#define BAN_MAX_NS   60000000000ull
#define BAN_CALM_NS  60000000000ull

static struct nt_ban *ban_of(struct nt_local *l, const char *name, bool add) {
  struct nt_ban *oldest = &l->bans[0];
  for (int i = 0; i < NT_MAX_BANS; i++) {
    if (!strcmp(l->bans[i].name, name)) return &l->bans[i];
    if (l->bans[i].until_ns < oldest->until_ns) oldest = &l->bans[i];
  }
  if (!add) return NULL;
  memset(oldest, 0, sizeof *oldest);
  snprintf(oldest->name, sizeof oldest->name, "%s", name);
  return oldest;
}

static bool banned(struct nt_local *l, const char *name, uint64_t now_ns) {
  struct nt_ban *b = ban_of(l, name, false);
  return b && now_ns < b->until_ns;
}

void nt_local_flooded(struct nt_local *l, uint32_t i, uint64_t now_ns) {
  struct nt_viewer *v = &l->viewers[i];
  struct nt_ban *b = ban_of(l, v->name, true);
  if (b->until_ns && now_ns - b->until_ns >= BAN_CALM_NS) b->times = 0;
  uint32_t shift = b->times < 6 ? b->times : 6;
  uint64_t ns = BAN_FIRST_NS << shift;
  if (ns > BAN_MAX_NS) ns = BAN_MAX_NS;
  b->times++;
  b->until_ns = now_ns + ns;
  if (b->times == 1 || !l->flood_noted)
    nt_log(NT_NCCL_LOG_WARN,
           "viewer %s sent %u messages that are not a viewer's subscription: disconnected for "
           "%llu s (the other viewers are not affected)",
           v->name, v->out.foreign, (unsigned long long)(ns / 1000000000ull));
  l->flood_noted = true;
  drop(l, i);
}

/* A viewer's process is gone when its pid, in our namespace, is dead; a pid
 * from another namespace means nothing here: its file decides. */
static bool viewer_alive(const struct nt_local *l, uint32_t pid, uint64_t pidns) {
  if (pidns != l->pidns && pidns && l->pidns) return true;
  return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* The directory again, from its path, when it no longer is the one we hold. */
static void hold_dir(struct nt_local *l, uint64_t now_ns) {
  if (now_ns < l->next_check_ns) return;
  l->next_check_ns = now_ns + CHECK_PERIOD_NS;
  if (l->dirfd >= 0 && nt_endpoint_dir_same(l->dir, l->dirfd)) return;
  char err[512];
  int fd = nt_endpoint_dir_open(l->dir, true, err, sizeof err);
  if (fd < 0) {
    NOTE_TROUBLE(l, "%s; not publishing locally until it is fixed", err);
    return;
  }
  /* Our connections went through the old descriptor to files that are
   * gone or elsewhere now: drop them all (their viewers bind anew where
   * the path leads), then let the old number go. */
  while (l->nviewers) drop(l, 0);
  bool had = l->dirfd >= 0;
  if (had) close(l->dirfd);
  l->dirfd = fd;
  if (l->trouble_noted || had)
    nt_log(NT_NCCL_LOG_INFO, "endpoint directory %s %s; publishing to its viewers", l->dir,
           had ? "removed or replaced" : "usable now");
  l->trouble_noted = false;
}

/* Connects a socket of its own to the viewer whose socket file is `name`,
 * when the process has room for it (an eventfd and the connection) and for
 * itself after it. */
static void connect_viewer(struct nt_local *l, void *(*zctx_of)(void *), void *arg,
                           const char *name, uint32_t pid, uint64_t pidns, uint64_t now_ns) {
  if (l->nviewers >= NT_MAX_VIEWERS) {
    if (!l->full_noted)
      nt_log(NT_NCCL_LOG_WARN, "more than %d viewers in %s; %s and later ones not served",
             NT_MAX_VIEWERS, l->dir, name);
    l->full_noted = true;
    return;
  }
  unsigned want = 2 + NT_FD_HEADROOM;
  unsigned got = nt_fds_free_up_to(want);
  if (got < want) {
    if (!l->fds_noted)
      nt_log(NT_NCCL_LOG_WARN,
             "only %u file descriptors free: viewer %s not connected, so the job keeps them "
             "(tried again every %llu ms)",
             got, name, (unsigned long long)(SCAN_PERIOD_NS / 1000000ull));
    l->fds_noted = true;
    return;
  }
  struct nt_viewer *v = &l->viewers[l->nviewers];
  if (snprintf(v->name, sizeof v->name, "%s", name) >= (int)sizeof v->name ||
      nt_endpoint_fd_address(l->dirfd, name, v->addr, sizeof v->addr) != 0)
    return;
  void *zctx = zctx_of(arg); /* ZeroMQ starts with the first reader: it says why not */
  if (!zctx) return;
  if (!nt_outlet_open(&v->out, zctx, now_ns)) {
    NOTE_TROUBLE(l, "cannot create a socket for viewer %s/%s: %s", l->dir, name,
                 zmq_strerror(errno));
    return;
  }
  if (zmq_connect(v->out.sock, v->addr) != 0) {
    NOTE_TROUBLE(l, "cannot connect viewer %s/%s: %s", l->dir, name, zmq_strerror(errno));
    nt_outlet_close(&v->out, 0);
    return;
  }
  v->pid = pid;
  v->pidns = pidns;
  v->listed = true;
  l->nviewers++;
  if (l->fds_noted) nt_log(NT_NCCL_LOG_INFO, "descriptors free again: serving viewer %s", name);
  l->fds_noted = false;
}

void nt_local_scan(struct nt_local *l, void *(*zctx_of)(void *), void *arg, uint64_t now_ns) {
  if (!l->watching || now_ns < l->next_scan_ns) return;
  l->next_scan_ns = now_ns + SCAN_PERIOD_NS;
  hold_dir(l, now_ns);
  if (l->dirfd < 0) return;
  /* openat, not dup: a dup would share the read position with dirfd. With
   * no descriptor to spare, this scan is skipped; the viewers we have stay. */
  int lfd = openat(l->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d) {
    int e = errno;
    if (lfd >= 0) close(lfd);
    if (!l->list_noted)
      nt_log(NT_NCCL_LOG_WARN,
             "cannot list %s for viewers: %s; not publishing locally until it "
             "can (tried again every %llu ms)",
             l->dir, strerror(e), (unsigned long long)(SCAN_PERIOD_NS / 1000000ull));
    l->list_noted = true;
    return;
  }
  if (l->list_noted) nt_log(NT_NCCL_LOG_INFO, "%s can be listed again", l->dir);
  l->list_noted = false;
  for (uint32_t i = 0; i < l->nviewers; i++) l->viewers[i].listed = false;
  struct dirent *de;
  while ((de = readdir(d))) {
    uint64_t pidns = 0;
    uint32_t pid = nt_endpoint_parse_viewer_name(de->d_name, &pidns);
    if (!pid) continue;
    uint32_t i = 0;
    while (i < l->nviewers && strcmp(l->viewers[i].name, de->d_name) != 0) i++;
    if (i < l->nviewers)
      l->viewers[i].listed = true;
    else if (!banned(l, de->d_name, now_ns) && viewer_alive(l, pid, pidns))
      connect_viewer(l, zctx_of, arg, de->d_name, pid, pidns, now_ns);
  }
  closedir(d);
  for (uint32_t i = 0; i < l->nviewers;) {
    struct nt_viewer *v = &l->viewers[i];
    if (!v->listed || !viewer_alive(l, v->pid, v->pidns))
      drop(l, i);
    else
      i++;
  }
}

uint32_t nt_local_viewers(const struct nt_local *l) {
  return l->nviewers;
}

void nt_local_close_sockets(struct nt_local *l, int linger_ms) {
  for (uint32_t i = 0; i < l->nviewers; i++) nt_outlet_close(&l->viewers[i].out, linger_ms);
  l->nviewers = 0;
  l->next_scan_ns = 0;
}

/* After the ZeroMQ context is terminated: its reconnects went by the
 * descriptor's path. */
void nt_local_close(struct nt_local *l) {
  if (l->dirfd >= 0) close(l->dirfd);
  l->dirfd = -1;
  l->watching = false;
  l->nviewers = 0;
}

/* The publisher thread: owns the ZeroMQ context and the XPUB socket, reads
 * the aggregates every NCCLTOP_INTERVAL_MS and sends a snapshot when someone
 * is subscribed. With nobody subscribed it encodes nothing.
 *
 * A viewer's subscription arrives as a message on the XPUB socket; we answer
 * it at once with a full snapshot, hello and communicators, so a viewer that
 * attaches late is complete after one round trip. Every send is
 * ZMQ_DONTWAIT: a slow or stopped viewer costs messages (ZeroMQ drops them
 * for that viewer alone, which sees the gap in sequence numbers), never a
 * blocked job. What ZeroMQ refuses outright is counted (unsent_messages).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "internal.h"
#include "nccltop_plugin.h"

#define META_PERIOD_NS 2000000000ull
#define POLL_CAP_MS    50
#define SNDHWM         64

/* What may come in. nccltop's viewer (a SUB) sends one ZMTP READY command of
 * 25 bytes and one subscription to "" (a 10-byte SUBSCRIBE command over ZMTP
 * 3.1, a 1-byte message before); a relay's XSUB sends a 26-byte READY. With
 * libzmq 4.3.4 the size check applies to every frame, commands and handshake
 * included: 25 is the smallest value that lets a viewer in, 26 a relay. Any
 * larger frame makes ZeroMQ drop that connection before it allocates it. */
#define MAXMSGSIZE 26
#define RCVHWM     16
/* libzmq 4.3.4 keeps every subscription a peer sends in a trie (per pipe,
 * in manual mode too) until the peer goes, and queues a notification for
 * each one until we read it. We can neither refuse nor forget one, so a peer
 * that sends more than the protocol's one subscription to "" (a few, from a
 * relay's subscribers, are tolerated) loses its connection: the socket is
 * closed, which frees all of it, and opened again. Viewers reconnect by
 * themselves and get a fresh snapshot. */
#define FOREIGN_MAX 64   /* other messages tolerated over a socket's life */
#define DRAIN_MAX   1024 /* messages read per pass; more means a flood */
/* A peer at NCCLTOP_CONNECT that gets us to reopen is connected again only
 * after a delay that doubles each time (1 s up to 60 s); ZeroMQ's own
 * reconnection, after a dropped connection, waits 1 s. */
#define RECONNECT_IVL_MS      1000
#define RECONNECT_IVL_MAX_MS  30000
#define RECONNECT_BACKOFF_MAX 60000000000ull
#define CALM_NS               60000000000ull /* a socket this old resets the backoff */
/* finalize waits this long for the publisher, then leaves it behind. */
#define STOP_WAIT_NS 1000000000ull

static pthread_t thread;
static _Atomic bool running;
static _Atomic int stop_requested;
static _Atomic uint64_t flush_requested, flush_done;
/* A publisher that did not stop in time is detached and left behind; until
 * it has returned, no other starts (they would share its state). */
static _Atomic bool abandoned, exited;

struct pub {
  void *zctx, *sock;
  struct nt_local local; /* the ipc endpoint (local.c) */
  nt_snapshot *snap;
  uint8_t *buf;
  size_t cap;
  char *json;
  nt_hello *hello;
  uint64_t seq;
  bool subscribed;
  uint32_t foreign;       /* messages other than subscribe/cancel "" since the socket opened */
  uint32_t reopens;       /* consecutive reopens forced by a peer */
  uint64_t opened_ns;     /* when the socket opened */
  uint64_t connect_at_ns; /* when to connect NCCLTOP_CONNECT; 0: done or none */
  bool flood_logged;
  char *topo; /* NCCL_TOPO_DUMP_FILE's content, once NCCL has written it */
  size_t topo_len;
  struct stat topo_st; /* the file as last looked at (dev, ino, size, mtime) */
  bool topo_seen, topo_refused_logged;
};

/* Ticks follow real time even when the simulator's virtual clock stands still. */
static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool send_frames(struct pub *p, const char *topic, const void *data, size_t len) {
  if (zmq_send(p->sock, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_send(p->sock, data, len, ZMQ_DONTWAIT) < 0) {
    atomic_fetch_add(&nt_g.unsent_messages, 1);
    return false;
  }
  return true;
}

/* NCCL is already loaded in this process: ask it its version. */
static void nccl_version(char *buf, size_t cap) {
  buf[0] = '\0';
  void *lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  int (*get)(int *) = (int (*)(int *))dlsym(lib ? lib : RTLD_DEFAULT, "ncclGetVersion");
  int code = 0;
  if (get && get(&code) == 0 && code > 0)
    snprintf(buf, cap, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  if (lib) dlclose(lib);
}

static void build_hello(struct pub *p) {
  nt_hello *h = p->hello;
  memset(h, 0, sizeof *h);
  h->major = NT_PROTO_MAJOR;
  h->minor = NT_PROTO_MINOR;
  if (nt_g.cfg.host[0]) /* NCCLTOP_HOSTNAME, read at the first init */
    snprintf(h->host, sizeof h->host, "%s", nt_g.cfg.host);
  else if (gethostname(h->host, sizeof h->host - 1) != 0)
    strcpy(h->host, "?");
  h->pid = (uint32_t)nt_g.pid;
  nccl_version(h->nccl_version, sizeof h->nccl_version);
  snprintf(h->plugin_version, sizeof h->plugin_version, "%s", NT_PLUGIN_VERSION);
  h->abi_version = (uint8_t)atomic_load(&nt_g.abi);
  h->start_wall_ns = wall_ns();
  /* Copied at the first init: never environ on this thread. */
  h->nenv = nt_g.cfg.nenv;
  memcpy(h->env, nt_g.cfg.env, sizeof h->env[0] * h->nenv);
}

/* NCCL writes the topology dump during communicator init (before ours on
 * the dumping rank; other processes may look before it exists, so look
 * again every META_PERIOD_NS). Nothing here may block: the path may name a
 * FIFO or a device, so the file is opened non-blocking and only a regular
 * file is read, at most 1 MiB. It is read again only when it changed (a
 * half-written dump is replaced once NCCL has finished it; a file that stays
 * as it is, good or bad, costs one stat). A stalled network mount can still
 * block open or stat; finalize does not wait for that (nt_publisher_stop). */
#define TOPO_MAX_BYTES (1u << 20)
#ifndef NT_TEST_TOPO_OPEN_BLOCKS
#define TOPO_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
#else /* tests/test_hostile_plugin.c's stuck publisher: an open that blocks */
#define TOPO_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY)
#endif

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads at most cap bytes; the count, or -1 on an error. */
static ssize_t read_bounded(int fd, char *buf, size_t cap) {
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    n += (size_t)r;
  }
  return (ssize_t)n;
}

static void load_topology(struct pub *p) {
  const char *path = nt_g.cfg.topo_path;
  struct stat st;
  if (!*path || stat(path, &st) != 0) return; /* not written yet */
  if (p->topo_seen && same_file(&st, &p->topo_st)) return;
  int fd = open(path, TOPO_OPEN_FLAGS);
  if (fd < 0) return;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  p->topo_st = st;
  p->topo_seen = true;
  bool regular = S_ISREG(st.st_mode);
  if (!regular || st.st_size > (off_t)TOPO_MAX_BYTES) {
    if (!p->topo_refused_logged)
      nt_log(NT_NCCL_LOG_WARN, "NCCL_TOPO_DUMP_FILE %s is %s; topology not sent", path,
             regular ? "over 1 MiB" : "not a regular file");
    p->topo_refused_logged = true;
    close(fd);
    return;
  }
  char *buf = malloc(TOPO_MAX_BYTES + 1);
  ssize_t n = buf ? read_bounded(fd, buf, TOPO_MAX_BYTES + 1) : -1;
  close(fd);
  if (n <= 0 || n > (ssize_t)TOPO_MAX_BYTES) { /* empty so far, or grew past the limit */
    free(buf);
    return;
  }
  free(p->topo);
  p->topo = buf;
  p->topo_len = (size_t)n;
}

static void send_meta(struct pub *p) {
  load_topology(p);
  if (p->topo) send_frames(p, NT_TOPIC_TOPOLOGY, p->topo, p->topo_len);
  size_t n = nt_hello_encode(p->hello, p->json, NT_MAX_JSON_BYTES);
  if (n) send_frames(p, NT_TOPIC_HELLO, p->json, n);
  for (int i = 0; i < NT_MAX_CONTEXTS; i++) {
    struct nt_context *c = &nt_g.contexts[i];
    if (atomic_load(&c->magic) != NT_CONTEXT_MAGIC) continue;
    pthread_mutex_lock(&nt_g.contexts_lock);
    struct nt_identity id = nt_context_identity(c);
    nt_comm_info info = {.pid = (uint32_t)nt_g.pid,
                         .comm_hash = id.hash,
                         .rank = id.rank,
                         .nranks = c->nranks,
                         .nnodes = c->nnodes};
    snprintf(info.name, sizeof info.name, "%s", id.name);
    pthread_mutex_unlock(&nt_g.contexts_lock);
    n = nt_comm_encode(&info, p->json, NT_MAX_JSON_BYTES);
    if (n) send_frames(p, NT_TOPIC_COMM, p->json, n);
  }
}

static void send_snapshot(struct pub *p, bool final) {
  nt_snapshot *s = p->snap;
  uint64_t now = nt_clock_ns();
  nt_collect(s, now);
  s->major = NT_PROTO_MAJOR;
  s->minor = NT_PROTO_MINOR;
  s->seq = ++p->seq;
  s->pid = (uint32_t)nt_g.pid;
  s->interval_ms = nt_g.cfg.interval_ms;
  s->mono_ns = now;
  s->wall_ns = wall_ns();
  s->final = final;
  snprintf(s->host, sizeof s->host, "%s", p->hello->host);
  size_t n = nt_snapshot_encode(s, p->buf, p->cap);
  if (n)
    send_frames(p, NT_TOPIC_SNAPSHOT, p->buf, n);
  else
    atomic_fetch_add(&nt_g.unsent_messages, 1);
}

static void set_int(void *sock, int opt, int v) {
  if (zmq_setsockopt(sock, opt, &v, sizeof v) != 0)
    nt_log(NT_NCCL_LOG_WARN, "zmq_setsockopt(%d): %s", opt, zmq_strerror(errno));
}

static void set_i64(void *sock, int opt, int64_t v) {
  if (zmq_setsockopt(sock, opt, &v, sizeof v) != 0)
    nt_log(NT_NCCL_LOG_WARN, "zmq_setsockopt(%d): %s", opt, zmq_strerror(errno));
}

static void connect_out(struct pub *p) {
  p->connect_at_ns = 0;
  if (zmq_connect(p->sock, nt_g.cfg.connect) == 0)
    nt_log(NT_NCCL_LOG_INFO, "publishing to %s", nt_g.cfg.connect);
  else
    nt_log(NT_NCCL_LOG_WARN, "cannot connect %s: %s", nt_g.cfg.connect, zmq_strerror(errno));
}

/* Binds the local endpoint; NCCLTOP_CONNECT is connected at once, or at
 * connect_at_ns after a reopen. */
static bool open_socket(struct pub *p) {
  const char *dir = nt_g.cfg.dir;
  p->zctx = zmq_ctx_new();
  if (!p->zctx) return false;
  zmq_ctx_set(p->zctx, ZMQ_IO_THREADS, 1);
  p->sock = zmq_socket(p->zctx, ZMQ_XPUB);
  if (!p->sock) return false;
  p->opened_ns = real_ns();
  p->foreign = 0;
  set_int(p->sock, ZMQ_LINGER, 0);
  set_int(p->sock, ZMQ_SNDHWM, SNDHWM);
  set_int(p->sock, ZMQ_RCVHWM, RCVHWM);
  set_i64(p->sock, ZMQ_MAXMSGSIZE, MAXMSGSIZE);
  set_int(p->sock, ZMQ_RECONNECT_IVL, RECONNECT_IVL_MS);
  set_int(p->sock, ZMQ_RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS);
  set_int(p->sock, ZMQ_XPUB_VERBOSE, 1); /* every new viewer's subscription reaches us */
  bool bound = false;
  if (!*dir)
    nt_log(NT_NCCL_LOG_WARN, "endpoint directory name too long; not publishing locally");
  else
    bound = nt_local_bind(&p->local, p->sock, dir, p->reopens != 0);
  if (nt_g.cfg.connect[0]) {
    bound = true;
    if (!p->reopens) connect_out(p);
  }
  return bound;
}

static void close_socket(struct pub *p) {
  /* Give the final snapshot a moment to leave; bounded, and only at the
   * last finalize, never on the event path. */
  if (p->sock) set_int(p->sock, ZMQ_LINGER, p->subscribed ? 100 : 0);
  if (p->sock) zmq_close(p->sock);
  /* Returns once ZeroMQ's threads are done with the socket (the ipc
   * listener removes its file then): a reopen binds only after that. */
  if (p->zctx) zmq_ctx_term(p->zctx);
  nt_local_close(&p->local); /* only now: ZeroMQ is done with its file */
  p->sock = p->zctx = NULL;
}

/* A peer sent what no viewer sends: drop every connection by reopening the
 * socket (see FOREIGN_MAX). Returns false if the socket could not reopen. */
static bool reopen(struct pub *p) {
  uint64_t now = real_ns();
  if (now - p->opened_ns >= CALM_NS) p->reopens = 0;
  p->reopens++;
  if (!p->flood_logged)
    nt_log(NT_NCCL_LOG_WARN,
           "a peer sent %u messages that are not a viewer's subscription; dropping every "
           "connection (viewers reconnect)",
           p->foreign);
  p->flood_logged = true;
  p->subscribed = false;
  close_socket(p);
  bool ok = open_socket(p);
  if (ok && nt_g.cfg.connect[0]) {
    uint32_t shift = p->reopens - 1 < 6 ? p->reopens - 1 : 6;
    uint64_t delay = 1000000000ull << shift;
    p->connect_at_ns = now + (delay < RECONNECT_BACKOFF_MAX ? delay : RECONNECT_BACKOFF_MAX);
  }
  return ok;
}

/* Inbound messages: with XPUB_VERBOSE a viewer's subscription to "" arrives
 * as the byte 1 (one per viewer), and the byte 0 when the last viewer has
 * left. Anything else is foreign. Reads at most DRAIN_MAX messages: a queue
 * longer than that is a flood, and so is more than FOREIGN_MAX foreign
 * messages; both reopen the socket, which discards whatever ZeroMQ still
 * holds. Returns true when a new viewer wants a snapshot; *flood when the
 * socket must be reopened. */
static bool drain_subscriptions(struct pub *p, bool *flood) {
  bool fresh = false;
  uint8_t msg[MAXMSGSIZE + 1];
  int i = 0;
  for (; i < DRAIN_MAX; i++) {
    int n = zmq_recv(p->sock, msg, sizeof msg, ZMQ_DONTWAIT);
    if (n < 0) break;
    if (n == 1 && msg[0] == 1) {
      p->subscribed = true;
      fresh = true;
    } else if (n == 1 && msg[0] == 0) {
      p->subscribed = false;
    } else if (++p->foreign > FOREIGN_MAX) {
      break;
    }
  }
  *flood = i == DRAIN_MAX || p->foreign > FOREIGN_MAX;
  return fresh;
}

static void run(struct pub *p) {
  uint64_t interval = (uint64_t)nt_g.cfg.interval_ms * 1000000ull;
  uint64_t next_tick = real_ns(), next_meta = 0;
  while (!atomic_load(&stop_requested)) {
    uint64_t now = real_ns();
    uint64_t wait_ms = next_tick > now ? (next_tick - now + 999999) / 1000000ull : 0;
    zmq_pollitem_t item = {.socket = p->sock, .events = ZMQ_POLLIN};
    int rc = zmq_poll(&item, 1, (long)(wait_ms < POLL_CAP_MS ? wait_ms : POLL_CAP_MS));
    if (rc < 0 && errno != EINTR) break;
    bool flood = false;
    bool fresh = rc > 0 && drain_subscriptions(p, &flood);
    if (flood) {
      if (!reopen(p)) break;
      fresh = false; /* the viewers among the peers subscribe again */
    }
    uint64_t flush = atomic_load(&flush_requested);
    now = real_ns();
    nt_local_check(&p->local, p->sock, now);
    if (p->connect_at_ns && now >= p->connect_at_ns) connect_out(p);
    bool due = now >= next_tick;
    bool flushing = flush != atomic_load(&flush_done);
    if (!due && !fresh && !flushing) continue;
    /* Finished operations are retired whether or not anyone watches, so a
     * viewer that joins late sees every total. */
    if (due || flushing) nt_retire_sweep(nt_clock_ns(), flushing ? NT_SWEEP_FLUSH : NT_SWEEP_TICK);
    if (p->subscribed) {
      if (fresh || now >= next_meta) {
        send_meta(p);
        next_meta = now + META_PERIOD_NS;
      }
      send_snapshot(p, false);
    }
    if (due) next_tick = now + interval;
    atomic_store(&flush_done, flush);
  }
  nt_retire_sweep(nt_clock_ns(), NT_SWEEP_FINAL);
  if (p->subscribed) send_snapshot(p, true);
}

static void *publisher_main(void *arg) {
  (void)arg;
  struct pub p = {.local.dirfd = -1};
  (void)pthread_setname_np(pthread_self(), "nccltop-pub");
  p.snap = nt_snapshot_new();
  p.hello = calloc(1, sizeof *p.hello);
  p.json = malloc(NT_MAX_JSON_BYTES);
  if (p.snap && p.hello && p.json) {
    p.snap->ncomms = NT_MAX_COMMS;
    p.snap->nproxy = NT_MAX_PROXY_THREADS;
    p.snap->nchannels = NT_MAX_CHANNEL_ROWS;
    p.snap->nkernels = NT_MAX_KERNEL_ROWS;
    p.snap->nops = NT_MAX_OP_ROWS;
    p.snap->nphases = NT_MAX_PHASES;
    p.snap->noplog = NT_MAX_OPLOG;
    p.snap->nseq = NT_MAX_SEQ_ROWS;
    p.snap->nnet = NT_MAX_NET_ROWS;
    p.snap->nvariants = NT_MAX_VARIANTS;
    p.cap = nt_snapshot_encoded_max(p.snap);
    p.buf = malloc(p.cap);
  }
  if (nt_retire_init() != 0)
    nt_log(NT_NCCL_LOG_WARN, "out of memory for operation statistics; operations not retired");
  if (p.buf && open_socket(&p)) {
    build_hello(&p);
    run(&p);
  } else if (!p.buf) {
    nt_log(NT_NCCL_LOG_WARN, "out of memory for the publisher; not publishing");
  }
  close_socket(&p);
  free(p.buf);
  free(p.topo);
  free(p.json);
  free(p.hello);
  nt_snapshot_free(p.snap);
  nt_retire_free();
  /* Let a waiting nccltop_flush return even if we never published. */
  atomic_store(&flush_done, atomic_load(&flush_requested));
  atomic_store(&exited, true); /* last: a new publisher may start from here on */
  return NULL;
}

int nt_publisher_start(void) {
  if (running) return 0;
  if (atomic_load(&abandoned)) {
    /* The plugin stays mapped (-z nodelete), so a publisher left behind by
     * an earlier finalize may still be running here, on our statics. */
    if (!atomic_load(&exited)) {
      nt_log(NT_NCCL_LOG_WARN, "the previous publisher is still blocked; not publishing");
      return -1;
    }
    atomic_store(&abandoned, false);
  }
  atomic_store(&exited, false);
  atomic_store(&stop_requested, 0);
  /* The publisher must not take the application's signals. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&thread, NULL, publisher_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  running = rc == 0;
  return rc == 0 ? 0 : -1;
}

/* finalize (and exit) never wait longer than STOP_WAIT_NS: a publisher
 * blocked outside our control (open on a stalled network mount) is detached
 * and left behind, the job goes on. */
void nt_publisher_stop(void) {
  if (!running) return;
  atomic_store(&stop_requested, 1);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  uint64_t ns = (uint64_t)deadline.tv_nsec + STOP_WAIT_NS;
  deadline.tv_sec += (time_t)(ns / 1000000000ull);
  deadline.tv_nsec = (long)(ns % 1000000000ull);
  int rc;
  while ((rc = pthread_timedjoin_np(thread, NULL, &deadline)) == EINTR) {
  }
  if (rc != 0) {
    atomic_store(&abandoned, true);
    (void)pthread_detach(thread);
    nt_log(NT_NCCL_LOG_WARN,
           "publisher did not stop within %llu ms (blocked in a system call?); left behind",
           (unsigned long long)(STOP_WAIT_NS / 1000000ull));
  }
  running = false;
}

bool nt_publisher_abandoned(void) {
  return atomic_load(&abandoned) && !atomic_load(&exited);
}

void nt_publisher_flush(void) {
  if (!running || atomic_load(&nt_g.inert)) return;
  uint64_t want = atomic_fetch_add(&flush_requested, 1) + 1;
  for (int i = 0; i < 200 && atomic_load(&flush_done) < want; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
}

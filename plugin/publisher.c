/* The publisher thread: owns the ZeroMQ context and the XPUB sockets (an
 * outlet per reader, outlet.c), reads the aggregates every
 * NCCLTOP_INTERVAL_MS and sends a snapshot when someone is subscribed. With
 * nobody subscribed it encodes nothing.
 *
 * The sockets only ever connect (to the viewers in the endpoint directory,
 * local.c, and to NCCLTOP_CONNECT): nothing can connect to the job. ZeroMQ
 * starts only when the process has room for it (limits.c); until then, and
 * whenever it fails, operations are still retired and the start is tried
 * again, so the job keeps its totals and monitoring comes back by itself.
 *
 * A viewer's subscription arrives as a message on its outlet; we answer it
 * at once with a full snapshot, hello and communicators, so a viewer that
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
/* A reader at NCCLTOP_CONNECT that floods us (outlet.c) is connected again
 * only after a delay that doubles each time (1 s up to 60 s). */
#define RECONNECT_BACKOFF_MAX 60000000000ull
#define CALM_NS               60000000000ull /* a socket this old resets the backoff */
/* finalize waits this long for the publisher, then leaves it behind. */
#define STOP_WAIT_NS 1000000000ull
/* Every outlet: the viewers' and NCCLTOP_CONNECT's. */
#define MAX_OUTLETS (NT_MAX_VIEWERS + 1)

static pthread_t thread;
static _Atomic bool running;
static _Atomic int stop_requested;
static _Atomic uint64_t flush_requested, flush_done;
/* A publisher that did not stop in time is detached and left behind; until
 * it has returned, no other starts (they would share its state). */
static _Atomic bool abandoned, exited;

struct pub {
  void *zctx;
  struct nt_local local;   /* the viewers we connect to, an outlet each (local.c) */
  struct nt_outlet remote; /* NCCLTOP_CONNECT's */
  nt_snapshot *snap;
  uint8_t *buf;
  size_t cap;
  char *json;
  nt_hello *hello;
  uint64_t seq;
  uint32_t reopens;       /* consecutive reopens of the remote outlet forced by its peer */
  uint64_t connect_at_ns; /* when to connect NCCLTOP_CONNECT again; 0: done or none */
  bool flood_logged;
  bool room_noted;        /* why ZeroMQ did not start was said; quiet until it starts */
  bool final_sent;        /* give it a moment to leave */
  uint64_t next_start_ns; /* ZeroMQ is not tried again before */
  /* NCCL_TOPO_DUMP_FILE's and NCCL_GRAPH_DUMP_FILE's content, once NCCL
   * has written them (dump_file.c). */
  struct nt_dump_file topo, graphs;
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
  snprintf(h->clock, sizeof h->clock, "%s", nt_clock_name());
  h->abi_version = (uint8_t)atomic_load(&nt_g.abi);
  h->start_wall_ns = wall_ns();
  /* Copied at the first init: never environ on this thread. */
  h->nenv = nt_g.cfg.nenv;
  memcpy(h->env, nt_g.cfg.env, sizeof h->env[0] * h->nenv);
}

/* Hello, communicators, the topology and NCCL's graphs, to one outlet. */
static void send_meta(struct pub *p, struct nt_outlet *o) {
  if (p->topo.buf) nt_outlet_send(o, NT_TOPIC_TOPOLOGY, p->topo.buf, p->topo.len);
  if (p->graphs.buf) nt_outlet_send(o, NT_TOPIC_GRAPHS, p->graphs.buf, p->graphs.len);
  size_t n = nt_hello_encode(p->hello, p->json, NT_MAX_JSON_BYTES);
  if (n) nt_outlet_send(o, NT_TOPIC_HELLO, p->json, n);
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
    if (n) nt_outlet_send(o, NT_TOPIC_COMM, p->json, n);
  }
}

/* Encodes the snapshot once (into p->buf); its size, 0 if it failed. */
static size_t encode_snapshot(struct pub *p, bool final) {
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
  if (!n) atomic_fetch_add(&nt_g.unsent_messages, 1);
  return n;
}

/* Every open outlet, the remote one first. */
static int outlets(struct pub *p, struct nt_outlet **out) {
  int n = 0;
  if (p->remote.sock) out[n++] = &p->remote;
  for (uint32_t i = 0; i < p->local.nviewers; i++)
    if (p->local.viewers[i].out.sock) out[n++] = &p->local.viewers[i].out;
  return n;
}

/* NCCLTOP_CONNECT's outlet, opened and connected now. */
static void open_remote(struct pub *p, uint64_t now) {
  p->connect_at_ns = 0;
  if (!nt_outlet_open(&p->remote, p->zctx, now)) {
    nt_log(NT_NCCL_LOG_WARN, "cannot create a ZeroMQ socket for %s: %s", nt_g.cfg.connect,
           zmq_strerror(errno));
    return;
  }
  if (zmq_connect(p->remote.sock, nt_g.cfg.connect) == 0) {
    if (!p->reopens) nt_log(NT_NCCL_LOG_INFO, "publishing to %s", nt_g.cfg.connect);
  } else {
    nt_log(NT_NCCL_LOG_WARN, "cannot connect %s: %s", nt_g.cfg.connect, zmq_strerror(errno));
    nt_outlet_close(&p->remote, 0);
  }
}

/* The reader at NCCLTOP_CONNECT flooded us: its outlet is closed and
 * connected again after a delay that doubles (ZeroMQ alone would reconnect
 * after a second, and the reader would flood again). */
static void remote_flooded(struct pub *p, uint64_t now) {
  if (now - p->remote.opened_ns >= CALM_NS) p->reopens = 0;
  p->reopens++;
  if (!p->flood_logged)
    nt_log(NT_NCCL_LOG_WARN,
           "%s sent %u messages that are not a viewer's subscription: disconnected, and "
           "connected again after a delay that doubles each time it does it again",
           nt_g.cfg.connect, p->remote.foreign);
  p->flood_logged = true;
  nt_outlet_close(&p->remote, 0);
  uint32_t shift = p->reopens - 1 < 6 ? p->reopens - 1 : 6;
  uint64_t delay = 1000000000ull << shift;
  p->connect_at_ns = now + (delay < RECONNECT_BACKOFF_MAX ? delay : RECONNECT_BACKOFF_MAX);
}

/* What a context takes when it starts (libzmq 4.3, one I/O thread): an
 * eventfd for zmq_ctx_new, an eventfd and an epoll each for the reaper and
 * the I/O thread, an eventfd for the first socket; two threads. Each outlet
 * then takes an eventfd and its connection. */
#define CONTEXT_FDS     6
#define CONTEXT_THREADS 2
#define START_RETRY_NS  2000000000ull

/* Starts ZeroMQ when the process has room for it and for itself after
 * it (limits.c says why we must look first); says once why not. */
static bool start_zmq(struct pub *p, uint64_t now) {
  unsigned fds_want = CONTEXT_FDS + NT_FD_HEADROOM,
           threads_want = CONTEXT_THREADS + NT_THREAD_HEADROOM;
  unsigned fds = nt_fds_free_up_to(fds_want);
  unsigned threads = fds < fds_want ? 0 : nt_threads_free_up_to(threads_want);
  if (fds < fds_want || threads < threads_want) {
    bool f = fds < fds_want;
    if (!p->room_noted)
      nt_log(NT_NCCL_LOG_WARN,
             "only %u %s free: not publishing, so the job keeps them (ZeroMQ needs %u and we "
             "leave the job %u); tried again every %llu s",
             f ? fds : threads, f ? "file descriptors" : "threads",
             f ? CONTEXT_FDS : CONTEXT_THREADS, f ? NT_FD_HEADROOM : NT_THREAD_HEADROOM,
             (unsigned long long)(START_RETRY_NS / 1000000000ull));
    p->room_noted = true;
    return false;
  }
  p->zctx = zmq_ctx_new();
  if (!p->zctx) {
    if (!p->room_noted)
      nt_log(NT_NCCL_LOG_WARN,
             "cannot create a ZeroMQ context: %s; not publishing (tried again every %llu s)",
             zmq_strerror(errno), (unsigned long long)(START_RETRY_NS / 1000000000ull));
    p->room_noted = true;
    return false;
  }
  (void)zmq_ctx_set(p->zctx, ZMQ_IO_THREADS, 1);
  (void)zmq_ctx_set(p->zctx, ZMQ_MAX_SOCKETS, MAX_OUTLETS + 4);
  /* The context starts its threads and pollers with its first socket: now,
   * while we know there is room, never later at a viewer's arrival. After
   * that a socket takes only an eventfd, whose failure ZeroMQ reports. */
  void *first = zmq_socket(p->zctx, ZMQ_XPUB);
  if (!first) {
    if (!p->room_noted)
      nt_log(NT_NCCL_LOG_WARN, "ZeroMQ cannot start: %s; not publishing (tried again every %llu s)",
             zmq_strerror(errno), (unsigned long long)(START_RETRY_NS / 1000000000ull));
    p->room_noted = true;
    zmq_ctx_term(p->zctx);
    p->zctx = NULL;
    return false;
  }
  zmq_close(first);
  if (nt_g.cfg.connect[0]) open_remote(p, now);
  if (p->room_noted) nt_log(NT_NCCL_LOG_INFO, "publishing now");
  p->room_noted = false;
  return true;
}

/* Returns once ZeroMQ's threads are done (the lingers bound it). */
static void stop_zmq_only(struct pub *p, int linger_ms) {
  nt_outlet_close(&p->remote, linger_ms);
  nt_local_close_sockets(&p->local, linger_ms);
  if (p->zctx) zmq_ctx_term(p->zctx);
  p->zctx = NULL;
}

static void stop_zmq(struct pub *p, int linger_ms) {
  stop_zmq_only(p, linger_ms);
  /* Only now: ZeroMQ's reconnects went through the directory's descriptor. */
  nt_local_close(&p->local);
}

/* Waits for what comes in on the outlets (subscriptions), or the time. */
static int wait_for(struct nt_outlet **o, int n, uint64_t wait_ms, zmq_pollitem_t *items) {
  long ms = (long)(wait_ms < POLL_CAP_MS ? wait_ms : POLL_CAP_MS);
  if (n) {
    for (int i = 0; i < n; i++)
      items[i] = (zmq_pollitem_t){.socket = o[i]->sock, .events = ZMQ_POLLIN};
    return zmq_poll(items, n, ms);
  }
  struct timespec ts = {0, ms * 1000000l};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return 0;
}

/* Reads every outlet that has something; closes those whose reader floods
 * us (the local ones from the last, as closing one moves the last into its
 * place). */
static void drain(struct pub *p, struct nt_outlet **o, int n, const zmq_pollitem_t *items,
                  uint64_t now) {
  bool flooded[MAX_OUTLETS] = {false};
  for (int i = 0; i < n; i++)
    if ((items[i].revents & ZMQ_POLLIN) && !nt_outlet_drain(o[i])) flooded[i] = true;
  if (p->remote.sock && flooded[0] && o[0] == &p->remote) remote_flooded(p, now);
  for (uint32_t i = p->local.nviewers; i-- > 0;)
    for (int k = 0; k < n; k++)
      if (flooded[k] && o[k] == &p->local.viewers[i].out) nt_local_flooded(&p->local, i, now);
}

/* The context, started now if it is not (at most every START_RETRY_NS):
 * ZeroMQ starts when there is someone to publish to, not before. */
static void *context_of(void *arg) {
  struct pub *p = arg;
  uint64_t now = real_ns();
  if (!p->zctx && now >= p->next_start_ns && !start_zmq(p, now))
    p->next_start_ns = now + START_RETRY_NS;
  return p->zctx;
}

static void run(struct pub *p) {
  uint64_t interval = (uint64_t)nt_g.cfg.interval_ms * 1000000ull;
  uint64_t next_tick = real_ns(), next_meta = 0;
  struct nt_outlet *o[MAX_OUTLETS];
  zmq_pollitem_t items[MAX_OUTLETS];
  while (!atomic_load(&stop_requested)) {
    uint64_t now = real_ns();
    if (nt_g.cfg.connect[0]) (void)context_of(p);
    uint64_t wait_ms = next_tick > now ? (next_tick - now + 999999) / 1000000ull : 0;
    int n = outlets(p, o);
    int rc = wait_for(o, n, wait_ms, items);
    now = real_ns();
    nt_clock_tick(now, false); /* the event path's calibration, when due */
    /* ZeroMQ failed us: start it afresh later, keep retiring meanwhile. */
    if (rc < 0 && errno != EINTR) {
      if (!p->room_noted)
        nt_log(NT_NCCL_LOG_WARN, "zmq_poll: %s; publishing stops until ZeroMQ starts again",
               zmq_strerror(errno));
      p->room_noted = true;
      stop_zmq_only(p, 0);
      p->next_start_ns = now + START_RETRY_NS;
    } else if (rc > 0) {
      drain(p, o, n, items, now);
    }
    uint64_t flush = atomic_load(&flush_requested);
    /* Pools first used since the last wake; after the flush request, so
     * that a pool asked for before an nccltop_flush is populated when it
     * returns. */
    nt_prefault_pass();
    nt_local_scan(&p->local, context_of, p, now);
    if (p->zctx && p->connect_at_ns && now >= p->connect_at_ns) open_remote(p, now);
    bool due = now >= next_tick;
    bool flushing = flush != atomic_load(&flush_done);
    n = outlets(p, o);
    bool fresh = false, subscribed = false;
    for (int i = 0; i < n; i++) {
      fresh |= o[i]->fresh;
      subscribed |= o[i]->subscribed;
    }
    if (!due && !fresh && !flushing) continue;
    /* Finished operations are retired whether or not anyone watches (or
     * we can publish at all), so a viewer that joins late sees every total. */
    if (due || flushing) nt_retire_sweep(nt_clock_ns(), flushing ? NT_SWEEP_FLUSH : NT_SWEEP_TICK);
    if (subscribed) {
      bool meta = now >= next_meta;
      if (meta || fresh) {
        nt_dump_file_load(&p->topo);
        nt_dump_file_load(&p->graphs);
      }
      if (meta) next_meta = now + META_PERIOD_NS;
      /* One snapshot for all: a reader that joined gets it at once, the
       * others too, so nobody sees a gap in the sequence numbers. */
      size_t len = encode_snapshot(p, false);
      for (int i = 0; i < n; i++) {
        if (!o[i]->subscribed) continue;
        if (meta || o[i]->fresh) send_meta(p, o[i]);
        if (len) nt_outlet_send(o[i], NT_TOPIC_SNAPSHOT, p->buf, len);
        o[i]->fresh = false;
      }
    }
    if (due) next_tick = now + interval;
    atomic_store(&flush_done, flush);
  }
  nt_retire_sweep(nt_clock_ns(), NT_SWEEP_FINAL);
  int n = outlets(p, o);
  bool subscribed = false;
  for (int i = 0; i < n; i++) subscribed |= o[i]->subscribed;
  size_t len = subscribed ? encode_snapshot(p, true) : 0;
  for (int i = 0; len && i < n; i++)
    if (o[i]->subscribed) nt_outlet_send(o[i], NT_TOPIC_SNAPSHOT, p->buf, len);
  p->final_sent = len != 0;
}

static void *publisher_main(void *arg) {
  (void)arg;
  struct pub p = {.local.dirfd = -1};
  p.topo = (struct nt_dump_file){
      .var = "NCCL_TOPO_DUMP_FILE", .what = "topology", .path = nt_g.cfg.topo_path};
  p.graphs = (struct nt_dump_file){
      .var = "NCCL_GRAPH_DUMP_FILE", .what = "graphs", .path = nt_g.cfg.graph_path};
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
  if (p.buf) {
    if (!nt_g.cfg.dir[0])
      nt_log(NT_NCCL_LOG_WARN, "endpoint directory name too long; not publishing locally");
    else
      (void)nt_local_open(&p.local, nt_g.cfg.dir);
    build_hello(&p);
    run(&p);
  } else {
    nt_log(NT_NCCL_LOG_WARN, "out of memory for the publisher; not publishing");
  }
  /* Give the final snapshot a moment to leave; bounded, and only at the
   * last finalize, never on the event path. */
  stop_zmq(&p, p.final_sent ? 100 : 0);
  free(p.buf);
  nt_dump_file_free(&p.topo);
  nt_dump_file_free(&p.graphs);
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

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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "internal.h"
#include "nccltop_plugin.h"

#define META_PERIOD_NS 2000000000ull
#define POLL_CAP_MS    50
#define SNDHWM         64

extern char **environ;

static pthread_t thread;
static _Atomic bool running;
static _Atomic int stop_requested;
static _Atomic uint64_t flush_requested, flush_done;

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
  char *topo; /* NCCL_TOPO_DUMP_FILE's content, once NCCL has written it */
  size_t topo_len;
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
  if (gethostname(h->host, sizeof h->host - 1) != 0) strcpy(h->host, "?");
  h->pid = (uint32_t)nt_g.pid;
  nccl_version(h->nccl_version, sizeof h->nccl_version);
  snprintf(h->plugin_version, sizeof h->plugin_version, "%s", NT_PLUGIN_VERSION);
  h->abi_version = (uint8_t)atomic_load(&nt_g.abi);
  h->start_wall_ns = wall_ns();
  for (char **e = environ; e && *e && h->nenv < NT_MAX_ENV; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "NCCL", 4) != 0 || !eq) continue; /* NCCL_* and NCCLTOP_* */
    size_t n = (size_t)(eq - *e);
    if (n > NT_MAX_ENV_NAME) continue;
    nt_env_var *v = &h->env[h->nenv++];
    memcpy(v->name, *e, n);
    v->name[n] = '\0';
    snprintf(v->value, sizeof v->value, "%s", eq + 1);
  }
}

/* NCCL writes the topology dump during communicator init (before ours on
 * the dumping rank; other processes may look before it exists, so retry). */
#define TOPO_MAX_BYTES (1u << 20)
static void load_topology(struct pub *p) {
  const char *path = getenv("NCCL_TOPO_DUMP_FILE");
  if (p->topo || !path || !*path) return;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  char *buf = malloc(TOPO_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, TOPO_MAX_BYTES + 1, f) : 0;
  fclose(f);
  if (!buf || n == 0 || n > TOPO_MAX_BYTES) {
    if (n > TOPO_MAX_BYTES) nt_log(NT_NCCL_LOG_WARN, "%s is over 1 MiB; not sent", path);
    free(buf);
    return;
  }
  p->topo = buf;
  p->topo_len = n;
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
    nt_comm_info info = {.pid = (uint32_t)nt_g.pid,
                         .comm_hash = c->comm_hash,
                         .rank = c->rank,
                         .nranks = c->nranks,
                         .nnodes = c->nnodes};
    snprintf(info.name, sizeof info.name, "%s", c->name);
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

static bool open_socket(struct pub *p) {
  char dir[200];
  p->zctx = zmq_ctx_new();
  if (!p->zctx) return false;
  zmq_ctx_set(p->zctx, ZMQ_IO_THREADS, 1);
  p->sock = zmq_socket(p->zctx, ZMQ_XPUB);
  if (!p->sock) return false;
  set_int(p->sock, ZMQ_LINGER, 0);
  set_int(p->sock, ZMQ_SNDHWM, SNDHWM);
  set_int(p->sock, ZMQ_XPUB_VERBOSE, 1); /* every new viewer's subscription reaches us */
  bool bound = false;
  if (nt_endpoint_dir(dir, sizeof dir) != 0)
    nt_log(NT_NCCL_LOG_WARN, "endpoint directory name too long; not publishing locally");
  else
    bound = nt_local_bind(&p->local, p->sock, dir);
  if (nt_g.cfg.connect[0]) {
    if (zmq_connect(p->sock, nt_g.cfg.connect) == 0) {
      bound = true;
      nt_log(NT_NCCL_LOG_INFO, "publishing to %s", nt_g.cfg.connect);
    } else {
      nt_log(NT_NCCL_LOG_WARN, "cannot connect %s: %s", nt_g.cfg.connect, zmq_strerror(errno));
    }
  }
  return bound;
}

static void close_socket(struct pub *p) {
  /* Give the final snapshot a moment to leave; bounded, and only at the
   * last finalize, never on the event path. */
  if (p->sock) set_int(p->sock, ZMQ_LINGER, p->subscribed ? 100 : 0);
  if (p->sock) zmq_close(p->sock);
  if (p->zctx) zmq_ctx_term(p->zctx);
  nt_local_close(&p->local); /* only now: ZeroMQ removed its file through it */
}

/* Subscriptions: byte 1 = subscribe (one per viewer, XPUB_VERBOSE), byte 0 =
 * the last viewer left. Returns true when a new viewer wants a snapshot. */
static bool drain_subscriptions(struct pub *p) {
  bool fresh = false;
  uint8_t msg[256];
  for (int i = 0; i < 1000; i++) {
    int n = zmq_recv(p->sock, msg, sizeof msg, ZMQ_DONTWAIT);
    if (n < 1) break;
    if (msg[0] == 1) {
      p->subscribed = true;
      fresh = true;
    } else if (msg[0] == 0) {
      p->subscribed = false;
    }
  }
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
    bool fresh = rc > 0 && drain_subscriptions(p);
    uint64_t flush = atomic_load(&flush_requested);
    now = real_ns();
    nt_local_check(&p->local, p->sock, now);
    bool due = now >= next_tick;
    bool flushing = flush != atomic_load(&flush_done);
    if (!due && !fresh && !flushing) continue;
    /* Finished operations are retired whether or not anyone watches, so a
     * viewer that joins late sees every total. */
    if (due || flushing) nt_retire_sweep(nt_clock_ns(), flushing);
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
  nt_retire_sweep(nt_clock_ns(), true);
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
  return NULL;
}

int nt_publisher_start(void) {
  if (running) return 0;
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

void nt_publisher_stop(void) {
  if (!running) return;
  atomic_store(&stop_requested, 1);
  pthread_join(thread, NULL);
  running = false;
}

void nt_publisher_flush(void) {
  if (!running || atomic_load(&nt_g.inert)) return;
  uint64_t want = atomic_fetch_add(&flush_requested, 1) + 1;
  for (int i = 0; i < 200 && atomic_load(&flush_done) < want; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
}

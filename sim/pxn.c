/* See pxn.h and scenario.h. One ring per (originating rank, communicator)
 * in memory shared by the job's processes: the originating application
 * thread writes an entry per operation (its pid, profilerContext and the
 * Coll/P2p handle, pointers into its own address space, as NCCL's
 * ncclProxyOp carries them), a thread of the pair's process reads them and
 * queues them to its proxy thread like any posted work. */
#include "pxn.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PXN_RING    16
#define PXN_POLL_NS 100000ull

typedef struct {
  uint64_t seq, step_size, bytes;
  void *ctx, *parent;
  pid_t pid;
  int mask, steps;
  bool p2p;
} pxn_entry;

typedef struct {
  _Atomic uint64_t published, consumed;
  _Atomic int finished; /* the originating thread posts no more */
  _Atomic pid_t pid;    /* the originating process, once it runs */
  _Atomic pid_t exec;   /* the pair's process, once it runs */
  pxn_entry ring[PXN_RING];
} pxn_ring;

static pxn_ring *pxn_sh; /* [rank * SIM_MAX_COMMS + comm] */
static size_t pxn_len;

int sim_pxn_setup(const nt_sim_config *c) {
  if (!c->pxn) return 0;
  pxn_len = (size_t)c->ranks * SIM_MAX_COMMS * sizeof(pxn_ring);
  void *m = mmap(NULL, pxn_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    fprintf(stderr, "nccltop sim: cannot map the PXN rings: %s\n", strerror(errno));
    return -1;
  }
  pxn_sh = m; /* anonymous memory is zero: every ring empty */
  return 0;
}

void sim_pxn_teardown(void) {
  if (pxn_sh) munmap(pxn_sh, pxn_len);
  pxn_sh = NULL;
}

static pxn_ring *ring_of(int rank, int comm) {
  return &pxn_sh[(size_t)rank * SIM_MAX_COMMS + (size_t)comm];
}

void sim_pxn_post(sim_comm *c, sim_work *w) {
  const nt_sim_config *cfg = c->r->cfg;
  /* CollNet ops go to the CollNet transport, not through a NIC proxy. */
  if (!pxn_sh || !sim_pxn_proxied(cfg, c->r->rank) || w->scn.collnet || w->scn.ce) return;
  w->scn.skip |= SIM_SCN_SKIP_SEND;
  pxn_ring *r = ring_of(c->r->rank, c->index);
  uint64_t pub = atomic_load_explicit(&r->published, memory_order_relaxed);
  /* A full ring waits for the pair (NCCL's op pool is bounded too). */
  while (pub - atomic_load_explicit(&r->consumed, memory_order_acquire) >= PXN_RING) {
    if (sim_stopping()) return; /* the job ends: these sends never run */
    sim_sleep_ns(PXN_POLL_NS);
  }
  pxn_entry *e = &r->ring[pub % PXN_RING];
  e->seq = w->seq;
  e->step_size = w->step_size;
  e->bytes = w->bytes;
  e->ctx = c->px.ctx;
  e->parent = w->coll; /* the Coll, or the Send P2p */
  e->pid = getpid();
  e->mask = w->mask;
  e->steps = w->steps;
  e->p2p = w->p2p;
  atomic_store_explicit(&r->published, pub + 1, memory_order_release);
}

/* The work item the pair's proxy runs for entry e of `origin`. */
static void foreign_work(const pxn_entry *e, int origin, sim_work *w) {
  memset(w, 0, sizeof *w);
  w->coll = e->parent;
  w->p2p = e->p2p;
  w->seq = e->seq;
  w->mask = e->mask;
  w->steps = e->steps;
  w->step_size = e->step_size;
  w->bytes = e->bytes;
  w->scn.skip = SIM_SCN_SKIP_RECV;
  w->scn.origin_rank = origin;
  w->scn.origin_pid = e->pid;
  w->scn.origin_ctx = e->ctx;
}

static bool gone(_Atomic pid_t *who) {
  pid_t pid = atomic_load_explicit(who, memory_order_acquire);
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* Whether this rank has enqueued operation `seq` itself (or issues no
 * more). A proxy only holds work its own rank has launched: the pair's
 * sends of a later operation would fill its bounded queue, and as no rank
 * progresses an operation before every rank launched it (sim_all_launched),
 * this rank's application could then never launch it. */
static bool launched_here(const sim_comm *c, uint64_t seq) {
  int r = c->r->rank, k = c->index;
  return !sim_sh || atomic_load_explicit(&sim_sh->launched[r][k], memory_order_acquire) > seq ||
         atomic_load_explicit(&sim_sh->finished[r][k], memory_order_acquire);
}

/* Feeds the pair's sends into this communicator's queue until the pair
 * has posted its last one (or the job stops). */
static void *pump_main(void *arg) {
  sim_comm *c = arg;
  int origin = c->r->rank + 1;
  pxn_ring *r = ring_of(origin, c->index);
  for (;;) {
    uint64_t con = atomic_load_explicit(&r->consumed, memory_order_relaxed);
    if (atomic_load_explicit(&r->published, memory_order_acquire) > con &&
        launched_here(c, r->ring[con % PXN_RING].seq)) {
      sim_work w;
      foreign_work(&r->ring[con % PXN_RING], origin, &w);
      atomic_store_explicit(&r->consumed, con + 1, memory_order_release);
      sim_queue_push(c, &w);
      continue;
    }
    bool done = atomic_load_explicit(&r->finished, memory_order_acquire);
    bool empty = atomic_load_explicit(&r->published, memory_order_acquire) == con;
    /* what a dead originator published is still taken: only its values */
    if (sim_stopping() || (empty && (done || gone(&r->pid)))) break;
    sim_sleep_ns(PXN_POLL_NS);
  }
  return NULL;
}

static pthread_t pumps[SIM_MAX_COMMS];
static bool pump_started[SIM_MAX_COMMS];

int sim_pxn_app_begin(sim_comm *c) {
  const nt_sim_config *cfg = c->r->cfg;
  if (!pxn_sh) return 0;
  if (sim_pxn_proxied(cfg, c->r->rank))
    atomic_store_explicit(&ring_of(c->r->rank, c->index)->pid, getpid(), memory_order_release);
  if (!sim_pxn_executor(cfg, c->r->rank)) return 0;
  atomic_store_explicit(&ring_of(c->r->rank + 1, c->index)->exec, getpid(), memory_order_release);
  if (pthread_create(&pumps[c->index], NULL, pump_main, c) != 0) {
    fprintf(stderr, "nccltop sim: rank %d: cannot start the PXN thread\n", c->r->rank);
    /* Its pair would wait for it forever: stop the rank cleanly instead. */
    if (kill(getpid(), SIGTERM) != 0) perror("nccltop sim: kill");
    return -1;
  }
  pump_started[c->index] = true;
  return 0;
}

void sim_pxn_app_end(sim_comm *c) {
  if (!pxn_sh) return;
  if (sim_pxn_proxied(c->r->cfg, c->r->rank)) {
    pxn_ring *r = ring_of(c->r->rank, c->index);
    atomic_store_explicit(&r->finished, 1, memory_order_release);
    /* As NCCL's communicator outlives its posted ops, this one stays until
     * the pair has taken every send (its context must not be finalized
     * first). */
    while (atomic_load_explicit(&r->consumed, memory_order_acquire) <
               atomic_load_explicit(&r->published, memory_order_relaxed) &&
           !sim_stopping() && !gone(&r->exec))
      sim_sleep_ns(PXN_POLL_NS);
  }
  if (pump_started[c->index]) pthread_join(pumps[c->index], NULL);
  pump_started[c->index] = false;
}

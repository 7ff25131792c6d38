/* One simulated rank process: its communicators, the queue from each
 * application thread to its proxy thread, and the clocks (rank.c), the
 * application thread (app.c) and the proxy progress thread (proxy.c). */
#ifndef NCCLTOP_SIM_RANK_H
#define NCCLTOP_SIM_RANK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi_driver.h"
#include "scenario.h"
#include "sim.h"

#define SIM_MAX_COMMS    8
#define SIM_MAX_RANKS    1024
#define SIM_MAX_CHANNELS 64
#define SIM_QUEUE_CAP    8 /* collectives posted and not yet appended */

/* One collective handed from the application thread to the proxy thread,
 * as NCCL posts proxy ops into the proxy's op pool. */
typedef struct {
  void *coll;         /* the Coll (or Send) handle: parent of the send ops and
                         kernel channels; NULL if dropped or not enabled */
  void *recv_parent;  /* a p2p Recv's handle for the recv ops; NULL: coll */
  bool p2p;           /* a Send/Recv pair rather than a collective */
  uint64_t seq;       /* the job-wide index of this operation */
  int mask;           /* the activation mask when it was enqueued */
  int steps;          /* network steps per proxy op */
  uint64_t step_size; /* bytes of a full step; the last one may be shorter */
  uint64_t bytes;     /* bytes per proxy op */
  uint64_t gpu_at;    /* --run-ahead, real time: when the GPU reaches it */
  uint64_t launch_ns; /* real time: when the application launched it (sim_wall_ns), 0 unknown */
  sim_scn scn;        /* PXN, CollNet, CE (scenario.h); zero: the plain ring */
  bool sym;           /* --symmetric (2.31): a symmetric kernel, no proxy ops;
                         the proxy thread only times its KernelCh events */
} sim_work;

typedef struct sim_rank sim_rank;

typedef struct {
  sim_rank *r;
  int index;
  sim_ctx px;
  pthread_t app, proxy;
  bool app_started, proxy_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sim_work queue[SIM_QUEUE_CAP];
  int head, count;
  bool closed; /* the application issues no more */
  uint64_t rng;
  uint64_t seqnum[16]; /* NCCL's seqNumber: one counter per function */
} sim_comm;

struct sim_rank {
  const nt_sim_config *cfg;
  int rank;
  sim_driver drv;
  uint64_t t_start_ns;
  sim_comm comms[SIM_MAX_COMMS];
};

/* Shared by the rank processes of one job (MAP_SHARED, set up before they
 * fork): a collective makes progress only once every rank has enqueued it,
 * as in NCCL, so a late rank holds the others back. */
typedef struct {
  uint64_t start_wall_ns; /* CLOCK_REALTIME when the job started */
  _Atomic uint64_t launched[SIM_MAX_RANKS][SIM_MAX_COMMS];
  _Atomic int finished[SIM_MAX_RANKS][SIM_MAX_COMMS]; /* issues no more */
} sim_shared;
extern sim_shared *sim_sh; /* NULL: ranks run uncoupled */
/* Every rank has enqueued operation `seq` of communicator `comm` (or will
 * never: a rank that finished issuing does not hold the others back). */
bool sim_all_launched(int ranks, int comm, uint64_t seq);
void sim_mark_launched(int rank, int comm, uint64_t seq);
void sim_mark_finished(int rank, int comm);

/* SIGINT/SIGTERM seen: stop issuing, drain, finalize. */
bool sim_stopping(void);

/* Real time (CLOCK_MONOTONIC) and sleeping. */
uint64_t sim_real_ns(void);
uint64_t sim_wall_ns(void); /* CLOCK_REALTIME, what a GPU globaltimer follows */
void sim_sleep_ns(uint64_t ns);
uint64_t sim_rand(uint64_t *state);

/* The virtual clock of deterministic mode: the calling proxy thread owns a
 * clock starting at 0 and advances it; every other thread reads the
 * furthest any proxy thread has got. */
void sim_vclock_own(void);
void sim_vclock_pass(uint64_t ns);
uint64_t sim_vclock(void);

/* The op queue. push blocks while it is full; pop returns 1 with a work
 * item, 0 when empty (only if !wait), -1 when empty and closed. */
void sim_queue_push(sim_comm *c, const sim_work *w);
int sim_queue_pop(sim_comm *c, sim_work *w, bool wait);
bool sim_queue_empty(sim_comm *c);
/* Copies the oldest queued item into *w without taking it; false if none. */
bool sim_queue_peek(sim_comm *c, sim_work *w);
/* Blocks until work is queued (true) or the queue is closed and empty. */
bool sim_queue_wait(sim_comm *c);
void sim_queue_close(sim_comm *c);

void *sim_app_main(void *comm);
void *sim_proxy_main(void *comm);

/* Runs rank `rank` of the job in this (forked) process, whose parent is
 * `parent`; returns its exit status. */
int sim_rank_main(const nt_sim_config *cfg, int rank, pid_t parent);

#endif

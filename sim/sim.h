/* The simulator: a job whose ranks are real processes that dlopen a profiler
 * plugin and drive it through the exported NCCL ABI exactly as NCCL does.
 *
 * `nccltop sim`, `nccltop demo` and the tests use it. In deterministic mode
 * the plugin reads a virtual clock that only the simulated proxy threads
 * advance, so every total (steps, bytes, nanoseconds per state) is known in
 * advance: nt_sim_expect_* compute them.
 */
#ifndef NCCLTOP_SIM_H
#define NCCLTOP_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int ranks;            /* processes, default 8 */
  int comms;            /* communicators per rank, default 2 */
  int channels;         /* channels per communicator, default 4 */
  int steps;            /* network steps per proxy op, default 8 */
  int iterations;       /* collectives per communicator; 0 = until duration */
  double duration_s;    /* 0 = until SIGINT/SIGTERM (or iterations done) */
  double linger_s;      /* keep the ranks (and their publishers) alive after
                           the schedule ends, default 0 */
  bool deterministic;   /* virtual clock, fixed schedule: `iterations`
                           collectives (10 if 0), duration_s unused */
  int abi;              /* 0 = the newest the plugin exports that NCCL
                           nccl_version looks for, else 3..7 (an expert
                           override; 3 plays NCCL 2.26, 7 NCCL 2.31) */
  const char *plugin;   /* plugin path; NULL = nt_sim_default_plugin() */
  const char *dir;      /* NCCLTOP_DIR for the ranks, NULL = inherit */
  int nodes;            /* --nodes N: 0 = one GPU per node, every rank in `dir`
                           (nNodes = ranks, the old default); else ranks / N
                           ranks per node, node k's in <dir>/node<k> (dir:
                           `dir`, else nt_endpoint_dir's) with the host name
                           node<k> (NCCLTOP_HOSTNAME), nNodes = N */
  uint32_t interval_ms; /* NCCLTOP_INTERVAL_MS for the ranks, 0 = inherit */
  bool quiet;           /* no progress lines on stderr */
  /* Scenarios (real-time mode). */
  int stall_rank;       /* -1 none; this rank's GPU stops mid-collective and
                           the ring stalls behind it */
  double stall_after_s; /* when (seconds after the start), default 3 */
  int straggler_rank;   /* -1 none; this rank enqueues every collective late */
  uint32_t straggle_ms; /* by this much, default 300 */
  int net;              /* 0, or NT_NET_IB_QP / NT_NET_SOCKET: a net plugin
                           reports one event per network step */
  const char *env[16];  /* NAME=VALUE set in every rank before NCCL starts */
  int nenv;
  struct {
    int rank;
    const char *kv; /* NAME=VALUE for this rank only (after env) */
  } rank_env[16];
  int nrank_env;
  /* The NCCL release played (--nccl-version): 226, 227, 228, 229, 230 or
   * 231; default 228. It selects the ABI NCCL would load and every
   * version-specific behaviour (docs/NCCL-BEHAVIOUR.md). */
  int nccl_version;
  /* Scenario switches of NCCL's real behaviour (docs/NCCL-BEHAVIOUR.md),
   * each off by default: */
  bool pxn;              /* --pxn: sends proxied by another local rank */
  bool collnet;          /* --collnet: some AllReduces on CollNet */
  bool ce;               /* --ce: copy-engine collectives (2.29+) */
  uint32_t run_ahead_ms; /* --run-ahead MS: GPU compute between iterations */
  bool graph;            /* --graph: CUDA graph replays */
  bool alltoall;         /* --alltoall */
  bool broadcast;        /* --broadcast */
  uint64_t user_tag;     /* --user-tag N: communicator 0's calls carry NCCL 2.31's
                            userTag N (ABI v7); 0 none */
  bool symmetric;        /* --symmetric: communicator 0's AllReduce, AllGather and
                            ReduceScatter run as symmetric kernels (2.27+,
                            real time; sim/symmetric.h) */
  bool unnamed;          /* --unnamed: the communicators have no name (NCCL passes
                            NULL, as for PyTorch's process groups) */
} nt_sim_config;

void nt_sim_defaults(nt_sim_config *c);
/* <dir of this executable>/libnccl-profiler-nccltop.so, or ../lib/... next to
 * it, or $NCCLTOP_PLUGIN; written into buf, 0 on success. */
int nt_sim_default_plugin(char *buf, size_t cap);
/* The plugin's test-only build (its virtual-clock hook), next to this
 * executable: <dir>/tests/libnccl-profiler-nccltop-test.so (the build tree);
 * 0 when it is there and $NCCLTOP_PLUGIN does not say otherwise. */
int nt_sim_test_plugin(char *buf, size_t cap);

/* The node of a rank under --nodes (0 without it). */
int nt_sim_node_of(const nt_sim_config *c, int rank);

/* Forks one process per rank and waits for them; returns 0 when every rank
 * exited 0. SIGINT/SIGTERM stop the ranks cleanly (their plugins finalize). */
int nt_sim_run(const nt_sim_config *c);
/* Starts nt_sim_run in a child process (its own process group) and returns
 * its pid, or -1. For `demo` and tests: call before creating any ZeroMQ
 * context or thread. */
int nt_sim_spawn(const nt_sim_config *c);

/* Parses sim options (--ranks N --comms N --channels N --steps N
 * --iterations N --duration S --linger S --deterministic --abi V
 * --nccl-version 2.26..2.31 --plugin P
 * --interval-ms N --quiet --stall-rank R --stall-after S --straggler R
 * --straggle-ms MS --net ib|socket --env NAME=VALUE --rank-env R:NAME=VALUE
 * --run-ahead MS --graph --alltoall --broadcast --pxn --collnet --ce
 * --symmetric --unnamed)
 * from argv, leaving others alone. Returns the number of arguments consumed
 * at the front, or -1 with a message on stderr. */
int nt_sim_parse_args(nt_sim_config *c, int argc, char **argv);

/* Deterministic totals, exactly what the plugin must report once the
 * schedule has run (the ranks ring: rank r sends to r+1 and receives from r-1
 * on every channel of every communicator). */
typedef struct {
  uint64_t steps;
  uint64_t bytes;
  uint64_t wait_ns[3]; /* per wait state of the direction (see nt_dir_wait) */
  uint64_t ops;        /* proxy ops started = done */
  int32_t peer;
} nt_sim_channel_expect;

typedef struct {
  uint64_t state_ns[5]; /* idle, active, sleep, wakeup, append */
  uint64_t appends, appended_ops, wakeups;
  /* AppendEnd counts, besides appended_ops, the profiler proxy ops of
   * KernelCh up to 2.30 (one per channel of every operation): these many
   * more when the mask has KernelCh. */
  uint64_t profiler_ops;
  int final_state; /* enum nt_proxy_state at the end */
} nt_sim_proxy_expect;

typedef struct {
  uint64_t colls;          /* Coll events per communicator */
  uint64_t kernel_count;   /* KernelCh events per (comm, channel) */
  uint64_t kernel_busy_ns; /* sum of stop - start pTimer per (comm, channel) */
  uint64_t net_events;     /* with cfg->net: one per network step */
  uint64_t p2ps;           /* P2p events per communicator (--alltoall) */
} nt_sim_comm_expect;

/* Operations of one communicator of a deterministic run, per (function,
 * algorithm, protocol, size bucket, phase) as the plugin's statistics count
 * them; every one is done (it has proxy-op children). */
typedef struct {
  const char *func, *algo, *proto, *phase;
  uint8_t bucket;
  uint64_t count, bytes;
} nt_sim_op_expect;
/* Fills out[] (at most cap) and returns how many rows. */
int nt_sim_expect_ops(const nt_sim_config *c, nt_sim_op_expect *out, int cap);

void nt_sim_expect_channel(const nt_sim_config *c, int rank, int comm, int channel, int dir,
                           nt_sim_channel_expect *out);
void nt_sim_expect_proxy(const nt_sim_config *c, int rank, int comm, nt_sim_proxy_expect *out);
void nt_sim_expect_comm(const nt_sim_config *c, int rank, int comm, nt_sim_comm_expect *out);
/* The communicator hash the simulator gives comm k (same in every rank). */
uint64_t nt_sim_comm_hash(int comm);

#endif

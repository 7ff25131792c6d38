/* What the plugin must report once a deterministic schedule has run: the
 * schedule of schedule.h, added up, for the NCCL release played
 * (version.h). NCCL 2.26 (ABI v3) differs: no SendPeerWait (the plugin
 * times the credit wait from the op's SendRemFifoWait instead, so the
 * totals are the same), no transSize on the steps (bytes come from the op's
 * SendTransmitted/RecvReceived running total instead), no KernelChStop
 * (no GPU busy time), and its recv stop bug: the last recv step of every op
 * is never stopped, so the plugin counts one step less per op and loses its
 * RecvGPUWait, while the step before it waits until the pair is done.
 * Every release: a send that needs more than one isend try spends its peer
 * wait in idle passes, and the thread's shutdown adds a Sleep/Wakeup and an
 * Append of no ops. */
#include <string.h>

#include "../proto/nccltop_proto.h"
#include "graph.h"
#include "ops_split.h"
#include "runahead.h"
#include "scenario.h"
#include "schedule.h"
#include "sim.h"
#include "version.h"

/* The scenario switches, added up over the schedule (ops_split.h,
 * graph.h, runahead.h): what each communicator's operations become. */
typedef struct {
  uint64_t profiled;   /* operations whose proxy ops carry a mask (all but
                          2.29+'s Broadcasts); 0 on an intra-node comm */
  uint64_t colls;      /* Coll events, the mask having everything */
  uint64_t p2ps;       /* P2p events (AlltoAll: 2 x ranks each) */
  uint64_t ahead_seen; /* --run-ahead steps whose wait a profiled op shows */
  uint64_t ahead_all;  /* --run-ahead steps: proxy Active time */
} det_mix;

static det_mix mix(const nt_sim_config *c, int comm) {
  det_mix m = {0, 0, 0, 0, 0};
  uint64_t it = (uint64_t)sim_det_iterations(c);
  bool intra = sim_graph_intra(c, comm);
  for (uint64_t i = 0; i < it; i++) {
    sim_op_desc d = sim_app_det_op(c, i);
    bool hidden = sim_bcast_hidden(c, d.func), a2a = !strcmp(d.func, "AlltoAll");
    bool profiled = !hidden && !intra;
    bool ahead = sim_runahead_det_ns(c, i, 0, 0) > 0 && !intra;
    m.profiled += profiled;
    m.colls += !hidden && !a2a;
    m.p2ps += a2a ? 2 * (uint64_t)c->ranks : 0;
    m.ahead_seen += ahead && profiled;
    m.ahead_all += ahead;
  }
  return m;
}

void nt_sim_expect_channel(const nt_sim_config *c, int rank, int comm, int channel, int dir,
                           nt_sim_channel_expect *out) {
  det_mix m = mix(c, comm);
  uint64_t it = m.profiled, n = it * (uint64_t)c->steps;
  int v = sim_version_of(c);
  /* --run-ahead: channel 0's first send step waits for the GPU's compute. */
  uint64_t ahead = channel == 0 ? m.ahead_seen * (uint64_t)c->run_ahead_ms * 1000000ull : 0;
  memset(out, 0, sizeof *out);
  out->steps = n;
  /* 2.26's bytes come from the op's running transSize, not its steps. */
  out->bytes = it * sim_det_op_bytes(c->steps);
  out->ops = it;
  if (dir == NT_DIR_SEND) {
    out->wait_ns[0] = n * SIM_SEND_GPU_NS + ahead;
    out->wait_ns[1] = n * SIM_SEND_PEER_NS;
    out->wait_ns[2] = n * SIM_SEND_NET_NS;
    out->peer = it ? (rank + 1) % c->ranks : -1;
  } else {
    out->wait_ns[0] = n * SIM_RECV_NET_NS;
    out->wait_ns[1] = n * SIM_RECV_FLUSH_NS;
    out->wait_ns[2] = n * SIM_RECV_GPU_NS;
    out->peer = it ? (rank - 1 + c->ranks) % c->ranks : -1;
    if (sim_v_recv_stop_bug(v) && c->steps >= 2) {
      /* Per op: the held step waits one more round of every channel's
       * send and recv step; the last step is never stopped, and the plugin
       * closes it at the RecvDone record that counts it (V4). */
      out->wait_ns[2] = n * SIM_RECV_GPU_NS + it * sim_det_work_ns(c->channels, 1);
    }
  }
  sim_scn_expect_channel(c, rank, dir, out); /* --pxn, --collnet, --ce */
}

void nt_sim_expect_proxy(const nt_sim_config *c, int rank, int comm, nt_sim_proxy_expect *out) {
  (void)rank;
  uint64_t it = (uint64_t)sim_det_iterations(c);
  uint64_t ahead = mix(c, 0).ahead_all * (uint64_t)c->run_ahead_ms * 1000000ull;
  /* A send try without credit is a pass that made no progress: idle. */
  uint64_t missed = it * sim_det_credit_misses(c->channels, c->steps) * SIM_SEND_PEER_NS;
  memset(out, 0, sizeof *out);
  out->final_state = NT_PROXY_IDLE;
  if (sim_graph_intra(c, comm)) {
    /* Nothing to progress: idle from its first edge to the end of the run. */
    out->state_ns[NT_PROXY_IDLE] = it * (SIM_IDLE_NS + SIM_SLEEP_NS + SIM_WAKEUP_NS +
                                         SIM_APPEND_NS + sim_det_work_ns(c->channels, c->steps)) +
                                   ahead;
    out->appends = out->wakeups = 1; /* the shutdown's Sleep .. Append of no ops */
    return;
  }
  out->state_ns[NT_PROXY_IDLE] = it * SIM_IDLE_NS + missed;
  out->state_ns[NT_PROXY_ACTIVE] = it * sim_det_work_ns(c->channels, c->steps) - missed + ahead;
  out->state_ns[NT_PROXY_SLEEP] = it * SIM_SLEEP_NS;
  out->state_ns[NT_PROXY_WAKEUP] = it * SIM_WAKEUP_NS;
  out->state_ns[NT_PROXY_APPEND] = it * SIM_APPEND_NS;
  out->appends = it + 1; /* + the shutdown's, of no ops */
  out->appended_ops = it * 2 * (uint64_t)c->channels;
  /* the profiled operations' kernels (a hidden Broadcast's mask is empty) */
  out->profiler_ops =
      sim_v_kernel_thread(sim_version_of(c)) ? 0 : mix(c, comm).profiled * (uint64_t)c->channels;
  out->wakeups = it + 1;              /* + the shutdown's */
  sim_scn_expect_proxy(c, rank, out); /* --pxn, --collnet, --ce */
}

void nt_sim_expect_comm(const nt_sim_config *c, int rank, int comm, nt_sim_comm_expect *out) {
  (void)rank;
  det_mix m = mix(c, comm);
  uint64_t it = m.profiled;
  memset(out, 0, sizeof *out);
  /* An intra-node comm under --graph: with KernelCh (assumed here) every
   * replay has its Coll events; its KernelCh events are not simulated. */
  out->colls = m.colls;
  out->p2ps = m.p2ps;
  out->kernel_count = it;
  out->kernel_busy_ns = sim_v_native_v3(sim_version_of(c)) ? 0 : it * SIM_KERNEL_NS;
  out->net_events = c->net ? it * (uint64_t)c->steps * (uint64_t)c->channels * 2 : 0;
  sim_scn_expect_comm(c, out);
}

/* The phase of each collective is exact for every communicator: each
 * communicator's thread names its own phase, and the plugin keeps a tag per
 * thread. */
int nt_sim_expect_ops(const nt_sim_config *c, nt_sim_op_expect *out, int cap) {
  int n = 0;
  for (uint64_t i = 0; i < (uint64_t)sim_det_iterations(c); i++) {
    sim_op_desc d = sim_scn_det_op(c, i);
    /* NCCL reports these as Send/Recv, or not at all (ops_split.h); a CE
     * collective has no Coll event (scenario.h). */
    if (!strcmp(d.func, "AlltoAll") || sim_bcast_hidden(c, d.func) || sim_ce_op(c, d.func))
      continue;
    uint8_t bucket = nt_size_bucket(d.bytes);
    nt_sim_op_expect *e = NULL;
    for (int k = 0; k < n && !e; k++)
      if (!strcmp(out[k].func, d.func) && !strcmp(out[k].algo, d.algo) &&
          !strcmp(out[k].proto, d.proto) && !strcmp(out[k].phase, d.phase) &&
          out[k].bucket == bucket)
        e = &out[k];
    if (!e) {
      if (n >= cap) return -1;
      e = &out[n++];
      memset(e, 0, sizeof *e);
      e->func = d.func;
      e->algo = d.algo;
      e->proto = d.proto;
      e->phase = d.phase;
      e->bucket = bucket;
    }
    e->count++;
    e->bytes += d.bytes;
  }
  return n;
}

uint64_t nt_sim_comm_hash(int comm) {
  return 0x5eed000000000000ull | (uint64_t)(comm + 1) * 0x1111;
}

/* What the plugin must report once a deterministic schedule has run. The
 * proxy thread of each communicator does, per collective: idle
 * SIM_IDLE_NS, a Sleep/Wakeup burst, an Append burst, an Active edge, every
 * channel's steps, an Idle edge (see rank.c). */
#include <string.h>

#include "../proto/nccltop_proto.h"
#include "schedule.h"
#include "sim.h"

void nt_sim_expect_channel(const nt_sim_config *c, int rank, int comm, int channel, int dir,
                           nt_sim_channel_expect *out) {
  (void)comm;
  (void)channel;
  uint64_t n = (uint64_t)c->iterations * (uint64_t)c->steps;
  memset(out, 0, sizeof *out);
  out->steps = n;
  out->bytes = n * SIM_STEP_BYTES;
  out->ops = (uint64_t)c->iterations;
  if (dir == NT_DIR_SEND) {
    out->wait_ns[0] = n * SIM_SEND_GPU_NS;
    out->wait_ns[1] = n * SIM_SEND_PEER_NS;
    out->wait_ns[2] = n * SIM_SEND_NET_NS;
    out->peer = (rank + 1) % c->ranks;
  } else {
    out->wait_ns[0] = n * SIM_RECV_NET_NS;
    out->wait_ns[1] = n * SIM_RECV_FLUSH_NS;
    out->wait_ns[2] = n * SIM_RECV_GPU_NS;
    out->peer = (rank - 1 + c->ranks) % c->ranks;
  }
}

void nt_sim_expect_proxy(const nt_sim_config *c, int rank, int comm, nt_sim_proxy_expect *out) {
  (void)rank;
  (void)comm;
  uint64_t it = (uint64_t)c->iterations;
  memset(out, 0, sizeof *out);
  out->state_ns[NT_PROXY_IDLE] = it * SIM_IDLE_NS;
  out->state_ns[NT_PROXY_ACTIVE] = it * sim_work_ns(c->channels, c->steps);
  out->state_ns[NT_PROXY_SLEEP] = it * SIM_SLEEP_NS;
  out->state_ns[NT_PROXY_WAKEUP] = it * SIM_WAKEUP_NS;
  out->state_ns[NT_PROXY_APPEND] = it * SIM_APPEND_NS;
  out->appends = it;
  out->appended_ops = it * 2 * (uint64_t)c->channels;
  out->wakeups = it;
  out->final_state = NT_PROXY_IDLE;
}

void nt_sim_expect_comm(const nt_sim_config *c, int rank, int comm, nt_sim_comm_expect *out) {
  (void)rank;
  (void)comm;
  memset(out, 0, sizeof *out);
  out->colls = (uint64_t)c->iterations;
  out->kernel_count = (uint64_t)c->iterations;
  out->kernel_busy_ns = (uint64_t)c->iterations * SIM_KERNEL_NS;
}

uint64_t nt_sim_comm_hash(int comm) {
  return 0x5eed000000000000ull | (uint64_t)(comm + 1) * 0x1111;
}

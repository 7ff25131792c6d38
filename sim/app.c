/* The application thread of one communicator: it enqueues collectives the
 * way ncclAllReduce does in NCCL 2.28 (src/enqueue.cc taskAppend,
 * src/group.cc ncclGroupEndInternal, hostStreamPlanTask):
 *
 *   GroupApi start, GroupStartApiStop, CollApi start, CollApi stop,
 *   GroupEndApiStart, [KernelLaunch start, stop], Group start,
 *   Coll start (parent CollApi, parentGroup Group), post the proxy ops,
 *   Coll stop, Group stop, GroupApi stop.
 *
 * A Send/Recv pair is the same with P2pApi and P2p events. The activation
 * mask is read once per operation, as NCCL snapshots it into the task; the
 * proxy ops inherit that snapshot. Communicator 0's thread also names the
 * training phase (nccltop_tag) when it changes, as a training loop would. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rank.h"
#include "schedule.h"

static nt_descr_v5 descr(int type, void *parent, int rank) {
  nt_descr_v5 e;
  memset(&e, 0, sizeof e);
  e.type = (uint64_t)type;
  e.parentObj = parent;
  e.rank = rank;
  return e;
}

/* Real-time mode's training step: (phase, function, smallest and largest
 * message); "p2p" is a Send/Recv pair with the ring neighbours (pipeline
 * parallelism). Sizes are drawn between the bounds in powers of two. */
static const struct {
  const char *phase, *func;
  int lo, hi; /* log2 bytes */
} rt_step[] = {
    {"forward", "AllGather", 22, 26},
    {"forward", "AllGather", 22, 26},
    {"forward", "p2p", 20, 20},
    {"forward", "AllGather", 22, 26},
    {"backward", "ReduceScatter", 22, 26},
    {"backward", "ReduceScatter", 22, 26},
    {"backward", "AllReduce", 18, 22},
    {"backward", "ReduceScatter", 22, 26},
    {"backward", "AllReduce", 18, 22},
    {"optimizer", "AllReduce", 13, 16},
    {"optimizer", "AllReduce", 13, 16},
};
#define RT_STEP_OPS (sizeof rt_step / sizeof rt_step[0])

/* NCCL_ALGO / NCCL_PROTO as NCCL's tuner takes them (a name, any case; the
 * first of a list), mapped to the names NCCL reports; NULL when unset or
 * not one we know. */
static const char *forced(const char *var, const char *const *names, int n) {
  const char *v = getenv(var);
  if (!v || !*v) return NULL;
  size_t len = strcspn(v, ",");
  for (int i = 0; i < n; i++)
    if (strlen(names[i]) == len && strncasecmp(v, names[i], len) == 0) return names[i];
  return NULL;
}

/* NCCL-like algorithm and protocol by size (see schedule.h), unless the
 * environment forces them, as it forces NCCL's tuner. */
static sim_op_desc describe(const char *phase, const char *func, uint64_t bytes) {
  static const char *const algos[] = {"RING", "TREE", "PAT", "NVLS"};
  static const char *const protos[] = {"LL", "LL128", "SIMPLE"};
  sim_op_desc d = {phase, func, NULL, NULL, bytes};
  d.algo = bytes < (64ull << 10) ? "TREE" : "RING";
  d.proto = bytes < (64ull << 10) ? "LL" : bytes < (1ull << 20) ? "LL128" : "SIMPLE";
  const char *a = forced("NCCL_ALGO", algos, 4), *p = forced("NCCL_PROTO", protos, 3);
  if (a) d.algo = a;
  if (p) d.proto = p;
  return d;
}

/* The next operation and its network work per channel. */
static sim_op_desc plan(sim_comm *c, uint64_t seq, sim_work *w) {
  const nt_sim_config *cfg = c->r->cfg;
  memset(w, 0, sizeof *w);
  w->seq = seq;
  if (cfg->deterministic) {
    w->steps = cfg->steps;
    w->step_size = SIM_STEP_BYTES;
    w->bytes = sim_det_op_bytes(cfg->steps);
    return sim_det_op(seq);
  }
  size_t i = (size_t)(seq % RT_STEP_OPS);
  int span = rt_step[i].hi - rt_step[i].lo + 1;
  /* Every rank calls operation `seq` with the same size: drawn from the
   * job's sequence, not the rank's. */
  uint64_t job_rng = (seq + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(c->index + 1) << 40;
  uint64_t bytes = 1ull << (rt_step[i].lo + (int)(sim_rand(&job_rng) % (uint64_t)span));
  w->p2p = strcmp(rt_step[i].func, "p2p") == 0;
  /* A collective's bytes are spread over the channels; a step carries at
   * most SIM_RT_STEP_BYTES and there are at most 4 x --steps of them. */
  uint64_t per_ch = bytes / (uint64_t)cfg->channels;
  if (per_ch < 1024) per_ch = 1024;
  uint64_t steps = (per_ch + SIM_RT_STEP_BYTES - 1) / SIM_RT_STEP_BYTES;
  uint64_t max_steps = 4 * (uint64_t)cfg->steps;
  w->steps = (int)(steps < 1 ? 1 : steps > max_steps ? max_steps : steps);
  w->step_size = (per_ch + (uint64_t)w->steps - 1) / (uint64_t)w->steps;
  w->bytes = per_ch;
  return describe(rt_step[i].phase, w->p2p ? "Send" : rt_step[i].func, bytes);
}

static int func_index(const char *func) {
  static const char *const known[] = {"AllGather", "ReduceScatter", "AllReduce", "Send", "Recv"};
  for (int i = 0; i < 5; i++)
    if (!strcmp(known[i], func)) return i;
  return 5;
}

static void *start_p2p(sim_ctx *x, int m, const char *func, size_t count, int peer, void *gapi,
                       void *group, int rank) {
  int abi = x->d->abi;
  void *api = NULL, *h = NULL;
  nt_descr_v5 e;
  if (sim_mask_wants(abi, m, NT_EV_P2P_API)) {
    e = descr(NT_EV_P2P_API, gapi, rank);
    e.p2pApi.func = func;
    e.p2pApi.count = count;
    e.p2pApi.datatype = "ncclFloat32";
    api = sim_start(x, &e);
  }
  sim_stop(x, api);
  if (sim_mask_wants(abi, m, NT_EV_P2P)) {
    e = descr(NT_EV_P2P, api, rank);
    e.p2p.func = func;
    e.p2p.datatype = "ncclFloat32";
    e.p2p.count = count;
    e.p2p.peer = peer;
    e.p2p.nChannels = 1;
    e.p2p.parentGroup = group;
    h = sim_start(x, &e);
  }
  return h;
}

static void issue(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, n = c->r->cfg->ranks, m = x->on ? sim_mask_now(x) : 0;
  size_t count = (size_t)(d->bytes / 4);
  void *gapi = NULL, *capi = NULL, *group = NULL, *coll = NULL;
  nt_descr_v5 e;
  w->mask = m;
  if (sim_mask_wants(abi, m, NT_EV_GROUP_API)) {
    e = descr(NT_EV_GROUP_API, NULL, rank);
    e.groupApi.groupDepth = 1; /* inside the operation's implicit group */
    gapi = sim_start(x, &e);
  }
  sim_record(x, gapi, NT_ST_GROUP_START_API_STOP, NULL);
  if (!w->p2p && sim_mask_wants(abi, m, NT_EV_COLL_API)) {
    e = descr(NT_EV_COLL_API, gapi, rank);
    e.collApi.func = d->func;
    e.collApi.count = count;
    e.collApi.datatype = "ncclFloat32";
    capi = sim_start(x, &e);
  }
  sim_stop(x, capi);
  sim_record(x, gapi, NT_ST_GROUP_END_API_START, NULL);
  if (sim_mask_wants(abi, m, NT_EV_KERNEL_LAUNCH)) {
    e = descr(NT_EV_KERNEL_LAUNCH, gapi, rank);
    sim_stop(x, sim_start(x, &e));
  }
  if (sim_mask_wants(abi, m, NT_EV_GROUP)) {
    e = descr(NT_EV_GROUP, NULL, 0); /* NCCL fills in only the type */
    group = sim_start(x, &e);
  }
  void *recv = NULL;
  if (w->p2p) {
    coll = start_p2p(x, m, "Send", count, (rank + 1) % n, gapi, group, rank);
    recv = start_p2p(x, m, "Recv", count, (rank - 1 + n) % n, gapi, group, rank);
    c->seqnum[func_index("Send")]++;
    c->seqnum[func_index("Recv")]++;
  } else if (sim_mask_wants(abi, m, NT_EV_COLL)) {
    e = descr(NT_EV_COLL, capi, rank);
    e.coll.seqNumber = c->seqnum[func_index(d->func)]++; /* one counter per function */
    e.coll.func = d->func;
    e.coll.count = count;
    e.coll.datatype = "ncclFloat32";
    /* collTaskAppend (every release since 2.26) turns an AllGather's or a
     * Broadcast's task into bytes of ncclInt8 before the Coll event sees it;
     * the CollApi event above still has the caller's count and type. */
    if (!strcmp(d->func, "AllGather") || !strcmp(d->func, "Broadcast")) {
      e.coll.count = (size_t)d->bytes;
      e.coll.datatype = "ncclInt8";
    }
    e.coll.nChannels = (uint8_t)c->r->cfg->channels;
    e.coll.nWarps = 16;
    e.coll.algo = d->algo;
    e.coll.proto = d->proto;
    e.coll.parentGroup = group;
    coll = sim_start(x, &e);
  } else {
    c->seqnum[func_index(d->func)]++;
  }
  /* The proxy ops are posted before the Coll stops: the proxy thread may
   * start them while this thread still holds the Coll open. */
  w->coll = coll;
  w->recv_parent = recv;
  sim_queue_push(c, w);
  sim_stop(x, coll);
  sim_stop(x, recv);
  sim_stop(x, group);
  sim_stop(x, gapi);
  sim_mark_launched(rank, c->index, w->seq);
}

/* Interruptible sleep until `end` (real time); false when stopping. */
static bool nap_until(uint64_t end) {
  for (uint64_t now = sim_real_ns(); now < end && !sim_stopping(); now = sim_real_ns()) {
    uint64_t left = end - now;
    sim_sleep_ns(left < 50000000ull ? left : 50000000ull);
  }
  return !sim_stopping();
}

/* Real-time mode: compute between operations, sometimes none (a burst). */
static void think(sim_comm *c, uint64_t deadline) {
  uint64_t r = sim_rand(&c->rng);
  if (r % 4 == 0) return;
  uint64_t ms = 10 + (r >> 8) % 60 + (uint64_t)(c->r->rank % 3) * 10;
  uint64_t end = sim_real_ns() + ms * 1000000ull;
  nap_until(deadline && end > deadline ? deadline : end);
}

void *sim_app_main(void *arg) {
  sim_comm *c = arg;
  const nt_sim_config *cfg = c->r->cfg;
  void (*tag)(const char *) = NULL;
  if (c->index == 0) *(void **)&tag = sim_driver_sym(&c->r->drv, "nccltop_tag");
  /* The deterministic schedule is a fixed number of collectives. */
  uint64_t n = cfg->deterministic ? (uint64_t)sim_det_iterations(cfg) : (uint64_t)cfg->iterations;
  uint64_t deadline = 0;
  if (!cfg->deterministic && cfg->duration_s > 0)
    deadline = c->r->t_start_ns + (uint64_t)(cfg->duration_s * 1e9);
  bool straggler = !cfg->deterministic && c->r->rank == cfg->straggler_rank;
  const char *phase = NULL;
  for (uint64_t seq = 0; !sim_stopping(); seq++) {
    if (n && seq >= n) break;
    if (deadline && sim_real_ns() >= deadline) break;
    /* A straggler is late with every operation (slow data loader, say). */
    if (straggler && !nap_until(sim_real_ns() + (uint64_t)cfg->straggle_ms * 1000000ull)) break;
    sim_work w;
    sim_op_desc d = plan(c, seq, &w);
    if (tag && d.phase != phase) tag(d.phase);
    phase = d.phase;
    issue(c, &d, &w);
    if (!cfg->deterministic) think(c, deadline);
  }
  sim_mark_finished(c->r->rank, c->index);
  sim_queue_close(c);
  return NULL;
}

/* The application thread of one communicator: it enqueues collectives the
 * way ncclAllReduce does in NCCL 2.28 (src/enqueue.cc taskAppend,
 * src/group.cc ncclGroupEndInternal, hostStreamPlanTask):
 *
 *   GroupApi start, GroupStartApiStop, CollApi start, CollApi stop,
 *   GroupEndApiStart, [KernelLaunch start, stop], Group start,
 *   Coll start (parent CollApi, parentGroup Group), post the proxy ops,
 *   Coll stop, Group stop, GroupApi stop.
 *
 * The activation mask is read once per collective, as NCCL snapshots it
 * into the task; the proxy ops inherit that snapshot. */
#include <string.h>

#include "rank.h"
#include "schedule.h"

#define RT_STEP_BYTES (4ull << 20) /* a full network step in real-time mode */

static nt_descr_v5 descr(int type, void *parent, int rank) {
  nt_descr_v5 e;
  memset(&e, 0, sizeof e);
  e.type = (uint64_t)type;
  e.parentObj = parent;
  e.rank = rank;
  return e;
}

/* Sizes of the next collective: fixed when deterministic, varied otherwise. */
static void plan(sim_comm *c, sim_work *w) {
  const nt_sim_config *cfg = c->r->cfg;
  memset(w, 0, sizeof *w);
  if (cfg->deterministic) {
    w->steps = cfg->steps;
    w->step_size = SIM_STEP_BYTES;
    w->bytes = sim_det_op_bytes(cfg->steps);
    return;
  }
  w->steps = cfg->steps + (int)(sim_rand(&c->rng) % (uint64_t)(cfg->steps + 1));
  w->step_size = RT_STEP_BYTES;
  uint64_t last = RT_STEP_BYTES / 4 + sim_rand(&c->rng) % (RT_STEP_BYTES * 3 / 4);
  w->bytes = (uint64_t)(w->steps - 1) * RT_STEP_BYTES + last;
}

static void issue(sim_comm *c, uint64_t seq, sim_work *w) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, m = x->on ? sim_mask_now(x) : 0;
  size_t count = (size_t)(w->bytes * (uint64_t)c->r->cfg->channels / 4);
  void *gapi = NULL, *capi = NULL, *group = NULL, *coll = NULL;
  nt_descr_v5 e;
  w->mask = m;
  if (sim_mask_wants(abi, m, NT_EV_GROUP_API)) {
    e = descr(NT_EV_GROUP_API, NULL, rank);
    e.groupApi.groupDepth = 1; /* inside ncclAllReduce's implicit group */
    gapi = sim_start(x, &e);
  }
  sim_record(x, gapi, NT_ST_GROUP_START_API_STOP, NULL);
  if (sim_mask_wants(abi, m, NT_EV_COLL_API)) {
    e = descr(NT_EV_COLL_API, gapi, rank);
    e.collApi.func = "AllReduce";
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
  if (sim_mask_wants(abi, m, NT_EV_COLL)) {
    e = descr(NT_EV_COLL, capi, rank);
    e.coll.seqNumber = seq; /* one counter per function; we only run AllReduce */
    e.coll.func = "AllReduce";
    e.coll.count = count;
    e.coll.datatype = "ncclFloat32";
    e.coll.nChannels = (uint8_t)c->r->cfg->channels;
    e.coll.nWarps = 16;
    e.coll.algo = "RING";
    e.coll.proto = "SIMPLE";
    e.coll.parentGroup = group;
    coll = sim_start(x, &e);
  }
  /* The proxy ops are posted before the Coll stops: the proxy thread may
   * start them while this thread still holds the Coll open. */
  w->coll = coll;
  sim_queue_push(c, w);
  sim_stop(x, coll);
  sim_stop(x, group);
  sim_stop(x, gapi);
}

/* Real-time mode: compute between collectives, sometimes none (a burst). */
static void think(sim_comm *c, uint64_t deadline) {
  uint64_t r = sim_rand(&c->rng);
  if (r % 4 == 0) return;
  uint64_t ms = 10 + (r >> 8) % 60 + (uint64_t)(c->r->rank % 3) * 10;
  uint64_t end = sim_real_ns() + ms * 1000000ull;
  if (deadline && end > deadline) end = deadline;
  for (uint64_t now = sim_real_ns(); now < end && !sim_stopping(); now = sim_real_ns()) {
    uint64_t left = end - now;
    sim_sleep_ns(left < 50000000ull ? left : 50000000ull);
  }
}

void *sim_app_main(void *arg) {
  sim_comm *c = arg;
  const nt_sim_config *cfg = c->r->cfg;
  /* The deterministic schedule is a fixed number of collectives. */
  uint64_t n = cfg->deterministic ? (uint64_t)sim_det_iterations(cfg) : (uint64_t)cfg->iterations;
  uint64_t deadline = 0;
  if (!cfg->deterministic && cfg->duration_s > 0)
    deadline = c->r->t_start_ns + (uint64_t)(cfg->duration_s * 1e9);
  for (uint64_t seq = 0; !sim_stopping(); seq++) {
    if (n && seq >= n) break;
    if (deadline && sim_real_ns() >= deadline) break;
    sim_work w;
    plan(c, &w);
    issue(c, seq, &w);
    if (!cfg->deterministic) think(c, deadline);
  }
  sim_queue_close(c);
  return NULL;
}

/* The application thread of one communicator: it enqueues collectives the
 * way ncclAllReduce does in NCCL 2.28 (src/enqueue.cc taskAppend,
 * src/group.cc ncclGroupEndInternal, hostStreamPlanTask):
 *
 *   GroupApi start, GroupStartApiStop, CollApi start, CollApi stop,
 *   GroupEndApiStart, [KernelLaunch start, stop], Group start,
 *   Coll start (parent CollApi, parentGroup Group), post the proxy ops,
 *   Coll stop, Group stop, GroupApi stop.
 *
 * The API half (up to KernelLaunch, sim_op_api) and the plan half (Group
 * to Group stop, sim_op_plan) are separate because a CUDA graph runs the
 * plan on a host-callback thread at each replay (graph.c). A Send/Recv
 * pair is the same with two P2pApi and two P2p events. The activation
 * mask is read once per operation, as NCCL snapshots it into the task; the
 * proxy ops inherit that snapshot. Each communicator's thread also names
 * the training phase it is in (nccltop_tag) when it changes, as a training
 * loop would; the plugin keeps a tag per thread, so the two do not mix. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app_ops.h"
#include "ops_split.h"
#include "ce.h"
#include "pxn.h"
#include "rank.h"
#include "runahead.h"
#include "schedule.h"
#include "symmetric.h"
#include "version.h"

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
    return sim_app_det_op(cfg, seq);
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
  sim_op_desc d = describe(rt_step[i].phase, w->p2p ? "Send" : rt_step[i].func, bytes);
  sim_app_substitute(cfg, &d);
  return d;
}

static int func_index(const char *func) {
  static const char *const known[] = {"AllGather", "ReduceScatter", "AllReduce",
                                      "Send",      "Recv",          "Broadcast"};
  for (int i = 0; i < 6; i++)
    if (!strcmp(known[i], func)) return i;
  return 6;
}

/* The API side of one operation, on the calling (application) thread:
 * GroupApi start, GroupStartApiStop, CollApi or the two P2pApi events,
 * GroupEndApiStart, KernelLaunch. The GroupApi stays open (sim_op_api_end).
 * `captured`: inside a CUDA graph capture (the descriptors say so). */
void sim_op_api(sim_comm *c, const sim_op_desc *d, sim_work *w, bool captured, sim_api_ev *a) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, m = x->on ? sim_mask_now(x) : 0;
  size_t count = (size_t)(d->bytes / 4);
  nt_descr_v5 e;
  memset(a, 0, sizeof *a);
  a->mask = w->mask = m;
  if (sim_mask_wants(abi, m, NT_EV_GROUP_API)) {
    e = sim_api_descr(NT_EV_GROUP_API, NULL);
    e.groupApi.groupDepth = 1; /* inside the operation's implicit group */
    e.groupApi.graphCaptured = captured;
    a->gapi = sim_start(x, &e);
  }
  sim_record(x, a->gapi, NT_ST_GROUP_START_API_STOP, NULL);
  for (int i = 0; w->p2p && i < 2 && sim_mask_wants(abi, m, NT_EV_P2P_API); i++) {
    e = sim_api_descr(NT_EV_P2P_API, a->gapi);
    e.p2pApi.func = i ? "Recv" : "Send";
    e.p2pApi.count = count;
    e.p2pApi.datatype = "ncclFloat32";
    e.p2pApi.graphCaptured = captured;
    a->papi[i] = sim_start(x, &e);
    sim_stop(x, a->papi[i]);
  }
  if (!w->p2p && sim_mask_wants(abi, m, NT_EV_COLL_API)) {
    e = sim_api_descr(NT_EV_COLL_API, a->gapi);
    e.collApi.func = d->func;
    e.collApi.count = count; /* what the application passed */
    e.collApi.datatype = "ncclFloat32";
    e.collApi.graphCaptured = captured;
    if (!strcmp(d->func, "Broadcast")) e.collApi.root = sim_bcast_root(c->r->cfg, w->seq);
    a->capi = sim_start(x, &e);
  }
  sim_stop(x, a->capi);
  sim_record(x, a->gapi, NT_ST_GROUP_END_API_START, NULL);
  /* --symmetric up to 2.30: the plan keeps no task, and KernelLaunch is
   * started from the plan's tasks (ncclProfilerStartKernelLaunchEvent). */
  bool unseen =
      !w->p2p && sim_sym_op(c->r->cfg, c->index, d->func) && !sim_sym_reported(x->d->nccl_version);
  if (!unseen && sim_mask_wants(abi, m, NT_EV_KERNEL_LAUNCH)) {
    e = sim_api_descr(NT_EV_KERNEL_LAUNCH, a->gapi);
    sim_stop(x, sim_start(x, &e));
  }
}

void sim_op_api_end(sim_comm *c, sim_api_ev *a) {
  sim_stop(&c->px, a->gapi);
  a->gapi = NULL;
}

static void *start_p2p(sim_ctx *x, int m, const char *func, size_t count, int peer, void *api,
                       void *group, int rank) {
  if (!sim_mask_wants(x->d->abi, m, NT_EV_P2P)) return NULL;
  nt_descr_v5 e = sim_descr(NT_EV_P2P, api, rank);
  e.p2p.func = func;
  e.p2p.datatype = "ncclFloat32";
  e.p2p.count = count;
  e.p2p.peer = peer;
  e.p2p.nChannels = 1;
  e.p2p.parentGroup = group;
  return sim_start(x, &e);
}

/* The plan side (NCCL's hostStreamPlanTask), on whichever thread runs it:
 * Group start, the Coll or the Send/Recv P2p events, the proxy ops posted
 * (when `post`), their stops, Group stop. `bump`: whether the function's
 * seqNumber advances (not for a graph replay without KernelCh). */
/* --symmetric: a symmetric-kernel collective (symmetric.h). Up to 2.30 the
 * plan has no task: nothing at all (no Group, Coll, KernelCh or proxy op,
 * no seqNumber). 2.31: Group, the Coll with the kernel variant (the first
 * and only task of its plan, with the plan's channels when the mask has
 * KernelCh), and the kernel's channels timed by the proxy thread, which
 * starts no proxy op for it. */
static void sym_plan(sim_comm *c, const sim_op_desc *d, sim_work *w, const sim_api_ev *a, bool post,
                     bool bump) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, m = a->mask;
  if (!sim_sym_reported(x->d->nccl_version)) return;
  void *group = NULL, *coll = NULL;
  nt_descr_v5 e;
  if (sim_mask_wants(abi, m, NT_EV_GROUP)) {
    e = sim_descr(NT_EV_GROUP, NULL, 0);
    group = sim_start(x, &e);
  }
  uint64_t *seq = &c->seqnum[func_index(d->func)];
  if (sim_mask_wants(abi, m, NT_EV_COLL)) {
    const char *variant = sim_sym_variant(d->func, d->bytes);
    bool in_bytes = sim_counts_bytes(d->func);
    e = sim_descr(NT_EV_COLL, a->capi, rank);
    e.coll.seqNumber = *seq;
    e.coll.func = d->func;
    e.coll.count = in_bytes ? (size_t)d->bytes : (size_t)(d->bytes / 4);
    e.coll.datatype = in_bytes ? "ncclInt8" : "ncclFloat32";
    /* ct->nChannels stays 0; the plan's first task advertises the plan's
     * channels when KernelCh is on. */
    e.coll.nChannels = m & NT_EV_KERNEL_CH ? (uint8_t)c->r->cfg->channels : 0;
    e.coll.nWarps = 16;
    e.coll.algo = sim_sym_algo(variant);
    e.coll.proto = "";
    e.coll.parentGroup = group;
    coll = sim_start_sym(x, &e, variant);
  }
  if (bump) (*seq)++;
  w->coll = coll;
  w->recv_parent = NULL;
  w->sym = true;
  if (post) sim_queue_push(c, w); /* the kernel: KernelCh, no proxy op */
  sim_stop(x, coll);
  sim_stop(x, group);
}

void sim_op_plan(sim_comm *c, const sim_op_desc *d, sim_work *w, const sim_api_ev *a, bool post,
                 bool bump) {
  if (!w->p2p && sim_sym_op(c->r->cfg, c->index, d->func)) {
    sym_plan(c, d, w, a, post, bump);
    return;
  }
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, n = c->r->cfg->ranks, m = a->mask;
  size_t count = (size_t)(d->bytes / 4);
  void *group = NULL, *coll = NULL, *recv = NULL;
  nt_descr_v5 e;
  if (sim_mask_wants(abi, m, NT_EV_GROUP)) {
    e = sim_descr(NT_EV_GROUP, NULL, 0); /* NCCL fills in only the type */
    group = sim_start(x, &e);
  }
  uint64_t *seq = &c->seqnum[func_index(w->p2p ? "Send" : d->func)];
  if (w->p2p) {
    coll = start_p2p(x, m, "Send", count, (rank + 1) % n, a->papi[0], group, rank);
    recv = start_p2p(x, m, "Recv", count, (rank - 1 + n) % n, a->papi[1], group, rank);
    if (bump) c->seqnum[func_index("Recv")]++;
  } else if (sim_mask_wants(abi, m, NT_EV_COLL)) {
    bool in_bytes = sim_counts_bytes(d->func);
    e = sim_descr(NT_EV_COLL, a->capi, rank);
    e.coll.seqNumber = *seq; /* one counter per function */
    e.coll.func = d->func;
    e.coll.count = in_bytes ? (size_t)d->bytes : count;
    e.coll.datatype = in_bytes ? "ncclInt8" : "ncclFloat32";
    if (!strcmp(d->func, "Broadcast")) e.coll.root = sim_bcast_root(c->r->cfg, w->seq);
    e.coll.nChannels = (uint8_t)c->r->cfg->channels;
    e.coll.nWarps = 16;
    e.coll.algo = d->algo;
    e.coll.proto = d->proto;
    e.coll.parentGroup = group;
    coll = sim_start(x, &e);
  }
  if (bump) (*seq)++;
  /* The proxy ops are posted before the Coll stops: the proxy thread may
   * start them while this thread still holds the Coll open. */
  w->coll = coll;
  w->recv_parent = recv;
  if (post) {
    sim_pxn_post(c, w); /* --pxn: the sends go to the pair's proxy */
    sim_queue_push(c, w);
  }
  sim_stop(x, coll);
  sim_stop(x, recv);
  sim_stop(x, group);
}

static void issue(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  if (w->scn.ce) {         /* a copy-engine collective: no Coll, no proxy work */
    sim_ce_issue(c, d, w); /* marks it launched itself */
    return;
  }
  if (!strcmp(d->func, "AlltoAll")) {
    sim_issue_alltoall(c, d, w);
  } else if (sim_bcast_hidden(c->r->cfg, d->func)) {
    sim_issue_hidden_bcast(c, d, w);
  } else {
    sim_api_ev a;
    sim_op_api(c, d, w, false, &a);
    sim_op_plan(c, d, w, &a, true, true);
    sim_op_api_end(c, &a);
  }
  sim_mark_launched(c->r->rank, c->index, w->seq);
}

/* --symmetric: two symmetric collectives of one function in one group
 * (ncclGroupStart, two calls, ncclGroupEnd), which NCCL makes one plan and
 * one kernel (symmetric_sched.cc ncclMakeSymmetricTaskList): one GroupApi
 * with a CollApi per call. Up to 2.30 nothing else. 2.31: KernelLaunch,
 * Group and a Coll per call, all with the plan's variant (never an LL one:
 * ncclSymkPickKernel groups no LL kernel), the first advertising the
 * plan's channels (with KernelCh), the second 0; one kernel whose KernelCh
 * all hang off the first Coll. */
static void issue_sym_group(sim_comm *c, const sim_op_desc *d, sim_work *w) {
  sim_ctx *x = &c->px;
  int abi = x->d->abi, rank = c->r->rank, m = x->on ? sim_mask_now(x) : 0;
  nt_descr_v5 e;
  void *gapi = NULL, *capi[2] = {NULL, NULL};
  if (sim_mask_wants(abi, m, NT_EV_GROUP_API)) {
    e = sim_api_descr(NT_EV_GROUP_API, NULL);
    e.groupApi.groupDepth = 1;
    gapi = sim_start(x, &e);
  }
  sim_record(x, gapi, NT_ST_GROUP_START_API_STOP, NULL);
  for (int i = 0; i < 2 && sim_mask_wants(abi, m, NT_EV_COLL_API); i++) {
    e = sim_api_descr(NT_EV_COLL_API, gapi);
    e.collApi.func = d[i].func;
    e.collApi.count = (size_t)(d[i].bytes / 4);
    e.collApi.datatype = "ncclFloat32";
    capi[i] = sim_start(x, &e);
    sim_stop(x, capi[i]);
  }
  sim_record(x, gapi, NT_ST_GROUP_END_API_START, NULL);
  if (sim_sym_reported(x->d->nccl_version)) {
    if (sim_mask_wants(abi, m, NT_EV_KERNEL_LAUNCH)) {
      e = sim_api_descr(NT_EV_KERNEL_LAUNCH, gapi);
      sim_stop(x, sim_start(x, &e));
    }
    void *group = NULL, *coll[2] = {NULL, NULL};
    if (sim_mask_wants(abi, m, NT_EV_GROUP)) {
      e = sim_descr(NT_EV_GROUP, NULL, 0);
      group = sim_start(x, &e);
    }
    const char *variant = sim_sym_variant(d[0].func, SIM_SYM_LL_BELOW); /* not LL */
    for (int i = 0; i < 2; i++) {
      uint64_t *seq = &c->seqnum[func_index(d[i].func)];
      if (sim_mask_wants(abi, m, NT_EV_COLL)) {
        bool in_bytes = sim_counts_bytes(d[i].func);
        e = sim_descr(NT_EV_COLL, capi[i], rank);
        e.coll.seqNumber = *seq;
        e.coll.func = d[i].func;
        e.coll.count = in_bytes ? (size_t)d[i].bytes : (size_t)(d[i].bytes / 4);
        e.coll.datatype = in_bytes ? "ncclInt8" : "ncclFloat32";
        e.coll.nChannels = i == 0 && (m & NT_EV_KERNEL_CH) ? (uint8_t)c->r->cfg->channels : 0;
        e.coll.nWarps = 16;
        e.coll.algo = sim_sym_algo(variant);
        e.coll.proto = "";
        e.coll.parentGroup = group;
        coll[i] = sim_start_sym(x, &e, variant);
      }
      (*seq)++;
    }
    /* One kernel for the plan: the proxy thread times it, its KernelCh
     * against the first task's Coll. */
    sim_work k = w[1];
    k.coll = coll[0];
    k.recv_parent = NULL;
    k.sym = true;
    k.mask = m;
    k.bytes = w[0].bytes + w[1].bytes;
    sim_queue_push(c, &k);
    sim_stop(x, coll[0]);
    sim_stop(x, coll[1]);
    sim_stop(x, group);
  }
  sim_stop(x, gapi);
  sim_mark_launched(c->r->rank, c->index, w[0].seq);
  sim_mark_launched(c->r->rank, c->index, w[1].seq);
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
  *(void **)&tag = sim_driver_sym(&c->r->drv, "nccltop_tag");
  /* The deterministic schedule is a fixed number of collectives. */
  uint64_t n = cfg->deterministic ? (uint64_t)sim_det_iterations(cfg) : (uint64_t)cfg->iterations;
  uint64_t deadline = 0;
  if (!cfg->deterministic && cfg->duration_s > 0)
    deadline = c->r->t_start_ns + (uint64_t)(cfg->duration_s * 1e9);
  bool straggler = !cfg->deterministic && c->r->rank == cfg->straggler_rank;
  const char *phase = NULL;
  sim_pxn_app_begin(c); /* on failure the rank stops cleanly */
  if (cfg->graph)
    sim_graph_run(c, n, deadline, plan, cfg->deterministic ? SIM_GRAPH_OPS : (int)RT_STEP_OPS);
  for (uint64_t seq = 0; !cfg->graph && !sim_stopping(); seq++) {
    if (n && seq >= n) break;
    if (deadline && sim_real_ns() >= deadline) break;
    /* A straggler is late with every operation (slow data loader, say). */
    if (straggler && !nap_until(sim_real_ns() + (uint64_t)cfg->straggle_ms * 1000000ull)) break;
    sim_work w;
    sim_op_desc d = plan(c, seq, &w);
    sim_scn_plan(cfg, seq, &d, &w.scn); /* --collnet, --ce */
    if (tag && d.phase != phase) tag(d.phase);
    phase = d.phase;
    /* --run-ahead: no pause on the CPU; the GPU computes before each step. */
    uint64_t step_ops = cfg->deterministic ? SIM_DET_STEP_OPS : RT_STEP_OPS;
    w.gpu_at = sim_runahead_gpu_at(cfg, seq % step_ops == 0);
    if (!cfg->deterministic) w.launch_ns = sim_wall_ns(); /* 2.31's kernel phases */
    /* --symmetric: the step's first two ReduceScatters in one group (2.28+;
     * 2.27 makes only a lone collective symmetric, so there they go alone). */
    if (!cfg->deterministic && seq % RT_STEP_OPS == SIM_SYM_GROUP_AT && (!n || seq + 1 < n) &&
        sim_version_of(cfg) >= 228 && sim_sym_op(cfg, c->index, d.func)) {
      sim_work w2[2];
      sim_op_desc d2[2] = {d, plan(c, seq + 1, &w2[1])};
      sim_scn_plan(cfg, seq + 1, &d2[1], &w2[1].scn);
      w2[0] = w;
      w2[1].gpu_at = w.gpu_at;
      w2[1].launch_ns = w.launch_ns;
      if (sim_sym_op(cfg, c->index, d2[1].func)) {
        issue_sym_group(c, d2, w2);
        seq++;
        if (!cfg->deterministic && !cfg->run_ahead_ms) think(c, deadline);
        continue;
      }
    }
    issue(c, &d, &w);
    if (!cfg->deterministic && !cfg->run_ahead_ms) think(c, deadline);
  }
  sim_mark_finished(c->r->rank, c->index);
  sim_pxn_app_end(c); /* its pair's sends may still come: wait for them */
  sim_queue_close(c);
  return NULL;
}

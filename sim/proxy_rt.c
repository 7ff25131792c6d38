/* The real-time schedule of a simulated proxy thread: an event loop over
 * the steps of every op in flight. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/nccltop_proto.h"
#include "kthread.h"
#include "rank.h"
#include "runahead.h"
#include "schedule.h"
#include "symmetric.h"
#include "version.h"
#include "proxy_calls.h"

/* ---- real time ---- */

#define RT_WINDOW    4             /* steps of one op in flight (NCCL_STEPS is 8) */
#define RT_MAX_COLLS SIM_QUEUE_CAP /* operations appended at once (NCCL appends what is posted) */
#define RT_SLACK_NS  500000ull     /* events due this close are handled in one wake-up */
/* NCCL's loop spins while it waits, and a pass that progresses nothing is
 * idle: a wait longer than this is an Idle edge (and the next progress an
 * Active one). Edges then come at most once per wake-up, which bounds
 * their cost while keeping them at progress-loop frequency. */
#define RT_IDLE_GAP_NS  100000ull
#define RT_MAX_SLEEP_NS 20000000ull

enum { W_SEND_GPU, W_SEND_PEER, W_SEND_NET, W_RECV_NET, W_RECV_FLUSH, W_RECV_GPU };

/* Microseconds per step in each state, by rank profile. A rank's send peer
 * wait also grows with its receiver's GPU wait, and its recv network wait
 * with its sender's GPU wait, so a slow rank shows on its neighbours. */
static const uint16_t rt_profiles_us[4][6] = {
    {700, 250, 1400, 1300, 120, 500}, /* balanced */
    {400, 300, 4200, 3600, 100, 400}, /* slow network: send_net_wait */
    {3600, 200, 900, 900, 100, 2800}, /* slow GPU: send_gpu_wait */
    {500, 3000, 700, 2600, 100, 400}, /* a peer slow to give credit */
};

static int rt_profile(int rank, int ranks) {
  if (ranks < 3) return rank == 1 ? 1 : 0;
  switch (rank % 8) {
  case 1: return 1;
  case 2: return 2;
  case 5: return 3;
  default: return 0;
  }
}

typedef struct {
  bool used;
  void *h, *net;
  int step, stage;
  int tries; /* isend attempts left before one finds credit */
  uint64_t due, rest;
} rt_step;

typedef struct {
  sim_op op;
  int posted, done, inflight;
  bool begun, finished;
  double scale;      /* step durations shrink with the step size */
  uint64_t post_at;  /* when the next step may be posted; UINT64_MAX: not yet */
  uint64_t net_free; /* the op's transfers go one at a time */
  rt_step fl[RT_WINDOW];
} rt_op;

typedef struct {
  bool used;
  uint64_t seq;
  sim_work w;
  int dir_left[2]; /* ops of each direction not finished */
  int ch_left[SIM_MAX_CHANNELS];
  bool kch_started[SIM_MAX_CHANNELS];
  void *kch[SIM_MAX_CHANNELS];
  rt_op ops[SIM_MAX_CHANNELS][2];
  /* --symmetric (2.31): a kernel with no proxy op; its channels start when
   * it begins and stop at sym_due (real time). */
  bool sym, sym_begun;
  uint64_t sym_due;
} rt_coll;

typedef struct {
  sim_comm *c;
  int nch, prof, prof_next, prof_prev;
  rt_coll colls[RT_MAX_COLLS];
  int ncolls;
  uint64_t seq;
  bool active;
  uint64_t rng;                     /* the proxy's own: the application thread draws from c->rng */
  uint64_t kstop[SIM_MAX_CHANNELS]; /* when each channel's last kernel ended (GPU time) */
} rt_proxy;

static uint64_t rt_dur(rt_proxy *p, const rt_op *o, int what) {
  uint64_t us = rt_profiles_us[p->prof][what];
  if (what == W_SEND_PEER) us += rt_profiles_us[p->prof_next][W_RECV_GPU] * 2 / 5;
  if (what == W_RECV_NET) us += rt_profiles_us[p->prof_prev][W_SEND_GPU] * 2 / 5;
  uint64_t ns =
      (uint64_t)((double)us * 1000 * o->scale) * (uint64_t)(100 + 12 * (o->op.ch % 4)) / 100;
  return ns * (75 + sim_rand(&p->rng) % 51) / 100; /* +-25% */
}

static uint64_t rt_step_size(const sim_work *w, int s) {
  if (s < w->steps - 1) return w->step_size;
  return w->bytes - (uint64_t)(w->steps - 1) * w->step_size;
}

static void rt_active(rt_proxy *p) {
  if (!p->active && px_idle) px_ctrl_edge(p->c, NT_ST_CTRL_ACTIVE);
  p->active = true;
}

static void rt_idle(rt_proxy *p) {
  if (p->active && !px_idle) px_ctrl_edge(p->c, NT_ST_CTRL_IDLE);
  p->active = false;
}

/* Takes posted collectives (as many as fit) inside an Append burst. */
static void rt_append(rt_proxy *p) {
  sim_comm *c = p->c;
  void *h = NULL;
  bool burst = false;
  int added = 0;
  for (int i = 0; i < RT_MAX_COLLS && p->ncolls < RT_MAX_COLLS; i++) {
    rt_coll *k = &p->colls[i];
    if (k->used) continue;
    sim_work w;
    if (sim_queue_pop(c, &w, false) != 1) break;
    uint64_t stale[SIM_MAX_CHANNELS][2]; /* sub->transSize survives the slot's reuse */
    for (int ch = 0; ch < p->nch; ch++)
      for (int dir = 0; dir < 2; dir++) stale[ch][dir] = k->ops[ch][dir].op.trans;
    memset(k, 0, sizeof *k);
    for (int ch = 0; ch < p->nch; ch++)
      for (int dir = 0; dir < 2; dir++) k->ops[ch][dir].op.trans = stale[ch][dir];
    k->used = true;
    k->seq = p->seq++;
    k->w = w;
    p->ncolls++;
    if (w.sym) { /* NCCL posts nothing to the proxy for a symmetric kernel */
      k->sym = true;
      for (int ch = 0; ch < p->nch; ch++) k->ops[ch][0].finished = k->ops[ch][1].finished = true;
      continue;
    }
    if (!burst) { /* the burst of the first op taken */
      h = px_ctrl_start(c);
      px_ctrl_record(c, h, NT_ST_CTRL_APPEND, 0);
      burst = true;
    }
    for (int ch = 0; ch < p->nch; ch++) {
      for (int dir = 0; dir < 2; dir++) {
        rt_op *o = &k->ops[ch][dir];
        px_op_start(c, &k->w, &o->op, ch, dir == 0);
        o->post_at = UINT64_MAX;
        o->finished = o->op.skip; /* --pxn: the other process runs it */
        k->ch_left[ch] += !o->finished;
        k->dir_left[dir] += !o->finished;
        added += !o->finished;
      }
    }
    added += px_profiler_ops(c, &k->w);
  }
  if (!burst) return;
  px_ctrl_record(c, h, NT_ST_CTRL_APPEND_END, added);
  sim_stop(&c->px, h);
}

/* Whether a symmetric kernel enqueued before collective k is still running
 * (one stream: k's kernel waits for it). */
static bool rt_sym_before(const rt_proxy *p, const rt_coll *k) {
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    const rt_coll *j = &p->colls[i];
    if (j->used && j->sym && j->seq < k->seq) return true;
  }
  return false;
}

/* --symmetric (2.31): the kernel begins once every earlier collective's
 * kernel ended, the GPU is free (--run-ahead) and every rank has launched it
 * (its opening barrier, initial_sync, lasts until then, as a ring kernel's
 * does in rt_begin); its channels 0 .. n-1 run sim_sym_kernel_ns and stop
 * together. The profiler thread starts and stops their KernelCh against
 * the Coll. Returns when it next needs attention. */
static uint64_t rt_sym_run(rt_proxy *p, rt_coll *k, uint64_t now) {
  sim_comm *c = p->c;
  if (!k->sym_begun) {
    for (int i = 0; i < RT_MAX_COLLS; i++) {
      const rt_coll *j = &p->colls[i];
      if (j->used && j->seq < k->seq) return UINT64_MAX; /* stream order */
    }
    if (now < k->w.gpu_at && !sim_stopping()) return k->w.gpu_at;
    if (!sim_stopping() && !sim_all_launched(c->r->cfg->ranks, c->index, k->w.seq))
      return UINT64_MAX;
    uint64_t gpu = sim_wall_ns(), from = k->w.launch_ns;
    for (int ch = 0; ch < p->nch; ch++)
      if (p->kstop[ch] > from) from = p->kstop[ch];
    uint64_t kstart = gpu, synced = 0;
    if (px_kt && from && from < gpu) kstart = from, synced = gpu;
    for (int ch = 0; ch < p->nch; ch++)
      k->kch[ch] = px_kernel_start(c, &k->w, ch, kstart, synced, px_kernel_key(&k->w, ch));
    k->sym_begun = true;
    k->sym_due = now + sim_sym_kernel_ns(k->w.bytes, p->prof == 2);
  }
  if (now < k->sym_due && !sim_stopping()) return k->sym_due;
  uint64_t stop = sim_wall_ns();
  for (int ch = 0; ch < p->nch; ch++) {
    p->kstop[ch] = stop;
    px_kernel_stop(c, &k->w, k->kch[ch], stop, px_kernel_key(&k->w, ch));
    k->kch[ch] = NULL;
  }
  k->used = false;
  p->ncolls--;
  return UINT64_MAX;
}

/* Places the symmetric kernels at the head of the queue (2.31): NCCL posts
 * nothing to the proxy for them, so taking them is no Append burst and no
 * wake-up. */
static void rt_take_sym(rt_proxy *p) {
  sim_work w;
  while (p->ncolls < RT_MAX_COLLS && sim_queue_peek(p->c, &w) && w.sym) {
    for (int i = 0; i < RT_MAX_COLLS; i++) {
      rt_coll *k = &p->colls[i];
      if (k->used) continue;
      if (sim_queue_pop(p->c, &w, false) != 1) return;
      memset(k, 0, sizeof *k);
      k->used = true;
      k->seq = p->seq++;
      k->w = w;
      k->sym = true;
      for (int ch = 0; ch < p->nch; ch++) k->ops[ch][0].finished = k->ops[ch][1].finished = true;
      p->ncolls++;
      break;
    }
  }
}

/* Collectives with proxy work in flight (not symmetric kernels). */
static int rt_ring_colls(const rt_proxy *p) {
  int n = 0;
  for (int i = 0; i < RT_MAX_COLLS; i++) n += p->colls[i].used && !p->colls[i].sym;
  return n;
}

static uint64_t rt_progress(rt_proxy *p, uint64_t now, uint64_t limit);

/* Sleeps inside a Sleep/Wakeup burst until proxy work arrives; false when
 * the application is done and nothing is left. Symmetric kernels (2.31)
 * wake no proxy: they are timed here without ending the burst. */
static bool rt_sleep(rt_proxy *p, bool *slept) {
  sim_comm *c = p->c;
  rt_take_sym(p);
  pthread_mutex_lock(&c->mu);
  bool finished = c->closed && c->count == 0 && p->ncolls == 0;
  pthread_mutex_unlock(&c->mu);
  *slept = !finished;
  if (finished) return false;
  void *h = px_ctrl_start(c);
  px_ctrl_record(c, h, NT_ST_CTRL_SLEEP, 0);
  bool got = false;
  for (;;) {
    rt_take_sym(p);
    sim_work w;
    /* Proxy work wakes it, once there is room to append it: with every
     * slot taken by symmetric kernels, they must run first (they come
     * before it on the stream), timed here. */
    if (sim_queue_peek(c, &w) && !w.sym && p->ncolls < RT_MAX_COLLS) {
      got = true;
      break;
    }
    if (p->ncolls == 0) {
      if (!sim_queue_wait(c)) break; /* closed and empty */
      continue;
    }
    uint64_t now = sim_real_ns();
    uint64_t next = rt_progress(p, now, now + RT_SLACK_NS);
    if (p->ncolls == 0) continue;
    now = sim_real_ns();
    uint64_t wait = next > now ? next - now : 0;
    sim_sleep_ns(wait < 1000000ull ? wait : 1000000ull); /* new work is seen within 1 ms */
  }
  px_ctrl_record(c, h, NT_ST_CTRL_WAKEUP, 0);
  sim_stop(&c->px, h);
  return got;
}

static void rt_op_finished(rt_proxy *p, rt_coll *k, rt_op *o) {
  sim_comm *c = p->c;
  int ch = o->op.ch, dir = o->op.send ? 0 : 1;
  o->finished = true;
  if (--k->ch_left[ch] == 0) {
    p->kstop[ch] = sim_wall_ns();
    px_kernel_stop(c, &k->w, k->kch[ch], p->kstop[ch], px_kernel_key(&k->w, ch));
    k->kch[ch] = NULL;
  }
  /* NCCL stops the ops of one proxy args (one direction) together. */
  if (--k->dir_left[dir] == 0)
    for (int i = 0; i < p->nch; i++) px_op_stop(c, &k->ops[i][dir].op);
  if (k->dir_left[0] == 0 && k->dir_left[1] == 0) {
    k->used = false;
    p->ncolls--;
  }
}

/* An op starts progressing once the same connection is done with the
 * previous collective. */
static bool rt_begin(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t now) {
  int ch = o->op.ch, dir = o->op.send ? 0 : 1;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    rt_coll *j = &p->colls[i];
    if (j->used && j->seq < k->seq && !j->ops[ch][dir].finished) return false;
  }
  if (rt_sym_before(p, k)) return false; /* a symmetric kernel still runs before it */
  /* Data flows only once every rank has enqueued the operation. */
  if (!sim_stopping() && !sim_all_launched(p->c->r->cfg->ranks, p->c->index, k->w.seq))
    return false;
  double frac = (double)k->w.step_size / (double)SIM_RT_STEP_BYTES;
  o->scale = 0.15 + 0.85 * (frac < 1 ? frac : 1);
  rt_active(p);
  o->begun = true;
  o->post_at = now;
  px_op_in_progress(p->c, &o->op);
  if (!k->kch_started[ch]) {
    k->kch_started[ch] = true;
    uint64_t gpu = sim_wall_ns() - 20000, kstart = gpu, synced = 0;
    /* 2.31 (KernelPhase): a rank's kernel begins once its application
     * launched it and the channel's previous kernel ended, then waits in
     * its opening barrier (initial_sync) until every rank's kernel is
     * there: now, when the last rank launched it. So the ranks a late one
     * holds back spend that wait in initial_sync, the late one none. The
     * KernelCh then spans the wait, as a real kernel's does. Older
     * versions keep the kernel's start at now (no phases to show it). */
    if (px_kt && k->w.launch_ns) {
      uint64_t from = k->w.launch_ns > p->kstop[ch] ? k->w.launch_ns : p->kstop[ch];
      if (from < gpu) kstart = from, synced = gpu;
    }
    k->kch[ch] = px_kernel_start(p->c, &k->w, ch, kstart, synced, px_kernel_key(&k->w, ch));
  }
  return true;
}

static void rt_post(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t t) {
  int s = o->posted++;
  /* Steps can leave out of order here (their durations are random), so the
   * slot of step s - RT_WINDOW may still be busy: take any free one. */
  rt_step *st = &o->fl[0];
  for (int i = 0; i < RT_WINDOW; i++)
    if (!o->fl[i].used) {
      st = &o->fl[i];
      break;
    }
  memset(st, 0, sizeof *st);
  st->used = true;
  st->step = s;
  st->h = px_step_start(p->c, &k->w, &o->op, s);
  o->inflight++;
  o->post_at = UINT64_MAX; /* the next one follows when this one leaves its first state */
  if (t < k->w.gpu_at) t = k->w.gpu_at; /* --run-ahead: the GPU is still computing */
  if (o->op.send) {
    px_op_state_v3(p->c, &o->op, V3_SEND_POSTED, o->posted);
    px_step_record(p->c, &o->op, st->h, NT_ST_STEP_SEND_GPU_WAIT);
    st->due = t + rt_dur(p, o, W_SEND_GPU);
  } else {
    px_op_state_v3(p->c, &o->op, V3_RECV_POSTED, o->posted);
    px_step_record(p->c, &o->op, st->h, NT_ST_STEP_RECV_WAIT);
    st->net = o->op.h ? px_net_start(p->c, &o->op, st->h, rt_step_size(&k->w, s)) : NULL;
    st->due = (t > o->net_free ? t : o->net_free) + rt_dur(p, o, W_RECV_NET);
    o->net_free = st->due;
  }
}

/* Moves a step to its next state at its due time. */
static void rt_advance(rt_proxy *p, rt_coll *k, rt_op *o, rt_step *st) {
  sim_comm *c = p->c;
  uint64_t t = st->due;
  if (st->stage == 0) o->post_at = t;
  bool done = false;
  if (o->op.send) {
    switch (st->stage) {
    case 0: {
      /* The credit model: mostly the first isend finds credit, sometimes
       * one or two more tries are needed (a SendPeerWait each). */
      uint64_t peer = rt_dur(p, o, W_SEND_PEER), r = sim_rand(&p->rng) % 16;
      int tries = r < 12 ? 1 : r < 15 ? 2 : 3;
      px_op_state_v3(c, &o->op, V3_SEND_REM_FIFO_WAIT, st->step + 1);
      px_step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      st->tries = tries - 1; /* tries still to record */
      st->rest = peer / (uint64_t)tries;
      st->due = t + st->rest;
      if (st->tries == 0) st->stage = 1; /* straight on to SendWait */
      break;
    }
    case 1: /* no credit yet: NCCL records SendPeerWait again per try */
      px_op_state_v3(c, &o->op, V3_SEND_REM_FIFO_WAIT, st->step + 1);
      px_step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      st->tries--;
      st->due = t + st->rest;
      break;
    case 2:
      if (sim_v_native_v3(px_ver))
        o->op.trans += rt_step_size(&k->w, st->step);
      else
        o->op.trans = rt_step_size(&k->w, st->step);
      px_op_state_v3(c, &o->op, V3_SEND_TRANSMITTED, st->step + 1);
      px_step_record(c, &o->op, st->h, NT_ST_STEP_SEND_WAIT);
      st->net = o->op.h ? px_net_start(c, &o->op, st->h, o->op.trans) : NULL;
      st->due = (t > o->net_free ? t : o->net_free) + rt_dur(p, o, W_SEND_NET);
      o->net_free = st->due;
      break;
    default: done = true; break;
    }
  } else {
    switch (st->stage) {
    case 0:
      sim_stop(&c->px, st->net); /* the data arrived */
      st->net = NULL;
      if (sim_v_native_v3(px_ver))
        o->op.trans += rt_step_size(&k->w, st->step);
      else
        o->op.trans = rt_step_size(&k->w, st->step);
      px_op_state_v3(c, &o->op, V3_RECV_RECEIVED, st->step + 1);
      px_step_record(c, &o->op, st->h, NT_ST_STEP_RECV_FLUSH_WAIT);
      st->due = t + rt_dur(p, o, W_RECV_FLUSH);
      break;
    case 1:
      px_op_state_v3(c, &o->op, V3_RECV_TRANSMITTED, st->step + 1);
      px_step_record(c, &o->op, st->h, NT_ST_STEP_RECV_GPU_WAIT);
      st->due = t + rt_dur(p, o, W_RECV_GPU);
      break;
    default: done = true; break;
    }
  }
  /* A send stays at stage 1 while tries are left (one per pass). */
  if (!(o->op.send && st->stage == 1 && st->tries > 0)) st->stage++;
  if (!done) return;
  sim_stop(&c->px, st->net);
  st->net = NULL;
  sim_stop(&c->px, st->h);
  st->used = false;
  o->inflight--;
  ++o->done;
  px_op_state_v3(c, &o->op, o->op.send ? V3_SEND_DONE : V3_RECV_DONE, o->done);
  if (o->done == k->w.steps) rt_op_finished(p, k, o);
}

/* Runs one op's events due by `limit`; returns when its next one is due. */
static uint64_t rt_op_run(rt_proxy *p, rt_coll *k, rt_op *o, uint64_t now, uint64_t limit) {
  px_op_first_pass(p->c, &o->op); /* 2.26: the ProxyOp starts at the first pass */
  if (!o->begun && !rt_begin(p, k, o, now)) return UINT64_MAX;
  while (!o->finished) {
    rt_step *st = NULL;
    for (int i = 0; i < RT_WINDOW; i++)
      if (o->fl[i].used && (!st || o->fl[i].due < st->due)) st = &o->fl[i];
    bool can_post = o->posted < k->w.steps && o->inflight < RT_WINDOW;
    uint64_t post = can_post ? o->post_at : UINT64_MAX;
    uint64_t due = st ? st->due : UINT64_MAX;
    uint64_t next = post < due ? post : due;
    if (next == UINT64_MAX || next > limit) return next;
    rt_active(p);
    if (post <= due)
      rt_post(p, k, o, post);
    else
      rt_advance(p, k, o, st);
  }
  return UINT64_MAX;
}

static uint64_t rt_progress(rt_proxy *p, uint64_t now, uint64_t limit) {
  rt_coll *order[RT_MAX_COLLS];
  int n = 0;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    if (!p->colls[i].used) continue;
    int j = n++;
    for (; j > 0 && order[j - 1]->seq > p->colls[i].seq; j--) order[j] = order[j - 1];
    order[j] = &p->colls[i];
  }
  uint64_t next = UINT64_MAX;
  for (int i = 0; i < n; i++) {
    rt_coll *k = order[i];
    if (k->sym) {
      uint64_t t = rt_sym_run(p, k, now);
      if (t < next) next = t;
      continue;
    }
    for (int ch = 0; ch < p->nch && k->used; ch++) {
      for (int dir = 0; dir < 2 && k->used; dir++) {
        if (k->ops[ch][dir].finished) continue;
        uint64_t t = rt_op_run(p, k, &k->ops[ch][dir], now, limit);
        if (t < next) next = t;
      }
    }
  }
  return next;
}

/* --stall-rank: at the stall time every proxy stops in the middle of an
 * operation, each in the state its place in the ring gives it. The stalled
 * rank's GPU stopped: its sends wait for the GPU to fill them, its receives
 * for the GPU to drain them. Its ring predecessor's sends wait for credit
 * from it; everyone else's receives wait for data from their predecessor,
 * and their sends for a GPU that waits for that data. So every waits-on
 * chain ends at the stalled rank, which waits on no one.
 *
 * The operation that freezes is one appended but not begun, so that every
 * connection posts a fresh step in that state: it is then the last change
 * each channel reports, whatever the steps before it were doing. */
static rt_coll *unbegun_coll(rt_proxy *p) {
  rt_coll *k = NULL;
  for (int i = 0; i < RT_MAX_COLLS; i++) {
    rt_coll *j = &p->colls[i];
    bool fresh = j->used && !j->sym; /* a symmetric kernel has no op to freeze */
    for (int ch = 0; ch < p->nch && fresh; ch++)
      fresh = !j->ops[ch][0].begun && !j->ops[ch][1].begun;
    if (fresh && (!k || j->seq < k->seq)) k = j;
  }
  return k;
}

static void rt_freeze(rt_proxy *p, rt_coll *k) {
  sim_comm *c = p->c;
  const nt_sim_config *cfg = c->r->cfg;
  int rank = c->r->rank, stalled = cfg->stall_rank, n = cfg->ranks;
  uint64_t now = sim_real_ns();
  rt_active(p);
  for (int ch = 0; ch < p->nch; ch++) {
    for (int dir = 0; dir < 2; dir++) {
      rt_op *o = &k->ops[ch][dir];
      if (o->finished) continue; /* --pxn: not this process's */
      o->begun = true;
      o->scale = 1;
      o->post_at = now;
      px_op_in_progress(c, &o->op);
      rt_post(p, k, o, now); /* records SendGPUWait or RecvWait */
      rt_step *st = NULL;
      for (int i = 0; i < RT_WINDOW; i++)
        if (o->fl[i].used) st = &o->fl[i];
      if (!st) continue;
      if (rank == stalled && dir == 1) {
        px_step_record(c, &o->op, st->h, NT_ST_STEP_RECV_FLUSH_WAIT);
        px_step_record(c, &o->op, st->h, NT_ST_STEP_RECV_GPU_WAIT);
      } else if (rank != stalled && dir == 0 && (rank + 1) % n == stalled) {
        px_step_record(c, &o->op, st->h, NT_ST_STEP_SEND_PEER_WAIT);
      }
    }
  }
  rt_idle(p); /* nothing progresses: NCCL's loop goes idle with ops in flight */
}

void sim_proxy_rt_main(sim_comm *c) {
  rt_proxy *p = calloc(1, sizeof *p);
  if (!p) {
    fprintf(stderr, "nccltop sim: rank %d: out of memory\n", c->r->rank);
    sim_work w;
    while (sim_queue_pop(c, &w, true) == 1) {
    }
    return;
  }
  const nt_sim_config *cfg = c->r->cfg;
  int rank = c->r->rank, n = cfg->ranks;
  p->c = c;
  p->rng = 0x7072000000000000ull ^ ((uint64_t)c->r->rank << 20) ^ ((uint64_t)c->index << 8) ^ 0x2b;
  p->nch = cfg->channels;
  p->prof = rt_profile(rank, n);
  p->prof_next = rt_profile((rank + 1) % n, n);
  p->prof_prev = rt_profile((rank - 1 + n) % n, n);
  uint64_t stall_at = UINT64_MAX;
  if (cfg->stall_rank >= 0 && sim_sh)
    stall_at = sim_sh->start_wall_ns + (uint64_t)(cfg->stall_after_s * 1e9);
  bool frozen = false;
  uint64_t end =
      cfg->duration_s > 0 ? c->r->t_start_ns + (uint64_t)(cfg->duration_s * 1e9) : UINT64_MAX;
  bool slept = false;
  px_pass_end(c, true);
  for (;; px_pass_end(c, !p->active)) {
    if (frozen) {
      if (!sim_stopping() && sim_real_ns() < end) {
        sim_sleep_ns(RT_MAX_SLEEP_NS);
        continue;
      }
      frozen = false; /* stopping, or --duration is over: finish as usual */
    }
    if (!sim_stopping() && sim_wall_ns() >= stall_at) {
      if (p->ncolls < RT_MAX_COLLS && !sim_queue_empty(c)) rt_append(p);
      rt_coll *k = unbegun_coll(p);
      if (k) {
        rt_freeze(p, k);
        frozen = true;
        stall_at = UINT64_MAX;
        continue;
      }
    }
    if (p->ncolls < RT_MAX_COLLS && !sim_queue_empty(c)) rt_append(p);
    if (rt_ring_colls(p) == 0) { /* nothing for the proxy (symmetric kernels aside) */
      rt_idle(p);
      if (!rt_sleep(p, &slept)) break;
      continue;
    }
    /* Stopping: drain what is in flight without waiting for it. */
    bool fast = sim_stopping();
    uint64_t now = sim_real_ns();
    uint64_t next = rt_progress(p, now, fast ? UINT64_MAX : now + RT_SLACK_NS);
    if (p->ncolls == 0 || fast) continue;
    now = sim_real_ns();
    if (next <= now) continue;
    uint64_t wait = next - now;
    if (wait > RT_IDLE_GAP_NS) rt_idle(p);
    sim_sleep_ns(wait < RT_MAX_SLEEP_NS ? wait : RT_MAX_SLEEP_NS);
  }
  px_ctrl_shutdown(c, slept);
  free(p);
}

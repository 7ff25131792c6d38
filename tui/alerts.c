/* Stall and straggler diagnosis: what the overview puts at the top.
 *
 * States (PROTOCOL 1.2): a channel with operations in flight is queued when
 * the GPU has not reached them yet (CPU run-ahead: the proxy posted steps
 * that wait for a kernel still behind compute), running when one has begun
 * (a 1.1 publisher does not say: treated as running). A channel is STUCK
 * when it is running and its step has not moved for the stall time; queued
 * work never alarms on its own, however old.
 *
 * The waits-on graph, built once per call: a rank waits on a peer through
 * each in-flight channel in a wait on that peer (send_peer_wait: no credit
 * from the receiver; recv_net_wait: no data from the sender; send_net_wait:
 * the transfer does not complete; and a running channel with no step in
 * progress), whatever its run state and however long: ranks do not freeze
 * at the same instant, and one whose wait is younger than the stall time
 * must not end the walk there.
 * send_gpu_wait, recv_flush_wait and recv_gpu_wait wait on the rank's own
 * GPU: no edge; but a PXN row (relay_rank >= 0: this process's proxy runs
 * another rank's operations) waiting on a GPU waits on that rank's GPU: an
 * edge to it. A publisher that stopped sending (stale) or ended has no
 * edges: its last snapshot is not what it does now.
 *
 * Roots: from the stuck ranks, follow the edges; the sink strongly
 * connected components reached are where the waits end: one rank (stuck in
 * its own GPU wait; or queued, idle, progressing other work, silent) or a
 * cycle of ranks that all wait on each other. Each is one root alert, with
 * how many ranks wait on it, directly or not (a reverse walk from it). A
 * silent rank of a communicator whose other ranks have work in flight older
 * than the stall time is a root too (an operation starts only when every
 * rank enqueued it: the others may be merely queued).
 *
 * Ranks are indexed by (communicator, rank); a communicator's hash is 0 on
 * NCCL 2.26 until its first operation, so ranks with hash 0 are only ever
 * matched within their own process, never compared across processes.
 *
 * The report: roots first (most waiters first), then the stalls that
 * explain them, then the other stalls (one line per communicator when more
 * than COLLAPSE_AT of its ranks are stuck), operations that do not
 * progress (likewise), stragglers, silent publishers, drops; the cap cuts
 * from the end, never a root before the rest.
 *
 * A straggler is a rank late by more than the stall time: the other ranks
 * of its communicator launched an operation of some function (NCCL's
 * per-function sequence numbers, the counts RAS compares) at least that
 * long ago, and it has not yet. A rank a few operations behind that keeps
 * pace (a shallower queue) is not one. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

#define COLLAPSE_AT 4 /* more ranks of a communicator than this: one line for them */
#define MAX_GROUPS  16

const char *nt_alert_kind_name(int kind) {
  static const char *const names[NT_ALERT_COUNT] = {"root",      "stall",  "hung_op",
                                                    "straggler", "silent", "drops"};
  return kind >= 0 && kind < NT_ALERT_COUNT ? names[kind] : "unknown";
}

/* A rank's stuck channels of one (direction, wait, peer). */
typedef struct {
  int dir, wait, peer;
  uint32_t count;
  double age;
} stall_group;

typedef struct {
  nt_model_rank r;
  proc_slot *slot;
  bool silent;    /* stale or ended: its last snapshot is not now */
  bool stuck;     /* a running channel without progress for the stall time */
  int gpu_wait;   /* a stuck wait on its own GPU, NT_WAIT_NONE */
  int first_wait; /* the wait of its oldest stuck channel */
  double stuck_age;
  uint32_t queued, running; /* channels with ops in flight, by run state */
  double old_age;           /* oldest in-flight work older than the stall time; 0 none */
  int missing_peer;         /* a peer waited on that nccltop does not see, -1 */
  uint32_t e0, ne;          /* edges: c->edges[e0 .. e0 + ne) */
  uint32_t g0, ng;          /* stuck groups: c->groups[g0 .. g0 + ng) */
  const nt_oplog_row *hung; /* its oldest operation that does not progress */
  uint32_t nhung;
  /* the graph */
  bool reach, onstack;
  int32_t index, low, scc;
  uint32_t stamp;  /* the reverse walk that last visited it */
  int32_t root;    /* the root its waits lead to: -1 none, -2 several */
  bool direct;     /* waits on a root's rank directly */
  bool named_root; /* a root alert names it */
} rank_info;

/* An alert and where it goes in the report. */
typedef struct {
  nt_alert a;
  int prio;
  double key; /* larger first within a priority */
} item;

enum { P_ROOT, P_EXPLAIN, P_STALL, P_HUNG, P_STRAGGLER, P_SILENT, P_DROPS };

typedef struct {
  uint32_t first, n; /* members: c->members[first .. first + n) */
  uint32_t waiters;
  double age;
} root_info;

typedef struct {
  nt_model *m;
  rank_info *ranks;
  uint32_t n;
  uint32_t *edges, nedges;
  stall_group *groups;
  uint32_t ngroups;
  uint32_t *rev_off, *rev; /* reverse edges, CSR */
  uint32_t *members;       /* ranks of each SCC, SCC after SCC */
  uint32_t *scc_first, nscc;
  bool *scc_sink;
  root_info *roots;
  uint32_t nroots;
  item *items;
  uint32_t nitems, items_cap;
  bool oom;
  uint64_t stall_ns;
  double now_s;
  bool multi_comm; /* ranks of more than one communicator */
} ctx;

/* An age in seconds, written as the screen writes durations (units.h):
 * 850ms, 4.60s, 12.5s. The buffer lives until the end of the enclosing
 * block. */
#define AGE(sec) nt_fmt_ns((sec)*1e9, (char[NT_UNIT_LEN]){0}, NT_UNIT_LEN)

static bool waits_on_peer(int wait) {
  return wait == NT_WAIT_SEND_PEER || wait == NT_WAIT_RECV_NET || wait == NT_WAIT_SEND_NET;
}

/* The alert's line; a long one is cut (the screen cuts it anyway). */
__attribute__((format(printf, 2, 3))) static void say(nt_alert *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->text, sizeof a->text, fmt, ap);
  va_end(ap);
}

static const char *who(const nt_model_process *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%s:%u", p->host[0] ? p->host : "?", p->pid);
  return buf;
}

static const char *comm_label(const nt_model_rank *r, char buf[48]) {
  if (r->comm_name[0])
    snprintf(buf, 48, "%.24s", r->comm_name);
  else
    snprintf(buf, 48, "%04llx", (unsigned long long)(r->comm_hash & 0xffff));
  return buf;
}

/* "host:pid", and the communicator when the job has several (a rank
 * number means something only within one). */
static const char *rank_who(const ctx *c, const rank_info *ri, char buf[160]) {
  char hp[96], cl[48];
  who(ri->r.proc, hp, sizeof hp);
  if (!c->multi_comm)
    snprintf(buf, 160, "%s", hp);
  else
    snprintf(buf, 160, "%s comm %s", hp, comm_label(&ri->r, cl));
  return buf;
}

static int rank_key_cmp(uint64_t hash, int rank, const nt_model_rank *r) {
  if (r->comm_hash != hash) return r->comm_hash < hash ? 1 : -1;
  return r->rank < rank ? 1 : r->rank > rank ? -1 : 0;
}

/* The first rank of (hash, rank) in the sorted table, or n. */
static uint32_t lower_bound(const ctx *c, uint64_t hash, int rank) {
  uint32_t lo = 0, hi = c->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (rank_key_cmp(hash, rank, &c->ranks[mid].r) > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Rank `rank` of communicator `hash` as seen from process `from`: hash 0
 * (NCCL 2.26 before the first operation) only within that process. */
static rank_info *find_rank(ctx *c, uint64_t hash, int rank, const nt_model_process *from) {
  for (uint32_t i = lower_bound(c, hash, rank);
       i < c->n && c->ranks[i].r.comm_hash == hash && c->ranks[i].r.rank == rank; i++)
    if (hash || c->ranks[i].r.proc == from) return &c->ranks[i];
  return NULL;
}

static nt_alert *add(ctx *c, int kind, int prio, double key, const rank_info *ri) {
  if (c->nitems == c->items_cap) {
    uint32_t cap = c->items_cap ? 2 * c->items_cap : 64;
    item *x = realloc(c->items, cap * sizeof *x);
    if (!x) {
      c->oom = true;
      return NULL;
    }
    c->items = x;
    c->items_cap = cap;
  }
  item *it = &c->items[c->nitems++];
  memset(it, 0, sizeof *it);
  it->prio = prio;
  it->key = key;
  nt_alert *a = &it->a;
  a->kind = kind;
  a->peer = -1;
  a->wait = NT_WAIT_NONE;
  a->func = NT_FUNC_OTHER;
  if (ri) {
    a->proc = ri->r.proc;
    a->comm_hash = ri->r.comm_hash;
    a->rank = ri->r.rank;
    a->nranks = ri->r.nranks;
  }
  return a;
}

/* Time a process's snapshot has aged since it arrived (0 once ended). */
static double since(const ctx *c, const nt_model_process *p) {
  return p->ended || c->now_s < p->cur_time_s ? 0 : c->now_s - p->cur_time_s;
}

/* ---- one pass over every process's rows ---- */

static void add_edge(ctx *c, rank_info *ri, int peer) {
  rank_info *to = find_rank(c, ri->r.comm_hash, peer, ri->r.proc);
  if (!to) {
    ri->missing_peer = peer;
    return;
  }
  if (to == ri) return;
  uint32_t t = (uint32_t)(to - c->ranks);
  for (uint32_t e = ri->e0; e < ri->e0 + ri->ne; e++)
    if (c->edges[e] == t) return;
  c->edges[c->nedges++] = t;
  ri->ne++;
}

/* A PXN row: this process's proxy ran another rank's operations. */
static bool relayed(const rank_info *ri, const nt_channel_row *ch) {
  return ch->relay_rank >= 0 && ch->relay_rank != ri->r.rank;
}

static void note_stuck(ctx *c, rank_info *ri, const nt_channel_row *ch, double age) {
  uint32_t j = ri->g0;
  while (j < ri->g0 + ri->ng &&
         !(c->groups[j].dir == ch->dir && c->groups[j].wait == ch->cur_wait &&
           c->groups[j].peer == ch->peer))
    j++;
  if (j == ri->g0 + ri->ng) {
    if (ri->ng == MAX_GROUPS) return;
    c->groups[j] = (stall_group){.dir = ch->dir, .wait = ch->cur_wait, .peer = ch->peer};
    ri->ng++;
    c->ngroups++;
  }
  c->groups[j].count++;
  if (age > c->groups[j].age) c->groups[j].age = age;
  if (!ri->stuck || age > ri->stuck_age) ri->first_wait = ch->cur_wait;
  ri->stuck = true;
  if (age > ri->stuck_age) ri->stuck_age = age;
  /* A PXN row's GPU wait is the relayed rank's GPU, not this one's. */
  if (!waits_on_peer(ch->cur_wait) && ch->cur_wait != NT_WAIT_NONE && !relayed(ri, ch))
    ri->gpu_wait = ch->cur_wait;
}

/* A rank's channel rows (one communicator's run of a snapshot). */
static void scan_channels(ctx *c, rank_info *ri, const nt_channel_row *rows, uint32_t n) {
  const nt_model_process *p = ri->r.proc;
  ri->e0 = c->nedges;
  ri->g0 = c->ngroups;
  for (uint32_t k = 0; k < n; k++) {
    const nt_channel_row *ch = &rows[k];
    if (ch->ops_started <= ch->ops_done) continue;
    bool queued = ch->run_state == NT_RUN_QUEUED;
    if (queued)
      ri->queued++;
    else
      ri->running++;
    if (waits_on_peer(ch->cur_wait) || (!queued && ch->cur_wait == NT_WAIT_NONE))
      add_edge(c, ri, ch->peer);
    else if (relayed(ri, ch)) /* PXN: this proxy waits on the relayed rank's GPU */
      add_edge(c, ri, ch->relay_rank);
    if (ch->progress_age_ns == UINT64_MAX || ch->progress_age_ns < c->stall_ns) continue;
    double age = (double)ch->progress_age_ns / 1e9 + since(c, p);
    if (age > ri->old_age) ri->old_age = age;
    if (!queued) note_stuck(c, ri, ch, age);
  }
}

/* In-flight operations: old work, and those that stopped progressing. A
 * queued one (the GPU has not reached it), one NCCL never reports done, or
 * one whose proxy work runs in another process, never hangs here. */
static void scan_op(ctx *c, rank_info *ri, const nt_oplog_row *op) {
  if (op->state != NT_OPS_IN_FLIGHT) return;
  if (op->age_ns >= c->stall_ns) {
    double age = (double)op->age_ns / 1e9 + since(c, ri->r.proc);
    if (age > ri->old_age) ri->old_age = age;
  }
  if (op->run_state == NT_RUN_QUEUED || (op->flags & (NT_OPF_UNREPORTED | NT_OPF_RELAYED))) return;
  uint64_t quiet = op->age_ns;
  if (op->run_state == NT_RUN_RUNNING && op->progress_age_ns != UINT64_MAX)
    quiet = op->progress_age_ns;
  if (quiet < c->stall_ns) return;
  ri->nhung++;
  if (!ri->hung || op->age_ns > ri->hung->age_ns) ri->hung = op;
}

static void scan(ctx *c, const uint32_t *pos) {
  for (uint32_t i = 0; i < c->m->nprocs; i++) {
    proc_slot *slot = c->m->procs[i];
    const nt_snapshot *s = slot->pub.cur;
    if (!s || slot->pub.stale || slot->pub.ended) continue;
    for (uint32_t k = 0; k < s->nchannels;) {
      uint16_t ci = s->channels[k].comm_index;
      uint32_t end = k;
      while (end < s->nchannels && s->channels[end].comm_index == ci) end++;
      if (ci < s->ncomms)
        scan_channels(c, &c->ranks[pos[slot->rank_base + ci]], &s->channels[k], end - k);
      k = end;
    }
    for (uint32_t k = 0; k < s->noplog; k++)
      if (s->oplog[k].comm_index < s->ncomms)
        scan_op(c, &c->ranks[pos[slot->rank_base + s->oplog[k].comm_index]], &s->oplog[k]);
  }
}

/* ---- roots: sink strongly connected components reached from stuck ranks ---- */

static bool reach_from_stuck(ctx *c, uint32_t *queue) {
  uint32_t head = 0, tail = 0;
  for (uint32_t i = 0; i < c->n; i++)
    if (c->ranks[i].stuck) {
      c->ranks[i].reach = true;
      queue[tail++] = i;
    }
  while (head < tail) {
    const rank_info *ri = &c->ranks[queue[head++]];
    for (uint32_t e = ri->e0; e < ri->e0 + ri->ne; e++) {
      rank_info *to = &c->ranks[c->edges[e]];
      if (to->reach) continue;
      to->reach = true;
      queue[tail++] = c->edges[e];
    }
  }
  return tail > 0;
}

/* Tarjan's algorithm, iterative, over the reached ranks; the members of
 * each component land in c->members, one component after another. */
static void components(ctx *c, uint32_t *stack, uint32_t *cs_node, uint32_t *cs_edge) {
  int32_t index = 0;
  uint32_t sp = 0, nm = 0;
  for (uint32_t s0 = 0; s0 < c->n; s0++) {
    if (!c->ranks[s0].reach || c->ranks[s0].index >= 0) continue;
    uint32_t csp = 0;
    rank_info *r0 = &c->ranks[s0];
    r0->index = r0->low = index++;
    r0->onstack = true;
    stack[sp++] = s0;
    cs_node[csp] = s0;
    cs_edge[csp++] = 0;
    while (csp) {
      uint32_t v = cs_node[csp - 1];
      rank_info *rv = &c->ranks[v];
      if (cs_edge[csp - 1] < rv->ne) {
        uint32_t w = c->edges[rv->e0 + cs_edge[csp - 1]++];
        rank_info *rw = &c->ranks[w];
        if (rw->index < 0) {
          rw->index = rw->low = index++;
          rw->onstack = true;
          stack[sp++] = w;
          cs_node[csp] = w;
          cs_edge[csp++] = 0;
        } else if (rw->onstack && rw->index < rv->low) {
          rv->low = rw->index;
        }
        continue;
      }
      csp--;
      if (rv->low == rv->index) {
        c->scc_first[c->nscc] = nm;
        uint32_t w;
        do {
          w = stack[--sp];
          c->ranks[w].onstack = false;
          c->ranks[w].scc = (int32_t)c->nscc;
          c->members[nm++] = w;
        } while (w != v);
        c->nscc++;
      }
      if (csp) {
        rank_info *ru = &c->ranks[cs_node[csp - 1]];
        if (rv->low < ru->low) ru->low = rv->low;
      }
    }
  }
  c->scc_first[c->nscc] = nm;
  for (uint32_t k = 0; k < c->nscc; k++) c->scc_sink[k] = true;
  for (uint32_t v = 0; v < c->n; v++) {
    const rank_info *ri = &c->ranks[v];
    if (!ri->reach) continue;
    for (uint32_t e = ri->e0; e < ri->e0 + ri->ne; e++)
      if (c->ranks[c->edges[e]].scc != ri->scc) c->scc_sink[ri->scc] = false;
  }
}

static bool reverse_edges(ctx *c) {
  c->rev_off = calloc((size_t)c->n + 1, sizeof *c->rev_off);
  c->rev = malloc(((size_t)c->nedges + 1) * sizeof *c->rev);
  if (!c->rev_off || !c->rev) return false;
  for (uint32_t e = 0; e < c->nedges; e++) c->rev_off[c->edges[e] + 1]++;
  for (uint32_t v = 0; v < c->n; v++) c->rev_off[v + 1] += c->rev_off[v];
  uint32_t *fill = malloc(((size_t)c->n + 1) * sizeof *fill);
  if (!fill) return false;
  memcpy(fill, c->rev_off, c->n * sizeof *fill);
  for (uint32_t v = 0; v < c->n; v++) {
    const rank_info *ri = &c->ranks[v];
    for (uint32_t e = ri->e0; e < ri->e0 + ri->ne; e++) c->rev[fill[c->edges[e]]++] = v;
  }
  free(fill);
  return true;
}

/* Ranks whose waits lead to root k (its members excluded), directly or
 * not: a breadth-first walk back along the edges. */
static uint32_t walk_back(ctx *c, uint32_t k, uint32_t *queue) {
  const root_info *rt = &c->roots[k];
  uint32_t head = 0, tail = 0, n = 0, stamp = k + 1;
  for (uint32_t i = 0; i < rt->n; i++) {
    uint32_t v = c->members[rt->first + i];
    c->ranks[v].stamp = stamp;
    c->ranks[v].named_root = true;
    queue[tail++] = v;
  }
  uint32_t level_end = tail;
  bool first_level = true;
  while (head < tail) {
    if (head == level_end) {
      level_end = tail;
      first_level = false;
    }
    uint32_t y = queue[head++];
    for (uint32_t e = c->rev_off[y]; e < c->rev_off[y + 1]; e++) {
      rank_info *from = &c->ranks[c->rev[e]];
      if (from->stamp == stamp) continue;
      from->stamp = stamp;
      from->root = from->root == -1 ? (int32_t)k : -2;
      if (first_level) from->direct = true;
      queue[tail++] = c->rev[e];
      n++;
    }
  }
  return n;
}

static void waiters_text(uint32_t waiting, bool them, char buf[64]) {
  const char *on = them ? "them" : "it";
  if (waiting == 0)
    snprintf(buf, 64, "no other rank waits on %s yet", on);
  else if (waiting == 1)
    snprintf(buf, 64, "1 rank waits on %s", on);
  else
    snprintf(buf, 64, "%u ranks wait on %s", waiting, on);
}

static int u32_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void say_root(ctx *c, uint32_t k) {
  const root_info *rt = &c->roots[k];
  rank_info *ri = &c->ranks[c->members[rt->first]];
  nt_alert *a = add(c, NT_ALERT_ROOT, P_ROOT, (double)rt->waiters + rt->age / 1e9, ri);
  if (!a) return;
  char me[160], waiters[64];
  a->count = rt->waiters;
  waiters_text(rt->waiters, rt->n > 1, waiters);
  if (rt->n > 1) { /* a cycle: its ranks in order (the table's order) */
    qsort(&c->members[rt->first], rt->n, sizeof *c->members, u32_cmp);
    char list[96] = "", cl[48];
    size_t used = 0;
    for (uint32_t i = 0; i < rt->n && used < sizeof list - 16; i++) {
      int w = snprintf(list + used, sizeof list - used, "%s%d", i ? ", " : "",
                       c->ranks[c->members[rt->first + i]].r.rank);
      if (w > 0) used += (size_t)w;
    }
    a->age_s = rt->age;
    say(a,
        "ranks %s%s of comm %s wait on each other (a cycle of %u ranks, nobody else holds them "
        "up): stalled %s; %s",
        list, used >= sizeof list - 16 ? "..." : "", comm_label(&ri->r, cl), rt->n, AGE(rt->age),
        waiters);
    return;
  }
  ri->slot->is_root = true;
  const nt_model_process *p = ri->r.proc;
  if (ri->stuck && ri->gpu_wait == NT_WAIT_NONE) a->peer = ri->missing_peer;
  if (ri->silent) {
    a->age_s = since(c, p);
    if (p->ended)
      say(a, "rank %d/%d %s ended while %s: look at how this process exited", ri->r.rank,
          ri->r.nranks, rank_who(c, ri, me), waiters);
    else
      say(a,
          "rank %d/%d %s stopped publishing %s ago and %s: look at this process (stopped, "
          "hung or overloaded)",
          ri->r.rank, ri->r.nranks, rank_who(c, ri, me), AGE(a->age_s), waiters);
  } else if (ri->stuck && ri->gpu_wait != NT_WAIT_NONE) {
    a->wait = ri->gpu_wait;
    a->age_s = ri->stuck_age;
    say(a,
        "rank %d/%d %s is where the waits end: stalled %s in %s, waiting on no other rank (its "
        "GPU or kernel is not progressing); %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), AGE(ri->stuck_age),
        nt_wait_name(ri->gpu_wait), waiters);
  } else if (ri->stuck && ri->missing_peer < 0) {
    a->age_s = ri->stuck_age;
    say(a,
        "rank %d/%d %s is where the waits end: stalled %s with no step in progress, waiting on "
        "no other rank nccltop sees; %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), AGE(ri->stuck_age), waiters);
  } else if (ri->stuck) {
    a->age_s = ri->stuck_age;
    say(a,
        "rank %d/%d %s is where the waits end: stalled %s waiting on rank %d, which nccltop "
        "does "
        "not see (not publishing?); %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), AGE(ri->stuck_age), ri->missing_peer,
        waiters);
  } else if (ri->queued && !ri->running) {
    a->age_s = ri->old_age;
    say(a,
        "rank %d/%d %s is where the waits end: its GPU has not reached the work in flight (queued "
        "%s): busy with other kernels, or blocked before them; %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), AGE(ri->old_age), waiters);
  } else if (!ri->queued && !ri->running) {
    say(a,
        "rank %d/%d %s is where the waits end: nothing in flight, it has not launched what the "
        "others wait for (late in host code?); %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), waiters);
  } else {
    say(a,
        "rank %d/%d %s is where the waits end: its work progresses, but not what the others wait "
        "for; %s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), waiters);
  }
}

/* A silent rank of a communicator whose other ranks have old work in
 * flight: they may be merely queued, waiting for it to enqueue. */
static void silent_roots(ctx *c) {
  double stall_s = (double)c->stall_ns / 1e9;
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g, old = 0;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    if (c->ranks[g].r.comm_hash == 0) { /* not one communicator: never compared */
      g = end;
      continue;
    }
    for (uint32_t i = g; i < end; i++) old += !c->ranks[i].silent && c->ranks[i].old_age > 0;
    for (uint32_t i = g; i < end && old; i++) {
      rank_info *ri = &c->ranks[i];
      if (!ri->silent || ri->named_root || ri->r.proc->ended) continue;
      /* Only work that can be waiting on it: not older than its silence
       * (and the stall time), so that a publisher merely late while the
       * others run ahead is no root. */
      double silent_s = since(c, ri->r.proc);
      uint32_t waiting = 0;
      for (uint32_t k = g; k < end; k++) {
        const rank_info *o = &c->ranks[k];
        waiting += !o->silent && o->old_age > 0 && o->old_age <= silent_s + stall_s;
      }
      if (!waiting || c->nroots == c->n) continue;
      root_info *rt = &c->roots[c->nroots++];
      c->members[c->scc_first[c->nscc]] = i; /* a component of its own, past the others */
      rt->first = c->scc_first[c->nscc];
      c->scc_first[c->nscc]++;
      rt->n = 1;
      rt->waiters = waiting;
      rt->age = silent_s;
      ri->named_root = true;
    }
    g = end;
  }
}

static bool find_roots(ctx *c) {
  uint32_t *q = malloc(((size_t)c->n + 1) * 3 * sizeof *q);
  c->members = malloc(((size_t)c->n + 1) * sizeof *c->members);
  c->scc_first = malloc(((size_t)c->n + 2) * sizeof *c->scc_first);
  c->scc_sink = malloc(((size_t)c->n + 1) * sizeof *c->scc_sink);
  c->roots = malloc(((size_t)c->n + 1) * sizeof *c->roots);
  if (!q || !c->members || !c->scc_first || !c->scc_sink || !c->roots || !reverse_edges(c)) {
    free(q);
    return false;
  }
  c->scc_first[0] = 0;
  if (reach_from_stuck(c, q)) components(c, q, q + c->n + 1, q + 2 * ((size_t)c->n + 1));
  for (uint32_t k = 0; k < c->nscc; k++) {
    if (!c->scc_sink[k]) continue;
    root_info *rt = &c->roots[c->nroots++];
    rt->first = c->scc_first[k];
    rt->n = c->scc_first[k + 1] - c->scc_first[k];
    rt->age = 0;
    for (uint32_t i = 0; i < rt->n; i++) {
      const rank_info *ri = &c->ranks[c->members[rt->first + i]];
      double age = ri->stuck ? ri->stuck_age : ri->silent ? since(c, ri->r.proc) : ri->old_age;
      if (age > rt->age) rt->age = age;
    }
  }
  for (uint32_t k = 0; k < c->nroots; k++) c->roots[k].waiters = walk_back(c, k, q);
  silent_roots(c);
  for (uint32_t k = 0; k < c->nroots; k++) say_root(c, k);
  free(q);
  return true;
}

/* ---- stalls ---- */

static void stall_lines(ctx *c, rank_info *ri, int prio) {
  for (uint32_t j = ri->g0; j < ri->g0 + ri->ng; j++) {
    const stall_group *g = &c->groups[j];
    nt_alert *a = add(c, NT_ALERT_STALL, prio, 0, ri);
    if (!a) return;
    char me[160], them[104] = "", hp[96];
    rank_info *peer = find_rank(c, ri->r.comm_hash, g->peer, ri->r.proc);
    if (peer) snprintf(them, sizeof them, " (%s)", who(peer->r.proc, hp, sizeof hp));
    a->peer = g->peer;
    a->wait = g->wait;
    a->count = g->count;
    a->age_s = g->age;
    const char *what = g->wait == NT_WAIT_NONE       ? "waiting on"
                       : waits_on_peer(g->wait)      ? "waiting on"
                       : g->wait == NT_WAIT_RECV_GPU ? "its GPU not draining data from"
                                                     : "its GPU not feeding";
    say(a, "rank %d/%d %s: %u %s channel%s stalled %s %s%s, %s rank %d%s", ri->r.rank, ri->r.nranks,
        rank_who(c, ri, me), g->count, g->dir == NT_DIR_RECV ? "recv" : "send",
        g->count == 1 ? "" : "s", AGE(g->age),
        g->wait == NT_WAIT_NONE ? "with no step in progress" : "in ",
        g->wait == NT_WAIT_NONE ? "" : nt_wait_name(g->wait), what, g->peer, them);
  }
}

/* One line for the stuck ranks of a communicator: how many, in which
 * waits, and where their waits lead. */
static void stall_summary(ctx *c, uint32_t g, uint32_t end, uint32_t nstuck) {
  uint32_t by_wait[NT_WAIT_COUNT + 1] = {0}, shown = 0;
  int32_t root = -1;
  double age = 0;
  const rank_info *first = NULL;
  for (uint32_t i = g; i < end; i++) {
    const rank_info *ri = &c->ranks[i];
    if (!ri->stuck || ri->named_root) continue;
    if (!first) first = ri;
    by_wait[ri->first_wait < NT_WAIT_COUNT ? ri->first_wait : NT_WAIT_COUNT]++;
    root = shown == 0 ? ri->root : root == ri->root ? root : -2;
    if (ri->stuck_age > age) age = ri->stuck_age;
    shown++;
  }
  if (!first) return;
  nt_alert *a = add(c, NT_ALERT_STALL, P_STALL, 0, first);
  if (!a) return;
  a->proc = NULL; /* many processes */
  a->rank = -1;
  a->count = shown;
  a->age_s = age;
  char parts[160] = "", cl[48], tail[96];
  size_t used = 0;
  uint32_t most = 0;
  for (int w = 0; w <= NT_WAIT_COUNT; w++) {
    if (!by_wait[w]) continue;
    if (by_wait[w] > most) most = by_wait[w], a->wait = w < NT_WAIT_COUNT ? w : NT_WAIT_NONE;
    int k = snprintf(parts + used, sizeof parts - used, "%s%u in %s", used ? ", " : "", by_wait[w],
                     w < NT_WAIT_COUNT ? nt_wait_name(w) : "no step");
    if (k > 0 && (size_t)k < sizeof parts - used) used += (size_t)k;
  }
  if (root >= 0) {
    const root_info *rt = &c->roots[root];
    const rank_info *rr = &c->ranks[c->members[rt->first]];
    a->peer = rr->r.rank;
    if (rt->n > 1)
      snprintf(tail, sizeof tail, "all waiting (directly or not) on the cycle of ranks %d...",
               rr->r.rank);
    else
      snprintf(tail, sizeof tail, "all waiting (directly or not) on rank %d", rr->r.rank);
  } else if (root == -1) {
    snprintf(tail, sizeof tail, "waiting on no root found");
  } else {
    snprintf(tail, sizeof tail, "waiting on several roots");
  }
  (void)nstuck;
  say(a, "comm %s: %u ranks stalled up to %s: %s; %s", comm_label(&first->r, cl), shown, AGE(age),
      parts, tail);
}

static void stalls(ctx *c) {
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g, nstuck = 0;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    for (uint32_t i = g; i < end; i++) nstuck += c->ranks[i].stuck && !c->ranks[i].named_root;
    for (uint32_t i = g; i < end; i++) {
      rank_info *ri = &c->ranks[i];
      if (!ri->stuck) continue;
      if (ri->named_root)
        stall_lines(c, ri, P_EXPLAIN);
      else if (nstuck <= COLLAPSE_AT)
        stall_lines(c, ri, ri->direct ? P_EXPLAIN : P_STALL);
    }
    if (nstuck > COLLAPSE_AT) stall_summary(c, g, end, nstuck);
    g = end;
  }
}

/* ---- operations that do not progress ---- */

static void hung_line(ctx *c, const rank_info *ri) {
  const nt_oplog_row *op = ri->hung;
  nt_alert *a = add(c, NT_ALERT_HUNG_OP, P_HUNG, 0, ri);
  if (!a) return;
  char me[160], size[32], seq[32] = "", more[48] = "";
  a->func = op->func;
  a->count = ri->nhung;
  a->age_s = (double)op->age_ns / 1e9 + since(c, ri->r.proc);
  if (op->kind == NT_OP_COLL) snprintf(seq, sizeof seq, " #%llu", (unsigned long long)op->seq);
  if (ri->nhung > 1) snprintf(more, sizeof more, "; %u operations not completing", ri->nhung);
  say(a, "rank %d/%d %s: %s%s (%s, %s/%s) in flight %s, %u of %u child events open%s", ri->r.rank,
      ri->r.nranks, rank_who(c, ri, me), nt_func_name(op->func), seq,
      nt_fmt_size((double)op->bytes, size, sizeof size), nt_algo_name(op->algo),
      nt_proto_name(op->proto), AGE(a->age_s), op->children_open, op->children, more);
}

static void hung_ops(ctx *c) {
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g, nh = 0, ops = 0;
    const rank_info *oldest = NULL;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    for (uint32_t i = g; i < end; i++) {
      const rank_info *ri = &c->ranks[i];
      if (!ri->hung) continue;
      nh++;
      ops += ri->nhung;
      if (!oldest || ri->hung->age_ns > oldest->hung->age_ns) oldest = ri;
    }
    if (nh && nh <= COLLAPSE_AT) {
      for (uint32_t i = g; i < end; i++)
        if (c->ranks[i].hung) hung_line(c, &c->ranks[i]);
    } else if (nh) {
      nt_alert *a = add(c, NT_ALERT_HUNG_OP, P_HUNG, 0, oldest);
      if (!a) return;
      const nt_oplog_row *op = oldest->hung;
      char cl[48], me[160], seq[32] = "";
      a->proc = NULL;
      a->rank = -1;
      a->func = op->func;
      a->count = nh;
      a->age_s = (double)op->age_ns / 1e9 + since(c, oldest->r.proc);
      if (op->kind == NT_OP_COLL) snprintf(seq, sizeof seq, " #%llu", (unsigned long long)op->seq);
      say(a,
          "comm %s: %u ranks have operations running without progress (%u operations); the oldest "
          "%s%s on rank %d (%s), in flight %s",
          comm_label(&oldest->r, cl), nh, ops, nt_func_name(op->func), seq, oldest->r.rank,
          rank_who(c, oldest, me), AGE(a->age_s));
    }
    g = end;
  }
}

/* ---- stragglers ---- */

void nt_alerts_free(nt_model *m) {
  free(m->tops);
  m->tops = NULL;
  m->ntops = m->tops_cap = 0;
}

static int top_key_cmp(uint64_t hash, int func, const nt_top_hist *h) {
  if (h->comm_hash != hash) return h->comm_hash < hash ? 1 : -1;
  return h->func < func ? 1 : h->func > func ? -1 : 0;
}

static int top_cmp(const void *a, const void *b) {
  const nt_top_hist *x = a;
  return top_key_cmp(x->comm_hash, x->func, b);
}

/* The history of (hash, func): the model keeps them sorted by key, and
 * communicators are visited in hash order, so a cursor into the sorted
 * part finds each; a new one goes at the end (room made beforehand). */
static nt_top_hist *top_hist(ctx *c, uint64_t hash, int func, uint32_t *cursor, uint32_t sorted) {
  nt_model *m = c->m;
  while (*cursor < sorted && top_key_cmp(hash, func, &m->tops[*cursor]) > 0) (*cursor)++;
  if (*cursor < sorted && top_key_cmp(hash, func, &m->tops[*cursor]) == 0) return &m->tops[*cursor];
  if (m->ntops == m->tops_cap) return NULL;
  nt_top_hist *h = &m->tops[m->ntops++];
  memset(h, 0, sizeof *h);
  h->comm_hash = hash;
  h->func = (uint8_t)func;
  return h;
}

/* Room for one more communicator's histories. */
static bool top_room(nt_model *m) {
  if (m->tops_cap - m->ntops >= NT_FUNC_COUNT) return true;
  uint32_t cap = m->tops_cap ? 2 * m->tops_cap : 4 * NT_FUNC_COUNT;
  nt_top_hist *x = realloc(m->tops, cap * sizeof *x);
  if (!x) return false;
  m->tops = x;
  m->tops_cap = cap;
  return true;
}

/* Notes the communicator's top count now, keeping only samples above
 * `least` (the least any live rank launched: older ones explain nobody). */
static void top_note(nt_top_hist *h, uint64_t top, uint64_t least, double now) {
  uint32_t keep = 0;
  for (uint32_t i = 0; i < h->n; i++)
    if (h->top[i] > least && h->top[i] <= top) h->t[keep] = h->t[i], h->top[keep++] = h->top[i];
  h->n = keep;
  if (top <= least || (h->n && h->top[h->n - 1] >= top)) return;
  if (h->n == NT_TOP_SAMPLES) { /* thin out: every other one, the oldest kept */
    uint32_t k = 0;
    for (uint32_t i = 0; i < h->n; i += 2) h->t[k] = h->t[i], h->top[k++] = h->top[i];
    h->n = k;
  }
  h->t[h->n] = now;
  h->top[h->n++] = top;
}

/* How long ago the others first launched more than `launched` (0: never
 * seen), and that count. */
static double lateness(const nt_top_hist *h, uint64_t launched, double now, uint64_t *next) {
  for (uint32_t i = 0; i < h->n; i++)
    if (h->top[i] > launched) {
      *next = h->top[i];
      return now - h->t[i];
    }
  return 0;
}

static void straggler(ctx *c, rank_info *ri, nt_top_hist *const hist[NT_FUNC_COUNT], bool hangs) {
  const nt_snapshot *s = ri->r.proc->cur;
  /* One alert per rank: every function it is late on. */
  char parts[160] = "";
  size_t used = 0;
  uint32_t total = 0;
  int worst_func = NT_FUNC_OTHER;
  double longest = 0;
  for (uint32_t k = 0; k < s->nseq; k++) {
    const nt_seq_row *q = &s->seq_rows[k];
    if (q->comm_index != ri->r.comm_index || q->func >= NT_FUNC_COUNT || !hist[q->func]) continue;
    const nt_top_hist *h = hist[q->func];
    uint64_t next = 0, top = h->n ? h->top[h->n - 1] : 0;
    double late = lateness(h, q->launched, c->now_s, &next);
    if (late * 1e9 < (double)c->stall_ns) continue;
    uint32_t lag = (uint32_t)(top - q->launched);
    int k2 = snprintf(parts + used, sizeof parts - used, "%s%u %s (%llu of %llu, %s late)",
                      total ? ", " : "", lag, nt_func_name(q->func),
                      (unsigned long long)q->launched, (unsigned long long)top, AGE(late));
    if (k2 > 0 && (size_t)k2 < sizeof parts - used) used += (size_t)k2;
    total += lag;
    if (late > longest) longest = late, worst_func = q->func;
  }
  /* A root is behind because it is stuck: said once, as the root; the
   * others of its communicator wait on it. */
  if (!total || hangs) return;
  nt_alert *a = add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, longest, ri);
  if (!a) return;
  char me[160];
  a->func = worst_func;
  a->count = total;
  a->age_s = longest;
  say(a,
      "rank %d/%d %s is a straggler: behind the other ranks by %s; the others launched its next "
      "%s %s ago",
      ri->r.rank, ri->r.nranks, rank_who(c, ri, me), parts, nt_func_name(worst_func), AGE(longest));
}

/* The most and least any live rank of [g, end) launched of each function;
 * p2p functions are not compared. */
static void launch_range(const ctx *c, uint32_t g, uint32_t end, uint64_t top[NT_FUNC_COUNT],
                         uint64_t least[NT_FUNC_COUNT]) {
  for (int f = 0; f < NT_FUNC_COUNT; f++) top[f] = 0, least[f] = UINT64_MAX;
  for (uint32_t i = g; i < end; i++) {
    const nt_snapshot *t = c->ranks[i].r.proc->cur;
    if (c->ranks[i].silent) continue;
    for (uint32_t x = 0; x < t->nseq; x++) {
      const nt_seq_row *q = &t->seq_rows[x];
      if (q->comm_index != c->ranks[i].r.comm_index || q->func >= NT_FUNC_COUNT ||
          q->func == NT_FUNC_SEND || q->func == NT_FUNC_RECV)
        continue;
      if (q->launched > top[q->func]) top[q->func] = q->launched;
      if (q->launched < least[q->func]) least[q->func] = q->launched;
    }
  }
}

/* Whether a root alert names a rank of the communicator of ranks [g, end). */
static bool has_root(const ctx *c, uint32_t g, uint32_t end) {
  for (uint32_t i = g; i < end; i++)
    if (c->ranks[i].named_root) return true;
  return false;
}

static void stragglers(ctx *c) {
  uint32_t sorted = c->m->ntops, cursor = 0;
  for (uint32_t i = 0; i < c->m->ntops; i++) c->m->tops[i].seen = false;
  /* Ranks are sorted by communicator: one group after another. */
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    if (c->ranks[g].r.comm_hash == 0) { /* not one communicator: never compared */
      g = end;
      continue;
    }
    uint64_t top[NT_FUNC_COUNT], least[NT_FUNC_COUNT];
    launch_range(c, g, end, top, least);
    nt_top_hist *hist[NT_FUNC_COUNT] = {NULL};
    bool room = top_room(c->m);
    for (int f = 0; f < NT_FUNC_COUNT && room; f++) {
      if (least[f] == UINT64_MAX) continue;
      hist[f] = top_hist(c, c->ranks[g].r.comm_hash, f, &cursor, sorted);
      if (!hist[f]) continue;
      hist[f]->seen = true;
      top_note(hist[f], top[f], least[f], c->now_s);
    }
    /* In a communicator that hangs, launch counts stop where the hang
     * caught each rank: the root explains them. */
    bool hangs = has_root(c, g, end);
    for (uint32_t i = g; i < end; i++)
      if (!c->ranks[i].silent) straggler(c, &c->ranks[i], hist, hangs);
    g = end;
  }
  /* Communicators gone: their history goes; the rest sorted by key. */
  uint32_t keep = 0;
  bool added = c->m->ntops > sorted;
  for (uint32_t i = 0; i < c->m->ntops; i++)
    if (c->m->tops[i].seen) c->m->tops[keep++] = c->m->tops[i];
  c->m->ntops = keep;
  if (added && keep > 1) qsort(c->m->tops, keep, sizeof *c->m->tops, top_cmp);
}

/* ---- publishers ---- */

static void publishers(ctx *c) {
  for (uint32_t i = 0; i < c->m->nprocs; i++) {
    proc_slot *slot = c->m->procs[i];
    nt_model_process *p = &slot->pub;
    if (!p->cur || nt_model_process_replaced(c->m, p)) continue;
    char me[160];
    if (p->stale && !p->ended && !slot->is_root) {
      nt_alert *a = add(c, NT_ALERT_SILENT, P_SILENT, 0, NULL);
      if (!a) return;
      a->proc = p;
      a->age_s = since(c, p);
      say(a, "%s sent nothing for %s: the process is hung, stopped or overloaded",
          who(p, me, sizeof me), AGE(a->age_s));
    }
    const nt_process_counters *pc = &p->cur->process;
    /* What the plugin could not keep, and what this viewer did not get (a
     * viewer too slow to read loses messages; ZeroMQ drops them for it). */
    if (pc->dropped_events || pc->unsent_messages || pc->dropped_ops || pc->dropped_rows ||
        p->lost_messages) {
      nt_alert *a = add(c, NT_ALERT_DROPS, P_DROPS, 0, NULL);
      if (!a) return;
      a->proc = p;
      a->count = (uint32_t)(p->lost_messages > UINT32_MAX ? UINT32_MAX : p->lost_messages);
      say(a,
          "%s: plugin dropped %llu events, %llu operations, %llu rows, %llu messages unsent; "
          "this viewer lost %llu messages",
          who(p, me, sizeof me), (unsigned long long)pc->dropped_events,
          (unsigned long long)pc->dropped_ops, (unsigned long long)pc->dropped_rows,
          (unsigned long long)pc->unsent_messages, (unsigned long long)p->lost_messages);
    }
  }
}

/* By priority; within one, by key (roots: most waiters; stragglers: most
 * behind), then by communicator and rank, so one rank's lines stay
 * together. */
static int item_cmp(const void *a, const void *b) {
  const item *i = a, *j = b;
  const nt_alert *x = &i->a, *y = &j->a;
  if (i->prio != j->prio) return i->prio - j->prio;
  if (i->key != j->key) return i->key < j->key ? 1 : -1;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank - y->rank;
  return x->age_s < y->age_s ? 1 : x->age_s > y->age_s ? -1 : 0;
}

/* The rank table, sorted by (communicator, rank), and where each
 * process's communicators landed in it (pos[rank_base + comm_index]). */
static uint32_t *build_ranks(ctx *c) {
  nt_model *m = c->m;
  uint32_t max = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    m->procs[i]->rank_base = max;
    m->procs[i]->is_root = false;
    if (m->procs[i]->pub.cur) max += m->procs[i]->pub.cur->ncomms;
  }
  nt_model_rank *rows = calloc((size_t)max + 1, sizeof *rows);
  c->ranks = calloc((size_t)max + 1, sizeof *c->ranks);
  uint32_t *pos = malloc(((size_t)max + 1) * sizeof *pos);
  if (!rows || !c->ranks || !pos) {
    free(rows);
    free(pos);
    return NULL;
  }
  c->n = nt_model_ranks(m, rows, max);
  for (uint32_t i = 0; i < c->n; i++) {
    rank_info *ri = &c->ranks[i];
    ri->r = rows[i];
    ri->slot = (proc_slot *)rows[i].proc;
    ri->silent = ri->r.proc->stale || ri->r.proc->ended;
    ri->gpu_wait = ri->first_wait = NT_WAIT_NONE;
    ri->missing_peer = -1;
    ri->index = ri->low = ri->scc = -1;
    ri->root = -1;
    pos[ri->slot->rank_base + ri->r.comm_index] = i;
  }
  free(rows);
  for (uint32_t i = 1; i < c->n && !c->multi_comm; i++)
    c->multi_comm = c->ranks[i].r.comm_hash != c->ranks[0].r.comm_hash;
  return pos;
}

uint32_t nt_model_alerts(nt_model *m, uint32_t stall_ms, nt_alert *out, uint32_t cap,
                         double now_s) {
  ctx c = {.m = m, .stall_ns = (uint64_t)stall_ms * 1000000ull, .now_s = now_s};
  uint32_t *pos = build_ranks(&c);
  size_t rows = 1;
  for (uint32_t i = 0; i < m->nprocs; i++)
    if (m->procs[i]->pub.cur) rows += m->procs[i]->pub.cur->nchannels;
  c.edges = malloc(rows * sizeof *c.edges);
  c.groups = malloc(rows * sizeof *c.groups);
  uint32_t n = 0;
  if (pos && c.edges && c.groups) {
    scan(&c, pos);
    if (find_roots(&c)) {
      stalls(&c);
      hung_ops(&c);
      stragglers(&c);
      publishers(&c);
    }
    if (c.nitems) qsort(c.items, c.nitems, sizeof *c.items, item_cmp);
    for (; n < c.nitems && n < cap; n++) out[n] = c.items[n].a;
  }
  free(pos);
  free(c.ranks);
  free(c.edges);
  free(c.groups);
  free(c.rev_off);
  free(c.rev);
  free(c.members);
  free(c.scc_first);
  free(c.scc_sink);
  free(c.roots);
  free(c.items);
  return n;
}

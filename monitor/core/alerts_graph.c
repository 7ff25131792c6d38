/* The diagnosis' graph (see alerts.c): one pass over every process's
 * channel and operation rows into run states, stuck groups and waits-on
 * edges; then the roots: the sink strongly connected components reached
 * from stuck ranks, and how many ranks wait on each. */
#include "alerts_internal.h"

/* ---- one pass over every process's rows ---- */

static void add_edge(ctx *c, rank_info *ri, int peer) {
  rank_info *to = al_find_rank(c, ri->r.comm_hash, peer, ri->r.proc);
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
  if (!al_waits_on_peer(ch->cur_wait) && ch->cur_wait != NT_WAIT_NONE && !relayed(ri, ch))
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
    if (al_waits_on_peer(ch->cur_wait) || (!queued && ch->cur_wait == NT_WAIT_NONE))
      add_edge(c, ri, ch->peer);
    else if (relayed(ri, ch)) /* PXN: this proxy waits on the relayed rank's GPU */
      add_edge(c, ri, ch->relay_rank);
    if (ch->progress_age_ns == UINT64_MAX || ch->progress_age_ns < c->stall_ns) continue;
    double age = (double)ch->progress_age_ns / 1e9 + al_since(c, p);
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
    double age = (double)op->age_ns / 1e9 + al_since(c, ri->r.proc);
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

void al_scan(ctx *c, const uint32_t *pos) {
  for (uint32_t i = 0; i < c->m->nprocs; i++) {
    const nt_model_process *p = &c->m->procs[i]->pub;
    const nt_snapshot *s = p->cur;
    if (!s || p->stale || p->ended) continue;
    for (uint32_t k = 0; k < s->nchannels;) {
      uint16_t ci = s->channels[k].comm_index;
      uint32_t end = k;
      while (end < s->nchannels && s->channels[end].comm_index == ci) end++;
      if (ci < s->ncomms)
        scan_channels(c, &c->ranks[pos[c->d->rank_base[i] + ci]], &s->channels[k], end - k);
      k = end;
    }
    for (uint32_t k = 0; k < s->noplog; k++)
      if (s->oplog[k].comm_index < s->ncomms)
        scan_op(c, &c->ranks[pos[c->d->rank_base[i] + s->oplog[k].comm_index]], &s->oplog[k]);
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
  nt_alert *a = al_add(c, NT_ALERT_ROOT, P_ROOT, (double)rt->waiters + rt->age / 1e9, ri);
  if (!a) return;
  c->items[c->nitems - 1].root_k = (int32_t)k;
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
    al_say(a,
           "ranks %s%s of comm %s wait on each other (a cycle of %u ranks, nobody else holds them "
           "up): stalled %s; %s",
           list, used >= sizeof list - 16 ? "..." : "", al_comm_label(&ri->r, cl), rt->n,
           AGE(rt->age), waiters);
    return;
  }
  c->d->is_root[ri->r.proc_index] = true;
  const nt_model_process *p = ri->r.proc;
  if (ri->stuck && ri->gpu_wait == NT_WAIT_NONE) a->peer = ri->missing_peer;
  if (ri->silent) {
    a->age_s = al_since(c, p);
    if (p->ended)
      al_say(a, "rank %s ended while %s: look at how this process exited", al_rank_said(c, ri, me),
             waiters);
    else
      al_say(a,
             "rank %s stopped publishing %s ago and %s: look at this process (stopped, "
             "hung or overloaded)",
             al_rank_said(c, ri, me), AGE(a->age_s), waiters);
  } else if (ri->stuck && ri->gpu_wait != NT_WAIT_NONE) {
    a->wait = ri->gpu_wait;
    a->age_s = ri->stuck_age;
    al_say(a,
           "rank %s is where the waits end: stalled %s in %s, waiting on no other rank (its "
           "GPU or kernel is not progressing); %s",
           al_rank_said(c, ri, me), AGE(ri->stuck_age), nt_wait_name(ri->gpu_wait), waiters);
  } else if (ri->stuck && ri->missing_peer < 0) {
    a->age_s = ri->stuck_age;
    al_say(a,
           "rank %s is where the waits end: stalled %s with no step in progress, waiting on "
           "no other rank nccltop sees; %s",
           al_rank_said(c, ri, me), AGE(ri->stuck_age), waiters);
  } else if (ri->stuck) {
    a->age_s = ri->stuck_age;
    al_say(a,
           "rank %s is where the waits end: stalled %s waiting on rank %d, which nccltop "
           "does "
           "not see (not publishing?); %s",
           al_rank_said(c, ri, me), AGE(ri->stuck_age), ri->missing_peer, waiters);
  } else if (ri->queued && !ri->running) {
    a->age_s = ri->old_age;
    al_say(a,
           "rank %s is where the waits end: its GPU has not reached the work in flight (queued "
           "%s): busy with other kernels, or blocked before them; %s",
           al_rank_said(c, ri, me), AGE(ri->old_age), waiters);
  } else if (!ri->queued && !ri->running) {
    al_say(a,
           "rank %s is where the waits end: nothing in flight, it has not launched what the "
           "others wait for (late in host code?); %s",
           al_rank_said(c, ri, me), waiters);
  } else {
    al_say(a,
           "rank %s is where the waits end: its work progresses, but not what the others wait "
           "for; %s",
           al_rank_said(c, ri, me), waiters);
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
      double silent_s = al_since(c, ri->r.proc);
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
      for (uint32_t k = g; k < end; k++) { /* what they wait on, for their own lines */
        rank_info *o = &c->ranks[k];
        if (o->silent || !(o->old_age > 0 && o->old_age <= silent_s + stall_s)) continue;
        o->root = o->root == -1 ? (int32_t)(rt - c->roots) : -2;
      }
    }
    g = end;
  }
}

/* ---- roots that rest on the others' reports (nt_root_claim) ---- */

static nt_root_claim *claim_of(nt_diag *d, const rank_info *ri) {
  for (uint32_t i = 0; i < d->nclaims; i++) {
    nt_root_claim *cl = &d->claims[i];
    if (cl->comm_hash == ri->r.comm_hash && cl->rank == ri->r.rank && cl->proc == ri->r.proc)
      return cl;
  }
  if (d->nclaims == NT_ROOT_CLAIMS) return NULL;
  nt_root_claim *cl = &d->claims[d->nclaims++];
  *cl = (nt_root_claim){.comm_hash = ri->r.comm_hash,
                        .rank = ri->r.rank,
                        .proc = ri->r.proc,
                        .since_s = ri->r.proc->cur_time_s};
  return cl;
}

/* Whether root k may be named now: a stuck, silent or cyclic root is its
 * own evidence; any other needs each rank waiting on it directly to have
 * reported since it first looked like the end of the waits (a table too
 * full to remember it names it at once, as before). */
static bool root_confirmed(ctx *c, uint32_t k) {
  const root_info *rt = &c->roots[k];
  uint32_t v = c->members[rt->first];
  const rank_info *ri = &c->ranks[v];
  if (rt->n > 1 || ri->stuck || ri->silent) return true;
  nt_root_claim *cl = claim_of(c->d, ri);
  if (!cl) return true;
  cl->seen = true;
  for (uint32_t e = c->rev_off[v]; e < c->rev_off[v + 1]; e++)
    if (c->ranks[c->rev[e]].r.proc->cur_time_s < cl->since_s) return false;
  return true;
}

/* Keeps the roots that may be named; forgets the claims no longer made. */
static void confirm_roots(ctx *c) {
  nt_diag *d = c->d;
  for (uint32_t i = 0; i < d->nclaims; i++) d->claims[i].seen = false;
  uint32_t keep = 0;
  for (uint32_t k = 0; k < c->nroots; k++)
    if (root_confirmed(c, k)) c->roots[keep++] = c->roots[k];
  c->nroots = keep;
  keep = 0;
  for (uint32_t i = 0; i < d->nclaims; i++)
    if (d->claims[i].seen) d->claims[keep++] = d->claims[i];
  d->nclaims = keep;
}

bool al_find_roots(ctx *c) {
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
    uint32_t first = c->scc_first[k], n = c->scc_first[k + 1] - first, fresh = 0;
    /* A cycle needs every member's wait to be current: each one stalled by
     * its own last report (a silent one's wait is old news, a progressing
     * one waits on nobody for long). Members that are not are where the
     * waits end: each its own root, first in the component. */
    if (n > 1)
      for (uint32_t i = 0; i < n; i++) {
        const rank_info *ri = &c->ranks[c->members[first + i]];
        if (ri->stuck && !ri->silent) continue;
        uint32_t tmp = c->members[first + fresh];
        c->members[first + fresh++] = c->members[first + i];
        c->members[first + i] = tmp;
      }
    for (uint32_t j = 0; j < (fresh ? fresh : 1); j++) {
      root_info *rt = &c->roots[c->nroots++];
      rt->first = first + j;
      rt->n = fresh ? 1 : n;
      rt->age = 0;
      for (uint32_t i = 0; i < rt->n; i++) {
        const rank_info *ri = &c->ranks[c->members[rt->first + i]];
        double age = ri->stuck ? ri->stuck_age : ri->silent ? al_since(c, ri->r.proc) : ri->old_age;
        if (age > rt->age) rt->age = age;
      }
    }
  }
  confirm_roots(c);
  for (uint32_t k = 0; k < c->nroots; k++) c->roots[k].waiters = walk_back(c, k, q);
  silent_roots(c);
  for (uint32_t k = 0; k < c->nroots; k++) say_root(c, k);
  free(q);
  return true;
}

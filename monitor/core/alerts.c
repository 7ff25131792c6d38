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
 * root that is not stuck itself rests on the others' reports alone, which
 * may be older than its own (for an interval after a long stall ends, the
 * ranks that waited still show the wait while the rank they waited on
 * already progresses): it is named once each rank waiting on it directly
 * has reported since it first looked so (nt_root_claim). A
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
 * progress (likewise), stragglers, silent publishers and drops (one line
 * per relay, per host or per kind of drop when many processes share it:
 * alerts_publishers.c); the cap cuts from the end, never a root before the
 * rest. The stalls and stuck operations of the ranks that wait on a root
 * are its consequences: they come last, each pointing at its root
 * (nt_alert.under), and the screen folds them under it (real NCCL gave
 * 10+ lines a frame for one late rank at 4 ranks).
 *
 * Silence and lateness are measured in the time the viewer read
 * (model_watch.c): a viewer that was stopped, or a relay that held the
 * messages, is the watcher's fault, not the job's.
 *
 * A straggler is a rank late by more than the stall time: the other ranks
 * of its communicator launched an operation of some function (NCCL's
 * per-function sequence numbers, the counts RAS compares) at least that
 * long ago, and it has not yet. A rank a few operations behind that keeps
 * pace (a shallower queue) is not one. When every rank of the
 * communicator on one host (two or more) is such a rank, latest on the
 * same function, the node is slow: one line names the node and its ranks
 * (alerts_straggler.c). With NCCL 2.31's kernel phases, a
 * rank the others' kernels spend their sync phases waiting for is one too
 * (alerts_sync.c: evidence sync_phases).
 *
 * Slow: a communicator whose collectives rows reach, interval after
 * interval, less than NT_SLOW_SHARE of NCCL's own predicted speed for
 * NT_SLOW_SUSTAIN_S (alerts_slow.c); rows without a model never are. */
#include "alerts_internal.h"

const char *nt_alert_kind_name(int kind) {
  static const char *const names[NT_ALERT_COUNT] = {"root",   "stall", "hung_op", "straggler",
                                                    "silent", "drops", "slow"};
  return kind >= 0 && kind < NT_ALERT_COUNT ? names[kind] : "unknown";
}

const char *nt_alert_evidence_name(int evidence) {
  static const char *const names[NT_EVIDENCE_COUNT] = {"none", "launches", "sync_phases"};
  return evidence >= 0 && evidence < NT_EVIDENCE_COUNT ? names[evidence] : "unknown";
}

bool al_waits_on_peer(int wait) {
  return wait == NT_WAIT_SEND_PEER || wait == NT_WAIT_RECV_NET || wait == NT_WAIT_SEND_NET;
}

/* The alert's line; a long one is cut (the screen cuts it anyway). */
__attribute__((format(printf, 2, 3))) void al_say(nt_alert *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->text, sizeof a->text, fmt, ap);
  va_end(ap);
}

const char *al_who(const nt_model_process *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%s:%u", p->host[0] ? p->host : "?", p->pid);
  return buf;
}

const char *al_comm_label(const nt_model_rank *r, char buf[48]) {
  return nt_comm_label(r->comm_name, r->comm_hash, buf, 25); /* as every view names it */
}

/* "host:pid", and the communicator when the job has several (a rank
 * number means something only within one). */
const char *al_rank_who(const ctx *c, const rank_info *ri, char buf[160]) {
  char hp[96], cl[48];
  al_who(ri->r.proc, hp, sizeof hp);
  if (!c->multi_comm)
    snprintf(buf, 160, "%s", hp);
  else
    snprintf(buf, 160, "%s comm %s", hp, al_comm_label(&ri->r, cl));
  return buf;
}

const char *al_rank_said(const ctx *c, const rank_info *ri, char buf[160]) {
  char rk[32], who[160];
  snprintf(buf, 160, "%s %s", nt_fmt_rank(ri->r.rank, ri->r.nranks, rk, sizeof rk),
           al_rank_who(c, ri, who));
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
rank_info *al_find_rank(ctx *c, uint64_t hash, int rank, const nt_model_process *from) {
  for (uint32_t i = lower_bound(c, hash, rank);
       i < c->n && c->ranks[i].r.comm_hash == hash && c->ranks[i].r.rank == rank; i++)
    if (hash || c->ranks[i].r.proc == from) return &c->ranks[i];
  return NULL;
}

nt_alert *al_add(ctx *c, int kind, int prio, double key, const rank_info *ri) {
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
  it->root_k = it->under_k = -1;
  nt_alert *a = &it->a;
  a->kind = kind;
  a->peer = -1;
  a->wait = NT_WAIT_NONE;
  a->func = NT_FUNC_OTHER;
  a->under = -1;
  if (ri) {
    a->proc = ri->r.proc;
    a->comm_hash = ri->r.comm_hash;
    a->rank = ri->r.rank;
    a->nranks = ri->r.nranks;
    a->ranks[0] = ri->r.rank;
    a->nlisted = 1;
  }
  return a;
}

void al_fold_last(ctx *c, int32_t k) {
  if (!c->nitems || k < 0 || (uint32_t)k >= c->nroots) return;
  item *it = &c->items[c->nitems - 1];
  it->sub = it->prio;
  it->prio = P_FOLDED;
  it->key = 0; /* ordered as its root is, once the roots' places are known */
  it->under_k = k;
}

void al_runs(const int32_t *v, uint32_t n, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (uint32_t k = 0; k < n;) {
    uint32_t e = k;
    while (e + 1 < n && (int64_t)v[e + 1] == (int64_t)v[e] + 1) e++;
    char one[32];
    if (e == k)
      snprintf(one, sizeof one, "%s%d", k ? "," : "", v[k]);
    else
      snprintf(one, sizeof one, "%s%d-%d", k ? "," : "", v[k], v[e]);
    size_t len = strlen(one);
    if (used + len + 4 >= cap) {
      snprintf(buf + used, cap - used, ",...");
      return;
    }
    memcpy(buf + used, one, len + 1);
    used += len;
    k = e + 1;
  }
}

/* Time a process's snapshot has aged since it arrived (0 once ended). */
double al_since(const ctx *c, const nt_model_process *p) {
  return p->ended || c->now_s < p->cur_time_s ? 0 : c->now_s - p->cur_time_s;
}

/* ---- stalls ---- */

/* A rank that waits on one root, and is none itself: its lines are that
 * root's consequences. */
static int32_t consequence_of(const rank_info *ri) {
  return ri->named_root ? -1 : ri->root;
}

static void stall_lines(ctx *c, rank_info *ri, int prio) {
  for (uint32_t j = ri->g0; j < ri->g0 + ri->ng; j++) {
    const stall_group *g = &c->groups[j];
    nt_alert *a = al_add(c, NT_ALERT_STALL, prio, 0, ri);
    if (!a) return;
    al_fold_last(c, consequence_of(ri));
    char me[160], them[104] = "", hp[96];
    rank_info *peer = al_find_rank(c, ri->r.comm_hash, g->peer, ri->r.proc);
    if (peer) snprintf(them, sizeof them, " (%s)", al_who(peer->r.proc, hp, sizeof hp));
    a->peer = g->peer;
    a->wait = g->wait;
    a->count = g->count;
    a->age_s = g->age;
    const char *what = g->wait == NT_WAIT_NONE       ? "waiting on"
                       : al_waits_on_peer(g->wait)   ? "waiting on"
                       : g->wait == NT_WAIT_RECV_GPU ? "its GPU not draining data from"
                                                     : "its GPU not feeding";
    al_say(a, "rank %s: %u %s channel%s stalled %s %s%s, %s rank %d%s", al_rank_said(c, ri, me),
           g->count, g->dir == NT_DIR_RECV ? "recv" : "send", g->count == 1 ? "" : "s", AGE(g->age),
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
  nt_alert *a = al_add(c, NT_ALERT_STALL, P_STALL, 0, first);
  if (!a) return;
  a->proc = NULL; /* many processes */
  a->rank = -1;
  a->nlisted = 0;
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
  al_say(a, "comm %s: %u ranks stalled up to %s: %s; %s", al_comm_label(&first->r, cl), shown,
         AGE(age), parts, tail);
  al_fold_last(c, root);
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
  nt_alert *a = al_add(c, NT_ALERT_HUNG_OP, P_HUNG, 0, ri);
  if (!a) return;
  char me[160], size[32], seq[32] = "", more[48] = "";
  a->func = op->func;
  a->count = ri->nhung;
  a->age_s = (double)op->age_ns / 1e9 + al_since(c, ri->r.proc);
  if (op->kind == NT_OP_COLL) snprintf(seq, sizeof seq, " #%llu", (unsigned long long)op->seq);
  if (ri->nhung > 1) snprintf(more, sizeof more, "; %u operations not completing", ri->nhung);
  al_say(a, "rank %s: %s%s (%s, %s/%s) in flight %s, %u of %u child events open%s",
         al_rank_said(c, ri, me), nt_func_name(op->func), seq,
         nt_fmt_size((double)op->bytes, size, sizeof size), nt_algo_name(op->algo),
         nt_proto_name(op->proto), AGE(a->age_s), op->children_open, op->children, more);
  al_fold_last(c, consequence_of(ri));
}

static void hung_ops(ctx *c) {
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g, nh = 0, ops = 0;
    int32_t root = -1; /* the one root all of them wait on, else -1 */
    const rank_info *oldest = NULL;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    for (uint32_t i = g; i < end; i++) {
      const rank_info *ri = &c->ranks[i];
      if (!ri->hung) continue;
      int32_t k = consequence_of(ri);
      root = nh == 0 ? k : root == k ? root : -1;
      nh++;
      ops += ri->nhung;
      if (!oldest || ri->hung->age_ns > oldest->hung->age_ns) oldest = ri;
    }
    if (nh && nh <= COLLAPSE_AT) {
      for (uint32_t i = g; i < end; i++)
        if (c->ranks[i].hung) hung_line(c, &c->ranks[i]);
    } else if (nh) {
      nt_alert *a = al_add(c, NT_ALERT_HUNG_OP, P_HUNG, 0, oldest);
      if (!a) return;
      const nt_oplog_row *op = oldest->hung;
      char cl[48], me[160], seq[32] = "";
      a->proc = NULL;
      a->rank = -1;
      a->nlisted = 0;
      a->func = op->func;
      a->count = nh;
      a->age_s = (double)op->age_ns / 1e9 + al_since(c, oldest->r.proc);
      if (op->kind == NT_OP_COLL) snprintf(seq, sizeof seq, " #%llu", (unsigned long long)op->seq);
      al_say(
          a,
          "comm %s: %u ranks have operations running without progress (%u operations); the oldest "
          "%s%s on rank %d (%s), in flight %s",
          al_comm_label(&oldest->r, cl), nh, ops, nt_func_name(op->func), seq, oldest->r.rank,
          al_rank_who(c, oldest, me), AGE(a->age_s));
      al_fold_last(c, root);
    }
    g = end;
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
  if (i->sub != j->sub) return i->sub - j->sub;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank - y->rank;
  return x->age_s < y->age_s ? 1 : x->age_s > y->age_s ? -1 : 0;
}

/* The rank table, sorted by (communicator, rank), and where each
 * process's communicators landed in it (pos[rank_base + comm_index]). */
static uint32_t *build_ranks(ctx *c) {
  const nt_model *m = c->m;
  nt_diag *d = c->d;
  if (m->nprocs > d->procs_cap) {
    uint32_t cap = m->nprocs;
    uint32_t *base = realloc(d->rank_base, cap * sizeof *base);
    if (base) d->rank_base = base;
    bool *root = base ? realloc(d->is_root, cap * sizeof *root) : NULL;
    if (root) d->is_root = root;
    if (!base || !root) return NULL;
    d->procs_cap = cap;
  }
  uint32_t max = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    d->rank_base[i] = max;
    d->is_root[i] = false;
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
    ri->silent = ri->r.proc->stale || ri->r.proc->ended;
    ri->held = c->now_s < ri->r.proc->held_until_s;
    ri->gpu_wait = ri->first_wait = NT_WAIT_NONE;
    ri->missing_peer = -1;
    ri->index = ri->low = ri->scc = -1;
    ri->root = -1;
    pos[d->rank_base[ri->r.proc_index] + ri->r.comm_index] = i;
  }
  free(rows);
  for (uint32_t i = 1; i < c->n && !c->multi_comm; i++)
    c->multi_comm = c->ranks[i].r.comm_hash != c->ranks[0].r.comm_hash;
  return pos;
}

/* Sorted, capped, and each folded alert pointed at its root's place in
 * `out`: the roots first (their order decides their consequences' order),
 * then the rest; a consequence whose root was cut stands alone. */
static uint32_t report(ctx *c, nt_alert *out, uint32_t cap) {
  if (!c->nitems) return 0;
  int32_t *place = c->nroots ? malloc(c->nroots * sizeof *place) : NULL;
  if (!place) /* no roots, or no memory to place them: nothing folded */
    for (uint32_t i = 0; i < c->nitems; i++)
      if (c->items[i].under_k >= 0) c->items[i].prio = c->items[i].sub, c->items[i].under_k = -1;
  qsort(c->items, c->nitems, sizeof *c->items, item_cmp);
  if (place) {
    for (uint32_t k = 0; k < c->nroots; k++) place[k] = -1;
    for (uint32_t i = 0; i < c->nitems && i < cap; i++)
      if (c->items[i].root_k >= 0) place[c->items[i].root_k] = (int32_t)i;
    for (uint32_t i = 0; i < c->nitems; i++) {
      item *it = &c->items[i];
      if (it->under_k < 0) continue;
      int32_t at = place[it->under_k];
      if (at < 0) { /* its root is not in the report: not folded */
        it->prio = it->sub;
        it->under_k = -1;
      } else {
        it->key = (double)(c->nitems - (uint32_t)at); /* in the roots' order */
      }
    }
    qsort(c->items, c->nitems, sizeof *c->items, item_cmp);
  }
  uint32_t n = 0;
  for (; n < c->nitems && n < cap; n++) {
    out[n] = c->items[n].a;
    out[n].under = c->items[n].under_k >= 0 ? place[c->items[n].under_k] : -1;
  }
  free(place);
  return n;
}

static uint32_t alerts(nt_diag *d, const nt_model *m, uint32_t stall_ms, nt_alert *out,
                       uint32_t cap, double now_s, bool per_rank) {
  if (d->model != m->serial) { /* another model (a replay's seek): its history only */
    d->ntops = d->nsyncs = d->nslows = d->nslow_ranks = d->nclaims = 0;
    d->model = m->serial;
  }
  ctx c = {.m = m,
           .d = d,
           .stall_ns = (uint64_t)stall_ms * 1000000ull,
           .now_s = now_s,
           .per_rank = per_rank};
  uint32_t *pos = build_ranks(&c);
  size_t rows = 1;
  for (uint32_t i = 0; i < m->nprocs; i++)
    if (m->procs[i]->pub.cur) rows += m->procs[i]->pub.cur->nchannels;
  c.edges = malloc(rows * sizeof *c.edges);
  c.groups = malloc(rows * sizeof *c.groups);
  uint32_t n = 0;
  if (pos && c.edges && c.groups) {
    al_scan(&c, pos);
    if (al_find_roots(&c)) {
      stalls(&c);
      hung_ops(&c);
      al_stragglers(&c);
      al_sync_phases(&c);
      al_slow(&c);
      al_publishers(&c);
    }
    n = report(&c, out, cap);
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

nt_diag *nt_diag_new(void) {
  return calloc(1, sizeof(nt_diag));
}

void nt_diag_free(nt_diag *d) {
  if (!d) return;
  free(d->tops);
  free(d->syncs);
  free(d->slows);
  free(d->slow_ranks);
  free(d->slow_ranks_next);
  free(d->rank_base);
  free(d->is_root);
  free(d);
}

uint32_t nt_diag_alerts(nt_diag *d, const nt_model *m, uint32_t stall_ms, nt_alert *out,
                        uint32_t cap, double now_s) {
  return alerts(d, m, stall_ms, out, cap, now_s, false);
}

uint32_t nt_diag_alerts_per_rank(nt_diag *d, const nt_model *m, uint32_t stall_ms, nt_alert *out,
                                 uint32_t cap, double now_s) {
  return alerts(d, m, stall_ms, out, cap, now_s, true);
}

/* Stall and straggler diagnosis: what the overview puts at the top.
 *
 * A channel is stalled when operations are in flight and its step has not
 * moved for the stall time. Its wait says who it waits on: send_peer_wait
 * (no credit from the receiver), recv_net_wait (no data from the sender)
 * and send_net_wait (the transfer does not complete) wait on the peer rank;
 * send_gpu_wait, recv_flush_wait and recv_gpu_wait wait on the rank's own
 * GPU. Following "waits on" from every stalled rank ends at the rank to look
 * at: stalled but waiting on no one (its GPU or kernel is stuck), or silent
 * (its process stopped publishing, or never did).
 *
 * A straggler is a rank that has launched fewer operations of a function
 * than the other ranks of its communicator (NCCL's per-function sequence
 * numbers, the counts RAS compares) for longer than the stall time. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *nt_alert_kind_name(int kind) {
  static const char *const names[NT_ALERT_COUNT] = {"root",      "stall",  "hung_op",
                                                    "straggler", "silent", "drops"};
  return kind >= 0 && kind < NT_ALERT_COUNT ? names[kind] : "unknown";
}

typedef struct {
  nt_model_rank r;
  proc_slot *slot;
  bool stalled;    /* some channel stalled */
  bool waits_peer; /* ... in a wait on a peer */
  int gpu_wait;    /* a GPU-side wait it is stuck in, NT_WAIT_NONE */
  double stall_age;
  uint32_t peers[8]; /* ranks (indices) it waits on */
  int npeers;
  bool mark; /* graph walk */
} rank_info;

typedef struct {
  nt_model *m;
  rank_info *ranks;
  uint32_t n;
  nt_alert *out;
  uint32_t cap, count;
  uint64_t stall_ns;
  double now_s;
  bool multi_comm; /* ranks of more than one communicator */
} ctx;

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

/* "host:pid", and the communicator when the job has several (a rank
 * number means something only within one). */
static const char *rank_who(const ctx *c, const rank_info *ri, char buf[160]) {
  char hp[96];
  who(ri->r.proc, hp, sizeof hp);
  if (!c->multi_comm)
    snprintf(buf, 160, "%s", hp);
  else if (ri->r.comm_name[0])
    snprintf(buf, 160, "%s comm %.24s", hp, ri->r.comm_name);
  else
    snprintf(buf, 160, "%s comm %04llx", hp, (unsigned long long)(ri->r.comm_hash & 0xffff));
  return buf;
}

/* Ranks are sorted by (communicator, rank). */
static rank_info *find_rank(ctx *c, uint64_t hash, int rank) {
  uint32_t lo = 0, hi = c->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const nt_model_rank *r = &c->ranks[mid].r;
    if (r->comm_hash < hash || (r->comm_hash == hash && r->rank < rank))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < c->n && c->ranks[lo].r.comm_hash == hash && c->ranks[lo].r.rank == rank)
    return &c->ranks[lo];
  return NULL;
}

static nt_alert *add(ctx *c, int kind, const rank_info *ri) {
  if (c->count >= c->cap) return NULL;
  nt_alert *a = &c->out[c->count++];
  memset(a, 0, sizeof *a);
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

/* ---- stalls ---- */

static void stalls(ctx *c) {
  for (uint32_t i = 0; i < c->n; i++) {
    rank_info *ri = &c->ranks[i];
    const nt_model_process *p = ri->r.proc;
    const nt_snapshot *s = p->cur;
    /* Groups of this rank's stalled channels: (direction, wait, peer). */
    struct {
      int dir, wait, peer;
      uint32_t count;
      double age;
    } g[16];
    int ng = 0;
    for (uint32_t k = 0; k < s->nchannels; k++) {
      const nt_channel_row *ch = &s->channels[k];
      if (ch->comm_index != ri->r.comm_index) continue;
      if (!nt_model_channel_stalled(ch, (uint32_t)(c->stall_ns / 1000000ull))) continue;
      double age = (double)ch->progress_age_ns / 1e9 + since(c, p);
      int j = 0;
      while (j < ng && !(g[j].dir == ch->dir && g[j].wait == ch->cur_wait && g[j].peer == ch->peer))
        j++;
      if (j == ng) {
        if (ng == 16) continue;
        g[ng].dir = ch->dir;
        g[ng].wait = ch->cur_wait;
        g[ng].peer = ch->peer;
        g[ng].count = 0;
        g[ng++].age = 0;
      }
      g[j].count++;
      if (age > g[j].age) g[j].age = age;
      ri->stalled = true;
      if (age > ri->stall_age) ri->stall_age = age;
      if (waits_on_peer(ch->cur_wait))
        ri->waits_peer = true;
      else if (ch->cur_wait != NT_WAIT_NONE)
        ri->gpu_wait = ch->cur_wait;
    }
    for (int j = 0; j < ng; j++) {
      nt_alert *a = add(c, NT_ALERT_STALL, ri);
      if (!a) return;
      char me[160], them[104] = "";
      rank_info *peer = find_rank(c, ri->r.comm_hash, g[j].peer);
      char hp[96];
      if (peer) snprintf(them, sizeof them, " (%s)", who(peer->r.proc, hp, sizeof hp));
      if (peer && waits_on_peer(g[j].wait) && ri->npeers < 8)
        ri->peers[ri->npeers++] = (uint32_t)(peer - c->ranks);
      a->peer = g[j].peer;
      a->wait = g[j].wait;
      a->count = g[j].count;
      a->age_s = g[j].age;
      const char *what = g[j].wait == NT_WAIT_NONE       ? "peer"
                         : waits_on_peer(g[j].wait)      ? "waiting on"
                         : g[j].wait == NT_WAIT_RECV_GPU ? "its GPU not draining data from"
                                                         : "its GPU not feeding";
      say(a, "rank %d/%d %s: %u %s channel%s stalled %.1fs %s%s, %s rank %d%s", ri->r.rank,
          ri->r.nranks, rank_who(c, ri, me), g[j].count, g[j].dir == NT_DIR_RECV ? "recv" : "send",
          g[j].count == 1 ? "" : "s", g[j].age,
          g[j].wait == NT_WAIT_NONE ? "with no step in progress" : "in ",
          g[j].wait == NT_WAIT_NONE ? "" : nt_wait_name(g[j].wait), what, g[j].peer, them);
    }
  }
}

/* Stalled ranks whose waits lead to `to`, directly or through others: a
 * breadth-first walk back along the waits-on edges. */
static uint32_t waiting_on(ctx *c, rank_info *to) {
  uint32_t *queue = malloc(c->n * sizeof *queue), head = 0, tail = 0, n = 0;
  if (!queue) return 0;
  for (uint32_t k = 0; k < c->n; k++) c->ranks[k].mark = false;
  to->mark = true;
  queue[tail++] = (uint32_t)(to - c->ranks);
  while (head < tail) {
    uint32_t y = queue[head++];
    for (uint32_t x = 0; x < c->n; x++) {
      rank_info *from = &c->ranks[x];
      if (from->mark || !from->stalled) continue;
      for (int e = 0; e < from->npeers; e++) {
        if (from->peers[e] != y) continue;
        from->mark = true;
        queue[tail++] = x;
        n++;
        break;
      }
    }
  }
  free(queue);
  return n;
}

static void roots(ctx *c) {
  for (uint32_t i = 0; i < c->n; i++) {
    rank_info *ri = &c->ranks[i];
    bool silent = ri->r.proc->stale && !ri->r.proc->ended;
    bool root = ri->stalled && !ri->waits_peer;
    if (!root && !silent) continue;
    uint32_t waiting = waiting_on(c, ri);
    if (silent && !waiting && !ri->stalled) continue; /* reported as silent below */
    nt_alert *a = add(c, NT_ALERT_ROOT, ri);
    if (!a) return;
    char me[160];
    a->count = waiting;
    a->wait = ri->gpu_wait;
    a->age_s = ri->stall_age;
    char waiters[48];
    snprintf(waiters, sizeof waiters,
             waiting == 1 ? "1 stalled rank waits" : "%u stalled ranks wait", waiting);
    if (silent)
      say(a, "rank %d/%d %s stopped publishing %.1fs ago and %s on it: look at this process",
          ri->r.rank, ri->r.nranks, rank_who(c, ri, me), since(c, ri->r.proc), waiters);
    else
      say(a,
          "rank %d/%d %s is where the waits end: stalled %.1fs in %s, waiting on no other "
          "rank (its GPU or kernel is not progressing); %s on it",
          ri->r.rank, ri->r.nranks, rank_who(c, ri, me), ri->stall_age, nt_wait_name(ri->gpu_wait),
          waiters);
  }
}

/* ---- operations that do not complete ---- */

static void hung_ops(ctx *c) {
  for (uint32_t i = 0; i < c->n; i++) {
    rank_info *ri = &c->ranks[i];
    const nt_snapshot *s = ri->r.proc->cur;
    const nt_oplog_row *oldest = NULL;
    uint32_t hung = 0;
    for (uint32_t k = 0; k < s->noplog; k++) {
      const nt_oplog_row *op = &s->oplog[k];
      if (op->comm_index != ri->r.comm_index || op->state != NT_OPS_IN_FLIGHT) continue;
      if (op->age_ns < c->stall_ns) continue;
      hung++;
      if (!oldest || op->age_ns > oldest->age_ns) oldest = op;
    }
    if (!oldest) continue;
    nt_alert *a = add(c, NT_ALERT_HUNG_OP, ri);
    if (!a) return;
    char me[160], size[32];
    a->func = oldest->func;
    a->count = hung;
    a->age_s = (double)oldest->age_ns / 1e9 + since(c, ri->r.proc);
    char seq[32] = "";
    if (oldest->kind == NT_OP_COLL)
      snprintf(seq, sizeof seq, " #%llu", (unsigned long long)oldest->seq);
    char more[48] = "";
    if (hung > 1) snprintf(more, sizeof more, "; %u operations not completing", hung);
    say(a, "rank %d/%d %s: %s%s (%s, %s/%s) in flight %.1fs, %u of %u child events open%s",
        ri->r.rank, ri->r.nranks, rank_who(c, ri, me), nt_func_name(oldest->func), seq,
        nt_fmt_bytes((double)oldest->bytes, size, sizeof size), nt_algo_name(oldest->algo),
        nt_proto_name(oldest->proto), a->age_s, oldest->children_open, oldest->children, more);
  }
}

/* ---- stragglers ---- */

static nt_behind *behind_of(proc_slot *s, uint64_t hash, int func) {
  for (uint32_t i = 0; i < s->nbehind; i++)
    if (s->behind[i].comm_hash == hash && s->behind[i].func == func) return &s->behind[i];
  return NULL;
}

static void stragglers(ctx *c) {
  for (uint32_t i = 0; i < c->n; i++)
    for (uint32_t k = 0; k < c->ranks[i].slot->nbehind; k++)
      c->ranks[i].slot->behind[k].seen = false;
  /* Ranks are sorted by communicator: one group after another. */
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    uint64_t top[NT_FUNC_COUNT] = {0}; /* the most any live rank launched */
    for (uint32_t i = g; i < end; i++) {
      const nt_snapshot *t = c->ranks[i].r.proc->cur;
      if (c->ranks[i].r.proc->ended) continue;
      for (uint32_t x = 0; x < t->nseq; x++) {
        const nt_seq_row *q = &t->seq_rows[x];
        if (q->comm_index == c->ranks[i].r.comm_index && q->launched > top[q->func])
          top[q->func] = q->launched;
      }
    }
    for (uint32_t i = g; i < end; i++) {
      rank_info *ri = &c->ranks[i];
      const nt_snapshot *s = ri->r.proc->cur;
      if (ri->r.proc->ended) continue;
      /* One alert per rank: every function it is behind on. */
      char parts[160] = "";
      size_t used = 0;
      uint32_t total = 0, worst = 0;
      int worst_func = NT_FUNC_OTHER;
      double longest = 0;
      for (uint32_t k = 0; k < s->nseq; k++) {
        const nt_seq_row *q = &s->seq_rows[k];
        if (q->comm_index != ri->r.comm_index || q->func == NT_FUNC_SEND ||
            q->func == NT_FUNC_RECV || q->launched >= top[q->func])
          continue;
        nt_behind *b = behind_of(ri->slot, ri->r.comm_hash, q->func);
        if (!b && ri->slot->nbehind < NT_BEHIND_MAX) {
          b = &ri->slot->behind[ri->slot->nbehind++];
          b->comm_hash = ri->r.comm_hash;
          b->func = q->func;
          b->since_s = c->now_s;
        }
        if (!b) continue;
        b->seen = true;
        double for_s = c->now_s - b->since_s;
        if (for_s * 1e9 < (double)c->stall_ns) continue;
        uint32_t lag = (uint32_t)(top[q->func] - q->launched);
        int k2 = snprintf(parts + used, sizeof parts - used, "%s%u %s (%llu of %llu)",
                          total ? ", " : "", lag, nt_func_name(q->func),
                          (unsigned long long)q->launched, (unsigned long long)top[q->func]);
        if (k2 > 0 && (size_t)k2 < sizeof parts - used) used += (size_t)k2;
        total += lag;
        if (lag > worst) worst = lag, worst_func = q->func;
        if (for_s > longest) longest = for_s;
      }
      if (!total) continue;
      nt_alert *a = add(c, NT_ALERT_STRAGGLER, ri);
      if (!a) return;
      char me[160];
      a->func = worst_func;
      a->count = total;
      a->age_s = longest;
      say(a, "rank %d/%d %s is a straggler for %.1fs: behind the other ranks by %s", ri->r.rank,
          ri->r.nranks, rank_who(c, ri, me), longest, parts);
    }
    g = end;
  }
  /* A rank that caught up starts over. */
  for (uint32_t i = 0; i < c->n; i++) {
    proc_slot *s = c->ranks[i].slot;
    uint32_t keep = 0;
    for (uint32_t k = 0; k < s->nbehind; k++)
      if (s->behind[k].seen) s->behind[keep++] = s->behind[k];
    s->nbehind = keep;
  }
}

/* ---- publishers ---- */

static void publishers(ctx *c) {
  for (uint32_t i = 0; i < c->m->nprocs; i++) {
    nt_model_process *p = &c->m->procs[i]->pub;
    if (!p->cur) continue;
    char me[160];
    if (p->stale && !p->ended) {
      bool is_root = false;
      for (uint32_t k = 0; k < c->count; k++)
        if (c->out[k].kind == NT_ALERT_ROOT && c->out[k].proc == p) is_root = true;
      nt_alert *a = is_root ? NULL : add(c, NT_ALERT_SILENT, NULL);
      if (a) {
        a->proc = p;
        a->age_s = since(c, p);
        say(a, "%s sent nothing for %.1fs: the process is hung, stopped or overloaded",
            who(p, me, sizeof me), a->age_s);
      }
    }
    const nt_process_counters *pc = &p->cur->process;
    /* What the plugin could not keep, and what this viewer did not get (a
     * viewer too slow to read loses messages; ZeroMQ drops them for it). */
    if (pc->dropped_events || pc->unsent_messages || pc->dropped_ops || pc->dropped_rows ||
        p->lost_messages) {
      nt_alert *a = add(c, NT_ALERT_DROPS, NULL);
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

/* By kind; stragglers most behind first; the rest by communicator and rank,
 * so one rank's lines stay together. */
static int alert_cmp(const void *a, const void *b) {
  const nt_alert *x = a, *y = b;
  if (x->kind != y->kind) return x->kind - y->kind;
  if (x->kind == NT_ALERT_STRAGGLER && x->count != y->count) return x->count < y->count ? 1 : -1;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank - y->rank;
  return x->age_s < y->age_s ? 1 : x->age_s > y->age_s ? -1 : 0;
}

uint32_t nt_model_alerts(nt_model *m, uint32_t stall_ms, nt_alert *out, uint32_t cap,
                         double now_s) {
  ctx c = {
      .m = m, .out = out, .cap = cap, .stall_ns = (uint64_t)stall_ms * 1000000ull, .now_s = now_s};
  uint32_t max = 0;
  for (uint32_t i = 0; i < m->nprocs; i++)
    if (m->procs[i]->pub.cur) max += m->procs[i]->pub.cur->ncomms;
  nt_model_rank *rows = max ? calloc(max, sizeof *rows) : NULL;
  c.ranks = max ? calloc(max, sizeof *c.ranks) : NULL;
  if (max && (!rows || !c.ranks)) {
    free(rows);
    free(c.ranks);
    return 0;
  }
  c.n = nt_model_ranks(m, rows, max);
  for (uint32_t i = 0; i < c.n; i++) {
    c.ranks[i].r = rows[i];
    c.ranks[i].slot = (proc_slot *)rows[i].proc;
    c.ranks[i].gpu_wait = NT_WAIT_NONE;
  }
  free(rows);
  for (uint32_t i = 1; i < c.n && !c.multi_comm; i++)
    c.multi_comm = c.ranks[i].r.comm_hash != c.ranks[0].r.comm_hash;
  stalls(&c);
  roots(&c);
  hung_ops(&c);
  stragglers(&c);
  publishers(&c);
  free(c.ranks);
  qsort(out, c.count, sizeof *out, alert_cmp);
  return c.count;
}

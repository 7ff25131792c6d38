/* Stragglers (see alerts.c): a rank is late when the other ranks of its
 * communicator launched its next operation of a function more than the
 * stall time ago; a history per (communicator, function) of when each
 * launch count was first reached says how late. A node all of whose ranks
 * of a communicator are late is one line (below). */
#include "alerts_internal.h"

/* ---- stragglers ---- */

static int top_key_cmp(uint64_t hash, int func, const nt_top_hist *h) {
  if (h->comm_hash != hash) return h->comm_hash < hash ? 1 : -1;
  return h->func < func ? 1 : h->func > func ? -1 : 0;
}

static int top_cmp(const void *a, const void *b) {
  const nt_top_hist *x = a;
  return top_key_cmp(x->comm_hash, x->func, b);
}

/* The history of (hash, func): the diagnosis (nt_diag) keeps them sorted by key, and
 * communicators are visited in hash order, so a cursor into the sorted
 * part finds each; a new one goes at the end (room made beforehand). */
static nt_top_hist *top_hist(ctx *c, uint64_t hash, int func, uint32_t *cursor, uint32_t sorted) {
  nt_diag *d = c->d;
  while (*cursor < sorted && top_key_cmp(hash, func, &d->tops[*cursor]) > 0) (*cursor)++;
  if (*cursor < sorted && top_key_cmp(hash, func, &d->tops[*cursor]) == 0) return &d->tops[*cursor];
  if (d->ntops == d->tops_cap) return NULL;
  nt_top_hist *h = &d->tops[d->ntops++];
  memset(h, 0, sizeof *h);
  h->comm_hash = hash;
  h->func = (uint8_t)func;
  return h;
}

/* Room for one more communicator's histories. */
static bool top_room(nt_diag *d) {
  if (d->tops_cap - d->ntops >= NT_FUNC_COUNT) return true;
  uint32_t cap = d->tops_cap ? 2 * d->tops_cap : 4 * NT_FUNC_COUNT;
  nt_top_hist *x = realloc(d->tops, cap * sizeof *x);
  if (!x) return false;
  d->tops = x;
  d->tops_cap = cap;
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
 * seen), and that count; in the time the viewer read (model_watch.c): a
 * viewer that did not read makes nobody late. */
static double lateness(const ctx *c, const nt_top_hist *h, uint64_t launched, uint64_t *next) {
  for (uint32_t i = 0; i < h->n; i++)
    if (h->top[i] > launched) {
      *next = h->top[i];
      return nt_watch_since(c->m, h->t[i], c->now_s);
    }
  return 0;
}

/* How late a rank is: over the functions it is late on (by more than the
 * stall time), the operations behind, and the one it is latest on. */
typedef struct {
  uint32_t total; /* operations behind, over its functions; 0: not late */
  int func;       /* the function it is latest on */
  double longest; /* ...how late */
  uint32_t lag;   /* ...operations behind on it */
  uint32_t mask;  /* every function it is late on: bit (1 << func) */
} late_info;

_Static_assert(NT_FUNC_COUNT <= 32, "late_info.mask has a bit per function");

/* The rank's lateness; `parts` (NULL: not wanted) gets "2 AllReduce (7 of
 * 9, 3.00s late), ..." for every function it is late on. */
static late_info late_of(const ctx *c, const rank_info *ri, nt_top_hist *const hist[NT_FUNC_COUNT],
                         char *parts, size_t cap) {
  const nt_snapshot *s = ri->r.proc->cur;
  late_info li = {.func = NT_FUNC_OTHER};
  size_t used = 0;
  if (parts) parts[0] = '\0';
  for (uint32_t k = 0; k < s->nseq; k++) {
    const nt_seq_row *q = &s->seq_rows[k];
    if (q->comm_index != ri->r.comm_index || q->func >= NT_FUNC_COUNT || !hist[q->func]) continue;
    const nt_top_hist *h = hist[q->func];
    uint64_t next = 0, top = h->n ? h->top[h->n - 1] : 0;
    double late = lateness(c, h, q->launched, &next);
    if (late * 1e9 < (double)c->stall_ns) continue;
    uint32_t lag = (uint32_t)(top - q->launched);
    if (parts) {
      int k2 = snprintf(parts + used, cap - used, "%s%u %s (%llu of %llu, %s late)",
                        li.total ? ", " : "", lag, nt_func_name(q->func),
                        (unsigned long long)q->launched, (unsigned long long)top, AGE(late));
      if (k2 > 0 && (size_t)k2 < cap - used) used += (size_t)k2;
    }
    li.total += lag;
    li.mask |= 1u << q->func;
    if (late > li.longest) li.longest = late, li.func = q->func, li.lag = lag;
  }
  return li;
}

/* One alert for a late rank: every function it is late on. */
static void straggler(ctx *c, rank_info *ri, nt_top_hist *const hist[NT_FUNC_COUNT]) {
  char parts[160];
  late_info li = late_of(c, ri, hist, parts, sizeof parts);
  if (!li.total) return;
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, li.longest, ri);
  if (!a) return;
  char me[160];
  a->func = li.func;
  a->evidence = NT_EVIDENCE_LAUNCHES;
  a->count = li.total;
  a->age_s = li.longest;
  al_say(a,
         "rank %s is a straggler: behind the other ranks by %s; the others launched its next "
         "%s %s ago",
         al_rank_said(c, ri, me), parts, nt_func_name(li.func), AGE(li.longest));
}

/* ---- a slow node ----
 *
 * A node that is slow (its CPUs, its data loading, its network) makes
 * every one of its ranks late: when all the ranks of a communicator on one
 * host (two or more, at most NT_ALERT_MAX_RANKS) are late by their launch
 * counts on a same function, one line names the node and its ranks
 * instead of one line per rank. Which ranks are late does not
 * change, only how they are said; the line ranks as its latest rank. */

typedef struct {
  const char *host;
  int32_t rank;
  uint32_t i;   /* into c->ranks */
  late_info li; /* total 0: not late (or silent) */
} host_rank;

static int host_rank_cmp(const void *a, const void *b) {
  const host_rank *x = a, *y = b;
  int h = strcmp(x->host, y->host);
  if (h) return h;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The functions every one of the ranks v[0..n) of one host is late on; 0
 * (no node line) unless they are two or more, on a known host. A slow
 * node's ranks are late on the same functions, but not always latest on
 * the same one (each rank's latest changes from frame to frame). */
static uint32_t whole_node(const host_rank *v, uint32_t n) {
  if (n < 2 || n > NT_ALERT_MAX_RANKS || !v[0].host[0]) return 0;
  uint32_t common = UINT32_MAX;
  for (uint32_t k = 0; k < n; k++) common &= v[k].li.total ? v[k].li.mask : 0;
  return common;
}

/* How late the rank is on function f (0: not late on it), and by how many
 * operations. */
static double late_on(const ctx *c, const rank_info *ri, const nt_top_hist *h, int f,
                      uint32_t *lag) {
  const nt_snapshot *s = ri->r.proc->cur;
  double worst = 0;
  for (uint32_t k = 0; h && k < s->nseq; k++) {
    const nt_seq_row *q = &s->seq_rows[k];
    if (q->comm_index != ri->r.comm_index || q->func != f) continue;
    uint64_t next = 0, top = h->n ? h->top[h->n - 1] : 0;
    double late = lateness(c, h, q->launched, &next);
    if (late * 1e9 < (double)c->stall_ns || late <= worst) continue;
    worst = late;
    *lag = (uint32_t)(top - q->launched);
  }
  return worst;
}

/* One line for the node of ranks v[0..n), every one late on each function
 * of `common`: it names the one of them the node is latest on. */
static void node_line(ctx *c, const host_rank *v, uint32_t n, uint32_t common,
                      nt_top_hist *const hist[NT_FUNC_COUNT]) {
  double longest = 0, f_late = 0; /* over every function; on f */
  uint32_t total_max = 0, lag_min = UINT32_MAX, lag_max = 0;
  int f = NT_FUNC_OTHER;
  bool others = false; /* a rank late on other functions too */
  for (uint32_t k = 0; k < n; k++) {
    if (v[k].li.longest > longest) longest = v[k].li.longest;
    if (v[k].li.total > total_max) total_max = v[k].li.total;
  }
  for (int g = 0; g < NT_FUNC_COUNT; g++) {
    if (!(common & (1u << g))) continue;
    double most = 0;
    uint32_t lag = 0;
    for (uint32_t k = 0; k < n; k++) {
      double late = late_on(c, &c->ranks[v[k].i], hist[g], g, &lag);
      if (late > most) most = late;
    }
    if (most > f_late) f_late = most, f = g;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t lag = 0;
    (void)late_on(c, &c->ranks[v[k].i], hist[f < NT_FUNC_COUNT ? f : 0], f, &lag);
    if (lag < lag_min) lag_min = lag;
    if (lag > lag_max) lag_max = lag;
    others |= (v[k].li.mask & ~(1u << f)) != 0;
  }
  const rank_info *first = &c->ranks[v[0].i];
  /* Ranked as its latest rank. */
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, longest, first);
  if (!a) return;
  a->func = f;
  a->evidence = NT_EVIDENCE_LAUNCHES;
  a->count = total_max;
  a->age_s = longest;
  for (uint32_t k = 0; k < n; k++) a->ranks[k] = v[k].rank;
  a->nlisted = n;
  char runs[96], lags[32], comm[64] = "", cl[48], more[64] = "";
  al_runs(a->ranks, n, runs, sizeof runs);
  if (lag_min == lag_max)
    snprintf(lags, sizeof lags, "%u", lag_max);
  else
    snprintf(lags, sizeof lags, "%u-%u", lag_min, lag_max);
  if (c->multi_comm) snprintf(comm, sizeof comm, " in comm %s", al_comm_label(&first->r, cl));
  if (others && longest > f_late)
    snprintf(more, sizeof more, " (and on other functions, up to %s)", AGE(longest));
  else if (others)
    snprintf(more, sizeof more, " (and on other functions)");
  al_say(a,
         "node %s: ranks %s/%d (all %u of its ranks%s) are %s %s launches behind the others for "
         "%s%s; the others wait for this node",
         v[0].host, runs, first->r.nranks, n, comm, lags, nt_func_name(f), AGE(f_late), more);
}

/* The late ranks of the communicator of ranks [g, end): one line per node
 * whose ranks are all late, one per rank otherwise. `v` has room for
 * end - g entries. */
static void late_ranks(ctx *c, uint32_t g, uint32_t end, nt_top_hist *const hist[NT_FUNC_COUNT],
                       host_rank *v) {
  uint32_t nlate = 0;
  for (uint32_t i = g; i < end; i++) {
    late_info li = {0};
    if (!c->ranks[i].silent && !c->ranks[i].held) li = late_of(c, &c->ranks[i], hist, NULL, 0);
    nlate += li.total > 0;
    if (v) v[i - g] = (host_rank){c->ranks[i].r.proc->host, c->ranks[i].r.rank, i, li};
  }
  if (nlate < 2 || c->per_rank || !v) { /* no node line possible */
    for (uint32_t i = g; nlate && i < end; i++)
      if (!c->ranks[i].silent && !c->ranks[i].held) straggler(c, &c->ranks[i], hist);
    return;
  }
  uint32_t n = end - g;
  qsort(v, n, sizeof *v, host_rank_cmp);
  for (uint32_t k = 0, e; k < n; k = e) {
    for (e = k; e < n && !strcmp(v[e].host, v[k].host); e++) continue;
    uint32_t common = whole_node(v + k, e - k);
    if (common) {
      node_line(c, v + k, e - k, common, hist);
      continue;
    }
    for (uint32_t j = k; j < e; j++)
      if (v[j].li.total) straggler(c, &c->ranks[v[j].i], hist);
  }
}

/* The most and least any live rank of [g, end) launched of each function;
 * p2p functions are not compared. */
static void launch_range(const ctx *c, uint32_t g, uint32_t end, uint64_t top[NT_FUNC_COUNT],
                         uint64_t least[NT_FUNC_COUNT]) {
  for (int f = 0; f < NT_FUNC_COUNT; f++) top[f] = 0, least[f] = UINT64_MAX;
  for (uint32_t i = g; i < end; i++) {
    const nt_snapshot *t = c->ranks[i].r.proc->cur;
    /* What a held rank's path delivers now is old: not the pace. */
    if (c->ranks[i].silent || c->ranks[i].held) continue;
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

void al_stragglers(ctx *c) {
  uint32_t sorted = c->d->ntops, cursor = 0;
  /* Out of memory: every late rank said as a rank. */
  host_rank *v = malloc(((size_t)c->n + 1) * sizeof *v);
  for (uint32_t i = 0; i < c->d->ntops; i++) c->d->tops[i].seen = false;
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
    bool room = top_room(c->d);
    for (int f = 0; f < NT_FUNC_COUNT && room; f++) {
      if (least[f] == UINT64_MAX) continue;
      hist[f] = top_hist(c, c->ranks[g].r.comm_hash, f, &cursor, sorted);
      if (!hist[f]) continue;
      hist[f]->seen = true;
      top_note(hist[f], top[f], least[f], c->now_s);
    }
    /* In a communicator that hangs, launch counts stop where the hang
     * caught each rank: the root explains them (a root is behind because
     * it is stuck: said once, as the root). */
    if (!has_root(c, g, end)) late_ranks(c, g, end, hist, v);
    g = end;
  }
  free(v);
  /* Communicators gone: their history goes; the rest sorted by key. */
  uint32_t keep = 0;
  bool added = c->d->ntops > sorted;
  for (uint32_t i = 0; i < c->d->ntops; i++)
    if (c->d->tops[i].seen) c->d->tops[keep++] = c->d->tops[i];
  c->d->ntops = keep;
  if (added && keep > 1) qsort(c->d->tops, keep, sizeof *c->d->tops, top_cmp);
}

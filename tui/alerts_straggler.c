/* Stragglers (see alerts.c): a rank is late when the other ranks of its
 * communicator launched its next operation of a function more than the
 * stall time ago; a history per (communicator, function) of when each
 * launch count was first reached says how late. */
#include "alerts_internal.h"

/* ---- stragglers ---- */

void nt_alerts_free(nt_model *m) {
  free(m->tops);
  m->tops = NULL;
  m->ntops = m->tops_cap = 0;
  free(m->syncs); /* alerts_sync.c */
  m->syncs = NULL;
  m->nsyncs = m->syncs_cap = 0;
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
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, longest, ri);
  if (!a) return;
  char me[160];
  a->func = worst_func;
  a->evidence = NT_EVIDENCE_LAUNCHES;
  a->count = total;
  a->age_s = longest;
  al_say(a,
         "rank %d/%d %s is a straggler: behind the other ranks by %s; the others launched its next "
         "%s %s ago",
         ri->r.rank, ri->r.nranks, al_rank_who(c, ri, me), parts, nt_func_name(worst_func),
         AGE(longest));
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

void al_stragglers(ctx *c) {
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

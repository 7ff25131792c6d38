/* Sync-phase evidence (NCCL 2.31, profiler ABI v7, the kernelch event
 * class): KernelPhase events split each kernel channel's GPU time into
 * initial_sync (its opening barrier: waiting for every rank's kernel to
 * arrive), compute and final_sync (its closing barrier). Time in the sync
 * phases is time a rank's kernel spent waiting for its peers, so the rank
 * the others wait for, the one that arrives last, spends the least time in
 * them while the others spend a lot.
 *
 * A rank's sync share is (initial_sync + final_sync) / (all three phases)
 * of its kernel rows of the communicator, over a window of the last few
 * seconds: its totals are sampled (at most every SYNC_STEP_S, the newest
 * within SYNC_WINDOW_S kept) and its current snapshot's totals compared
 * with the oldest sample. One interval is not enough: it may hold a single
 * operation, and in a job whose ranks arrive last by turns (jitter) the
 * rank last in that one would be named. Nothing is guessed: a rank has no
 * share until its samples span SYNC_SPAN_MIN_S (so none from a process's
 * first snapshot), while its process is silent, nor when its totals went
 * back (a new process: the samples start over).
 *
 * In a communicator (hash known) with at least two ranks that have a
 * share, a rank is named when the others' median share (lower median) is
 * at least SYNC_OTHERS_MIN and its own is at most SYNC_RATIO of it. Each is
 * one straggler alert with evidence sync_phases; when more than
 * COLLAPSE_AT ranks of a communicator are named, one line for them. A
 * communicator with a root alert hangs: the root explains it; a root alert
 * whose own rank has a low share gets the numbers added to its text.
 *
 * Hysteresis: ranks that pace unevenly by design (NCCL 2.31's symmetric
 * kernels, a 2-rank job) can have a window share that crosses the
 * threshold every few seconds, and an alert that came and went with it
 * every frame told nothing. A rank named stays named while it is below the
 * threshold again within SYNC_HOLD_S (its line says when it last was); one
 * that has not been for SYNC_HOLD_S is dropped. A naming is shown only
 * once it has lasted SYNC_RAISE_S (two looks at the default half-second
 * frames): one look's outlier (ranks enqueuing ahead, one window's jitter)
 * is never an alert, not even for a frame. */
#include "alerts_internal.h"

/* A rank's share counts only when its phases add up to at least this much
 * GPU time per second of its window (0.1% of the time in kernels): an idle
 * window, or one that saw a few tiny kernels, says nothing about who waits
 * for whom, while a peer late by even a millisecond per operation makes
 * the others wait at least that long each time. */
#define SYNC_MIN_NS_PER_S 1000000.0
/* The others must have spent at least half their kernel time waiting: a
 * busy job whose kernels mostly compute has nobody to blame, and well fed
 * kernels of a balanced job spend a small part in their barriers. */
#define SYNC_OTHERS_MIN 0.5
/* ...and the rank at most half the others' share: ranks that wait about
 * as much as each other (latency-bound kernels all spending most of their
 * time in barriers) are balanced, not held back by one of them. */
#define SYNC_RATIO 0.5
/* The window: a sample at most every SYNC_STEP_S, kept SYNC_WINDOW_S (and
 * at most NT_SYNC_SAMPLES); a share needs SYNC_SPAN_MIN_S of it, a few
 * training steps' worth in most jobs, short enough to follow a straggler
 * that appears. */
#define SYNC_STEP_S     0.3
#define SYNC_WINDOW_S   3.0
#define SYNC_SPAN_MIN_S 1.0
/* How long a rank stays named after its share was last below the
 * threshold: longer than the swings of an unevenly paced job (a few
 * seconds in the 2.31 demos), short enough that a straggler that caught up
 * is forgotten within a window and a half. */
#define SYNC_HOLD_S 5.0
/* How long a naming must have lasted before it is shown (and then held):
 * more than one evaluation's outlier; a straggler that matters stays far
 * longer. */
#define SYNC_RAISE_S 0.5

typedef struct {
  uint32_t i; /* into c->ranks */
  double share;
  double med;      /* the others' median share (set for the ranks reported) */
  nt_sync_hist *h; /* its samples and when it was last named */
} sync_rank;

static int share_cmp(const void *a, const void *b) {
  const sync_rank *x = a, *y = b;
  if (x->share != y->share) return x->share < y->share ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static int hist_key_cmp(uint64_t hash, int32_t rank, uint32_t pid, const nt_sync_hist *h) {
  if (h->comm_hash != hash) return h->comm_hash < hash ? 1 : -1;
  if (h->rank != rank) return h->rank < rank ? 1 : -1;
  return h->pid < pid ? 1 : h->pid > pid ? -1 : 0;
}

static int hist_cmp(const void *a, const void *b) {
  const nt_sync_hist *x = a;
  return hist_key_cmp(x->comm_hash, x->rank, x->pid, b);
}

/* The rank's samples: the diagnosis (nt_diag) keeps them sorted by key and ranks come
 * in (hash, rank) order, so a cursor into the sorted part finds them; a
 * new one goes at the end (room made beforehand). */
static nt_sync_hist *hist_of(ctx *c, const rank_info *ri, uint32_t *cursor, uint32_t sorted) {
  nt_diag *d = c->d;
  uint64_t hash = ri->r.comm_hash;
  int32_t rank = ri->r.rank;
  uint32_t pid = ri->r.proc->pid;
  while (*cursor < sorted && hist_key_cmp(hash, rank, pid, &d->syncs[*cursor]) > 0) (*cursor)++;
  if (*cursor < sorted && hist_key_cmp(hash, rank, pid, &d->syncs[*cursor]) == 0)
    return &d->syncs[*cursor];
  if (d->nsyncs == d->syncs_cap) return NULL;
  nt_sync_hist *h = &d->syncs[d->nsyncs++];
  memset(h, 0, sizeof *h);
  h->comm_hash = hash;
  h->rank = rank;
  h->pid = pid;
  h->proc = ri->r.proc;
  return h;
}

static bool hist_room(nt_diag *d, uint32_t more) {
  if (d->syncs_cap - d->nsyncs >= more) return true;
  uint32_t cap = d->syncs_cap ? 2 * d->syncs_cap : 64;
  while (cap - d->nsyncs < more) cap *= 2;
  nt_sync_hist *x = realloc(d->syncs, cap * sizeof *x);
  if (!x) return false;
  d->syncs = x;
  d->syncs_cap = cap;
  return true;
}

/* The rank's KernelPhase totals in its current snapshot. */
static void phase_totals(const rank_info *ri, uint64_t *sync, uint64_t *total) {
  const nt_snapshot *cur = ri->r.proc->cur;
  uint64_t s = 0, t = 0;
  for (uint32_t k = 0; k < cur->nkernels; k++) {
    const nt_kernel_row *row = &cur->kernels[k];
    if (row->comm_index != ri->r.comm_index) continue;
    s += row->phase_ns[NT_KPHASE_INITIAL_SYNC] + row->phase_ns[NT_KPHASE_FINAL_SYNC];
    t += row->phase_ns[NT_KPHASE_INITIAL_SYNC] + row->phase_ns[NT_KPHASE_FINAL_SYNC] +
         row->phase_ns[NT_KPHASE_COMPUTE];
  }
  *sync = s;
  *total = t;
}

/* Notes the rank's totals now; its share over the window, false when there
 * is none to trust. */
static bool window_share(const rank_info *ri, nt_sync_hist *h, double *share) {
  uint64_t s, t;
  phase_totals(ri, &s, &t);
  double now = ri->r.proc->cur_time_s;
  if (h->proc != (const void *)ri->r.proc) /* another process */
    h->n = 0, h->proc = ri->r.proc, h->named_s = h->first_s = 0;
  if (h->n && (s < h->sync[h->n - 1] || t < h->total[h->n - 1] || now < h->t[h->n - 1]))
    h->n = 0, h->named_s = h->first_s = 0; /* went back: not the same run */
  if (!h->n || now - h->t[h->n - 1] >= SYNC_STEP_S) {
    if (h->n == NT_SYNC_SAMPLES) {
      memmove(h->t, h->t + 1, (NT_SYNC_SAMPLES - 1) * sizeof *h->t);
      memmove(h->sync, h->sync + 1, (NT_SYNC_SAMPLES - 1) * sizeof *h->sync);
      memmove(h->total, h->total + 1, (NT_SYNC_SAMPLES - 1) * sizeof *h->total);
      h->n--;
    }
    h->t[h->n] = now, h->sync[h->n] = s, h->total[h->n++] = t;
  }
  uint32_t drop = 0;
  while (h->n - drop > 1 && now - h->t[drop] > SYNC_WINDOW_S) drop++;
  if (drop) {
    h->n -= drop;
    memmove(h->t, h->t + drop, h->n * sizeof *h->t);
    memmove(h->sync, h->sync + drop, h->n * sizeof *h->sync);
    memmove(h->total, h->total + drop, h->n * sizeof *h->total);
  }
  double span = now - h->t[0];
  uint64_t ds = s - h->sync[0], dt = t - h->total[0];
  if (span < SYNC_SPAN_MIN_S || (double)dt < SYNC_MIN_NS_PER_S * span) return false;
  *share = (double)ds / (double)dt;
  return true;
}

/* The lower median of the shares of v[0..n) without v[skip] (n >= 2). */
static double others_median(const sync_rank *v, uint32_t n, uint32_t skip) {
  uint32_t j = (n - 2) / 2; /* of the n - 1 others */
  return v[j < skip ? j : j + 1].share;
}

static int pct(double share) {
  return (int)(share * 100 + 0.5);
}

/* Adds the numbers to the root alert naming rank ri, if there is one
 * (short: a root's line is long already; its evidence says the rest). */
static void add_to_root(ctx *c, const rank_info *ri, double mine, double med) {
  for (uint32_t k = 0; k < c->nitems; k++) {
    nt_alert *a = &c->items[k].a;
    if (a->kind != NT_ALERT_ROOT || a->proc != ri->r.proc || a->comm_hash != ri->r.comm_hash ||
        a->rank != ri->r.rank)
      continue;
    size_t used = strlen(a->text);
    snprintf(a->text + used, sizeof a->text - used,
             "; before: others %d%% of kernel time in sync phases, it %d%%", pct(med), pct(mine));
    a->evidence = NT_EVIDENCE_SYNC_PHASES;
  }
}

static void one(ctx *c, const sync_rank *v) {
  const rank_info *ri = &c->ranks[v->i];
  double med = v->med;
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, med - v->share, ri);
  if (!a) return;
  char me[160], still[64] = "", ago[NT_UNIT_LEN];
  a->evidence = NT_EVIDENCE_SYNC_PHASES;
  a->count = 1;
  if (v->h->named_s < c->now_s) /* held (hysteresis): say so, with today's numbers */
    snprintf(still, sizeof still, "; last below the threshold %s ago",
             nt_fmt_ns((c->now_s - v->h->named_s) * 1e9, ago, sizeof ago));
  al_say(a,
         "rank %s: the other ranks spent %d%% of their kernel time in sync phases waiting, "
         "it spent %d%%: they wait for it (NCCL 2.31 kernel phases)%s",
         al_rank_said(c, ri, me), pct(med), pct(v->share), still);
}

/* One line for `named` ranks of a communicator, v[0] the lowest share. */
static void many(ctx *c, const sync_rank *v, uint32_t named, double med) {
  const rank_info *ri = &c->ranks[v->i];
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, med - v->share, ri);
  if (!a) return;
  char me[160], cl[48];
  a->proc = NULL; /* many processes */
  a->rank = -1;
  a->evidence = NT_EVIDENCE_SYNC_PHASES;
  a->count = named;
  al_say(a,
         "comm %s: %u ranks spent %d%% or less of their kernel time in sync phases while the "
         "others spent %d%%: the others wait for them; the least rank %d (%s), %d%% (NCCL 2.31 "
         "kernel phases)",
         al_comm_label(&ri->r, cl), named, pct(v[named - 1].share), pct(med), ri->r.rank,
         al_rank_who(c, ri, me), pct(v->share));
}

/* Whether a rank named before is still held (see the hysteresis above). */
static bool held(const ctx *c, const nt_sync_hist *h) {
  return h->named_s > 0 && c->now_s - h->named_s <= SYNC_HOLD_S &&
         h->named_s - h->first_s >= SYNC_RAISE_S;
}

static void sync_group(ctx *c, uint32_t g, uint32_t end, sync_rank *v, uint32_t *cursor,
                       uint32_t sorted) {
  uint32_t n = 0;
  bool hangs = false;
  for (uint32_t i = g; i < end; i++) {
    const rank_info *ri = &c->ranks[i];
    hangs |= ri->named_root;
    nt_sync_hist *h = hist_of(c, ri, cursor, sorted);
    if (!h) continue;
    h->seen = true;
    double share;
    if (!ri->silent && window_share(ri, h, &share))
      v[n++] = (sync_rank){.i = i, .share = share, .h = h};
  }
  if (n < 2) return;
  qsort(v, n, sizeof *v, share_cmp);
  /* Sorted by share: the ranks named are the first ones. */
  uint32_t named = 0;
  while (named < n) {
    double med = others_median(v, n, named);
    if (med < SYNC_OTHERS_MIN || v[named].share > med * SYNC_RATIO) break;
    nt_sync_hist *h = v[named].h;
    if (!(h->named_s > 0 && c->now_s - h->named_s <= SYNC_HOLD_S)) h->first_s = c->now_s;
    h->named_s = c->now_s;
    named++;
  }
  /* Reported: the ranks named now and those still held, in share order
   * (moved to the front of v; each with its own others' median). */
  for (uint32_t k = 0; k < n; k++) v[k].med = others_median(v, n, k); /* before v moves */
  uint32_t shown = 0;
  for (uint32_t k = 0; k < n; k++)
    if (held(c, v[k].h)) v[shown++] = v[k]; /* named now (named_s: now) or held */
  if (!shown) return;
  if (hangs) {
    for (uint32_t k = 0; k < shown; k++)
      if (c->ranks[v[k].i].named_root) add_to_root(c, &c->ranks[v[k].i], v[k].share, v[k].med);
  } else if (shown <= COLLAPSE_AT) {
    for (uint32_t k = 0; k < shown; k++) one(c, &v[k]);
  } else {
    many(c, v, shown, v[0].med);
  }
}

void al_sync_phases(ctx *c) {
  nt_diag *d = c->d;
  sync_rank *v = malloc(((size_t)c->n + 1) * sizeof *v);
  if (!v || !hist_room(d, c->n)) {
    free(v);
    c->oom = true;
    return;
  }
  uint32_t sorted = d->nsyncs, cursor = 0;
  for (uint32_t i = 0; i < d->nsyncs; i++) d->syncs[i].seen = false;
  /* Ranks are sorted by communicator: one group after another. */
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    if (c->ranks[g].r.comm_hash) sync_group(c, g, end, v, &cursor, sorted);
    g = end;
  }
  free(v);
  /* Ranks gone: their samples go; the rest sorted by key. */
  uint32_t keep = 0;
  bool added = d->nsyncs > sorted;
  for (uint32_t i = 0; i < d->nsyncs; i++)
    if (d->syncs[i].seen) d->syncs[keep++] = d->syncs[i];
  d->nsyncs = keep;
  if (added && keep > 1) qsort(d->syncs, keep, sizeof *d->syncs, hist_cmp);
}

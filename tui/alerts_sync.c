/* Sync-phase evidence (NCCL 2.31, profiler ABI v7, the kernelch event
 * class): KernelPhase events split each kernel channel's GPU time into
 * initial_sync (its opening barrier: waiting for every rank's kernel to
 * arrive), compute and final_sync (its closing barrier). Time in the sync
 * phases is time a rank's kernel spent waiting for its peers, so the rank
 * the others wait for, the one that arrives last, spends the least time in
 * them while the others spend a lot.
 *
 * Over the last interval of each process (its current snapshot against the
 * one before, kernel rows matched by communicator hash and channel), a
 * rank's sync share is (initial_sync + final_sync) / (all three phases),
 * summed over its channels of the communicator. Nothing is guessed: a rank
 * of a process with no previous snapshot, silent, or whose rows went back
 * (a new process) has no share; a row with no match in the previous
 * snapshot is left out. In a communicator (hash known) with at least two
 * ranks that have a share, a rank is named when the others' median share
 * (lower median) is at least SYNC_OTHERS_MIN and its own is at most
 * SYNC_RATIO of it. Each is one straggler alert with evidence sync_phases;
 * when more than COLLAPSE_AT ranks of a communicator are named, one line
 * for them. A communicator with a root alert hangs: its kernels do not
 * finish and the root explains it; a root alert whose own rank has a low
 * share gets the numbers added to its text. */
#include "alerts_internal.h"

/* A rank's share counts only when its phases add up to at least this much
 * GPU time in the interval (summed over its channels): an idle interval,
 * or one that saw a few tiny kernels, says nothing about who waits for
 * whom, while a peer late by even a millisecond per operation makes the
 * others wait at least that long. */
#define SYNC_MIN_NS 1000000ull
/* The others must have spent at least half their kernel time waiting: a
 * busy job whose kernels mostly compute has nobody to blame, and well fed
 * kernels of a balanced job spend a small part in their barriers. */
#define SYNC_OTHERS_MIN 0.5
/* ...and the rank at most half the others' share: ranks that wait about
 * as much as each other (latency-bound kernels all spending most of their
 * time in barriers) are balanced, not held back by one of them. */
#define SYNC_RATIO 0.5

typedef struct {
  uint32_t i; /* into c->ranks */
  double share;
  uint64_t sync, total;
} sync_rank;

static int share_cmp(const void *a, const void *b) {
  const sync_rank *x = a, *y = b;
  if (x->share != y->share) return x->share < y->share ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The rank's KernelPhase time over its process's last interval; false when
 * there is none to trust. */
static bool phase_delta(const rank_info *ri, uint64_t *sync, uint64_t *total) {
  const nt_snapshot *cur = ri->r.proc->cur, *prev = ri->r.proc->prev;
  if (ri->silent || !cur || !prev || !ri->r.comm_hash) return false;
  const nt_kernel_row *before[256] = {NULL};
  for (uint32_t k = 0; k < prev->nkernels; k++) {
    const nt_kernel_row *b = &prev->kernels[k];
    if (b->comm_index < prev->ncomms && prev->comms[b->comm_index].comm_hash == ri->r.comm_hash)
      before[b->channel] = b;
  }
  uint64_t s = 0, t = 0;
  for (uint32_t k = 0; k < cur->nkernels; k++) {
    const nt_kernel_row *row = &cur->kernels[k], *b = before[row->channel];
    if (row->comm_index != ri->r.comm_index || !b) continue;
    uint64_t d[NT_KPHASE_COUNT];
    for (int ph = 0; ph < NT_KPHASE_COUNT; ph++) {
      if (row->phase_ns[ph] < b->phase_ns[ph]) return false; /* went back: not the same run */
      d[ph] = row->phase_ns[ph] - b->phase_ns[ph];
    }
    s += d[NT_KPHASE_INITIAL_SYNC] + d[NT_KPHASE_FINAL_SYNC];
    t += d[NT_KPHASE_INITIAL_SYNC] + d[NT_KPHASE_FINAL_SYNC] + d[NT_KPHASE_COMPUTE];
  }
  *sync = s;
  *total = t;
  return t >= SYNC_MIN_NS;
}

/* The lower median of the shares of v[0..n) without v[skip] (n >= 2). */
static double others_median(const sync_rank *v, uint32_t n, uint32_t skip) {
  uint32_t j = (n - 2) / 2; /* of the n - 1 others */
  return v[j < skip ? j : j + 1].share;
}

static int pct(double share) {
  return (int)(share * 100 + 0.5);
}

/* Adds the numbers to the root alert naming rank ri, if there is one. */
static void add_to_root(ctx *c, const rank_info *ri, double mine, double med) {
  for (uint32_t k = 0; k < c->nitems; k++) {
    nt_alert *a = &c->items[k].a;
    if (a->kind != NT_ALERT_ROOT || a->proc != ri->r.proc || a->comm_hash != ri->r.comm_hash ||
        a->rank != ri->r.rank)
      continue;
    size_t used = strlen(a->text);
    snprintf(a->text + used, sizeof a->text - used,
             "; before that the others spent %d%% of their kernel time in sync phases, it %d%% "
             "(NCCL 2.31 kernel phases)",
             pct(med), pct(mine));
    a->evidence = NT_EVIDENCE_SYNC_PHASES;
  }
}

static void one(ctx *c, const sync_rank *v, double med) {
  const rank_info *ri = &c->ranks[v->i];
  nt_alert *a = al_add(c, NT_ALERT_STRAGGLER, P_STRAGGLER, med - v->share, ri);
  if (!a) return;
  char me[160];
  a->evidence = NT_EVIDENCE_SYNC_PHASES;
  a->count = 1;
  al_say(a,
         "rank %d/%d %s: the other ranks spent %d%% of their kernel time in sync phases waiting, "
         "it spent %d%%: they wait for it (NCCL 2.31 kernel phases)",
         ri->r.rank, ri->r.nranks, al_rank_who(c, ri, me), pct(med), pct(v->share));
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

static void sync_group(ctx *c, uint32_t g, uint32_t end, sync_rank *v) {
  uint32_t n = 0;
  bool hangs = false;
  for (uint32_t i = g; i < end; i++) {
    hangs |= c->ranks[i].named_root;
    uint64_t s, t;
    if (!phase_delta(&c->ranks[i], &s, &t)) continue;
    v[n++] = (sync_rank){.i = i, .share = (double)s / (double)t, .sync = s, .total = t};
  }
  if (n < 2) return;
  qsort(v, n, sizeof *v, share_cmp);
  /* Sorted by share: the ranks named are the first ones. */
  uint32_t named = 0;
  while (named < n) {
    double med = others_median(v, n, named);
    if (med < SYNC_OTHERS_MIN || v[named].share > med * SYNC_RATIO) break;
    named++;
  }
  if (!named) return;
  double med = others_median(v, n, 0);
  if (hangs) {
    for (uint32_t k = 0; k < named; k++)
      if (c->ranks[v[k].i].named_root) add_to_root(c, &c->ranks[v[k].i], v[k].share, med);
  } else if (named <= COLLAPSE_AT) {
    for (uint32_t k = 0; k < named; k++) one(c, &v[k], others_median(v, n, k));
  } else {
    many(c, v, named, med);
  }
}

void al_sync_phases(ctx *c) {
  sync_rank *v = malloc(((size_t)c->n + 1) * sizeof *v);
  if (!v) {
    c->oom = true;
    return;
  }
  /* Ranks are sorted by communicator: one group after another. */
  for (uint32_t g = 0; g < c->n;) {
    uint32_t end = g;
    while (end < c->n && c->ranks[end].r.comm_hash == c->ranks[g].r.comm_hash) end++;
    if (c->ranks[g].r.comm_hash) sync_group(c, g, end, v);
    g = end;
  }
  free(v);
}

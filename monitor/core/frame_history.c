/* The bus bandwidth history (frame.h, nt_frame_comm.busbw_history).
 *
 * Each rank's snapshot carries cumulative sums of its done operations (bus
 * bytes and durations, added up from its operation rows as the collectives
 * rows do); a sample is the communicator's differences of those sums over
 * one interval, bus bytes over time: the bus bandwidth of the operations
 * completed in it, as nccl-tests and the collectives rows compute it.
 *
 * Differences are taken only between two sums of the same process: a rank
 * first seen, a process that restarted (its pid again, counting from 0)
 * and sums that went back (rows the plugin dropped) only set where the rank
 * stands, so no sample is negative or holds a process's whole past. An
 * interval where nothing completed is a gap, not 0 GB/s: idle is unknown,
 * not slow.
 *
 * Intervals lie on a grid from the first build, so a build a little early
 * or late (a busy viewer) still closes one sample per interval; intervals
 * with no build at all (the viewer paused or stopped) are gaps, and what
 * completed meanwhile counts in the interval of the next build. Memory is
 * bounded: one ring per communicator of the frame and one sum per rank,
 * both dropped with the communicator or rank. */
#include "frame_history.h"

#include <stdlib.h>
#include <string.h>

/* Where a rank's sums stood at the last build. */
typedef struct {
  uint64_t comm, origin;
  int32_t rank;
  double bus_bytes, time_s;
} rank_base;

typedef struct {
  uint64_t comm;
  float ring[NT_FRAME_HISTORY]; /* oldest at head, n of them */
  uint32_t head, n;
  double bus_bytes, time_s; /* completed in the open interval so far */
} comm_history;

struct nt_frame_history {
  rank_base *base;
  uint32_t nbase;
  comm_history *comms; /* sorted by comm */
  uint32_t ncomms;
  double interval_s, open_s; /* the open interval began at open_s */
};

static int base_cmp(const void *a, const void *b) {
  const rank_base *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->origin > y->origin) - (x->origin < y->origin);
}

static int comm_cmp(const void *a, const void *b) {
  const comm_history *x = a, *y = b;
  return (x->comm > y->comm) - (x->comm < y->comm);
}

static void push(comm_history *c, float v) {
  if (c->n < NT_FRAME_HISTORY) {
    c->ring[(c->head + c->n++) % NT_FRAME_HISTORY] = v;
  } else {
    c->ring[c->head] = v;
    c->head = (c->head + 1) % NT_FRAME_HISTORY;
  }
}

static void forget(nt_frame_history *h, double now_s) {
  free(h->base);
  free(h->comms);
  h->base = NULL;
  h->comms = NULL;
  h->nbase = h->ncomms = 0;
  h->open_s = now_s;
}

void nt_frame_history_free(nt_frame_history *h) {
  if (!h) return;
  free(h->base);
  free(h->comms);
  free(h);
}

/* The communicators of this frame, each with its samples so far (f->comms
 * is sorted by hash: built in the ranks' order). */
static void carry_comms(const nt_frame *f, const nt_frame_history *h, comm_history *out) {
  for (uint32_t i = 0; i < f->ncomms; i++) {
    comm_history key = {.comm = f->comms[i].hash};
    const comm_history *was =
        h->ncomms ? bsearch(&key, h->comms, h->ncomms, sizeof *h->comms, comm_cmp) : NULL;
    if (was) {
      out[i] = *was;
    } else {
      memset(&out[i], 0, sizeof out[i]);
      out[i].comm = key.comm;
    }
  }
}

/* Adds each rank's difference since the last build to its communicator. */
static void add_ranks(const nt_frame *f, const nt_frame_history *h, comm_history *comms,
                      rank_base *base) {
  for (uint32_t i = 0; i < f->nranks; i++) {
    const nt_frame_rank *r = &f->ranks[i];
    rank_base *b = &base[i];
    *b = (rank_base){.comm = r->comm_hash,
                     .origin = r->origin,
                     .rank = r->rank,
                     .bus_bytes = r->bus_bytes,
                     .time_s = r->op_time_s};
    const rank_base *was =
        h->nbase ? bsearch(b, h->base, h->nbase, sizeof *h->base, base_cmp) : NULL;
    if (!was || b->bus_bytes < was->bus_bytes || b->time_s < was->time_s) continue;
    comm_history key = {.comm = r->comm_hash};
    comm_history *c = f->ncomms ? bsearch(&key, comms, f->ncomms, sizeof *comms, comm_cmp) : NULL;
    if (!c) continue;
    c->bus_bytes += b->bus_bytes - was->bus_bytes;
    c->time_s += b->time_s - was->time_s;
  }
  if (f->nranks) qsort(base, f->nranks, sizeof *base, base_cmp);
}

/* Closes the intervals that ended by now_s: gaps for those no build saw,
 * then the sample of what completed since the last close. */
static void close_intervals(nt_frame_history *h, double now_s, double update_s) {
  double late = (update_s < h->interval_s ? update_s : h->interval_s) / 2;
  double elapsed = now_s - h->open_s + late;
  if (elapsed < h->interval_s) return;
  double k = (double)(uint64_t)(elapsed / h->interval_s); /* >= 1 */
  uint32_t gaps = k - 1 > NT_FRAME_HISTORY ? NT_FRAME_HISTORY : (uint32_t)(k - 1);
  for (uint32_t i = 0; i < h->ncomms; i++) {
    comm_history *c = &h->comms[i];
    for (uint32_t g = 0; g < gaps; g++) push(c, NT_FRAME_GAP);
    push(c, c->time_s > 0 ? (float)(c->bus_bytes / c->time_s / 1e9) : NT_FRAME_GAP);
    c->bus_bytes = c->time_s = 0;
  }
  h->open_s += k * h->interval_s;
}

bool nt_frame_history_update(nt_frame *f, double update_s) {
  double now = f->now_s;
  if (!(update_s > 0)) update_s = NT_FRAME_HISTORY_MIN_S;
  double interval = update_s > NT_FRAME_HISTORY_MIN_S ? update_s : NT_FRAME_HISTORY_MIN_S;
  if (!f->history && !(f->history = calloc(1, sizeof *f->history))) return false;
  nt_frame_history *h = f->history;
  /* Another interval, or a clock that went back (a replay started over):
   * the samples no longer line up with the new ones. */
  if (h->interval_s != interval || now < h->open_s) {
    forget(h, now);
    h->interval_s = interval;
  }
  rank_base *base = f->nranks ? malloc((size_t)f->nranks * sizeof *base) : NULL;
  comm_history *comms = f->ncomms ? malloc((size_t)f->ncomms * sizeof *comms) : NULL;
  if ((f->nranks && !base) || (f->ncomms && !comms)) {
    free(base);
    free(comms);
    forget(h, now);
    return false;
  }
  carry_comms(f, h, comms);
  add_ranks(f, h, comms, base);
  free(h->base);
  free(h->comms);
  h->base = base;
  h->nbase = f->nranks;
  h->comms = comms;
  h->ncomms = f->ncomms;
  close_intervals(h, now, update_s);
  f->history_s = interval;
  f->history_end_s = h->open_s;
  for (uint32_t i = 0; i < f->ncomms; i++) {
    const comm_history *c = &comms[i];
    nt_frame_comm *fc = &f->comms[i];
    for (uint32_t k = 0; k < c->n; k++)
      fc->busbw_history[k] = c->ring[(c->head + k) % NT_FRAME_HISTORY];
    fc->nhistory = c->n;
  }
  return true;
}

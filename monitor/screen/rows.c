/* The rank rows the screen shows: the frame's, filtered by text, sorted by
 * the chosen key; and the per-thread proxy-state history. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/frame.h"
#include "screen_internal.h"

const char *nt_sort_name(int sort) {
  static const char *names[NT_SORT_COUNT] = {"rank", "stalled first", "host"};
  return sort >= 0 && sort < NT_SORT_COUNT ? names[sort] : "?";
}

/* qsort has no context argument: the frame being sorted. */
static const nt_frame *sort_frame;

static int cmp_rank(const nt_frame_rank *p, const nt_frame_rank *q) {
  if (p->comm_hash != q->comm_hash) return p->comm_hash < q->comm_hash ? -1 : 1;
  return p->rank < q->rank ? -1 : p->rank > q->rank;
}

static int cmp_stalled(const void *a, const void *b) {
  const nt_frame_rank *p = &sort_frame->ranks[*(const uint32_t *)a];
  const nt_frame_rank *q = &sort_frame->ranks[*(const uint32_t *)b];
  if (p->stalled != q->stalled) return p->stalled > q->stalled ? -1 : 1;
  return cmp_rank(p, q);
}

static int cmp_host(const void *a, const void *b) {
  const nt_frame_rank *p = &sort_frame->ranks[*(const uint32_t *)a];
  const nt_frame_rank *q = &sort_frame->ranks[*(const uint32_t *)b];
  const nt_frame_proc *pp = nt_frame_proc_of(sort_frame, p), *qp = nt_frame_proc_of(sort_frame, q);
  int c = strcmp(pp->host, qp->host);
  if (c) return c;
  if (pp->pid != qp->pid) return pp->pid < qp->pid ? -1 : 1;
  return p->comm_hash < q->comm_hash ? -1 : p->comm_hash > q->comm_hash;
}

void nt_screen_collect(nt_screen *s) {
  const nt_frame *f = s->f;
  uint32_t kept = 0;
  int nch = 0;
  uint32_t nr = f->nranks < NT_SCREEN_MAX_RANKS ? f->nranks : NT_SCREEN_MAX_RANKS;
  uint32_t np = f->nprocs < NT_SCREEN_MAX_RANKS ? f->nprocs : NT_SCREEN_MAX_RANKS;
  memset(s->kept, 0, nr * sizeof *s->kept);
  memset(s->proc_kept, 0, np * sizeof *s->proc_kept);
  for (uint32_t i = 0; i < nr; i++) {
    if (s->filter[0]) {
      char text[256];
      nt_frame_rank_text(f, &f->ranks[i], text, sizeof text);
      if (!strstr(text, s->filter)) continue;
    }
    s->kept[i] = true;
    if (f->ranks[i].proc < np) s->proc_kept[f->ranks[i].proc] = true;
    s->order[kept++] = i;
    if (f->ranks[i].channels > nch) nch = f->ranks[i].channels;
  }
  s->nranks = kept;
  s->nchannels = nch;
  sort_frame = f;
  if (s->sort == NT_SORT_STALLED)
    qsort(s->order, kept, sizeof *s->order, cmp_stalled);
  else if (s->sort == NT_SORT_HOST)
    qsort(s->order, kept, sizeof *s->order, cmp_host);
  if (s->sort_invert) /* I: the same order, last first */
    for (uint32_t i = 0, j = kept; i + 1 < j; i++, j--) {
      uint32_t t = s->order[i];
      s->order[i] = s->order[j - 1];
      s->order[j - 1] = t;
    }
}

bool nt_screen_comm_kept(const nt_screen *s, uint64_t comm_hash) {
  if (!s->filter[0]) return true;
  /* The frame's ranks are sorted by (communicator hash, rank): the
   * communicator's are one run, found by bisection. */
  const nt_frame *f = s->f;
  uint32_t lo = 0, hi = f->nranks < NT_SCREEN_MAX_RANKS ? f->nranks : NT_SCREEN_MAX_RANKS;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (f->ranks[mid].comm_hash < comm_hash)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (uint32_t i = lo; i < f->nranks && i < NT_SCREEN_MAX_RANKS; i++) {
    if (f->ranks[i].comm_hash != comm_hash) break;
    if (s->kept[i]) return true;
  }
  return false;
}

bool nt_screen_proc_kept(const nt_screen *s, uint32_t proc) {
  return !s->filter[0] || proc >= NT_SCREEN_MAX_RANKS || s->proc_kept[proc];
}

static nt_proxy_history *history_slot(nt_screen *s, uint32_t pid, uint32_t tid) {
  for (int i = 0; i < s->nhist; i++)
    if (s->hist[i].pid == pid && s->hist[i].tid == tid) return &s->hist[i];
  if (s->nhist == NT_SCREEN_MAX_HISTORY) {
    /* Full: reuse a thread no longer reported. */
    for (int i = 0; i < s->nhist; i++)
      if (!s->hist[i].seen) {
        memset(&s->hist[i], 0, sizeof s->hist[i]);
        s->hist[i].pid = pid, s->hist[i].tid = tid;
        return &s->hist[i];
      }
    return NULL;
  }
  nt_proxy_history *h = &s->hist[s->nhist++];
  memset(h, 0, sizeof *h);
  h->pid = pid, h->tid = tid;
  return h;
}

const nt_proxy_history *nt_history_of(const nt_screen *s, uint32_t pid, uint32_t tid) {
  for (int i = 0; i < s->nhist; i++)
    if (s->hist[i].pid == pid && s->hist[i].tid == tid) return &s->hist[i];
  return NULL;
}

void nt_screen_sample(nt_screen *s) {
  const nt_frame *f = s->f;
  for (int i = 0; i < s->nhist; i++) s->hist[i].seen = false;
  for (uint32_t i = 0; i < f->nproxy; i++) {
    const nt_frame_proxy *x = &f->proxy[i];
    const nt_frame_proc *p = &f->procs[x->proc];
    if (p->stale) continue;
    nt_proxy_history *h = history_slot(s, p->pid, x->row.tid);
    if (!h || h->seen) continue; /* a thread shared by communicators: once */
    h->seen = true;
    if (h->n == NT_HISTORY) {
      memmove(h->state, h->state + 1, NT_HISTORY - 1);
      h->n--;
    }
    h->state[h->n++] = (uint8_t)x->dominant;
  }
}

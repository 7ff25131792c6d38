/* The rank rows the screen shows: taken from the model, filtered by text,
 * sorted by the chosen key; and the per-thread proxy-state history. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "screen.h"

const char *nt_sort_name(int sort) {
  static const char *names[NT_SORT_COUNT] = {"rank", "stalled first", "host"};
  return sort >= 0 && sort < NT_SORT_COUNT ? names[sort] : "?";
}

void nt_rank_text(const nt_model_rank *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%d/%d %s %016llx %s:%u", r->rank, r->nranks, r->comm_name,
           (unsigned long long)r->comm_hash, r->proc->host, r->proc->pid);
}

static int stalled_channels(const nt_model_rank *r, uint32_t stall_ms) {
  const nt_snapshot *s = r->proc->cur;
  int n = 0;
  for (uint32_t i = 0; i < s->nchannels; i++)
    n += s->channels[i].comm_index == r->comm_index &&
         nt_model_channel_stalled(&s->channels[i], stall_ms);
  return n;
}

static uint32_t sort_stall_ms;
static int cmp_stalled(const void *a, const void *b) {
  int x = stalled_channels(a, sort_stall_ms), y = stalled_channels(b, sort_stall_ms);
  if (x != y) return y - x;
  const nt_model_rank *p = a, *q = b;
  if (p->comm_hash != q->comm_hash) return p->comm_hash < q->comm_hash ? -1 : 1;
  return p->rank - q->rank;
}

static int cmp_host(const void *a, const void *b) {
  const nt_model_rank *p = a, *q = b;
  int c = strcmp(p->proc->host, q->proc->host);
  if (c) return c;
  if (p->proc->pid != q->proc->pid) return p->proc->pid < q->proc->pid ? -1 : 1;
  return p->comm_hash < q->comm_hash ? -1 : p->comm_hash > q->comm_hash;
}

void nt_screen_collect(nt_screen *s) {
  uint32_t n = nt_model_ranks(s->m, s->ranks, NT_SCREEN_MAX_RANKS), kept = 0;
  for (uint32_t i = 0; i < n; i++) {
    char text[256];
    nt_rank_text(&s->ranks[i], text, sizeof text);
    if (s->filter[0] && !strstr(text, s->filter)) continue;
    s->ranks[kept++] = s->ranks[i];
  }
  s->nranks = kept;
  sort_stall_ms = s->o->stall_ms;
  if (s->sort == NT_SORT_STALLED)
    qsort(s->ranks, kept, sizeof *s->ranks, cmp_stalled);
  else if (s->sort == NT_SORT_HOST)
    qsort(s->ranks, kept, sizeof *s->ranks, cmp_host);
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
  for (int i = 0; i < s->nhist; i++) s->hist[i].seen = false;
  for (uint32_t i = 0; i < nt_model_nprocesses(s->m); i++) {
    nt_model_process *p = nt_model_process_at(s->m, i);
    if (!p->cur || p->stale) continue;
    for (uint32_t t = 0; t < p->cur->nproxy; t++) {
      const nt_proxy_row *row = &p->cur->proxy[t];
      nt_proxy_history *h = history_slot(s, p->pid, row->tid);
      if (!h) continue;
      h->seen = true;
      double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
      nt_model_proxy_shares(p, row, last, total);
      int best = 0;
      for (int k = 1; k < NT_PROXY_NSTATES; k++)
        if (last[k] > last[best]) best = k;
      if (h->n == NT_HISTORY) {
        memmove(h->state, h->state + 1, NT_HISTORY - 1);
        h->n--;
      }
      h->state[h->n++] = (uint8_t)best;
    }
  }
}

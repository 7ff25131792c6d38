/* The model's derived numbers, the same for every output: proxy-state
 * shares, channel rates and dominant waits over the publisher's last
 * interval (rows of the two snapshots matched by key, model.c's
 * match_rows), and the stall verdict. */
#include <string.h>

#include "model_internal.h"

static const nt_proxy_row *find_proxy(const nt_snapshot *s, uint32_t tid) {
  for (uint32_t i = 0; s && i < s->nproxy; i++)
    if (s->proxy[i].tid == tid) return &s->proxy[i];
  return NULL;
}

/* Shares of now - then (then NULL: of now); false when nothing moved. */
static bool split(const uint64_t *now, const uint64_t *then, double out[NT_PROXY_NSTATES]) {
  uint64_t d[NT_PROXY_NSTATES], sum = 0;
  for (int i = 0; i < NT_PROXY_NSTATES; i++) {
    d[i] = !then ? now[i] : now[i] >= then[i] ? now[i] - then[i] : 0;
    sum += d[i];
  }
  for (int i = 0; i < NT_PROXY_NSTATES; i++) out[i] = sum ? (double)d[i] / (double)sum : 0;
  return sum != 0;
}

void nt_model_proxy_shares(const nt_model_process *p, const nt_proxy_row *row,
                           double last[NT_PROXY_NSTATES], double total[NT_PROXY_NSTATES]) {
  split(row->state_ns, NULL, total);
  const nt_proxy_row *prev = find_proxy(p->prev, row->tid);
  if (prev && split(row->state_ns, prev->state_ns, last)) return;
  const nt_proxy_row *first = find_proxy(p->first, row->tid);
  if (first && split(row->state_ns, first->state_ns, last)) return;
  memcpy(last, total, sizeof(double) * NT_PROXY_NSTATES);
}

/* The prev row with the same key as `row` (a row of p->cur), or NULL. */
static const nt_channel_row *prev_channel(const nt_model_process *p, const nt_channel_row *row) {
  const nt_snapshot *cur = p->cur, *prev = p->prev;
  if (!cur || !prev) return NULL;
  const proc_slot *slot = slot_of(p);
  uintptr_t a = (uintptr_t)row, lo = (uintptr_t)cur->channels;
  if (a >= lo && a < lo + slot->nmatch * sizeof *row && (a - lo) % sizeof *row == 0) {
    int32_t j = slot->match[(a - lo) / sizeof *row];
    return j >= 0 ? &prev->channels[j] : NULL;
  }
  if (row->comm_index >= cur->ncomms) return NULL;
  uint64_t hash = cur->comms[row->comm_index].comm_hash;
  for (uint32_t j = 0; j < prev->nchannels; j++) { /* a copy of a row: search */
    const nt_channel_row *o = &prev->channels[j];
    if (o->comm_index < prev->ncomms && prev->comms[o->comm_index].comm_hash == hash &&
        chan_subcmp(o, row) == 0)
      return o;
  }
  return NULL;
}

static void rates_from(const nt_model_process *p, const nt_channel_row *row,
                       const nt_channel_row *o, double *steps_per_s, double *bytes_per_s) {
  *steps_per_s = *bytes_per_s = 0;
  if (!o || p->cur->mono_ns <= p->prev->mono_ns) return;
  /* Publisher time, not arrival time: rates do not jitter with delivery. */
  double dt = (double)(p->cur->mono_ns - p->prev->mono_ns) / 1e9;
  if (row->steps >= o->steps) *steps_per_s = (double)(row->steps - o->steps) / dt;
  if (row->bytes >= o->bytes) *bytes_per_s = (double)(row->bytes - o->bytes) / dt;
}

static int dominant_from(const nt_channel_row *row, const nt_channel_row *o) {
  int dir = row->dir == NT_DIR_RECV ? NT_DIR_RECV : NT_DIR_SEND;
  for (int pass = o ? 0 : 1; pass < 2; pass++) {
    uint64_t best = 0;
    int which = NT_WAIT_NONE;
    for (int i = 0; i < 3; i++) {
      uint64_t v = row->wait_ns[i];
      if (pass == 0) v = v >= o->wait_ns[i] ? v - o->wait_ns[i] : 0;
      if (v > best) best = v, which = nt_dir_wait(dir, i);
    }
    if (which != NT_WAIT_NONE) return which;
  }
  return NT_WAIT_NONE;
}

void nt_model_channel_rates(const nt_model_process *p, const nt_channel_row *row,
                            double *steps_per_s, double *bytes_per_s) {
  rates_from(p, row, prev_channel(p, row), steps_per_s, bytes_per_s);
}

int nt_model_channel_dominant_wait(const nt_model_process *p, const nt_channel_row *row) {
  return dominant_from(row, prev_channel(p, row));
}

void nt_model_channel_derive(const nt_model_process *p, const nt_channel_row *row,
                             double *steps_per_s, double *bytes_per_s, int *dominant_wait) {
  const nt_channel_row *o = prev_channel(p, row);
  rates_from(p, row, o, steps_per_s, bytes_per_s);
  *dominant_wait = dominant_from(row, o);
}

bool nt_model_channel_stalled(const nt_channel_row *row, uint32_t stall_ms) {
  return row->ops_started > row->ops_done && row->run_state != NT_RUN_QUEUED &&
         row->progress_age_ns != UINT64_MAX &&
         row->progress_age_ns >= (uint64_t)stall_ms * 1000000ull;
}

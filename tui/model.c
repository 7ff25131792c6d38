/* The state store (model.h): processes keyed by (host, pid), each with its
 * latest, previous and first snapshot. Nothing received is dropped while the
 * process is known; stale and ended processes stay visible, marked. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nt_model {
  nt_model_process *procs[NT_MODEL_MAX_PROCESSES];
  uint32_t nprocs;
  nt_model_error errors[NT_MODEL_ERRORS];
  uint32_t nerrors, error_head;
  uint64_t messages, bad;
  double last_data_s;
  nt_topo *topo;
  char topo_source[160];
  uint32_t topo_generation;
  uint64_t topo_hash; /* of the XML, so a re-sent identical file is not reparsed */
};

nt_model *nt_model_new(void) {
  return calloc(1, sizeof(nt_model));
}

static void proc_free(nt_model_process *p) {
  if (!p) return;
  nt_snapshot_free(p->cur);
  nt_snapshot_free(p->prev);
  nt_snapshot_free(p->first);
  free(p);
}

void nt_model_free(nt_model *m) {
  if (!m) return;
  nt_topo_free(m->topo);
  for (uint32_t i = 0; i < m->nprocs; i++) proc_free(m->procs[i]);
  free(m);
}

static void copy_snapshot(nt_snapshot *dst, const nt_snapshot *src) {
  nt_comm_row *c = dst->comms;
  nt_proxy_row *p = dst->proxy;
  nt_channel_row *ch = dst->channels;
  nt_kernel_row *k = dst->kernels;
  *dst = *src;
  dst->comms = c;
  dst->proxy = p;
  dst->channels = ch;
  dst->kernels = k;
  memcpy(c, src->comms, src->ncomms * sizeof *c);
  memcpy(p, src->proxy, src->nproxy * sizeof *p);
  memcpy(ch, src->channels, src->nchannels * sizeof *ch);
  memcpy(k, src->kernels, src->nkernels * sizeof *k);
}

/* Finds (or creates, when create) the process; NULL when the model is full. */
static nt_model_process *find_proc(nt_model *m, const char *host, uint32_t pid,
                                   const char *endpoint, bool create) {
  char clean[NT_MAX_HOST + 1];
  nt_sanitize(host, strlen(host), clean, sizeof clean);
  for (uint32_t i = 0; i < m->nprocs; i++) {
    nt_model_process *p = m->procs[i];
    /* A process first known only by its endpoint gets its host later. */
    if (p->pid == pid && (strcmp(p->host, clean) == 0 || !p->host[0] || !clean[0])) {
      if (!p->host[0]) snprintf(p->host, sizeof p->host, "%s", clean);
      return p;
    }
  }
  if (!create || m->nprocs >= NT_MODEL_MAX_PROCESSES) return NULL;
  nt_model_process *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->pid = pid;
  snprintf(p->host, sizeof p->host, "%s", clean);
  snprintf(p->endpoint, sizeof p->endpoint, "%s", endpoint ? endpoint : "");
  m->procs[m->nprocs++] = p;
  return p;
}

/* Rows in a stable order: communicator, channel, direction, peer. */
static int channel_cmp(const void *a, const void *b) {
  const nt_channel_row *x = a, *y = b;
  if (x->comm_index != y->comm_index) return x->comm_index < y->comm_index ? -1 : 1;
  if (x->channel != y->channel) return x->channel < y->channel ? -1 : 1;
  if (x->dir != y->dir) return x->dir < y->dir ? -1 : 1;
  return (x->peer > y->peer) - (x->peer < y->peer);
}

int nt_model_apply_snapshot(nt_model *m, const char *endpoint, const nt_snapshot *s, double now_s) {
  m->messages++;
  nt_model_process *p = find_proc(m, s->host, s->pid, endpoint, true);
  if (!p) {
    m->bad++;
    return -1;
  }
  p->messages++;
  if (p->cur && s->seq <= p->cur->seq) {
    if (s->mono_ns >= p->cur->mono_ns) return 0; /* a duplicate: nothing new */
    /* The clock went back with a lower sequence: the process restarted. */
    nt_snapshot_free(p->first);
    p->first = NULL;
  } else if (p->cur && s->seq > p->cur->seq + 1) {
    p->lost_messages += s->seq - p->cur->seq - 1;
  }
  if (!p->cur && !(p->cur = nt_snapshot_new())) return -1;
  if (!p->prev && !(p->prev = nt_snapshot_new())) return -1;
  if (!p->first) {
    if (!(p->first = nt_snapshot_new())) return -1;
    copy_snapshot(p->first, s);
    p->first_time_s = now_s;
    p->prev_time_s = 0;
  } else {
    nt_snapshot *t = p->prev;
    p->prev = p->cur;
    p->cur = t;
    p->prev_time_s = p->cur_time_s;
  }
  copy_snapshot(p->cur, s);
  qsort(p->cur->channels, p->cur->nchannels, sizeof *p->cur->channels, channel_cmp);
  p->cur_time_s = now_s;
  p->stale = false;
  p->ended = s->final;
  if (now_s > m->last_data_s) m->last_data_s = now_s;
  return 0;
}

int nt_model_apply_hello(nt_model *m, const char *endpoint, const nt_hello *h, double now_s) {
  (void)now_s;
  m->messages++;
  nt_model_process *p = find_proc(m, h->host, h->pid, endpoint, true);
  if (!p) {
    m->bad++;
    return -1;
  }
  p->hello = *h;
  nt_sanitize(h->host, strlen(h->host), p->hello.host, sizeof p->hello.host);
  nt_sanitize(h->nccl_version, strlen(h->nccl_version), p->hello.nccl_version,
              sizeof p->hello.nccl_version);
  nt_sanitize(h->plugin_version, strlen(h->plugin_version), p->hello.plugin_version,
              sizeof p->hello.plugin_version);
  for (uint32_t i = 0; i < h->nenv && i < NT_MAX_ENV; i++) {
    nt_sanitize(h->env[i].name, strlen(h->env[i].name), p->hello.env[i].name,
                sizeof p->hello.env[i].name);
    nt_sanitize(h->env[i].value, strlen(h->env[i].value), p->hello.env[i].value,
                sizeof p->hello.env[i].value);
  }
  p->have_hello = true;
  return 0;
}

int nt_model_apply_comm(nt_model *m, const char *endpoint, const nt_comm_info *c, double now_s) {
  (void)now_s;
  m->messages++;
  nt_model_process *p = find_proc(m, "", c->pid, endpoint, true);
  if (!p) {
    m->bad++;
    return -1;
  }
  uint32_t i = 0;
  while (i < p->ncomm_info && p->comm_info[i].comm_hash != c->comm_hash) i++;
  if (i == p->ncomm_info) {
    if (p->ncomm_info >= NT_MAX_COMMS) return -1;
    p->ncomm_info++;
  }
  p->comm_info[i] = *c;
  nt_sanitize(c->name, strlen(c->name), p->comm_info[i].name, sizeof p->comm_info[i].name);
  return 0;
}

void nt_model_note_error(nt_model *m, const char *source, const char *text, double now_s) {
  m->bad++;
  nt_model_error *e = &m->errors[m->error_head];
  m->error_head = (m->error_head + 1) % NT_MODEL_ERRORS;
  if (m->nerrors < NT_MODEL_ERRORS) m->nerrors++;
  e->time_s = now_s;
  nt_sanitize(source, strlen(source), e->source, sizeof e->source);
  nt_sanitize(text, strlen(text), e->text, sizeof e->text);
}

void nt_model_tick(nt_model *m, double now_s) {
  for (uint32_t i = 0; i < m->nprocs; i++) {
    nt_model_process *p = m->procs[i];
    if (!p->cur) continue;
    double interval = (p->cur->interval_ms ? p->cur->interval_ms : 100) / 1000.0;
    /* A viewer slower than the publisher still sees a snapshot per delay. */
    if (now_s - p->cur_time_s > NT_STALE_INTERVALS * interval + 1.0) p->stale = true;
  }
}

void nt_model_process_gone(nt_model *m, uint32_t pid, const char *host) {
  for (uint32_t i = 0; i < m->nprocs; i++) {
    nt_model_process *p = m->procs[i];
    if (p->pid == pid && (!host || !host[0] || strcmp(p->host, host) == 0)) p->ended = true;
  }
}

uint32_t nt_model_nprocesses(const nt_model *m) {
  return m->nprocs;
}
nt_model_process *nt_model_process_at(nt_model *m, uint32_t i) {
  return i < m->nprocs ? m->procs[i] : NULL;
}
uint32_t nt_model_nerrors(const nt_model *m) {
  return m->nerrors;
}
const nt_model_error *nt_model_error_at(const nt_model *m, uint32_t i) {
  if (i >= m->nerrors) return NULL;
  return &m->errors[(m->error_head + NT_MODEL_ERRORS - 1 - i) % NT_MODEL_ERRORS];
}
uint64_t nt_model_total_messages(const nt_model *m) {
  return m->messages;
}
uint64_t nt_model_total_bad(const nt_model *m) {
  return m->bad;
}
double nt_model_last_data_s(const nt_model *m) {
  return m->last_data_s;
}

static int rank_cmp(const void *a, const void *b) {
  const nt_model_rank *x = a, *y = b;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->proc->pid < y->proc->pid ? -1 : x->proc->pid > y->proc->pid;
}

uint32_t nt_model_ranks(nt_model *m, nt_model_rank *out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    nt_model_process *p = m->procs[i];
    if (!p->cur) continue;
    for (uint32_t k = 0; k < p->cur->ncomms && n < cap; k++) {
      const nt_comm_row *c = &p->cur->comms[k];
      nt_model_rank *r = &out[n++];
      r->proc = p;
      r->comm_index = (uint16_t)k;
      r->comm_hash = c->comm_hash;
      r->rank = c->rank;
      r->nranks = c->nranks;
      r->nnodes = c->nnodes;
      r->comm_name = "";
      for (uint32_t j = 0; j < p->ncomm_info; j++)
        if (p->comm_info[j].comm_hash == c->comm_hash) r->comm_name = p->comm_info[j].name;
    }
  }
  qsort(out, n, sizeof *out, rank_cmp);
  return n;
}

/* ---- derived numbers ---- */

static const nt_proxy_row *match_proxy(const nt_snapshot *s, const nt_proxy_row *row) {
  if (!s) return NULL;
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].tid == row->tid) return &s->proxy[i];
  return NULL;
}

static void shares(const uint64_t *now, const uint64_t *then, double out[NT_PROXY_NSTATES]);
static void shares(const uint64_t *now, const uint64_t *then, double out[NT_PROXY_NSTATES]) {
  uint64_t d[NT_PROXY_NSTATES], sum = 0;
  for (int i = 0; i < NT_PROXY_NSTATES; i++) {
    d[i] = then && now[i] >= then[i] ? now[i] - then[i] : now[i];
    sum += d[i];
  }
  if (!sum && then) { /* nothing moved since then: the cumulative split */
    shares(now, NULL, out);
    return;
  }
  for (int i = 0; i < NT_PROXY_NSTATES; i++) out[i] = sum ? (double)d[i] / (double)sum : 0;
}

void nt_model_proxy_shares(const nt_model_process *p, const nt_proxy_row *row,
                           double last[NT_PROXY_NSTATES], double total[NT_PROXY_NSTATES]) {
  const nt_proxy_row *prev = p->prev_time_s > 0 ? match_proxy(p->prev, row) : NULL;
  shares(row->state_ns, prev ? prev->state_ns : NULL, last);
  shares(row->state_ns, NULL, total); /* since the plugin started */
}

static const nt_channel_row *match_channel(const nt_snapshot *cur, const nt_snapshot *s,
                                           const nt_channel_row *row) {
  if (!s) return NULL;
  uint64_t hash = cur->comms[row->comm_index].comm_hash;
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *o = &s->channels[i];
    if (o->channel == row->channel && o->dir == row->dir && o->peer == row->peer &&
        o->comm_index < s->ncomms && s->comms[o->comm_index].comm_hash == hash)
      return o;
  }
  return NULL;
}

void nt_model_channel_rates(const nt_model_process *p, const nt_channel_row *row,
                            double *steps_per_s, double *bytes_per_s) {
  *steps_per_s = *bytes_per_s = 0;
  if (!p->cur || p->prev_time_s <= 0 || p->cur->mono_ns <= p->prev->mono_ns) return;
  const nt_channel_row *o = match_channel(p->cur, p->prev, row);
  if (!o) return;
  /* Publisher time, not arrival time: rates do not jitter with delivery. */
  double dt = (double)(p->cur->mono_ns - p->prev->mono_ns) / 1e9;
  if (row->steps >= o->steps) *steps_per_s = (double)(row->steps - o->steps) / dt;
  if (row->bytes >= o->bytes) *bytes_per_s = (double)(row->bytes - o->bytes) / dt;
}

int nt_model_channel_dominant_wait(const nt_model_process *p, const nt_channel_row *row) {
  const nt_channel_row *o = p->prev_time_s > 0 ? match_channel(p->cur, p->prev, row) : NULL;
  uint64_t best = 0;
  int which = NT_WAIT_NONE;
  for (int pass = 0; pass < 2 && which == NT_WAIT_NONE; pass++) {
    for (int i = 0; i < 3; i++) {
      uint64_t v = row->wait_ns[i];
      if (pass == 0) v = o && v >= o->wait_ns[i] ? v - o->wait_ns[i] : 0;
      if (v > best) best = v, which = nt_dir_wait(row->dir, i);
    }
  }
  return which;
}

bool nt_model_channel_stalled(const nt_channel_row *row, uint32_t stall_ms) {
  return row->ops_started > row->ops_done && row->progress_age_ns != UINT64_MAX &&
         row->progress_age_ns >= (uint64_t)stall_ms * 1000000ull;
}

static uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

int nt_model_set_topology(nt_model *m, const char *xml, size_t len, const char *source,
                          double now_s) {
  uint64_t h = fnv1a(xml, len);
  if (m->topo && h == m->topo_hash) return 0;
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, len, source, err, sizeof err);
  if (!t) {
    nt_model_note_error(m, source, err, now_s);
    return -1;
  }
  nt_topo_free(m->topo);
  m->topo = t;
  m->topo_hash = h;
  m->topo_generation++;
  nt_sanitize(source, strlen(source), m->topo_source, sizeof m->topo_source);
  return 0;
}

nt_topo *nt_model_topology(nt_model *m, const char **source) {
  if (source) *source = m->topo_source;
  return m->topo;
}

uint32_t nt_model_topology_generation(const nt_model *m) {
  return m->topo_generation;
}

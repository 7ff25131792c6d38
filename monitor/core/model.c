/* The state store (model.h): processes keyed by (source, host, pid), each
 * with its latest, previous and first snapshot. Nothing received is dropped
 * while the process is known; stale and ended processes stay visible,
 * marked, and only an ended one is dropped, NT_MODEL_ENDED_KEEP_S after it
 * ended (or one that never sent a snapshot, NT_MODEL_UNSEEN_KEEP_S after its
 * last message).
 *
 * Every snapshot is copied into buffers sized to its rows (model_buf.c; two
 * of them rotate with a spare: cur, prev; `first` keeps only what "since
 * start" needs), and every byte is counted against the budget. Channel rows
 * of cur and prev are paired once, at arrival, so the derived numbers read
 * the match in O(1). */
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void see_time(nt_model *m, double now_s) {
  if (now_s > m->now_s) m->now_s = now_s;
}

nt_model *nt_model_new(void) {
  nt_model *m = calloc(1, sizeof(nt_model));
  if (!m) return NULL;
  m->budget = NT_MODEL_DEFAULT_BUDGET;
  m->bytes = sizeof *m;
  /* never 0, never reused: a diagnosis told another model starts over */
  static _Atomic uint64_t serials;
  m->serial = ++serials;
  return m;
}

uint64_t nt_model_serial(const nt_model *m) {
  return m->serial;
}

static void proc_free(proc_slot *p) {
  if (!p) return;
  nt_buf_free(p->pub.cur);
  nt_buf_free(p->pub.prev);
  nt_buf_free(p->pub.first);
  nt_buf_free(p->spare);
  free(p->match);
  free(p);
}

void nt_model_free(nt_model *m) {
  if (!m) return;
  nt_runs_free(m);
  nt_model_topologies_free(m);
  nt_model_graphs_free(m);
  nt_sources_free(m);
  for (uint32_t i = 0; i < m->nprocs; i++) proc_free(m->procs[i]);
  free(m);
}

/* ---- errors ---- */

static void keep_error(nt_model *m, const char *source, const char *text, double now_s) {
  m->noted++;
  see_time(m, now_s);
  nt_model_error *e = &m->errors[m->error_head];
  m->error_head = (m->error_head + 1) % NT_MODEL_ERRORS;
  if (m->nerrors < NT_MODEL_ERRORS) m->nerrors++;
  e->time_s = now_s;
  source = source ? source : "";
  text = text ? text : "";
  nt_sanitize(source, strlen(source), e->source, sizeof e->source);
  nt_sanitize(text, strlen(text), e->text, sizeof e->text);
}

void nt_model_note_error(nt_model *m, const char *source, const char *text, double now_s) {
  m->bad++;
  keep_error(m, source, text, now_s);
}

void nt_model_note_problem(nt_model *m, const char *source, const char *text, double now_s) {
  keep_error(m, source, text, now_s);
}

/* ---- processes ---- */

/* What a process costs now; the model's and its source's totals follow. */
static void recount(nt_model *m, proc_slot *p) {
  size_t now = sizeof *p + nt_buf_bytes(p->pub.cur) + nt_buf_bytes(p->pub.prev) +
               nt_buf_bytes(p->pub.first) + nt_buf_bytes(p->spare) +
               (size_t)p->match_cap * sizeof *p->match;
  m->bytes = m->bytes - p->pub.bytes + now;
  p->src->bytes = p->src->bytes - p->pub.bytes + now;
  p->pub.bytes = now;
}

/* The process (host, pid) of the source. host "" (communicator messages
 * carry none) matches the source's process with that pid; a process first
 * known without a host takes the first host it gets. */
static proc_slot *lookup(nt_model *m, const src_slot *src, const char *clean_host, uint32_t pid) {
  proc_slot *hostless = NULL, *any = NULL;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    proc_slot *p = m->procs[i];
    if (p->pub.pid != pid || p->src != src) continue;
    if (clean_host[0]) {
      if (strcmp(p->pub.host, clean_host) == 0) return p;
      if (!p->pub.host[0] && !hostless) hostless = p;
    } else if (!any) {
      any = p;
    }
  }
  if (hostless) snprintf(hostless->pub.host, sizeof hostless->pub.host, "%s", clean_host);
  return hostless ? hostless : any;
}

/* Whether the source may add a process: a local endpoint has one, a
 * --connect one NT_MODEL_MAX_PER_CONNECT; the table and the budget have
 * room. Refusals are counted and noted. */
static bool may_add(nt_model *m, src_slot *src, double now_s) {
  uint32_t cap = src->pid ? 1 : NT_MODEL_MAX_PER_CONNECT;
  int why = src->nprocs >= cap                             ? NT_REFUSE_SOURCE_FULL
            : m->nprocs >= NT_MODEL_MAX_PROCESSES          ? NT_REFUSE_TABLE_FULL
            : !nt_budget_allows(m, src, sizeof(proc_slot)) ? NT_REFUSE_MEMORY
                                                           : -1;
  if (why < 0) return true;
  nt_refuse(m, src, src->name, why, "", now_s);
  return false;
}

/* Finds or creates the source's process; NULL (counted, noted once per
 * source and reason) when it may not have another, or out of memory. */
static proc_slot *find_proc(nt_model *m, src_slot *src, const char *host, uint32_t pid,
                            double now_s) {
  char clean[NT_MAX_HOST + 1];
  nt_sanitize(host, strnlen(host, NT_MAX_HOST), clean, sizeof clean);
  proc_slot *p = lookup(m, src, clean, pid);
  if (p) return p;
  if (!may_add(m, src, now_s)) return NULL;
  if (!(p = calloc(1, sizeof *p))) {
    nt_model_note_problem(m, src->name, "out of memory: process not kept", now_s);
    return NULL;
  }
  p->src = src;
  p->pub.pid = pid;
  p->pub.endpoint_pid = src->pid;
  snprintf(p->pub.host, sizeof p->pub.host, "%s", clean);
  nt_sanitize(src->name, strlen(src->name), p->pub.endpoint, sizeof p->pub.endpoint);
  m->procs[m->nprocs++] = p;
  src->nprocs++;
  recount(m, p);
  m->generation++;
  nt_runs_process_added(m, p);
  return p;
}

static void drop_proc(nt_model *m, uint32_t i) {
  proc_slot *p = m->procs[i];
  m->bytes -= p->pub.bytes;
  p->src->bytes -= p->pub.bytes;
  p->src->nprocs--;
  proc_free(p);
  memmove(&m->procs[i], &m->procs[i + 1], (m->nprocs - i - 1) * sizeof m->procs[0]);
  m->nprocs--;
  m->generation++;
}

/* The source of a message that speaks for `pid`; NULL when refused (a local
 * endpoint speaking for another pid, or no room for another source). */
static src_slot *source_for(nt_model *m, const char *endpoint, uint32_t endpoint_pid, uint32_t pid,
                            double now_s) {
  src_slot *src = nt_source_slot(m, endpoint, endpoint_pid, now_s);
  if (src && src->pid && pid != src->pid) {
    char detail[48];
    snprintf(detail, sizeof detail, "pid %u", pid);
    nt_refuse(m, src, endpoint, NT_REFUSE_PID, detail, now_s);
    return NULL;
  }
  return src;
}

static void mark_ended(nt_model_process *p, double now_s) {
  if (!p->ended) p->ended_time_s = now_s;
  p->ended = true;
}

/* ---- snapshots ---- */

/* Channel rows are kept sorted by (comm_index, channel, dir, peer): the
 * order the plugin writes them in, so sorting is usually one check. Rows of
 * a communicator are then one run, matched with the same communicator's run
 * in the previous snapshot (found by hash: indexes may change between
 * snapshots). */
/* Channel rows are ordered by (communicator, channel, direction, peer,
 * PXN relay rank: -1, the rank's own row, first); chan_subcmp leaves the
 * communicator out (its index differs between snapshots). */

static int chan_cmp(const nt_channel_row *a, const nt_channel_row *b) {
  return a->comm_index != b->comm_index ? CMP(a->comm_index, b->comm_index) : chan_subcmp(a, b);
}
#undef CMP

static int chan_sort_cmp(const void *a, const void *b) {
  return chan_cmp(a, b);
}

/* Copies only the rows in use; the copy's host is sanitized, every
 * comm_index names a communicator of the copy or is NT_NO_COMM, and the
 * channel rows are sorted. */
static void copy_snapshot(nt_snapshot *dst, const nt_snapshot *src) {
  nt_comm_row *c = dst->comms;
  nt_proxy_row *p = dst->proxy;
  nt_channel_row *ch = dst->channels;
  nt_kernel_row *k = dst->kernels;
  nt_op_row *ops = dst->ops;
  nt_phase_row *ph = dst->phases;
  nt_oplog_row *log = dst->oplog;
  nt_seq_row *seq = dst->seq_rows;
  nt_net_row *net = dst->net;
  nt_variant_row *var = dst->variants;
  *dst = *src;
  dst->comms = c;
  dst->proxy = p;
  dst->channels = ch;
  dst->kernels = k;
  dst->ops = ops;
  dst->phases = ph;
  dst->oplog = log;
  dst->seq_rows = seq;
  dst->net = net;
  dst->variants = var;
#define CLAMP_COPY(n, limit, to, from)                                                             \
  do {                                                                                             \
    if (dst->n > (limit)) dst->n = (limit);                                                        \
    memcpy(to, src->from, dst->n * sizeof *(to));                                                  \
  } while (0)
  CLAMP_COPY(nops, NT_MAX_OP_ROWS, ops, ops);
  CLAMP_COPY(nphases, NT_MAX_PHASES, ph, phases);
  CLAMP_COPY(noplog, NT_MAX_OPLOG, log, oplog);
  CLAMP_COPY(nseq, NT_MAX_SEQ_ROWS, seq, seq_rows);
  CLAMP_COPY(nnet, NT_MAX_NET_ROWS, net, net);
  CLAMP_COPY(nvariants, NT_MAX_VARIANTS, var, variants);
#undef CLAMP_COPY
  /* Phase names come from the application: escaped once, here. */
  for (uint32_t i = 0; i < dst->nphases; i++)
    nt_sanitize(src->phases[i].name, strnlen(src->phases[i].name, NT_MAX_PHASE), ph[i].name,
                sizeof ph[i].name);
  for (uint32_t i = 0; i < dst->nvariants; i++) /* NCCL's, but over the wire */
    nt_sanitize(src->variants[i].name, strnlen(src->variants[i].name, NT_MAX_VARIANT), var[i].name,
                sizeof var[i].name);
  if (dst->ncomms > NT_MAX_COMMS) dst->ncomms = NT_MAX_COMMS;
  if (dst->nproxy > NT_MAX_PROXY_THREADS) dst->nproxy = NT_MAX_PROXY_THREADS;
  if (dst->nchannels > NT_MAX_CHANNEL_ROWS) dst->nchannels = NT_MAX_CHANNEL_ROWS;
  if (dst->nkernels > NT_MAX_KERNEL_ROWS) dst->nkernels = NT_MAX_KERNEL_ROWS;
  memcpy(c, src->comms, dst->ncomms * sizeof *c);
  memcpy(p, src->proxy, dst->nproxy * sizeof *p);
  memcpy(ch, src->channels, dst->nchannels * sizeof *ch);
  memcpy(k, src->kernels, dst->nkernels * sizeof *k);
  nt_sanitize(src->host, strnlen(src->host, NT_MAX_HOST), dst->host, sizeof dst->host);
  for (uint32_t i = 0; i < dst->nproxy; i++)
    if (p[i].comm_index >= dst->ncomms) p[i].comm_index = NT_NO_COMM;
  for (uint32_t i = 0; i < dst->nkernels; i++)
    if (k[i].comm_index >= dst->ncomms) k[i].comm_index = NT_NO_COMM;
  bool sorted = true;
  for (uint32_t i = 0; i < dst->nchannels; i++) {
    if (ch[i].comm_index >= dst->ncomms) ch[i].comm_index = NT_NO_COMM;
    sorted = sorted && (i == 0 || chan_cmp(&ch[i - 1], &ch[i]) <= 0);
  }
  if (!sorted) qsort(ch, dst->nchannels, sizeof *ch, chan_sort_cmp);
}

/* Pairs each cur channel row with the prev row of the same key. */
static void match_rows(proc_slot *p) {
  const nt_snapshot *cur = p->pub.cur, *prev = p->pub.prev;
  p->nmatch = 0;
  if (cur->nchannels > p->match_cap) {
    int32_t *m = realloc(p->match, cur->nchannels * sizeof *m);
    if (!m) return; /* the derived numbers fall back to a search */
    p->match = m;
    p->match_cap = cur->nchannels;
  }
  for (uint32_t i = 0; i < cur->nchannels; i++) p->match[i] = -1;
  p->nmatch = cur->nchannels;
  if (!prev) return;
  /* Where each prev communicator's run starts and ends. */
  uint32_t from[NT_MAX_COMMS] = {0}, to[NT_MAX_COMMS] = {0};
  for (uint32_t j = 0; j < prev->nchannels; j++) {
    uint16_t ci = prev->channels[j].comm_index;
    if (ci >= prev->ncomms) continue;
    if (to[ci] == 0) from[ci] = j;
    to[ci] = j + 1;
  }
  for (uint32_t i = 0; i < cur->nchannels;) {
    uint16_t ci = cur->channels[i].comm_index;
    uint32_t end = i;
    while (end < cur->nchannels && cur->channels[end].comm_index == ci) end++;
    uint32_t pi = 0;
    while (ci < cur->ncomms && pi < prev->ncomms &&
           prev->comms[pi].comm_hash != cur->comms[ci].comm_hash)
      pi++;
    if (ci < cur->ncomms && pi < prev->ncomms) { /* merge the two runs */
      for (uint32_t j = from[pi]; i < end && j < to[pi];) {
        int order = chan_subcmp(&cur->channels[i], &prev->channels[j]);
        if (order == 0)
          p->match[i++] = (int32_t)j++;
        else if (order < 0)
          i++;
        else
          j++;
      }
    }
    i = end;
  }
}

/* What `first` keeps: the header, communicators and proxy threads (the
 * "since start" shares read only those), not a third full copy. */
static nt_snapshot first_part(const nt_snapshot *s) {
  nt_snapshot f = *s;
  f.nchannels = f.nkernels = f.nops = f.nphases = f.noplog = f.nseq = f.nnet = f.nvariants = 0;
  return f;
}

/* The bytes buf (NULL: a new one) grows by to hold a copy of src. */
static size_t growth(const nt_snapshot *buf, const nt_snapshot *src) {
  size_t need = nt_buf_need(buf, src), have = nt_buf_bytes(buf);
  return need > have ? need - have : 0;
}

/* buf (made when NULL) sized for src and holding a copy of it; -1 out of
 * memory, and then the caller frees buf: its rows are not to be read. */
static int fill(nt_snapshot **buf, const nt_snapshot *src) {
  if (!*buf && !(*buf = nt_buf_new())) return -1;
  if (nt_buf_fit(*buf, src) != 0) return -1;
  copy_snapshot(*buf, src);
  return 0;
}

#define NO_ROOM (-2) /* the budget does not allow the snapshot */

/* A process's first snapshot, or the first after it restarted. */
static int start_over(nt_model *m, proc_slot *p, const nt_snapshot *s, double now_s) {
  nt_model_process *q = &p->pub;
  nt_snapshot head = first_part(s);
  if (!nt_budget_allows(m, p->src, growth(q->cur, s) + growth(q->first, &head))) return NO_ROOM;
  if (q->prev) { /* keep the buffer for later */
    if (!p->spare)
      p->spare = q->prev;
    else
      nt_buf_free(q->prev);
    q->prev = NULL;
  }
  if (fill(&q->cur, s) != 0 || fill(&q->first, &head) != 0) {
    nt_buf_free(q->cur); /* nothing half-made is left visible */
    nt_buf_free(q->first);
    q->cur = q->first = NULL;
    return -1;
  }
  q->first_time_s = q->cur_time_s = now_s;
  q->prev_time_s = 0;
  match_rows(p);
  return 0;
}

/* The next snapshot: cur becomes prev, the oldest buffer takes the new one. */
static int advance(nt_model *m, proc_slot *p, const nt_snapshot *s, double now_s) {
  nt_model_process *q = &p->pub;
  nt_snapshot *buf = q->prev ? q->prev : p->spare;
  if (!nt_budget_allows(m, p->src, growth(buf, s))) return NO_ROOM;
  if (buf == q->prev)
    q->prev = NULL;
  else
    p->spare = NULL;
  if (fill(&buf, s) != 0) {
    nt_buf_free(buf);
    return -1;
  }
  q->prev = q->cur;
  q->prev_time_s = q->cur_time_s;
  q->cur = buf;
  q->cur_time_s = now_s;
  match_rows(p);
  return 0;
}

/* Why s may not follow q's latest snapshot (enum nt_refusal), or -1: its
 * sequence number or clock ran further ahead than the time since the latest
 * allows (model.h). A restart (seq back, clock on) is held to the clock
 * rule: the same host's monotonic clock went on by about that time. */
static int jumped(const nt_model_process *q, const nt_snapshot *s, double now_s, char *detail,
                  size_t cap) {
  const nt_snapshot *c = q->cur;
  double elapsed = now_s > q->cur_time_s ? now_s - q->cur_time_s : 0;
  double interval = c->interval_ms / 1000.0;
  if (interval < NT_SEQ_MIN_INTERVAL_S) interval = NT_SEQ_MIN_INTERVAL_S;
  if (s->seq > c->seq && (double)(s->seq - c->seq) > NT_SEQ_JUMP_SLACK + 2 * elapsed / interval) {
    snprintf(detail, cap, "seq %llu after %llu", (unsigned long long)s->seq,
             (unsigned long long)c->seq);
    return NT_REFUSE_SEQ_JUMP;
  }
  if (s->mono_ns > c->mono_ns && (double)(s->mono_ns - c->mono_ns) / 1e9 >
                                     NT_CLOCK_JUMP_SLACK_S + NT_CLOCK_MAX_RATE * elapsed) {
    snprintf(detail, cap, "clock +%.0f s after %.1f s", (double)(s->mono_ns - c->mono_ns) / 1e9,
             elapsed);
    return NT_REFUSE_CLOCK_JUMP;
  }
  return -1;
}

/* Applies s to q, which has a snapshot: the next one, a restart, or an old
 * or repeated one (ignored). */
static int follow(nt_model *m, proc_slot *p, const nt_snapshot *s, double now_s) {
  nt_model_process *q = &p->pub;
  if (s->seq > q->cur->seq) {
    uint64_t gap = s->seq - q->cur->seq - 1;
    nt_watch_arrival(m, p, s, now_s); /* before cur moves: was it silent, or its path? */
    int rc = advance(m, p, s, now_s);
    if (rc == 0 && gap) {
      q->lost_messages += gap;
      nt_watch_lost(m, p, gap, now_s);
    }
    return rc;
  }
  /* Sequence numbers went back. A new incarnation of the pid (same host:
   * the monotonic clock went on; after a reboot: the wall clock went on)
   * starts over; an old or repeated message (a late copy through a relay)
   * is ignored. */
  bool restart = s->mono_ns > q->cur->mono_ns ||
                 (s->mono_ns < q->cur->mono_ns && s->wall_ns > q->cur->wall_ns);
  if (!restart) {
    q->duplicates++;
    return 1;
  }
  int rc = start_over(m, p, s, now_s);
  if (rc == 0) q->restarts++;
  return rc;
}

int nt_model_apply_snapshot(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                            const nt_snapshot *s, double now_s) {
  m->messages++;
  see_time(m, now_s);
  nt_watch_reading(m, now_s);
  src_slot *src = source_for(m, endpoint, endpoint_pid, s->pid, now_s);
  proc_slot *p = src ? find_proc(m, src, s->host, s->pid, now_s) : NULL;
  if (!p) return -1;
  nt_model_process *q = &p->pub;
  q->messages++;
  q->last_msg_s = now_s;
  char detail[96];
  int why = q->cur ? jumped(q, s, now_s, detail, sizeof detail) : -1;
  if (why >= 0) return nt_refuse(m, src, endpoint, why, detail, now_s);
  /* The counters before, when s follows them (not a first, not a restart). */
  nt_process_counters was = {0};
  bool follows = q->cur && s->seq > q->cur->seq;
  if (follows) was = q->cur->process;
  int rc = q->cur ? follow(m, p, s, now_s) : start_over(m, p, s, now_s);
  recount(m, p);
  if (rc == 1) return 0; /* ignored: an old copy */
  if (rc == NO_ROOM) return nt_refuse(m, src, endpoint, NT_REFUSE_MEMORY, "", now_s);
  if (rc != 0) {
    nt_model_note_problem(m, endpoint, "out of memory: snapshot not kept", now_s);
    return -1;
  }
  q->stale = false;
  nt_watch_counters(p, follows ? &was : NULL, now_s);
  if (s->final)
    mark_ended(q, now_s);
  else
    q->ended = false;
  if (now_s > m->last_data_s) m->last_data_s = now_s;
  return 0;
}

int nt_model_apply_hello(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                         const nt_hello *h, double now_s) {
  m->messages++;
  see_time(m, now_s);
  nt_watch_reading(m, now_s);
  src_slot *src = source_for(m, endpoint, endpoint_pid, h->pid, now_s);
  proc_slot *p = src ? find_proc(m, src, h->host, h->pid, now_s) : NULL;
  if (!p) return -1;
  p->pub.last_msg_s = now_s;
  nt_hello *d = &p->pub.hello;
  *d = *h;
  if (d->nenv > NT_MAX_ENV) d->nenv = NT_MAX_ENV;
  nt_sanitize(h->host, strnlen(h->host, sizeof h->host), d->host, sizeof d->host);
  nt_sanitize(h->nccl_version, strnlen(h->nccl_version, sizeof h->nccl_version), d->nccl_version,
              sizeof d->nccl_version);
  nt_sanitize(h->plugin_version, strnlen(h->plugin_version, sizeof h->plugin_version),
              d->plugin_version, sizeof d->plugin_version);
  nt_sanitize(h->clock, strnlen(h->clock, sizeof h->clock), d->clock, sizeof d->clock);
  for (uint32_t i = 0; i < d->nenv; i++) {
    const nt_env_var *v = &h->env[i];
    nt_sanitize(v->name, strnlen(v->name, sizeof v->name), d->env[i].name, sizeof d->env[i].name);
    nt_sanitize(v->value, strnlen(v->value, sizeof v->value), d->env[i].value,
                sizeof d->env[i].value);
  }
  p->pub.have_hello = true;
  m->hellos++;
  return 0;
}

/* Whether the process's latest snapshot still lists the communicator. */
static bool comm_current(const nt_model_process *p, uint64_t hash) {
  for (uint32_t k = 0; p->cur && k < p->cur->ncomms; k++)
    if (p->cur->comms[k].comm_hash == hash) return true;
  return false;
}

int nt_model_apply_comm(nt_model *m, const char *endpoint, uint32_t endpoint_pid,
                        const nt_comm_info *c, double now_s) {
  m->messages++;
  see_time(m, now_s);
  nt_watch_reading(m, now_s);
  src_slot *src = source_for(m, endpoint, endpoint_pid, c->pid, now_s);
  proc_slot *p = src ? find_proc(m, src, "", c->pid, now_s) : NULL;
  if (!p) return -1;
  nt_model_process *q = &p->pub;
  q->last_msg_s = now_s;
  uint32_t i = 0;
  while (i < q->ncomm_info && q->comm_info[i].comm_hash != c->comm_hash) i++;
  if (i == q->ncomm_info && q->ncomm_info == NT_MAX_COMMS) {
    /* Full: a job that keeps creating communicators; forget one that its
     * latest snapshot no longer lists. */
    for (i = 0; i < q->ncomm_info && comm_current(q, q->comm_info[i].comm_hash); i++) {
    }
    if (i == q->ncomm_info) return 0; /* all current: the snapshot's rows still show them */
  } else if (i == q->ncomm_info) {
    q->ncomm_info++;
  }
  q->comm_info[i] = *c;
  nt_sanitize(c->name, strnlen(c->name, sizeof c->name), q->comm_info[i].name,
              sizeof q->comm_info[i].name);
  return 0;
}

void nt_model_tick(nt_model *m, double now_s) {
  see_time(m, now_s);
  for (uint32_t i = 0; i < m->nprocs;) {
    nt_model_process *p = &m->procs[i]->pub;
    if ((p->ended && now_s - p->ended_time_s > NT_MODEL_ENDED_KEEP_S) ||
        (!p->cur && now_s - p->last_msg_s > NT_MODEL_UNSEEN_KEEP_S)) {
      drop_proc(m, i);
      continue;
    }
    i++;
    /* Silent for that long while the viewer read (model_watch.c): a viewer
     * that did not read makes nobody stale. */
    if (p->cur) p->stale = nt_watch_since(m, p->cur_time_s, now_s) > nt_stale_limit(p);
  }
  nt_runs_tick(m);
}

double nt_stale_limit(const nt_model_process *p) {
  double interval = (p->cur && p->cur->interval_ms ? p->cur->interval_ms : 100) / 1000.0;
  double limit = NT_STALE_INTERVALS * interval;
  return limit < NT_STALE_MIN_S ? NT_STALE_MIN_S : limit;
}

void nt_model_endpoint_gone(nt_model *m, const char *endpoint) {
  if (!endpoint || !*endpoint) return;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    proc_slot *p = m->procs[i];
    /* A local endpoint only: what a relay introduced is not ours to judge. */
    if (p->src->pid && strncmp(p->src->name, endpoint, sizeof p->src->name - 1) == 0)
      mark_ended(&p->pub, m->now_s);
  }
}

/* ---- reading ---- */

uint32_t nt_model_generation(const nt_model *m) {
  return m->generation;
}
uint32_t nt_model_nprocesses(const nt_model *m) {
  return m->nprocs;
}
const nt_model_process *nt_model_process_at(const nt_model *m, uint32_t i) {
  return i < m->nprocs ? &m->procs[i]->pub : NULL;
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
uint64_t nt_model_total_errors(const nt_model *m) {
  return m->noted;
}
double nt_model_last_data_s(const nt_model *m) {
  return m->last_data_s;
}

static int rank_cmp(const void *a, const void *b) {
  const nt_model_rank *x = a, *y = b;
  if (x->comm_hash != y->comm_hash) return x->comm_hash < y->comm_hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  int h = strcmp(x->proc->host, y->proc->host);
  if (h) return h;
  return (x->proc->pid > y->proc->pid) - (x->proc->pid < y->proc->pid);
}

bool nt_model_process_replaced(const nt_model *m, const nt_model_process *p) {
  return p->run != m->run && (p->ended || p->stale);
}

uint32_t nt_model_ranks(const nt_model *m, nt_model_rank *out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nprocs; i++) {
    const nt_model_process *p = &m->procs[i]->pub;
    if (!p->cur || nt_model_process_replaced(m, p)) continue;
    for (uint32_t k = 0; k < p->cur->ncomms && n < cap; k++) {
      const nt_comm_row *c = &p->cur->comms[k];
      nt_model_rank *r = &out[n++];
      r->proc = p;
      r->proc_index = i;
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
  if (n > 1) qsort(out, n, sizeof *out, rank_cmp); /* out may be NULL when cap is 0 */
  return n;
}

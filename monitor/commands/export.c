/* `nccltop export FILE --chrome-trace OUT.json`: a recording as Chrome
 * trace event JSON (ui.perfetto.dev, chrome://tracing).
 *
 * One trace process per rank (a process and communicator), named
 * "host:pid rank r/n comm", ordered by communicator (first seen first) and
 * rank (process_sort_index); a slice per operation done, taken from the
 * snapshots' operation logs (each operation is in many snapshots: it is
 * written once, keyed by its enqueue time on the publisher's monotonic
 * clock). Slices start when NCCL enqueued the operation, and NCCL enqueues
 * ahead, so a rank's operations overlap without nesting: as complete
 * events (X) on one thread they broke Perfetto's rule that slices of a
 * track nest, and it drew them wrong. Each is an async slice instead (a
 * "b" and an "e" with the operation's own id, category collective or p2p),
 * which Perfetto and chrome://tracing lay out on as many tracks as the
 * overlaps need. Counter tracks per snapshot interval (channel wait time by wait
 * state, bytes per second, proxy-thread state shares); an instant event per
 * alert the monitor's analysis raised (run on the recording as replay does).
 *
 * Times: each publisher's monotonic clock is mapped to its wall clock by the
 * (wall_ns - mono_ns) of its first snapshot, so ranks on different hosts
 * line up as well as their wall clocks agree (NTP: usually within a
 * millisecond; PTP: microseconds). Timestamps are microseconds after the
 * recording's start (the recorder's wall clock). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "../core/diag.h"
#include "../core/frame.h"
#include "../core/model.h"
#include "../feeds/recording.h"

#define MAX_RANKS      8192
#define ALERT_PERIOD_S 0.5

/* A rank: (process, communicator), with what its counters were last time. */
typedef struct {
  char key[NT_REC_MAX_ENDPOINT + NT_MAX_HOST + 48]; /* endpoint, host, pid */
  uint64_t comm_hash;
  uint32_t comm_order; /* its communicator's place, first seen first */
  int tid;             /* trace pid */
  int32_t rank, nranks;
  bool named;
  bool clock_ok;           /* its first snapshot's clocks were within int64 */
  int64_t clock_offset_ns; /* wall - mono of the process's first snapshot */
  bool have_prev;
  uint64_t prev_mono_ns;
  uint64_t prev_wait[NT_WAIT_COUNT];
  uint64_t prev_bytes;
  uint64_t prev_state[NT_PROXY_NSTATES];
} trace_rank;

typedef struct {
  FILE *out;
  bool first_event;
  uint64_t start_wall_ns;
  trace_rank *ranks;
  uint32_t nranks;
  bool ranks_full_noted;
  /* Operations written, by key hash (open addressing, 0 = empty). */
  uint64_t *seen;
  size_t seen_cap, nseen;
  uint64_t slices, counters, instants;
  uint32_t ncomms_seen; /* communicators in comm_order */
  uint64_t unplaced;    /* events left out: their publisher's clocks are out of range */
  const char *path;     /* the recording, for messages */
  bool failed;
} exporter;

static void emit(exporter *x, cJSON *ev) {
  char *s = ev ? cJSON_PrintUnformatted(ev) : NULL;
  cJSON_Delete(ev);
  if (!s) {
    x->failed = true;
    return;
  }
  if (fprintf(x->out, "%s\n%s", x->first_event ? "" : ",", s) < 0) x->failed = true;
  x->first_event = false;
  free(s);
}

static cJSON *event(const char *name, const char *ph, int pid, int tid, double ts_us) {
  cJSON *e = cJSON_CreateObject();
  if (!e) return NULL;
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddStringToObject(e, "ph", ph);
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON_AddNumberToObject(e, "ts", ts_us);
  return e;
}

static void meta(exporter *x, const char *what, int pid, int tid, const char *name) {
  cJSON *e = event(what, "M", pid, tid, 0);
  cJSON *a = e ? cJSON_AddObjectToObject(e, "args") : NULL;
  if (a) cJSON_AddStringToObject(a, "name", name);
  emit(x, e);
}

static void sort_index(exporter *x, int pid, double index) {
  cJSON *e = event("process_sort_index", "M", pid, 0, 0);
  cJSON *a = e ? cJSON_AddObjectToObject(e, "args") : NULL;
  if (a) cJSON_AddNumberToObject(a, "sort_index", index);
  emit(x, e);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* True the first time a key is seen. */
static bool first_time(exporter *x, uint64_t key) {
  if (!key) key = 1;
  if (x->nseen * 2 >= x->seen_cap) {
    size_t cap = x->seen_cap ? x->seen_cap * 2 : 1 << 16;
    uint64_t *t = calloc(cap, sizeof *t);
    if (!t) return x->failed = true, false;
    for (size_t i = 0; i < x->seen_cap; i++) {
      if (!x->seen[i]) continue;
      size_t j = x->seen[i] & (cap - 1);
      while (t[j]) j = (j + 1) & (cap - 1);
      t[j] = x->seen[i];
    }
    free(x->seen);
    x->seen = t;
    x->seen_cap = cap;
  }
  size_t j = key & (x->seen_cap - 1);
  while (x->seen[j]) {
    if (x->seen[j] == key) return false;
    j = (j + 1) & (x->seen_cap - 1);
  }
  x->seen[j] = key;
  x->nseen++;
  return true;
}

/* The rank's entry; NULL when MAX_RANKS are known. */
static trace_rank *rank_of(exporter *x, const char *key, uint64_t comm_hash) {
  for (uint32_t i = 0; i < x->nranks; i++)
    if (x->ranks[i].comm_hash == comm_hash && !strcmp(x->ranks[i].key, key)) return &x->ranks[i];
  if (x->nranks == MAX_RANKS) {
    if (!x->ranks_full_noted)
      fprintf(stderr, "nccltop export: more than %d ranks; the rest are left out\n", MAX_RANKS);
    x->ranks_full_noted = true;
    return NULL;
  }
  trace_rank *r = &x->ranks[x->nranks];
  memset(r, 0, sizeof *r);
  snprintf(r->key, sizeof r->key, "%s", key);
  r->comm_hash = comm_hash;
  r->comm_order = x->ncomms_seen;
  for (uint32_t i = 0; i < x->nranks; i++)
    if (x->ranks[i].comm_hash == comm_hash) {
      r->comm_order = x->ranks[i].comm_order;
      break;
    }
  if (r->comm_order == x->ncomms_seen) x->ncomms_seen++;
  r->tid = (int)++x->nranks;
  return r;
}

/* Counters add up publishers' numbers: they stop at the top, not wrap. */
static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Microseconds after the recording's start of a time on a publisher's
 * monotonic clock, through its wall clock. Its clocks come from the file:
 * every step is checked, and a time that does not fit is left out (said
 * once). */
static bool ts_of(exporter *x, const trace_rank *r, uint64_t mono_ns, double *ts_us) {
  int64_t wall, rel;
  if (r->clock_ok && mono_ns <= INT64_MAX &&
      !__builtin_add_overflow((int64_t)mono_ns, r->clock_offset_ns, &wall) &&
      !__builtin_sub_overflow(wall, (int64_t)x->start_wall_ns, &rel)) {
    *ts_us = (double)rel / 1000.0;
    return true;
  }
  if (!x->unplaced++) {
    char who[sizeof r->key * 4];
    nt_sanitize(r->key, strlen(r->key), who, sizeof who);
    fprintf(stderr,
            "nccltop export: %s: publisher %s: a time out of range (monotonic %" PRIu64
            " ns, clock offset %" PRId64 " ns); such events are left out\n",
            x->path, who, mono_ns, r->clock_offset_ns);
  }
  return false;
}

static const char *comm_name_of(const nt_model_process *p, uint64_t hash) {
  for (uint32_t i = 0; p && i < p->ncomm_info && i < NT_MAX_COMMS; i++)
    if (p->comm_info[i].comm_hash == hash) return p->comm_info[i].name;
  return "";
}

static const nt_model_process *find_process(const nt_model *m, const char *endpoint,
                                            const nt_snapshot *s) {
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (p->pid == s->pid && !strcmp(p->endpoint, endpoint)) return p;
  }
  return NULL;
}

static void one_slice(exporter *x, trace_rank *r, const nt_snapshot *s, const nt_oplog_row *op,
                      const char *phase, const char *variant) {
  uint64_t start = s->mono_ns > op->age_ns ? s->mono_ns - op->age_ns : 0;
  uint64_t key = fnv(1469598103934665603ull, r->key, strlen(r->key));
  uint64_t parts[7] = {r->comm_hash, op->kind, op->func, op->seq, (uint64_t)(int64_t)op->root_peer,
                       op->bytes,    start};
  key = fnv(key, parts, sizeof parts);
  double ts;
  if (!first_time(x, key) || !ts_of(x, r, start, &ts)) return;
  /* An async slice: its begin (with the arguments) and its end, one id. */
  const char *cat = op->kind == NT_OP_P2P ? "p2p" : "collective";
  char id[24];
  snprintf(id, sizeof id, "0x%016" PRIx64, key);
  int tid = op->kind == NT_OP_P2P ? 2 : 1;
  cJSON *e = event(nt_func_name(op->func), "b", r->tid, tid, ts),
        *end = event(nt_func_name(op->func), "e", r->tid, tid, ts + (double)op->duration_ns / 1e3);
  if (!e || !end) {
    cJSON_Delete(e);
    cJSON_Delete(end);
    return (void)(x->failed = true);
  }
  cJSON_AddStringToObject(e, "cat", cat);
  cJSON_AddStringToObject(e, "id", id);
  cJSON_AddStringToObject(end, "cat", cat);
  cJSON_AddStringToObject(end, "id", id);
  cJSON *a = cJSON_AddObjectToObject(e, "args");
  if (a) {
    cJSON_AddStringToObject(a, "function", nt_func_name(op->func));
    cJSON_AddNumberToObject(a, "bytes", (double)op->bytes);
    cJSON_AddNumberToObject(a, "count", (double)op->count);
    cJSON_AddStringToObject(a, "datatype", nt_dtype_name(op->dtype));
    char lb[NT_MAX_VARIANT + 8];
    cJSON_AddStringToObject(
        a, "algorithm",
        nt_algo_label(op->algo, variant, (op->flags & NT_OPF_SYMMETRIC) != 0, lb, sizeof lb));
    if (variant[0]) cJSON_AddStringToObject(a, "kernel_variant", variant);
    cJSON_AddStringToObject(a, "protocol", nt_proto_name(op->proto));
    cJSON_AddStringToObject(a, "phase", phase);
    cJSON_AddNumberToObject(a, "seq", (double)op->seq);
    cJSON_AddNumberToObject(a, op->kind == NT_OP_P2P ? "peer" : "root", op->root_peer);
    cJSON_AddNumberToObject(a, "channels", op->nchannels);
    cJSON_AddStringToObject(a, "timing", nt_timing_name(op->timing));
  }
  emit(x, e);
  emit(x, end);
  x->slices++;
}

static void counter(exporter *x, trace_rank *r, const char *name, double ts,
                    const char *const *keys, const double *vals, int n) {
  cJSON *e = event(name, "C", r->tid, 0, ts);
  cJSON *a = e ? cJSON_AddObjectToObject(e, "args") : NULL;
  for (int i = 0; a && i < n; i++) cJSON_AddNumberToObject(a, keys[i], vals[i]);
  emit(x, e);
  x->counters++;
}

/* Everything one snapshot adds to the trace. */
static void add_snapshot(exporter *x, const nt_model *m, const char *endpoint,
                         const nt_snapshot *s) {
  char key[sizeof((trace_rank *)0)->key], phase[4 * NT_MAX_PHASE + 1];
  snprintf(key, sizeof key, "%s|%s|%u", endpoint, s->host, s->pid);
  const nt_model_process *p = find_process(m, endpoint, s);
  for (uint32_t c = 0; c < s->ncomms; c++) {
    const nt_comm_row *cr = &s->comms[c];
    trace_rank *r = rank_of(x, key, cr->comm_hash);
    if (!r) continue;
    if (!r->named) {
      r->named = true;
      r->rank = cr->rank;
      r->nranks = cr->nranks;
      /* Both within int64 (and not negative): their difference is too. */
      r->clock_ok = s->wall_ns <= INT64_MAX && s->mono_ns <= INT64_MAX;
      r->clock_offset_ns = r->clock_ok ? (int64_t)s->wall_ns - (int64_t)s->mono_ns : 0;
      char host[4 * NT_MAX_HOST + 1], cname[4 * NT_MAX_NAME + 1], name[1024], rk[32];
      nt_sanitize(s->host, strlen(s->host), host, sizeof host);
      nt_comm_label(comm_name_of(p, cr->comm_hash), cr->comm_hash, cname, sizeof cname);
      snprintf(name, sizeof name, "%s:%u rank %s %s", host, s->pid,
               nt_fmt_rank(cr->rank, cr->nranks, rk, sizeof rk), cname);
      meta(x, "process_name", r->tid, 0, name);
      /* By communicator, then rank (not first appearance); ranks not known
       * (negative) after the others of their communicator. */
      int32_t rank_place = cr->rank >= 0 && cr->rank < (1 << 24) ? cr->rank : (1 << 24) - 1;
      sort_index(x, r->tid, (double)r->comm_order * (1 << 24) + rank_place);
      meta(x, "thread_name", r->tid, 1, "collectives");
      meta(x, "thread_name", r->tid, 2, "p2p");
    }
    /* Operations of this communicator, done. */
    for (uint32_t i = 0; i < s->noplog; i++) {
      const nt_oplog_row *op = &s->oplog[i];
      if (op->comm_index != c || op->state != NT_OPS_DONE) continue;
      phase[0] = '\0';
      for (uint32_t k = 0; op->phase && k < s->nphases; k++)
        if (s->phases[k].id == op->phase)
          nt_sanitize(s->phases[k].name, strlen(s->phases[k].name), phase, sizeof phase);
      const char *vn = nt_variant_name(s, op->variant);
      char variant[4 * NT_MAX_VARIANT + 1];
      nt_sanitize(vn, strlen(vn), variant, sizeof variant);
      one_slice(x, r, s, op, phase, variant);
    }
    /* Counters over the interval since its last snapshot. */
    uint64_t wait[NT_WAIT_COUNT] = {0}, bytes = 0, state[NT_PROXY_NSTATES] = {0};
    for (uint32_t i = 0; i < s->nchannels; i++) {
      const nt_channel_row *ch = &s->channels[i];
      if (ch->comm_index != c) continue;
      for (int k = 0; k < 3; k++) {
        int w = nt_dir_wait(ch->dir, k);
        if (w >= 0 && w < NT_WAIT_COUNT) wait[w] = sat_add(wait[w], ch->wait_ns[k]);
      }
      bytes = sat_add(bytes, ch->bytes);
    }
    for (uint32_t i = 0; i < s->nproxy; i++)
      if (s->proxy[i].comm_index == c)
        for (int k = 0; k < NT_PROXY_NSTATES; k++)
          state[k] = sat_add(state[k], s->proxy[i].state_ns[k]);
    double ts;
    if (r->have_prev && s->mono_ns > r->prev_mono_ns && ts_of(x, r, s->mono_ns, &ts)) {
      double dt = (double)(s->mono_ns - r->prev_mono_ns) / 1e9;
      const char *wk[NT_WAIT_COUNT];
      double wv[NT_WAIT_COUNT];
      int nw = 0;
      for (int w = 0; w < NT_WAIT_COUNT; w++) {
        if (w == NT_WAIT_NONE) continue;
        wk[nw] = nt_wait_name(w);
        wv[nw++] = wait[w] >= r->prev_wait[w] ? (double)(wait[w] - r->prev_wait[w]) / 1e6 / dt : 0;
      }
      counter(x, r, "channel waits (ms/s)", ts, wk, wv, nw);
      const char *bk[1] = {"bytes/s"};
      double bv[1] = {bytes >= r->prev_bytes ? (double)(bytes - r->prev_bytes) / dt : 0};
      counter(x, r, "bytes/s", ts, bk, bv, 1);
      const char *sk[NT_PROXY_NSTATES];
      double sv[NT_PROXY_NSTATES], total = 0;
      for (int k = 0; k < NT_PROXY_NSTATES; k++)
        total += state[k] >= r->prev_state[k] ? (double)(state[k] - r->prev_state[k]) : 0;
      for (int k = 0; k < NT_PROXY_NSTATES; k++) {
        sk[k] = nt_proxy_state_name(k);
        sv[k] = total > 0 && state[k] >= r->prev_state[k]
                    ? (double)(state[k] - r->prev_state[k]) / total
                    : 0;
      }
      if (s->nproxy) counter(x, r, "proxy thread states (share)", ts, sk, sv, NT_PROXY_NSTATES);
    }
    r->have_prev = true;
    r->prev_mono_ns = s->mono_ns;
    memcpy(r->prev_wait, wait, sizeof wait);
    r->prev_bytes = bytes;
    memcpy(r->prev_state, state, sizeof state);
  }
}

/* Instant events for alerts new since the last check. */
typedef struct {
  uint64_t key;
} alert_seen;

static void add_alerts(exporter *x, const nt_model *m, nt_diag *d, nt_frame *f, uint32_t stall_ms,
                       double now_s, double rel_s, uint64_t *prev, uint32_t *nprev) {
  /* The alerts as every reader sees them: the frame's. */
  nt_frame_opts fo = {.stall_ms = stall_ms, .update_s = ALERT_PERIOD_S};
  if (nt_frame_build(f, m, d, &fo, now_s) != 0) return; /* memory: the next look */
  uint32_t n = f->nalerts < 256 ? f->nalerts : 256;
  uint64_t cur[256];
  for (uint32_t i = 0; i < n; i++) {
    const nt_frame_alert *a = &f->alerts[i];
    uint64_t parts[5] = {(uint64_t)a->kind, a->comm_hash, (uint64_t)(int64_t)a->rank,
                         a->has_proc ? a->pid : 0,
                         fnv(1469598103934665603ull, a->host, strlen(a->host))};
    cur[i] = fnv(1469598103934665603ull, parts, sizeof parts);
    bool was = false;
    for (uint32_t k = 0; k < *nprev; k++) was |= prev[k] == cur[i];
    if (was) continue;
    int pid = 0;
    if (a->has_proc) {
      /* A rank's key is "endpoint|host|pid": its host and pid say which. */
      char tail[sizeof((trace_rank *)0)->key];
      int tl = snprintf(tail, sizeof tail, "|%s|%u", a->host, a->pid);
      for (uint32_t k = 0; tl > 0 && k < x->nranks; k++) {
        size_t kl = strlen(x->ranks[k].key);
        if (x->ranks[k].comm_hash == a->comm_hash && kl >= (size_t)tl &&
            !strcmp(x->ranks[k].key + kl - (size_t)tl, tail))
          pid = x->ranks[k].tid;
      }
    }
    char name[64];
    snprintf(name, sizeof name, "alert: %s", nt_alert_kind_name(a->kind));
    cJSON *e = event(name, "i", pid, 0, rel_s * 1e6);
    if (!e) continue;
    cJSON_AddStringToObject(e, "s", pid ? "p" : "g");
    cJSON *args = cJSON_AddObjectToObject(e, "args");
    if (args) cJSON_AddStringToObject(args, "text", a->text);
    emit(x, e);
    x->instants++;
  }
  memcpy(prev, cur, n * sizeof *cur);
  *nprev = n;
}

static void export_usage(FILE *f) {
  fprintf(f, "usage: nccltop export FILE --chrome-trace OUT.json [--stall-ms MS] [--force]\n"
             "  a recording as Chrome trace event JSON: open OUT.json in ui.perfetto.dev or\n"
             "  chrome://tracing (a process per rank, ordered by communicator and rank; an\n"
             "  async slice per operation, from enqueue to done; counters, alerts)\n"
             "  --force     replace an existing OUT.json (without it, it is kept: exit 2); OUT\n"
             "              is never FILE itself, nor a link to it\n");
}

int nt_export_main(int argc, char **argv) {
  enum { O_TRACE = 256, O_STALL, O_FORCE };
  static const struct option opts[] = {
      {"chrome-trace", required_argument, NULL, O_TRACE},
      {"stall-ms", required_argument, NULL, O_STALL},
      {"force", no_argument, NULL, O_FORCE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *out_path = NULL;
  uint32_t stall_ms = 2000;
  unsigned out_flags = NT_OUT_SPECIAL; /* /dev/stdout, a FIFO: written as they are */
  optind = 0;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    char *end;
    switch (ch) {
    case O_TRACE: out_path = optarg; break;
    case O_FORCE: out_flags |= NT_OUT_REPLACE; break;
    case O_STALL: {
      errno = 0;
      unsigned long v = strtoul(optarg, &end, 10);
      if (errno || *end || end == optarg || optarg[0] == '-' || v < 10 || v > 86400000) {
        fprintf(stderr,
                "nccltop export: --stall-ms must be a whole number from 10 to 86400000, "
                "not '%s'\n",
                optarg);
        return 2;
      }
      stall_ms = (uint32_t)v;
      break;
    }
    case 'h': export_usage(stdout); return 0;
    default:
      fprintf(stderr, "nccltop export: %s '%s'; try 'nccltop export --help'\n",
              ch == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
      return 2;
    }
  }
  if (optind != argc - 1 || !out_path) {
    fprintf(stderr, "nccltop export: usage: nccltop export FILE --chrome-trace OUT.json\n");
    return 2;
  }
  char err[700];
  nt_rec_reader *rd = nt_rec_open(argv[optind], err, sizeof err);
  if (!rd) {
    fprintf(stderr, "nccltop export: %s\n", err);
    return 1;
  }
  /* The output is never the recording (a slip of tab completion would
   * destroy it), whatever name or link leads to it, and an existing one is
   * replaced only with --force, by a rename once the trace is whole. */
  nt_file_id input = nt_rec_file_id(rd);
  if (nt_out_check(out_path, out_flags, &input, 1, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop export: %s\n", err);
    nt_rec_close_reader(rd);
    return 2;
  }
  nt_outfile of;
  if (nt_out_open(&of, out_path, out_flags, &input, 1, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop export: %s\n", err);
    nt_rec_close_reader(rd);
    return 1;
  }
  exporter x = {.first_event = true,
                .start_wall_ns = nt_rec_header_of(rd)->start_wall_ns,
                .path = argv[optind]};
  x.ranks = calloc(MAX_RANKS, sizeof *x.ranks);
  nt_model *m = nt_model_new();
  nt_diag *d = nt_diag_new(); /* the alerts' history: its own, beside the model */
  nt_frame *f = nt_frame_new();
  nt_rec_applier *ap = nt_rec_applier_new();
  if ((x.out = fdopen(of.fd, "w"))) of.fd = -1; /* the stream closes it */
  int rc = 0;
  bool broken = false; /* nothing worth keeping was written */
  if (!x.out) {
    fprintf(stderr, "nccltop export: cannot write %s: %s\n", out_path, strerror(errno));
    rc = 1;
  } else if (!x.ranks || !m || !d || !f || !ap) {
    fprintf(stderr, "nccltop export: out of memory\n");
    rc = 1;
    broken = true;
  }
  static uint64_t prev[256];
  uint32_t nprev = 0;
  double next_alert = 0;
  if (rc == 0 &&
      fprintf(x.out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"nccltop\"},"
                     "\"traceEvents\":[") < 0)
    x.failed = true;
  nt_rec_record r;
  int got = 0;
  while (rc == 0 && !x.failed && (got = nt_rec_next(rd, &r, err, sizeof err)) == 1) {
    double rel = (double)r.t_ns / 1e9, now = nt_rec_time_s(nt_rec_header_of(rd), r.t_ns);
    nt_rec_apply(ap, m, &r, now);
    const nt_snapshot *s = nt_rec_last_snapshot(ap);
    if (s) add_snapshot(&x, m, r.endpoint, s);
    if (rel >= next_alert) {
      nt_model_tick(m, now);
      add_alerts(&x, m, d, f, stall_ms, now, rel, prev, &nprev);
      next_alert = rel + ALERT_PERIOD_S;
    }
  }
  if (got != 1 && err[0]) fprintf(stderr, "nccltop export: %s\n", err);
  if (got < 0) rc = 1;
  /* A read error leaves the trace of what came before it (as replay prints
   * the frames before it); a write error leaves the old OUT, if any. */
  bool keep = x.out && !broken && !x.failed && fprintf(x.out, "\n]}\n") >= 0;
  if (x.out && fclose(x.out) != 0) keep = false;
  if (keep && nt_out_commit(&of, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop export: %s\n", err);
    keep = false;
  } else if (!keep && x.out && !broken) {
    fprintf(stderr, "nccltop export: cannot write %s\n", out_path);
  }
  if (!keep) rc = 1;
  nt_out_discard(&of); /* after the commit: nothing left to remove */
  if (rc == 0)
    fprintf(stderr,
            "nccltop export: %u ranks, %" PRIu64 " operations, %" PRIu64
            " counter samples, %" PRIu64 " alerts in %s%s\n",
            x.nranks, x.slices, x.counters, x.instants, out_path,
            x.unplaced ? " (some left out: see above)" : "");
  nt_rec_applier_free(ap);
  nt_frame_free(f);
  nt_diag_free(d);
  nt_model_free(m);
  nt_rec_close_reader(rd);
  free(x.ranks);
  free(x.seen);
  return rc;
}

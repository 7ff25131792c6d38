/* Batch output (-b): one frame of the model as text, or as exactly one JSON
 * line, flushed at once so a pipe reader sees every frame as it happens.
 *
 * JSON frame, built with cJSON (keys in this order; scripts and tests rely on
 * the names, never on the order):
 * {"time": seconds since the viewer started (float),
 *  "publishers": processes known, "messages": messages taken,
 *  "bad_messages": messages that failed to decode, "errors_total": problems
 *  noted (bad messages included), "refused": messages refused (every reason),
 *  "refused_by": {"pid", "source_full", "table_full", "memory", "seq_jump",
 *     "clock_jump"} (enum nt_refusal), "memory_bytes": what the model holds,
 *  "memory_budget": its budget (--max-memory),
 *  "left_out": {"processes", "ranks"}: entries not in this frame, which would
 *     have taken it past NT_JSON_FRAME_CAP bytes (0 and 0 normally),
 *  "errors": ["<endpoint>: <reason>", ...]  newest first, at most 8,
 *  "processes": [{"host", "pid", "stale": bool, "ended": bool, "nccl_version",
 *     "plugin_version", "abi", "seq", "lost_messages", "restarts", "event_mask",
 *     "counters": {"events", "dropped_events", "unknown_events", "foreign_ops",
 *                  "reclaimed_ops", "dropped_rows", "unsent_messages"},
 *     "proxy": [proxy threads not attributed to any communicator, as below]}],
 *  "ranks": [{"comm": "<16 hex digits>", "comm_name", "rank", "nranks", "nnodes",
 *     "host", "pid", "stale": bool, "ended": bool, "colls", "p2ps", "launched"
 *     (operations launched, over its functions), "done_per_s" (operations done
 *     per second, the publisher's last interval), "stalled_channels",
 *     "proxy": [{"tid", "state": "idle|active|sleep|wakeup|append|unknown",
 *                "state_age_ms", "state_ns": {"idle", "active", "sleep", "wakeup",
 *                "append"}, "share_last": {same keys, 0..1}, "share_total": {same},
 *                "appends", "appended_ops", "wakeups"}],
 *     "channels": [{"channel", "dir": "send|recv", "peer", "steps", "bytes",
 *                   "wait_ns": {"send_gpu_wait", "send_peer_wait", "send_net_wait"}
 *                              (recv rows: "recv_net_wait", "recv_flush_wait",
 *                              "recv_gpu_wait"),
 *                   "dominant_wait": a wait name or "none", "steps_per_s",
 *                   "bytes_per_s", "ops_in_flight", "cur_step" (-1: none),
 *                   "cur_wait": a wait name or "none", "progress_age_ms" (-1: never),
 *                   "run_state": idle|queued|running|unknown (1.1 publishers),
 *                   "relay_rank" (PXN rows only: the rank whose ops this
 *                   process's proxy ran), "stalled": bool}],
 *     "kernels": [{"channel", "count", "busy_ns", "phase_ns": {"initial_sync",
 *       "compute", "final_sync"} (GPU ns per KernelPhase, NCCL 2.31; 0 none)}],
 *     and "api", "seq", "in_flight", "net" (batch_ops.c)}],
 *  "comms": [{"comm", "comm_name", "nranks", "nnodes", "ranks" (in this frame),
 *     "stalled_channels", "launched_min", "launched_max", "done_per_s" (per
 *     rank), "phase" (the first of its ranks' phase now)}]: the overview's lines,
 *  and "alerts", "collectives", "phases", "recent", "runs" (batch_ops.c)}
 * Ranks are sorted by (comm, rank). Every counter is a JSON number: exact up
 * to 2^53, which cumulative nanoseconds reach after 104 days (beyond, the
 * nearest double). Shares and rates are over the publisher's last interval.
 * State and wait names are those of nt_proxy_state_name / nt_wait_name.
 * Strings from publishers were sanitized when they arrived (model.c);
 * cJSON adds JSON escaping only.
 */
#include <stdlib.h>
#include <string.h>

#include "batch_json.h"

#define ERRORS_IN_FRAME 8
/* A JSON frame stays under this many bytes: a reader (jq, a script) should
 * not meet a line of hundreds of megabytes because a publisher sent
 * thousands of full-size snapshots. Processes and ranks beyond it are left
 * out, and counted in "left_out". */
#define NT_JSON_FRAME_CAP (64u << 20)
/* ...of which this much is kept for everything but processes and ranks
 * (counters, errors, alerts, operation tables: all bounded). */
#define FRAME_REST_BYTES (4u << 20)
/* Bytes one row of a snapshot (or one environment variable) can take in a
 * frame, at most: a bound that spares measuring small frames. */
#define ROW_JSON_MAX  2048
#define ITEM_JSON_MAX 16384

/* Room left in a frame. Items are measured (printed alone) only when the
 * bound on the whole frame is over the cap: normal frames print once. */
typedef struct {
  bool measure;
  size_t left;
  uint32_t left_out_procs, left_out_ranks;
} frame_room;

static double age_ms(uint64_t ns) {
  return ns == UINT64_MAX ? -1 : (double)ns / 1e6;
}

static const char *dir_name(int dir) {
  return dir == NT_DIR_RECV ? "recv" : "send";
}

static cJSON *per_state(const double *v) {
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < NT_PROXY_NSTATES; i++) put_num(o, nt_proxy_state_name(i), v[i]);
  return o;
}

static cJSON *proxy_json(const nt_frame_proxy *p) {
  const nt_proxy_row *t = &p->row;
  double ns[NT_PROXY_NSTATES];
  for (int i = 0; i < NT_PROXY_NSTATES; i++) ns[i] = (double)t->state_ns[i];
  cJSON *x = cJSON_CreateObject();
  put_num(x, "tid", t->tid);
  put_str(x, "state", nt_proxy_state_name(t->state));
  put_num(x, "state_age_ms", age_ms(t->state_age_ns));
  put_obj(x, "state_ns", per_state(ns));
  put_obj(x, "share_last", per_state(p->share_last));
  put_obj(x, "share_total", per_state(p->share_total));
  put_num(x, "appends", (double)t->appends);
  put_num(x, "appended_ops", (double)t->appended_ops);
  put_num(x, "wakeups", (double)t->wakeups);
  return x;
}

static cJSON *channel_json(const nt_frame_channel *fc) {
  const nt_channel_row *c = &fc->row;
  cJSON *x = cJSON_CreateObject();
  put_num(x, "channel", c->channel);
  put_str(x, "dir", dir_name(c->dir));
  put_num(x, "peer", c->peer);
  put_num(x, "steps", (double)c->steps);
  put_num(x, "bytes", (double)c->bytes);
  cJSON *w = put_obj(x, "wait_ns", cJSON_CreateObject());
  for (int k = 0; k < 3; k++)
    put_num(w, nt_wait_name(nt_dir_wait(c->dir, k)), (double)c->wait_ns[k]);
  put_str(x, "dominant_wait", nt_wait_name(fc->dominant_wait));
  put_num(x, "steps_per_s", fc->steps_per_s);
  put_num(x, "bytes_per_s", fc->bytes_per_s);
  put_num(x, "ops_in_flight", (double)(c->ops_started - c->ops_done));
  put_num(x, "cur_step", c->cur_step);
  put_str(x, "cur_wait", nt_wait_name(c->cur_wait));
  put_num(x, "progress_age_ms", age_ms(c->progress_age_ns));
  put_str(x, "run_state", nt_run_name(c->run_state));
  if (c->relay_rank >= 0) put_num(x, "relay_rank", c->relay_rank);
  put_bool(x, "stalled", fc->stalled);
  return x;
}

static cJSON *rank_json(const nt_frame *f, const nt_frame_rank *r) {
  const nt_frame_proc *p = nt_frame_proc_of(f, r);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->comm_hash);
  cJSON *j = cJSON_CreateObject();
  put_str(j, "comm", hex);
  put_str(j, "comm_name", r->comm_name);
  put_num(j, "rank", r->rank);
  put_num(j, "nranks", r->nranks);
  put_num(j, "nnodes", r->nnodes);
  put_str(j, "host", p->host);
  put_num(j, "pid", p->pid);
  put_bool(j, "stale", p->stale);
  put_bool(j, "ended", p->ended);
  put_num(j, "colls", (double)r->comm.colls_enqueued);
  put_num(j, "p2ps", (double)r->comm.p2ps_enqueued);
  put_num(j, "launched", (double)r->launched);
  put_num(j, "done_per_s", r->done_per_s);
  put_num(j, "stalled_channels", r->stalled);
  cJSON *proxy = put_obj(j, "proxy", cJSON_CreateArray());
  for (uint32_t i = r->proxy0; i < r->proxy0 + r->nproxy; i++)
    append(proxy, proxy_json(&f->proxy[i]));
  cJSON *chans = put_obj(j, "channels", cJSON_CreateArray());
  for (uint32_t i = r->chan0; i < r->chan0 + r->nchan; i++)
    append(chans, channel_json(&f->channels[i]));
  cJSON *kern = put_obj(j, "kernels", cJSON_CreateArray());
  for (uint32_t i = r->kern0; i < r->kern0 + r->nkern; i++) {
    const nt_kernel_row *k = &f->kernels[i];
    cJSON *x = cJSON_CreateObject();
    put_num(x, "channel", k->channel);
    put_num(x, "count", (double)k->count);
    put_num(x, "busy_ns", (double)k->busy_ns);
    /* Protocol 1.3 (NCCL 2.31, kernelphase): GPU ns per kernel phase. */
    cJSON *ph = put_obj(x, "phase_ns", cJSON_CreateObject());
    static const char *const kphase[NT_KPHASE_COUNT] = {"initial_sync", "compute", "final_sync"};
    for (int q = 0; q < NT_KPHASE_COUNT; q++) put_num(ph, kphase[q], (double)k->phase_ns[q]);
    append(kern, x);
  }
  nt_batch_rank_ops(j, f, r);
  return j;
}

static cJSON *process_json(const nt_frame *f, const nt_frame_proc *p) {
  const nt_process_counters *c = &p->counters;
  cJSON *j = cJSON_CreateObject();
  put_str(j, "host", p->host);
  put_num(j, "pid", p->pid);
  put_bool(j, "stale", p->stale);
  put_bool(j, "ended", p->ended);
  put_str(j, "nccl_version", p->nccl_version);
  put_str(j, "plugin_version", p->plugin_version);
  put_num(j, "abi", c->abi_version);
  put_num(j, "seq", (double)p->seq);
  put_num(j, "lost_messages", (double)p->lost_messages);
  put_num(j, "restarts", (double)p->restarts);
  put_num(j, "event_mask", c->event_mask);
  cJSON *k = put_obj(j, "counters", cJSON_CreateObject());
  put_num(k, "events", (double)c->events);
  put_num(k, "dropped_events", (double)c->dropped_events);
  put_num(k, "unknown_events", (double)c->unknown_events);
  put_num(k, "foreign_ops", (double)c->foreign_ops);
  put_num(k, "reclaimed_ops", (double)c->reclaimed_ops);
  put_num(k, "dropped_rows", (double)c->dropped_rows);
  put_num(k, "unsent_messages", (double)c->unsent_messages);
  cJSON *proxy = put_obj(j, "proxy", cJSON_CreateArray());
  for (uint32_t i = p->proxy0; i < p->proxy0 + p->nproxy; i++)
    append(proxy, proxy_json(&f->proxy[i]));
  nt_batch_process_ops(j, f, p);
  return j;
}

/* Rows of a process (its own and its ranks'), at most: a bound for the
 * frame's size. */
static size_t rows_bound(const nt_frame *f) {
  return (size_t)f->nranks + f->nproxy + f->nchannels + f->nkernels + f->nseq + f->nops + f->nnet +
         f->nvars + (size_t)f->nprocs * (NT_MAX_PHASES + 1);
}

/* Whether the frame may exceed the cap: then every item is measured. */
static frame_room frame_bound(const nt_frame *f) {
  frame_room r = {false, NT_JSON_FRAME_CAP - FRAME_REST_BYTES, 0, 0};
  /* A process object and its ranks' objects: each row is in one of them. */
  size_t bound = ((size_t)f->nprocs + f->nranks) * ITEM_JSON_MAX + rows_bound(f) * ROW_JSON_MAX;
  r.measure = bound > r.left;
  return r;
}

/* Appends item to array if the frame has room for it; counts it left out
 * (and frees it) when not. */
static void append_within(cJSON *array, cJSON *item, frame_room *room, uint32_t *left_out) {
  if (!item) return;
  if (room->measure) {
    char *text = cJSON_PrintUnformatted(item);
    size_t len = text ? strlen(text) + 1 : SIZE_MAX; /* + the comma */
    free(text);
    if (len > room->left) {
      cJSON_Delete(item);
      (*left_out)++;
      room->left = 0; /* the rest goes too: a frame is a prefix, not a sample */
      return;
    }
    room->left -= len;
  }
  append(array, item);
}

static void put_refusals(cJSON *root, const nt_frame *f) {
  put_num(root, "refused", (double)f->refused);
  cJSON *by = put_obj(root, "refused_by", cJSON_CreateObject());
  for (int i = 0; by && i < NT_REFUSE_COUNT; i++)
    put_num(by, nt_refusal_name(i), (double)f->refused_by[i]);
  put_num(root, "memory_bytes", (double)f->memory_bytes);
  put_num(root, "memory_budget", (double)f->memory_budget);
}

char *nt_frame_json(const nt_frame *f) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  put_num(root, "time", f->time);
  put_num(root, "publishers", f->publishers);
  put_num(root, "messages", (double)f->messages);
  put_num(root, "bad_messages", (double)f->bad_messages);
  put_num(root, "errors_total", (double)f->errors_total);
  put_refusals(root, f);
  cJSON *errs = put_obj(root, "errors", cJSON_CreateArray());
  for (uint32_t i = 0; i < f->nerrors && i < ERRORS_IN_FRAME; i++) {
    const nt_model_error *e = &f->errors[i];
    char line[sizeof e->source + sizeof e->text + 4];
    snprintf(line, sizeof line, "%s: %s", e->source, e->text);
    append(errs, cJSON_CreateString(line));
  }
  frame_room room = frame_bound(f);
  cJSON *procs = put_obj(root, "processes", cJSON_CreateArray());
  for (uint32_t i = 0; procs && i < f->nprocs; i++) {
    if (room.measure && !room.left)
      room.left_out_procs++;
    else
      append_within(procs, process_json(f, &f->procs[i]), &room, &room.left_out_procs);
  }
  cJSON *rs = put_obj(root, "ranks", cJSON_CreateArray());
  for (uint32_t i = 0; rs && i < f->nranks; i++) {
    if (room.measure && !room.left)
      room.left_out_ranks++;
    else
      append_within(rs, rank_json(f, &f->ranks[i]), &room, &room.left_out_ranks);
  }
  cJSON *cm = put_obj(root, "comms", cJSON_CreateArray());
  for (uint32_t i = 0; cm && i < f->ncomms; i++) {
    const nt_frame_comm *c = &f->comms[i];
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c->hash);
    cJSON *x = cJSON_CreateObject();
    put_str(x, "comm", hex);
    put_str(x, "comm_name", c->name);
    put_num(x, "nranks", c->nranks);
    put_num(x, "nnodes", c->nnodes);
    put_num(x, "ranks", c->ranks);
    put_num(x, "stalled_channels", c->stalled);
    put_num(x, "launched_min", (double)c->launched_min);
    put_num(x, "launched_max", (double)c->launched_max);
    put_num(x, "done_per_s", c->done_per_s);
    put_str(x, "phase", c->phase);
    append(cm, x);
  }
  cJSON *left = put_obj(root, "left_out", cJSON_CreateObject());
  if (left) {
    put_num(left, "processes", room.left_out_procs);
    put_num(left, "ranks", room.left_out_ranks);
  }
  nt_batch_job_json(root, f);
  /* Start the print buffer at the last frame's size: one allocation, no
   * growing copies of a frame that can be tens of megabytes. */
  static int last_len = 4096;
  char *text = cJSON_PrintBuffered(root, last_len + last_len / 8, false);
  cJSON_Delete(root);
  if (!text) return NULL;
  size_t len = strlen(text);
  last_len = len < (1u << 30) ? (int)len : 1 << 30;
  return text;
}

static const char *mark(const nt_frame_proc *p) {
  return p->ended ? "  ENDED" : p->stale ? "  STALE" : "";
}

static void proxy_line(FILE *out, const nt_frame *f, const nt_frame_proxy *x) {
  const nt_frame_proc *p = &f->procs[x->proc];
  const nt_frame_rank *r = x->rank >= 0 ? &f->ranks[x->rank] : NULL;
  const nt_proxy_row *row = &x->row;
  char who[48], rank[24], comm[20];
  snprintf(who, sizeof who, "%.24s:%u", p->host, p->pid);
  if (r) {
    snprintf(rank, sizeof rank, "%d/%d", r->rank, r->nranks);
    snprintf(comm, sizeof comm, "%016llx", (unsigned long long)r->comm_hash);
  } else {
    snprintf(rank, sizeof rank, "-");
    snprintf(comm, sizeof comm, "-");
  }
  const double *last = x->share_last;
  fprintf(out, "%-7s %-16s %-30s %8u %-7s %6.1f %6.1f %6.1f %6.1f %6.1f %9llu%s\n", rank, comm, who,
          row->tid, nt_proxy_state_name(row->state), 100 * last[0], 100 * last[1], 100 * last[2],
          100 * last[3], 100 * last[4], (unsigned long long)row->appends, mark(p));
}

void nt_frame_text(FILE *out, const nt_frame *f) {
  char mem[32];
  fprintf(out,
          "nccltop %.1fs  publishers %u  ranks %u  messages %llu  bad %llu  errors %llu  refused "
          "%llu  mem %s\n",
          f->time, f->publishers, f->nranks, (unsigned long long)f->messages,
          (unsigned long long)f->bad_messages, (unsigned long long)f->errors_total,
          (unsigned long long)f->refused, nt_fmt_size((double)f->memory_bytes, mem, sizeof mem));
  for (uint32_t i = 0; i < f->nerrors && i < 3; i++)
    fprintf(out, "error: %s: %s\n", f->errors[i].source, f->errors[i].text);
  nt_batch_alerts_text(out, f);
  fprintf(out, "%-7s %-16s %-30s %8s %-7s %6s %6s %6s %6s %6s %9s\n", "RANK", "COMM", "HOST:PID",
          "TID", "STATE", "IDLE%", "ACTV%", "SLEEP%", "WAKE%", "APND%", "APPENDS");
  /* Ranks' threads, in rank order, then threads of no communicator. */
  for (uint32_t i = 0; i < f->nranks; i++)
    for (uint32_t k = f->ranks[i].proxy0; k < f->ranks[i].proxy0 + f->ranks[i].nproxy; k++)
      proxy_line(out, f, &f->proxy[k]);
  for (uint32_t i = 0; i < f->nprocs; i++)
    for (uint32_t k = f->procs[i].proxy0; k < f->procs[i].proxy0 + f->procs[i].nproxy; k++)
      proxy_line(out, f, &f->proxy[k]);
  fprintf(out, "%-7s %-16s %3s %-4s %5s %-15s %9s %10s %6s %-7s %6s\n", "RANK", "COMM", "CH", "DIR",
          "PEER", "WAIT", "STEPS/s", "RATE", "FLIGHT", "RUN", "STEP");
  for (uint32_t i = 0; i < f->nranks; i++) {
    const nt_frame_rank *r = &f->ranks[i];
    char rank[24];
    snprintf(rank, sizeof rank, "%d/%d", r->rank, r->nranks);
    for (uint32_t c = r->chan0; c < r->chan0 + r->nchan; c++) {
      const nt_frame_channel *fc = &f->channels[c];
      const nt_channel_row *row = &fc->row;
      char relay[32] = "", rate[NT_UNIT_LEN];
      if (row->relay_rank >= 0) snprintf(relay, sizeof relay, "  relay r%d", row->relay_rank);
      fprintf(out, "%-7s %016llx %3u %-4s %5d %-15s %9.0f %10s %6llu %-7s %6d%s%s%s\n", rank,
              (unsigned long long)r->comm_hash, row->channel, dir_name(row->dir), row->peer,
              nt_wait_name(fc->dominant_wait), fc->steps_per_s,
              nt_fmt_rate(fc->bytes_per_s, rate, sizeof rate),
              (unsigned long long)(row->ops_started - row->ops_done), nt_run_name(row->run_state),
              row->cur_step, fc->stalled ? "  STALLED" : "", relay, mark(nt_frame_proc_of(f, r)));
    }
  }
  nt_batch_ops_text(out, f);
  fputc('\n', out);
}

int nt_batch_print(FILE *out, nt_model *m, const nt_options *o, double now_s) {
  static nt_frame *f;
  if (!f && !(f = nt_frame_new())) return -1;
  nt_frame_opts fo = {.stall_ms = o->stall_ms, .process_env = o->json, .start_s = o->start_s};
  if (nt_frame_build(f, m, &fo, now_s) != 0) return -1;
  int rc = 0;
  if (o->json) {
    char *text = nt_frame_json(f);
    rc = !text || fputs(text, out) < 0 || fputc('\n', out) == EOF ? -1 : 0;
    free(text);
  } else {
    nt_frame_text(out, f);
  }
  if (fflush(out) != 0 || ferror(out)) rc = -1;
  return rc;
}

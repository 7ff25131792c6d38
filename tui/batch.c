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
 *     "host", "pid", "stale": bool, "ended": bool, "colls", "p2ps",
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

#define MAX_RANKS       65536
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

static cJSON *proxy_json(const nt_model_process *p, const nt_proxy_row *t) {
  double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES], ns[NT_PROXY_NSTATES];
  nt_model_proxy_shares(p, t, last, total);
  for (int i = 0; i < NT_PROXY_NSTATES; i++) ns[i] = (double)t->state_ns[i];
  cJSON *x = cJSON_CreateObject();
  put_num(x, "tid", t->tid);
  put_str(x, "state", nt_proxy_state_name(t->state));
  put_num(x, "state_age_ms", age_ms(t->state_age_ns));
  put_obj(x, "state_ns", per_state(ns));
  put_obj(x, "share_last", per_state(last));
  put_obj(x, "share_total", per_state(total));
  put_num(x, "appends", (double)t->appends);
  put_num(x, "appended_ops", (double)t->appended_ops);
  put_num(x, "wakeups", (double)t->wakeups);
  return x;
}

static cJSON *channel_json(const nt_model_process *p, const nt_channel_row *c, uint32_t stall_ms) {
  double sps, bps;
  nt_model_channel_rates(p, c, &sps, &bps);
  cJSON *x = cJSON_CreateObject();
  put_num(x, "channel", c->channel);
  put_str(x, "dir", dir_name(c->dir));
  put_num(x, "peer", c->peer);
  put_num(x, "steps", (double)c->steps);
  put_num(x, "bytes", (double)c->bytes);
  cJSON *w = put_obj(x, "wait_ns", cJSON_CreateObject());
  for (int k = 0; k < 3; k++)
    put_num(w, nt_wait_name(nt_dir_wait(c->dir, k)), (double)c->wait_ns[k]);
  put_str(x, "dominant_wait", nt_wait_name(nt_model_channel_dominant_wait(p, c)));
  put_num(x, "steps_per_s", sps);
  put_num(x, "bytes_per_s", bps);
  put_num(x, "ops_in_flight", (double)(c->ops_started - c->ops_done));
  put_num(x, "cur_step", c->cur_step);
  put_str(x, "cur_wait", nt_wait_name(c->cur_wait));
  put_num(x, "progress_age_ms", age_ms(c->progress_age_ns));
  put_str(x, "run_state", nt_run_name(c->run_state));
  if (c->relay_rank >= 0) put_num(x, "relay_rank", c->relay_rank);
  put_bool(x, "stalled", nt_model_channel_stalled(c, stall_ms));
  return x;
}

static cJSON *rank_json(const nt_model_rank *r, uint32_t stall_ms, double now_s) {
  const nt_model_process *p = r->proc;
  const nt_snapshot *s = p->cur;
  const nt_comm_row *comm = &s->comms[r->comm_index];
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
  put_num(j, "colls", (double)comm->colls_enqueued);
  put_num(j, "p2ps", (double)comm->p2ps_enqueued);
  cJSON *proxy = put_obj(j, "proxy", cJSON_CreateArray());
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].comm_index == r->comm_index) append(proxy, proxy_json(p, &s->proxy[i]));
  cJSON *chans = put_obj(j, "channels", cJSON_CreateArray());
  for (uint32_t i = 0; i < s->nchannels; i++)
    if (s->channels[i].comm_index == r->comm_index)
      append(chans, channel_json(p, &s->channels[i], stall_ms));
  cJSON *kern = put_obj(j, "kernels", cJSON_CreateArray());
  for (uint32_t i = 0; i < s->nkernels; i++) {
    const nt_kernel_row *k = &s->kernels[i];
    if (k->comm_index != r->comm_index) continue;
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
  nt_batch_rank_ops(j, r, now_s);
  return j;
}

static cJSON *process_json(const nt_model_process *p) {
  const nt_snapshot *s = p->cur;
  const nt_process_counters *c = &s->process;
  cJSON *j = cJSON_CreateObject();
  put_str(j, "host", p->host);
  put_num(j, "pid", p->pid);
  put_bool(j, "stale", p->stale);
  put_bool(j, "ended", p->ended);
  put_str(j, "nccl_version", p->have_hello ? p->hello.nccl_version : "");
  put_str(j, "plugin_version", p->have_hello ? p->hello.plugin_version : "");
  put_num(j, "abi", c->abi_version);
  put_num(j, "seq", (double)s->seq);
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
  for (uint32_t i = 0; i < s->nproxy; i++)
    if (s->proxy[i].comm_index == NT_NO_COMM) append(proxy, proxy_json(p, &s->proxy[i]));
  nt_batch_process_ops(j, p);
  return j;
}

static size_t rows_of(const nt_model_process *p) {
  const nt_snapshot *s = p->cur;
  size_t env = p->have_hello ? p->hello.nenv : 0;
  return !s ? 0
            : (size_t)s->ncomms + s->nproxy + s->nchannels + s->nkernels + s->nops + s->nphases +
                  s->noplog + s->nseq + s->nnet + env;
}

/* Whether the frame may exceed the cap: then every item is measured. */
static frame_room frame_bound(nt_model *m) {
  frame_room r = {false, NT_JSON_FRAME_CAP - FRAME_REST_BYTES, 0, 0};
  size_t bound = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    /* A process object and its ranks' objects: each row is in one of them. */
    size_t comms = p->cur ? p->cur->ncomms : 0;
    bound += (1 + comms) * ITEM_JSON_MAX + rows_of(p) * ROW_JSON_MAX;
  }
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

static void put_refusals(cJSON *root, const nt_model *m) {
  put_num(root, "refused", (double)nt_model_total_refused(m));
  cJSON *by = put_obj(root, "refused_by", cJSON_CreateObject());
  for (int i = 0; by && i < NT_REFUSE_COUNT; i++)
    put_num(by, nt_refusal_name(i), (double)nt_model_refused(m, i));
  put_num(root, "memory_bytes", (double)nt_model_bytes(m));
  put_num(root, "memory_budget", (double)nt_model_budget(m));
}

static int print_json(FILE *out, nt_model *m, const nt_options *o, double t, double now_s,
                      const nt_model_rank *ranks, uint32_t nranks) {
  cJSON *root = cJSON_CreateObject();
  put_num(root, "time", t);
  put_num(root, "publishers", nt_model_nprocesses(m));
  put_num(root, "messages", (double)nt_model_total_messages(m));
  put_num(root, "bad_messages", (double)nt_model_total_bad(m));
  put_num(root, "errors_total", (double)nt_model_total_errors(m));
  put_refusals(root, m);
  cJSON *errs = put_obj(root, "errors", cJSON_CreateArray());
  for (uint32_t i = 0; i < nt_model_nerrors(m) && i < ERRORS_IN_FRAME; i++) {
    const nt_model_error *e = nt_model_error_at(m, i);
    char line[sizeof e->source + sizeof e->text + 4];
    snprintf(line, sizeof line, "%s: %s", e->source, e->text);
    append(errs, cJSON_CreateString(line));
  }
  frame_room room = frame_bound(m);
  cJSON *procs = put_obj(root, "processes", cJSON_CreateArray());
  for (uint32_t i = 0; procs && i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (!p->cur) continue;
    if (room.measure && !room.left)
      room.left_out_procs++;
    else
      append_within(procs, process_json(p), &room, &room.left_out_procs);
  }
  cJSON *rs = put_obj(root, "ranks", cJSON_CreateArray());
  for (uint32_t i = 0; rs && i < nranks; i++) {
    if (room.measure && !room.left)
      room.left_out_ranks++;
    else
      append_within(rs, rank_json(&ranks[i], o->stall_ms, now_s), &room, &room.left_out_ranks);
  }
  cJSON *left = put_obj(root, "left_out", cJSON_CreateObject());
  if (left) {
    put_num(left, "processes", room.left_out_procs);
    put_num(left, "ranks", room.left_out_ranks);
  }
  nt_batch_job_json(root, m, o, now_s);
  /* Start the print buffer at the last frame's size: one allocation, no
   * growing copies of a frame that can be tens of megabytes. */
  static int last_len = 4096;
  char *text = cJSON_PrintBuffered(root, last_len + last_len / 8, false);
  cJSON_Delete(root);
  if (!text) return -1;
  size_t len = strlen(text);
  last_len = len < (1u << 30) ? (int)len : 1 << 30;
  int rc = fputs(text, out) < 0 || fputc('\n', out) == EOF ? -1 : 0;
  free(text);
  return rc;
}

static const char *mark(const nt_model_process *p) {
  return p->ended ? "  ENDED" : p->stale ? "  STALE" : "";
}

static void proxy_line(FILE *out, const nt_model_rank *r, const nt_model_process *p,
                       const nt_proxy_row *row) {
  double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
  nt_model_proxy_shares(p, row, last, total);
  char who[48], rank[24], comm[20];
  snprintf(who, sizeof who, "%.24s:%u", p->host, p->pid);
  if (r) {
    snprintf(rank, sizeof rank, "%d/%d", r->rank, r->nranks);
    snprintf(comm, sizeof comm, "%016llx", (unsigned long long)r->comm_hash);
  } else {
    snprintf(rank, sizeof rank, "-");
    snprintf(comm, sizeof comm, "-");
  }
  fprintf(out, "%-7s %-16s %-30s %8u %-7s %6.1f %6.1f %6.1f %6.1f %6.1f %9llu%s\n", rank, comm, who,
          row->tid, nt_proxy_state_name(row->state), 100 * last[0], 100 * last[1], 100 * last[2],
          100 * last[3], 100 * last[4], (unsigned long long)row->appends, mark(p));
}

static void print_text(FILE *out, nt_model *m, const nt_options *o, double t, double now_s,
                       const nt_model_rank *ranks, uint32_t nranks) {
  char mem[32];
  fprintf(out,
          "nccltop %.1fs  publishers %u  ranks %u  messages %llu  bad %llu  errors %llu  refused "
          "%llu  mem %s\n",
          t, nt_model_nprocesses(m), nranks, (unsigned long long)nt_model_total_messages(m),
          (unsigned long long)nt_model_total_bad(m), (unsigned long long)nt_model_total_errors(m),
          (unsigned long long)nt_model_total_refused(m),
          nt_fmt_size((double)nt_model_bytes(m), mem, sizeof mem));
  for (uint32_t i = 0; i < nt_model_nerrors(m) && i < 3; i++) {
    const nt_model_error *e = nt_model_error_at(m, i);
    fprintf(out, "error: %s: %s\n", e->source, e->text);
  }
  nt_batch_alerts_text(out, m, o, now_s);
  fprintf(out, "%-7s %-16s %-30s %8s %-7s %6s %6s %6s %6s %6s %9s\n", "RANK", "COMM", "HOST:PID",
          "TID", "STATE", "IDLE%", "ACTV%", "SLEEP%", "WAKE%", "APND%", "APPENDS");
  for (uint32_t i = 0; i < nranks; i++) {
    const nt_snapshot *s = ranks[i].proc->cur;
    for (uint32_t k = 0; k < s->nproxy; k++)
      if (s->proxy[k].comm_index == ranks[i].comm_index)
        proxy_line(out, &ranks[i], ranks[i].proc, &s->proxy[k]);
  }
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) { /* threads of no communicator */
    const nt_model_process *p = nt_model_process_at(m, i);
    for (uint32_t k = 0; p->cur && k < p->cur->nproxy; k++)
      if (p->cur->proxy[k].comm_index == NT_NO_COMM) proxy_line(out, NULL, p, &p->cur->proxy[k]);
  }
  fprintf(out, "%-7s %-16s %3s %-4s %5s %-15s %9s %10s %6s %-7s %6s\n", "RANK", "COMM", "CH", "DIR",
          "PEER", "WAIT", "STEPS/s", "RATE", "FLIGHT", "RUN", "STEP");
  for (uint32_t i = 0; i < nranks; i++) {
    const nt_model_rank *r = &ranks[i];
    const nt_snapshot *s = r->proc->cur;
    char rank[24];
    snprintf(rank, sizeof rank, "%d/%d", r->rank, r->nranks);
    for (uint32_t c = 0; c < s->nchannels; c++) {
      const nt_channel_row *row = &s->channels[c];
      if (row->comm_index != r->comm_index) continue;
      double sps, bps;
      nt_model_channel_rates(r->proc, row, &sps, &bps);
      char relay[32] = "", rate[NT_UNIT_LEN];
      if (row->relay_rank >= 0) snprintf(relay, sizeof relay, "  relay r%d", row->relay_rank);
      fprintf(out, "%-7s %016llx %3u %-4s %5d %-15s %9.0f %10s %6llu %-7s %6d%s%s%s\n", rank,
              (unsigned long long)r->comm_hash, row->channel, dir_name(row->dir), row->peer,
              nt_wait_name(nt_model_channel_dominant_wait(r->proc, row)), sps,
              nt_fmt_rate(bps, rate, sizeof rate),
              (unsigned long long)(row->ops_started - row->ops_done), nt_run_name(row->run_state),
              row->cur_step, nt_model_channel_stalled(row, o->stall_ms) ? "  STALLED" : "", relay,
              mark(r->proc));
    }
  }
  nt_batch_ops_text(out, m);
  fputc('\n', out);
}

int nt_batch_print(FILE *out, nt_model *m, const nt_options *o, double now_s) {
  static double first_s = -1;
  static nt_model_rank *ranks;
  if (first_s < 0) first_s = now_s;
  if (!ranks && !(ranks = calloc(MAX_RANKS, sizeof *ranks))) return -1;
  double t = now_s - (o->start_s > 0 ? o->start_s : first_s);
  uint32_t n = nt_model_ranks(m, ranks, MAX_RANKS);
  int rc = 0;
  if (o->json)
    rc = print_json(out, m, o, t, now_s, ranks, n);
  else
    print_text(out, m, o, t, now_s, ranks, n);
  if (fflush(out) != 0 || ferror(out)) rc = -1;
  return rc;
}

/* Batch output (-b): one frame of the model as text, or as exactly one JSON
 * line, flushed at once so a pipe reader sees every frame as it happens.
 *
 * JSON frame, written in one pass (json_out.h; keys in this order; scripts and tests rely on
 * the names, never on the order):
 * Conventions: a value that is unknown or does not apply is null, never a
 * sentinel (-1, 0, ""): "comm_name" of a communicator NCCL named not,
 * "nccl_version" not given; only "phase" and "variant" keep "" for their
 * documented meaning (outside any phase, not a symmetric kernel). A
 * number's unit is in its key (_s, _ms, _us, _ns, _gbs, _bytes, _per_s);
 * an age (time since) says so (_age_).
 *
 * {"time_s": seconds since the viewer started (float),
 *  "publishers": processes known, "messages": messages taken,
 *  "bad_messages": messages that failed to decode, "errors_total": problems
 *  noted (bad messages included), "refused": messages refused (every reason),
 *  "refused_by": {"pid", "source_full", "table_full", "memory", "seq_jump",
 *     "clock_jump"} (enum nt_refusal), "memory_bytes": what the model holds,
 *  "memory_budget": its budget (--max-memory),
 *  "left_out": {"processes", "ranks"}: entries not in this frame, which would
 *     have taken it past NT_JSON_FRAME_CAP bytes (0 and 0 normally),
 *  "errors": ["<endpoint>: <reason>", ...]  newest first, at most 8,
 *  "watcher": {"gaps": the viewer's gaps so far, "paused_s": their time,
 *     "lost_unread": messages lost over them and over relays' gaps,
 *     "notes": [{"kind": viewer|path, "text", "source" (the path's endpoint,
 *       "" the viewer), "host", "processes" (the path's), "paths" (folded
 *       into this note; 0 the viewer), "paused_s" (how long nothing came),
 *       "open": bool (the viewer's gap goes on), "ago_s" (since it ended),
 *       "resume_in_s" (settling until then; 0 settled), "lost_messages"}]:
 *       the gaps told now, the viewer's first (model.h: the watcher)},
 *  "topologies": [the topologies the viewer holds (batch_topo.c)],
 *  "processes": [{"host", "pid", "stale": bool, "ended": bool, "nccl_version"
 *     (null: the process did not say, or NCCL did not answer), "plugin_version", "clock" (the
 *     plugin's event clock: "tsc", "cntvct", "monotonic"; null from an older plugin), "abi",
 *     "seq", "lost_messages", "lost_unread" (of those, lost while the viewer or a relay between
 *     did not read),
 *     "restarts", "event_mask",
 *     "counters": {"events", "dropped_events", "unknown_events", "foreign_ops",
 *                  "reclaimed_ops", "dropped_rows", "unsent_messages", ...: every u64
 *                  of the process section, by its name in proto/snapshot_rows.h},
 *     "proxy": [proxy threads not attributed to any communicator, as below]}],
 *  "ranks": [{"comm": "<16 hex digits>", "comm_name", "rank", "nranks", "nnodes",
 *     "host", "pid", "stale": bool, "ended": bool, "colls", "p2ps", "launched"
 *     (operations launched, over its functions), "done_per_s" (operations done
 *     per second, the publisher's last interval; 0 once it is stale or ended),
 *     "stalled_channels",
 *     "proxy": [{"tid", "state": "idle|active|sleep|wakeup|append|unknown",
 *                "state_age_ms", "state_ns": {"idle", "active", "sleep", "wakeup",
 *                "append"}, "share_last": {same keys, 0..1}, "share_total": {same},
 *                "appends", "appended_ops", "wakeups"}],
 *     "channels": [{"channel", "dir": "send|recv", "peer", "steps", "bytes",
 *                   "wait_ns": {"send_gpu_wait", "send_peer_wait", "send_net_wait"}
 *                              (recv rows: "recv_net_wait", "recv_flush_wait",
 *                              "recv_gpu_wait"),
 *                   "dominant_wait_last": the wait that took most of the
 *                   last interval (a wait name or "none"), "steps_per_s",
 *                   "bytes_per_s", "ops_in_flight", "cur_step" (null: none),
 *                   "cur_wait": a wait name or "none", "progress_age_ms" (null: never),
 *                   "run_state": idle|queued|running|unknown (1.1 publishers),
 *                   "relay_rank" (PXN rows only: the rank whose ops this
 *                   process's proxy ran), "stalled": bool}],
 *     "kernels": [{"channel", "count", "busy_ns", "phase_ns": {"initial_sync",
 *       "compute", "final_sync"} (GPU ns per KernelPhase, NCCL 2.31; 0 none)}],
 *     and "api", "seq", "in_flight", "net" (batch_ops.c)}],
 *  "comms": [{"comm", "comm_name", "nranks", "nnodes", "ranks" (in this frame),
 *     "stalled_channels", "launched_min", "launched_max", "done_per_s" (per
 *     rank), "phase" (the first of its ranks' phase now), "busbw_history_gbs"
 *     (the bus bandwidth of the operations completed in each of the last
 *     intervals, GB/s, oldest first, null: nothing completed; frame.h),
 *     "busbw_history_interval_s" (one interval)}]: the overview's lines,
 *  and "alerts", "collectives", "phases", "recent", "runs" (batch_ops.c)}
 * Ranks are sorted by (comm, rank). Every counter is an exact JSON integer
 * (a reader that parses numbers as doubles, as jq does, rounds those past
 * 2^53: cumulative nanoseconds after 104 days); other numbers have at most
 * six decimals (json_out.h). Shares and rates are over the publisher's last
 * interval. State and wait names are those of nt_proxy_state_name /
 * nt_wait_name. Strings from publishers were sanitized when they arrived
 * (model.c); the writer adds JSON escaping only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
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

/* NaN (written null) for never. */
static double age_ms(uint64_t ns) {
  return ns == UINT64_MAX ? NAN : (double)ns / 1e6;
}

static const char *dir_name(int dir) {
  return dir == NT_DIR_RECV ? "recv" : "send";
}

static void per_state(nt_jo *w, const char *key, const double *v) {
  nt_jo_obj(w, key);
  for (int i = 0; i < NT_PROXY_NSTATES; i++) nt_jo_num(w, nt_proxy_state_name(i), v[i]);
  nt_jo_end(w);
}

static void proxy_json(nt_jo *w, const nt_frame_proxy *p) {
  const nt_proxy_row *t = &p->row;
  nt_jo_obj(w, NULL);
  nt_jo_u64(w, "tid", t->tid);
  nt_jo_str(w, "state", nt_proxy_state_name(t->state));
  nt_jo_num(w, "state_age_ms", age_ms(t->state_age_ns));
  nt_jo_obj(w, "state_ns");
  for (int i = 0; i < NT_PROXY_NSTATES; i++) nt_jo_u64(w, nt_proxy_state_name(i), t->state_ns[i]);
  nt_jo_end(w);
  per_state(w, "share_last", p->share_last);
  per_state(w, "share_total", p->share_total);
  nt_jo_u64(w, "appends", t->appends);
  nt_jo_u64(w, "appended_ops", t->appended_ops);
  nt_jo_u64(w, "wakeups", t->wakeups);
  nt_jo_end(w);
}

static void channel_json(nt_jo *w, const nt_frame_channel *fc) {
  const nt_channel_row *c = &fc->row;
  nt_jo_obj(w, NULL);
  nt_jo_u64(w, "channel", c->channel);
  nt_jo_str(w, "dir", dir_name(c->dir));
  nt_jo_i64(w, "peer", c->peer);
  nt_jo_u64(w, "steps", c->steps);
  nt_jo_u64(w, "bytes", c->bytes);
  nt_jo_obj(w, "wait_ns");
  for (int k = 0; k < 3; k++) nt_jo_u64(w, nt_wait_name(nt_dir_wait(c->dir, k)), c->wait_ns[k]);
  nt_jo_end(w);
  nt_jo_str(w, "dominant_wait_last", nt_wait_name(fc->dominant_wait));
  nt_jo_num(w, "steps_per_s", fc->steps_per_s);
  nt_jo_num(w, "bytes_per_s", fc->bytes_per_s);
  nt_jo_u64(w, "ops_in_flight", c->ops_started - c->ops_done);
  if (c->cur_step >= 0)
    nt_jo_i64(w, "cur_step", c->cur_step);
  else
    nt_jo_null(w, "cur_step");
  nt_jo_str(w, "cur_wait", nt_wait_name(c->cur_wait));
  nt_jo_num(w, "progress_age_ms", age_ms(c->progress_age_ns));
  nt_jo_str(w, "run_state", nt_run_name(c->run_state));
  if (c->relay_rank >= 0) nt_jo_i64(w, "relay_rank", c->relay_rank);
  nt_jo_bool(w, "stalled", fc->stalled);
  nt_jo_end(w);
}

static void rank_json(nt_jo *w, const nt_frame *f, const nt_frame_rank *r) {
  const nt_frame_proc *p = nt_frame_proc_of(f, r);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->comm_hash);
  nt_jo_obj(w, NULL);
  nt_jo_str(w, "comm", hex);
  nt_jo_str_known(w, "comm_name", r->comm_name);
  nt_jo_i64(w, "rank", r->rank);
  nt_jo_count(w, "nranks", r->nranks);
  nt_jo_count(w, "nnodes", r->nnodes);
  nt_jo_str(w, "host", p->host);
  nt_jo_u64(w, "pid", p->pid);
  nt_jo_bool(w, "stale", p->stale);
  nt_jo_bool(w, "ended", p->ended);
  nt_jo_u64(w, "colls", r->comm.colls_enqueued);
  nt_jo_u64(w, "p2ps", r->comm.p2ps_enqueued);
  nt_jo_u64(w, "launched", r->launched);
  nt_jo_num(w, "done_per_s", r->done_per_s);
  nt_jo_u64(w, "stalled_channels", r->stalled);
  nt_jo_arr(w, "proxy");
  for (uint32_t i = r->proxy0; i < r->proxy0 + r->nproxy; i++) proxy_json(w, &f->proxy[i]);
  nt_jo_end(w);
  nt_jo_arr(w, "channels");
  for (uint32_t i = r->chan0; i < r->chan0 + r->nchan; i++) channel_json(w, &f->channels[i]);
  nt_jo_end(w);
  nt_jo_arr(w, "kernels");
  for (uint32_t i = r->kern0; i < r->kern0 + r->nkern; i++) {
    const nt_kernel_row *k = &f->kernels[i];
    nt_jo_obj(w, NULL);
    nt_jo_u64(w, "channel", k->channel);
    nt_jo_u64(w, "count", k->count);
    nt_jo_u64(w, "busy_ns", k->busy_ns);
    /* Protocol 1.3 (NCCL 2.31, kernelphase): GPU ns per kernel phase. */
    static const char *const kphase[NT_KPHASE_COUNT] = {"initial_sync", "compute", "final_sync"};
    nt_jo_obj(w, "phase_ns");
    for (int q = 0; q < NT_KPHASE_COUNT; q++) nt_jo_u64(w, kphase[q], k->phase_ns[q]);
    nt_jo_end(w);
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_batch_rank_ops(w, f, r);
  nt_jo_end(w);
}

static void process_json(nt_jo *w, const nt_frame *f, const nt_frame_proc *p) {
  const nt_process_counters *c = &p->counters;
  nt_jo_obj(w, NULL);
  nt_jo_str(w, "host", p->host);
  nt_jo_u64(w, "pid", p->pid);
  nt_jo_bool(w, "stale", p->stale);
  nt_jo_bool(w, "ended", p->ended);
  nt_jo_str_known(w, "nccl_version", p->nccl_version);
  nt_jo_str_known(w, "plugin_version", p->plugin_version);
  nt_jo_str_known(w, "clock", p->clock);
  nt_jo_u64(w, "abi", c->abi_version);
  nt_jo_u64(w, "seq", p->seq);
  nt_jo_u64(w, "lost_messages", p->lost_messages);
  nt_jo_u64(w, "lost_unread", p->lost_unread);
  nt_jo_u64(w, "restarts", p->restarts);
  nt_jo_u64(w, "event_mask", c->event_mask);
  /* Every u64 of the process section is a cumulative counter, keyed by its
   * name in the wire table (proto/snapshot_rows.h), in wire order: a
   * counter added there is in the JSON too. The other fields (the mask,
   * the ABI, the phase) have keys of their own. */
  nt_jo_obj(w, "counters");
#define COUNTER_F(type, m, since, read, absent, check) COUNTER_##type(m)
#define COUNTER_U64(m)                                 nt_jo_u64(w, #m, c->m);
#define COUNTER_U32(m)
#define COUNTER_U16(m)
#define COUNTER_U8(m)
#define COUNTER_I32(m)
#define NO_COUNTER(...)
  NT_PROCESS_ROW(COUNTER_F, NO_COUNTER, NO_COUNTER, NO_COUNTER, NO_COUNTER)
  nt_jo_end(w);
  nt_jo_arr(w, "proxy");
  for (uint32_t i = p->proxy0; i < p->proxy0 + p->nproxy; i++) proxy_json(w, &f->proxy[i]);
  nt_jo_end(w);
  nt_batch_process_ops(w, f, p);
  nt_jo_end(w);
}

/* Writes an item (a process or a rank) if the frame has room for it; when
 * not, undoes it and counts it left out, and every item after it too: a
 * frame is a prefix, not a sample. */
typedef struct {
  size_t limit; /* where the processes and ranks must end */
  bool full;
  uint32_t left_out_procs, left_out_ranks;
} frame_room;

static bool item_fits(nt_jo *w, frame_room *room, nt_jo_mark start, uint32_t *left_out) {
  if (!room->full && w->len <= room->limit) return true;
  nt_jo_undo(w, start);
  room->full = true;
  (*left_out)++;
  return false;
}

static void comms_json(nt_jo *w, const nt_frame *f) {
  nt_jo_arr(w, "comms");
  for (uint32_t i = 0; i < f->ncomms; i++) {
    const nt_frame_comm *c = &f->comms[i];
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c->hash);
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "comm", hex);
    nt_jo_str_known(w, "comm_name", c->name);
    nt_jo_count(w, "nranks", c->nranks);
    nt_jo_count(w, "nnodes", c->nnodes);
    nt_jo_u64(w, "ranks", c->ranks);
    nt_jo_u64(w, "stalled_channels", c->stalled);
    nt_jo_u64(w, "launched_min", c->launched_min);
    nt_jo_u64(w, "launched_max", c->launched_max);
    nt_jo_num(w, "done_per_s", c->done_per_s);
    nt_jo_str(w, "phase", c->phase);
    nt_jo_num(w, "busbw_history_interval_s", f->history_s);
    nt_jo_arr(w, "busbw_history_gbs");
    for (uint32_t k = 0; k < c->nhistory; k++) {
      if (c->busbw_history[k] < 0)
        nt_jo_null(w, NULL);
      else
        nt_jo_num(w, NULL, c->busbw_history[k]);
    }
    nt_jo_end(w);
    nt_jo_end(w);
  }
  nt_jo_end(w);
}

static void watcher_json(nt_jo *w, const nt_frame *f) {
  nt_jo_obj(w, "watcher");
  nt_jo_u64(w, "gaps", f->watch_totals.gaps);
  nt_jo_num(w, "paused_s", f->watch_totals.paused_s);
  nt_jo_u64(w, "lost_unread", f->watch_totals.lost_unread);
  nt_jo_arr(w, "notes");
  for (uint32_t i = 0; i < f->nwatch; i++) {
    const nt_watch_note *n = &f->watch[i];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "kind", n->kind == NT_WATCH_VIEWER ? "viewer" : "path");
    nt_jo_str(w, "text", n->text);
    nt_jo_str(w, "source", n->source);
    nt_jo_str(w, "host", n->host);
    nt_jo_u64(w, "processes", n->processes);
    nt_jo_u64(w, "paths", n->paths);
    nt_jo_num(w, "paused_s", n->gap_s);
    nt_jo_bool(w, "open", n->open);
    nt_jo_num(w, "ago_s", n->ago_s);
    nt_jo_num(w, "resume_in_s", n->resume_in_s);
    nt_jo_u64(w, "lost_messages", n->lost);
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_end(w);
}

/* The frame with the model's topologies (none when m is NULL). */
static const char *frame_json(const nt_frame *f, const nt_model *m, nt_jo *w) {
  nt_jo_reset(w);
  nt_jo_obj(w, NULL);
  nt_jo_num(w, "time_s", f->time);
  nt_jo_u64(w, "publishers", f->publishers);
  nt_jo_u64(w, "messages", f->messages);
  nt_jo_u64(w, "bad_messages", f->bad_messages);
  nt_jo_u64(w, "errors_total", f->errors_total);
  nt_jo_u64(w, "refused", f->refused);
  nt_jo_obj(w, "refused_by");
  for (int i = 0; i < NT_REFUSE_COUNT; i++) nt_jo_u64(w, nt_refusal_name(i), f->refused_by[i]);
  nt_jo_end(w);
  nt_jo_u64(w, "memory_bytes", f->memory_bytes);
  nt_jo_u64(w, "memory_budget", f->memory_budget);
  nt_jo_arr(w, "errors");
  for (uint32_t i = 0; i < f->nerrors && i < ERRORS_IN_FRAME; i++) {
    const nt_model_error *e = &f->errors[i];
    char line[sizeof e->source + sizeof e->text + 4];
    snprintf(line, sizeof line, "%s: %s", e->source, e->text);
    nt_jo_str(w, NULL, line);
  }
  nt_jo_end(w);
  watcher_json(w, f);
  /* Before the processes: the room they get is what the topologies left
   * (at most a MiB each, batch_topo.c). */
  nt_batch_topologies_json(w, m);
  frame_room room = {.limit = NT_JSON_FRAME_CAP - FRAME_REST_BYTES};
  nt_jo_arr(w, "processes");
  for (uint32_t i = 0; i < f->nprocs; i++) {
    nt_jo_mark at = nt_jo_here(w);
    if (!room.full) process_json(w, f, &f->procs[i]);
    item_fits(w, &room, at, &room.left_out_procs);
  }
  nt_jo_end(w);
  nt_jo_arr(w, "ranks");
  for (uint32_t i = 0; i < f->nranks; i++) {
    nt_jo_mark at = nt_jo_here(w);
    if (!room.full) rank_json(w, f, &f->ranks[i]);
    item_fits(w, &room, at, &room.left_out_ranks);
  }
  nt_jo_end(w);
  comms_json(w, f);
  nt_jo_obj(w, "left_out");
  nt_jo_u64(w, "processes", room.left_out_procs);
  nt_jo_u64(w, "ranks", room.left_out_ranks);
  nt_jo_end(w);
  nt_batch_job_json(w, f);
  nt_jo_end(w);
  return nt_jo_text(w);
}

const char *nt_frame_json(const nt_frame *f, nt_jo *w) {
  return frame_json(f, NULL, w);
}

static const char *mark(const nt_frame_proc *p) {
  return p->ended ? "  ENDED" : p->stale ? "  STALE" : "";
}

static void proxy_line(FILE *out, const nt_frame *f, const nt_frame_proxy *x) {
  const nt_frame_proc *p = &f->procs[x->proc];
  const nt_frame_rank *r = x->rank >= 0 ? &f->ranks[x->rank] : NULL;
  const nt_proxy_row *row = &x->row;
  char who[48], rank[24], comm[NT_COMM_LABEL];
  snprintf(who, sizeof who, "%.24s:%u", p->host, p->pid);
  if (r) {
    nt_fmt_rank(r->rank, r->nranks, rank, sizeof rank);
    nt_comm_label(r->comm_name, r->comm_hash, comm, sizeof comm);
  } else {
    snprintf(rank, sizeof rank, "-");
    snprintf(comm, sizeof comm, "-");
  }
  const double *last = x->share_last;
  fprintf(out, "%-7s %-16.16s %-30s %8u %-7s %6.1f %6.1f %6.1f %6.1f %6.1f %9llu%s\n", rank, comm,
          who, row->tid, nt_proxy_state_name(row->state), 100 * last[0], 100 * last[1],
          100 * last[2], 100 * last[3], 100 * last[4], (unsigned long long)row->appends, mark(p));
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
  for (uint32_t i = 0; i < f->nwatch; i++) fprintf(out, "WATCHER %s\n", f->watch[i].text);
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
    char rank[24], comm[NT_COMM_LABEL];
    nt_fmt_rank(r->rank, r->nranks, rank, sizeof rank);
    nt_comm_label(r->comm_name, r->comm_hash, comm, sizeof comm);
    for (uint32_t c = r->chan0; c < r->chan0 + r->nchan; c++) {
      const nt_frame_channel *fc = &f->channels[c];
      const nt_channel_row *row = &fc->row;
      char relay[32] = "", rate[NT_UNIT_LEN];
      if (row->relay_rank >= 0) snprintf(relay, sizeof relay, "  relay r%d", row->relay_rank);
      fprintf(out, "%-7s %-16.16s %3u %-4s %5d %-15s %9.0f %10s %6llu %-7s %6d%s%s%s\n", rank, comm,
              row->channel, dir_name(row->dir), row->peer, nt_wait_name(nt_frame_channel_wait(fc)),
              fc->steps_per_s, nt_fmt_rate(fc->bytes_per_s, rate, sizeof rate),
              (unsigned long long)(row->ops_started - row->ops_done), nt_run_name(row->run_state),
              row->cur_step, fc->stalled ? "  STALLED" : "", relay, mark(nt_frame_proc_of(f, r)));
    }
  }
  nt_batch_ops_text(out, f);
  fputc('\n', out);
}

int nt_batch_print(FILE *out, const nt_model *m, nt_diag *d, const nt_options *o, double now_s) {
  static nt_frame *f;
  if (!f && !(f = nt_frame_new())) return -1;
  nt_frame_opts fo = {.stall_ms = o->stall_ms,
                      .process_env = o->json,
                      .start_s = o->start_s,
                      .update_s = o->delay_ms / 1000.0};
  if (nt_frame_build(f, m, d, &fo, now_s) != 0) return -1;
  int rc = 0;
  if (o->json) {
    static nt_jo w; /* its buffer is kept: the next frame is about as big */
    const char *text = frame_json(f, m, &w);
    rc = !text || fputs(text, out) < 0 || fputc('\n', out) == EOF ? -1 : 0;
  } else {
    nt_frame_text(out, f);
  }
  if (fflush(out) != 0 || ferror(out)) rc = -1;
  return rc;
}

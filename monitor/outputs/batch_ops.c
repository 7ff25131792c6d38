/* Batch output about operations, diagnosis and the environment: the parts
 * of a frame protocol 1.1 added. JSON keys (see also batch.c):
 *
 * frame: "alerts": [{"kind": root|stall|hung_op|straggler|silent|drops|slow,
 *          "text", "host", "pid" (null for a line about no one process),
 *          "comm" (null: none, or a hash not known yet), "rank" (null:
 *          none), "peer" (null: none), "wait", "func" (straggler and
 *          hung_op; null for the others), "count", "age_s", "evidence": none|launches|sync_phases
 *          (a straggler late in its launch counts, or one the others'
 *          kernels wait for in their sync phases, NCCL 2.31; a root alert
 *          with the sync-phase numbers added says sync_phases too),
 *          "under": the index in "alerts" of the root it follows from (a
 *          stall or stuck operation of a rank that waits on that root;
 *          these come last), else -1,
 *          "ranks": [rank] (every rank the alert is about, lowest first:
 *          its rank; for a node's straggler line, every rank of the
 *          communicator on that host, "host" and "pid" then the lowest
 *          rank's, "rank" the lowest, "count" the most operations any of
 *          them is behind; [] for a process's or a communicator's line)}],
 *          most important first;
 *        "collectives": [{"comm", "comm_name", "nranks", "kind": coll|p2p,
 *          "func", "algo" (NCCL's, or "sym:<variant's suffix>" for NCCL 2.31's
 *          symmetric kernels), "proto" ("none" for those), "variant" (NCCL's
 *          kernel variant, "AllReduce_AGxLL_R"; "" for every other row),
 *          "size": "32K-64K", "bucket", "ranks",
 *          "count", "done", "gpu_done", "bytes", "source": coll|p2p|collapi|ce
 *          (nt_op_source), "timing": measured|partial|unknown, "time_ms",
 *          "avg_us", "algbw_gbs", "busbw_gbs" (null when no operation of the
 *          row was timed), "sync_ms", "compute_ms" (KernelPhase GPU time of
 *          the done ones over their channels, NCCL 2.31; null when none),
 *          "model_time_us", "model_busbw_gbs" (NCCL's own prediction for
 *          the row's mean size, algorithm and protocol: nt_model_op_model;
 *          null when unknown), "model_ratio" (measured performance as a
 *          share of it, 0.58 for "58% of model"; null when either is
 *          unknown), "model_why" (why it is unknown; null when known),
 *          "model_bottleneck" (the link the model says limits the ring:
 *          "GPU3->NET3 PXB, narrowest hop ...->NET3 24 GB/s"; null none)}];
 *        "phases": [{"phase" ("" none), "phase_source": nccltop_tag|user_tag
 *          (NCCL 2.31's userTag; "none" for ""), "ranks", "count", "done",
 *          "bytes", "time_ms" (busy time per rank: the operations' times summed, so
 *          with "comms" > 1 overlapping ones count twice), "comms" (the most
 *          communicators one rank has operations of in the phase),
 *          "algbw_gbs", "busbw_gbs"}];
 *        "recent": [operation as in "in_flight" plus "host", "pid", "rank",
 *          "comm"], in flight first, at most 64;
 *        "runs": {"current": run, "previous": run or null, "env_diff":
 *          [{"name", "previous", "current" (null: unset; else the most common
 *          value), "previous_varies", "current_varies"}]}, run = {"id", "processes",
 *          "ranks", "env": {NAME: value}, "env_varies": [NAME],
 *          "ops": [{"func", "size", "algo", "proto", "variant", "count",
 *          "busbw_gbs"}]}.
 * rank:  "api": {"group_api", "coll_api", "p2p_api", "kernel_launches",
 *          "graph_captured", "api_ms"}; "seq": [{"func", "launched", "done",
 *          "last_launch_age_ms"}]; "in_flight": [{"func", "kind", "seq", "count",
 *          "dtype", "bytes", "root_peer" (the root of a Broadcast, Reduce,
 *          Gather or Scatter, the peer of a send or recv; else null), "algo", "proto", "variant"
 * ("" none), "symmetric": bool (a symmetric-kernel collective), "nchannels", "nwarps", "phase",
 * "state": enqueued|in_flight|done, "timing": none|host|gpu, "age_ms", "duration_us" (null until
 * done and timed), "children", "children_open", "run_state": queued|running (in flight), idle
 * (done), unknown (1.1 publishers), "progress_age_ms" (null: never), "completion_unreported",
 * "relayed": bool}]; "net": [{"type": ib_qp|socket, "device", "id", "count", "bytes", "busy_ms",
 * "in_flight"}]. process: "phase" (now), "event_classes": [names on], "env": {NAME: value},
 * counters "dropped_ops", "late_children", "net_events".
 */
#include <stdlib.h>
#include <string.h>

#include "batch_json.h"

#define RECENT_IN_FRAME 64

static const char *hex16(uint64_t v, char *buf) {
  snprintf(buf, 17, "%016llx", (unsigned long long)v);
  return buf;
}

static void op_json(nt_jo *w, const nt_frame_op *o, const nt_frame *f, bool who) {
  const nt_oplog_row *op = &o->op;
  nt_jo_obj(w, NULL);
  nt_jo_str(w, "func", nt_func_name(op->func));
  nt_jo_str(w, "kind", op->kind == NT_OP_P2P ? "p2p" : "coll");
  nt_jo_u64(w, "seq", op->seq);
  nt_jo_u64(w, "count", op->count);
  nt_jo_str(w, "dtype", nt_dtype_name(op->dtype));
  nt_jo_u64(w, "bytes", op->bytes);
  bool rooted = op->kind == NT_OP_P2P || op->func == NT_FUNC_BROADCAST ||
                op->func == NT_FUNC_REDUCE || op->func == NT_FUNC_GATHER ||
                op->func == NT_FUNC_SCATTER;
  if (rooted && op->root_peer >= 0)
    nt_jo_i64(w, "root_peer", op->root_peer);
  else
    nt_jo_null(w, "root_peer");
  char lab[NT_MAX_VARIANT + 8];
  bool sym = (op->flags & NT_OPF_SYMMETRIC) || o->variant[0];
  nt_jo_str(w, "algo", nt_algo_label(op->algo, o->variant, sym, lab, sizeof lab));
  nt_jo_str(w, "proto", nt_proto_name(op->proto));
  nt_jo_str(w, "variant", o->variant);
  nt_jo_bool(w, "symmetric", sym);
  nt_jo_u64(w, "nchannels", op->nchannels);
  nt_jo_u64(w, "nwarps", op->nwarps);
  nt_jo_str(w, "phase", o->phase);
  nt_jo_str(w, "state", nt_op_state_name(op->state));
  nt_jo_str(w, "timing", nt_timing_name(op->timing));
  nt_jo_num(w, "age_ms", o->age_s * 1e3);
  if (op->state == NT_OPS_DONE && op->timing != NT_TIMING_NONE)
    nt_jo_num(w, "duration_us", (double)op->duration_ns / 1e3);
  else
    nt_jo_null(w, "duration_us"); /* in flight, or done with no time */
  nt_jo_u64(w, "children", op->children);
  nt_jo_u64(w, "children_open", op->children_open);
  nt_jo_str(w, "run_state", nt_run_name(op->run_state));
  if (op->progress_age_ns == UINT64_MAX)
    nt_jo_null(w, "progress_age_ms");
  else
    nt_jo_num(w, "progress_age_ms", (double)op->progress_age_ns / 1e6);
  nt_jo_bool(w, "completion_unreported", (op->flags & NT_OPF_UNREPORTED) != 0);
  nt_jo_bool(w, "relayed", (op->flags & NT_OPF_RELAYED) != 0);
  if (who) {
    const nt_frame_rank *r = &f->ranks[o->rank];
    const nt_frame_proc *p = nt_frame_proc_of(f, r);
    char hex[17];
    nt_jo_str(w, "host", p->host);
    nt_jo_u64(w, "pid", p->pid);
    nt_jo_i64(w, "rank", r->rank);
    nt_jo_str(w, "comm", hex16(r->comm_hash, hex));
  }
  nt_jo_end(w);
}

void nt_batch_rank_ops(nt_jo *w, const nt_frame *f, const nt_frame_rank *r) {
  const nt_comm_row *c = &r->comm;
  nt_jo_obj(w, "api");
  nt_jo_u64(w, "group_api", c->group_api);
  nt_jo_u64(w, "coll_api", c->coll_api);
  nt_jo_u64(w, "p2p_api", c->p2p_api);
  nt_jo_u64(w, "kernel_launches", c->kernel_launches);
  nt_jo_u64(w, "graph_captured", c->graph_captured);
  nt_jo_num(w, "api_ms", (double)c->api_ns / 1e6);
  nt_jo_end(w);
  nt_jo_arr(w, "seq");
  for (uint32_t i = r->seq0; i < r->seq0 + r->nseq; i++) {
    const nt_frame_seq *q = &f->seq[i];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "func", nt_func_name(q->row.func));
    nt_jo_u64(w, "launched", q->row.launched);
    nt_jo_u64(w, "done", q->row.done);
    if (q->row.launched && q->row.last_launch_age_ns != UINT64_MAX)
      nt_jo_num(w, "last_launch_age_ms", q->last_launch_s * 1e3);
    else
      nt_jo_null(w, "last_launch_age_ms");
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_arr(w, "in_flight");
  for (uint32_t i = r->op0; i < r->op0 + r->nops; i++) op_json(w, &f->ops[i], f, false);
  nt_jo_end(w);
  nt_jo_arr(w, "net");
  for (uint32_t i = r->net0; i < r->net0 + r->nnet; i++) {
    const nt_net_row *n = &f->net[i];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "type", n->type == NT_NET_IB_QP ? "ib_qp" : "socket");
    nt_jo_i64(w, "device", n->device);
    nt_jo_u64(w, "id", n->id);
    nt_jo_u64(w, "count", n->count);
    nt_jo_u64(w, "bytes", n->bytes);
    nt_jo_num(w, "busy_ms", (double)n->busy_ns / 1e6);
    nt_jo_u64(w, "in_flight", n->in_flight);
    nt_jo_end(w);
  }
  nt_jo_end(w);
}

void nt_batch_process_ops(nt_jo *w, const nt_frame *f, const nt_frame_proc *p) {
  const nt_process_counters *c = &p->counters;
  nt_jo_str(w, "phase", p->phase);
  nt_jo_arr(w, "event_classes");
  for (int b = 0; b < NT_EVENT_CLASSES; b++)
    if (c->event_mask & (1u << b)) nt_jo_str(w, NULL, nt_event_class_name(b));
  nt_jo_end(w);
  nt_jo_obj(w, "env");
  for (uint32_t i = p->var0; i < p->var0 + p->nvars; i++)
    nt_jo_str(w, f->vars[i].name, f->vars[i].value);
  nt_jo_end(w);
}

/* ---- the job ---- */

static void run_json(nt_jo *w, const char *key, const nt_run_summary *r) {
  if (!r) {
    nt_jo_null(w, key);
    return;
  }
  nt_jo_obj(w, key);
  nt_jo_u64(w, "id", r->id);
  nt_jo_u64(w, "processes", r->processes);
  nt_jo_u64(w, "ranks", r->ranks);
  nt_jo_obj(w, "env");
  for (uint32_t i = 0; i < r->nenv; i++) nt_jo_str(w, r->env[i].name, r->env[i].value);
  nt_jo_end(w);
  nt_jo_arr(w, "env_varies");
  for (uint32_t i = 0; i < r->nenv; i++)
    if (r->env[i].differs) nt_jo_str(w, NULL, r->env[i].name);
  nt_jo_end(w);
  nt_jo_arr(w, "ops");
  for (uint32_t i = 0; i < r->nops; i++) {
    const nt_run_op *o = &r->ops[i];
    char size[32], lab[NT_MAX_VARIANT + 8];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "func", nt_func_name(o->func));
    nt_jo_str(w, "size", nt_fmt_bucket(o->bucket, size, sizeof size));
    nt_jo_str(w, "algo", nt_algo_label(o->algo, o->variant, false, lab, sizeof lab));
    nt_jo_str(w, "proto", nt_proto_name(o->proto));
    nt_jo_str(w, "variant", o->variant);
    nt_jo_u64(w, "count", o->count);
    nt_jo_num(w, "busbw_gbs", nt_stat_algbw(o->bus_bytes, o->time_s));
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_end(w);
}

static const nt_run_env *env_in(const nt_run_summary *r, const char *name) {
  for (uint32_t i = 0; i < r->nenv; i++)
    if (!strcmp(r->env[i].name, name)) return &r->env[i];
  return NULL;
}

static void runs_json(nt_jo *w, const nt_frame *f) {
  const nt_run_summary *cur = f->have_run_cur ? f->run_cur : NULL;
  const nt_run_summary *prev = f->have_run_prev ? f->run_prev : NULL;
  nt_jo_obj(w, "runs");
  run_json(w, "current", cur);
  run_json(w, "previous", prev);
  nt_jo_arr(w, "env_diff");
  for (int pass = 0; cur && prev && pass < 2; pass++) {
    const nt_run_summary *a = pass ? prev : cur, *b = pass ? cur : prev;
    for (uint32_t i = 0; i < a->nenv; i++) {
      const nt_run_env *other = env_in(b, a->env[i].name);
      if (pass && other) continue; /* seen from the current side */
      if (other && !strcmp(other->value, a->env[i].value) && other->differs == a->env[i].differs)
        continue;
      const nt_run_env *pv = pass ? &a->env[i] : other, *cv = pass ? other : &a->env[i];
      nt_jo_obj(w, NULL);
      nt_jo_str(w, "name", a->env[i].name);
      /* A value is the most common one; "..._varies" says ranks differed. */
      if (pv)
        nt_jo_str(w, "previous", pv->value);
      else
        nt_jo_null(w, "previous");
      if (cv)
        nt_jo_str(w, "current", cv->value);
      else
        nt_jo_null(w, "current");
      nt_jo_bool(w, "previous_varies", pv && pv->differs);
      nt_jo_bool(w, "current_varies", cv && cv->differs);
      nt_jo_end(w);
    }
  }
  nt_jo_end(w);
  nt_jo_end(w);
}

void nt_batch_job_json(nt_jo *w, const nt_frame *f) {
  char hex[17];
  nt_jo_arr(w, "alerts");
  for (uint32_t i = 0; i < f->nalerts; i++) {
    const nt_frame_alert *a = &f->alerts[i];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "kind", nt_alert_kind_name(a->kind));
    nt_jo_str(w, "text", a->text);
    nt_jo_str_known(w, "host", a->host);
    if (a->pid)
      nt_jo_u64(w, "pid", a->pid);
    else
      nt_jo_null(w, "pid");
    if (a->comm_hash)
      nt_jo_str(w, "comm", hex16(a->comm_hash, hex));
    else
      nt_jo_null(w, "comm");
    if (a->has_rank)
      nt_jo_i64(w, "rank", a->rank);
    else
      nt_jo_null(w, "rank");
    if (a->peer >= 0)
      nt_jo_i64(w, "peer", a->peer);
    else
      nt_jo_null(w, "peer");
    nt_jo_str(w, "wait", nt_wait_name(a->wait));
    if (a->kind == NT_ALERT_STRAGGLER || a->kind == NT_ALERT_HUNG_OP)
      nt_jo_str(w, "func", nt_func_name(a->func));
    else
      nt_jo_null(w, "func");
    nt_jo_u64(w, "count", a->count);
    nt_jo_num(w, "age_s", a->age_s);
    nt_jo_str(w, "evidence", nt_alert_evidence_name(a->evidence));
    nt_jo_i64(w, "under", a->under);
    nt_jo_arr(w, "ranks");
    for (uint32_t k = 0; k < a->nlisted; k++) nt_jo_i64(w, NULL, a->ranks[k]);
    nt_jo_end(w);
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_arr(w, "collectives");
  for (uint32_t i = 0; i < f->nstats; i++) {
    const nt_op_stat *r = &f->stats[i].st;
    char size[32];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "comm", hex16(r->comm_hash, hex));
    nt_jo_str_known(w, "comm_name", r->comm_name);
    nt_jo_count(w, "nranks", r->nranks);
    nt_jo_str(w, "kind", r->kind == NT_OP_P2P ? "p2p" : "coll");
    nt_jo_str(w, "func", nt_func_name(r->func));
    char lab[NT_MAX_VARIANT + 8];
    nt_jo_str(w, "algo", nt_algo_label(r->algo, r->variant, false, lab, sizeof lab));
    nt_jo_str(w, "proto", nt_proto_name(r->proto));
    nt_jo_str(w, "variant", r->variant);
    nt_jo_str(w, "size", nt_fmt_bucket(r->bucket, size, sizeof size));
    nt_jo_u64(w, "bucket", r->bucket);
    nt_jo_u64(w, "ranks", r->ranks);
    nt_jo_u64(w, "count", r->count);
    nt_jo_u64(w, "done", r->done);
    nt_jo_u64(w, "gpu_done", r->gpu_done);
    nt_jo_u64(w, "bytes", r->bytes);
    nt_jo_str(w, "source", nt_op_source(r));
    nt_jo_str(w, "timing", nt_op_timing(r));
    if (r->done) {
      nt_jo_num(w, "time_ms", r->time_s * 1e3);
      nt_jo_num(w, "avg_us", r->time_s * 1e6 / (double)r->done);
      nt_jo_num(w, "algbw_gbs", nt_stat_algbw(r->alg_bytes, r->time_s));
      nt_jo_num(w, "busbw_gbs", nt_stat_algbw(r->bus_bytes, r->time_s));
    } else { /* no operation was timed: unknown, not 0 */
      nt_jo_null(w, "time_ms");
      nt_jo_null(w, "avg_us");
      nt_jo_null(w, "algbw_gbs");
      nt_jo_null(w, "busbw_gbs");
    }
    const nt_op_model *mo = &f->stats[i].model;
    if (mo->known) {
      nt_jo_num(w, "model_time_us", mo->time_us);
      nt_jo_num(w, "model_busbw_gbs", mo->busbw_gbs);
    } else { /* no prediction: unknown, never 0 */
      nt_jo_null(w, "model_time_us");
      nt_jo_null(w, "model_busbw_gbs");
    }
    if (mo->known && mo->ratio >= 0)
      nt_jo_num(w, "model_ratio", mo->ratio);
    else
      nt_jo_null(w, "model_ratio");
    if (mo->known)
      nt_jo_null(w, "model_why");
    else
      nt_jo_str(w, "model_why", mo->why ? mo->why : "unknown");
    if (mo->known && mo->bottleneck[0])
      nt_jo_str(w, "model_bottleneck", mo->bottleneck);
    else
      nt_jo_null(w, "model_bottleneck");
    if (r->sync_ns || r->compute_ns) {
      nt_jo_num(w, "sync_ms", (double)r->sync_ns / 1e6);
      nt_jo_num(w, "compute_ms", (double)r->compute_ns / 1e6);
    } else { /* NCCL reported no kernel phase (before 2.31, or kernelphase off) */
      nt_jo_null(w, "sync_ms");
      nt_jo_null(w, "compute_ms");
    }
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_arr(w, "phases");
  for (uint32_t i = 0; i < f->nphases; i++) {
    const nt_phase_stat *ph = &f->phases[i];
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "phase", ph->name);
    nt_jo_str(w, "phase_source",
              !ph->name[0]                      ? "none"
              : ph->source == NT_PHASE_USER_TAG ? "user_tag"
                                                : "nccltop_tag");
    nt_jo_u64(w, "ranks", ph->ranks);
    nt_jo_u64(w, "count", ph->count);
    nt_jo_u64(w, "done", ph->done);
    nt_jo_u64(w, "bytes", ph->bytes);
    nt_jo_num(w, "time_ms", ph->ranks ? ph->time_s * 1e3 / ph->ranks : 0);
    nt_jo_u64(w, "comms", ph->comms);
    nt_jo_num(w, "algbw_gbs", nt_stat_algbw(ph->alg_bytes, ph->time_s));
    nt_jo_num(w, "busbw_gbs", nt_stat_algbw(ph->bus_bytes, ph->time_s));
    nt_jo_end(w);
  }
  nt_jo_end(w);
  nt_jo_arr(w, "recent");
  for (uint32_t i = 0; i < f->nrecent && i < RECENT_IN_FRAME; i++)
    op_json(w, &f->recent[i], f, true);
  nt_jo_end(w);
  runs_json(w, f);
}

/* ---- text ---- */

/* Folded as the screen folds them: a root stands for the lines of the
 * ranks that wait on it (--json lists each, with its root). */
void nt_batch_alerts_text(FILE *out, const nt_frame *f) {
  for (uint32_t i = 0; i < f->nalerts; i++) {
    const nt_frame_alert *a = &f->alerts[i];
    if (a->under >= 0) continue;
    fprintf(out, "ALERT %-9s %s\n", nt_alert_kind_name(a->kind), a->text);
    if (a->folded)
      fprintf(out,
              "      %-9s + %u more under it: the stalls and stuck operations of the ranks "
              "waiting on it (--json lists each)\n",
              "", a->folded);
  }
}

void nt_batch_ops_text(FILE *out, const nt_frame *f) {
  uint32_t ns = f->nstats;
  if (ns)
    fprintf(out, "%-16s %-13s %-11s %-14s %-7s %8s %8s %10s %9s %9s %10s %11s %8s\n", "COMM",
            "FUNC", "SIZE", "ALGO", "PROTO", "COUNT", "DONE", "AVG TIME", "ALGBW", "BUSBW",
            "MODEL TIME", "MODEL BUSBW", "OF MODEL");
  for (uint32_t i = 0; i < ns; i++) {
    const nt_op_stat *r = &f->stats[i].st;
    char size[32], t[3][24] = {"unknown", "unknown", "unknown"};
    /* Rows no Coll reported name their source in the algorithm column. */
    const char *src = nt_op_source(r);
    bool plain = !strcmp(src, "coll") || !strcmp(src, "p2p");
    if (r->done) {
      nt_fmt_ns(r->time_s * 1e9 / (double)r->done, t[0], sizeof t[0]);
      nt_fmt_rate(nt_stat_algbw(r->alg_bytes, r->time_s) * 1e9, t[1], sizeof t[1]);
      nt_fmt_rate(nt_stat_algbw(r->bus_bytes, r->time_s) * 1e9, t[2], sizeof t[2]);
    }
    /* NCCL's prediction and the measured share of it ("58%") */
    const nt_op_model *mo = &f->stats[i].model;
    char mt[24] = "unknown", mb[24] = "unknown", share[16] = "unknown";
    if (mo->known) {
      nt_fmt_ns(mo->time_us * 1e3, mt, sizeof mt);
      nt_fmt_rate(mo->busbw_gbs * 1e9, mb, sizeof mb);
      if (mo->ratio >= 0) snprintf(share, sizeof share, "%.0f%%", mo->ratio * 100);
    }
    char lab[NT_MAX_VARIANT + 8], cl[NT_COMM_LABEL];
    fprintf(out, "%-16.16s %-13s %-11s %-14s %-7s %8llu %8llu %10s %9s %9s %10s %11s %8s\n",
            nt_comm_label(r->comm_name, r->comm_hash, cl, sizeof cl), nt_func_name(r->func),
            nt_fmt_bucket(r->bucket, size, sizeof size),
            r->kind == NT_OP_P2P ? "-"
            : plain              ? nt_algo_label(r->algo, r->variant, false, lab, sizeof lab)
                                 : src,
            plain && r->kind != NT_OP_P2P && !r->variant[0] ? nt_proto_name(r->proto) : "-",
            (unsigned long long)r->count, (unsigned long long)r->done, t[0], t[1], t[2], mt, mb,
            share);
  }
  const nt_phase_stat *ph = f->phases;
  uint32_t np = f->nphases;
  if (np)
    fprintf(out, "%-20s %8s %8s %12s %9s %9s\n", "PHASE", "COUNT", "DONE", "BUSY/rank", "ALGBW",
            "BUSBW");
  for (uint32_t i = 0; i < np; i++) {
    char t[3][NT_UNIT_LEN];
    fprintf(out, "%-20.20s %8llu %8llu %12s %9s %9s\n", ph[i].name[0] ? ph[i].name : "-",
            (unsigned long long)ph[i].count, (unsigned long long)ph[i].done,
            nt_fmt_ns(ph[i].ranks ? ph[i].time_s * 1e9 / ph[i].ranks : 0, t[0], sizeof t[0]),
            nt_fmt_rate(nt_stat_algbw(ph[i].alg_bytes, ph[i].time_s) * 1e9, t[1], sizeof t[1]),
            nt_fmt_rate(nt_stat_algbw(ph[i].bus_bytes, ph[i].time_s) * 1e9, t[2], sizeof t[2]));
  }
  char note[128];
  if (nt_phase_busy_note(ph, np, note, sizeof note)) fprintf(out, "%s\n", note);
}

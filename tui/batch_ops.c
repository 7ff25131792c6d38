/* Batch output about operations, diagnosis and the environment: the parts
 * of a frame protocol 1.1 added. JSON keys (see also batch.c):
 *
 * frame: "alerts": [{"kind": root|stall|hung_op|straggler|silent|drops,
 *          "text", "host", "pid", "comm", "rank", "peer" (-1), "wait",
 *          "func", "count", "age_s"}], most important first;
 *        "collectives": [{"comm", "comm_name", "nranks", "kind": coll|p2p,
 *          "func", "algo", "proto", "size": "32K-64K", "bucket", "ranks",
 *          "count", "done", "gpu_done", "bytes", "source": coll|p2p|collapi|ce
 *          (nt_op_source), "timing": measured|partial|unknown, "time_ms",
 *          "avg_us", "algbw_gbs", "busbw_gbs" (null when no operation of the
 *          row was timed), "sync_ms", "compute_ms" (KernelPhase GPU time of
 *          the done ones over their channels, NCCL 2.31; null when none)}];
 *        "phases": [{"phase" ("" none), "phase_source": nccltop_tag|user_tag
 *          (NCCL 2.31's userTag; "none" for ""), "ranks", "count", "done",
 *          "bytes", "time_ms" (per rank), "algbw_gbs", "busbw_gbs"}];
 *        "recent": [operation as in "in_flight" plus "host", "pid", "rank",
 *          "comm"], in flight first, at most 64;
 *        "runs": {"current": run, "previous": run or null, "env_diff":
 *          [{"name", "previous", "current" (null: unset; else the most common
 *          value), "previous_varies", "current_varies"}]}, run = {"id", "processes",
 *          "ranks", "env": {NAME: value}, "env_varies": [NAME],
 *          "ops": [{"func", "size", "algo", "proto", "count", "busbw_gbs"}]}.
 * rank:  "api": {"group_api", "coll_api", "p2p_api", "kernel_launches",
 *          "graph_captured", "api_ms"}; "seq": [{"func", "launched", "done",
 *          "last_launch_ms"}]; "in_flight": [{"func", "kind", "seq", "count",
 *          "dtype", "bytes", "root_peer", "algo", "proto", "nchannels",
 *          "nwarps", "phase", "state": enqueued|in_flight|done, "timing":
 *          none|host|gpu, "age_ms", "duration_us", "children",
 *          "children_open", "run_state": queued|running (in flight),
 *          idle (done), unknown (1.1 publishers), "progress_age_ms" (-1:
 *          never), "completion_unreported", "relayed": bool}]; "net": [{"type": ib_qp|socket,
 * "device", "id", "count", "bytes", "busy_ms", "in_flight"}]. process: "phase" (now),
 * "event_classes": [names on], "env": {NAME: value}, counters "dropped_ops", "late_children",
 * "net_events".
 */
#include <stdlib.h>
#include <string.h>

#include "batch_json.h"

#define RECENT_IN_FRAME 64

static const char *hex16(uint64_t v, char *buf) {
  snprintf(buf, 17, "%016llx", (unsigned long long)v);
  return buf;
}

static cJSON *op_json(const nt_frame_op *o) {
  const nt_oplog_row *op = &o->op;
  cJSON *x = cJSON_CreateObject();
  put_str(x, "func", nt_func_name(op->func));
  put_str(x, "kind", op->kind == NT_OP_P2P ? "p2p" : "coll");
  put_num(x, "seq", (double)op->seq);
  put_num(x, "count", (double)op->count);
  put_str(x, "dtype", nt_dtype_name(op->dtype));
  put_num(x, "bytes", (double)op->bytes);
  put_num(x, "root_peer", op->root_peer);
  put_str(x, "algo", nt_algo_name(op->algo));
  put_str(x, "proto", nt_proto_name(op->proto));
  put_num(x, "nchannels", op->nchannels);
  put_num(x, "nwarps", op->nwarps);
  put_str(x, "phase", o->phase);
  put_str(x, "state", nt_op_state_name(op->state));
  put_str(x, "timing", nt_timing_name(op->timing));
  put_num(x, "age_ms", o->age_s * 1e3);
  put_num(x, "duration_us", (double)op->duration_ns / 1e3);
  put_num(x, "children", op->children);
  put_num(x, "children_open", op->children_open);
  put_str(x, "run_state", nt_run_name(op->run_state));
  put_num(x, "progress_age_ms",
          op->progress_age_ns == UINT64_MAX ? -1 : (double)op->progress_age_ns / 1e6);
  put_bool(x, "completion_unreported", (op->flags & NT_OPF_UNREPORTED) != 0);
  put_bool(x, "relayed", (op->flags & NT_OPF_RELAYED) != 0);
  return x;
}

void nt_batch_rank_ops(cJSON *j, const nt_frame *f, const nt_frame_rank *r) {
  const nt_comm_row *c = &r->comm;
  cJSON *api = put_obj(j, "api", cJSON_CreateObject());
  put_num(api, "group_api", (double)c->group_api);
  put_num(api, "coll_api", (double)c->coll_api);
  put_num(api, "p2p_api", (double)c->p2p_api);
  put_num(api, "kernel_launches", (double)c->kernel_launches);
  put_num(api, "graph_captured", (double)c->graph_captured);
  put_num(api, "api_ms", (double)c->api_ns / 1e6);
  cJSON *seq = put_obj(j, "seq", cJSON_CreateArray());
  for (uint32_t i = r->seq0; i < r->seq0 + r->nseq; i++) {
    const nt_frame_seq *q = &f->seq[i];
    cJSON *x = cJSON_CreateObject();
    put_str(x, "func", nt_func_name(q->row.func));
    put_num(x, "launched", (double)q->row.launched);
    put_num(x, "done", (double)q->row.done);
    put_num(x, "last_launch_ms", q->last_launch_s * 1e3);
    append(seq, x);
  }
  cJSON *fl = put_obj(j, "in_flight", cJSON_CreateArray());
  for (uint32_t i = r->op0; i < r->op0 + r->nops; i++) append(fl, op_json(&f->ops[i]));
  cJSON *net = put_obj(j, "net", cJSON_CreateArray());
  for (uint32_t i = r->net0; i < r->net0 + r->nnet; i++) {
    const nt_net_row *n = &f->net[i];
    cJSON *x = cJSON_CreateObject();
    put_str(x, "type", n->type == NT_NET_IB_QP ? "ib_qp" : "socket");
    put_num(x, "device", n->device);
    put_num(x, "id", n->id);
    put_num(x, "count", (double)n->count);
    put_num(x, "bytes", (double)n->bytes);
    put_num(x, "busy_ms", (double)n->busy_ns / 1e6);
    put_num(x, "in_flight", (double)n->in_flight);
    append(net, x);
  }
}

void nt_batch_process_ops(cJSON *j, const nt_frame *f, const nt_frame_proc *p) {
  const nt_process_counters *c = &p->counters;
  put_str(j, "phase", p->phase);
  cJSON *cls = put_obj(j, "event_classes", cJSON_CreateArray());
  for (int b = 0; b < NT_EVENT_CLASSES; b++)
    if (c->event_mask & (1u << b)) append(cls, cJSON_CreateString(nt_event_class_name(b)));
  cJSON *env = put_obj(j, "env", cJSON_CreateObject());
  for (uint32_t i = p->var0; env && i < p->var0 + p->nvars; i++) {
    cJSON *v = cJSON_CreateString(f->vars[i].value);
    if (v && !cJSON_AddItemToObject(env, f->vars[i].name, v)) cJSON_Delete(v);
  }
  cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "counters");
  if (k) {
    put_num(k, "dropped_ops", (double)c->dropped_ops);
    put_num(k, "late_children", (double)c->late_children);
    put_num(k, "net_events", (double)c->net_events);
  }
}

/* ---- the job ---- */

static cJSON *run_json(const nt_run_summary *r) {
  cJSON *x = cJSON_CreateObject();
  put_num(x, "id", r->id);
  put_num(x, "processes", r->processes);
  put_num(x, "ranks", r->ranks);
  cJSON *env = put_obj(x, "env", cJSON_CreateObject());
  cJSON *varies = put_obj(x, "env_varies", cJSON_CreateArray());
  for (uint32_t i = 0; i < r->nenv; i++) {
    cJSON *v = cJSON_CreateString(r->env[i].value);
    if (env && v && !cJSON_AddItemToObject(env, r->env[i].name, v)) cJSON_Delete(v);
    if (r->env[i].differs) append(varies, cJSON_CreateString(r->env[i].name));
  }
  cJSON *ops = put_obj(x, "ops", cJSON_CreateArray());
  for (uint32_t i = 0; i < r->nops; i++) {
    const nt_run_op *o = &r->ops[i];
    char size[32];
    cJSON *y = cJSON_CreateObject();
    put_str(y, "func", nt_func_name(o->func));
    put_obj(y, "size", cJSON_CreateString(nt_fmt_bucket(o->bucket, size, sizeof size)));
    put_str(y, "algo", nt_algo_name(o->algo));
    put_str(y, "proto", nt_proto_name(o->proto));
    put_num(y, "count", (double)o->count);
    put_num(y, "busbw_gbs", nt_stat_algbw(o->bus_bytes, o->time_s));
    append(ops, y);
  }
  return x;
}

static const nt_run_env *env_in(const nt_run_summary *r, const char *name) {
  for (uint32_t i = 0; i < r->nenv; i++)
    if (!strcmp(r->env[i].name, name)) return &r->env[i];
  return NULL;
}

static void runs_json(cJSON *root, const nt_frame *f) {
  const nt_run_summary *cur = f->run_cur, *prev = f->run_prev;
  cJSON *runs = put_obj(root, "runs", cJSON_CreateObject());
  bool have_cur = f->have_run_cur, have_prev = f->have_run_prev;
  put_obj(runs, "current", have_cur ? run_json(cur) : cJSON_CreateNull());
  put_obj(runs, "previous", have_prev ? run_json(prev) : cJSON_CreateNull());
  cJSON *diff = put_obj(runs, "env_diff", cJSON_CreateArray());
  for (int pass = 0; have_cur && have_prev && pass < 2; pass++) {
    const nt_run_summary *a = pass ? prev : cur, *b = pass ? cur : prev;
    for (uint32_t i = 0; i < a->nenv; i++) {
      const nt_run_env *other = env_in(b, a->env[i].name);
      if (pass && other) continue; /* seen from the current side */
      if (other && !strcmp(other->value, a->env[i].value) && other->differs == a->env[i].differs)
        continue;
      const nt_run_env *pv = pass ? &a->env[i] : other, *cv = pass ? other : &a->env[i];
      cJSON *x = cJSON_CreateObject();
      put_obj(x, "name", cJSON_CreateString(a->env[i].name));
      /* A value is the most common one; "..._varies" says ranks differed. */
      put_obj(x, "previous", pv ? cJSON_CreateString(pv->value) : cJSON_CreateNull());
      put_obj(x, "current", cv ? cJSON_CreateString(cv->value) : cJSON_CreateNull());
      put_bool(x, "previous_varies", pv && pv->differs);
      put_bool(x, "current_varies", cv && cv->differs);
      append(diff, x);
    }
  }
}

void nt_batch_job_json(cJSON *root, const nt_frame *f) {
  char hex[17];
  cJSON *al = put_obj(root, "alerts", cJSON_CreateArray());
  for (uint32_t i = 0; i < f->nalerts; i++) {
    const nt_frame_alert *a = &f->alerts[i];
    cJSON *x = cJSON_CreateObject();
    put_str(x, "kind", nt_alert_kind_name(a->kind));
    put_obj(x, "text", cJSON_CreateString(a->text));
    put_str(x, "host", a->host);
    put_num(x, "pid", a->pid);
    put_obj(x, "comm", cJSON_CreateString(hex16(a->comm_hash, hex)));
    put_num(x, "rank", a->has_rank ? a->rank : -1);
    put_num(x, "peer", a->peer);
    put_str(x, "wait", nt_wait_name(a->wait));
    put_str(x, "func", nt_func_name(a->func));
    put_num(x, "count", a->count);
    put_num(x, "age_s", a->age_s);
    append(al, x);
  }
  cJSON *cs = put_obj(root, "collectives", cJSON_CreateArray());
  for (uint32_t i = 0; i < f->nstats; i++) {
    const nt_op_stat *r = &f->stats[i].st;
    char size[32];
    cJSON *x = cJSON_CreateObject();
    put_obj(x, "comm", cJSON_CreateString(hex16(r->comm_hash, hex)));
    put_str(x, "comm_name", r->comm_name);
    put_num(x, "nranks", r->nranks);
    put_str(x, "kind", r->kind == NT_OP_P2P ? "p2p" : "coll");
    put_str(x, "func", nt_func_name(r->func));
    put_str(x, "algo", nt_algo_name(r->algo));
    put_str(x, "proto", nt_proto_name(r->proto));
    put_obj(x, "size", cJSON_CreateString(nt_fmt_bucket(r->bucket, size, sizeof size)));
    put_num(x, "bucket", r->bucket);
    put_num(x, "ranks", r->ranks);
    put_num(x, "count", (double)r->count);
    put_num(x, "done", (double)r->done);
    put_num(x, "gpu_done", (double)r->gpu_done);
    put_num(x, "bytes", (double)r->bytes);
    put_str(x, "source", nt_op_source(r));
    put_str(x, "timing", nt_op_timing(r));
    if (r->done) {
      put_num(x, "time_ms", r->time_s * 1e3);
      put_num(x, "avg_us", r->time_s * 1e6 / (double)r->done);
      put_num(x, "algbw_gbs", nt_stat_algbw(r->alg_bytes, r->time_s));
      put_num(x, "busbw_gbs", nt_stat_algbw(r->bus_bytes, r->time_s));
    } else { /* no operation was timed: unknown, not 0 */
      put_obj(x, "time_ms", cJSON_CreateNull());
      put_obj(x, "avg_us", cJSON_CreateNull());
      put_obj(x, "algbw_gbs", cJSON_CreateNull());
      put_obj(x, "busbw_gbs", cJSON_CreateNull());
    }
    if (r->sync_ns || r->compute_ns) {
      put_num(x, "sync_ms", (double)r->sync_ns / 1e6);
      put_num(x, "compute_ms", (double)r->compute_ns / 1e6);
    } else { /* NCCL reported no kernel phase (before 2.31, or kernelphase off) */
      put_obj(x, "sync_ms", cJSON_CreateNull());
      put_obj(x, "compute_ms", cJSON_CreateNull());
    }
    append(cs, x);
  }
  const nt_phase_stat *ph = f->phases;
  uint32_t np = f->nphases;
  cJSON *pj = put_obj(root, "phases", cJSON_CreateArray());
  for (uint32_t i = 0; i < np; i++) {
    cJSON *x = cJSON_CreateObject();
    put_obj(x, "phase", cJSON_CreateString(ph[i].name));
    put_str(x, "phase_source",
            !ph[i].name[0]                      ? "none"
            : ph[i].source == NT_PHASE_USER_TAG ? "user_tag"
                                                : "nccltop_tag");
    put_num(x, "ranks", ph[i].ranks);
    put_num(x, "count", (double)ph[i].count);
    put_num(x, "done", (double)ph[i].done);
    put_num(x, "bytes", (double)ph[i].bytes);
    put_num(x, "time_ms", ph[i].ranks ? ph[i].time_s * 1e3 / ph[i].ranks : 0);
    put_num(x, "algbw_gbs", nt_stat_algbw(ph[i].alg_bytes, ph[i].time_s));
    put_num(x, "busbw_gbs", nt_stat_algbw(ph[i].bus_bytes, ph[i].time_s));
    append(pj, x);
  }
  cJSON *rj = put_obj(root, "recent", cJSON_CreateArray());
  for (uint32_t i = 0; i < f->nrecent && i < RECENT_IN_FRAME; i++) {
    const nt_frame_rank *r = &f->ranks[f->recent[i].rank];
    const nt_frame_proc *p = nt_frame_proc_of(f, r);
    cJSON *x = op_json(&f->recent[i]);
    put_str(x, "host", p->host);
    put_num(x, "pid", p->pid);
    put_num(x, "rank", r->rank);
    put_obj(x, "comm", cJSON_CreateString(hex16(r->comm_hash, hex)));
    append(rj, x);
  }
  runs_json(root, f);
}

/* ---- text ---- */

void nt_batch_alerts_text(FILE *out, const nt_frame *f) {
  for (uint32_t i = 0; i < f->nalerts; i++)
    fprintf(out, "ALERT %-9s %s\n", nt_alert_kind_name(f->alerts[i].kind), f->alerts[i].text);
}

void nt_batch_ops_text(FILE *out, const nt_frame *f) {
  uint32_t ns = f->nstats;
  if (ns)
    fprintf(out, "%-16s %-13s %-11s %-14s %-7s %8s %8s %10s %9s %9s\n", "COMM", "FUNC", "SIZE",
            "ALGO", "PROTO", "COUNT", "DONE", "AVG TIME", "ALGBW", "BUSBW");
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
    fprintf(out, "%016llx %-13s %-11s %-14s %-7s %8llu %8llu %10s %9s %9s\n",
            (unsigned long long)r->comm_hash, nt_func_name(r->func),
            nt_fmt_bucket(r->bucket, size, sizeof size), plain ? nt_algo_name(r->algo) : src,
            plain ? nt_proto_name(r->proto) : "-", (unsigned long long)r->count,
            (unsigned long long)r->done, t[0], t[1], t[2]);
  }
  const nt_phase_stat *ph = f->phases;
  uint32_t np = f->nphases;
  if (np)
    fprintf(out, "%-20s %8s %8s %12s %9s %9s\n", "PHASE", "COUNT", "DONE", "TIME/rank", "ALGBW",
            "BUSBW");
  for (uint32_t i = 0; i < np; i++) {
    char t[3][NT_UNIT_LEN];
    fprintf(out, "%-20.20s %8llu %8llu %12s %9s %9s\n", ph[i].name[0] ? ph[i].name : "-",
            (unsigned long long)ph[i].count, (unsigned long long)ph[i].done,
            nt_fmt_ns(ph[i].ranks ? ph[i].time_s * 1e9 / ph[i].ranks : 0, t[0], sizeof t[0]),
            nt_fmt_rate(nt_stat_algbw(ph[i].alg_bytes, ph[i].time_s) * 1e9, t[1], sizeof t[1]),
            nt_fmt_rate(nt_stat_algbw(ph[i].bus_bytes, ph[i].time_s) * 1e9, t[2], sizeof t[2]));
  }
}

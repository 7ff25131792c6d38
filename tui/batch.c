/* Batch output: one frame of the model as text, or as one JSON line.
 *
 * JSON frame (built with cJSON, one object per line):
 * {"time": s since the viewer started, "publishers": N, "messages": N, "bad_messages": N,
 *  "errors": ["<endpoint>: <reason>", ...]               (newest first, sanitized)
 *  "processes": [{"host","pid","stale","ended","nccl_version","abi","seq","lost_messages",
 *     "counters":{"events","dropped_events","unknown_events","foreign_ops","reclaimed_ops",
 *                 "dropped_rows","unsent_messages"}, "event_mask"}],
 *  "ranks": [{"comm":"<16 hex>","comm_name","rank","nranks","nnodes","host","pid","stale",
 *     "colls","p2ps",
 *     "proxy":[{"tid","state","state_age_ms","state_ns":{"idle",..,"append"},
 *               "share_last":{..},"share_total":{..},"appends","appended_ops","wakeups"}],
 *     "channels":[{"channel","dir":"send"|"recv","peer","steps","bytes",
 *                  "wait_ns":{"send_gpu_wait","send_peer_wait","send_net_wait"} or the recv_*
 * three, "dominant_wait","steps_per_s","bytes_per_s","ops_in_flight","cur_step",
 *                  "cur_wait","progress_age_ms","stalled"}],
 *     "kernels":[{"channel","count","busy_ns"}]}]}
 * Counters are JSON numbers (exact below 2^53, which cumulative nanoseconds
 * reach after 104 days). State and wait names are those of proto/names.c.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

#define MAX_RANKS 65536

static double start_s;

static cJSON *states_obj(const uint64_t *ns) {
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < NT_PROXY_NSTATES; i++)
    cJSON_AddNumberToObject(o, nt_proxy_state_name(i), (double)ns[i]);
  return o;
}

static cJSON *shares_obj(const double *v) {
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < NT_PROXY_NSTATES; i++)
    cJSON_AddNumberToObject(o, nt_proxy_state_name(i), v[i]);
  return o;
}

static double age_ms(uint64_t ns) {
  return ns == UINT64_MAX ? -1 : (double)ns / 1e6;
}

static cJSON *rank_json(const nt_model_rank *r, const nt_options *o) {
  nt_model_process *p = r->proc;
  const nt_snapshot *s = p->cur;
  const nt_comm_row *comm = &s->comms[r->comm_index];
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->comm_hash);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "comm", hex);
  cJSON_AddStringToObject(j, "comm_name", r->comm_name);
  cJSON_AddNumberToObject(j, "rank", r->rank);
  cJSON_AddNumberToObject(j, "nranks", r->nranks);
  cJSON_AddNumberToObject(j, "nnodes", r->nnodes);
  cJSON_AddStringToObject(j, "host", p->host);
  cJSON_AddNumberToObject(j, "pid", p->pid);
  cJSON_AddBoolToObject(j, "stale", p->stale);
  cJSON_AddNumberToObject(j, "colls", (double)comm->colls_enqueued);
  cJSON_AddNumberToObject(j, "p2ps", (double)comm->p2ps_enqueued);
  cJSON *proxy = cJSON_AddArrayToObject(j, "proxy");
  for (uint32_t i = 0; i < s->nproxy; i++) {
    const nt_proxy_row *t = &s->proxy[i];
    if (t->comm_index != r->comm_index) continue;
    double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
    nt_model_proxy_shares(p, t, last, total);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "tid", t->tid);
    cJSON_AddStringToObject(x, "state", nt_proxy_state_name(t->state));
    cJSON_AddNumberToObject(x, "state_age_ms", age_ms(t->state_age_ns));
    cJSON_AddItemToObject(x, "state_ns", states_obj(t->state_ns));
    cJSON_AddItemToObject(x, "share_last", shares_obj(last));
    cJSON_AddItemToObject(x, "share_total", shares_obj(total));
    cJSON_AddNumberToObject(x, "appends", (double)t->appends);
    cJSON_AddNumberToObject(x, "appended_ops", (double)t->appended_ops);
    cJSON_AddNumberToObject(x, "wakeups", (double)t->wakeups);
    cJSON_AddItemToArray(proxy, x);
  }
  cJSON *chans = cJSON_AddArrayToObject(j, "channels");
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *c = &s->channels[i];
    if (c->comm_index != r->comm_index) continue;
    double sps, bps;
    nt_model_channel_rates(p, c, &sps, &bps);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "channel", c->channel);
    cJSON_AddStringToObject(x, "dir", c->dir == NT_DIR_RECV ? "recv" : "send");
    cJSON_AddNumberToObject(x, "peer", c->peer);
    cJSON_AddNumberToObject(x, "steps", (double)c->steps);
    cJSON_AddNumberToObject(x, "bytes", (double)c->bytes);
    cJSON *w = cJSON_AddObjectToObject(x, "wait_ns");
    for (int k = 0; k < 3; k++)
      cJSON_AddNumberToObject(w, nt_wait_name(nt_dir_wait(c->dir, k)), (double)c->wait_ns[k]);
    cJSON_AddStringToObject(x, "dominant_wait", nt_wait_name(nt_model_channel_dominant_wait(p, c)));
    cJSON_AddNumberToObject(x, "steps_per_s", sps);
    cJSON_AddNumberToObject(x, "bytes_per_s", bps);
    cJSON_AddNumberToObject(x, "ops_in_flight", (double)(c->ops_started - c->ops_done));
    cJSON_AddNumberToObject(x, "cur_step", c->cur_step);
    cJSON_AddStringToObject(x, "cur_wait", nt_wait_name(c->cur_wait));
    cJSON_AddNumberToObject(x, "progress_age_ms", age_ms(c->progress_age_ns));
    cJSON_AddBoolToObject(x, "stalled", nt_model_channel_stalled(c, o->stall_ms));
    cJSON_AddItemToArray(chans, x);
  }
  cJSON *kern = cJSON_AddArrayToObject(j, "kernels");
  for (uint32_t i = 0; i < s->nkernels; i++) {
    const nt_kernel_row *k = &s->kernels[i];
    if (k->comm_index != r->comm_index) continue;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "channel", k->channel);
    cJSON_AddNumberToObject(x, "count", (double)k->count);
    cJSON_AddNumberToObject(x, "busy_ns", (double)k->busy_ns);
    cJSON_AddItemToArray(kern, x);
  }
  return j;
}

static cJSON *process_json(const nt_model_process *p) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "host", p->host);
  cJSON_AddNumberToObject(j, "pid", p->pid);
  cJSON_AddBoolToObject(j, "stale", p->stale);
  cJSON_AddBoolToObject(j, "ended", p->ended);
  cJSON_AddStringToObject(j, "nccl_version", p->have_hello ? p->hello.nccl_version : "");
  const nt_process_counters *c = &p->cur->process;
  cJSON_AddNumberToObject(j, "abi", c->abi_version);
  cJSON_AddNumberToObject(j, "seq", (double)p->cur->seq);
  cJSON_AddNumberToObject(j, "lost_messages", (double)p->lost_messages);
  cJSON_AddNumberToObject(j, "event_mask", c->event_mask);
  cJSON *k = cJSON_AddObjectToObject(j, "counters");
  cJSON_AddNumberToObject(k, "events", (double)c->events);
  cJSON_AddNumberToObject(k, "dropped_events", (double)c->dropped_events);
  cJSON_AddNumberToObject(k, "unknown_events", (double)c->unknown_events);
  cJSON_AddNumberToObject(k, "foreign_ops", (double)c->foreign_ops);
  cJSON_AddNumberToObject(k, "reclaimed_ops", (double)c->reclaimed_ops);
  cJSON_AddNumberToObject(k, "dropped_rows", (double)c->dropped_rows);
  cJSON_AddNumberToObject(k, "unsent_messages", (double)c->unsent_messages);
  return j;
}

static int print_json(FILE *out, nt_model *m, const nt_options *o, double now, nt_model_rank *ranks,
                      uint32_t nranks) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "time", now - start_s);
  cJSON_AddNumberToObject(root, "publishers", nt_model_nprocesses(m));
  cJSON_AddNumberToObject(root, "messages", (double)nt_model_total_messages(m));
  cJSON_AddNumberToObject(root, "bad_messages", (double)nt_model_total_bad(m));
  cJSON *errs = cJSON_AddArrayToObject(root, "errors");
  for (uint32_t i = 0; i < nt_model_nerrors(m) && i < 8; i++) {
    const nt_model_error *e = nt_model_error_at(m, i);
    char line[256];
    snprintf(line, sizeof line, "%s: %s", e->source, e->text);
    cJSON_AddItemToArray(errs, cJSON_CreateString(line));
  }
  cJSON *procs = cJSON_AddArrayToObject(root, "processes");
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    nt_model_process *p = nt_model_process_at(m, i);
    if (p->cur) cJSON_AddItemToArray(procs, process_json(p));
  }
  cJSON *rs = cJSON_AddArrayToObject(root, "ranks");
  for (uint32_t i = 0; i < nranks; i++) cJSON_AddItemToArray(rs, rank_json(&ranks[i], o));
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return -1;
  int rc = fprintf(out, "%s\n", text) < 0 ? -1 : 0;
  free(text);
  return rc;
}

static void print_text(FILE *out, nt_model *m, const nt_options *o, double now,
                       nt_model_rank *ranks, uint32_t nranks) {
  fprintf(out, "nccltop %.1fs  publishers %u  ranks %u  messages %llu  bad %llu\n", now - start_s,
          nt_model_nprocesses(m), nranks, (unsigned long long)nt_model_total_messages(m),
          (unsigned long long)nt_model_total_bad(m));
  if (nt_model_nerrors(m)) {
    const nt_model_error *e = nt_model_error_at(m, 0);
    fprintf(out, "last error: %s: %s\n", e->source, e->text);
  }
  fprintf(out, "%-6s %-16s %-22s %-7s %6s %6s %6s %6s %6s %8s\n", "RANK", "COMM", "HOST:PID",
          "STATE", "IDLE%", "ACTV%", "SLEEP%", "WAKE%", "APND%", "APPENDS");
  for (uint32_t i = 0; i < nranks; i++) {
    const nt_model_rank *r = &ranks[i];
    const nt_snapshot *s = r->proc->cur;
    for (uint32_t t = 0; t < s->nproxy; t++) {
      const nt_proxy_row *row = &s->proxy[t];
      if (row->comm_index != r->comm_index) continue;
      double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
      nt_model_proxy_shares(r->proc, row, last, total);
      char who[40];
      snprintf(who, sizeof who, "%.24s:%u", r->proc->host, r->proc->pid);
      fprintf(out, "%2d/%-3d %016llx %-22s %-7s %6.1f %6.1f %6.1f %6.1f %6.1f %8llu%s\n", r->rank,
              r->nranks, (unsigned long long)r->comm_hash, who, nt_proxy_state_name(row->state),
              100 * last[0], 100 * last[1], 100 * last[2], 100 * last[3], 100 * last[4],
              (unsigned long long)row->appends, r->proc->stale ? "  STALE" : "");
    }
  }
  fprintf(out, "%-6s %-16s %3s %-4s %4s %-15s %9s %10s %6s %5s\n", "RANK", "COMM", "CH", "DIR",
          "PEER", "WAIT", "STEPS/s", "MB/s", "FLIGHT", "STEP");
  for (uint32_t i = 0; i < nranks; i++) {
    const nt_model_rank *r = &ranks[i];
    const nt_snapshot *s = r->proc->cur;
    for (uint32_t c = 0; c < s->nchannels; c++) {
      const nt_channel_row *row = &s->channels[c];
      if (row->comm_index != r->comm_index) continue;
      double sps, bps;
      nt_model_channel_rates(r->proc, row, &sps, &bps);
      fprintf(out, "%2d/%-3d %016llx %3u %-4s %4d %-15s %9.0f %10.1f %6llu %5d%s\n", r->rank,
              r->nranks, (unsigned long long)r->comm_hash, row->channel,
              row->dir == NT_DIR_RECV ? "recv" : "send", row->peer,
              nt_wait_name(nt_model_channel_dominant_wait(r->proc, row)), sps, bps / 1e6,
              (unsigned long long)(row->ops_started - row->ops_done), row->cur_step,
              nt_model_channel_stalled(row, o->stall_ms) ? "  STALLED" : "");
    }
  }
  fputc('\n', out);
}

int nt_batch_print(FILE *out, nt_model *m, const nt_options *o, double now_s) {
  if (start_s == 0) start_s = now_s;
  static nt_model_rank *ranks;
  if (!ranks && !(ranks = calloc(MAX_RANKS, sizeof *ranks))) return -1;
  uint32_t n = nt_model_ranks(m, ranks, MAX_RANKS);
  int rc = 0;
  if (o->json)
    rc = print_json(out, m, o, now_s, ranks, n);
  else
    print_text(out, m, o, now_s, ranks, n);
  fflush(out);
  return rc;
}

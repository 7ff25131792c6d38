/* One Prometheus exposition (text format 0.0.4) of the model: the numbers
 * `nccltop -b --json` prints, from the same functions (nt_model_ranks,
 * nt_model_proxy_shares, nt_model_channel_rates, nt_model_channel_stalled,
 * nt_model_op_stats, nt_model_alerts), in base units (seconds, bytes).
 *
 * Families are written one after the other, each with # HELP and # TYPE and
 * all of its samples together, as the format wants. Label values come from
 * publishers (host, communicator names): sanitized by the model on arrival,
 * escaped here (nt_prom_label_value). The four NCCL Inspector families keep
 * the Inspector's names and units (GB/s, microseconds) so its Grafana
 * dashboards work unchanged; every other family is nccltop_*.
 *
 * Series per rank (default): 5 per proxy thread (its states) + 14 channel
 * series (2 directions x (3 waits + steps + bytes + 2 rates)) + 3 gauges
 * (stalled channels, operations in flight, the oldest's age) + 2 per
 * function the rank launched (launched, done): 32 for one proxy thread and
 * five functions. --per-channel: 7 channel series per (channel, direction,
 * peer) instead of 14 in all. Per communicator: 5 counters per operation
 * row (function, algorithm, protocol, size), 2 Inspector gauges per
 * timed one and 2 model gauges per one NCCL's model covers (its predicted
 * time; the measured share of it, when timed); per process 8; per exporter
 * 20, plus 3 per stall root and 2 per straggler.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "exporter.h"
#include "../core/model.h"

#define MAX_RANKS  65536
#define MAX_ALERTS 256
#define MAX_STATS  4096

void nt_prom_label_value(FILE *f, const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if (*p == '\\')
      fputs("\\\\", f);
    else if (*p == '"')
      fputs("\\\"", f);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p < 0x20 || *p == 0x7f)
      fputc('?', f);
    else
      fputc(*p, f);
  }
}

/* ---- writing ---- */

static void family(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A sample: name{labels} value. Labels are written by the caller between
 * open() and value(). */
typedef struct {
  FILE *f;
  bool first;
} sample;

static sample open_sample(FILE *f, const char *name) {
  fputs(name, f);
  return (sample){f, true};
}

static void lab(sample *s, const char *k, const char *v) {
  fputc(s->first ? '{' : ',', s->f);
  s->first = false;
  fprintf(s->f, "%s=\"", k);
  nt_prom_label_value(s->f, v);
  fputc('"', s->f);
}

static void lab_int(sample *s, const char *k, long long v) {
  char b[24];
  snprintf(b, sizeof b, "%lld", v);
  lab(s, k, b);
}

/* A count NCCL did not give (2.26: no rank or node count) is "unknown",
 * as comm_name's, never "0". */
static void lab_count(sample *s, const char *k, long long v) {
  if (v > 0)
    lab_int(s, k, v);
  else
    lab(s, k, "unknown");
}

static void value(sample *s, double v) {
  if (!s->first) fputc('}', s->f);
  if (isnan(v))
    fputs(" NaN\n", s->f);
  else if (isinf(v))
    fputs(v > 0 ? " +Inf\n" : " -Inf\n", s->f);
  else { /* the shortest of %.15g / %.17g that reads back as v (as cJSON does) */
    char b[32];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    fprintf(s->f, " %s\n", b);
  }
}

static const char *hex16(uint64_t v, char *buf) {
  snprintf(buf, 17, "%016llx", (unsigned long long)v);
  return buf;
}

/* host, pid, rank, comm_hash, comm_name of a rank. */
static void rank_labels(sample *s, const nt_model_rank *r) {
  char hex[17];
  lab(s, "host", r->proc->host);
  lab_int(s, "pid", r->proc->pid);
  lab_int(s, "rank", r->rank);
  lab(s, "comm_hash", hex16(r->comm_hash, hex));
  lab(s, "comm_name", r->comm_name);
}

static void proc_labels(sample *s, const nt_model_process *p) {
  lab(s, "host", p->host);
  lab_int(s, "pid", p->pid);
}

static const char *dir_name(int dir) {
  return dir == NT_DIR_RECV ? "recv" : "send";
}

/* ---- the job and the viewer ---- */

static void job_families(FILE *f, const nt_model *m) {
  uint32_t live = 0, stale = 0, ended = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (p->ended)
      ended++;
    else if (p->stale)
      stale++;
    else
      live++;
  }
  family(f, "nccltop_publishers", "gauge",
         "Publishing processes the exporter knows, by state (live, stale: silent, ended).");
  static const char *const st[3] = {"live", "stale", "ended"};
  uint32_t n[3] = {live, stale, ended};
  for (int i = 0; i < 3; i++) {
    sample s = open_sample(f, "nccltop_publishers");
    lab(&s, "state", st[i]);
    value(&s, n[i]);
  }
  family(f, "nccltop_messages_total", "counter", "Messages taken from publishers.");
  sample s = open_sample(f, "nccltop_messages_total");
  value(&s, (double)nt_model_total_messages(m));
  family(f, "nccltop_bad_messages_total", "counter", "Messages that failed to decode.");
  s = open_sample(f, "nccltop_bad_messages_total");
  value(&s, (double)nt_model_total_bad(m));
  family(f, "nccltop_refused_messages_total", "counter",
         "Messages refused (a publisher over its limits), by reason.");
  for (int i = 0; i < NT_REFUSE_COUNT; i++) {
    s = open_sample(f, "nccltop_refused_messages_total");
    lab(&s, "reason", nt_refusal_name(i));
    value(&s, (double)nt_model_refused(m, i));
  }
  family(f, "nccltop_model_bytes", "gauge", "Bytes the exporter's model holds (--max-memory).");
  s = open_sample(f, "nccltop_model_bytes");
  value(&s, (double)nt_model_bytes(m));
}

/* ---- per process ---- */

typedef struct {
  const char *name, *help;
  size_t offset; /* into nt_process_counters, a uint64_t */
} counter_def;

static const counter_def plugin_counters[] = {
    {"nccltop_plugin_events_total", "Profiler ABI calls the plugin handled.",
     offsetof(nt_process_counters, events)},
    {"nccltop_plugin_dropped_events_total",
     "Events the plugin dropped: its handle pool was exhausted.",
     offsetof(nt_process_counters, dropped_events)},
    {"nccltop_plugin_dropped_ops_total",
     "Operations the plugin did not track: its operation pool was full.",
     offsetof(nt_process_counters, dropped_ops)},
    {"nccltop_plugin_dropped_rows_total", "Rows the plugin's aggregate tables had no room for.",
     offsetof(nt_process_counters, dropped_rows)},
    {"nccltop_plugin_unsent_messages_total",
     "Snapshots the plugin could not send (its ZeroMQ queue was full).",
     offsetof(nt_process_counters, unsent_messages)},
    {"nccltop_plugin_reclaimed_ops_total", "Proxy operations never stopped, reclaimed by age.",
     offsetof(nt_process_counters, reclaimed_ops)},
};

static void process_families(FILE *f, const nt_model *m) {
  uint32_t np = nt_model_nprocesses(m);
  family(f, "nccltop_publisher_info", "gauge",
         "1 per publishing process, with its NCCL and plugin versions and profiler ABI.");
  for (uint32_t i = 0; i < np; i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (!p->cur) continue;
    sample s = open_sample(f, "nccltop_publisher_info");
    proc_labels(&s, p);
    lab(&s, "nccl_version", p->have_hello ? p->hello.nccl_version : "");
    lab(&s, "plugin_version", p->have_hello ? p->hello.plugin_version : "");
    lab(&s, "clock", p->have_hello ? p->hello.clock : "");
    lab_int(&s, "abi", p->cur->process.abi_version);
    lab(&s, "state", p->ended ? "ended" : p->stale ? "stale" : "live");
    value(&s, 1);
  }
  family(f, "nccltop_lost_messages_total", "counter",
         "Snapshots of a publisher that never arrived (gaps in its sequence numbers).");
  for (uint32_t i = 0; i < np; i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (!p->cur) continue;
    sample s = open_sample(f, "nccltop_lost_messages_total");
    proc_labels(&s, p);
    value(&s, (double)p->lost_messages);
  }
  for (size_t k = 0; k < sizeof plugin_counters / sizeof plugin_counters[0]; k++) {
    const counter_def *d = &plugin_counters[k];
    family(f, d->name, "counter", d->help);
    for (uint32_t i = 0; i < np; i++) {
      const nt_model_process *p = nt_model_process_at(m, i);
      if (!p->cur) continue;
      uint64_t v;
      memcpy(&v, (const char *)&p->cur->process + d->offset, sizeof v);
      sample s = open_sample(f, d->name);
      proc_labels(&s, p);
      value(&s, (double)v);
    }
  }
}

/* ---- per rank ---- */

static void proxy_family(FILE *f, const nt_model *m, const nt_model_rank *ranks, uint32_t n) {
  family(f, "nccltop_proxy_state_seconds_total", "counter",
         "Time NCCL's proxy progress thread spent in each state (idle, active, sleep, wakeup, "
         "append); threads of no communicator have empty rank labels.");
  for (uint32_t i = 0; i < n; i++) {
    const nt_snapshot *sn = ranks[i].proc->cur;
    for (uint32_t t = 0; t < sn->nproxy; t++) {
      const nt_proxy_row *row = &sn->proxy[t];
      if (row->comm_index != ranks[i].comm_index) continue;
      for (int k = 0; k < NT_PROXY_NSTATES; k++) {
        sample s = open_sample(f, "nccltop_proxy_state_seconds_total");
        rank_labels(&s, &ranks[i]);
        lab_int(&s, "tid", row->tid);
        lab(&s, "state", nt_proxy_state_name(k));
        value(&s, (double)row->state_ns[k] / 1e9);
      }
    }
  }
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++) {
    const nt_model_process *p = nt_model_process_at(m, i);
    if (!p->cur || nt_model_process_replaced(m, p)) continue;
    for (uint32_t t = 0; t < p->cur->nproxy; t++) {
      const nt_proxy_row *row = &p->cur->proxy[t];
      if (row->comm_index != NT_NO_COMM) continue;
      for (int k = 0; k < NT_PROXY_NSTATES; k++) {
        sample s = open_sample(f, "nccltop_proxy_state_seconds_total");
        proc_labels(&s, p);
        lab(&s, "rank", "");
        lab(&s, "comm_hash", "");
        lab(&s, "comm_name", "");
        lab_int(&s, "tid", row->tid);
        lab(&s, "state", nt_proxy_state_name(k));
        value(&s, (double)row->state_ns[k] / 1e9);
      }
    }
  }
}

/* The channel families: per (rank, direction), summed over channels, or
 * per (rank, channel, direction, peer) with --per-channel. */
enum { CH_WAIT, CH_STEPS, CH_BYTES, CH_STEPS_RATE, CH_BYTES_RATE, CH_FAMILIES };
static const struct {
  const char *name, *type, *help;
} ch_fam[CH_FAMILIES] = {
    {"nccltop_channel_wait_seconds_total", "counter",
     "Time network steps spent in each wait state (send_gpu_wait, send_peer_wait, send_net_wait, "
     "recv_net_wait, recv_flush_wait, recv_gpu_wait)."},
    {"nccltop_channel_steps_total", "counter", "Network steps done."},
    {"nccltop_channel_bytes_total", "counter", "Bytes the network steps moved."},
    {"nccltop_channel_steps_per_second", "gauge",
     "Steps per second over the publisher's last interval (the monitor's rate)."},
    {"nccltop_channel_bytes_per_second", "gauge",
     "Bytes per second over the publisher's last interval (the monitor's rate)."},
};

static void channel_sample(FILE *f, int fam, const nt_model_rank *r, int dir, int channel, int peer,
                           int wait_k, double v) {
  sample s = open_sample(f, ch_fam[fam].name);
  rank_labels(&s, r);
  lab(&s, "dir", dir_name(dir));
  if (channel >= 0) {
    lab_int(&s, "channel", channel);
    lab_int(&s, "peer", peer);
  }
  if (wait_k >= 0) lab(&s, "wait", nt_wait_name(nt_dir_wait(dir, wait_k)));
  value(&s, v);
}

static double channel_value(const nt_model_process *p, const nt_channel_row *c, int fam, int k) {
  double sps, bps;
  switch (fam) {
  case CH_WAIT: return (double)c->wait_ns[k] / 1e9;
  case CH_STEPS: return (double)c->steps;
  case CH_BYTES: return (double)c->bytes;
  default: nt_model_channel_rates(p, c, &sps, &bps); return fam == CH_STEPS_RATE ? sps : bps;
  }
}

static void channel_families(FILE *f, const nt_model_rank *ranks, uint32_t n, bool per_channel) {
  for (int fam = 0; fam < CH_FAMILIES; fam++) {
    family(f, ch_fam[fam].name, ch_fam[fam].type, ch_fam[fam].help);
    int nk = fam == CH_WAIT ? 3 : 1;
    for (uint32_t i = 0; i < n; i++) {
      const nt_model_process *p = ranks[i].proc;
      const nt_snapshot *sn = p->cur;
      for (int dir = 0; dir < 2; dir++) {
        for (int k = 0; k < nk; k++) {
          double sum = 0;
          bool any = false;
          for (uint32_t c = 0; c < sn->nchannels; c++) {
            const nt_channel_row *row = &sn->channels[c];
            if (row->comm_index != ranks[i].comm_index || row->dir != dir) continue;
            double v = channel_value(p, row, fam, k);
            if (per_channel)
              channel_sample(f, fam, &ranks[i], dir, row->channel, row->peer,
                             fam == CH_WAIT ? k : -1, v);
            sum += v;
            any = true;
          }
          if (any && !per_channel)
            channel_sample(f, fam, &ranks[i], dir, -1, -1, fam == CH_WAIT ? k : -1, sum);
        }
      }
    }
  }
}

static void rank_gauges(FILE *f, const nt_model_rank *ranks, uint32_t n, uint32_t stall_ms,
                        double now_s) {
  family(f, "nccltop_channels_stalled", "gauge",
         "Channels with running operations whose step has not moved for --stall-ms.");
  for (uint32_t i = 0; i < n; i++) {
    const nt_snapshot *sn = ranks[i].proc->cur;
    uint32_t stalled = 0;
    for (uint32_t c = 0; c < sn->nchannels; c++)
      if (sn->channels[c].comm_index == ranks[i].comm_index)
        stalled += nt_model_channel_stalled(&sn->channels[c], stall_ms);
    sample s = open_sample(f, "nccltop_channels_stalled");
    rank_labels(&s, &ranks[i]);
    value(&s, stalled);
  }
  family(f, "nccltop_operations_in_flight", "gauge",
         "Operations in flight (the plugin's recent-operation log).");
  for (uint32_t i = 0; i < n; i++) {
    const nt_snapshot *sn = ranks[i].proc->cur;
    uint32_t fl = 0;
    for (uint32_t k = 0; k < sn->noplog; k++)
      fl +=
          sn->oplog[k].comm_index == ranks[i].comm_index && sn->oplog[k].state == NT_OPS_IN_FLIGHT;
    sample s = open_sample(f, "nccltop_operations_in_flight");
    rank_labels(&s, &ranks[i]);
    value(&s, fl);
  }
  family(f, "nccltop_operation_oldest_in_flight_seconds", "gauge",
         "Age of the oldest operation in flight, 0 when none is.");
  for (uint32_t i = 0; i < n; i++) {
    const nt_model_process *p = ranks[i].proc;
    const nt_snapshot *sn = p->cur;
    double since = p->ended || now_s < p->cur_time_s ? 0 : now_s - p->cur_time_s, oldest = 0;
    for (uint32_t k = 0; k < sn->noplog; k++) {
      const nt_oplog_row *op = &sn->oplog[k];
      if (op->comm_index != ranks[i].comm_index || op->state != NT_OPS_IN_FLIGHT) continue;
      double age = (double)op->age_ns / 1e9 + since;
      if (age > oldest) oldest = age;
    }
    sample s = open_sample(f, "nccltop_operation_oldest_in_flight_seconds");
    rank_labels(&s, &ranks[i]);
    value(&s, oldest);
  }
  static const char *const seq_names[2] = {"nccltop_rank_operations_launched_total",
                                           "nccltop_rank_operations_done_total"};
  static const char *const seq_help[2] = {
      "Operations the rank launched, per function (NCCL's sequence numbers).",
      "Operations of the rank done, per function."};
  for (int w = 0; w < 2; w++) {
    family(f, seq_names[w], "counter", seq_help[w]);
    for (uint32_t i = 0; i < n; i++) {
      const nt_snapshot *sn = ranks[i].proc->cur;
      for (uint32_t k = 0; k < sn->nseq; k++) {
        const nt_seq_row *q = &sn->seq_rows[k];
        if (q->comm_index != ranks[i].comm_index) continue;
        sample s = open_sample(f, seq_names[w]);
        rank_labels(&s, &ranks[i]);
        lab(&s, "collective", nt_func_name(q->func));
        value(&s, (double)(w ? q->done : q->launched));
      }
    }
  }
}

/* ---- operations per communicator ---- */

/* The NCCL Inspector's message_size label ("4-5KB": the size's leading
 * number in its 1024-unit, and that number plus one) of a bucket's lower
 * bound, 2^bucket bytes: for power-of-two messages, what the Inspector
 * would write. */
static void inspector_size(int bucket, char *buf, size_t cap) {
  static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = ldexp(1.0, bucket);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  double lo = floor(v) < 1 ? 1 : floor(v);
  snprintf(buf, cap, "%.0f-%.0f%s", lo, lo + 1, units[u]);
}

static int32_t nnodes_of(uint64_t hash, const nt_model_rank *ranks, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (ranks[i].comm_hash == hash) return ranks[i].nnodes;
  return 0;
}

/* The host of every rank of the communicator here, "" when they are on
 * several (the Inspector's `node`, left out then). */
static const char *node_of(uint64_t hash, const nt_model_rank *ranks, uint32_t n) {
  const char *host = "";
  for (uint32_t i = 0; i < n; i++) {
    if (ranks[i].comm_hash != hash) continue;
    if (!host[0])
      host = ranks[i].proc->host;
    else if (strcmp(host, ranks[i].proc->host) != 0)
      return "";
  }
  return host;
}

static void inspector_labels(sample *s, const nt_op_stat *r, int32_t nnodes, const char *node) {
  char hex[17], size[32];
  if (node[0]) lab(s, "node", node);
  lab(s, "comm_hash", hex16(r->comm_hash, hex));
  lab(s, "comm_name", r->comm_name[0] ? r->comm_name : "unknown");
  lab_count(s, "n_nodes", nnodes);
  lab_count(s, "nranks", r->nranks);
  inspector_size(r->bucket, size, sizeof size);
  if (r->kind == NT_OP_P2P) {
    lab(s, "p2p_operation", nt_func_name(r->func));
    lab(s, "message_size", size);
  } else {
    char ap[NT_MAX_VARIANT + 16], lb[NT_MAX_VARIANT + 8];
    const char *algo = nt_algo_label(r->algo, r->variant, false, lb, sizeof lb);
    if (r->variant[0]) /* a symmetric kernel: NCCL names no protocol */
      snprintf(ap, sizeof ap, "%s", algo);
    else
      snprintf(ap, sizeof ap, "%s_%s", algo, nt_proto_name(r->proto));
    lab(s, "collective", nt_func_name(r->func));
    lab(s, "message_size", size);
    lab(s, "algo_proto", ap);
  }
}

static void op_labels(sample *s, const nt_op_stat *r) {
  char hex[17], size[32];
  lab(s, "comm_hash", hex16(r->comm_hash, hex));
  lab(s, "comm_name", r->comm_name);
  lab_count(s, "nranks", r->nranks);
  lab(s, "kind", r->kind == NT_OP_P2P ? "p2p" : "coll");
  lab(s, "collective", nt_func_name(r->func));
  char lb[NT_MAX_VARIANT + 8];
  lab(s, "algo", nt_algo_label(r->algo, r->variant, false, lb, sizeof lb));
  lab(s, "proto", nt_proto_name(r->proto));
  lab(s, "message_size", nt_fmt_bucket(r->bucket, size, sizeof size));
}

static void op_families(FILE *f, const nt_model *m, const nt_model_rank *ranks, uint32_t n,
                        bool inspector) {
  nt_op_stat *st = calloc(MAX_STATS, sizeof *st);
  uint32_t ns = st ? nt_model_op_stats(m, st, MAX_STATS) : 0;
  static const struct {
    const char *name, *help;
    bool p2p, bw;
  } insp[4] = {
      {"nccl_bus_bandwidth_gbs",
       "NCCL Inspector name: mean bus bandwidth (GB/s) of the done collectives since the run "
       "started, over the communicator's ranks this exporter sees.",
       false, true},
      {"nccl_collective_exec_time_microseconds",
       "NCCL Inspector name: mean duration (microseconds) of the done collectives.", false, false},
      {"nccl_p2p_bus_bandwidth_gbs", "NCCL Inspector name: mean bus bandwidth (GB/s) of send/recv.",
       true, true},
      {"nccl_p2p_exec_time_microseconds",
       "NCCL Inspector name: mean duration (microseconds) of send/recv.", true, false},
  };
  for (int k = 0; inspector && k < 4; k++) {
    family(f, insp[k].name, "gauge", insp[k].help);
    for (uint32_t i = 0; i < ns; i++) {
      const nt_op_stat *r = &st[i];
      if (!r->done || (r->kind == NT_OP_P2P) != insp[k].p2p) continue; /* untimed: unknown */
      double v =
          insp[k].bw ? nt_stat_algbw(r->bus_bytes, r->time_s) : r->time_s * 1e6 / (double)r->done;
      if (isnan(v)) continue; /* no rank count (NCCL 2.26): unknown, no sample */
      sample s = open_sample(f, insp[k].name);
      inspector_labels(&s, r, nnodes_of(r->comm_hash, ranks, n), node_of(r->comm_hash, ranks, n));
      value(&s, v);
    }
  }
  static const struct {
    const char *name, *help;
  } ops[5] = {
      {"nccltop_operations_total", "Operations enqueued in the current run, over the ranks here."},
      {"nccltop_operations_done_total", "Operations done (with a duration)."},
      {"nccltop_operation_bytes_total", "Bytes of the operations (count x datatype size)."},
      {"nccltop_operation_seconds_total", "Summed durations of the done operations."},
      {"nccltop_operation_bus_bytes_total",
       "Bus bytes of the done operations (nccl-tests' bus factor): rate over "
       "nccltop_operation_seconds_total's rate is the bus bandwidth."},
  };
  for (int k = 0; k < 5; k++) {
    family(f, ops[k].name, "counter", ops[k].help);
    for (uint32_t i = 0; i < ns; i++) {
      const nt_op_stat *r = &st[i];
      double v = k == 0   ? (double)r->count
                 : k == 1 ? (double)r->done
                 : k == 2 ? (double)r->bytes
                 : k == 3 ? r->time_s
                          : r->bus_bytes;
      if (isnan(v)) continue; /* bus bytes without a rank count: unknown, not a NaN counter */
      sample s = open_sample(f, ops[k].name);
      op_labels(&s, r);
      value(&s, v);
    }
  }
  /* NCCL's own prediction (nt_model_op_model): rows it does not cover have
   * no sample (unknown, never 0) */
  static const struct {
    const char *name, *help;
  } model[2] = {
      {"nccltop_operation_model_seconds",
       "NCCL's own predicted time of one operation of the row's mean size, algorithm and "
       "protocol (its tuning model on the communicator's topology)."},
      {"nccltop_operation_model_ratio",
       "Measured performance as a share of NCCL's prediction: predicted over measured mean "
       "time (0.58 is 58% of model)."},
  };
  nt_op_model *pred = ns ? calloc(ns, sizeof *pred) : NULL;
  for (uint32_t i = 0; pred && i < ns; i++) nt_model_op_model(m, &st[i], &pred[i]);
  for (int k = 0; pred && k < 2; k++) {
    family(f, model[k].name, "gauge", model[k].help);
    for (uint32_t i = 0; i < ns; i++) {
      if (!pred[i].known || (k == 1 && pred[i].ratio < 0)) continue;
      sample s = open_sample(f, model[k].name);
      op_labels(&s, &st[i]);
      value(&s, k == 0 ? pred[i].time_us * 1e-6 : pred[i].ratio);
    }
  }
  free(pred);
  free(st);
}

/* ---- diagnosis ---- */

static void alert_labels(sample *s, const nt_alert *a) {
  char hex[17];
  lab(s, "host", a->proc ? a->proc->host : "");
  lab_int(s, "pid", a->proc ? a->proc->pid : 0);
  lab(s, "comm_hash", hex16(a->comm_hash, hex));
  lab_int(s, "rank", a->rank);
}

static void alert_families(FILE *f, const nt_model *m, nt_diag *d, uint32_t stall_ms,
                           double now_s) {
  nt_alert *al = calloc(MAX_ALERTS, sizeof *al);
  /* Per rank: a node's late ranks keep a series each. */
  uint32_t na = al ? nt_diag_alerts_per_rank(d, m, stall_ms, al, MAX_ALERTS, now_s) : 0;
  family(f, "nccltop_alerts", "gauge",
         "Alerts now, by kind (root, stall, hung_op, straggler, silent, drops, slow).");
  for (int k = 0; k < NT_ALERT_COUNT; k++) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < na; i++) c += al[i].kind == k;
    sample s = open_sample(f, "nccltop_alerts");
    lab(&s, "kind", nt_alert_kind_name(k));
    value(&s, c);
  }
  static const struct {
    const char *name, *help;
    int kind, what; /* 0 rank, 1 count, 2 age */
  } fams[5] = {
      {"nccltop_stall_root_rank", "The rank where the waits of stalled ranks end (a stall's root).",
       NT_ALERT_ROOT, 0},
      {"nccltop_stall_root_waiting_ranks", "Ranks waiting, directly or not, on the stall's root.",
       NT_ALERT_ROOT, 1},
      {"nccltop_stall_root_seconds", "How long the stall's root has been one.", NT_ALERT_ROOT, 2},
      {"nccltop_straggler_operations_behind",
       "Operations a straggler rank launched fewer than the others.", NT_ALERT_STRAGGLER, 1},
      {"nccltop_straggler_lag_seconds", "How long the straggler has been behind.",
       NT_ALERT_STRAGGLER, 2},
  };
  for (int k = 0; k < 5; k++) {
    family(f, fams[k].name, "gauge", fams[k].help);
    for (uint32_t i = 0; i < na; i++) {
      const nt_alert *a = &al[i];
      if (a->kind != fams[k].kind || !a->proc) continue;
      sample s = open_sample(f, fams[k].name);
      alert_labels(&s, a);
      if (a->kind == NT_ALERT_ROOT)
        lab(&s, "wait", nt_wait_name(a->wait));
      else
        lab(&s, "collective", nt_func_name(a->func));
      value(&s, fams[k].what == 0 ? a->rank : fams[k].what == 1 ? a->count : a->age_s);
    }
  }
  free(al);
}

int nt_exporter_render(FILE *f, const nt_model *m, nt_diag *d, const nt_exporter_opts *o,
                       double now_s) {
  nt_model_rank *ranks = calloc(MAX_RANKS, sizeof *ranks);
  uint32_t n = ranks ? nt_model_ranks(m, ranks, MAX_RANKS) : 0;
  job_families(f, m);
  process_families(f, m);
  proxy_family(f, m, ranks, n);
  channel_families(f, ranks, n, o->per_channel);
  rank_gauges(f, ranks, n, o->stall_ms, now_s);
  op_families(f, m, ranks, n, o->inspector);
  alert_families(f, m, d, o->stall_ms, now_s);
  free(ranks);
  family(f, "nccltop_exporter_renders_total", "counter", "Expositions the exporter rendered.");
  sample s = open_sample(f, "nccltop_exporter_renders_total");
  value(&s, (double)o->renders);
  family(f, "nccltop_exporter_render_seconds", "gauge", "How long the last rendering took.");
  s = open_sample(f, "nccltop_exporter_render_seconds");
  value(&s, o->render_seconds);
  return ferror(f) ? -1 : 0;
}

/* One Prometheus exposition (text format 0.0.4) of a frame (frame.h): the
 * numbers the screen and `nccltop -b --json` show, read from the same
 * frame, never from the model (rates, stalled channels, operations in
 * flight and their ages, statistics with NCCL's prediction, alerts), in
 * base units (seconds, bytes). The one difference is asked for when the
 * frame is built (nt_exporter_frame_opts): the alerts are per rank, a
 * node's late ranks a series each.
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
static void rank_labels(sample *s, const nt_frame *fr, const nt_frame_rank *r) {
  char hex[17];
  const nt_frame_proc *p = nt_frame_proc_of(fr, r);
  lab(s, "host", p->host);
  lab_int(s, "pid", p->pid);
  lab_int(s, "rank", r->rank);
  lab(s, "comm_hash", hex16(r->comm_hash, hex));
  lab(s, "comm_name", r->comm_name);
}

static void proc_labels(sample *s, const nt_frame_proc *p) {
  lab(s, "host", p->host);
  lab_int(s, "pid", p->pid);
}

static const char *dir_name(int dir) {
  return dir == NT_DIR_RECV ? "recv" : "send";
}

/* ---- the job and the viewer ---- */

static void job_families(FILE *f, const nt_frame *fr) {
  uint32_t stale = fr->publishers_stale, ended = fr->publishers_ended;
  uint32_t live = fr->publishers - stale - ended;
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
  value(&s, (double)fr->messages);
  family(f, "nccltop_bad_messages_total", "counter", "Messages that failed to decode.");
  s = open_sample(f, "nccltop_bad_messages_total");
  value(&s, (double)fr->bad_messages);
  family(f, "nccltop_refused_messages_total", "counter",
         "Messages refused (a publisher over its limits), by reason.");
  for (int i = 0; i < NT_REFUSE_COUNT; i++) {
    s = open_sample(f, "nccltop_refused_messages_total");
    lab(&s, "reason", nt_refusal_name(i));
    value(&s, (double)fr->refused_by[i]);
  }
  family(f, "nccltop_model_bytes", "gauge", "Bytes the exporter's model holds (--max-memory).");
  s = open_sample(f, "nccltop_model_bytes");
  value(&s, (double)fr->memory_bytes);
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

/* The frame's processes are those with a snapshot, as these families
 * always counted. */
static void process_families(FILE *f, const nt_frame *fr) {
  family(f, "nccltop_publisher_info", "gauge",
         "1 per publishing process, with its NCCL and plugin versions and profiler ABI.");
  for (uint32_t i = 0; i < fr->nprocs; i++) {
    const nt_frame_proc *p = &fr->procs[i];
    sample s = open_sample(f, "nccltop_publisher_info");
    proc_labels(&s, p);
    lab(&s, "nccl_version", p->nccl_version); /* "" before its hello */
    lab(&s, "plugin_version", p->plugin_version);
    lab(&s, "clock", p->clock);
    lab_int(&s, "abi", p->counters.abi_version);
    lab(&s, "state", p->ended ? "ended" : p->stale ? "stale" : "live");
    value(&s, 1);
  }
  family(f, "nccltop_lost_messages_total", "counter",
         "Snapshots of a publisher that never arrived (gaps in its sequence numbers).");
  for (uint32_t i = 0; i < fr->nprocs; i++) {
    sample s = open_sample(f, "nccltop_lost_messages_total");
    proc_labels(&s, &fr->procs[i]);
    value(&s, (double)fr->procs[i].lost_messages);
  }
  for (size_t k = 0; k < sizeof plugin_counters / sizeof plugin_counters[0]; k++) {
    const counter_def *d = &plugin_counters[k];
    family(f, d->name, "counter", d->help);
    for (uint32_t i = 0; i < fr->nprocs; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&fr->procs[i].counters + d->offset, sizeof v);
      sample s = open_sample(f, d->name);
      proc_labels(&s, &fr->procs[i]);
      value(&s, (double)v);
    }
  }
}

/* ---- per rank ---- */

static void proxy_sample(FILE *f, const nt_frame *fr, const nt_frame_proxy *x, int k) {
  sample s = open_sample(f, "nccltop_proxy_state_seconds_total");
  if (x->rank >= 0) {
    rank_labels(&s, fr, &fr->ranks[x->rank]);
  } else {
    proc_labels(&s, &fr->procs[x->proc]);
    lab(&s, "rank", "");
    lab(&s, "comm_hash", "");
    lab(&s, "comm_name", "");
  }
  lab_int(&s, "tid", x->row.tid);
  lab(&s, "state", nt_proxy_state_name(k));
  value(&s, (double)x->row.state_ns[k] / 1e9);
}

static void proxy_family(FILE *f, const nt_frame *fr) {
  family(f, "nccltop_proxy_state_seconds_total", "counter",
         "Time NCCL's proxy progress thread spent in each state (idle, active, sleep, wakeup, "
         "append); threads of no communicator have empty rank labels.");
  for (uint32_t i = 0; i < fr->nranks; i++) {
    const nt_frame_rank *r = &fr->ranks[i];
    for (uint32_t t = r->proxy0; t < r->proxy0 + r->nproxy; t++)
      for (int k = 0; k < NT_PROXY_NSTATES; k++) proxy_sample(f, fr, &fr->proxy[t], k);
  }
  for (uint32_t i = 0; i < fr->nprocs; i++) {
    const nt_frame_proc *p = &fr->procs[i];
    if (p->replaced) continue; /* an earlier run's: its ranks are not shown either */
    for (uint32_t t = p->proxy0; t < p->proxy0 + p->nproxy; t++)
      for (int k = 0; k < NT_PROXY_NSTATES; k++) proxy_sample(f, fr, &fr->proxy[t], k);
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

static void channel_sample(FILE *f, int fam, const nt_frame *fr, const nt_frame_rank *r, int dir,
                           int channel, int peer, int wait_k, double v) {
  sample s = open_sample(f, ch_fam[fam].name);
  rank_labels(&s, fr, r);
  lab(&s, "dir", dir_name(dir));
  if (channel >= 0) {
    lab_int(&s, "channel", channel);
    lab_int(&s, "peer", peer);
  }
  if (wait_k >= 0) lab(&s, "wait", nt_wait_name(nt_dir_wait(dir, wait_k)));
  value(&s, v);
}

/* The frame's numbers: the rates are the ones the screen and the JSON show. */
static double channel_value(const nt_frame_channel *c, int fam, int k) {
  switch (fam) {
  case CH_WAIT: return (double)c->row.wait_ns[k] / 1e9;
  case CH_STEPS: return (double)c->row.steps;
  case CH_BYTES: return (double)c->row.bytes;
  case CH_STEPS_RATE: return c->steps_per_s;
  default: return c->bytes_per_s;
  }
}

static void channel_families(FILE *f, const nt_frame *fr, bool per_channel) {
  for (int fam = 0; fam < CH_FAMILIES; fam++) {
    family(f, ch_fam[fam].name, ch_fam[fam].type, ch_fam[fam].help);
    int nk = fam == CH_WAIT ? 3 : 1;
    for (uint32_t i = 0; i < fr->nranks; i++) {
      const nt_frame_rank *r = &fr->ranks[i];
      for (int dir = 0; dir < 2; dir++) {
        for (int k = 0; k < nk; k++) {
          double sum = 0;
          bool any = false;
          for (uint32_t c = r->chan0; c < r->chan0 + r->nchan; c++) {
            const nt_frame_channel *ch = &fr->channels[c];
            if (ch->row.dir != dir) continue;
            double v = channel_value(ch, fam, k);
            if (per_channel)
              channel_sample(f, fam, fr, r, dir, ch->row.channel, ch->row.peer,
                             fam == CH_WAIT ? k : -1, v);
            sum += v;
            any = true;
          }
          if (any && !per_channel)
            channel_sample(f, fam, fr, r, dir, -1, -1, fam == CH_WAIT ? k : -1, sum);
        }
      }
    }
  }
}

/* The frame's verdicts per rank: its stalled channels (the screen's count),
 * its operations in flight and their ages, its launch counts. */
static void rank_gauges(FILE *f, const nt_frame *fr) {
  family(f, "nccltop_channels_stalled", "gauge",
         "Channels with running operations whose step has not moved for --stall-ms.");
  for (uint32_t i = 0; i < fr->nranks; i++) {
    sample s = open_sample(f, "nccltop_channels_stalled");
    rank_labels(&s, fr, &fr->ranks[i]);
    value(&s, fr->ranks[i].stalled);
  }
  family(f, "nccltop_operations_in_flight", "gauge",
         "Operations in flight (the plugin's recent-operation log).");
  for (uint32_t i = 0; i < fr->nranks; i++) {
    sample s = open_sample(f, "nccltop_operations_in_flight");
    rank_labels(&s, fr, &fr->ranks[i]);
    value(&s, fr->ranks[i].nops);
  }
  family(f, "nccltop_operation_oldest_in_flight_seconds", "gauge",
         "Age of the oldest operation in flight, 0 when none is.");
  for (uint32_t i = 0; i < fr->nranks; i++) {
    const nt_frame_rank *r = &fr->ranks[i];
    double oldest = 0;
    for (uint32_t k = r->op0; k < r->op0 + r->nops; k++)
      if (fr->ops[k].age_s > oldest) oldest = fr->ops[k].age_s;
    sample s = open_sample(f, "nccltop_operation_oldest_in_flight_seconds");
    rank_labels(&s, fr, r);
    value(&s, oldest);
  }
  static const char *const seq_names[2] = {"nccltop_rank_operations_launched_total",
                                           "nccltop_rank_operations_done_total"};
  static const char *const seq_help[2] = {
      "Operations the rank launched, per function (NCCL's sequence numbers).",
      "Operations of the rank done, per function."};
  for (int w = 0; w < 2; w++) {
    family(f, seq_names[w], "counter", seq_help[w]);
    for (uint32_t i = 0; i < fr->nranks; i++) {
      const nt_frame_rank *r = &fr->ranks[i];
      for (uint32_t k = r->seq0; k < r->seq0 + r->nseq; k++) {
        const nt_seq_row *q = &fr->seq[k].row;
        sample s = open_sample(f, seq_names[w]);
        rank_labels(&s, fr, r);
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

static int32_t nnodes_of(uint64_t hash, const nt_frame *fr) {
  for (uint32_t i = 0; i < fr->nranks; i++)
    if (fr->ranks[i].comm_hash == hash) return fr->ranks[i].nnodes;
  return 0;
}

/* The host of every rank of the communicator here, "" when they are on
 * several (the Inspector's `node`, left out then). */
static const char *node_of(uint64_t hash, const nt_frame *fr) {
  const char *host = "";
  for (uint32_t i = 0; i < fr->nranks; i++) {
    if (fr->ranks[i].comm_hash != hash) continue;
    const char *h = nt_frame_proc_of(fr, &fr->ranks[i])->host;
    if (!host[0])
      host = h;
    else if (strcmp(host, h) != 0)
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

static void op_families(FILE *f, const nt_frame *fr, bool inspector) {
  uint32_t ns = fr->nstats;
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
      const nt_op_stat *r = &fr->stats[i].st;
      if (!r->done || (r->kind == NT_OP_P2P) != insp[k].p2p) continue; /* untimed: unknown */
      double v =
          insp[k].bw ? nt_stat_algbw(r->bus_bytes, r->time_s) : r->time_s * 1e6 / (double)r->done;
      if (isnan(v)) continue; /* no rank count (NCCL 2.26): unknown, no sample */
      sample s = open_sample(f, insp[k].name);
      inspector_labels(&s, r, nnodes_of(r->comm_hash, fr), node_of(r->comm_hash, fr));
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
      const nt_op_stat *r = &fr->stats[i].st;
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
  /* NCCL's own prediction (the frame's, nt_model_op_model): rows it does
   * not cover have no sample (unknown, never 0) */
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
  for (int k = 0; k < 2; k++) {
    family(f, model[k].name, "gauge", model[k].help);
    for (uint32_t i = 0; i < ns; i++) {
      const nt_op_model *pred = &fr->stats[i].model;
      if (!pred->known || (k == 1 && pred->ratio < 0)) continue;
      sample s = open_sample(f, model[k].name);
      op_labels(&s, &fr->stats[i].st);
      value(&s, k == 0 ? pred->time_us * 1e-6 : pred->ratio);
    }
  }
}

/* ---- diagnosis ---- */

static void alert_labels(sample *s, const nt_frame_alert *a) {
  char hex[17];
  lab(s, "host", a->has_proc ? a->host : "");
  lab_int(s, "pid", a->has_proc ? a->pid : 0);
  lab(s, "comm_hash", hex16(a->comm_hash, hex));
  lab_int(s, "rank", a->rank);
}

/* The frame's alerts, built per rank (nt_exporter_frame_opts): a node's late
 * ranks keep a series each. */
static void alert_families(FILE *f, const nt_frame *fr) {
  const nt_frame_alert *al = fr->alerts;
  uint32_t na = fr->nalerts;
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
      const nt_frame_alert *a = &al[i];
      if (a->kind != fams[k].kind || !a->has_proc) continue;
      sample s = open_sample(f, fams[k].name);
      alert_labels(&s, a);
      if (a->kind == NT_ALERT_ROOT)
        lab(&s, "wait", nt_wait_name(a->wait));
      else
        lab(&s, "collective", nt_func_name(a->func));
      value(&s, fams[k].what == 0 ? a->rank : fams[k].what == 1 ? a->count : a->age_s);
    }
  }
}

nt_frame_opts nt_exporter_frame_opts(const nt_exporter_opts *o) {
  return (nt_frame_opts){.stall_ms = o->stall_ms, .alerts_per_rank = true};
}

int nt_exporter_render(FILE *f, const nt_frame *fr, const nt_exporter_opts *o) {
  job_families(f, fr);
  process_families(f, fr);
  proxy_family(f, fr);
  channel_families(f, fr, o->per_channel);
  rank_gauges(f, fr);
  op_families(f, fr, o->inspector);
  alert_families(f, fr);
  family(f, "nccltop_exporter_renders_total", "counter", "Expositions the exporter rendered.");
  sample s = open_sample(f, "nccltop_exporter_renders_total");
  value(&s, (double)o->renders);
  family(f, "nccltop_exporter_render_seconds", "gauge", "How long the last rendering took.");
  s = open_sample(f, "nccltop_exporter_render_seconds");
  value(&s, o->render_seconds);
  return ferror(f) ? -1 : 0;
}

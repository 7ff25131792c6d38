/* A fully populated snapshot for the binary snapshot tests (through
 * proto_fixture.h): every field distinct and using all 64 bits, every enum
 * value and each edge of a range used at least once, and a field-by-field
 * comparison. */
#ifndef NCCLTOP_PROTO_SAMPLE_H
#define NCCLTOP_PROTO_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

/* ---------------------------------------------------------------------- */
/* A fully populated snapshot                                              */

/* Distinct values that use all 64 bits, so a field written at the wrong
 * place, truncated or swapped shows. */
static inline uint64_t next_value(void) {
  static uint64_t k;
  k++;
  return 0x8070605040302010ull ^ (k * 0x9E3779B97F4A7C15ull);
}

static inline void sample_1_0(nt_snapshot *s) {
  s->seq = 0x0102030405060708ull;
  s->pid = 4242;
  s->interval_ms = 100;
  s->mono_ns = next_value();
  s->wall_ns = next_value();
  s->final = 1;
  /* Kept as received: the viewer escapes it before display. */
  snprintf(s->host, sizeof s->host, "gpu-node-17\x1b[31m\xc3\xa9");
  nt_process_counters *p = &s->process;
  p->events = next_value();
  p->dropped_events = next_value();
  p->unknown_events = next_value();
  p->foreign_ops = next_value();
  p->reclaimed_ops = next_value();
  p->dropped_rows = next_value();
  p->unsent_messages = next_value();
  p->event_mask = 0xdeadbeef;
  p->abi_version = 5;
  s->ncomms = 3;
  for (uint32_t i = 0; i < s->ncomms; i++) {
    nt_comm_row *r = &s->comms[i];
    r->comm_hash = next_value();
    r->rank = (int32_t)next_value();
    r->nranks = (int32_t)next_value();
    r->nnodes = (int32_t)next_value();
    r->colls_enqueued = next_value();
    r->p2ps_enqueued = next_value();
  }
  s->nproxy = 4;
  for (uint32_t i = 0; i < s->nproxy; i++) {
    nt_proxy_row *r = &s->proxy[i];
    r->comm_index = i == 3 ? NT_NO_COMM : (uint16_t)i;
    r->tid = (uint32_t)next_value();
    r->state = i == 2 ? NT_PROXY_UNKNOWN : (uint8_t)(NT_PROXY_APPEND - i);
    r->state_age_ns = next_value();
    for (int k = 0; k < NT_PROXY_NSTATES; k++) r->state_ns[k] = next_value();
    r->appends = next_value();
    r->appended_ops = next_value();
    r->wakeups = next_value();
  }
  s->nchannels = 6;
  for (uint32_t i = 0; i < s->nchannels; i++) {
    nt_channel_row *r = &s->channels[i];
    r->comm_index = (uint16_t)(i % s->ncomms);
    r->channel = (uint8_t)(31 - i);
    r->dir = i % 2 ? NT_DIR_RECV : NT_DIR_SEND;
    r->peer = i == 0 ? -1 : (int32_t)next_value();
    for (int k = 0; k < 3; k++) r->wait_ns[k] = next_value();
    r->steps = next_value();
    r->bytes = i == 1 ? UINT64_MAX : next_value();
    r->ops_started = next_value() | 1ull << 63;
    r->ops_done = r->ops_started - i;
    r->cur_step = i == 2 ? -1 : (int32_t)(next_value() & 0x7fffffff);
    r->cur_wait = i == 2 ? NT_WAIT_NONE : (uint8_t)nt_dir_wait(r->dir, (int)i % 3);
    r->cur_wait_age_ns = next_value();
    r->progress_age_ns = i == 2 ? UINT64_MAX : next_value();
    r->run_state = i == 0 ? NT_RUN_IDLE : i % 2 ? NT_RUN_RUNNING : NT_RUN_QUEUED;
    r->relay_rank = i == 3 ? INT32_MAX : i == 4 ? 5 : -1;
  }
  s->nkernels = 3;
  for (uint32_t i = 0; i < s->nkernels; i++) {
    nt_kernel_row *r = &s->kernels[i];
    r->comm_index = (uint16_t)(2 - i);
    r->channel = (uint8_t)(i + 7);
    r->count = next_value();
    r->busy_ns = next_value();
    r->last_ns = next_value();
    for (int k = 0; k < NT_KPHASE_COUNT; k++) r->phase_ns[k] = i == 1 ? 0 : next_value();
  }
}

/* The 1.1 fields and tables, every enum value and each edge of a range
 * used at least once. */
static inline void sample_1_1(nt_snapshot *s) {
  nt_process_counters *p = &s->process;
  p->dropped_ops = next_value();
  p->late_children = next_value();
  p->net_events = next_value();
  p->phase = NT_MAX_PHASES;
  for (uint32_t i = 0; i < s->ncomms; i++) {
    nt_comm_row *r = &s->comms[i];
    r->group_api = next_value();
    r->coll_api = next_value();
    r->p2p_api = next_value();
    r->kernel_launches = next_value();
    r->graph_captured = next_value();
    r->api_ns = next_value();
  }
  s->nops = NT_FUNC_COUNT;
  for (uint32_t i = 0; i < s->nops; i++) {
    nt_op_row *r = &s->ops[i];
    r->comm_index = (uint16_t)(i % s->ncomms);
    r->func = (uint8_t)i;
    r->kind = i >= NT_FUNC_SEND && i <= NT_FUNC_SENDRECV ? NT_OP_P2P : NT_OP_COLL;
    r->algo = (uint8_t)(i % NT_ALGO_COUNT);
    r->proto = (uint8_t)(i % NT_PR_COUNT);
    r->bucket = i == 0 ? 63 : (uint8_t)(i * 5);
    r->phase = i == 1 ? NT_MAX_PHASES : (uint8_t)(i % 3);
    r->count = next_value() | 1ull << 63;
    r->bytes = next_value();
    r->done = r->count - i * 1000;
    r->done_bytes = next_value();
    r->time_ns = next_value();
    r->gpu_done = i == 2 ? r->done : r->done / 3;
    r->sync_ns = i == 3 ? 0 : next_value();
    r->compute_ns = i == 3 ? 0 : next_value();
  }
  static const char *const names[] = {"forward", "backward \x1b[1m\xc3\xa9",
                                      "0123456789abcdef0123456789abcde", ""};
  static const uint8_t ids[] = {1, 2, NT_MAX_PHASES, 7};
  s->nphases = 4;
  for (uint32_t i = 0; i < s->nphases; i++) {
    s->phases[i].id = ids[i];
    snprintf(s->phases[i].name, sizeof s->phases[i].name, "%s", names[i]);
    s->phases[i].source = i == 3 ? NT_PHASE_USER_TAG : NT_PHASE_NCCLTOP_TAG;
  }
  s->noplog = NT_DT_COUNT;
  for (uint32_t i = 0; i < s->noplog; i++) {
    nt_oplog_row *r = &s->oplog[i];
    r->comm_index = (uint16_t)(2 - i % s->ncomms);
    r->kind = i % 2 ? NT_OP_P2P : NT_OP_COLL;
    r->func = (uint8_t)((i * 7) % NT_FUNC_COUNT);
    r->algo = (uint8_t)((i * 5) % NT_ALGO_COUNT);
    r->proto = (uint8_t)((i * 3) % NT_PR_COUNT);
    r->dtype = (uint8_t)i;
    r->phase = i == 4 ? NT_MAX_PHASES : (uint8_t)(i % 4);
    r->state = (uint8_t)(i % NT_OPS_COUNT);
    r->timing = (uint8_t)((i / 3) % NT_TIMING_COUNT);
    r->nchannels = (uint8_t)(i * 19);
    r->nwarps = (uint8_t)(255 - i);
    r->root_peer = i == 3 ? -1 : (int32_t)next_value();
    r->seq = next_value();
    r->count = next_value();
    r->bytes = next_value();
    r->age_ns = next_value();
    r->duration_ns = next_value();
    r->children = (uint32_t)next_value();
    r->children_open = i == 5 ? r->children : r->children >> (i % 32);
    r->run_state = r->state != NT_OPS_IN_FLIGHT ? NT_RUN_IDLE
                   : i % 2                      ? NT_RUN_RUNNING
                                                : NT_RUN_QUEUED;
    r->flags = (uint8_t)(i % 4);
    r->progress_age_ns = i == 1 ? UINT64_MAX : next_value();
  }
  s->nseq = 5;
  for (uint32_t i = 0; i < s->nseq; i++) {
    nt_seq_row *r = &s->seq_rows[i];
    r->comm_index = (uint16_t)(i % s->ncomms);
    r->func = i == 4 ? NT_FUNC_COUNT - 1 : (uint8_t)i;
    r->launched = next_value();
    r->done = next_value();
    r->last_launch_age_ns = next_value();
  }
  s->nnet = 4;
  for (uint32_t i = 0; i < s->nnet; i++) {
    nt_net_row *r = &s->net[i];
    r->comm_index = i == 3 ? NT_NO_COMM : (uint16_t)i;
    r->type = i % 2 ? NT_NET_SOCKET : NT_NET_IB_QP;
    r->device = i % 2 ? -1 : (int32_t)next_value();
    r->id = (uint32_t)next_value();
    r->count = next_value();
    r->bytes = next_value();
    r->busy_ns = next_value();
    r->in_flight = next_value();
  }
}

/* The 1.4 table and fields: NCCL 2.31's symmetric kernel variants (names
 * as NCCL spells them; one the longest a name can be, one empty, one with
 * bytes a terminal would obey: kept as received, escaped before display),
 * ids at both edges, the variant of some collective ops and oplog rows
 * (those marked symmetric). After sample_1_1: its values stay the same. */
static const char *const sample_variant_names[] = {
    "AllReduce_AGxLL_R", "AllGather_ST", "ReduceScatter_LD \x1b[1m\xc3\xa9",
    "0123456789abcdef0123456789abcdef0123456789abcde", ""};
static const uint8_t sample_variant_ids[] = {1, 2, 9, NT_MAX_VARIANTS, 5};
#define SAMPLE_NVARIANTS (sizeof sample_variant_ids / sizeof sample_variant_ids[0])

static inline void sample_1_4(nt_snapshot *s) {
  s->nvariants = SAMPLE_NVARIANTS;
  for (uint32_t i = 0; i < s->nvariants; i++) {
    s->variants[i].id = sample_variant_ids[i];
    snprintf(s->variants[i].name, sizeof s->variants[i].name, "%s", sample_variant_names[i]);
  }
  for (uint32_t i = 0, k = 0; i < s->nops; i++) {
    nt_op_row *r = &s->ops[i];
    r->variant =
        r->kind == NT_OP_COLL && i % 2 == 0 ? sample_variant_ids[k++ % SAMPLE_NVARIANTS] : 0;
  }
  for (uint32_t i = 0, k = 3; i < s->noplog; i++) {
    nt_oplog_row *r = &s->oplog[i];
    r->variant =
        r->kind == NT_OP_COLL && i % 4 != 2 ? sample_variant_ids[k++ % SAMPLE_NVARIANTS] : 0;
    if (r->variant) r->flags |= NT_OPF_SYMMETRIC;
  }
}

static inline nt_snapshot *sample(void) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  sample_1_0(s);
  sample_1_1(s);
  sample_1_4(s);
  return s;
}

/* What a reader makes of the 1.4 fields of a 1.3 (or older) message: no
 * variant table, every operation's variant 0 (the flags stay as sent). */
static inline void drop_1_4(nt_snapshot *s) {
  for (uint32_t i = 0; i < s->nops; i++) s->ops[i].variant = 0;
  for (uint32_t i = 0; i < s->noplog; i++) s->oplog[i].variant = 0;
  s->nvariants = 0;
}

/* What a reader makes of the 1.3 fields of a 1.2 (or older) message. */
static inline void drop_1_3(nt_snapshot *s) {
  drop_1_4(s);
  for (uint32_t i = 0; i < s->nkernels; i++)
    for (int k = 0; k < NT_KPHASE_COUNT; k++) s->kernels[i].phase_ns[k] = 0;
  for (uint32_t i = 0; i < s->nops; i++) s->ops[i].sync_ns = s->ops[i].compute_ns = 0;
  for (uint32_t i = 0; i < s->nphases; i++) s->phases[i].source = NT_PHASE_NCCLTOP_TAG;
}

/* What a reader makes of the 1.2 fields of a 1.1 (or 1.0) message. */
static inline void drop_1_2(nt_snapshot *s) {
  drop_1_3(s);
  for (uint32_t i = 0; i < s->nchannels; i++) {
    s->channels[i].run_state = NT_RUN_UNKNOWN;
    s->channels[i].relay_rank = -1;
  }
  for (uint32_t i = 0; i < s->noplog; i++) {
    nt_oplog_row *r = &s->oplog[i];
    r->run_state = r->state == NT_OPS_DONE ? NT_RUN_IDLE : NT_RUN_UNKNOWN;
    r->flags = 0;
    r->progress_age_ns = UINT64_MAX;
  }
}

/* What a 1.0 message of s carries: s without its 1.1 fields and tables. */
static inline void drop_1_1(nt_snapshot *s) {
  drop_1_2(s);
  nt_process_counters *p = &s->process;
  p->dropped_ops = p->late_children = p->net_events = 0;
  p->phase = 0;
  for (uint32_t i = 0; i < s->ncomms; i++) {
    nt_comm_row *r = &s->comms[i];
    r->group_api = r->coll_api = r->p2p_api = r->kernel_launches = 0;
    r->graph_captured = r->api_ns = 0;
  }
  s->nops = s->nphases = s->noplog = s->nseq = s->nnet = 0;
}

/* Field-by-field comparison (structs have padding: no memcmp); names the
 * first difference. */
#define SAME(f)                                                                                    \
  if (a->f != b->f) {                                                                              \
    fprintf(stderr, "    %s differs (row %u)\n", #f, i);                                           \
    return false;                                                                                  \
  }

static inline bool same_snapshot_1_1(const nt_snapshot *x, const nt_snapshot *y) {
  uint32_t i = 0;
  {
    const nt_snapshot *a = x, *b = y;
    SAME(process.dropped_ops) SAME(process.late_children) SAME(process.net_events);
    SAME(process.phase) SAME(nops) SAME(nphases) SAME(noplog) SAME(nseq) SAME(nnet);
    SAME(nvariants);
  }
  for (i = 0; i < x->ncomms; i++) {
    const nt_comm_row *a = &x->comms[i], *b = &y->comms[i];
    SAME(group_api) SAME(coll_api) SAME(p2p_api) SAME(kernel_launches) SAME(graph_captured);
    SAME(api_ns);
  }
  for (i = 0; i < x->nops; i++) {
    const nt_op_row *a = &x->ops[i], *b = &y->ops[i];
    SAME(comm_index) SAME(kind) SAME(func) SAME(algo) SAME(proto) SAME(bucket) SAME(phase);
    SAME(count) SAME(bytes) SAME(done) SAME(done_bytes) SAME(time_ns) SAME(gpu_done);
    SAME(sync_ns) SAME(compute_ns) SAME(variant);
  }
  for (i = 0; i < x->nphases; i++) {
    const nt_phase_row *a = &x->phases[i], *b = &y->phases[i];
    SAME(id) SAME(source);
    if (strcmp(a->name, b->name) != 0) {
      fprintf(stderr, "    phase name differs (row %u)\n", i);
      return false;
    }
  }
  for (i = 0; i < x->noplog; i++) {
    const nt_oplog_row *a = &x->oplog[i], *b = &y->oplog[i];
    SAME(comm_index) SAME(kind) SAME(func) SAME(algo) SAME(proto) SAME(dtype) SAME(phase);
    SAME(state) SAME(timing) SAME(nchannels) SAME(nwarps) SAME(root_peer) SAME(seq);
    SAME(count) SAME(bytes) SAME(age_ns) SAME(duration_ns) SAME(children) SAME(children_open);
    SAME(run_state) SAME(flags) SAME(progress_age_ns) SAME(variant);
  }
  for (i = 0; i < x->nseq; i++) {
    const nt_seq_row *a = &x->seq_rows[i], *b = &y->seq_rows[i];
    SAME(comm_index) SAME(func) SAME(launched) SAME(done) SAME(last_launch_age_ns);
  }
  for (i = 0; i < x->nnet; i++) {
    const nt_net_row *a = &x->net[i], *b = &y->net[i];
    SAME(comm_index) SAME(type) SAME(device) SAME(id) SAME(count) SAME(bytes) SAME(busy_ns);
    SAME(in_flight);
  }
  for (i = 0; i < x->nvariants; i++) {
    const nt_variant_row *a = &x->variants[i], *b = &y->variants[i];
    SAME(id);
    if (strcmp(a->name, b->name) != 0) {
      fprintf(stderr, "    variant name differs (row %u)\n", i);
      return false;
    }
  }
  return true;
}

static inline bool same_snapshot(const nt_snapshot *x, const nt_snapshot *y) {
  uint32_t i = 0;
  {
    const nt_snapshot *a = x, *b = y;
    SAME(seq) SAME(pid) SAME(interval_ms) SAME(mono_ns) SAME(wall_ns) SAME(final);
    SAME(process.events) SAME(process.dropped_events) SAME(process.unknown_events);
    SAME(process.foreign_ops) SAME(process.reclaimed_ops) SAME(process.dropped_rows);
    SAME(process.unsent_messages) SAME(process.event_mask) SAME(process.abi_version);
    SAME(ncomms) SAME(nproxy) SAME(nchannels) SAME(nkernels);
    if (strcmp(a->host, b->host) != 0) {
      fprintf(stderr, "    host differs\n");
      return false;
    }
  }
  for (i = 0; i < x->ncomms; i++) {
    const nt_comm_row *a = &x->comms[i], *b = &y->comms[i];
    SAME(comm_hash) SAME(rank) SAME(nranks) SAME(nnodes) SAME(colls_enqueued);
    SAME(p2ps_enqueued);
  }
  for (i = 0; i < x->nproxy; i++) {
    const nt_proxy_row *a = &x->proxy[i], *b = &y->proxy[i];
    SAME(comm_index) SAME(tid) SAME(state) SAME(state_age_ns) SAME(appends);
    SAME(appended_ops) SAME(wakeups);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) SAME(state_ns[k]);
  }
  for (i = 0; i < x->nchannels; i++) {
    const nt_channel_row *a = &x->channels[i], *b = &y->channels[i];
    SAME(comm_index) SAME(channel) SAME(dir) SAME(peer) SAME(steps) SAME(bytes);
    SAME(ops_started) SAME(ops_done) SAME(cur_step) SAME(cur_wait) SAME(cur_wait_age_ns);
    SAME(progress_age_ns) SAME(run_state) SAME(relay_rank);
    for (int k = 0; k < 3; k++) SAME(wait_ns[k]);
  }
  for (i = 0; i < x->nkernels; i++) {
    const nt_kernel_row *a = &x->kernels[i], *b = &y->kernels[i];
    SAME(comm_index) SAME(channel) SAME(count) SAME(busy_ns) SAME(last_ns);
    for (int k = 0; k < NT_KPHASE_COUNT; k++) SAME(phase_ns[k]);
  }
  return same_snapshot_1_1(x, y);
}

#endif

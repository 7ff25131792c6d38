/* Shared by the binary snapshot tests (test_proto.c, test_proto_ops.c): the
 * sample snapshot (proto_sample.h), and a message writer that follows
 * PROTOCOL.md's tables byte by byte, written independently of the encoder
 * (proto/snapshot*.c), so that the encoder and the documentation are
 * checked against each other; then decoding helpers. Everything here is
 * static inline or used by it: a test file uses what it needs. */
#ifndef NCCLTOP_PROTO_FIXTURE_H
#define NCCLTOP_PROTO_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto_sample.h"
#include "testlib.h"
#include "../proto/nccltop_proto.h"

/* Section types, as PROTOCOL.md numbers them. */
enum { SEC_PROCESS = 1, SEC_COMM, SEC_PROXY, SEC_CHANNEL, SEC_KERNEL };
enum { SEC_OPS = 6, SEC_PHASE, SEC_OPLOG, SEC_SEQ, SEC_NET };
enum { SEC_VARIANT = 11, SEC_COUNT }; /* 1.4 */

/* ---------------------------------------------------------------------- */
/* A message built by hand from PROTOCOL.md, independent of the encoder    */

typedef struct {
  uint8_t b[1 << 16];
  size_t n;
} wbuf;

static inline void wle(wbuf *w, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) w->b[w->n++] = (uint8_t)(v >> (8 * i));
}
static inline void wfill(wbuf *w, uint8_t byte, size_t n) {
  memset(w->b + w->n, byte, n);
  w->n += n;
}

/* What to write. Start from default_layout() (this version, every section
 * in order); an older minor writes that minor's message: minor = 0 a 1.0
 * message (five sections, 1.0 record sizes, no 1.1 field), 1 to 3 ten
 * sections with that minor's record sizes (no variant section, no 1.4
 * field), 4 all eleven; a newer minor's message when combined with the
 * extra_* fields. */
typedef struct {
  uint16_t major, minor, flags;
  size_t extra_header;   /* bytes after the host name (a newer minor's fields) */
  size_t extra_record;   /* bytes after every record and the process counters */
  bool unknown;          /* sections of unknown types among the known ones */
  int order[16], norder; /* section types in message order; 0 = all, in order */
  size_t at[SEC_COUNT];  /* where the last section of each type begins */
} layout;

static inline layout default_layout(void) {
  layout l;
  memset(&l, 0, sizeof l);
  l.major = 1;
  l.minor = NT_PROTO_MINOR;
  return l;
}

static inline void section_begin(wbuf *w, layout *l, int type, size_t *len_at) {
  l->at[type] = w->n;
  wle(w, (uint64_t)type, 2);
  wle(w, 0, 2);
  *len_at = w->n;
  wle(w, 0, 4);
}
static inline void section_end(wbuf *w, size_t len_at) {
  size_t len = w->n - len_at - 4;
  for (int i = 0; i < 4; i++) w->b[len_at + (size_t)i] = (uint8_t)(len >> (8 * i));
}
static inline void table_begin(wbuf *w, const layout *l, uint32_t count, size_t known) {
  wle(w, count, 4);
  wle(w, known + l->extra_record, 2);
  wle(w, 0, 2);
}

/* Types 1 to 5: the process counters and the 1.0 tables, with the fields
 * 1.1 appended to the process counters and the communicator records. */
static inline void write_section_1_0(wbuf *w, const layout *l, const nt_snapshot *s, int type) {
  bool v11 = l->minor >= 1;
  switch (type) {
  case SEC_PROCESS: {
    const nt_process_counters *p = &s->process;
    wle(w, p->events, 8);
    wle(w, p->dropped_events, 8);
    wle(w, p->unknown_events, 8);
    wle(w, p->foreign_ops, 8);
    wle(w, p->reclaimed_ops, 8);
    wle(w, p->dropped_rows, 8);
    wle(w, p->unsent_messages, 8);
    wle(w, p->event_mask, 4);
    wle(w, p->abi_version, 1);
    if (v11) {
      wle(w, p->dropped_ops, 8);
      wle(w, p->late_children, 8);
      wle(w, p->net_events, 8);
      wle(w, p->phase, 1);
    }
    wfill(w, 0xEE, l->extra_record);
    break;
  }
  case SEC_COMM:
    table_begin(w, l, s->ncomms, v11 ? 84 : 36);
    for (uint32_t i = 0; i < s->ncomms; i++) {
      const nt_comm_row *r = &s->comms[i];
      wle(w, r->comm_hash, 8);
      wle(w, (uint32_t)r->rank, 4);
      wle(w, (uint32_t)r->nranks, 4);
      wle(w, (uint32_t)r->nnodes, 4);
      wle(w, r->colls_enqueued, 8);
      wle(w, r->p2ps_enqueued, 8);
      if (v11) {
        wle(w, r->group_api, 8);
        wle(w, r->coll_api, 8);
        wle(w, r->p2p_api, 8);
        wle(w, r->kernel_launches, 8);
        wle(w, r->graph_captured, 8);
        wle(w, r->api_ns, 8);
      }
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_PROXY:
    table_begin(w, l, s->nproxy, 80);
    for (uint32_t i = 0; i < s->nproxy; i++) {
      const nt_proxy_row *r = &s->proxy[i];
      wle(w, r->comm_index, 2);
      wle(w, r->state, 1);
      wle(w, 0, 1);
      wle(w, r->tid, 4);
      wle(w, r->state_age_ns, 8);
      for (int k = 0; k < NT_PROXY_NSTATES; k++) wle(w, r->state_ns[k], 8);
      wle(w, r->appends, 8);
      wle(w, r->appended_ops, 8);
      wle(w, r->wakeups, 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_CHANNEL:
    table_begin(w, l, s->nchannels, l->minor >= 2 ? 96 : 88);
    for (uint32_t i = 0; i < s->nchannels; i++) {
      const nt_channel_row *r = &s->channels[i];
      wle(w, r->comm_index, 2);
      wle(w, r->channel, 1);
      wle(w, r->dir, 1);
      wle(w, (uint32_t)r->peer, 4);
      for (int k = 0; k < 3; k++) wle(w, r->wait_ns[k], 8);
      wle(w, r->steps, 8);
      wle(w, r->bytes, 8);
      wle(w, r->ops_started, 8);
      wle(w, r->ops_done, 8);
      wle(w, (uint32_t)r->cur_step, 4);
      wle(w, r->cur_wait, 1);
      wle(w, 0, 3);
      wle(w, r->cur_wait_age_ns, 8);
      wle(w, r->progress_age_ns, 8);
      if (l->minor >= 2) {
        wle(w, r->run_state, 1);
        wle(w, 0, 3);
        wle(w, (uint32_t)r->relay_rank, 4);
      }
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_KERNEL:
    table_begin(w, l, s->nkernels, l->minor >= 3 ? 56 : 32);
    for (uint32_t i = 0; i < s->nkernels; i++) {
      const nt_kernel_row *r = &s->kernels[i];
      wle(w, r->comm_index, 2);
      wle(w, r->channel, 1);
      wle(w, 0, 5);
      wle(w, r->count, 8);
      wle(w, r->busy_ns, 8);
      wle(w, r->last_ns, 8);
      if (l->minor >= 3)
        for (int k = 0; k < 3; k++) wle(w, r->phase_ns[k], 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  }
}

/* Types 6 to 10, the 1.1 tables, and type 11, 1.4's. */
static inline void write_section_1_1(wbuf *w, const layout *l, const nt_snapshot *s, int type) {
  switch (type) {
  case SEC_OPS:
    table_begin(w, l, s->nops, l->minor >= 4 ? 80 : l->minor >= 3 ? 72 : 56);
    for (uint32_t i = 0; i < s->nops; i++) {
      const nt_op_row *r = &s->ops[i];
      wle(w, r->comm_index, 2);
      wle(w, r->kind, 1);
      wle(w, r->func, 1);
      wle(w, r->algo, 1);
      wle(w, r->proto, 1);
      wle(w, r->bucket, 1);
      wle(w, r->phase, 1);
      wle(w, r->count, 8);
      wle(w, r->bytes, 8);
      wle(w, r->done, 8);
      wle(w, r->done_bytes, 8);
      wle(w, r->time_ns, 8);
      wle(w, r->gpu_done, 8);
      if (l->minor >= 3) {
        wle(w, r->sync_ns, 8);
        wle(w, r->compute_ns, 8);
      }
      if (l->minor >= 4) {
        wle(w, r->variant, 1);
        wle(w, 0, 7);
      }
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_PHASE:
    table_begin(w, l, s->nphases, 36);
    for (uint32_t i = 0; i < s->nphases; i++) {
      const nt_phase_row *r = &s->phases[i];
      size_t n = strlen(r->name);
      wle(w, r->id, 1);
      wle(w, n, 1);
      wle(w, l->minor >= 3 ? r->source : 0, 1);
      wle(w, 0, 1);
      memcpy(w->b + w->n, r->name, n);
      w->n += n;
      wfill(w, 0, 32 - n);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_OPLOG:
    table_begin(w, l, s->noplog, l->minor >= 2 ? 80 : 64);
    for (uint32_t i = 0; i < s->noplog; i++) {
      const nt_oplog_row *r = &s->oplog[i];
      wle(w, r->comm_index, 2);
      wle(w, r->kind, 1);
      wle(w, r->func, 1);
      wle(w, r->algo, 1);
      wle(w, r->proto, 1);
      wle(w, r->dtype, 1);
      wle(w, r->phase, 1);
      wle(w, r->state, 1);
      wle(w, r->timing, 1);
      wle(w, r->nchannels, 1);
      wle(w, r->nwarps, 1);
      wle(w, (uint32_t)r->root_peer, 4);
      wle(w, r->seq, 8);
      wle(w, r->count, 8);
      wle(w, r->bytes, 8);
      wle(w, r->age_ns, 8);
      wle(w, r->duration_ns, 8);
      wle(w, r->children, 4);
      wle(w, r->children_open, 4);
      if (l->minor >= 2) {
        wle(w, r->run_state, 1);
        wle(w, r->flags, 1);
        wle(w, l->minor >= 4 ? r->variant : 0, 1); /* reserved before 1.4 */
        wle(w, 0, 5);
        wle(w, r->progress_age_ns, 8);
      }
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_SEQ:
    table_begin(w, l, s->nseq, 32);
    for (uint32_t i = 0; i < s->nseq; i++) {
      const nt_seq_row *r = &s->seq_rows[i];
      wle(w, r->comm_index, 2);
      wle(w, r->func, 1);
      wle(w, 0, 5);
      wle(w, r->launched, 8);
      wle(w, r->done, 8);
      wle(w, r->last_launch_age_ns, 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_NET:
    table_begin(w, l, s->nnet, 48);
    for (uint32_t i = 0; i < s->nnet; i++) {
      const nt_net_row *r = &s->net[i];
      wle(w, r->comm_index, 2);
      wle(w, r->type, 1);
      wle(w, 0, 1);
      wle(w, (uint32_t)r->device, 4);
      wle(w, r->id, 4);
      wle(w, 0, 4);
      wle(w, r->count, 8);
      wle(w, r->bytes, 8);
      wle(w, r->busy_ns, 8);
      wle(w, r->in_flight, 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case SEC_VARIANT: /* 1.4 */
    table_begin(w, l, s->nvariants, 52);
    for (uint32_t i = 0; i < s->nvariants; i++) {
      const nt_variant_row *r = &s->variants[i];
      size_t n = strlen(r->name);
      wle(w, r->id, 1);
      wle(w, n, 1);
      wle(w, 0, 2);
      memcpy(w->b + w->n, r->name, n);
      w->n += n;
      wfill(w, 0, 48 - n);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  }
}

static inline void write_section(wbuf *w, layout *l, const nt_snapshot *s, int type) {
  size_t len_at;
  section_begin(w, l, type, &len_at);
  if (type < SEC_OPS)
    write_section_1_0(w, l, s, type);
  else
    write_section_1_1(w, l, s, type);
  section_end(w, len_at);
}

static inline void write_unknown(wbuf *w, uint16_t type, size_t len) {
  wle(w, type, 2);
  wle(w, 0xBEEF, 2); /* reserved: ignored */
  wle(w, len, 4);
  wfill(w, 0x5A, len);
}

static inline void build(wbuf *w, const nt_snapshot *s, layout *l) {
  size_t hostlen = strlen(s->host);
  w->n = 0;
  wfill(w, 'N', 1);
  wfill(w, 'C', 1);
  wfill(w, 'T', 1);
  wfill(w, 'S', 1);
  wle(w, l->major, 2);
  wle(w, l->minor, 2);
  wle(w, 45 + hostlen + l->extra_header, 2);
  wle(w, (s->final ? 1u : 0u) | l->flags, 2);
  wle(w, s->seq, 8);
  wle(w, s->pid, 4);
  wle(w, s->interval_ms, 4);
  wle(w, s->mono_ns, 8);
  wle(w, s->wall_ns, 8);
  wle(w, hostlen, 1);
  memcpy(w->b + w->n, s->host, hostlen);
  w->n += hostlen;
  wfill(w, 0xA5, l->extra_header);
  int normal[SEC_COUNT - 1];
  int n = l->minor >= 4 ? SEC_VARIANT : l->minor >= 1 ? SEC_NET : SEC_KERNEL;
  for (int i = 0; i < n; i++) normal[i] = i + 1;
  const int *order = l->norder ? l->order : normal;
  if (l->norder) n = l->norder;
  if (l->unknown) write_unknown(w, 0, 0);
  for (int i = 0; i < n; i++) {
    write_section(w, l, s, order[i]);
    if (l->unknown && i == 1) write_unknown(w, 99, 13);
    if (l->unknown && i == 6) write_unknown(w, SEC_COUNT, 5); /* the next type a minor could add */
  }
  if (l->unknown) {
    write_unknown(w, 0xFFFF, 0);
    write_unknown(w, 99, 3); /* unknown types may repeat */
  }
}

static inline void patch(wbuf *w, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) w->b[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* Offsets of a table section of the last built message: its count, its
 * record length, and byte `off` of record `row`. */
static inline size_t count_at(const layout *l, int type) {
  return l->at[type] + 8;
}
static inline size_t reclen_at(const layout *l, int type) {
  return l->at[type] + 12;
}
static inline size_t record_at(const wbuf *w, const layout *l, int type, uint32_t row, size_t off) {
  size_t rl = (size_t)w->b[reclen_at(l, type)] | (size_t)w->b[reclen_at(l, type) + 1] << 8;
  return l->at[type] + 16 + row * rl + off;
}

static wbuf wb;
static uint8_t enc[1 << 16];

/* A little-endian field of `bytes` bytes at p. */
static inline uint64_t rd(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static inline int decode_wb(nt_snapshot *d, char *err, size_t errlen) {
  err[0] = '\0';
  return nt_snapshot_decode(wb.b, wb.n, d, err, errlen);
}

/* Decoding wb fails with exactly this message. */
#define CHECK_DECODE_ERR(d, expected)                                                              \
  do {                                                                                             \
    char e_[256];                                                                                  \
    CHECK(decode_wb(d, e_, sizeof e_) == -1);                                                      \
    CHECK_STR(e_, expected);                                                                       \
  } while (0)

#define CHECK_DECODE_OK(d)                                                                         \
  do {                                                                                             \
    char e_[256];                                                                                  \
    int rc_ = decode_wb(d, e_, sizeof e_);                                                         \
    if (rc_) fprintf(stderr, "    %s\n", e_);                                                      \
    CHECK(rc_ == 0);                                                                               \
  } while (0)

/* Encodes s (the encoder writes values as given, unchecked) and decodes. */
static inline int decode_modified(const nt_snapshot *s, nt_snapshot *d, char *err, size_t errlen) {
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  if (!n) return -2;
  err[0] = '\0';
  return nt_snapshot_decode(enc, n, d, err, errlen);
}

/* s written as a message of an older `minor` (into wb, laid out as *l)
 * decodes into d as what s says less what that minor lacks (`drop`). */
static inline bool decodes_as_older(const nt_snapshot *s, int minor, void (*drop)(nt_snapshot *),
                                    nt_snapshot *d, layout *l) {
  nt_snapshot *want = nt_snapshot_new();
  char err[256];
  bool ok = want && decode_modified(s, want, err, sizeof err) == 0;
  if (ok) drop(want);
  *l = default_layout();
  l->minor = (uint16_t)minor;
  build(&wb, s, l);
  ok = ok && decode_wb(d, err, sizeof err) == 0 && d->minor == minor && same_snapshot(want, d);
  nt_snapshot_free(want);
  return ok;
}

/* The decoder rejects the encoding of s with exactly this message. */
#define EXPECT_REJECT(s, d, msg)                                                                   \
  do {                                                                                             \
    char e_[256];                                                                                  \
    CHECK(decode_modified(s, d, e_, sizeof e_) == -1);                                             \
    CHECK_STR(e_, msg);                                                                            \
  } while (0)
#define EXPECT_ACCEPT(s, d)                                                                        \
  do {                                                                                             \
    char e_[256];                                                                                  \
    int rc_ = decode_modified(s, d, e_, sizeof e_);                                                \
    if (rc_) fprintf(stderr, "    %s\n", e_);                                                      \
    CHECK(rc_ == 0);                                                                               \
  } while (0)

#endif

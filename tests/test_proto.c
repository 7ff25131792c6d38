/* The wire protocol: the binary snapshot against a message built by hand
 * from PROTOCOL.md's tables, round trips, the strict decoder against every
 * kind of malformed input, forward compatibility with newer minors, JSON
 * metadata, text sanitizing and the state names. Endpoint rules are in
 * test_endpoint.c. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

/* ---------------------------------------------------------------------- */
/* A fully populated snapshot                                              */

/* Distinct values that use all 64 bits, so a field written at the wrong
 * place, truncated or swapped shows. */
static uint64_t next_value(void) {
  static uint64_t k;
  k++;
  return 0x8070605040302010ull ^ (k * 0x9E3779B97F4A7C15ull);
}

static nt_snapshot *sample(void) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
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
  }
  s->nkernels = 3;
  for (uint32_t i = 0; i < s->nkernels; i++) {
    nt_kernel_row *r = &s->kernels[i];
    r->comm_index = (uint16_t)(2 - i);
    r->channel = (uint8_t)(i + 7);
    r->count = next_value();
    r->busy_ns = next_value();
    r->last_ns = next_value();
  }
  return s;
}

/* Field-by-field comparison (structs have padding: no memcmp); names the
 * first difference. */
#define SAME(f)                                                                                    \
  if (a->f != b->f) {                                                                              \
    fprintf(stderr, "    %s differs (row %u)\n", #f, i);                                           \
    return false;                                                                                  \
  }

static bool same_snapshot(const nt_snapshot *x, const nt_snapshot *y) {
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
    SAME(progress_age_ns);
    for (int k = 0; k < 3; k++) SAME(wait_ns[k]);
  }
  for (i = 0; i < x->nkernels; i++) {
    const nt_kernel_row *a = &x->kernels[i], *b = &y->kernels[i];
    SAME(comm_index) SAME(channel) SAME(count) SAME(busy_ns) SAME(last_ns);
  }
  return true;
}

/* ---------------------------------------------------------------------- */
/* A message built by hand from PROTOCOL.md, independent of the encoder    */

typedef struct {
  uint8_t b[1 << 16];
  size_t n;
} wbuf;

static void wle(wbuf *w, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) w->b[w->n++] = (uint8_t)(v >> (8 * i));
}
static void wfill(wbuf *w, uint8_t byte, size_t n) {
  memset(w->b + w->n, byte, n);
  w->n += n;
}

typedef struct {
  uint16_t major, minor, flags;
  size_t extra_header;  /* bytes after the host name (a newer minor's fields) */
  size_t extra_record;  /* bytes after every record and the process counters */
  bool unknown;         /* sections of unknown types among the known ones */
  int order[8], norder; /* section types in message order; 0 = 1..5 */
  size_t at[8];         /* where the last section of each type begins */
} layout;

static void section_begin(wbuf *w, layout *l, int type, size_t *len_at) {
  l->at[type] = w->n;
  wle(w, (uint64_t)type, 2);
  wle(w, 0, 2);
  *len_at = w->n;
  wle(w, 0, 4);
}
static void section_end(wbuf *w, size_t len_at) {
  size_t len = w->n - len_at - 4;
  for (int i = 0; i < 4; i++) w->b[len_at + (size_t)i] = (uint8_t)(len >> (8 * i));
}
static void table_begin(wbuf *w, const layout *l, uint32_t count, size_t known) {
  wle(w, count, 4);
  wle(w, known + l->extra_record, 2);
  wle(w, 0, 2);
}

static void write_section(wbuf *w, layout *l, const nt_snapshot *s, int type) {
  size_t len_at;
  section_begin(w, l, type, &len_at);
  switch (type) {
  case 1: {
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
    wfill(w, 0xEE, l->extra_record);
    break;
  }
  case 2:
    table_begin(w, l, s->ncomms, 36);
    for (uint32_t i = 0; i < s->ncomms; i++) {
      const nt_comm_row *r = &s->comms[i];
      wle(w, r->comm_hash, 8);
      wle(w, (uint32_t)r->rank, 4);
      wle(w, (uint32_t)r->nranks, 4);
      wle(w, (uint32_t)r->nnodes, 4);
      wle(w, r->colls_enqueued, 8);
      wle(w, r->p2ps_enqueued, 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case 3:
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
  case 4:
    table_begin(w, l, s->nchannels, 88);
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
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  case 5:
    table_begin(w, l, s->nkernels, 32);
    for (uint32_t i = 0; i < s->nkernels; i++) {
      const nt_kernel_row *r = &s->kernels[i];
      wle(w, r->comm_index, 2);
      wle(w, r->channel, 1);
      wle(w, 0, 5);
      wle(w, r->count, 8);
      wle(w, r->busy_ns, 8);
      wle(w, r->last_ns, 8);
      wfill(w, 0xEE, l->extra_record);
    }
    break;
  }
  section_end(w, len_at);
}

static void write_unknown(wbuf *w, uint16_t type, size_t len) {
  wle(w, type, 2);
  wle(w, 0xBEEF, 2); /* reserved: ignored */
  wle(w, len, 4);
  wfill(w, 0x5A, len);
}

static void build(wbuf *w, const nt_snapshot *s, layout *l) {
  size_t hostlen = strlen(s->host);
  w->n = 0;
  wfill(w, 'N', 1);
  wfill(w, 'C', 1);
  wfill(w, 'T', 1);
  wfill(w, 'S', 1);
  wle(w, l->major ? l->major : 1, 2);
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
  static const int normal[] = {1, 2, 3, 4, 5};
  const int *order = l->norder ? l->order : normal;
  int n = l->norder ? l->norder : 5;
  if (l->unknown) write_unknown(w, 0, 0);
  for (int i = 0; i < n; i++) {
    write_section(w, l, s, order[i]);
    if (l->unknown && i == 1) write_unknown(w, 99, 13);
  }
  if (l->unknown) {
    write_unknown(w, 0xFFFF, 0);
    write_unknown(w, 99, 3); /* unknown types may repeat */
  }
}

static void patch(wbuf *w, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) w->b[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static wbuf wb;
static uint8_t enc[1 << 16];

static int decode_wb(nt_snapshot *d, char *err, size_t errlen) {
  err[0] = '\0';
  return nt_snapshot_decode(wb.b, wb.n, d, err, errlen);
}

/* Decoding fails with exactly this message. */
#define CHECK_DECODE_ERR(d, expected)                                                              \
  do {                                                                                             \
    char e_[256];                                                                                  \
    CHECK(decode_wb(d, e_, sizeof e_) == -1);                                                      \
    CHECK_STR(e_, expected);                                                                       \
  } while (0)

/* ---------------------------------------------------------------------- */
/* Snapshot tests                                                          */

static void encoder_writes_the_documented_layout(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  layout l = {0};
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  if (n != wb.n) fprintf(stderr, "    encoder wrote %zu bytes, PROTOCOL.md says %zu\n", n, wb.n);
  CHECK(n == wb.n);
  for (size_t i = 0; i < n; i++) {
    if (enc[i] != wb.b[i]) fprintf(stderr, "    first difference at byte %zu\n", i);
    CHECK(enc[i] == wb.b[i]);
  }
  /* A few fixed offsets, spelled out. */
  CHECK(memcmp(enc, "NCTS", 4) == 0);
  CHECK(enc[4] == 1 && enc[5] == 0 && enc[6] == 0 && enc[7] == 0);
  CHECK(enc[10] == 1);                       /* final flag */
  CHECK(enc[12] == 0x08 && enc[19] == 0x01); /* seq, little-endian */
  CHECK(enc[44] == strlen(s->host));
  nt_snapshot_free(s);
}

static void snapshot_round_trip_keeps_every_field(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0 && n <= nt_snapshot_encoded_max(s));
  char err[256] = "";
  int rc = nt_snapshot_decode(enc, n, d, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(d->major == NT_PROTO_MAJOR && d->minor == NT_PROTO_MINOR);
  CHECK(same_snapshot(s, d));
  CHECK_STR(d->host, "gpu-node-17\x1b[31m\xc3\xa9"); /* bytes kept as received */
  /* Not final, empty tables, empty host. */
  s->final = 0;
  s->host[0] = '\0';
  s->ncomms = s->nproxy = s->nchannels = s->nkernels = 0;
  n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0);
  CHECK(nt_snapshot_decode(enc, n, d, err, sizeof err) == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void largest_snapshot_fits_the_message_limit(void) {
  nt_snapshot *s = nt_snapshot_new(), *d = nt_snapshot_new();
  CHECK(s && d);
  memset(s->host, 'h', NT_MAX_HOST);
  s->host[NT_MAX_HOST] = '\0';
  s->ncomms = NT_MAX_COMMS;
  s->nproxy = NT_MAX_PROXY_THREADS;
  s->nchannels = NT_MAX_CHANNEL_ROWS;
  s->nkernels = NT_MAX_KERNEL_ROWS;
  for (uint32_t i = 0; i < s->nchannels; i++) s->channels[i].comm_index = NT_MAX_COMMS - 1;
  size_t max = nt_snapshot_encoded_max(s);
  CHECK(max <= NT_MAX_MESSAGE_BYTES);
  uint8_t *big = malloc(max);
  CHECK(big != NULL);
  size_t n = nt_snapshot_encode(s, big, max);
  CHECK(n == max);         /* the bound is exact for a 64-byte host */
  CHECK_EQ_U64(n, 874994); /* as PROTOCOL.md says */
  char err[256];
  int rc = nt_snapshot_decode(big, n, d, err, sizeof err);
  free(big);
  CHECK(rc == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void every_truncation_is_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n > 0);
  char err[256];
  for (size_t len = 0; len < n; len++) {
    uint8_t *exact = malloc(len ? len : 1);
    CHECK(exact != NULL);
    memcpy(exact, enc, len); /* exactly len bytes: ASan sees any overread */
    err[0] = '\0';
    int rc = nt_snapshot_decode(exact, len, d, err, sizeof err);
    free(exact);
    if (rc != -1) fprintf(stderr, "    a %zu-byte prefix of %zu was accepted\n", len, n);
    CHECK(rc == -1);
    CHECK(err[0] != '\0');
    CHECK(d->ncomms == 0 && d->nproxy == 0 && d->nchannels == 0 && d->nkernels == 0);
  }
  /* Bytes after the last section that are not a whole section. */
  memset(enc + n, 0, 3);
  CHECK(nt_snapshot_decode(enc, n + 3, d, err, sizeof err) == -1);
  CHECK_STR(err, "truncated section header (3 bytes)");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void wrong_magic_is_not_a_snapshot(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = {0};
  build(&wb, s, &l);
  wb.b[3] = 's';
  CHECK_DECODE_ERR(d, "not an nccltop snapshot");
  char err[256];
  CHECK(nt_snapshot_decode((const uint8_t *)"garbage!", 8, d, err, sizeof err) == -1);
  CHECK_STR(err, "not an nccltop snapshot");
  CHECK(nt_snapshot_decode((const uint8_t *)"NCT", 3, d, err, sizeof err) == -1);
  CHECK(nt_snapshot_decode(NULL, 0, d, err, sizeof err) == -1);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void unknown_major_version_is_rejected_by_name(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = {.major = 2};
  build(&wb, s, &l);
  CHECK_DECODE_ERR(d, "unsupported protocol major version 2 (this nccltop reads 1)");
  patch(&wb, 4, 0, 2);
  CHECK_DECODE_ERR(d, "unsupported protocol major version 0 (this nccltop reads 1)");
  /* Only the first 8 bytes are needed to say so. */
  patch(&wb, 4, 65535, 2);
  wb.n = 8;
  CHECK_DECODE_ERR(d, "unsupported protocol major version 65535 (this nccltop reads 1)");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* A message of a newer minor: longer header, longer records and process
 * counters, unknown flags and unknown sections: decoded as 1.0 plus the
 * minor number. */
static void newer_minor_extensions_are_skipped(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = {.minor = 7, .flags = 0x8002, .extra_header = 5, .extra_record = 8, .unknown = true};
  build(&wb, s, &l);
  char err[256] = "";
  int rc = decode_wb(d, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(d->major == 1 && d->minor == 7);
  CHECK(d->final == 1);
  CHECK(same_snapshot(s, d));
  /* Sections in another order than the encoder's are fine too, as long as
   * the comm table precedes the rows. */
  layout l2 = {.order = {2, 5, 4, 1, 3}, .norder = 5};
  build(&wb, s, &l2);
  CHECK(decode_wb(d, err, sizeof err) == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void header_fields_are_checked(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = {0};
  size_t hostlen = strlen(s->host);
  build(&wb, s, &l);
  wb.b[45 + 3] = '\0';
  CHECK_DECODE_ERR(d, "host name contains a NUL byte");
  build(&wb, s, &l);
  wb.b[44] = 65;
  CHECK_DECODE_ERR(d, "host name length 65 exceeds limit 64");
  build(&wb, s, &l);
  patch(&wb, 8, 44 + hostlen, 2);
  char want[128];
  snprintf(want, sizeof want, "header length %zu is shorter than its %zu-byte host name",
           44 + hostlen, hostlen);
  CHECK_DECODE_ERR(d, want);
  build(&wb, s, &l);
  patch(&wb, 8, wb.n + 1, 2);
  snprintf(want, sizeof want, "header length %zu exceeds the message (%zu bytes)", wb.n + 1, wb.n);
  CHECK_DECODE_ERR(d, want);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void counts_over_limits_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = {0};
  static const struct {
    int type;
    uint32_t count;
    const char *err;
  } cases[] = {
      {2, NT_MAX_COMMS + 1, "comm section: count 65 exceeds limit 64"},
      {3, NT_MAX_PROXY_THREADS + 1, "proxy section: count 257 exceeds limit 256"},
      {4, 9000, "channel section: count 9000 exceeds limit 8192"},
      {5, 0xFFFFFFFFu, "kernel section: count 4294967295 exceeds limit 4096"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    build(&wb, s, &l);
    patch(&wb, l.at[cases[i].type] + 8, cases[i].count, 4);
    CHECK_DECODE_ERR(d, cases[i].err);
  }
  /* Within the limit but more records than the section holds. */
  build(&wb, s, &l);
  patch(&wb, l.at[4] + 8, s->nchannels + 1, 4);
  CHECK_DECODE_ERR(d, "channel section: 7 records of 88 bytes exceed its 528 bytes");
  /* Records shorter than this version's. */
  build(&wb, s, &l);
  patch(&wb, l.at[3] + 12, 79, 2);
  CHECK_DECODE_ERR(d, "proxy section: record length 79 is shorter than 80");
  /* Process counters cut short; a section longer than the message. */
  build(&wb, s, &l);
  patch(&wb, l.at[1] + 4, 60, 4);
  CHECK_DECODE_ERR(d, "process section: 60 bytes, expected at least 61");
  build(&wb, s, &l);
  patch(&wb, l.at[5] + 4, 33 * 3 + 8, 4);
  CHECK_DECODE_ERR(d, "section 5: length 107 exceeds the 104 bytes left");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void duplicate_missing_and_misplaced_sections_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout twice = {.order = {1, 2, 3, 4, 5, 2}, .norder = 6};
  build(&wb, s, &twice);
  CHECK_DECODE_ERR(d, "comm section appears twice");
  layout twice1 = {.order = {1, 1, 2, 3, 4, 5}, .norder = 6};
  build(&wb, s, &twice1);
  CHECK_DECODE_ERR(d, "process section appears twice");
  layout missing = {.order = {1, 2, 3, 4}, .norder = 4};
  build(&wb, s, &missing);
  CHECK_DECODE_ERR(d, "kernel section missing");
  layout early = {.order = {1, 4, 2, 3, 5}, .norder = 5};
  build(&wb, s, &early);
  CHECK_DECODE_ERR(d, "channel section before the comm section");
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* Encodes s (the encoder writes enum values as given) and expects the
 * decoder to reject it with this message, or accept it when NULL. */
static int decode_modified(const nt_snapshot *s, nt_snapshot *d, char *err, size_t errlen) {
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  if (!n) return -2;
  err[0] = '\0';
  return nt_snapshot_decode(enc, n, d, err, errlen);
}

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

static void out_of_range_values_are_rejected(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  EXPECT_ACCEPT(s, d);
  s->proxy[1].state = NT_PROXY_NSTATES;
  EXPECT_REJECT(s, d, "proxy row 1: bad state 5");
  s->proxy[1].state = 254;
  EXPECT_REJECT(s, d, "proxy row 1: bad state 254");
  s->proxy[1].state = NT_PROXY_UNKNOWN;
  EXPECT_ACCEPT(s, d);
  s->proxy[0].comm_index = 3;
  EXPECT_REJECT(s, d, "proxy row 0: comm index 3 out of range (3 comms)");
  s->proxy[0].comm_index = NT_NO_COMM;
  EXPECT_ACCEPT(s, d);

  s->channels[4].dir = 2;
  EXPECT_REJECT(s, d, "channel row 4: bad direction 2");
  s->channels[4].dir = NT_DIR_RECV;
  s->channels[5].cur_wait = NT_WAIT_COUNT;
  EXPECT_REJECT(s, d, "channel row 5: bad wait state 6");
  s->channels[5].cur_wait = NT_WAIT_NONE;
  EXPECT_ACCEPT(s, d);
  s->channels[0].comm_index = 3;
  EXPECT_REJECT(s, d, "channel row 0: comm index 3 out of range (3 comms)");
  /* Channel and kernel rows always name a communicator. */
  s->channels[0].comm_index = NT_NO_COMM;
  EXPECT_REJECT(s, d, "channel row 0: comm index 65535 out of range (3 comms)");
  s->channels[0].comm_index = 2;
  s->channels[3].ops_done = s->channels[3].ops_started + 1;
  EXPECT_REJECT(s, d, "channel row 3: more ops done than started");
  s->channels[3].ops_done = s->channels[3].ops_started;
  EXPECT_ACCEPT(s, d);

  s->kernels[2].comm_index = 7;
  EXPECT_REJECT(s, d, "kernel row 2: comm index 7 out of range (3 comms)");
  s->kernels[2].comm_index = NT_NO_COMM;
  EXPECT_REJECT(s, d, "kernel row 2: comm index 65535 out of range (3 comms)");
  s->kernels[2].comm_index = 0;
  EXPECT_ACCEPT(s, d);
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

static void encoder_refuses_small_buffers_and_oversized_tables(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  size_t max = nt_snapshot_encoded_max(s);
  memset(enc, 0xCC, sizeof enc);
  CHECK(nt_snapshot_encode(s, enc, 0) == 0);
  CHECK(nt_snapshot_encode(s, enc, 10) == 0);
  CHECK(nt_snapshot_encode(s, enc, max - 1) == 0);
  for (size_t i = 0; i < sizeof enc; i++) CHECK(enc[i] == 0xCC); /* nothing written */
  CHECK(nt_snapshot_encode(s, enc, max) > 0);
  CHECK(nt_snapshot_encode(NULL, enc, sizeof enc) == 0);
  s->nchannels = NT_MAX_CHANNEL_ROWS + 1;
  CHECK(nt_snapshot_encode(s, enc, sizeof enc) == 0);
  s->nchannels = 0;
  s->ncomms = NT_MAX_COMMS + 1;
  CHECK(nt_snapshot_encode(s, enc, sizeof enc) == 0);
  nt_snapshot_free(s);
}

static void clear_keeps_the_header_and_empties_the_tables(void) {
  nt_snapshot *s = sample();
  CHECK(s);
  nt_snapshot_clear(s);
  CHECK(s->ncomms == 0 && s->nproxy == 0 && s->nchannels == 0 && s->nkernels == 0);
  CHECK(s->process.events == 0 && s->process.abi_version == 0);
  CHECK(s->pid == 4242 && s->seq == 0x0102030405060708ull);
  CHECK(s->comms && s->proxy && s->channels && s->kernels);
  nt_snapshot_free(s);
  nt_snapshot_free(NULL);
}

/* ---------------------------------------------------------------------- */
/* JSON metadata                                                           */

static nt_hello hello, back;

static bool same_hello(const nt_hello *a, const nt_hello *b) {
  uint32_t i = 0;
  SAME(pid) SAME(abi_version) SAME(start_wall_ns) SAME(nenv);
  if (strcmp(a->host, b->host) || strcmp(a->nccl_version, b->nccl_version) ||
      strcmp(a->plugin_version, b->plugin_version)) {
    fprintf(stderr, "    a string differs\n");
    return false;
  }
  for (i = 0; i < a->nenv; i++)
    if (strcmp(a->env[i].name, b->env[i].name) || strcmp(a->env[i].value, b->env[i].value)) {
      fprintf(stderr, "    env %u differs\n", i);
      return false;
    }
  return true;
}

static void hello_round_trip_keeps_every_field(void) {
  static char json[NT_MAX_JSON_BYTES];
  char err[256] = "";
  memset(&hello, 0, sizeof hello);
  hello.major = 9; /* ignored: the encoder writes the version it speaks */
  snprintf(hello.host, sizeof hello.host, "node\"quote\\back");
  hello.pid = 77;
  snprintf(hello.nccl_version, sizeof hello.nccl_version, "2.28.9");
  snprintf(hello.plugin_version, sizeof hello.plugin_version, "0.1.0");
  hello.abi_version = 255;
  hello.start_wall_ns = 9007199254740993ull; /* 2^53 + 1: exact only as a string */
  hello.nenv = 3;
  snprintf(hello.env[0].name, sizeof hello.env[0].name, "NCCL_ALGO");
  /* Controls, DEL, a C1, é, an emoji and an invalid byte. */
  snprintf(hello.env[0].value, sizeof hello.env[0].value,
           "Ring\ttab\x1b[31m\x7f\xc2\x85\xc3\xa9\xf0\x9f\x98\x80\xff");
  snprintf(hello.env[1].name, sizeof hello.env[1].name, "NCCL_PROTO");
  snprintf(hello.env[2].name, sizeof hello.env[2].name, "NCCL_\"odd\\name");
  size_t n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(n > 0 && strlen(json) == n);
  CHECK(strncmp(json, "{\"v\":\"1.0\",\"type\":\"hello\",", 26) == 0);
  CHECK(strstr(json, "\"start_wall_ns\":\"9007199254740993\"") != NULL);
  CHECK(strstr(json, "\\u0009tab\\u001b[31m\\u007f\\u0085") != NULL);
  for (size_t i = 0; i < n; i++) CHECK((unsigned char)json[i] >= 0x20 && json[i] != 0x7f);
  int rc = nt_hello_decode(json, n, &back, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(back.major == 1 && back.minor == 0);
  CHECK(same_hello(&hello, &back));
  hello.start_wall_ns = UINT64_MAX;
  n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(nt_hello_decode(json, n, &back, err, sizeof err) == 0);
  CHECK_EQ_U64(back.start_wall_ns, UINT64_MAX);
}

static void hello_at_every_limit_round_trips(void) {
  static char json[NT_MAX_JSON_BYTES];
  char err[256] = "";
  memset(&hello, 0, sizeof hello);
  memset(hello.host, 'h', NT_MAX_HOST);
  memset(hello.nccl_version, '9', sizeof hello.nccl_version - 1);
  memset(hello.plugin_version, 'p', sizeof hello.plugin_version - 1);
  hello.pid = 0x7fffffff;
  hello.nenv = NT_MAX_ENV;
  for (int i = 0; i < NT_MAX_ENV; i++) {
    memset(hello.env[i].name, 'N', NT_MAX_ENV_NAME); /* 64 bytes, distinct */
    hello.env[i].name[1] = (char)('0' + i / 100);
    hello.env[i].name[2] = (char)('0' + i / 10 % 10);
    hello.env[i].name[3] = (char)('0' + i % 10);
    memset(hello.env[i].value, 'v', NT_MAX_ENV_VALUE);
  }
  size_t n = nt_hello_encode(&hello, json, sizeof json);
  CHECK(n > 0 && n <= NT_MAX_JSON_BYTES);
  int rc = nt_hello_decode(json, n, &back, err, sizeof err);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(same_hello(&hello, &back));
}

/* Every buffer shorter than the message plus its NUL gives 0, and nothing
 * is written past the buffer (ASan watches the exact-size copies). */
static void json_encoders_return_zero_when_the_buffer_is_short(void) {
  static char json[8192];
  memset(&hello, 0, sizeof hello);
  snprintf(hello.host, sizeof hello.host, "h\x01");
  hello.nenv = 1;
  snprintf(hello.env[0].name, sizeof hello.env[0].name, "NCCL_X");
  snprintf(hello.env[0].value, sizeof hello.env[0].value, "\x1b\\");
  nt_comm_info c = {.pid = 5, .comm_hash = 1, .rank = 0, .nranks = 2, .nnodes = 1};
  snprintf(c.name, sizeof c.name, "q\"");
  for (int which = 0; which < 2; which++) {
    size_t n =
        which ? nt_comm_encode(&c, json, sizeof json) : nt_hello_encode(&hello, json, sizeof json);
    CHECK(n > 0);
    for (size_t cap = 0; cap <= n + 1; cap++) {
      char *b = malloc(cap ? cap : 1);
      CHECK(b != NULL);
      size_t got = which ? nt_comm_encode(&c, b, cap) : nt_hello_encode(&hello, b, cap);
      bool ok = cap <= n ? got == 0 : got == n && memcmp(b, json, n + 1) == 0;
      free(b);
      if (!ok) fprintf(stderr, "    cap %zu of %zu: got %zu\n", cap, n, got);
      CHECK(ok);
    }
  }
}

static void comm_round_trip_keeps_every_field(void) {
  char json[1024], err[256] = "";
  static const uint64_t hashes[] = {0, 0xfedcba9876543210ull, UINT64_MAX};
  for (size_t i = 0; i < 3; i++) {
    nt_comm_info c = {
        .pid = 0x7fffffff, .comm_hash = hashes[i], .rank = -1, .nranks = 1 << 24, .nnodes = 0};
    memset(c.name, 'n', NT_MAX_NAME);
    c.name[0] = '"';
    c.name[1] = '\x1b';
    nt_comm_info cb;
    size_t n = nt_comm_encode(&c, json, sizeof json);
    CHECK(n > 0);
    int rc = nt_comm_decode(json, n, &cb, err, sizeof err);
    if (rc) fprintf(stderr, "    %s\n", err);
    CHECK(rc == 0);
    CHECK_EQ_U64(cb.comm_hash, hashes[i]);
    CHECK_EQ_U64(cb.pid, 0x7fffffff);
    CHECK(cb.rank == -1 && cb.nranks == 1 << 24 && cb.nnodes == 0);
    CHECK_STR(cb.name, c.name);
  }
  const char *ok = "{\"v\":\"1.3\",\"type\":\"comm\",\"pid\":1,\"hash\":\"00000000000000FF\","
                   "\"rank\":0,\"nranks\":1,\"nnodes\":1,\"future\":[1,{}]}\r\n\t ";
  nt_comm_info cb;
  CHECK(nt_comm_decode(ok, strlen(ok), &cb, err, sizeof err) == 0);
  CHECK_EQ_U64(cb.comm_hash, 0xff);
  CHECK_STR(cb.name, ""); /* optional */
}

/* JSON with the default fields of a message, one of them replaced by `raw`
 * (a JSON value) or left out (raw NULL); a key that is not a default one is
 * added. */
typedef struct {
  const char *key, *raw;
} field;

static const field hello_fields[] = {
    {"v", "\"1.0\""}, {"type", "\"hello\""},          {"host", "\"h\""},
    {"pid", "5"},     {"nccl_version", "\"2.28.9\""}, {"plugin_version", "\"0.1\""},
    {"abi", "5"},     {"start_wall_ns", "\"1\""},     {"env", "{\"NCCL_ALGO\":\"Ring\"}"},
};
static const field comm_fields[] = {
    {"v", "\"1.0\""},  {"type", "\"comm\""}, {"pid", "1"},    {"hash", "\"00000000000000ff\""},
    {"name", "\"x\""}, {"rank", "0"},        {"nranks", "2"}, {"nnodes", "1"},
};

static char jbuf[NT_MAX_JSON_BYTES + 64];

static size_t json_with(const field *f, size_t nf, const char *key, const char *raw) {
  size_t o = 0;
  bool found = false;
  jbuf[o++] = '{';
  for (size_t i = 0; i <= nf; i++) {
    const char *k = i < nf ? f[i].key : key, *v = i < nf ? f[i].raw : raw;
    if (i == nf && (found || !key)) break;
    if (i < nf && key && strcmp(k, key) == 0) {
      found = true;
      v = raw;
    }
    if (!v) continue;
    o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "%s\"%s\":%s", o > 1 ? "," : "", k, v);
  }
  jbuf[o++] = '}';
  jbuf[o] = '\0';
  return o;
}

typedef struct {
  const char *key, *raw, *err;
} hostile;

static void check_hostile(bool is_hello, const hostile *c) {
  char err[256] = "";
  size_t n = json_with(is_hello ? hello_fields : comm_fields,
                       is_hello ? sizeof hello_fields / sizeof hello_fields[0]
                                : sizeof comm_fields / sizeof comm_fields[0],
                       c->key, c->raw);
  nt_comm_info ci;
  int rc = is_hello ? nt_hello_decode(jbuf, n, &hello, err, sizeof err)
                    : nt_comm_decode(jbuf, n, &ci, err, sizeof err);
  if (rc != -1 || !strstr(err, c->err))
    fprintf(stderr, "    %s: rc %d, error \"%s\", expected \"%s\"\n", jbuf, rc, err, c->err);
  CHECK(rc == -1 && strstr(err, c->err) != NULL);
}

static void hostile_hello_fields_are_rejected_by_name(void) {
  static char host65[80], ver32[48], name65[100], value257[300];
  snprintf(host65, sizeof host65, "\"%065d\"", 0);
  snprintf(ver32, sizeof ver32, "\"%032d\"", 0);
  snprintf(name65, sizeof name65, "{\"%065d\":\"x\"}", 0);
  snprintf(value257, sizeof value257, "{\"NCCL_X\":\"%0257d\"}", 0);
  const hostile cases[] = {
      {"v", "\"2.0\"", "hello: unsupported protocol major version 2 (this nccltop reads 1)"},
      {"v", "\"1\"", "bad version \"1\""},
      {"v", "\" 1.0\"", "bad version"},
      {"v", "\"+1.0\"", "bad version"},
      {"v", "\"-1.0\"", "bad version"},
      {"v", "\"1.0.1\"", "bad version"},
      {"v", "\"65536.0\"", "bad version"},
      {"v", "\"1.\\u001b\"", "bad version \"1.\\x1B\""}, /* echoed escaped */
      {"v", "1.0", "field \"v\" is not a string"},
      {"v", NULL, "field \"v\" missing"},
      {"type", "\"comm\"", "field \"type\" is not \"hello\""},
      {"type", NULL, "field \"type\" missing"},
      {"host", "1", "field \"host\" is not a string"},
      {"host", NULL, "field \"host\" missing"},
      {"host", host65, "field \"host\" is 65 bytes, limit 64"},
      {"host", "\"a\\u0000b\"", "a string contains \\u0000"},
      {"pid", "\"5\"", "field \"pid\" is not a number"},
      {"pid", "0", "field \"pid\" out of range"},
      {"pid", "-1", "field \"pid\" out of range"},
      {"pid", "2147483648", "field \"pid\" out of range"},
      {"pid", "1e400", "field \"pid\" out of range"},
      {"pid", "1.5", "field \"pid\" is not an integer"},
      {"pid", NULL, "field \"pid\" missing"},
      {"abi", "256", "field \"abi\" out of range"},
      {"abi", "true", "field \"abi\" is not a number"},
      {"nccl_version", ver32, "field \"nccl_version\" is 32 bytes, limit 31"},
      {"plugin_version", "null", "field \"plugin_version\" is not a string"},
      {"start_wall_ns", "123", "field \"start_wall_ns\" is not a string"},
      {"start_wall_ns", "\"\"", "start_wall_ns\" is not a decimal u64"},
      {"start_wall_ns", "\"18446744073709551616\"", "is not a decimal u64"}, /* 2^64 */
      {"start_wall_ns", "\"-1\"", "is not a decimal u64"},
      {"start_wall_ns", "\"+1\"", "is not a decimal u64"},
      {"start_wall_ns", "\" 1\"", "is not a decimal u64"},
      {"start_wall_ns", "\"1e3\"", "is not a decimal u64"},
      {"start_wall_ns", "\"0x10\"", "is not a decimal u64"},
      {"env", "[]", "field \"env\" is not an object"},
      {"env", "{\"NCCL_X\":1}", "env entry 0: value is not a string"},
      {"env", "{\"NCCL_A\":\"1\",\"\":\"x\"}", "env entry 1: empty name"},
      {"env", name65, "env entry 0: name is 65 bytes, limit 64"},
      {"env", value257, "env entry 0: value is 257 bytes, limit 256"},
      {"env", "{\"NCCL_X\":\"a\\u0000\"}", "a string contains \\u0000"},
      {"env", "{\"NCCL_\\u0000X\":\"a\"}", "a string contains \\u0000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_hostile(true, &cases[i]);
    if (tl_case_failed) return;
  }
  /* Keys are case-sensitive. */
  field upper[sizeof hello_fields / sizeof hello_fields[0]];
  memcpy(upper, hello_fields, sizeof upper);
  upper[3].key = "PID";
  char err[256];
  size_t n = json_with(upper, sizeof upper / sizeof upper[0], NULL, NULL);
  CHECK(nt_hello_decode(jbuf, n, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: field \"pid\" missing");
  /* An escaped backslash before "u0000" is text, not a NUL. */
  n = json_with(hello_fields, sizeof hello_fields / sizeof hello_fields[0], "host",
                "\"a\\\\u0000\"");
  CHECK(nt_hello_decode(jbuf, n, &hello, err, sizeof err) == 0);
  CHECK_STR(hello.host, "a\\u0000");
}

static void too_many_environment_variables_are_rejected(void) {
  size_t o = 0;
  o += (size_t)snprintf(jbuf + o, sizeof jbuf - o,
                        "{\"v\":\"1.0\",\"type\":\"hello\",\"host\":\"h\",\"pid\":5,\"abi\":5,"
                        "\"start_wall_ns\":\"1\",\"env\":{");
  for (int i = 0; i <= NT_MAX_ENV; i++)
    o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "%s\"NCCL_%d\":\"x\"", i ? "," : "", i);
  o += (size_t)snprintf(jbuf + o, sizeof jbuf - o, "}}");
  char err[256];
  CHECK(nt_hello_decode(jbuf, o, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: env: more than 256 variables");
  CHECK(hello.nenv == 0);
}

static void hostile_comm_fields_are_rejected_by_name(void) {
  static char name65[80];
  snprintf(name65, sizeof name65, "\"%065d\"", 0);
  const hostile cases[] = {
      {"v", "\"3.1\"", "comm: unsupported protocol major version 3 (this nccltop reads 1)"},
      {"type", "\"hello\"", "field \"type\" is not \"comm\""},
      {"pid", "\"1\"", "field \"pid\" is not a number"},
      {"hash", "\"00000000000000f\"", "field \"hash\" is not 16 hex digits"},
      {"hash", "\"000000000000000ff\"", "is not 16 hex digits"},
      {"hash", "\"0x000000000000ff\"", "is not 16 hex digits"},
      {"hash", "\"+00000000000000f\"", "is not 16 hex digits"},
      {"hash", "\" 00000000000000f\"", "is not 16 hex digits"},
      {"hash", "\"00000000000000fg\"", "is not 16 hex digits"},
      {"hash", "255", "field \"hash\" is not a string"},
      {"hash", NULL, "field \"hash\" missing"},
      {"name", name65, "field \"name\" is 65 bytes, limit 64"},
      {"name", "[]", "field \"name\" is not a string"},
      {"rank", "-2", "field \"rank\" out of range"},
      {"nranks", "\"8\"", "field \"nranks\" is not a number"},
      {"nranks", "16777217", "field \"nranks\" out of range"},
      {"nnodes", "0.5", "field \"nnodes\" is not an integer"},
      {"nnodes", NULL, "field \"nnodes\" missing"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_hostile(false, &cases[i]);
    if (tl_case_failed) return;
  }
}

static void malformed_json_documents_are_rejected(void) {
  char err[256];
  nt_comm_info c;
  size_t n = json_with(comm_fields, sizeof comm_fields / sizeof comm_fields[0], NULL, NULL);
  CHECK(nt_comm_decode(jbuf, n, &c, err, sizeof err) == 0);
  static const struct {
    const char *tail, *err;
  } trailing[] = {
      {" x", "comm: trailing bytes after the JSON value"},
      {"{}", "trailing bytes"},
      {"\v", "trailing bytes"}, /* not JSON whitespace */
  };
  for (size_t i = 0; i < 3; i++) {
    memcpy(jbuf + n, trailing[i].tail, strlen(trailing[i].tail) + 1);
    CHECK(nt_comm_decode(jbuf, strlen(jbuf), &c, err, sizeof err) == -1);
    CHECK(strstr(err, trailing[i].err) != NULL);
  }
  /* The length bounds the parse: a prefix is malformed, bytes past len are
   * never read (the copy is exactly len bytes). */
  jbuf[n] = '\0';
  for (size_t len = 0; len < n; len++) {
    char *exact = malloc(len ? len : 1);
    CHECK(exact != NULL);
    memcpy(exact, jbuf, len);
    int rc = nt_comm_decode(exact, len, &c, err, sizeof err);
    free(exact);
    CHECK(rc == -1);
  }
  char *exact = malloc(n);
  CHECK(exact != NULL);
  memcpy(exact, jbuf, n);
  int rc = nt_comm_decode(exact, n, &c, err, sizeof err);
  free(exact);
  CHECK(rc == 0);
  static const struct {
    const char *json, *err;
  } bad[] = {
      {"[1,2,3]", "comm: not a JSON object"},
      {"\"str\"", "comm: not a JSON object"},
      {"", "comm: malformed JSON"},
      {"{\"v\":\"1.0\",", "comm: malformed JSON"},
      {"{\"v\":\"1.0\"\x00}", "comm: contains a NUL byte"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t len = strlen(bad[i].json) + (strstr(bad[i].err, "NUL") ? 2 : 0);
    CHECK(nt_comm_decode(bad[i].json, len, &c, err, sizeof err) == -1);
    CHECK(strstr(err, bad[i].err) != NULL);
  }
  CHECK(nt_comm_decode(NULL, 0, &c, err, sizeof err) == -1);
  /* Over the size limit: refused before parsing. */
  memset(jbuf, ' ', NT_MAX_JSON_BYTES + 1);
  jbuf[0] = '{';
  jbuf[1] = '}';
  CHECK(nt_hello_decode(jbuf, NT_MAX_JSON_BYTES + 1, &hello, err, sizeof err) == -1);
  CHECK_STR(err, "hello: 262145 bytes exceed the limit of 262144");
  /* Deep nesting hits cJSON's nesting limit, not the stack. */
  size_t depth = 5000, o = 0;
  jbuf[o++] = '{';
  memcpy(jbuf + o, "\"a\":", 4);
  o += 4;
  for (size_t i = 0; i < depth; i++) jbuf[o++] = '[';
  for (size_t i = 0; i < depth; i++) jbuf[o++] = ']';
  jbuf[o++] = '}';
  CHECK(nt_hello_decode(jbuf, o, &hello, err, sizeof err) == -1);
  CHECK(strstr(err, "malformed JSON") != NULL);
}

/* ---------------------------------------------------------------------- */
/* Sanitizing                                                              */

static void sanitize_escapes_controls_and_invalid_utf8(void) {
  char out[64];
  static const struct {
    const char *in;
    size_t len;
    const char *out;
  } cases[] = {
      {"a\x1b[31mb", 7, "a\\x1B[31mb"},                /* ESC: a colour CSI */
      {"\x1b]0;title\x07", 10, "\\x1B]0;title\\x07"},  /* OSC set-title, BEL */
      {"tab\there\r\n", 10, "tab\\x09here\\x0D\\x0A"}, /* C0 */
      {"\x7f", 1, "\\x7F"},                            /* DEL */
      {"\x9b"
       "2J",
       3, "\\x9B2J"}, /* a raw 8-bit CSI byte */
      {"\xc2\x9b"
       "2J",
       4, "\\xC2\\x9B2J"},                                             /* C1 CSI as UTF-8 */
      {"\xc2\x80\xc2\x9f\xc2\xa0", 6, "\\xC2\\x80\\xC2\\x9F\xc2\xa0"}, /* C1 ends at U+009F */
      {"caf\xc3\xa9", 5, "caf\xc3\xa9"},                               /* é kept */
      {"\xe4\xb8\xad", 3, "\xe4\xb8\xad"},                             /* CJK kept */
      {"\xf0\x9f\x98\x80!", 5, "\xf0\x9f\x98\x80!"},                   /* emoji kept */
      {"\xc0\xaf", 2, "\\xC0\\xAF"},                                   /* overlong '/' */
      {"\xe0\x80\xaf", 3, "\\xE0\\x80\\xAF"},                          /* overlong, 3 bytes */
      {"\xed\xa0\x80", 3, "\\xED\\xA0\\x80"},                          /* a surrogate */
      {"\xf4\x90\x80\x80", 4, "\\xF4\\x90\\x80\\x80"},                 /* above U+10FFFF */
      {"\xff\xfe", 2, "\\xFF\\xFE"},                                   /* never UTF-8 */
      {"\x80", 1, "\\x80"},                                            /* stray continuation */
      {"\xe2\x82", 2, "\\xE2\\x82"},                                   /* truncated at the end */
      {"\xe2\x82"
       "A",
       3, "\\xE2\\x82A"},                /* interrupted */
      {"\xe2\x82\xac", 2, "\\xE2\\x82"}, /* srclen cuts the sequence */
      {"ab\0\x1b", 4, "ab"},             /* a NUL ends the text */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nt_sanitize(cases[i].in, cases[i].len, out, sizeof out);
    if (strcmp(out, cases[i].out) != 0) fprintf(stderr, "    case %zu\n", i);
    CHECK_STR(out, cases[i].out);
  }
  CHECK_STR(nt_sanitize(NULL, 3, out, sizeof out), "");
}

static void sanitize_never_splits_at_the_cap(void) {
  char out[16];
  CHECK_STR(nt_sanitize("abc\x1b", 4, out, 8), "abc\\x1B"); /* 7 + NUL fits */
  CHECK_STR(nt_sanitize("abc\x1b", 4, out, 7), "abc");      /* never a split escape */
  CHECK_STR(nt_sanitize("ab\xc3\xa9", 4, out, 5), "ab\xc3\xa9");
  CHECK_STR(nt_sanitize("ab\xc3\xa9", 4, out, 4), "ab"); /* never a split character */
  CHECK_STR(nt_sanitize("\xf0\x9f\x98\x80", 4, out, 5), "\xf0\x9f\x98\x80");
  CHECK_STR(nt_sanitize("\xf0\x9f\x98\x80", 4, out, 4), "");
  CHECK_STR(nt_sanitize("abc", 3, out, 1), "");
  CHECK_STR(nt_sanitize("abcdef", 6, out, 4), "abc");
  out[0] = 'x';
  CHECK(nt_sanitize("abc", 3, out, 0) == out && out[0] == 'x'); /* cap 0: untouched */
  /* Exactly srclen bytes are read. */
  char *exact = malloc(3);
  CHECK(exact != NULL);
  memcpy(exact, "a\xe2\x82", 3);
  nt_sanitize(exact, 3, out, sizeof out);
  free(exact);
  CHECK_STR(out, "a\\xE2\\x82");
}

/* An independent check of the output: well-formed UTF-8 with no C0, DEL or
 * C1 code point. */
static bool terminal_safe(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp;
    int n;
    if (*p < 0x80)
      cp = *p, n = 1;
    else if ((*p & 0xE0) == 0xC0)
      cp = *p & 0x1F, n = 2;
    else if ((*p & 0xF0) == 0xE0)
      cp = *p & 0x0F, n = 3;
    else if ((*p & 0xF8) == 0xF0)
      cp = *p & 0x07, n = 4;
    else
      return false;
    for (int i = 1; i < n; i++) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (p[i] & 0x3F);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return false;
    p += n;
  }
  return true;
}

static void sanitized_output_is_always_terminal_safe(void) {
  char out[32];
  unsigned char in[4];
  /* Every two-byte input, at every small cap. */
  for (unsigned v = 0; v < 0x10000; v++) {
    in[0] = (unsigned char)(v >> 8);
    in[1] = (unsigned char)v;
    for (size_t cap = 1; cap <= 10; cap += 3) {
      nt_sanitize((const char *)in, 2, out, cap);
      CHECK(strlen(out) < cap);
      CHECK(terminal_safe(out));
    }
  }
  /* Pseudo-random 3- and 4-byte inputs biased towards multi-byte leads. */
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < 200000; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    for (int i = 0; i < 4; i++) in[i] = (unsigned char)(x >> (8 * i));
    in[0] |= 0xC0;
    if (k & 1) in[1] = (unsigned char)(0x80 | (in[1] & 0x3F));
    nt_sanitize((const char *)in, 3 + (size_t)(k & 2) / 2, out, sizeof out);
    CHECK(terminal_safe(out));
  }
}

static void names_are_the_documented_ones(void) {
  static const char *const proxy[] = {"idle", "active", "sleep", "wakeup", "append"};
  for (int i = 0; i < NT_PROXY_NSTATES; i++) CHECK_STR(nt_proxy_state_name(i), proxy[i]);
  CHECK_STR(nt_proxy_state_name(NT_PROXY_NSTATES), "unknown");
  CHECK_STR(nt_proxy_state_name(NT_PROXY_UNKNOWN), "unknown");
  CHECK_STR(nt_proxy_state_name(-1), "unknown");
  static const char *const wait[] = {"send_gpu_wait", "send_peer_wait",  "send_net_wait",
                                     "recv_net_wait", "recv_flush_wait", "recv_gpu_wait"};
  for (int i = 0; i < NT_WAIT_COUNT; i++) CHECK_STR(nt_wait_name(i), wait[i]);
  CHECK_STR(nt_wait_name(NT_WAIT_COUNT), "none");
  CHECK_STR(nt_wait_name(NT_WAIT_NONE), "none");
  CHECK_STR(nt_wait_name(-3), "none");
  CHECK_STR(nt_wait_name(nt_dir_wait(NT_DIR_SEND, 2)), "send_net_wait");
  CHECK_STR(nt_wait_name(nt_dir_wait(NT_DIR_RECV, 1)), "recv_flush_wait");
}

int main(void) {
  TEST_RUN(encoder_writes_the_documented_layout);
  TEST_RUN(snapshot_round_trip_keeps_every_field);
  TEST_RUN(largest_snapshot_fits_the_message_limit);
  TEST_RUN(every_truncation_is_rejected);
  TEST_RUN(wrong_magic_is_not_a_snapshot);
  TEST_RUN(unknown_major_version_is_rejected_by_name);
  TEST_RUN(newer_minor_extensions_are_skipped);
  TEST_RUN(header_fields_are_checked);
  TEST_RUN(counts_over_limits_are_rejected);
  TEST_RUN(duplicate_missing_and_misplaced_sections_are_rejected);
  TEST_RUN(out_of_range_values_are_rejected);
  TEST_RUN(encoder_refuses_small_buffers_and_oversized_tables);
  TEST_RUN(clear_keeps_the_header_and_empties_the_tables);
  TEST_RUN(hello_round_trip_keeps_every_field);
  TEST_RUN(hello_at_every_limit_round_trips);
  TEST_RUN(json_encoders_return_zero_when_the_buffer_is_short);
  TEST_RUN(comm_round_trip_keeps_every_field);
  TEST_RUN(hostile_hello_fields_are_rejected_by_name);
  TEST_RUN(too_many_environment_variables_are_rejected);
  TEST_RUN(hostile_comm_fields_are_rejected_by_name);
  TEST_RUN(malformed_json_documents_are_rejected);
  TEST_RUN(sanitize_escapes_controls_and_invalid_utf8);
  TEST_RUN(sanitize_never_splits_at_the_cap);
  TEST_RUN(sanitized_output_is_always_terminal_safe);
  TEST_RUN(names_are_the_documented_ones);
  return TEST_DONE();
}

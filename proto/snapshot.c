/* The binary snapshot: encoder (used by the plugin's publisher thread, no
 * allocation) and strict decoder (the viewer's security boundary). Layout in
 * PROTOCOL.md; everything little-endian, each field written and read on its
 * own so neither the host's byte order nor its struct layout reaches the
 * wire. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccltop_proto.h"

#define MAGIC          "NCTS"
#define HEADER_FIXED   45 /* bytes before the host name */
#define SECTION_HEADER 8
#define TABLE_HEADER   8

enum { SEC_PROCESS = 1, SEC_COMMS = 2, SEC_PROXY = 3, SEC_CHANNELS = 4, SEC_KERNELS = 5, SEC_MAX };
static const char *const sec_name[SEC_MAX] = {"", "process", "comm", "proxy", "channel", "kernel"};

/* Record sizes of this minor version; newer minors may only make them longer. */
#define PROCESS_LEN 61
#define COMM_LEN    36
#define PROXY_LEN   80
#define CHANNEL_LEN 88
#define KERNEL_LEN  32

nt_snapshot *nt_snapshot_new(void) {
  nt_snapshot *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->comms = calloc(NT_MAX_COMMS, sizeof *s->comms);
  s->proxy = calloc(NT_MAX_PROXY_THREADS, sizeof *s->proxy);
  s->channels = calloc(NT_MAX_CHANNEL_ROWS, sizeof *s->channels);
  s->kernels = calloc(NT_MAX_KERNEL_ROWS, sizeof *s->kernels);
  if (!s->comms || !s->proxy || !s->channels || !s->kernels) {
    nt_snapshot_free(s);
    return NULL;
  }
  return s;
}

void nt_snapshot_free(nt_snapshot *s) {
  if (!s) return;
  free(s->comms);
  free(s->proxy);
  free(s->channels);
  free(s->kernels);
  free(s);
}

void nt_snapshot_clear(nt_snapshot *s) {
  if (!s) return;
  s->ncomms = s->nproxy = s->nchannels = s->nkernels = 0;
  memset(&s->process, 0, sizeof s->process);
}

/* ---- writing ---- */

/* Little-endian scalars. On a little-endian host a scalar memcpy is the
 * byte order already (one move; byte-wise stores through uint8_t * would
 * make the compiler reload every pointer after each byte); elsewhere the
 * bytes are spelled out. Struct layout never reaches the wire either way:
 * every field is written on its own. */
#ifndef NT_HOST_LE /* -DNT_HOST_LE=0 tests the portable path */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NT_HOST_LE 1
#else
#define NT_HOST_LE 0
#endif
#endif

static uint8_t *put8(uint8_t *p, uint8_t v) {
  *p = v;
  return p + 1;
}
static uint8_t *put16(uint8_t *p, uint16_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 2);
  } else {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
  }
  return p + 2;
}
static uint8_t *put32(uint8_t *p, uint32_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
  }
  return p + 4;
}
static uint8_t *put64(uint8_t *p, uint64_t v) {
  if (NT_HOST_LE) {
    memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
  }
  return p + 8;
}
static uint8_t *zeros(uint8_t *p, size_t n) {
  memset(p, 0, n);
  return p + n;
}

size_t nt_snapshot_encoded_max(const nt_snapshot *s) {
  return HEADER_FIXED + NT_MAX_HOST + SECTION_HEADER + PROCESS_LEN +
         4 * (SECTION_HEADER + TABLE_HEADER) + (size_t)s->ncomms * COMM_LEN +
         (size_t)s->nproxy * PROXY_LEN + (size_t)s->nchannels * CHANNEL_LEN +
         (size_t)s->nkernels * KERNEL_LEN;
}

static uint8_t *table_start(uint8_t *p, int type, uint32_t count, uint16_t reclen) {
  p = put16(p, (uint16_t)type);
  p = put16(p, 0);
  p = put32(p, TABLE_HEADER + count * (uint32_t)reclen);
  p = put32(p, count);
  p = put16(p, reclen);
  return put16(p, 0);
}

size_t nt_snapshot_encode(const nt_snapshot *s, uint8_t *buf, size_t cap) {
  if (!s || !buf) return 0;
  if (s->ncomms > NT_MAX_COMMS || s->nproxy > NT_MAX_PROXY_THREADS ||
      s->nchannels > NT_MAX_CHANNEL_ROWS || s->nkernels > NT_MAX_KERNEL_ROWS)
    return 0;
  if (cap < nt_snapshot_encoded_max(s)) return 0;
  size_t hostlen = strnlen(s->host, NT_MAX_HOST);
  uint8_t *p = buf;
  memcpy(p, MAGIC, 4);
  p += 4;
  p = put16(p, NT_PROTO_MAJOR);
  p = put16(p, NT_PROTO_MINOR);
  p = put16(p, (uint16_t)(HEADER_FIXED + hostlen));
  p = put16(p, s->final ? 1 : 0);
  p = put64(p, s->seq);
  p = put32(p, s->pid);
  p = put32(p, s->interval_ms);
  p = put64(p, s->mono_ns);
  p = put64(p, s->wall_ns);
  p = put8(p, (uint8_t)hostlen);
  memcpy(p, s->host, hostlen);
  p += hostlen;

  const nt_process_counters *c = &s->process;
  p = put16(p, SEC_PROCESS);
  p = put16(p, 0);
  p = put32(p, PROCESS_LEN);
  p = put64(p, c->events);
  p = put64(p, c->dropped_events);
  p = put64(p, c->unknown_events);
  p = put64(p, c->foreign_ops);
  p = put64(p, c->reclaimed_ops);
  p = put64(p, c->dropped_rows);
  p = put64(p, c->unsent_messages);
  p = put32(p, c->event_mask);
  p = put8(p, c->abi_version);

  /* The comm table first: the rows after it refer to it by index. */
  p = table_start(p, SEC_COMMS, s->ncomms, COMM_LEN);
  for (uint32_t i = 0; i < s->ncomms; i++) {
    const nt_comm_row *r = &s->comms[i];
    p = put64(p, r->comm_hash);
    p = put32(p, (uint32_t)r->rank);
    p = put32(p, (uint32_t)r->nranks);
    p = put32(p, (uint32_t)r->nnodes);
    p = put64(p, r->colls_enqueued);
    p = put64(p, r->p2ps_enqueued);
  }
  p = table_start(p, SEC_PROXY, s->nproxy, PROXY_LEN);
  for (uint32_t i = 0; i < s->nproxy; i++) {
    const nt_proxy_row *r = &s->proxy[i];
    p = put16(p, r->comm_index);
    p = put8(p, r->state);
    p = zeros(p, 1);
    p = put32(p, r->tid);
    p = put64(p, r->state_age_ns);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) p = put64(p, r->state_ns[k]);
    p = put64(p, r->appends);
    p = put64(p, r->appended_ops);
    p = put64(p, r->wakeups);
  }
  p = table_start(p, SEC_CHANNELS, s->nchannels, CHANNEL_LEN);
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *r = &s->channels[i];
    p = put16(p, r->comm_index);
    p = put8(p, r->channel);
    p = put8(p, r->dir);
    p = put32(p, (uint32_t)r->peer);
    for (int k = 0; k < 3; k++) p = put64(p, r->wait_ns[k]);
    p = put64(p, r->steps);
    p = put64(p, r->bytes);
    p = put64(p, r->ops_started);
    p = put64(p, r->ops_done);
    p = put32(p, (uint32_t)r->cur_step);
    p = put8(p, r->cur_wait);
    p = zeros(p, 3);
    p = put64(p, r->cur_wait_age_ns);
    p = put64(p, r->progress_age_ns);
  }
  p = table_start(p, SEC_KERNELS, s->nkernels, KERNEL_LEN);
  for (uint32_t i = 0; i < s->nkernels; i++) {
    const nt_kernel_row *r = &s->kernels[i];
    p = put16(p, r->comm_index);
    p = put8(p, r->channel);
    p = zeros(p, 5);
    p = put64(p, r->count);
    p = put64(p, r->busy_ns);
    p = put64(p, r->last_ns);
  }
  return (size_t)(p - buf);
}

/* ---- reading ---- */

/* Callers check that enough bytes remain before reading a group of fields;
 * the getters themselves do not. */
typedef struct {
  const uint8_t *p, *end;
} cursor;

static size_t left(const cursor *c) {
  return (size_t)(c->end - c->p);
}
static uint8_t get8(cursor *c) {
  return *c->p++;
}
static uint16_t get16(cursor *c) {
  uint16_t v;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 2);
  else
    v = (uint16_t)(c->p[0] | c->p[1] << 8);
  c->p += 2;
  return v;
}
static uint32_t get32(cursor *c) {
  uint32_t v = 0;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 4);
  else
    for (int i = 0; i < 4; i++) v |= (uint32_t)c->p[i] << (8 * i);
  c->p += 4;
  return v;
}
static uint64_t get64(cursor *c) {
  uint64_t v = 0;
  if (NT_HOST_LE)
    memcpy(&v, c->p, 8);
  else
    for (int i = 0; i < 8; i++) v |= (uint64_t)c->p[i] << (8 * i);
  c->p += 8;
  return v;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Table header of a section: count and record length, checked against the
 * limit, the record size we know and the section's length. */
static int table(cursor *c, int type, uint32_t limit, uint16_t known, uint32_t *count,
                 uint16_t *reclen, char *err, size_t errlen) {
  const char *what = sec_name[type];
  if (left(c) < TABLE_HEADER) return fail(err, errlen, "%s section: truncated table header", what);
  *count = get32(c);
  *reclen = get16(c);
  (void)get16(c);
  if (*count > limit)
    return fail(err, errlen, "%s section: count %u exceeds limit %u", what, *count, limit);
  if (*reclen < known)
    return fail(err, errlen, "%s section: record length %u is shorter than %u", what, *reclen,
                known);
  if ((uint64_t)*count * *reclen > left(c))
    return fail(err, errlen, "%s section: %u records of %u bytes exceed its %zu bytes", what,
                *count, *reclen, left(c));
  return 0;
}

/* Proxy rows may belong to no known communicator; channel and kernel rows
 * always name one (the plugin drops rows it cannot attribute), and the
 * viewer indexes the comm table with them. */
static bool comm_ok(uint16_t ci, const nt_snapshot *s, bool allow_none) {
  return ci < s->ncomms || (allow_none && ci == NT_NO_COMM);
}

static int decode_process(cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  if (left(c) < PROCESS_LEN)
    return fail(err, errlen, "process section: %zu bytes, expected at least %d", left(c),
                PROCESS_LEN);
  nt_process_counters *pc = &s->process;
  pc->events = get64(c);
  pc->dropped_events = get64(c);
  pc->unknown_events = get64(c);
  pc->foreign_ops = get64(c);
  pc->reclaimed_ops = get64(c);
  pc->dropped_rows = get64(c);
  pc->unsent_messages = get64(c);
  pc->event_mask = get32(c);
  pc->abi_version = get8(c);
  return 0; /* bytes after these: a newer minor's fields */
}

static int decode_comms(cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (table(c, SEC_COMMS, NT_MAX_COMMS, COMM_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_comm_row *r = &s->comms[i];
    r->comm_hash = get64(c);
    r->rank = (int32_t)get32(c);
    r->nranks = (int32_t)get32(c);
    r->nnodes = (int32_t)get32(c);
    r->colls_enqueued = get64(c);
    r->p2ps_enqueued = get64(c);
    c->p = next;
  }
  s->ncomms = n;
  return 0;
}

static int decode_proxy(cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (table(c, SEC_PROXY, NT_MAX_PROXY_THREADS, PROXY_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_proxy_row *r = &s->proxy[i];
    r->comm_index = get16(c);
    r->state = get8(c);
    (void)get8(c);
    r->tid = get32(c);
    r->state_age_ns = get64(c);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) r->state_ns[k] = get64(c);
    r->appends = get64(c);
    r->appended_ops = get64(c);
    r->wakeups = get64(c);
    c->p = next;
    if (r->state >= NT_PROXY_NSTATES && r->state != NT_PROXY_UNKNOWN)
      return fail(err, errlen, "proxy row %u: bad state %u", i, r->state);
    if (!comm_ok(r->comm_index, s, true))
      return fail(err, errlen, "proxy row %u: comm index %u out of range (%u comms)", i,
                  r->comm_index, s->ncomms);
  }
  s->nproxy = n;
  return 0;
}

static int decode_channels(cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (table(c, SEC_CHANNELS, NT_MAX_CHANNEL_ROWS, CHANNEL_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_channel_row *r = &s->channels[i];
    r->comm_index = get16(c);
    r->channel = get8(c);
    r->dir = get8(c);
    r->peer = (int32_t)get32(c);
    for (int k = 0; k < 3; k++) r->wait_ns[k] = get64(c);
    r->steps = get64(c);
    r->bytes = get64(c);
    r->ops_started = get64(c);
    r->ops_done = get64(c);
    r->cur_step = (int32_t)get32(c);
    r->cur_wait = get8(c);
    c->p += 3;
    r->cur_wait_age_ns = get64(c);
    r->progress_age_ns = get64(c);
    c->p = next;
    if (r->dir > NT_DIR_RECV)
      return fail(err, errlen, "channel row %u: bad direction %u", i, r->dir);
    if (r->cur_wait >= NT_WAIT_COUNT && r->cur_wait != NT_WAIT_NONE)
      return fail(err, errlen, "channel row %u: bad wait state %u", i, r->cur_wait);
    if (!comm_ok(r->comm_index, s, false))
      return fail(err, errlen, "channel row %u: comm index %u out of range (%u comms)", i,
                  r->comm_index, s->ncomms);
    /* The plugin clamps done to started; in flight = started - done. */
    if (r->ops_done > r->ops_started)
      return fail(err, errlen, "channel row %u: more ops done than started", i);
  }
  s->nchannels = n;
  return 0;
}

static int decode_kernels(cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (table(c, SEC_KERNELS, NT_MAX_KERNEL_ROWS, KERNEL_LEN, &n, &rl, err, errlen)) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_kernel_row *r = &s->kernels[i];
    r->comm_index = get16(c);
    r->channel = get8(c);
    c->p += 5;
    r->count = get64(c);
    r->busy_ns = get64(c);
    r->last_ns = get64(c);
    c->p = next;
    if (!comm_ok(r->comm_index, s, false))
      return fail(err, errlen, "kernel row %u: comm index %u out of range (%u comms)", i,
                  r->comm_index, s->ncomms);
  }
  s->nkernels = n;
  return 0;
}

static int decode_section(int type, cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  switch (type) {
  case SEC_PROCESS: return decode_process(c, s, err, errlen);
  case SEC_COMMS: return decode_comms(c, s, err, errlen);
  case SEC_PROXY: return decode_proxy(c, s, err, errlen);
  case SEC_CHANNELS: return decode_channels(c, s, err, errlen);
  case SEC_KERNELS: return decode_kernels(c, s, err, errlen);
  default: return 0; /* a newer minor's section: skipped */
  }
}

static int decode(const uint8_t *buf, size_t len, nt_snapshot *s, char *err, size_t errlen) {
  if (len > NT_MAX_MESSAGE_BYTES)
    return fail(err, errlen, "snapshot of %zu bytes exceeds the limit of %u", len,
                NT_MAX_MESSAGE_BYTES);
  if (len < 4 || memcmp(buf, MAGIC, 4) != 0) return fail(err, errlen, "not an nccltop snapshot");
  if (len < 8) return fail(err, errlen, "truncated header (%zu bytes)", len);
  cursor c = {buf + 4, buf + len};
  uint16_t major = get16(&c), minor = get16(&c);
  if (major != NT_PROTO_MAJOR)
    return fail(err, errlen, "unsupported protocol major version %u (this nccltop reads %u)", major,
                NT_PROTO_MAJOR);
  if (len < HEADER_FIXED) return fail(err, errlen, "truncated header (%zu bytes)", len);
  uint16_t header_len = get16(&c), flags = get16(&c);
  s->major = major;
  s->minor = minor;
  s->final = flags & 1; /* other bits: a newer minor's flags */
  s->seq = get64(&c);
  s->pid = get32(&c);
  s->interval_ms = get32(&c);
  s->mono_ns = get64(&c);
  s->wall_ns = get64(&c);
  uint8_t hostlen = get8(&c);
  if (hostlen > NT_MAX_HOST)
    return fail(err, errlen, "host name length %u exceeds limit %d", hostlen, NT_MAX_HOST);
  if (header_len < HEADER_FIXED + hostlen)
    return fail(err, errlen, "header length %u is shorter than its %u-byte host name", header_len,
                hostlen);
  if (header_len > len)
    return fail(err, errlen, "header length %u exceeds the message (%zu bytes)", header_len, len);
  if (memchr(c.p, '\0', hostlen)) return fail(err, errlen, "host name contains a NUL byte");
  memcpy(s->host, c.p, hostlen);
  s->host[hostlen] = '\0';
  c.p = buf + header_len; /* newer minors may append header fields */
  bool seen[SEC_MAX] = {false};
  while (c.p < c.end) {
    if (left(&c) < SECTION_HEADER)
      return fail(err, errlen, "truncated section header (%zu bytes)", left(&c));
    uint16_t type = get16(&c);
    (void)get16(&c);
    uint32_t slen = get32(&c);
    if (slen > left(&c))
      return fail(err, errlen, "section %u: length %u exceeds the %zu bytes left", type, slen,
                  left(&c));
    if (type > 0 && type < SEC_MAX) {
      if (seen[type]) return fail(err, errlen, "%s section appears twice", sec_name[type]);
      seen[type] = true;
      /* Rows refer to communicators: the comm table must come first. */
      if (type > SEC_COMMS && !seen[SEC_COMMS])
        return fail(err, errlen, "%s section before the comm section", sec_name[type]);
    }
    cursor sec = {c.p, c.p + slen};
    if (decode_section(type, &sec, s, err, errlen) != 0) return -1;
    c.p += slen;
  }
  /* A 1.x publisher always writes every section, so a missing one means
   * the message was cut short. */
  for (int t = SEC_PROCESS; t < SEC_MAX; t++)
    if (!seen[t]) return fail(err, errlen, "%s section missing", sec_name[t]);
  return 0;
}

int nt_snapshot_decode(const uint8_t *buf, size_t len, nt_snapshot *s, char *err, size_t errlen) {
  if (!buf || !s) return fail(err, errlen, "no buffer");
  nt_snapshot_clear(s);
  int rc = decode(buf, len, s, err, errlen);
  if (rc != 0) nt_snapshot_clear(s); /* never half a snapshot */
  return rc;
}

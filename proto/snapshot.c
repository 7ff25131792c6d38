/* The binary snapshot: encoder (used by the plugin's publisher thread, no
 * allocation) and strict decoder (the viewer's security boundary). Layout in
 * PROTOCOL.md; everything little-endian, each field written and read on its
 * own so neither the host's byte order nor its struct layout reaches the
 * wire. */
#include <stdlib.h>

#include "wire.h"

#define MAGIC        "NCTS"
#define HEADER_FIXED 45 /* bytes before the host name */

/* Every field, its record sizes and version gates come from the row tables
 * (snapshot_rows.h, through wire.h's macros); newer minors may only make a
 * record longer. A message is read as its own minor version says: a 1.0
 * message needs the 1.0 sizes and its 1.1 fields are 0 (bytes after the 1.0
 * fields are skipped); a 1.1 or later message needs the 1.1 sizes, as it
 * needs every 1.1 section, so a field cut off is an error, never a silent 0.
 * The process section's bytes in this version's messages: */
static size_t process_len(void) {
  const int minor = NT_PROTO_MINOR;
  return NT_ROW_LEN(NT_PROCESS_ROW);
}

nt_snapshot *nt_snapshot_new(void) {
  nt_snapshot *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->comms = calloc(NT_MAX_COMMS, sizeof *s->comms);
  s->proxy = calloc(NT_MAX_PROXY_THREADS, sizeof *s->proxy);
  s->channels = calloc(NT_MAX_CHANNEL_ROWS, sizeof *s->channels);
  s->kernels = calloc(NT_MAX_KERNEL_ROWS, sizeof *s->kernels);
  s->ops = calloc(NT_MAX_OP_ROWS, sizeof *s->ops);
  s->phases = calloc(NT_MAX_PHASES, sizeof *s->phases);
  s->oplog = calloc(NT_MAX_OPLOG, sizeof *s->oplog);
  s->seq_rows = calloc(NT_MAX_SEQ_ROWS, sizeof *s->seq_rows);
  s->net = calloc(NT_MAX_NET_ROWS, sizeof *s->net);
  s->variants = calloc(NT_MAX_VARIANTS, sizeof *s->variants);
  if (!s->comms || !s->proxy || !s->channels || !s->kernels || !s->ops || !s->phases || !s->oplog ||
      !s->seq_rows || !s->net || !s->variants) {
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
  free(s->ops);
  free(s->phases);
  free(s->oplog);
  free(s->seq_rows);
  free(s->net);
  free(s->variants);
  free(s);
}

void nt_snapshot_clear(nt_snapshot *s) {
  if (!s) return;
  s->ncomms = s->nproxy = s->nchannels = s->nkernels = 0;
  s->nops = s->nphases = s->noplog = s->nseq = s->nnet = s->nvariants = 0;
  memset(&s->process, 0, sizeof s->process);
}

/* ---- writing ---- */

size_t nt_snapshot_encoded_max(const nt_snapshot *s) {
  const int minor = NT_PROTO_MINOR;
  return HEADER_FIXED + NT_MAX_HOST + NT_SECTION_HEADER + process_len() +
         4 * (NT_SECTION_HEADER + NT_TABLE_HEADER) + (size_t)s->ncomms * NT_ROW_LEN(NT_COMM_ROW) +
         (size_t)s->nproxy * NT_ROW_LEN(NT_PROXY_ROW) +
         (size_t)s->nchannels * NT_ROW_LEN(NT_CHANNEL_ROW) +
         (size_t)s->nkernels * NT_ROW_LEN(NT_KERNEL_ROW) + nt_ops_encoded_max(s);
}

size_t nt_snapshot_encode(const nt_snapshot *s, uint8_t *buf, size_t cap) {
  if (!s || !buf) return 0;
  if (s->ncomms > NT_MAX_COMMS || s->nproxy > NT_MAX_PROXY_THREADS ||
      s->nchannels > NT_MAX_CHANNEL_ROWS || s->nkernels > NT_MAX_KERNEL_ROWS ||
      s->nops > NT_MAX_OP_ROWS || s->nphases > NT_MAX_PHASES || s->noplog > NT_MAX_OPLOG ||
      s->nseq > NT_MAX_SEQ_ROWS || s->nnet > NT_MAX_NET_ROWS || s->nvariants > NT_MAX_VARIANTS)
    return 0;
  if (cap < nt_snapshot_encoded_max(s)) return 0;
  size_t hostlen = strnlen(s->host, NT_MAX_HOST);
  uint8_t *p = buf;
  memcpy(p, MAGIC, 4);
  p += 4;
  p = nt_put16(p, NT_PROTO_MAJOR);
  p = nt_put16(p, NT_PROTO_MINOR);
  p = nt_put16(p, (uint16_t)(HEADER_FIXED + hostlen));
  p = nt_put16(p, s->final ? 1 : 0);
  p = nt_put64(p, s->seq);
  p = nt_put32(p, s->pid);
  p = nt_put32(p, s->interval_ms);
  p = nt_put64(p, s->mono_ns);
  p = nt_put64(p, s->wall_ns);
  p = nt_put8(p, (uint8_t)hostlen);
  memcpy(p, s->host, hostlen);
  p += hostlen;

  const nt_process_counters *r = &s->process;
  p = nt_put16(p, NT_SEC_PROCESS);
  p = nt_put16(p, 0);
  p = nt_put32(p, (uint32_t)process_len());
  NT_ENCODE_ROW(NT_PROCESS_ROW)
  /* The comm table first: the rows after it refer to it by index. */
  NT_ENCODE_TABLE(p, NT_SEC_COMMS, NT_COMM_ROW, nt_comm_row, s->comms, s->ncomms);
  NT_ENCODE_TABLE(p, NT_SEC_PROXY, NT_PROXY_ROW, nt_proxy_row, s->proxy, s->nproxy);
  NT_ENCODE_TABLE(p, NT_SEC_CHANNELS, NT_CHANNEL_ROW, nt_channel_row, s->channels, s->nchannels);
  NT_ENCODE_TABLE(p, NT_SEC_KERNELS, NT_KERNEL_ROW, nt_kernel_row, s->kernels, s->nkernels);
  p = nt_ops_encode(s, p);
  return (size_t)(p - buf);
}

/* ---- reading ---- */

static int decode_process(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  const int minor = s->minor;
  size_t need = NT_ROW_LEN(NT_PROCESS_ROW);
  if (nt_left(c) < need)
    return nt_wire_fail(err, errlen, "process section: %zu bytes, expected at least %zu",
                        nt_left(c), need);
  const char *const what_ = "process";
  const long row_ = -1; /* checks name the section, not a row */
  nt_process_counters *r = &s->process;
  NT_DECODE_ROW(NT_PROCESS_ROW)
  return 0; /* bytes after these: a newer minor's fields */
}

static int decode_comms(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_COMMS, 0, NT_COMM_ROW, nt_comm_row, NT_MAX_COMMS, s->comms, s->ncomms,
                  NT_NO_RULE);
}

static int decode_proxy(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_PROXY, 0, NT_PROXY_ROW, nt_proxy_row, NT_MAX_PROXY_THREADS, s->proxy,
                  s->nproxy, NT_NO_RULE);
}

/* What the channel table cannot say: its counts and run state agree. */
static int channel_rule(const nt_channel_row *r, uint32_t i, const nt_snapshot *s, char *err,
                        size_t errlen) {
  (void)s;
  /* The plugin clamps done to started; in flight = started - done. */
  if (r->ops_done > r->ops_started)
    return nt_wire_fail(err, errlen, "channel row %u: more ops done than started", i);
  if (r->run_state != NT_RUN_UNKNOWN &&
      (r->ops_started == r->ops_done) != (r->run_state == NT_RUN_IDLE))
    return nt_wire_fail(err, errlen, "channel row %u: run state %s with %llu ops in flight", i,
                        nt_run_name(r->run_state),
                        (unsigned long long)(r->ops_started - r->ops_done));
  return 0;
}

static int decode_channels(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_CHANNELS, 0, NT_CHANNEL_ROW, nt_channel_row, NT_MAX_CHANNEL_ROWS,
                  s->channels, s->nchannels, channel_rule);
}

static int decode_kernels(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  NT_DECODE_TABLE(NT_SEC_KERNELS, 0, NT_KERNEL_ROW, nt_kernel_row, NT_MAX_KERNEL_ROWS, s->kernels,
                  s->nkernels, NT_NO_RULE);
}

static int decode_section(int type, nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  switch (type) {
  case NT_SEC_PROCESS: return decode_process(c, s, err, errlen);
  case NT_SEC_COMMS: return decode_comms(c, s, err, errlen);
  case NT_SEC_PROXY: return decode_proxy(c, s, err, errlen);
  case NT_SEC_CHANNELS: return decode_channels(c, s, err, errlen);
  case NT_SEC_KERNELS: return decode_kernels(c, s, err, errlen);
  default: return nt_ops_decode_section(type, c, s, err, errlen); /* 1.1, or skipped */
  }
}

static int decode(const uint8_t *buf, size_t len, nt_snapshot *s, char *err, size_t errlen) {
  if (len > NT_MAX_MESSAGE_BYTES)
    return nt_wire_fail(err, errlen, "snapshot of %zu bytes exceeds the limit of %u", len,
                        NT_MAX_MESSAGE_BYTES);
  if (len < 4 || memcmp(buf, MAGIC, 4) != 0)
    return nt_wire_fail(err, errlen, "not an nccltop snapshot");
  if (len < 8) return nt_wire_fail(err, errlen, "truncated header (%zu bytes)", len);
  nt_cursor c = {buf + 4, buf + len};
  uint16_t major = nt_get16(&c), minor = nt_get16(&c);
  if (major != NT_PROTO_MAJOR)
    return nt_wire_fail(err, errlen,
                        "unsupported protocol major version %u (this nccltop reads %u)", major,
                        NT_PROTO_MAJOR);
  if (len < HEADER_FIXED) return nt_wire_fail(err, errlen, "truncated header (%zu bytes)", len);
  uint16_t header_len = nt_get16(&c), flags = nt_get16(&c);
  s->major = major;
  s->minor = minor;
  s->final = flags & 1; /* other bits: a newer minor's flags */
  s->seq = nt_get64(&c);
  s->pid = nt_get32(&c);
  if (s->pid == 0 || s->pid > NT_PID_MAX)
    return nt_wire_fail(err, errlen, "pid %u is not a process id (1..%u)", s->pid, NT_PID_MAX);
  s->interval_ms = nt_get32(&c);
  s->mono_ns = nt_get64(&c);
  s->wall_ns = nt_get64(&c);
  uint8_t hostlen = nt_get8(&c);
  if (hostlen > NT_MAX_HOST)
    return nt_wire_fail(err, errlen, "host name length %u exceeds limit %d", hostlen, NT_MAX_HOST);
  if (header_len < HEADER_FIXED + hostlen)
    return nt_wire_fail(err, errlen, "header length %u is shorter than its %u-byte host name",
                        header_len, hostlen);
  if (header_len > len)
    return nt_wire_fail(err, errlen, "header length %u exceeds the message (%zu bytes)", header_len,
                        len);
  if (memchr(c.p, '\0', hostlen)) return nt_wire_fail(err, errlen, "host name contains a NUL byte");
  memcpy(s->host, c.p, hostlen);
  s->host[hostlen] = '\0';
  c.p = buf + header_len; /* newer minors may append header fields */
  bool seen[NT_SEC_MAX] = {false};
  while (c.p < c.end) {
    if (nt_left(&c) < NT_SECTION_HEADER)
      return nt_wire_fail(err, errlen, "truncated section header (%zu bytes)", nt_left(&c));
    uint16_t type = nt_get16(&c);
    (void)nt_get16(&c);
    uint32_t slen = nt_get32(&c);
    if (slen > nt_left(&c))
      return nt_wire_fail(err, errlen, "section %u: length %u exceeds the %zu bytes left", type,
                          slen, nt_left(&c));
    if (type > 0 && type < NT_SEC_MAX) {
      if (seen[type])
        return nt_wire_fail(err, errlen, "%s section appears twice", nt_sec_name[type]);
      seen[type] = true;
      /* Rows refer to communicators: the comm table must come first. */
      if (type > NT_SEC_COMMS && !seen[NT_SEC_COMMS])
        return nt_wire_fail(err, errlen, "%s section before the comm section", nt_sec_name[type]);
    }
    nt_cursor sec = {c.p, c.p + slen};
    if (decode_section(type, &sec, s, err, errlen) != 0) return -1;
    c.p += slen;
  }
  /* A 1.x publisher always writes every section its minor version has, so
   * a missing one means the message was cut short. */
  int last = minor >= 4 ? NT_SEC_MAX - 1 : minor >= 1 ? NT_SEC_LAST_1_3 : NT_SEC_LAST_1_0;
  for (int t = NT_SEC_PROCESS; t <= last; t++)
    if (!seen[t]) return nt_wire_fail(err, errlen, "%s section missing", nt_sec_name[t]);
  return 0;
}

int nt_snapshot_decode(const uint8_t *buf, size_t len, nt_snapshot *s, char *err, size_t errlen) {
  if (!buf || !s) return nt_wire_fail(err, errlen, "no buffer");
  nt_snapshot_clear(s);
  int rc = decode(buf, len, s, err, errlen);
  if (rc != 0) nt_snapshot_clear(s); /* never half a snapshot */
  return rc;
}

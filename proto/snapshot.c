/* The binary snapshot: encoder (used by the plugin's publisher thread, no
 * allocation) and strict decoder (the viewer's security boundary). Layout in
 * PROTOCOL.md; everything little-endian, each field written and read on its
 * own so neither the host's byte order nor its struct layout reaches the
 * wire. */
#include <stdlib.h>

#include "wire.h"

#define MAGIC        "NCTS"
#define HEADER_FIXED 45 /* bytes before the host name */

const char *const nt_sec_name[NT_SEC_MAX] = {"",        "process", "comm", "proxy",
                                             "channel", "kernel",  "ops",  "phase",
                                             "oplog",   "seq",     "net",  "variant"};

/* Record sizes of this minor version; newer minors may only make them
 * longer. A message is read as its own minor version says: a 1.0 message
 * needs the 1.0 sizes and its 1.1 fields are 0 (bytes after the 1.0 fields
 * are skipped); a 1.1 or later message needs the 1.1 sizes, as it needs
 * every 1.1 section, so a field cut off is an error, never a silent 0. */
#define PROCESS_LEN_1_0 61
#define PROCESS_LEN     86
#define COMM_LEN_1_0    36
#define COMM_LEN        84
#define PROXY_LEN       80
#define CHANNEL_LEN_1_1 88
#define CHANNEL_LEN     96
#define KERNEL_LEN_1_2  32
#define KERNEL_LEN      56

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
  return HEADER_FIXED + NT_MAX_HOST + NT_SECTION_HEADER + PROCESS_LEN +
         4 * (NT_SECTION_HEADER + NT_TABLE_HEADER) + (size_t)s->ncomms * COMM_LEN +
         (size_t)s->nproxy * PROXY_LEN + (size_t)s->nchannels * CHANNEL_LEN +
         (size_t)s->nkernels * KERNEL_LEN + nt_ops_encoded_max(s);
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

  const nt_process_counters *c = &s->process;
  p = nt_put16(p, NT_SEC_PROCESS);
  p = nt_put16(p, 0);
  p = nt_put32(p, PROCESS_LEN);
  p = nt_put64(p, c->events);
  p = nt_put64(p, c->dropped_events);
  p = nt_put64(p, c->unknown_events);
  p = nt_put64(p, c->foreign_ops);
  p = nt_put64(p, c->reclaimed_ops);
  p = nt_put64(p, c->dropped_rows);
  p = nt_put64(p, c->unsent_messages);
  p = nt_put32(p, c->event_mask);
  p = nt_put8(p, c->abi_version);
  p = nt_put64(p, c->dropped_ops);
  p = nt_put64(p, c->late_children);
  p = nt_put64(p, c->net_events);
  p = nt_put8(p, c->phase);

  /* The comm table first: the rows after it refer to it by index. */
  p = nt_table_start(p, NT_SEC_COMMS, s->ncomms, COMM_LEN);
  for (uint32_t i = 0; i < s->ncomms; i++) {
    const nt_comm_row *r = &s->comms[i];
    p = nt_put64(p, r->comm_hash);
    p = nt_put32(p, (uint32_t)r->rank);
    p = nt_put32(p, (uint32_t)r->nranks);
    p = nt_put32(p, (uint32_t)r->nnodes);
    p = nt_put64(p, r->colls_enqueued);
    p = nt_put64(p, r->p2ps_enqueued);
    p = nt_put64(p, r->group_api);
    p = nt_put64(p, r->coll_api);
    p = nt_put64(p, r->p2p_api);
    p = nt_put64(p, r->kernel_launches);
    p = nt_put64(p, r->graph_captured);
    p = nt_put64(p, r->api_ns);
  }
  p = nt_table_start(p, NT_SEC_PROXY, s->nproxy, PROXY_LEN);
  for (uint32_t i = 0; i < s->nproxy; i++) {
    const nt_proxy_row *r = &s->proxy[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->state);
    p = nt_zeros(p, 1);
    p = nt_put32(p, r->tid);
    p = nt_put64(p, r->state_age_ns);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) p = nt_put64(p, r->state_ns[k]);
    p = nt_put64(p, r->appends);
    p = nt_put64(p, r->appended_ops);
    p = nt_put64(p, r->wakeups);
  }
  p = nt_table_start(p, NT_SEC_CHANNELS, s->nchannels, CHANNEL_LEN);
  for (uint32_t i = 0; i < s->nchannels; i++) {
    const nt_channel_row *r = &s->channels[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->channel);
    p = nt_put8(p, r->dir);
    p = nt_put32(p, (uint32_t)r->peer);
    for (int k = 0; k < 3; k++) p = nt_put64(p, r->wait_ns[k]);
    p = nt_put64(p, r->steps);
    p = nt_put64(p, r->bytes);
    p = nt_put64(p, r->ops_started);
    p = nt_put64(p, r->ops_done);
    p = nt_put32(p, (uint32_t)r->cur_step);
    p = nt_put8(p, r->cur_wait);
    p = nt_zeros(p, 3);
    p = nt_put64(p, r->cur_wait_age_ns);
    p = nt_put64(p, r->progress_age_ns);
    p = nt_put8(p, r->run_state);
    p = nt_zeros(p, 3);
    p = nt_put32(p, (uint32_t)r->relay_rank);
  }
  p = nt_table_start(p, NT_SEC_KERNELS, s->nkernels, KERNEL_LEN);
  for (uint32_t i = 0; i < s->nkernels; i++) {
    const nt_kernel_row *r = &s->kernels[i];
    p = nt_put16(p, r->comm_index);
    p = nt_put8(p, r->channel);
    p = nt_zeros(p, 5);
    p = nt_put64(p, r->count);
    p = nt_put64(p, r->busy_ns);
    p = nt_put64(p, r->last_ns);
    for (int k = 0; k < NT_KPHASE_COUNT; k++) p = nt_put64(p, r->phase_ns[k]);
  }
  p = nt_ops_encode(s, p);
  return (size_t)(p - buf);
}

/* ---- reading ---- */

int nt_wire_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int nt_wire_table(nt_cursor *c, int type, uint32_t limit, uint16_t known, uint32_t *count,
                  uint16_t *reclen, char *err, size_t errlen) {
  const char *what = nt_sec_name[type];
  if (nt_left(c) < NT_TABLE_HEADER)
    return nt_wire_fail(err, errlen, "%s section: truncated table header", what);
  *count = nt_get32(c);
  *reclen = nt_get16(c);
  (void)nt_get16(c);
  if (*count > limit)
    return nt_wire_fail(err, errlen, "%s section: count %u exceeds limit %u", what, *count, limit);
  if (*reclen < known)
    return nt_wire_fail(err, errlen, "%s section: record length %u is shorter than %u", what,
                        *reclen, known);
  if ((uint64_t)*count * *reclen > nt_left(c))
    return nt_wire_fail(err, errlen, "%s section: %u records of %u bytes exceed its %zu bytes",
                        what, *count, *reclen, nt_left(c));
  return 0;
}

/* Proxy rows may belong to no known communicator; channel and kernel rows
 * always name one (the plugin drops rows it cannot attribute), and the
 * viewer indexes the comm table with them. */
static bool comm_ok(uint16_t ci, const nt_snapshot *s, bool allow_none) {
  return ci < s->ncomms || (allow_none && ci == NT_NO_COMM);
}

static int decode_process(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  int need = s->minor >= 1 ? PROCESS_LEN : PROCESS_LEN_1_0;
  if (nt_left(c) < (size_t)need)
    return nt_wire_fail(err, errlen, "process section: %zu bytes, expected at least %d", nt_left(c),
                        need);
  nt_process_counters *pc = &s->process;
  pc->events = nt_get64(c);
  pc->dropped_events = nt_get64(c);
  pc->unknown_events = nt_get64(c);
  pc->foreign_ops = nt_get64(c);
  pc->reclaimed_ops = nt_get64(c);
  pc->dropped_rows = nt_get64(c);
  pc->unsent_messages = nt_get64(c);
  pc->event_mask = nt_get32(c);
  pc->abi_version = nt_get8(c);
  if (s->minor >= 1) {
    pc->dropped_ops = nt_get64(c);
    pc->late_children = nt_get64(c);
    pc->net_events = nt_get64(c);
    pc->phase = nt_get8(c);
    if (pc->phase > NT_MAX_PHASES)
      return nt_wire_fail(err, errlen, "process section: bad phase %u", pc->phase);
  }
  return 0; /* bytes after these: a newer minor's fields */
}

static int decode_comms(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  bool v1_1 = s->minor >= 1;
  if (nt_wire_table(c, NT_SEC_COMMS, NT_MAX_COMMS, v1_1 ? COMM_LEN : COMM_LEN_1_0, &n, &rl, err,
                    errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_comm_row *r = &s->comms[i];
    r->comm_hash = nt_get64(c);
    r->rank = (int32_t)nt_get32(c);
    r->nranks = (int32_t)nt_get32(c);
    r->nnodes = (int32_t)nt_get32(c);
    r->colls_enqueued = nt_get64(c);
    r->p2ps_enqueued = nt_get64(c);
    r->group_api = r->coll_api = r->p2p_api = r->kernel_launches = 0;
    r->graph_captured = r->api_ns = 0;
    if (v1_1) {
      r->group_api = nt_get64(c);
      r->coll_api = nt_get64(c);
      r->p2p_api = nt_get64(c);
      r->kernel_launches = nt_get64(c);
      r->graph_captured = nt_get64(c);
      r->api_ns = nt_get64(c);
    }
    c->p = next;
  }
  s->ncomms = n;
  return 0;
}

static int decode_proxy(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  if (nt_wire_table(c, NT_SEC_PROXY, NT_MAX_PROXY_THREADS, PROXY_LEN, &n, &rl, err, errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_proxy_row *r = &s->proxy[i];
    r->comm_index = nt_get16(c);
    r->state = nt_get8(c);
    (void)nt_get8(c);
    r->tid = nt_get32(c);
    r->state_age_ns = nt_get64(c);
    for (int k = 0; k < NT_PROXY_NSTATES; k++) r->state_ns[k] = nt_get64(c);
    r->appends = nt_get64(c);
    r->appended_ops = nt_get64(c);
    r->wakeups = nt_get64(c);
    c->p = next;
    if (r->state >= NT_PROXY_NSTATES && r->state != NT_PROXY_UNKNOWN)
      return nt_wire_fail(err, errlen, "proxy row %u: bad state %u", i, r->state);
    if (!comm_ok(r->comm_index, s, true))
      return nt_wire_fail(err, errlen, "proxy row %u: comm index %u out of range (%u comms)", i,
                          r->comm_index, s->ncomms);
  }
  s->nproxy = n;
  return 0;
}

static int decode_channels(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  bool v1_2 = s->minor >= 2;
  if (nt_wire_table(c, NT_SEC_CHANNELS, NT_MAX_CHANNEL_ROWS, v1_2 ? CHANNEL_LEN : CHANNEL_LEN_1_1,
                    &n, &rl, err, errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_channel_row *r = &s->channels[i];
    r->comm_index = nt_get16(c);
    r->channel = nt_get8(c);
    r->dir = nt_get8(c);
    r->peer = (int32_t)nt_get32(c);
    for (int k = 0; k < 3; k++) r->wait_ns[k] = nt_get64(c);
    r->steps = nt_get64(c);
    r->bytes = nt_get64(c);
    r->ops_started = nt_get64(c);
    r->ops_done = nt_get64(c);
    r->cur_step = (int32_t)nt_get32(c);
    r->cur_wait = nt_get8(c);
    c->p += 3;
    r->cur_wait_age_ns = nt_get64(c);
    r->progress_age_ns = nt_get64(c);
    r->run_state = NT_RUN_UNKNOWN; /* a 1.1 publisher does not say */
    r->relay_rank = -1;
    if (v1_2) {
      r->run_state = nt_get8(c);
      c->p += 3;
      r->relay_rank = (int32_t)nt_get32(c);
    }
    c->p = next;
    if (r->dir > NT_DIR_RECV)
      return nt_wire_fail(err, errlen, "channel row %u: bad direction %u", i, r->dir);
    if (r->cur_wait >= NT_WAIT_COUNT && r->cur_wait != NT_WAIT_NONE)
      return nt_wire_fail(err, errlen, "channel row %u: bad wait state %u", i, r->cur_wait);
    if (!comm_ok(r->comm_index, s, false))
      return nt_wire_fail(err, errlen, "channel row %u: comm index %u out of range (%u comms)", i,
                          r->comm_index, s->ncomms);
    /* The plugin clamps done to started; in flight = started - done. */
    if (r->ops_done > r->ops_started)
      return nt_wire_fail(err, errlen, "channel row %u: more ops done than started", i);
    if (r->run_state >= NT_RUN_COUNT)
      return nt_wire_fail(err, errlen, "channel row %u: bad run state %u", i, r->run_state);
    if (r->run_state != NT_RUN_UNKNOWN &&
        (r->ops_started == r->ops_done) != (r->run_state == NT_RUN_IDLE))
      return nt_wire_fail(err, errlen, "channel row %u: run state %s with %llu ops in flight", i,
                          nt_run_name(r->run_state),
                          (unsigned long long)(r->ops_started - r->ops_done));
    if (r->relay_rank < -1)
      return nt_wire_fail(err, errlen, "channel row %u: bad relay rank %d", i, r->relay_rank);
  }
  s->nchannels = n;
  return 0;
}

static int decode_kernels(nt_cursor *c, nt_snapshot *s, char *err, size_t errlen) {
  uint32_t n;
  uint16_t rl;
  bool v1_3 = s->minor >= 3;
  if (nt_wire_table(c, NT_SEC_KERNELS, NT_MAX_KERNEL_ROWS, v1_3 ? KERNEL_LEN : KERNEL_LEN_1_2, &n,
                    &rl, err, errlen))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *next = c->p + rl;
    nt_kernel_row *r = &s->kernels[i];
    r->comm_index = nt_get16(c);
    r->channel = nt_get8(c);
    c->p += 5;
    r->count = nt_get64(c);
    r->busy_ns = nt_get64(c);
    r->last_ns = nt_get64(c);
    for (int k = 0; k < NT_KPHASE_COUNT; k++) r->phase_ns[k] = v1_3 ? nt_get64(c) : 0;
    c->p = next;
    if (!comm_ok(r->comm_index, s, false))
      return nt_wire_fail(err, errlen, "kernel row %u: comm index %u out of range (%u comms)", i,
                          r->comm_index, s->ncomms);
  }
  s->nkernels = n;
  return 0;
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

/* The row tables (proto/snapshot_rows.h) that drive the snapshot's encoder
 * and decoder: the encoder still writes, byte for byte, what the encoder
 * written by hand before the tables wrote (a fingerprint of that encoder's
 * output for a snapshot with every table full of arbitrary values), the
 * existing fixture (proto_fixture.h, written from PROTOCOL.md) still
 * matches, and every table row is documented in PROTOCOL.md's section
 * tables at its offset, with its type and version, and every documented
 * row is in a table. */
#include <stdio.h>

#include "proto_fixture.h"
#include "../proto/snapshot_rows.h"

/* ---------------------------------------------------------------------- */
/* The recorded encoding                                                   */

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) { /* splitmix64: the same sequence everywhere */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill_name(char *name, size_t cap) {
  size_t n = rnd() % cap; /* some at the longest */
  for (size_t k = 0; k < n; k++) name[k] = (char)('a' + rnd() % 26);
  name[n] = '\0';
}

/* Every table at its limit, every field set by name (not by struct layout,
 * which the tables may order differently) from one fixed sequence. The
 * encoder checks no value, so any bits do. */
static void fill_everything(nt_snapshot *s) {
  snprintf(s->host, sizeof s->host, "%s", "node-with-a-host-name-of-some-length-0123456789");
  s->seq = rnd();
  s->pid = 4242;
  s->interval_ms = 100;
  s->mono_ns = rnd();
  s->wall_ns = rnd();
  s->final = 1;
  nt_process_counters *pc = &s->process;
  pc->events = rnd();
  pc->dropped_events = rnd();
  pc->unknown_events = rnd();
  pc->foreign_ops = rnd();
  pc->reclaimed_ops = rnd();
  pc->dropped_rows = rnd();
  pc->unsent_messages = rnd();
  pc->event_mask = (uint32_t)rnd();
  pc->abi_version = (uint8_t)rnd();
  pc->dropped_ops = rnd();
  pc->late_children = rnd();
  pc->net_events = rnd();
  pc->phase = (uint8_t)rnd();
  s->ncomms = NT_MAX_COMMS;
  for (uint32_t i = 0; i < s->ncomms; i++) {
    nt_comm_row *r = &s->comms[i];
    r->comm_hash = rnd();
    r->rank = (int32_t)rnd();
    r->nranks = (int32_t)rnd();
    r->nnodes = (int32_t)rnd();
    r->colls_enqueued = rnd();
    r->p2ps_enqueued = rnd();
    r->group_api = rnd();
    r->coll_api = rnd();
    r->p2p_api = rnd();
    r->kernel_launches = rnd();
    r->graph_captured = rnd();
    r->api_ns = rnd();
  }
  s->nproxy = NT_MAX_PROXY_THREADS;
  for (uint32_t i = 0; i < s->nproxy; i++) {
    nt_proxy_row *r = &s->proxy[i];
    r->comm_index = (uint16_t)rnd();
    r->tid = (uint32_t)rnd();
    r->state = (uint8_t)rnd();
    r->state_age_ns = rnd();
    for (int k = 0; k < NT_PROXY_NSTATES; k++) r->state_ns[k] = rnd();
    r->appends = rnd();
    r->appended_ops = rnd();
    r->wakeups = rnd();
  }
  s->nchannels = NT_MAX_CHANNEL_ROWS;
  for (uint32_t i = 0; i < s->nchannels; i++) {
    nt_channel_row *r = &s->channels[i];
    r->comm_index = (uint16_t)rnd();
    r->channel = (uint8_t)rnd();
    r->dir = (uint8_t)rnd();
    r->peer = (int32_t)rnd();
    for (int k = 0; k < 3; k++) r->wait_ns[k] = rnd();
    r->steps = rnd();
    r->bytes = rnd();
    r->ops_started = rnd();
    r->ops_done = rnd();
    r->cur_step = (int32_t)rnd();
    r->cur_wait = (uint8_t)rnd();
    r->cur_wait_age_ns = rnd();
    r->progress_age_ns = rnd();
    r->run_state = (uint8_t)rnd();
    r->relay_rank = (int32_t)rnd();
  }
  s->nkernels = NT_MAX_KERNEL_ROWS;
  for (uint32_t i = 0; i < s->nkernels; i++) {
    nt_kernel_row *r = &s->kernels[i];
    r->comm_index = (uint16_t)rnd();
    r->channel = (uint8_t)rnd();
    r->count = rnd();
    r->busy_ns = rnd();
    r->last_ns = rnd();
    for (int k = 0; k < NT_KPHASE_COUNT; k++) r->phase_ns[k] = rnd();
  }
  s->nops = NT_MAX_OP_ROWS;
  for (uint32_t i = 0; i < s->nops; i++) {
    nt_op_row *r = &s->ops[i];
    r->comm_index = (uint16_t)rnd();
    r->kind = (uint8_t)rnd();
    r->func = (uint8_t)rnd();
    r->algo = (uint8_t)rnd();
    r->proto = (uint8_t)rnd();
    r->bucket = (uint8_t)rnd();
    r->phase = (uint8_t)rnd();
    r->count = rnd();
    r->bytes = rnd();
    r->done = rnd();
    r->done_bytes = rnd();
    r->time_ns = rnd();
    r->gpu_done = rnd();
    r->sync_ns = rnd();
    r->compute_ns = rnd();
    r->variant = (uint8_t)rnd();
  }
  s->nphases = NT_MAX_PHASES;
  for (uint32_t i = 0; i < s->nphases; i++) {
    nt_phase_row *r = &s->phases[i];
    r->id = (uint8_t)rnd();
    r->source = (uint8_t)rnd();
    fill_name(r->name, sizeof r->name);
  }
  s->noplog = NT_MAX_OPLOG;
  for (uint32_t i = 0; i < s->noplog; i++) {
    nt_oplog_row *r = &s->oplog[i];
    r->comm_index = (uint16_t)rnd();
    r->kind = (uint8_t)rnd();
    r->func = (uint8_t)rnd();
    r->algo = (uint8_t)rnd();
    r->proto = (uint8_t)rnd();
    r->dtype = (uint8_t)rnd();
    r->phase = (uint8_t)rnd();
    r->state = (uint8_t)rnd();
    r->timing = (uint8_t)rnd();
    r->nchannels = (uint8_t)rnd();
    r->nwarps = (uint8_t)rnd();
    r->root_peer = (int32_t)rnd();
    r->seq = rnd();
    r->count = rnd();
    r->bytes = rnd();
    r->age_ns = rnd();
    r->duration_ns = rnd();
    r->children = (uint32_t)rnd();
    r->children_open = (uint32_t)rnd();
    r->run_state = (uint8_t)rnd();
    r->flags = (uint8_t)rnd();
    r->progress_age_ns = rnd();
    r->variant = (uint8_t)rnd();
  }
  s->nseq = NT_MAX_SEQ_ROWS;
  for (uint32_t i = 0; i < s->nseq; i++) {
    nt_seq_row *r = &s->seq_rows[i];
    r->comm_index = (uint16_t)rnd();
    r->func = (uint8_t)rnd();
    r->launched = rnd();
    r->done = rnd();
    r->last_launch_age_ns = rnd();
  }
  s->nnet = NT_MAX_NET_ROWS;
  for (uint32_t i = 0; i < s->nnet; i++) {
    nt_net_row *r = &s->net[i];
    r->comm_index = (uint16_t)rnd();
    r->type = (uint8_t)rnd();
    r->device = (int32_t)rnd();
    r->id = (uint32_t)rnd();
    r->count = rnd();
    r->bytes = rnd();
    r->busy_ns = rnd();
    r->in_flight = rnd();
  }
  s->nvariants = NT_MAX_VARIANTS;
  for (uint32_t i = 0; i < s->nvariants; i++) {
    nt_variant_row *r = &s->variants[i];
    r->id = (uint8_t)rnd();
    fill_name(r->name, sizeof r->name);
  }
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* What the hand-written encoder (before the row tables, commit 1a9640f)
 * wrote for fill_everything's snapshot: its length and FNV-1a hash, of a
 * 1.4 message. A published protocol's bytes never change, so neither may
 * these while NT_PROTO_MINOR is 4; a new minor appends fields (and changes
 * them): record its fingerprint then, once its test_proto_1_N.c has shown
 * that an older reader still reads the older fields where they were. */
#define RECORDED_LEN  1477634u
#define RECORDED_HASH 0xaf345ca229575d5dull

static void the_encoder_writes_the_recorded_bytes(void) {
  nt_snapshot *s = nt_snapshot_new();
  CHECK(s != NULL);
  fill_everything(s);
  size_t cap = nt_snapshot_encoded_max(s);
  uint8_t *buf = malloc(cap);
  CHECK(buf != NULL);
  size_t n = nt_snapshot_encode(s, buf, cap);
  uint64_t h = fnv1a(buf, n);
  if (n != RECORDED_LEN || h != RECORDED_HASH)
    fprintf(stderr, "    encoded %zu bytes, hash 0x%016llxull\n", n, (unsigned long long)h);
  free(buf);
  nt_snapshot_free(s);
  CHECK_EQ_U64(n, RECORDED_LEN);
  CHECK_EQ_U64(h, RECORDED_HASH);
}

/* The fixture written by hand from PROTOCOL.md (the independent oracle)
 * and the tables' encoder agree, and what the encoder writes decodes to
 * the same snapshot. */
static void the_encoder_writes_the_fixture(void) {
  nt_snapshot *s = sample(), *d = nt_snapshot_new();
  CHECK(s && d);
  layout l = default_layout();
  build(&wb, s, &l);
  size_t n = nt_snapshot_encode(s, enc, sizeof enc);
  CHECK(n == wb.n && memcmp(enc, wb.b, n) == 0);
  char err[256] = "";
  CHECK(nt_snapshot_decode(enc, n, d, err, sizeof err) == 0);
  CHECK(same_snapshot(s, d));
  nt_snapshot_free(s);
  nt_snapshot_free(d);
}

/* ---------------------------------------------------------------------- */
/* The tables against PROTOCOL.md                                          */

/* The first minor version a section type exists in. */
static int base_minor(int type) {
  return type >= 11 ? 4 : type >= 6 ? 1 : 0;
}

/* A table's record length in a message of minor m. */
static unsigned table_len(const nt_wire_field *f, size_t n, int type, int m) {
  if (m < base_minor(type)) m = base_minor(type);
  unsigned len = 0;
  for (size_t k = 0; k < n; k++)
    if (f[k].since <= m) len += f[k].size;
  return len;
}

/* How PROTOCOL.md spells a field's type. */
static void doc_type(const nt_wire_field *f, char *buf, size_t cap) {
  static const char *const scalar[] = {"u8", "u16", "u32", "u64", "i32"};
  switch (f->kind) {
  case NT_WK_RESERVED:
  case NT_WK_NAME: snprintf(buf, cap, "%u byte%s", f->size, f->size == 1 ? "" : "s"); break;
  case NT_WK_NAME_LEN: snprintf(buf, cap, "u8"); break;
  default:
    if (f->count > 1)
      snprintf(buf, cap, "%u \u00d7 %s", f->count, scalar[f->kind]);
    else
      snprintf(buf, cap, "%s", scalar[f->kind]);
  }
}

typedef struct {
  unsigned offset;
  char type[32];
  int version; /* the "1.N " a field's text begins with; -1 none */
  bool reserved;
} doc_row;

static char *trim(char *s) {
  while (*s == ' ') s++;
  size_t n = strlen(s);
  while (n && s[n - 1] == ' ') s[--n] = '\0';
  return s;
}

/* Section `type`'s documented rows and the text before its table (its
 * heading); false if PROTOCOL.md has no "**Type N," table. */
static bool doc_section(const char *doc, int type, doc_row *rows, size_t *nrows, size_t cap,
                        char *heading, size_t hcap) {
  char mark[32];
  snprintf(mark, sizeof mark, "\n**Type %d,", type);
  const char *p = strstr(doc, mark);
  if (!p) return false;
  p++;
  const char *table = strstr(p, "\n| offset | type | field |");
  if (!table) return false;
  size_t hl = (size_t)(table - p) < hcap - 1 ? (size_t)(table - p) : hcap - 1;
  memcpy(heading, p, hl);
  heading[hl] = '\0';
  p = strchr(table + 1, '\n'); /* the header line, then |---| */
  p = p ? strchr(p + 1, '\n') : NULL;
  *nrows = 0;
  while (p && p[1] == '|' && *nrows < cap) {
    const char *end = strchr(p + 1, '\n');
    size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
    char line[2048];
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, p + 1, len);
    line[len] = '\0';
    char *cells[3] = {NULL, NULL, NULL}, *q = line + 1;
    for (int k = 0; k < 3 && q; k++) {
      char *bar = strchr(q, '|');
      if (bar && k < 2) *bar = '\0';
      cells[k] = q;
      q = bar ? bar + 1 : NULL;
    }
    if (!cells[2]) return false;
    doc_row *r = &rows[(*nrows)++];
    r->offset = (unsigned)strtoul(trim(cells[0]), NULL, 10);
    snprintf(r->type, sizeof r->type, "%s", trim(cells[1]));
    char *field = trim(cells[2]);
    r->version = -1;
    if (field[0] == '1' && field[1] == '.' && field[2] >= '0' && field[2] <= '9' && field[3] == ' ')
      r->version = field[2] - '0';
    r->reserved = strncmp(field, "reserved", 8) == 0;
    p = end;
  }
  return true;
}

/* Problems between the tables and the document, each one line on stderr
 * when `say`; returns how many. */
static int compare_with_doc(const char *doc, bool say) {
  int problems = 0;
  for (int type = 1; type <= 11; type++) {
    size_t n = 0, nd = 0;
    const nt_wire_field *f = nt_wire_fields(type, &n);
    doc_row rows[64];
    char heading[1024];
    if (!f || !doc_section(doc, type, rows, &nd, 64, heading, sizeof heading)) {
      if (say) fprintf(stderr, "    type %d: no table in the code or in PROTOCOL.md\n", type);
      problems++;
      continue;
    }
    bool used[64] = {false};
    unsigned off = 0;
    for (size_t k = 0; k < n; off += f[k].size, k++) {
      char want[32];
      doc_type(&f[k], want, sizeof want);
      const char *name = f[k].member ? f[k].member : "(reserved)";
      size_t d = 0;
      while (d < nd && rows[d].offset != off) d++;
      if (d == nd) {
        if (say)
          fprintf(stderr, "    type %d: %s (offset %u, %s) is not in PROTOCOL.md\n", type, name,
                  off, want);
        problems++;
        continue;
      }
      used[d] = true;
      /* A reserved byte is "1 byte" or "u8". */
      bool same_type =
          strcmp(rows[d].type, want) == 0 ||
          (f[k].kind == NT_WK_RESERVED && f[k].size == 1 && !strcmp(rows[d].type, "u8"));
      if (!same_type || rows[d].reserved != (f[k].kind == NT_WK_RESERVED)) {
        if (say)
          fprintf(stderr, "    type %d offset %u: %s is %s%s in the table, %s%s in PROTOCOL.md\n",
                  type, off, name, want, f[k].kind == NT_WK_RESERVED ? " reserved" : "",
                  rows[d].type, rows[d].reserved ? " reserved" : "");
        problems++;
      }
      int version = rows[d].version >= 0 ? rows[d].version : base_minor(type);
      if (f[k].kind != NT_WK_RESERVED && version != f[k].read) {
        if (say)
          fprintf(stderr, "    type %d: %s is read from 1.%d in the table, 1.%d in PROTOCOL.md\n",
                  type, name, f[k].read, version);
        problems++;
      }
    }
    for (size_t d = 0; d < nd; d++)
      if (!used[d]) {
        if (say)
          fprintf(stderr, "    type %d: PROTOCOL.md's row at offset %u (%s) is not in the table\n",
                  type, rows[d].offset, rows[d].type);
        problems++;
      }
    /* The heading's record lengths ("R >= 36 in a 1.0 message", "56 from
     * 1.3") are the table's, and name this version's. */
    bool current = false;
    unsigned now = table_len(f, n, type, NT_PROTO_MINOR);
    for (const char *h = heading; (h = strstr(h, "\u2265 ")) != NULL;) {
      h += strlen("\u2265 ");
      unsigned v = (unsigned)strtoul(h, NULL, 10);
      bool some = false;
      for (int m = base_minor(type); m <= NT_PROTO_MINOR; m++)
        some |= table_len(f, n, type, m) == v;
      current |= v == now;
      if (!some) {
        if (say)
          fprintf(stderr, "    type %d: PROTOCOL.md says %u bytes, no minor's length\n", type, v);
        problems++;
      }
    }
    for (const char *h = heading; (h = strstr(h, " from 1.")) != NULL; h++) {
      const char *num = h;
      while (num > heading && num[-1] >= '0' && num[-1] <= '9') num--;
      unsigned v = (unsigned)strtoul(num, NULL, 10), m = (unsigned)(h[8] - '0');
      current |= v == now;
      if (num == h || table_len(f, n, type, (int)m) != v) {
        if (say)
          fprintf(stderr, "    type %d: PROTOCOL.md says %u bytes from 1.%u, the table %u\n", type,
                  v, m, table_len(f, n, type, (int)m));
        problems++;
      }
    }
    if (!current) {
      if (say)
        fprintf(stderr, "    type %d: PROTOCOL.md's heading lacks this version's %u bytes\n", type,
                now);
      problems++;
    }
  }
  return problems;
}

static char *read_doc(void) {
  FILE *f = fopen("proto/PROTOCOL.md", "rb");
  if (!f) {
    fprintf(stderr, "    proto/PROTOCOL.md: not found (run from the repository root)\n");
    return NULL;
  }
  char *buf = malloc(1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

static void every_table_row_is_documented_and_every_documented_row_is_in_a_table(void) {
  char *doc = read_doc();
  CHECK(doc != NULL);
  int problems = compare_with_doc(doc, true);
  free(doc);
  CHECK(problems == 0);
}

/* The comparison can fail: a documented row taken out, one added, a type
 * or a version changed are each found. */
static void the_comparison_finds_a_row_missing_from_either_side(void) {
  char *doc = read_doc();
  CHECK(doc != NULL);
  static const struct {
    const char *from, *to;
  } edits[] = {
      {"| 92 | i32 | 1.2 `relay_rank`", "| 92 | i32 | 1.2 `relay_rank` REMOVED"},
      {"| 24 | u64 | ns since the last one was enqueued |\n",
       "| 24 | u64 | ns since the last one was enqueued |\n| 32 | u64 | a new counter |\n"},
      {"| 60 | u8 | `abi_version`", "| 60 | u16 | `abi_version`"},
      {"| 77 | u64 | 1.1 `net_events`", "| 77 | u64 | 1.2 `net_events`"},
      {"(1.4; R \u2265 52)", "(1.4; R \u2265 51)"},
  };
  for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
    char *at = strstr(doc, edits[e].from);
    CHECK(at != NULL);
    char *edited = malloc(strlen(doc) + strlen(edits[e].to) + 1);
    CHECK(edited != NULL);
    size_t head = (size_t)(at - doc);
    memcpy(edited, doc, head);
    if (e == 0) { /* the row taken out, line and all */
      const char *eol = strchr(at, '\n');
      strcpy(edited + head, eol + 1);
    } else {
      strcpy(edited + head, edits[e].to);
      strcat(edited, at + strlen(edits[e].from));
    }
    int problems = compare_with_doc(edited, false);
    free(edited);
    if (problems == 0) fprintf(stderr, "    edit %zu went unnoticed\n", e);
    CHECK(problems > 0);
  }
  free(doc);
}

/* Newer minors only append to a record: along a table `since` never goes
 * down (a row put between older ones would move their bytes), and a field
 * is never read before its bytes exist. */
static void rows_are_only_appended(void) {
  for (int type = 1; type <= 11; type++) {
    size_t n = 0;
    const nt_wire_field *f = nt_wire_fields(type, &n);
    CHECK(f != NULL && n > 0);
    for (size_t k = 0; k < n; k++) {
      if (k && f[k].since < f[k - 1].since)
        fprintf(stderr, "    type %d: row %zu (1.%d) after a 1.%d row\n", type, k, f[k].since,
                f[k - 1].since);
      CHECK(k == 0 || f[k].since >= f[k - 1].since);
      CHECK(f[k].read >= f[k].since && f[k].read <= NT_PROTO_MINOR);
      CHECK(f[k].since >= base_minor(type));
    }
  }
}

int main(void) {
  TEST_RUN(the_encoder_writes_the_recorded_bytes);
  TEST_RUN(the_encoder_writes_the_fixture);
  TEST_RUN(every_table_row_is_documented_and_every_documented_row_is_in_a_table);
  TEST_RUN(the_comparison_finds_a_row_missing_from_either_side);
  TEST_RUN(rows_are_only_appended);
  return TEST_DONE();
}

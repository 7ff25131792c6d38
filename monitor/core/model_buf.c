/* Snapshot buffers sized to the rows they hold. nt_snapshot_new sizes every
 * array to the protocol's limit (1.2 MB), which is right for a decoder's
 * scratch but not for the three or four copies the model keeps per process:
 * a typical rank uses a few kilobytes of them, and a publisher that sends
 * full-size snapshots must cost what it sends, counted, not more. */
#include <stddef.h>
#include <stdlib.h>

#include "model_internal.h"

/* The row arrays of a snapshot: where the pointer and count are, a row's
 * size and the protocol's limit (copies are clamped to it). */
static const struct {
  size_t ptr, count, size;
  uint32_t limit;
} arrays[] = {
#define ARRAY(p, n, type, limit)                                                                   \
  { offsetof(nt_snapshot, p), offsetof(nt_snapshot, n), sizeof(type), limit }
    ARRAY(comms, ncomms, nt_comm_row, NT_MAX_COMMS),
    ARRAY(proxy, nproxy, nt_proxy_row, NT_MAX_PROXY_THREADS),
    ARRAY(channels, nchannels, nt_channel_row, NT_MAX_CHANNEL_ROWS),
    ARRAY(kernels, nkernels, nt_kernel_row, NT_MAX_KERNEL_ROWS),
    ARRAY(ops, nops, nt_op_row, NT_MAX_OP_ROWS),
    ARRAY(phases, nphases, nt_phase_row, NT_MAX_PHASES),
    ARRAY(oplog, noplog, nt_oplog_row, NT_MAX_OPLOG),
    ARRAY(seq_rows, nseq, nt_seq_row, NT_MAX_SEQ_ROWS),
    ARRAY(net, nnet, nt_net_row, NT_MAX_NET_ROWS),
    ARRAY(variants, nvariants, nt_variant_row, NT_MAX_VARIANTS),
#undef ARRAY
};
#define NARRAYS (sizeof arrays / sizeof arrays[0])

typedef struct {
  nt_snapshot s; /* first: the nt_snapshot * handed out converts back */
  uint32_t cap[NARRAYS];
} sized;

static void **ptr_of(nt_snapshot *s, size_t i) {
  return (void **)((char *)s + arrays[i].ptr);
}

static uint32_t count_of(const nt_snapshot *s, size_t i) {
  uint32_t n = *(const uint32_t *)((const char *)s + arrays[i].count);
  return n < arrays[i].limit ? n : arrays[i].limit;
}

/* The capacity for n rows: grown to exactly n (rows rarely grow after a
 * job's first snapshots), shrunk when a quarter of it would do; never 0, so
 * every array exists and copies never pass a null pointer. */
static uint32_t cap_for(uint32_t cap, uint32_t n) {
  if (n == 0) n = 1;
  return n > cap || n * 4 < cap ? n : cap;
}

nt_snapshot *nt_buf_new(void) {
  sized *b = calloc(1, sizeof *b);
  return b ? &b->s : NULL;
}

void nt_buf_free(nt_snapshot *s) {
  nt_snapshot_free(s); /* frees the arrays, then the block s starts */
}

size_t nt_buf_bytes(const nt_snapshot *s) {
  if (!s) return 0;
  const sized *b = (const sized *)s;
  size_t n = sizeof *b;
  for (size_t i = 0; i < NARRAYS; i++) n += (size_t)b->cap[i] * arrays[i].size;
  return n;
}

size_t nt_buf_need(const nt_snapshot *s, const nt_snapshot *src) {
  const sized *b = (const sized *)s;
  size_t n = sizeof *b;
  for (size_t i = 0; i < NARRAYS; i++)
    n += (size_t)cap_for(b ? b->cap[i] : 0, count_of(src, i)) * arrays[i].size;
  return n;
}

int nt_buf_fit(nt_snapshot *s, const nt_snapshot *src) {
  sized *b = (sized *)s;
  for (size_t i = 0; i < NARRAYS; i++) {
    uint32_t cap = cap_for(b->cap[i], count_of(src, i));
    if (cap == b->cap[i]) continue;
    void *p = realloc(*ptr_of(s, i), (size_t)cap * arrays[i].size);
    if (!p) return -1; /* the arrays resized so far keep their (right) sizes */
    *ptr_of(s, i) = p;
    b->cap[i] = cap;
  }
  return 0;
}

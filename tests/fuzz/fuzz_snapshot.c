/* libFuzzer target: the snapshot decoder, the viewer's security boundary.
 * Whatever decodes must re-encode and decode to the same counts. */
#include <stdint.h>
#include <stdlib.h>

#include "../../proto/nccltop_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static nt_snapshot *s, *again;
  static uint8_t *buf;
  static size_t cap;
  if (!s && (!(s = nt_snapshot_new()) || !(again = nt_snapshot_new()))) abort();
  char err[256];
  if (nt_snapshot_decode(data, size, s, err, sizeof err) != 0) return 0;
  size_t need = nt_snapshot_encoded_max(s);
  if (need > cap) {
    free(buf);
    if (!(buf = malloc(need))) abort();
    cap = need;
  }
  size_t n = nt_snapshot_encode(s, buf, cap);
  if (!n || nt_snapshot_decode(buf, n, again, err, sizeof err) != 0) abort();
  if (again->nchannels != s->nchannels || again->ncomms != s->ncomms ||
      again->nproxy != s->nproxy || again->nkernels != s->nkernels || again->nops != s->nops ||
      again->nphases != s->nphases || again->noplog != s->noplog || again->nseq != s->nseq ||
      again->nnet != s->nnet || again->nvariants != s->nvariants)
    abort();
  /* 1.4: a variant read from a message survives re-encoding (any minor). */
  for (uint32_t i = 0; i < s->nops; i++)
    if (again->ops[i].variant != s->ops[i].variant) abort();
  for (uint32_t i = 0; i < s->noplog; i++)
    if (again->oplog[i].variant != s->oplog[i].variant) abort();
  return 0;
}

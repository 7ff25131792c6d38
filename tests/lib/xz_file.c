/* See xz_file.h. */
#include "xz_file.h"

#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define XZ_MAX_IN (4u << 20)

char *xz_read_file(const char *path, size_t max, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *in = malloc(XZ_MAX_IN);
  size_t inlen = in ? fread(in, 1, XZ_MAX_IN, f) : 0;
  fclose(f);
  char *out = inlen ? malloc(max + 1) : NULL;
  size_t inpos = 0, outpos = 0;
  uint64_t limit = UINT64_MAX;
  if (out && lzma_stream_buffer_decode(&limit, 0, NULL, in, &inpos, inlen, (uint8_t *)out, &outpos,
                                       max) != LZMA_OK) {
    free(out);
    out = NULL;
  }
  free(in);
  if (!out) return NULL;
  out[outpos] = '\0';
  if (len) *len = outpos;
  return out;
}

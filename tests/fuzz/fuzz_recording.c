/* libFuzzer target: the recording reader (monitor/feeds/record_file.c) on any bytes:
 * header, chunk headers, zstd frames, records, the index and seeking. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../monitor/feeds/recording.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fd = -1;
  if (fd < 0 && (fd = memfd_create("fuzz_recording", 0)) < 0) abort();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
  char path[64], err[700];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  nt_rec_reader *r = nt_rec_open(path, err, sizeof err);
  if (!r) return 0;
  nt_rec_record rec;
  size_t total = 0;
  int rc;
  for (int n = 0; n < 100000 && (rc = nt_rec_next(r, &rec, err, sizeof err)) == 1; n++) {
    total += rec.body_len + rec.topic_len + strlen(rec.endpoint);
    if (rec.body_len) total += rec.body[rec.body_len - 1];
  }
  nt_rec_seek_point idx[64];
  uint32_t n = nt_rec_index(r, idx, 64);
  if (n && nt_rec_seek(r, idx[n - 1].offset, err, sizeof err) == 0)
    while (nt_rec_next(r, &rec, err, sizeof err) == 1) total++;
  nt_rec_close_reader(r);
  return total == (size_t)-1;
}

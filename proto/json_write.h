/* A tiny JSON writer into a fixed buffer: no allocation, so the plugin can
 * use it, and no cJSON, so the plugin does not depend on a shared cJSON that
 * could clash with another copy in a training process. */
#ifndef NCCLTOP_JSON_WRITE_H
#define NCCLTOP_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *buf;
  size_t cap, len;
  bool overflow;
  bool need_comma;
} nt_jw;

void nt_jw_init(nt_jw *w, char *buf, size_t cap);
void nt_jw_open(nt_jw *w, const char *key); /* "key":{  (key NULL at top level) */
void nt_jw_close(nt_jw *w);                 /* } */
void nt_jw_str(nt_jw *w, const char *key, const char *value);
void nt_jw_u64(nt_jw *w, const char *key, uint64_t value);
void nt_jw_i64(nt_jw *w, const char *key, int64_t value);
void nt_jw_u64_str(nt_jw *w, const char *key, uint64_t value); /* exact: as a decimal string */
/* Length written (NUL-terminated), or 0 when it did not fit. */
size_t nt_jw_finish(nt_jw *w);

#endif

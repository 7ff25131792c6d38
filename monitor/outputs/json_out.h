/* A streaming JSON writer into a growing buffer, for the viewer's frames:
 * one pass, no tree, no per-value allocation; a 1024-rank frame (tens of
 * megabytes) is written in tens of milliseconds where a cJSON tree took ten
 * times that. Numbers: integers exactly; other doubles with at most six
 * decimals (what every value in a frame needs: milliseconds, shares,
 * rates); NaN and infinities as null. Strings are escaped (quote,
 * backslash, control characters); keys too, since some come from
 * publishers. Out of memory: the writer stops writing and says so. */
#ifndef NCCLTOP_JSON_OUT_H
#define NCCLTOP_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NT_JO_DEPTH 32

typedef struct {
  char *buf;
  size_t len, cap;
  bool oom;
  int depth;
  bool comma[NT_JO_DEPTH]; /* a value was written at this depth */
  char close[NT_JO_DEPTH]; /* what closes it: '}' or ']' */
} nt_jo;

/* A place to come back to: what was written after it can be undone. */
typedef struct {
  size_t len;
  bool comma;
} nt_jo_mark;

void nt_jo_init(nt_jo *w);
/* Empties it for the next document, keeping its buffer. */
void nt_jo_reset(nt_jo *w);
void nt_jo_free(nt_jo *w);
/* Keys are NULL inside arrays and for the top-level value. */
void nt_jo_obj(nt_jo *w, const char *key);
void nt_jo_arr(nt_jo *w, const char *key);
void nt_jo_end(nt_jo *w); /* closes the innermost object or array */
void nt_jo_str(nt_jo *w, const char *key, const char *v);
void nt_jo_num(nt_jo *w, const char *key, double v);
void nt_jo_u64(nt_jo *w, const char *key, uint64_t v);
void nt_jo_i64(nt_jo *w, const char *key, int64_t v);
void nt_jo_bool(nt_jo *w, const char *key, bool v);
void nt_jo_null(nt_jo *w, const char *key);
/* A count that is unknown when not positive (NCCL 2.26 gives no rank or
 * node count: 0 in the model): the number, or null, never 0. */
void nt_jo_count(nt_jo *w, const char *key, int64_t v);
/* A string that is unknown when empty: the string, or null. */
void nt_jo_str_known(nt_jo *w, const char *key, const char *v);
/* A value that is already JSON, written as it is: only for text this
 * program made with a JSON writer (cJSON), never for text from outside. */
void nt_jo_json(nt_jo *w, const char *key, const char *json);
nt_jo_mark nt_jo_here(const nt_jo *w);
void nt_jo_undo(nt_jo *w, nt_jo_mark m);
/* The text (NUL-terminated), or NULL after running out of memory. */
const char *nt_jo_text(nt_jo *w);

#endif

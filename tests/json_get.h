/* Reading a parsed JSON frame in unit tests: a missing or mistyped value
 * reads as a value no frame holds (-12345, "(missing)", -1), so a check
 * against the expected value fails and says what it got. (The end-to-end
 * harness, scenario_harness.h, has its own: NaN and "".) */
#ifndef NCCLTOP_TESTS_JSON_GET_H
#define NCCLTOP_TESTS_JSON_GET_H

#include <cjson/cJSON.h>

static inline const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static inline double num(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -12345;
}

static inline const char *str(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

/* 1 true, 0 false, -1 not a boolean. */
static inline int boolean(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

#endif

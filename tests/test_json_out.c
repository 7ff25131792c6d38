/* The streaming JSON writer of the viewer's frames (monitor/outputs/json_out.c): exact
 * integers, numbers with at most six decimals, NaN as null, escaping of
 * values and keys, undo, and documents cJSON parses back to the same
 * values. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "testlib.h"
#include "../monitor/outputs/json_out.h"

static void numbers_are_exact_or_six_decimals(void) {
  nt_jo w;
  nt_jo_init(&w);
  nt_jo_arr(&w, NULL);
  nt_jo_num(&w, NULL, 0.75);
  nt_jo_num(&w, NULL, -2.5);
  nt_jo_num(&w, NULL, 1e-7);
  nt_jo_num(&w, NULL, 1.0 / 3);
  nt_jo_num(&w, NULL, 123456789.0);
  nt_jo_num(&w, NULL, 1e300);
  nt_jo_num(&w, NULL, NAN);
  nt_jo_num(&w, NULL, -INFINITY);
  nt_jo_u64(&w, NULL, UINT64_MAX);
  nt_jo_i64(&w, NULL, INT64_MIN);
  nt_jo_num(&w, NULL, -0.0000004);
  nt_jo_num(&w, NULL, 9007199254740993.0);
  nt_jo_end(&w);
  const char *t = nt_jo_text(&w);
  CHECK_STR(t, "[0.75,-2.5,0,0.333333,123456789,1.0000000000000001e+300,null,null,"
               "18446744073709551615,-9223372036854775808,0,9007199254740992]");
  nt_jo_free(&w);
}

static void strings_and_keys_are_escaped(void) {
  nt_jo w;
  nt_jo_init(&w);
  nt_jo_obj(&w, NULL);
  nt_jo_str(&w, "k\"ey", "a\"b\\c\x01\x7f\xc3\xa9");
  nt_jo_bool(&w, "t", true);
  nt_jo_null(&w, "n");
  nt_jo_obj(&w, "o");
  nt_jo_arr(&w, "a");
  nt_jo_end(&w);
  nt_jo_end(&w);
  nt_jo_end(&w);
  const char *t = nt_jo_text(&w);
  CHECK_STR(t, "{\"k\\\"ey\":\"a\\\"b\\\\c\\u0001\\u007f\xc3\xa9\",\"t\":true,\"n\":null,"
               "\"o\":{\"a\":[]}}");
  cJSON *j = cJSON_Parse(t);
  CHECK(j);
  CHECK_STR(cJSON_GetObjectItemCaseSensitive(j, "k\"ey")->valuestring, "a\"b\\c\x01\x7f\xc3\xa9");
  cJSON_Delete(j);
  nt_jo_free(&w);
}

static void undo_takes_back_an_item_and_its_comma(void) {
  nt_jo w;
  nt_jo_init(&w);
  nt_jo_arr(&w, NULL);
  nt_jo_u64(&w, NULL, 1);
  nt_jo_mark m = nt_jo_here(&w);
  nt_jo_obj(&w, NULL);
  nt_jo_str(&w, "x", "dropped");
  nt_jo_end(&w);
  nt_jo_undo(&w, m);
  nt_jo_u64(&w, NULL, 2);
  nt_jo_end(&w);
  CHECK_STR(nt_jo_text(&w), "[1,2]");
  /* reset keeps the buffer and starts a new document */
  nt_jo_reset(&w);
  nt_jo_arr(&w, NULL);
  nt_jo_end(&w);
  CHECK_STR(nt_jo_text(&w), "[]");
  nt_jo_free(&w);
}

static void a_large_document_parses_back(void) {
  nt_jo w;
  nt_jo_init(&w);
  nt_jo_arr(&w, NULL);
  for (int i = 0; i < 100000; i++) {
    nt_jo_obj(&w, NULL);
    nt_jo_i64(&w, "i", i);
    nt_jo_num(&w, "half", i / 2.0);
    nt_jo_end(&w);
  }
  nt_jo_end(&w);
  cJSON *j = cJSON_Parse(nt_jo_text(&w));
  CHECK(j && cJSON_GetArraySize(j) == 100000);
  const cJSON *last = cJSON_GetArrayItem(j, 99999);
  CHECK(cJSON_GetObjectItem(last, "i")->valuedouble == 99999);
  CHECK(cJSON_GetObjectItem(last, "half")->valuedouble == 49999.5);
  cJSON_Delete(j);
  nt_jo_free(&w);
}

int main(void) {
  TEST_RUN(numbers_are_exact_or_six_decimals);
  TEST_RUN(strings_and_keys_are_escaped);
  TEST_RUN(undo_takes_back_an_item_and_its_comma);
  TEST_RUN(a_large_document_parses_back);
  return TEST_DONE();
}

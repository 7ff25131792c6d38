/* The model and the choice table as JSON (cJSON), for `topo --graphs
 * --json`: "model" lists what NCCL would consider (non-zero bandwidth) for
 * the collectives shown, "choice" its pick for each size. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "tuning.h"

/* NCCL keeps these in floats: 6 significant digits, as its logs print them. */
static double six(double v) {
  char s[32];
  snprintf(s, sizeof s, "%.6g", v);
  return strtod(s, NULL);
}

static bool add_str(cJSON *o, const char *k, const char *v) {
  return cJSON_AddStringToObject(o, k, v) != NULL;
}
static bool add_num(cJSON *o, const char *k, double v) {
  return cJSON_AddNumberToObject(o, k, v) != NULL;
}

static bool model_json(cJSON *arr, const nt_tune_model *m) {
  for (int i = 0; i < NT_TUNE_SHOWN; i++) {
    int c = nt_tune_shown_colls[i];
    for (int a = 0; a < NT_TUNE_NALGOS; a++)
      for (int p = 0; p < NT_TUNE_NPROTOS; p++) {
        if (!m->candidate[c][a] || m->bandwidth[c][a][p] == 0) continue;
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
          cJSON_Delete(o);
          return false;
        }
        if (!add_str(o, "collective", nt_tune_coll_name(c)) ||
            !add_str(o, "algo", nt_tune_algo_name(a)) ||
            !add_str(o, "proto", nt_tune_proto_name(p)) ||
            !add_num(o, "latency_us", six(m->latency[c][a][p])) ||
            !add_num(o, "bandwidth_gbs", six(m->bandwidth[c][a][p])))
          return false;
      }
  }
  return true;
}

static bool choice_json(cJSON *arr, const nt_tune_model *m) {
  for (int i = 0; i < NT_TUNE_SHOWN; i++) {
    int c = nt_tune_shown_colls[i];
    for (int s = 0; s < NT_TUNE_NSIZES; s++) {
      nt_tune_pick pick;
      size_t bytes = nt_tune_size(s);
      bool ok = nt_tune_choose(m, c, bytes, &pick) == 0;
      cJSON *o = cJSON_CreateObject();
      if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return false;
      }
      /* nothing available: NCCL fails the call; null algo and proto say so */
      if (!add_str(o, "collective", nt_tune_coll_name(c)) || !add_num(o, "bytes", (double)bytes))
        return false;
      if (ok) {
        if (!add_str(o, "algo", nt_tune_algo_name(pick.algo)) ||
            !add_str(o, "proto", nt_tune_proto_name(pick.proto)) ||
            !add_num(o, "time_us", six(pick.time_us)))
          return false;
        /* the channels NCCL gives it (absent where the model cannot say) */
        int nc = nt_tune_channels(m, c, pick.algo, pick.proto, bytes);
        if (nc > 0 && !add_num(o, "channels", nc)) return false;
      } else if (!cJSON_AddNullToObject(o, "algo") || !cJSON_AddNullToObject(o, "proto")) {
        return false;
      }
    }
  }
  return true;
}

int nt_tune_add_json(void *cjson_object, const nt_tune_model *m) {
  cJSON *root = cjson_object;
  cJSON *model = cJSON_AddArrayToObject(root, "model");
  if (!model || !model_json(model, m)) return -1;
  cJSON *choice = cJSON_AddArrayToObject(root, "choice");
  if (!choice || !choice_json(choice, m)) return -1;
  return 0;
}

/* The variables NCCL's tuning reads, as NCCL reads them: integers through
 * NCCL_PARAM (strtoll base 0, junk is 0, an overflow keeps the default, an
 * empty value is unset), NCCL_ALGO / NCCL_PROTO through parseList
 * (tuning.cc) with its "prefix:list;prefix:^list" syntax. Plus the names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "topo.h"
#include "tuning.h"
#include "tuning_internal.h"

static const char *const algo_names[NT_TUNE_NALGOS] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char *const proto_names[NT_TUNE_NPROTOS] = {"LL", "LL128", "Simple"};
static const char *const coll_names[NT_TUNE_NCOLLS] = {"Broadcast", "Reduce", "AllGather",
                                                       "ReduceScatter", "AllReduce"};

const char *nt_tune_algo_name(int a) {
  return a >= 0 && a < NT_TUNE_NALGOS ? algo_names[a] : "?";
}
const char *nt_tune_proto_name(int p) {
  return p >= 0 && p < NT_TUNE_NPROTOS ? proto_names[p] : "?";
}
const char *nt_tune_coll_name(int c) {
  return c >= 0 && c < NT_TUNE_NCOLLS ? coll_names[c] : "?";
}

const char *const nt_tune_env_names[] = {"NCCL_ALGO",
                                         "NCCL_PROTO",
                                         "NCCL_NTHREADS",
                                         "NCCL_LL128_NTHREADS",
                                         "NCCL_NET_OVERHEAD",
                                         "NCCL_LL128_C2C",
                                         "NCCL_PAT_ENABLE",
                                         "NCCL_MIN_NCHANNELS",
                                         "NCCL_MAX_NCHANNELS",
                                         "NCCL_MIN_NRINGS",
                                         "NCCL_MAX_NRINGS",
                                         "NCCL_UNPACK_DOUBLE_NCHANNELS",
                                         NULL};

void nt_tune_env_defaults(nt_tune_env *e) {
  memset(e, 0, sizeof *e);
  e->nthreads = e->ll128_nthreads = e->net_overhead = -2;
  e->ll128_c2c = 1;
  e->pat_enable = 2;
  e->min_nchannels = e->max_nchannels = e->min_nrings = e->max_nrings = -2;
  e->unpack_double_nchannels = 1;
}

void nt_tune_input_defaults(nt_tune_input *in) {
  memset(in, 0, sizeof *in);
  in->version = NT_NCCL_228;
  in->tree.pattern = NT_TUNE_PATTERN_BALANCED_TREE;
  in->ring.pattern = NT_TUNE_PATTERN_RING;
  nt_tune_env_defaults(&in->env);
}

int nt_tune_env_set(nt_tune_env *e, const char *a, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  const char *eq = strchr(a, '=');
  if (!eq) return snprintf(err, errlen, "'%.64s' is not NAME=VALUE", a), -1;
  char name[64];
  size_t n = (size_t)(eq - a);
  if (n >= sizeof name) return snprintf(err, errlen, "'%.64s': name too long", a), -1;
  memcpy(name, a, n);
  name[n] = '\0';
  const char *v = eq + 1;
  if (!strcmp(name, "NCCL_ALGO") || !strcmp(name, "NCCL_PROTO")) {
    bool algo = name[5] == 'A';
    if (strlen(v) > NT_TUNE_LIST_MAX)
      return snprintf(err, errlen, "%s: longer than %d characters", name, NT_TUNE_LIST_MAX), -1;
    snprintf(algo ? e->algo : e->proto, NT_TUNE_LIST_MAX + 1, "%s", v);
    *(algo ? &e->algo_set : &e->proto_set) = true;
    return 0;
  }
  static const struct {
    const char *name;
    size_t off;
  } ints[] = {{"NCCL_NTHREADS", offsetof(nt_tune_env, nthreads)},
              {"NCCL_LL128_NTHREADS", offsetof(nt_tune_env, ll128_nthreads)},
              {"NCCL_NET_OVERHEAD", offsetof(nt_tune_env, net_overhead)},
              {"NCCL_LL128_C2C", offsetof(nt_tune_env, ll128_c2c)},
              {"NCCL_PAT_ENABLE", offsetof(nt_tune_env, pat_enable)},
              {"NCCL_MIN_NCHANNELS", offsetof(nt_tune_env, min_nchannels)},
              {"NCCL_MAX_NCHANNELS", offsetof(nt_tune_env, max_nchannels)},
              {"NCCL_MIN_NRINGS", offsetof(nt_tune_env, min_nrings)},
              {"NCCL_MAX_NRINGS", offsetof(nt_tune_env, max_nrings)},
              {"NCCL_UNPACK_DOUBLE_NCHANNELS", offsetof(nt_tune_env, unpack_double_nchannels)}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (strcmp(name, ints[i].name)) continue;
    /* NCCL_PARAM: unset when empty, default on overflow, junk reads as 0 */
    return nt_nccl_param(name, v, (long long *)((char *)e + ints[i].off), err, errlen);
  }
  return snprintf(err, errlen, "%.64s is not a variable nccltop's tuning model reads", name), -1;
}

/* parseList: "elems" or "^elems" for every collective first, then
 * "Collective:elems" entries separated by ';'. Each entry first resets its
 * collectives' row to all-off ("^": all-on) and then sets the names listed.
 * Tokenized as NCCL does (strtok_r: empty tokens vanish, a third ':' field
 * is ignored). */
int tune_parse_list(const char *str, int which, int *table, char *err, size_t errlen) {
  const char *const *elems = which == TUNE_LIST_ALGO ? algo_names : proto_names;
  int nelems = which == TUNE_LIST_ALGO ? NT_TUNE_NALGOS : NT_TUNE_NPROTOS;
  const char *var = which == TUNE_LIST_ALGO ? "NCCL_ALGO" : "NCCL_PROTO";
  char full[NT_TUNE_LIST_MAX + 1], sub[NT_TUNE_LIST_MAX + 1], list[NT_TUNE_LIST_MAX + 1];
  snprintf(full, sizeof full, "%s", str);
  char *save_full = NULL;
  for (char *tok = strtok_r(full, ";", &save_full); tok; tok = strtok_r(NULL, ";", &save_full)) {
    snprintf(sub, sizeof sub, "%s", tok);
    char *save_sub = NULL;
    char *prefix = strtok_r(sub, ":", &save_sub);
    char *elem_list = strtok_r(NULL, ":", &save_sub);
    if (!elem_list) {
      if (tok != full)
        return snprintf(err, errlen,
                        "%s=\"%.64s\": every entry but the first needs a collective prefix; NCCL "
                        "fails to initialize",
                        var, str),
               -1;
      elem_list = prefix;
      prefix = NULL;
    }
    int set = 1, unset = 0;
    if (elem_list[0] == '^') {
      set = 0;
      unset = 1;
      elem_list++;
    }
    bool found_prefix = false;
    for (int c = 0; c < NT_TUNE_NCOLLS; c++) {
      if (prefix && strcasecmp(prefix, coll_names[c])) continue;
      found_prefix = true;
      for (int e = 0; e < nelems; e++) table[c * nelems + e] = unset;
      snprintf(list, sizeof list, "%s", elem_list);
      char *save_list = NULL;
      for (char *el = strtok_r(list, ",", &save_list); el; el = strtok_r(NULL, ",", &save_list)) {
        int e = 0;
        while (e < nelems && strcasecmp(el, elems[e])) e++;
        if (e == nelems)
          return snprintf(err, errlen,
                          "%s=\"%.64s\": unknown name \"%.32s\"; NCCL fails to initialize", var,
                          str, el),
                 -1;
        table[c * nelems + e] = set;
      }
    }
    if (!found_prefix)
      return snprintf(err, errlen,
                      "%s=\"%.64s\": unknown collective \"%.32s\"; NCCL fails to initialize", var,
                      str, prefix ? prefix : ""),
             -1;
  }
  return 0;
}

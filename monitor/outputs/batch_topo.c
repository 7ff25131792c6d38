/* The JSON frame's "topologies": the machines the viewer holds a topology
 * of (what its publishers sent, NCCL_TOPO_DUMP_FILE; or --topology), as the
 * topology view has them:
 *
 *  "topologies": [{"source": where it came from (a publisher's endpoint
 *     and pid, or the --topology file), "hash": its content's hash (16 hex digits; a new
 *     version from the same source is a new hash), "gpus", "nics" (null
 *     while unknown), "model": NCCL's path model on it under NCCL's
 *     defaults, the object `nccltop topo FILE --json` prints, in the first
 *     frame that carries this version from this source and null after (it
 *     does not change),
 *     "model_error": why there is no model (null when there is one),
 *     "graphs": NCCL's ring and tree search on the machine as one node, the
 *     rings and trees it connects and NCCL's tuning model of them, the object
 *     `nccltop topo FILE --graphs --json` prints, carried as "model" is,
 *     "graphs_error": why there are none, or why they come without the
 *     tuning model (null when they are whole)}]
 * Written by the batch output's one thread: the record of what was carried
 * is its own.
 *
 * The model is computed once per version, on a copy of the file the model
 * keeps, as the topology view computes it; a frame carries it once so that
 * a frame a second does not repeat the same tens of kilobytes. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "batch_json.h"
#include "../core/model.h"

/* Versions (a source's file, by its hash) whose model a frame has carried,
 * newest last; the oldest is forgotten first (it is then carried once more
 * if it comes back). */
#define TOPO_SENT_MAX 32
/* A document bigger than this stays out of the frame: what the topologies
 * take comes off the processes' and ranks' share of the 64 MiB (batch.c). */
#define TOPO_DOC_MAX_BYTES (1u << 20)

typedef struct {
  uint64_t hash;
  char source[160];
  int gpus, nics;         /* -1: unknown */
  char error[160];        /* why it has no model; "" when it has one */
  char graphs_error[160]; /* why it has no graphs; "" when it has them (same size) */
} topo_sent;

_Static_assert(sizeof((topo_sent *)0)->error == sizeof((topo_sent *)0)->graphs_error,
               "an error is copied whole from one to the other");

static struct {
  uint64_t model; /* its serial: a new model (a replay's seek's) starts afresh */
  topo_sent v[TOPO_SENT_MAX];
  uint32_t n;
} sent;

static topo_sent *sent_find(uint64_t hash, const char *source) {
  for (uint32_t i = 0; i < sent.n; i++)
    if (sent.v[i].hash == hash && strcmp(sent.v[i].source, source) == 0) return &sent.v[i];
  return NULL;
}

static topo_sent *sent_add(uint64_t hash, const char *source) {
  if (sent.n == TOPO_SENT_MAX) {
    memmove(&sent.v[0], &sent.v[1], (TOPO_SENT_MAX - 1) * sizeof sent.v[0]);
    sent.n--;
  }
  sent.v[sent.n] = (topo_sent){.hash = hash, .gpus = -1, .nics = -1};
  snprintf(sent.v[sent.n].source, sizeof sent.v[sent.n].source, "%s", source);
  return &sent.v[sent.n++];
}

/* What a frame carries of a version the first time: its documents as JSON
 * text (NULL: not carried; its topo_sent says why). */
typedef struct {
  char *model, *graphs;
} topo_docs;

/* Text over the frame's share is dropped, and why is said. */
static char *bounded(char *json, const char *what, char *err, size_t errlen) {
  if (!json) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  size_t n = strlen(json);
  if (n <= TOPO_DOC_MAX_BYTES) return json;
  snprintf(err, errlen, "its %s is %zu bytes, more than a frame carries", what, n);
  free(json);
  return NULL;
}

/* The rings, trees and tuning model of the machine as one node. */
static char *graphs_json(nt_topo *t, char *err, size_t errlen) {
  nt_topo_graphs *g = nt_topo_graphs_compute(t, 1, err, errlen);
  if (!g) return NULL;
  nt_tune_model *tm = malloc(sizeof *tm);
  nt_tune_env tenv;
  nt_tune_env_defaults(&tenv);
  char why[128] = "out of memory"; /* with its prefix, within an error's 160 bytes */
  /* As `nccltop topo --graphs`: without a tuning model (NCCL would refuse
   * its variables), the graphs alone, and why. */
  if (!tm || nt_topo_graphs_tune(t, g, &tenv, tm, why, sizeof why) != 0) {
    snprintf(err, errlen, "no tuning model: %s", why);
    free(tm);
    tm = NULL;
  }
  char *json = bounded(nt_topo_graphs_to_json(t, g, tm), "graphs", err, errlen);
  free(tm);
  nt_topo_graphs_free(g);
  return json;
}

/* Topology i's documents under NCCL's defaults, computed on a copy of the
 * file the model keeps (the model never computes its own). */
static topo_docs docs_of(const nt_model *m, uint32_t i, const char *source, topo_sent *s) {
  topo_docs d = {NULL, NULL};
  size_t len = 0;
  const char *xml = nt_model_topology_xml(m, i, &len);
  if (!xml) {
    snprintf(s->error, sizeof s->error, "no copy of %s kept", source);
    memcpy(s->graphs_error, s->error, sizeof s->graphs_error);
    return d;
  }
  nt_topo *t = nt_topo_load_buffer(xml, len, source, s->error, sizeof s->error);
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  if (t && nt_topo_compute(t, &env, s->error, sizeof s->error) == 0) {
    s->gpus = nt_topo_ngpus(t);
    s->nics = nt_topo_nnets(t);
    d.model = bounded(nt_topo_to_json(t, &env), "model", s->error, sizeof s->error);
    d.graphs = graphs_json(t, s->graphs_error, sizeof s->graphs_error);
  } else {
    memcpy(s->graphs_error, s->error, sizeof s->graphs_error);
  }
  nt_topo_free(t);
  return d;
}

static void doc(nt_jo *w, const char *key, const char *json, const char *err_key, const char *err) {
  if (json)
    nt_jo_json(w, key, json);
  else
    nt_jo_null(w, key);
  nt_jo_str_known(w, err_key, err);
}

void nt_batch_topologies_json(nt_jo *w, const nt_model *m) {
  nt_jo_arr(w, "topologies");
  if (m && nt_model_serial(m) != sent.model) {
    sent.model = nt_model_serial(m);
    sent.n = 0;
  }
  uint32_t n = m ? nt_model_topology_count(m) : 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *source = "";
    uint64_t hash = 0;
    if (!nt_model_topology_at(m, i, &source, &hash)) continue;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, hash);
    topo_sent *s = sent_find(hash, source);
    topo_docs d = {NULL, NULL};
    if (!s) {
      s = sent_add(hash, source);
      d = docs_of(m, i, source, s);
    }
    nt_jo_obj(w, NULL);
    nt_jo_str(w, "source", source);
    nt_jo_str(w, "hash", hex);
    if (s->gpus < 0) {
      nt_jo_null(w, "gpus");
      nt_jo_null(w, "nics");
    } else {
      nt_jo_u64(w, "gpus", (uint64_t)s->gpus);
      nt_jo_u64(w, "nics", (uint64_t)s->nics);
    }
    doc(w, "model", d.model, "model_error", s->error);
    doc(w, "graphs", d.graphs, "graphs_error", s->graphs_error);
    nt_jo_end(w);
    free(d.model);
    free(d.graphs);
  }
  nt_jo_end(w);
}

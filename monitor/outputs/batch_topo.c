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
 *     "model_error": why there is no model (null when there is one)}]
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
/* A model bigger than this stays out of the frame (a frame keeps 4 MiB for
 * everything but its processes and ranks; batch.c). */
#define TOPO_MODEL_MAX_BYTES (1u << 20)

typedef struct {
  uint64_t hash;
  char source[160];
  int gpus, nics;  /* -1: unknown */
  char error[160]; /* why it has no model; "" when it has one */
} topo_sent;

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
  sent.v[sent.n] = (topo_sent){.hash = hash, .gpus = -1, .nics = -1, .error = ""};
  snprintf(sent.v[sent.n].source, sizeof sent.v[sent.n].source, "%s", source);
  return &sent.v[sent.n++];
}

/* The model of topology i under NCCL's defaults, as JSON text (the caller
 * frees), or NULL with err set. */
static char *model_json(const nt_model *m, uint32_t i, const char *source, topo_sent *s) {
  char *err = s->error;
  size_t errlen = sizeof s->error;
  size_t len = 0;
  const char *xml = nt_model_topology_xml(m, i, &len);
  if (!xml) {
    snprintf(err, errlen, "no copy of %s kept", source);
    return NULL;
  }
  nt_topo *t = nt_topo_load_buffer(xml, len, source, err, errlen);
  if (!t) return NULL;
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  char *json = NULL;
  if (nt_topo_compute(t, &env, err, errlen) == 0) {
    s->gpus = nt_topo_ngpus(t);
    s->nics = nt_topo_nnets(t);
    json = nt_topo_to_json(t, &env);
    if (!json) snprintf(err, errlen, "out of memory");
  }
  nt_topo_free(t);
  if (json && strlen(json) > TOPO_MODEL_MAX_BYTES) {
    snprintf(err, errlen, "its model is %zu bytes, more than a frame carries", strlen(json));
    free(json);
    json = NULL;
  }
  return json;
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
    char *json = NULL;
    if (!s) {
      s = sent_add(hash, source);
      json = model_json(m, i, source, s);
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
    if (json)
      nt_jo_json(w, "model", json);
    else
      nt_jo_null(w, "model");
    nt_jo_str_known(w, "model_error", s->error);
    nt_jo_end(w);
    free(json);
  }
  nt_jo_end(w);
}

/* The JSON frame's "topologies" (monitor/outputs/batch_topo.c): each
 * topology the viewer holds, with NCCL's path model on it as `nccltop topo
 * FILE --json` prints it and its rings, trees and tuning model as `nccltop
 * topo FILE --graphs --json` does, in the first frame that carries that
 * version and null after; a new version or a new source brings its model once; a new
 * model (a replay's seek) starts over; no topology is an empty array. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "json_get.h"
#include "batch_frame.h"
#include "../topo/topo.h"

#define SWITCHED   "examples/topologies/nvswitch-8gpu-8nic.xml"
#define TWO_SOCKET "examples/topologies/pcie-2socket-4gpu.xml"

/* One JSON frame of m, parsed (the caller deletes it); NULL unless it is
 * one line. */
static cJSON *frame(nt_model *m, double now) {
  char *text = batch_frame(m, true, now);
  size_t len = text ? strlen(text) : 0;
  cJSON *j = len > 1 && !memchr(text, '\n', len - 1) ? cJSON_Parse(text) : NULL;
  free(text);
  return j;
}

/* The model's topology from `file`, under the name `source`. */
static bool give(nt_model *m, const char *file, const char *source, double now) {
  char err[256];
  size_t len = 0;
  char *xml = nt_topo_read_file(file, &len, err, sizeof err);
  bool ok = xml && nt_model_set_topology(m, xml, len, source, now) == 0;
  free(xml);
  return ok;
}

/* What `nccltop topo [--graphs] --json FILE` prints, parsed: the binary
 * next to this test's directory. */
static cJSON *command_json(const char *options, const char *file) {
  char exe[PATH_MAX], cmd[2 * PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(cmd, sizeof cmd, "%s/../nccltop topo %s --json %s", dirname(exe), options, file);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len = getline(&buf, &cap, p);
  int rc = pclose(p);
  cJSON *j = len > 0 && rc == 0 ? cJSON_Parse(buf) : NULL;
  free(buf);
  return j;
}

static const cJSON *topology(const cJSON *f, int i) {
  return cJSON_GetArrayItem(get(f, "topologies"), i);
}

static int ntopologies(const cJSON *f) {
  const cJSON *a = get(f, "topologies");
  return cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
}

static void a_topology_brings_its_model_once_per_version(void) {
  nt_model *m = nt_model_new();
  /* named as the command names it: its path */
  CHECK(m && give(m, SWITCHED, SWITCHED, 1.0));
  cJSON *want = command_json("", SWITCHED), *want_graphs = command_json("--graphs", SWITCHED);
  cJSON *f1 = frame(m, 1.5), *f2 = frame(m, 2.5);
  CHECK(want && want_graphs && f1 && f2);
  CHECK_EQ_U64(ntopologies(f1), 1);
  const cJSON *t1 = topology(f1, 0), *t2 = topology(f2, 0);
  CHECK_STR(str(t1, "source"), SWITCHED);
  CHECK_EQ_U64(strlen(str(t1, "hash")), 16);
  CHECK_EQ_U64(num(t1, "gpus"), 8);
  CHECK_EQ_U64(num(t1, "nics"), 8);
  /* the command's own documents; 16 endpoints, every ordered pair */
  CHECK(cJSON_Compare(get(t1, "model"), want, true));
  CHECK_EQ_U64(cJSON_GetArraySize(get(get(t1, "model"), "pairs")), 16 * 15);
  CHECK(cJSON_IsNull(get(t1, "model_error")));
  CHECK(cJSON_Compare(get(t1, "graphs"), want_graphs, true));
  CHECK_EQ_U64(num(get(t1, "graphs"), "ranks"), 8);
  CHECK(cJSON_IsNull(get(t1, "graphs_error")));
  /* the next frame: the same version, without its documents */
  CHECK_EQ_U64(ntopologies(f2), 1);
  CHECK_STR(str(t2, "hash"), str(t1, "hash"));
  CHECK_EQ_U64(num(t2, "gpus"), 8);
  CHECK(cJSON_IsNull(get(t2, "model")));
  CHECK(cJSON_IsNull(get(t2, "graphs")));
  CHECK(cJSON_IsNull(get(t2, "model_error")));
  /* a new version from the same source, then a second source */
  CHECK(give(m, TWO_SOCKET, SWITCHED, 3.0));
  cJSON *f3 = frame(m, 3.5);
  CHECK(f3 && ntopologies(f3) == 1);
  const cJSON *t3 = topology(f3, 0);
  CHECK(strcmp(str(t3, "hash"), str(t1, "hash")) != 0);
  CHECK_EQ_U64(num(t3, "gpus"), 4);
  CHECK(cJSON_IsObject(get(t3, "model")));
  CHECK_EQ_U64(num(get(t3, "graphs"), "ranks"), 4);
  CHECK(give(m, SWITCHED, "gpu-node-2:77", 4.0));
  cJSON *f4 = frame(m, 4.5);
  CHECK(f4 && ntopologies(f4) == 2);
  CHECK(cJSON_IsNull(get(topology(f4, 0), "model")));
  CHECK_STR(str(topology(f4, 1), "source"), "gpu-node-2:77");
  CHECK(cJSON_IsObject(get(topology(f4, 1), "model")));
  cJSON_Delete(want);
  cJSON_Delete(want_graphs);
  cJSON_Delete(f1);
  cJSON_Delete(f2);
  cJSON_Delete(f3);
  cJSON_Delete(f4);
  nt_model_free(m);
}

/* Another model (a replay seeks by building a new one) is told afresh,
 * wherever it was allocated. */
static void a_new_model_gets_the_model_again(void) {
  for (int i = 0; i < 2; i++) {
    nt_model *m = nt_model_new();
    CHECK(m && give(m, TWO_SOCKET, "gpu-node-3:9", 1.0));
    cJSON *f = frame(m, 1.5);
    CHECK(f && ntopologies(f) == 1);
    CHECK(cJSON_IsObject(get(topology(f, 0), "model")));
    cJSON_Delete(f);
    nt_model_free(m);
  }
}

static void no_topology_is_an_empty_array(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  cJSON *f = m ? frame(m, 1.0) : NULL;
  CHECK(f != NULL);
  CHECK_EQ_U64(ntopologies(f), 0);
  cJSON_Delete(f);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(a_topology_brings_its_model_once_per_version);
  TEST_RUN(a_new_model_gets_the_model_again);
  TEST_RUN(no_topology_is_an_empty_array);
  return TEST_DONE();
}

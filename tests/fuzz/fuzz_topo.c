/* libFuzzer target: the topology XML loader, graph and path computation,
 * under default and what-if environments; and the same bytes as NCCL's
 * channel graph dump (NCCL_GRAPH_DUMP_FILE), which the viewer reads too. */
#include <stdint.h>
#include <stdlib.h>

#include "../../topo/graph_dump.h"
#include "../../topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  nt_graph_dump *d = nt_graph_dump_parse((const char *)data, size, err, sizeof err);
  for (int g = 0; d && g < nt_graph_dump_ngraphs(d); g++) {
    int64_t gpus[NT_DUMP_MAX_GPUS], in, out;
    for (int c = 0; c < nt_graph_dump_graph(d, g)->nchannels; c++)
      nt_graph_dump_channel(d, g, c, gpus, NT_DUMP_MAX_GPUS, &in, &out);
  }
  nt_graph_dump_free(d);
  nt_topo *t = nt_topo_load_buffer((const char *)data, size, "fuzz.xml", err, sizeof err);
  if (!t) return 0;
  nt_topo_env e;
  nt_topo_env_defaults(&e);
  e.p2p_disable = 1;
  e.pxn_disable = size & 1;
  e.gdr_level = (int)(size % 10) - 1;
  if (nt_topo_compute(t, &e, err, sizeof err) == 0) {
    char *json = nt_topo_to_json(t, &e);
    free(json);
  }
  nt_topo_free(t);
  return 0;
}

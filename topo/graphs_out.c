/* The channel graphs for people (text) and programs (JSON). GPUs and NICs
 * are named by their `dev` numbers, as NCCL_GRAPH_DUMP_FILE names them;
 * trees are written as NCCL's INFO log writes them (children->rank->parent). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "search.h"

const char *nt_topo_pattern_name(int pattern) {
  switch (pattern) {
  case NT_PATTERN_BALANCED_TREE: return "balanced tree";
  case NT_PATTERN_SPLIT_TREE: return "split tree";
  case NT_PATTERN_TREE: return "tree";
  case NT_PATTERN_RING: return "ring";
  default: return "?";
  }
}

static int ep_dev(const nt_topo *t, int endpoint) {
  if (endpoint < 0) return -1;
  nt_topo_endpoint e;
  nt_topo_endpoint_at(t, endpoint, &e);
  return e.dev;
}

static void print_graph(FILE *out, const nt_topo *t, const nt_topo_graphs *g, int which) {
  nt_topo_graph_info gi;
  if (!nt_topo_graphs_graph(g, which, &gi)) return;
  bool inter = nt_topo_graphs_nodes(g) > 1;
  fprintf(out,
          "%s search: %s, %d channel%s, bw %.6g/%.6g GB/s, type %s/%s, sameChannels %d, "
          "crossNic %d\n",
          which == 0 ? "ring" : "tree", nt_topo_pattern_name(gi.pattern), gi.nchannels,
          gi.nchannels == 1 ? "" : "s", gi.bw_intra, gi.bw_inter, nt_path_name(gi.type_intra),
          nt_path_name(gi.type_inter), gi.same_channels, gi.cross_nic);
  fprintf(out, "  %7s %s GPUs (dev)%s\n", "channel", inter ? "NET in " : "",
          inter ? "  NET out" : "");
  for (int c = 0; c < gi.nchannels; c++) {
    fprintf(out, "  %7d", c);
    if (inter) fprintf(out, " %6d ", ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 0)));
    for (int k = 0; k < gi.ngpus; k++)
      fprintf(out, " %d", ep_dev(t, nt_topo_graphs_channel_gpu(g, which, c, k)));
    if (inter) fprintf(out, "  %d", ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 1)));
    fputc('\n', out);
  }
}

void nt_topo_graphs_print_text(FILE *out, const nt_topo *t, const nt_topo_graphs *g,
                               const nt_tune_model *m) {
  int nodes = nt_topo_graphs_nodes(g), nranks = nt_topo_graphs_nranks(g);
  fprintf(out, "NCCL %s channels for %s: %d node%s x %d GPU%s = %d rank%s\n",
          nt_topo_version_name(t->env.version), t->name, nodes, nodes == 1 ? "" : "s", t->ngpus,
          t->ngpus == 1 ? "" : "s", nranks, nranks == 1 ? "" : "s");
  print_graph(out, t, g, 0);
  print_graph(out, t, g, 1);
  int nch = nt_topo_graphs_nchannels(g);
  fprintf(out,
          "connected: %d channel%s (rank r runs on node r/%d, GPU dev of local rank r%%%d:", nch,
          nch == 1 ? "" : "s", t->ngpus, t->ngpus);
  for (int r = 0; r < t->ngpus; r++) fprintf(out, " %d", ep_dev(t, nt_topo_graphs_rank_gpu(g, r)));
  fprintf(out, ")\nrings (from rank 0):\n");
  for (int c = 0; c < nch; c++) {
    const int *ring = nt_topo_graphs_ring(g, c);
    fprintf(out, "  %2d:", c);
    for (int i = 0; ring && i < nranks; i++) fprintf(out, " %d", ring[i]);
    fputc('\n', out);
  }
  fprintf(out, "trees (children->rank->parent):\n");
  for (int c = 0; c < nch; c++) {
    fprintf(out, "  %2d:", c);
    for (int r = 0; r < nranks; r++) {
      int up, down[3];
      if (nt_topo_graphs_tree(g, c, r, &up, down))
        fprintf(out, " %d/%d/%d->%d->%d", down[0], down[1], down[2], r, up);
    }
    fputc('\n', out);
  }
  if (m) nt_tune_print_text(out, m);
}

typedef struct {
  bool ok;
} jb;

static cJSON *add(jb *b, cJSON *obj, const char *key, cJSON *item) {
  if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
    cJSON_Delete(item);
    b->ok = false;
    return NULL;
  }
  return item;
}

static cJSON *push(jb *b, cJSON *arr, cJSON *item) {
  if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
    cJSON_Delete(item);
    b->ok = false;
    return NULL;
  }
  return item;
}

static void num(jb *b, cJSON *o, const char *k, double v) {
  add(b, o, k, cJSON_CreateNumber(v));
}

/* NCCL's bandwidths are floats: 6 significant digits, as its dump writes. */
static double gbs(double v) {
  char s[32];
  snprintf(s, sizeof s, "%.6g", v);
  return strtod(s, NULL);
}

static void graph_json(jb *b, cJSON *arr, const nt_topo *t, const nt_topo_graphs *g, int which) {
  nt_topo_graph_info gi;
  if (!nt_topo_graphs_graph(g, which, &gi)) return;
  cJSON *o = push(b, arr, cJSON_CreateObject());
  add(b, o, "pattern", cJSON_CreateString(which == 0 ? "ring" : "tree"));
  num(b, o, "nccl_pattern", gi.pattern);
  num(b, o, "channels", gi.nchannels);
  num(b, o, "bw_intra", gbs(gi.bw_intra));
  num(b, o, "bw_inter", gbs(gi.bw_inter));
  add(b, o, "type_intra", cJSON_CreateString(nt_path_name(gi.type_intra)));
  add(b, o, "type_inter", cJSON_CreateString(nt_path_name(gi.type_inter)));
  num(b, o, "same_channels", gi.same_channels);
  num(b, o, "cross_nic", gi.cross_nic);
  cJSON *chs = add(b, o, "channel", cJSON_CreateArray());
  for (int c = 0; chs && c < gi.nchannels; c++) {
    cJSON *ch = push(b, chs, cJSON_CreateObject());
    cJSON *gpus = add(b, ch, "gpus", cJSON_CreateArray());
    for (int k = 0; gpus && k < gi.ngpus; k++)
      push(b, gpus, cJSON_CreateNumber(ep_dev(t, nt_topo_graphs_channel_gpu(g, which, c, k))));
    num(b, ch, "net_in", ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 0)));
    num(b, ch, "net_out", ep_dev(t, nt_topo_graphs_channel_net(g, which, c, 1)));
  }
}

/* The document's keys into root; false if any could not be added. NCCL's
 * model and choice (`model`, `choice`) follow with m. */
static bool graphs_document(cJSON *root, const nt_topo *t, const nt_topo_graphs *g,
                            const nt_tune_model *m) {
  jb b = {.ok = true};
  int nranks = nt_topo_graphs_nranks(g), nch = nt_topo_graphs_nchannels(g);
  add(&b, root, "file", cJSON_CreateString(t->name));
  add(&b, root, "nccl_version", cJSON_CreateString(nt_topo_version_name(t->env.version)));
  /* the channel variables in effect (-2 or 0: unset, as NCCL reads them);
   * the path variables are the matrix's (`nccltop topo --json`) */
  cJSON *set = add(&b, root, "settings", cJSON_CreateObject());
  const nt_topo_env *e = &t->env;
  num(&b, set, "NCCL_CROSS_NIC", e->cross_nic);
  num(&b, set, "NCCL_MIN_NCHANNELS", e->min_nchannels);
  num(&b, set, "NCCL_MAX_NCHANNELS", e->max_nchannels);
  num(&b, set, "NCCL_MIN_NRINGS", e->min_nrings);
  num(&b, set, "NCCL_MAX_NRINGS", e->max_nrings);
  num(&b, set, "NCCL_MIN_CTAS", e->min_ctas);
  num(&b, set, "NCCL_MAX_CTAS", e->max_ctas);
  add(&b, set, "p2p_level", cJSON_CreateString(nt_path_name(nt_topo_p2p_level(t, e))));
  num(&b, root, "nodes", nt_topo_graphs_nodes(g));
  num(&b, root, "ranks", nranks);
  cJSON *devs = add(&b, root, "rank_dev", cJSON_CreateArray());
  for (int r = 0; devs && r < nranks; r++)
    push(&b, devs, cJSON_CreateNumber(ep_dev(t, nt_topo_graphs_rank_gpu(g, r))));
  cJSON *graphs = add(&b, root, "graphs", cJSON_CreateArray());
  graph_json(&b, graphs, t, g, 0);
  graph_json(&b, graphs, t, g, 1);
  num(&b, root, "channels", nch);
  cJSON *rings = add(&b, root, "rings", cJSON_CreateArray());
  for (int c = 0; rings && c < nch; c++) {
    cJSON *o = push(&b, rings, cJSON_CreateObject());
    num(&b, o, "channel", c);
    const int *ring = nt_topo_graphs_ring(g, c);
    cJSON *ranks = add(&b, o, "ranks", cJSON_CreateArray());
    for (int i = 0; ranks && ring && i < nranks; i++) push(&b, ranks, cJSON_CreateNumber(ring[i]));
  }
  cJSON *trees = add(&b, root, "trees", cJSON_CreateArray());
  for (int c = 0; trees && c < nch; c++)
    for (int r = 0; r < nranks; r++) {
      int up, down[3];
      if (!nt_topo_graphs_tree(g, c, r, &up, down)) continue;
      cJSON *o = push(&b, trees, cJSON_CreateObject());
      num(&b, o, "channel", c);
      num(&b, o, "rank", r);
      num(&b, o, "up", up);
      add(&b, o, "down", cJSON_CreateIntArray(down, 3));
    }
  if (b.ok && m && nt_tune_add_json(root, m) != 0) b.ok = false;
  return b.ok;
}

char *nt_topo_graphs_to_json(const nt_topo *t, const nt_topo_graphs *g, const nt_tune_model *m) {
  cJSON *root = cJSON_CreateObject();
  char *s = root && graphs_document(root, t, g, m) ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return s;
}

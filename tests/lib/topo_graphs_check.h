/* What every channel search and connection keeps, for the graphs tests
 * (test_topo_graphs*.c): the invariants and the model's sanity, each
 * returning its failures (the first few said on stderr) so one CHECK
 * covers a whole graph set. */
#ifndef NCCLTOP_TESTS_TOPO_GRAPHS_CHECK_H
#define NCCLTOP_TESTS_TOPO_GRAPHS_CHECK_H

#include <stdbool.h>

#include "../../topo/topo.h"

/* The CUDA device number of an endpoint; -1 for -1. */
int tg_dev_of(const nt_topo *t, int endpoint);

/* Channel c of graph `which` (0 ring, 1 tree) is exactly the GPUs with
 * these dev numbers, in this order. */
bool tg_channel_is(const nt_topo *t, const nt_topo_graphs *g, int which, int c, const int *devs,
                   int n);

/* The path type between two endpoints; NT_PATH_DIS when there is none. */
int tg_path_type(const nt_topo *t, int i, int j);

/* Every GPU once per channel, no hop the paths forbid or the graph's type
 * excludes, channels on NICs exactly over several nodes, rings through
 * every rank, trees that are trees; the failures (0: all hold). */
int tg_check_invariants(const nt_topo *t, const nt_topo_graphs *g, const char *what);

/* NCCL's model of the graphs: computed over their ranks and nodes, with a
 * Ring/Simple AllReduce and a pick for every size (a lone rank has nothing
 * to model); the failures. */
int tg_check_model(const nt_topo *t, const nt_topo_graphs *g, const char *what);

#endif

/* `nccltop topo FILE [--env NAME=VALUE ...] [--json]`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

static void usage(FILE *f) {
  fprintf(f, "usage: nccltop topo FILE.xml [--env NAME=VALUE ...] [--json]\n"
             "  FILE.xml  NCCL's topology (NCCL_TOPO_DUMP_FILE output, or an example)\n"
             "  --env     apply an NCCL variable as NCCL would read it:");
  for (int i = 0; nt_topo_env_names[i]; i++) fprintf(f, " %s", nt_topo_env_names[i]);
  fprintf(f, "\n  --json    one JSON document: nodes, then one object per ordered pair\n");
}

int nt_topo_main(int argc, char **argv) {
  const char *file = NULL;
  bool json = false;
  nt_topo_env env;
  nt_topo_env_defaults(&env);
  char err[512];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = true;
    else if (!strcmp(argv[i], "--env") && i + 1 < argc) {
      if (nt_topo_env_set(&env, argv[++i], err, sizeof err) != 0) {
        fprintf(stderr, "nccltop topo: %s\n", err);
        return 2;
      }
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "nccltop topo: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (!file) {
    usage(stderr);
    return 2;
  }
  nt_topo *t = nt_topo_load_file(file, err, sizeof err);
  if (!t) {
    fprintf(stderr, "nccltop topo: %s\n", err);
    return 1;
  }
  int rc = 0;
  if (nt_topo_compute(t, &env, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop topo: %s\n", err);
    rc = 1;
  } else if (json) {
    char *s = nt_topo_to_json(t, &env);
    if (s)
      printf("%s\n", s);
    else
      rc = 1;
    free(s);
  } else {
    if (nt_topo_ngpus(t) == 0)
      printf("%s: no GPU in this file (a skeleton: NCCL adds the GPUs at run time)\n\n", file);
    nt_topo_print_text(stdout, t);
  }
  nt_topo_free(t);
  return rc;
}

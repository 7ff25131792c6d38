/* See local_view.h. */
#include "local_view.h"

#include <stdio.h>
#include <string.h>

#include "../../monitor/commands/cli.h"

bool local_view_open(local_view *v, const char *dir, const char *connect) {
  char err[256] = "";
  memset(v, 0, sizeof *v);
  nt_options_defaults(&v->o);
  v->o.dir = dir;
  if (connect) v->o.connect[v->o.nconnect++] = connect;
  v->m = nt_model_new();
  v->src = v->m ? nt_source_open(&v->o, err, sizeof err) : NULL;
  if (!v->src) fprintf(stderr, "    cannot open the source: %s\n", err);
  return v->src != NULL;
}

void local_view_close(local_view *v) {
  nt_source_close(v->src);
  nt_model_free(v->m);
}

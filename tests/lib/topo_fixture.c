/* See topo_fixture.h. */
#include "topo_fixture.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tf_shared_dir(void) {
  const char *d = getenv("NCCLTOP_SHARED_TOPOLOGIES");
  if (d && *d && access(d, R_OK) == 0) return d;
  return access("../shared/topologies", R_OK) == 0 ? "../shared/topologies" : NULL;
}

nt_topo *tf_load(const char *dir, const char *file) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  nt_topo *t = nt_topo_load_file(path, err, sizeof err);
  if (!t) fprintf(stderr, "    %s\n", err);
  return t;
}

nt_topo *tf_from_xml(const char *xml) {
  char err[512];
  nt_topo *t = nt_topo_load_buffer(xml, strlen(xml), "inline.xml", err, sizeof err);
  if (!t) fprintf(stderr, "    %s\n", err);
  return t;
}

int tf_compute_err(nt_topo *t, int version, const char *a, const char *b, char *err,
                   size_t errlen) {
  nt_topo_env e;
  nt_topo_env_defaults(&e);
  e.version = version;
  if ((a && nt_topo_env_set(&e, a, err, errlen) != 0) ||
      (b && nt_topo_env_set(&e, b, err, errlen) != 0))
    return -1;
  return nt_topo_compute(t, &e, err, errlen);
}

bool tf_compute(nt_topo *t, int version, const char *a, const char *b) {
  char err[512];
  if (tf_compute_err(t, version, a, b, err, sizeof err) != 0) {
    fprintf(stderr, "    %s\n", err);
    return false;
  }
  return true;
}

int tf_endpoint(const nt_topo *t, const char *label) {
  for (int i = 0; i < nt_topo_ngpus(t) + nt_topo_nnets(t); i++) {
    nt_topo_endpoint e;
    nt_topo_endpoint_at(t, i, &e);
    if (!strcmp(e.label, label)) return i;
  }
  return -1;
}

nt_topo_pair tf_pair(const nt_topo *t, const char *a, const char *b) {
  nt_topo_pair p;
  memset(&p, 0, sizeof p);
  p.type = -1;
  nt_topo_pair_at(t, tf_endpoint(t, a), tf_endpoint(t, b), &p);
  return p;
}

bool tf_near(double a, double b) {
  return fabs(a - b) < 1e-3;
}

bool tf_warned(const nt_topo *t, const char *what) {
  for (int i = 0; i < nt_topo_nwarnings(t); i++)
    if (strstr(nt_topo_warning(t, i), what)) return true;
  return false;
}

nt_topo_graphs *tf_graphs(nt_topo *t, int version, int nodes, const char *a, const char *b) {
  char err[512];
  if (!tf_compute(t, version, a, b)) return NULL;
  nt_topo_graphs *g = nt_topo_graphs_compute(t, nodes, err, sizeof err);
  if (!g) fprintf(stderr, "    %s\n", err);
  return g;
}

int tf_run_cli(const char *out, const char *errf, int argc, const char **argv) {
  fflush(stdout);
  fflush(stderr);
  int saved = dup(1), saved_err = dup(2);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int fe = errf ? open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600) : open("/dev/null", O_WRONLY);
  if (saved < 0 || saved_err < 0 || fd < 0 || fe < 0) return -100;
  dup2(fd, 1);
  dup2(fe, 2);
  close(fd);
  close(fe);
  int rc = nt_topo_main(argc, (char **)argv);
  fflush(stdout);
  fflush(stderr);
  dup2(saved, 1);
  dup2(saved_err, 2);
  close(saved);
  close(saved_err);
  return rc;
}

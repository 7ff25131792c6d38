/* `nccltop topo FILE.xml [--env NAME=VALUE ...] [--from-env] [--json]
 * [--nccl-version 2.28|2.30] [--graphs [--nodes N]]`: NCCL's path matrix of
 * a topology file, or the rings and trees NCCL's search builds on it with
 * NCCL's tuning model of them. Exit
 * status 0, 1 when the file cannot be loaded (or NCCL would refuse it under
 * that version), 2 for a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "topo.h"

static bool listed(const char *const *names, const char *assignment);

static void usage(FILE *f) {
  fprintf(f, "usage: nccltop topo FILE.xml [--env NAME=VALUE ...] [--from-env] [--json]\n"
             "                    [--nccl-version 2.28|2.30] [--compact | --full]\n"
             "                    [--graphs [--nodes N]]\n"
             "  FILE.xml        NCCL's topology (NCCL_TOPO_DUMP_FILE output, or an example)\n"
             "  --env N=V       apply an NCCL variable the way NCCL reads it (repeatable)\n"
             "  --from-env      apply those variables from this shell's environment first\n"
             "  --json          one JSON document: settings, nodes, one object per ordered pair\n"
             "  --nccl-version  whose rules: 2.28 (2.28.9, the default) or 2.30 (2.30.7)\n"
             "  --compact       cells numbered by kind, the kinds listed below (fits 80 columns);\n"
             "                  the default on a terminal too narrow for the full matrix\n"
             "  --full          the full matrix, whatever the terminal's width\n"
             "  --graphs        NCCL's ring and tree search on this machine, the rings and\n"
             "                  trees it connects and NCCL's tuning model of them (latency and\n"
             "                  bandwidth per collective, algorithm and protocol; its pick by\n"
             "                  size), instead of the matrix\n"
             "  --nodes N       with --graphs: a job over N identical nodes (default 1, at most\n"
             "                  128)\n"
             "variables:");
  for (int i = 0; nt_topo_env_names[i]; i++)
    fprintf(f, "%s %s", i % 4 == 0 ? "\n " : "", nt_topo_env_names[i]);
  fprintf(f, "\nand, for the model with --graphs:");
  for (int i = 0, k = 0; nt_tune_env_names[i]; i++)
    if (!listed(nt_topo_env_names, nt_tune_env_names[i]))
      fprintf(f, "%s %s", k++ % 4 == 0 ? "\n " : "", nt_tune_env_names[i]);
  fputc('\n', f);
}

/* "--opt VALUE" or "--opt=VALUE"; NULL when argv[*i] is not that option. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt, bool *missing) {
  size_t n = strlen(opt);
  if (strncmp(argv[*i], opt, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *missing = true;
    return NULL;
  }
  return argv[++*i];
}

/* On a terminal narrower than the full matrix, the compact form reads
 * better; into a pipe or a file, the full one (scripts keep their format),
 * unless COLUMNS is in the environment (`COLUMNS=80 nccltop topo F | less`:
 * shells keep it unexported, so a script's output does not change). */
static bool too_wide(const nt_topo *t) {
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return nt_topo_text_width(t) > ws.ws_col;
  const char *env = getenv("COLUMNS");
  char *end;
  long cols = env ? strtol(env, &end, 10) : 0;
  if (!env || !*env || *end || cols <= 0 || cols > 100000) return false;
  return nt_topo_text_width(t) > cols;
}

/* The graphs, then NCCL's model of them; when NCCL would refuse the tuning
 * variables (its init fails), the graphs alone and the reason. */
static int print_graphs(nt_topo *t, int nodes, const nt_tune_env *tune_env, bool json) {
  char err[512];
  nt_topo_graphs *g = nt_topo_graphs_compute(t, nodes, err, sizeof err);
  if (!g) {
    fprintf(stderr, "nccltop topo: %s\n", err);
    return 1;
  }
  int rc = 0;
  nt_tune_model *m = malloc(sizeof *m);
  if (!m) {
    fprintf(stderr, "nccltop topo: out of memory\n");
    nt_topo_graphs_free(g);
    return 1;
  }
  if (nt_topo_graphs_tune(t, g, tune_env, m, err, sizeof err) != 0) {
    fprintf(stderr, "nccltop topo: no model: %s\n", err);
    free(m);
    m = NULL;
    rc = 1;
  }
  if (json) {
    char *s = nt_topo_graphs_to_json(t, g, m);
    if (s)
      printf("%s\n", s);
    else
      fprintf(stderr, "nccltop topo: out of memory\n"), rc = 1;
    free(s);
  } else {
    nt_topo_graphs_print_text(stdout, t, g, m);
  }
  free(m);
  nt_topo_graphs_free(g);
  return rc;
}

/* Whether "NAME=..." names one of names. */
static bool listed(const char *const *names, const char *assignment) {
  size_t n = strcspn(assignment, "=");
  for (int i = 0; names[i]; i++)
    if (strlen(names[i]) == n && !strncmp(names[i], assignment, n)) return true;
  return false;
}

/* The tuning variables of this shell's environment (--from-env), with one
 * note per value NCCL would not take as given. */
static void tune_env_from_environ(nt_tune_env *e) {
  for (int i = 0; nt_tune_env_names[i]; i++) {
    const char *v = getenv(nt_tune_env_names[i]);
    if (!v) continue;
    char a[NT_TUNE_LIST_MAX + 64], err[512];
    if (strlen(v) > NT_TUNE_LIST_MAX) {
      fprintf(stderr, "nccltop topo: note: %s: longer than %d characters, ignored\n",
              nt_tune_env_names[i], NT_TUNE_LIST_MAX);
      continue;
    }
    snprintf(a, sizeof a, "%s=%s", nt_tune_env_names[i], v);
    /* the channel limits are read for the paths too: noted there already */
    if (nt_tune_env_set(e, a, err, sizeof err) != 0 && !listed(nt_topo_env_names, a))
      fprintf(stderr, "nccltop topo: note: %s\n", err);
  }
}

int nt_topo_main(int argc, char **argv) {
  const char *file = NULL;
  bool json = false, from_env = false, graphs = false;
  int nodes = 0; /* 0: --nodes not given */
  int form = 0;  /* 0: by the terminal's width, 1: compact, 2: full */
  const char *envs[64];
  int nenv = 0, version = NT_NCCL_228;
  for (int i = 1; i < argc; i++) {
    bool missing = false;
    const char *v;
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--compact") || !strcmp(argv[i], "--full")) {
      int want = argv[i][2] == 'c' ? 1 : 2;
      if (form && form != want) {
        fprintf(stderr, "nccltop topo: --compact and --full exclude each other\n");
        return 2;
      }
      form = want;
    } else if (!strcmp(argv[i], "--graphs")) {
      graphs = true;
    } else if ((v = opt_value(argc, argv, &i, "--nodes", &missing))) {
      char *end;
      long n = strtol(v, &end, 10);
      if (!*v || *end || n < 1 || n > NT_TOPO_MAX_GRAPH_NODES) {
        fprintf(stderr, "nccltop topo: --nodes %.32s: use a whole number from 1 to %d\n", v,
                NT_TOPO_MAX_GRAPH_NODES);
        return 2;
      }
      nodes = (int)n;
    } else if (!strcmp(argv[i], "--from-env")) {
      from_env = true;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if ((v = opt_value(argc, argv, &i, "--env", &missing))) {
      if (nenv == (int)(sizeof envs / sizeof envs[0])) {
        fprintf(stderr, "nccltop topo: too many --env options\n");
        return 2;
      }
      envs[nenv++] = v;
    } else if ((v = opt_value(argc, argv, &i, "--nccl-version", &missing))) {
      if ((version = nt_topo_version_parse(v)) < 0) {
        fprintf(stderr,
                "nccltop topo: --nccl-version %s: topo has NCCL 2.28.9's and 2.30.7's rules: use "
                "2.28 or 2.30, the nearest release's\n",
                v);
        return 2;
      }
    } else if (missing) {
      fprintf(stderr, "nccltop topo: %s needs a value\n", argv[i]);
      return 2;
    } else if (argv[i][0] != '-' && !file) {
      file = argv[i];
    } else {
      /* one line, as every command-line mistake (the whole usage buried it) */
      fprintf(stderr, "nccltop topo: unexpected argument '%s'; try 'nccltop topo --help'\n",
              argv[i]);
      return 2;
    }
  }
  if (!file) {
    fprintf(stderr, "nccltop topo: which topology file? try 'nccltop topo --help'\n");
    return 2;
  }
  if (nodes && !graphs) {
    fprintf(stderr, "nccltop topo: --nodes needs --graphs\n");
    return 2;
  }
  if (graphs && form) {
    fprintf(stderr, "nccltop topo: --compact and --full shape the matrix, not --graphs\n");
    return 2;
  }
  nt_topo_env env;
  char err[1024];
  nt_topo_env_defaults(&env);
  env.version = version;
  if (from_env) {
    nt_topo_env_from_environ(&env, err, sizeof err);
    if (err[0]) fprintf(stderr, "nccltop topo: %s\n", err);
  }
  nt_tune_env tune_env;
  nt_tune_env_defaults(&tune_env);
  if (from_env) tune_env_from_environ(&tune_env);
  for (int i = 0; i < nenv; i++) {
    /* a variable of the paths, of the model, or of both (the channel
     * limits): applied to each that reads it, noted once */
    bool tune_only = listed(nt_tune_env_names, envs[i]) && !listed(nt_topo_env_names, envs[i]);
    int rc = tune_only ? nt_tune_env_set(&tune_env, envs[i], err, sizeof err)
                       : nt_topo_env_set(&env, envs[i], err, sizeof err);
    if (rc >= 0 && !tune_only && listed(nt_tune_env_names, envs[i])) {
      char again[512];
      (void)nt_tune_env_set(&tune_env, envs[i], again, sizeof again); /* read alike: noted above */
    }
    if (rc < 0) {
      fprintf(stderr, "nccltop topo: %s\n", err);
      return 2;
    }
    if (rc > 0) fprintf(stderr, "nccltop topo: note: %s\n", err);
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
  } else if (graphs) {
    rc = print_graphs(t, nodes ? nodes : 1, &tune_env, json);
  } else if (json) {
    char *s = nt_topo_to_json(t, &env);
    if (s)
      printf("%s\n", s);
    else
      fprintf(stderr, "nccltop topo: out of memory\n"), rc = 1;
    free(s);
  } else if (form == 1 || (form == 0 && too_wide(t))) {
    nt_topo_print_compact(stdout, t);
  } else {
    nt_topo_print_text(stdout, t);
  }
  nt_topo_free(t);
  return rc;
}

/* The command line (cli.c): usage, the viewer's options and their
 * checks, and how `demo` splits its arguments. */
#ifndef NCCLTOP_CLI_H
#define NCCLTOP_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "../../sim/sim.h"
#include "../options.h"

/* The command line. */
void nt_usage(FILE *f);
void nt_sim_usage(FILE *f); /* `nccltop sim --help` */
/* Defaults: delay 500 ms, stall 2000 ms, colour unless NO_COLOR is set,
 * ASCII when the locale (set it first) is not UTF-8. */
void nt_options_defaults(nt_options *o);
/* Parses the viewer options of argv[1..argc) into o; returns 0, 1 when help
 * or the version was printed (exit 0), 2 after a usage error was printed on
 * stderr (exit 2). The strings stay argv's. */
int nt_options_parse(nt_options *o, int argc, char **argv);
/* The screen's settings file (feeds/settings.h) into o, under the flags
 * given (they win); nothing with -b or --no-config. nt_options_parse calls
 * it last. A file that cannot be used: one line on stderr and
 * o->settings_note, the defaults kept. */
void nt_options_load_settings(nt_options *o);
/* One of the viewer's long options (name without "--"; value NULL for a
 * flag), for a subcommand that shares it (record, exporter): the same
 * ranges and messages, said as `prog`. 0, 1 (printed help or version) or
 * 2 (refused, one line on stderr). */
int nt_options_set(nt_options *o, const char *prog, const char *name, const char *value);
/* `demo` arguments (argv[0] "demo"): simulator options go into sim, the rest
 * (with their values) into viewer[1..], viewer[0] = argv[0], NULL-terminated;
 * viewer has room for argc + 1 pointers. -1 after a simulator option error. */
int nt_demo_split_args(nt_sim_config *sim, int argc, char **argv, char **viewer, int *nviewer);

#endif

/* nccltop's subcommands besides the monitor itself (main.c dispatches):
 * each takes its own argv (argv[0] its name) and returns the exit status,
 * 2 after a usage error. */
#ifndef NCCLTOP_COMMANDS_H
#define NCCLTOP_COMMANDS_H

int nt_record_main(int argc, char **argv);   /* record.c */
int nt_replay_main(int argc, char **argv);   /* replay.c */
int nt_export_main(int argc, char **argv);   /* export.c: a recording as a Chrome trace */
int nt_exporter_main(int argc, char **argv); /* exporter.c: Prometheus */
/* relay.c: forwards one node's publishers to viewers elsewhere, until
 * SIGINT/SIGTERM (relay.c explains the design). */
int nt_relay_main(int argc, char **argv);

#endif

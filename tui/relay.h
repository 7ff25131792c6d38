/* `nccltop relay`: forwards one node's publishers to viewers elsewhere
 * (relay.c explains the design). */
#ifndef NCCLTOP_RELAY_H
#define NCCLTOP_RELAY_H

/* The TCP port a relay listens on unless --listen says otherwise. */
#define NT_RELAY_DEFAULT_PORT 7460

/* Runs the relay until SIGINT/SIGTERM; argv[0] is "relay". Returns the
 * exit status (2 after a usage error). */
int nt_relay_main(int argc, char **argv);

#endif

/* How every command stops: the quit flag its loop polls, and the one
 * signal set-up (tui/clock.c). */
#ifndef NCCLTOP_TUI_SIGNALS_H
#define NCCLTOP_TUI_SIGNALS_H

#include <stdbool.h>

/* Set (async-signal-safe) by the signal handler, or by a loop that must
 * stop; every command's loop ends when it is non-zero. Returns the signal
 * number (-1 when asked with 0). */
void nt_request_quit(int sig);
int nt_quit_requested(void);
/* The one signal set-up of every command: SIGINT, SIGTERM and SIGHUP ask
 * its loop to stop (nt_quit_requested says which); SIGPIPE is ignored. With
 * second_signal_ends, a second one before the loop has stopped runs
 * before_ending (async-signal-safe: put the terminal back, kill a child's
 * group; may be NULL) and ends the process the default way. 0, or -1. */
int nt_signals_install(bool second_signal_ends, void (*before_ending)(void));

#endif

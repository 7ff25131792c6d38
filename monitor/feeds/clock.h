/* The viewer's clock, and how every command stops (clock.c): the quit
 * flag its loop polls, the one signal set-up, and the terminal modes a
 * second signal puts back. */
#ifndef NCCLTOP_CLOCK_H
#define NCCLTOP_CLOCK_H

#include <stdbool.h>

double nt_now_s(void); /* CLOCK_MONOTONIC in seconds */

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

/* While the screen is on: the shell's terminal modes and the terminfo
 * strings that leave the screen (keypad off, cursor on, alternate screen
 * off); nt_term_restore_now (async-signal-safe) puts them back when a
 * second signal ends the process the default way. */
struct termios;
void nt_term_restore_set(const struct termios *shell, const char *seq);
void nt_term_restore_clear(void);
void nt_term_restore_now(void);

#endif

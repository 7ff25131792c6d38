/* The viewer's clock and its quit flag: the two things every loop (batch,
 * screen) and the signal handler share; and what gives the terminal back
 * when a second signal ends the process before the screen could. */
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "viewer.h"

static volatile sig_atomic_t quit_signal;

double nt_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void nt_request_quit(int sig) {
  quit_signal = sig ? sig : -1;
}

int nt_quit_requested(void) {
  return quit_signal;
}

static struct termios term_shell;
static char term_seq[256];
static volatile sig_atomic_t term_seq_len; /* 0: the screen is not on */

void nt_term_restore_set(const struct termios *shell, const char *seq) {
  size_t n = strlen(seq);
  if (n >= sizeof term_seq) n = 0; /* terminfo strings are short; none then */
  term_shell = *shell;
  memcpy(term_seq, seq, n);
  term_seq_len = (sig_atomic_t)n;
}

void nt_term_restore_clear(void) {
  term_seq_len = 0;
}

void nt_term_restore_now(void) {
  if (!term_seq_len) return;
  tcsetattr(STDOUT_FILENO, TCSANOW, &term_shell);
  if (write(STDOUT_FILENO, term_seq, (size_t)term_seq_len) < 0) return; /* nothing else to try */
}

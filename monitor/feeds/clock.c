/* The viewer's clock and its quit flag: the two things every loop (batch,
 * screen, relay, exporter, record) and the signal handler share; the one
 * signal set-up of every command; and what gives the terminal back when a
 * second signal ends the process before the screen could. */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Atomic, not only volatile: the relay's forwarding thread reads it while
 * the handler may run on another thread (lock-free, so signal-safe). */
static atomic_int quit_signal;
static void (*last_words)(void);
static volatile sig_atomic_t second_ends;

double nt_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void nt_request_quit(int sig) {
  atomic_store(&quit_signal, sig ? sig : -1);
}

int nt_quit_requested(void) {
  return atomic_load(&quit_signal);
}

static void on_stop_signal(int sig) {
  if (second_ends && atomic_load(&quit_signal)) {
    if (last_words) last_words();
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  nt_request_quit(sig);
}

int nt_signals_install(bool second_signal_ends, void (*before_ending)(void)) {
  last_words = before_ending;
  second_ends = second_signal_ends;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
    if (sigaction(stops[i], &sa, NULL) != 0) return -1;
  sa.sa_handler = SIG_IGN; /* a closed pipe is a write error the command reports */
  return sigaction(SIGPIPE, &sa, NULL);
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

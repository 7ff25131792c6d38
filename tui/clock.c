/* The viewer's clock and its quit flag: the two things every loop (batch,
 * screen) and the signal handler share. */
#include <signal.h>
#include <time.h>

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

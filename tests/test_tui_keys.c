/* Keys of the interactive nccltop, in a pseudo-terminal read through
 * libvterm: the help screen scrolls to its last line, F3 and n go to the
 * next match of the last search, Esc cancels a filter being typed and
 * clears the one in force (the job: `nccltop demo`, two ranks). And the
 * header says what is watched. */
#include <libgen.h>
#include <limits.h>

#include "testlib.h"
#include "vterm_harness.h"

static char nccltop[PATH_MAX + 16];

/* The last line of the help text (views.c), and the first of its keys. */
#define HELP_LAST  "Bandwidths: algbw and busbw"
#define HELP_FIRST "Keys"

static void help_scrolls_to_its_last_line(void) {
  char dir[] = "/tmp/nccltop-keys-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  vt_term t;
  char *argv[] = {nccltop, "-d", "100", NULL};
  char *env[] = {env_dir, NULL};
  CHECK(vt_start(&t, 20, 100, argv, env) == 0);
  vt_send(&t, "h");
  bool ok = vt_wait_for(&t, HELP_FIRST, 10);
  vt_pump(&t, 300); /* the whole first page */
  if (ok && strstr(t.text, HELP_LAST)) {
    fprintf(stderr, "    the help fits in 20 lines: this test needs a smaller terminal\n");
    ok = false;
  }
  if (ok) {
    vt_send(&t, "\033OF"); /* End */
    ok = vt_wait_for(&t, HELP_LAST, 5);
  }
  if (ok) {
    vt_send(&t, "\033OH"); /* Home */
    ok = vt_wait_for(&t, HELP_FIRST, 5);
  }
  /* PgDn, until the end shows (a few pages). */
  for (int i = 0; ok && i < 8 && !strstr(vt_text(&t), HELP_LAST); i++) {
    vt_send(&t, "\033[6~");
    double end = vt_now() + 1;
    while (vt_now() < end && !strstr(vt_text(&t), HELP_LAST)) vt_pump(&t, 50);
  }
  if (ok && !strstr(t.text, HELP_LAST)) {
    fprintf(stderr, "    PgDn never reached the end of the help:\n%s\n", t.text);
    ok = false;
  }
  if (ok) {
    vt_send(&t, "\033"); /* Esc leaves help */
    ok = vt_wait_for(&t, "COMMUNICATOR", 5);
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  rmdir(dir);
  CHECK(ok);
}

/* Whether the row of the proxy view that starts with `rank` is the
 * cursor's (drawn reversed). */
static bool cursor_on(vt_term *t, const char *rank) {
  const char *line = vt_text(t);
  for (int r = 0; r < t->rows && line;
       r++, line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (strncmp(line, rank, strlen(rank)) != 0) continue;
    VTermScreenCell cell;
    return vterm_screen_get_cell(t->screen, (VTermPos){.row = r, .col = 0}, &cell) &&
           cell.attrs.reverse;
  }
  return false;
}

static bool wait_cursor_on(vt_term *t, const char *rank, double seconds) {
  double end = vt_now() + seconds;
  while (vt_now() < end) {
    vt_pump(t, 50);
    if (cursor_on(t, rank)) return true;
  }
  fprintf(stderr, "    the cursor never came to %s:\n%s\n", rank, t->text);
  return false;
}

static bool wait_gone(vt_term *t, const char *what, double seconds) {
  double end = vt_now() + seconds;
  while (vt_now() < end) {
    vt_pump(t, 50);
    if (!strstr(vt_text(t), what)) return true;
  }
  fprintf(stderr, "    the screen kept \"%s\":\n%s\n", what, t->text);
  return false;
}

static void search_next_and_filter_cancel(void) {
  char tmp[] = "/tmp/nccltop-keysdemo-XXXXXX", env_tmp[64];
  CHECK(mkdtemp(tmp) != NULL);
  snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
  vt_term t;
  char *argv[] = {nccltop, "demo", "--ranks", "2", "--comms", "1", "-d", "200", NULL};
  char *env[] = {env_tmp, NULL};
  CHECK(vt_start(&t, 24, 130, argv, env) == 0);
  vt_send(&t, "2"); /* the proxy view: a row per rank, with a cursor */
  bool ok = vt_wait_for(&t, "[proxy threads]", 20) && vt_wait_for(&t, "1/2", 20) &&
            vt_wait_for(&t, "0/2", 5) && wait_cursor_on(&t, "0/2", 5);
  if (ok) {
    vt_send(&t, "/sim-comm\r"); /* both rows match; the first is the cursor's */
    ok = wait_cursor_on(&t, "0/2", 5);
  }
  if (ok) {
    vt_send(&t, "\033OR"); /* F3: the next match */
    ok = wait_cursor_on(&t, "1/2", 5) && !strstr(t.text, "search:");
  }
  if (ok) {
    vt_send(&t, "n"); /* n too, wrapping round */
    ok = wait_cursor_on(&t, "0/2", 5);
  }
  if (ok) {
    /* A search that matches nothing says so (it said nothing at all), the
     * cursor stays, and the next key takes the message away. */
    vt_send(&t, "/xyz\r");
    ok = vt_wait_for(&t, "search: no rank matches \"xyz\"", 5) && wait_cursor_on(&t, "0/2", 5);
    if (!ok) fprintf(stderr, "    after a search for xyz:\n%s\n", t.text);
    if (ok) {
      vt_send(&t, "2");
      ok = wait_gone(&t, "no rank matches \"xyz\"", 5);
    }
  }
  if (ok) {
    vt_send(&t, "\\1/2"); /* a filter being typed applies at once ... */
    ok = vt_wait_for(&t, "filter \"1/2\"", 5) && wait_gone(&t, "0/2", 5);
  }
  if (ok) {
    vt_send(&t, "\033"); /* ... and Esc cancels it */
    ok = wait_gone(&t, "filter \"", 5) && vt_wait_for(&t, "0/2", 5);
  }
  if (ok) {
    vt_send(&t, "\\1/2\r"); /* kept with Enter ... */
    ok = vt_wait_for(&t, "filter \"1/2\"", 5) && wait_gone(&t, "0/2", 5);
  }
  if (ok) {
    vt_send(&t, "\033"); /* ... cleared with Esc */
    ok = wait_gone(&t, "filter \"", 5) && vt_wait_for(&t, "0/2", 5);
  }
  if (ok) {
    /* A filter that hides every rank says so, not "waiting for processes". */
    vt_send(&t, "\\nomatch\r");
    ok = vt_wait_for(&t, "no rank matches the filter \"nomatch\" (2 publishers)", 5) &&
         !strstr(t.text, "waiting for NCCL processes");
    if (!ok) fprintf(stderr, "    the screen with a filter matching nothing:\n%s\n", t.text);
  }
  if (ok) {
    vt_send(&t, "\033");
    ok = wait_gone(&t, "no rank matches", 5) && vt_wait_for(&t, "0/2", 5);
  }
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp); /* what a failed run left */
  if (system(cmd) != 0) fprintf(stderr, "    cannot remove %s\n", tmp);
  CHECK(ok);
}

/* The header says what is watched: the endpoint directory, the --hosts
 * (how many, compactly), and the --connect endpoint, or how many when
 * several. */
static void header_shows_what_is_watched(void) {
  char dir[] = "/tmp/nccltop-watch-XXXXXX", env_dir[64], want[4][128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  snprintf(want[0], sizeof want[0], "watching %s  waiting for NCCL processes", dir);
  snprintf(want[1], sizeof want[1], "watching %s + tcp://127.0.0.1:9", dir);
  snprintf(want[2], sizeof want[2], "watching %s + 3 --connect endpoints", dir);
  snprintf(want[3], sizeof want[3], "watching %s + 3 hosts 127.0.0.[1-3]:9 + tcp://127.0.0.1:10",
           dir);
  char *argvs[4][10] = {
      {nccltop, "-d", "100", NULL},
      {nccltop, "-d", "100", "--connect", "tcp://127.0.0.1:9", NULL},
      {nccltop, "-d", "100", "--connect", "tcp://127.0.0.1:9", "--connect", "tcp://127.0.0.1:10",
       "--connect", "tcp://127.0.0.1:11"},
      {nccltop, "-d", "100", "--hosts", "127.0.0.[1-3]:9", "--connect", "tcp://127.0.0.1:10", NULL},
  };
  bool ok = true;
  for (int i = 0; ok && i < 4; i++) {
    vt_term t;
    char *env[] = {env_dir, NULL};
    ok = vt_start(&t, 24, 160, argvs[i], env) == 0 && vt_wait_for(&t, want[i], 10);
    vt_send(&t, "q");
    if (ok) ok = vt_wait_exit(&t, 10) == 0;
    vt_stop(&t);
  }
  rmdir(dir);
  CHECK(ok);
}

int main(void) {
  char dir[PATH_MAX];
  vt_build_dir(dir, sizeof dir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", dir);
  TEST_RUN(help_scrolls_to_its_last_line);
  TEST_RUN(search_next_and_filter_cancel);
  TEST_RUN(header_shows_what_is_watched);
  return TEST_DONE();
}

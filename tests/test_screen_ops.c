/* Issue 4 on the interactive screen: the real nccltop in a pseudo-terminal,
 * read through libvterm, watching simulated jobs (real rank processes, the
 * real plugin, real sockets). A stalled rank on the overview (the root of the
 * waits at the top, the stalls naming their peer), the collectives view
 * (algorithm and protocol by size, the phase table), the environment view (a
 * variable that differs between ranks, highlighted, with the outlier; after a
 * restart, what changed), and the event classes on the help view. */
#include "scenario_harness.h"
#include "vterm_harness.h"

/* ---- reading the screen by line ---- */

/* Pumps until a row has the needles; its index, or -1 (the screen said). */
static int wait_row(vt_term *t, double seconds, const char *const *needles) {
  double end = vt_now() + seconds;
  do {
    vt_pump(t, 50);
    vt_text(t);
    int r = row_with(t, needles);
    if (r >= 0) return r;
  } while (vt_now() < end);
  fprintf(stderr, "    no row with");
  for (int i = 0; needles[i]; i++) fprintf(stderr, " \"%s\"", needles[i]);
  fprintf(stderr, "; the screen shows:\n%s\n", t->text);
  return -1;
}

/* The whitespace-separated field k of row r. */
static const char *field(const vt_term *t, int r, int k, char *buf, size_t cap) {
  char line[2048];
  screen_row(t, r, line, sizeof line);
  char *save = NULL, *tok = strtok_r(line, " ", &save);
  for (int i = 0; tok && i < k; i++) tok = strtok_r(NULL, " ", &save);
  snprintf(buf, cap, "%s", tok ? tok : "");
  return buf;
}

/* Pumps until the row with `needles` whose first field is `first` (any
 * first field if NULL) shows `want` in fields kc and kd. A row is read again
 * on every pump: one read could catch it half redrawn (its name columns
 * written, its numbers not yet). */
static bool wait_counts(vt_term *t, double seconds, const char *const *needles, const char *first,
                        int kc, int kd, const char *want) {
  char f0[64] = "", count[32] = "", done[32] = "";
  double end = vt_now() + seconds;
  do {
    vt_pump(t, 50);
    vt_text(t);
    for (int r = 0; r < t->rows; r++) {
      char line[2048];
      if (!has_in_order(screen_row(t, r, line, sizeof line), needles)) continue;
      if (first && strcmp(field(t, r, 0, f0, sizeof f0), first)) continue;
      field(t, r, kc, count, sizeof count);
      field(t, r, kd, done, sizeof done);
      if (!strcmp(count, want) && !strcmp(done, want)) return true;
    }
  } while (vt_now() < end);
  fprintf(stderr, "    %s %s: COUNT %s DONE %s, want %s %s; the screen shows:\n%s\n", needles[0],
          needles[1] ? needles[1] : "", count, done, want, want, t->text);
  return false;
}

static bool cell_bold(vt_term *t, int row, int col) {
  VTermScreenCell cell;
  VTermPos pos = {.row = row, .col = col};
  return vterm_screen_get_cell(t->screen, pos, &cell) && cell.attrs.bold;
}

/* ---- a stalled rank on the overview ---- */

/* unfolded: after '+', the waiting ranks' own lines under the root;
 * before, one line says how many there are. */
static bool overview_shows_the_stall(vt_term *t, int stalled, int n, bool unfolded, char *why,
                                     size_t cap) {
  int head = row_with(t, ROW("ALERTS (", "most important first"));
  if (head < 0) return snprintf(why, cap, "no ALERTS header"), false;
  char first[2048], me[32];
  snprintf(me, sizeof me, "rank %d/%d", stalled, n);
  screen_row(t, head + 1, first, sizeof first);
  /* The top alert: the stalled rank, where the waits end. */
  if (!has_in_order(first, ROW("! root", me, "is where the waits end", "in recv_gpu_wait",
                               "3 ranks wait on it")))
    return snprintf(why, cap, "the first alert: %s", first), false;
  for (int r = 0; r < n; r++) {
    char other[32];
    snprintf(other, sizeof other, "rank %d/%d", r, n);
    if (r != stalled && row_with(t, ROW("root", other)) >= 0)
      return snprintf(why, cap, "a root line for %s", other), false;
  }
  /* The stalls of the ranks waiting on it name the peer they wait on,
   * folded under the root (real NCCL: 10+ lines for one cause at 4 ranks)
   * until '+' shows them, indented. */
  char pred[32], peer[32];
  snprintf(pred, sizeof pred, "rank %d/%d", (stalled - 1 + n) % n, n);
  snprintf(peer, sizeof peer, "waiting on rank %d ", stalled);
  int waiter = row_with(t, ROW("! stall", pred, "send channel", "in send_peer_wait", peer));
  int more = row_with(t, ROW("    + ", "more under it", "ranks waiting on it"));
  if (unfolded && (waiter < 0 || more >= 0))
    return snprintf(why, cap, "unfolded: no send_peer_wait stall of %s on rank %d", pred, stalled),
           false;
  char at[2048];
  if (unfolded && strncmp(screen_row(t, waiter, at, sizeof at), "    ! stall", 11) != 0)
    return snprintf(why, cap, "unfolded: the stall of %s is not indented", pred), false;
  if (!unfolded && (waiter >= 0 || more <= head + 1 || more > head + 4))
    return snprintf(why, cap, "folded: %s's stall shown (%d) or no '+ more' line under the root",
                    pred, waiter),
           false;
  /* The successor's receives wait on it too, but may be queued (its GPU
   * never reached them): no stall line needed (PROTOCOL 1.2). */
  if (row_with(t, ROW("! stall", me, "in recv_gpu_wait", "its GPU not draining data from")) < 0)
    return snprintf(why, cap, "no recv_gpu_wait stall of the stalled rank"), false;
  if (row_with(t, ROW("! hung_op", me, "in flight")) < 0)
    return snprintf(why, cap, "no hung_op line for the stalled rank"), false;
  return true;
}

static void stalled_rank_on_the_overview(void) {
  char dir[] = "/tmp/nccltop-scrops-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 4;
  c.interval_ms = 100;
  c.stall_rank = 2;
  c.stall_after_s = 1.5;
  c.duration_s = 40;
  pid_t sim = nt_sim_spawn(&c);
  vt_term t;
  char *argv[] = {nccltop, "--stall-ms", "1000", "-d", "200", NULL};
  char *env[] = {env_dir, NULL};
  bool ok = sim > 0 && wait_publishers(dir, c.ranks, 10) && vt_start(&t, 40, 230, argv, env) == 0;
  bool term = ok;
  char why[2300] = "the job or the terminal did not start";
  if (ok)
    ok = vt_wait_for(&t, "[overview]", 15) && wait_row(&t, 15, ROW("! root", "rank 2/4")) >= 0;
  if (ok) {
    /* All of it on one screen: steady for a few updates. */
    double end = vt_now() + 10;
    for (int unfolded = 0; unfolded < 2 && ok; unfolded++) {
      if (unfolded) vt_send(&t, "+");
      int steady = 0;
      while (steady < 3 && vt_now() < end) {
        vt_pump(&t, 200);
        vt_text(&t);
        steady = overview_shows_the_stall(&t, 2, 4, unfolded, why, sizeof why) ? steady + 1 : 0;
      }
      ok = steady >= 3;
      if (!ok) fprintf(stderr, "    %s; the screen shows:\n%s\n", why, t.text);
    }
    if (ok) vt_send(&t, "-");
  }
  if (ok) {
    /* A narrower terminal cuts the lines, but the root stays on top. */
    vt_resize(&t, 30, 120);
    int head = wait_row(&t, 5, ROW("ALERTS (", "most important first"));
    char line[2048];
    ok = head >= 0 &&
         wait_row(&t, 5, ROW("! root", "rank 2/4", "is where the waits end")) == head + 1;
    if (!ok)
      fprintf(stderr, "    after the resize, row %d: %s\n", head + 1,
              screen_row(&t, head + 1, line, sizeof line));
  }
  if (ok) {
    /* At 80 columns the header drops whole fields, never a number cut in
     * half: its alert count is the overview's, and the sort and the filter
     * stay (they read "alerts 1" for 10, and "so", "fi"). */
    vt_resize(&t, 24, 80);
    vt_send(&t, "\\2/4\r");
    double end = vt_now() + 5;
    char head[2048] = "", want[64] = "";
    do {
      vt_pump(&t, 100);
      vt_text(&t);
      int at = row_with(&t, ROW("ALERTS (", "most important first"));
      char heading[2048];
      unsigned n = 0;
      if (at >= 0 && sscanf(screen_row(&t, at, heading, sizeof heading), "ALERTS (%u", &n) == 1)
        snprintf(want, sizeof want, "alerts %u ", n);
      screen_row(&t, 0, head, sizeof head);
      ok = want[0] && strstr(head, want) && strstr(head, "filter \"2/4\"") &&
           strstr(head, "sort rank");
    } while (!ok && vt_now() < end);
    if (!ok) fprintf(stderr, "    at 80 columns, want \"%s\": %s\n", want, head);
    vt_send(&t, "\033");
  }
  if (ok) {
    /* The channels view marks the stalled channels, each with the wait it
     * is stuck in, as the alerts say: the stalled rank's receives wait on
     * its own GPU, its predecessor's sends for its credit (the interval's
     * dominant wait, from before the stall, showed "!NET/" there: the grid
     * contradicted the alert). */
    vt_send(&t, "3");
    ok = vt_wait_for(&t, "[channels]", 5) && wait_row(&t, 5, ROW("2/4 ", "!", "/GPU")) >= 0 &&
         wait_row(&t, 5, ROW("1/4 ", "!PEER/")) >= 0;
    if (!ok) fprintf(stderr, "    the channels view:\n%s\n", t.text);
  }
  if (ok) {
    vt_send(&t, "q");
    ok = vt_wait_exit(&t, 10) == 0;
  }
  if (term) vt_stop(&t);
  stop_group(&sim);
  remove_dir(dir);
  CHECK(ok);
}

/* ---- collectives, environment, help, restart ---- */

static bool collectives_view(vt_term *t) {
  vt_send(t, "4");
  if (!vt_wait_for(t, "[collectives]", 5)) return false;
  /* The protocol switch by size: small TREE/LL, middle RING/LL128, large
   * RING/SIMPLE; each once per rank of 3. */
  const char *const *rows[] = {
      ROW("sim-comm-0", "AllReduce", "32K-64K", "TREE", "LL "),
      ROW("sim-comm-0", "AllGather", "256K-512K", "RING", "LL128"),
      ROW("sim-comm-0", "ReduceScatter", "4M-8M", "RING", "SIMPLE"),
      ROW("sim-comm-0", "AllReduce", "64M-128M", "RING", "SIMPLE"),
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!wait_counts(t, 10, rows[i], NULL, 5, 6, "3")) return false;
  /* The phase table: 12 collectives, a third in each phase, times 3 ranks. */
  if (wait_row(t, 5, ROW("PHASE (nccltop_tag)", "COUNT", "DONE", "BUSY/rank")) < 0) return false;
  static const char *const phases[] = {"forward", "backward", "optimizer"};
  for (int p = 0; p < 3; p++)
    if (!wait_counts(t, 5, ROW(phases[p]), phases[p], 1, 2, "12")) return false;
  return true;
}

/* Job E: NCCL_ALGO=Ring everywhere, NCCL_PROTO=LL on rank 1 only, and
 * rank 2 with the kernelch event class on. */
static bool environment_view(vt_term *t) {
  vt_send(t, "6");
  if (!vt_wait_for(t, "[environment]", 5)) return false;
  if (wait_row(t, 10, ROW("NCCL* VARIABLES OF THIS RUN:", ", 2 differ between processes")) < 0)
    return false;
  /* The differing ones first, highlighted, with who differs: NCCL_PROTO is
   * unset on most ranks, LL on one. */
  int head = wait_row(t, 5, ROW("VARIABLE", "VALUE (most common)", "SET ON", "DIFFERENT ON"));
  int proto = wait_row(t, 5, ROW("NCCL_PROTO ", "(unset)", "1", ":", "=LL"));
  int events = wait_row(t, 5, ROW("NCCLTOP_EVENTS ", "(unset)", "1", ":", "=default,kernelch"));
  int algo = wait_row(t, 5, ROW("NCCL_ALGO ", "Ring", "3"));
  if (head < 0 || proto < 0 || events < 0 || algo < 0) return false;
  char line[2048];
  bool ok = events == head + 1 && proto == head + 2 && algo > proto && cell_bold(t, proto, 0) &&
            cell_bold(t, events, 0) && !cell_bold(t, algo, 0) &&
            !strchr(screen_row(t, algo, line, sizeof line), '=') &&
            row_with(t, ROW("=(unset)")) < 0;
  if (!ok)
    fprintf(stderr,
            "    header row %d, NCCLTOP_EVENTS row %d (bold %d), NCCL_PROTO row %d (bold %d), "
            "NCCL_ALGO row %d (bold %d):\n%s\n",
            head, events, cell_bold(t, events, 0), proto, cell_bold(t, proto, 0), algo,
            cell_bold(t, algo, 0), t->text);
  if (ok && row_with(t, ROW("CHANGED SINCE THE PREVIOUS RUN")) >= 0) {
    fprintf(stderr, "    a previous run before any restart\n");
    ok = false;
  }
  return ok;
}

/* The classes on; kernelch only on some processes. */
static bool help_view(vt_term *t) {
  vt_send(t, "7");
  if (!vt_wait_for(t, "[help]", 5)) return false;
  int r = wait_row(t, 5, ROW("Event classes on:"));
  char line[2048], want[] = "Event classes on: coll p2p proxyop proxystep proxyctrl "
                            "kernelch(some processes) cecoll";
  if (r < 0) return false;
  screen_row(t, r, line, sizeof line);
  size_t n = strlen(line);
  while (n && line[n - 1] == ' ') line[--n] = '\0';
  if (strcmp(line, want) != 0) {
    fprintf(stderr, "    the classes line is \"%s\", want \"%s\"\n", line, want);
    return false;
  }
  return wait_row(t, 2, ROW("NCCLTOP_EVENTS", "nccltop_set_mask()")) >= 0;
}

/* Stops a job and waits until the overview shows `ended` processes ended. */
static bool job_ends(vt_term *t, pid_t *sim, int ended) {
  stop_group(sim);
  vt_send(t, "1");
  double end = vt_now() + 10;
  while (vt_now() < end && count_rows(t, ROW(":", " ended")) < ended) {
    vt_pump(t, 100);
    vt_text(t);
  }
  if (count_rows(t, ROW(":", " ended")) == ended) return true;
  fprintf(stderr, "    %d processes not shown ended:\n%s\n", ended, t->text);
  return false;
}

/* Waits until the overview shows `live` processes live. */
static bool job_live(vt_term *t, int live) {
  vt_send(t, "1");
  double end = vt_now() + 15;
  while (vt_now() < end && count_rows(t, ROW(":", " live")) < live) {
    vt_pump(t, 100);
    vt_text(t);
  }
  if (count_rows(t, ROW(":", " live")) == live) return true;
  fprintf(stderr, "    not %d processes live:\n%s\n", live, t->text);
  return false;
}

/* After job A (NCCL_PROTO=Simple everywhere) replaced job E, and job B
 * (NCCL_PROTO=LL) replaced job A: what changed, each time. */
static bool change_since_e(vt_term *t) {
  vt_send(t, "6");
  return vt_wait_for(t, "[environment]", 5) &&
         wait_row(t, 15,
                  ROW("CHANGED SINCE THE PREVIOUS RUN", "(run 1: 3 processes -> run 2: 3)")) >= 0 &&
         wait_row(t, 5, ROW("NCCL_PROTO ", "varies by rank", "-> Simple")) >= 0;
}

static bool change_since_a(vt_term *t) {
  vt_send(t, "6");
  if (!vt_wait_for(t, "[environment]", 5)) return false;
  int head =
      wait_row(t, 15, ROW("CHANGED SINCE THE PREVIOUS RUN", "(run 2: 3 processes -> run 3: 3)"));
  int change = wait_row(t, 5, ROW("NCCL_PROTO ", "Simple -> LL"));
  if (head < 0 || change < 0) return false;
  char next[2048];
  screen_row(t, change + 1, next, sizeof next);
  if (change != head + 1 || !cell_bold(t, change, 2) || next[strspn(next, " ")] != '\0') {
    fprintf(stderr, "    the change is not the one highlighted line under the title:\n%s\n",
            t->text);
    return false;
  }
  if (wait_row(t, 5, ROW("NCCL* VARIABLES OF THIS RUN:", ", 0 differ between processes")) < 0)
    return false;
  /* The collectives view puts the previous run's choice next to each. */
  vt_send(t, "4");
  if (!vt_wait_for(t, "[collectives]", 5)) return false;
  return wait_row(t, 10, ROW("COUNT", "BUSBW", "PREVIOUS RUN")) >= 0 &&
         wait_row(t, 10, ROW("AllReduce", "32K-64K", "TREE", "LL ", " TREE/LL ")) >= 0;
}

static void collectives_environment_help_and_restart(void) {
  char dir[] = "/tmp/nccltop-scrops-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  nt_sim_config e, a, b;
  base_config(&e, dir);
  e.ranks = 3;
  e.channels = 2;
  e.steps = 2;
  e.iterations = 12;
  e.deterministic = true;
  e.linger_s = 60; /* stopped by the test, which ends its publishers */
  a = b = e;
  e.env[e.nenv++] = "NCCL_ALGO=Ring";
  e.rank_env[0].rank = 1;
  e.rank_env[0].kv = "NCCL_PROTO=LL";
  e.rank_env[1].rank = 2;
  e.rank_env[1].kv = "NCCLTOP_EVENTS=default,kernelch";
  e.nrank_env = 2;
  a.env[a.nenv++] = "NCCL_ALGO=Ring";
  a.env[a.nenv++] = "NCCL_PROTO=Simple";
  b.env[b.nenv++] = "NCCL_ALGO=Ring";
  b.env[b.nenv++] = "NCCL_PROTO=LL";
  pid_t sim_e = nt_sim_spawn(&e), sim_a = -1, sim_b = -1;
  vt_term t;
  char *argv[] = {nccltop, "-d", "200", NULL};
  char *env[] = {env_dir, NULL};
  bool ok = sim_e > 0 && wait_publishers(dir, e.ranks, 10) && vt_start(&t, 45, 200, argv, env) == 0;
  bool term = ok;
  if (ok) ok = vt_wait_for(&t, "[overview]", 15) && vt_wait_for(&t, "3/3", 15);
  if (ok) ok = collectives_view(&t);
  if (ok) ok = environment_view(&t);
  if (ok) ok = help_view(&t);
  if (ok) ok = job_ends(&t, &sim_e, 3);
  if (ok) {
    sim_a = nt_sim_spawn(&a);
    ok = sim_a > 0 && job_live(&t, 3) && change_since_e(&t);
  }
  if (ok) ok = job_ends(&t, &sim_a, 6);
  if (ok) {
    sim_b = nt_sim_spawn(&b);
    ok = sim_b > 0 && change_since_a(&t);
  }
  if (ok) {
    vt_send(&t, "q");
    ok = vt_wait_exit(&t, 10) == 0;
  }
  if (term) vt_stop(&t);
  stop_group(&sim_e);
  stop_group(&sim_a);
  stop_group(&sim_b);
  remove_dir(dir);
  CHECK(ok);
}

/* ---- the monitor started before the job ---- */

/* README: nccltop "attaches at any time (before or after the job starts)".
 * It waits for publishers, updating, and shows the job once it starts. */
/* On a node where no job has run yet, the endpoint directory does not
 * exist: the monitor says it waits for NCCL processes (it said "last
 * error: ... No such file or directory"), and shows the job once the job's
 * plugin has made the directory. */
static void monitor_started_before_the_job(void) {
  char top[] = "/tmp/nccltop-scrops-XXXXXX", dir[64], env_dir[96];
  CHECK(mkdtemp(top) != NULL);
  snprintf(dir, sizeof dir, "%s/ep", top); /* made by the job */
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.channels = 2;
  c.steps = 2;
  c.iterations = 3;
  c.deterministic = true;
  c.linger_s = 60;
  pid_t sim = -1;
  vt_term t;
  char *argv[] = {nccltop, "-d", "100", NULL};
  char *env[] = {env_dir, NULL};
  bool ok = vt_start(&t, 30, 120, argv, env) == 0;
  bool term = ok;
  if (ok) ok = vt_wait_for(&t, "waiting for NCCL processes", 10);
  if (!ok && term) fprintf(stderr, "    no waiting line:\n%s\n", vt_text(&t));
  if (ok) {
    /* Several updates with nothing to show; still running, no error. */
    double end = vt_now() + 1;
    while (vt_now() < end) vt_pump(&t, 50);
    ok = waitpid(t.pid, NULL, WNOHANG) == 0 && !strstr(vt_text(&t), "error");
    if (!ok) fprintf(stderr, "    with no job yet:\n%s\n", vt_text(&t));
  }
  if (ok) {
    sim = nt_sim_spawn(&c);
    ok = sim > 0 && vt_wait_for(&t, "sim-comm-0", 15) && vt_wait_for(&t, "2/2", 5) &&
         vt_wait_for(&t, "No alerts", 5);
  }
  if (ok) {
    vt_send(&t, "q");
    ok = vt_wait_exit(&t, 10) == 0;
  }
  if (term) vt_stop(&t);
  stop_group(&sim);
  remove_dir(dir);
  rmdir(top);
  CHECK(ok);
}

/* NCCL 2.31 with kernelch: the channel details split the channel's GPU
 * time into its kernel phases. */
static void channel_details_split_kernel_phases(void) {
  char dir[] = "/tmp/nccltop-scrops-XXXXXX", env_dir[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(env_dir, sizeof env_dir, "NCCLTOP_DIR=%s", dir);
  nt_sim_config c;
  base_config(&c, dir);
  c.ranks = 2;
  c.interval_ms = 100;
  c.duration_s = 30;
  c.nccl_version = 231;
  c.env[c.nenv++] = "NCCLTOP_EVENTS=default,kernelch";
  pid_t sim = nt_sim_spawn(&c);
  vt_term t;
  char *argv[] = {nccltop, "-d", "200", NULL};
  char *env[] = {env_dir, NULL};
  bool ok = sim > 0 && wait_publishers(dir, c.ranks, 10) && vt_start(&t, 30, 220, argv, env) == 0;
  bool term = ok;
  if (ok) {
    vt_send(&t, "3\r"); /* the channel grid, details of rank 0's channel 0 */
    ok = vt_wait_for(&t, "(Esc closes)", 10) &&
         vt_wait_for(&t, "kernel phases (NCCL 2.31): initial_sync", 15) &&
         vt_wait_for(&t, "compute", 1) && vt_wait_for(&t, "final_sync", 1);
  }
  if (term) vt_stop(&t);
  stop_group(&sim);
  remove_dir(dir);
  CHECK(ok);
}

int main(void) {
  scenario_init();
  unsetenv("NO_COLOR");
  TEST_RUN(stalled_rank_on_the_overview);
  TEST_RUN(collectives_environment_help_and_restart);
  TEST_RUN(monitor_started_before_the_job);
  TEST_RUN(channel_details_split_kernel_phases);
  return TEST_DONE();
}

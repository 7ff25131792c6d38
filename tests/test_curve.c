/* CURVE between relays and viewers, with real processes on 127.0.0.1:
 * `nccltop keygen` (modes, never overwriting without --force), a viewer
 * with the relay user's own keys (the shared-home case: no option at all)
 * sees the job; an unknown client key and a wrong server key are refused
 * with one line on each side (the relay's log, the viewer's error list);
 * adding the key to authorized_keys lets the viewer in without a restart;
 * without keys the relay refuses a non-loopback --listen unless
 * --insecure, and the viewer refuses a non-loopback --connect. */
#include <zmq.h>

#include "relay_harness.h"
#include "testlib.h"
#include "../sim/sim.h"

static char root[64];             /* everything of this test */
static char cfg_a[96], cfg_b[96]; /* two users' XDG_CONFIG_HOMEs */

static bool read_key(const char *cfg, const char *name, char *out, size_t cap) {
  char path[256];
  snprintf(path, sizeof path, "%s/nccltop/%s", cfg, name);
  FILE *f = fopen(path, "re");
  if (!f) return false;
  bool ok = fgets(out, (int)cap, f) != NULL;
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
  return ok && strlen(out) == 40;
}

static int keygen(const char *cfg, bool force) {
  char *args[] = {"keygen", force ? "--force" : NULL, NULL};
  return rh_wait(rh_spawn(args, cfg, -1, -1), 20);
}

static void keygen_writes_private_files_and_keeps_them(void) {
  char dir[160], pub[64], pub2[64], pub3[64];
  CHECK(keygen(cfg_a, false) == 0);
  snprintf(dir, sizeof dir, "%s/nccltop", cfg_a);
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  char path[200];
  snprintf(path, sizeof path, "%s/key", dir);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  snprintf(path, sizeof path, "%s/key.pub", dir);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  CHECK(read_key(cfg_a, "key.pub", pub, sizeof pub));
  CHECK(keygen(cfg_a, false) == 1); /* refused: the key stays */
  CHECK(read_key(cfg_a, "key.pub", pub2, sizeof pub2));
  CHECK_STR(pub2, pub);
  /* --force replaces it (on the second user's directory: cfg_a's key is
   * the relay's for the rest of the test). */
  CHECK(keygen(cfg_b, false) == 0);
  CHECK(read_key(cfg_b, "key.pub", pub2, sizeof pub2));
  CHECK(keygen(cfg_b, true) == 0);
  CHECK(read_key(cfg_b, "key.pub", pub3, sizeof pub3));
  CHECK(strcmp(pub2, pub3) != 0);
  CHECK(strcmp(pub, pub3) != 0);
  /* A secret key others can read is refused, by the relay at its start. */
  snprintf(path, sizeof path, "%s/nccltop/key", cfg_b);
  CHECK(chmod(path, 0644) == 0);
  char log[160], listen[64];
  snprintf(log, sizeof log, "%s/modes.log", root);
  snprintf(listen, sizeof listen, "tcp://127.0.0.1:%u", rh_free_port());
  char *relay[] = {"relay", "--listen", listen, "--dir", root, NULL};
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int rc = rh_wait(rh_spawn(relay, cfg_b, -1, fd), 10);
  if (fd >= 0) close(fd);
  CHECK(chmod(path, 0600) == 0);
  CHECK(rc == 1);
  CHECK(rh_file_has(log, "is readable by others (mode 644); chmod 600 it"));
}

/* A keypair whose public key has a '#' in it (a Z85 character; never the
 * first one: 2^32 / 85^4 stops short of it), written as keygen would. */
static bool make_hash_key(const char *cfg, char pub[41], char sec[41]) {
  bool found = false;
  for (int i = 0; i < 100000 && !found; i++)
    found = zmq_curve_keypair(pub, sec) == 0 && strchr(pub, '#') != NULL;
  char path[200];
  snprintf(path, sizeof path, "%s", cfg);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/nccltop", cfg);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/nccltop/key", cfg);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = found && fd >= 0 && write(fd, sec, 40) == 40 && write(fd, "\n", 1) == 1;
  if (fd >= 0) close(fd);
  return ok;
}

typedef struct {
  char dir[64], empty[96], log[128];
  pid_t sim, relay;
  unsigned port;
  char ep[64];
} setup;

static bool start(setup *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->dir, sizeof s->dir, "/tmp/nccltop-curve-XXXXXX");
  if (!mkdtemp(s->dir)) return false;
  snprintf(s->empty, sizeof s->empty, "%s/empty", root);
  mkdir(s->empty, 0700);
  snprintf(s->log, sizeof s->log, "%s/relay-%d.log", root, (int)getpid());
  unlink(s->log);
  static char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", rh_bindir);
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = 2;
  cfg.comms = 1;
  cfg.linger_s = 30;
  cfg.duration_s = 30;
  cfg.plugin = plugin;
  cfg.dir = s->dir;
  cfg.interval_ms = 100;
  cfg.quiet = true;
  s->sim = nt_sim_spawn(&cfg);
  s->port = rh_free_port();
  snprintf(s->ep, sizeof s->ep, "tcp://127.0.0.1:%u", s->port);
  s->relay =
      s->sim > 0 && s->port ? rh_relay(cfg_a, s->log, s->dir, s->port, NULL, NULL, NULL) : -1;
  return s->relay > 0 && rh_wait_file(s->log, "listening on", 10);
}

static void stop(setup *s) {
  rh_stop(s->relay);
  rh_stop(s->sim);
  rh_rmdir(s->dir);
}

/* Watches through the relay as the user of cfg until a frame has 2 ranks
 * (*ranks = 2), or one has an error containing `want` (copied into err). */
static void watch(const char *cfg, const char *ep, const char *server_key, const char *want,
                  int *ranks, char *err, size_t errcap, double timeout_s) {
  static rh_viewer v;
  char empty[96];
  snprintf(empty, sizeof empty, "%s/empty", root);
  *ranks = 0;
  err[0] = '\0';
  if (!rh_viewer_start(&v, cfg, 100, 200, "--dir", empty, "--connect", ep,
                       server_key ? "--server-key" : NULL, server_key))
    return;
  double deadline = rh_now() + timeout_s;
  cJSON *f;
  while ((f = rh_viewer_frame(&v, deadline))) {
    *ranks = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "ranks"));
    const char *e = want ? rh_error_with(f, want) : NULL;
    if (e) snprintf(err, errcap, "%s", e);
    cJSON_Delete(f);
    if (*ranks >= 2 || e) break;
  }
  rh_viewer_stop(&v);
}

static void curve_accepts_the_same_user_and_refuses_others(void) {
  setup s;
  bool up = start(&s);
  char pub_a[64] = "", pub_b[64] = "", key_a[200], err[512], line[200];
  int ranks = 0;
  snprintf(key_a, sizeof key_a, "%s/nccltop/key.pub", cfg_a);
  bool keys = read_key(cfg_a, "key.pub", pub_a, sizeof pub_a) &&
              read_key(cfg_b, "key.pub", pub_b, sizeof pub_b);
  bool curve_said = rh_file_has(s.log, "(CURVE; public key");

  /* 1. The relay's own user, shared home: no option. */
  int ranks_same = -1;
  if (up) watch(cfg_a, s.ep, NULL, NULL, &ranks_same, err, sizeof err, 10);

  /* 2. Another user, right server key, key not authorized. */
  char refused[512] = "";
  if (up) watch(cfg_b, s.ep, key_a, "refused by the relay", &ranks, refused, sizeof refused, 10);
  int ranks_refused = ranks;
  snprintf(line, sizeof line, "refused viewer key %s from 127.0.0.1", pub_b);
  bool relay_logged = rh_wait_file(s.log, line, 3);

  /* 3. Authorized now (the file is read at each request): no restart. */
  char auth[200];
  snprintf(auth, sizeof auth, "%s/nccltop/authorized_keys", cfg_a);
  FILE *f = fopen(auth, "we");
  if (f) {
    fprintf(f, "# the second user\n%s\n", pub_b);
    fclose(f);
  }
  int ranks_authorized = -1;
  if (up) watch(cfg_b, s.ep, key_a, NULL, &ranks_authorized, err, sizeof err, 10);
  /* A third user whose key has a '#' in it, listed with a comment after
   * it (an early version took that '#' for the start of a comment). */
  char cfg_c[96], pub_c[41], sec_c[41];
  snprintf(cfg_c, sizeof cfg_c, "%s/c", root);
  bool hashed = make_hash_key(cfg_c, pub_c, sec_c);
  f = fopen(auth, "we");
  if (f) {
    fprintf(f, "%s\n%s   # the third user\n", pub_b, pub_c);
    fclose(f);
  }
  int ranks_hash = -1;
  if (up && hashed) watch(cfg_c, s.ep, key_a, NULL, &ranks_hash, err, sizeof err, 10);
  unlink(auth);

  /* 4. The relay's own user told a wrong server key (the second user's). */
  char wrong[512] = "", key_b[200];
  snprintf(key_b, sizeof key_b, "%s/nccltop/key.pub", cfg_b);
  int ranks_wrong = -1;
  if (up) watch(cfg_a, s.ep, key_b, "CURVE handshake", &ranks_wrong, wrong, sizeof wrong, 10);
  bool relay_logged_wrong =
      rh_wait_file(s.log, "does not have this relay's public key as --server-key", 3);
  /* The wrong key is that, and no viewer so far was without CURVE: a
   * viewer's check of its --connect endpoints (a trial zmq_connect, with
   * no CURVE) reached the relay, which logged a mechanism mismatch
   * (newcomer note #20). */
  bool wrong_said_insecure = rh_file_has(s.log, "--insecure");

  /* 5. A viewer with --insecure: the relay speaks CURVE only. */
  char plain[512] = "";
  int ranks_plain = -1;
  static rh_viewer v;
  char empty[96];
  snprintf(empty, sizeof empty, "%s/empty", root);
  if (up &&
      rh_viewer_start(&v, cfg_a, 100, 200, "--dir", empty, "--connect", s.ep, "--insecure", NULL)) {
    cJSON *fr;
    double deadline = rh_now() + 10;
    while ((fr = rh_viewer_frame(&v, deadline))) {
      ranks_plain = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(fr, "ranks"));
      const char *e = rh_error_with(fr, "requires CURVE");
      if (e) snprintf(plain, sizeof plain, "%s", e);
      cJSON_Delete(fr);
      if (plain[0]) break;
    }
  }
  /* When the relay sees the mismatch it says which side lacks CURVE: the
   * viewer. libzmq reports it on the relay's side only when the relay reads
   * the viewer's greeting before the viewer, which saw the mismatch too,
   * closes (a peer gone is not logged), so the line may not come under
   * load; a wrong reason must never. */
  bool relay_logged_plain =
      up && (rh_wait_file(s.log, "that viewer runs --insecure, this relay requires CURVE", 5) ||
             !rh_file_has(s.log, "this relay runs --insecure"));
  if (v.pid > 0) rh_viewer_stop(&v);
  stop(&s);
  fprintf(stderr,
          "    refused: %s\n    wrong key: %s\n    plain: %s\n    ranks: same user %d, refused %d, "
          "authorized %d, key with # %d\n",
          refused, wrong, plain, ranks_same, ranks_refused, ranks_authorized, ranks_hash);
  CHECK(up);
  CHECK(keys);
  CHECK(curve_said);
  CHECK(ranks_same == 2);
  CHECK(refused[0] && strstr(refused, pub_b) && !strchr(refused, '\n'));
  CHECK(ranks_refused == 0);
  CHECK(relay_logged);
  CHECK(ranks_authorized == 2);
  CHECK(hashed);
  CHECK(ranks_hash == 2);
  CHECK(wrong[0] && ranks_wrong == 0);
  CHECK(relay_logged_wrong);
  CHECK(!wrong_said_insecure);
  CHECK(relay_logged_plain);
  CHECK(plain[0] && ranks_plain == 0);
}

/* A rack relay with publishers of its own, fed by a node relay over CURVE:
 * one XSUB socket speaks CURVE to the upstream relay and nothing to the
 * local ipc publishers (their options are set per connection). The viewer
 * sees both relays' processes. */
static void curve_relay_feeds_relay_with_local_publishers(void) {
  setup s;
  bool up = start(&s);
  char dir2[64] = "/tmp/nccltop-curve2-XXXXXX", log2[128], ep2[64];
  bool made = mkdtemp(dir2) != NULL;
  static char plugin[PATH_MAX + 64];
  snprintf(plugin, sizeof plugin, "%s/tests/libnccl-profiler-nccltop-test.so", rh_bindir);
  nt_sim_config cfg;
  nt_sim_defaults(&cfg);
  cfg.ranks = 1;
  cfg.comms = 1;
  cfg.duration_s = 30;
  cfg.plugin = plugin;
  cfg.dir = dir2;
  cfg.interval_ms = 100;
  cfg.quiet = true;
  pid_t sim2 = up && made ? nt_sim_spawn(&cfg) : -1;
  unsigned p2 = rh_free_port();
  snprintf(ep2, sizeof ep2, "tcp://127.0.0.1:%u", p2);
  snprintf(log2, sizeof log2, "%s/rack.log", root);
  pid_t rack = sim2 > 0 && p2 ? rh_relay(cfg_a, log2, dir2, p2, "--connect", s.ep, NULL) : -1;
  static rh_viewer v;
  char empty[96];
  snprintf(empty, sizeof empty, "%s/empty", root);
  int procs = 0;
  if (rack > 0 &&
      rh_viewer_start(&v, cfg_a, 100, 200, "--dir", empty, "--connect", ep2, NULL, NULL)) {
    double deadline = rh_now() + 10;
    cJSON *f;
    while (procs < 3 && (f = rh_viewer_frame(&v, deadline))) {
      procs = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "processes"));
      cJSON_Delete(f);
    }
    rh_viewer_stop(&v);
  }
  rh_stop(rack);
  rh_stop(sim2);
  rh_rmdir(dir2);
  stop(&s);
  CHECK(up);
  CHECK(rack > 0);
  CHECK(procs == 3); /* 2 through the node relay, 1 of the rack relay's own */
}

/* Without a key: a relay on a non-loopback address is refused (before any
 * socket exists) unless --insecure; --insecure gets past the check (here
 * to a TEST-NET address this machine does not have: the bind fails, nothing
 * is sent anywhere). A viewer refuses a non-loopback tcp:// --connect. */
static void without_keys_only_loopback(void) {
  char nokeys[96], log[128];
  snprintf(nokeys, sizeof nokeys, "%s/nokeys", root);
  mkdir(nokeys, 0700);
  snprintf(log, sizeof log, "%s/nokey-relay.log", root);
  char *refused[] = {"relay", "--listen", "tcp://0.0.0.0:7460", "--dir", root, NULL};
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int rc = rh_wait(rh_spawn(refused, nokeys, -1, fd), 10);
  close(fd);
  CHECK(rc == 2);
  CHECK(rh_file_has(log, "refusing to listen on tcp://0.0.0.0:7460 (not a loopback address)"));
  char *insecure[] = {"relay", "--insecure", "--listen", "tcp://192.0.2.1:7460",
                      "--dir", root,         NULL};
  fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  rc = rh_wait(rh_spawn(insecure, nokeys, -1, fd), 10);
  close(fd);
  CHECK(rc == 1);
  CHECK(rh_file_has(log, "cannot listen on tcp://192.0.2.1:7460"));
  char *viewer[] = {"-b", "-n", "1", "--dir", root, "--connect", "tcp://192.0.2.1:7460", NULL};
  fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  rc = rh_wait(rh_spawn(viewer, nokeys, -1, fd), 10);
  close(fd);
  CHECK(rc == 2);
  CHECK(rh_file_has(log, "CURVE needs a key"));
  /* ...naming keygen once (it said "run 'nccltop keygen'" and "('nccltop
   * keygen')" in one line) */
  char text[1024] = "";
  FILE *f = fopen(log, "re");
  size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[got] = '\0';
  if (f) fclose(f);
  const char *k1 = strstr(text, "keygen");
  CHECK(k1 && !strstr(k1 + 1, "keygen"));
  /* A --server-key that is neither a key nor a file is refused without a
   * key of our own too (it was taken silently, status 0). */
  char *badkey[] = {"-b",           "-n",      "1", "--dir", root, "--connect", "tcp://127.0.0.1:1",
                    "--server-key", "garbage", NULL};
  fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  rc = rh_wait(rh_spawn(badkey, nokeys, -1, fd), 10);
  close(fd);
  CHECK(rc == 2);
  CHECK(rh_file_has(log, "--server-key: server key 'garbage' is neither a Z85 key nor a file"));
}

/* B13. Key files are read bounded: --authorized-keys naming /dev/zero or a
 * FIFO is refused at once with one line (before: the authentication thread
 * spun on /dev/zero's NUL bytes, or blocked opening the FIFO, the relay
 * served nobody, and SIGTERM did not end it); so is a secret key that is a
 * FIFO (the viewer and the relay read it). A running relay whose file turns
 * into a FIFO keeps the keys it had, says so once, still serves its own
 * key, and ends within a second of SIGTERM. */
static void key_files_that_are_not_files_are_refused_at_once(void) {
  char fifo[128], log[160], dir[96];
  snprintf(fifo, sizeof fifo, "%s/fifo", root);
  snprintf(log, sizeof log, "%s/b13.log", root);
  snprintf(dir, sizeof dir, "%s/empty", root);
  mkdir(dir, 0700);
  bool made = mkfifo(fifo, 0600) == 0;
  const char *bad[] = {"/dev/zero", fifo};
  int rcs[2];
  bool said[2];
  double took[2];
  for (int i = 0; i < 2; i++) {
    unlink(log);
    double t0 = rh_now();
    rcs[i] =
        rh_wait(rh_relay(cfg_a, log, dir, rh_free_port(), "--authorized-keys", bad[i], NULL), 5);
    took[i] = rh_now() - t0;
    char want[200];
    snprintf(want, sizeof want, "--authorized-keys: %s is not a regular file; refusing it", bad[i]);
    said[i] = rh_file_has(log, want);
  }
  /* The secret key itself a FIFO (a user of its own). */
  char cfg_f[96], keydir[128], key[160];
  snprintf(cfg_f, sizeof cfg_f, "%s/f", root);
  snprintf(keydir, sizeof keydir, "%s/nccltop", cfg_f);
  mkdir(cfg_f, 0700);
  mkdir(keydir, 0700);
  snprintf(key, sizeof key, "%s/key", keydir);
  bool key_fifo = mkfifo(key, 0600) == 0;
  unlink(log);
  int key_rc = rh_wait(rh_relay(cfg_f, log, dir, rh_free_port(), NULL, NULL, NULL), 5);
  bool key_said = rh_file_has(log, "is not a regular file; refusing it");

  /* A running relay; its file becomes a FIFO. */
  char auth[200];
  snprintf(auth, sizeof auth, "%s/auth", root);
  FILE *f = fopen(auth, "we");
  if (f) {
    fprintf(f, "# nobody yet\n");
    fclose(f);
  }
  unlink(log);
  unsigned port = rh_free_port();
  char ep[64];
  snprintf(ep, sizeof ep, "tcp://127.0.0.1:%u", port);
  pid_t relay = rh_relay(cfg_a, log, dir, port, "--authorized-keys", auth, NULL);
  bool up = relay > 0 && rh_wait_file(log, "listening on", 10);
  bool swapped = up && unlink(auth) == 0 && mkfifo(auth, 0600) == 0;
  /* A key the relay does not know makes it look at the file again. */
  int ranks = -1;
  char err[512], key_a[200];
  snprintf(key_a, sizeof key_a, "%s/nccltop/key.pub", cfg_a);
  if (swapped) watch(cfg_b, ep, key_a, "refused by the relay", &ranks, err, sizeof err, 10);
  bool kept = rh_wait_file(log, "not a regular file; refusing it; keeping the keys read before", 5);
  /* Our own key is still served: the relay answers (a frame with no error
   * about the handshake). */
  static rh_viewer v;
  bool served = false;
  if (up && rh_viewer_start(&v, cfg_a, 20, 200, "--dir", dir, "--connect", ep, NULL, NULL)) {
    cJSON *fr;
    double deadline = rh_now() + 6;
    while (!served && (fr = rh_viewer_frame(&v, deadline))) {
      served = rh_num(fr, "time_s") >= 1.0 && !rh_error_with(fr, "handshake") &&
               !rh_error_with(fr, "refused");
      cJSON_Delete(fr);
    }
    rh_viewer_stop(&v);
  }
  double t0 = rh_now();
  if (relay > 0) kill(-relay, SIGTERM);
  int term_rc = relay > 0 ? rh_wait(relay, 1.0) : -1;
  double term_s = rh_now() - t0;
  unlink(fifo);
  unlink(auth);
  unlink(key);
  fprintf(stderr,
          "    /dev/zero: exit %d after %.2f s; FIFO: exit %d after %.2f s; a FIFO secret key: "
          "exit %d; running relay: SIGTERM -> exit %d after %.2f s\n",
          rcs[0], took[0], rcs[1], took[1], key_rc, term_rc, term_s);
  CHECK(made);
  CHECK(rcs[0] == 2 && said[0]);
  CHECK(rcs[1] == 2 && said[1]);
  CHECK(key_fifo);
  CHECK(key_rc == 1 && key_said);
  CHECK(up && swapped);
  CHECK(ranks == 0);
  CHECK(kept);
  CHECK(served);
  CHECK(term_rc == 0); /* within a second */
}

int main(void) {
  rh_find_bindir();
  signal(SIGPIPE, SIG_IGN);
  snprintf(root, sizeof root, "/tmp/nccltop-curvet-XXXXXX");
  if (!mkdtemp(root)) return 1;
  snprintf(cfg_a, sizeof cfg_a, "%s/a", root);
  snprintf(cfg_b, sizeof cfg_b, "%s/b", root);
  char *probe[] = {"keygen", "--help", NULL};
  if (rh_wait(rh_spawn(probe, cfg_a, -1, -1), 10) != 0) return 1;
  TEST_RUN(keygen_writes_private_files_and_keeps_them);
  TEST_RUN(curve_accepts_the_same_user_and_refuses_others);
  TEST_RUN(curve_relay_feeds_relay_with_local_publishers);
  TEST_RUN(without_keys_only_loopback);
  TEST_RUN(key_files_that_are_not_files_are_refused_at_once);
  rh_rmdir(root);
  return TEST_DONE();
}

/* --hosts and --hostfile (monitor/commands/cli.c, monitor/feeds/source.c): the viewer subscribes to
 * tcp://HOST:PORT of every host of the list and the file, repeats dropped,
 * more than the 8 endpoints --connect allows, port 7460 unless the list
 * gives one; the header says what it watches; a wrong list or file is a
 * usage error (exit status 2) with the position of the mistake. The relays
 * here are ZeroMQ XPUB sockets of this test on 127.0.0.1, on ports the
 * kernel picked. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "testlib.h"
#include "lib/test_publisher.h"
#include "../monitor/feeds/hostlist.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/feeds/source.h"

#define RELAYS 12

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int send_snapshot(void *s, uint32_t pid, const char *host) {
  nt_snapshot *snap = nt_snapshot_new();
  if (!snap) return -1;
  snap->major = NT_PROTO_MAJOR;
  snap->minor = NT_PROTO_MINOR;
  snap->pid = pid;
  snprintf(snap->host, sizeof snap->host, "%s", host);
  snap->seq = 1;
  snap->mono_ns = snap->wall_ns = 1000000000ull;
  snap->interval_ms = 100;
  snap->ncomms = 1;
  snap->comms[0] = (nt_comm_row){.comm_hash = 0x5eed, .rank = 0, .nranks = 1, .nnodes = 1};
  int rc = tp_send_snapshot(s, snap);
  nt_snapshot_free(snap);
  return rc;
}

static uint32_t from_host(nt_model *m, const char *host) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nt_model_nprocesses(m); i++)
    n += strcmp(nt_model_process_at(m, i)->host, host) == 0;
  return n;
}

static void hosts_and_hostfile_reach_every_relay(void) {
  void *z = zmq_ctx_new();
  CHECK(z != NULL);
  void *relay[RELAYS] = {0};
  int port[RELAYS];
  bool ok = true;
  for (int k = 0; k < RELAYS && ok; k++) ok = (relay[k] = tp_bind_tcp(z, &port[k])) != NULL;
  /* The first ten in --hosts, the rest in the file with a repeat and a comment. */
  char hosts[512] = "", path[] = "/tmp/nccltop-hosts-XXXXXX", want[1024];
  for (int k = 0; k < 10; k++)
    snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s127.0.0.1:%d", k ? "," : "",
             port[k]);
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f) {
    fprintf(f, "# the other relays\n127.0.0.1:%d\n\n127.0.0.1:%d  # again\n127.0.0.1:%d\n",
            port[10], port[0], port[11]);
    fclose(f);
  }
  nt_options o;
  nt_options_defaults(&o);
  o.dir = "/nonexistent-nccltop-dir";
  o.hosts = hosts;
  o.hostfile = path;
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = ok && f && m ? nt_source_open(&o, err, sizeof err) : NULL;
  unlink(path);
  bool opened = src != NULL;
  char watching[512] = "";
  if (src) nt_source_watching(src, watching, sizeof watching);
  /* Every relay sees a subscription, then sends one process. */
  int subscribed = 0;
  bool seen[RELAYS] = {false};
  for (double end = now() + 10; src && subscribed < RELAYS && now() < end;) {
    nt_source_poll(src, m, 20);
    for (int k = 0; k < RELAYS; k++) {
      uint8_t msg[8];
      if (!seen[k] && zmq_recv(relay[k], msg, sizeof msg, ZMQ_DONTWAIT) > 0 && msg[0] == 1) {
        seen[k] = true;
        subscribed++;
        char host[16];
        snprintf(host, sizeof host, "node%d", k);
        ok = ok && send_snapshot(relay[k], 100 + (uint32_t)k, host) == 0;
      }
    }
  }
  for (double end = now() + 5; src && nt_model_nprocesses(m) < RELAYS && now() < end;)
    nt_source_poll(src, m, 20);
  uint32_t nprocs = nt_model_nprocesses(m), neps = src ? nt_source_nendpoints(src) : 0;
  uint32_t node0 = from_host(m, "node0"), node11 = from_host(m, "node11");
  nt_source_close(src);
  nt_model_free(m);
  for (int k = 0; k < RELAYS; k++)
    if (relay[k]) zmq_close(relay[k]);
  zmq_ctx_term(z);
  CHECK(ok && opened);
  /* Consecutive ports share brackets only when they are consecutive: the
   * header names the count and the list, compactly. */
  snprintf(want, sizeof want, "/nonexistent-nccltop-dir + %d hosts 127.0.0.1:%d,", RELAYS, port[0]);
  CHECK(strncmp(watching, want, strlen(want)) == 0);
  CHECK_EQ_U64(subscribed, RELAYS);
  CHECK_EQ_U64(neps, RELAYS); /* the repeat of port[0] was dropped */
  CHECK_EQ_U64(nprocs, RELAYS);
  CHECK_EQ_U64(node0, 1);
  CHECK_EQ_U64(node11, 1);
}

static void a_host_without_port_is_reached_on_7460(void) {
  nt_options o;
  nt_options_defaults(&o);
  o.dir = "/nonexistent-nccltop-dir";
  o.hosts = "127.1.2.[3-4]";
  char err[256], watching[256];
  nt_model *m = nt_model_new();
  nt_source *src = m ? nt_source_open(&o, err, sizeof err) : NULL;
  CHECK(src != NULL);
  nt_source_watching(src, watching, sizeof watching);
  /* Nobody listens there (or whatever does is silent to us): the source
   * says so, naming the endpoint it tries. */
  bool noted = false;
  for (double end = now() + 6; !noted && now() < end;) {
    nt_source_poll(src, m, 50);
    for (uint32_t i = 0; i < nt_model_nerrors(m); i++)
      noted |= !strcmp(nt_model_error_at(m, i)->source, "tcp://127.1.2.4:7460");
    /* (or a relay of another test listens on every address: its processes
     * then come from that endpoint) */
    for (uint32_t i = 0; i < nt_model_nprocesses(m); i++)
      noted |= !strcmp(nt_model_process_at(m, i)->endpoint, "tcp://127.1.2.4:7460");
  }
  uint32_t neps = nt_source_nendpoints(src);
  nt_source_close(src);
  nt_model_free(m);
  CHECK_STR(watching, "/nonexistent-nccltop-dir + 2 hosts 127.1.2.[3-4]");
  CHECK_EQ_U64(neps, 2);
  CHECK(noted);
}

/* Twenty relays that never answer are one line in the error list, not
 * twenty: it keeps room for the rest. */
static void many_silent_hosts_are_one_line(void) {
  nt_options o;
  nt_options_defaults(&o);
  o.dir = "/nonexistent-nccltop-dir";
  o.hosts = "127.1.3.[1-20]:9";
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = m ? nt_source_open(&o, err, sizeof err) : NULL;
  CHECK(src != NULL);
  uint32_t lines = 0, per_endpoint = 0;
  char text[256] = "";
  for (double end = now() + 6; !lines && now() < end;) {
    nt_source_poll(src, m, 50);
    for (uint32_t i = 0; i < nt_model_nerrors(m); i++) {
      const nt_model_error *e = nt_model_error_at(m, i);
      if (!strcmp(e->source, "connect")) {
        lines++;
        snprintf(text, sizeof text, "%s", e->text);
      }
      per_endpoint += !strncmp(e->source, "tcp://", 6);
    }
  }
  for (double end = now() + 1.5; now() < end;) nt_source_poll(src, m, 50); /* and no more */
  uint32_t nerrors = nt_model_nerrors(m);
  nt_source_close(src);
  nt_model_free(m);
  CHECK_EQ_U64(lines, 1);
  CHECK_EQ_U64(per_endpoint, 0);
  CHECK_EQ_U64(nerrors, 1); /* no local job yet (no directory) is no error */
  CHECK_STR(text, "nothing yet from 20 endpoints (tcp://127.1.3.1:9, ...): no relay there, a name "
                  "that does not resolve, not reachable, or our key refused (still trying)");
}

/* Thousands of hosts: each gets its endpoint, past the 2048 local
 * publishers the table always has room for. Every socket costs file
 * descriptors (two or so while it connects), so the limit is raised as the
 * viewer raises it; without room for that the case is skipped. */
static void four_thousand_hosts_each_get_an_endpoint(void) {
  nt_options o;
  nt_options_defaults(&o);
  o.dir = "/nonexistent-nccltop-dir";
  o.hosts = "127.0.[0-15].[1-250]:9"; /* discard: nobody's relay, whatever runs beside */
  char err[256], watching[512];
  nt_model *m = nt_model_new();
  nt_source *src = m ? nt_source_open(&o, err, sizeof err) : NULL;
  CHECK(src != NULL);
  nt_source_poll(src, m, 10);
  uint32_t neps = nt_source_nendpoints(src);
  nt_source_watching(src, watching, sizeof watching);
  nt_source_close(src);
  nt_model_free(m);
  /* The compact list, cut with "..." where the header has no more room. */
  const char *want = "/nonexistent-nccltop-dir + 4000 hosts 127.0.0.[1-250]:9,127.0.1.[1-250]:9,";
  CHECK(strncmp(watching, want, strlen(want)) == 0);
  CHECK(strlen(watching) > 200 && !strcmp(watching + strlen(watching) - 3, "..."));
  CHECK_EQ_U64(neps, 4000);
}

/* A 253-byte name (DNS's longest) is connected; two that differ only at
 * their end stay two endpoints, each named within the model's 159 bytes. */
static void the_longest_host_names_are_connected(void) {
  char list[600];
  memset(list, 'a', 252);
  list[252] = '[';
  memcpy(list + 253, "1-2]:9", 7);
  nt_options o;
  nt_options_defaults(&o);
  o.dir = "/nonexistent-nccltop-dir";
  o.hosts = list;
  o.insecure = true; /* no key needed; the name (one label over 63 bytes) never reaches DNS */
  char err[256];
  nt_model *m = nt_model_new();
  nt_source *src = m ? nt_source_open(&o, err, sizeof err) : NULL;
  if (!src) fprintf(stderr, "    %s\n", err);
  CHECK(src != NULL);
  nt_source_poll(src, m, 10);
  uint32_t neps = nt_source_nendpoints(src);
  nt_source_close(src);
  nt_model_free(m);
  CHECK_EQ_U64(neps, 2);
}

/* Thousands of remote hosts under a low descriptor limit (B14 of the third
 * attack run): the local job's directory gets its descriptors first, the
 * remote endpoints only what is left beside a reserve, and the ones left
 * out are said in one line. Run in a child: the limit stays there. */
static void hosts_never_take_the_local_jobs_descriptors(void) {
  fflush(NULL);
  pid_t c = fork();
  if (c == 0) {
    char dir[] = "/tmp/nccltop-hostfd-XXXXXX";
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = 512;
    if (!mkdtemp(dir) || setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(2);
    nt_options o;
    nt_options_defaults(&o);
    o.dir = dir;
    o.hosts = "127.0.[1-16].[1-254]:9"; /* 4064 relays that are not there */
    char err[256];
    nt_model *m = nt_model_new();
    nt_source *src = m ? nt_source_open(&o, err, sizeof err) : NULL;
    if (!src) _exit(3);
    for (double end = now() + 1.5; now() < end;) nt_source_poll(src, m, 50);
    uint32_t neps = nt_source_nendpoints(src), said = 0, inbox = 0, dir_errors = 0;
    for (uint32_t i = 0; i < nt_model_nerrors(m); i++) {
      const nt_model_error *e = nt_model_error_at(m, i);
      said += strstr(e->text, "remote endpoints not connected") != NULL;
      dir_errors += !strcmp(e->source, "endpoints");
    }
    /* The viewer's socket for the local publishers is in the directory. */
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
      inbox += nt_endpoint_parse_viewer_name(de->d_name, NULL) != 0;
    if (d) closedir(d);
    nt_source_close(src);
    nt_model_free(m);
    rmdir(dir);
    fprintf(stderr, "    limit 512: %u of 4064 remote endpoints, %u line(s) saying so, inbox %u\n",
            neps, said, inbox);
    _exit(neps > 100 && neps < 4064 && said == 1 && inbox == 1 && dir_errors == 0 ? 0 : 1);
  }
  int st = -1;
  CHECK(c > 0 && waitpid(c, &st, 0) == c);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int parse(const char *a, const char *b, const char *c, const char *d, nt_options *o) {
  char *argv[] = {(char *)"nccltop", (char *)a, (char *)b, (char *)c, (char *)d, NULL};
  int argc = 1;
  while (argc < 5 && argv[argc]) argc++;
  nt_options_defaults(o);
  return nt_options_parse(o, argc, argv);
}

static void wrong_lists_are_usage_errors(void) {
  nt_options o;
  CHECK(parse("--hosts", "gpu[001-064,070]", "-b", NULL, &o) == 0);
  CHECK_STR(o.hosts, "gpu[001-064,070]");
  CHECK(parse("--hosts=n[1-4096]", NULL, NULL, NULL, &o) == 0);
  fprintf(stderr, "    (six usage errors follow)\n");
  CHECK(parse("--hosts", "gpu[001-064", NULL, NULL, &o) == 2);
  CHECK(parse("--hosts", "n[1-4097]", NULL, NULL, &o) == 2);
  CHECK(parse("--hosts", "a", "--hosts", "b", &o) == 2);
  CHECK(parse("--hostfile", "/nonexistent/hosts", NULL, NULL, &o) == 2);
  CHECK(parse("--hosts", "tcp://a:1", NULL, NULL, &o) == 2);
  char name[300];
  memset(name, 'h', 254);
  name[254] = '\0';
  CHECK(parse("--hosts", name, NULL, NULL, &o) == 2); /* longer than DNS allows */
  name[253] = '\0';
  CHECK(parse("--hosts", name, NULL, NULL, &o) == 0); /* as long as DNS allows: taken */
  /* What the error says: the list's own message, after the option. */
  o.hosts = "gpu[1-3],x]";
  o.hostfile = NULL;
  char err[256];
  CHECK(nt_options_hosts(&o, err, sizeof err) == NULL);
  CHECK_STR(err, "--hosts: position 11: ']' without '['");
  o.hosts = NULL;
  CHECK(nt_options_hosts(&o, err, sizeof err) == NULL);
  CHECK_STR(err, "");
}

int main(void) {
  TEST_RUN(hosts_and_hostfile_reach_every_relay);
  TEST_RUN(a_host_without_port_is_reached_on_7460);
  TEST_RUN(wrong_lists_are_usage_errors);
  TEST_RUN(many_silent_hosts_are_one_line);
  TEST_RUN(the_longest_host_names_are_connected);
  TEST_RUN(hosts_never_take_the_local_jobs_descriptors);
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < 16384 &&
      (r.rlim_max == RLIM_INFINITY || r.rlim_max >= 16384)) {
    r.rlim_cur = 16384;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= 16384)
    TEST_RUN(four_thousand_hosts_each_get_an_endpoint);
  else
    TEST_SKIP(four_thousand_hosts_each_get_an_endpoint, "fewer than 16384 file descriptors");
  return TEST_DONE();
}

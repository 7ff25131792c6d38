/* Endpoint rules: where publishers bind, which directories are refused and
 * why, the descriptor the directory is used through, socket names. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "testlib.h"
#include "../proto/nccltop_proto.h"

static char base[64]; /* a private temporary directory for each case */

static int make_base(void) {
  snprintf(base, sizeof base, "/tmp/nccltop-ep-XXXXXX");
  return mkdtemp(base) ? 0 : -1;
}

static void path_in_base(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", base, name);
}

/* nt_endpoint_dir_open's verdict: 0 (its descriptor closed again) or -1. */
static int dir_verdict(const char *dir, bool create, char *err, size_t errlen) {
  int fd = nt_endpoint_dir_open(dir, create, err, errlen);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}
static int dir_prepare(const char *dir, char *err, size_t errlen) {
  return dir_verdict(dir, true, err, errlen);
}
static int dir_check(const char *dir, char *err, size_t errlen) {
  return dir_verdict(dir, false, err, errlen);
}

static void default_directory_is_per_user_under_tmp(void) {
  char dir[256], want[64];
  const char *saved = getenv("NCCLTOP_DIR");
  char keep[256] = "";
  if (saved) snprintf(keep, sizeof keep, "%s", saved);
  CHECK(unsetenv("NCCLTOP_DIR") == 0);
  snprintf(want, sizeof want, "/tmp/nccltop-%u", (unsigned)geteuid());
  CHECK(nt_endpoint_dir(dir, sizeof dir) == 0);
  CHECK_STR(dir, want);
  CHECK(setenv("NCCLTOP_DIR", "", 1) == 0); /* empty: the default */
  CHECK(nt_endpoint_dir(dir, sizeof dir) == 0);
  CHECK_STR(dir, want);
  CHECK(setenv("NCCLTOP_DIR", "/run/user/1000/nccltop", 1) == 0);
  CHECK(nt_endpoint_dir(dir, sizeof dir) == 0);
  CHECK_STR(dir, "/run/user/1000/nccltop");
  CHECK(nt_endpoint_dir(dir, 10) == -1); /* does not fit */
  CHECK(nt_endpoint_dir(dir, 0) == -1);
  if (saved)
    CHECK(setenv("NCCLTOP_DIR", keep, 1) == 0);
  else
    CHECK(unsetenv("NCCLTOP_DIR") == 0);
}

static void prepare_creates_a_private_directory(void) {
  char dir[128], err[512] = "";
  struct stat st;
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "new");
  mode_t old = umask(0); /* the directory is 0700 whatever the umask */
  int rc = dir_prepare(dir, err, sizeof err);
  umask(old);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(lstat(dir, &st) == 0);
  CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 && st.st_uid == geteuid());
  CHECK(dir_prepare(dir, err, sizeof err) == 0); /* already there: fine */
  CHECK(dir_check(dir, err, sizeof err) == 0);
  char slash[160];
  snprintf(slash, sizeof slash, "%s//", dir);
  CHECK(dir_check(slash, err, sizeof err) == 0);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(base) == 0);
}

static void missing_directory_is_reported_not_created_by_check(void) {
  char dir[128], err[512] = "", want[256];
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "absent");
  CHECK(dir_check(dir, err, sizeof err) == -1);
  snprintf(want, sizeof want, "endpoint directory %s: %s", dir, strerror(ENOENT));
  CHECK_STR(err, want);
  struct stat st;
  CHECK(lstat(dir, &st) == -1 && errno == ENOENT);
  /* prepare does not create parents. */
  path_in_base(dir, sizeof dir, "absent/child");
  CHECK(dir_prepare(dir, err, sizeof err) == -1);
  CHECK(strstr(err, "cannot create endpoint directory") != NULL);
  CHECK(dir_check("", err, sizeof err) == -1);
  CHECK(dir_prepare(NULL, err, sizeof err) == -1);
  CHECK(rmdir(base) == 0);
}

static void symlinked_directory_is_refused(void) {
  char real[128], link[128], err[512] = "", want[256], slash[160];
  CHECK(make_base() == 0);
  path_in_base(real, sizeof real, "real");
  path_in_base(link, sizeof link, "link");
  CHECK(mkdir(real, 0700) == 0);
  CHECK(symlink(real, link) == 0);
  snprintf(want, sizeof want, "endpoint directory %s is a symlink; refusing it", link);
  CHECK(dir_check(link, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(dir_prepare(link, err, sizeof err) == -1);
  CHECK_STR(err, want);
  /* A trailing slash would make lstat follow the link. */
  snprintf(slash, sizeof slash, "%s/", link);
  CHECK(dir_check(slash, err, sizeof err) == -1);
  CHECK(strstr(err, "is a symlink") != NULL);
  /* A dangling link is not replaced by a directory either. */
  CHECK(rmdir(real) == 0);
  CHECK(dir_prepare(link, err, sizeof err) == -1);
  CHECK(strstr(err, "is a symlink") != NULL);
  CHECK(unlink(link) == 0);
  CHECK(rmdir(base) == 0);
}

static void group_or_world_access_is_refused(void) {
  char dir[128], err[512] = "";
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "d");
  CHECK(mkdir(dir, 0700) == 0);
  static const mode_t bad[] = {0755, 0750, 0710, 0701, 0702, 0770, 0777};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(chmod(dir, bad[i]) == 0);
    char want[256];
    snprintf(want, sizeof want,
             "endpoint directory %s is accessible to other users (mode %03o); refusing it "
             "(chmod 700 it)",
             dir, (unsigned)bad[i]);
    CHECK(dir_check(dir, err, sizeof err) == -1);
    CHECK_STR(err, want);
    CHECK(dir_prepare(dir, err, sizeof err) == -1); /* never chmod-ed for us */
  }
  CHECK(chmod(dir, 0700) == 0);
  CHECK(dir_check(dir, err, sizeof err) == 0);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(base) == 0);
}

static void a_file_in_place_of_the_directory_is_refused(void) {
  char path[128], err[512] = "", want[256];
  CHECK(make_base() == 0);
  path_in_base(path, sizeof path, "file");
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  CHECK(fd >= 0);
  close(fd);
  snprintf(want, sizeof want, "endpoint directory %s is not a directory; refusing it", path);
  CHECK(dir_check(path, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(dir_prepare(path, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(unlink(path) == 0);
  CHECK(rmdir(base) == 0);
}

/* Needs root to hand a directory to another user. */
static void directory_of_another_user_is_refused(void) {
  char dir[128], err[512] = "", want[256];
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "theirs");
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(chown(dir, 65534, 65534) == 0);
  snprintf(want, sizeof want, "endpoint directory %s is owned by uid 65534, not us; refusing it",
           dir);
  CHECK(dir_check(dir, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(dir_prepare(dir, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(base) == 0);
}

static bool can_chown(void) {
  if (geteuid() != 0 || make_base() != 0) return false;
  bool ok = chown(base, 65534, 65534) == 0;
  (void)rmdir(base);
  return ok;
}

/* The descriptor keeps naming the directory it opened; the path check says
 * when the path names another one (or nothing). */
static void the_descriptor_outlives_the_path(void) {
  char dir[128], moved[128], err[512] = "", name[64];
  struct stat st;
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "ep");
  path_in_base(moved, sizeof moved, "moved");
  int fd = nt_endpoint_dir_open(dir, true, err, sizeof err);
  CHECK(fd >= 0);
  CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(nt_endpoint_dir_same(dir, fd));
  char slash[160];
  snprintf(slash, sizeof slash, "%s/", dir);
  CHECK(nt_endpoint_dir_same(slash, fd));
  CHECK(rename(dir, moved) == 0);
  CHECK(!nt_endpoint_dir_same(dir, fd)); /* gone */
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(!nt_endpoint_dir_same(dir, fd)); /* another directory */
  CHECK(rmdir(dir) == 0);
  CHECK(symlink(moved, dir) == 0);
  CHECK(!nt_endpoint_dir_same(dir, fd)); /* the same one, but through a symlink */
  CHECK(unlink(dir) == 0);
  CHECK(!nt_endpoint_dir_same(NULL, fd) && !nt_endpoint_dir_same(moved, -1));
  /* A socket bound through the descriptor lands in the directory it opened,
   * wherever that is now; it is removed through the descriptor too (ZeroMQ
   * 4.3 leaves the file of a closed ipc socket behind). */
  char addr[128], path[256];
  CHECK(nt_endpoint_name(42, 7, name, sizeof name) == 0);
  CHECK(nt_endpoint_fd_address(fd, name, addr, sizeof addr) == 0);
  void *zctx = zmq_ctx_new(), *sock = zctx ? zmq_socket(zctx, ZMQ_PUB) : NULL;
  CHECK(sock != NULL);
  int bound = zmq_bind(sock, addr);
  snprintf(path, sizeof path, "%s/%s", moved, name);
  bool there = lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
  zmq_close(sock);
  zmq_ctx_term(zctx);
  CHECK(bound == 0 && there);
  CHECK(unlinkat(fd, name, 0) == 0 || errno == ENOENT);
  CHECK(lstat(path, &st) != 0 && errno == ENOENT);
  close(fd);
  CHECK(rmdir(moved) == 0);
  CHECK(rmdir(base) == 0);
}

/* Bound through the descriptor, the directory's own path length does not
 * matter: only "/proc/self/fd/<fd>/<name>" has to fit in sun_path. */
static void a_long_directory_path_still_binds(void) {
  char dir[512], err[512] = "", addr[128];
  CHECK(make_base() == 0);
  int n = snprintf(dir, sizeof dir, "%s/", base);
  memset(dir + n, 'x', 150);
  dir[n + 150] = '\0';
  int fd = nt_endpoint_dir_open(dir, true, err, sizeof err);
  CHECK(fd >= 0);
  CHECK(nt_endpoint_fd_address(fd, "1.2.sock", addr, sizeof addr) == 0);
  void *zctx = zmq_ctx_new(), *sock = zctx ? zmq_socket(zctx, ZMQ_PUB) : NULL;
  CHECK(sock != NULL);
  int bound = zmq_bind(sock, addr);
  zmq_close(sock);
  zmq_ctx_term(zctx);
  CHECK(unlinkat(fd, "1.2.sock", 0) == 0 || errno == ENOENT);
  close(fd);
  CHECK(bound == 0);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(base) == 0);
}

static void endpoint_names_and_addresses(void) {
  char name[64], path[512], want[128];
  CHECK(nt_endpoint_name(123, 0, name, sizeof name) == 0);
  CHECK_STR(name, "123.sock");
  CHECK(nt_endpoint_name(1, 4026531836ull, name, sizeof name) == 0);
  CHECK_STR(name, "1.4026531836.sock");
  CHECK(nt_endpoint_name(1, 4026531836ull, name, strlen("1.4026531836.sock")) == -1);
  CHECK(nt_endpoint_fd_address(7, "1.2.sock", path, sizeof path) == 0);
  CHECK_STR(path, "ipc:///proc/self/fd/7/1.2.sock");
  CHECK(nt_endpoint_fd_address(-1, "1.2.sock", path, sizeof path) == -1);
  CHECK(nt_endpoint_fd_address(7, "1.2.sock", path, 10) == -1);
  /* Our namespace is in our own names (this test runs with /proc). */
  uint64_t ns = nt_endpoint_pidns();
  struct stat st;
  CHECK(stat("/proc/self/ns/pid", &st) == 0 && ns == (uint64_t)st.st_ino && ns != 0);
  CHECK(nt_endpoint_for_pid("/tmp/nccltop-0", 123, path, sizeof path) == 0);
  snprintf(want, sizeof want, "ipc:///tmp/nccltop-0/123.%llu.sock", (unsigned long long)ns);
  CHECK_STR(path, want);
  /* The caller's buffer must hold it all. */
  CHECK(nt_endpoint_for_pid("/tmp/nccltop-0", 123, path, strlen(want)) == -1);
  CHECK(nt_endpoint_for_pid("/tmp/nccltop-0", 123, path, strlen(want) + 1) == 0);
}

static void socket_names_parse_to_pids(void) {
  uint64_t ns = 99;
  CHECK_EQ_U64(nt_endpoint_parse_name("4242.sock", &ns), 4242);
  CHECK_EQ_U64(ns, 0);
  CHECK_EQ_U64(nt_endpoint_parse_name("1.sock", NULL), 1);
  CHECK_EQ_U64(nt_endpoint_parse_name("4194304.sock", NULL), NT_PID_MAX);
  CHECK_EQ_U64(nt_endpoint_parse_name("4194305.sock", NULL), 0); /* above PID_MAX_LIMIT */
  CHECK_EQ_U64(nt_endpoint_parse_name("2147483647.sock", NULL), 0);
  CHECK_EQ_U64(nt_endpoint_parse_name("4242.4026531836.sock", &ns), 4242);
  CHECK_EQ_U64(ns, 4026531836ull);
  CHECK_EQ_U64(nt_endpoint_parse_name("1.18446744073709551615.sock", &ns), 1);
  CHECK_EQ_U64(ns, UINT64_MAX);
  /* What nt_endpoint_name writes parses back. */
  char name[64];
  CHECK(nt_endpoint_name(77, 123456789, name, sizeof name) == 0);
  CHECK_EQ_U64(nt_endpoint_parse_name(name, &ns), 77);
  CHECK_EQ_U64(ns, 123456789);
  static const char *const bad[] = {
      "0.sock",
      "007.sock",
      "12a.sock",
      ".sock",
      "sock",
      "",
      "42",
      "42.sock.bak",
      "42.sockx",
      "42.SOCK",
      "-1.sock",
      "+1.sock",
      " 1.sock",
      "1 .sock",
      "2147483648.sock",
      "99999999999999999999999.sock",
      "4242.sock/",
      "..",
      "4242.sock\n",
      "42..sock",
      "42.0.sock",
      "42.01.sock",
      "42.x.sock",
      "42.5.6.sock",
      "42.5sock",
      "42.5.sock.bak",
      "42.-5.sock",
      "42.18446744073709551616.sock",
      "0.5.sock",
      "2147483648.5.sock",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ns = 99;
    if (nt_endpoint_parse_name(bad[i], &ns) != 0) fprintf(stderr, "    accepted \"%s\"\n", bad[i]);
    CHECK(nt_endpoint_parse_name(bad[i], &ns) == 0);
    CHECK_EQ_U64(ns, 0);
  }
  CHECK(nt_endpoint_parse_name(NULL, &ns) == 0);
}

/* Readers' socket names (the plugin connects to these): written and read
 * back, and nothing else taken for one, a publisher's name included. */
static void viewer_names_parse_to_pids(void) {
  char name[64];
  uint64_t ns = 7;
  CHECK(nt_endpoint_viewer_name(4242, 0, 0, name, sizeof name) == 0);
  CHECK_STR(name, "viewer-4242-0-0.sock");
  CHECK_EQ_U64(nt_endpoint_parse_viewer_name(name, &ns), 4242);
  CHECK_EQ_U64(ns, 0);
  CHECK(nt_endpoint_viewer_name(1, 4294967295u, 18446744073709551615ull, name, sizeof name) == 0);
  CHECK_EQ_U64(nt_endpoint_parse_viewer_name(name, &ns), 1);
  CHECK(ns == 18446744073709551615ull);
  CHECK(nt_endpoint_viewer_name(NT_PID_MAX, 3, 4026531836ull, name, sizeof name) == 0);
  CHECK_EQ_U64(nt_endpoint_parse_viewer_name(name, NULL), NT_PID_MAX);
  CHECK(nt_endpoint_viewer_name(0, 0, 0, name, sizeof name) == -1);
  CHECK(nt_endpoint_viewer_name(NT_PID_MAX + 1, 0, 0, name, sizeof name) == -1);
  CHECK(nt_endpoint_viewer_name(42, 0, 0, name, strlen("viewer-42-0-0.sock")) == -1);
  static const char *bad[] = {
      "42.sock",
      "4242.4026531836.sock",
      "viewer-42-0.sock",
      "viewer-42-0-0.sock.x",
      "viewer-0-0-0.sock",
      "viewer-042-0-0.sock",
      "viewer-42-00-0.sock",
      "viewer-42-0-01.sock",
      "viewer-42--0.sock",
      "viewer--1-0-0.sock",
      "viewer-4194305-0-0.sock",
      "Viewer-42-0-0.sock",
      "viewer-42-0-0",
      "viewer-42-0-0.sockx",
      "viewer-42-4294967296-0.sock",
      "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (nt_endpoint_parse_viewer_name(bad[i], &ns) != 0) fprintf(stderr, "    took '%s'\n", bad[i]);
    CHECK_EQ_U64(nt_endpoint_parse_viewer_name(bad[i], NULL), 0);
  }
  CHECK_EQ_U64(nt_endpoint_parse_name("viewer-42-0-0.sock", NULL), 0); /* not a publisher */
}

int main(void) {
  TEST_RUN(default_directory_is_per_user_under_tmp);
  TEST_RUN(prepare_creates_a_private_directory);
  TEST_RUN(missing_directory_is_reported_not_created_by_check);
  TEST_RUN(symlinked_directory_is_refused);
  TEST_RUN(group_or_world_access_is_refused);
  TEST_RUN(a_file_in_place_of_the_directory_is_refused);
  if (can_chown())
    TEST_RUN(directory_of_another_user_is_refused);
  else
    TEST_SKIP(directory_of_another_user_is_refused, "needs root and chown to uid 65534");
  TEST_RUN(the_descriptor_outlives_the_path);
  TEST_RUN(a_long_directory_path_still_binds);
  TEST_RUN(endpoint_names_and_addresses);
  TEST_RUN(socket_names_parse_to_pids);
  TEST_RUN(viewer_names_parse_to_pids);
  return TEST_DONE();
}

/* Endpoint rules: where publishers bind, which directories are refused and
 * why, socket names and the ipc path limit. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
  int rc = nt_endpoint_dir_prepare(dir, err, sizeof err);
  umask(old);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK(lstat(dir, &st) == 0);
  CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 && st.st_uid == geteuid());
  CHECK(nt_endpoint_dir_prepare(dir, err, sizeof err) == 0); /* already there: fine */
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == 0);
  char slash[160];
  snprintf(slash, sizeof slash, "%s//", dir);
  CHECK(nt_endpoint_dir_check(slash, err, sizeof err) == 0);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(base) == 0);
}

static void missing_directory_is_reported_not_created_by_check(void) {
  char dir[128], err[512] = "", want[256];
  CHECK(make_base() == 0);
  path_in_base(dir, sizeof dir, "absent");
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == -1);
  snprintf(want, sizeof want, "endpoint directory %s: %s", dir, strerror(ENOENT));
  CHECK_STR(err, want);
  struct stat st;
  CHECK(lstat(dir, &st) == -1 && errno == ENOENT);
  /* prepare does not create parents. */
  path_in_base(dir, sizeof dir, "absent/child");
  CHECK(nt_endpoint_dir_prepare(dir, err, sizeof err) == -1);
  CHECK(strstr(err, "cannot create endpoint directory") != NULL);
  CHECK(nt_endpoint_dir_check("", err, sizeof err) == -1);
  CHECK(nt_endpoint_dir_prepare(NULL, err, sizeof err) == -1);
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
  CHECK(nt_endpoint_dir_check(link, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(nt_endpoint_dir_prepare(link, err, sizeof err) == -1);
  CHECK_STR(err, want);
  /* A trailing slash would make lstat follow the link. */
  snprintf(slash, sizeof slash, "%s/", link);
  CHECK(nt_endpoint_dir_check(slash, err, sizeof err) == -1);
  CHECK(strstr(err, "is a symlink") != NULL);
  /* A dangling link is not replaced by a directory either. */
  CHECK(rmdir(real) == 0);
  CHECK(nt_endpoint_dir_prepare(link, err, sizeof err) == -1);
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
    CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == -1);
    CHECK_STR(err, want);
    CHECK(nt_endpoint_dir_prepare(dir, err, sizeof err) == -1); /* never chmod-ed for us */
  }
  CHECK(chmod(dir, 0700) == 0);
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == 0);
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
  CHECK(nt_endpoint_dir_check(path, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(nt_endpoint_dir_prepare(path, err, sizeof err) == -1);
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
  CHECK(nt_endpoint_dir_check(dir, err, sizeof err) == -1);
  CHECK_STR(err, want);
  CHECK(nt_endpoint_dir_prepare(dir, err, sizeof err) == -1);
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

static void endpoint_path_fits_the_ipc_limit(void) {
  char path[512], dir[256];
  CHECK(nt_endpoint_for_pid("/tmp/nccltop-0", 123, path, sizeof path) == 0);
  CHECK_STR(path, "ipc:///tmp/nccltop-0/123.sock");
  CHECK(nt_endpoint_for_pid("/d", 4294967295u, path, sizeof path) == 0);
  CHECK_STR(path, "ipc:///d/4294967295.sock");
  /* The part after ipc:// is a socket path: at most 107 bytes. */
  size_t fixed = strlen("/1234567.sock");
  memset(dir, 'x', sizeof dir);
  dir[0] = '/';
  dir[107 - fixed] = '\0';
  CHECK(nt_endpoint_for_pid(dir, 1234567, path, sizeof path) == 0);
  CHECK_EQ_U64(strlen(path), strlen("ipc://") + 107);
  dir[107 - fixed] = 'x';
  dir[108 - fixed] = '\0';
  CHECK(nt_endpoint_for_pid(dir, 1234567, path, sizeof path) == -1);
  /* The caller's buffer too. */
  CHECK(nt_endpoint_for_pid("/d", 1, path, strlen("ipc:///d/1.sock")) == -1);
  CHECK(nt_endpoint_for_pid("/d", 1, path, strlen("ipc:///d/1.sock") + 1) == 0);
}

static void socket_names_parse_to_pids(void) {
  CHECK_EQ_U64(nt_endpoint_parse_name("4242.sock"), 4242);
  CHECK_EQ_U64(nt_endpoint_parse_name("1.sock"), 1);
  CHECK_EQ_U64(nt_endpoint_parse_name("2147483647.sock"), 2147483647);
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
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (nt_endpoint_parse_name(bad[i]) != 0) fprintf(stderr, "    accepted \"%s\"\n", bad[i]);
    CHECK(nt_endpoint_parse_name(bad[i]) == 0);
  }
  CHECK(nt_endpoint_parse_name(NULL) == 0);
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
  TEST_RUN(endpoint_path_fits_the_ipc_limit);
  TEST_RUN(socket_names_parse_to_pids);
  return TEST_DONE();
}

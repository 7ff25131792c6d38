/* Slurm hostlist expansion (monitor/feeds/hostlist.c): Slurm's documented examples,
 * zero padding, several bracket groups, ports, host files, every error
 * with its position, and the caps (an over-large range is an error, never
 * an allocation). */
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "../monitor/feeds/hostlist.h"

/* The expansion of text joined with spaces ("" on an error, the error in
 * err); ports written as name:port. */
static const char *expand(const char *text, char *err, size_t errlen) {
  static char buf[1 << 16];
  buf[0] = '\0';
  err[0] = '\0';
  nt_hostlist *l = nt_hostlist_new();
  if (!l) return "(out of memory)";
  if (nt_hostlist_add(l, text, strlen(text), err, errlen) == 0) {
    size_t n = 0;
    for (uint32_t i = 0; i < nt_hostlist_count(l) && n < sizeof buf - 300; i++) {
      uint16_t port = nt_hostlist_port(l, i);
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", nt_hostlist_host(l, i));
      if (port) n += (size_t)snprintf(buf + n, sizeof buf - n, ":%u", (unsigned)port);
    }
  }
  nt_hostlist_free(l);
  return buf;
}

#define EXPANDS(text, want)                                                                        \
  do {                                                                                             \
    char e_[256];                                                                                  \
    const char *got_ = expand(text, e_, sizeof e_);                                                \
    if (e_[0]) fprintf(stderr, "    %s: %s\n", text, e_);                                          \
    CHECK_STR(got_, want);                                                                         \
  } while (0)

#define REFUSES(text, want_err)                                                                    \
  do {                                                                                             \
    char e_[256];                                                                                  \
    CHECK_STR(expand(text, e_, sizeof e_), "");                                                    \
    CHECK_STR(e_, want_err);                                                                       \
  } while (0)

static void slurm_documented_examples_expand(void) {
  /* From Slurm's hostlist documentation and scontrol show hostnames. */
  EXPANDS("tux[0-3]", "tux0 tux1 tux2 tux3");
  EXPANDS("lx[10-12,20]", "lx10 lx11 lx12 lx20");
  EXPANDS("linux[0-2],snowflake", "linux0 linux1 linux2 snowflake");
  EXPANDS("gpu[001-003,070]", "gpu001 gpu002 gpu003 gpu070");
  EXPANDS("node1,node2 node3\tnode4", "node1 node2 node3 node4");
  EXPANDS("n[1]", "n1");
  EXPANDS("[1-2]", "1 2");
  EXPANDS("a,,b,", "a b");
  EXPANDS("10.0.0.[1-3]", "10.0.0.1 10.0.0.2 10.0.0.3");
  EXPANDS("gpu[5-5]-ib", "gpu5-ib");
}

static void zero_padding_is_kept_as_slurm_keeps_it(void) {
  EXPANDS("gpu[008-011]", "gpu008 gpu009 gpu010 gpu011");
  EXPANDS("gpu[8-11]", "gpu8 gpu9 gpu10 gpu11");
  /* The lower bound's width, however the upper one is written. */
  EXPANDS("n[1-010]", "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
  EXPANDS("n[098-101]", "n098 n099 n100 n101");
  EXPANDS("n[0-1]", "n0 n1");
  EXPANDS("n[00-01,5]", "n00 n01 n5");
}

static void several_bracket_groups_expand_first_outermost(void) {
  EXPANDS("rack[1-2]-gpu[01-03]",
          "rack1-gpu01 rack1-gpu02 rack1-gpu03 rack2-gpu01 rack2-gpu02 rack2-gpu03");
  EXPANDS("a[1,3]b[2]c[7-8]", "a1b2c7 a1b2c8 a3b2c7 a3b2c8");
  EXPANDS("r[1-2]n[1-2],x", "r1n1 r1n2 r2n1 r2n2 x");
}

static void ports_apply_to_every_name_of_an_entry(void) {
  EXPANDS("gpu[1-2]:7461,gpu3", "gpu1:7461 gpu2:7461 gpu3");
  EXPANDS("localhost:1", "localhost:1");
  EXPANDS("h:65535", "h:65535");
}

static void every_error_names_its_position(void) {
  REFUSES("", "position 1: no host names");
  REFUSES(" , ", "position 4: no host names");
  REFUSES("gpu[1-3", "position 4: '[' is never closed");
  REFUSES("gpu[1-3],a[", "position 11: '[' is never closed");
  REFUSES("gpu1]", "position 5: ']' without '['");
  REFUSES("gpu[1[2]]", "position 6: '[' inside brackets (they do not nest)");
  REFUSES("gpu[]", "position 4: empty brackets");
  REFUSES("gpu[a]", "position 5: expected a number, found 'a'");
  REFUSES("gpu[1-]", "position 7: expected a number before ']'");
  REFUSES("gpu[-1]", "position 5: expected a number, found '-'");
  REFUSES("gpu[1,]", "position 7: expected a number before ']'");
  REFUSES("gpu[,1]", "position 5: expected a number, found ','");
  REFUSES("gpu[1--2]", "position 7: expected a number, found '-'");
  REFUSES("gpu[1-2-3]", "position 8: expected ',' or ']' in brackets, found '-'");
  REFUSES("gpu[1 2]", "position 6: expected ',' or ']' in brackets, found \\x20");
  REFUSES("gpu[9-3]", "position 5: range 9-3 runs backwards");
  REFUSES("gp/u", "position 3: '/' is not allowed in a host name");
  REFUSES("a,b;c", "position 4: ';' is not allowed in a host name");
  REFUSES("a\033[31m", "position 2: \\x1b is not allowed in a host name");
  REFUSES(":7460", "position 1: host name missing before ':'");
  REFUSES("gpu:", "position 5: port must be a number from 1 to 65535");
  REFUSES("gpu:0", "position 5: port must be a number from 1 to 65535");
  REFUSES("gpu:65536", "position 5: port must be a number from 1 to 65535");
  REFUSES("gpu:99999999999", "position 5: port must be a number from 1 to 65535");
  REFUSES("gpu:80x", "position 7: unexpected 'x' after the port");
  REFUSES("gpu:80:81", "position 7: unexpected ':' after the port");
  REFUSES("gpu:[1-2]", "position 5: port must be a number from 1 to 65535");
  REFUSES("tcp://gpu1:7460", "position 4: a host name, not an endpoint URL, is expected here");
  REFUSES("n[1234567890123456789]", "position 3: number longer than 18 digits");
  /* The list is left as it was: nothing of a bad list is kept. */
  nt_hostlist *l = nt_hostlist_new();
  char err[128];
  CHECK(l && nt_hostlist_add(l, "a,b", 3, err, sizeof err) == 0);
  CHECK(nt_hostlist_add(l, "c,d,e[", 6, err, sizeof err) == -1);
  CHECK_EQ_U64(nt_hostlist_count(l), 2);
  CHECK(nt_hostlist_add(l, "f", 1, err, sizeof err) == 0);
  CHECK_STR(nt_hostlist_host(l, 2), "f");
  nt_hostlist_free(l);
}

static void caps_refuse_huge_ranges_without_allocating_them(void) {
  char err[256];
  /* Exactly the cap is fine. */
  nt_hostlist *l = nt_hostlist_new();
  CHECK(l && nt_hostlist_add(l, "n[1-65536]", 10, err, sizeof err) == 0);
  CHECK_EQ_U64(nt_hostlist_count(l), NT_HOSTLIST_MAX_HOSTS);
  CHECK_STR(nt_hostlist_host(l, 65535), "n65536");
  /* One more, in any form, is not; the list stays as it was. */
  CHECK(nt_hostlist_add(l, "x", 1, err, sizeof err) == -1);
  CHECK_STR(err, "position 1: more than 65536 hosts");
  nt_hostlist_free(l);
  REFUSES("n[1-65537]", "position 3: more than 65536 hosts");
  REFUSES("n[0-999999999999999999]", "position 3: more than 65536 hosts");
  REFUSES("n[1-60000,1-60000]", "position 11: more than 65536 hosts");
  REFUSES("a[1-1000]b[1-1000]", "position 1: more than 65536 hosts");
  REFUSES("a[1-300]b[1-300]c[0-0]", "position 1: more than 65536 hosts");
  /* Names: at most 253 bytes. */
  char name[300];
  memset(name, 'h', 253);
  name[253] = '\0';
  EXPANDS(name, name);
  strcpy(name + 253, "[1-2]");
  REFUSES(name, "position 1: host name longer than 253 bytes");
  /* At most 16 bracket groups in a name. */
  char groups[128] = "";
  for (int i = 0; i < 17; i++) strcat(groups, "[1]");
  REFUSES(groups, "position 49: more than 16 bracket groups in one name");
  groups[48] = '\0';
  EXPANDS(groups, "1111111111111111");
  /* All the names together: at most 4 MiB (250-byte names, 17000 of them). */
  char *big = malloc(400);
  CHECK(big != NULL);
  memset(big, 'x', 245);
  strcpy(big + 245, "[10000-26999]");
  l = nt_hostlist_new();
  int rc = l ? nt_hostlist_add(l, big, strlen(big), err, sizeof err) : 0;
  free(big);
  nt_hostlist_free(l);
  CHECK(rc == -1);
  CHECK_STR(err, "position 1: the names take more than 4 MiB");
  /* A list longer than 1 MiB as written. */
  size_t n = NT_HOSTLIST_MAX_TEXT + 1;
  char *text = malloc(n);
  CHECK(text != NULL);
  memset(text, 'a', n);
  l = nt_hostlist_new();
  rc = l ? nt_hostlist_add(l, text, n, err, sizeof err) : 0;
  free(text);
  nt_hostlist_free(l);
  CHECK(rc == -1);
  CHECK_STR(err, "position 1048577: list longer than 1048576 bytes");
}

static int write_file(char *path, const char *content) {
  strcpy(path, "/tmp/nccltop-hostfile-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  size_t n = strlen(content);
  int rc = write(fd, content, n) == (ssize_t)n ? 0 : -1;
  close(fd);
  return rc;
}

static void host_files_take_lines_comments_and_blank_lines(void) {
  char path[64], err[256];
  CHECK(write_file(path, "# the job's nodes\n"
                         "gpu001\n"
                         "\n"
                         "   gpu002:7461   # a relay on another port\n"
                         "gpu[003-004]\r\n"
                         "\t\n"
                         "gpu005") == 0);
  nt_hostlist *l = nt_hostlist_new();
  int rc = l ? nt_hostlist_add_file(l, path, err, sizeof err) : -1;
  unlink(path);
  if (rc) fprintf(stderr, "    %s\n", err);
  CHECK(rc == 0);
  CHECK_EQ_U64(nt_hostlist_count(l), 5);
  CHECK_STR(nt_hostlist_host(l, 1), "gpu002");
  CHECK_EQ_U64(nt_hostlist_port(l, 1), 7461);
  CHECK_EQ_U64(nt_hostlist_port(l, 0), 0);
  CHECK_STR(nt_hostlist_host(l, 3), "gpu004");
  CHECK_STR(nt_hostlist_host(l, 4), "gpu005");
  /* An error names the line and the position within it; nothing is kept. */
  CHECK(write_file(path, "gpu001\n# ok\ngpu002\ngpu[1-3\n") == 0);
  rc = nt_hostlist_add_file(l, path, err, sizeof err);
  unlink(path);
  CHECK(rc == -1);
  CHECK_STR(err, "line 4: position 4: '[' is never closed");
  CHECK_EQ_U64(nt_hostlist_count(l), 5);
  CHECK(write_file(path, "# nobody\n\n") == 0);
  rc = nt_hostlist_add_file(l, path, err, sizeof err);
  unlink(path);
  CHECK(rc == -1);
  CHECK_STR(err, "no host names in the file");
  CHECK(nt_hostlist_add_file(l, "/nonexistent/hosts", err, sizeof err) == -1);
  CHECK_STR(err, "No such file or directory");
  CHECK(nt_hostlist_add_file(l, "/tmp", err, sizeof err) == -1);
  CHECK_STR(err, "not a regular file");
  nt_hostlist_free(l);
}

static void host_files_over_the_cap_are_refused(void) {
  char path[64], err[256];
  CHECK(write_file(path, "") == 0);
  CHECK(truncate(path, NT_HOSTLIST_MAX_TEXT + 1) == 0);
  nt_hostlist *l = nt_hostlist_new();
  int rc = l ? nt_hostlist_add_file(l, path, err, sizeof err) : 0;
  unlink(path);
  nt_hostlist_free(l);
  CHECK(rc == -1);
  CHECK_STR(err, "larger than 1 MiB");
}

static const char *ranged(const char *text) {
  static char buf[256], err[256];
  nt_hostlist *l = nt_hostlist_new();
  if (!l || nt_hostlist_add(l, text, strlen(text), err, sizeof err) != 0) {
    nt_hostlist_free(l);
    return err;
  }
  nt_hostlist_ranged(l, buf, sizeof buf);
  nt_hostlist_free(l);
  return buf;
}

static void the_compact_form_writes_the_list_back(void) {
  CHECK_STR(ranged("gpu[001-064,070]"), "gpu[001-064,070]");
  CHECK_STR(ranged("gpu001,gpu002,gpu003"), "gpu[001-003]");
  CHECK_STR(ranged("rack[1-2]-gpu[01-04]"), "rack1-gpu[01-04],rack2-gpu[01-04]");
  CHECK_STR(ranged("n[8-11]"), "n[8-11]");
  CHECK_STR(ranged("n[098-101]"), "n[098-101]");
  CHECK_STR(ranged("a,b,n1"), "a,b,n1");
  CHECK_STR(ranged("n[1-2]:7461,n3"), "n[1-2]:7461,n3");
  CHECK_STR(ranged("n[01-02],n3"), "n[01-02],n3");
  CHECK_STR(ranged("10.0.0.[1-4]"), "10.0.0.[1-4]");
  /* Cut to the buffer with "...". */
  nt_hostlist *l = nt_hostlist_new();
  char err[64], small[16];
  CHECK(l && nt_hostlist_add(l, "alpha,beta,gamma,delta", 22, err, sizeof err) == 0);
  nt_hostlist_ranged(l, small, sizeof small);
  CHECK_STR(small, "alpha,beta,...");
  nt_hostlist_ranged(l, small, 3);
  CHECK_STR(small, "");
  nt_hostlist_free(l);
}

static void duplicates_are_dropped_in_place(void) {
  nt_hostlist *l = nt_hostlist_new();
  char err[64];
  CHECK(l && nt_hostlist_add(l, "c,a,b,a,c:1,c,a:1", 17, err, sizeof err) == 0);
  nt_hostlist_uniq(l);
  CHECK_EQ_U64(nt_hostlist_count(l), 5);
  CHECK_STR(nt_hostlist_host(l, 0), "c");
  CHECK_STR(nt_hostlist_host(l, 1), "a");
  CHECK_STR(nt_hostlist_host(l, 2), "b");
  CHECK_STR(nt_hostlist_host(l, 3), "c");
  CHECK_EQ_U64(nt_hostlist_port(l, 3), 1);
  CHECK_STR(nt_hostlist_host(l, 4), "a");
  CHECK(nt_hostlist_host(l, 5) == NULL);
  nt_hostlist_free(l);
}

int main(void) {
  TEST_RUN(slurm_documented_examples_expand);
  TEST_RUN(zero_padding_is_kept_as_slurm_keeps_it);
  TEST_RUN(several_bracket_groups_expand_first_outermost);
  TEST_RUN(ports_apply_to_every_name_of_an_entry);
  TEST_RUN(every_error_names_its_position);
  TEST_RUN(caps_refuse_huge_ranges_without_allocating_them);
  TEST_RUN(host_files_take_lines_comments_and_blank_lines);
  TEST_RUN(host_files_over_the_cap_are_refused);
  TEST_RUN(the_compact_form_writes_the_list_back);
  TEST_RUN(duplicates_are_dropped_in_place);
  return TEST_DONE();
}

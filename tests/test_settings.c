/* The screen's settings file (monitor/feeds/settings.c) and the start flags
 * (--view, --sort, --filter, --no-config): parse and write, every kind of
 * bad file (one reason, the defaults), where the file is, flags winning
 * over it, and end to end in a pseudo-terminal: a view chosen on the screen
 * is written and is where the next start begins. */
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>

#include "testlib.h"
#include "vterm_harness.h"
#include "../monitor/commands/cli.h"
#include "../monitor/feeds/settings.h"

static char tmp[] = "/tmp/nccltop-settings-XXXXXX";
static char nccltop[PATH_MAX + 16];

static bool put_n(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(text, 1, len, f) == len;
  if (f && fclose(f) != 0) ok = false;
  return ok;
}

static bool put(const char *path, const char *text) {
  return put_n(path, text, strlen(text));
}

static bool slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  return true;
}

/* Parses text; returns the rc, err filled on -1. */
static int parse(const char *text, nt_settings *s, char *err, size_t cap) {
  err[0] = '\0';
  return nt_settings_parse(text, strlen(text), s, err, cap);
}

static void good_files_are_read(void) {
  nt_settings s;
  char err[256];
  CHECK(parse("version 1\nview collectives\nsort stalled\nfilter comm-1\n", &s, err, sizeof err) ==
        0);
  CHECK(s.view == NT_VIEW_OPS && s.sort == 1 && s.has_filter);
  CHECK_STR(s.filter, "comm-1");
  /* Comments, blank lines, indentation, CRLF, a UTF-8 filter with spaces,
   * no final newline, a later line replacing an earlier one. */
  CHECK(parse("# mine\n\n  version 1\r\nview proxy\r\n  # x\nfilter n\xc5\x93ud 3 \nview topology",
              &s, err, sizeof err) == 0);
  CHECK(s.view == NT_VIEW_TOPO && s.sort == -1 && s.has_filter);
  CHECK_STR(s.filter, "n\xc5\x93ud 3 ");
  /* Only a version: nothing set. */
  CHECK(parse("version 1\n", &s, err, sizeof err) == 0);
  CHECK(s.view == -1 && s.sort == -1 && !s.has_filter);
  CHECK(parse("version 1\nfilter\n", &s, err, sizeof err) == 0);
  CHECK(s.has_filter && s.filter[0] == '\0' && s.mouse == -1);
  CHECK(parse("version 1\nmouse off\n", &s, err, sizeof err) == 0 && s.mouse == 0);
  CHECK(!s.has_hide);
  CHECK(parse("version 1\nhide-columns MODEL%,PREVIOUS RUN\n", &s, err, sizeof err) == 0);
  CHECK(s.has_hide && !strcmp(s.hide, "MODEL%,PREVIOUS RUN"));
  CHECK(parse("version 1\nmouse on\n", &s, err, sizeof err) == 0 && s.mouse == 1);
}

static void bad_files_give_one_reason_and_nothing(void) {
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"", "no 'version 1'"},
      {"# only a comment\n", "no 'version 1'"},
      {"view proxy\nversion 1\n", "first setting must be 'version 1'"},
      {"version 2\nview proxy\n", "format version 2"},
      {"version one\n", "first setting must be"},
      {"version 1x\n", "first setting must be"},
      {"version 1\nview help\n", "view 'help' is not one of"},
      {"version 1\nview\n", "view '' is not one of"},
      {"version 1\nsort fastest\n", "sort 'fastest' is not one of"},
      {"version 1\ncolour red\n", "'colour' is not a setting"},
      {"version 1\nmouse maybe\n", "mouse 'maybe' is not on or off"},
      {"version 1\nhide-columns a\tb\n", "hide-columns is longer than 127 bytes or not printable"},
      {"version 1\nfilter a\tb\n", "not printable"},
      {"version 1\nfilter 0123456789012345678901234567890123456789012345678901234567890123\n",
       "longer than 63"},
      {"version 1\naverylongkeythatisnotasetting x\n", "is not a setting"},
      {"\x7f"
       "ELF\x02\x01\x01",
       "first setting must be"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nt_settings s;
    char err[256];
    int rc = parse(bad[i].text, &s, err, sizeof err);
    bool ok = rc == -1 && strstr(err, bad[i].why) && s.view == -1 && s.sort == -1 && !s.has_filter;
    if (!ok) fprintf(stderr, "    case %zu: rc %d, '%s'\n", i, rc, err);
    CHECK(ok);
  }
  /* A NUL byte and a long line (the length is known: not NUL-terminated). */
  nt_settings s;
  char err[256];
  CHECK(nt_settings_parse("version 1\nview pro\0xy\n", 22, &s, err, sizeof err) == -1);
  CHECK(strstr(err, "NUL") != NULL);
  char line[400];
  memset(line, 'x', sizeof line);
  memcpy(line, "version 1\nfilter ", 17);
  CHECK(nt_settings_parse(line, sizeof line, &s, err, sizeof err) == -1);
  CHECK(strstr(err, "line 2 is longer than 200") != NULL);
}

static void files_on_disk(void) {
  char path[256], err[256], text[1024];
  nt_settings s;
  snprintf(path, sizeof path, "%s/none", tmp);
  CHECK(nt_settings_read(path, &s, err, sizeof err) == 1); /* missing: nothing to say */
  CHECK(s.view == -1);
  /* Written: the version line, 0600, no temporary file left; read back. */
  snprintf(path, sizeof path, "%s/a/b/nccltoprc", tmp);
  nt_settings w = {.view = NT_VIEW_CHANNELS, .sort = 2, .has_filter = true};
  snprintf(w.filter, sizeof w.filter, "node 7");
  CHECK(nt_settings_write(path, &w, err, sizeof err) == 0);
  CHECK(slurp(path, text, sizeof text) && strstr(text, "\nversion 1\nview channels\nsort host\n"));
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  char dir[256];
  snprintf(dir, sizeof dir, "%s/a/b", tmp);
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
  CHECK(system(cmd) == 0);
  CHECK(nt_settings_read(path, &s, err, sizeof err) == 0);
  CHECK(s.view == NT_VIEW_CHANNELS && s.sort == 2 && s.has_filter && !strcmp(s.filter, "node 7"));
  /* Rewritten over it. */
  w.view = NT_VIEW_ENV;
  CHECK(nt_settings_write(path, &w, err, sizeof err) == 0);
  CHECK(nt_settings_read(path, &s, err, sizeof err) == 0 && s.view == NT_VIEW_ENV);
  /* Too big, a directory, a FIFO (must not hang): one reason each. */
  char big[NT_SETTINGS_MAX_BYTES + 100];
  memset(big, '#', sizeof big);
  memcpy(big, "version 1\n#", 11);
  snprintf(path, sizeof path, "%s/big", tmp);
  CHECK(put_n(path, big, sizeof big));
  CHECK(nt_settings_read(path, &s, err, sizeof err) == -1 && strstr(err, "larger than"));
  CHECK(nt_settings_read(tmp, &s, err, sizeof err) == -1 && strstr(err, "not a regular file"));
  snprintf(path, sizeof path, "%s/fifo", tmp);
  CHECK(mkfifo(path, 0600) == 0);
  CHECK(nt_settings_read(path, &s, err, sizeof err) == -1 && strstr(err, "not a regular file"));
  /* Unwritable: the directory is a file (refused even to root). */
  snprintf(path, sizeof path, "%s/big/nccltoprc", tmp);
  CHECK(nt_settings_write(path, &w, err, sizeof err) == -1 && strstr(err, "cannot"));
  /* Nothing valid: refused before touching the disk. */
  w.view = NT_VIEW_HELP;
  snprintf(path, sizeof path, "%s/never", tmp);
  CHECK(nt_settings_write(path, &w, err, sizeof err) == -1 && access(path, F_OK) != 0);
}

static void the_path_follows_the_environment(void) {
  char buf[512];
  setenv("NCCLTOP_CONFIG", "/x/rc", 1);
  CHECK(nt_settings_path(buf, sizeof buf) == 0 && !strcmp(buf, "/x/rc"));
  setenv("NCCLTOP_CONFIG", "", 1);
  CHECK(nt_settings_path(buf, sizeof buf) == 1);
  unsetenv("NCCLTOP_CONFIG");
  setenv("XDG_CONFIG_HOME", "/xdg", 1);
  CHECK(nt_settings_path(buf, sizeof buf) == 0 && !strcmp(buf, "/xdg/nccltop/nccltoprc"));
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/h", 1);
  CHECK(nt_settings_path(buf, sizeof buf) == 0 && !strcmp(buf, "/h/.config/nccltop/nccltoprc"));
}

/* nt_options_parse on argv (NULL-terminated), with NCCLTOP_CONFIG = path. */
static int parse_args(nt_options *o, const char *path, char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  setenv("NCCLTOP_CONFIG", path, 1);
  nt_options_defaults(o);
  return nt_options_parse(o, argc, argv);
}

static void flags_win_over_the_file(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/cli-rc", tmp);
  CHECK(put(path, "version 1\nview collectives\nsort host\nfilter rk\n"));
  nt_options o;
  char *plain[] = {"nccltop", NULL};
  CHECK(parse_args(&o, path, plain) == 0);
  CHECK(o.initial_view == NT_VIEW_OPS && o.initial_sort == 2 && !strcmp(o.initial_filter, "rk"));
  CHECK(!strcmp(o.settings_path, path) && !o.settings_note[0]);
  char *flags[] = {"nccltop", "--view", "proxy", "--sort", "stalled", "--filter", "", NULL};
  CHECK(parse_args(&o, path, flags) == 0);
  CHECK(o.initial_view == NT_VIEW_PROXY && o.initial_sort == 1 && o.initial_filter[0] == '\0');
  char *some[] = {"nccltop", "--sort", "rank", NULL};
  CHECK(parse_args(&o, path, some) == 0);
  CHECK(o.initial_view == NT_VIEW_OPS && o.initial_sort == 0 && !strcmp(o.initial_filter, "rk"));
  /* The mouse: the file's "mouse off" and --no-mouse both leave it to the
   * terminal; only the file's value is saved back. */
  CHECK(!o.no_mouse && o.settings_mouse == -1);
  CHECK(put(path, "version 1\nmouse off\n"));
  CHECK(parse_args(&o, path, plain) == 0);
  CHECK(o.no_mouse && o.settings_mouse == 0);
  char *no_mouse[] = {"nccltop", "--no-mouse", NULL};
  CHECK(put(path, "version 1\n"));
  CHECK(parse_args(&o, path, no_mouse) == 0);
  CHECK(o.no_mouse && o.settings_mouse == -1);
  /* hide-columns: the flag wins; the file's is kept to be saved back. */
  CHECK(put(path, "version 1\nhide-columns DONE\n"));
  CHECK(parse_args(&o, path, plain) == 0);
  CHECK(!strcmp(o.hide_columns, "DONE") && o.settings_has_hide);
  char *hide[] = {"nccltop", "--hide-columns", "MODEL%", NULL};
  CHECK(parse_args(&o, path, hide) == 0);
  CHECK(!strcmp(o.hide_columns, "MODEL%") && !strcmp(o.settings_hide, "DONE"));
  char *bad_hide[] = {"nccltop", "--hide-columns", "a\tb", NULL};
  CHECK(parse_args(&o, path, bad_hide) == 2);
  CHECK(put(path, "version 1\nview collectives\nsort host\nfilter rk\n"));
  /* --no-config and -b: not read, nowhere to save. */
  char *none[] = {"nccltop", "--no-config", NULL};
  CHECK(parse_args(&o, path, none) == 0);
  CHECK(o.initial_view == NT_VIEW_OVERVIEW && !o.settings_path[0]);
  char *batch[] = {"nccltop", "-b", NULL};
  CHECK(parse_args(&o, path, batch) == 0);
  CHECK(o.initial_view == NT_VIEW_OVERVIEW && !o.settings_path[0]);
  /* A bad file: the defaults, a note, the start goes on. */
  CHECK(put(path, "version 9\nview proxy\n"));
  CHECK(parse_args(&o, path, plain) == 0);
  CHECK(o.initial_view == NT_VIEW_OVERVIEW && strstr(o.settings_note, "format version 9"));
  CHECK(!strcmp(o.settings_path, path)); /* the next change saves a good one over it */
  /* Bad flags are refused, in one line. */
  char *bad_view[] = {"nccltop", "--view", "help", NULL};
  CHECK(parse_args(&o, path, bad_view) == 2);
  char *bad_sort[] = {"nccltop", "--sort", "speed", NULL};
  CHECK(parse_args(&o, path, bad_sort) == 2);
  char *bad_filter[] = {"nccltop", "--filter", "a\nb", NULL};
  CHECK(parse_args(&o, path, bad_filter) == 2);
  unsetenv("NCCLTOP_CONFIG");
}

/* The screen (no job: an empty endpoint directory) with settings file rc
 * and one more argument; keys sent, `want` waited for, then q. */
static bool last_mouse; /* the mouse reporting the last screen_run's program asked for */
static bool screen_run(const char *rc, const char *extra, const char *keys, const char *want) {
  char rc_env[300], dir_env[300];
  snprintf(rc_env, sizeof rc_env, "NCCLTOP_CONFIG=%s", rc);
  snprintf(dir_env, sizeof dir_env, "NCCLTOP_DIR=%s/jobs", tmp);
  char *argv[] = {nccltop, "-d", "100", (char *)extra, NULL};
  char *env[] = {rc_env, dir_env, NULL};
  vt_term t;
  if (vt_start(&t, 24, 100, argv, env) != 0) return false;
  bool ok = vt_wait_for(&t, "nccltop", 15);
  if (ok && keys) vt_send(&t, keys);
  if (ok) ok = vt_wait_for(&t, want, 10);
  if (!ok) fprintf(stderr, "    no '%s' on the screen:\n%s\n", want, t.text);
  last_mouse = t.mouse;
  vt_send(&t, "q");
  if (ok) ok = vt_wait_exit(&t, 10) == 0;
  vt_stop(&t);
  return ok;
}

/* The view chosen on the screen is saved and the next start begins there;
 * a flag wins over it; a bad file still starts, saying why on the key bar. */
static void a_saved_view_is_used_at_the_next_start(void) {
  char rc[256], text[1024];
  snprintf(rc, sizeof rc, "%s/screen/nccltoprc", tmp);
  CHECK(screen_run(rc, NULL, "4", "[collectives]"));
  CHECK(slurp(rc, text, sizeof text) && strstr(text, "view collectives"));
  CHECK(screen_run(rc, NULL, NULL, "[collectives]"));
  /* The rank order and the filter too, once the filter line is closed. */
  CHECK(screen_run(rc, NULL, ">\\zq\r", "filter \"zq\""));
  CHECK(slurp(rc, text, sizeof text) &&
        strstr(text, "view collectives\nsort stalled\nfilter zq\n"));
  CHECK(screen_run(rc, NULL, NULL, "filter \"zq\""));
  CHECK(screen_run(rc, "--view=environment", NULL, "[environment]"));
  /* Only a change writes: the flag's view was not saved. */
  CHECK(slurp(rc, text, sizeof text) && strstr(text, "view collectives"));
  CHECK(put(rc, "garbage\n"));
  CHECK(screen_run(rc, NULL, NULL, "settings file not used"));
}

/* The mouse is the screen's unless the file says "mouse off" or --no-mouse
 * (then the terminal keeps it: select and copy text); a change on the
 * screen saves the file's choice, not the flag's. */
static void the_mouse_can_be_left_to_the_terminal(void) {
  char rc[256], text[1024];
  snprintf(rc, sizeof rc, "%s/mouse/nccltoprc", tmp);
  CHECK(screen_run(rc, NULL, NULL, "[overview]"));
  CHECK(last_mouse);
  CHECK(screen_run(rc, "--no-mouse", "4", "[collectives]"));
  CHECK(!last_mouse);
  CHECK(slurp(rc, text, sizeof text) && strstr(text, "mouse on\n"));
  CHECK(put(rc, "version 1\nmouse off\n"));
  CHECK(screen_run(rc, NULL, "2", "[proxy threads]"));
  CHECK(!last_mouse);
  CHECK(slurp(rc, text, sizeof text) && strstr(text, "view proxy\n") &&
        strstr(text, "mouse off\n"));
}

int main(void) {
  if (!mkdtemp(tmp)) return 1;
  char jobs[64];
  snprintf(jobs, sizeof jobs, "%s/jobs", tmp);
  if (mkdir(jobs, 0700) != 0) return 1;
  char bindir[PATH_MAX];
  vt_build_dir(bindir, sizeof bindir);
  snprintf(nccltop, sizeof nccltop, "%s/nccltop", bindir);
  TEST_RUN(good_files_are_read);
  TEST_RUN(bad_files_give_one_reason_and_nothing);
  TEST_RUN(files_on_disk);
  TEST_RUN(the_path_follows_the_environment);
  TEST_RUN(flags_win_over_the_file);
  TEST_RUN(a_saved_view_is_used_at_the_next_start);
  TEST_RUN(the_mouse_can_be_left_to_the_terminal);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return TEST_DONE();
}

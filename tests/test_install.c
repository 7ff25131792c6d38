/* `make install` and what it installs: the binary, the plugin, the man page,
 * bash completion and the example topologies, with their modes; the man page
 * renders without a groff warning and names every option `nccltop --help`,
 * `nccltop topo --help` (and exporter, record, replay, export, relay, keygen --help) and README's
 * Commands section give, every variable
 * README names or the code reads with getenv, and every key of README's key
 * table and of monitor/screen/keys.c's (the help screen's); the completion script
 * parses, defines its completion and offers every long option.
 *
 * The install is that of the build this test belongs to (BUILD is the
 * directory above this binary, SAN what this binary was compiled with), so
 * `make check` has already built what it installs and nothing is rebuilt:
 * it copies files and takes about a second. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#if defined(__SANITIZE_ADDRESS__)
#define BUILD_SAN "1"
#elif defined(__SANITIZE_THREAD__)
#define BUILD_SAN "thread"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUILD_SAN "1"
#elif __has_feature(thread_sanitizer)
#define BUILD_SAN "thread"
#endif
#endif
#ifndef BUILD_SAN
#define BUILD_SAN ""
#endif

static char root[PATH_MAX];   /* the repository: where the Makefile is */
static char bindir[PATH_MAX]; /* the build directory of this test, absolute */
static char build[PATH_MAX];  /* the same, as BUILD= relative to root */
static char dest[64];         /* DESTDIR */

/* The whole output of a shell command (stdout and stderr), and its exit
 * status (-1 when it did not exit normally). The caller frees. */
static char *run(const char *cmd, int *status) {
  size_t len = strlen(cmd) + 16;
  char *full = malloc(len);
  if (!full) return NULL;
  snprintf(full, len, "(%s) 2>&1", cmd);
  FILE *p = popen(full, "r");
  free(full);
  if (!p) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (cap - n < 2) buf = realloc(buf, cap *= 2);
  }
  int st = pclose(p);
  if (buf) buf[n] = '\0';
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

static char *slurp(const char *dir, const char *rel) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[len] = '\0';
  fclose(f);
  return buf;
}

/* `tok` occurs in `text` as a whole word: not next to a character of `word`. */
static bool has_token(const char *text, const char *tok, const char *word) {
  size_t n = strlen(tok);
  for (const char *p = text; (p = strstr(p, tok)); p++) {
    bool before = p > text && strchr(word, p[-1]);
    bool after = p[n] && strchr(word, p[n]);
    if (!before && !after) return true;
  }
  return false;
}

#define OPT_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"
#define VAR_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

/* A set of distinct strings. */
typedef struct {
  char *item[512];
  int n;
} strset;

static void set_add(strset *s, const char *v, size_t len) {
  for (int i = 0; i < s->n; i++)
    if (strlen(s->item[i]) == len && !strncmp(s->item[i], v, len)) return;
  if (s->n < 512) s->item[s->n++] = strndup(v, len);
}

static void set_free(strset *s) {
  for (int i = 0; i < s->n; i++) free(s->item[i]);
  s->n = 0;
}

/* Whether every item of s is a whole word of text; names the first missing. */
static bool all_in(const char *text, const strset *s, const char *word, const char *where) {
  for (int i = 0; i < s->n; i++)
    if (!has_token(text, s->item[i], word)) {
      fprintf(stderr, "    %s does not mention %s\n", where, s->item[i]);
      return false;
    }
  return true;
}

/* Every long option (--name) in text. */
static void long_options(const char *text, strset *out) {
  for (const char *p = text; (p = strstr(p, "--")); p += 2) {
    if (p > text && strchr(OPT_CHARS, p[-1])) continue;
    size_t n = 2;
    while (p[n] && strchr(OPT_CHARS, p[n])) n++;
    if (n > 3 && p[2] != '-') set_add(out, p, n);
  }
}

/* Every NAME in text that starts with prefix and is a whole word. */
static void names(const char *text, const char *prefix, strset *out) {
  size_t k = strlen(prefix), n;
  for (const char *p = text; (p = strstr(p, prefix)) && *p; p += n > k ? n : k + 1) {
    n = 0;
    if (p > text && strchr(VAR_CHARS, p[-1])) continue;
    for (n = k; p[n] && strchr(VAR_CHARS, p[n]);) n++;
    if (n > k) set_add(out, p, n);
  }
}

/* The part of text from the line starting with `start` to the next line
 * starting with `end` (or the end); NULL when there is no start. */
static char *section(const char *text, const char *start, const char *end) {
  const char *s = strstr(text, start);
  while (s && s > text && s[-1] != '\n') s = strstr(s + 1, start);
  if (!s) return NULL;
  const char *e = s + 1;
  while ((e = strstr(e, end)) && e[-1] != '\n') e++;
  return strndup(s, e ? (size_t)(e - s) : strlen(s));
}

/* The man page as text: wide lines, no hyphenation, no overstriking. */
static char *render_man(int *st) {
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "groff -man -Tascii -P-c -P-b -P-o -P-u -rLL=2000n %s/docs/nccltop.1",
           root);
  return run(cmd, st);
}

static void make_install_puts_every_file_in_place(void) {
  char cmd[PATH_MAX * 5];
  snprintf(cmd, sizeof cmd,
           "cd %s && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout 900 make --no-print-directory "
           "install BUILD=%s SAN=%s DESTDIR=%s PREFIX=/usr",
           root, build, BUILD_SAN, dest);
  int st;
  char *out = run(cmd, &st);
  if (st != 0) fprintf(stderr, "    %s\n%s\n", cmd, out ? out : "(no output)");
  free(out);
  CHECK(st == 0);
  static const struct {
    const char *installed, *source;
    unsigned mode;
  } files[] = {
      {"usr/bin/nccltop", "@nccltop", 0755},
      {"usr/lib/libnccl-profiler-nccltop.so", "@libnccl-profiler-nccltop.so", 0755},
      {"usr/share/man/man1/nccltop.1", "docs/nccltop.1", 0644},
      {"usr/share/bash-completion/completions/nccltop", "scripts/nccltop-completion.bash", 0644},
      {"usr/share/nccltop/examples/grafana/nccltop.json", "examples/grafana/nccltop.json", 0644},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[PATH_MAX * 2], src[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dest, files[i].installed);
    if (files[i].source[0] == '@')
      snprintf(src, sizeof src, "%s/%s", bindir, files[i].source + 1);
    else
      snprintf(src, sizeof src, "%s/%s", root, files[i].source);
    struct stat s;
    bool ok = lstat(path, &s) == 0 && S_ISREG(s.st_mode) && (s.st_mode & 07777) == files[i].mode;
    if (!ok) fprintf(stderr, "    %s: missing, or not a file of mode %o\n", path, files[i].mode);
    CHECK(ok);
    snprintf(cmd, sizeof cmd, "cmp %s %s", src, path);
    free(run(cmd, &st));
    CHECK(st == 0);
  }
  /* Every example topology of the repository, as it is. */
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/examples/topologies", root);
  DIR *d = opendir(dir);
  CHECK(d);
  int nxml = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n < 5 || strcmp(de->d_name + n - 4, ".xml") != 0) continue;
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/usr/share/nccltop/examples/topologies/%s", dest, de->d_name);
    struct stat s;
    bool ok = lstat(path, &s) == 0 && S_ISREG(s.st_mode) && (s.st_mode & 07777) == 0644;
    if (ok) {
      snprintf(cmd, sizeof cmd, "cmp %s/%s %s", dir, de->d_name, path);
      free(run(cmd, &st));
      ok = st == 0;
    }
    if (!ok) fprintf(stderr, "    %s: missing, different or not mode 644\n", path);
    if (!ok) break;
    nxml++;
  }
  closedir(d);
  CHECK(de == NULL);
  CHECK(nxml >= 1);
  /* The installed binary runs and is the version the man page names. */
  snprintf(cmd, sizeof cmd, "%s/usr/bin/nccltop --version", dest);
  char *ver = run(cmd, &st);
  CHECK(ver && st == 0 && !strncmp(ver, "nccltop ", 8));
  ver[strcspn(ver, "\n")] = '\0';
  char *man = slurp(root, "docs/nccltop.1");
  char th[128];
  snprintf(th, sizeof th, "\"%s\"", ver);
  bool same = man && strstr(man, th);
  if (!same) fprintf(stderr, "    the man page's .TH does not say %s\n", th);
  free(man);
  free(ver);
  CHECK(same);
}

static void man_page_renders_without_warnings(void) {
  int st;
  char *out = run("command -v groff", &st);
  free(out);
  if (st != 0) fprintf(stderr, "    groff is missing: sh scripts/install-deps.sh installs it\n");
  CHECK(st == 0);
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "groff -man -Tutf8 -ww -z %s/docs/nccltop.1", root);
  out = run(cmd, &st);
  bool clean = out && st == 0 && out[0] == '\0';
  if (!clean) fprintf(stderr, "    %s:\n%s\n", cmd, out ? out : "(no output)");
  free(out);
  CHECK(clean);
  out = render_man(&st);
  bool ok = out && st == 0;
  /* Every section the page promises. */
  static const char *const sections[] = {
      "NAME",        "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS",     "SIMULATOR OPTIONS",
      "KEYS",        "VIEWS",    "ALERTS",      "PHASES",   "ENVIRONMENT", "FILES",
      "EXIT STATUS", "EXAMPLES", "SEE ALSO"};
  for (size_t i = 0; ok && i < sizeof sections / sizeof sections[0]; i++) {
    char line[64];
    snprintf(line, sizeof line, "\n%s\n", sections[i]);
    if (!strstr(out, line)) {
      fprintf(stderr, "    no section %s\n", sections[i]);
      ok = false;
    }
  }
  free(out);
  CHECK(ok);
}

/* Every long option: the usage of nccltop, of topo, record, replay and
 * export, and README's
 * Commands section (its tables of options and simulator options). */
static bool all_options(strset *opts) {
  char cmd[PATH_MAX + 64];
  int st;
  snprintf(cmd, sizeof cmd, "%s/nccltop --help", bindir);
  char *help = run(cmd, &st);
  if (!help || st != 0) return free(help), false;
  long_options(help, opts);
  /* The short options: "  -b, --batch". */
  for (const char *p = help; (p = strstr(p, "\n  -")); p++)
    if (p[4] && p[4] != '-' && p[5] == ',') set_add(opts, p + 3, 2);
  free(help);
  snprintf(cmd, sizeof cmd, "%s/nccltop topo --help", bindir);
  help = run(cmd, &st);
  if (!help || st != 0) return free(help), false;
  long_options(help, opts);
  free(help);
  static const char *const more[] = {"exporter", "record", "replay", "export", "relay", "keygen"};
  for (int i = 0; i < 6; i++) {
    snprintf(cmd, sizeof cmd, "%s/nccltop %s --help", bindir, more[i]);
    help = run(cmd, &st);
    if (!help || st != 0) return free(help), false;
    long_options(help, opts);
    free(help);
  }
  char *readme = slurp(root, "README.md");
  char *cmds = readme ? section(readme, "## Commands", "## ") : NULL;
  if (cmds) long_options(cmds, opts);
  free(cmds);
  free(readme);
  return cmds != NULL && opts->n > 40;
}

static void man_page_names_every_option_and_variable(void) {
  int st;
  char *man = render_man(&st);
  CHECK(man && st == 0);
  strset opts = {0};
  bool ok = all_options(&opts);
  if (!ok) fprintf(stderr, "    could not collect the options\n");
  ok = ok && all_in(man, &opts, OPT_CHARS, "the man page");
  set_free(&opts);
  /* Variables: README's NCCLTOP_*, and every variable the code reads by name. */
  strset vars = {0};
  char *readme = slurp(root, "README.md");
  if (readme) names(readme, "NCCLTOP_", &vars);
  free(readme);
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd,
           "cd %s && grep -rhoE 'getenv\\(\"[A-Z_][A-Z0-9_]*' plugin proto sim tui topo "
           "| cut -d'\"' -f2",
           root);
  char *code = run(cmd, &st);
  if (code && st == 0) names(code, "", &vars);
  free(code);
  if (vars.n < 8) {
    fprintf(stderr, "    could not collect the variables\n");
    ok = false;
  }
  ok = ok && all_in(man, &vars, VAR_CHARS, "the man page");
  set_free(&vars);
  free(man);
  CHECK(ok);
}

/* The keys the man page's KEYS section lists in its .TP tags. */
static void man_keys(const char *src, strset *keys) {
  char *sec = section(src, ".SH KEYS", ".SH ");
  if (!sec) return;
  for (char *p = sec; (p = strstr(p, "\n.TP\n")); p++) {
    char *tag = p + 5, *eol = strchr(tag, '\n');
    if (!eol) break;
    if (*tag == '.') tag += strcspn(tag, " "); /* the font macro */
    char buf[256];
    size_t n = 0;
    for (char *c = tag; c < eol && n < sizeof buf - 1; c++) {
      if (c[0] == '\\' && (c[1] == 'f') && c + 2 < eol) {
        c += 2;
        buf[n++] = ' ';
      } else if (c[0] == '\\' && c[1] == 'e') {
        buf[n++] = '\\';
        c++;
      } else if (c[0] == '\\' && (c[1] == '-' || c[1] == '&')) {
        if (c[1] == '-') buf[n++] = '-';
        c++;
      } else {
        buf[n++] = *c == '"' || *c == ',' || *c == '(' || *c == ')' ? ' ' : *c;
      }
    }
    buf[n] = '\0';
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) set_add(keys, t, strlen(t));
  }
  free(sec);
}

static void man_page_lists_every_key(void) {
  char *src = slurp(root, "docs/nccltop.1");
  CHECK(src);
  strset have = {0}, want = {0};
  man_keys(src, &have);
  free(src);
  /* README's key table: the `quoted` keys of its first column. */
  char *readme = slurp(root, "README.md");
  char *sec = readme ? section(readme, "## Keys", "## ") : NULL;
  for (char *l = sec; l && (l = strstr(l, "\n| ")); l++) {
    char *end = strstr(l + 3, " | ");
    if (!end) continue;
    for (char *q = l; (q = memchr(q, '`', (size_t)(end - q))); q++) {
      char *close = memchr(q + 1, '`', (size_t)(end - q - 1));
      if (!close) break;
      if (close > q + 1) set_add(&want, q + 1, (size_t)(close - q - 1));
      q = close;
    }
  }
  free(sec);
  free(readme);
  int from_readme = want.n;
  /* monitor/screen/keys.c: the help screen's labels ("F1 h ?"), C escapes undone. */
  char *keys = slurp(root, "monitor/screen/keys.c");
  for (char *l = keys; l && (l = strstr(l, "\n    {")); l++) {
    char *eol = strchr(l + 1, '\n'), *q = strchr(l + 6, '"');
    if (!q || (eol && q > eol)) continue;
    char label[128];
    size_t n = 0;
    for (q++; *q && *q != '"' && n < sizeof label - 1; q++) {
      if (*q == '\\' && q[1]) q++;
      label[n++] = *q;
    }
    label[n] = '\0';
    for (char *t = strtok(label, " "); t; t = strtok(NULL, " ")) set_add(&want, t, strlen(t));
  }
  free(keys);
  bool ok = from_readme >= 20 && want.n > from_readme && have.n >= 20;
  if (!ok) fprintf(stderr, "    could not collect the keys (%d, %d)\n", want.n, have.n);
  for (int i = 0; ok && i < want.n; i++) {
    bool found = false;
    for (int j = 0; j < have.n && !found; j++) found = !strcmp(want.item[i], have.item[j]);
    if (!found) {
      fprintf(stderr, "    the man page's KEYS do not list key %s\n", want.item[i]);
      ok = false;
    }
  }
  set_free(&have);
  set_free(&want);
  CHECK(ok);
}

static void completion_parses_defines_and_offers_every_option(void) {
  char cmd[PATH_MAX * 2];
  int st;
  snprintf(cmd, sizeof cmd, "bash -n %s/scripts/nccltop-completion.bash", root);
  char *out = run(cmd, &st);
  if (st != 0) fprintf(stderr, "    %s\n", out ? out : "");
  free(out);
  CHECK(st == 0);
  snprintf(cmd, sizeof cmd,
           "bash -c '. %s/scripts/nccltop-completion.bash && complete -p nccltop && "
           "COMP_WORDS=(nccltop si); COMP_CWORD=1; _nccltop; echo \"[${COMPREPLY[*]}]\"; "
           "COMP_WORDS=(nccltop topo --nccl-version \"\"); COMP_CWORD=3; _nccltop; "
           "echo \"[${COMPREPLY[*]}]\"; "
           "COMP_WORDS=(nccltop exporter --per); COMP_CWORD=2; _nccltop; "
           "echo \"[${COMPREPLY[*]}]\"; cd /; "
           "SLURM_JOB_NODELIST=\"gpu[001-002],b\"; COMP_WORDS=(nccltop --hosts g); COMP_CWORD=2; "
           "_nccltop; echo \"[${COMPREPLY[*]}]\"'",
           root);
  out = run(cmd, &st);
  /* --hosts offers the Slurm job's node list, as written. */
  bool ok = out && st == 0 && strstr(out, "complete -F _nccltop nccltop\n") &&
            strstr(out, "\n[sim]\n") && strstr(out, "\n[2.28 2.30]\n") &&
            strstr(out, "\n[--per-channel]\n") && strstr(out, "\n[gpu[001-002],b]\n");
  if (!ok) fprintf(stderr, "    %s\n", out ? out : "");
  free(out);
  CHECK(ok);
  char *script = slurp(root, "scripts/nccltop-completion.bash");
  CHECK(script);
  strset opts = {0};
  ok = all_options(&opts);
  ok = ok && all_in(script, &opts, OPT_CHARS, "the completion script");
  set_free(&opts);
  free(script);
  CHECK(ok);
}

/* The repository: up from the build directory to the Makefile. */
static bool find_root(void) {
  char exe[PATH_MAX], dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  snprintf(dir, sizeof dir, "%s/..", dirname(exe));
  if (!realpath(dir, bindir)) return false;
  snprintf(root, sizeof root, "%s", bindir);
  for (;;) {
    char mk[PATH_MAX + 16];
    struct stat s;
    snprintf(mk, sizeof mk, "%s/Makefile", root);
    if (stat(mk, &s) == 0) break;
    char *slash = strrchr(root, '/');
    if (!slash || slash == root) return false;
    *slash = '\0';
  }
  size_t k = strlen(root);
  if (strncmp(bindir, root, k) != 0 || bindir[k] != '/') return false;
  snprintf(build, sizeof build, "%s", bindir + k + 1);
  return true;
}

/* `make CFLAGS=-O0` (a packager's or a debugging user's flags) adds to the
 * flags the code needs: C11, position-independent, hidden symbols. A dry
 * run prints the compile line without building. */
static void user_flags_add_to_the_codes_flags(void) {
  char cmd[PATH_MAX * 3];
  snprintf(cmd, sizeof cmd,
           "cd %s && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -n -B "
           "BUILD=%s/flags CFLAGS=-O0 CPPFLAGS=-DNT_USER_FLAG %s/flags/obj/proto/names.o",
           root, dest, dest);
  int st;
  char *out = run(cmd, &st);
  const char *line = out ? strstr(out, "proto/names.c") : NULL;
  bool ok = st == 0 && line;
  static const char *const need[] = {"-std=c11", "-fPIC", "-fvisibility=hidden", "-Wall",
                                     "-DNT_USER_FLAG"};
  for (size_t i = 0; ok && i < sizeof need / sizeof need[0]; i++) ok = strstr(out, need[i]);
  /* The user's -O0 comes after the default -O2, so it is the one in force. */
  const char *o2 = out ? strstr(out, "-O2") : NULL, *o0 = out ? strstr(out, "-O0") : NULL;
  ok = ok && o2 && o0 && o0 > o2;
  if (!ok) fprintf(stderr, "    %s:\n%s\n", cmd, out ? out : "(no output)");
  free(out);
  CHECK(ok);
}

/* `make` needs the build's packages alone: with no test tool on the PATH
 * (clang-format, clang, promtool, groff) its check passes, and it never
 * installs anything (no install-deps in what `make` would run). */
static void make_needs_no_test_tool(void) {
  char bin[PATH_MAX], cmd[PATH_MAX * 4];
  snprintf(bin, sizeof bin, "%s/bin", dest);
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && for t in pkg-config cc gcc make mkdir; do p=$(command -v $t) && "
           "ln -sf \"$p\" %s/$t; done; true",
           bin, bin);
  int st;
  free(run(cmd, &st));
  snprintf(cmd, sizeof cmd,
           "cd %s && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PATH=%s make --no-print-directory "
           "build-deps && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PATH=%s make "
           "--no-print-directory -n -B BUILD=%s/notools all",
           root, bin, bin, dest);
  char *out = run(cmd, &st);
  bool ok = out && st == 0 && !strstr(out, "install-deps") && !strstr(out, "apt-get") &&
            !strstr(out, "clang-format") && !strstr(out, "promtool");
  if (!ok) fprintf(stderr, "    %s (status %d):\n%.2000s\n", cmd, st, out ? out : "(no output)");
  free(out);
  CHECK(ok);
}

/* NCCL_PROFILER_PLUGIN=nccltop makes NCCL dlopen libnccl-profiler-nccltop.so
 * by name, which the loader finds through its cache: `make install` must
 * leave the plugin there. Run for real, in a mount namespace of its own (a
 * copy of /etc, so the system's cache is untouched, and an empty
 * /usr/local), as root only. */
static void the_installed_plugin_is_found_by_name(void) {
  if (geteuid() != 0) {
    TEST_SKIP(the_installed_plugin_is_found_by_name, "needs root (a mount namespace)");
    return;
  }
  char cmd[PATH_MAX * 4];
  int st;
  snprintf(cmd, sizeof cmd, "unshare -m true");
  free(run(cmd, &st));
  if (st != 0) {
    TEST_SKIP(the_installed_plugin_is_found_by_name, "unshare -m is not allowed here");
    return;
  }
  snprintf(cmd, sizeof cmd,
           "unshare -m sh -ec 'mount --make-rprivate / && cp -a /etc %s/etc && "
           "mount --bind %s/etc /etc && mount -t tmpfs nccltop-test /usr/local && cd %s && "
           "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout 900 make --no-print-directory install "
           "BUILD=%s SAN=%s PREFIX=/usr/local >/dev/null && ldconfig -p'",
           dest, dest, root, build, BUILD_SAN);
  char *out = run(cmd, &st);
  bool ok = out && st == 0 && strstr(out, "libnccl-profiler-nccltop.so") &&
            strstr(out, "=> /usr/local/lib/libnccl-profiler-nccltop.so");
  if (!ok) fprintf(stderr, "    %s (status %d):\n%.3000s\n", cmd, st, out ? out : "(no output)");
  free(out);
  CHECK(ok);
}

int main(void) {
  if (!find_root()) {
    fprintf(stderr, "cannot find the repository above this test\n");
    return 1;
  }
  snprintf(dest, sizeof dest, "/tmp/nccltop-install-XXXXXX");
  if (!mkdtemp(dest)) {
    perror("mkdtemp");
    return 1;
  }
  TEST_RUN(make_install_puts_every_file_in_place);
  TEST_RUN(man_page_renders_without_warnings);
  TEST_RUN(man_page_names_every_option_and_variable);
  TEST_RUN(man_page_lists_every_key);
  TEST_RUN(completion_parses_defines_and_offers_every_option);
  TEST_RUN(user_flags_add_to_the_codes_flags);
  TEST_RUN(make_needs_no_test_tool);
  TEST_RUN(the_installed_plugin_is_found_by_name);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dest);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dest);
  return TEST_DONE();
}

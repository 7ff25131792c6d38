/* nccltoprc: read, check and write the screen's settings (settings.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curve.h"
#include "settings.h"
#include "../options.h"

static const char *const view_names[] = {"overview",    "proxy",    "channels",
                                         "collectives", "topology", "environment"};
_Static_assert(sizeof view_names / sizeof view_names[0] == NT_VIEW_HELP,
               "a name for every view but help");
static const char *const sort_names[NT_SETTINGS_NSORTS] = {"rank", "stalled", "host"};

static int find(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

int nt_settings_view_id(const char *name) {
  return find(view_names, NT_VIEW_HELP, name);
}

const char *nt_settings_view_name(int view) {
  return view >= 0 && view < NT_VIEW_HELP ? view_names[view] : NULL;
}

int nt_settings_sort_id(const char *name) {
  return find(sort_names, NT_SETTINGS_NSORTS, name);
}

const char *nt_settings_sort_name(int sort) {
  return sort >= 0 && sort < NT_SETTINGS_NSORTS ? sort_names[sort] : NULL;
}

const char *nt_settings_view_list(void) {
  return "overview, proxy, channels, collectives, topology, environment";
}

const char *nt_settings_sort_list(void) {
  return "rank, stalled, host";
}

/* Printable text (UTF-8 bytes, >= 0x80, are text) shorter than cap. */
static bool printable(const char *text, size_t len, size_t cap) {
  if (len >= cap) return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool nt_settings_filter_ok(const char *text, size_t len) {
  return printable(text, len, NT_SETTINGS_FILTER);
}

bool nt_settings_hide_ok(const char *text, size_t len) {
  return printable(text, len, NT_SETTINGS_HIDE);
}

int nt_settings_path(char *buf, size_t cap) {
  const char *env = getenv("NCCLTOP_CONFIG");
  if (env) {
    if (!*env) return 1;
    int n = snprintf(buf, cap, "%s", env);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
  }
  return nt_curve_config_path("nccltoprc", buf, cap);
}

static void reset(nt_settings *s) {
  memset(s, 0, sizeof *s);
  s->view = s->sort = s->mouse = -1;
}

/* One line (without its newline): 0, or -1 with why. */
static int parse_line(const char *line, size_t len, int lineno, bool *versioned, nt_settings *s,
                      char *err, size_t cap) {
  if (len > NT_SETTINGS_MAX_LINE) {
    snprintf(err, cap, "line %d is longer than %d bytes", lineno, NT_SETTINGS_MAX_LINE);
    return -1;
  }
  if (len && line[len - 1] == '\r') len--; /* written on Windows: still the same settings */
  if (memchr(line, '\0', len)) {
    snprintf(err, cap, "line %d has a NUL byte: not a text file", lineno);
    return -1;
  }
  while (len && *line == ' ') line++, len--;
  if (!len || *line == '#') return 0;
  char key[16], value[NT_SETTINGS_MAX_LINE + 1];
  const char *space = memchr(line, ' ', len);
  size_t k = space ? (size_t)(space - line) : len;
  size_t vlen = space ? len - k - 1 : 0;
  if (k >= sizeof key) {
    snprintf(err, cap, "line %d: '%.15s...' is not a setting", lineno, line);
    return -1;
  }
  memcpy(key, line, k);
  key[k] = '\0';
  memcpy(value, line + len - vlen, vlen);
  value[vlen] = '\0';
  if (!*versioned) {
    char *end = NULL;
    long v = strcmp(key, "version") == 0 && vlen ? strtol(value, &end, 10) : -1;
    if (v < 1 || !end || *end) {
      snprintf(err, cap, "line %d: the first setting must be 'version %d'", lineno,
               NT_SETTINGS_VERSION);
      return -1;
    }
    if (v != NT_SETTINGS_VERSION) {
      snprintf(err, cap, "format version %ld, this nccltop reads version %d", v,
               NT_SETTINGS_VERSION);
      return -1;
    }
    *versioned = true;
    return 0;
  }
  if (!strcmp(key, "view")) {
    if ((s->view = nt_settings_view_id(value)) < 0) {
      snprintf(err, cap, "line %d: view '%.40s' is not one of %s", lineno, value,
               nt_settings_view_list());
      return -1;
    }
  } else if (!strcmp(key, "sort")) {
    if ((s->sort = nt_settings_sort_id(value)) < 0) {
      snprintf(err, cap, "line %d: sort '%.40s' is not one of %s", lineno, value,
               nt_settings_sort_list());
      return -1;
    }
  } else if (!strcmp(key, "filter")) {
    if (!nt_settings_filter_ok(value, vlen)) {
      snprintf(err, cap, "line %d: the filter is longer than %d bytes or not printable", lineno,
               NT_SETTINGS_FILTER - 1);
      return -1;
    }
    memcpy(s->filter, value, vlen + 1);
    s->has_filter = true;
  } else if (!strcmp(key, "hide-columns")) {
    if (!nt_settings_hide_ok(value, vlen)) {
      snprintf(err, cap, "line %d: hide-columns is longer than %d bytes or not printable", lineno,
               NT_SETTINGS_HIDE - 1);
      return -1;
    }
    memcpy(s->hide, value, vlen + 1);
    s->has_hide = true;
  } else if (!strcmp(key, "mouse")) {
    s->mouse = !strcmp(value, "on") ? 1 : !strcmp(value, "off") ? 0 : -2;
    if (s->mouse == -2) {
      snprintf(err, cap, "line %d: mouse '%.40s' is not on or off", lineno, value);
      return -1;
    }
  } else {
    snprintf(err, cap,
             "line %d: '%.40s' is not a setting (view, sort, filter, mouse, hide-columns)", lineno,
             key);
    return -1;
  }
  return 0;
}

int nt_settings_parse(const char *text, size_t len, nt_settings *out, char *err, size_t cap) {
  nt_settings s;
  reset(&s);
  reset(out);
  bool versioned = false;
  int lineno = 1;
  for (size_t at = 0; at < len; lineno++) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
    if (parse_line(text + at, n, lineno, &versioned, &s, err, cap) != 0) return -1;
    at += n + 1;
  }
  if (!versioned) {
    snprintf(err, cap, "no 'version %d' line", NT_SETTINGS_VERSION);
    return -1;
  }
  *out = s;
  return 0;
}

int nt_settings_read(const char *path, nt_settings *out, char *err, size_t cap) {
  reset(out);
  /* Non-blocking: a FIFO put there must not hang the start. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return 1;
    snprintf(err, cap, "cannot read it: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  char text[NT_SETTINGS_MAX_BYTES + 1];
  ssize_t n = -1;
  if (fstat(fd, &st) != 0)
    snprintf(err, cap, "cannot read it: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(err, cap, "not a regular file");
  else if (st.st_size > NT_SETTINGS_MAX_BYTES)
    snprintf(err, cap, "larger than %d bytes", NT_SETTINGS_MAX_BYTES);
  else if ((n = read(fd, text, sizeof text)) < 0)
    snprintf(err, cap, "cannot read it: %s", strerror(errno));
  else if (n > NT_SETTINGS_MAX_BYTES) /* it grew since fstat */
    snprintf(err, cap, "larger than %d bytes", NT_SETTINGS_MAX_BYTES), n = -1;
  close(fd);
  if (n < 0) return -1;
  return nt_settings_parse(text, (size_t)n, out, err, cap);
}

/* mkdir -p of path's directory, each new one 0700. */
static int make_dirs(const char *path, char *err, size_t cap) {
  char dir[1024];
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return 0;
  size_t n = (size_t)(slash - path);
  if (n >= sizeof dir) {
    snprintf(err, cap, "the path is too long");
    return -1;
  }
  memcpy(dir, path, n);
  dir[n] = '\0';
  for (char *p = dir + 1;; p++) {
    bool end = *p == '\0';
    if (*p == '/' || end) {
      *p = '\0';
      if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create %s: %s", dir, strerror(errno));
        return -1;
      }
      if (end) return 0;
      *p = '/';
    }
  }
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len) {
    ssize_t w = write(fd, buf, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

int nt_settings_write(const char *path, const nt_settings *in, char *err, size_t cap) {
  const char *view = nt_settings_view_name(in->view), *sort = nt_settings_sort_name(in->sort);
  if (!view || !sort || !nt_settings_filter_ok(in->filter, strlen(in->filter))) {
    snprintf(err, cap, "nothing valid to write");
    return -1;
  }
  char text[512], tmp[1100];
  int len = snprintf(text, sizeof text,
                     "# nccltop's screen settings, written when they change on the screen.\n"
                     "# --view, --sort, --filter, --no-mouse and --hide-columns win over\n"
                     "# them; --no-config ignores them. mouse off leaves the mouse to the\n"
                     "# terminal; hide-columns names optional columns to leave out.\n"
                     "version %d\nview %s\nsort %s\nfilter %s\nmouse %s\n%s%s%s",
                     NT_SETTINGS_VERSION, view, sort, in->filter, in->mouse == 0 ? "off" : "on",
                     in->has_hide ? "hide-columns " : "", in->has_hide ? in->hide : "",
                     in->has_hide ? "\n" : "");
  int tl = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (len < 0 || (size_t)len >= sizeof text || tl < 0 || (size_t)tl >= sizeof tmp) {
    snprintf(err, cap, "the path is too long");
    return -1;
  }
  if (make_dirs(path, err, cap) != 0) return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    snprintf(err, cap, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  /* fsync before the rename: after a crash the file is the old one or the
   * new one, never empty. */
  bool ok = write_all(fd, text, (size_t)len) == 0 && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0 && ok) ok = false, saved = errno;
  if (ok && rename(tmp, path) != 0) ok = false, saved = errno;
  if (!ok) {
    snprintf(err, cap, "cannot write %s: %s", path, strerror(saved));
    unlink(tmp);
    return -1;
  }
  return 0;
}

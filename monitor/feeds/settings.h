/* The screen's settings file, nccltoprc (htop's htoprc): the view, the rank
 * order and the filter the screen starts with. nccltop writes it whole,
 * atomically (a temporary file renamed over it), when they change on the
 * screen; --view, --sort and --filter win over it.
 *
 * Where: $NCCLTOP_CONFIG (set and empty: no file at all, as --no-config),
 * else $XDG_CONFIG_HOME/nccltop/nccltoprc, else ~/.config/nccltop/nccltoprc.
 *
 * Format: text lines; '#' starts a comment line; the first other line is
 * "version 1", then "view NAME", "sort NAME", "filter TEXT", "mouse on|off",
 * "hide-columns TITLE,..."
 * (each at most once that counts: a later one replaces it). The file is untrusted: at
 * most NT_SETTINGS_MAX_BYTES, lines at most NT_SETTINGS_MAX_LINE bytes,
 * printable text; anything else makes the whole file unusable (one reason,
 * and the caller uses the defaults), never a refusal to start. */
#ifndef NCCLTOP_SETTINGS_H
#define NCCLTOP_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#define NT_SETTINGS_VERSION   1
#define NT_SETTINGS_MAX_BYTES 4096
#define NT_SETTINGS_MAX_LINE  200
#define NT_SETTINGS_FILTER    64  /* the screen's filter buffer, with its NUL */
#define NT_SETTINGS_HIDE      128 /* hide-columns: titles, comma-separated, with its NUL */
/* The rank orders, in the order of the screen's enum nt_sort. */
#define NT_SETTINGS_NSORTS 3

typedef struct {
  int view; /* enum nt_view_id (options.h); -1 not in the file */
  int sort; /* index of nt_settings_sort_name; -1 not in the file */
  bool has_filter;
  char filter[NT_SETTINGS_FILTER];
  int mouse; /* 1 on, 0 off (the terminal keeps its own selection); -1 not in the file */
  bool has_hide;
  char hide[NT_SETTINGS_HIDE]; /* column titles to hide, comma-separated */
} nt_settings;

/* The settings file's path into buf: 0; 1 when there is none
 * (NCCLTOP_CONFIG set and empty); -1 when no path can be made (no $HOME, or
 * too long). */
int nt_settings_path(char *buf, size_t cap);

/* Reads path into *out (fields not in the file stay -1 / false): 0 read; 1
 * no such file (nothing to say); -1 unusable, why in err ("line 3: ..."),
 * *out then as if there were no file. */
int nt_settings_read(const char *path, nt_settings *out, char *err, size_t cap);
/* Parses a file's text (len bytes, not NUL-terminated); as nt_settings_read. */
int nt_settings_parse(const char *text, size_t len, nt_settings *out, char *err, size_t cap);

/* Writes *in (every field, view and sort must be valid; mouse -1 as on) to path through a
 * temporary file in the same directory renamed over it; creates the
 * directory (0700) when missing. 0, or -1 with why in err. */
int nt_settings_write(const char *path, const nt_settings *in, char *err, size_t cap);

/* Names on the command line and in the file: views "overview", "proxy",
 * "channels", "collectives", "topology", "environment"; orders "rank",
 * "stalled", "host". -1 / NULL when unknown. */
int nt_settings_view_id(const char *name);
const char *nt_settings_view_name(int view);
int nt_settings_sort_id(const char *name);
const char *nt_settings_sort_name(int sort);
/* "overview, proxy, ..." for messages. */
const char *nt_settings_view_list(void);
const char *nt_settings_sort_list(void);
/* Whether text may be a filter (printable, shorter than
 * NT_SETTINGS_FILTER); the command line checks --filter with it. */
bool nt_settings_filter_ok(const char *text, size_t len);
/* The same for a hide-columns list (shorter than NT_SETTINGS_HIDE). */
bool nt_settings_hide_ok(const char *text, size_t len);

#endif

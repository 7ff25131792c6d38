/* The chained recording fixture's file (tests/fixtures/recorder*.c write
 * every call they get to $NT_RECORDER_FILE), read back for test_chain.c and
 * test_chain_sim.c. */
#ifndef NCCLTOP_CHAIN_RECFILE_H
#define NCCLTOP_CHAIN_RECFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char rec_path[64];

#define MAXL 16384
static char lines[MAXL][320];
static int nlines;

/* Reads the recorder's lines, without their "<pid> <tid> <clock> ". */
static inline void rec_read(void) {
  nlines = 0;
  FILE *f = fopen(rec_path, "r");
  if (!f) return;
  char buf[1024];
  while (nlines < MAXL && fgets(buf, sizeof buf, f)) {
    char *p = buf;
    for (int k = 0; k < 3 && p; k++) p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
    if (!p) continue;
    p[strcspn(p, "\n")] = '\0';
    snprintf(lines[nlines++], sizeof lines[0], "%s", p);
  }
  fclose(f);
}

/* The line starting "start <type> " number `nth` (0 first), or NULL. */
static inline const char *rec_start(int type, int nth) {
  char pre[32];
  snprintf(pre, sizeof pre, "start %d ", type);
  for (int i = 0; i < nlines; i++)
    if (!strncmp(lines[i], pre, strlen(pre)) && nth-- == 0) return lines[i];
  return NULL;
}

static inline int rec_count(const char *prefix) {
  int n = 0;
  for (int i = 0; i < nlines; i++) n += !strncmp(lines[i], prefix, strlen(prefix));
  return n;
}

static inline unsigned long long rec_hex(const char *l, const char *key) {
  const char *p = l ? strstr(l, key) : NULL;
  return p ? strtoull(p + strlen(key), NULL, 16) : ~0ull;
}

static inline bool has_line(const char *fmt, unsigned long long h) {
  char want[96];
  snprintf(want, sizeof want, fmt, h);
  for (int i = 0; i < nlines; i++)
    if (!strcmp(lines[i], want)) return true;
  return false;
}

/* The parents of the recorder's "start <type>" lines, in order (the file is
 * longer than rec_read takes), and the handle of its first Coll. */
static inline int start_parents(int type, unsigned long long *parents, int cap,
                                unsigned long long *coll) {
  FILE *f = fopen(rec_path, "r");
  char buf[1024], want[32];
  snprintf(want, sizeof want, " start %d ", type);
  int n = 0;
  *coll = 0;
  while (f && fgets(buf, sizeof buf, f)) {
    if (!*coll && strstr(buf, " start 2 ")) *coll = rec_hex(buf, "h=");
    if (strstr(buf, want) && n < cap) parents[n++] = rec_hex(buf, "parent=");
  }
  if (f) fclose(f);
  return n;
}

#endif

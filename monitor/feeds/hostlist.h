/* Host lists in Slurm's hostlist syntax, for finding a job's nodes
 * (`--hosts gpu[001-064,070]`, `--hostfile FILE`).
 *
 * Syntax (as Slurm's hostlist_create, less its multi-dimensional boxes):
 *   list   := entry { sep entry }     sep: ',' or white space (outside brackets)
 *   entry  := name [ ':' port ]       port 1..65535, applies to every name
 *   name   := { chars | '[' ranges ']' }   several bracket groups are allowed
 *   ranges := range { ',' range }     range: N or N-M (N <= M, decimal)
 *   chars  := letters, digits, '.', '-', '_'
 * A group expands in its order; several groups expand with the first one
 * outermost: rack[1-2]-gpu[1-2] is rack1-gpu1, rack1-gpu2, rack2-gpu1,
 * rack2-gpu2. Zero padding as Slurm's: a range is printed at least as wide
 * as its lower bound is written (gpu[008-010] is gpu008..gpu010, gpu[8-10]
 * is gpu8..gpu10). Empty entries (",,") are skipped, duplicates kept
 * (nt_hostlist_uniq drops them). IPv6 literals are not accepted.
 *
 * Everything is bounded: at most NT_HOSTLIST_MAX_HOSTS names in a list,
 * NT_HOSTLIST_MAX_NAME bytes per name, NT_HOSTLIST_MAX_BYTES for all names
 * together and NT_HOSTLIST_MAX_TEXT for a list or a file as written; a range
 * that would go past them is an error, never a huge allocation. Errors are
 * one line naming the 1-based byte position of the mistake. */
#ifndef NCCLTOP_HOSTLIST_H
#define NCCLTOP_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

#define NT_HOSTLIST_MAX_HOSTS  65536
#define NT_HOSTLIST_MAX_NAME   253        /* DNS's limit for a name */
#define NT_HOSTLIST_MAX_BYTES  (4u << 20) /* every name, with its NUL */
#define NT_HOSTLIST_MAX_TEXT   (1u << 20) /* a list as written, or a host file */
#define NT_HOSTLIST_MAX_GROUPS 16         /* bracket groups in one name */
/* The TCP port a relay listens on unless its --listen says otherwise, and
 * so the port a host is reached on when the list gives none. */
#define NT_RELAY_DEFAULT_PORT 7460
#define NT_HOSTS_DEFAULT_PORT NT_RELAY_DEFAULT_PORT

typedef struct nt_hostlist nt_hostlist;

nt_hostlist *nt_hostlist_new(void); /* NULL when out of memory */
void nt_hostlist_free(nt_hostlist *l);

/* Expands text[0..len) (it need not end with a NUL) and appends its names.
 * 0, or -1 with "position N: what is wrong" in err; on an error the list
 * is left as it was. */
int nt_hostlist_add(nt_hostlist *l, const char *text, size_t len, char *err, size_t errlen);
/* A host file: each line a list as above (usually one host or host:port),
 * '#' starts a comment, blank lines are skipped. 0, or -1 with "line L:
 * position N: ..." (or why the file cannot be read) in err; on an error the
 * list is left as it was. A file that names no host is an error. */
int nt_hostlist_add_file(nt_hostlist *l, const char *path, char *err, size_t errlen);

uint32_t nt_hostlist_count(const nt_hostlist *l);
const char *nt_hostlist_host(const nt_hostlist *l, uint32_t i);
uint16_t nt_hostlist_port(const nt_hostlist *l, uint32_t i); /* 0: the list gave none */
/* Drops repeated (name, port) pairs, keeping the first of each in place. */
void nt_hostlist_uniq(nt_hostlist *l);
/* The list written back compactly, in its order ("gpu[001-064,070]",
 * "rack1-gpu[01-04],rack2-gpu[01-04]"): consecutive names with the same
 * prefix, port and padding share brackets. Ends with "..." when cut at cap. */
void nt_hostlist_ranged(const nt_hostlist *l, char *buf, size_t cap);

#endif

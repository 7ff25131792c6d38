/* NCCLTOP_* configuration, read once at the first init. Bad values are
 * logged and replaced by the default: configuration never fails a job. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

/* Event classes nccltop asks for by default: everything the views use, at
 * low cost. KernelCh is left out: it makes NCCL add profiler proxy ops and
 * poll GPU counters (NVIDIA/nccl#1809), so it is opt-in. CeColl is in: a
 * copy-engine collective (2.29+) has no Coll, and NCCL starts its CeColl
 * (one event per operation, ce.c) only if a CE class is asked for; its
 * CeSync and CeBatch children (three more per operation) are not needed. */
#define NT_DEFAULT_MASK                                                                            \
  (NT_EV_COLL | NT_EV_P2P | NT_EV_PROXY_OP | NT_EV_PROXY_STEP | NT_EV_PROXY_CTRL | NT_EV_CE_COLL)

/* A class name (nt_event_class_name), "default" or "all" (every class,
 * the CE ones of profiler v6 included; older releases ignore those bits). */
static int class_bits(const char *name) {
  if (strcasecmp(name, "default") == 0) return NT_DEFAULT_MASK;
  if (strcasecmp(name, "all") == 0) return (1 << NT_EVENT_CLASSES) - 1;
  for (int b = 0; b < NT_EVENT_CLASSES; b++)
    if (strcasecmp(name, nt_event_class_name(b)) == 0) return 1 << b;
  return 0;
}

static bool parse_u32(const char *s, unsigned long lo, unsigned long hi, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 0);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = (uint32_t)v;
  return true;
}

/* "coll,proxystep,kernelch", or a number (NCCL's bit values). */
static bool parse_mask(const char *s, int *out) {
  uint32_t v;
  if (parse_u32(s, 0, (1u << NT_EVENT_CLASSES) - 1, &v)) {
    *out = (int)v;
    return true;
  }
  int mask = 0;
  char buf[256];
  if (strlen(s) >= sizeof buf) return false;
  strcpy(buf, s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",+ ", &save); tok; tok = strtok_r(NULL, ",+ ", &save)) {
    int bits = class_bits(tok);
    if (!bits) return false;
    mask |= bits;
  }
  *out = mask;
  return true;
}

/* The directory the viewer looks in too; read here, on NCCL's thread at
 * init, never on ours. */
static void load_dir(struct nt_config *c) {
  if (nt_endpoint_dir(c->dir, sizeof c->dir) != 0) c->dir[0] = '\0'; /* the publisher says so */
}

/* Where NCCL dumps what the plugin forwards (dump_file.c). */
static void load_dump_path(const char *var, const char *what, char *dst, size_t cap) {
  const char *v = getenv(var);
  if (!v || !*v) return;
  if (strlen(v) < cap)
    strcpy(dst, v);
  else
    nt_log(NT_NCCL_LOG_WARN, "%s is too long; %s not sent", var, what);
}

/* NCCL_* and NCCLTOP_* variables as they are at the first init: what the
 * hello reports. */
static void load_env(struct nt_config *c) {
  for (char **e = environ; e && *e && c->nenv < NT_MAX_ENV; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "NCCL", 4) != 0 || !eq) continue;
    size_t n = (size_t)(eq - *e);
    if (n > NT_MAX_ENV_NAME) continue;
    nt_env_var *v = &c->env[c->nenv++];
    memcpy(v->name, *e, n);
    v->name[n] = '\0';
    snprintf(v->value, sizeof v->value, "%s", eq + 1);
  }
}

void nt_config_load(struct nt_config *c) {
  memset(c, 0, sizeof *c);
  c->event_mask = NT_DEFAULT_MASK;
  c->interval_ms = 100;
  c->reclaim_ms = 60000;
  const char *v = getenv("NCCLTOP_DEBUG");
  c->debug = v && *v && *v != '0'; /* first: the warnings below may need it */
  v = getenv("NCCLTOP_DISABLE");
  c->disabled = v && *v && strcmp(v, "0") != 0;
  if ((v = getenv("NCCLTOP_EVENTS")) && *v && !parse_mask(v, &c->event_mask))
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_EVENTS=%.64s not understood; using the default", v);
  if ((v = getenv("NCCLTOP_INTERVAL_MS")) && *v && !parse_u32(v, 10, 60000, &c->interval_ms))
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_INTERVAL_MS=%.32s out of range 10..60000; using 100", v);
  if ((v = getenv("NCCLTOP_RECLAIM_MS")) && *v && !parse_u32(v, 100, 86400000, &c->reclaim_ms))
    nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_RECLAIM_MS=%.32s out of range; using 60000", v);
  if ((v = getenv("NCCLTOP_CONNECT")) && *v) {
    if (strlen(v) < sizeof c->connect)
      strcpy(c->connect, v);
    else
      nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CONNECT is too long; ignored");
  }
  /* The host name the viewer shows and groups ranks by: the simulator's
   * nodes (`nccltop sim --nodes`), or a container whose own name means
   * nothing to the people watching. */
  if ((v = getenv("NCCLTOP_HOSTNAME")) && *v) {
    if (strlen(v) < sizeof c->host)
      strcpy(c->host, v);
    else
      nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_HOSTNAME is longer than %d bytes; ignored", NT_MAX_HOST);
  }
  if ((v = getenv("NCCLTOP_CHAIN")) && *v) {
    if (strlen(v) < sizeof c->chain)
      strcpy(c->chain, v);
    else
      nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CHAIN is too long; nothing chained");
  }
  if ((v = getenv("NCCLTOP_CLOCK")) && *v) {
    if (strcmp(v, "tsc") == 0)
      c->clock = NT_CLOCK_CHOICE_TSC;
    else if (strcmp(v, "monotonic") == 0)
      c->clock = NT_CLOCK_CHOICE_MONOTONIC;
    else if (strcmp(v, "auto") != 0)
      nt_log(NT_NCCL_LOG_WARN, "NCCLTOP_CLOCK=%.32s not understood (auto, tsc, monotonic); auto",
             v);
  }
  load_dir(c);
  load_dump_path("NCCL_TOPO_DUMP_FILE", "topology", c->topo_path, sizeof c->topo_path);
  load_dump_path("NCCL_GRAPH_DUMP_FILE", "graphs", c->graph_path, sizeof c->graph_path);
  load_env(c);
}

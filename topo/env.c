/* NCCL's environment variables as NCCL reads them: integers through
 * strtoll with base auto-detection (junk reads as 0, an overflow keeps the
 * default), levels by exact name or old integer, NCCL_NETDEVS_POLICY
 * without case. Plus the names of path, node and link types. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

const char *const nt_topo_env_names[] = {"NCCL_P2P_DISABLE",
                                         "NCCL_P2P_LEVEL",
                                         "NCCL_NET_GDR_LEVEL",
                                         "NCCL_NET_GDR_READ",
                                         "NCCL_NET_GDR_C2C",
                                         "NCCL_PXN_DISABLE",
                                         "NCCL_PXN_C2C",
                                         "NCCL_NVB_DISABLE",
                                         "NCCL_NETDEVS_POLICY",
                                         "NCCL_P2P_READ_ENABLE",
                                         "NCCL_P2P_USE_CUDA_MEMCPY",
                                         "NCCL_NET_DISABLE_INTRA",
                                         "NCCL_NET_GDR_MLOPART",
                                         "NCCL_TOPO_SPLIT_MLOPART",
                                         "NCCL_IGNORE_DISABLED_P2P",
                                         "NCCL_MIN_NCHANNELS",
                                         "NCCL_MAX_NCHANNELS",
                                         "NCCL_MIN_NRINGS",
                                         "NCCL_MAX_NRINGS",
                                         "NCCL_CROSS_NIC",
                                         "NCCL_MIN_CTAS",
                                         "NCCL_MAX_CTAS",
                                         NULL};

const char *nt_path_name(int type) {
  static const char *names[NT_PATH_COUNT] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                             "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return type >= 0 && type < NT_PATH_COUNT ? names[type] : "?";
}

const char *nt_node_type_name(int type) {
  static const char *names[NT_NODE_TYPES] = {"GPU", "PCI", "NVS", "CPU",
                                             "NIC", "NET", "DEV", "CXB"};
  return type >= 0 && type < NT_NODE_TYPES ? names[type] : "?";
}

const char *nt_link_name(int type) {
  switch (type) {
  case NT_LINK_LOC: return "LOC";
  case NT_LINK_NVL: return "NVL";
  case NT_LINK_C2C: return "C2C";
  case NT_LINK_PCI: return "PCI";
  case NT_LINK_SYS: return "SYS";
  case NT_LINK_NET: return "NET";
  default: return "?";
  }
}

int nt_path_parse(const char *s) {
  if (!s) return -1;
  for (int i = NT_PATH_LOC; i <= NT_PATH_SYS; i++)
    if (!strcmp(s, nt_path_name(i))) return i;
  if (s[0] < '0' || s[0] > '9') return -1;
  static const int old[] = {NT_PATH_LOC, NT_PATH_PIX, NT_PATH_PXB, NT_PATH_PHB, NT_PATH_SYS};
  long long v = strtoll(s, NULL, 0); /* NCCL: strtol, trailing text ignored */
  return v >= 4 || v < 0 ? NT_PATH_SYS : old[v];
}

int nt_topo_version_parse(const char *s) {
  if (!s) return -1;
  if (!strcmp(s, "2.28") || !strcmp(s, "2.28.9") || !strcmp(s, "228")) return NT_NCCL_228;
  if (!strcmp(s, "2.30") || !strcmp(s, "2.30.7") || !strcmp(s, "230")) return NT_NCCL_230;
  return -1;
}

const char *nt_topo_version_name(int version) {
  return version == NT_NCCL_230 ? "2.30.7" : "2.28.9";
}

void nt_topo_env_defaults(nt_topo_env *e) {
  *e = (nt_topo_env){.p2p_disable = 0,
                     .p2p_level = -1,
                     .gdr_level = -1,
                     .gdr_read = -2,
                     .gdr_c2c = 1,
                     .pxn_disable = 0,
                     .pxn_c2c = 1,
                     .nvb_disable = 0,
                     .version = NT_NCCL_228,
                     .netdevs_policy = NT_NETDEVS_AUTO,
                     .netdevs_max = 0,
                     .p2p_read_enable = -2,
                     .p2p_use_cuda_memcpy = 0,
                     .net_disable_intra = 0,
                     .gdr_mlopart = 0,
                     .split_mlopart = 1,
                     .ignore_disabled_p2p = 0,
                     .min_nchannels = -2,
                     .max_nchannels = -2,
                     .min_nrings = -2,
                     .max_nrings = -2,
                     .cross_nic = 2,
                     .min_ctas = 0,
                     .max_ctas = 0};
}

int nt_topo_gdr_level(const nt_topo_env *e) {
  if (e->gdr_level >= 0) return e->gdr_level;
  return e->version == NT_NCCL_230 && e->gdr_c2c ? NT_PATH_P2C : NT_PATH_PXB;
}

int nt_topo_p2p_level(const nt_topo *t, const nt_topo_env *e) {
  return topo_p2p_level_env(t && t->computed ? t : NULL, e);
}

/* An integer the way NCCL_PARAM reads it. 1 with a note when the text is
 * not a clean number; -1 when NCCL would keep its default (overflow). */
int nt_nccl_param(const char *name, const char *v, long long *out, char *err, size_t errlen) {
  if (!*v) return snprintf(err, errlen, "%s is empty: NCCL keeps its default", name), -1;
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 0);
  if (errno)
    return snprintf(err, errlen, "%s=%.32s is out of range: NCCL keeps its default", name, v), -1;
  *out = x;
  if (end == v || *end)
    return snprintf(err, errlen, "%s=%.32s: NCCL reads it as %lld", name, v, x), 1;
  return 0;
}

/* An NCCL_PARAM kept in an int here: a value beyond it is refused as NCCL
 * would refuse one beyond int64. */
static int read_int(const char *name, const char *v, int *out, char *err, size_t errlen) {
  long long x;
  int rc = nt_nccl_param(name, v, &x, err, errlen);
  if (rc < 0) return rc;
  if (x < INT32_MIN || x > INT32_MAX)
    return snprintf(err, errlen, "%s=%.32s is out of range: NCCL keeps its default", name, v), -1;
  *out = (int)x;
  return rc;
}

static int set_level(nt_topo_env *e, const char *name, const char *v, char *err, size_t errlen) {
  int level = nt_path_parse(v);
  if (level < 0)
    return snprintf(err, errlen,
                    "%s=%.32s: not a level, NCCL ignores it (LOC, NVL, NVB, C2C, PIX, PXB, P2C, "
                    "PXN, PHB or SYS, exact case, or 0..5)",
                    name, v),
           -1;
  if (!strcmp(name, "NCCL_P2P_LEVEL"))
    e->p2p_level = level;
  else
    e->gdr_level = level;
  char *end;
  strtoll(v, &end, 0);
  if (v[0] >= '0' && v[0] <= '9' && *end)
    return snprintf(err, errlen, "%s=%.32s: NCCL reads it as %s", name, v, nt_path_name(level)), 1;
  return 0;
}

/* The n of MAX:n: a whole number from 1 to 1024 and nothing after it. */
static bool max_count(const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || end == s || *end || n < 1 || n > 1024) return false;
  *out = (int)n;
  return true;
}

static int set_policy(nt_topo_env *e, const char *v, char *err, size_t errlen) {
  if (!strcasecmp(v, "AUTO")) {
    e->netdevs_policy = NT_NETDEVS_AUTO;
  } else if (!strcasecmp(v, "ALL")) {
    e->netdevs_policy = NT_NETDEVS_ALL;
  } else if (!strncasecmp(v, "MAX:", 4) && max_count(v + 4, &e->netdevs_max)) {
    e->netdevs_policy = NT_NETDEVS_MAX;
  } else {
    e->netdevs_policy = NT_NETDEVS_AUTO;
    return snprintf(err, errlen,
                    "NCCL_NETDEVS_POLICY=%.32s: not AUTO, ALL or MAX:n; NCCL uses AUTO", v),
           1;
  }
  return 0;
}

int nt_topo_env_set(nt_topo_env *e, const char *a, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  const char *eq = strchr(a, '=');
  if (!eq) return snprintf(err, errlen, "'%.64s' is not NAME=VALUE", a), -1;
  char name[64];
  size_t n = (size_t)(eq - a);
  if (n >= sizeof name) return snprintf(err, errlen, "'%.64s': name too long", a), -1;
  memcpy(name, a, n);
  name[n] = '\0';
  const char *v = eq + 1;
  if (!strcmp(name, "NCCL_P2P_LEVEL") || !strcmp(name, "NCCL_NET_GDR_LEVEL"))
    return set_level(e, name, v, err, errlen);
  if (!strcmp(name, "NCCL_NETDEVS_POLICY")) return set_policy(e, v, err, errlen);
  static const struct {
    const char *name;
    size_t off;
  } ints[] = {{"NCCL_P2P_DISABLE", offsetof(nt_topo_env, p2p_disable)},
              {"NCCL_NET_GDR_READ", offsetof(nt_topo_env, gdr_read)},
              {"NCCL_NET_GDR_C2C", offsetof(nt_topo_env, gdr_c2c)},
              {"NCCL_PXN_DISABLE", offsetof(nt_topo_env, pxn_disable)},
              {"NCCL_PXN_C2C", offsetof(nt_topo_env, pxn_c2c)},
              {"NCCL_NVB_DISABLE", offsetof(nt_topo_env, nvb_disable)},
              {"NCCL_P2P_READ_ENABLE", offsetof(nt_topo_env, p2p_read_enable)},
              {"NCCL_P2P_USE_CUDA_MEMCPY", offsetof(nt_topo_env, p2p_use_cuda_memcpy)},
              {"NCCL_NET_DISABLE_INTRA", offsetof(nt_topo_env, net_disable_intra)},
              {"NCCL_NET_GDR_MLOPART", offsetof(nt_topo_env, gdr_mlopart)},
              {"NCCL_TOPO_SPLIT_MLOPART", offsetof(nt_topo_env, split_mlopart)},
              {"NCCL_IGNORE_DISABLED_P2P", offsetof(nt_topo_env, ignore_disabled_p2p)},
              {"NCCL_MIN_NCHANNELS", offsetof(nt_topo_env, min_nchannels)},
              {"NCCL_MAX_NCHANNELS", offsetof(nt_topo_env, max_nchannels)},
              {"NCCL_MIN_NRINGS", offsetof(nt_topo_env, min_nrings)},
              {"NCCL_MAX_NRINGS", offsetof(nt_topo_env, max_nrings)},
              {"NCCL_CROSS_NIC", offsetof(nt_topo_env, cross_nic)},
              {"NCCL_MIN_CTAS", offsetof(nt_topo_env, min_ctas)},
              {"NCCL_MAX_CTAS", offsetof(nt_topo_env, max_ctas)}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (!strcmp(name, ints[i].name)) {
      int x, rc = read_int(name, v, &x, err, errlen);
      if (rc >= 0) *(int *)((char *)e + ints[i].off) = x;
      return rc;
    }
  return snprintf(err, errlen, "%.64s is not a variable nccltop models", name), -1;
}

int nt_topo_env_from_environ(nt_topo_env *e, char *err, size_t errlen) {
  int applied = 0;
  size_t used = 0;
  if (errlen) err[0] = '\0';
  for (int i = 0; nt_topo_env_names[i]; i++) {
    const char *v = getenv(nt_topo_env_names[i]);
    if (!v) continue;
    char a[320], note[256];
    snprintf(a, sizeof a, "%s=%.255s", nt_topo_env_names[i], v);
    int rc = nt_topo_env_set(e, a, note, sizeof note);
    if (rc >= 0) applied++;
    if (rc != 0 && used < errlen) {
      int w = snprintf(err + used, errlen - used, "%s%s", used ? "\n" : "", note);
      if (w > 0) used += (size_t)w;
    }
  }
  return applied;
}

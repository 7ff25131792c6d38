/* See version.h. */
#include "version.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

int sim_version_parse(const char *s) {
  if (!s || s[0] != '2' || s[1] != '.' || !isdigit((unsigned char)s[2]) ||
      !isdigit((unsigned char)s[3]))
    return -1;
  int minor = (s[2] - '0') * 10 + (s[3] - '0');
  /* An optional patch and package suffix: ".6", ".6-1". */
  const char *p = s + 4;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p)) return -1;
    while (isdigit((unsigned char)*p)) p++;
    if (*p == '-') {
      p++;
      if (!isdigit((unsigned char)*p)) return -1;
      while (isdigit((unsigned char)*p)) p++;
    }
  }
  int v = 200 + minor;
  return *p || v < SIM_NCCL_MIN || v > SIM_NCCL_MAX ? -1 : v;
}

int sim_version_code(int v) {
  /* The tags read for each release's behaviours (docs/NCCL-BEHAVIOUR.md). */
  static const int patch[] = {6, 7, 9, 7, 7, 2}; /* 2.26 .. 2.31 */
  if (v < SIM_NCCL_MIN || v > SIM_NCCL_MAX) return 0;
  return 2 * 10000 + (v - 200) * 100 + patch[v - SIM_NCCL_MIN];
}

/* Written once by a rank before its plugin is loaded, read by the plugin's
 * publisher thread later: the thread's creation orders them. */
static int answered_code;

void sim_version_answer(int v) {
  answered_code = sim_version_code(v);
}

/* NCCL's ncclGetVersion(int *version), ncclResult_t being an int: 0
 * (ncclSuccess), or 4 (ncclInvalidArgument) for NULL, or 3
 * (ncclInternalError) in a process that plays no release. Exported from
 * the executable (the Makefile's SIM_EXPORTS) so dlsym(RTLD_DEFAULT) finds
 * it. */
__attribute__((visibility("default"))) int ncclGetVersion(int *version);
int ncclGetVersion(int *version) {
  if (!version) return 4;
  if (!answered_code) return 3;
  *version = answered_code;
  return 0;
}

int sim_version_max_abi(int v) {
  if (v <= 226) return 3;
  if (v == 227) return 4;
  if (v == 228) return 5;
  if (v <= 230) return 6;
  return 7;
}

int sim_version_of(const nt_sim_config *c) {
  static const int native[8] = {0, 0, 0, 226, 227, 228, 230, 231};
  int v = c->nccl_version ? c->nccl_version : SIM_NCCL_DEFAULT;
  /* --abi N with the default release: the release that loads vN itself. */
  if (c->abi >= 3 && c->abi <= 7 && v == SIM_NCCL_DEFAULT) return native[c->abi];
  return v;
}

const char *sim_version_check(const nt_sim_config *c) {
  int v = sim_version_of(c);
  if (v < SIM_NCCL_MIN || v > SIM_NCCL_MAX) return "nccl_version (226..231)";
  /* A release only looks for the tables it knows. */
  if (c->abi > sim_version_max_abi(v))
    return "abi newer than the NCCL release knows (2.26: 3, 2.27: 4, 2.28: 5, 2.29 and 2.30: 6, "
           "2.31: 7)";
  /* Later releases' v3 shims are not played: 2.26 is the v3 release. */
  if (c->abi == 3 && v != 226) return "abi 3 (played as NCCL 2.26 only)";
  /* userTag exists from ABI v7 (2.31) on. */
  if (c->user_tag && (v < 231 || (c->abi && c->abi < 7)))
    return "user_tag (NCCL 2.31's ABI v7 only: --nccl-version 2.31)";
  /* Symmetric kernels exist from 2.27 on (src/include/symmetric.h@v2.27.7-1). */
  if (c->symmetric && v < 227)
    return "symmetric (NCCL 2.27 or later: 2.26 has no symmetric kernels)";
  return NULL;
}

void sim_version_note_v7(int abi, int v, int rank, bool quiet) {
  if (v < 231 || abi >= 7 || quiet || rank != 0) return;
  fprintf(stderr,
          "nccltop sim: the plugin exports no ncclProfiler_v7; NCCL 2.31 loads its v%d "
          "table through its shim (no userTag, no KernelPhase)\n",
          abi);
}

/* bench_replay --by-kind: where the plugin's time goes, by kind of call.
 *
 * Each ABI call is timed with the CPU's own counter (rdtsc, cntvct_el0;
 * else CLOCK_MONOTONIC ns) and summed per kind: a start by its event's type,
 * a state record by its state (proxy-control states apart), a stop by its
 * event's type, for each of the two plugins. A call over CK_STALL ticks is
 * a stall (a page fault, a preemption, a migration) and is counted apart,
 * so that a rare long wait does not hide in a kind's mean. The timing adds
 * its own cost to every call of both plugins alike: compare the excess,
 * not the totals with the plain rows. Each worker has its own table; the
 * tables are summed when a job is done. */
#ifndef NCCLTOP_BENCH_CALL_KINDS_H
#define NCCLTOP_BENCH_CALL_KINDS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../plugin/nccl_profiler_abi.h"

#define CK_KINDS 256
#define CK_STALL 3000 /* ticks: about 1.2 us at 2.5 GHz */

typedef struct {
  uint64_t ticks[2][CK_KINDS], calls[2][CK_KINDS];
  uint64_t stall_ticks[2][CK_KINDS], stalls[2][CK_KINDS];
} ck_table;

static inline uint64_t ck_now(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

enum { CK_START = 0, CK_RECORD = 64, CK_STOP = 128, CK_CTRL_RECORD = 192 };

static inline unsigned ck_type_bit(uint32_t type) {
  unsigned b = 0;
  while (type > 1 && b < 63) type >>= 1, b++;
  return b;
}

/* verb: CK_START, CK_RECORD or CK_STOP; state for a record. */
static inline uint8_t ck_kind(int verb, uint32_t type, int state) {
  if (verb == CK_RECORD)
    return (uint8_t)((type == NT_EV_PROXY_CTRL ? CK_CTRL_RECORD : CK_RECORD) + (state & 63));
  return (uint8_t)(verb + ck_type_bit(type));
}

static inline void ck_add(ck_table *t, int plugin, uint8_t kind, uint64_t ticks) {
  if (ticks >= CK_STALL) {
    t->stall_ticks[plugin][kind] += ticks;
    t->stalls[plugin][kind]++;
  } else {
    t->ticks[plugin][kind] += ticks;
    t->calls[plugin][kind]++;
  }
}

static inline void ck_sum(ck_table *into, const ck_table *t) {
  for (int p = 0; p < 2; p++)
    for (int k = 0; k < CK_KINDS; k++) {
      into->ticks[p][k] += t->ticks[p][k];
      into->calls[p][k] += t->calls[p][k];
      into->stall_ticks[p][k] += t->stall_ticks[p][k];
      into->stalls[p][k] += t->stalls[p][k];
    }
}

static const char *ck_type_name(unsigned bit) {
  static const char *const names[] = {"Group",     "Coll",      "P2p",      "ProxyOp",
                                      "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
                                      "GroupApi",  "CollApi",   "P2pApi",   "KernelLaunch",
                                      "CeColl",    "CeSync",    "CeBatch",  "KernelPhase"};
  return bit < sizeof names / sizeof names[0] ? names[bit] : "?";
}

static void ck_kind_name(uint8_t kind, char *buf, size_t cap) {
  if (kind >= CK_CTRL_RECORD)
    snprintf(buf, cap, "record ProxyCtrl state %d", kind - CK_CTRL_RECORD);
  else if (kind >= CK_STOP)
    snprintf(buf, cap, "stop %s", ck_type_name(kind - CK_STOP));
  else if (kind >= CK_RECORD)
    snprintf(buf, cap, "record state %d", kind - CK_RECORD);
  else
    snprintf(buf, cap, "start %s", ck_type_name(kind));
}

/* The table of one job: per kind, calls, ticks per call of each plugin (the
 * stalls apart), and the plugin's excess over the baseline in all. */
static void ck_print(const ck_table *t, const char *job) {
  printf("\n%s by kind of call (CPU counter ticks per call; stalls: calls over %d ticks)\n\n"
         "| call | calls | plugin | baseline | excess | excess in all (Mticks) | stalls plugin / "
         "baseline |\n|---|---|---|---|---|---|---|\n",
         job, CK_STALL);
  double all_p = 0, all_b = 0, stall_p = 0, stall_b = 0;
  uint64_t nstall_p = 0, nstall_b = 0;
  for (int k = 0; k < CK_KINDS; k++) {
    uint64_t np = t->calls[0][k], nb = t->calls[1][k];
    all_p += (double)t->ticks[0][k], all_b += (double)t->ticks[1][k];
    stall_p += (double)t->stall_ticks[0][k], stall_b += (double)t->stall_ticks[1][k];
    nstall_p += t->stalls[0][k], nstall_b += t->stalls[1][k];
    if (!np || !nb) continue;
    double p = (double)t->ticks[0][k] / (double)np, b = (double)t->ticks[1][k] / (double)nb;
    char name[48];
    ck_kind_name((uint8_t)k, name, sizeof name);
    printf("| %s | %llu | %.1f | %.1f | %+.1f | %+.2f | %llu / %llu |\n", name,
           (unsigned long long)np, p, b, p - b, (p - b) * (double)np / 1e6,
           (unsigned long long)t->stalls[0][k], (unsigned long long)t->stalls[1][k]);
  }
  printf("\nall calls but stalls: plugin %.1f Mticks, baseline %.1f (%.3fx); stalls: plugin %llu "
         "calls, %.1f Mticks, baseline %llu calls, %.1f Mticks\n",
         all_p / 1e6, all_b / 1e6, all_b > 0 ? all_p / all_b : 0, (unsigned long long)nstall_p,
         stall_p / 1e6, (unsigned long long)nstall_b, stall_b / 1e6);
}

#endif

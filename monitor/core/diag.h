/* The diagnosis: what is wrong with the job now (alerts.c and its parts).
 *
 * It reads the model and never writes it. What it must remember from one
 * call to the next lives here, in an nt_diag: how long ranks have been
 * behind (launch counts, kernels' sync phases), the roots waiting for
 * their waiters' fresh reports, the collectives rows against NCCL's
 * prediction, and the per-process scratch of one call. So each reader that
 * judges a model over time (the screen's frame, record --until-alert, the
 * exporter) keeps its own nt_diag beside the model it reads, and calls it
 * once per frame. A diag given another model than the last (a replay's seek
 * makes a new one) forgets what it remembered of the old one.
 */
#ifndef NCCLTOP_DIAG_H
#define NCCLTOP_DIAG_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

enum nt_alert_kind {
  NT_ALERT_ROOT,      /* where the waits of stalled ranks end */
  NT_ALERT_STALL,     /* a rank's channels stalled in a wait, on a peer */
  NT_ALERT_HUNG_OP,   /* an operation in flight longer than the stall time */
  NT_ALERT_STRAGGLER, /* a rank that launched fewer operations than the others */
  NT_ALERT_SILENT,    /* a publisher that stopped sending (stale) */
  NT_ALERT_DROPS,     /* the plugin dropped events or messages, or this viewer lost
                         some while reading: within the last NT_DROPS_CLEAR_S */
  NT_ALERT_SLOW,      /* collectives below NT_SLOW_SHARE of NCCL's own prediction for
                         NT_SLOW_SUSTAIN_S (alerts_slow.c; never without a model) */
  NT_ALERT_COUNT,
};
const char *nt_alert_kind_name(int kind); /* "root", "stall", ... */
/* The slow alert: a collectives row whose operations, interval after
 * interval, reach less than this share of NCCL's predicted speed
 * (nt_model_op_model) on every rank timed in the interval (its fastest
 * rank below it), for at least this long. */
#define NT_SLOW_SHARE     0.5
#define NT_SLOW_SUSTAIN_S 10.0
/* Rows NCCL's model predicts under this many microseconds per operation
 * are not judged: they are latency-bound, and what the model leaves out
 * (the kernel launch, the proxy thread waking, a few microseconds of
 * timestamps) is a fixed cost of the order of 10 us that halves the share
 * of a 20 us operation on a healthy machine, while it is a tenth or less
 * of one predicted at 100 us. */
#define NT_SLOW_MIN_PREDICTED_US 100.0
/* What an alert rests on beyond its kind: a straggler is late in its
 * launch counts (launches) or the others' kernels wait for it in their
 * sync phases (sync_phases, NCCL 2.31 KernelPhase; also added to a root
 * alert whose rank the others waited for before the hang). */
enum nt_alert_evidence {
  NT_EVIDENCE_NONE,
  NT_EVIDENCE_LAUNCHES,
  NT_EVIDENCE_SYNC_PHASES,
  NT_EVIDENCE_COUNT,
};
const char *nt_alert_evidence_name(int evidence); /* "none", "launches", "sync_phases" */

/* The most ranks one alert lists (a node's straggler line: every rank of
 * the communicator on that host); a host with more stays one line per
 * rank. */
#define NT_ALERT_MAX_RANKS 64

typedef struct {
  int kind;
  const nt_model_process *proc; /* the model's, valid until its next apply/tick; NULL none */
  uint64_t comm_hash;
  int32_t rank, nranks;
  int peer;       /* the rank waited on (stall), -1 none */
  int wait;       /* enum nt_wait (stall, root), NT_WAIT_NONE */
  int func;       /* enum nt_func (straggler, hung op) */
  uint32_t count; /* channels (stall), ranks waiting (root), operations behind */
  double age_s;   /* how long it has been so */
  char text[256]; /* one line for people; every part sanitized */
  int evidence;   /* enum nt_alert_evidence: what a straggler (or root) alert rests on */
  /* Every rank it is about, lowest first: its rank (rank, proc: the
   * first's), or for a node's straggler line every rank of the
   * communicator on that host; none for a line about a process or a
   * communicator's summary. */
  int32_t ranks[NT_ALERT_MAX_RANKS];
  uint32_t nlisted;
  /* A consequence of a root (a stall or stuck operation of a rank that
   * waits on it): the root alert's index in the same list, which comes
   * before it; -1 for the others. The screen folds these under their
   * root. */
  int32_t under;
} nt_alert;
typedef struct nt_diag nt_diag;
nt_diag *nt_diag_new(void); /* NULL on allocation failure */
void nt_diag_free(nt_diag *d);

/* Alerts now, most important first (roots, stalls, hung operations,
 * stragglers, slow communicators, silent publishers, drops). Tracks how long
 * ranks have been behind (in d), so call it once per frame with the same d
 * for the same model. When two or more ranks of a communicator are late by
 * their launch counts on the same function and they are all its ranks on
 * one host, one straggler line names the node (alerts_straggler.c). The
 * alerts' process pointers are m's: valid until m's next apply/tick. */
uint32_t nt_diag_alerts(nt_diag *d, const nt_model *m, uint32_t stall_ms, nt_alert *out,
                        uint32_t cap, double now_s);
/* The same, a node's late ranks kept one straggler alert each (series per
 * rank: the Prometheus exporter). */
uint32_t nt_diag_alerts_per_rank(nt_diag *d, const nt_model *m, uint32_t stall_ms, nt_alert *out,
                                 uint32_t cap, double now_s);

#endif

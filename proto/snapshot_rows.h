/* The snapshot's sections, each described once: one table per section, in
 * wire order, from which the row structs (nccltop_proto.h), the encoder,
 * the decoder with its version gates, each record's length per minor
 * version and the per-field value checks are generated (proto/wire.h), and
 * which tests/test_wire_rows.c checks against PROTOCOL.md.
 *
 * A table is a macro taking five row macros, one per kind of row:
 *
 *   F(type, member, since, read, absent, check)  one scalar field
 *   A(type, member, count, since)                count scalars (no check)
 *   R(bytes, since)                              reserved bytes: written 0
 *   L(member, since)                             u8, the length of name `member`
 *   S(member, max, since)                        name bytes: max + 1 on the wire
 *
 * type: U8, U16, U32, U64 or I32 (little-endian on the wire).
 * since: the minor version whose records first carry the bytes; a record
 *   of minor m is at least as long as the rows with since <= m (newer
 *   minors only append). A reader of an older minor skips the rest.
 * read: the minor version from which a reader reads the field (> since only
 *   when a later minor gave reserved bytes a meaning); before it, and in a
 *   message of an older minor than since, the field reads as `absent`.
 * check: what a reader accepts, else the row is rejected with
 *   "<section> row <i>: bad <label> <value>":
 *   NONE; BELOW(n, label) v < n; UPTO(n, label) v <= n; BELOW_OR(n, x,
 *   label) v < n or v == x; IN(lo, hi, label) lo <= v <= hi; COMM(none_ok)
 *   a communicator index of this snapshot (the viewer indexes the comm
 *   table with it), or NT_NO_COMM when none_ok: proxy and net rows may
 *   belong to no known communicator, other rows always name one (the
 *   plugin drops rows it cannot attribute).
 *   Rules between fields (done <= started, ...) are code in the decoder.
 *
 * Adding a counter: one row at the end of its table with since = the new
 * NT_PROTO_MINOR (and the bump), its line in PROTOCOL.md's table (the test
 * checks both), a case in tests/proto_fixture.h and a tests/test_proto_1_N.c.
 */
#ifndef NCCLTOP_PROTO_SNAPSHOT_ROWS_H
#define NCCLTOP_PROTO_SNAPSHOT_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* Type 1: process-wide counters, cumulative since the plugin loaded. */
#define NT_PROCESS_ROW(F, A, R, L, S)                                                              \
  F(U64, events, 0, 0, 0, NONE)          /* ABI calls handled */                                   \
  F(U64, dropped_events, 0, 0, 0, NONE)  /* handle pool exhausted: NULL handle given to NCCL */    \
  F(U64, unknown_events, 0, 0, 0, NONE)  /* unknown event types or states, ignored */              \
  F(U64, foreign_ops, 0, 0, 0, NONE)     /* PXN proxy ops of another process, counted only */      \
  F(U64, reclaimed_ops, 0, 0, 0, NONE)   /* proxy ops never stopped, reclaimed by age */           \
  F(U64, dropped_rows, 0, 0, 0, NONE)    /* aggregate tables full */                               \
  F(U64, unsent_messages, 0, 0, 0, NONE) /* ZeroMQ refused a message (queue full) */               \
  F(U32, event_mask, 0, 0, 0, NONE)      /* NCCL activation mask now */                            \
  F(U8, abi_version, 0, 0, 0, NONE)      /* profiler ABI NCCL loaded: 3..7 */                      \
  F(U64, dropped_ops, 1, 1, 0, NONE)     /* Coll/P2p not tracked: operation pool full */           \
  F(U64, late_children, 1, 1, 0, NONE)   /* children whose operation was already retired */        \
  F(U64, net_events, 1, 1, 0, NONE)      /* network plugin events seen */                          \
  F(U8, phase, 1, 1, 0, UPTO(NT_MAX_PHASES, "phase")) /* the phase now (nccltop_tag), 0 none */

/* Type 2: communicators; a row's index is its comm_index elsewhere. */
#define NT_COMM_ROW(F, A, R, L, S)                                                                 \
  F(U64, comm_hash, 0, 0, 0, NONE)                                                                 \
  F(I32, rank, 0, 0, 0, NONE)                                                                      \
  F(I32, nranks, 0, 0, 0, NONE)                                                                    \
  F(I32, nnodes, 0, 0, 0, NONE)                                                                    \
  F(U64, colls_enqueued, 0, 0, 0, NONE) /* Coll events started */                                  \
  F(U64, p2ps_enqueued, 0, 0, 0, NONE)  /* P2p events started */                                   \
  F(U64, group_api, 1, 1, 0, NONE)      /* API-level events (profiler v5+) */                      \
  F(U64, coll_api, 1, 1, 0, NONE)                                                                  \
  F(U64, p2p_api, 1, 1, 0, NONE)                                                                   \
  F(U64, kernel_launches, 1, 1, 0, NONE)                                                           \
  F(U64, graph_captured, 1, 1, 0, NONE) /* API calls made while a CUDA graph was captured */       \
  F(U64, api_ns, 1, 1, 0, NONE)         /* time inside CollApi / P2pApi calls */

/* Type 3: proxy progress threads. */
#define NT_PROXY_ROW(F, A, R, L, S)                                                                \
  F(U16, comm_index, 0, 0, 0, COMM(1)) /* into nt_snapshot.comms, or NT_NO_COMM */                 \
  F(U8, state, 0, 0, 0,                                                                            \
    BELOW_OR(NT_PROXY_NSTATES, NT_PROXY_UNKNOWN, "state")) /* nt_proxy_state */                    \
  R(1, 0)                                                                                          \
  F(U32, tid, 0, 0, 0, NONE)            /* OS thread id of the proxy progress thread */            \
  F(U64, state_age_ns, 0, 0, 0, NONE)   /* time in the current state */                            \
  A(U64, state_ns, NT_PROXY_NSTATES, 0) /* cumulative, current state included */                   \
  F(U64, appends, 0, 0, 0, NONE)        /* Append..AppendEnd bursts */                             \
  F(U64, appended_ops, 0, 0, 0, NONE)   /* proxy ops pulled from the pool by them */               \
  F(U64, wakeups, 0, 0, 0, NONE)        /* Sleep..Wakeup bursts */

/* Type 4: channel rows, per (communicator, channel, direction, peer). */
#define NT_CHANNEL_ROW(F, A, R, L, S)                                                              \
  F(U16, comm_index, 0, 0, 0, COMM(0))                                                             \
  F(U8, channel, 0, 0, 0, NONE)                                                                    \
  F(U8, dir, 0, 0, 0, UPTO(NT_DIR_RECV, "direction")) /* enum nt_dir */                            \
  F(I32, peer, 0, 0, 0, NONE)                                                                      \
  A(U64, wait_ns, 3, 0)        /* per wait state of this direction: nt_dir_wait(dir, i) */         \
  F(U64, steps, 0, 0, 0, NONE) /* steps stopped */                                                 \
  F(U64, bytes, 0, 0, 0, NONE) /* transSize at SendWait / RecvFlushWait */                         \
  F(U64, ops_started, 0, 0, 0, NONE)                                                               \
  F(U64, ops_done, 0, 0, 0, NONE) /* in flight = started - done (reclaimed are done) */            \
  F(I32, cur_step, 0, 0, 0, NONE) /* step in progress, -1 when none */                             \
  F(U8, cur_wait, 0, 0, 0, BELOW_OR(NT_WAIT_COUNT, NT_WAIT_NONE, "wait state")) /* enum nt_wait */ \
  R(3, 0)                                                                                          \
  F(U64, cur_wait_age_ns, 0, 0, 0, NONE) /* time in cur_wait */                                    \
  F(U64, progress_age_ns, 0, 0, 0, NONE) /* since the last step state change; UINT64_MAX never */  \
  F(U8, run_state, 2, 2, NT_RUN_UNKNOWN, BELOW(NT_RUN_COUNT, "run state")) /* of work in flight */ \
  R(3, 2)                                                                                          \
  F(I32, relay_rank, 2, 2, -1, IN(-1, INT32_MAX, "relay rank")) /* PXN: whose ops it counts; -1 */

/* Type 5: kernel channel rows. */
#define NT_KERNEL_ROW(F, A, R, L, S)                                                               \
  F(U16, comm_index, 0, 0, 0, COMM(0))                                                             \
  F(U8, channel, 0, 0, 0, NONE)                                                                    \
  R(5, 0)                                                                                          \
  F(U64, count, 0, 0, 0, NONE)         /* KernelCh events stopped */                               \
  F(U64, busy_ns, 0, 0, 0, NONE)       /* sum of GPU stop - start (pTimer pairs) */                \
  F(U64, last_ns, 0, 0, 0, NONE)       /* the last one's GPU duration */                           \
  A(U64, phase_ns, NT_KPHASE_COUNT, 3) /* KernelPhase GPU time per enum nt_kphase */

/* Type 6 (1.1): operation statistics, one row per (communicator, kind,
 * function, algorithm, protocol, size bucket, phase, variant). */
#define NT_OP_ROW(F, A, R, L, S)                                                                   \
  F(U16, comm_index, 1, 1, 0, COMM(0))                                                             \
  F(U8, kind, 1, 1, 0, UPTO(NT_OP_P2P, "kind"))           /* enum nt_op_kind */                    \
  F(U8, func, 1, 1, 0, BELOW(NT_FUNC_COUNT, "function"))  /* enum nt_func */                       \
  F(U8, algo, 1, 1, 0, BELOW(NT_ALGO_COUNT, "algorithm")) /* enum nt_algo */                       \
  F(U8, proto, 1, 1, 0, BELOW(NT_PR_COUNT, "protocol"))   /* enum nt_proto_id */                   \
  F(U8, bucket, 1, 1, 0, UPTO(63, "size bucket"))         /* nt_size_bucket(bytes) */              \
  F(U8, phase, 1, 1, 0, UPTO(NT_MAX_PHASES, "phase"))     /* 0 none, else a phase id */            \
  F(U64, count, 1, 1, 0, NONE)                                                                     \
  F(U64, bytes, 1, 1, 0, NONE) /* count x datatype size, summed */                                 \
  F(U64, done, 1, 1, 0, NONE)  /* with a duration */                                               \
  F(U64, done_bytes, 1, 1, 0, NONE)                                                                \
  F(U64, time_ns, 1, 1, 0, NONE)    /* summed durations of the done ones */                        \
  F(U64, gpu_done, 1, 1, 0, NONE)   /* of which timed by the GPU (kernelch) */                     \
  F(U64, sync_ns, 3, 3, 0, NONE)    /* KernelPhase GPU time in initial + final sync */             \
  F(U64, compute_ns, 3, 3, 0, NONE) /* and in compute; 0 when NCCL reported no phase */            \
  F(U8, variant, 4, 4, 0, UPTO(NT_MAX_VARIANTS, "variant")) /* symmetric kernel's id, 0 none */    \
  R(7, 4)

/* Type 7 (1.1): phase names. */
#define NT_PHASE_ROW(F, A, R, L, S)                                                                \
  F(U8, id, 1, 1, 0, IN(1, NT_MAX_PHASES, "id"))                                                   \
  L(name, 1)                                                                                       \
  F(U8, source, 1, 3, 0, BELOW(NT_PHASE_SOURCE_COUNT, "source")) /* enum nt_phase_source */        \
  R(1, 1)                                                                                          \
  S(name, NT_MAX_PHASE, 1)

/* Type 8 (1.1): the operation log, recently retired or still in flight. */
#define NT_OPLOG_ROW(F, A, R, L, S)                                                                \
  F(U16, comm_index, 1, 1, 0, COMM(0))                                                             \
  F(U8, kind, 1, 1, 0, UPTO(NT_OP_P2P, "kind"))                                                    \
  F(U8, func, 1, 1, 0, BELOW(NT_FUNC_COUNT, "function"))                                           \
  F(U8, algo, 1, 1, 0, BELOW(NT_ALGO_COUNT, "algorithm"))                                          \
  F(U8, proto, 1, 1, 0, BELOW(NT_PR_COUNT, "protocol"))                                            \
  F(U8, dtype, 1, 1, 0, BELOW(NT_DT_COUNT, "datatype"))                                            \
  F(U8, phase, 1, 1, 0, UPTO(NT_MAX_PHASES, "phase"))                                              \
  F(U8, state, 1, 1, 0, BELOW(NT_OPS_COUNT, "state"))      /* enum nt_op_state */                  \
  F(U8, timing, 1, 1, 0, BELOW(NT_TIMING_COUNT, "timing")) /* enum nt_timing */                    \
  F(U8, nchannels, 1, 1, 0, NONE)                                                                  \
  F(U8, nwarps, 1, 1, 0, NONE)                                                                     \
  F(I32, root_peer, 1, 1, 0, NONE) /* root (coll) or peer (p2p); -1 none */                        \
  F(U64, seq, 1, 1, 0, NONE)       /* NCCL's per-function sequence number (colls) */               \
  F(U64, count, 1, 1, 0, NONE)                                                                     \
  F(U64, bytes, 1, 1, 0, NONE)                                                                     \
  F(U64, age_ns, 1, 1, 0, NONE)      /* since it was enqueued, when the snapshot was taken */      \
  F(U64, duration_ns, 1, 1, 0, NONE) /* done: its duration; otherwise 0 */                         \
  F(U32, children, 1, 1, 0, NONE)    /* proxy-op and kernel-channel children */                    \
  F(U32, children_open, 1, 1, 0, NONE)                                                             \
  /* A 1.1 publisher does not say: what is not done may be running. */                             \
  F(U8, run_state, 2, 2, r->state == NT_OPS_DONE ? NT_RUN_IDLE : NT_RUN_UNKNOWN,                   \
    BELOW(NT_RUN_COUNT, "run state"))                                                              \
  F(U8, flags, 2, 2, 0, NONE)                               /* NT_OPF_* */                         \
  F(U8, variant, 2, 4, 0, UPTO(NT_MAX_VARIANTS, "variant")) /* its symmetric kernel's id */        \
  R(5, 2)                                                                                          \
  F(U64, progress_age_ns, 2, 2, UINT64_MAX, NONE) /* since a child last progressed; max never */

/* Type 9 (1.1): per (communicator, function) progress. */
#define NT_SEQ_ROW(F, A, R, L, S)                                                                  \
  F(U16, comm_index, 1, 1, 0, COMM(0))                                                             \
  F(U8, func, 1, 1, 0, BELOW(NT_FUNC_COUNT, "function"))                                           \
  R(5, 1)                                                                                          \
  F(U64, launched, 1, 1, 0, NONE)           /* highest NCCL seqNumber seen + 1 */                  \
  F(U64, done, 1, 1, 0, NONE)               /* operations of this function done */                 \
  F(U64, last_launch_age_ns, 1, 1, 0, NONE) /* since the last one was enqueued */

/* Type 10 (1.1): network plugin events, per (communicator, device, QP or
 * socket). */
#define NT_NET_ROW(F, A, R, L, S)                                                                  \
  F(U16, comm_index, 1, 1, 0, COMM(1))                          /* NT_NO_COMM allowed */           \
  F(U8, type, 1, 1, 0, IN(NT_NET_IB_QP, NT_NET_SOCKET, "type")) /* enum nt_net_type */             \
  R(1, 1)                                                                                          \
  F(I32, device, 1, 1, 0, NONE) /* IB device index; -1 for sockets */                              \
  F(U32, id, 1, 1, 0, NONE)     /* QP number, or socket fd */                                      \
  R(4, 1)                                                                                          \
  F(U64, count, 1, 1, 0, NONE) /* events stopped */                                                \
  F(U64, bytes, 1, 1, 0, NONE)                                                                     \
  F(U64, busy_ns, 1, 1, 0, NONE) /* summed start..stop */                                          \
  F(U64, in_flight, 1, 1, 0, NONE)

/* Type 11 (1.4): kernel variant names. */
#define NT_VARIANT_ROW(F, A, R, L, S)                                                              \
  F(U8, id, 4, 4, 0, IN(1, NT_MAX_VARIANTS, "id"))                                                 \
  L(name, 4)                                                                                       \
  R(2, 4)                                                                                          \
  S(name, NT_MAX_VARIANT, 4)

/* ---- the row structs: each table's members, in wire order ---- */

#define NT_CTYPE_U8  uint8_t
#define NT_CTYPE_U16 uint16_t
#define NT_CTYPE_U32 uint32_t
#define NT_CTYPE_U64 uint64_t
#define NT_CTYPE_I32 int32_t

#define NT_MEMBER_F(type, m, since, read, absent, check) NT_CTYPE_##type m;
#define NT_MEMBER_A(type, m, n, since)                   NT_CTYPE_##type m[n];
#define NT_MEMBER_R(bytes, since)
#define NT_MEMBER_L(m, since)
#define NT_MEMBER_S(m, max, since) char m[(max) + 1];
#define NT_ROW_STRUCT(TABLE)                                                                       \
  struct {                                                                                         \
    TABLE(NT_MEMBER_F, NT_MEMBER_A, NT_MEMBER_R, NT_MEMBER_L, NT_MEMBER_S)                         \
  }

/* ---- the tables as data: for tests (PROTOCOL.md) and readers ---- */

enum nt_wire_kind {
  NT_WK_U8,
  NT_WK_U16,
  NT_WK_U32,
  NT_WK_U64,
  NT_WK_I32,
  NT_WK_RESERVED,
  NT_WK_NAME_LEN,
  NT_WK_NAME
};
/* One row of a table; a field's offset is the sum of the sizes before it. */
typedef struct {
  const char *member; /* NULL for reserved bytes */
  enum nt_wire_kind kind;
  uint16_t size;       /* bytes on the wire: count x element, or the reserved bytes */
  uint16_t count;      /* elements: 1, or an array's length */
  uint8_t since, read; /* the table's columns (read = since but for F rows) */
} nt_wire_field;

/* The fields of section `type` (1..11) in wire order; NULL, 0 for others. */
const nt_wire_field *nt_wire_fields(int type, size_t *n);

#endif

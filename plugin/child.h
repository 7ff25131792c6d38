/* A task's children as the plugin keeps them: a ProxyOp with its steps,
 * and a kernel channel's event with its KernelPhase, each in a slot of the
 * pool of the thread that started it (events.c, proxyop_pool.c,
 * kernel_events.c). NCCL's handles are faces of a slot, a new one at each
 * use, so a handle NCCL keeps using after its stop meets a stale face, not
 * the event that took the slot since. */
#ifndef NCCLTOP_PLUGIN_CHILD_H
#define NCCLTOP_PLUGIN_CHILD_H

#include <stdatomic.h>
#include <stdint.h>

/* Included by internal.h, after the pool sizes (NT_STEPS_PER_OP). */
struct nt_chan_row;
struct nt_context;
struct nt_task;

struct nt_op;
struct nt_step {
  uint8_t kind; /* NT_K_STEP */
  uint8_t wait; /* enum nt_wait, NT_WAIT_NONE before the first state */
  uint8_t bytes_counted;
  uint8_t active;
  int32_t step;
  const void *self;
  uint64_t since_ns;
  struct nt_op *op;
};

/* A ProxyOp handle is one of its op's faces, a new one at each start (as a
 * KernelCh's): a stop, or the reclaim of an op NCCL still holds (P2),
 * clears the face's self, so NCCL's late stop or state record on the old
 * handle fails the handle check instead of ending the op that took the slot. */
#define NT_OP_FACES 4
struct nt_oface {
  uint8_t kind; /* NT_K_OP */
  uint8_t face; /* its index in the op's faces */
  const void *self;
};
struct nt_op {
  struct nt_oface faces[NT_OP_FACES]; /* first: a face finds its op */
  uint8_t cur_face;
  _Atomic uint8_t in_use;
  uint8_t dir;
  uint8_t begun; /* a step left its first wait, or one stopped */
  /* A ProxyStep or a ProxyOp state came: only the net transport gives
   * either (InProgress on its first progress pass from 2.27, whatever the
   * mask; 2.26's per-step op states), so it will be stopped (proxyop_pool.c). */
  uint8_t is_net;
  uint8_t stepped; /* a step of it started: its task's first_step_ns is set */
  /* Its steps now active, one bit per slot (a step's own `active` says the
   * same): what ends with the op is found here, in the op's first line,
   * instead of by reading its 16 steps (8 cache lines, cold by then). */
  uint16_t live_steps;
  uint64_t start_ns;
  uint64_t v3_bytes;         /* NCCL 2.26: the op's running transSize counted so far */
  uint64_t progress_told_ns; /* last progress time written to its task */
  struct nt_chan_row *row;
  struct nt_task *task; /* the operation it belongs to, NULL unknown */
  struct nt_step steps[NT_STEPS_PER_OP];
};

/* A KernelCh handle is one of its event's faces, a new one at each start;
 * a stop clears the face's self, so a stale handle (K3: NCCL <= 2.30 records
 * on and stops sub->kernelEventHandle again after the stop) fails the
 * handle check, also once the slot is in use again. */
#define NT_KERNEL_FACES 8
struct nt_kface {
  uint8_t kind; /* NT_K_KERNEL */
  uint8_t face; /* its index in the event's faces */
  const void *self;
};
/* NCCL 2.31 starts, records and stops a channel's KernelPhase events one
 * after the other (start, KernelPhaseStop, stop), all before the
 * channel's KernelCh stop: one phase handle per kernel event does. */
struct nt_kphase_ev {
  uint8_t kind;  /* NT_K_PHASE */
  uint8_t phase; /* enum nt_kphase */
  const void *self;
  uint64_t start_ptimer, stop_ptimer;
};
struct nt_kernel_event {
  struct nt_kface faces[NT_KERNEL_FACES];
  struct nt_kphase_ev ph;
  _Atomic uint8_t in_use;
  uint8_t channel;
  uint8_t cur_face;
  struct nt_context *ctx;
  struct nt_task *task;
  uint64_t start_ptimer, stop_ptimer;
};

#endif

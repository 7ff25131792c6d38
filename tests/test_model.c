/* The viewer's model, driven directly with hand-built snapshots: derived
 * numbers, sequence gaps, restarts, staleness, limits and hostile strings.
 * (The model behind real sockets: test_source.c; its output: test_batch.c.) */
#include <stdlib.h>

#include "testlib.h"
#include "../monitor/core/model.h"

#define HASH_A 0xa0a0a0a0a0a0a0a0ull
#define HASH_B 0x0b0b0b0b0b0b0b0bull

/* One process, one communicator (HASH_A, rank 1 of 2), a proxy thread and a
 * send row whose counters grow with `k`. */
static nt_snapshot *snap(uint32_t pid, uint64_t seq, uint64_t mono_ns, uint64_t k) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node1");
  s->pid = pid;
  s->seq = seq;
  s->mono_ns = mono_ns;
  s->wall_ns = 1700000000000000000ull + mono_ns;
  s->interval_ms = 100;
  s->ncomms = 1;
  s->comms[0] = (nt_comm_row){.comm_hash = HASH_A, .rank = 1, .nranks = 2, .nnodes = 1};
  s->nproxy = 1;
  s->proxy[0] =
      (nt_proxy_row){.tid = 7, .state = NT_PROXY_ACTIVE, .state_ns = {k * 250, k * 750, 0, 0, 0}};
  s->nchannels = 1;
  s->channels[0] = (nt_channel_row){.channel = 3,
                                    .dir = NT_DIR_SEND,
                                    .peer = 0,
                                    .wait_ns = {k, k * 5, k * 2},
                                    .steps = k,
                                    .bytes = k * 1000,
                                    .ops_started = 3,
                                    .ops_done = 2,
                                    .cur_step = 4,
                                    .cur_wait = NT_WAIT_SEND_PEER,
                                    .progress_age_ns = 0};
  return s;
}

static const nt_model_process *only(nt_model *m) {
  return nt_model_nprocesses(m) == 1 ? nt_model_process_at(m, 0) : NULL;
}

static void rates_and_shares_are_exact_over_the_last_interval(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000000000ull, 100), *b = snap(10, 2, 1500000000ull, 600);
  CHECK(m && a && b);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 7.0) == 0); /* arrival time does not matter */
  const nt_model_process *p = only(m);
  CHECK(p != NULL);
  double sps, bps;
  nt_model_channel_rates(p, &p->cur->channels[0], &sps, &bps);
  CHECK(sps == 1000.0); /* 500 steps in 0.5 s of the publisher's clock */
  CHECK(bps == 1000000.0);
  double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
  nt_model_proxy_shares(p, &p->cur->proxy[0], last, total);
  CHECK(last[NT_PROXY_IDLE] == 0.25 && last[NT_PROXY_ACTIVE] == 0.75);
  CHECK(last[NT_PROXY_SLEEP] == 0 && last[NT_PROXY_WAKEUP] == 0 && last[NT_PROXY_APPEND] == 0);
  CHECK(total[NT_PROXY_IDLE] == 0.25 && total[NT_PROXY_ACTIVE] == 0.75);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void rows_are_matched_by_key_not_by_position(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000000000ull, 100), *b = snap(10, 2, 2000000000ull, 300);
  CHECK(m && a && b);
  /* b: a new communicator appears first (every comm_index shifts), a recv
   * row is listed before the send row, and a new row appears. */
  b->ncomms = 2;
  b->comms[1] = b->comms[0];
  b->comms[0] = (nt_comm_row){.comm_hash = HASH_B, .rank = 0, .nranks = 4, .nnodes = 1};
  nt_channel_row send = b->channels[0];
  send.comm_index = 1;
  b->proxy[0].comm_index = 1;
  b->nchannels = 3;
  b->channels[0] = (nt_channel_row){.comm_index = 1, .channel = 3, .dir = NT_DIR_RECV, .steps = 9};
  b->channels[1] = (nt_channel_row){.comm_index = 0, .channel = 3, .dir = NT_DIR_SEND, .steps = 9};
  b->channels[2] = send;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 2.0) == 0);
  const nt_model_process *p = only(m);
  CHECK(p && p->cur->nchannels == 3);
  int seen = 0;
  for (uint32_t i = 0; i < p->cur->nchannels; i++) {
    const nt_channel_row *r = &p->cur->channels[i];
    double sps, bps;
    nt_model_channel_rates(p, r, &sps, &bps);
    if (p->cur->comms[r->comm_index].comm_hash == HASH_A && r->dir == NT_DIR_SEND) {
      CHECK(sps == 200.0 && bps == 200000.0); /* 200 steps in 1 s */
      CHECK(nt_model_channel_dominant_wait(p, r) == NT_WAIT_SEND_PEER);
      seen++;
    } else {
      CHECK(sps == 0 && bps == 0); /* new rows: nothing to compare with */
    }
  }
  CHECK(seen == 1);
  /* A copy of a row (not a pointer into the model) is matched too. */
  nt_channel_row copy = send;
  double sps, bps;
  nt_model_channel_rates(p, &copy, &sps, &bps);
  CHECK(sps == 200.0);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void dominant_wait_is_the_largest_growth_else_the_largest_total(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 1), *b = snap(10, 2, 2000, 1);
  CHECK(m && a && b);
  a->channels[0].wait_ns[0] = 1000000, a->channels[0].wait_ns[1] = 10,
  a->channels[0].wait_ns[2] = 0;
  b->channels[0].wait_ns[0] = 1000000, b->channels[0].wait_ns[1] = 30,
  b->channels[0].wait_ns[2] = 5;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  const nt_model_process *p = only(m);
  CHECK(p != NULL);
  /* One snapshot only: the largest total. */
  CHECK(nt_model_channel_dominant_wait(p, &p->cur->channels[0]) == NT_WAIT_SEND_GPU);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 2.0) == 0);
  CHECK(nt_model_channel_dominant_wait(p, &p->cur->channels[0]) == NT_WAIT_SEND_PEER);
  /* Nothing moved in the last interval: the largest total again. */
  b->seq = 3, b->mono_ns = 3000;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 3.0) == 0);
  CHECK(nt_model_channel_dominant_wait(p, &p->cur->channels[0]) == NT_WAIT_SEND_GPU);
  /* A recv row names recv waits. */
  b->seq = 4, b->channels[0].dir = NT_DIR_RECV;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 4.0) == 0);
  CHECK(nt_model_channel_dominant_wait(p, &p->cur->channels[0]) == NT_WAIT_RECV_NET);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void shares_fall_back_to_since_first_when_nothing_moved(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 4), *b = snap(10, 2, 2000, 4);
  CHECK(m && a && b);
  a->proxy[0].state_ns[NT_PROXY_SLEEP] = 1000; /* before we attached: only in the total */
  b->proxy[0] = a->proxy[0];
  b->proxy[0].state_ns[NT_PROXY_APPEND] = 100;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 2.0) == 0);
  b->seq = 3; /* the same counters again */
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 3.0) == 0);
  const nt_model_process *p = only(m);
  double last[NT_PROXY_NSTATES], total[NT_PROXY_NSTATES];
  nt_model_proxy_shares(p, &p->cur->proxy[0], last, total);
  CHECK(last[NT_PROXY_APPEND] == 1.0); /* since the first snapshot */
  CHECK(total[NT_PROXY_SLEEP] == 1000.0 / 5100.0);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void stalled_needs_ops_in_flight_and_old_progress(void) {
  nt_channel_row r = {.ops_started = 3, .ops_done = 2, .progress_age_ns = 1999999999ull};
  CHECK(!nt_model_channel_stalled(&r, 2000));
  r.progress_age_ns = 2000000000ull;
  CHECK(nt_model_channel_stalled(&r, 2000));
  r.ops_done = 3; /* nothing in flight: idle, not stalled */
  CHECK(!nt_model_channel_stalled(&r, 2000));
  r.ops_done = 2, r.progress_age_ns = UINT64_MAX; /* never progressed: age unknown */
  CHECK(!nt_model_channel_stalled(&r, 2000));
}

static void sequence_gaps_are_lost_messages_not_lost_totals(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5), *b = snap(10, 5, 5000, 50);
  CHECK(m && a && b);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 1.4) == 0);
  const nt_model_process *p = only(m);
  CHECK_EQ_U64(p->lost_messages, 3);
  CHECK_EQ_U64(p->cur->channels[0].steps, 50);             /* cumulative: nothing lost */
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 1.5) == 0); /* the same message again */
  CHECK_EQ_U64(p->duplicates, 1);
  CHECK_EQ_U64(p->cur->seq, 5);
  CHECK(p->prev && p->prev->seq == 1); /* the duplicate did not rotate anything */
  CHECK_EQ_U64(p->lost_messages, 3);
  CHECK_EQ_U64(p->messages, 3);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_model_free(m);
}

static void a_restarted_publisher_starts_over_and_a_late_copy_is_ignored(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 40, 5000000000ull, 500), *b = snap(10, 41, 5100000000ull, 510);
  nt_snapshot *late = snap(10, 39, 4900000000ull, 490);
  nt_snapshot *again = snap(10, 1, 9000000000ull, 2); /* same pid, seq from 1, clock on */
  CHECK(m && a && b && late && again);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, b, 1.1) == 0);
  const nt_model_process *p = only(m);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, late, 1.2) == 0);
  CHECK_EQ_U64(p->cur->seq, 41);
  CHECK_EQ_U64(p->duplicates, 1);
  CHECK_EQ_U64(p->restarts, 0);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, again, 2.0) == 0);
  CHECK_EQ_U64(p->restarts, 1);
  CHECK_EQ_U64(p->cur->seq, 1);
  CHECK_EQ_U64(p->cur->channels[0].steps, 2);
  CHECK(p->prev == NULL); /* no rate across two incarnations */
  CHECK(p->first && p->first->seq == 1);
  CHECK_EQ_U64(p->lost_messages, 0);
  double sps, bps;
  nt_model_channel_rates(p, &p->cur->channels[0], &sps, &bps);
  CHECK(sps == 0 && bps == 0);
  /* After a reboot the monotonic clock starts low; the wall clock moved on. */
  nt_snapshot *reboot = snap(10, 1, 1000, 1);
  CHECK(reboot != NULL);
  reboot->wall_ns = again->wall_ns + 3600000000000ull;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, reboot, 3.0) == 0);
  CHECK_EQ_U64(p->restarts, 2);
  CHECK_EQ_U64(p->cur->channels[0].steps, 1);
  CHECK(nt_model_nprocesses(m) == 1);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_snapshot_free(late);
  nt_snapshot_free(again);
  nt_snapshot_free(reboot);
  nt_model_free(m);
}

static void silent_publishers_turn_stale_after_three_intervals_and_stay_visible(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5);
  CHECK(m && a);
  a->interval_ms = 1000;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 10.0) == 0);
  const nt_model_process *p = only(m);
  nt_model_tick(m, 12.9);
  CHECK(!p->stale);
  nt_model_tick(m, 13.1);
  CHECK(p->stale);
  nt_model_rank r[2];
  CHECK(nt_model_ranks(m, r, 2) == 1); /* still listed, marked */
  CHECK_EQ_U64(p->cur->channels[0].steps, 5);
  a->seq = 2;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 13.2) == 0);
  CHECK(!p->stale); /* alive again */
  /* A fast publisher is not stale before NT_STALE_MIN_S. */
  a->seq = 3, a->interval_ms = 100;
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 20.0) == 0);
  nt_model_tick(m, 20.0 + NT_STALE_MIN_S - 0.1);
  CHECK(!p->stale);
  nt_model_tick(m, 20.0 + NT_STALE_MIN_S + 0.1);
  CHECK(p->stale);
  nt_snapshot_free(a);
  nt_model_free(m);
}

static void ended_processes_stay_visible_then_are_dropped(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5), *b = snap(11, 1, 1000, 5), *c = snap(12, 1, 1000, 5);
  nt_snapshot *d = snap(11, 1, 1000, 5);
  CHECK(m && a && b && c && d);
  a->final = 1;
  CHECK(nt_model_apply_snapshot(m, "ipc:///d/10.sock", 10, a, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ipc:///d/11.sock", 11, b, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "tcp://relay:5555", 0, c, 1.0) == 0);
  CHECK(nt_model_apply_snapshot(m, "ipc:///d/11.7.sock", 11, d, 1.0) ==
        0); /* pid 11, namespace 7 */
  CHECK(nt_model_process_at(m, 0)->ended);
  nt_model_endpoint_gone(m, "ipc:///d/11.sock");
  nt_model_endpoint_gone(m, "tcp://relay:5555"); /* a relay's pids are not ours to judge */
  CHECK(nt_model_process_at(m, 1)->ended);
  CHECK(!nt_model_process_at(m, 2)->ended);
  CHECK(!nt_model_process_at(m, 3)->ended); /* the same pid in another namespace lives on */
  uint32_t gen = nt_model_generation(m);
  nt_model_tick(m, 1.0 + NT_MODEL_ENDED_KEEP_S - 1);
  CHECK(nt_model_nprocesses(m) == 4);
  nt_model_tick(m, 1.0 + NT_MODEL_ENDED_KEEP_S + 1);
  CHECK(nt_model_nprocesses(m) == 2);
  CHECK(nt_model_process_at(m, 0)->pid == 12); /* stale, not ended: kept */
  CHECK(nt_model_process_at(m, 0)->stale);
  CHECK(nt_model_generation(m) != gen);
  nt_snapshot_free(a);
  nt_snapshot_free(b);
  nt_snapshot_free(c);
  nt_snapshot_free(d);
  nt_model_free(m);
}

static void a_bad_message_noted_keeps_existing_data(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5);
  CHECK(m && a);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0);
  nt_model_note_error(m, "ipc:///d/66.sock", "snapshot: bad \x1b]0;title\x07 stuff", 2.0);
  nt_model_note_problem(m, "endpoints", "directory missing", 2.1);
  CHECK_EQ_U64(nt_model_total_bad(m), 1);
  CHECK_EQ_U64(nt_model_total_errors(m), 2);
  CHECK_EQ_U64(nt_model_total_messages(m), 1);
  CHECK(nt_model_nerrors(m) == 2);
  CHECK_STR(nt_model_error_at(m, 0)->text, "directory missing"); /* newest first */
  CHECK_STR(nt_model_error_at(m, 1)->text, "snapshot: bad \\x1B]0;title\\x07 stuff");
  CHECK_STR(nt_model_error_at(m, 1)->source, "ipc:///d/66.sock");
  nt_model_rank r[2];
  CHECK(nt_model_ranks(m, r, 2) == 1);
  CHECK_EQ_U64(r[0].proc->cur->channels[0].steps, 5);
  /* The ring keeps the newest NT_MODEL_ERRORS. */
  for (int i = 0; i < NT_MODEL_ERRORS + 5; i++) {
    char t[32];
    snprintf(t, sizeof t, "error %d", i);
    nt_model_note_error(m, "x", t, 3.0);
  }
  CHECK(nt_model_nerrors(m) == NT_MODEL_ERRORS);
  char want[32];
  snprintf(want, sizeof want, "error %d", NT_MODEL_ERRORS + 4);
  CHECK_STR(nt_model_error_at(m, 0)->text, want);
  CHECK(nt_model_error_at(m, NT_MODEL_ERRORS) == NULL);
  nt_snapshot_free(a);
  nt_model_free(m);
}

static void ranks_are_sorted_by_communicator_then_rank(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  /* Processes arrive in a shuffled order, each in both communicators. */
  static const int order[4] = {2, 0, 3, 1};
  for (int i = 0; i < 4; i++) {
    nt_snapshot *s = snap(100 + (uint32_t)order[i], 1, 1000, 1);
    CHECK(s != NULL);
    s->ncomms = 2;
    s->comms[0] = (nt_comm_row){.comm_hash = HASH_A, .rank = 3 - order[i], .nranks = 4};
    s->comms[1] = (nt_comm_row){.comm_hash = HASH_B, .rank = order[i], .nranks = 4};
    int rc = nt_model_apply_snapshot(m, "ep", 0, s, 1.0);
    nt_snapshot_free(s);
    CHECK(rc == 0);
  }
  nt_comm_info ci = {.pid = 101, .comm_hash = HASH_B, .name = "tp"};
  CHECK(nt_model_apply_comm(m, "ep", 0, &ci, 1.0) == 0);
  nt_model_rank r[16];
  CHECK(nt_model_ranks(m, r, 16) == 8);
  for (int i = 0; i < 8; i++) {
    CHECK(r[i].comm_hash == (i < 4 ? HASH_B : HASH_A)); /* HASH_B < HASH_A */
    CHECK(r[i].rank == i % 4);
    CHECK_STR(r[i].comm_name, r[i].comm_hash == HASH_B && r[i].proc->pid == 101 ? "tp" : "");
  }
  CHECK(r[0].proc->pid == 100 && r[4].proc->pid == 103);
  CHECK(nt_model_ranks(m, r, 3) == 3); /* bounded by the caller's room */
  nt_model_free(m);
}

static void processes_beyond_the_limit_are_refused_cleanly(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  nt_comm_info ci = {.comm_hash = HASH_A, .name = "c"};
  /* Two --connect sources, each with all it may have, fill the table. */
  for (uint32_t i = 0; i < NT_MODEL_MAX_PROCESSES; i++) {
    ci.pid = 1000 + i;
    CHECK(nt_model_apply_comm(m, i < NT_MODEL_MAX_PER_CONNECT ? "ep" : "ep2", 0, &ci, 1.0) == 0);
  }
  CHECK(nt_model_nprocesses(m) == NT_MODEL_MAX_PROCESSES);
  nt_snapshot *s = snap(999, 1, 1000, 5), *t = snap(1000, 1, 1000, 7);
  CHECK(s && t);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, s, 2.0) == -1); /* one more: refused */
  CHECK(nt_model_apply_snapshot(m, "ep", 0, s, 2.1) == -1);
  CHECK(nt_model_apply_snapshot(m, "ep3", 0, s, 2.1) == -1);
  CHECK_EQ_U64(nt_model_total_refused(m), 3);
  CHECK_EQ_U64(nt_model_refused(m, NT_REFUSE_SOURCE_FULL), 2);
  CHECK_EQ_U64(nt_model_refused(m, NT_REFUSE_TABLE_FULL), 1);
  CHECK_EQ_U64(nt_model_total_bad(m), 0);
  CHECK(nt_model_nerrors(m) == 2); /* said once per source and reason */
  CHECK(strstr(nt_model_error_at(m, 0)->text, "table_full") != NULL);
  CHECK(strstr(nt_model_error_at(m, 1)->text, "source_full") != NULL);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, t, 2.0) == 0); /* a known one still works */
  const nt_model_process *p = nt_model_process_at(m, 0);
  CHECK(p->pid == 1000 && p->cur && p->cur->channels[0].steps == 7);
  CHECK_STR(p->host, "node1"); /* known by its communicator first, host learnt later */
  nt_snapshot_free(s);
  nt_snapshot_free(t);
  nt_model_free(m);
}

static void hostile_strings_are_sanitized_on_arrival(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5);
  nt_hello *h = calloc(1, sizeof *h);
  CHECK(m && a && h);
  snprintf(a->host, sizeof a->host, "node\x1b[2J\x9b"); /* ESC, and an 8-bit CSI */
  CHECK(nt_model_apply_snapshot(m, "ep\x1b", 0, a, 1.0) == 0);
  const nt_model_process *p = only(m);
  CHECK_STR(p->host, "node\\x1B[2J\\x9B");
  CHECK_STR(p->cur->host, "node\\x1B[2J\\x9B");
  CHECK_STR(p->endpoint, "ep\\x1B");
  snprintf(h->host, sizeof h->host, "node\x1b[2J\x9b");
  h->pid = 10;
  snprintf(h->nccl_version, sizeof h->nccl_version, "2.28\x07");
  h->nenv = 1;
  snprintf(h->env[0].name, sizeof h->env[0].name, "NCCL_X\r");
  snprintf(h->env[0].value, sizeof h->env[0].value, "\x1b]52;c;AAAA\x07");
  CHECK(nt_model_apply_hello(m, "ep\x1b", 0, h, 1.0) == 0);
  CHECK(only(m) == p && p->have_hello); /* the same process: same sanitized host */
  CHECK_STR(p->hello.nccl_version, "2.28\\x07");
  CHECK_STR(p->hello.env[0].name, "NCCL_X\\x0D");
  CHECK_STR(p->hello.env[0].value, "\\x1B]52;c;AAAA\\x07");
  nt_comm_info ci = {.pid = 10, .comm_hash = HASH_A, .name = "dp\x1b[31m"};
  CHECK(nt_model_apply_comm(m, "ep\x1b", 0, &ci, 1.0) == 0);
  nt_model_rank r[2];
  CHECK(nt_model_ranks(m, r, 2) == 1);
  CHECK_STR(r[0].comm_name, "dp\\x1B[31m");
  free(h);
  nt_snapshot_free(a);
  nt_model_free(m);
}

static void communicator_names_beyond_the_table_replace_gone_ones(void) {
  nt_model *m = nt_model_new();
  nt_snapshot *a = snap(10, 1, 1000, 5);
  CHECK(m && a);
  CHECK(nt_model_apply_snapshot(m, "ep", 0, a, 1.0) == 0); /* lists HASH_A only */
  nt_comm_info ci = {.pid = 10};
  for (int i = 0; i < NT_MAX_COMMS; i++) {
    ci.comm_hash = i ? 0x100u + (uint64_t)i : HASH_A;
    snprintf(ci.name, sizeof ci.name, "c%d", i);
    CHECK(nt_model_apply_comm(m, "ep", 0, &ci, 1.0) == 0);
  }
  ci.comm_hash = 0xfeed;
  snprintf(ci.name, sizeof ci.name, "newest");
  CHECK(nt_model_apply_comm(m, "ep", 0, &ci, 1.0) == 0);
  const nt_model_process *p = only(m);
  CHECK(p->ncomm_info == NT_MAX_COMMS);
  bool newest = false, current = false;
  for (uint32_t i = 0; i < p->ncomm_info; i++) {
    newest |= p->comm_info[i].comm_hash == 0xfeed;
    current |= p->comm_info[i].comm_hash == HASH_A; /* the live one is kept */
  }
  CHECK(newest && current);
  nt_snapshot_free(a);
  nt_model_free(m);
}

static void a_bad_topology_keeps_the_one_we_had(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  const char *good = "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\"/></system>";
  CHECK(nt_model_set_topology(m, good, strlen(good), "ep1", 1.0) == 0);
  uint64_t hash = 0, again = 1;
  CHECK(nt_model_topology_at(m, 0, NULL, &hash) != NULL && hash != 0);
  CHECK(nt_model_set_topology(m, good, strlen(good), "ep2", 2.0) == 0); /* same file again */
  CHECK(nt_model_topology_count(m) == 1);
  CHECK(nt_model_set_topology(m, "<system", 7, "ep3", 3.0) == -1);
  CHECK(nt_model_topology_count(m) == 1);
  CHECK(nt_model_topology_at(m, 0, NULL, &again) != NULL && again == hash);
  CHECK(nt_model_nerrors(m) == 1);
  CHECK(strstr(nt_model_error_at(m, 0)->text, "ep3:1:") != NULL);
  nt_model_free(m);
}

/* Two sources with different files: each keeps its index (so the view,
 * which shows an index, never flips), the other is held for the user to
 * pick; a source's new version replaces its file in place; a bad file sent
 * again is neither parsed nor noted again; reading writes nothing. */
static void topologies_stay_put_until_picked_and_bad_ones_are_noted_once(void) {
  nt_model *m = nt_model_new();
  CHECK(m != NULL);
  const char *a = "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\"/></system>";
  const char *b = "<system version=\"1\"><cpu numaid=\"1\" arch=\"arm64\"/></system>";
  const char *a2 = "<system version=\"1\"><cpu numaid=\"2\" arch=\"arm64\"/></system>";
  const char *src = NULL;
  uint64_t ha = 0, h = 0;
  size_t len = 0;
  CHECK(nt_model_set_topology(m, a, strlen(a), "ep1", 1.0) == 0);
  CHECK(nt_model_topology_at(m, 0, &src, &ha) != NULL);
  for (int i = 0; i < 5; i++) { /* both re-sent every few seconds */
    CHECK(nt_model_set_topology(m, b, strlen(b), "ep2", 2.0 + i) == 0);
    CHECK(nt_model_set_topology(m, a, strlen(a), "ep1", 2.5 + i) == 0);
  }
  CHECK(nt_model_topology_at(m, 0, &src, &h) != NULL);
  CHECK_STR(src, "ep1");
  CHECK(h == ha);
  CHECK(nt_model_topology_count(m) == 2);
  CHECK(nt_model_set_topology(m, a2, strlen(a2), "ep1", 8.0) == 0); /* ep1's file rewritten */
  CHECK(nt_model_topology_at(m, 0, &src, &h) != NULL);
  CHECK_STR(src, "ep1"); /* in place: the index shown still shows ep1 */
  CHECK(h != ha);
  const char *xml = nt_model_topology_xml(m, 0, &len);
  CHECK(xml && len == strlen(a2) && memcmp(xml, a2, len) == 0); /* what a view copies */
  CHECK(nt_model_topology_count(m) == 2);
  CHECK(nt_model_topology_at(m, 1, &src, NULL) != NULL);
  CHECK_STR(src, "ep2");
  CHECK(nt_model_topology_at(m, 2, &src, &h) == NULL && h == 0 && src[0] == '\0');
  for (int i = 0; i < 5; i++) CHECK(nt_model_set_topology(m, "<system", 7, "ep3", 9.0 + i) == -1);
  CHECK(nt_model_nerrors(m) == 1);
  /* Past the table: refused, noted once, what is held unchanged. */
  char x[128];
  for (int i = 0; i < 12; i++) {
    int n = snprintf(x, sizeof x,
                     "<system version=\"1\"><cpu numaid=\"%d\" arch=\"arm64\"/></system>", 10 + i);
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    nt_model_set_topology(m, x, (size_t)n, name, 20.0 + i);
  }
  CHECK(nt_model_topology_count(m) == 8);
  CHECK(nt_model_topology_at(m, 0, &src, NULL) != NULL);
  CHECK_STR(src, "ep1");
  CHECK(nt_model_nerrors(m) == 2);
  nt_model_free(m);
}

int main(void) {
  TEST_RUN(rates_and_shares_are_exact_over_the_last_interval);
  TEST_RUN(rows_are_matched_by_key_not_by_position);
  TEST_RUN(dominant_wait_is_the_largest_growth_else_the_largest_total);
  TEST_RUN(shares_fall_back_to_since_first_when_nothing_moved);
  TEST_RUN(stalled_needs_ops_in_flight_and_old_progress);
  TEST_RUN(sequence_gaps_are_lost_messages_not_lost_totals);
  TEST_RUN(a_restarted_publisher_starts_over_and_a_late_copy_is_ignored);
  TEST_RUN(silent_publishers_turn_stale_after_three_intervals_and_stay_visible);
  TEST_RUN(ended_processes_stay_visible_then_are_dropped);
  TEST_RUN(a_bad_message_noted_keeps_existing_data);
  TEST_RUN(ranks_are_sorted_by_communicator_then_rank);
  TEST_RUN(processes_beyond_the_limit_are_refused_cleanly);
  TEST_RUN(hostile_strings_are_sanitized_on_arrival);
  TEST_RUN(communicator_names_beyond_the_table_replace_gone_ones);
  TEST_RUN(a_bad_topology_keeps_the_one_we_had);
  TEST_RUN(topologies_stay_put_until_picked_and_bad_ones_are_noted_once);
  return TEST_DONE();
}

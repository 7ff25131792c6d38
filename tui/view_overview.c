/* The overview: alerts first (where a stall's waits end, stalled channels
 * and the peer they wait on, operations that do not complete, stragglers,
 * silent publishers), then one line per communicator and per process. */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "screen.h"

/* A communicator: operations done per second (per rank, over the
 * publishers' last interval) and the range of operations launched over its
 * ranks. */
typedef struct {
  uint64_t hash;
  const char *name;
  int32_t nranks, nnodes;
  uint32_t ranks, stalled;
  uint64_t launched_min, launched_max;
  double done_per_s;
  uint8_t phase_id;
  const nt_snapshot *phase_snap;
} comm_line;

static uint64_t launched_total(const nt_snapshot *s, uint16_t ci, bool done) {
  uint64_t n = 0;
  for (uint32_t i = 0; s && i < s->nseq; i++)
    if (s->seq_rows[i].comm_index == ci) n += done ? s->seq_rows[i].done : s->seq_rows[i].launched;
  return n;
}

static uint16_t comm_index_in(const nt_snapshot *s, uint64_t hash) {
  for (uint32_t k = 0; s && k < s->ncomms; k++)
    if (s->comms[k].comm_hash == hash) return (uint16_t)k;
  return NT_NO_COMM;
}

static uint32_t comm_lines(nt_screen *s, comm_line *out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->nranks; i++) {
    const nt_model_rank *r = &s->ranks[i];
    const nt_model_process *p = r->proc;
    comm_line *c = NULL;
    for (uint32_t j = 0; j < n && !c; j++)
      if (out[j].hash == r->comm_hash) c = &out[j];
    if (!c) {
      if (n == cap) continue;
      c = &out[n++];
      memset(c, 0, sizeof *c);
      c->hash = r->comm_hash;
      c->name = r->comm_name;
      c->nranks = r->nranks;
      c->nnodes = r->nnodes;
      c->launched_min = UINT64_MAX;
    }
    c->ranks++;
    uint64_t l = launched_total(p->cur, r->comm_index, false);
    if (l < c->launched_min) c->launched_min = l;
    if (l > c->launched_max) c->launched_max = l;
    uint16_t pi = comm_index_in(p->prev, r->comm_hash);
    if (p->prev && pi != NT_NO_COMM && p->cur->mono_ns > p->prev->mono_ns) {
      double dt = (double)(p->cur->mono_ns - p->prev->mono_ns) / 1e9;
      uint64_t now = launched_total(p->cur, r->comm_index, true);
      uint64_t before = launched_total(p->prev, pi, true);
      if (now >= before) c->done_per_s += (double)(now - before) / dt;
    }
    for (uint32_t k = 0; k < p->cur->nchannels; k++)
      c->stalled += p->cur->channels[k].comm_index == r->comm_index &&
                    nt_model_channel_stalled(&p->cur->channels[k], s->o->stall_ms);
    if (!c->phase_id && p->cur->process.phase) {
      c->phase_id = p->cur->process.phase;
      c->phase_snap = p->cur;
    }
  }
  return n;
}

static const char *phase_name(const nt_snapshot *snap, uint8_t id) {
  for (uint32_t i = 0; snap && id && i < snap->nphases; i++)
    if (snap->phases[i].id == id) return snap->phases[i].name;
  return "-";
}

void nt_view_overview(nt_screen *s, int y) {
  char line[512];
  int n = 0;
  if (s->nalerts == 0) {
    nt_scroll_line(s, &y, &n, A_BOLD,
                   "No alerts: nothing stalled, no operation overdue, no straggler.");
  } else {
    snprintf(line, sizeof line, "ALERTS (%u), most important first", s->nalerts);
    nt_scroll_line(s, &y, &n, A_BOLD, line);
    for (uint32_t i = 0; i < s->nalerts; i++) {
      const nt_alert *a = &s->alerts[i];
      bool bad = a->kind <= NT_ALERT_HUNG_OP;
      snprintf(line, sizeof line, "%s %-9s %s", bad ? "!" : "-", nt_alert_kind_name(a->kind),
               a->text);
      if (!nt_scroll_line(s, &y, &n, bad ? nt_stall_attr(s) : nt_warn_attr(s), line)) break;
    }
  }
  nt_scroll_line(s, &y, &n, 0, "");
  static comm_line comms[NT_MAX_COMMS * 4];
  uint32_t nc = comm_lines(s, comms, sizeof comms / sizeof comms[0]);
  /* Columns drop by priority on narrow screens: the communicator, its
   * ranks and stalled channels stay. */
  static const nt_list_col ccols[] = {
      {"COMMUNICATOR", 24, 0, false},
      {"HASH", 16, 4, false},
      {"RANKS", 9, 0, true},
      {"NODES", 6, 3, true},
      {"LAUNCHED (min-max)", 21, 2, true},
      {"DONE/s", 9, 1, true},
      {"STALLED", 8, 0, true},
      {"PHASE NOW", 16, 2, false},
  };
  enum { NC = sizeof ccols / sizeof ccols[0] };
  bool keep[NC];
  nt_list_fit(ccols, NC, 1, s->cols, keep);
  nt_scroll_line(s, &y, &n, A_BOLD, nt_list_line(line, sizeof line, ccols, NC, keep, NULL));
  for (uint32_t i = 0; i < nc; i++) {
    const comm_line *c = &comms[i];
    char hash[24], ranks[24], nodes[16], launched[48], done[24], stalled[16];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)c->hash);
    snprintf(ranks, sizeof ranks, "%u/%d", c->ranks, c->nranks);
    snprintf(nodes, sizeof nodes, "%d", c->nnodes);
    snprintf(launched, sizeof launched, "%llu-%llu", (unsigned long long)c->launched_min,
             (unsigned long long)c->launched_max);
    snprintf(done, sizeof done, "%.1f", c->ranks ? c->done_per_s / c->ranks : 0);
    snprintf(stalled, sizeof stalled, "%u", c->stalled);
    const char *cells[NC] = {c->name[0] ? c->name : "-",
                             hash,
                             ranks,
                             nodes,
                             launched,
                             done,
                             stalled,
                             phase_name(c->phase_snap, c->phase_id)};
    if (!nt_scroll_line(s, &y, &n, c->stalled ? nt_stall_attr(s) : 0,
                        nt_list_line(line, sizeof line, ccols, NC, keep, cells)))
      break;
  }
  nt_scroll_line(s, &y, &n, 0, "");
  static const nt_list_col pcols[] = {
      {"PROCESS", 28, 0, false}, {"NCCL", 8, 2, false},   {"ABI", 4, 4, true},
      {"COMMS", 5, 3, true},     {"EVENTS", 12, 3, true}, {"DROPPED", 9, 1, true},
      {"UNSENT", 9, 3, true},    {"STATE", 14, 0, false},
  };
  enum { NP = sizeof pcols / sizeof pcols[0] };
  bool pkeep[NP];
  nt_list_fit(pcols, NP, 1, s->cols, pkeep);
  nt_scroll_line(s, &y, &n, A_BOLD, nt_list_line(line, sizeof line, pcols, NP, pkeep, NULL));
  for (uint32_t i = 0; i < nt_model_nprocesses(s->m); i++) {
    const nt_model_process *p = nt_model_process_at(s->m, i);
    if (!p->cur) continue;
    const nt_process_counters *c = &p->cur->process;
    char who[96], abi[16], comms_n[16], events[24], dropped[24], unsent[24];
    snprintf(who, sizeof who, "%s:%u", p->host, p->pid);
    snprintf(abi, sizeof abi, "%u", c->abi_version);
    snprintf(comms_n, sizeof comms_n, "%u", p->cur->ncomms);
    snprintf(events, sizeof events, "%llu", (unsigned long long)c->events);
    snprintf(dropped, sizeof dropped, "%llu",
             (unsigned long long)(c->dropped_events + c->dropped_ops));
    snprintf(unsent, sizeof unsent, "%llu", (unsigned long long)c->unsent_messages);
    const char *cells[NP] = {
        who,    p->have_hello && p->hello.nccl_version[0] ? p->hello.nccl_version : "?",
        abi,    comms_n,
        events, dropped,
        unsent, p->ended ? "ended" : p->stale ? "STALE (silent)" : "live"};
    if (!nt_scroll_line(s, &y, &n, p->stale && !p->ended ? nt_warn_attr(s) : 0,
                        nt_list_line(line, sizeof line, pcols, NP, pkeep, cells)))
      break;
  }
  /* Keep the scroll within what there is. */
  nt_scroll_clamp(s, n);
}

/* Publishers (see alerts.c): those that stopped sending, and what was
 * dropped. One cause is one line: a relay all of whose processes went
 * silent at once is one alert (the relay or its link), as are more than
 * COLLAPSE_AT silent processes of one host, and more than COLLAPSE_AT
 * processes with drops of the same kinds; a few stay one line each.
 *
 * Silence is measured in the time the viewer read (model_watch.c): a
 * viewer that was stopped makes nobody silent. A drops alert is news: it
 * lasts NT_DROPS_CLEAR_S after the last counter that grew (the plugin's
 * drops, or messages this viewer lost while it read); what the viewer
 * lost while it, or a relay between, did not read is the watcher's
 * (lost_unread), never a drop of the job's. */
#include "alerts_internal.h"

typedef struct {
  const char *endpoint;
  uint32_t index; /* in the model's table */
} by_source;

static int cmp_by_endpoint(const void *a, const void *b) {
  return strcmp(((const by_source *)a)->endpoint, ((const by_source *)b)->endpoint);
}

/* A --connect endpoint (a node's relay) all of whose live processes went
 * silent at once: the relay, or the link to it, is down, not each of its
 * processes; one alert says so, and its processes (marked in `covered`,
 * indexed like the model's table) get no alert of their own. */
static void silent_relays(ctx *c, bool *covered) {
  by_source *by = malloc(((size_t)c->m->nprocs + 1) * sizeof *by);
  uint32_t n = 0;
  if (!by) return;
  for (uint32_t i = 0; i < c->m->nprocs; i++) {
    const nt_model_process *p = &c->m->procs[i]->pub;
    if (p->cur && !p->ended && p->endpoint_pid == 0 && !nt_model_process_replaced(c->m, p))
      by[n++] = (by_source){p->endpoint, i};
  }
  qsort(by, n, sizeof *by, cmp_by_endpoint);
  for (uint32_t g = 0, end; g < n; g = end) {
    bool all = true;
    double age = 1e300;
    for (end = g; end < n && !strcmp(by[end].endpoint, by[g].endpoint); end++) {
      const nt_model_process *p = &c->m->procs[by[end].index]->pub;
      all = all && p->stale;
      double since = al_since(c, p);
      if (since < age) age = since;
    }
    if (!all || end - g < 2) continue; /* one process: said as a process */
    const nt_model_process *first = &c->m->procs[by[g].index]->pub;
    nt_alert *a = al_add(c, NT_ALERT_SILENT, P_SILENT, 0, NULL);
    if (!a) break;
    a->proc = first;
    a->count = end - g;
    a->age_s = age;
    al_say(a,
           "%s (host %s, %u processes) sent nothing for %s: the relay or the link to it is down; "
           "what its ranks do is unknown, not stalled",
           first->endpoint, first->host, end - g, AGE(a->age_s));
    for (uint32_t k = g; k < end; k++) covered[by[k].index] = true;
  }
  free(by);
}

/* ---- many processes, one line ---- */

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The communicator every one of v[0..n) has a rank in, the one with the
 * most ranks; NULL when there is none. */
static const nt_comm_row *common_comm(const nt_model_process *const *v, uint32_t n) {
  const nt_comm_row *best = NULL;
  for (uint32_t k = 0; k < v[0]->cur->ncomms; k++) {
    const nt_comm_row *c = &v[0]->cur->comms[k];
    bool all = c->comm_hash != 0;
    for (uint32_t i = 1; all && i < n; i++) {
      bool has = false;
      for (uint32_t j = 0; !has && j < v[i]->cur->ncomms; j++)
        has = v[i]->cur->comms[j].comm_hash == c->comm_hash;
      all = has;
    }
    if (all && (!best || c->nranks > best->nranks)) best = c;
  }
  return best;
}

static int32_t rank_in(const nt_model_process *p, uint64_t hash) {
  for (uint32_t j = 0; j < p->cur->ncomms; j++)
    if (p->cur->comms[j].comm_hash == hash) return p->cur->comms[j].rank;
  return -1;
}

/* Who v[0..n) are, compactly: "ranks 0-1023 (1024 processes)" when they
 * all have a rank in one communicator, else "1024 processes on 8 hosts". */
static void many_who(const ctx *c, const nt_model_process *const *v, uint32_t n, char *buf,
                     size_t cap) {
  const nt_comm_row *comm = common_comm(v, n);
  int32_t *ranks = comm ? malloc((size_t)n * sizeof *ranks) : NULL;
  if (ranks) {
    for (uint32_t i = 0; i < n; i++) ranks[i] = rank_in(v[i], comm->comm_hash);
    qsort(ranks, n, sizeof *ranks, cmp_i32);
    char runs[96], of[48] = "";
    al_runs(ranks, n, runs, sizeof runs);
    if (c->multi_comm)
      snprintf(of, sizeof of, " of comm %04llx", (unsigned long long)(comm->comm_hash & 0xffff));
    snprintf(buf, cap, "ranks %s/%d%s (%u processes)", runs, comm->nranks, of, n);
    free(ranks);
    return;
  }
  uint32_t hosts = 0;
  for (uint32_t i = 0; i < n; i++) {
    bool seen = false;
    for (uint32_t j = 0; !seen && j < i; j++) seen = !strcmp(v[j]->host, v[i]->host);
    hosts += !seen;
  }
  if (hosts == 1)
    snprintf(buf, cap, "%u processes on host %s", n, v[0]->host);
  else
    snprintf(buf, cap, "%u processes on %u hosts", n, hosts);
}

/* ---- silent ---- */

static int cmp_host(const void *a, const void *b) {
  const nt_model_process *x = *(const nt_model_process *const *)a,
                         *y = *(const nt_model_process *const *)b;
  int h = strcmp(x->host, y->host);
  return h ? h : (x->pid > y->pid) - (x->pid < y->pid);
}

static void silent_one(ctx *c, const nt_model_process *p) {
  nt_alert *a = al_add(c, NT_ALERT_SILENT, P_SILENT, 0, NULL);
  if (!a) return;
  char me[160];
  a->proc = p;
  a->age_s = al_since(c, p);
  al_say(a, "%s sent nothing for %s: the process is hung, stopped or overloaded",
         al_who(p, me, sizeof me), AGE(a->age_s));
}

/* v[0..n): silent processes, by host: more than COLLAPSE_AT of one host
 * are one line. */
static void silent_hosts(ctx *c, const nt_model_process **v, uint32_t n) {
  qsort(v, n, sizeof *v, cmp_host);
  for (uint32_t g = 0, end; g < n; g = end) {
    for (end = g; end < n && !strcmp(v[end]->host, v[g]->host); end++) continue;
    if (end - g <= COLLAPSE_AT) {
      for (uint32_t k = g; k < end; k++) silent_one(c, v[k]);
      continue;
    }
    nt_alert *a = al_add(c, NT_ALERT_SILENT, P_SILENT, 0, NULL);
    if (!a) return;
    char who[160];
    a->proc = v[g];
    a->count = end - g;
    for (uint32_t k = g; k < end; k++)
      if (al_since(c, v[k]) > a->age_s) a->age_s = al_since(c, v[k]);
    many_who(c, v + g, end - g, who, sizeof who);
    al_say(a,
           "host %s: %s sent nothing for up to %s: the processes are hung, stopped or overloaded",
           v[g]->host[0] ? v[g]->host : "?", who, AGE(a->age_s));
  }
}

/* ---- drops ---- */

enum { D_PLUGIN = 1, D_UNSENT = 2, D_LOST = 4 };

static uint64_t job_lost(const nt_model_process *p) {
  return p->lost_messages > p->lost_unread ? p->lost_messages - p->lost_unread : 0;
}

static unsigned drop_kinds(const nt_model_process *p) {
  const nt_process_counters *pc = &p->cur->process;
  return (pc->dropped_events || pc->dropped_ops || pc->dropped_rows ? D_PLUGIN : 0) |
         (pc->unsent_messages ? D_UNSENT : 0) | (job_lost(p) ? D_LOST : 0);
}

/* What was dropped, the kinds that are not zero only. */
static void drop_text(char *buf, size_t cap, uint64_t events, uint64_t ops, uint64_t rows,
                      uint64_t unsent, uint64_t lost) {
  size_t used = 0;
  buf[0] = '\0';
#define PART(...)                                                                                  \
  do {                                                                                             \
    int k_ = snprintf(buf + used, cap - used, __VA_ARGS__);                                        \
    if (k_ > 0 && (size_t)k_ < cap - used) used += (size_t)k_;                                     \
  } while (0)
  if (events || ops || rows) {
    PART("plugin dropped");
    const char *sep = " ";
    if (events) {
      PART("%s%llu events", sep, (unsigned long long)events);
      sep = ", ";
    }
    if (ops) {
      PART("%s%llu operations", sep, (unsigned long long)ops);
      sep = ", ";
    }
    if (rows) PART("%s%llu rows", sep, (unsigned long long)rows);
    PART(" (its tables were full)");
  }
  if (unsent) PART("%s%llu messages unsent", used ? "; " : "", (unsigned long long)unsent);
  if (lost)
    PART("%sthis viewer lost %llu messages while reading (too slow, or the link drops them)",
         used ? "; " : "", (unsigned long long)lost);
#undef PART
}

static int cmp_kinds(const void *a, const void *b) {
  unsigned x = drop_kinds(*(const nt_model_process *const *)a);
  unsigned y = drop_kinds(*(const nt_model_process *const *)b);
  return x != y ? (x > y) - (x < y) : cmp_host(a, b);
}

/* v[0..n): processes with recent drops; by the kinds they dropped, more
 * than COLLAPSE_AT are one line. */
static void drops(ctx *c, const nt_model_process **v, uint32_t n) {
  qsort(v, n, sizeof *v, cmp_kinds);
  for (uint32_t g = 0, end; g < n; g = end) {
    unsigned kinds = drop_kinds(v[g]);
    for (end = g; end < n && drop_kinds(v[end]) == kinds; end++) continue;
    bool fold = end - g > COLLAPSE_AT;
    for (uint32_t k = g; k < end; k += fold ? end - g : 1) {
      uint32_t m = fold ? end - g : 1;
      uint64_t ev = 0, ops = 0, rows = 0, unsent = 0, lost = 0;
      double newest = 0;
      for (uint32_t i = k; i < k + m; i++) {
        const nt_process_counters *pc = &v[i]->cur->process;
        ev += pc->dropped_events;
        ops += pc->dropped_ops;
        rows += pc->dropped_rows;
        unsent += pc->unsent_messages;
        lost += job_lost(v[i]);
        if (v[i]->drops_s > newest) newest = v[i]->drops_s;
      }
      nt_alert *a = al_add(c, NT_ALERT_DROPS, P_DROPS, 0, NULL);
      if (!a) return;
      char who[160], what[224];
      a->proc = v[k];
      a->count = (uint32_t)(lost > UINT32_MAX ? UINT32_MAX : lost);
      a->age_s = c->now_s > newest ? c->now_s - newest : 0;
      if (fold)
        many_who(c, v + k, m, who, sizeof who);
      else
        al_who(v[k], who, sizeof who);
      drop_text(what, sizeof what, ev, ops, rows, unsent, lost);
      al_say(a, "%s: %s; the newest %s ago", who, what, AGE(a->age_s));
    }
  }
}

void al_publishers(ctx *c) {
  uint32_t np = c->m->nprocs;
  bool *covered = calloc((size_t)np + 1, sizeof *covered);
  const nt_model_process **silent = malloc(((size_t)np + 1) * sizeof *silent);
  const nt_model_process **dropped = malloc(((size_t)np + 1) * sizeof *dropped);
  if (!covered || !silent || !dropped) {
    c->oom = true;
    free(covered);
    free(silent);
    free(dropped);
    return;
  }
  silent_relays(c, covered);
  uint32_t ns = 0, nd = 0;
  for (uint32_t i = 0; i < np; i++) {
    const nt_model_process *p = &c->m->procs[i]->pub;
    if (!p->cur || nt_model_process_replaced(c->m, p)) continue;
    if (p->stale && !p->ended && !c->d->is_root[i] && !covered[i]) silent[ns++] = p;
    if (p->drops_s > 0 && c->now_s - p->drops_s <= NT_DROPS_CLEAR_S && drop_kinds(p))
      dropped[nd++] = p;
  }
  silent_hosts(c, silent, ns);
  drops(c, dropped, nd);
  free(covered);
  free(silent);
  free(dropped);
}

/* The watcher (model.h): when the viewer, or the path to a process, did
 * not read, the silence, lateness and loss that follow are the watcher's,
 * not the job's.
 *
 * The viewer's gaps: a pass later than the loop's usual period allows.
 * The usual period is a decaying maximum of the passes' intervals (each
 * counted up to NT_WATCH_GAP_MIN_S), so a loop whose frames take long
 * learns it, and a five-second stop always stands out. The recent gaps are
 * kept as intervals of the viewer's clock; the one going on (no pass for
 * too long, at a tick) counts as well, so the frame built first after a
 * SIGCONT, before anything is read, already leaves it out.
 *
 * A path's gap (a relay stopped, a link that stalled): the viewer read, but
 * a process's messages did not come; when they come back, a sequence gap
 * (sent, then lost on the way) or a publisher clock that moved less than
 * half the silence (sent long before it arrived: held on the way) says the
 * process kept sending. A process that stopped itself (SIGSTOP, a hang)
 * sends nothing meanwhile: its next snapshot follows the last one, its
 * clock moved as long as the silence, and its silence stays its own. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

static double threshold(const nt_model *m) {
  double t = NT_WATCH_GAP_FACTOR * m->watch.usual_s;
  return t < NT_WATCH_GAP_MIN_S   ? NT_WATCH_GAP_MIN_S
         : t > NT_WATCH_GAP_MAX_S ? NT_WATCH_GAP_MAX_S
                                  : t;
}

/* The viewer has not passed for too long at `now`: a gap going on. */
static bool open_gap(const nt_model *m, double now_s) {
  return m->watch.pass_s > 0 && now_s - m->watch.pass_s > threshold(m);
}

static void record_gap(nt_model *m, double start, double end) {
  nt_watch_state *w = &m->watch;
  w->blind[w->blind_head].start = start;
  w->blind[w->blind_head].end = end;
  w->blind_head = (w->blind_head + 1) % NT_WATCH_BLIND;
  if (w->nblind < NT_WATCH_BLIND) w->nblind++;
  w->gaps++;
  w->paused_s += end - start;
  w->gap_start_s = start;
  w->gap_end_s = end;
  w->gap_lost = 0;
}

/* Half-life of what the usual period remembers. */
#define USUAL_HALF_LIFE_S 30.0

void nt_model_note_pass(nt_model *m, double now_s) {
  nt_watch_state *w = &m->watch;
  if (w->pass_s > 0 && now_s > w->pass_s) {
    double d = now_s - w->pass_s;
    if (d > threshold(m)) record_gap(m, w->pass_s, now_s);
    /* Counted up to the smallest gap: a long stop does not teach the loop
     * that it is slow. */
    double seen = d < NT_WATCH_GAP_MIN_S ? d : NT_WATCH_GAP_MIN_S;
    double kept = w->usual_s * exp2(-d / USUAL_HALF_LIFE_S);
    w->usual_s = seen > kept ? seen : kept;
  }
  if (now_s > w->pass_s) w->pass_s = now_s;
}

void nt_watch_reading(nt_model *m, double now_s) {
  if (m->watch.pass_s > 0) nt_model_note_pass(m, now_s);
}

static double overlap(double a0, double a1, double b0, double b1) {
  double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

double nt_watch_since(const nt_model *m, double t, double now_s) {
  const nt_watch_state *w = &m->watch;
  double blind = 0;
  for (uint32_t i = 0; i < w->nblind; i++)
    blind += overlap(t, now_s, w->blind[i].start, w->blind[i].end);
  if (open_gap(m, now_s)) blind += overlap(t, now_s, w->pass_s, now_s);
  double d = now_s - t - blind;
  return d > 0 ? d : 0;
}

/* Whether arrivals from..now span one of the viewer's gaps, or the
 * settling after it (what it had not read is still coming in). */
static bool over_viewer_gap(const nt_model *m, double from, double now_s) {
  const nt_watch_state *w = &m->watch;
  for (uint32_t i = 0; i < w->nblind; i++)
    if (from <= w->blind[i].end + NT_WATCH_SETTLE_S && now_s >= w->blind[i].start) return true;
  return open_gap(m, now_s);
}

void nt_watch_arrival(nt_model *m, proc_slot *p, const nt_snapshot *s, double now_s) {
  nt_model_process *q = &p->pub;
  if (!q->cur || s->seq <= q->cur->seq) return;
  double silence = nt_watch_since(m, q->cur_time_s, now_s);
  if (silence <= nt_stale_limit(q)) return;
  double sent = s->mono_ns > q->cur->mono_ns ? (double)(s->mono_ns - q->cur->mono_ns) / 1e9 : 0;
  bool lost = s->seq - q->cur->seq > 1, held = sent < silence / 2;
  if (!lost && !held) return; /* it sent nothing meanwhile: its silence was its own */
  q->held_until_s = now_s + NT_WATCH_SETTLE_S;
  src_slot *src = p->src;
  /* The processes of one path come back together: one gap. */
  if (now_s - src->gap_end_s > NT_WATCH_SETTLE_S) {
    src->gap_s = 0;
    src->gap_lost = 0;
    src->gap_procs = 0;
    src->gap_end_s = now_s;
    snprintf(src->gap_host, sizeof src->gap_host, "%s", q->host);
  }
  if (silence > src->gap_s) src->gap_s = silence;
  src->gap_procs++;
}

void nt_watch_lost(nt_model *m, proc_slot *p, uint64_t gap, double now_s) {
  nt_model_process *q = &p->pub;
  if (now_s < q->held_until_s) {
    p->src->gap_lost += gap;
  } else if (over_viewer_gap(m, q->prev_time_s, now_s)) {
    m->watch.gap_lost += gap;
  } else {
    q->drops_s = now_s; /* lost while the viewer read: a drop */
    return;
  }
  q->lost_unread += gap;
  m->watch.lost_unread += gap;
}

void nt_watch_counters(proc_slot *p, const nt_process_counters *was, double now_s) {
  nt_model_process *q = &p->pub;
  const nt_process_counters *c = &q->cur->process;
  static const nt_process_counters none;
  if (!was) was = &none;
  if (c->dropped_events > was->dropped_events || c->dropped_ops > was->dropped_ops ||
      c->dropped_rows > was->dropped_rows || c->unsent_messages > was->unsent_messages)
    q->drops_s = now_s;
}

/* ---- what the frame tells ---- */

static void say_viewer(const nt_model *m, nt_watch_note *n) {
  const nt_watch_state *w = &m->watch;
  char len[NT_UNIT_LEN], more[96] = "";
  n->kind = NT_WATCH_VIEWER;
  if (n->open) {
    snprintf(n->text, sizeof n->text,
             "viewer paused %s so far (stopped, descheduled or its output blocked): silence and "
             "lateness meanwhile are not the job's",
             nt_fmt_ns(n->gap_s * 1e9, len, sizeof len));
    return;
  }
  char ago[NT_UNIT_LEN];
  if (n->resume_in_s > 0)
    snprintf(more, sizeof more, " (settling, %s more)",
             nt_fmt_ns(n->resume_in_s * 1e9, ago, sizeof ago));
  else
    snprintf(more, sizeof more, " (%s ago)", nt_fmt_ns(n->ago_s * 1e9, ago, sizeof ago));
  snprintf(n->text, sizeof n->text,
           "viewer paused %s (stopped, descheduled or its output blocked): silence, lateness and "
           "the %llu messages it missed meanwhile are not the job's%s",
           nt_fmt_ns(n->gap_s * 1e9, len, sizeof len), (unsigned long long)w->gap_lost, more);
}

static void say_path(nt_watch_note *n) {
  char len[NT_UNIT_LEN], in[NT_UNIT_LEN], more[64];
  if (n->resume_in_s > 0)
    snprintf(more, sizeof more, "; their lateness is judged again in %s",
             nt_fmt_ns(n->resume_in_s * 1e9, in, sizeof in));
  else
    snprintf(more, sizeof more, " (%s ago)", nt_fmt_ns(n->ago_s * 1e9, in, sizeof in));
  if (n->paths == 1)
    snprintf(n->text, sizeof n->text,
             "%s (host %s, %u process%s) delivered nothing for %s while the job kept sending (a "
             "stalled relay or link): %llu messages lost on the way%s",
             n->source, n->host[0] ? n->host : "?", n->processes, n->processes == 1 ? "" : "es",
             nt_fmt_ns(n->gap_s * 1e9, len, sizeof len), (unsigned long long)n->lost, more);
  else
    snprintf(n->text, sizeof n->text,
             "%u relays or links (%u processes) delivered nothing for up to %s while the job kept "
             "sending: %llu messages lost on the way%s",
             n->paths, n->processes, nt_fmt_ns(n->gap_s * 1e9, len, sizeof len),
             (unsigned long long)n->lost, more);
}

/* The path notes beyond the first two fold into the second. */
static void add_path(nt_watch_note *n, const src_slot *src, double now_s, bool fold) {
  double resume = src->gap_end_s + NT_WATCH_SETTLE_S - now_s;
  resume = resume > 0 ? resume : 0;
  if (!fold) {
    memset(n, 0, sizeof *n);
    n->kind = NT_WATCH_PATH;
    nt_sanitize(src->name, strlen(src->name), n->source, sizeof n->source);
    snprintf(n->host, sizeof n->host, "%s", src->gap_host);
  }
  n->paths++;
  n->processes += src->gap_procs;
  n->lost += src->gap_lost;
  if (src->gap_s > n->gap_s) n->gap_s = src->gap_s;
  if (resume > n->resume_in_s) n->resume_in_s = resume;
  double ago = now_s - src->gap_end_s;
  if (!fold || ago < n->ago_s) n->ago_s = ago;
}

uint32_t nt_model_watch_notes(const nt_model *m, nt_watch_note *out, uint32_t cap, double now_s) {
  const nt_watch_state *w = &m->watch;
  uint32_t n = 0;
  if (!cap) return 0;
  bool open = open_gap(m, now_s);
  if (open || (w->gap_end_s > 0 && now_s - w->gap_end_s <= NT_WATCH_SHOW_S)) {
    nt_watch_note *x = &out[n++];
    memset(x, 0, sizeof *x);
    x->open = open;
    x->gap_s = open ? now_s - w->pass_s : w->gap_end_s - w->gap_start_s;
    x->ago_s = open ? 0 : now_s - w->gap_end_s;
    double resume = open ? NT_WATCH_SETTLE_S : w->gap_end_s + NT_WATCH_SETTLE_S - now_s;
    x->resume_in_s = resume > 0 ? resume : 0;
    x->lost = open ? 0 : w->gap_lost;
    say_viewer(m, x);
  }
  uint32_t first_path = n;
  for (uint32_t i = 0; i < m->nsources; i++) {
    const src_slot *src = m->sources[i];
    if (!src->gap_end_s || now_s - src->gap_end_s > NT_WATCH_SHOW_S) continue;
    bool fold = n >= cap || n - first_path >= 2;
    if (fold && n == first_path) break; /* no room at all */
    add_path(fold ? &out[n - 1] : &out[n], src, now_s, fold);
    if (!fold) n++;
  }
  for (uint32_t i = first_path; i < n; i++) say_path(&out[i]);
  return n;
}

void nt_model_watch_totals(const nt_model *m, nt_watch_totals *out) {
  out->gaps = m->watch.gaps;
  out->paused_s = m->watch.paused_s;
  out->lost_unread = m->watch.lost_unread;
}

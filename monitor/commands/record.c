/* `nccltop record FILE` and the viewer's --record: the live source's tap
 * writes every message it receives to a recording. With --last D
 * --until-alert KIND it is a black box instead: the last D seconds are kept
 * in memory (bounded) and written out, with the messages that introduced
 * the publishers, when the same analysis the monitor runs raises an alert
 * of that kind; recording then goes on --after seconds. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../feeds/drive.h"
#include "cli.h"
#include "../feeds/clock.h"
#include "commands.h"
#include "../core/diag.h"
#include "../core/frame.h"
#include "../core/model.h"
#include "../options.h"
#include "recorder.h"
#include "../feeds/recording.h"
#include "../feeds/source.h"

#define STICKY_MAX      4096         /* hello, comm and topology messages kept for a new file */
#define STICKY_BYTES    (64u << 20)  /* ...and the bytes they may take */
#define BLACKBOX_MAX    (256u << 20) /* bytes the --last window may hold at most */
#define ALERT_PERIOD_S  0.5
#define DEFAULT_AFTER_S 30.0

/* A message kept in memory (black box, or the introductions). */
typedef struct {
  double t;
  int type;
  uint32_t pid;
  size_t topic_len, body_len;
  char endpoint[NT_REC_MAX_ENDPOINT + 1];
  char topic[NT_REC_MAX_TOPIC];
  uint8_t body[];
} kept;

struct nt_recorder {
  nt_rec_writer *w;
  char path[512];
  double start_s;
  bool failed, quit_on_error, frames_flagged;
  char err[600];
  uint64_t messages;
  /* Rotation (--max-size) and the black box need the introductions. */
  kept **sticky;
  uint32_t nsticky;
  size_t sticky_bytes;
  bool keep_sticky;
  /* Black box: a ring of kept messages. */
  bool blackbox;
  double window_s;
  kept **ring;
  size_t ring_cap, ring_head, ring_n, ring_bytes;
  bool ring_overflow_noted;
};

static kept *keep(const char *endpoint, uint32_t pid, const void *topic, size_t tl,
                  const void *body, size_t bl, double t) {
  if (tl > NT_REC_MAX_TOPIC) tl = NT_REC_MAX_TOPIC;
  kept *k = malloc(sizeof *k + bl);
  if (!k) return NULL;
  k->t = t;
  k->type = topic ? NT_REC_MESSAGE : NT_REC_GONE;
  k->pid = pid;
  k->topic_len = topic ? tl : 0;
  k->body_len = topic ? bl : 0;
  snprintf(k->endpoint, sizeof k->endpoint, "%s", endpoint);
  if (topic && tl) memcpy(k->topic, topic, tl);
  if (topic && bl) memcpy(k->body, body, bl);
  return k;
}

static nt_rec_record as_record(const kept *k) {
  return (nt_rec_record){.type = k->type,
                         .pid = k->pid,
                         .endpoint = k->endpoint,
                         .topic = k->topic,
                         .topic_len = k->topic_len,
                         .body = k->body,
                         .body_len = k->body_len};
}

static bool is_sticky(const void *topic, size_t tl) {
  static const char snap[] = NT_TOPIC_SNAPSHOT;
  return topic && !(tl == sizeof snap - 1 && memcmp(topic, snap, tl) == 0);
}

/* Keeps the newest copy of each distinct introduction (same endpoint,
 * topic and body); the oldest goes when STICKY_MAX are held. */
static void remember_sticky(nt_recorder *r, const char *endpoint, uint32_t pid, const void *topic,
                            size_t tl, const void *body, size_t bl, double t) {
  for (uint32_t i = 0; i < r->nsticky; i++) {
    kept *k = r->sticky[i];
    if (k->topic_len == tl && k->body_len == bl && k->pid == pid &&
        !strcmp(k->endpoint, endpoint) && !memcmp(k->topic, topic, tl) &&
        !memcmp(k->body, body, bl)) {
      memmove(r->sticky + i, r->sticky + i + 1, (r->nsticky - i - 1) * sizeof *r->sticky);
      r->sticky[r->nsticky - 1] = k;
      k->t = t;
      return;
    }
  }
  kept *k = keep(endpoint, pid, topic, tl, body, bl, t);
  if (!k) return;
  while (r->nsticky && (r->nsticky == STICKY_MAX || r->sticky_bytes + bl > STICKY_BYTES)) {
    r->sticky_bytes -= r->sticky[0]->body_len;
    free(r->sticky[0]);
    memmove(r->sticky, r->sticky + 1, (r->nsticky - 1) * sizeof *r->sticky);
    r->nsticky--;
  }
  r->sticky[r->nsticky++] = k; /* in time order: the newest last */
  r->sticky_bytes += bl;
}

static void write_record(nt_recorder *r, const nt_rec_record *rec, double t) {
  if (r->failed || !r->w) return;
  if (nt_rec_write(r->w, rec, t, r->err, sizeof r->err) != 0) {
    r->failed = true; /* `record` stops; the monitor stops recording, says so at exit */
    if (r->quit_on_error) nt_request_quit(SIGTERM);
    return;
  }
  r->messages++;
}

/* The introductions older than `before`, oldest first. */
static void write_sticky(nt_recorder *r, double before) {
  for (uint32_t i = 0; i < r->nsticky; i++) {
    if (r->sticky[i]->t >= before) continue;
    nt_rec_record rec = as_record(r->sticky[i]);
    write_record(r, &rec, r->sticky[i]->t);
  }
}

static void ring_drop_front(nt_recorder *r) {
  kept *k = r->ring[r->ring_head];
  r->ring_bytes -= sizeof *k + k->body_len;
  free(k);
  r->ring_head = (r->ring_head + 1) % r->ring_cap;
  r->ring_n--;
}

static void ring_push(nt_recorder *r, kept *k, double now) {
  if (r->ring_n == r->ring_cap) {
    size_t cap = r->ring_cap ? r->ring_cap * 2 : 1024;
    kept **p = malloc(cap * sizeof *p);
    if (!p) {
      free(k);
      return;
    }
    for (size_t i = 0; i < r->ring_n; i++) p[i] = r->ring[(r->ring_head + i) % r->ring_cap];
    free(r->ring);
    r->ring = p;
    r->ring_cap = cap;
    r->ring_head = 0;
  }
  r->ring[(r->ring_head + r->ring_n++) % r->ring_cap] = k;
  r->ring_bytes += sizeof *k + k->body_len;
  while (r->ring_n &&
         (r->ring[r->ring_head]->t < now - r->window_s || r->ring_bytes > BLACKBOX_MAX)) {
    if (r->ring_bytes > BLACKBOX_MAX && !r->ring_overflow_noted) {
      fprintf(stderr, "nccltop record: --last window over %u MiB; keeping less history\n",
              BLACKBOX_MAX >> 20);
      r->ring_overflow_noted = true;
    }
    ring_drop_front(r);
  }
}

static void tap(void *arg, const char *endpoint, uint32_t pid, const void *topic, size_t tl,
                const void *body, size_t bl, double now) {
  nt_recorder *r = arg;
  if (r->keep_sticky && is_sticky(topic, tl))
    remember_sticky(r, endpoint, pid, topic, tl, body, bl, now);
  if (r->blackbox && !r->w) {
    kept *k = keep(endpoint, pid, topic, tl, body, bl, now);
    if (k) ring_push(r, k, now);
    return;
  }
  nt_rec_record rec = {.type = topic ? NT_REC_MESSAGE : NT_REC_GONE,
                       .pid = pid,
                       .endpoint = endpoint,
                       .topic = topic,
                       .topic_len = tl,
                       .body = body,
                       .body_len = bl};
  write_record(r, &rec, now);
}

static void recorder_free(nt_recorder *r) {
  if (!r) return;
  for (uint32_t i = 0; i < r->nsticky; i++) free(r->sticky[i]);
  free(r->sticky);
  while (r->ring_n) ring_drop_front(r);
  free(r->ring);
  free(r);
}

static nt_recorder *recorder_new(const char *path, double start_s) {
  nt_recorder *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->sticky = calloc(STICKY_MAX, sizeof *r->sticky);
  if (!r->sticky) {
    free(r);
    return NULL;
  }
  snprintf(r->path, sizeof r->path, "%s", path);
  r->start_s = start_s;
  return r;
}

int nt_recorder_check(const char *path, bool force, const nt_options *o, char *err, size_t errlen) {
  /* The files the command reads: a recording must not replace one. */
  const char *in[] = {o->topology, o->hostfile, o->server_key};
  nt_file_id ids[3];
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (in[i] && nt_file_id_of(in[i], &ids[n]) == 0) n++;
  return nt_out_check(path, force ? NT_OUT_REPLACE : 0, ids, n, err, errlen);
}

nt_recorder *nt_recorder_attach(nt_source *src, const char *path, double start_s, bool replace,
                                char *err, size_t errlen) {
  nt_recorder *r = recorder_new(path, start_s);
  if (!r) return snprintf(err, errlen, "out of memory"), NULL;
  if (!(r->w = nt_rec_create(path, start_s, replace, err, errlen))) {
    recorder_free(r);
    return NULL;
  }
  nt_source_set_tap(src, tap, r);
  return r;
}

void nt_recorder_frame(nt_recorder *r, double now_s) {
  if (!r || r->failed) return;
  if (!r->frames_flagged &&
      nt_rec_set_flags(r->w, NT_REC_FLAG_FRAMES, r->err, sizeof r->err) != 0) {
    r->failed = true;
    return;
  }
  r->frames_flagged = true;
  nt_rec_record rec = {.type = NT_REC_FRAME, .endpoint = ""};
  write_record(r, &rec, now_s);
}

int nt_recorder_detach(nt_source *src, nt_recorder *r) {
  if (!r) return 0;
  nt_source_set_tap(src, NULL, NULL);
  char err[600];
  int rc = r->failed ? -1 : 0;
  if (r->failed) fprintf(stderr, "nccltop: --record: %s\n", r->err);
  if (nt_rec_close(r->w, err, sizeof err) != 0 && !r->failed) {
    fprintf(stderr, "nccltop: --record: %s\n", err);
    rc = -1;
  }
  recorder_free(r);
  return rc;
}

/* ---- nccltop record ---- */

static void record_usage(FILE *f) {
  fprintf(f,
          "usage: nccltop record FILE [options]   record what the monitor would receive\n"
          "  --dir DIR             endpoint directory (default $NCCLTOP_DIR or /tmp/nccltop-UID)\n"
          "  --connect EP          also subscribe to ZeroMQ endpoint EP (repeatable, at most 8)\n"
          "  --hosts LIST          also the relay on each host of LIST (Slurm's hostlist syntax)\n"
          "  --hostfile FILE       the same from a file, one host or host:port per line\n"
          "  --duration TIME       stop after TIME (30s, 10m, 2h; default: until interrupted)\n"
          "  --max-size SIZE       rotate at SIZE (500M, 2G): FILE becomes FILE.1, a new FILE\n"
          "                        starts (replacing the FILE.1 of the rotation before)\n"
          "  --last TIME           black box: keep only the last TIME in memory (at most 256 MiB)\n"
          "  --until-alert KIND    ...and write it when an alert of KIND fires (root, stall,\n"
          "                        hung_op, straggler, silent, drops, slow, any); needs\n"
          "                        --last\n"
          "  --after TIME          with --until-alert: keep recording TIME after it (default 30s)\n"
          "  --stall-ms MS         the stall threshold of the analysis (default 2000)\n"
          "  --max-memory MIB      what publishers' data may take in the analysis (default 1024)\n"
          "  --force               replace an existing FILE (and FILE.1 with --max-size);\n"
          "                        without it an existing one is kept and nothing recorded\n"
          "  -h, --help            this text\n");
}

/* "30", "30s", "10m", "2h", "1.5s" -> seconds; -1 when not a time. */
static double parse_time(const char *v) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || !(x >= 0) || x > 1e7) return -1;
  if (!strcmp(end, "m"))
    x *= 60;
  else if (!strcmp(end, "h"))
    x *= 3600;
  else if (*end && strcmp(end, "s"))
    return -1;
  return x;
}

static int64_t parse_size(const char *v) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || !(x > 0)) return -1;
  double mul = !*end                                    ? 1
               : !strcmp(end, "K") || !strcmp(end, "k") ? 1024.0
               : !strcmp(end, "M")                      ? 1048576.0
               : !strcmp(end, "G")                      ? 1073741824.0
                                                        : -1;
  if (mul < 0 || x * mul < 65536 || x * mul > 9e15) return -1;
  return (int64_t)(x * mul);
}

/* Closes FILE, moves it to FILE.1 and starts a new FILE with the
 * introductions, so each file replays alone. */
static int rotate(nt_recorder *r, double now) {
  char err[600], old[520];
  if (nt_rec_close(r->w, err, sizeof err) != 0) {
    r->w = NULL;
    snprintf(r->err, sizeof r->err, "%s", err);
    return -1;
  }
  r->w = NULL;
  snprintf(old, sizeof old, "%s.1", r->path);
  if (rename(r->path, old) != 0) {
    snprintf(r->err, sizeof r->err, "cannot rename %.250s to %.250s: %s", r->path, old,
             strerror(errno));
    return -1;
  }
  /* FILE was just moved away: a file there now is someone else's. */
  if (!(r->w = nt_rec_create(r->path, r->start_s, false, r->err, sizeof r->err))) return -1;
  write_sticky(r, now + 1);
  return r->failed ? -1 : 0;
}

static int alert_kind(const char *name) {
  if (!strcmp(name, "any")) return NT_ALERT_COUNT;
  for (int k = 0; k < NT_ALERT_COUNT; k++)
    if (!strcmp(nt_alert_kind_name(k), name)) return k;
  return -1;
}

/* What the recording loop needs between its ticks and at them. */
typedef struct {
  nt_recorder *r;
  const nt_model *m; /* read only: the drive loop feeds it */
  nt_diag *diag;     /* the black box's own diagnosis of m */
  nt_frame *frame;   /* what it looks at: the frame, as every reader */
  const char *path;
  bool force;
  double start;
  int64_t max_size;
  double stop_at; /* 0: no end yet */
  double after;   /* --after: how long a black box records past its alert */
  int until;      /* the alert kind a black box waits for (NT_ALERT_COUNT: any) */
  uint32_t stall_ms;
} rec_run;

/* After every read: the end of --duration (or of --after), --max-size's
 * rotation, a write that failed. */
static int rec_between(void *ctx, double now) {
  rec_run *x = ctx;
  nt_recorder *r = x->r;
  if (x->stop_at && now >= x->stop_at) return 1;
  if (x->max_size && r->w && nt_rec_size(r->w) >= (uint64_t)x->max_size && rotate(r, now) != 0)
    r->failed = true;
  return r->failed;
}

/* Every ALERT_PERIOD_S: a black box still waiting looks at the alerts; on
 * the one it waits for, it writes the history it kept and records on. */
static int rec_tick(void *ctx, double now) {
  rec_run *x = ctx;
  nt_recorder *r = x->r;
  if (!r->blackbox || r->w) return 0;
  nt_frame_opts fo = {.stall_ms = x->stall_ms, .start_s = x->start, .update_s = ALERT_PERIOD_S};
  if (nt_frame_build(x->frame, x->m, x->diag, &fo, now) != 0) return 0; /* memory: next time */
  const nt_frame_alert *alerts = x->frame->alerts;
  for (uint32_t i = 0; i < x->frame->nalerts; i++) {
    if (x->until != NT_ALERT_COUNT && alerts[i].kind != x->until) continue;
    if (!(r->w = nt_rec_create(x->path, x->start, x->force, r->err, sizeof r->err))) {
      r->failed = true;
      return 1;
    }
    double first = r->ring_n ? r->ring[r->ring_head]->t : now;
    write_sticky(r, first);
    uint64_t before = r->messages;
    while (r->ring_n) {
      kept *k = r->ring[r->ring_head];
      nt_rec_record rec = as_record(k);
      write_record(r, &rec, k->t);
      ring_drop_front(r);
    }
    fprintf(stderr,
            "nccltop record: alert %s: %s\nnccltop record: wrote %.0f s of history (%llu "
            "messages) to %s; recording %.0f s more\n",
            nt_alert_kind_name(alerts[i].kind), alerts[i].text, now - first,
            (unsigned long long)(r->messages - before), x->path, x->after);
    x->stop_at = now + x->after;
    break;
  }
  return 0;
}

int nt_record_main(int argc, char **argv) {
  enum {
    O_DIR = 256,
    O_CONNECT,
    O_DURATION,
    O_MAXSIZE,
    O_LAST,
    O_UNTIL,
    O_AFTER,
    O_STALL,
    O_MEM,
    O_HOSTS,
    O_HOSTFILE,
    O_FORCE
  };
  static const struct option opts[] = {
      {"dir", required_argument, NULL, O_DIR},
      {"connect", required_argument, NULL, O_CONNECT},
      {"hosts", required_argument, NULL, O_HOSTS},
      {"hostfile", required_argument, NULL, O_HOSTFILE},
      {"duration", required_argument, NULL, O_DURATION},
      {"max-size", required_argument, NULL, O_MAXSIZE},
      {"last", required_argument, NULL, O_LAST},
      {"until-alert", required_argument, NULL, O_UNTIL},
      {"after", required_argument, NULL, O_AFTER},
      {"stall-ms", required_argument, NULL, O_STALL},
      {"max-memory", required_argument, NULL, O_MEM},
      {"force", no_argument, NULL, O_FORCE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  nt_options o;
  nt_options_defaults(&o);
  double duration = 0, last = 0, after = DEFAULT_AFTER_S;
  int64_t max_size = 0;
  int until = -1;
  bool force = false;
  optind = 0;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    const char *v = optarg;
    switch (ch) {
    case O_DIR:
    case O_CONNECT:
    case O_HOSTS:
    case O_HOSTFILE:
    case O_STALL:
    case O_MEM: {
      /* The viewer's own options: its ranges and messages. */
      const char *name = ch == O_DIR        ? "dir"
                         : ch == O_CONNECT  ? "connect"
                         : ch == O_HOSTS    ? "hosts"
                         : ch == O_HOSTFILE ? "hostfile"
                         : ch == O_STALL    ? "stall-ms"
                                            : "max-memory";
      if (nt_options_set(&o, "nccltop record", name, v) != 0) return 2;
      break;
    }
    case O_FORCE: force = true; break;
    case O_DURATION:
    case O_LAST:
    case O_AFTER: {
      double x = parse_time(v);
      if (x <= 0) {
        fprintf(stderr, "nccltop record: %s must be a time (30s, 10m, 2h), not '%s'\n",
                ch == O_DURATION ? "--duration"
                : ch == O_LAST   ? "--last"
                                 : "--after",
                v);
        return 2;
      }
      *(ch == O_DURATION ? &duration : ch == O_LAST ? &last : &after) = x;
      break;
    }
    case O_MAXSIZE:
      if ((max_size = parse_size(v)) < 0) {
        fprintf(stderr, "nccltop record: --max-size must be a size from 64K (500M, 2G), not '%s'\n",
                v);
        return 2;
      }
      break;
    case O_UNTIL:
      if ((until = alert_kind(v)) < 0) {
        fprintf(stderr,
                "nccltop record: --until-alert: unknown alert '%s' (root, stall, hung_op, "
                "straggler, silent, drops, slow, any)\n",
                v);
        return 2;
      }
      break;
    case 'h': record_usage(stdout); return 0;
    default:
      fprintf(stderr, "nccltop record: %s '%s'; try 'nccltop record --help'\n",
              ch == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
      return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "nccltop record: %s; try 'nccltop record --help'\n",
            optind == argc ? "which FILE?" : "one FILE only");
    return 2;
  }
  if ((until >= 0) != (last > 0)) {
    fprintf(stderr, "nccltop record: --last and --until-alert go together\n");
    return 2;
  }
  if (until >= 0 && max_size) {
    fprintf(stderr, "nccltop record: --max-size does not go with --until-alert\n");
    return 2;
  }
  const char *path = argv[optind];
  char err[600], rotated[520];
  snprintf(rotated, sizeof rotated, "%s.1", path);
  if (nt_source_check(&o, err, sizeof err) != 0 ||
      nt_recorder_check(path, force, &o, err, sizeof err) != 0 ||
      (max_size && nt_recorder_check(rotated, force, &o, err, sizeof err) != 0)) {
    fprintf(stderr, "nccltop record: %s\n", err);
    return 2;
  }
  if (nt_signals_install(false, NULL) != 0) perror("nccltop record: signal handlers");

  double start = nt_now_s();
  nt_model *m = nt_model_new();
  nt_diag *diag = nt_diag_new();
  nt_frame *frame = nt_frame_new();
  nt_recorder *r = recorder_new(path, start);
  bool made = m && diag && frame && r;
  nt_source *src = made ? nt_source_open(&o, err, sizeof err) : NULL;
  if (!src) {
    fprintf(stderr, "nccltop record: %s\n", made ? err : "out of memory");
    nt_frame_free(frame);
    nt_diag_free(diag);
    nt_model_free(m);
    recorder_free(r);
    return 1;
  }
  nt_model_set_budget(m, (size_t)o.max_memory_mib << 20);
  r->keep_sticky = max_size > 0 || until >= 0;
  r->quit_on_error = true;
  r->blackbox = until >= 0;
  r->window_s = last;
  int rc = 0;
  if (!r->blackbox && !(r->w = nt_rec_create(path, start, force, err, sizeof err))) {
    fprintf(stderr, "nccltop record: %s\n", err);
    rc = 1;
  }
  nt_source_set_tap(src, tap, r);
  rec_run run = {.r = r,
                 .m = m,
                 .diag = diag,
                 .frame = frame,
                 .path = path,
                 .force = force,
                 .start = start,
                 .max_size = max_size,
                 .stop_at = duration > 0 ? start + duration : 0,
                 .after = after,
                 .until = until,
                 .stall_ms = o.stall_ms};
  nt_drive d = {
      .delay_s = ALERT_PERIOD_S, .on_tick = rec_tick, .between = rec_between, .ctx = &run};
  nt_feed *feed = rc == 0 ? nt_feed_live_new(src, m) : NULL;
  if (rc == 0 && !feed) {
    fprintf(stderr, "nccltop record: out of memory\n");
    rc = 1;
  }
  if (feed) nt_drive_run(feed, &d);
  nt_feed_free(feed);
  nt_source_set_tap(src, NULL, NULL);
  nt_source_close(src);
  if (r->failed) {
    fprintf(stderr, "nccltop record: %s\n", r->err);
    rc = 1;
  }
  if (r->w) {
    uint64_t size = nt_rec_size(r->w);
    if (nt_rec_close(r->w, err, sizeof err) != 0) {
      fprintf(stderr, "nccltop record: %s\n", err);
      rc = 1;
    } else if (rc == 0) {
      fprintf(stderr, "nccltop record: %llu messages, %llu bytes in %s\n",
              (unsigned long long)r->messages, (unsigned long long)size, path);
    }
    r->w = NULL;
  } else if (r->blackbox && rc == 0) {
    fprintf(stderr, "nccltop record: no %s alert came; nothing written\n",
            until == NT_ALERT_COUNT ? "matching" : nt_alert_kind_name(until));
  }
  recorder_free(r);
  nt_frame_free(frame);
  nt_diag_free(diag);
  nt_model_free(m);
  return rc;
}

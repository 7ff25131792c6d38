/* Recording costs and replay speed (issue 14): a 256-rank job (2
 * communicators x 16 channels, 4 proxy threads, 16 recent operations per
 * snapshot, counters moving with noise) publishing at the plugin's default
 * 100 ms for 30 s of recording time is written with the recorder's writer;
 * then read back into the monitor's model with a frame every 500 ms.
 * Reports bytes per rank per second of recording, the recorder's CPU per
 * second recorded, and the replay's frames and messages per second.
 *
 * usage: bench_record [ranks] [seconds]      (default 256 30)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "../monitor/feeds/recording.h"

#define COMMS    2
#define CHANNELS 16

static double clock_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

/* Rank r's snapshot number k. */
static void fill(nt_snapshot *s, int r, int k, uint64_t *st) {
  nt_snapshot_clear(s);
  s->major = NT_PROTO_MAJOR;
  s->minor = NT_PROTO_MINOR;
  snprintf(s->host, sizeof s->host, "gpu-node-%03d", r / 8);
  s->pid = 10000 + (uint32_t)r;
  s->seq = (uint64_t)k + 1;
  s->interval_ms = 100;
  s->mono_ns = 1000000000000ull + (uint64_t)k * 100000000ull + rnd(st) % 1000000;
  s->wall_ns = 1760000000000000000ull + s->mono_ns;
  s->process = (nt_process_counters){
      .events = (uint64_t)k * 9000 + rnd(st) % 100, .event_mask = 0x3e, .abi_version = 5};
  s->ncomms = COMMS;
  for (uint32_t c = 0; c < COMMS; c++) {
    s->comms[c] = (nt_comm_row){.comm_hash = 0x9e3779b97f4a7c15ull * (c + 1),
                                .rank = r,
                                .nranks = 256,
                                .nnodes = 32,
                                .colls_enqueued = (uint64_t)k * 12 + c};
    for (int t = 0; t < 2; t++) {
      nt_proxy_row *p = &s->proxy[s->nproxy++];
      *p = (nt_proxy_row){.comm_index = (uint16_t)c,
                          .tid = 100 + c * 2 + (uint32_t)t,
                          .state = (uint8_t)(rnd(st) % 5),
                          .state_age_ns = rnd(st) % 10000000,
                          .appends = (uint64_t)k * 40 + rnd(st) % 40,
                          .appended_ops = (uint64_t)k * 600,
                          .wakeups = (uint64_t)k * 35};
      for (int i = 0; i < NT_PROXY_NSTATES; i++)
        p->state_ns[i] = (uint64_t)k * (20000000 / (i + 1)) + rnd(st) % 1000000;
    }
    for (int ch = 0; ch < CHANNELS; ch++)
      for (int d = 0; d < 2; d++)
        s->channels[s->nchannels++] = (nt_channel_row){
            .comm_index = (uint16_t)c,
            .channel = (uint8_t)ch,
            .dir = (uint8_t)d,
            .peer = (r + (d ? 255 : 1)) % 256,
            .wait_ns = {(uint64_t)k * 30000000 + rnd(st) % 5000000,
                        (uint64_t)k * 20000000 + rnd(st) % 5000000, (uint64_t)k * 1000000},
            .steps = (uint64_t)k * 480 + rnd(st) % 8,
            .bytes = (uint64_t)k * 480 * 524288,
            .ops_started = (uint64_t)k * 12,
            .ops_done = k ? (uint64_t)k * 12 - 1 : 0,
            .cur_step = (int32_t)(rnd(st) % 8),
            .cur_wait = (uint8_t)(d ? 3 : 0),
            .cur_wait_age_ns = rnd(st) % 1000000,
            .progress_age_ns = rnd(st) % 1000000,
            .run_state = (uint8_t)(k ? 3 : 1),
            .relay_rank = -1};
  }
  for (int i = 0; i < 16; i++) {
    nt_oplog_row *o = &s->oplog[s->noplog++];
    *o = (nt_oplog_row){.comm_index = (uint16_t)(i % COMMS),
                        .kind = 0,
                        .func = (uint8_t)(i % 4),
                        .algo = 1,
                        .proto = 2,
                        .dtype = 7,
                        .state = NT_OPS_DONE,
                        .timing = 2,
                        .nchannels = 16,
                        .root_peer = -1,
                        .seq = (uint64_t)k * 6 + (uint64_t)i / 2,
                        .count = 1 << 20,
                        .bytes = 4 << 20,
                        .age_ns = (uint64_t)i * 6000000 + rnd(st) % 100000,
                        .duration_ns = 5000000 + rnd(st) % 1000000};
  }
}

int main(int argc, char **argv) {
  int ranks = argc > 1 ? atoi(argv[1]) : 256;
  int seconds = argc > 2 ? atoi(argv[2]) : 30;
  if (ranks < 1 || ranks > 4096 || seconds < 1 || seconds > 3600) {
    fprintf(stderr, "usage: bench_record [ranks 1..4096] [seconds 1..3600]\n");
    return 2;
  }
  char path[] = "/tmp/nccltop-bench-rec-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  nt_snapshot *s = nt_snapshot_new();
  uint8_t *buf = malloc(NT_MAX_MESSAGE_BYTES);
  char err[700];
  nt_rec_writer *w = s && buf ? nt_rec_create(path, 1000.0, true, err, sizeof err) : NULL;
  if (!w) {
    fprintf(stderr, "bench_record: cannot create %s\n", path);
    return 1;
  }
  uint64_t st = 88172645463325252ull, messages = 0, raw = 0;
  double encode_cpu = 0, cpu0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
  char ep[64];
  for (int k = 0; k < seconds * 10; k++) {
    for (int r = 0; r < ranks; r++) {
      double e0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
      fill(s, r, k, &st);
      size_t n = nt_snapshot_encode(s, buf, NT_MAX_MESSAGE_BYTES);
      encode_cpu += clock_of(CLOCK_PROCESS_CPUTIME_ID) - e0; /* the publishers' work, not ours */
      snprintf(ep, sizeof ep, "ipc:///tmp/nccltop-0/%d.sock", 10000 + r);
      nt_rec_record rec = {.type = NT_REC_MESSAGE,
                           .pid = 10000 + (uint32_t)r,
                           .endpoint = ep,
                           .topic = NT_TOPIC_SNAPSHOT,
                           .topic_len = sizeof NT_TOPIC_SNAPSHOT - 1,
                           .body = buf,
                           .body_len = n};
      if (!n || nt_rec_write(w, &rec, 1000.0 + k * 0.1 + r * 1e-5, err, sizeof err) != 0) {
        fprintf(stderr, "bench_record: %s\n", n ? err : "encode failed");
        return 1;
      }
      messages++;
      raw += n;
    }
  }
  if (nt_rec_close(w, err, sizeof err) != 0) return 1;
  double rec_cpu = clock_of(CLOCK_PROCESS_CPUTIME_ID) - cpu0 - encode_cpu;
  struct stat sb;
  if (stat(path, &sb) != 0) return 1;
  printf("recording: %d ranks x %d s at 10 Hz: %llu messages, %.1f MB received, %.1f MB on disk "
         "(%.1fx)\n",
         ranks, seconds, (unsigned long long)messages, raw / 1e6, sb.st_size / 1e6,
         (double)raw / (double)sb.st_size);
  printf("  %.0f bytes per rank per second; recorder CPU %.3f s for %d s recorded (%.1f%% of a "
         "core)\n",
         (double)sb.st_size / ranks / seconds, rec_cpu, seconds, 100 * rec_cpu / seconds);

  /* Replay: every message into the model, a JSON frame every 500 ms. */
  nt_rec_reader *rd = nt_rec_open(path, err, sizeof err);
  nt_rec_applier *ap = nt_rec_applier_new();
  nt_model *m = nt_model_new();
  nt_diag *d = nt_diag_new();
  FILE *null = fopen("/dev/null", "w");
  if (!rd || !ap || !m || !d || !null) return 1;
  nt_options o;
  nt_options_defaults(&o);
  o.batch = o.json = true;
  o.start_s = 1000.0;
  double w0 = clock_of(CLOCK_MONOTONIC), next = 1000.5, apply_s = 0, frame_s = 0;
  int frames = 0;
  uint64_t replayed = 0;
  nt_rec_record rec;
  int rc;
  while ((rc = nt_rec_next(rd, &rec, err, sizeof err)) == 1) {
    double t = 1000.0 + rec.t_ns / 1e9;
    while (t > next) {
      double f0 = clock_of(CLOCK_MONOTONIC);
      nt_model_tick(m, next);
      if (nt_batch_print(null, m, d, &o, next) != 0) return 1;
      frame_s += clock_of(CLOCK_MONOTONIC) - f0;
      frames++;
      next += 0.5;
    }
    double a0 = clock_of(CLOCK_MONOTONIC);
    nt_rec_apply(ap, m, &rec, t);
    apply_s += clock_of(CLOCK_MONOTONIC) - a0;
    replayed++;
  }
  double wall = clock_of(CLOCK_MONOTONIC) - w0;
  if (nt_model_total_bad(m) || nt_model_total_refused(m) ||
      nt_model_nprocesses(m) != (uint32_t)ranks) {
    fprintf(stderr, "bench_record: the model took %u processes, %llu bad, %llu refused: %s\n",
            nt_model_nprocesses(m), (unsigned long long)nt_model_total_bad(m),
            (unsigned long long)nt_model_total_refused(m),
            nt_model_nerrors(m) ? nt_model_error_at(m, 0)->text : "");
    return 1;
  }
  printf("replay (--speed max, -b --json, -d 500ms): %llu messages and %d frames in %.2f s: %.1f "
         "frames/s (%.0fx the recorded pace), %.0f messages/s read and applied; of it, frames "
         "%.2f s, model %.2f s\n",
         (unsigned long long)replayed, frames, wall, frames / wall, seconds / wall, replayed / wall,
         frame_s, apply_s);
  fclose(null);
  nt_diag_free(d);
  nt_model_free(m);
  nt_rec_applier_free(ap);
  nt_rec_close_reader(rd);
  nt_snapshot_free(s);
  free(buf);
  unlink(path);
  return rc < 0 || replayed != messages;
}

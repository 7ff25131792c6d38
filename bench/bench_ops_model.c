/* NCCL's prediction beside the measured collectives (nt_model_op_model): a
 * job of 64 communicators of 8 ranks on our example's 8 H100 (NVSwitch),
 * the topology sent by the endpoint, 32 collectives rows each (2048 rows).
 * The first pass computes the model (a topology load, NCCL's channel search
 * and the tuning model: once for all 64 communicators, which share the
 * machine and the shape); later passes are a table lookup and one
 * division per row, and must stay small beside the statistics themselves
 * (nt_model_op_stats, which every frame already takes).
 *
 * Prints `ops_model rows=2048 first_ms= stats_ms= predict_ms=`: the first
 * pass, then medians over the passes of the statistics alone and of the
 * predictions for all their rows.
 *
 * usage: bench_ops_model [passes]      (default 15)
 */
#include "bench_job.h"

#define COMMS 64
#define ROWS  32 /* per communicator: 4 functions x 8 sizes */
#define FILE_ "examples/topologies/nvswitch-8gpu-8nic.xml"

static nt_snapshot *job_snapshot(void) {
  nt_snapshot *s = nt_snapshot_new();
  if (!s) return NULL;
  snprintf(s->host, sizeof s->host, "node0");
  s->pid = 100;
  s->seq = 1;
  s->mono_ns = 1000000000ull;
  s->wall_ns = 1700000000000000000ull;
  s->interval_ms = 100;
  s->process.abi_version = 7;
  s->ncomms = COMMS;
  static const uint8_t funcs[4] = {NT_FUNC_ALLREDUCE, NT_FUNC_ALLGATHER, NT_FUNC_REDUCESCATTER,
                                   NT_FUNC_BROADCAST};
  uint32_t n = 0;
  for (uint32_t c = 0; c < COMMS; c++) {
    s->comms[c] = (nt_comm_row){.comm_hash = 0x1000 + c, .rank = 0, .nranks = 8, .nnodes = 1};
    for (uint32_t k = 0; k < ROWS && n < NT_MAX_OP_ROWS; k++, n++) {
      uint8_t bucket = (uint8_t)(12 + 2 * (k % 8));
      s->ops[n] = (nt_op_row){.kind = NT_OP_COLL,
                              .comm_index = (uint16_t)c,
                              .func = funcs[k / 8],
                              .algo = NT_ALGO_RING,
                              .proto = NT_PR_SIMPLE,
                              .bucket = bucket,
                              .count = 10,
                              .bytes = 10ull << bucket,
                              .done = 10,
                              .done_bytes = 10ull << bucket,
                              .time_ns = 10 * 500000};
    }
  }
  s->nops = n;
  return s;
}

int main(int argc, char **argv) {
  int passes = argc > 1 ? atoi(argv[1]) : 15;
  if (passes < 1 || passes > 1000) {
    fprintf(stderr, "usage: bench_ops_model [passes 1..1000]\n");
    return 2;
  }
  nt_model *m = nt_model_new();
  nt_snapshot *s = job_snapshot();
  nt_op_stat *st = calloc(COMMS * ROWS, sizeof *st);
  nt_op_model *pm = calloc(COMMS * ROWS, sizeof *pm);
  double *stats = calloc((size_t)passes, sizeof *stats),
         *pred = calloc((size_t)passes, sizeof *pred);
  FILE *f = fopen(FILE_, "rb");
  char *xml = malloc(1 << 20);
  size_t len = f && xml ? fread(xml, 1, 1 << 20, f) : 0;
  if (f) fclose(f);
  int rc = 1;
  if (!m || !s || !st || !pm || !stats || !pred || !len) {
    fprintf(stderr, "bench_ops_model: setup failed (run from the repository root)\n");
    goto done;
  }
  if (nt_model_apply_snapshot(m, "ep", 0, s, 1.0) != 0 ||
      nt_model_set_topology(m, xml, len, "ep", 1.0) != 0) {
    fprintf(stderr, "bench_ops_model: the job was refused\n");
    goto done;
  }
  double t0 = now_s();
  uint32_t n = nt_model_op_stats(m, st, COMMS * ROWS);
  for (uint32_t i = 0; i < n; i++) nt_model_op_model(m, &st[i], &pm[i]);
  double first = (now_s() - t0) * 1e3;
  uint32_t known = 0;
  for (uint32_t i = 0; i < n; i++) known += pm[i].known;
  for (int p = 0; p < passes; p++) {
    double a = now_s();
    n = nt_model_op_stats(m, st, COMMS * ROWS);
    double b = now_s();
    for (uint32_t i = 0; i < n; i++) nt_model_op_model(m, &st[i], &pm[i]);
    double c = now_s();
    stats[p] = (b - a) * 1e3;
    pred[p] = (c - b) * 1e3;
  }
  qsort(stats, (size_t)passes, sizeof *stats, cmp_double);
  qsort(pred, (size_t)passes, sizeof *pred, cmp_double);
  printf("ops_model rows=%u known=%u first_ms=%.3f stats_ms=%.3f predict_ms=%.3f\n", n, known,
         first, stats[passes / 2], pred[passes / 2]);
  rc = known == n ? 0 : 1;
done:
  nt_snapshot_free(s);
  nt_model_free(m);
  free(st);
  free(pm);
  free(stats);
  free(pred);
  free(xml);
  return rc;
}

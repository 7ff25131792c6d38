/* The viewer's analysis per frame (DESIGN budget: a frame for 1024 ranks x
 * 32 channels x 40 NCCL variables under 5 ms, model + analysis + draw):
 * the alerts (waits-on graph, roots, stalls, hung operations, stragglers)
 * and the environment table, on a model fed real encoded snapshots and
 * hellos (encode, decode, apply, as a live viewer gets them) of a
 * 1024-process ring whose rank 77 stalled: its predecessor waits for its
 * credit, everyone else's work is queued behind it.
 *
 * Prints `analysis ranks=1024 channels=32 env=40 ms=<median of the frames>`
 * (the environment table is kept between frames until a hello arrives or a
 * process comes or goes: the first frame builds it; a rebuild's cost is
 * printed on the line before).
 *
 * usage: bench_analysis [frames]      (default 15)
 */
#include "bench_job.h"

int main(int argc, char **argv) {
  int frames = argc > 1 ? atoi(argv[1]) : 15;
  if (frames < 1 || frames > 1000) {
    fprintf(stderr, "usage: bench_analysis [frames 1..1000]\n");
    return 2;
  }
  nt_snapshot *s = nt_snapshot_new(), *out = nt_snapshot_new();
  nt_hello *h = malloc(sizeof *h), *hout = malloc(sizeof *hout);
  nt_model *m = nt_model_new();
  nt_diag *d = nt_diag_new();
  nt_alert *alerts = calloc(256, sizeof *alerts);
  nt_env_row *env = calloc(2 * NT_MAX_ENV, sizeof *env);
  double *ms = calloc((size_t)frames, sizeof *ms), alerts_ms = 0, env_ms = 0;
  int rc = 1;
  uint32_t na = 0, nv = 0;
  if (!s || !out || !h || !hout || !m || !d || !alerts || !env || !ms) goto done;
  if (feed(m, s, out, h, hout) != 0) goto done;
  for (int f = 0; f < frames; f++) {
    double t0 = now_s();
    na = nt_diag_alerts(d, m, 2000, alerts, 256, 1.0 + 0.1 * f);
    double t1 = now_s();
    nv = nt_model_env(m, env, 2 * NT_MAX_ENV, true);
    double t2 = now_s();
    ms[f] = (t2 - t0) * 1e3;
    alerts_ms += (t1 - t0) * 1e3;
    env_ms += (t2 - t1) * 1e3;
  }
  /* The environment table is kept until a hello arrives or a process
   * comes or goes; what one rebuild costs (a hello re-applied each time). */
  double rebuild[5];
  for (int k = 0; k < 5; k++) {
    fill_hello(h, k);
    if (nt_model_apply_hello(m, SOURCE, 0, h, 2.0) != 0) goto done;
    double t0 = now_s();
    nv = nt_model_env(m, env, 2 * NT_MAX_ENV, true);
    rebuild[k] = (now_s() - t0) * 1e3;
  }
  qsort(rebuild, 5, sizeof *rebuild, cmp_double);
  if (!na || alerts[0].kind != NT_ALERT_ROOT || alerts[0].rank != STALLED || nv != ENV) {
    fprintf(stderr, "bench_analysis: wrong diagnosis (%u alerts, first: %s; %u variables)\n", na,
            na ? alerts[0].text : "none", nv);
    goto done;
  }
  qsort(ms, (size_t)frames, sizeof *ms, cmp_double);
  printf("%d frames; alerts %u (first: %.60s...); mean alerts %.3f ms, environment %.3f ms "
         "(rebuilt after a hello: %.3f ms); budget for the whole frame (model + analysis + "
         "draw): 5 ms\n",
         frames, na, alerts[0].text, alerts_ms / frames, env_ms / frames, rebuild[2]);
  printf("analysis ranks=%d channels=%d env=%d ms=%.3f\n", RANKS, CHANNELS, ENV, ms[frames / 2]);
  rc = 0;
done:
  nt_diag_free(d);
  nt_model_free(m);
  nt_snapshot_free(s);
  nt_snapshot_free(out);
  free(h);
  free(hout);
  free(alerts);
  free(env);
  free(ms);
  return rc;
}

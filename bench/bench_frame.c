/* One frame of the monitor, as the interactive screen and batch output make
 * it, for the bench job (bench_job.h: 1024 ranks x 32 channels x 40 NCCL
 * variables, a stalled ring): building the frame from the model (rows,
 * rates, the diagnosis, statistics, environment), drawing each view from it
 * on a 200x60 ncurses screen (output to /dev/null), and printing it as a
 * JSON frame. DESIGN budget: model + analysis + draw under 5 ms; a JSON
 * frame under 50 ms.
 *
 * Prints `frame ranks=1024 channels=32 env=40 build_ms= draw_ms= json_ms=`:
 * medians over the frames; build_ms is the screen's frame, draw_ms the
 * slowest view's, json_ms the writing of a JSON frame (whose own build,
 * with every process's variables, is on the line before).
 *
 * usage: bench_frame [frames]      (default 15)
 */
#include <curses.h>

#include "../monitor/screen/screen_internal.h"
#include "../monitor/outputs/batch.h"
#include "../monitor/commands/cli.h"
#include "../monitor/core/frame.h"
#include "../monitor/outputs/json_out.h"
#include "../monitor/core/model.h"
#include "../monitor/options.h"
#include "bench_job.h"

static const int views[] = {NT_VIEW_OVERVIEW, NT_VIEW_PROXY, NT_VIEW_CHANNELS, NT_VIEW_OPS,
                            NT_VIEW_ENV};
#define NVIEWS ((int)(sizeof views / sizeof views[0]))

int main(int argc, char **argv) {
  int frames = argc > 1 ? atoi(argv[1]) : 15;
  if (frames < 1 || frames > 1000) {
    fprintf(stderr, "usage: bench_frame [frames 1..1000]\n");
    return 2;
  }
  nt_snapshot *s = nt_snapshot_new(), *out = nt_snapshot_new();
  nt_hello *h = malloc(sizeof *h), *hout = malloc(sizeof *hout);
  nt_model *m = nt_model_new();
  nt_diag *d = nt_diag_new();
  nt_frame *f = nt_frame_new(), *jf = nt_frame_new();
  static nt_screen scr;
  nt_jo jw; /* kept across frames, as nccltop -b --json keeps it */
  nt_jo_init(&jw);
  double *build = calloc((size_t)frames, sizeof *build),
         *json = calloc((size_t)frames, sizeof *json);
  double *jbuild = calloc((size_t)frames, sizeof *jbuild);
  double *draw = calloc((size_t)frames * NVIEWS, sizeof *draw);
  FILE *tty_out = fopen("/dev/null", "w"), *tty_in = fopen("/dev/null", "r");
  SCREEN *term = NULL;
  int rc = 1;
  size_t json_bytes = 0;
  if (!s || !out || !h || !hout || !m || !d || !f || !jf || !build || !json || !jbuild || !draw ||
      !tty_out || !tty_in)
    goto done;
  if (feed(m, s, out, h, hout) != 0) goto done;
  nt_options o;
  nt_options_defaults(&o);
  o.color = true;
  if (!(term = newterm("xterm", tty_out, tty_in))) {
    fprintf(stderr, "bench_frame: no terminal description for xterm\n");
    goto done;
  }
  if (resizeterm(60, 200) != OK) goto done;
  scr.m = m;
  scr.o = &o;
  scr.f = f;
  snprintf(scr.watching, sizeof scr.watching, "%s", SOURCE);
  /* The screen's frame; batch --json's also copies every process's variables. */
  nt_frame_opts fo = {.stall_ms = 2000}, jo = {.stall_ms = 2000, .process_env = true};
  for (int k = 0; k < frames; k++) {
    double now = 1.0 + 0.1 * k, t0 = now_s();
    if (nt_frame_build(f, m, d, &fo, now) != 0) goto done;
    double t1 = now_s();
    build[k] = (t1 - t0) * 1e3;
    for (int v = 0; v < NVIEWS; v++) {
      scr.view = views[v];
      scr.now = now;
      double d0 = now_s();
      nt_screen_draw(&scr);
      draw[v * frames + k] = (now_s() - d0) * 1e3;
    }
    double j0 = now_s();
    if (nt_frame_build(jf, m, d, &jo, now) != 0) goto done;
    double j1 = now_s();
    const char *text = nt_frame_json(jf, &jw);
    json[k] = (now_s() - j1) * 1e3;
    jbuild[k] = (j1 - j0) * 1e3;
    if (!text) goto done;
    json_bytes = strlen(text);
  }
  if (f->nranks != RANKS || !f->nalerts || f->alerts[0].kind != NT_ALERT_ROOT ||
      f->alerts[0].rank != STALLED || f->nenv != ENV) {
    fprintf(stderr, "bench_frame: wrong frame (%u ranks, %u alerts, %u variables)\n", f->nranks,
            f->nalerts, f->nenv);
    goto done;
  }
  qsort(build, (size_t)frames, sizeof *build, cmp_double);
  qsort(json, (size_t)frames, sizeof *json, cmp_double);
  qsort(jbuild, (size_t)frames, sizeof *jbuild, cmp_double);
  double worst = 0;
  int worst_view = 0;
  for (int v = 0; v < NVIEWS; v++) {
    qsort(draw + v * frames, (size_t)frames, sizeof *draw, cmp_double);
    double med = draw[v * frames + frames / 2];
    printf("view %d drawn in %.3f ms\n", views[v] + 1, med);
    if (med > worst) worst = med, worst_view = views[v];
  }
  printf("%d frames of %u ranks, %u channel rows, %u alerts; slowest view %d; budget for the "
         "screen's frame (model + analysis + draw): 5 ms. JSON frame %zu bytes (its frame, with "
         "every process's variables, built in %.3f ms); budget 50 ms\n",
         frames, f->nranks, f->nchannels, f->nalerts, worst_view + 1, json_bytes,
         jbuild[frames / 2]);
  printf("frame ranks=%d channels=%d env=%d build_ms=%.3f draw_ms=%.3f json_ms=%.3f\n", RANKS,
         CHANNELS, ENV, build[frames / 2], worst, json[frames / 2]);
  rc = 0;
done:
  if (term) {
    endwin();
    delscreen(term);
  }
  if (tty_out) fclose(tty_out);
  if (tty_in) fclose(tty_in);
  nt_jo_free(&jw);
  nt_frame_free(f);
  nt_frame_free(jf);
  nt_diag_free(d);
  nt_model_free(m);
  nt_snapshot_free(s);
  nt_snapshot_free(out);
  free(h);
  free(hout);
  free(build);
  free(json);
  free(jbuild);
  free(draw);
  return rc;
}

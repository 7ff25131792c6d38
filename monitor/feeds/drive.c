/* The headless loop (drive.h): one place that decides when a tick is due
 * and how long to wait for the source in between. */
#include "clock.h"
#include "drive.h"

int nt_drive_run(nt_source *src, nt_model *m, const nt_drive *d) {
  double next = nt_now_s() + (d->tick_at_once ? 0 : d->delay_s);
  for (int ticks = 0; !nt_quit_requested() && (!d->iterations || ticks < d->iterations);) {
    double now = nt_now_s();
    if (now >= next) {
      nt_model_tick(m, now);
      int rc = d->on_tick(d->ctx, now);
      if (rc) return rc;
      ticks++;
      next += d->delay_s;
      if (next < now) next = now + d->delay_s; /* fell behind: no burst */
      /* A tick can take longer than the delay (a thousand ranks): read
       * what came meanwhile anyway, or every publisher would look stale
       * and ZeroMQ's queues would grow. */
      nt_source_poll(src, m, 0);
    } else {
      int wait_ms = (int)((next - now) * 1000) + 1;
      nt_source_poll(src, m, wait_ms < 100 ? wait_ms : 100);
    }
    int rc = d->between ? d->between(d->ctx, nt_now_s()) : 0;
    if (rc) return rc;
  }
  return 0;
}

/* The headless loop (drive.h): one place that decides when a tick is due
 * and how long to wait for the feed in between. The feed has its say on
 * both: when the next tick is (a recording's quiet stretches and frame
 * marks) and how its clock gets there (live, the wall clock runs; a
 * recording played in steps moves to exactly the tick's time). */
#include <math.h>

#include "clock.h"
#include "drive.h"

int nt_drive_run(nt_feed *feed, const nt_drive *d) {
  double next = nt_feed_now(feed) + (d->tick_at_once ? 0 : d->delay_s);
  for (int ticks = 0; !nt_quit_requested() && (!d->iterations || ticks < d->iterations);) {
    /* The feed's say on when: a recording skips its quiet stretches or
     * ticks at its recorded frames; INFINITY, it has played to its end. */
    next = nt_feed_next_tick(feed, next, d->delay_s);
    if (isinf(next)) return 0;
    double now = nt_feed_now(feed);
    if (now >= next) {
      nt_model_tick(nt_feed_model(feed), now);
      int rc = d->on_tick(d->ctx, now);
      if (rc) return rc;
      ticks++;
      next += d->delay_s;
      if (next < now) next = now + d->delay_s; /* fell behind: no burst */
      /* A tick can take longer than the delay (a thousand ranks): read
       * what came meanwhile anyway, or every publisher would look stale
       * and ZeroMQ's queues would grow. */
      nt_feed_poll(feed, 0);
    } else {
      nt_feed_advance(feed, next, 100);
    }
    int rc = d->between ? d->between(d->ctx, nt_feed_now(feed)) : 0;
    if (rc) return rc;
  }
  return 0;
}

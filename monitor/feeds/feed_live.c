/* The live feed (feed.h): the source's messages into the caller's model,
 * on the wall clock. It borrows both: the caller opened them, taps the
 * source (a recorder) and closes them. */
#include <stdlib.h>

#include "clock.h"
#include "feed_internal.h"
#include "source.h"

typedef struct {
  nt_feed base;
  nt_source *src;
  nt_model *m;
} live_feed;

static int live_poll(nt_feed *f, int timeout_ms) {
  live_feed *l = (live_feed *)f;
  return nt_source_poll(l->src, l->m, timeout_ms);
}

static nt_model *live_model(nt_feed *f) {
  return ((live_feed *)f)->m;
}

static double live_now(nt_feed *f) {
  (void)f;
  return nt_now_s();
}

static double live_rate(const nt_feed *f) {
  (void)f;
  return 1;
}

static void live_status(const nt_feed *f, char *buf, size_t cap) {
  nt_source_watching(((const live_feed *)f)->src, buf, cap);
}

static void live_free(nt_feed *f) {
  free(f);
}

/* No control: the wall clock is not ours to move. */
static const nt_feed_ops live_ops = {
    .poll = live_poll,
    .model = live_model,
    .now = live_now,
    .rate = live_rate,
    .status = live_status,
    .free = live_free,
};

nt_feed *nt_feed_live_new(nt_source *src, nt_model *m) {
  live_feed *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->base.ops = &live_ops;
  l->src = src;
  l->m = m;
  return &l->base;
}

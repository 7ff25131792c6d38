/* The feed interface (feed.h): each call goes to the kind's own. */
#include "feed_internal.h"

int nt_feed_poll(nt_feed *f, int timeout_ms) {
  return f->ops->poll(f, timeout_ms);
}

double nt_feed_next_tick(nt_feed *f, double planned, double delay_s) {
  return f->ops->next_tick ? f->ops->next_tick(f, planned, delay_s) : planned;
}

int nt_feed_advance(nt_feed *f, double to, int timeout_ms) {
  if (f->ops->advance) return f->ops->advance(f, to, timeout_ms);
  /* Wall milliseconds until `to`: the feed's clock may run faster. */
  int wait_ms = (int)((to - nt_feed_now(f)) / nt_feed_rate(f) * 1000) + 1;
  return nt_feed_poll(f, wait_ms < timeout_ms ? wait_ms : timeout_ms);
}

nt_model *nt_feed_model(nt_feed *f) {
  return f->ops->model(f);
}

double nt_feed_now(nt_feed *f) {
  return f->ops->now(f);
}

double nt_feed_rate(const nt_feed *f) {
  return f->ops->rate(f);
}

void nt_feed_status(const nt_feed *f, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  f->ops->status(f, buf, cap);
}

const char *nt_feed_mode(const nt_feed *f) {
  return f->ops->mode;
}

bool nt_feed_control(nt_feed *f, int control) {
  return f->ops->control && f->ops->control(f, control);
}

void nt_feed_free(nt_feed *f) {
  if (f) f->ops->free(f);
}

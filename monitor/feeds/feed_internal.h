/* The contract between feed.c and the kinds of feed (feed_live.c,
 * feed_memory.c, replay_ctl.c): each kind's struct starts with a struct
 * nt_feed whose ops are that kind's. Included by those files only. */
#ifndef NCCLTOP_FEED_INTERNAL_H
#define NCCLTOP_FEED_INTERNAL_H

#include "feed.h"

typedef struct {
  int (*poll)(nt_feed *f, int timeout_ms);
  nt_model *(*model)(nt_feed *f);
  double (*now)(nt_feed *f);
  double (*rate)(const nt_feed *f);
  void (*status)(const nt_feed *f, char *buf, size_t cap);
  const char *mode;                         /* nt_feed_mode: NULL, or the kind's word */
  bool (*control)(nt_feed *f, int control); /* NULL: the kind has none */
  void (*free)(nt_feed *f);
  /* NULL: the plan kept; polling with the wait the rate gives (feed.c). */
  double (*next_tick)(nt_feed *f, double planned, double delay_s);
  int (*advance)(nt_feed *f, double to, int timeout_ms);
} nt_feed_ops;

struct nt_feed {
  const nt_feed_ops *ops;
};

#endif

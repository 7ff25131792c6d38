/* The in-memory feed (feed.h): tests hand it messages with their receive
 * times and move its clock; nt_feed_poll applies what is due through the
 * one ingest, as the live source and the replay do. Nothing here waits or
 * reads the wall clock, so a test on it is deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_internal.h"
#include "ingest.h"

/* A test hands a few thousand messages at most; a bound keeps a runaway
 * loop in a test from eating the machine. */
#define MAX_QUEUED (1u << 16)

typedef struct {
  char endpoint[160];
  uint32_t pid;
  char topic[65];
  uint8_t *body;
  size_t len;
  double at_s;
} queued;

typedef struct {
  nt_feed base;
  nt_model *m;
  nt_ingest *ingest;
  queued *q;
  uint32_t nq, cap, next; /* q[next..nq) are not applied yet */
  double now;
  uint64_t applied;
} memory_feed;

static const nt_feed_ops memory_ops;

static memory_feed *as_memory(nt_feed *f) {
  return f && f->ops == &memory_ops ? (memory_feed *)f : NULL;
}

static int memory_poll(nt_feed *f, int timeout_ms) {
  (void)timeout_ms; /* the test moves the clock: nothing to wait for */
  memory_feed *mf = (memory_feed *)f;
  int n = 0;
  for (; mf->next < mf->nq && mf->q[mf->next].at_s <= mf->now; mf->next++, n++) {
    queued *e = &mf->q[mf->next];
    uint32_t pid = e->pid;
    nt_ingest_message(mf->ingest, mf->m, e->endpoint, &pid, false, e->topic, strlen(e->topic),
                      e->body, e->len, e->at_s);
    free(e->body); /* applied: the copy is not needed again */
    e->body = NULL;
  }
  mf->applied += (uint64_t)n;
  return n;
}

static nt_model *memory_model(nt_feed *f) {
  return ((memory_feed *)f)->m;
}

static double memory_now(nt_feed *f) {
  return ((memory_feed *)f)->now;
}

static double memory_rate(const nt_feed *f) {
  (void)f;
  return 1;
}

static void memory_status(const nt_feed *f, char *buf, size_t cap) {
  const memory_feed *mf = (const memory_feed *)f;
  snprintf(buf, cap, "MEMORY %llu applied, %u queued", (unsigned long long)mf->applied,
           mf->nq - mf->next);
}

static void memory_free(nt_feed *f) {
  memory_feed *mf = (memory_feed *)f;
  for (uint32_t i = mf->next; i < mf->nq; i++) free(mf->q[i].body);
  free(mf->q);
  nt_ingest_free(mf->ingest);
  nt_model_free(mf->m);
  free(mf);
}

static const nt_feed_ops memory_ops = {
    .poll = memory_poll,
    .model = memory_model,
    .now = memory_now,
    .rate = memory_rate,
    .status = memory_status,
    .free = memory_free,
};

nt_feed *nt_feed_memory_new(double start_s, size_t budget_bytes) {
  memory_feed *mf = calloc(1, sizeof *mf);
  if (!mf) return NULL;
  mf->base.ops = &memory_ops;
  mf->now = start_s;
  mf->m = nt_model_new();
  mf->ingest = nt_ingest_new();
  if (!mf->m || !mf->ingest) {
    memory_free(&mf->base);
    return NULL;
  }
  if (budget_bytes) nt_model_set_budget(mf->m, budget_bytes);
  return &mf->base;
}

int nt_feed_memory_push(nt_feed *f, const char *endpoint, uint32_t pid, const char *topic,
                        const void *body, size_t len, double at_s) {
  memory_feed *mf = as_memory(f);
  if (!mf || len > NT_MAX_MESSAGE_BYTES || mf->nq >= MAX_QUEUED) return -1;
  /* Cut short, either would name another endpoint or topic than the one handed. */
  if (strlen(endpoint) >= sizeof mf->q[0].endpoint || strlen(topic) >= sizeof mf->q[0].topic)
    return -1;
  if (mf->nq == mf->cap) {
    uint32_t cap = mf->cap ? mf->cap * 2 : 64;
    queued *q = realloc(mf->q, cap * sizeof *q);
    if (!q) return -1;
    mf->q = q;
    mf->cap = cap;
  }
  queued *e = &mf->q[mf->nq];
  memset(e, 0, sizeof *e);
  if (!(e->body = malloc(len ? len : 1))) return -1;
  if (len) memcpy(e->body, body, len);
  e->len = len;
  e->pid = pid;
  e->at_s = at_s;
  snprintf(e->endpoint, sizeof e->endpoint, "%s", endpoint);
  snprintf(e->topic, sizeof e->topic, "%s", topic);
  mf->nq++;
  return 0;
}

void nt_feed_memory_set_clock(nt_feed *f, double now_s) {
  memory_feed *mf = as_memory(f);
  if (mf) mf->now = now_s;
}

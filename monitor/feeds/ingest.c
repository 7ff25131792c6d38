/* The one router from wire messages to the model (ingest.h). */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/nccltop_proto.h"

struct nt_ingest {
  nt_snapshot *snap;
  nt_hello *hello;
};

nt_ingest *nt_ingest_new(void) {
  nt_ingest *in = calloc(1, sizeof *in);
  if (!in) return NULL;
  in->snap = nt_snapshot_new();
  in->hello = calloc(1, sizeof *in->hello);
  if (!in->snap || !in->hello) {
    nt_ingest_free(in);
    return NULL;
  }
  return in;
}

void nt_ingest_free(nt_ingest *in) {
  if (!in) return;
  nt_snapshot_free(in->snap);
  free(in->hello);
  free(in);
}

const nt_snapshot *nt_ingest_snapshot(const nt_ingest *in) {
  return in->snap;
}

static bool topic_is(const void *topic, size_t len, const char *name) {
  size_t n = strlen(name);
  return len == n && memcmp(topic, name, n) == 0;
}

/* A topic a newer publisher may send: "nccltop." and a plain name
 * (letters, digits, '.', '_', '-'); anything else is a bad message. */
static bool newer_topic(const char *topic, size_t len) {
  if (len <= 8 || len > 64 || memcmp(topic, "nccltop.", 8) != 0) return false;
  for (size_t i = 8; i < len; i++) {
    char c = topic[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

static void bind(uint32_t *pid, bool bind_first, uint32_t named) {
  if (bind_first && !*pid) *pid = named;
}

nt_ingested nt_ingest_message(nt_ingest *in, nt_model *m, const char *endpoint, uint32_t *pid,
                              bool bind_first, const void *topic, size_t topic_len,
                              const void *body, size_t len, double now_s) {
  char err[256], text[320];
  nt_ingested r = {NT_IN_UNKNOWN, false};
  const char *data = body;
  if (topic_is(topic, topic_len, NT_TOPIC_SNAPSHOT)) {
    r.topic = NT_IN_SNAPSHOT;
    r.ok = nt_snapshot_decode((const uint8_t *)data, len, in->snap, err, sizeof err) == 0;
    if (r.ok) {
      bind(pid, bind_first, in->snap->pid);
      nt_model_apply_snapshot(m, endpoint, *pid, in->snap, now_s);
    } else {
      snprintf(text, sizeof text, "snapshot: %s", err);
      nt_model_note_error(m, endpoint, text, now_s);
    }
  } else if (topic_is(topic, topic_len, NT_TOPIC_HELLO)) {
    r.topic = NT_IN_HELLO;
    r.ok = nt_hello_decode(data, len, in->hello, err, sizeof err) == 0;
    if (r.ok) {
      bind(pid, bind_first, in->hello->pid);
      nt_model_apply_hello(m, endpoint, *pid, in->hello, now_s);
    } else {
      nt_model_note_error(m, endpoint, err, now_s);
    }
  } else if (topic_is(topic, topic_len, NT_TOPIC_COMM)) {
    nt_comm_info c;
    r.topic = NT_IN_COMM;
    r.ok = nt_comm_decode(data, len, &c, err, sizeof err) == 0;
    if (r.ok) {
      bind(pid, bind_first, c.pid);
      nt_model_apply_comm(m, endpoint, *pid, &c, now_s);
    } else {
      nt_model_note_error(m, endpoint, err, now_s);
    }
  } else if (topic_is(topic, topic_len, NT_TOPIC_TOPOLOGY)) {
    r.topic = NT_IN_TOPOLOGY;
    r.ok = true;
    /* The model keeps what is shown steady and skips a re-sent file. */
    nt_model_set_topology(m, data, len, endpoint, now_s);
  } else if (topic_is(topic, topic_len, NT_TOPIC_GRAPHS)) {
    r.topic = NT_IN_GRAPHS;
    r.ok = true;
    nt_model_set_graphs(m, data, len, endpoint, now_s); /* a bad one is noted there */
  } else if (newer_topic(topic, topic_len)) {
    /* A topic of a newer plugin (PROTOCOL.md): not ours to judge, nothing
     * is wrong with the job or the message; skipped without a word. */
    r.topic = NT_IN_UNKNOWN;
    r.ok = true;
  } else {
    char clean[80];
    snprintf(text, sizeof text, "unknown topic '%s'%s",
             nt_sanitize(topic, topic_len < 40 ? topic_len : 40, clean, sizeof clean),
             topic_len > 40 ? "..." : "");
    nt_model_note_error(m, endpoint, text, now_s);
  }
  return r;
}

/* One message of the wire protocol into the model: decoded, checked and
 * applied, or noted as an error with its reason. The live source and the
 * replay of a recording both come through here, so a message means the
 * same wherever it was read. */
#ifndef NCCLTOP_TUI_INGEST_H
#define NCCLTOP_TUI_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/model.h"

typedef struct nt_ingest nt_ingest; /* decoding scratch, reused message after message */

nt_ingest *nt_ingest_new(void);
void nt_ingest_free(nt_ingest *in);

enum nt_ingest_topic {
  NT_IN_SNAPSHOT,
  NT_IN_HELLO,
  NT_IN_COMM,
  NT_IN_TOPOLOGY,
  NT_IN_GRAPHS,
  NT_IN_UNKNOWN,
};

typedef struct {
  int topic; /* enum nt_ingest_topic */
  bool ok;   /* decoded and handed to the model (which may still refuse it) */
} nt_ingested;

/* The message (topic, body) from `endpoint`, received at now_s. *pid is
 * whom the endpoint may speak for (0: the processes it introduces, as a
 * relay's or a recording's); with bind_first, a 0 becomes the first pid a
 * message names, before it is applied (a publisher from another PID
 * namespace, whose pids mean nothing here, speaks for that one only). */
nt_ingested nt_ingest_message(nt_ingest *in, nt_model *m, const char *endpoint, uint32_t *pid,
                              bool bind_first, const void *topic, size_t topic_len,
                              const void *body, size_t len, double now_s);

/* The snapshot the last message decoded into, if it was one (replay's
 * `export` reads its timings). */
const nt_snapshot *nt_ingest_snapshot(const nt_ingest *in);

#endif

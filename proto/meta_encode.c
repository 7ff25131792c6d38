/* Hello and communicator messages as JSON (PROTOCOL.md), written without
 * allocation by the plugin's publisher thread. Both carry the version this
 * code speaks, whatever the struct's major/minor say, as the snapshot
 * encoder does. */
#include <stdio.h>

#include "json_write.h"
#include "nccltop_proto.h"

size_t nt_hello_encode(const nt_hello *h, char *buf, size_t cap) {
  nt_jw w;
  char v[16];
  snprintf(v, sizeof v, "%u.%u", NT_PROTO_MAJOR, NT_PROTO_MINOR);
  nt_jw_init(&w, buf, cap);
  nt_jw_open(&w, NULL);
  nt_jw_str(&w, "v", v);
  nt_jw_str(&w, "type", "hello");
  nt_jw_str(&w, "host", h->host);
  nt_jw_u64(&w, "pid", h->pid);
  nt_jw_str(&w, "nccl_version", h->nccl_version);
  nt_jw_str(&w, "plugin_version", h->plugin_version);
  nt_jw_u64(&w, "abi", h->abi_version);
  if (h->clock[0]) nt_jw_str(&w, "clock", h->clock);
  nt_jw_u64_str(&w, "start_wall_ns", h->start_wall_ns);
  nt_jw_open(&w, "env");
  for (uint32_t i = 0; i < h->nenv && i < NT_MAX_ENV; i++)
    nt_jw_str(&w, h->env[i].name, h->env[i].value);
  nt_jw_close(&w);
  nt_jw_close(&w);
  return nt_jw_finish(&w);
}

size_t nt_comm_encode(const nt_comm_info *c, char *buf, size_t cap) {
  nt_jw w;
  char hash[17], v[16];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)c->comm_hash);
  snprintf(v, sizeof v, "%u.%u", NT_PROTO_MAJOR, NT_PROTO_MINOR);
  nt_jw_init(&w, buf, cap);
  nt_jw_open(&w, NULL);
  nt_jw_str(&w, "v", v);
  nt_jw_str(&w, "type", "comm");
  nt_jw_u64(&w, "pid", c->pid);
  nt_jw_str(&w, "hash", hash);
  nt_jw_str(&w, "name", c->name);
  nt_jw_i64(&w, "rank", c->rank);
  nt_jw_i64(&w, "nranks", c->nranks);
  nt_jw_i64(&w, "nnodes", c->nnodes);
  nt_jw_close(&w);
  return nt_jw_finish(&w);
}

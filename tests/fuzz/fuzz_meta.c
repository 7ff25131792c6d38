/* libFuzzer target: hello and communicator JSON decoding, and text
 * sanitizing of what they carry. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/nccltop_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static nt_hello h;
  nt_comm_info c;
  char err[256], out[512];
  if (nt_hello_decode((const char *)data, size, &h, err, sizeof err) == 0) {
    nt_sanitize(h.host, strlen(h.host), out, sizeof out);
    for (uint32_t i = 0; i < h.nenv; i++)
      nt_sanitize(h.env[i].value, strlen(h.env[i].value), out, sizeof out);
  }
  if (nt_comm_decode((const char *)data, size, &c, err, sizeof err) == 0)
    nt_sanitize(c.name, strlen(c.name), out, sizeof out);
  nt_sanitize((const char *)data, size, out, sizeof out);
  return 0;
}

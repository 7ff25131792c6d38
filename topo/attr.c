/* How NCCL reads attribute values: bus ids, integers, and its prefix tables
 * for PCI speeds and classes (first matching prefix wins, with a fallback),
 * plus the sanitizer for strings shown to a user. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

uint64_t topo_busid_num(const char *s) {
  char hex[17];
  int n = 0;
  for (; s && *s && n < 16; s++) {
    if (*s == ':' || *s == '.') continue;
    bool digit = (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F');
    if (!digit) break;
    hex[n++] = *s;
  }
  hex[n] = '\0';
  /* NCCL uses strtol: a value past LONG_MAX saturates. */
  unsigned long long v = strtoull(hex, NULL, 16);
  return v > (unsigned long long)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)v;
}

bool topo_parse_int(const char *s, long long min, long long max, long long *out) {
  if (!s) return false;
  while (*s == ' ') s++;
  if (!*s) { /* NCCL's strtol reads "" as 0 */
    *out = 0;
    return min <= 0 && 0 <= max;
  }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  while (*end == ' ') end++;
  if (errno || end == s || *end || v < min || v > max) return false;
  *out = v;
  return true;
}

int topo_pci_lane_code(const char *speed) {
  static const struct {
    const char *key;
    int code;
  } table[] = {{"2.5 GT/s", 15},        {"5 GT/s", 30},         {"8 GT/s", 60},
               {"16 GT/s", 120},        {"32 GT/s", 240},       {"2.5 GT/s PCIe", 15},
               {"5.0 GT/s PCIe", 30},   {"8.0 GT/s PCIe", 60},  {"16.0 GT/s PCIe", 120},
               {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};
  for (size_t i = 0; speed && i < sizeof table / sizeof table[0]; i++)
    if (!strncmp(speed, table[i].key, strlen(table[i].key))) return table[i].code;
  return 60; /* NCCL's fallback: Gen3, even for "16.0 GT/s" without "PCIe" */
}

int topo_pci_class(const char *cls) {
  static const struct {
    const char *key;
    int type;
  } table[] = {{"0x060400", NT_NODE_PCI}, {"0x080100", NT_NODE_PCI}, {"0x068000", NT_NODE_NVS},
               {"0x068001", NT_NODE_CPU}, {"0x03", NT_NODE_GPU},     {"0x02", NT_NODE_NIC}};
  for (size_t i = 0; cls && i < sizeof table / sizeof table[0]; i++)
    if (!strncmp(cls, table[i].key, strlen(table[i].key))) return table[i].type;
  return NT_NODE_PCI;
}

void topo_sanitize(const char *in, char *out, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (!cap) return;
  for (const unsigned char *s = (const unsigned char *)(in ? in : ""); *s; s++) {
    if (*s >= 0x20 && *s < 0x7f && *s != '\\') {
      if (o + 1 >= cap) break;
      out[o++] = (char)*s;
    } else {
      if (o + 4 >= cap) break;
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[*s >> 4];
      out[o++] = hex[*s & 15];
    }
  }
  out[o] = '\0';
}

/* The row tables of snapshot_rows.h as data, for what reads them rather
 * than encoding with them: the test that holds them to PROTOCOL.md, and
 * readers that walk a row's fields by name. */
#include "wire.h"

#define NT_WK_OF_U8  NT_WK_U8
#define NT_WK_OF_U16 NT_WK_U16
#define NT_WK_OF_U32 NT_WK_U32
#define NT_WK_OF_U64 NT_WK_U64
#define NT_WK_OF_I32 NT_WK_I32

#define DESC_F(type, m, since, read, absent, check)                                                \
  {#m, NT_WK_OF_##type, NT_WSIZE_##type, 1, since, read},
#define DESC_A(type, m, n, since) {#m, NT_WK_OF_##type, NT_WSIZE_##type * (n), n, since, since},
#define DESC_R(bytes, since)      {NULL, NT_WK_RESERVED, bytes, 1, since, since},
#define DESC_L(m, since)          {#m, NT_WK_NAME_LEN, 1, 1, since, since},
#define DESC_S(m, max, since)     {#m, NT_WK_NAME, (max) + 1, 1, since, since},
#define DESC(TABLE)                                                                                \
  { TABLE(DESC_F, DESC_A, DESC_R, DESC_L, DESC_S) }

static const nt_wire_field process[] = DESC(NT_PROCESS_ROW), comm[] = DESC(NT_COMM_ROW),
                           proxy[] = DESC(NT_PROXY_ROW), channel[] = DESC(NT_CHANNEL_ROW),
                           kernel[] = DESC(NT_KERNEL_ROW), ops[] = DESC(NT_OP_ROW),
                           phase[] = DESC(NT_PHASE_ROW), oplog[] = DESC(NT_OPLOG_ROW),
                           seq[] = DESC(NT_SEQ_ROW), net[] = DESC(NT_NET_ROW),
                           variant[] = DESC(NT_VARIANT_ROW);

const nt_wire_field *nt_wire_fields(int type, size_t *n) {
#define CASE(sec, table)                                                                           \
  case sec: *n = sizeof table / sizeof table[0]; return table;
  switch (type) {
    CASE(NT_SEC_PROCESS, process)
    CASE(NT_SEC_COMMS, comm)
    CASE(NT_SEC_PROXY, proxy)
    CASE(NT_SEC_CHANNELS, channel)
    CASE(NT_SEC_KERNELS, kernel)
    CASE(NT_SEC_OPS, ops)
    CASE(NT_SEC_PHASES, phase)
    CASE(NT_SEC_OPLOG, oplog)
    CASE(NT_SEC_SEQ, seq)
    CASE(NT_SEC_NET, net)
    CASE(NT_SEC_VARIANTS, variant)
  default: *n = 0; return NULL;
  }
#undef CASE
}

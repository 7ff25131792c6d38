/* libFuzzer target: the plugin's ABI entry points fed random call
 * sequences: random types and states, NULL and foreign handles and
 * descriptors, foreign pids, stops without starts, double stops. The plugin
 * is compiled into this binary, so its code is covered.
 *
 * What NCCL guarantees stays true: the strings of Coll and P2p descriptors
 * (function, datatype, algorithm, protocol) are NCCL's own, or NULL, and a
 * net plugin's descriptor is its own memory; their contents are fuzzed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../plugin/nccl_profiler_abi.h"

extern const nt_profiler_v7 ncclProfiler_v7;
extern const nt_profiler_v5 ncclProfiler_v5;
extern const nt_profiler_v4 ncclProfiler_v4;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static void *ctx[2];
  static int mask;
  static void *handles[64];
  if (!ctx[0]) {
    setenv("NCCLTOP_DIR", "/tmp/nccltop-fuzz-plugin", 1);
    ncclProfiler_v5.init(&ctx[0], 1, &mask, "fuzz", 1, 2, 0, NULL);
    ncclProfiler_v4.init(&ctx[1], &mask, "fuzz4", 2, 1, 2, 1, NULL);
  }
  static const uint64_t types[] = {1,   2,    4,    8,  16, 32, 64,      128,     256,
                                   512, 1024, 2048, 64, 64, 64, 1 << 15, 1 << 15, 1u << 20};
  static const char *const names[] = {NULL,    "AllReduce", "Send",     "Recv",        "RING",
                                      "LL128", "SIMPLE",    "TREE",     "ncclFloat32", "bogus",
                                      "",      "AllGather", "ncclInt8", "NVLS_TREE"};
  static nt_net_ib_v1 ib;
  static nt_net_sock_v1 so;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    const uint8_t *op = data + i;
    void *h = handles[op[1] % 64];
    switch (op[0] % 6) {
    case 0:
    case 1: {
      nt_descr_v5 d;
      memset(&d, 0, sizeof d);
      d.type = types[op[2] % (sizeof types / sizeof types[0])];
      d.parentObj = op[3] & 1 ? h : op[3] & 2 ? (void *)(uintptr_t)(op[3] * 4096) : NULL;
      d.proxyOp.pid = op[3] & 4 ? getpid() + 1 : getpid();
      d.proxyOp.channelId = op[3];
      d.proxyOp.peer = op[2];
      d.proxyOp.isSend = op[3] & 8;
      if (d.type == 16) d.proxyStep.step = op[3];
      if (d.type == 2 || d.type == 4 || d.type == 512 || d.type == 1024) {
        memset(&d.coll, 0, sizeof d.coll);
        const size_t n = sizeof names / sizeof names[0];
        d.coll.seqNumber = (uint64_t)op[2] << 56 | op[3];
        d.coll.count = (size_t)op[3] << (op[2] % 40);
        d.coll.nChannels = op[2];
        d.coll.root = op[3] - 128;
        if (d.type == 2) {
          d.coll.func = names[op[2] % n];
          d.coll.datatype = names[op[3] % n];
          d.coll.algo = names[(op[2] + op[3]) % n];
          d.coll.proto = names[(op[2] ^ op[3]) % n];
        } else if (d.type == 4) {
          d.p2p.func = names[op[2] % n];
          d.p2p.datatype = names[op[3] % n];
          d.p2p.peer = op[3];
        } else {
          d.collApi.func = names[op[2] % n]; /* p2pApi.func sits at the same place */
          d.collApi.graphCaptured = op[3] & 1;
        }
      } else if (d.type == 128) {
        ib.type = op[2] & 3;
        ib.qp.device = op[3];
        ib.qp.qpNum = op[2];
        ib.qp.length = (size_t)op[3] << 10;
        so.type = op[3] & 3;
        so.sock.fd = op[2];
        /* The type in the id says which struct the plugin handed over. */
        d.netPlugin.id = (int64_t)((op[2] % 4) << 16 | (op[3] % 3));
        d.netPlugin.data = op[3] & 128 ? NULL : (op[2] % 4) == 2 ? (void *)&so : (void *)&ib;
      }
      void *c = op[3] & 16 ? ctx[1] : op[3] & 32 ? (void *)&mask : ctx[0];
      if (op[0] & 8) {
        /* NCCL 2.31's v7: userTags (a few values, and the phase table
         * filling up) and KernelPhase under any parent. */
        nt_descr_v7 d7;
        memset(&d7, 0, sizeof d7);
        memcpy(&d7, &d, sizeof d);
        if (d.type == 2) d7.coll.userTag = op[2] & 7 ? op[2] : 0;
        if (d.type == 4) d7.p2p.userTag = (uint64_t)op[2] * op[3];
        if (d.type == 1 << 15) {
          d7.kernelPhase.channelId = op[3];
          d7.kernelPhase.phaseId = op[2] % 5;
          d7.kernelPhase.pTimer = (uint64_t)op[3] * 1000;
        }
        ncclProfiler_v7.startEvent(c, &handles[op[1] % 64], op[3] & 64 ? NULL : &d7);
      } else {
        ncclProfiler_v5.startEvent(c, &handles[op[1] % 64], op[3] & 64 ? NULL : &d);
      }
      break;
    }
    case 2:
    case 3: {
      nt_state_args_v5 a = {.proxyStep = {.transSize = op[3] * 1000u}};
      ncclProfiler_v5.recordEventState(h, op[2] % 32, op[3] & 1 ? NULL : &a);
      break;
    }
    case 4: ncclProfiler_v5.stopEvent(h); break;
    case 5: ncclProfiler_v5.stopEvent(op[2] & 1 ? (void *)&mask : (void *)(uintptr_t)op[3]); break;
    }
  }
  /* Handles stay valid (pooled) across inputs, as NCCL may keep them. */
  return 0;
}

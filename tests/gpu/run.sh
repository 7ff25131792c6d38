#!/bin/sh
# The real-NCCL test: two ranks on one GPU, forced onto NCCL's network
# transport (different NCCL_HOSTID per rank, P2P and SHM off, Socket on lo),
# with the nccltop plugin loaded and the viewer in batch JSON mode. Reports
# itself skipped where no GPU is visible.
#   usage: sh tests/gpu/run.sh BUILD_DIR [SECONDS]
BUILD=${1:-build}
SECONDS_RUN=${2:-25}
APP="$BUILD/gpu/nccl_app"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu test: skipped (no GPU visible)"
  exit 0
fi
if [ ! -x "$APP" ]; then
  echo "gpu test: skipped ($APP not built: no CUDA/NCCL headers where it was built)"
  exit 0
fi
OUTDIR=${OUT:-$BUILD/gpu}
mkdir -p "$OUTDIR"
PLUGIN=$(cd "$(dirname "$BUILD/libnccl-profiler-nccltop.so")" && pwd)/libnccl-profiler-nccltop.so
DIR=$(mktemp -d /tmp/nccltop-gpu-XXXXXX) && chmod 700 "$DIR"
PORT=$((29000 + $$ % 1000))
export CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket \
  NCCL_NET_PLUGIN=none NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_COMM_ID=127.0.0.1:$PORT \
  NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,PROFILE \
  NCCLTOP_DIR="$DIR"
"$BUILD/nccltop" -b --json -d 500 -n $((SECONDS_RUN * 2 + 10)) --dir "$DIR" >"$OUTDIR/frames.jsonl" &
VIEWER=$!
NCCL_HOSTID=nccltop-a "$APP" 0 2 "$SECONDS_RUN" >"$OUTDIR/rank0.log" 2>&1 &
R0=$!
NCCL_HOSTID=nccltop-b "$APP" 1 2 "$SECONDS_RUN" >"$OUTDIR/rank1.log" 2>&1 &
R1=$!
wait $R0; S0=$?
wait $R1; S1=$?
sleep 1
kill $VIEWER 2>/dev/null; wait $VIEWER 2>/dev/null
rm -rf "$DIR"
echo "ranks exited $S0 $S1"
grep -h -o "PROFILER/Plugin: Loaded [^ ]* (v[0-9])" "$OUTDIR"/rank*.log | sort -u
grep -h -o "NCCL version [0-9.]*" "$OUTDIR"/rank0.log | head -1
fail=0
[ "$S0" = 0 ] && [ "$S1" = 0 ] || { echo "FAIL ranks exited $S0 $S1"; tail -5 "$OUTDIR"/rank*.log; fail=1; }
grep -q "PROFILER/Plugin: Loaded" "$OUTDIR/rank0.log" && echo "PASS NCCL loaded the plugin" || { echo "FAIL NCCL did not load the plugin"; fail=1; }
grep -q "NET/Socket" "$OUTDIR/rank0.log" && echo "PASS traffic went through NET/Socket" || { echo "FAIL no NET/Socket"; fail=1; }
"$BUILD/gpu/check_json" 2 <"$OUTDIR/frames.jsonl" || fail=1
tail -n 1 "$OUTDIR/frames.jsonl" | head -c 3000 >"$OUTDIR/last_frame.json"
[ $fail = 0 ] && echo "gpu test: passed" || echo "gpu test: FAILED"
exit $fail

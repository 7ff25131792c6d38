#!/bin/sh
# The real-NCCL test: two ranks on one GPU, forced onto NCCL's network
# transport (a different NCCL_HOSTID per rank, P2P and SHM off, Socket on lo),
# with the nccltop plugin loaded and the viewer in batch JSON mode alongside.
# Builds tests/gpu/nccl_app and check_json into BUILD/gpu/ if they are missing
# or older than their sources; reports itself skipped where CUDA/NCCL headers
# or a GPU are missing. Outputs go to $OUT if set, else BUILD/gpu/.
#   usage: sh tests/gpu/run.sh BUILD_DIR [SECONDS] [--record DIR]  (default: build 25)
# With a sanitized BUILD (make BUILD=build/san SAN=1) the plugin runs under
# ASan inside NCCL: libasan is preloaded into the ranks.
# --record DIR: the ranks load the recording plugin (tests/fixtures/recorder.c,
# built into BUILD/gpu/) instead of nccltop's, which writes every profiler
# call NCCL makes (mask 0xFFFF, CLOCK_MONOTONIC, buffered in memory) to
# DIR/rankN.trace, xz-compressed when xz is there; NCCL's logs go beside
# them, and `nccltop sim --trace DIR` must then accept and play them.
set -u
usage() { echo "usage: sh tests/gpu/run.sh BUILD_DIR [SECONDS >= 1] [--record DIR]" >&2; exit 2; }
RECORD=''
set -- "$@" --end
BUILD='' SECS=''
while [ "$1" != --end ]; do
  case $1 in
  --record)
    if [ "$2" = --end ] || [ -z "$2" ]; then usage; fi
    RECORD=$2
    shift 2
    ;;
  --record=*) RECORD=${1#--record=}; [ -n "$RECORD" ] || usage; shift ;;
  -*) usage ;;
  *) if [ -z "$BUILD" ]; then BUILD=$1; elif [ -z "$SECS" ]; then SECS=$1; else usage; fi; shift ;;
  esac
done
BUILD=${BUILD:-build}
SECS=${SECS:-25}
case $SECS in '' | *[!0-9]* | 0) usage ;; esac
CUDA=${CUDA:-/usr/local/cuda}
CC=${CC:-cc}
GPUDIR="$BUILD/gpu"
APP="$GPUDIR/nccl_app"
CHECK="$GPUDIR/check_json"

# ---- build (the Makefile's gpu-build target does the same) ----
if [ ! -f "$CUDA/include/nccl.h" ] || [ ! -f "$CUDA/include/cuda_runtime.h" ]; then
  echo "gpu test: skipped: no CUDA/NCCL headers in $CUDA/include"
  exit 0
fi
mkdir -p "$GPUDIR" || exit 1
stale() { [ ! -x "$1" ] || [ -n "$(find "$2" -newer "$1")" ]; }
if stale "$APP" tests/gpu/nccl_app.c; then
  $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -I"$CUDA/include" -o "$APP" \
    tests/gpu/nccl_app.c -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lnccl -lcudart -ldl ||
    { echo "gpu test: FAILED to build $APP"; exit 1; }
fi
RECORDER="$GPUDIR/librecorder.so"
if [ -n "$RECORD" ] && stale "$RECORDER" tests/fixtures/recorder.c; then
  # Plain (never sanitized): it runs inside NCCL with nothing preloaded.
  $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -fPIC -fvisibility=hidden -shared \
    -o "$RECORDER" tests/fixtures/recorder.c -lpthread ||
    { echo "gpu test: FAILED to build $RECORDER"; exit 1; }
fi
if stale "$CHECK" tests/gpu/check_json.c; then
  # shellcheck disable=SC2046 # pkg-config prints several flags
  $CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 $(pkg-config --cflags libcjson) \
    -o "$CHECK" tests/gpu/check_json.c -lcjson || { echo "gpu test: FAILED to build $CHECK"; exit 1; }
fi

# ---- a GPU? ----
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu test: skipped (no GPU visible)"
  exit 0
fi
PLUGIN_REL=${NCCLTOP_GPU_PLUGIN:-$BUILD/libnccl-profiler-nccltop.so}
[ -n "$RECORD" ] && PLUGIN_REL=$RECORDER
for f in "$PLUGIN_REL" "$BUILD/nccltop"; do
  [ -f "$f" ] || { echo "gpu test: FAILED: $f missing (run make first)"; exit 1; }
done
PLUGIN=$(cd "$(dirname "$PLUGIN_REL")" && pwd)/$(basename "$PLUGIN_REL")
OUTDIR=${OUT:-$GPUDIR}
[ -n "$RECORD" ] && OUTDIR=$RECORD
mkdir -p "$OUTDIR" || exit 1
if [ -n "$RECORD" ] && ls "$OUTDIR"/rank*.trace* >/dev/null 2>&1; then
  echo "gpu test: $OUTDIR already holds recordings; give an empty or new directory" >&2
  exit 2
fi
nvidia-smi -L | head -n 1

# A sanitized plugin needs the ASan runtime first in the process; CUDA needs
# ASan's shadow gap left unprotected, and NCCL/CUDA keep memory to the end.
PRELOAD=
ASAN_LIB=$(ldd "$PLUGIN" 2>/dev/null | awk '/libasan/ { print $3; exit }')
if [ -n "$ASAN_LIB" ]; then
  PRELOAD="LD_PRELOAD=$ASAN_LIB"
  echo "sanitized plugin: preloading $ASAN_LIB into the ranks"
fi
ASAN_RANK="protect_shadow_gap=0:detect_leaks=0"

DIR=$(mktemp -d /tmp/nccltop-gpu-XXXXXX) || exit 1
chmod 700 "$DIR" || exit 1
VIEWER='' R0='' R1=''
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  for p in $R0 $R1 $VIEWER; do kill "$p" 2>/dev/null; done
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

PORT=${GPU_TEST_PORT:-$((29000 + $$ % 1000))}
export CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket \
  NCCL_NET_PLUGIN=none NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_COMM_ID="127.0.0.1:$PORT" \
  NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,PROFILE \
  NCCLTOP_DIR="$DIR"
# The ranks get a hard limit so a hang fails the test instead of stalling it.
LIMIT=$((SECS + 180))
TIMEOUT=
command -v timeout >/dev/null 2>&1 && TIMEOUT="timeout -k 10 $LIMIT"

# Recording: every class NCCL knows, the tuner's choices in the logs.
if [ -n "$RECORD" ]; then
  export NT_RECORDER_MASK=0xFFFF NT_RECORDER_BUFFER=1 NCCL_DEBUG_SUBSYS=INIT,NET,PROFILE,TUNING,ENV
  PRELOAD='' # the recorder is never sanitized
fi
# Frames every 500 ms for longer than the ranks can run; stopped when they end.
if [ -z "$RECORD" ]; then
  "$BUILD/nccltop" -b --json -d 500 -n $((LIMIT * 2)) --dir "$DIR" >"$OUTDIR/frames.jsonl" \
    2>"$OUTDIR/viewer.log" &
  VIEWER=$!
fi
echo "ranks: 2 on GPU 0 for about $SECS s (NCCL_COMM_ID=127.0.0.1:$PORT), plugin $PLUGIN"
# shellcheck disable=SC2086 # PRELOAD and TIMEOUT are empty or words
$TIMEOUT env $PRELOAD ASAN_OPTIONS="$ASAN_RANK" NCCL_HOSTID=nccltop-gpu-a \
  NT_RECORDER_FILE="$OUTDIR/rank0.trace" "$APP" 0 2 "${SECS}s" >"$OUTDIR/rank0.log" 2>&1 &
R0=$!
# shellcheck disable=SC2086
$TIMEOUT env $PRELOAD ASAN_OPTIONS="$ASAN_RANK" NCCL_HOSTID=nccltop-gpu-b \
  NT_RECORDER_FILE="$OUTDIR/rank1.trace" "$APP" 1 2 "${SECS}s" >"$OUTDIR/rank1.log" 2>&1 &
R1=$!
wait "$R0"; S0=$?
wait "$R1"; S1=$?
R0='' R1=''
if [ -z "$RECORD" ]; then
  sleep 2 # the plugins' final snapshots
  kill "$VIEWER" 2>/dev/null
  wait "$VIEWER" 2>/dev/null
  VIEWER=
fi

grep -h '^rank [0-9]* of [0-9]*: NCCL' "$OUTDIR"/rank*.log
ABI=$(grep -h -o 'PROFILER/Plugin: Loaded [^ ]* (v[0-9]*)' "$OUTDIR"/rank*.log | sort -u)
echo "profiler ABI NCCL loaded: ${ABI:-none found in the logs}"
grep -h 'rank [0-9]*: .*loops in' "$OUTDIR"/rank*.log
fail=0
pass() { echo "PASS $1"; }
failed() { echo "FAIL $1"; fail=1; }
if [ "$S0" = 0 ] && [ "$S1" = 0 ]; then pass "both ranks ran and verified their results"
else
  failed "ranks exited $S0 and $S1 (124 or 137 mean killed after $LIMIT s)"
  tail -n 8 "$OUTDIR"/rank0.log "$OUTDIR"/rank1.log
fi
for r in 0 1; do
  log="$OUTDIR/rank$r.log"
  if grep -q 'PROFILER/Plugin: Loaded' "$log"; then pass "rank $r: NCCL loaded the plugin"
  else failed "rank $r: no 'PROFILER/Plugin: Loaded' in $log"; fi
  if grep -q 'NET/Socket' "$log"; then pass "rank $r: NCCL used NET/Socket"
  else failed "rank $r: no 'NET/Socket' in $log"; fi
done
if [ -n "$ASAN_LIB" ] && grep -q 'ERROR: AddressSanitizer\|runtime error:' "$OUTDIR"/rank*.log; then
  failed "the sanitizers reported errors in the ranks"
  grep -h -A 12 'ERROR: AddressSanitizer\|runtime error:' "$OUTDIR"/rank*.log | head -n 40
fi
if [ -n "$RECORD" ]; then
  # The recordings: non-empty, compressed, and played by nccltop's player
  # through nccltop's plugin (which checks every line first).
  NCCL_VER=$(grep -h -o 'NCCL version [^ ]*' "$OUTDIR"/rank0.log | head -n 1)
  for r in 0 1; do
    t="$OUTDIR/rank$r.trace"
    if [ -s "$t" ]; then pass "rank $r: $(wc -l <"$t") calls recorded"
    else failed "rank $r: nothing recorded in $t"; fi
    mv "$OUTDIR/rank$r.log" "$OUTDIR/rank$r.nccl-log"
  done
  if command -v xz >/dev/null 2>&1; then xz -9 -f "$OUTDIR"/rank*.trace "$OUTDIR"/rank*.nccl-log; fi
  PLAY=$(mktemp -d /tmp/nccltop-gpu-play-XXXXXX) && chmod 700 "$PLAY" || exit 1
  if "$BUILD/nccltop" sim --trace "$OUTDIR" --speed max --quiet --dir "$PLAY" 2>"$PLAY.err"; then
    pass "nccltop sim --trace plays the recordings"
  else
    failed "nccltop sim --trace refused or failed: $(head -n 1 "$PLAY.err")"
  fi
  rm -rf "$PLAY" "$PLAY.err"
  {
    echo "# Recorded by tests/gpu/run.sh --record on $(date -u +%Y-%m-%d)"
    echo "- GPU: $(nvidia-smi -L | head -n 1)"
    echo "- ${NCCL_VER:-NCCL version: not found in the logs}"
    echo "- tests/gpu/nccl_app: 2 ranks on GPU 0 for $SECS s, NCCL's socket transport on lo"
    echo "  (a NCCL_HOSTID per rank, NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket)"
    echo "- the recorder (tests/fixtures/recorder.c): mask 0xFFFF, CLOCK_MONOTONIC, buffered"
    echo "- ${ABI:-profiler ABI: not found in the logs}"
  } >"$OUTDIR/README.md"
  echo "recordings: $OUTDIR (rank*.trace*, rank*.nccl-log*, README.md)"
else
  "$CHECK" 2 <"$OUTDIR/frames.jsonl" || fail=1
  echo "outputs: $OUTDIR/frames.jsonl, rank0.log, rank1.log, viewer.log"
fi
if [ $fail = 0 ]; then echo "gpu test: passed"; else echo "gpu test: FAILED"; fi
exit $fail

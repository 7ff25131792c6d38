#!/bin/sh
# Runs the benchmarks and prints their tables. Budgets are reported, never
# asserted (timings depend on the machine); the script fails only when a
# benchmark itself cannot run.
#   usage: sh bench/run.sh BUILD_DIR        (BENCH_COLLECTIVES=N: longer runs)
BUILD=${1:-build}
PLUGIN="$BUILD/libnccl-profiler-nccltop.so"
BASELINE="$BUILD/bench/libnccl-profiler-clockonly.so"
status=0
echo "== plugin hot path (bench_plugin)"
if [ ! -f "$PLUGIN" ]; then
  echo "($PLUGIN not built: comparing the baseline with itself)"
  PLUGIN=$BASELINE
fi
"$BUILD/bench/bench_plugin" "$PLUGIN" "$BASELINE" "${BENCH_COLLECTIVES:-2000}" || status=1
echo
echo "== plugin on real NCCL call sequences (bench_replay)"
TRACES=tests/traces/nccl-2.28.9-pytorch
"$BUILD/bench/bench_replay" "$PLUGIN" "$BASELINE" "$TRACES/story2" "$TRACES/story4" || status=1
for b in "$BUILD"/bench/bench_*; do
  case "$b" in */bench_plugin | */bench_replay | *.d) continue ;; esac
  [ -x "$b" ] || continue
  echo
  echo "== $(basename "$b")"
  "$b" || status=1
done
[ $status = 0 ] || echo "bench: a benchmark failed to run"
exit $status

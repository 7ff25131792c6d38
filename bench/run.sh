#!/bin/sh
# Runs the benchmarks and prints their tables (reports, never assertions).
set -e
BUILD=${1:-build}
echo "== plugin hot path"
"$BUILD/bench/bench_plugin" "$BUILD/libnccl-profiler-nccltop.so" \
  "$BUILD/bench/libnccl-profiler-clockonly.so" "${BENCH_COLLECTIVES:-400}"
for b in "$BUILD"/bench/bench_*; do
  case "$b" in */bench_plugin | *.d) continue ;; esac
  [ -x "$b" ] || continue
  echo; echo "== $(basename "$b")"; "$b"
done

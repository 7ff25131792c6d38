#!/bin/sh
# Runs the benchmarks and prints their tables. Budgets are reported, never
# asserted (timings depend on the machine); the script fails only when a
# benchmark itself cannot run.
#   usage: sh bench/run.sh BUILD_DIR        (BENCH_COLLECTIVES=N: longer runs)
BUILD=${1:-build}
PLUGIN="$BUILD/libnccl-profiler-nccltop.so"
BASELINE="$BUILD/bench/libnccl-profiler-clockonly.so"
status=0
# The plugin's ratios depend on the CPU and on what else uses its caches:
# every table below is of this machine.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
clk=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
echo "machine: ${cpu:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) CPUs online, kernel clocksource ${clk:-unknown}, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
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

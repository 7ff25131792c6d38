#!/bin/sh
# Instructions and cache misses per ABI call of plugin builds on the real
# NCCL recordings' call sequences (bench_replay), counted by callgrind:
# exact and repeatable where wall time on a shared machine is not (a ratio
# within about 7% of 1.0 there is noise). Use it to compare two builds of
# the plugin; it cannot compare against the clock-only plugin, whose
# clock_gettime runs in the kernel's vDSO that valgrind does not count.
# Caches as callgrind models them: L1 from the machine, and a 1 MiB
# last level standing for the L2 a core has to itself.
#   usage: sh bench/instructions.sh PLUGIN.so [PLUGIN.so...]     (needs valgrind)
set -eu
[ $# -gt 0 ] || { echo "usage: sh bench/instructions.sh PLUGIN.so [PLUGIN.so...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "bench/instructions.sh: needs valgrind" >&2; exit 2; }
B=build/callgrind
make -s BUILD=$B CFLAGS="-DLOOPS=2 -DREPS=1" $B/bench/bench_replay $B/bench/libnccl-profiler-clockonly.so
T=tests/traces/nccl-2.28.9-pytorch
out=$(mktemp -d "${TMPDIR:-/tmp}/nccltop-instr-XXXXXX")
trap 'rm -rf "$out"' EXIT
echo "| plugin | ABI calls | instructions/call | L1 misses/call | L2 misses/call |"
echo "|---|---|---|---|---|"
for p in "$@"; do
  valgrind --tool=callgrind --cache-sim=yes --LL=1048576,16,64 --callgrind-out-file="$out/cg" \
    $B/bench/bench_replay "$p" $B/bench/libnccl-profiler-clockonly.so $T/story2 $T/story4 \
    >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
  # The three entry points as the replay called them: their inclusive
  # cost and how often, from the caller's side of callgrind's tree.
  callgrind_annotate --inclusive=yes --tree=calling "$out/cg" 2>/dev/null |
    sed -E 's/\( *[0-9.]+%\)//g' |
    awk -v p="$p" '
      function num(s) { gsub(/,/, "", s); return s + 0 }
      /> [^ ]*:(start_v5|record_v4|stop_any) \(/ && !/clockonly/ {
        c = $0; sub(/.*\(/, "", c); sub(/x\).*/, "", c)
        calls += num(c); ir += num($1); d1 += num($5) + num($6); ll += num($8) + num($9) }
      END { if (!calls) { print "bench/instructions.sh: no ABI calls counted" > "/dev/stderr"; exit 1 }
            printf "| %s | %d | %.1f | %.3f | %.3f |\n", p, calls, ir / calls, d1 / calls, ll / calls }'
done

#!/bin/sh
# Runs each libFuzzer target for $FUZZ_SECONDS on its seed corpus
# (tests/fuzz/corpus/NAME, read only) plus build/fuzz/corpus/NAME (new
# inputs), FUZZ_JOBS targets at a time (default 2; each fuzzes on one core).
# A crash leaves its reproducer in build/fuzz/ and fails the run; add it to
# tests/fuzz/corpus/NAME once fixed.
set -u
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}
results=$(mktemp -d "${TMPDIR:-/tmp}/nccltop-fuzz-XXXXXX") || exit 2
trap 'rm -rf "$results"' EXIT
one='
  t=$1 secs=$2 dir=$3
  mkdir -p "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t"
  out=$("build/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build/fuzz/$t-" "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t" 2>&1)
  rc=$?
  stats=$(printf "%s\n" "$out" | grep -E "^(#[0-9]+|Done)" | tail -n 1)
  if [ $rc = 0 ]; then echo "fuzz $t: ok ${secs}s: $stats" >"$dir/$t"
  else { echo "fuzz $t: FAILED (rc $rc)"; printf "%s\n" "$out" | tail -n 30; } >"$dir/$t.failed"; fi
'
for t in "$@"; do printf '%s\n' "$t"; done | xargs -P "$jobs" -I{} sh -c "$one" sh {} "$secs" "$results"
fail=0
for t in "$@"; do
  if [ -f "$results/$t" ]; then cat "$results/$t"
  elif [ -f "$results/$t.failed" ]; then cat "$results/$t.failed"; fail=1
  else echo "fuzz $t: did not run"; fail=1; fi
done
exit $fail

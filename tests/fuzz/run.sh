#!/bin/sh
# Runs each libFuzzer target for $FUZZ_SECONDS on its seed corpus
# (tests/fuzz/corpus/NAME, read only) plus build/fuzz/corpus/NAME (new
# inputs). A crash leaves its reproducer in build/fuzz/ and fails the run;
# add it to tests/fuzz/corpus/NAME once fixed.
set -u
secs=${FUZZ_SECONDS:-60}
fail=0
for t in "$@"; do
  mkdir -p "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t"
  out=$("build/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build/fuzz/$t-" "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t" 2>&1)
  rc=$?
  stats=$(printf '%s\n' "$out" | grep -E '^(#[0-9]+|Done)' | tail -n 1)
  if [ $rc = 0 ]; then echo "fuzz $t: ok ${secs}s: $stats"
  else echo "fuzz $t: FAILED (rc $rc)"; printf '%s\n' "$out" | tail -n 30; fail=1; fi
done
exit $fail

#!/bin/sh
# Runs the test binaries given, TEST_JOBS at a time (default 1), each under
# a time limit (TEST_TIMEOUT seconds, default 600: a hung test is killed and
# counted as failed, the rest still run). Each binary's output is printed
# whole when it ends, under "== NAME (SECONDS s)"; then the total, as each
# binary prints it ("N passed, N failed"), and the slowest binaries.
# Exits non-zero if any test failed, crashed or ran out of time.
#   usage: [TEST_JOBS=N] [TEST_TIMEOUT=S] sh tests/run.sh BINARY...
set -u
jobs=${TEST_JOBS:-1}
limit=${TEST_TIMEOUT:-600}
case $jobs in '' | *[!0-9]* | 0) echo "run.sh: TEST_JOBS must be a positive number" >&2; exit 2 ;; esac
case $limit in '' | *[!0-9]* | 0) echo "run.sh: TEST_TIMEOUT must be a positive number" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "run.sh: no test binaries given" >&2; exit 2; }

results=$(mktemp -d "${TMPDIR:-/tmp}/nccltop-run-XXXXXX") || exit 2
trap 'rm -rf "$results"' EXIT
trap 'exit 130' INT TERM

# One binary: its output to a file, then printed in one piece (a lock keeps
# two binaries' blocks from interleaving), and "rc seconds name" recorded.
# Runs in its own shell, from xargs: $1 the binary, $2 the results folder,
# $3 the time limit.
one='
  t=$1 dir=$2 limit=$3
  key=$(printf "%s" "$t" | tr "/" "_")
  start=$(date +%s.%N)
  timeout -k 10 "$limit" "$t" >"$dir/$key.out" 2>&1
  rc=$?
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" "BEGIN { printf \"%.1f\", b - a }")
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo "killed after ${limit} s (TEST_TIMEOUT)" >>"$dir/$key.out"
  echo "$rc $secs $t" >"$dir/$key.rc"
  {
    flock 9
    echo "== $t ($secs s)"
    grep -v "^[0-9]* passed, [0-9]* failed$" "$dir/$key.out" | sed "s/^/   /"
  } 9>"$dir/.lock"
'
for t in "$@"; do printf '%s\n' "$t"; done |
  xargs -P "$jobs" -I{} sh -c "$one" sh {} "$results" "$limit"

passed=0; failed=0; broken=""
for t in "$@"; do
  key=$(printf '%s' "$t" | tr '/' '_')
  if [ ! -f "$results/$key.rc" ]; then broken="$broken $t(not run)"; failed=$((failed + 1)); continue; fi
  read -r rc secs _ <"$results/$key.rc"
  line=$(grep '^[0-9]* passed, [0-9]* failed$' "$results/$key.out" | tail -n 1)
  if [ -z "$line" ]; then broken="$broken $t(rc=$rc)"; failed=$((failed + 1)); continue; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  [ "$rc" != 0 ] && [ "$f" = 0 ] && { broken="$broken $t(rc=$rc)"; failed=$((failed + 1)); }
done
echo "slowest:"
cat "$results"/*.rc | sort -k2 -n -r | head -n 10 | awk '{ printf "   %7.1f s  %s\n", $2, $3 }'
[ -n "$broken" ] && echo "crashed, killed or unfinished:$broken"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

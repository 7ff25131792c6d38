#!/bin/sh
# Runs every test binary given, adds up their "N passed, N failed" lines and
# prints the total the same way; exits non-zero if any test failed.
passed=0; failed=0; broken=""
for t in "$@"; do
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^[0-9]* passed, [0-9]* failed$' | sed 's/^/   /'
  line=$(printf '%s\n' "$out" | grep '^[0-9]* passed, [0-9]* failed$' | tail -n 1)
  if [ -z "$line" ]; then broken="$broken $t(rc=$rc)"; failed=$((failed + 1)); continue; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  [ "$rc" != 0 ] && [ "$f" = 0 ] && { broken="$broken $t(rc=$rc)"; failed=$((failed + 1)); }
done
[ -n "$broken" ] && echo "crashed or unfinished:$broken"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

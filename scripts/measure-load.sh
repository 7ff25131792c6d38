#!/bin/sh
# Load figure for docs/RELIABILITY.md: RANKS simulated publishers (idle after
# a short deterministic schedule, each publishing every 100 ms) and one
# `nccltop -b --json` viewer; prints the viewer's CPU, memory, message rate
# and how many publishers it kept.   usage: scripts/measure-load.sh [RANKS] [SECONDS]
set -eu
BUILD=${BUILD:-build}
RANKS=${1:-256}
SECS=${2:-20}
DIR=$(mktemp -d /tmp/nccltop-load-XXXXXX)
chmod 700 "$DIR"
"$BUILD/nccltop" sim --ranks "$RANKS" --comms 1 --channels 4 --steps 4 --iterations 5 \
  --deterministic --linger $((SECS + 60)) --dir "$DIR" --quiet &
SIM=$!
sleep $((RANKS / 50 + 5))
"$BUILD/nccltop" -b --json -d 1000 -n "$SECS" --dir "$DIR" >"$DIR/frames" &
VIEWER=$!
sleep $((SECS / 2))
TICKS=$(getconf CLK_TCK)
set -- $(cut -d' ' -f14,15 "/proc/$VIEWER/stat")
T1=$(( $1 + $2 )); W1=$(date +%s.%N)
RSS1=$(awk '/VmRSS/ {print $2}' "/proc/$VIEWER/status")
sleep 5
set -- $(cut -d' ' -f14,15 "/proc/$VIEWER/stat")
T2=$(( $1 + $2 )); W2=$(date +%s.%N)
RSS2=$(awk '/VmRSS/ {print $2}' "/proc/$VIEWER/status")
wait $VIEWER
kill -TERM -- -$SIM 2>/dev/null || kill -TERM $SIM
wait $SIM 2>/dev/null || true
LAST=$(tail -n 1 "$DIR/frames")
PUBS=$(printf '%s' "$LAST" | grep -o '"publishers":[0-9]*' | cut -d: -f2)
MSGS1=$(sed -n "$((SECS / 2))p" "$DIR/frames" | grep -o '"messages":[0-9]*' | cut -d: -f2)
MSGS2=$(printf '%s' "$LAST" | grep -o '"messages":[0-9]*' | cut -d: -f2)
BAD=$(printf '%s' "$LAST" | grep -o '"bad_messages":[0-9]*' | cut -d: -f2)
echo "publishers: $RANKS started, $PUBS kept by the viewer"
awk -v t=$((T2 - T1)) -v hz="$TICKS" -v w1="$W1" -v w2="$W2" \
  'BEGIN { printf "viewer CPU: %.1f%% of one core\n", 100 * t / hz / (w2 - w1) }'
echo "viewer RSS: ${RSS1} KiB, 5 s later ${RSS2} KiB"
echo "messages: $(( (MSGS2 - MSGS1) / (SECS - SECS / 2) )) per second received, $BAD bad"
rm -rf "$DIR"

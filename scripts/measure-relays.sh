#!/bin/sh
# Load figures of the multi-node path: RANKS real local publishers (the
# bench job's ranks, tests/load_relays.c) on NODES simulated nodes, one
# `nccltop relay` per node on 127.0.0.(k+1), one `nccltop -b --json` viewer
# on all of them through --hosts for SECONDS. Prints what the viewer saw and
# what it cost (CPU, memory).
#   usage: scripts/measure-relays.sh [RANKS] [NODES] [SECONDS]   (1024 128 40)
#   env:   BUILD=build   (make; make build/tests/load_relays)
set -eu
BUILD=${BUILD:-build}
RANKS=${1:-1024}
NODES=${2:-128}
SECS=${3:-40}
PORT=17461
DIR=$(mktemp -d /tmp/nccltop-relays-XXXXXX)
chmod 700 "$DIR"
cleanup() {
  pkill -f "relay --dir $DIR/" 2>/dev/null || true
  [ -n "${LOAD:-}" ] && kill "$LOAD" 2>/dev/null || true
  sleep 1
  rm -rf "$DIR"
}
trap cleanup EXIT
"$BUILD/tests/load_relays" "$RANKS" "$NODES" $((SECS + 20)) "$DIR" &
LOAD=$!
sleep 5
k=0
while [ $k -lt "$NODES" ]; do
  "$BUILD/nccltop" relay --dir "$DIR/node$k" --listen "tcp://127.0.0.$((k + 1)):$PORT" -q \
    >/dev/null 2>&1 &
  k=$((k + 1))
done
sleep 3
mkdir -m 700 "$DIR/none"
FRAMES=$((SECS * 2))
/usr/bin/time -v "$BUILD/nccltop" -b --json -n "$FRAMES" -d 500 --dir "$DIR/none" \
  --hosts "127.0.0.[1-$NODES]:$PORT" 2>"$DIR/time" | tail -1 >"$DIR/last.json"
echo "machine: $(nproc) CPUs; $RANKS publishers on $NODES nodes, $NODES relays, one viewer for ${SECS} s"
jq -r '"viewer saw \(.ranks | length) ranks on \([.ranks[].host] | unique | length) hosts, \(.publishers) publishers, \([.processes[].lost_messages] | add // 0) lost messages, \(.alerts | length) alerts (\([.alerts[].kind] | unique | join(","))), model \(.memory_bytes) bytes"' "$DIR/last.json"
grep -E "User time|System time|Maximum resident|Elapsed" "$DIR/time" | sed 's/^\t/viewer: /'

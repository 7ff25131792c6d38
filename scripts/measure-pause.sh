#!/bin/sh
# Round-3 figures for docs/RELIABILITY.md: what a watcher that stops reading
# costs the job's alerts. `nccltop demo ... -b --json -d 500 -n 50` runs; 8 s
# in, the viewer (mode viewer) or the relay of node 2 (mode relay, a 4-node
# demo) is stopped with SIGSTOP for PAUSE seconds, then continued. Prints,
# per frame, the time, the alerts by kind and the watcher's first line; then
# the messages lost and how many of them were the watcher's (lost_unread).
#
#   usage: scripts/measure-pause.sh [viewer|relay] [RANKS] [PAUSE]
#   env:   BUILD=build   the non-sanitized build (`make`)
# Needs python3. Signals only the processes it started.
set -eu
BUILD=${BUILD:-build}
MODE=${1:-viewer}
RANKS=${2:-8}
PAUSE=${3:-5}
[ -x "$BUILD/nccltop" ] || { echo "measure-pause: build $BUILD/nccltop first (make)" >&2; exit 1; }
TMPDIR=$(mktemp -d /tmp/nccltop-pause-XXXXXX)
export TMPDIR
OUT=$TMPDIR/frames.json
VIEWER=""
cleanup() {
  [ -n "$VIEWER" ] && kill -CONT "$VIEWER" 2>/dev/null && kill "$VIEWER" 2>/dev/null || true
  rm -rf "$TMPDIR"
}
trap cleanup EXIT INT TERM
if [ "$MODE" = relay ]; then
  "$BUILD/nccltop" demo --nodes 4 --ranks "$RANKS" --comms 1 --duration 40 -b --json -d 500 \
    -n 50 >"$OUT" 2>/dev/null &
else
  "$BUILD/nccltop" demo --ranks "$RANKS" --duration 40 -b --json -d 500 -n 50 >"$OUT" \
    2>/dev/null &
fi
VIEWER=$!
sleep 8
if [ "$MODE" = relay ]; then
  # The demo's relays are its children: node 2's.
  TARGET=$(pgrep -P "$VIEWER" -f "relay --dir $TMPDIR/.*/node2 " || true)
  [ -n "$TARGET" ] || { echo "measure-pause: no relay of node 2 found" >&2; exit 1; }
else
  TARGET=$VIEWER
fi
kill -STOP "$TARGET"
sleep "$PAUSE"
kill -CONT "$TARGET"
wait "$VIEWER" || true
VIEWER=""
python3 - "$OUT" <<'EOF'
import collections, json, sys
frames = []
for line in open(sys.argv[1]):
    try:
        frames.append(json.loads(line))
    except ValueError:
        pass
most = 0
for f in frames:
    kinds = collections.Counter(a["kind"] for a in f["alerts"])
    most = max(most, len(f["alerts"]))
    notes = f.get("watcher", {}).get("notes", [])
    print("%5.1f %-40s %s" % (f["time_s"], dict(kinds), notes[0]["text"] if notes else ""))
if frames:
    last = frames[-1]
    lost = sum(p["lost_messages"] for p in last["processes"])
    unread = sum(p.get("lost_unread", 0) for p in last["processes"])
    print("frames %d, most alert lines in a frame %d, lost %d, of which the watcher's %d"
          % (len(frames), most, lost, unread))
EOF

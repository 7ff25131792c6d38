#!/bin/sh
# Load figures for docs/RELIABILITY.md: RANKS simulated publishers (real
# processes loading the real plugin, idle after a short deterministic
# schedule, each publishing every 100 ms) watched by one `nccltop -b --json`
# viewer for SECONDS. Prints the machine, what the simulated job alone costs,
# and the viewer's CPU, memory, message rate, frame timing and how many
# publishers it kept.
#
#   usage: scripts/measure-load.sh [RANKS] [SECONDS]
#   env:   BUILD=build      the non-sanitized build (`make`)
#          DELAY=500        the viewer's -d (ms between frames; 500 is its default)
#          SIM_SCHED=normal or idle: run the ranks under SCHED_IDLE (chrt -i 0), so
#                           that on a small machine the figures are the viewer's
#                           rather than the simulated job's
#          NOFILE=N         run the viewer with `ulimit -n N` (e.g. 1024, a common default)
set -eu
BUILD=${BUILD:-build}
RANKS=${1:-256}
SECS=${2:-30}
DELAY=${DELAY:-500}
SIM_SCHED=${SIM_SCHED:-normal}
FRAMES=$((SECS * 1000 / DELAY))
[ -x "$BUILD/nccltop" ] || { echo "measure-load: build $BUILD/nccltop first (make)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/nccltop-load-XXXXXX)
chmod 700 "$DIR"
SIM=""
VIEWER=""
cleanup() {
  [ -n "$VIEWER" ] && kill "$VIEWER" 2>/dev/null || true
  [ -n "$SIM" ] && kill -TERM "$SIM" 2>/dev/null || true
  [ -n "$SIM" ] && wait "$SIM" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

busy() { # jiffies busy and total, all CPUs
  awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}
proc_ticks() { cut -d' ' -f14,15 "/proc/$1/stat" | awk '{ print $1 + $2 }'; }
proc_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

echo "machine: $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), \
$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load before: \
$(cut -d' ' -f1-3 /proc/loadavg), ulimit -n $(ulimit -n)"

SCHED=""
[ "$SIM_SCHED" = idle ] && SCHED="chrt -i 0"
$SCHED "$BUILD/nccltop" sim --ranks "$RANKS" --comms 1 --channels 4 --steps 4 --iterations 5 \
  --deterministic --linger $((SECS * 3 + RANKS / 5 + 120)) --dir "$DIR" --quiet &
SIM=$!
T0=$(date +%s)
while [ "$(ls "$DIR" | wc -l)" -lt "$RANKS" ]; do
  [ $(($(date +%s) - T0)) -gt $((RANKS / 10 + 60)) ] && { echo "only $(ls "$DIR" | wc -l) ranks started" >&2; exit 1; }
  sleep 1
done
echo "ranks: $RANKS started in $(($(date +%s) - T0)) s (scheduling: $SIM_SCHED)"
sleep 3
set -- $(busy); B1=$1; A1=$2
sleep 5
set -- $(busy)
awk -v b=$(($1 - B1)) -v a=$(($2 - A1)) -v n="$(nproc)" 'BEGIN {
  printf "job alone, nobody watching: %.0f%% of the machine busy (%.2f of %d CPUs)\n", 100 * b / a, n * b / a, n }'

if [ -n "${NOFILE:-}" ]; then
  (ulimit -n "$NOFILE" && exec "$BUILD/nccltop" -b --json -d "$DELAY" -n "$FRAMES" --dir "$DIR") \
    >"$DIR/frames" 2>"$DIR/viewer.err" &
else
  "$BUILD/nccltop" -b --json -d "$DELAY" -n "$FRAMES" --dir "$DIR" >"$DIR/frames" 2>"$DIR/viewer.err" &
fi
VIEWER=$!
W0=$(date +%s.%N)
TICKS=$(getconf CLK_TCK)
sleep $((SECS / 3))
P1=$(proc_ticks $VIEWER); RSS1=$(proc_kb $VIEWER VmRSS); W1=$(date +%s.%N)
set -- $(busy); B1=$1; A1=$2
sleep $((SECS - SECS / 3 - 2))
P2=$(proc_ticks $VIEWER); RSS2=$(proc_kb $VIEWER VmRSS); HWM=$(proc_kb $VIEWER VmHWM)
W2=$(date +%s.%N); FDS=$(ls "/proc/$VIEWER/fd" | wc -l)
set -- $(busy); B2=$1; A2=$2
wait $VIEWER || true
VIEWER=""
WEND=$(date +%s.%N)

# One JSON object per line; the processes come before the ranks.
awk -v ranks="$RANKS" -v w0="$W0" -v wend="$WEND" -v from="$(awk -v a="$W1" -v b="$W0" 'BEGIN { print a - b }')" \
  -v frames="$FRAMES" -v delay="$DELAY" '
function num(key, s,   i, v) {
  i = index(s, "\"" key "\":"); if (!i) return -1
  v = substr(s, i + length(key) + 3); sub(/[^0-9.].*/, "", v); return v + 0 }
{
  t = num("time_s", $0); pubs = num("publishers", $0); msgs = num("messages", $0)
  procs = substr($0, 1, index($0, "\"ranks\":["))
  stale = gsub(/"stale":true/, "", procs)
  lost = 0; s = procs
  while ((i = index(s, "\"lost_messages\":"))) { s = substr(s, i + 16); lost += s + 0 }
  n++
  if (n > 1) { gap = t - last; if (gap > maxgap_all) maxgap_all = gap }
  last = t
  if (t >= from) {
    if (!w) { w = 1; t1 = t; m1 = msgs; minpubs = pubs; wn = 0 }
    if (wn > 0 && t - prevw > maxgap) maxgap = t - prevw
    prevw = t; wn++
    if (pubs < minpubs) minpubs = pubs
    if (stale > maxstale) maxstale = stale
    t2 = t; m2 = msgs
  }
  endlost = lost; endbad = num("bad_messages", $0)
}
END {
  printf "frames: %d of %d printed in %.1f s (one every %d ms asked); largest gap %.2f s overall, %.2f s after the first third\n", n, frames, wend - w0, delay, maxgap_all, maxgap
  printf "publishers: %d started, %d kept by the viewer (fewest after the first third), at most %d stale at once\n", ranks, minpubs, maxstale
  if (t2 > t1) printf "messages: %.0f per second taken after the first third, %d lost (sequence gaps), %d bad\n", (m2 - m1) / (t2 - t1), endlost, endbad
}' "$DIR/frames"
awk -v t=$((P2 - P1)) -v hz="$TICKS" -v w1="$W1" -v w2="$W2" -v b=$((B2 - B1)) -v a=$((A2 - A1)) \
  -v n="$(nproc)" 'BEGIN {
  printf "viewer CPU: %.1f%% of one core after the first third (machine %.0f%% busy)\n", 100 * t / hz / (w2 - w1), 100 * b / a }'
echo "viewer memory: RSS ${RSS1} KiB after $((SECS / 3)) s, ${RSS2} KiB near the end, peak ${HWM} KiB; ${FDS} open files"
ERR=$(tail -n 1 "$DIR/frames" | grep -o '"errors":\[[^]]*\]' | sed 's/^"errors":\[//; s/\]$//' | tr ',' '\n' |
  sed 's/^"//; s/"$//; s/^[^ ]*: //' | grep . |
  sort | uniq -c | sort -rn | head -n 3 | awk '{ $1 = $1 "x"; print }' | paste -sd ';' -)
[ -n "$ERR" ] && echo "viewer errors (last frame): $ERR"
[ -s "$DIR/viewer.err" ] && { echo "viewer stderr:"; head -n 5 "$DIR/viewer.err"; }
exit 0

#!/bin/sh
# Regenerates the README's screenshots from the real program: the fenced
# block after each line
#   <!-- screen: ROWS COLS READY KEYS WAIT SETTLE_MS -- COMMAND ... -->
# is replaced by what tests/screenshot.c prints for that command (run from
# the repository root; `make screenshots` builds it and runs this).
#   usage: sh scripts/readme-screens.sh BUILD_DIR
set -eu
BUILD=${1:-build}
SHOT="$BUILD/tests/screenshot"
out=$(mktemp)
trap 'rm -f "$out" "$out.shot"' EXIT
state=0 # 0 text, 1 after a marker, 2 inside the block being replaced
while IFS= read -r line; do
  case $state in
  0)
    printf '%s\n' "$line" >>"$out"
    case $line in
    "<!-- screen: "*" -->")
      spec=${line#"<!-- screen: "}
      spec=${spec%" -->"}
      eval "set -- $spec"
      rows=$1 cols=$2 ready=$3 keys=$4 wait=$5 settle=$6
      shift 7
      PATH="$BUILD:$PATH" "$SHOT" "$rows" "$cols" "$ready" "$keys" "$wait" "$settle" -- "$@" \
        >"$out.shot" ||
        { echo "readme-screens: '$spec' failed" >&2; exit 1; }
      state=1
      ;;
    esac
    ;;
  1)
    printf '%s\n' "$line" >>"$out"
    if [ "$line" = '```' ]; then
      cat "$out.shot" >>"$out"
      state=2
    fi
    ;;
  2)
    if [ "$line" = '```' ]; then
      printf '%s\n' "$line" >>"$out"
      state=0
    fi
    ;;
  esac
done <README.md
cp "$out" README.md

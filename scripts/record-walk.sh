#!/usr/bin/env bash
# Records stack walks for the unit suite's replay tests (tests/replay/README.md): runs PROG under
# gdb, stops at the return of each malloc, calloc or realloc (libc's) that has a caller matching
# REGEX within 12 frames (with --min-size: of at least N bytes; with --after: once gdb's
# breakpoint SPEC has been hit), and writes one compact capture per OUT, in order of the hits
# (several OUTs: the same process's successive hits, e.g. the twins). Needs gdb and a built tree
# (build/tests/unit/walk_record).
#   scripts/record-walk.sh [--min-size N] [--after SPEC] COMMENT REGEX OUT.walk... -- PROG [ARGS...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
RECORD="$ROOT/build/tests/unit/walk_record"
MIN_SIZE=0
AFTER=""
while [[ "${1:-}" == --* ]]; do
    case "$1" in
    --min-size) MIN_SIZE="$2" ;;
    --after) AFTER="$2" ;;
    *) echo "record-walk: error: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
[[ $# -ge 5 ]] || { echo "usage: record-walk.sh [--min-size N] [--after SPEC] COMMENT REGEX OUT... -- PROG [ARGS...]" >&2; exit 2; }
COMMENT="$1" REGEX="$2"
shift 2
OUTS=()
while [[ $# -gt 0 && "$1" != "--" ]]; do OUTS+=("$1"); shift; done
[[ $# -ge 2 && ${#OUTS[@]} -gt 0 ]] || { echo "record-walk: error: no OUT, or no -- PROG" >&2; exit 2; }
shift
[[ -x "$RECORD" ]] || { echo "record-walk: error: $RECORD is not built (scripts/build.sh)" >&2; exit 1; }
command -v gdb >/dev/null || { echo "record-walk: error: gdb is not installed" >&2; exit 1; }

RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
RAWS=()
for i in "${!OUTS[@]}"; do RAWS+=("$RAW/$i.raw"); done
MT_WALK_OUT="${RAWS[*]}" MT_WALK_CALLER="$REGEX" MT_WALK_MIN_SIZE="$MIN_SIZE" MT_WALK_AFTER="$AFTER" \
    gdb -q -nx -batch -x "$ROOT/tests/unit/replay/record_walk.py" --args "$@" >"$RAW/gdb.log" 2>&1 ||
    { cat "$RAW/gdb.log" >&2; echo "record-walk: error: gdb failed" >&2; exit 1; }
for i in "${!OUTS[@]}"; do
    [[ -s "${RAWS[$i]}" ]] || { cat "$RAW/gdb.log" >&2; echo "record-walk: error: no hit $((i + 1))" >&2; exit 1; }
    echo "== ${OUTS[$i]}"
    "$RECORD" "${RAWS[$i]}" "${OUTS[$i]}" "$COMMENT (hit $((i + 1)) of ${#OUTS[@]}; scripts/record-walk.sh '$REGEX' -- $(basename "$1") ${*:2})"
done

#!/usr/bin/env bash
# scripts/test.sh [meson test arguments, e.g. --suite unit]: installs what is missing, builds,
# runs the tests and exits with meson test's status. Tests run one at a time: the root suite's
# tests share the machine's uprobes and must not overlap.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

"$ROOT/scripts/build.sh"

if [[ $EUID -ne 0 && "${MEMTRACK_REQUIRE_BPF:-}" != 1 ]]; then
    echo "test: not root: the root suite will skip (run as root, or set MEMTRACK_REQUIRE_BPF=1 to make it fail instead)" >&2
fi

cd "$ROOT"
status=0
meson test -C build --print-errorlogs --num-processes 1 "$@" || status=$?
# The fuzz targets, briefly, on a full run (no arguments): MEMTRACK_FUZZ_SECONDS each, 0 to skip.
if [[ $# -eq 0 && "${MEMTRACK_FUZZ_SECONDS:-20}" != 0 ]]; then
    "$ROOT/scripts/fuzz.sh" "${MEMTRACK_FUZZ_SECONDS:-20}" || status=1
fi
exit "$status"

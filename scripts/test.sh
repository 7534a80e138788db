#!/usr/bin/env bash
# scripts/test.sh [meson test arguments, e.g. --suite unit]: installs what is missing, builds,
# runs the tests and exits with meson test's status. Tests run one at a time: the root suite's
# tests share the machine's uprobes and must not overlap.
#   scripts/test.sh --sanitize address,undefined [meson test arguments]
#   scripts/test.sh --sanitize thread --suite unit
# builds memtrack with those sanitizers in build-LIST/ (scripts/build.sh) and runs the suites
# there: any report fails the test that caused it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

BUILD_ARGS=()
BUILD_DIR=build
if [[ "${1:-}" == "--sanitize" ]]; then
    [[ -n "${2:-}" ]] || { echo "test: error: --sanitize needs a list, e.g. address,undefined" >&2; exit 2; }
    BUILD_ARGS=(--sanitize "$2")
    BUILD_DIR="build-${2//,/-}"
    shift 2
    # Fail on the first report, with its stack; leaks are reports too.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:print_summary=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
    export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
fi

"$ROOT/scripts/build.sh" "${BUILD_ARGS[@]}"

if [[ $EUID -ne 0 && "${MEMTRACK_REQUIRE_BPF:-}" != 1 ]]; then
    echo "test: not root: the root suite will skip (run as root, or set MEMTRACK_REQUIRE_BPF=1 to make it fail instead)" >&2
fi

cd "$ROOT"
status=0
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 1 "$@" || status=$?
# The fuzz targets, briefly, on a full plain run (no arguments, no sanitizer: they bring their
# own): MEMTRACK_FUZZ_SECONDS each, 0 to skip.
if [[ $# -eq 0 && "$BUILD_DIR" == build && "${MEMTRACK_FUZZ_SECONDS:-20}" != 0 ]]; then
    "$ROOT/scripts/fuzz.sh" "${MEMTRACK_FUZZ_SECONDS:-20}" || status=1
fi
exit "$status"

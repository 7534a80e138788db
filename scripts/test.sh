#!/usr/bin/env bash
# scripts/test.sh [meson test arguments, e.g. --suite unit]: installs what is missing, builds,
# runs the tests and exits with meson test's status. Tests run one at a time: the root suite's
# tests share the machine's uprobes and must not overlap.
#   scripts/test.sh --sanitize address,undefined [meson test arguments]
#   scripts/test.sh --sanitize thread --suite unit
# builds memtrack with those sanitizers in build-LIST/ (scripts/build.sh: -O1, only what the
# tests need) and runs the suites there: any report fails the test that caused it.
#   MEMTRACK_SANITIZE=LIST scripts/test.sh   a full run, then every suite again with LIST (CI)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

BUILD_ARGS=()
BUILD_DIR=build
TEST_ARGS=()
if [[ "${1:-}" == "--sanitize" ]]; then
    [[ -n "${2:-}" ]] || { echo "test: error: --sanitize needs a list, e.g. address,undefined" >&2; exit 2; }
    BUILD_ARGS=(--sanitize "$2")
    BUILD_DIR="build-${2//,/-}"
    # The root suite runs for ~10 min under ASan (memtrack 2-3x slower): past meson's 600 s.
    TEST_ARGS=(--timeout-multiplier 3)
    shift 2
    # Fail on the first report, with its stack; leaks are reports too.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:print_summary=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
    export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
fi

# A sanitized build holds what the suites need, not the benchmarks.
if [[ ${#BUILD_ARGS[@]} -gt 0 ]]; then
    "$ROOT/scripts/build.sh" "${BUILD_ARGS[@]}" meson-test-prereq
else
    "$ROOT/scripts/build.sh"
fi

if [[ $EUID -ne 0 && "${MEMTRACK_REQUIRE_BPF:-}" != 1 ]]; then
    echo "test: not root: the root suite will skip (run as root, or set MEMTRACK_REQUIRE_BPF=1 to make it fail instead)" >&2
fi

cd "$ROOT"
status=0
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 1 "${TEST_ARGS[@]}" "$@" || status=$?
# On a full plain run (no arguments, no sanitizer) only: the fuzz targets, briefly
# (MEMTRACK_FUZZ_SECONDS each, 0 to skip; they bring their own sanitizers), then every suite
# again built with MEMTRACK_SANITIZE's sanitizers when it is set (.ci/run: address,undefined).
if [[ $# -eq 0 && "$BUILD_DIR" == build ]]; then
    if [[ "${MEMTRACK_FUZZ_SECONDS:-20}" != 0 ]]; then
        "$ROOT/scripts/fuzz.sh" "${MEMTRACK_FUZZ_SECONDS:-20}" || status=1
    fi
    if [[ -n "${MEMTRACK_SANITIZE:-}" ]]; then
        "$ROOT/scripts/test.sh" --sanitize "$MEMTRACK_SANITIZE" || status=1
    fi
fi
exit "$status"

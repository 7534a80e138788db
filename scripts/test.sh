#!/usr/bin/env bash
# scripts/test.sh: what CI runs (.ci/run): installs what is missing, builds, runs every test and
# exits non-zero when one failed. Tests run one at a time: the root suite's tests share the
# machine's uprobes and must not overlap. With no arguments, each check once, sized to stay under
# CI's 30 minutes on 2 cores (docs/BENCHMARKS.md, "CI time"):
#   the plain build (-O2, -Werror, no debug info for memtrack's own code: scripts/build.sh --lean)
#   of memtrack and what both suites run; the Debian package (scripts/package.sh: built, its fields
#   and files checked); the unit suite; the root suite; 2 runs of the lifecycle stress
#   (scripts/flood.sh --lifecycle); the kernel matrix (scripts/kernels.sh, MEMTRACK_KERNELS); then
#   the fuzz targets under ASan+UBSan (MEMTRACK_FUZZ_SECONDS each, 0 to skip).
# The sanitized suites are a second full build (twice the plain one's compile time) and slower
# suites, past CI's budget: they run as their own check, before a release and after any change
# to memory handling:
#   scripts/test.sh --sanitize address,undefined [meson test arguments]
#   scripts/test.sh --sanitize thread --suite unit
# build with those sanitizers in build-LIST/ and run the suites there (the root suite's own code
# sanitized too; the fixtures never are): any report fails the test that caused it.
#   scripts/test.sh [meson test arguments, e.g. --suite unit]   the plain build, those tests
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

SANITIZE=""
if [[ "${1:-}" == "--sanitize" ]]; then
    [[ -n "${2:-}" ]] || { echo "test: error: --sanitize needs a list, e.g. address,undefined" >&2; exit 2; }
    SANITIZE="$2"
    shift 2
elif [[ $# -eq 0 ]]; then
    CI_RUN=1
fi
SAN_DIR="build-${SANITIZE//,/-}"
# The root suite runs for ~10 min (longer with a sanitized memtrack): past meson's 600 s.
LONG_SUITES=(--timeout-multiplier 3)

sanitizer_options() {
    # Fail on the first report, with its stack; leaks are reports too.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:print_summary=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
    export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
    # The root suite's hang bounds (tests/root/Harness.hpp), not its assertions.
    export MEMTRACK_TIME_FACTOR="${MEMTRACK_TIME_FACTOR:-3}"
}

if [[ $EUID -ne 0 && "${MEMTRACK_REQUIRE_BPF:-}" != 1 ]]; then
    echo "test: not root: the root suite will skip (run as root, or set MEMTRACK_REQUIRE_BPF=1 to make it fail instead)" >&2
fi

cd "$ROOT"
status=0
suites() { meson test --print-errorlogs --num-processes 1 "$@" || status=1; }
if [[ -n "$SANITIZE" ]]; then
    sanitizer_options
    "$ROOT/scripts/build.sh" --sanitize "$SANITIZE" meson-test-prereq
    suites -C "$SAN_DIR" "${LONG_SUITES[@]}" "$@"
    exit "$status"
fi

if [[ -n "${CI_RUN:-}" ]]; then
    "$ROOT/scripts/build.sh" --lean root-prereq tests/unit/test_unit
    # The Debian package: built from the plain build and checked (Depends from the links, files
    # under /usr only); installing it is checked by hand (README, "Install").
    "$ROOT/scripts/package.sh" "$ROOT/build/package" >/dev/null || status=1
    suites -C build --suite unit
    # The root suite runs 8-10 minutes: past meson's 600 s on a slow runner (a hang bound).
    suites -C build --suite root "${LONG_SUITES[@]}"
    # The lifecycle stress, short (scripts/flood.sh --lifecycle runs 100): 2 runs of the lifecycle
    # cases under a small ring beside a busy loop. Then 3 runs of the missed-exec hunt (--pipelines
    # runs 20; ~8 s a run): 840 exec'd processes, each one's allocations checked.
    if [[ $EUID -eq 0 ]]; then
        "$ROOT/scripts/flood.sh" --lifecycle -R 2 || status=1
        "$ROOT/scripts/flood.sh" --pipelines -R 3 || status=1
    fi
    # The kernel matrix (scripts/kernels.sh): a subset of the root suite, plain build, in Debian's
    # kernels under qemu, sized to ~3 minutes: five cases on 6.1 (perf-event uprobes, the most
    # different kernel), one on 6.12; scripts/kernels.sh alone runs all of them on both.
    # MEMTRACK_KERNELS replaces that list (none to skip).
    if [[ "${MEMTRACK_KERNELS:-}" != none ]]; then
        # shellcheck disable=SC2086  # a list of VERSION[:CASES]
        "$ROOT/scripts/kernels.sh" ${MEMTRACK_KERNELS:-6.1:c,dlopen,cfi-stack,pressure,attach 6.12:c} || status=1
    fi
else
    "$ROOT/scripts/build.sh"
    suites -C build "$@"
fi
# The fuzz targets, briefly, on a full run (no arguments; they bring their own sanitizers):
# MEMTRACK_FUZZ_SECONDS each, 0 to skip.
if [[ $# -eq 0 && "${MEMTRACK_FUZZ_SECONDS:-20}" != 0 ]]; then
    "$ROOT/scripts/fuzz.sh" "${MEMTRACK_FUZZ_SECONDS:-20}" || status=1
fi
exit "$status"

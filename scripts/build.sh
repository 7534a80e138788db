#!/usr/bin/env bash
# Builds memtrack into build/: installs what is missing (deps.sh), configures build/ when it is
# not (or no longer) a meson build directory, then runs ninja. Quiet unless something fails;
# ninja's output is kept in build/ninja.log, meson setup's in build/meson-setup.log.
#   scripts/build.sh --sanitize LIST   the same in build-LIST/ (',' -> '-'), with -Dsanitize=LIST
#                                      at -O1 (a sanitized build finds bugs, it is not measured)
#   scripts/build.sh [...] TARGET...   only those ninja targets (e.g. meson-test-prereq: what the
#                                      tests need, no benchmarks)
#   scripts/build.sh --no-tests [TARGET...]  memtrack without its tests' packages (deps.sh --run):
#                                      a build/ it configures has -Dtests=false; one configured
#                                      with tests keeps them (scripts/run.sh)
#   scripts/build.sh --lean [TARGET...]  CI's build: a build/ it configures has no debug info for
#                                      memtrack's own code (-Ddebug=false: -O2 without -g, a third
#                                      less compile time); the fixtures keep their own -g. An
#                                      already configured build/ keeps its options.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD="$ROOT/build"
SETUP_OPTIONS=()
LEAN=false
if [[ "${1:-}" == "--lean" ]]; then
    LEAN=true
    shift
fi
if [[ "${1:-}" == "--sanitize" ]]; then
    [[ -n "${2:-}" ]] || { echo "build: error: --sanitize needs a list, e.g. address,undefined" >&2; exit 2; }
    BUILD="$ROOT/build-${2//,/-}"
    # GCC 12 warns inside Boost.JSON's own headers under ASan.
    SETUP_OPTIONS=("-Dsanitize=$2" -Dwerror=false -Doptimization=1)
    shift 2
fi
[[ $LEAN == false ]] || SETUP_OPTIONS+=(-Ddebug=false)
TESTS=true
if [[ "${1:-}" == "--no-tests" ]]; then
    TESTS=false
    shift
fi

if [[ $TESTS == true ]]; then "$ROOT/scripts/deps.sh"; else "$ROOT/scripts/deps.sh" --run; fi

cd "$ROOT"

# meson setup, quiet; prints the tail of its log and fails if it fails.
setup() {
    mkdir -p "$BUILD"
    local log="$BUILD/meson-setup.log"
    if ! meson setup "$@" "$BUILD" --wrap-mode=nodownload >"$log" 2>&1; then
        echo "build: error: meson setup${*:+ $*} failed, last lines of $log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
}

if [[ ! -f "$BUILD/meson-private/coredata.dat" ]]; then
    # Not configured: absent, or left behind by a setup that failed or was interrupted.
    setup "${SETUP_OPTIONS[@]}" "-Dtests=$TESTS"
elif [[ ! -f "$BUILD/build.ninja" ]]; then
    # Configured once but broken (build.ninja lost, e.g. an interrupted regeneration):
    # regenerate in place, keeping the options it was configured with.
    setup --reconfigure
fi
# Otherwise ninja itself re-runs meson when a meson.build changed.
# A build/ that scripts/run.sh configured without the tests gets them now (their packages are in).
tests_off() {
    python3 -c 'import json, sys
sys.exit(0 if any(o["name"] == "tests" and o["value"] is False for o in json.load(open(sys.argv[1]))) else 1)' \
        "$BUILD/meson-info/intro-buildoptions.json"
}
if [[ $TESTS == true ]] && tests_off; then
    meson configure "$BUILD" -Dtests=true >/dev/null || { echo "build: error: meson configure -Dtests=true failed" >&2; exit 1; }
fi

log="$BUILD/ninja.log"
if ! ninja -C "$BUILD" "$@" >"$log" 2>&1; then
    echo "build: error: ninja -C $BUILD failed, last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
fi

#!/bin/bash
# Runs inside a guest booted by scripts/kernels.sh (as /init's script): the root suite's cases
# of tests/kernels/cases.txt, one test_root run each, against the build folder mt_build. The
# host reads the console: "mt-case NAME pass|fail SECONDS" per case, and a failed case's output.
# From the kernel command line (the environment here): mt_build, mt_cases (NAME,NAME... or empty
# for all).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
build="${mt_build:?}"
echo "mt-kernel $(uname -r)"
"$build/memtrack" doctor 2>&1 | sed 's/^/mt-doctor /'
export MEMTRACK_BIN="$build/memtrack" FIXTURE_DIR="$build/tests/progs" FIXTURE_SRC_DIR="$here/../progs"
export FLOOD_BIN="$build/bench/flood" MEMTRACK_REQUIRE_BPF=1
# The host's folders are read-only here; the guest's /tmp is its own.
export MEMTRACK_CACHE_DIR=/tmp/cfi-cache
# The suite's hang bounds only (no assertion is scaled): TCG runs 5-20x slower.
export MEMTRACK_TIME_FACTOR=10
cd /tmp
while IFS='|' read -r name pattern; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ -n "${mt_cases:-}" && ",$mt_cases," != *",$name,"* ]] && continue
    start=$SECONDS
    result=fail
    if "$build/tests/root/test_root" "-tc=$pattern" >/tmp/case.log 2>&1; then
        # A pattern that matched nothing passes in doctest: here it fails.
        grep -q "test cases: *[1-9]" /tmp/case.log && result=pass
    fi
    [[ $result == pass ]] || tail -n 80 /tmp/case.log
    echo "mt-case $name $result $((SECONDS - start))"
done <"$here/cases.txt"

#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets of tests/fuzz/ (the control request framer and
# parser, the artifact reader, the stacks reader) with clang, ASan and UBSan into build-fuzz/,
# and runs each for SECONDS (default 25) from its seed corpus in tests/fuzz/corpus/<target>/.
# Fails on a crash, a leak, a sanitizer report, a hang (-timeout) or runaway memory (-rss_limit_mb);
# the input that did it is left in build-fuzz/crashes/. The corpus it grows stays in
# build-fuzz/corpus/, never in the tree. CI runs it through scripts/test.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SECS="${1:-25}"
OUT="$ROOT/build-fuzz"

"$ROOT/scripts/deps.sh"
command -v clang++ >/dev/null || { echo "fuzz: error: clang++ not found" >&2; exit 1; }

cd "$ROOT"
mkdir -p "$OUT/obj" "$OUT/crashes"
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -Isrc -Itests/fuzz -DMSGPACK_NO_BOOST -DMEMTRACK_VERSION="\"fuzz\"")
[[ -d .deps/msgpack-cxx/usr/include ]] && flags+=(-isystem .deps/msgpack-cxx/usr/include)

# What the three readers need from src/, compiled once; again when anything in src/ changed.
sources=(src/core/Log.cpp src/format/Record.cpp src/format/EventFastPath.cpp src/format/EventObject.cpp
         src/format/JsonLines.cpp src/format/MsgpackStream.cpp src/format/ArtifactReader.cpp
         src/format/StacksFile.cpp src/control/LineFramer.cpp src/control/Request.cpp src/control/Commands.cpp)
stamp="$OUT/obj/.built"
if [[ ! -f "$stamp" ]] || [[ -n "$(find src tests/fuzz scripts/fuzz.sh -newer "$stamp" -print -quit)" ]]; then
    pids=()
    for s in "${sources[@]}"; do
        clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "$s" -o "$OUT/obj/$(basename "$s" .cpp).o" & pids+=($!)
    done
    for t in fuzz_request fuzz_artifact fuzz_stacks; do
        clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "tests/fuzz/$t.cpp" -o "$OUT/obj/$t.o" & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    lib_objs=()
    for s in "${sources[@]}"; do lib_objs+=("$OUT/obj/$(basename "$s" .cpp).o"); done
    for t in fuzz_request fuzz_artifact fuzz_stacks; do
        clang++ "${flags[@]}" -fsanitize=fuzzer "$OUT/obj/$t.o" "${lib_objs[@]}" -lfmt -lzstd -o "$OUT/$t"
    done
    touch "$stamp"
fi

status=0
for t in request artifact stacks; do
    corpus="$OUT/corpus/$t"
    mkdir -p "$corpus"
    log="$OUT/fuzz_$t.log"
    echo "fuzz: $t for ${SECS} s"
    if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$OUT/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$OUT/crashes/$t-" -print_final_stats=1 "$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        echo "fuzz: error: $t failed, last lines of $log:" >&2
        tail -n 40 "$log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$log" | tr '\n' ' ' | sed "s/^/fuzz: $t: /"
        echo
    fi
done
exit "$status"

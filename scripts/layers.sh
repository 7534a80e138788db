#!/usr/bin/env bash
# The layers of src/ (docs/ARCHITECTURE.md), from the one table in meson.build (layer_uses),
# passed as FOLDER=USED,USED pairs:
#   layers.sh poison DIR SRC PAIRS...  writes DIR/FOLDER/OTHER/NAME for every header NAME of
#       every folder OTHER that FOLDER may not use: a one-line #error. meson.build runs this when
#       it configures and compiles each folder's library with `-iquote DIR/FOLDER`, which the
#       compiler searches before -I: a wrong #include "OTHER/NAME" there fails the build.
#   layers.sh check SRC PAIRS...       names every wrong #include in src/ at once, without
#       compiling (the `layers` test); also a folder missing from the table.
set -euo pipefail
mode="$1"
shift
if [[ "$mode" == poison ]]; then
    out="$1"
    shift
fi
src="$1"
shift
declare -A allowed
for pair in "$@"; do
    allowed["${pair%%=*}"]="${pair#*=}"
done
may_use() {  # may_use FOLDER OTHER
    [[ "$1" == "$2" || ",${allowed[$1]}," == *",$2,"* ]]
}

if [[ "$mode" == poison ]]; then
    rm -rf "$out"
    for folder in "${!allowed[@]}"; do
        for other in "${!allowed[@]}"; do
            may_use "$folder" "$other" && continue
            mkdir -p "$out/$folder/$other"
            for header in "$src/$other"/*.h "$src/$other"/*.hpp; do
                [[ -e "$header" ]] || continue
                name="$(basename "$header")"
                printf '#error "layers: src/%s may not include %s/%s (meson.build layer_uses, docs/ARCHITECTURE.md)"\n' \
                    "$folder" "$other" "$name" >"$out/$folder/$other/$name"
            done
        done
    done
    exit 0
fi

[[ "$mode" == check ]] || { echo "layers.sh: unknown mode $mode" >&2; exit 2; }
bad=0
for dir in "$src"/*/; do
    folder="$(basename "$dir")"
    if [[ -z "${allowed[$folder]+set}" ]]; then
        echo "layers: src/$folder is not in meson.build's layer_uses" >&2
        bad=1
        continue
    fi
    while IFS= read -r line; do
        file="${line%%:*}"
        target="$(sed -E 's/^[^:]*:\s*#\s*include "([^/"]+)\/.*/\1/' <<<"$line")"
        [[ -d "$src/$target" ]] || continue  # not a folder of src/
        if ! may_use "$folder" "$target"; then
            echo "layers: ${file#"$src"/} includes $target/ (src/$folder may use: ${allowed[$folder]:-only itself})" >&2
            bad=1
        fi
    done < <(grep -HE '^\s*#\s*include "[^/"]+/' "$dir"* 2>/dev/null || true)
done
[[ "$bad" == 0 ]] && echo "layers: every include of src/ points down"
exit "$bad"

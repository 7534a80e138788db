#!/usr/bin/env bash
# The kernel matrix: boots Debian's kernels under qemu with this machine's root (read-only, over
# 9p) and runs a subset of the root suite inside each (tests/kernels/cases.txt), then prints a
# table kernel x case. Exits non-zero when a case fails or a kernel does not boot.
#   scripts/kernels.sh [VERSION[:CASE,...]...]
#     VERSION: a series (6.1, 6.12: the newest Debian package of it) or a package's version
#     (6.1.0-57-amd64); default 6.1 6.12. CASE: the cases (cases.txt's names) to run in that
#     kernel, default all (or MEMTRACK_KERNELS_CASES's).
# Needs root (the guest's tests load BPF), a built tree (scripts/build.sh) and qemu-system-x86
# and cpio (scripts/deps.sh). No KVM is assumed: qemu runs under TCG, 5-20x slower than the host.
# Environment:
#   MEMTRACK_KERNELS_CACHE  where kernel packages and initramfs images are kept
#                           (default /var/tmp/memtrack-kernels: outside the tree, kept across runs)
#   MEMTRACK_KERNELS_CASES  NAME,NAME...: run only these cases (default: all of cases.txt)
#   MEMTRACK_KERNELS_SCRIPT a script to run in each guest instead of the cases (for debugging, and
#                           scripts/bench.sh --kernels); its output goes to stdout
#   MEMTRACK_KERNELS_ARGS   NAME=VALUE... words for that script's environment (the kernel command line)
#   MEMTRACK_KERNELS_TIMEOUT  seconds a guest may run (default 600)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CACHE="${MEMTRACK_KERNELS_CACHE:-/var/tmp/memtrack-kernels}"
TIMEOUT="${MEMTRACK_KERNELS_TIMEOUT:-600}"
BUILD="$ROOT/build"

die() {
    echo "kernels: error: $*" >&2
    exit 1
}

[[ $EUID -eq 0 ]] || die "needs root (the guests' tests load BPF programs)"
"$ROOT/scripts/deps.sh"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (scripts/deps.sh installs it)"
[[ -x "$BUILD/memtrack" && -x "$BUILD/tests/root/test_root" ]] ||
    die "build/memtrack or build/tests/root/test_root missing: run scripts/build.sh first"

mkdir -p "$CACHE"
# apt-get download runs as _apt when it can read the folder.
chmod 755 "$CACHE"
# This run's initramfs images and consoles (kept when something failed, to read).
RUN="$(mktemp -d "$CACHE/run.XXXXXX")"

# The package for VERSION: a series' newest (linux-image-6.1.0-N-amd64 for 6.1,
# linux-image-6.12.N+debD-amd64 for 6.12), or the one named.
package_for() {
    local v="$1" re
    if [[ "$v" =~ ^[0-9]+\.[0-9]+$ ]]; then
        re="^linux-image-${v//./\\.}(\\.0-[0-9]+|\\.[0-9]+\\+deb[0-9]+)-amd64\$"
        apt-cache pkgnames "linux-image-$v" | grep -E "$re" | sort -V | tail -n 1
    else
        echo "linux-image-$v"
    fi
}

# Unpacks the kernel package into $CACHE/NAME/ (downloaded once; under a lock, as runs from
# other clones share the cache) and builds its initramfs into RUN_DIR: the init
# (tests/kernels/init.c, static) and the modules of tests/kernels/modules.txt. Prints the kernel.
prepare_kernel() {
    local pkg="$1" run_dir="$2" dir="$CACHE/$1"
    (
        flock 9
        if [[ ! -f "$dir/unpacked" ]]; then
            rm -rf "$dir"
            mkdir -p "$dir"
            chmod 755 "$dir"
            (cd "$dir" && apt-get download -q "$pkg" >download.log 2>&1) ||
                die "apt-get download $pkg failed (see $dir/download.log)"
            dpkg-deb -x "$dir"/*.deb "$dir/root" || die "dpkg-deb -x of $pkg failed"
            rm -f "$dir"/*.deb
            touch "$dir/unpacked"
        fi
    ) 9>"$CACHE/lock" || exit 1
    local kver
    kver="$(basename "$(ls -d "$dir"/root/lib/modules/*/ | head -n 1)")"
    [[ -n "$kver" && -f "$dir/root/boot/vmlinuz-$kver" ]] || die "$pkg has no kernel or modules"

    local ird="$run_dir/initramfs"
    mkdir -p "$ird/modules"
    gcc -static -O2 -Wall -Wextra -Werror -o "$ird/init" "$ROOT/tests/kernels/init.c" ||
        die "cannot build the guest's init"
    local m base name
    : >"$ird/modules/order"
    while read -r m; do
        [[ -z "$m" || "$m" == \#* ]] && continue
        base="$dir/root/lib/modules/$kver/kernel/$m"
        name="$(basename "$m").ko"
        if [[ -f "$base.ko" ]]; then
            cp "$base.ko" "$ird/modules/$name"
        elif [[ -f "$base.ko.xz" ]]; then
            xz -dc "$base.ko.xz" >"$ird/modules/$name"
        elif [[ -f "$base.ko.zst" ]]; then
            zstd -qdc "$base.ko.zst" >"$ird/modules/$name"
        else
            continue  # built into this kernel
        fi
        echo "$name" >>"$ird/modules/order"
    done <"$ROOT/tests/kernels/modules.txt"
    (cd "$ird" && find . | cpio -o -H newc --quiet >"$run_dir/initramfs.cpio") || die "cpio failed"
    echo "$dir/root/boot/vmlinuz-$kver"
}

# Boots KERNEL with INITRAMFS, running SCRIPT (a path on this machine) in the guest with the
# kernel command line's extra words ARGS (the guest's init gets them as its environment); the
# console goes to LOG. Returns the script's exit status as the guest's init reported it.
boot() {
    local kernel="$1" initramfs="$2" script="$3" log="$4" args="$5"
    local rc=0
    # -m: the host root's page cache is the guest's (9p, cache=loose), 4 GiB holds a build.
    timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max -m 4096 -smp 2 \
        -kernel "$kernel" -initrd "$initramfs" \
        -append "console=ttyS0 quiet panic=-1 rdinit=/init mt_script=$script $args" \
        -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
        -display none -serial stdio -monitor none -no-reboot </dev/null >"$log" 2>&1 || rc=$?
    if ((rc == 124 || rc == 137)); then
        echo "kernels: $(basename "$kernel"): timed out after ${TIMEOUT}s (console: $log)" >&2
        return 124
    fi
    local status
    status="$(tr -d '\r' <"$log" | sed -n 's/^mt-init: exit \([0-9]*\).*/\1/p' | tail -n 1)"
    if [[ -z "$status" ]]; then
        echo "kernels: $(basename "$kernel"): the guest ended without a status (console: $log)" >&2
        return 125
    fi
    return "$status"
}

# The cases, in cases.txt's order (the table's rows).
mapfile -t all_cases < <(grep -v -e '^#' -e '^$' "$ROOT/tests/kernels/cases.txt" | cut -d'|' -f1)
default_cases=("${all_cases[@]}")
[[ -n "${MEMTRACK_KERNELS_CASES:-}" ]] && IFS=, read -r -a default_cases <<<"$MEMTRACK_KERNELS_CASES"
check_cases() {
    local c
    for c in "$@"; do
        [[ " ${all_cases[*]} " == *" $c "* ]] || die "no case $c in tests/kernels/cases.txt"
    done
}
check_cases "${default_cases[@]}"

versions=("$@")
((${#versions[@]})) || versions=(6.1 6.12)
status=0
declare -A result=()
kernels=()
for arg in "${versions[@]}"; do
    v="${arg%%:*}"
    kernel_cases=("${default_cases[@]}")
    [[ "$arg" == *:* ]] && IFS=, read -r -a kernel_cases <<<"${arg#*:}"
    check_cases "${kernel_cases[@]}"
    pkg="$(package_for "$v")"
    [[ -n "$pkg" ]] || die "no Debian kernel package for $v"
    mkdir -p "$RUN/$pkg"
    kernel="$(prepare_kernel "$pkg" "$RUN/$pkg")"
    log="$RUN/$pkg/console.log"
    kernels+=("$pkg")
    start=$SECONDS
    if [[ -n "${MEMTRACK_KERNELS_SCRIPT:-}" ]]; then
        rc=0
        boot "$kernel" "$RUN/$pkg/initramfs.cpio" "$MEMTRACK_KERNELS_SCRIPT" "$log" "${MEMTRACK_KERNELS_ARGS:-}" || rc=$?
        tr -d '\r' <"$log"
        ((rc == 0)) || status=1
        continue
    fi
    echo "kernels: $pkg: booting, running ${#kernel_cases[@]} cases" >&2
    cases_args="mt_build=$BUILD mt_cases=$(IFS=,; echo "${kernel_cases[*]}")"
    rc=0
    boot "$kernel" "$RUN/$pkg/initramfs.cpio" "$ROOT/tests/kernels/guest.sh" "$log" "$cases_args" || rc=$?
    # A guest that ended without a status before guest.sh's first line (mt-kernel) crashed while
    # booting, before any memtrack code ran: seen under TCG as an int3 Oops in kernel text being
    # patched (sched_clock_cpu, 4 s into the boot), then a clean boot. It is booted once more,
    # said here; a crash after the script began fails the kernel like any other.
    if ((rc == 125)) && ! grep -qa '^mt-kernel ' "$log"; then
        mv "$log" "$RUN/$pkg/console.boot-crash.log"
        crash="$(grep -a -m1 -o -e 'Oops: .*' -e 'Kernel panic.*' "$RUN/$pkg/console.boot-crash.log" | tr -d '\r' || true)"
        echo "kernels: $pkg: the guest crashed while booting, before any case (${crash:-no Oops line}); booting it again" >&2
        rc=0
        boot "$kernel" "$RUN/$pkg/initramfs.cpio" "$ROOT/tests/kernels/guest.sh" "$log" "$cases_args" || rc=$?
    fi
    tr -d '\r' <"$log" | grep -v -e '^mt-case ' -e '^mt-init: exit' -e '^\[ *[0-9.]*\] ' >"$RUN/$pkg/output.log" || true
    while read -r _ name res secs; do
        result["$pkg/$name"]="$res ${secs}s"
    done < <(tr -d '\r' <"$log" | grep '^mt-case ')
    for c in "${kernel_cases[@]}"; do
        [[ "${result[$pkg/$c]:-}" == pass* ]] && continue
        status=1
        [[ -n "${result[$pkg/$c]:-}" ]] || result["$pkg/$c"]="missing"
    done
    if ((rc != 0 || status != 0)); then
        status=1
        echo "kernels: $pkg: failed (guest status $rc); its output:" >&2
        cat "$RUN/$pkg/output.log" >&2
    fi
    echo "kernels: $pkg: $((SECONDS - start)) s" >&2
done
if ((status == 0)); then rm -rf "$RUN"; else echo "kernels: consoles kept in $RUN" >&2; fi
[[ -n "${MEMTRACK_KERNELS_SCRIPT:-}" ]] && exit "$status"

# The table: one row per case, one column per kernel.
printf '%-12s' case
for k in "${kernels[@]}"; do printf ' %-34s' "$k"; done
printf '\n'
for c in "${all_cases[@]}"; do
    ran=""
    for k in "${kernels[@]}"; do [[ -n "${result[$k/$c]:-}" ]] && ran=1; done
    [[ -n "$ran" ]] || continue
    printf '%-12s' "$c"
    for k in "${kernels[@]}"; do printf ' %-34s' "${result[$k/$c]:--}"; done
    printf '\n'
done
exit "$status"

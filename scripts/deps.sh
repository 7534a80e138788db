#!/usr/bin/env bash
# Installs what memtrack needs to build and test, only what is missing (Debian 12).
# Run it (scripts/deps.sh) or source it (. scripts/deps.sh): either way it changes no shell
# option of the caller. Quiet when nothing is missing; one line per thing it installs, on stderr.
#   scripts/deps.sh          what building memtrack, running it and its tests need
#   scripts/deps.sh --run    only what building and running memtrack need (scripts/run.sh):
#                            none of the tests' packages (rustc, chromium, golang-go, qemu, ...)
#
# msgpack-cxx is special: Debian's libmsgpack-cxx-dev depends on libboost-dev (1.74), which
# conflicts with libboost1.81-dev, so its header-only package is unpacked under .deps/ instead
# (meson.build looks there when <msgpack.hpp> is not on the system include path).
#
# tracefs is deliberately not touched: memtrack mounts it itself when it is missing.

memtrack_deps() (
    set -euo pipefail

    local root
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

    # Building memtrack (clang and bpftool for its BPF object, libjemalloc-dev for its own heap)
    # and running it (libc6-dbg: the C library's thread-exit cache frees are recognised by its
    # symbols); dpkg-dev: scripts/package.sh's dpkg-shlibdeps.
    local -a packages=(
        libbpf-dev bpftool clang libelf-dev libboost1.81-dev libfmt-dev
        libcli11-dev libzstd-dev libdw-dev meson ninja-build pkg-config libcapstone-dev g++
        protobuf-compiler libprotobuf-dev zlib1g-dev libiberty-dev libjemalloc-dev libc6-dbg dpkg-dev
    )
    # The tests, their fixtures and the benchmarks (meson's tests option).
    if [[ "${1:-}" != --run ]]; then
        packages+=(
            doctest-dev golang-go chromium nodejs libmimalloc-dev libtcmalloc-minimal4
            libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and the sanitizers for clang
            qemu-system-x86 cpio xz-utils zstd  # scripts/kernels.sh: Debian's kernels under qemu
        )
        # The Rust test fixtures: any rustc on the PATH (rustup's), else Debian's.
        command -v rustc >/dev/null || packages+=(rustc)
    fi

    die() {
        echo "deps: error: $*" >&2
        exit 1
    }

    installed() {
        dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
    }

    # apt output goes to a log that is removed on success and named in the error otherwise.
    local log
    log="$(mktemp "${TMPDIR:-/tmp}/memtrack-deps.XXXXXX.log")"
    local tmp=""
    # shellcheck disable=SC2317  # called through the EXIT trap
    cleanup() {
        [[ -n "$tmp" ]] && rm -rf "$tmp"
        return 0
    }
    trap cleanup EXIT

    local apt_updated=0
    apt_update() {
        ((apt_updated)) && return 0
        apt-get update -q >>"$log" 2>&1 || die "apt-get update failed (see $log)"
        apt_updated=1
    }

    # ---- apt packages ----
    # One dpkg-query for all of them (one per package is ten times slower); unknown packages
    # are simply absent from its output.
    local -A ok=()
    local name status pkg
    while read -r name status; do
        if [[ "$status" == "install ok installed" ]]; then ok[$name]=1; fi
    done < <(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true)
    local -a missing=()
    for pkg in "${packages[@]}"; do
        [[ -n "${ok[$pkg]:-}" ]] || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        [[ $EUID -eq 0 ]] || die "missing packages, rerun as root or install them: ${missing[*]}"
        apt_update
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 \
            "${missing[@]}" >>"$log" 2>&1 ||
            die "apt-get install ${missing[*]} failed (see $log)"
        for pkg in "${missing[@]}"; do
            installed "$pkg" || die "$pkg is still not installed after apt-get install (see $log)"
            echo "deps: installed $pkg" >&2
        done
    fi

    # ---- msgpack-cxx (header-only), unpacked under .deps/ unless the system has it ----
    local dest="$root/.deps/msgpack-cxx"
    if [[ ! -e /usr/include/msgpack.hpp && ! -e "$dest/usr/include/msgpack.hpp" ]]; then
        command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
        mkdir -p "$root/.deps" || die "cannot create $root/.deps"
        tmp="$(mktemp -d "$root/.deps/.msgpack-cxx.XXXXXX")"
        # Readable by apt's sandbox user, so apt-get download does not warn about it.
        chmod 755 "$tmp"
        if ! (cd "$tmp" && apt-get download -q libmsgpack-cxx-dev >>"$log" 2>&1); then
            [[ $EUID -eq 0 ]] || die "apt-get download libmsgpack-cxx-dev failed (see $log)"
            apt_update
            (cd "$tmp" && apt-get download -q libmsgpack-cxx-dev >>"$log" 2>&1) ||
                die "apt-get download libmsgpack-cxx-dev failed (see $log)"
        fi
        local -a debs=("$tmp"/libmsgpack-cxx-dev_*.deb)
        [[ -f "${debs[0]}" ]] || die "apt-get download produced no libmsgpack-cxx-dev .deb (see $log)"
        dpkg-deb -x "${debs[0]}" "$tmp/root" >>"$log" 2>&1 ||
            die "dpkg-deb -x ${debs[0]} failed (see $log)"
        [[ -f "$tmp/root/usr/include/msgpack.hpp" ]] ||
            die "libmsgpack-cxx-dev has no usr/include/msgpack.hpp"
        # Unpack aside, then move into place: a half-unpacked tree is never seen, and a
        # concurrent run that got there first wins (mv -T refuses a non-empty target).
        [[ -f "$dest/usr/include/msgpack.hpp" ]] || rm -rf "$dest"
        if ! mv -T "$tmp/root" "$dest" 2>>"$log" && [[ ! -f "$dest/usr/include/msgpack.hpp" ]]; then
            die "cannot move msgpack-cxx into $dest (see $log)"
        fi
        echo "deps: unpacked libmsgpack-cxx-dev ($(basename "${debs[0]}")) into .deps/msgpack-cxx" >&2
    fi

    rm -f "$log"
)

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    memtrack_deps "$@"
    exit
else
    memtrack_deps "$@" || return
fi

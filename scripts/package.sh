#!/usr/bin/env bash
# scripts/package.sh [OUT_DIR]: builds memtrack (scripts/build.sh) and packs it as a Debian
# package, OUT_DIR/memtrack_VERSION_ARCH.deb (default OUT_DIR: build/), installable with
# `apt-get install ./memtrack_VERSION_ARCH.deb`. Prints the package's path.
# Its files are what `meson install` puts under the build's prefix, moved to /usr as Debian's
# packages have them (memtrack in /usr/bin; memtrack-guard is memtrack itself, forked: no file of
# its own). Depends: the packages of the shared libraries memtrack links, with the versions their
# symbols need (dpkg-shlibdeps), so apt brings in exactly what it needs to run.
#   scripts/package.sh --check DEB   the sanity check CI runs: the package's fields and files
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD="$ROOT/build"

die() {
    echo "package: error: $*" >&2
    exit 1
}

# DEB holds /usr/bin/memtrack and nothing outside /usr, and Depends names the C library and
# libbpf (from the links: a Depends computed from nothing would be empty).
check() {
    local deb="$1" files depends
    [[ -f "$deb" ]] || die "no package $deb"
    files="$(dpkg-deb --contents "$deb" | awk '{print $6}')"
    grep -qx './usr/bin/memtrack' <<<"$files" || die "$deb has no ./usr/bin/memtrack"
    if grep -v -e '^\./$' -e '^\./usr/' <<<"$files" | grep -q .; then
        die "$deb has files outside /usr: $(grep -v -e '^\./$' -e '^\./usr/' <<<"$files" | tr '\n' ' ')"
    fi
    depends="$(dpkg-deb --field "$deb" Depends)"
    [[ "$depends" == *libc6* && "$depends" == *libbpf1* ]] || die "$deb's Depends lacks libc6 or libbpf1: $depends"
    echo "package: $deb: $(wc -l <<<"$files") entries, Depends: $depends"
}

if [[ "${1:-}" == "--check" ]]; then
    [[ -n "${2:-}" ]] || die "--check needs a .deb"
    check "$2"
    exit
fi

OUT="${1:-$BUILD}"
"$ROOT/scripts/build.sh" memtrack
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps not found (dpkg-dev; scripts/deps.sh installs it)"

work="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# meson install into a staging root, then the prefix's tree becomes the package's /usr.
meson install -C "$BUILD" --no-rebuild --quiet --strip --destdir "$work/stage" >"$work/install.log" 2>&1 ||
    die "meson install failed: $(tail -n 5 "$work/install.log")"
prefix="$(meson introspect "$BUILD" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')"
[[ -d "$work/stage$prefix" ]] || die "meson install put nothing under the prefix $prefix"
if find "$work/stage" -mindepth 1 \( -path "$work/stage$prefix" -prune \) -o -type f -print | grep -q .; then
    die "meson install put files outside the prefix $prefix"
fi
pkg="$work/pkg"
mkdir -p "$pkg/usr" "$pkg/DEBIAN"
cp -a "$work/stage$prefix/." "$pkg/usr/"
[[ -x "$pkg/usr/bin/memtrack" ]] || die "meson install put no bin/memtrack under $prefix"

version="$(meson introspect "$BUILD" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"
arch="$(dpkg --print-architecture)"
# dpkg-shlibdeps reads debian/control from its working folder: a minimal one.
mkdir -p "$work/src/debian"
printf 'Source: memtrack\n\nPackage: memtrack\nArchitecture: any\n' >"$work/src/debian/control"
depends="$(cd "$work/src" && dpkg-shlibdeps -O -e"$pkg/usr/bin/memtrack" 2>"$work/shlibdeps.log")" ||
    die "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.log")"
depends="${depends#shlibs:Depends=}"
[[ -n "$depends" ]] || die "dpkg-shlibdeps found no shared library"

cat >"$pkg/DEBIAN/control" <<EOF
Package: memtrack
Version: $version
Architecture: $arch
Maintainer: memtrack developers <memtrack@localhost>
Section: devel
Priority: optional
Installed-Size: $(du -sk "$pkg/usr" | cut -f1)
Depends: $depends
Recommends: libc6-dbg
Description: records every heap allocation of a command and its descendants, with eBPF
 memtrack runs a command and records each heap allocation and release made by it and by
 every process it starts, with call stacks, from the kernel (uprobes and tracepoints): no
 LD_PRELOAD, no recompiling. Needs root (or CAP_BPF and CAP_PERFMON) and Linux 5.19 or
 later; "memtrack doctor" says what the running kernel offers. libc6-dbg lets it recognise
 the C library's thread-exit cache frees.
EOF
mkdir -p "$OUT"
deb="$OUT/memtrack_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >"$work/deb.log" 2>&1 ||
    die "dpkg-deb --build failed: $(cat "$work/deb.log")"
check "$deb" >&2
echo "$deb"

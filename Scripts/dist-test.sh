#!/usr/bin/env bash
# `make dist-test`: make dist's files work on Debian machines that have no Swift. Root only.
#
#   Scripts/dist-test.sh [DIST_FOLDER]     (default dist)
#
# Two minimal roots (debootstrap --variant=minbase from Debian's archive): the .deb installed with
# apt in Debian 12 (bookworm), the tarball unpacked in Debian 13 (trixie) with the .deb's Depends
# installed by `apt-get satisfy`. In each, Scripts/dist-test-root.sh runs apnsctl (--version, serve,
# send, demo, doctor) under chroot, in a private mount and PID namespace (unshare): /dev and /proc
# are mounted there only, so they go away with the namespace even when the test fails or is killed,
# and so does every process it started.
#
# The roots are cached outside the clone in ROOTFS_CACHE (default /var/cache/forgepush-rootfs), one
# tarball per suite and architecture, remade when older than ROOTFS_MAX_AGE_DAYS (default 30); the
# apt lists and downloaded packages are kept there too, so a second run downloads almost nothing.
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), DIST_TEST_TMP (default /var/tmp).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dist=$(cd "${1:-dist}" && pwd)
cache=${ROOTFS_CACHE:-/var/cache/forgepush-rootfs}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
max_age=${ROOTFS_MAX_AGE_DAYS:-30}
# Bumped when the way a root is made changes, so an old cached root is not reused.
recipe=1
debarch=$(dpkg --print-architecture)
started=$(date +%s)

say() { echo "dist-test: $*"; }
fail() { echo "dist-test: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount namespaces)"
for tool in debootstrap unshare chroot dpkg-deb flock timeout; do
    command -v "$tool" >/dev/null || fail "$tool is missing: make dist-test installs it (dist-deps)"
done

# The files make dist wrote from HEAD, and what their --version must print.
deb=$(find "$dist" -maxdepth 1 -name "apnsctl_*_$debarch.deb" | head -n 1)
tarball=$(find "$dist" -maxdepth 1 -name "apnsctl-*-linux-$(uname -m).tar.gz" | head -n 1)
[ -n "$deb" ] && [ -n "$tarball" ] || fail "no .deb or tarball in $dist: run make dist"
version=$(git -C "$repo" show HEAD:Sources/apnsctl/Support/Version.swift | sed -n 's/^ *static let current = "\(.*\)"$/\1/p')
expected="$version (commit $(git -C "$repo" rev-parse --short=12 HEAD))"
depends=$(dpkg-deb -f "$deb" Depends)
say "$(basename "$deb") and $(basename "$tarball"); expecting '$expected'; Depends: $depends"

mkdir -p "$cache"
work=$(mktemp -d "${DIST_TEST_TMP:-/var/tmp}/forgepush-dist-test.XXXXXX")
jobs_started=()
cleanup() {
    local pid mounts
    # Only the jobs started here, by their ids.
    for pid in "${jobs_started[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${jobs_started[@]}"; do wait "$pid" 2>/dev/null || true; done
    # The namespace's mounts are not visible here; anything mounted under $work (debootstrap's
    # own /proc, say) is unmounted before the folder is removed, and the folder is kept if one stays.
    mounts=$(awk -v w="$work/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r)
    for mount in $mounts; do umount -l "$mount" 2>/dev/null || true; done
    if awk -v w="$work/" 'index($5, w) == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
        echo "dist-test: $work still has mounts; not removed" >&2
    else
        rm -rf --one-file-system "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A cached root for SUITE, made by debootstrap when missing or too old; prints its tarball's path.
# One process makes it at a time (flock), and the tarball appears whole (written, then renamed).
root_tarball() {
    local suite=$1 key file lock fresh
    key=$suite-$debarch-minbase-r$recipe
    file=$cache/$key.tar
    exec {lock}>"$cache/$key.lock"
    flock -w 900 "$lock" || fail "$cache/$key.lock held for 15 minutes"
    if [ -f "$file" ] && [ -z "$(find "$file" -mtime +"$max_age")" ]; then
        echo "$file"
        return 0
    fi
    fresh=$work/debootstrap-$suite
    if ! timeout 900 debootstrap --variant=minbase --arch="$debarch" "$suite" "$fresh" "$mirror" >"$work/debootstrap-$suite.log" 2>&1; then
        tail -n 30 "$work/debootstrap-$suite.log" >&2
        fail "debootstrap $suite from $mirror"
    fi
    if awk -v w="$fresh/" 'index($5, w) == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
        fail "debootstrap left mounts under $fresh"
    fi
    # Nothing of this machine in the cache: the resolver's address is copied at each run if needed.
    rm -f "$fresh/etc/resolv.conf"
    tar --numeric-owner -C "$fresh" -cf "$file.partial" . && mv "$file.partial" "$file"
    rm -rf --one-file-system "$fresh"
    echo "$file"
}

# Runs Scripts/dist-test-root.sh in a fresh copy of SUITE's root with ARGS (paths inside the root).
# FILE (the .deb or tarball) and the example key are copied to /forge.
run_in_root() {
    local suite=$1 file=$2 tar=$3
    shift 3
    local root=$work/root-$suite apt=$cache/$suite-$debarch-apt
    mkdir -p "$root" "$apt/archives/partial" "$apt/lists/partial"
    tar --numeric-owner -C "$root" -xpf "$tar"
    mkdir -p "$root/forge/keys"
    cp "$repo/Scripts/dist-test-root.sh" "$file" "$root/forge/"
    cp "$repo/keys-example/AuthKey_FORGEKEY01.p8" "$root/forge/keys/"
    [ -s "$root/etc/resolv.conf" ] || cp /etc/resolv.conf "$root/etc/resolv.conf"
    # A minbase root has no /etc/hosts (netbase is not in it), which every installed Debian and
    # every container runtime provides: without it `localhost` does not resolve.
    [ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
    # The namespace's first process mounts, then runs the test under chroot with an environment of
    # its own; when it ends (or timeout kills unshare, whose child is then killed), the kernel
    # unmounts everything and ends every process of the PID namespace.
    timeout --kill-after=10 600 unshare --mount --pid --fork --kill-child --propagation private -- \
        /bin/sh -c '
            set -e
            root=$1 apt=$2
            shift 2
            mount --rbind /dev "$root/dev"
            mount -t proc proc "$root/proc"
            mount --bind "$apt/archives" "$root/var/cache/apt/archives"
            mount --bind "$apt/lists" "$root/var/lib/apt/lists"
            status=0
            env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
                chroot "$root" /bin/bash /forge/dist-test-root.sh "$@" || status=$?
            umount "$root/var/lib/apt/lists" "$root/var/cache/apt/archives" "$root/proc"
            umount -R "$root/dev"
            exit $status
        ' sh "$root" "$apt" "$@"
}

# Both roots at once when neither is cached: debootstrap mostly waits for the network.
declare -A roots
for suite in bookworm trixie; do
    root_tarball "$suite" >"$work/$suite.path" &
    jobs_started+=($!)
done
for pid in "${jobs_started[@]}"; do wait "$pid" || fail "no root for one of the suites (see above)"; done
jobs_started=()
for suite in bookworm trixie; do roots[$suite]=$(cat "$work/$suite.path"); done
say "roots ready in $(($(date +%s) - started)) s: ${roots[bookworm]}, ${roots[trixie]}"

phase=$(date +%s)
run_in_root bookworm "$deb" "${roots[bookworm]}" deb "/forge/$(basename "$deb")" "$expected" \
    || fail "the .deb in Debian 12 (bookworm)"
say "bookworm (.deb) passed in $(($(date +%s) - phase)) s"
phase=$(date +%s)
run_in_root trixie "$tarball" "${roots[trixie]}" tarball "/forge/$(basename "$tarball")" "$expected" "$depends" \
    || fail "the tarball in Debian 13 (trixie)"
say "trixie (tarball) passed in $(($(date +%s) - phase)) s"
say "passed in $(($(date +%s) - started)) s"
